//! A zao server in its own process: prints its certificate hash, then
//! serves the reference protocol at 30 Hz, broadcasting snapshots and
//! answering each client with a spawn and an inventory, and prints what
//! every client sends.
//!
//! ```sh
//! cargo run --release --example server -- --bind 127.0.0.1:4433 --seconds 60
//! # then, in another terminal, the command it prints:
//! cargo run --release --example client -- 127.0.0.1:4433 <sha256>
//! ```

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use zao::proto::Channel;
use zao::quic::{Certificate, Server, ServerConfig, ServerEvent, Target};
use zao_messages::{GameMessage, PlayerMoved, WorldSnapshot, samples};

fn arg(args: &[String], flag: &str) -> Option<String> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1).cloned())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let bind = arg(&args, "--bind").unwrap_or_else(|| "127.0.0.1:4433".to_owned());
    let seconds: u64 = arg(&args, "--seconds").map_or(Ok(60), |s| s.parse())?;

    let certificate = Certificate::self_signed(&["localhost"])?;
    let mut server = Server::start(ServerConfig::new(
        bind.parse()?,
        certificate,
        zao_messages::protocol(),
    ))?;
    println!("zao server on {}", server.local_addr());
    println!("certificate SHA-256 {}", server.certificate_hash());
    println!(
        "run: cargo run --release --example client -- {} {}",
        server.local_addr(),
        server.certificate_hash()
    );

    let start = Instant::now();
    let tick = Duration::from_secs(1) / 30;
    let mut received: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut ever_connected = false;
    let mut n = 0u32;
    while start.elapsed() < Duration::from_secs(seconds) {
        while let Some(event) = server.poll_event() {
            match event {
                ServerEvent::Connected { client, addr, .. } => {
                    ever_connected = true;
                    println!("+ {client} from {addr}");
                    // A newcomer gets its avatar and an inventory, reliably.
                    server.send(
                        Target::One(client),
                        Channel::RELIABLE,
                        &samples::spawn_entity(),
                    )?;
                    server.send(
                        Target::One(client),
                        Channel::RELIABLE,
                        &samples::inventory(16),
                    )?;
                }
                ServerEvent::Refused { addr, reason } => println!("x {addr} refused: {reason}"),
                ServerEvent::Disconnected { client, reason } => println!("- {client}: {reason}"),
                ServerEvent::Message {
                    client, message, ..
                } => {
                    let name = match GameMessage::decode(message.message()) {
                        Ok(GameMessage::PlayerMoved(_)) => "PlayerMoved",
                        Ok(GameMessage::PlayerInput(_)) => "PlayerInput",
                        Ok(GameMessage::SpawnEntity(_)) => "SpawnEntity",
                        Ok(GameMessage::WorldSnapshot(_)) => "WorldSnapshot",
                        Ok(GameMessage::Inventory(_)) => "Inventory",
                        Err(e) => {
                            println!("  {client} sent a bad message: {e}");
                            continue;
                        }
                    };
                    let count = received.entry(name).or_default();
                    if *count == 0 {
                        println!("  first {name} from {client}");
                    }
                    *count += 1;
                }
                _ => {}
            }
        }
        server.send_snapshot(
            Target::All,
            &WorldSnapshot {
                tick: n,
                ..samples::world_snapshot(64)
            },
        )?;
        server.send(
            Target::All,
            Channel::UNRELIABLE,
            &PlayerMoved {
                entity: n,
                ..samples::player_moved()
            },
        )?;
        server.flush();
        if ever_connected && server.clients().is_empty() {
            break;
        }
        n += 1;
        std::thread::sleep(tick);
    }
    println!("received from clients: {received:?}");
    server.shutdown();
    Ok(())
}
