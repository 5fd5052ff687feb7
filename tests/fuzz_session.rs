//! Replays the `session` fuzz target's committed corpus
//! (`fuzz/seeds/session/`) on stable Rust, through the target's own driver
//! and checks (`session_check.rs`, reading `session_script.rs`), so every
//! input the fuzzer was seeded with or found stays covered by `cargo test`.
//!
//! `ZAO_BLESS=1 cargo test --test fuzz_session` re-creates the seeds built
//! from the code (`seed-*`); inputs the fuzzer found are added by hand as
//! `found-*` and kept.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::path::PathBuf;

#[path = "../fuzz/fuzz_targets/session_check.rs"]
mod session_check;
#[path = "../fuzz/fuzz_targets/session_script.rs"]
mod session_script;

use session_script::{
    APP_EAGER, CLIENT, HANDSHAKE, HANDSHAKE_CLIENT, NET_EAGER, NO_SILENCE, Op, SERVER,
    SHORT_TIMERS, SMALL_BACKLOG, SMALL_DATAGRAMS, SMALL_MESSAGES, SMALL_SEND_BUFFER, Script,
    TIGHT_RATE, TINY_INBOUND,
};

fn seeds_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/session")
}

/// Both sides keep up, whole reads.
const EAGER: u8 = APP_EAGER | NET_EAGER;
/// Reads of one byte (chunk index 1).
const BYTEWISE: u8 = 1 << 3;
/// Reads of 7 bytes (chunk index 4).
const SEVENS: u8 = 4 << 3;

/// Id selectors: 1–9 stand for themselves (6 `Aim`, sequenced; 7
/// `Notice`; 8 `Whisper`, on the chat channel; 9 `Loot`, unordered), 0 the
/// heartbeat's id, and these.
const CHAT: u8 = 10;
/// Id 99, registered by no type.
const UNKNOWN: u8 = 11;

/// Op shorthands. Stream selectors: 0 control, 1 the peer's reliable
/// stream, 2 its second uni stream, 3 ours.
fn frame(id: u8, body: &[u8]) -> Op {
    Op::Frame {
        stream: 1,
        id,
        body: body.to_vec(),
    }
}

fn bytes(stream: u8, data: &[u8]) -> Op {
    Op::Bytes {
        stream,
        data: data.to_vec(),
    }
}

fn send(channel: u8, id: u8, body: &[u8]) -> Op {
    Op::Send {
        channel,
        id,
        body: body.to_vec(),
    }
}

fn flood(kind: u8, count: u8, id: u8, gap: u8) -> Op {
    Op::Flood {
        kind,
        count,
        id,
        len: 6,
        gap,
    }
}

fn snap(seq: u16, chunk: u8, chunks: u8, id: u8) -> Op {
    Op::Snapshot {
        seq,
        chunk,
        chunks,
        id,
        body: vec![seq as u8; 6],
    }
}

fn script(mode: u8, limits: u8, ops: Vec<Op>) -> Script {
    Script { mode, limits, ops }
}

/// The seeds built from the code: (file name, script).
fn seeds() -> Vec<(&'static str, Script)> {
    use Op::*;
    let spawn = vec![42u8; 20];
    let moved = vec![1u8; 24];
    vec![
        // Server, handshake done: each kind of message from the client.
        (
            "server-reliable",
            script(
                SERVER | EAGER,
                0,
                vec![
                    frame(3, &spawn),
                    frame(5, b"\x02\x01\x05"),
                    frame(CHAT, b"\x02hi"),
                    bytes(1, &[0x01, 0x00]),
                    frame(3, &[]),
                ],
            ),
        ),
        (
            "server-reliable-split",
            script(
                SERVER | EAGER | BYTEWISE,
                0,
                vec![
                    frame(3, &spawn),
                    frame(CHAT, b"\x05hello"),
                    frame(5, b"\x00"),
                ],
            ),
        ),
        (
            "server-unreliable",
            script(
                SERVER | EAGER,
                0,
                vec![
                    Unreliable(vec![(1, moved.clone()), (2, vec![7; 9]), (0, vec![])]),
                    Unreliable(vec![(1, moved.clone())]),
                    Datagram(vec![0x01, 0x01, 0x00]),
                ],
            ),
        ),
        (
            "server-snapshots",
            script(
                SERVER | EAGER,
                0,
                vec![
                    snap(1, 0, 2, 6),
                    snap(1, 1, 2, 6),
                    snap(3, 0, 1, 6),
                    snap(2, 0, 1, 6),
                ],
            ),
        ),
        (
            "server-snapshot-flood-tight-rate",
            script(SERVER | EAGER, TIGHT_RATE, vec![flood(3, 10, 6, 0)]),
        ),
        (
            "server-unreliable-flood-tight-rate",
            script(
                SERVER | EAGER,
                TIGHT_RATE,
                vec![flood(1, 4, 1, 0), Advance(200), flood(2, 20, 2, 20)],
            ),
        ),
        (
            "server-reliable-flood-tight-rate",
            script(SERVER | EAGER, TIGHT_RATE, vec![flood(0, 2, 3, 0)]),
        ),
        (
            "server-heartbeat-flood",
            script(
                SERVER | EAGER,
                TIGHT_RATE,
                vec![flood(5, 3, 0, 1), flood(4, 3, 0, 1)],
            ),
        ),
        (
            "server-default-rate-flood",
            script(SERVER | EAGER, 0, vec![flood(2, 255, 1, 116)]),
        ),
        (
            "server-tiny-inbound-slow-app",
            script(
                SERVER | NET_EAGER,
                TINY_INBOUND,
                vec![
                    flood(0, 1, 3, 0),
                    flood(1, 1, 1, 0),
                    Read(1),
                    Read(0x82),
                    Timeout,
                    Read(3),
                    Advance(5),
                    Read(0),
                ],
            ),
        ),
        (
            "server-tiny-inbound-tight-rate",
            script(
                SERVER | NET_EAGER | SEVENS,
                TINY_INBOUND | TIGHT_RATE,
                vec![
                    flood(0, 3, 5, 0),
                    Advance(250),
                    Read(0),
                    Advance(250),
                    Read(0),
                ],
            ),
        ),
        (
            "server-oversize-claim",
            script(
                SERVER | EAGER,
                0,
                vec![bytes(1, &[0x80, 0x80, 0x40]), frame(3, &spawn)],
            ),
        ),
        (
            "server-oversize-claim-small-messages",
            script(SERVER | EAGER, SMALL_MESSAGES, vec![frame(3, &[0; 40])]),
        ),
        (
            "server-non-canonical-length",
            script(SERVER | EAGER, 0, vec![bytes(1, &[0x80, 0x00, 0x03])]),
        ),
        (
            "server-bad-stream-header",
            script(SERVER | EAGER, 0, vec![bytes(2, &[0x05, 0x02, 0x03, 0x00])]),
        ),
        (
            "server-second-reliable-stream",
            script(
                SERVER | EAGER,
                0,
                vec![frame(3, &spawn), bytes(2, &[0x00]), frame(3, &spawn)],
            ),
        ),
        (
            "server-own-and-bidi-streams",
            script(SERVER | EAGER, 0, vec![bytes(3, &[0]), bytes(4, &[0])]),
        ),
        (
            "server-control-after-handshake",
            script(
                HANDSHAKE | EAGER,
                0,
                vec![
                    Connected(3),
                    Handshake(0),
                    Admission(1),
                    bytes(0, &[0x01, 0x00]),
                ],
            ),
        ),
        (
            "server-wrong-channel-and-direction",
            script(
                SERVER | EAGER,
                0,
                vec![
                    Unreliable(vec![(3, spawn.clone())]),
                    frame(4, &[0; 6]),
                    frame(7, b"\x01x"),
                ],
            ),
        ),
        (
            "server-unknown-ids",
            script(
                SERVER | EAGER,
                0,
                vec![Unreliable(vec![(UNKNOWN, vec![1])]), frame(UNKNOWN, &[1])],
            ),
        ),
        (
            "server-bad-ids",
            script(
                SERVER | EAGER,
                0,
                vec![
                    frame(12, &[1]),
                    frame(13, &[1]),
                    frame(14, &[1]),
                    frame(15, &[]),
                ],
            ),
        ),
        (
            "server-bad-datagrams",
            script(
                SERVER | EAGER,
                SMALL_DATAGRAMS,
                vec![
                    Datagram(vec![]),
                    Datagram(vec![0x03, 0x01]),
                    Datagram(vec![0x01, 0x05, 0x01]),
                    Datagram(vec![0x02, 0x01, 0x03, 0x03, 0x06, 0x00]),
                    Unreliable(vec![(1, vec![0; 80])]),
                    Unreliable(vec![(1, vec![0; 20])]),
                    Datagram(vec![0x01, 0x00]),
                ],
            ),
        ),
        (
            "server-silence",
            script(
                SERVER | EAGER,
                SHORT_TIMERS,
                vec![Advance(200), frame(0, &[]), Advance(193), Advance(193)],
            ),
        ),
        (
            "server-no-silence",
            script(
                SERVER | EAGER,
                NO_SILENCE,
                vec![Advance(255), frame(3, &spawn)],
            ),
        ),
        (
            "server-finishes-reliable",
            script(SERVER | EAGER, 0, vec![frame(3, &spawn), Finish(1)]),
        ),
        (
            "server-sends",
            script(
                SERVER | EAGER,
                0,
                vec![
                    send(0, 3, &spawn),
                    send(0, 7, b"\x02hi"),
                    send(1, 1, &moved),
                    send(1, 1, &moved),
                    send(1, 2, &moved),
                    send(2, 4, &[0; 4]),
                    send(0, CHAT, b"\x01x"),
                    Flush,
                    SendDatagrams {
                        channel: 0,
                        id: 4,
                        count: 2,
                        len: 40,
                    },
                    SendDatagrams {
                        channel: 0,
                        id: 6,
                        count: 0,
                        len: 4,
                    },
                    SendDatagrams {
                        channel: 0,
                        id: 4,
                        count: 0,
                        len: 1200,
                    },
                    send(1, 1, &[0; 1200]),
                ],
            ),
        ),
        (
            "server-backlog-full",
            script(
                SERVER | APP_EAGER,
                SMALL_BACKLOG,
                vec![
                    send(0, 3, &[1; 20]),
                    send(0, 3, &[2; 20]),
                    send(0, 3, &[3; 20]),
                    DrainStreams(2),
                    send(0, 3, &[4; 20]),
                    send(0, 3, &[5; 100]),
                    DrainStreams(0),
                    send(0, 3, &[6; 100]),
                    DrainStreams(0),
                ],
            ),
        ),
        (
            "server-send-buffer-full",
            script(
                SERVER | APP_EAGER,
                SMALL_SEND_BUFFER,
                vec![
                    SendDatagrams {
                        channel: 0,
                        id: 4,
                        count: 7,
                        len: 400,
                    },
                    send(1, 1, &[1; 500]),
                    send(1, 1, &[2; 500]),
                    send(1, 1, &[3; 500]),
                    Flush,
                    DrainTransmits,
                ],
            ),
        ),
        (
            "server-close-then-send",
            script(
                SERVER | APP_EAGER,
                0,
                vec![
                    send(1, 1, &moved),
                    send(0, 3, &spawn),
                    Close(4),
                    send(0, 3, &spawn),
                    Flush,
                    DrainTransmits,
                    DrainStreams(0),
                ],
            ),
        ),
        (
            "server-lost",
            script(
                SERVER | EAGER,
                0,
                vec![frame(3, &spawn), Lost(1), frame(3, &spawn)],
            ),
        ),
        // Client, handshake done.
        (
            "client-messages",
            script(
                CLIENT | EAGER,
                0,
                vec![
                    frame(3, &spawn),
                    frame(7, b"\x02hi"),
                    Unreliable(vec![(1, moved.clone())]),
                    snap(5, 0, 1, 4),
                    snap(4, 0, 1, 4),
                    snap(6, 1, 2, 4),
                ],
            ),
        ),
        (
            "client-heartbeats",
            script(
                CLIENT | EAGER,
                SHORT_TIMERS,
                vec![Advance(193), send(0, CHAT, b"\x01x"), Advance(195)],
            ),
        ),
        (
            "client-sends",
            script(
                CLIENT | EAGER,
                0,
                vec![
                    send(0, CHAT, b"\x02yo"),
                    send(1, 2, &[3; 12]),
                    send(0, 7, b"\x01x"),
                    SendDatagrams {
                        channel: 0,
                        id: 6,
                        count: 1,
                        len: 4,
                    },
                    Flush,
                ],
            ),
        ),
        (
            "client-wrong-direction",
            script(CLIENT | EAGER, 0, vec![frame(CHAT, b"\x01x")]),
        ),
        (
            "client-server-closes",
            script(CLIENT | EAGER, 0, vec![Lost(1), Read(0)]),
        ),
        // The handshake itself.
        (
            "handshake-server-admitted",
            script(
                HANDSHAKE | EAGER,
                0,
                vec![
                    Connected(3),
                    Handshake(0),
                    bytes(1, &[0x00]),
                    frame(3, &spawn),
                    Admission(1),
                    frame(5, b"\x00"),
                ],
            ),
        ),
        (
            "handshake-server-bytes-before-connected",
            script(
                HANDSHAKE | EAGER | SEVENS,
                0,
                vec![Handshake(1), Connected(3), Admission(2), Advance(100)],
            ),
        ),
        (
            "handshake-server-refused",
            script(
                HANDSHAKE | EAGER,
                0,
                vec![Connected(3), Handshake(0), Admission(3), Advance(200)],
            ),
        ),
        (
            "handshake-server-bad-magic",
            script(
                HANDSHAKE | EAGER,
                0,
                vec![Connected(3), Handshake(2), Advance(193)],
            ),
        ),
        (
            "handshake-server-old-version",
            script(HANDSHAKE | EAGER, 0, vec![Connected(3), Handshake(3)]),
        ),
        (
            "handshake-server-other-protocol",
            script(HANDSHAKE | EAGER, 0, vec![Connected(3), Handshake(4)]),
        ),
        (
            "handshake-server-cut-hello",
            script(
                HANDSHAKE | EAGER,
                SHORT_TIMERS,
                vec![Connected(3), Handshake(5), Advance(255)],
            ),
        ),
        (
            "handshake-server-garbage",
            script(HANDSHAKE | EAGER, 0, vec![Connected(3), Handshake(6)]),
        ),
        (
            "handshake-server-oversize-hello",
            script(HANDSHAKE | EAGER, 0, vec![Connected(3), Handshake(7)]),
        ),
        (
            "handshake-server-trailing-bytes",
            script(HANDSHAKE | EAGER, 0, vec![Connected(3), Handshake(8)]),
        ),
        (
            "handshake-server-small-datagrams",
            script(HANDSHAKE | EAGER, 0, vec![Connected(1), Handshake(0)]),
        ),
        (
            "handshake-server-deadline",
            script(
                HANDSHAKE | EAGER,
                0,
                vec![Connected(3), Handshake(0), Advance(196), Admission(0)],
            ),
        ),
        (
            "handshake-server-small-messages",
            script(
                HANDSHAKE | EAGER | SEVENS,
                SMALL_MESSAGES,
                vec![Connected(3), Handshake(0), Admission(0), frame(3, &[1; 8])],
            ),
        ),
        (
            "handshake-client-welcomed",
            script(
                HANDSHAKE | HANDSHAKE_CLIENT | EAGER,
                0,
                vec![Connected(4), Handshake(1), bytes(1, &[0]), frame(3, &spawn)],
            ),
        ),
        (
            "handshake-client-refused",
            script(
                HANDSHAKE | HANDSHAKE_CLIENT | EAGER,
                0,
                vec![Connected(3), Handshake(2)],
            ),
        ),
        (
            "handshake-client-refused-long-reason-small-messages",
            script(
                HANDSHAKE | HANDSHAKE_CLIENT | EAGER | SEVENS,
                SMALL_MESSAGES,
                vec![Connected(3), Handshake(3)],
            ),
        ),
        (
            "handshake-client-bad-reply",
            script(
                HANDSHAKE | HANDSHAKE_CLIENT | EAGER,
                0,
                vec![Connected(3), Handshake(4), Handshake(5)],
            ),
        ),
        (
            "handshake-client-no-datagrams",
            script(HANDSHAKE | HANDSHAKE_CLIENT | EAGER, 0, vec![Connected(0)]),
        ),
        (
            "handshake-client-lost",
            script(
                HANDSHAKE | HANDSHAKE_CLIENT | EAGER,
                0,
                vec![Connected(3), Lost(2)],
            ),
        ),
    ]
}

#[test]
fn scripts_read_back_from_their_bytes() {
    for (name, s) in seeds() {
        assert_eq!(Script::decode(&s.encode()), s, "{name}");
    }
}

#[test]
fn the_seeds_are_the_codes() {
    let dir = seeds_dir();
    for (name, s) in seeds() {
        let path = dir.join(format!("seed-{name}"));
        let input = s.encode();
        if std::env::var_os("ZAO_BLESS").is_some() {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &input).unwrap();
        }
        let file = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(file, input, "{name}: ZAO_BLESS=1 re-creates it");
    }
}

#[test]
fn every_seed_passes_the_checks() {
    // Every seed runs, and the failures are named together.
    let failed: Vec<&str> = seeds()
        .into_iter()
        .filter(|(_, s)| std::panic::catch_unwind(|| session_check::run(s)).is_err())
        .map(|(name, _)| name)
        .collect();
    assert!(failed.is_empty(), "seeds failing their checks: {failed:?}");
}

#[test]
fn the_corpus_replays_without_a_finding() {
    let mut n = 0;
    for entry in std::fs::read_dir(seeds_dir()).unwrap() {
        let path = entry.unwrap().path();
        let input = std::fs::read(&path).unwrap();
        session_check::check(&input);
        n += 1;
    }
    assert!(n >= 100, "only {n} inputs in fuzz/seeds/session");
}
