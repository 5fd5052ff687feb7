//! Replays the `inspect` fuzz target's committed corpus (`fuzz/seeds/inspect/`)
//! on stable Rust, with the target's own checks (`inspect_check.rs`), so
//! every input the fuzzer was seeded with or found stays covered by
//! `cargo test`.
//!
//! `ZAO_BLESS=1 cargo test --test fuzz_inspect` re-creates the seeds built
//! from the code (`seed-*`); inputs the fuzzer found are added by hand as
//! `found-*` and kept.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::collections::{BTreeMap, HashMap};
use std::num::NonZeroU16;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use zao::Encode;
use zao::inspect::{CaptureWriter, Flow, Inspector, TextStyle};
use zao::proto::{Channel, Role};

#[path = "../fuzz/fuzz_targets/inspect_check.rs"]
mod inspect_check;

use inspect_check::{Node, Settings, Zoo};

fn seeds_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/inspect")
}

fn framed<M: zao::NetMessage>(m: &M) -> Vec<u8> {
    let mut buf = vec![0u8; zao::message_len(m)];
    zao::encode_message(m, &mut buf).unwrap();
    buf
}

fn zoo() -> Zoo {
    Zoo {
        small: (7, -3, true, 'é'),
        wide: (u128::MAX, i128::MIN, 300, -64),
        floats: (f32::from_bits(0x7fc0_0001), -0.0),
        nz: NonZeroU16::new(9).unwrap(),
        text: Some("a \"quoted\"\nline".into()),
        raw: vec![0, 1, 255],
        fixed: *b"abc",
        pairs: [-1, 1],
        boxed: Box::new(42),
        // One entry: a HashMap's order is its own, and the seeds are fixed.
        map: HashMap::from([(2, Some(3))]),
        sorted: BTreeMap::from([("a".into(), ()), ("b".into(), ())]),
        nested: vec![vec![Settings {
            volume: 3,
            name: "x".into(),
        }]],
        node: Node::Branch {
            left: Some(Box::new(Node::Leaf(-5))),
            right: vec![
                Node::Leaf(1),
                Node::Branch {
                    left: None,
                    right: vec![],
                },
            ],
        },
        settings: Settings::default(),
    }
}

/// The seeds built from the code: (file name, input).
fn seeds() -> Vec<(String, Vec<u8>)> {
    let protocol = inspect_check::protocol();
    let inspector = Inspector::from_protocol(&protocol);
    let with = |mode: u8, rest: &[u8]| [&[mode][..], rest].concat();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut messages: Vec<(String, Vec<u8>)> = [
        "player_moved",
        "player_input",
        "spawn_entity",
        "world_snapshot",
        "inventory",
    ]
    .iter()
    .map(|name| {
        let bytes = std::fs::read(root.join(format!("assets/golden/{name}.bin"))).unwrap();
        ((*name).to_owned(), bytes)
    })
    .collect();
    messages.push(("zoo".into(), framed(&zoo())));
    messages.push(("heartbeat".into(), vec![0]));
    let mut out = Vec::new();
    for (name, bytes) in &messages {
        out.push((format!("seed-bytes-{name}"), with(0, bytes)));
        out.push((
            format!("seed-bytes-{name}-cut"),
            with(0, &bytes[..bytes.len() / 2]),
        ));
        let text = inspector.to_text(bytes).unwrap();
        out.push((format!("seed-text-{name}"), with(1, text.as_bytes())));
        let pretty = inspector.to_text_styled(bytes, TextStyle::Pretty).unwrap();
        out.push((format!("seed-pretty-{name}"), with(1, pretty.as_bytes())));
    }
    out.push(("seed-json".into(), with(2, protocol.to_json().as_bytes())));
    let start = Instant::now();
    let mut w = CaptureWriter::with_start(
        Vec::new(),
        &protocol,
        Role::Client,
        start,
        SystemTime::UNIX_EPOCH,
    )
    .unwrap();
    w.connected(start, 1, "[::1]:4433").unwrap();
    for (i, (_, bytes)) in messages.iter().enumerate() {
        let flow = [Flow::ClientToServer, Flow::ServerToClient][i % 2];
        let at = start + Duration::from_millis(i as u64);
        w.message(at, 1, flow, Channel::RELIABLE, bytes).unwrap();
    }
    w.disconnected(start, 1, "bye").unwrap();
    out.push(("seed-capture".into(), with(3, &w.into_inner().unwrap())));
    out
}

#[test]
fn the_seeds_are_the_codes() {
    let dir = seeds_dir();
    for (name, input) in seeds() {
        let path = dir.join(&name);
        if std::env::var_os("ZAO_BLESS").is_some() {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &input).unwrap();
        }
        let file = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(file, input, "{name}: ZAO_BLESS=1 re-creates it");
    }
    // The zoo round-trips through its Rust type too.
    let bytes = framed(&zoo());
    assert_eq!(zoo().to_encoded_vec(), bytes[1..]);
}

#[test]
fn the_corpus_replays_without_a_finding() {
    let inspector = Inspector::from_protocol(&inspect_check::protocol());
    let mut n = 0;
    for entry in std::fs::read_dir(seeds_dir()).unwrap() {
        let path = entry.unwrap().path();
        let input = std::fs::read(&path).unwrap();
        inspect_check::check(&inspector, &input);
        n += 1;
    }
    assert!(n >= 30, "only {n} inputs in fuzz/seeds/inspect");
}
