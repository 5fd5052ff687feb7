//! A zao client in its own process: connects to `examples/server.rs` (given
//! its address and certificate hash), sends every message a client may send,
//! prints what the server sends back, then leaves.
//!
//! ```sh
//! cargo run --release --example client -- 127.0.0.1:4433 <sha256> --seconds 3
//! ```

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use zao::proto::Channel;
use zao::quic::{CertHash, Client, ClientConfig, ClientEvent};
use zao_messages::{GameMessage, PlayerInput, PlayerMoved, samples};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(addr), Some(hash)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: client <server address> <certificate sha256> [--seconds N]");
        std::process::exit(2);
    };
    let seconds: u64 = args
        .iter()
        .position(|a| a == "--seconds")
        .and_then(|i| args.get(i + 1))
        .map_or(Ok(3), |s| s.parse())?;
    let hash: CertHash = hash.parse()?;
    let mut client = Client::connect(ClientConfig::pinned(
        addr.parse()?,
        hash,
        zao_messages::protocol(),
    ))?;
    let id = client.wait_connected(Duration::from_secs(10))?;
    println!("connected as {id}");

    // Every message a client may send, once each on its channel.
    client.send(Channel::RELIABLE, &samples::spawn_entity())?;
    client.send(Channel::RELIABLE, &samples::inventory(8))?;
    let start = Instant::now();
    let mut received: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut tick = 0u32;
    while start.elapsed() < Duration::from_secs(seconds) {
        client.send(
            Channel::UNRELIABLE,
            &PlayerInput {
                tick,
                ..samples::player_input()
            },
        )?;
        client.send(
            Channel::UNRELIABLE,
            &PlayerMoved {
                entity: id.0 as u32,
                ..samples::player_moved()
            },
        )?;
        client.flush();
        while let Some(event) = client.poll_event() {
            match event {
                ClientEvent::Message { channel, message } => {
                    let (name, detail) = match GameMessage::decode(message.message())? {
                        GameMessage::PlayerMoved(m) => {
                            ("PlayerMoved", format!("entity {}", m.entity))
                        }
                        GameMessage::PlayerInput(m) => ("PlayerInput", format!("tick {}", m.tick)),
                        GameMessage::SpawnEntity(m) => {
                            ("SpawnEntity", format!("{} at {}", m.name, m.position))
                        }
                        GameMessage::WorldSnapshot(m) => (
                            "WorldSnapshot",
                            format!("tick {}, {} players", m.tick, m.players.len()),
                        ),
                        GameMessage::Inventory(m) => {
                            ("Inventory", format!("{} slots", m.slots.len()))
                        }
                    };
                    let count = received.entry(name).or_default();
                    if *count == 0 {
                        println!("first {name} on {channel:?}: {detail}");
                    }
                    *count += 1;
                }
                ClientEvent::Disconnected { reason } => {
                    println!("disconnected: {reason}");
                    return Ok(());
                }
                _ => {}
            }
        }
        tick += 1;
        std::thread::sleep(Duration::from_millis(33));
    }
    if let Some(stats) = client.stats() {
        println!(
            "rtt {:?}, loss {:.2} %, {} messages in",
            stats.rtt,
            stats.loss * 100.0,
            stats.messages_in
        );
    }
    println!("received from the server: {received:?}");
    client.disconnect("done");
    std::thread::sleep(Duration::from_millis(100));
    client.shutdown();
    Ok(())
}
