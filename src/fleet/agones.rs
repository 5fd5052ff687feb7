//! [Agones](https://agones.dev): the server reports to the Agones SDK
//! server beside it in its pod, over the official Rust SDK (`agones` on
//! the registry, its gRPC API), and [`LocalSdkServer`] serves that same
//! API on 127.0.0.1 for tests and for running a fleet's server on a
//! desktop.
//!
//! | Zao | Agones SDK call |
//! |---|---|
//! | [`FleetBackend::ready`] | `Ready` |
//! | [`FleetBackend::health`] (from the game's tick) | one message on the `Health` stream |
//! | allocation | `WatchGameServer`: the state becomes `Allocated`; its labels and annotations |
//! | [`FleetBackend::player_connected`] / `_disconnected` | beta Lists: `AddListValue` / `RemoveListValue` on the `players` list |
//! | [`FleetBackend::shutdown`] | `Shutdown` |
//! | [`FleetBackend::annotate`] (the certificate's hash, `zao-cert-sha256`) | `SetAnnotation` |
//!
//! Players go on a list (Agones' Counts and Lists, beta, on by default
//! since Agones 1.41) rather than the alpha player tracking: a
//! `FleetAutoscaler` can scale on the list's room (deploy/fleet.yaml).

mod local;

use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

use super::{FleetAllocation, FleetBackend, FleetEvent};

pub use local::{LocalSdkServer, SdkCall};

/// How to reach the Agones SDK server.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct AgonesSettings {
    /// The SDK server's gRPC port on localhost; `None`: the
    /// `AGONES_SDK_GRPC_PORT` that Agones sets in the pod, else 9357.
    pub port: Option<u16>,
    /// The list players' ids go on (declared in the `GameServer`'s
    /// `lists`, with its capacity); `None` reports none. Default
    /// `"players"`.
    pub players_list: Option<String>,
}

impl Default for AgonesSettings {
    fn default() -> Self {
        Self {
            port: None,
            players_list: Some("players".to_owned()),
        }
    }
}

impl AgonesSettings {
    /// The SDK server on `port` (a [`LocalSdkServer`]'s), the other
    /// defaults.
    #[must_use]
    pub fn port(port: u16) -> Self {
        Self {
            port: Some(port),
            ..Self::default()
        }
    }
}

/// The longest an SDK call may take before it is reported as an error (the
/// SDK server is on localhost: a call that takes longer is stuck).
const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// How long dropping the backend waits for its queued calls (a Shutdown).
const DROP_WAIT: Duration = Duration::from_secs(5);

/// The health stream's sender, once the SDK is connected.
type HealthSender = Arc<Mutex<Option<tokio::sync::mpsc::Sender<()>>>>;

enum Command {
    Ready,
    PlayerConnected(String),
    PlayerDisconnected(String),
    Shutdown,
    Annotate(String, String),
}

/// The Agones backend: a thread of its own runs the SDK client (tokio and
/// tonic), so every call from the game loop returns at once. Calls reach
/// the SDK server in the order the game made them, each within 5 s or
/// reported as an error; health goes straight onto the SDK's health
/// stream, never behind a slow call.
pub struct Agones {
    commands: tokio::sync::mpsc::UnboundedSender<Command>,
    health: HealthSender,
    /// Says when the SDK's thread ended (in a `Mutex` only to be `Sync`).
    ended: Mutex<mpsc::Receiver<()>>,
    /// In a `Mutex` only so the backend is `Sync` (a Bevy resource holds
    /// it); only `&mut self` reads it.
    events: std::sync::Mutex<mpsc::Receiver<FleetEvent>>,
    thread: Option<JoinHandle<()>>,
}

impl core::fmt::Debug for Agones {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Agones").finish_non_exhaustive()
    }
}

impl Agones {
    /// Connects to the SDK server in the background (the SDK tries for
    /// 30 s; a failure is a [`FleetEvent::Error`]).
    ///
    /// # Errors
    /// If the SDK's thread cannot be started.
    pub fn connect(settings: AgonesSettings) -> std::io::Result<Self> {
        let (commands, queue) = tokio::sync::mpsc::unbounded_channel();
        let (report, events) = mpsc::channel();
        let (end, ended) = mpsc::channel();
        let health = HealthSender::default();
        let sender = health.clone();
        let thread = std::thread::Builder::new()
            .name("zao-agones".into())
            .spawn(move || {
                let _end = Ended(end);
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(e) => {
                        let _ = report.send(FleetEvent::Error(format!("agones: {e}")));
                        return;
                    }
                };
                runtime.block_on(run(settings, queue, report, sender));
            })?;
        Ok(Self {
            commands,
            health,
            ended: Mutex::new(ended),
            events: std::sync::Mutex::new(events),
            thread: Some(thread),
        })
    }

    fn send(&self, command: Command) {
        // The SDK's thread ended (it reported why): nothing to tell.
        let _ = self.commands.send(command);
    }
}

impl FleetBackend for Agones {
    fn ready(&mut self) {
        self.send(Command::Ready);
    }

    fn health(&mut self) {
        let health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(health) = health.as_ref() {
            // A full buffer already tells the SDK server we live.
            let _ = health.try_send(());
        }
    }

    fn player_connected(&mut self, player: &str) {
        self.send(Command::PlayerConnected(player.to_owned()));
    }

    fn player_disconnected(&mut self, player: &str) {
        self.send(Command::PlayerDisconnected(player.to_owned()));
    }

    fn shutdown(&mut self) {
        self.send(Command::Shutdown);
    }

    fn annotate(&mut self, key: &str, value: &str) {
        self.send(Command::Annotate(key.to_owned(), value.to_owned()));
    }

    fn poll_event(&mut self) -> Option<FleetEvent> {
        self.events
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .try_recv()
            .ok()
    }
}

impl Drop for Agones {
    fn drop(&mut self) {
        // The calls already queued (a Shutdown) go out before the thread
        // ends; it is waited for a few seconds at most (the SDK may still
        // be trying to connect), then left to end on its own.
        let (closed, _) = tokio::sync::mpsc::unbounded_channel();
        drop(core::mem::replace(&mut self.commands, closed));
        let ended = self.ended.get_mut().unwrap_or_else(PoisonError::into_inner);
        if ended.recv_timeout(DROP_WAIT).is_ok()
            && let Some(thread) = self.thread.take()
        {
            let _ = thread.join();
        }
    }
}

/// Sends on drop: the SDK's thread ended, however it ended.
struct Ended(mpsc::Sender<()>);

impl Drop for Ended {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

/// An SDK call within [`CALL_TIMEOUT`], its error or timeout as text.
async fn call<T, E: core::fmt::Display>(
    f: impl core::future::Future<Output = Result<T, E>>,
) -> Result<T, String> {
    match tokio::time::timeout(CALL_TIMEOUT, f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer within {CALL_TIMEOUT:?}")),
    }
}

/// The SDK's thread: connect, watch the game server, then carry out the
/// game's calls in order until Shutdown or the game drops the backend.
async fn run(
    settings: AgonesSettings,
    mut queue: tokio::sync::mpsc::UnboundedReceiver<Command>,
    report: mpsc::Sender<FleetEvent>,
    health: HealthSender,
) {
    let error = |what: &str, e: &dyn core::fmt::Display| {
        let _ = report.send(FleetEvent::Error(format!("agones {what}: {e}")));
    };
    let mut sdk = match ::agones::Sdk::new(settings.port, None).await {
        Ok(sdk) => sdk,
        Err(e) => return error("connect", &e),
    };
    *health.lock().unwrap_or_else(PoisonError::into_inner) = Some(sdk.health_check());
    let mut watcher = sdk.clone();
    let watch_report = report.clone();
    let watch = tokio::spawn(async move {
        let mut stream = match watcher.watch_gameserver().await {
            Ok(stream) => stream,
            Err(e) => {
                let _ = watch_report.send(FleetEvent::Error(format!("agones watch: {e}")));
                return;
            }
        };
        let mut allocated = false;
        let mut shutting = false;
        loop {
            match stream.message().await {
                Ok(Some(gs)) => {
                    let state = gs.status.as_ref().map_or("", |s| s.state.as_str());
                    if state == "Allocated" && !allocated {
                        allocated = true;
                        let _ = watch_report.send(FleetEvent::Allocated(allocation_of(&gs)));
                    }
                    if state == "Shutdown" && !shutting {
                        shutting = true;
                        let _ = watch_report.send(FleetEvent::ShutdownRequested);
                    }
                }
                Ok(None) => return,
                Err(e) => {
                    let _ = watch_report.send(FleetEvent::Error(format!("agones watch: {e}")));
                    return;
                }
            }
        }
    });
    let mut lists = sdk.beta().clone();
    while let Some(command) = queue.recv().await {
        match command {
            Command::Ready => {
                if let Err(e) = call(sdk.ready()).await {
                    error("Ready", &e);
                }
            }
            Command::PlayerConnected(player) => {
                if let Some(list) = &settings.players_list
                    && let Err(e) = call(lists.append_list_value(list, &player)).await
                {
                    error("AddListValue", &e);
                }
            }
            Command::PlayerDisconnected(player) => {
                if let Some(list) = &settings.players_list
                    && let Err(e) = call(lists.delete_list_value(list, &player)).await
                {
                    error("RemoveListValue", &e);
                }
            }
            // The SDK server stores it as `agones.dev/sdk-<key>`.
            Command::Annotate(key, value) => {
                if let Err(e) = call(sdk.set_annotation(key, value)).await {
                    error("SetAnnotation", &e);
                }
            }
            Command::Shutdown => {
                if let Err(e) = call(sdk.shutdown()).await {
                    error("Shutdown", &e);
                }
                break;
            }
        }
    }
    watch.abort();
}

fn allocation_of(gs: &::agones::GameServer) -> FleetAllocation {
    let meta = gs.object_meta.as_ref();
    FleetAllocation {
        labels: meta
            .map(|m| {
                m.labels
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default(),
        annotations: meta
            .map(|m| {
                m.annotations
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default(),
    }
}
