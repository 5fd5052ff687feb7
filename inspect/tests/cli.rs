//! The `zao-inspect` command on a capture written by `CaptureWriter`, on a
//! golden file, on hex from stdin and on text.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use zao::inspect::{CaptureWriter, Flow};
use zao::proto::Channel;
use zao::proto::Role;
use zao_messages::samples;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs the command with `args` and `stdin`; its exit code and stdout.
fn inspect(args: &[&str], stdin: &[u8]) -> (i32, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_zao-inspect"))
        .args(args)
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap() + &String::from_utf8(out.stderr).unwrap(),
    )
}

fn framed<M: zao::NetMessage>(m: &M) -> Vec<u8> {
    let mut buf = vec![0u8; zao::message_len(m)];
    zao::encode_message(m, &mut buf).unwrap();
    buf
}

/// A server capture: two clients, a few messages each way.
fn write_capture() -> PathBuf {
    let protocol = zao_messages::protocol();
    let start = Instant::now();
    let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let mut w =
        CaptureWriter::with_start(Vec::new(), &protocol, Role::Server, start, wall).unwrap();
    let at = |ms| start + Duration::from_millis(ms);
    w.connected(at(1), 1, "127.0.0.1:5001").unwrap();
    w.connected(at(2), 2, "127.0.0.1:5002").unwrap();
    let moved = framed(&samples::player_moved());
    let spawn = framed(&samples::spawn_entity());
    let snapshot = framed(&samples::world_snapshot(2));
    w.message(at(10), 1, Flow::ClientToServer, Channel::UNRELIABLE, &moved)
        .unwrap();
    w.message(at(11), 1, Flow::ServerToClient, Channel::RELIABLE, &spawn)
        .unwrap();
    w.message(
        at(12),
        2,
        Flow::ServerToClient,
        Channel::SNAPSHOT,
        &snapshot,
    )
    .unwrap();
    w.message(at(13), 2, Flow::ClientToServer, Channel::RELIABLE, &[0x00])
        .unwrap();
    w.disconnected(at(20), 2, "client closed").unwrap();
    let path = std::env::temp_dir().join(format!("zao-inspect-cli-{}.zcap", std::process::id()));
    std::fs::write(&path, w.into_inner().unwrap()).unwrap();
    path
}

#[test]
fn reads_a_capture_with_filters() {
    let path = write_capture();
    let file = path.to_str().unwrap();
    let (code, out) = inspect(&[file], b"");
    assert_eq!(code, 0, "{out}");
    let expected = [
        "capture recorded by the server, zao 0.1.0, started 2023-11-14 22:13:20.000000 UTC, \
         protocol 0xf4930a7edce7a50a (5 messages)",
        "[    0.001000] client 1 connected from 127.0.0.1:5001",
        "[    0.010000] client 1 → server    unreliable PlayerMoved { entity: 7, position: (1.5, -2.0, 3.25) }",
        "[    0.011000] server → client 1    reliable   SpawnEntity { entity: 42, prefab: 3, \
         position: (10.0, 0.0, -4.0), rotation: (0.0, 0.0, 0.0, 1.0), name: \"Goblin\" }",
        "[    0.012000] server → client 2    snapshot   WorldSnapshot { tick: 500, players: \
         [{ entity: 100, position: (0.0, 0.5, -0.0) }, { entity: 101, position: (1.0, 0.5, -1.0) }] }",
        "[    0.013000] client 2 → server    reliable   Heartbeat",
        "[    0.020000] client 2 disconnected: client closed",
        "7 records shown; messages: 1 Heartbeat, 1 PlayerMoved, 1 SpawnEntity, 1 WorldSnapshot",
    ];
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), expected.len() + 1, "{out}");
    for want in expected {
        assert!(lines.contains(&want), "missing {want:?} in\n{out}");
    }

    let (_, out) = inspect(&["--client", "2", file], b"");
    assert!(
        out.contains("WorldSnapshot {") && !out.contains("PlayerMoved {"),
        "{out}"
    );
    assert!(out.contains("client 2 disconnected") && !out.contains("client 1 connected"));

    let (_, out) = inspect(&["--message", "SpawnEntity,1", file], b"");
    assert!(
        out.contains("SpawnEntity {") && out.contains("PlayerMoved {"),
        "{out}"
    );
    assert!(
        !out.contains("WorldSnapshot {") && !out.contains("connected"),
        "{out}"
    );

    let (_, out) = inspect(&["--message", "WorldSnapshot", "--annotate", file], b"");
    assert!(
        out.contains(
            "    000005  02 00 00 00                                      players: count 2"
        ),
        "{out}"
    );

    let (_, out) = inspect(&["--print-protocol", file], b"");
    let reference =
        std::fs::read_to_string(root().join("assets/conformance/protocol.json")).unwrap();
    assert_eq!(out, reference);

    // Cut mid-record: the whole records print, then the cut is reported.
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
    let (code, out) = inspect(&[file], b"");
    assert_eq!(code, 1);
    assert!(
        out.contains("Heartbeat") && out.contains("ends inside the record"),
        "{out}"
    );
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn reads_binary_hex_and_text_with_a_protocol_json() {
    let protocol = "assets/conformance/protocol.json";
    let (code, out) = inspect(
        &["--protocol", protocol, "assets/golden/player_input.bin"],
        b"",
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out,
        "PlayerInput { tick: 1000, buttons: FIRE | JUMP, aim: (0.5, -1.0), stance: Crouching }\n"
    );
    let hex = b"01 07 00 00 00 00 00 c0 3f 00 00 00 c0 00 00 50 40\n\
                02e803000005000000003f000080bf09\n";
    let (code, out) = inspect(&["--protocol", protocol, "--annotate"], hex);
    assert_eq!(code, 1, "the second message does not decode");
    assert!(out.contains("000005  00 00 c0 3f 00 00 00 c0 00 00 50 40              position: vec3<f32> = (1.5, -2.0, 3.25)"), "{out}");
    assert!(
        out.contains("error at byte 15, stance: tag matches no variant"),
        "{out}"
    );
    let text = b"PlayerMoved { entity: 7, position: (1.5, -2.0, 3.25) }";
    let (code, out) = inspect(&["--protocol", protocol, "--from-text"], text);
    assert_eq!(
        (code, out.as_str()),
        (0, "01 07 00 00 00 00 00 c0 3f 00 00 00 c0 00 00 50 40\n")
    );
    let (code, out) = inspect(&["assets/golden/player_input.bin"], b"");
    assert_eq!(code, 1);
    assert!(out.contains("give --protocol"), "{out}");
}
