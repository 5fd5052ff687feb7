//! The Agones SDK server on your desktop (`zao::fleet::agones::LocalSdkServer`),
//! for running a fleet's game server without a cluster: it prints the port
//! to give the server, every SDK call as it arrives, allocates the game
//! server when told (as a matchmaker's `GameServerAllocation` would), and
//! ends when the game server calls Shutdown.
//!
//! ```sh
//! cargo run --features agones --example agones_local -- --allocate-after 3
//! # in another terminal, with the port it printed:
//! AGONES_SDK_GRPC_PORT=<port> cargo run --release --features agones --example fleet_server -- --agones --bind 127.0.0.1:7777
//! # then stop the game server with SIGTERM: it drains, and this sees Shutdown
//! ```

use std::time::{Duration, Instant};

use zao::fleet::agones::{LocalSdkServer, SdkCall};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let allocate_after = args
        .iter()
        .position(|a| a == "--allocate-after")
        .and_then(|i| args.get(i + 1))
        .map(|s| s.parse::<u64>())
        .transpose()?
        .map(Duration::from_secs);
    let sdk = LocalSdkServer::start()?;
    println!("AGONES_SDK_GRPC_PORT={}", sdk.port());
    let mut allocate_at = None;
    let mut seen = 0;
    let mut health = 0usize;
    loop {
        let calls = sdk.calls();
        for call in calls.iter().skip(seen) {
            match call {
                // One line per 10 health reports: they come every second.
                SdkCall::Health => {
                    health += 1;
                    if health % 10 == 1 {
                        println!("Health ({health} so far)");
                    }
                }
                SdkCall::GetGameServer | SdkCall::Watch => {}
                other => println!("{other:?}"),
            }
            if *call == SdkCall::Ready {
                allocate_at = allocate_after.map(|after| Instant::now() + after);
            }
        }
        seen = calls.len();
        if allocate_at.is_some_and(|at| Instant::now() >= at) {
            allocate_at = None;
            sdk.allocate([("match", "local-1")], [("zao.dev/tokens", "local")]);
            println!("allocated (state {})", sdk.state());
        }
        if calls.contains(&SdkCall::Shutdown) {
            println!("players list at the end: {:?}", sdk.list("players"));
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
