//! A game loop on the simulated network, both directions: every tick the
//! server broadcasts a snapshot, a reliable and an unreliable message, and
//! every client sends a reliable and an unreliable message. Each receiver
//! checks the channel guarantees as messages arrive.

use std::collections::HashSet;
use std::time::Duration;

use zao::proto::{Channel, ClientEvent, ClientId, DisconnectReason, Limits, ServerEvent, Target};
use zao::sim::{LinkSpec, Sim, SimClient, SimClientConfig, SimServer, SimServerConfig};
use zao_messages::{PlayerMoved, SpawnEntity, WorldSnapshot, samples};

/// What one receiving end saw of one sender.
#[derive(Debug, Default)]
pub struct Tally {
    /// Reliable message numbers, in arrival order.
    pub reliable: Vec<u32>,
    /// Unreliable message numbers seen.
    pub unreliable: HashSet<u32>,
    /// Unreliable messages seen twice (must stay 0).
    pub unreliable_twice: u32,
    /// Snapshot ticks delivered, in order, with their delay.
    pub snapshots: Vec<(u32, Duration)>,
    /// Snapshot ticks that went backwards (must stay empty).
    pub backwards: Vec<(u32, u32)>,
}

impl Tally {
    fn reliable_in_order(&self, sent: u32) -> bool {
        self.reliable.iter().copied().eq(0..sent)
    }

    fn snapshot(&mut self, tick: u32, delay: Duration) {
        if let Some(&(last, _)) = self.snapshots.last()
            && tick <= last
        {
            self.backwards.push((last, tick));
        }
        self.snapshots.push((tick, delay));
    }

    /// Fraction of `sent` snapshots delivered.
    pub fn delivered(&self, sent: u32) -> f64 {
        self.snapshots.len() as f64 / f64::from(sent)
    }

    /// A percentile of the snapshot delays.
    pub fn delay(&self, p: f64) -> Duration {
        let mut d: Vec<Duration> = self.snapshots.iter().map(|s| s.1).collect();
        d.sort();
        d.get(((d.len() as f64 * p) as usize).min(d.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    }
}

/// A server and its clients on one simulated network.
pub struct Game {
    pub sim: Sim,
    pub server: SimServer,
    pub clients: Vec<SimClient>,
    /// Each client's id on the server.
    pub ids: Vec<ClientId>,
    /// What each client received from the server.
    pub downstream: Vec<Tally>,
    /// What the server received from each client.
    pub upstream: Vec<Tally>,
    /// Disconnections seen, by client index.
    pub disconnected: Vec<(usize, DisconnectReason, Duration)>,
    /// Server-side disconnections, by client id.
    pub server_disconnected: Vec<(ClientId, DisconnectReason, Duration)>,
    sent_at: Vec<Duration>,
    players: usize,
}

/// How long to poll between events: virtual time resolution of the delays.
pub const STEP: Duration = Duration::from_millis(5);

impl Game {
    /// A server and `clients` clients over `link` (both ways), connected.
    pub fn new(seed: u64, clients: usize, link: LinkSpec, limits: Limits, players: usize) -> Self {
        Self::connected_over(seed, clients, link.clone(), link, limits, players)
    }

    /// Clients that connect over `connect` and play over `link` (QUIC's
    /// handshake under L5's loss backs off for tens of seconds; the matrix
    /// is about play).
    pub fn connected_over(
        seed: u64,
        clients: usize,
        connect: LinkSpec,
        link: LinkSpec,
        limits: Limits,
        players: usize,
    ) -> Self {
        let mut sim = Sim::new(seed);
        let mut config = SimServerConfig::new(zao_messages::protocol());
        config.limits = limits.clone();
        let server = sim.start_server(config).unwrap();
        let clients: Vec<SimClient> = (0..clients)
            .map(|_| {
                let mut config =
                    SimClientConfig::new(zao_messages::protocol()).with_link(connect.clone());
                config.limits = limits.clone();
                sim.connect(config).unwrap()
            })
            .collect();
        let mut game = Self {
            sim,
            server,
            ids: Vec::new(),
            downstream: clients.iter().map(|_| Tally::default()).collect(),
            upstream: clients.iter().map(|_| Tally::default()).collect(),
            clients,
            disconnected: Vec::new(),
            server_disconnected: Vec::new(),
            sent_at: Vec::new(),
            players,
        };
        let deadline = game.sim.elapsed() + limits.handshake_timeout;
        while game.sim.elapsed() < deadline && !game.clients.iter().all(|c| c.is_connected()) {
            game.sim.run_for(STEP);
        }
        game.ids = game
            .clients
            .iter()
            .map(|c| c.id().expect("every client connects"))
            .collect();
        for c in &game.clients {
            game.sim.set_links(c.node(), link.clone(), link.clone());
        }
        game.poll();
        game
    }

    /// Sends one tick's messages both ways.
    pub fn send_tick(&mut self, tick: u32) {
        self.sent_at.push(self.sim.elapsed());
        let snapshot = WorldSnapshot {
            tick,
            ..samples::world_snapshot(self.players)
        };
        self.server.send_snapshot(Target::All, &snapshot).unwrap();
        let spawn = SpawnEntity {
            entity: tick,
            ..samples::spawn_entity()
        };
        let moved = PlayerMoved {
            entity: tick,
            ..samples::player_moved()
        };
        // A broadcast never fails for a slow client; it may close it.
        let _ = self.server.send(Target::All, Channel::RELIABLE, &spawn);
        let _ = self.server.send(Target::All, Channel::UNRELIABLE, &moved);
        self.server.flush();
        for client in &mut self.clients {
            if client.is_connected() {
                client.send(Channel::RELIABLE, &spawn).unwrap();
                client.send(Channel::UNRELIABLE, &moved).unwrap();
                client.flush();
            }
        }
    }

    /// Runs `ticks` ticks at `hz`, polling every [`STEP`].
    pub fn play(&mut self, ticks: u32, hz: u32) {
        let period = Duration::from_secs(1) / hz;
        let start = self.sim.elapsed();
        for tick in 0..ticks {
            let due = start + period * tick;
            while self.sim.elapsed() < due {
                self.sim.run_for(STEP.min(due - self.sim.elapsed()));
                self.poll();
            }
            self.send_tick(tick);
        }
    }

    /// Runs until every reliable message arrived both ways, or `limit`.
    pub fn drain(&mut self, limit: Duration) {
        let sent = self.sent_at.len() as u32;
        let end = self.sim.elapsed() + limit;
        while self.sim.elapsed() < end {
            self.sim.run_for(STEP * 10);
            self.poll();
            let done = |t: &Tally| t.reliable.len() as u32 >= sent;
            if self.downstream.iter().all(done) && self.upstream.iter().all(done) {
                break;
            }
        }
    }

    /// Reads every event on both sides.
    pub fn poll(&mut self) {
        let now = self.sim.elapsed();
        while let Some(event) = self.server.poll_event() {
            match event {
                ServerEvent::Message {
                    client, message, ..
                } => {
                    let Some(i) = self.ids.iter().position(|id| *id == client) else {
                        continue;
                    };
                    let tally = &mut self.upstream[i];
                    match message.id() {
                        3 => tally
                            .reliable
                            .push(message.decode::<SpawnEntity>().unwrap().entity),
                        1 => {
                            let n = message.decode::<PlayerMoved>().unwrap().entity;
                            if !tally.unreliable.insert(n) {
                                tally.unreliable_twice += 1;
                            }
                        }
                        other => panic!("unexpected message {other} from a client"),
                    }
                }
                ServerEvent::Disconnected { client, reason } => {
                    self.server_disconnected.push((client, reason, now));
                }
                _ => {}
            }
        }
        for (i, client) in self.clients.iter_mut().enumerate() {
            while let Some(event) = client.poll_event() {
                let tally = &mut self.downstream[i];
                match event {
                    ClientEvent::Message { message, .. } => match message.id() {
                        4 => {
                            let tick = message.decode::<WorldSnapshot>().unwrap().tick;
                            let sent = self.sent_at[tick as usize];
                            tally.snapshot(tick, now.saturating_sub(sent));
                        }
                        3 => tally
                            .reliable
                            .push(message.decode::<SpawnEntity>().unwrap().entity),
                        1 => {
                            let n = message.decode::<PlayerMoved>().unwrap().entity;
                            if !tally.unreliable.insert(n) {
                                tally.unreliable_twice += 1;
                            }
                        }
                        other => panic!("unexpected message {other} from the server"),
                    },
                    ClientEvent::Disconnected { reason } => {
                        self.disconnected.push((i, reason, now))
                    }
                    _ => {}
                }
            }
        }
    }

    /// Ticks sent so far.
    pub fn sent(&self) -> u32 {
        self.sent_at.len() as u32
    }

    /// Checks the guarantees that hold on every link: reliable exactly once
    /// in order both ways, unreliable at most once, snapshot ticks never
    /// backwards, nobody disconnected.
    pub fn assert_guarantees(&self, name: &str) {
        let sent = self.sent();
        for (i, (down, up)) in self.downstream.iter().zip(&self.upstream).enumerate() {
            assert!(
                down.reliable_in_order(sent),
                "{name}: client {i} got reliable {} of {sent}, not exactly once in order",
                down.reliable.len()
            );
            assert!(
                up.reliable_in_order(sent),
                "{name}: server got reliable {} of {sent} from client {i}, not exactly once in order",
                up.reliable.len()
            );
            assert_eq!(
                down.unreliable_twice, 0,
                "{name}: client {i}: unreliable twice"
            );
            assert_eq!(
                up.unreliable_twice, 0,
                "{name}: server: unreliable twice from {i}"
            );
            assert!(
                down.backwards.is_empty(),
                "{name}: client {i}: ticks went back {:?}",
                down.backwards
            );
        }
        assert!(
            self.disconnected.is_empty(),
            "{name}: {:?}",
            self.disconnected
        );
        assert!(
            self.server_disconnected.is_empty(),
            "{name}: {:?}",
            self.server_disconnected
        );
    }

    /// One line of figures per direction.
    pub fn report(&self, name: &str) -> String {
        let sent = self.sent();
        let n = self.downstream.len().max(1) as f64;
        let snap = self
            .downstream
            .iter()
            .map(|t| t.delivered(sent))
            .sum::<f64>()
            / n;
        let p50 = self
            .downstream
            .iter()
            .map(|t| t.delay(0.5))
            .max()
            .unwrap_or_default();
        let p99 = self
            .downstream
            .iter()
            .map(|t| t.delay(0.99))
            .max()
            .unwrap_or_default();
        let unrel_down = self
            .downstream
            .iter()
            .map(|t| t.unreliable.len())
            .sum::<usize>() as f64
            / n;
        let unrel_up = self
            .upstream
            .iter()
            .map(|t| t.unreliable.len())
            .sum::<usize>() as f64
            / n;
        format!(
            "{name}: {} clients x {sent} ticks | server->clients: reliable {sent}/{sent} in order, snapshots {:.1} % (delay p50 {p50:?}, p99 {p99:?}), unreliable {:.1} % | clients->server: reliable {sent}/{sent} in order, unreliable {:.1} %",
            self.clients.len(),
            100.0 * snap,
            100.0 * unrel_down / f64::from(sent),
            100.0 * unrel_up / f64::from(sent),
        )
    }

    /// The mean snapshot delivered fraction over clients.
    pub fn snapshot_fraction(&self) -> f64 {
        let sent = self.sent();
        self.downstream
            .iter()
            .map(|t| t.delivered(sent))
            .sum::<f64>()
            / self.downstream.len().max(1) as f64
    }

    /// The worst client's p99 snapshot delay.
    pub fn snapshot_p99(&self) -> Duration {
        self.downstream
            .iter()
            .map(|t| t.delay(0.99))
            .max()
            .unwrap_or_default()
    }
}
