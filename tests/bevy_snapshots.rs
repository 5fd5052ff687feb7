//! Delta snapshots through the Bevy plugin, on the simulated network: the
//! server App sends its world with `ZaoServerSender::send_delta_snapshot` every
//! update; each client App reads `ZaoSnapshots<T>` (interpolated states
//! through the jitter buffer) and `SnapshotApplied<T>` (raw chunks).

#![cfg(all(feature = "bevy", feature = "sim"))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
// Bevy system parameters elide their lifetimes by convention.
#![allow(elided_lifetimes_in_paths)]

use std::collections::BTreeMap;
use std::time::Duration;

use bevy_app::{App, Update};
use bevy_ecs::prelude::*;
use glam::Vec3;
use zao::bevy::testing::{ZaoTestNet, collect, collected};
use zao::bevy::{AppZaoExt, JitterConfig, SnapshotApplied, ZaoServerSender, ZaoSnapshots};
use zao::sim::LinkSpec;
use zao_messages::{EntitySnapshot, EntityState};

const TICK: Duration = Duration::from_millis(20);

fn protocol(app: &mut App) {
    app.add_zao_delta_snapshot::<EntitySnapshot>(JitterConfig::new(TICK));
}

/// The server's world: 300 entities walking, some leaving and joining.
fn world(tick: u32) -> EntitySnapshot {
    let entities = (tick / 25..tick / 25 + 300)
        .map(|e| {
            let t = tick as f32 * TICK.as_secs_f32();
            let p = Vec3::new(e as f32 + t * (e % 5) as f32, (e % 7) as f32 * t, 0.0);
            EntityState::new(e, p, t * 0.1)
        })
        .collect();
    EntitySnapshot { tick, entities }
}

/// What the server sent, by tick, and how many encodes each send took.
#[derive(Resource, Default)]
struct Sent {
    worlds: BTreeMap<u32, EntitySnapshot>,
    encodes: Vec<(usize, usize)>,
    tick: u32,
}

fn broadcast(mut send: ZaoServerSender, mut sent: ResMut<Sent>) {
    if !send.is_running() {
        return;
    }
    sent.tick += 1;
    let snapshot = world(sent.tick);
    if let Ok(done) = send.send_delta_snapshot(&snapshot, zao::bevy::SendTarget::All) {
        sent.encodes.push((done.encodes, done.targets));
    }
    let tick = sent.tick;
    sent.worlds.insert(tick, snapshot);
}

/// The interpolated states each update, once there are any.
#[derive(Resource, Default)]
struct Drawn(Vec<usize>);

fn draw(snapshots: Res<ZaoSnapshots<EntitySnapshot>>, mut drawn: ResMut<Drawn>) {
    let states = snapshots.interpolated();
    if !states.is_empty() {
        drawn.0.push(states.len());
    }
}

#[test]
fn clients_read_exact_chunks_and_interpolated_states_of_delta_snapshots() {
    let mut net = ZaoTestNet::new(21, protocol);
    net.step = TICK;
    net.server
        .init_resource::<Sent>()
        .add_systems(Update, broadcast);
    // Two clients on each link: those acknowledging the same baseline
    // share one encode.
    let links = [
        LinkSpec::l1(),
        LinkSpec::l1(),
        LinkSpec::l2(),
        LinkSpec::l2(),
        LinkSpec::l3(),
        LinkSpec::l3(),
    ];
    for link in &links {
        let i = net.add_client(link.clone());
        collect::<SnapshotApplied<EntitySnapshot>>(net.client_app(i));
        net.client_app(i)
            .init_resource::<Drawn>()
            .add_systems(Update, draw);
    }
    net.connect_all(Duration::from_secs(10));
    net.run_for(Duration::from_secs(8));

    let sent = net.server.world().resource::<Sent>();
    // Clients sharing a baseline share an encode: never more encodes than
    // targets, and far fewer over the run.
    assert!(sent.encodes.iter().all(|(e, t)| e <= t));
    let (encodes, targets) = sent
        .encodes
        .iter()
        .fold((0, 0), |(a, b), (e, t)| (a + e, b + t));
    assert!(encodes < targets, "{encodes} encodes for {targets} sends");

    for (i, link) in links.iter().enumerate() {
        let app = &net.clients[i];
        let applied = collected::<SnapshotApplied<EntitySnapshot>>(app);
        // Every applied chunk holds exactly the server's items of its tick.
        for a in applied {
            let world = &sent.worlds[&(a.tick as u32)];
            for item in &a.items {
                let at = world
                    .entities
                    .binary_search_by_key(&item.entity, |e| e.entity)
                    .unwrap();
                assert_eq!(*item, world.entities[at], "client {i}, tick {}", a.tick);
            }
        }
        let deltas = applied.iter().filter(|a| a.baseline > 0).count();
        assert!(
            deltas > applied.len() / 2,
            "client {i}: {deltas} of {} chunks were deltas",
            applied.len()
        );
        // Snapshots completed, of those sent since its first chunk: loss
        // costs whole snapshots of several chunks (tests/snapshots_delta.rs
        // holds the matrix's bounds through the jitter buffer); here, most.
        let first = applied.iter().map(|a| a.tick).min().unwrap() as u32;
        let since = sent.worlds.range(first..).count() as f64;
        let complete = applied.iter().filter(|a| a.complete).count() as f64;
        println!(
            "client {i} ({:.0} ms, {:.0} % loss): {complete} of {since} snapshots whole, {deltas} delta chunks of {}",
            link.latency.as_secs_f64() * 1e3,
            link.loss * 100.0,
            applied.len()
        );
        assert!(
            complete >= since * (1.0 - 3.0 * link.loss) - 5.0,
            "client {i}: {complete} of {since} snapshots complete"
        );
        let snapshots = app.world().resource::<ZaoSnapshots<EntitySnapshot>>();
        let latest = snapshots.latest().unwrap();
        assert!(latest.snapshot.entities.len() == 300);
        // The game drew interpolated states of every entity.
        let drawn = &app.world().resource::<Drawn>().0;
        assert!(drawn.len() > 100, "client {i} drew {} frames", drawn.len());
        // Once the first keyframe is whole (its first chunk alone may be
        // drawn before), every entity every frame.
        assert!(
            drawn.iter().skip(10).all(|&n| n >= 300),
            "client {i}: {drawn:?}"
        );
        let jitter = snapshots.jitter_stats();
        assert!(jitter.chunks_on_time > 0, "client {i}: {jitter:?}");
    }
}
