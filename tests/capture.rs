//! Captures over real loopback QUIC: a server configured to capture writes
//! every connection's messages both ways (docs/CAPTURE.md), and the
//! inspector reads them back as text.

// Test code: a panic is a failed test, so indexing and unwrap are fine here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::time::Duration;

use common::net::{client_config, wait_server};
use zao::inspect::{CaptureEvent, CaptureReader, Flow, Inspector};
use zao::proto::{Channel, Target};
use zao::quic::{Certificate, Client, Server, ServerConfig, ServerEvent};
use zao_messages::samples;

#[test]
fn a_server_capture_holds_each_connections_messages_both_ways() {
    let path = std::env::temp_dir().join(format!("zao-capture-{}.zcap", std::process::id()));
    let mut config = ServerConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        Certificate::self_signed(&["localhost"]).unwrap(),
        zao_messages::protocol(),
    );
    config.capture = Some(path.clone());
    let mut server = Server::start(config).unwrap();
    let mut client = Client::connect(client_config(&server)).unwrap();
    let id = client.wait_connected(Duration::from_secs(10)).unwrap();
    client
        .send(Channel::RELIABLE, &samples::spawn_entity())
        .unwrap();
    wait_server(&mut server, Duration::from_secs(5), |e| {
        matches!(e, ServerEvent::Message { .. })
    })
    .expect("the message arrived");
    server
        .send(Target::All, Channel::RELIABLE, &samples::inventory(4))
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    client.disconnect("done");
    std::thread::sleep(Duration::from_millis(200));
    server.shutdown();

    let file = std::fs::File::open(&path).unwrap();
    let mut reader = CaptureReader::new(std::io::BufReader::new(file)).unwrap();
    let inspector = Inspector::from_protocol(&zao_messages::protocol());
    let mut lines = Vec::new();
    while let Some(record) = reader.next_record().unwrap() {
        assert_eq!(record.connection, id.0);
        lines.push(match record.event {
            CaptureEvent::Message {
                flow,
                channel,
                framed,
            } => format!(
                "{flow:?} {channel:?} {}",
                inspector.to_text(framed).unwrap()
            ),
            CaptureEvent::Connected { .. } => "connected".to_owned(),
            CaptureEvent::Disconnected { reason } => format!("disconnected: {reason}"),
            _ => "?".to_owned(),
        });
    }
    std::fs::remove_file(&path).ok();
    println!("{}", lines.join("\n"));
    assert_eq!(lines.first().map(String::as_str), Some("connected"));
    assert!(lines.iter().any(|l| l.starts_with(&format!(
        "{:?} Channel::RELIABLE SpawnEntity {{",
        Flow::ClientToServer
    ))));
    assert!(lines.iter().any(|l| l.starts_with(&format!(
        "{:?} Channel::RELIABLE Inventory {{",
        Flow::ServerToClient
    ))));
    assert!(
        lines
            .last()
            .unwrap()
            .starts_with("disconnected: closed by the peer"),
        "{lines:?}"
    );
}

fn capture_config(path: &std::path::Path) -> ServerConfig {
    let mut config = ServerConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        Certificate::self_signed(&["localhost"]).unwrap(),
        zao_messages::protocol(),
    );
    config.capture = Some(path.to_owned());
    config
}

fn temp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("zao-{name}-{}.zcap", std::process::id()))
}

/// A capture holds what players sent: the owner's alone, even where the
/// file existed with wider permissions.
#[cfg(unix)]
#[test]
fn a_capture_file_is_the_owners_alone() {
    use std::os::unix::fs::PermissionsExt;
    let path = temp("mode");
    std::fs::write(&path, b"old").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let server = Server::start(capture_config(&path)).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    server.shutdown();
    std::fs::remove_file(&path).ok();
    assert_eq!(mode, 0o600, "{mode:o}");
}

/// A symbolic link planted where the capture goes does not redirect it:
/// the server refuses to start, and the link's target is untouched.
#[cfg(unix)]
#[test]
fn a_capture_never_follows_a_symbolic_link() {
    let target = temp("target");
    let link = temp("link");
    std::fs::write(&target, b"precious").unwrap();
    std::fs::remove_file(&link).ok();
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let started = Server::start(capture_config(&link));
    let kept = std::fs::read(&target).unwrap();
    std::fs::remove_file(&link).ok();
    std::fs::remove_file(&target).ok();
    assert!(started.is_err(), "the server started through a symlink");
    assert_eq!(kept, b"precious");
}

/// At its size limit a capture stops: the file holds whole records up to
/// the limit and no more, and the reader reads it to its end.
#[test]
fn a_capture_stops_at_its_size_limit() {
    let path = temp("limit");
    let mut config = capture_config(&path);
    const LIMIT: u64 = 16 * 1024;
    config.capture_max_bytes = LIMIT;
    let mut server = Server::start(config).unwrap();
    let mut client = Client::connect(client_config(&server)).unwrap();
    client.wait_connected(Duration::from_secs(10)).unwrap();
    // Some 200 KiB of messages: far past the limit.
    for _ in 0..400 {
        client
            .send(Channel::RELIABLE, &samples::spawn_entity())
            .unwrap();
        server
            .send(Target::All, Channel::RELIABLE, &samples::inventory(32))
            .unwrap();
        while server.poll_event().is_some() {}
        while client.poll_event().is_some() {}
    }
    std::thread::sleep(Duration::from_millis(300));
    client.shutdown();
    server.shutdown();
    let size = std::fs::metadata(&path).unwrap().len();
    let file = std::fs::File::open(&path).unwrap();
    let mut reader = CaptureReader::new(std::io::BufReader::new(file)).unwrap();
    let mut records = 0;
    while reader.next_record().unwrap().is_some() {
        records += 1;
    }
    std::fs::remove_file(&path).ok();
    assert!(size <= LIMIT, "{size} bytes");
    // It was filled, not left empty: within one record of the limit.
    assert!(size > LIMIT - 2048, "{size} bytes");
    assert!(records > 10, "{records}");
}
