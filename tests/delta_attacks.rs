//! Hostile clients against delta snapshots (`../shared/TEST-MATRIX.md`
//! D1–D3), through the public API: a server and its clients joined in
//! memory (`ServerCore::local`, `connect_local`), each client's acks chosen
//! by the test.

// Test code: a panic is a failed test, so indexing and unwrap are fine here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::time::{Duration, Instant};

use glam::Vec3;
use zao::NetMessage;
use zao::proto::{
    Channel, ClientCore, ClientId, Direction, Limits, LocalLink, Protocol, ServerCore, ServerEvent,
    SnapshotAck, Target,
};
use zao_messages::{EntitySnapshot, EntityState};

fn protocol() -> Protocol {
    let mut p = Protocol::new();
    p.add::<EntitySnapshot>(Channel::SNAPSHOT, Direction::ServerToClient);
    p
}

struct Net {
    server: ServerCore,
    clients: Vec<(ClientCore, LocalLink, ClientId)>,
    now: Instant,
}

impl Net {
    fn new(clients: usize, limits: Limits) -> Self {
        let mut server = ServerCore::local(protocol(), limits, None).unwrap();
        let now = Instant::now();
        let mut out = Vec::new();
        for _ in 0..clients {
            let (client, mut link) = server.connect_local(None);
            link.drive(now);
            let id = client.id().unwrap();
            out.push((client, link, id));
        }
        while server.poll_event().is_some() {}
        Self {
            server,
            clients: out,
            now,
        }
    }

    fn drive(&mut self) {
        self.now += Duration::from_millis(16);
        for (_, link, _) in &mut self.clients {
            link.drive(self.now);
        }
        while let Some(event) = self.server.poll_event() {
            assert!(
                !matches!(event, ServerEvent::Disconnected { .. }),
                "{event:?}"
            );
        }
    }

    /// The baselines of the delta chunks each client received since the
    /// last call.
    fn baselines(&mut self) -> Vec<Vec<u64>> {
        self.clients
            .iter_mut()
            .map(|(client, _, _)| {
                let mut seen = Vec::new();
                while client.poll_event().is_some() {}
                while let Some(chunk) = client.poll_snapshot() {
                    seen.push(chunk.header.baseline);
                }
                seen
            })
            .collect()
    }
}

fn world(tick: u32) -> EntitySnapshot {
    EntitySnapshot {
        tick,
        entities: (0..64)
            .map(|e| EntityState::new(e, Vec3::new(tick as f32, e as f32, 0.0), 0.0))
            .collect(),
    }
}

fn ack(newest: u64) -> SnapshotAck {
    SnapshotAck {
        id: EntitySnapshot::ID,
        newest,
        held: 0,
    }
}

#[test]
fn d1_clients_acking_different_old_baselines_cost_at_most_the_bound() {
    let clients = 64;
    let mut net = Net::new(clients, Limits::default());
    // Every client is sent snapshots 1..=64.
    for tick in 1..=64 {
        net.server
            .send_delta_snapshot(Target::All, &world(tick))
            .unwrap();
        net.drive();
    }
    net.baselines();
    // Client i claims to hold only snapshot i + 1: 64 different old
    // baselines, all in the server's history.
    for (i, (client, _, _)) in net.clients.iter_mut().enumerate() {
        client.send_acks(&[ack(i as u64 + 1)]).unwrap();
    }
    net.drive();
    let bound = Limits::default().max_delta_encodes;
    assert!(bound <= 16, "the default bound is {bound}");
    let sent = net
        .server
        .send_delta_snapshot(Target::All, &world(65))
        .unwrap();
    assert!(
        sent.encodes <= bound,
        "{} encodes for {clients} baselines (bound {bound})",
        sent.encodes
    );
    assert_eq!(sent.targets, clients);
    assert_eq!(sent.rebased, clients - (bound - 1));
    net.drive();
    // Each client got the tick against a baseline it holds, or a keyframe.
    for (i, seen) in net.baselines().iter().enumerate() {
        assert!(!seen.is_empty(), "client {i} got nothing");
        assert!(
            seen.iter().all(|b| *b == 0 || *b == i as u64 + 1),
            "client {i} got deltas against {seen:?}"
        );
    }
    // A smaller bound holds too.
    let mut limits = Limits::default();
    limits.max_delta_encodes = 4;
    let mut net = Net::new(16, limits);
    for tick in 1..=16 {
        net.server
            .send_delta_snapshot(Target::All, &world(tick))
            .unwrap();
        net.drive();
    }
    for (i, (client, _, _)) in net.clients.iter_mut().enumerate() {
        client.send_acks(&[ack(i as u64 + 1)]).unwrap();
    }
    net.drive();
    let sent = net
        .server
        .send_delta_snapshot(Target::All, &world(17))
        .unwrap();
    assert!(sent.encodes <= 4, "{sent:?}");
}

#[test]
fn d1_a_client_past_the_bound_gets_an_older_baseline_it_holds() {
    let mut limits = Limits::default();
    limits.max_delta_encodes = 2;
    let mut net = Net::new(4, limits);
    for tick in 1..=3 {
        net.server
            .send_delta_snapshot(Target::All, &world(tick))
            .unwrap();
        net.drive();
    }
    net.baselines();
    // Three distinct baselines for a bound of two encodes: 2 (the most
    // shared) is kept, and one encode stays for keyframes.
    net.clients[0].0.send_acks(&[ack(2)]).unwrap();
    net.clients[1].0.send_acks(&[ack(2)]).unwrap();
    // Holds 3 and, by its `held` bits, 2.
    net.clients[2]
        .0
        .send_acks(&[SnapshotAck {
            held: 0b1,
            ..ack(3)
        }])
        .unwrap();
    // Holds 1 only.
    net.clients[3].0.send_acks(&[ack(1)]).unwrap();
    net.drive();
    let sent = net
        .server
        .send_delta_snapshot(Target::All, &world(4))
        .unwrap();
    assert_eq!(sent.encodes, 2, "{sent:?}");
    assert_eq!(sent.rebased, 2, "{sent:?}");
    net.drive();
    let seen = net.baselines();
    assert!(!seen.iter().any(Vec::is_empty), "{seen:?}");
    assert!(seen[0].iter().chain(&seen[1]).all(|b| *b == 2), "{seen:?}");
    // Past the bound: the older baseline it also holds...
    assert!(seen[2].iter().all(|b| *b == 2), "{:?}", seen[2]);
    // ...or, holding none of those kept, a keyframe.
    assert!(seen[3].iter().all(|b| *b == 0), "{:?}", seen[3]);
}

#[test]
fn d2_an_ack_of_another_clients_snapshot_is_ignored() {
    let mut net = Net::new(2, Limits::default());
    let (a, b) = (net.clients[0].2, net.clients[1].2);
    // Per-client snapshots: 1 to A only, 2 to B only.
    net.server
        .send_delta_snapshot(Target::One(a), &world(1))
        .unwrap();
    net.drive();
    net.server
        .send_delta_snapshot(Target::One(b), &world(2))
        .unwrap();
    net.drive();
    net.baselines();
    // B acks A's snapshot (and claims the one before too).
    net.clients[1]
        .0
        .send_acks(&[SnapshotAck {
            id: EntitySnapshot::ID,
            newest: 1,
            held: 0,
        }])
        .unwrap();
    net.drive();
    net.server
        .send_delta_snapshot(Target::One(b), &world(3))
        .unwrap();
    net.drive();
    let seen = net.baselines();
    assert!(!seen[1].is_empty());
    // Never a delta against a snapshot B was not sent.
    assert!(seen[1].iter().all(|x| *x == 0), "B got {:?}", seen[1]);
    // An ack of its own snapshot, with A's in `held`: B gets deltas
    // against its own only.
    net.clients[1]
        .0
        .send_acks(&[SnapshotAck {
            id: EntitySnapshot::ID,
            newest: 3,
            held: 0b11, // 2 (B's) and 1 (A's)
        }])
        .unwrap();
    net.drive();
    net.server
        .send_delta_snapshot(Target::One(b), &world(4))
        .unwrap();
    net.drive();
    let seen = net.baselines();
    assert!(seen[1].iter().all(|x| *x == 3), "B got {:?}", seen[1]);
}

#[test]
fn d2_claimed_held_snapshots_of_other_clients_never_become_a_baseline() {
    // The bound on encodes moves clients to a baseline they hold: their
    // `held` bits must never claim another client's snapshot for it.
    let mut limits = Limits::default();
    limits.max_delta_encodes = 2;
    let mut net = Net::new(4, limits);
    let ids: Vec<ClientId> = net.clients.iter().map(|c| c.2).collect();
    let (a, b, c, d) = (ids[0], ids[1], ids[2], ids[3]);
    net.server
        .send_delta_snapshot(Target::List(&[a, c]), &world(1))
        .unwrap();
    net.drive();
    net.server
        .send_delta_snapshot(Target::List(&[b, d]), &world(2))
        .unwrap();
    net.drive();
    net.server
        .send_delta_snapshot(Target::One(b), &world(3))
        .unwrap();
    net.drive();
    net.baselines();
    net.clients[0].0.send_acks(&[ack(1)]).unwrap();
    net.clients[2].0.send_acks(&[ack(1)]).unwrap();
    // B holds 3 and 2, and claims A's 1 as well.
    net.clients[1]
        .0
        .send_acks(&[SnapshotAck {
            held: 0b11,
            ..ack(3)
        }])
        .unwrap();
    net.clients[3].0.send_acks(&[ack(2)]).unwrap();
    net.drive();
    let sent = net
        .server
        .send_delta_snapshot(Target::All, &world(4))
        .unwrap();
    assert!(sent.rebased > 0, "{sent:?}");
    net.drive();
    let seen = net.baselines();
    assert!(!seen[1].is_empty());
    assert!(
        seen[1].iter().all(|x| *x != 1),
        "B got a delta against A's snapshot: {:?}",
        seen[1]
    );
}

#[test]
fn d3_an_ack_from_the_future_is_ignored_and_ack_floods_are_rate_limited() {
    let mut limits = Limits::default();
    limits.receive_rate.messages_per_second = 50;
    limits.receive_rate.burst = 50;
    let mut net = Net::new(1, limits);
    for tick in 1..=2 {
        net.server
            .send_delta_snapshot(Target::All, &world(tick))
            .unwrap();
        net.drive();
    }
    net.baselines();
    net.clients[0].0.send_acks(&[ack(1_000)]).unwrap();
    net.drive();
    net.server
        .send_delta_snapshot(Target::All, &world(3))
        .unwrap();
    net.drive();
    assert!(net.baselines()[0].iter().all(|b| *b == 0));
    // A flood of ack datagrams counts like any other message: over twice
    // the rate for long, the client is disconnected (flooding, code 6).
    let (client, link, _) = &mut net.clients[0];
    let mut now = net.now;
    let mut gone = false;
    'flood: for _ in 0..10 {
        now += Duration::from_secs(1);
        for _ in 0..500 {
            if client.send_acks(&[ack(2)]).is_err() {
                gone = true;
                break 'flood;
            }
        }
        link.drive(now);
    }
    let flooding = loop {
        match net.server.poll_event() {
            Some(ServerEvent::Disconnected { reason, .. }) => break Some(reason),
            Some(_) => {}
            None => break None,
        }
    };
    assert!(
        gone || flooding.is_some(),
        "an ack flood of 500/s against a 50/s rate went on"
    );
    if let Some(reason) = flooding {
        assert!(reason.to_string().contains("flooding"), "{reason}");
    }
}
