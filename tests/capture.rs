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
