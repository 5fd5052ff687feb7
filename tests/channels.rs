//! Declared channels on the simulated network, both directions: each
//! reliable-ordered channel on a QUIC stream of its own (a large message on
//! one never holds back another channel), priorities the transport honours
//! when the link is congested, reliable-unordered delivery exactly once
//! under loss, and sequenced channels that deliver latest-wins per message
//! type under reordering and duplication. Each test prints its figures
//! (`--nocapture`).

// Test code: a panic is a failed test, so indexing and unwrap are fine here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use zao::proto::{
    Channel, ChannelKind, ClientEvent, Direction, Limits, Protocol, Received, ServerEvent, Target,
};
use zao::sim::{LinkSpec, Sim, SimClient, SimClientConfig, SimServer, SimServerConfig};
use zao::{Decode, Encode, NetMessage};
use zao_perf::percentile;

const STEP: Duration = Duration::from_millis(5);

/// A chat line, stamped with the virtual time it was sent (µs).
#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 20)]
struct Chat {
    seq: u32,
    sent_us: u64,
    text: String,
}

/// A large blob (a map chunk, an inventory dump): 8 bytes a word.
#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 21)]
struct Bulk {
    seq: u32,
    data: Vec<u64>,
}

/// Another large blob, for a second bulk channel.
#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 25)]
struct Patch {
    seq: u32,
    data: Vec<u64>,
}

/// A loot pickup: must arrive, order does not matter.
#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 22)]
struct Loot {
    seq: u32,
    item: u16,
}

/// Where a player aims: only the latest matters.
#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 23)]
struct Aim {
    seq: u32,
    yaw: f32,
}

/// Another latest-wins stream on the same channel.
#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 24)]
struct Health {
    seq: u32,
    hp: u16,
}

struct Channels {
    chat: Channel,
    bulk: Channel,
    loot: Channel,
    aim: Channel,
}

/// The game's protocol: `chat_priority` on the chat channel, 0 on bulk.
fn protocol(chat_priority: i32) -> (Protocol, Channels) {
    let mut p = Protocol::new();
    let chat = p.add_channel_with_priority("chat", ChannelKind::ReliableOrdered, chat_priority);
    let bulk = p.add_channel("bulk", ChannelKind::ReliableOrdered);
    let loot = p.add_channel("loot", ChannelKind::ReliableUnordered);
    let aim = p.add_channel("aim", ChannelKind::Sequenced);
    p.add::<Chat>(chat, Direction::Both)
        .add::<Bulk>(bulk, Direction::Both)
        .add::<Loot>(loot, Direction::Both)
        .add::<Aim>(aim, Direction::Both)
        .add::<Health>(aim, Direction::Both);
    (
        p,
        Channels {
            chat,
            bulk,
            loot,
            aim,
        },
    )
}

/// Messages one side received in a step, with their channels.
type Got = Vec<(Channel, Received)>;

struct Net {
    sim: Sim,
    server: SimServer,
    client: SimClient,
    id: zao::proto::ClientId,
}

fn connect(protocol: &Protocol, link: LinkSpec, seed: u64) -> Net {
    let mut sim = Sim::new(seed);
    let mut limits = Limits::default();
    limits.handshake_timeout = Duration::from_secs(20);
    // Room for the megabytes these tests queue at once.
    limits.reliable_backlog = 4 << 20;
    let mut config = SimServerConfig::new(protocol.clone());
    config.limits = limits.clone();
    let mut server = sim.start_server(config).unwrap();
    let mut config = SimClientConfig::new(protocol.clone()).with_link(link);
    config.limits = limits;
    let mut client = sim.connect(config).unwrap();
    let mut id = None;
    for _ in 0..4000 {
        sim.run_for(STEP);
        while let Some(e) = server.poll_event() {
            if let ServerEvent::Connected { client, .. } = e {
                id = Some(client);
            }
        }
        while client.poll_event().is_some() {}
        if id.is_some() && client.is_connected() {
            break;
        }
    }
    let id = id.expect("the client connects");
    Net {
        sim,
        server,
        client,
        id,
    }
}

fn now_us(sim: &Sim) -> u64 {
    u64::try_from(sim.elapsed().as_micros()).unwrap()
}

impl Net {
    /// Runs one step and returns what each side received: (on the server,
    /// on the client).
    fn step(&mut self) -> (Got, Got) {
        self.sim.run_for(STEP);
        let mut at_server = Vec::new();
        while let Some(e) = self.server.poll_event() {
            match e {
                ServerEvent::Message {
                    channel, message, ..
                } => at_server.push((channel, message)),
                ServerEvent::Disconnected { reason, .. } => panic!("server lost it: {reason:?}"),
                _ => {}
            }
        }
        let mut at_client = Vec::new();
        while let Some(e) = self.client.poll_event() {
            match e {
                ClientEvent::Message { channel, message } => at_client.push((channel, message)),
                ClientEvent::Disconnected { reason } => panic!("client lost it: {reason:?}"),
                _ => {}
            }
        }
        (at_server, at_client)
    }

    /// Sends `msg` on `channel` from `side`.
    fn send<M: NetMessage>(&mut self, side: Side, channel: Channel, msg: &M) {
        match side {
            Side::Client => self.client.send(channel, msg).unwrap(),
            Side::Server => self
                .server
                .send(Target::One(self.id), channel, msg)
                .unwrap(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Client,
    Server,
}

/// From `from`: four 200 kB messages on the bulk channel, then a chat
/// line every 20 ms while they travel over L2 (100 ms ± 15 ms, 2 % loss).
/// Chat is on its own stream at the same priority as bulk: its lines are
/// not held behind the 800 kB, which arrive after most of them. Returns
/// the chat latencies and when the bulk finished.
fn chat_beside_bulk(from: Side, chat_priority: i32) -> (Vec<Duration>, Duration, Duration) {
    let (protocol, ch) = protocol(chat_priority);
    let mut net = connect(&protocol, LinkSpec::l2(), 11);
    let start = net.sim.elapsed();
    for seq in 0..4 {
        let data = (0..25_000u64).map(|i| i * 31 + u64::from(seq)).collect();
        net.send(from, ch.bulk, &Bulk { seq, data });
    }
    let mut chat_sent = 0u32;
    let mut chat_latency = Vec::new();
    let mut bulk_done = None;
    let mut bulk_seen = 0u32;
    let mut last_chat_sent_at = Duration::ZERO;
    for _ in 0..4000 {
        if bulk_done.is_none() && chat_sent < 200 {
            let sent_us = now_us(&net.sim);
            net.send(
                from,
                ch.chat,
                &Chat {
                    seq: chat_sent,
                    sent_us,
                    text: format!("line {chat_sent}"),
                },
            );
            chat_sent += 1;
            last_chat_sent_at = net.sim.elapsed();
            // A line every 20 ms: every fourth step.
            for _ in 0..3 {
                let got = net.step();
                receive(
                    from,
                    got,
                    &ch,
                    &net.sim,
                    &mut chat_latency,
                    &mut bulk_seen,
                    &mut bulk_done,
                );
            }
        }
        let got = net.step();
        receive(
            from,
            got,
            &ch,
            &net.sim,
            &mut chat_latency,
            &mut bulk_seen,
            &mut bulk_done,
        );
        if bulk_done.is_some() && chat_latency.len() == chat_sent as usize {
            break;
        }
    }
    let bulk_done = bulk_done.expect("the bulk messages arrive") - start;
    assert_eq!(
        chat_latency.len(),
        chat_sent as usize,
        "every chat line arrives"
    );
    (chat_latency, bulk_done, last_chat_sent_at - start)
}

/// Records chat latencies (checking order) and bulk progress.
#[allow(clippy::too_many_arguments)]
fn receive(
    from: Side,
    (at_server, at_client): (Got, Got),
    ch: &Channels,
    sim: &Sim,
    chat_latency: &mut Vec<Duration>,
    bulk_seen: &mut u32,
    bulk_done: &mut Option<Duration>,
) {
    let got = if from == Side::Client {
        at_server
    } else {
        at_client
    };
    for (channel, message) in got {
        if channel == ch.chat {
            let chat: Chat = message.decode().unwrap();
            assert_eq!(chat.seq as usize, chat_latency.len(), "chat is in order");
            chat_latency.push(Duration::from_micros(now_us(sim) - chat.sent_us));
        } else if channel == ch.bulk {
            let bulk: Bulk = message.decode().unwrap();
            assert_eq!(bulk.seq, *bulk_seen, "bulk is in order");
            assert_eq!(bulk.data.len(), 25_000);
            *bulk_seen += 1;
            if *bulk_seen == 4 {
                *bulk_done = Some(sim.elapsed());
            }
        } else {
            panic!("unexpected channel {channel:?}");
        }
    }
}

#[test]
fn a_large_message_on_one_channel_does_not_delay_another_both_ways() {
    for from in [Side::Client, Side::Server] {
        let (latency, bulk_done, chat_until) = chat_beside_bulk(from, 0);
        let p50 = percentile(&latency, 0.50);
        let p95 = percentile(&latency, 0.95);
        let max = percentile(&latency, 1.0);
        println!(
            "{from:?} → peer over L2: 800 kB bulk done after {bulk_done:?}; {} chat lines sent until \
             {chat_until:?}: latency p50 {p50:?}, p95 {p95:?}, max {max:?}",
            latency.len()
        );
        // The bulk takes many round trips; chat lines sent meanwhile must
        // not wait for it. Behind the bulk on one stream, the first line
        // would wait for all 800 kB (`bulk_done`).
        assert!(
            bulk_done > Duration::from_millis(800),
            "the bulk must take long enough to matter ({bulk_done:?})"
        );
        assert!(
            latency.len() >= 20,
            "chat lines sent while the bulk travels"
        );
        // A line arrives in the link's one-way time (100 ms + 15 ms jitter)
        // plus a queueing allowance; a lost packet costs about one
        // retransmission (a round trip and a probe timeout), so the p95 may
        // take that once.
        let one_way = Duration::from_millis(115);
        assert!(
            p50 <= one_way + Duration::from_millis(100),
            "{from:?}: chat p50 {p50:?} is held behind the bulk"
        );
        assert!(
            p95 <= one_way + Duration::from_millis(600),
            "{from:?}: chat p95 {p95:?} is held behind the bulk"
        );
        assert!(
            max < bulk_done,
            "{from:?}: a chat line waited as long as the whole bulk ({max:?} ≥ {bulk_done:?})"
        );
    }
}

/// Two channels loaded at once with 1.6 MB each over a congested link: the
/// one with the higher priority is sent first and finishes well before the
/// other. Without priorities QUIC shares the link between them and both
/// finish together.
#[test]
fn a_higher_priority_channel_sends_first_when_the_link_is_congested_both_ways() {
    let mut p = Protocol::new();
    let low = p.add_channel_with_priority("low", ChannelKind::ReliableOrdered, 0);
    let high = p.add_channel_with_priority("high", ChannelKind::ReliableOrdered, 10);
    p.add::<Bulk>(low, Direction::Both)
        .add::<Patch>(high, Direction::Both);
    for from in [Side::Client, Side::Server] {
        let mut net = connect(&p, LinkSpec::l1(), 5);
        let start = net.sim.elapsed();
        // Low first, so it has the head start.
        let blob = vec![7u64; 25_000];
        for seq in 0..8 {
            net.send(
                from,
                low,
                &Bulk {
                    seq,
                    data: blob.clone(),
                },
            );
        }
        for seq in 0..8 {
            net.send(
                from,
                high,
                &Patch {
                    seq,
                    data: blob.clone(),
                },
            );
        }
        let (mut high_done, mut low_done) = (None, None);
        let (mut highs, mut lows) = (0, 0);
        for _ in 0..20_000 {
            let (s, c) = net.step();
            let got = if from == Side::Client { s } else { c };
            for (channel, _) in got {
                if channel == high {
                    highs += 1;
                    if highs == 8 {
                        high_done = Some(net.sim.elapsed() - start);
                    }
                } else {
                    lows += 1;
                    if lows == 8 {
                        low_done = Some(net.sim.elapsed() - start);
                    }
                }
            }
            if high_done.is_some() && low_done.is_some() {
                break;
            }
        }
        let (high_done, low_done) = (high_done.unwrap(), low_done.unwrap());
        println!("{from:?}: high priority done after {high_done:?}, low after {low_done:?}");
        // Sent first, the high channel needs about half the time both need;
        // shared fairly, it would finish with the low one.
        assert!(
            high_done.as_secs_f64() < 0.7 * low_done.as_secs_f64(),
            "{from:?}: priority not honoured: high {high_done:?}, low {low_done:?}"
        );
    }
}

#[test]
fn reliable_unordered_delivers_each_message_exactly_once_under_loss_both_ways() {
    let (protocol, ch) = protocol(0);
    for (name, link) in [("L3", LinkSpec::l3()), ("L4", LinkSpec::l4())] {
        let mut net = connect(&protocol, link.clone(), 21);
        let n = 300u32;
        let mut got: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
        let mut out_of_order = 0;
        for i in 0..n {
            let loot = Loot {
                seq: i,
                item: (i % 7) as u16,
            };
            net.send(Side::Client, ch.loot, &loot);
            net.send(Side::Server, ch.loot, &loot);
            let (s, c) = net.step();
            for (side, list) in [("server", s), ("client", c)] {
                for (channel, m) in list {
                    assert_eq!(channel, ch.loot);
                    let loot: Loot = m.decode().unwrap();
                    assert_eq!(loot.item, (loot.seq % 7) as u16);
                    let seen = got.entry(side).or_default();
                    if seen.last().is_some_and(|&l| l > loot.seq) {
                        out_of_order += 1;
                    }
                    seen.push(loot.seq);
                }
            }
        }
        for _ in 0..6000 {
            let (s, c) = net.step();
            for (side, list) in [("server", s), ("client", c)] {
                for (_, m) in list {
                    got.entry(side)
                        .or_default()
                        .push(m.decode::<Loot>().unwrap().seq);
                }
            }
            if got.values().all(|v| v.len() >= n as usize) && got.len() == 2 {
                break;
            }
        }
        for side in ["server", "client"] {
            let seen = &got[side];
            let unique: HashSet<u32> = seen.iter().copied().collect();
            assert_eq!(unique.len(), seen.len(), "{name} {side}: a duplicate");
            assert_eq!(
                unique,
                (0..n).collect(),
                "{name} {side}: a message is missing"
            );
        }
        println!(
            "{name}: {n} unordered messages each way, all exactly once; {out_of_order} overtook \
             an earlier one"
        );
        // A lost packet delays only its own message: later ones overtake it.
        assert!(out_of_order > 0, "{name}: nothing overtook a lost message");
    }
}

#[test]
fn a_sequenced_channel_delivers_latest_wins_per_message_type_both_ways() {
    let (protocol, ch) = protocol(0);
    // Floors: on L2 (jitter shorter than the send interval) every message
    // the link does not lose arrives, less 2 %; on L6 a held-back datagram
    // is overtaken and its message dropped, so the floor is the quarter it
    // holds back and 5 % more; L4's ±250 ms reorders most messages, and
    // latest-wins delivers what is newest when it lands (a tenth at least).
    for (name, link, floor) in [
        ("L2", LinkSpec::l2(), 0.96),
        ("L6", LinkSpec::l6(), 0.70),
        ("L4", LinkSpec::l4(), 0.10),
    ] {
        let mut net = connect(&protocol, link.clone(), 31);
        let n = 300u32;
        // (receiving side, type) → sequence numbers in arrival order.
        let mut got: BTreeMap<(&str, &str), Vec<u32>> = BTreeMap::new();
        let record = |got: &mut BTreeMap<(&str, &str), Vec<u32>>, (s, c): (Vec<_>, Vec<_>)| {
            for (side, list) in [("server", s), ("client", c)] {
                for (channel, m) in list {
                    assert_eq!(channel, ch.aim);
                    let m: Received = m;
                    let (kind, seq) = match m.id() {
                        23 => ("aim", m.decode::<Aim>().unwrap().seq),
                        24 => ("health", m.decode::<Health>().unwrap().seq),
                        other => panic!("id {other}"),
                    };
                    got.entry((side, kind)).or_default().push(seq);
                }
            }
        };
        for i in 0..n {
            for side in [Side::Client, Side::Server] {
                net.send(side, ch.aim, &Aim { seq: i, yaw: 0.5 });
                // Health changes a third as often: its sequence is its own.
                if i % 3 == 0 {
                    net.send(
                        side,
                        ch.aim,
                        &Health {
                            seq: i / 3,
                            hp: 100,
                        },
                    );
                }
            }
            // A message every 30 ms, a game's send rate.
            for _ in 0..6 {
                let got_now = net.step();
                record(&mut got, got_now);
            }
        }
        for _ in 0..1000 {
            let got_now = net.step();
            record(&mut got, got_now);
        }
        for side in ["server", "client"] {
            for (kind, sent) in [("aim", n), ("health", n.div_ceil(3))] {
                let seen = got.get(&(side, kind)).cloned().unwrap_or_default();
                assert!(
                    seen.windows(2).all(|w| w[0] < w[1]),
                    "{name} {side} {kind}: an older message was delivered after a newer one"
                );
                let fraction = seen.len() as f64 / f64::from(sent);
                println!("{name} {side} {kind}: {:.3} delivered, in order", fraction);
                assert!(
                    fraction >= floor,
                    "{name} {side} {kind}: only {fraction:.3} delivered"
                );
            }
        }
    }
}
