//! The link conditioner on its own: real loopback UDP sockets, a seeded
//! conditioner on the sending one, and what arrives on the other.

// Test code: a panic is a failed test, so indexing and unwrap are fine here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use zao::quic::quinn::udp::Transmit;
use zao::quic::quinn::{AsyncUdpSocket, Runtime, TokioRuntime};
use zao::quic::{ConditionedSocket, ConditionerConfig};

/// Sends `count` numbered packets through a conditioned socket at `rate`
/// per second and returns the numbers in arrival order, with when they came.
fn run(config: ConditionerConfig, count: u32, rate: f64) -> Vec<(u32, Duration)> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let receiver = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    receiver
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let to = receiver.local_addr().unwrap();
    let start = Instant::now();
    let sender = rt.block_on(async {
        let std_socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let inner = TokioRuntime.wrap_udp_socket(std_socket).unwrap();
        ConditionedSocket::new(inner, config)
    });
    let sending = std::thread::spawn({
        let sender: Arc<ConditionedSocket> = sender.clone();
        move || {
            for i in 0..count {
                let due = start + Duration::from_secs_f64(f64::from(i) / rate);
                while Instant::now() < due {
                    std::thread::sleep(Duration::from_micros(200));
                }
                let mut payload = i.to_le_bytes().to_vec();
                payload.resize(1000, 0);
                let t = Transmit {
                    destination: to,
                    ecn: None,
                    contents: &payload,
                    segment_size: None,
                    src_ip: None,
                };
                // A real socket's send buffer can be full for a moment on a
                // loaded host: wait for room, as quinn's poller would.
                loop {
                    match sender.try_send(&t) {
                        Ok(()) => break,
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            std::thread::sleep(Duration::from_micros(200));
                        }
                        Err(e) => panic!("send: {e}"),
                    }
                }
            }
        }
    });
    let mut got = Vec::new();
    let mut buf = [0u8; 2000];
    while let Ok(n) = receiver.recv(&mut buf) {
        assert_eq!(n, 1000);
        got.push((
            u32::from_le_bytes(buf[..4].try_into().unwrap()),
            start.elapsed(),
        ));
    }
    sending.join().unwrap();
    drop(rt);
    got
}

fn inversions(got: &[(u32, Duration)]) -> usize {
    got.windows(2).filter(|w| w[1].0 < w[0].0).count()
}

#[test]
fn latency_alone_keeps_order_and_loses_nothing() {
    let config = ConditionerConfig {
        latency: Duration::from_millis(100),
        ..ConditionerConfig::default()
    };
    let got = run(config, 1000, 1000.0);
    assert_eq!(got.len(), 1000, "nothing lost");
    assert_eq!(inversions(&got), 0, "order kept");
    let first = got[0].1;
    assert!(first >= Duration::from_millis(100), "delayed: {first:?}");
}

#[test]
fn loss_and_duplicates_match_their_rates() {
    let config = ConditionerConfig {
        loss: 0.2,
        duplicate: 0.1,
        seed: 5,
        ..ConditionerConfig::default()
    };
    let got = run(config, 2000, 4000.0);
    let mut unique: Vec<u32> = got.iter().map(|g| g.0).collect();
    unique.sort_unstable();
    let total = unique.len();
    unique.dedup();
    let delivered = unique.len() as f64 / 2000.0;
    let duplicated = (total - unique.len()) as f64 / unique.len() as f64;
    assert!((0.75..0.85).contains(&delivered), "delivered {delivered}");
    assert!(
        (0.06..0.14).contains(&duplicated),
        "duplicated {duplicated}"
    );
}

#[test]
fn held_back_packets_arrive_behind_later_ones() {
    let config = ConditionerConfig {
        latency: Duration::from_millis(10),
        reorder: 0.25,
        seed: 9,
        ..ConditionerConfig::default()
    };
    let got = run(config, 1000, 1000.0);
    assert_eq!(got.len(), 1000);
    let inv = inversions(&got);
    assert!(inv > 100 && inv < 400, "{inv} inversions");
}
