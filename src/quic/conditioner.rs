//! The link conditioner: a wrapper around quinn's `AsyncUdpSocket` that
//! applies seeded latency, jitter, loss, duplication, reordering, an MTU
//! clamp and blackholes to the packets a socket sends. Put it under both ends
//! to condition both directions. For tests and demos: it runs in-process,
//! over real loopback sockets.

use core::fmt;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, IoSliceMut};
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use quinn::udp::{EcnCodepoint, RecvMeta, Transmit};
use quinn::{AsyncUdpSocket, UdpPoller};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::proto::SplitMix64;

/// Conditions applied to outgoing packets. All randomness is seeded.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConditionerConfig {
    /// One-way latency added to every packet.
    pub latency: Duration,
    /// Each packet's latency varies uniformly within ± this.
    pub jitter: Duration,
    /// Probability a packet is dropped.
    pub loss: f64,
    /// Probability a packet is sent twice.
    pub duplicate: f64,
    /// Probability a packet is held back behind the next 1–3 packets.
    pub reorder: f64,
    /// Packets larger than this are dropped (a path MTU clamp).
    pub mtu: Option<usize>,
    /// Drop everything from `start` (after the socket is made) for `length`.
    pub blackhole: Option<(Duration, Duration)>,
    /// Conditions apply only after this long (zero: from the start), e.g.
    /// to let a handshake through before a harsh link.
    pub start_after: Duration,
    /// Seed of the conditioner's random choices.
    pub seed: u64,
}

impl Default for ConditionerConfig {
    fn default() -> Self {
        Self {
            latency: Duration::ZERO,
            jitter: Duration::ZERO,
            loss: 0.0,
            duplicate: 0.0,
            reorder: 0.0,
            mtu: None,
            blackhole: None,
            start_after: Duration::ZERO,
            seed: 1,
        }
    }
}

impl ConditionerConfig {
    /// The link scenarios of the test matrix, `"L1"` to `"L8"`
    /// (one-way latency / jitter / loss / extra):
    ///
    /// | preset | latency | jitter | loss | other |
    /// |---|---|---|---|---|
    /// | L1 | 40 ms | 6 ms | 0.2 % | |
    /// | L2 | 100 ms | 15 ms | 2 % | |
    /// | L3 | 200 ms | 30 ms | 10 % | |
    /// | L4 | 250 ms | 250 ms | 5 % | 10 % duplicates |
    /// | L5 | 1000 ms | 100 ms | 25 % | 25 % duplicates |
    /// | L6 | 50 ms | 0 | 0 | 25 % held back 1–3 packets |
    /// | L7 | 15 ms | 0 | 0 | blackhole for 5 s after 2 s |
    /// | L8 | 20 ms | 0 | 0 | MTU clamp 1200 |
    #[must_use]
    pub fn preset(name: &str) -> Option<Self> {
        let ms = Duration::from_millis;
        let base = Self::default();
        Some(match name.to_ascii_uppercase().as_str() {
            "L1" => Self {
                latency: ms(40),
                jitter: ms(6),
                loss: 0.002,
                ..base
            },
            "L2" => Self {
                latency: ms(100),
                jitter: ms(15),
                loss: 0.02,
                ..base
            },
            "L3" => Self {
                latency: ms(200),
                jitter: ms(30),
                loss: 0.10,
                ..base
            },
            "L4" => Self {
                latency: ms(250),
                jitter: ms(250),
                loss: 0.05,
                duplicate: 0.10,
                ..base
            },
            "L5" => Self {
                latency: ms(1000),
                jitter: ms(100),
                loss: 0.25,
                duplicate: 0.25,
                ..base
            },
            "L6" => Self {
                latency: ms(50),
                reorder: 0.25,
                ..base
            },
            "L7" => Self {
                latency: ms(15),
                blackhole: Some((Duration::from_secs(2), Duration::from_secs(5))),
                ..base
            },
            "L8" => Self {
                latency: ms(20),
                mtu: Some(1200),
                ..base
            },
            _ => return None,
        })
    }

    /// The same conditions with another seed (to vary the two directions).
    #[must_use]
    pub fn with_seed(self, seed: u64) -> Self {
        Self { seed, ..self }
    }
}

/// A packet waiting for its time.
#[derive(Debug)]
struct Delayed {
    due: Instant,
    seq: u64,
    hold: u8,
    destination: SocketAddr,
    ecn: Option<EcnCodepoint>,
    src_ip: Option<IpAddr>,
    contents: Vec<u8>,
}

impl PartialEq for Delayed {
    fn eq(&self, other: &Self) -> bool {
        (self.due, self.seq) == (other.due, other.seq)
    }
}
impl Eq for Delayed {}
impl PartialOrd for Delayed {
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Delayed {
    fn cmp(&self, other: &Self) -> core::cmp::Ordering {
        (self.due, self.seq).cmp(&(other.due, other.seq))
    }
}

#[derive(Debug)]
struct State {
    rng: SplitMix64,
    seq: u64,
}

/// A UDP socket whose outgoing packets pass through a [`ConditionerConfig`].
pub struct ConditionedSocket {
    inner: Arc<dyn AsyncUdpSocket>,
    config: ConditionerConfig,
    created: Instant,
    state: Mutex<State>,
    queue: mpsc::UnboundedSender<Delayed>,
}

impl fmt::Debug for ConditionedSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConditionedSocket")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl ConditionedSocket {
    /// Wraps `inner`. Must be called inside a tokio runtime: the delay
    /// queue runs as a task on it.
    pub fn new(inner: Arc<dyn AsyncUdpSocket>, config: ConditionerConfig) -> Arc<Self> {
        let (queue, rx) = mpsc::unbounded_channel();
        tokio::spawn(release(inner.clone(), rx));
        Arc::new(Self {
            inner,
            config,
            created: Instant::now(),
            state: Mutex::new(State {
                rng: SplitMix64::from_state(config.seed),
                seq: 0,
            }),
            queue,
        })
    }

    fn blackholed(&self, now: Instant) -> bool {
        self.config.blackhole.is_some_and(|(start, length)| {
            let since = now.saturating_duration_since(self.created);
            since >= start && since < start + length
        })
    }
}

impl AsyncUdpSocket for ConditionedSocket {
    fn create_io_poller(self: Arc<Self>) -> Pin<Box<dyn UdpPoller>> {
        self.inner.clone().create_io_poller()
    }

    fn try_send(&self, transmit: &Transmit<'_>) -> io::Result<()> {
        let now = Instant::now();
        let c = &self.config;
        if now.saturating_duration_since(self.created) < c.start_after {
            return self.inner.try_send(transmit);
        }
        if c.mtu.is_some_and(|mtu| transmit.contents.len() > mtu) || self.blackholed(now) {
            return Ok(()); // lost on the way
        }
        let Ok(mut state) = self.state.lock() else {
            return self.inner.try_send(transmit);
        };
        if state.rng.unit() < c.loss {
            return Ok(());
        }
        let copies = if state.rng.unit() < c.duplicate { 2 } else { 1 };
        for _ in 0..copies {
            let jitter = c.jitter.as_secs_f64() * (2.0 * state.rng.unit() - 1.0);
            let delay = Duration::from_secs_f64((c.latency.as_secs_f64() + jitter).max(0.0));
            let hold = if state.rng.unit() < c.reorder {
                1 + (state.rng.next_u64() % 3) as u8
            } else {
                0
            };
            if delay.is_zero() && hold == 0 {
                self.inner.try_send(transmit)?;
                continue;
            }
            state.seq += 1;
            let _ = self.queue.send(Delayed {
                due: now + delay,
                seq: state.seq,
                hold,
                destination: transmit.destination,
                ecn: transmit.ecn,
                src_ip: transmit.src_ip,
                contents: transmit.contents.to_vec(),
            });
        }
        Ok(())
    }

    fn poll_recv(
        &self,
        cx: &mut Context<'_>,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        self.inner.poll_recv(cx, bufs, meta)
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    // One packet per transmit, so every packet meets the conditions alone.
    fn max_transmit_segments(&self) -> usize {
        1
    }

    fn max_receive_segments(&self) -> usize {
        self.inner.max_receive_segments()
    }

    fn may_fragment(&self) -> bool {
        self.inner.may_fragment()
    }
}

/// Longest a held-back packet waits for the packets it lets pass.
const MAX_HOLD: Duration = Duration::from_millis(100);

/// Sends delayed packets when they are due; a held-back packet goes out
/// after `hold` later packets (or [`MAX_HOLD`]).
async fn release(inner: Arc<dyn AsyncUdpSocket>, mut rx: mpsc::UnboundedReceiver<Delayed>) {
    let mut heap: BinaryHeap<Reverse<Delayed>> = BinaryHeap::new();
    let mut held: Vec<(Delayed, Instant)> = Vec::new();
    let send = |p: &Delayed| {
        // A full socket buffer loses the packet, like a congested link.
        let _ = inner.try_send(&Transmit {
            destination: p.destination,
            ecn: p.ecn,
            contents: &p.contents,
            segment_size: None,
            src_ip: p.src_ip,
        });
    };
    loop {
        let next_due = heap.peek().map(|Reverse(p)| p.due);
        let next_hold = held.iter().map(|(_, deadline)| *deadline).min();
        let wake = match (next_due, next_hold) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        tokio::select! {
            packet = rx.recv() => match packet {
                Some(p) => heap.push(Reverse(p)),
                None => return,
            },
            () = async {
                match wake {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => core::future::pending().await,
                }
            } => {}
        }
        let now = Instant::now();
        while heap.peek().is_some_and(|Reverse(p)| p.due <= now) {
            let Some(Reverse(mut p)) = heap.pop() else {
                break;
            };
            if p.hold > 0 {
                p.hold += 1; // counts itself below
                held.push((p, now + MAX_HOLD));
            } else {
                send(&p);
            }
            // Every packet that leaves (or joins the held) lets held ones
            // move one place closer.
            let mut i = 0;
            while i < held.len() {
                if let Some((h, _)) = held.get_mut(i) {
                    h.hold = h.hold.saturating_sub(1);
                }
                if held.get(i).is_some_and(|(h, _)| h.hold == 0) {
                    let (h, _) = held.swap_remove(i);
                    send(&h);
                } else {
                    i += 1;
                }
            }
        }
        held.retain(|(p, deadline)| {
            let keep = *deadline > now;
            if !keep {
                send(p);
            }
            keep
        });
    }
}
