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

/// `f32` bits in hex, as the vectors write floats (exact, NaN payloads
/// and the sign of zero included).
fn f32_hex(v: f32) -> String {
    format!("{:08x}", v.to_bits())
}

/// The quantized types (WIRE.md §7.1): for each input, its bytes and the
/// value they decode to, at the edges where rounding, clamping and the
/// largest component's choice are easy to get wrong.
#[test]
fn quantized_values_are_published() {
    use core::f32::consts::FRAC_1_SQRT_2;
    use glam::{Quat, Vec3};
    use zao::Decode;
    use zao::wire::{QAngle, QF32, QQuat, QVec3};

    fn field<T: Encode + for<'a> Decode<'a>>(v: &T) -> (Vec<u8>, T) {
        let bytes = v.to_encoded_vec();
        let back = T::decode(&bytes).unwrap();
        (bytes, back)
    }
    let scalars = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.0005,
        -0.0005,
        0.0015,
        0.0025,
        -0.0025,
        99.9995,
        100.0,
        -100.0,
        250.0,
        -1e30,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1e-45,
        33.3333,
        -7.1234567,
    ];
    let mut fresh = String::from(
        "# zao quantized-value vectors (docs/WIRE.md §7.1). Floats are f32 bits in hex.\n\
         # qf32 MIN MAX PER_UNIT: input, field bytes, decoded\n\
         # qvec3 MIN MAX PER_UNIT: x y z, field bytes, x y z decoded\n\
         # qangle BITS: radians, field bytes, radians decoded\n\
         # qquat BITS: x y z w (normalized), field bytes, x y z w decoded\n\n",
    );
    for v in scalars {
        let (bytes, back) = field(&QF32::<-100, 100, 1000>::new(v));
        writeln!(
            fresh,
            "qf32 -100 100 1000 {} {} {}",
            f32_hex(v),
            hex(&bytes).replace(' ', ""),
            f32_hex(back.get())
        )
        .unwrap();
    }
    for v in scalars {
        let (bytes, back) = field(&QF32::<0, 1, 255>::new(v));
        writeln!(
            fresh,
            "qf32 0 1 255 {} {} {}",
            f32_hex(v),
            hex(&bytes).replace(' ', ""),
            f32_hex(back.get())
        )
        .unwrap();
    }
    for (i, v) in scalars.iter().enumerate() {
        let p = Vec3::new(*v, scalars[(i + 7) % scalars.len()] * 40.0, -*v * 3.0);
        let (bytes, back) = field(&QVec3::<-4096, 4096, 1000>::new(p));
        let b = back.get();
        writeln!(
            fresh,
            "qvec3 -4096 4096 1000 {} {} {} {} {} {} {}",
            f32_hex(p.x),
            f32_hex(p.y),
            f32_hex(p.z),
            hex(&bytes).replace(' ', ""),
            f32_hex(b.x),
            f32_hex(b.y),
            f32_hex(b.z)
        )
        .unwrap();
    }
    let tau = core::f32::consts::TAU;
    let angles = [
        0.0,
        -0.0,
        0.1,
        -0.1,
        1.0,
        3.0,
        core::f32::consts::PI,
        -core::f32::consts::PI,
        tau,
        -tau,
        tau - 1e-6,
        7.0,
        -7.0,
        100.0,
        f32::NAN,
        f32::INFINITY,
        1e-45,
    ];
    for a in angles {
        let (bytes, back) = field(&QAngle::<12>::from_radians(a));
        writeln!(
            fresh,
            "qangle 12 {} {} {}",
            f32_hex(a),
            hex(&bytes).replace(' ', ""),
            f32_hex(back.radians())
        )
        .unwrap();
        let (bytes, back) = field(&QAngle::<8>::from_radians(a));
        writeln!(
            fresh,
            "qangle 8 {} {} {}",
            f32_hex(a),
            hex(&bytes).replace(' ', ""),
            f32_hex(back.radians())
        )
        .unwrap();
    }
    let quats = [
        Quat::IDENTITY,
        Quat::from_xyzw(0.0, 0.0, 0.0, -1.0),
        Quat::from_rotation_y(1.0),
        Quat::from_rotation_x(-2.5),
        Quat::from_rotation_z(3.1),
        Quat::from_euler(glam::EulerRot::XYZ, 0.3, -1.2, 2.2),
        Quat::from_xyzw(0.5, 0.5, 0.5, 0.5),
        Quat::from_xyzw(-0.5, 0.5, -0.5, 0.5),
        Quat::from_xyzw(0.5, 0.5, 0.5, 0.5).normalize(),
        Quat::from_xyzw(FRAC_1_SQRT_2, 0.0, 0.0, FRAC_1_SQRT_2),
        Quat::from_xyzw(0.0, -FRAC_1_SQRT_2, FRAC_1_SQRT_2, 0.0),
        Quat::from_xyzw(0.1, 0.2, 0.3, 0.4).normalize(),
        Quat::from_xyzw(-0.9, 0.1, 0.1, 0.1).normalize(),
    ];
    for q in quats {
        for line in [quat_line::<10>(q), quat_line::<15>(q), quat_line::<4>(q)] {
            writeln!(fresh, "{line}").unwrap();
        }
    }
    fn quat_line<const B: u32>(q: Quat) -> String {
        let (bytes, back) = field(&QQuat::<B>::new(q));
        let b = back.get();
        format!(
            "qquat {B} {} {} {} {} {} {} {} {} {}",
            f32_hex(q.x),
            f32_hex(q.y),
            f32_hex(q.z),
            f32_hex(q.w),
            hex(&bytes).replace(' ', ""),
            f32_hex(b.x),
            f32_hex(b.y),
            f32_hex(b.z),
            f32_hex(b.w)
        )
    }
    let file = vector("quantized.txt", fresh.as_bytes());
    assert_eq!(
        String::from_utf8(file).unwrap(),
        fresh,
        "assets/conformance/quantized.txt"
    );
}

/// A server and one client joined in memory, for `EntitySnapshot` deltas.
fn delta_link() -> (
    zao::proto::ServerCore,
    zao::proto::ClientCore,
    zao::proto::LocalLink,
    std::time::Instant,
) {
    use zao::proto::{Channel, Direction, Limits, Protocol, ServerCore};
    let mut protocol = Protocol::new();
    protocol.add::<zao_messages::EntitySnapshot>(Channel::SNAPSHOT, Direction::ServerToClient);
    let mut server = ServerCore::local(protocol, Limits::default(), None).unwrap();
    let (client, mut link) = server.connect_local(None);
    let now = std::time::Instant::now();
    link.drive(now);
    while server.poll_event().is_some() {}
    (server, client, link, now)
}

/// The delta datagram a chunk arrived in: its header, then its message.
fn delta_datagram(chunk: &zao::proto::SnapshotChunk) -> Vec<u8> {
    use zao::proto::{delta_datagram_len, put_delta_header};
    let message = chunk.message.message();
    let mut datagram = vec![0u8; delta_datagram_len(chunk.header, message.len())];
    let mut w = zao::Writer::new(&mut datagram);
    put_delta_header(&mut w, chunk.header);
    w.put_slice(message);
    datagram
}

/// The delta path (WIRE.md §12.10) end to end, for `EntitySnapshot` of
/// `zao_messages::web_protocol` (clients/ts/web/protocol.json): the
/// datagrams a server sends one client (a keyframe, then deltas against
/// what it acknowledged, with entities moving, leaving and arriving), the
/// ack datagram the client answers each whole snapshot with, and each
/// snapshot as the plain message it decodes to.
#[test]
fn delta_snapshots_are_published() {
    use zao::proto::{DeltaReceiver, Target, ack_datagram};
    use zao_messages::{EntitySnapshot, demo_world};

    let (mut server, mut client, mut link, mut now) = delta_link();
    let mut receiver = DeltaReceiver::<EntitySnapshot>::new();
    let mut fresh = String::from(
        "# zao delta-snapshot vectors (docs/WIRE.md §12.10): EntitySnapshot (id 6) of\n\
         # clients/ts/web/protocol.json, lanes as §12.10 derives them from its fields.\n\
         # `datagram`: a delta datagram the server sent (kind 03, header, id, chunk bits).\n\
         # `world`: the snapshot those chunks make whole, as its plain message (id, body).\n\
         # `ack`: the ack datagram (kind 04) the client sends after it.\n",
    );
    // Moving; 20 entities leave; 45 arrive; a keyframe's worth of change.
    let worlds = [
        demo_world(1, 400),
        demo_world(2, 400),
        demo_world(3, 380),
        demo_world(4, 425),
        demo_world(200, 425),
    ];
    for world in &worlds {
        writeln!(
            fresh,
            "\n# tick {}, {} entities",
            world.tick,
            world.entities.len()
        )
        .unwrap();
        server.send_delta_snapshot(Target::All, world).unwrap();
        now += std::time::Duration::from_millis(16);
        link.drive(now);
        while client.poll_event().is_some() {}
        let mut whole = false;
        while let Some(chunk) = client.poll_snapshot() {
            let datagram = delta_datagram(&chunk);
            writeln!(fresh, "datagram {}", hex(&datagram).replace(' ', "")).unwrap();
            let applied = receiver.handle_chunk(&chunk).unwrap();
            whole |= applied.complete;
        }
        assert!(
            whole,
            "tick {} arrived whole on a lossless link",
            world.tick
        );
        let latest = receiver.latest().unwrap().unwrap();
        assert_eq!(&latest.snapshot, world);
        let mut plain = bytes::BytesMut::new();
        zao::encode_message_to(world, &mut plain);
        writeln!(fresh, "world {}", hex(&plain).replace(' ', "")).unwrap();
        let ack = receiver.ack();
        writeln!(fresh, "ack {}", hex(&ack_datagram(&[ack])).replace(' ', "")).unwrap();
        client.send_acks(&[ack]).unwrap();
        now += std::time::Duration::from_millis(16);
        link.drive(now);
        while server.poll_event().is_some() {}
    }
    let file = vector("delta.txt", fresh.as_bytes());
    assert_eq!(
        String::from_utf8(file).unwrap(),
        fresh,
        "assets/conformance/delta.txt"
    );
}

/// The two datagrams of WIRE.md §12.10's example, byte for byte as the
/// encoder writes them (the example was derived by hand from the rules).
#[test]
fn the_delta_example_is_what_the_encoder_writes() {
    use glam::Vec3;
    use zao::proto::{DeltaReceiver, Target};
    use zao_messages::{EntitySnapshot, EntityState};

    let (mut server, mut client, mut link, mut now) = delta_link();
    let mut receiver = DeltaReceiver::<EntitySnapshot>::new();
    let half_turn = core::f32::consts::FRAC_PI_2;
    let worlds = [
        EntitySnapshot {
            tick: 500,
            entities: vec![
                EntityState::new(1, Vec3::ZERO, 0.0),
                EntityState::new(2, Vec3::new(1.5, 0.0, 0.0), half_turn),
            ],
        },
        EntitySnapshot {
            tick: 501,
            entities: vec![
                EntityState::new(1, Vec3::ZERO, 0.0),
                EntityState::new(
                    2,
                    Vec3::new(1.75, 0.0, 0.0),
                    half_turn - 2.0 * core::f32::consts::TAU / 4096.0,
                ),
            ],
        },
    ];
    let mut sent = Vec::new();
    for world in &worlds {
        server.send_delta_snapshot(Target::All, world).unwrap();
        now += std::time::Duration::from_millis(16);
        link.drive(now);
        while client.poll_event().is_some() {}
        let chunk = client.poll_snapshot().expect("one chunk");
        sent.push(delta_datagram(&chunk));
        assert!(receiver.handle_chunk(&chunk).unwrap().complete);
        client.send_acks(&[receiver.ack()]).unwrap();
        now += std::time::Duration::from_millis(16);
        link.drive(now);
        while server.poll_event().is_some() {}
    }
    // The example's hex, each block's bytes up to its comments.
    let wire = wire_md();
    let at = wire.find("**Example** (derived").expect("§12.10's example");
    let blocks: Vec<Vec<u8>> = wire[at..]
        .split("```")
        .skip(1)
        .step_by(2)
        .take(2)
        .map(|block| {
            block
                .lines()
                .flat_map(|line| {
                    line.split_whitespace()
                        .take_while(|w| w.len() == 2 && u8::from_str_radix(w, 16).is_ok())
                        .map(|w| u8::from_str_radix(w, 16).unwrap())
                        .collect::<Vec<_>>()
                })
                .collect()
        })
        .collect();
    assert_eq!(blocks.len(), 2);
    for (doc, sent) in blocks.iter().zip(&sent) {
        assert_eq!(hex(doc), hex(sent), "WIRE.md §12.10's example");
    }
}
