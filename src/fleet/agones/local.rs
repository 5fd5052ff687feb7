//! The Agones SDK's gRPC API served on 127.0.0.1: what the SDK server in
//! a pod answers, for tests and for running a fleet's server on a desktop
//! (like `agones-sdk --local`). The messages are the SDK's own protobuf
//! messages (`sdk.proto`, `beta.proto`): the game server record is the
//! SDK crate's [`GameServer`]; the few the crate keeps private are
//! declared here with the same fields and tags.
//!
//! It serves `agones.dev.sdk.SDK` (Ready, Allocate, Shutdown, Health,
//! GetGameServer, WatchGameServer, SetLabel, SetAnnotation, Reserve) and
//! the Lists of `agones.dev.sdk.beta.SDK` (GetList, AddListValue,
//! RemoveListValue), with Agones' answers: a list value added twice is
//! `ALREADY_EXISTS`, past its capacity `OUT_OF_RANGE`, an unknown list or
//! value `NOT_FOUND`. Other methods answer `UNIMPLEMENTED`, as a gRPC
//! server does. The fleet's allocator is [`LocalSdkServer::allocate`].

// A method's error is tonic's `Status`, as every gRPC service's is.
#![allow(clippy::result_large_err)]

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ::agones::{GameServer, ObjectMeta, Status as GameServerStatus};
use tonic::codegen::{BoxFuture, Context, Poll, Service, http};
use tonic::server::{ClientStreamingService, Grpc, NamedService, UnaryService};
use tonic::{Code, Status};

/// One call the SDK server received, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SdkCall {
    /// `GetGameServer`.
    GetGameServer,
    /// `WatchGameServer` (the stream opened).
    Watch,
    /// `Ready`.
    Ready,
    /// One message on the `Health` stream.
    Health,
    /// `Allocate` (the game allocating itself).
    Allocate,
    /// `Shutdown`.
    Shutdown,
    /// `SetLabel`.
    SetLabel(String, String),
    /// `SetAnnotation`.
    SetAnnotation(String, String),
    /// `Reserve`, in seconds.
    Reserve(i64),
    /// beta `AddListValue`: the list and the value.
    AddListValue(String, String),
    /// beta `RemoveListValue`: the list and the value.
    RemoveListValue(String, String),
}

// The SDK's messages its crate does not export, with the fields and tags
// of sdk.proto and beta.proto.

/// `agones.dev.sdk.Empty`.
#[derive(Clone, PartialEq, ::prost::Message)]
struct Empty {}

/// `agones.dev.sdk.KeyValue`.
#[derive(Clone, PartialEq, ::prost::Message)]
struct KeyValue {
    #[prost(string, tag = "1")]
    key: String,
    #[prost(string, tag = "2")]
    value: String,
}

/// `agones.dev.sdk.Duration`.
#[derive(Clone, PartialEq, ::prost::Message)]
struct ReserveFor {
    #[prost(int64, tag = "1")]
    seconds: i64,
}

/// `agones.dev.sdk.beta.List`.
#[derive(Clone, PartialEq, ::prost::Message)]
struct List {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(int64, tag = "2")]
    capacity: i64,
    #[prost(string, repeated, tag = "3")]
    values: Vec<String>,
}

/// `agones.dev.sdk.beta.GetListRequest`.
#[derive(Clone, PartialEq, ::prost::Message)]
struct GetListRequest {
    #[prost(string, tag = "1")]
    name: String,
}

/// `agones.dev.sdk.beta.AddListValueRequest` and `RemoveListValueRequest`
/// (the same fields).
#[derive(Clone, PartialEq, ::prost::Message)]
struct ListValueRequest {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, tag = "2")]
    value: String,
}

/// The record and what happened to it.
struct Record {
    game_server: GameServer,
    calls: Vec<(Instant, SdkCall)>,
    /// Each list's capacity and values.
    lists: BTreeMap<String, (i64, Vec<String>)>,
}

struct Shared {
    record: Mutex<Record>,
    watchers: tokio::sync::watch::Sender<GameServer>,
}

impl Shared {
    fn record(&self) -> std::sync::MutexGuard<'_, Record> {
        self.record.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn log(&self, call: SdkCall) {
        self.record().calls.push((Instant::now(), call));
    }

    /// Changes the record and tells every watcher.
    fn update(&self, change: impl FnOnce(&mut GameServer)) {
        let mut record = self.record();
        change(&mut record.game_server);
        self.watchers.send_replace(record.game_server.clone());
    }

    fn set_state(&self, state: &str) {
        self.update(|gs| status(gs).state = state.to_owned());
    }
}

fn status(gs: &mut GameServer) -> &mut GameServerStatus {
    gs.status.get_or_insert_with(GameServerStatus::default)
}

fn meta(gs: &mut GameServer) -> &mut ObjectMeta {
    gs.object_meta.get_or_insert_with(ObjectMeta::default)
}

/// An Agones SDK server on 127.0.0.1 (see the module docs). It declares
/// one list, `players`, of capacity 1024, as deploy/fleet.yaml does.
pub struct LocalSdkServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl core::fmt::Debug for LocalSdkServer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LocalSdkServer")
            .field("addr", &self.addr)
            .field("state", &self.state())
            .finish_non_exhaustive()
    }
}

impl LocalSdkServer {
    /// Serves on 127.0.0.1, on a free port ([`port`](Self::port)), from a
    /// thread of its own. The game server starts `Scheduled`.
    ///
    /// # Errors
    /// If the port cannot be bound or the thread started.
    pub fn start() -> std::io::Result<Self> {
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let mut game_server = GameServer::default();
        *meta(&mut game_server) = ObjectMeta {
            name: "local".to_owned(),
            namespace: "default".to_owned(),
            ..ObjectMeta::default()
        };
        *status(&mut game_server) = GameServerStatus {
            state: "Scheduled".to_owned(),
            address: "127.0.0.1".to_owned(),
            ..GameServerStatus::default()
        };
        let (watchers, _) = tokio::sync::watch::channel(game_server.clone());
        let shared = Arc::new(Shared {
            record: Mutex::new(Record {
                game_server,
                calls: Vec::new(),
                lists: BTreeMap::from([("players".to_owned(), (1024, Vec::new()))]),
            }),
            watchers,
        });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = shared.clone();
        let thread = std::thread::Builder::new()
            .name("zao-local-agones".into())
            .spawn(move || serve(listener, serving, stopped))?;
        Ok(Self {
            shared,
            addr,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The port the SDK connects to ([`AgonesSettings::port`](super::AgonesSettings::port)).
    #[must_use]
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Every call received so far, in order.
    #[must_use]
    pub fn calls(&self) -> Vec<SdkCall> {
        self.shared
            .record()
            .calls
            .iter()
            .map(|(_, c)| c.clone())
            .collect()
    }

    /// Every call received so far, with the instant it arrived.
    #[must_use]
    pub fn timed_calls(&self) -> Vec<(Instant, SdkCall)> {
        self.shared.record().calls.clone()
    }

    /// Health messages received so far.
    #[must_use]
    pub fn health_pings(&self) -> usize {
        self.shared
            .record()
            .calls
            .iter()
            .filter(|(_, c)| *c == SdkCall::Health)
            .count()
    }

    /// The game server's state: `Scheduled`, `Ready`, `Allocated`,
    /// `Reserved`, `Shutdown`.
    #[must_use]
    pub fn state(&self) -> String {
        self.shared
            .record()
            .game_server
            .status
            .as_ref()
            .map(|s| s.state.clone())
            .unwrap_or_default()
    }

    /// A list's values; empty for an unknown list.
    #[must_use]
    pub fn list(&self, name: &str) -> Vec<String> {
        self.shared
            .record()
            .lists
            .get(name)
            .map(|(_, values)| values.clone())
            .unwrap_or_default()
    }

    /// Declares a list (a `GameServer`'s `spec.lists`), replacing one of
    /// the same name.
    pub fn declare_list(&self, name: &str, capacity: i64) {
        self.shared
            .record()
            .lists
            .insert(name.to_owned(), (capacity, Vec::new()));
    }

    /// What the fleet's allocator does with a `GameServerAllocation`: the
    /// game server becomes `Allocated`, with the allocation's labels and
    /// annotations added to its own, and every watcher is told.
    pub fn allocate<'a>(
        &self,
        labels: impl IntoIterator<Item = (&'a str, &'a str)>,
        annotations: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) {
        self.shared.update(|gs| {
            let meta = meta(gs);
            for (k, v) in labels {
                meta.labels.insert(k.to_owned(), v.to_owned());
            }
            for (k, v) in annotations {
                meta.annotations.insert(k.to_owned(), v.to_owned());
            }
            status(gs).state = "Allocated".to_owned();
        });
    }

    /// Waits until `done` holds of the calls received, or `timeout` passes:
    /// whether it held.
    pub fn wait_for(&self, timeout: Duration, done: impl Fn(&[SdkCall]) -> bool) -> bool {
        let end = Instant::now() + timeout;
        loop {
            if done(&self.calls()) {
                return true;
            }
            if Instant::now() >= end {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for LocalSdkServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(
    listener: std::net::TcpListener,
    shared: Arc<Shared>,
    stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            tracing::warn!("local Agones SDK server: {e}");
            return;
        }
    };
    runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::from_std(listener) {
            Ok(listener) => listener,
            Err(e) => {
                tracing::warn!("local Agones SDK server: {e}");
                return;
            }
        };
        let serving = tonic::transport::Server::builder()
            .add_service(SdkService(shared.clone()))
            .add_service(BetaService(shared))
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener));
        // Stopped at once, open calls and all: a graceful shutdown would
        // wait for the Health and WatchGameServer streams, which a
        // connected SDK never ends.
        tokio::select! {
            served = serving => {
                if let Err(e) = served {
                    tracing::warn!("local Agones SDK server: {e}");
                }
            }
            _ = stopped => {}
        }
    });
}

/// A unary method answered at once from the record.
struct Unary<F>(F);

impl<Req, Res, F> UnaryService<Req> for Unary<F>
where
    F: FnMut(Req) -> Result<Res, Status>,
{
    type Response = Res;
    type Future = core::future::Ready<Result<tonic::Response<Res>, Status>>;

    fn call(&mut self, request: tonic::Request<Req>) -> Self::Future {
        core::future::ready((self.0)(request.into_inner()).map(tonic::Response::new))
    }
}

/// The `Health` stream: each message is logged.
struct Health(Arc<Shared>);

impl ClientStreamingService<Empty> for Health {
    type Response = Empty;
    type Future = BoxFuture<tonic::Response<Empty>, Status>;

    fn call(&mut self, request: tonic::Request<tonic::Streaming<Empty>>) -> Self::Future {
        let shared = self.0.clone();
        Box::pin(async move {
            let mut stream = request.into_inner();
            while stream.message().await?.is_some() {
                shared.log(SdkCall::Health);
            }
            Ok(tonic::Response::new(Empty {}))
        })
    }
}

/// `WatchGameServer`: the record now, then every change.
struct Watch(Arc<Shared>);

type GameServers = Pin<Box<dyn tokio_stream::Stream<Item = Result<GameServer, Status>> + Send>>;

impl tonic::server::ServerStreamingService<Empty> for Watch {
    type Response = GameServer;
    type ResponseStream = GameServers;
    type Future = BoxFuture<tonic::Response<GameServers>, Status>;

    fn call(&mut self, _request: tonic::Request<Empty>) -> Self::Future {
        use tokio_stream::StreamExt as _;
        self.0.log(SdkCall::Watch);
        let changes = tokio_stream::wrappers::WatchStream::new(self.0.watchers.subscribe());
        let stream: GameServers = Box::pin(changes.map(Ok));
        Box::pin(async move { Ok(tonic::Response::new(stream)) })
    }
}

type Body = tonic::body::BoxBody;

/// `agones.dev.sdk.SDK`.
#[derive(Clone)]
struct SdkService(Arc<Shared>);

impl NamedService for SdkService {
    const NAME: &'static str = "agones.dev.sdk.SDK";
}

impl Service<http::Request<Body>> for SdkService {
    type Response = http::Response<Body>;
    type Error = core::convert::Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let shared = self.0.clone();
        let path = request.uri().path().to_owned();
        Box::pin(async move {
            let s = shared.clone();
            let empty = move |call: SdkCall, state: Option<&'static str>| {
                let s = s.clone();
                Unary(move |_: Empty| {
                    s.log(call.clone());
                    if let Some(state) = state {
                        s.set_state(state);
                    }
                    Ok(Empty {})
                })
            };
            Ok(match path.trim_start_matches("/agones.dev.sdk.SDK/") {
                "Ready" => unary(empty(SdkCall::Ready, Some("Ready")), request).await,
                "Allocate" => unary(empty(SdkCall::Allocate, Some("Allocated")), request).await,
                "Shutdown" => unary(empty(SdkCall::Shutdown, Some("Shutdown")), request).await,
                "Health" => {
                    Grpc::new(tonic::codec::ProstCodec::<Empty, Empty>::default())
                        .client_streaming(Health(shared), request)
                        .await
                }
                "GetGameServer" => {
                    let s = shared.clone();
                    let get = Unary(move |_: Empty| {
                        s.log(SdkCall::GetGameServer);
                        Ok(s.record().game_server.clone())
                    });
                    unary(get, request).await
                }
                "WatchGameServer" => {
                    Grpc::new(tonic::codec::ProstCodec::<GameServer, Empty>::default())
                        .server_streaming(Watch(shared), request)
                        .await
                }
                "SetLabel" | "SetAnnotation" => {
                    let label = path.ends_with("SetLabel");
                    let s = shared.clone();
                    let set = Unary(move |kv: KeyValue| {
                        let KeyValue { key, value } = kv;
                        // The SDK server prefixes what a game sets.
                        let full = format!("agones.dev/sdk-{key}");
                        s.update(|gs| {
                            let meta = meta(gs);
                            let map = if label {
                                &mut meta.labels
                            } else {
                                &mut meta.annotations
                            };
                            map.insert(full, value.clone());
                        });
                        s.log(if label {
                            SdkCall::SetLabel(key, value)
                        } else {
                            SdkCall::SetAnnotation(key, value)
                        });
                        Ok(Empty {})
                    });
                    unary(set, request).await
                }
                "Reserve" => {
                    let s = shared.clone();
                    let reserve = Unary(move |d: ReserveFor| {
                        s.log(SdkCall::Reserve(d.seconds));
                        s.set_state("Reserved");
                        Ok(Empty {})
                    });
                    unary(reserve, request).await
                }
                _ => unimplemented(),
            })
        })
    }
}

/// `agones.dev.sdk.beta.SDK`: its Lists.
#[derive(Clone)]
struct BetaService(Arc<Shared>);

impl NamedService for BetaService {
    const NAME: &'static str = "agones.dev.sdk.beta.SDK";
}

impl Service<http::Request<Body>> for BetaService {
    type Response = http::Response<Body>;
    type Error = core::convert::Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let s = self.0.clone();
        let path = request.uri().path().to_owned();
        Box::pin(async move {
            Ok(match path.trim_start_matches("/agones.dev.sdk.beta.SDK/") {
                "GetList" => {
                    let get = Unary(move |r: GetListRequest| list_of(&s.record(), &r.name));
                    unary(get, request).await
                }
                "AddListValue" => {
                    let add = Unary(move |r: ListValueRequest| {
                        s.log(SdkCall::AddListValue(r.name.clone(), r.value.clone()));
                        let mut record = s.record();
                        let Some((capacity, values)) = record.lists.get_mut(&r.name) else {
                            return Err(Status::not_found(format!("no list {}", r.name)));
                        };
                        if values.contains(&r.value) {
                            return Err(Status::already_exists(r.value));
                        }
                        if i64::try_from(values.len()).unwrap_or(i64::MAX) >= *capacity {
                            return Err(Status::out_of_range("the list is at capacity"));
                        }
                        values.push(r.value);
                        list_of(&record, &r.name)
                    });
                    unary(add, request).await
                }
                "RemoveListValue" => {
                    let remove = Unary(move |r: ListValueRequest| {
                        s.log(SdkCall::RemoveListValue(r.name.clone(), r.value.clone()));
                        let mut record = s.record();
                        let Some((_, values)) = record.lists.get_mut(&r.name) else {
                            return Err(Status::not_found(format!("no list {}", r.name)));
                        };
                        let Some(at) = values.iter().position(|v| *v == r.value) else {
                            return Err(Status::not_found(r.value));
                        };
                        values.remove(at);
                        list_of(&record, &r.name)
                    });
                    unary(remove, request).await
                }
                _ => unimplemented(),
            })
        })
    }
}

fn list_of(record: &Record, name: &str) -> Result<List, Status> {
    let (capacity, values) = record
        .lists
        .get(name)
        .ok_or_else(|| Status::not_found(format!("no list {name}")))?;
    Ok(List {
        name: name.to_owned(),
        capacity: *capacity,
        values: values.clone(),
    })
}

/// Answers one unary call with `method`, through the SDK's protobuf codec.
async fn unary<Req, Res, F>(method: Unary<F>, request: http::Request<Body>) -> http::Response<Body>
where
    Req: prost::Message + Default + Send + 'static,
    Res: prost::Message + Send + 'static,
    F: FnMut(Req) -> Result<Res, Status> + Send + 'static,
{
    Grpc::new(tonic::codec::ProstCodec::<Res, Req>::default())
        .unary(method, request)
        .await
}

/// What a gRPC server answers for a method it does not have.
fn unimplemented() -> http::Response<Body> {
    let mut response = http::Response::new(tonic::body::empty_body());
    let headers = response.headers_mut();
    headers.insert(
        "grpc-status",
        http::HeaderValue::from(Code::Unimplemented as i32),
    );
    headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/grpc"),
    );
    response
}
