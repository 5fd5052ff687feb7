//! The browser side of the server, from Rust: the demos' protocol JSON the
//! page is generated from, WebTransport sessions from a Rust WebTransport
//! client beside native ones, the certificate a browser pins and the HTTP
//! endpoint that publishes its hash. The real browser runs in
//! `clients/ts` (`npm run test:browser`, headless Chromium).

// Test code: a panic is a failed test, so indexing and unwrap are fine here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

/// `clients/ts/web/protocol.json` is the JSON of
/// `zao_messages::web_protocol()`, which the page's module is generated
/// from: a change to the messages shows here first. `ZAO_BLESS=1`
/// rewrites it.
#[test]
fn the_pages_protocol_json_is_the_demos_protocol() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/clients/ts/web/protocol.json");
    let json = zao_messages::web_protocol().to_json();
    if std::env::var_os("ZAO_BLESS").is_some() {
        std::fs::write(path, format!("{json}\n")).unwrap();
    }
    let written = std::fs::read_to_string(path).unwrap();
    assert_eq!(
        written.trim_end(),
        json.trim_end(),
        "ZAO_BLESS=1 cargo test --test web rewrites it"
    );
}

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use common::net::wait_server;
use zao::proto::{Channel, ClientEvent, DisconnectReason, RefuseReason, Target, WaitError};
use zao::quic::{
    Certificate, CertificateRotation, Client, ClientConfig, MAX_BROWSER_VALIDITY, Server,
    ServerConfig, ServerEvent,
};
use zao_messages::{SpawnEntity, WorldSnapshot, samples};

fn web_server() -> Server {
    let config =
        ServerConfig::development("127.0.0.1:0".parse().unwrap(), zao_messages::protocol())
            .unwrap();
    Server::start(config).unwrap()
}

fn web_client(server: &Server, protocol: zao::proto::Protocol) -> Client {
    let mut config = ClientConfig::pinned(server.local_addr(), server.certificate_hash(), protocol);
    config.webtransport = Some("/".to_owned());
    Client::connect(config).unwrap()
}

/// A WebTransport client (HTTP/3 CONNECT, streams and datagrams of the
/// session, as a browser's) and a native one share the server: same
/// protocol, same channels, both ways, each named by its transport.
#[test]
fn a_webtransport_client_plays_beside_a_native_one() {
    let mut server = web_server();
    let mut web = web_client(&server, zao_messages::protocol());
    let web_id = web.wait_connected(Duration::from_secs(10)).unwrap();
    let native = Client::connect(ClientConfig::pinned(
        server.local_addr(),
        server.certificate_hash(),
        zao_messages::protocol(),
    ))
    .unwrap();
    let native_id = native.wait_connected(Duration::from_secs(10)).unwrap();
    wait_server(
        &mut server,
        Duration::from_secs(5),
        |e| matches!(e, ServerEvent::Connected { client, .. } if *client == native_id),
    );
    assert_eq!(server.stats(web_id).unwrap().transport, "webtransport");
    assert_eq!(server.stats(native_id).unwrap().transport, "quic");

    // Reliable up, reliable and a snapshot down.
    web.send(Channel::RELIABLE, &samples::spawn_entity())
        .unwrap();
    web.flush();
    let got = wait_server(
        &mut server,
        Duration::from_secs(5),
        |e| matches!(e, ServerEvent::Message { client, .. } if *client == web_id),
    );
    let Some(ServerEvent::Message { message, .. }) = got else {
        panic!("nothing arrived from the WebTransport client");
    };
    assert_eq!(
        message.decode::<SpawnEntity>().unwrap(),
        samples::spawn_entity()
    );
    server
        .send(
            Target::One(web_id),
            Channel::RELIABLE,
            &samples::inventory(4),
        )
        .unwrap();
    server
        .send_snapshot(Target::All, &samples::world_snapshot(200))
        .unwrap();
    server.flush();
    let mut inventory = false;
    let end = Instant::now() + Duration::from_secs(5);
    let mut chunks = 0;
    while Instant::now() < end && !(inventory && chunks > 1) {
        while let Some(event) = web.poll_event() {
            if let ClientEvent::Message {
                channel, message, ..
            } = event
            {
                if channel == Channel::SNAPSHOT {
                    assert!(message.decode::<WorldSnapshot>().is_ok());
                    chunks += 1;
                } else {
                    inventory |= message.decode::<zao_messages::Inventory>().ok()
                        == Some(samples::inventory(4));
                }
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(
        inventory,
        "the reliable message reached the WebTransport client"
    );
    assert!(
        chunks > 1,
        "snapshot chunks came as WebTransport datagrams: {chunks}"
    );
    web.shutdown();
}

/// The refusal reaches a WebTransport client as it does a native one.
#[test]
fn a_webtransport_client_with_another_protocol_reads_why() {
    let server = web_server();
    let mut other = zao_messages::protocol();
    other.add::<zao_messages::EntitySnapshot>(
        Channel::SNAPSHOT,
        zao::proto::Direction::ServerToClient,
    );
    let web = web_client(&server, other);
    match web.wait_connected(Duration::from_secs(10)) {
        Err(WaitError::Closed(DisconnectReason::Refused(RefuseReason::ProtocolMismatch {
            detail,
        }))) => assert!(detail.contains("EntitySnapshot"), "{detail}"),
        other => panic!("{other:?}"),
    }
}

/// The server's development certificate is one a browser pins: ECDSA
/// P-256, valid for at most 14 days.
#[test]
fn the_development_certificate_is_one_a_browser_pins() {
    let cert = Certificate::self_signed(&["localhost"]).unwrap();
    let der = cert.chain[0].as_ref();
    let id_ec_public_key = [0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
    let prime256v1 = [0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
    assert!(der.windows(9).any(|w| w == id_ec_public_key), "an EC key");
    assert!(der.windows(10).any(|w| w == prime256v1), "on P-256");
    let (not_before, not_after) = validity(der);
    let days = (not_after - not_before) as f64 / 86_400.0;
    assert!(days <= 14.0 && days > 13.0, "valid for {days} days");
    assert_eq!(MAX_BROWSER_VALIDITY, Duration::from_secs(14 * 86_400));
    // Longer asked is cut to 14 days.
    let long =
        Certificate::self_signed_for(&["localhost"], Duration::from_secs(30 * 86_400)).unwrap();
    let (a, b) = validity(long.chain[0].as_ref());
    assert!(b - a <= 14 * 86_400);
}

/// The certificate's validity, as Unix seconds: the first two UTCTime
/// (`17 0d YYMMDDhhmmssZ`) values of the DER.
fn validity(der: &[u8]) -> (i64, i64) {
    let mut times = der
        .windows(15)
        .filter(|w| w[0] == 0x17 && w[1] == 0x0d && w[14] == b'Z')
        .map(|w| {
            let n = |i: usize| i64::from(w[i] - b'0') * 10 + i64::from(w[i + 1] - b'0');
            let (y, mo, d, h, mi, s) = (2000 + n(2), n(4), n(6), n(8), n(10), n(12));
            days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s
        });
    (times.next().unwrap(), times.next().unwrap())
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A server renews its certificate before it expires: a new hash first,
/// the old one still listed, and a client pinning the new one connects.
#[test]
fn a_rotating_server_renews_its_certificate_and_lists_both_hashes() {
    let mut config =
        ServerConfig::development("127.0.0.1:0".parse().unwrap(), zao_messages::protocol())
            .unwrap();
    let mut rotation = CertificateRotation::default();
    rotation.validity = Duration::from_secs(3);
    rotation.renew_before = Duration::from_secs(2);
    config.certificate = Certificate::self_signed_for(&["localhost"], rotation.validity).unwrap();
    config.certificate_rotation = Some(rotation);
    let server = Server::start(config).unwrap();
    let first = server.certificate_hash();
    let end = Instant::now() + Duration::from_secs(5);
    while server.certificate_hashes().len() < 2 && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    let hashes = server.certificate_hashes();
    assert_eq!(hashes.len(), 2, "{hashes:?}");
    assert_ne!(hashes[0], first);
    assert_eq!(hashes[1], first);
    let client = Client::connect(ClientConfig::pinned(
        server.local_addr(),
        hashes[0],
        zao_messages::protocol(),
    ))
    .unwrap();
    client.wait_connected(Duration::from_secs(10)).unwrap();
}

/// The hashes are served over plain HTTP for a page to fetch, any origin.
#[test]
fn the_certificate_hashes_are_served_over_http() {
    let mut config =
        ServerConfig::development("127.0.0.1:0".parse().unwrap(), zao_messages::protocol())
            .unwrap();
    config.certificate_http = Some("127.0.0.1:0".parse().unwrap());
    let server = Server::start(config).unwrap();
    let http = server.certificate_http().unwrap();
    let get = |path: &str| {
        let mut stream = std::net::TcpStream::connect(http).unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: localhost\r\nOrigin: http://localhost:8080\r\n\r\n"
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
    };
    let response = get(zao::quic::CERTIFICATE_PATH);
    assert!(response.starts_with("HTTP/1.1 200 OK"), "{response}");
    assert!(
        response.contains("Access-Control-Allow-Origin: *"),
        "{response}"
    );
    assert!(
        response.ends_with(&format!(
            "{{\"hashes\":[\"{}\"],\"port\":{}}}",
            server.certificate_hash(),
            server.local_addr().port()
        )),
        "{response}"
    );
    assert!(get("/other").starts_with("HTTP/1.1 404"));
}
