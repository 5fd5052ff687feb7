//! Loopback servers and clients for the transport tests: real quinn
//! endpoints on 127.0.0.1, port 0.

use std::time::{Duration, Instant};

use zao::quic::{
    Certificate, Client, ClientConfig, ClientEvent, ClientId, ConditionerConfig, Limits, Server,
    ServerConfig, ServerEvent,
};

pub fn server_with(limits: Limits, conditioner: Option<ConditionerConfig>) -> Server {
    let cert = Certificate::self_signed(&["localhost"]).unwrap();
    let mut config = ServerConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        cert,
        zao_messages::protocol(),
    );
    config.limits = limits;
    config.conditioner = conditioner;
    Server::start(config).unwrap()
}

pub fn server() -> Server {
    server_with(Limits::default(), None)
}

pub fn client_config(server: &Server) -> ClientConfig {
    ClientConfig::pinned(
        server.local_addr(),
        server.certificate_hash(),
        zao_messages::protocol(),
    )
}

/// Connects a client and waits for the server to report it.
pub fn connect(server: &mut Server, config: ClientConfig) -> (Client, ClientId) {
    let client = Client::connect(config).unwrap();
    let id = client
        .wait_connected(Duration::from_secs(20))
        .unwrap_or_else(|e| panic!("connect: {e}"));
    let seen = wait_server(
        server,
        Duration::from_secs(10),
        |e| matches!(e, ServerEvent::Connected { client, .. } if *client == id),
    );
    assert!(seen.is_some(), "server never reported {id}");
    (client, id)
}

/// Polls the server until `pred` matches an event (returned) or time runs
/// out; other events are dropped.
pub fn wait_server(
    server: &mut Server,
    timeout: Duration,
    mut pred: impl FnMut(&ServerEvent) -> bool,
) -> Option<ServerEvent> {
    let end = Instant::now() + timeout;
    while Instant::now() < end {
        match server.poll_event() {
            Some(e) if pred(&e) => return Some(e),
            Some(_) => {}
            None => std::thread::sleep(Duration::from_millis(1)),
        }
    }
    None
}

/// Polls the client until `pred` matches an event or time runs out.
pub fn wait_client(
    client: &mut Client,
    timeout: Duration,
    mut pred: impl FnMut(&ClientEvent) -> bool,
) -> Option<ClientEvent> {
    let end = Instant::now() + timeout;
    while Instant::now() < end {
        match client.poll_event() {
            Some(e) if pred(&e) => return Some(e),
            Some(_) => {}
            None => std::thread::sleep(Duration::from_millis(1)),
        }
    }
    None
}

/// Connects a client with the default (pinned) configuration.
pub fn connect_default(server: &mut Server) -> (Client, ClientId) {
    let config = client_config(server);
    connect(server, config)
}
