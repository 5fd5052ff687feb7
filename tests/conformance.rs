//! The conformance vectors for implementations in other languages, checked
//! against the code so that docs/WIRE.md §13 and `assets/conformance/`
//! cannot drift: each reference message's fingerprint and `NAME`, the
//! reference protocol's hash and JSON, the `Hello` frame a client of this
//! version sends, the version rules, the readable forms, and the §12.6
//! datagram example.
//!
//! To re-create the files after a deliberate change:
//! `ZAO_BLESS=1 cargo test --test conformance`; the WIRE.md blocks to paste
//! are printed by the failing assertions.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::fmt::Write as _;
use std::path::PathBuf;

use zao::inspect::Inspector;
use zao::proto::{
    Hello, PROTOCOL_MAGIC, SnapshotHeader, frame_header, snapshot_datagram_len, versions_compatible,
};
use zao::{Encode, NetMessage, Schema};
use zao_messages::{
    Buttons, Inventory, PlayerInput, PlayerMoved, SpawnEntity, Stance, WorldSnapshot, samples,
};

fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(name)
}

/// The file's bytes, or under `ZAO_BLESS=1` the fresh ones, written first.
fn vector(name: &str, fresh: &[u8]) -> Vec<u8> {
    let path = path(&format!("assets/conformance/{name}"));
    if std::env::var_os("ZAO_BLESS").is_some() {
        std::fs::write(&path, fresh).unwrap();
    }
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn wire_md() -> String {
    std::fs::read_to_string(path("docs/WIRE.md")).unwrap()
}

/// Asserts WIRE.md holds `block` word for word, printing it if not.
fn documented(block: &str) {
    assert!(
        wire_md().contains(block),
        "docs/WIRE.md must contain, word for word:\n\n{block}"
    );
}

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The hello a client of this zao sends with the reference protocol and no
/// token, as the control-stream frame (§12.2, §12.5).
fn hello_frame() -> Vec<u8> {
    let protocol = zao_messages::protocol();
    let hello = Hello::new(&protocol, None);
    assert_eq!(hello.magic, PROTOCOL_MAGIC);
    let body = hello.to_encoded_vec();
    let (len, n) = frame_header(body.len());
    let mut frame = len[..n].to_vec();
    frame.extend_from_slice(&body);
    frame
}

#[test]
fn fingerprints_names_and_the_protocol_hash_are_published() {
    let protocol = zao_messages::protocol();
    let mut table = String::from(
        "| id | `NAME` | fingerprint | channel | direction |\n|---|---|---|---|---|\n",
    );
    for e in protocol.entries() {
        let channel = protocol.channel(e.channel).unwrap();
        writeln!(
            table,
            "| {} | `{}` | `{:#018x}` | {} `{}` | {:?} |",
            e.id, e.name, e.fingerprint, e.channel.0, channel.name, e.direction
        )
        .unwrap();
    }
    documented(&table);
    documented(&format!(
        "The reference protocol's hash is `{:#018x}`.",
        protocol.hash()
    ));
    // The names and fingerprints are the types' own.
    let types = [
        (PlayerMoved::NAME, PlayerMoved::FINGERPRINT),
        (PlayerInput::NAME, PlayerInput::FINGERPRINT),
        (SpawnEntity::NAME, SpawnEntity::FINGERPRINT),
        (WorldSnapshot::NAME, WorldSnapshot::FINGERPRINT),
        (Inventory::NAME, Inventory::FINGERPRINT),
    ];
    for (e, (name, fingerprint)) in protocol.entries().iter().zip(types) {
        assert_eq!((e.name.as_str(), e.fingerprint), (name, fingerprint));
    }
    // The JSON carries the same, and reads back to them.
    let json = protocol.to_json();
    assert_eq!(
        String::from_utf8(vector("protocol.json", json.as_bytes())).unwrap(),
        json,
        "assets/conformance/protocol.json"
    );
    let schema = zao::inspect::ProtocolSchema::from_json(&json).unwrap();
    assert_eq!(schema.hash(), protocol.hash());
    for (m, e) in schema.messages().iter().zip(protocol.entries()) {
        assert_eq!(
            (m.id, &m.name, m.fingerprint),
            (e.id, &e.name, e.fingerprint)
        );
    }
}

#[test]
fn the_hello_frame_is_published() {
    let frame = hello_frame();
    assert_eq!(
        vector("hello.bin", &frame),
        frame,
        "assets/conformance/hello.bin"
    );
    // The annotated frame in WIRE.md §13, generated from the bytes.
    let protocol = zao_messages::protocol();
    let mut block = String::from("```\n");
    let mut line = |bytes: &[u8], what: &str| {
        writeln!(block, "{:<44}{what}", hex(bytes)).unwrap();
    };
    let (len, n) = frame_header(frame.len() - 2);
    assert_eq!(n, 2, "a two-byte frame length");
    line(&len[..n], &format!("frame length {}", frame.len() - n));
    line(&PROTOCOL_MAGIC.to_le_bytes(), "magic \"ZAO1\"");
    let version = env!("CARGO_PKG_VERSION");
    line(&version.to_encoded_vec(), &format!("version \"{version}\""));
    line(&protocol.hash().to_le_bytes(), "protocol hash");
    line(
        &[protocol.entries().len() as u8],
        &format!("{} entries", protocol.entries().len()),
    );
    for e in protocol.entries() {
        line(&e.id.to_le_bytes(), &format!("  id {}", e.id));
        line(&e.name.to_encoded_vec(), &format!("  name \"{}\"", e.name));
        line(&e.fingerprint.to_le_bytes(), "  fingerprint");
        let channel = protocol.channel(e.channel).unwrap();
        line(
            &e.channel.0.to_le_bytes(),
            &format!("  channel {} ({})", e.channel.0, channel.name),
        );
        line(
            &(e.direction as u8).to_le_bytes(),
            &format!("  {:?}", e.direction),
        );
    }
    line(&[0], "0 channels beyond the three defaults");
    line(&[0], "token None");
    block.push_str("```\n");
    // The annotation covers every byte, in order.
    let covered: Vec<u8> = block
        .lines()
        .filter(|l| !l.starts_with("```"))
        .flat_map(|l| {
            l[..44]
                .split_whitespace()
                .map(|b| u8::from_str_radix(b, 16).unwrap())
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(covered, frame);
    documented(&block);
    documented(&format!(
        "`assets/conformance/hello.bin` ({} bytes)",
        frame.len()
    ));
}

/// The version string and the comparison rules of §12.3.
#[test]
fn versions_compare_as_documented() {
    let version = env!("CARGO_PKG_VERSION");
    documented(&format!("for this document, exactly `{version}`"));
    for other in ["0.1.0", "0.1.7", "0.1.0-beta.2"] {
        assert!(versions_compatible(other, "0.1.0"), "{other}");
        documented(&format!("`{other}`"));
    }
    for other in ["0.2.0", "0.1-beta", "v0.1.0", "1"] {
        assert!(!versions_compatible(other, "0.1.0"), "{other}");
        documented(&format!("`{other}`"));
    }
    assert!(!versions_compatible("garbage", "garbage"));
    assert!(versions_compatible("2.0.0", "2.5.1"));
    assert!(versions_compatible("+0.+1.0", "0.1.0"));
}

/// §12.6: `world_snapshot.bin` as seq 1, chunk 0 of 1.
#[test]
fn the_snapshot_datagram_example_is_61_bytes() {
    let file = std::fs::read(path("assets/golden/world_snapshot.bin")).unwrap();
    assert_eq!(file.len(), 57);
    let header = SnapshotHeader {
        seq: 1,
        chunk: 0,
        chunks: 1,
    };
    assert_eq!(snapshot_datagram_len(header, file.len()), 61);
    documented("as `seq` 1, chunk 0 of 1 (61 bytes):\n`02 01 00 01` then the 57 bytes");
}

/// The readable form of a set of messages: golden ones and the corners
/// (every float class, escapes, no and all buttons, the heartbeat).
#[test]
fn readable_forms_are_published() {
    let inspector = Inspector::from_protocol(&zao_messages::protocol());
    let framed = |m: &dyn Fn(&mut [u8]) -> usize| {
        let mut buf = vec![0u8; 256];
        let n = m(&mut buf);
        buf.truncate(n);
        buf
    };
    let mut messages: Vec<Vec<u8>> = common::golden_files()
        .into_iter()
        .map(|(_, bytes)| bytes)
        .collect();
    let odd = PlayerMoved {
        entity: u32::MAX,
        position: glam::Vec3::new(f32::from_bits(0xffc0_0001), -0.0, f32::from_bits(1)),
    };
    messages.push(framed(&|b| zao::encode_message(&odd, b).unwrap()));
    let infinite = PlayerMoved {
        entity: 0,
        position: glam::Vec3::new(f32::INFINITY, f32::NEG_INFINITY, f32::NAN),
    };
    messages.push(framed(&|b| zao::encode_message(&infinite, b).unwrap()));
    for buttons in [Buttons::NONE, Buttons::ALL] {
        let input = PlayerInput {
            tick: 0,
            buttons,
            aim: glam::Vec2::new(0.1, 3.4028235e38),
            stance: Stance::Prone,
        };
        messages.push(framed(&|b| zao::encode_message(&input, b).unwrap()));
    }
    let mut spawn = samples::spawn_entity();
    spawn.name = "Gob\"lin\\ \n\t\u{7}é😀".to_owned();
    messages.push(framed(&|b| zao::encode_message(&spawn, b).unwrap()));
    messages.push(vec![0x00]);

    let mut fresh = String::from(
        "# zao readable-form vectors (docs/INSPECT.md §2): each entry is a framed\n\
         # message in hex, the line after it its readable form, then a blank line.\n\n",
    );
    for bytes in &messages {
        let text = inspector.to_text(bytes).unwrap();
        assert_eq!(&inspector.from_text(&text).unwrap(), bytes, "{text}");
        writeln!(fresh, "{}\n{text}\n", hex(bytes)).unwrap();
    }
    let file = vector("readable.txt", fresh.as_bytes());
    assert_eq!(
        String::from_utf8(file).unwrap(),
        fresh,
        "assets/conformance/readable.txt"
    );
}
