//! # Zao: game networking messages
//!
//! Zao encodes game messages straight into buffers you own and decodes them
//! from untrusted bytes without panicking. Message types come in tiers, from
//! a 16-byte blittable `PlayerMoved` that is one copy each way, to snapshots
//! and inventories whose collections are checked against limits before a
//! byte is allocated.
//!
//! ## Quick start
//!
//! ```
//! use zao::{Decode, Encode, NetMessage};
//!
//! #[derive(Debug, PartialEq, Encode, Decode, NetMessage)]
//! #[zao(id = 7)]
//! struct Chat {
//!     from: u32,
//!     text: String,
//! }
//!
//! let msg = Chat { from: 42, text: "gg".into() };
//!
//! // Encode into a buffer you own: the size is known up front and checked once.
//! let mut buf = [0u8; 64];
//! let n = msg.encode(&mut buf)?;
//! assert_eq!(n, msg.encoded_len());
//! assert_eq!(&buf[..n], &[42, 0, 0, 0, 2, b'g', b'g']);
//!
//! // Decode: the whole input must be one value.
//! assert_eq!(Chat::decode(&buf[..n])?, msg);
//!
//! // Decode into a value you keep, reusing its String capacity.
//! let mut last = Chat { from: 0, text: String::with_capacity(64) };
//! last.decode_in_place(&buf[..n])?;
//! assert_eq!(last, msg);
//!
//! // Hostile bytes are errors, never panics.
//! assert!(Chat::decode(&[42, 0, 0, 0, 200]).is_err());
//!
//! // As a message on the wire: id (varint) + body.
//! let n = zao::encode_message(&msg, &mut buf)?;
//! assert_eq!(buf[0], 7);
//! assert_eq!(zao::decode_message::<Chat>(&buf[..n])?, msg);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## The tiers
//!
//! | tier | what | encode | decode |
//! |---|---|---|---|
//! | 0 blittable | `#[repr(C)]` plain data, no padding | one copy | one copy, no validation |
//! | 1 fixed | fixed size with invariants (`bool`, enum tags, `NonZero*`) | fixed writes | checked reads |
//! | 2 bounded | fixed fields plus strings | one capacity check, then writes | borrowed `&str` or owned `String` |
//! | 3 collections | `Vec`s of records, maps | a run of blittable records is one copy | one length check, then one copy or a loop |
//!
//! A tier-0 type derives zerocopy's traits beside zao's and says
//! `#[zao(blittable)]`; padding is then a compile error, and a `Vec` of it is
//! a 4-byte count (docs/WIRE.md §5) and one `copy_from_slice` each way:
//!
//! ```
//! use zao::{Decode, Encode};
//! use zao::zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};
//!
//! #[derive(Clone, Copy, Debug, PartialEq, Encode, Decode)]
//! #[derive(FromBytes, IntoBytes, Immutable, KnownLayout)]
//! #[zerocopy(crate = "zao::zerocopy")]
//! #[zao(blittable)]
//! #[repr(C)]
//! struct Hit {
//!     target: u32,
//!     damage: f32,
//! }
//!
//! let hits = vec![Hit { target: 1, damage: 2.5 }; 100];
//! let bytes = hits.to_encoded_vec();
//! assert_eq!(bytes.len(), 4 + 100 * 8); // a 4-byte count, then the run
//! assert_eq!(Vec::<Hit>::decode(&bytes)?, hits);
//! # Ok::<(), zao::DecodeError>(())
//! ```
//!
//! ## The API
//!
//! - [`Encode`]: [`encoded_len`](Encode::encoded_len), [`encode`](Encode::encode)
//!   into `&mut [u8]`, [`encode_to_vec`](Encode::encode_to_vec) reusing a
//!   `Vec`'s capacity, [`encode_to_bytes`](Encode::encode_to_bytes) for the
//!   transport's `BytesMut`. The only error is [`EncodeError`] (buffer too
//!   small, with the sizes).
//! - [`Decode`]: [`decode`](Decode::decode) (trailing bytes are an error),
//!   [`decode_in_place`](Decode::decode_in_place) (no allocation in steady
//!   state), [`decode_prefix`](Decode::decode_prefix) and [`Reader`] for
//!   several values in one buffer, [`decode_with_limits`](Decode::decode_with_limits)
//!   with your own [`DecodeLimits`]. Errors are a small enum, [`DecodeError`].
//! - [`Writer`] and [`Reader`]: cursors over caller buffers, and the
//!   primitives (`put_u32_le`, `get_varint`, ...) for hand-written impls.
//! - [`NetMessage`]: a stable id (`#[zao(id = N)]`) and a [`Schema`] fingerprint
//!   that changes when a field's name, type or order changes, at any depth.
//!   [`encode_message`] / [`decode_message`] / [`split_message`] frame
//!   `id + body`.
//!
//! ## Derive attributes
//!
//! - `#[zao(blittable)]`: tier 0, as above.
//! - `#[zao(tolerant)]`: append-only versioning. The body is length-prefixed;
//!   a reader skips fields a newer writer appended and defaults fields an
//!   older writer did not send (fields must implement `Default`).
//! - `#[zao(tag = N)]` or `= N` on every enum variant: explicit wire tags.
//! - `#[zao(id = N)]` with `#[derive(NetMessage)]`: the message id.
//!
//! ## Wire format
//!
//! Little-endian; blittable values are their memory image; lengths, counts,
//! tags and ids are canonical LEB128 varints, except that a run of
//! `#[zao(blittable)]` structs has a 4-byte count; strings are UTF-8; maps are a
//! count and key/value pairs. `docs/WIRE.md` gives it byte by byte, and
//! `assets/golden/` holds a file per reference message.
//!
//! ## Transport
//!
//! [`quic::Server`] and [`quic::Client`] carry messages over QUIC (quinn, on a
//! tokio runtime of their own threads; their methods never block). Each
//! message type is registered on a [`proto::Channel`] in a [`proto::Protocol`]
//! that both sides build the same way; a client whose protocol differs is
//! refused with the first difference named (a channel or a message).
//!
//! Every protocol starts with three channels ([`proto::Channel::RELIABLE`],
//! [`proto::Channel::UNRELIABLE`], [`proto::Channel::SNAPSHOT`]) and declares
//! any number more with [`proto::Protocol::add_channel`], each of a
//! [`proto::ChannelKind`] and with a priority:
//!
//! - `ReliableOrdered`: exactly once, in order, on a QUIC stream of its
//!   own per direction, so one channel never waits for another.
//! - `ReliableUnordered`: exactly once, each message on a stream of its own.
//! - `Unreliable`: datagrams, at most once, small messages packed together.
//! - `Sequenced`: datagrams, latest wins per message type, both directions.
//! - `Snapshot`: datagrams, newest wins; [`proto::ServerCore::send_snapshot`]
//!   splits a large snapshot into independently decodable chunks, each
//!   encoded once and shared by every client.
//!
//! When the link is congested, a channel of higher priority sends first.
//!
//! ```no_run
//! use std::time::Duration;
//! use zao::proto::{Channel, Direction, Protocol};
//! use zao::quic::{Certificate, Client, ClientConfig, Server, ServerConfig, ServerEvent, Target};
//! # #[derive(zao::Encode, zao::Decode, zao::NetMessage)]
//! # #[zao(id = 7)]
//! # struct Chat { text: String }
//!
//! let mut protocol = Protocol::new();
//! protocol.add::<Chat>(Channel::RELIABLE, Direction::Both);
//!
//! let certificate = Certificate::self_signed(&["localhost"])?;
//! let mut server = Server::start(ServerConfig::new("127.0.0.1:0".parse()?, certificate, protocol.clone()))?;
//!
//! // The client pins the server certificate's SHA-256.
//! let config = ClientConfig::pinned(server.local_addr(), server.certificate_hash(), protocol);
//! let mut client = Client::connect(config)?;
//! client.wait_connected(Duration::from_secs(5))?;
//! client.send(Channel::RELIABLE, &Chat { text: "hi".into() })?;
//!
//! // Once per tick: poll, then send; one encode however many clients.
//! while let Some(event) = server.poll_event() {
//!     if let ServerEvent::Message { client, message, .. } = event {
//!         let chat: Chat = message.decode()?;
//!         server.send(Target::AllExcept(client), Channel::RELIABLE, &chat)?;
//!     }
//! }
//! server.flush();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The connection logic lives in [`proto`], sans I/O: one
//! [`proto::Session`] per connection (handshake, admission, channels,
//! framing, rate limits, heartbeats, close codes), driven by `quic` over
//! quinn — or by [`sim`] over a simulated network. `Server` and `Client`
//! dereference to [`proto::ServerCore`] and [`proto::ClientCore`].
//! `docs/WIRE.md` §12 specifies the transport's wire format; `SECURITY.md`
//! the threat model and every limit with its default.
//!
//! ## Testing on a simulated network
//!
//! [`sim::Sim`] runs a server and clients over quinn-proto's real QUIC on a
//! virtual clock, with seeded links ([`sim::LinkSpec`]: latency, jitter,
//! loss, duplication, reordering, blackholes, an MTU clamp). Minutes of play
//! take well under a second and a seed gives the same run every time; it
//! gives the same `ServerCore` and `ClientCore` as the real transport, and
//! [`sim::RawPeer`] speaks raw QUIC for attack tests.
//!
//! ```
//! use std::time::Duration;
//! use zao::proto::{Channel, ClientEvent, Direction, Protocol, Target};
//! use zao::sim::{LinkSpec, Sim, SimClientConfig, SimServerConfig};
//! # #[derive(zao::Encode, zao::Decode, zao::NetMessage)]
//! # #[zao(id = 7)]
//! # struct Chat { text: String }
//!
//! let mut protocol = Protocol::new();
//! protocol.add::<Chat>(Channel::RELIABLE, Direction::Both);
//! let mut sim = Sim::new(7);
//! let mut server = sim.start_server(SimServerConfig::new(protocol.clone()))?;
//! // 200 ms each way, ±30 ms of jitter, 10 % loss.
//! let mut client = sim.connect(SimClientConfig::new(protocol).with_link(LinkSpec::l3()))?;
//! sim.run_for(Duration::from_secs(3));
//! for n in 0..100 {
//!     server.send(Target::All, Channel::RELIABLE, &Chat { text: n.to_string() })?;
//! }
//! sim.run_for(Duration::from_secs(60)); // a minute of virtual time
//! let got = std::iter::from_fn(|| client.poll_event())
//!     .filter(|e| matches!(e, ClientEvent::Message { .. }))
//!     .count();
//! assert_eq!(got, 100); // reliable: all of them, in order, despite the loss
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Security
//!
//! Every decode checks each length against the bytes that remain and against
//! [`DecodeLimits`] (message, collection and string length, depth and a total
//! allocation budget) before allocating. No `unwrap`, `expect` or panicking
//! index touches peer bytes, and the crate is `#![forbid(unsafe_code)]`:
//! zerocopy and bytes do the byte work.
//!
//! ## Bevy
//!
//! The [`bevy`] module carries zao messages as Bevy 0.20 messages, headless
//! (bevy_app, bevy_ecs, bevy_state and bevy_time; no rendering crate). The
//! sections below are its guide, one per feature; `examples/arena/` is a
//! whole game that uses every one (`tests/arena.rs` plays it on the
//! simulated network).
//!
//! ### One import
//!
//! `use zao::bevy::prelude::*;` brings what a game uses every day (the
//! derives, plugins, settings, commands, messages, resources, states, the
//! types they carry, and glam's `Vec2`, `Vec3`, `Quat`), beside Bevy's own
//! preludes with no clash.
//!
//! ### Registration and channels
//!
//! Both sides call the same function: declared channels, then message types
//! on them ([`bevy::AppZaoExt`]). Each reliable-ordered channel is a QUIC
//! stream of its own, so a large map download never holds back chat; a
//! channel's priority decides who sends first on a congested link. A client
//! whose registrations differ is refused with the first difference named.
//!
//! ```
//! use bevy_app::App;
//! use zao::bevy::{AppZaoExt, Channel, ChannelKind, Direction};
//! # use zao::{Decode, Encode, NetMessage};
//! # #[derive(Clone, Encode, Decode, NetMessage)] #[zao(id = 7)] struct Chat { text: String }
//! # #[derive(Clone, Encode, Decode, NetMessage)] #[zao(id = 8)] struct Aim { yaw: f32 }
//! # #[derive(Clone, Encode, Decode, NetMessage)] #[zao(id = 9)] struct MapChunk { bytes: Vec<u8> }
//!
//! fn protocol(app: &mut App) {
//!     app.add_zao_channel_with_priority("chat", ChannelKind::ReliableOrdered, 10)
//!         .add_zao_channel("map", ChannelKind::ReliableOrdered)
//!         .add_zao_channel("aim", ChannelKind::Sequenced) // latest wins, both ways
//!         .add_zao_message::<Chat>("chat", Direction::Both)
//!         .add_zao_message::<MapChunk>("map", Direction::ServerToClient)
//!         .add_zao_message::<Aim>("aim", Direction::ClientToServer);
//! }
//! # protocol(&mut App::new());
//! ```
//!
//! ### Starting, stopping, connecting, reconnecting
//!
//! [`bevy::ZaoServerPlugin`] and [`bevy::ZaoClientPlugin`] only set things
//! up. Any system starts or stops the server and connects, leaves or
//! reconnects the client, with [`bevy::ZaoCommandsExt`]; the address and
//! certificate are chosen then. Failures are messages with typed reasons:
//! [`bevy::ServerStartFailed`] (the port in use, a bad certificate),
//! [`bevy::ConnectFailed`], [`bevy::Disconnected`] (refused, timed out,
//! dropped, kicked). Nothing panics. `start_at_launch` / `connect_at_launch`
//! remain for examples.
//!
//! ```no_run
//! use bevy_app::{App, Update};
//! use bevy_ecs::prelude::*;
//! use zao::bevy::{
//!     Disconnected, ServerStartFailed, ZaoClientPlugin, ZaoClientSettings, ZaoCommandsExt,
//!     ZaoServerPlugin, ZaoServerSettings, client_just_disconnected,
//! };
//!
//! fn host_button(mut commands: Commands) {
//!     commands.start_zao_server(ZaoServerSettings::bind("0.0.0.0:4433".parse().unwrap()));
//! }
//!
//! fn port_taken(mut failed: MessageReader<ServerStartFailed>) {
//!     for f in failed.read() {
//!         eprintln!("cannot host: {}", f.error); // back to the menu
//!     }
//! }
//!
//! /// After a drop, try again (a real game would back off).
//! fn reconnect(mut commands: Commands, mut gone: MessageReader<Disconnected>) {
//!     for d in gone.read() {
//!         eprintln!("lost the server: {}", d.reason);
//!         let pin = "…".parse().unwrap();
//!         commands.connect_zao(ZaoClientSettings::pinned("127.0.0.1:4433".parse().unwrap(), pin));
//!     }
//! }
//!
//! let mut app = App::new();
//! app.add_plugins((ZaoServerPlugin::default(), ZaoClientPlugin::default()))
//!     .add_systems(Update, (host_button, port_taken, reconnect.run_if(client_just_disconnected)));
//! ```
//!
//! ### States and run conditions
//!
//! [`bevy::ZaoServerState`] (stopped, starting, running) and
//! [`bevy::ZaoClientState`] (disconnected, connecting, connected) are Bevy
//! `States`: use `OnEnter`, `in_state`, or the run conditions
//! [`bevy::server_running`], [`bevy::client_connected`],
//! [`bevy::client_just_connected`] and [`bevy::client_just_disconnected`].
//!
//! ### Clients as entities
//!
//! Each connected client is an entity with [`bevy::ConnectedClient`] (id,
//! address, the identity the auth callback returned) and
//! [`bevy::ClientStats`] (RTT, loss, rates; refreshed every update). Attach
//! your player's components to it; despawning it kicks the client; it is
//! despawned the update after the client leaves (after
//! [`bevy::ClientDisconnected`], so systems can still read it).
//! [`bevy::FromClient`] names the sender's entity.
//!
//! ```
//! use bevy_ecs::prelude::*;
//! use zao::bevy::{ClientConnected, ClientStats, ConnectedClient};
//!
//! #[derive(Component)]
//! struct Score(u32);
//!
//! fn join(mut commands: Commands, mut joined: MessageReader<ClientConnected>) {
//!     for c in joined.read() {
//!         commands.entity(c.entity).insert(Score(0));
//!     }
//! }
//!
//! /// Kick anyone above 500 ms: despawning is kicking.
//! fn laggards(mut commands: Commands, players: Query<(Entity, &ClientStats)>) {
//!     for (entity, stats) in &players {
//!         if stats.0.rtt.as_millis() > 500 {
//!             commands.entity(entity).despawn();
//!         }
//!     }
//! }
//! # let _ = (join, laggards);
//! ```
//!
//! ### Sending: targets, rooms, results
//!
//! Write `ToClients<T>` / `ToServer<T>` messages (a failure comes back as a
//! [`bevy::SendFailed`] message), or use the system parameters
//! [`bevy::ZaoServerSender`] / [`bevy::ZaoClientSender`], which encode a borrowed
//! value straight into the transport and return a `Result`. A
//! [`bevy::SendTarget`] is all, one, all but one, a list, or a room
//! ([`bevy::ZaoServer::join`]); whatever the target, a message is encoded
//! once and its bytes shared.
//!
//! ```
//! use bevy_ecs::prelude::*;
//! use zao::bevy::prelude::*;
//! # #[derive(Clone, Encode, Decode, NetMessage)] #[zao(id = 7)] struct Chat { text: String }
//!
//! const RED: Room = Room::named("red");
//! const BLUE: Room = Room::named("blue");
//!
//! /// A newcomer joins a team's room.
//! fn teams(mut joined: MessageReader<ClientConnected>, mut sender: ZaoServerSender) {
//!     for c in joined.read() {
//!         let team = if c.client.0 % 2 == 0 { RED } else { BLUE };
//!         sender.join(&team, c.client);
//!     }
//! }
//!
//! /// Team chat: each player's line to their team's room.
//! fn team_chat(mut heard: MessageReader<FromClient<Chat>>, mut sender: ZaoServerSender) {
//!     for m in heard.read() {
//!         let room = if m.client.0 % 2 == 0 { RED } else { BLUE };
//!         if let Err(e) = sender.send(&m.message, room) {
//!             eprintln!("chat not sent: {e}");
//!         }
//!     }
//! }
//! # let _ = (teams, team_chat);
//! ```
//!
//! ### Snapshots: quantized, delta-encoded, interpolated
//!
//! A snapshot type with `#[derive(Snapshot)]` (a `#[zao(tick)]` header
//! field and `#[zao(items)]` items of a `#[derive(SnapshotItem)]` type
//! keyed by `#[zao(key)]`) whose fields are quantized
//! ([`wire::QVec3`], [`wire::QAngle`], [`wire::QQuat`], [`wire::QF32`]:
//! a declared range and precision, bit-packed) travels as deltas
//! (docs/WIRE.md §12.10). Register it with
//! [`bevy::AppZaoExt::add_zao_delta_snapshot`]; the server calls
//! [`bevy::ZaoServerSender::send_delta_snapshot`] each tick, and each client gets
//! the tick encoded against the newest snapshot it acknowledged — clients
//! that acknowledged the same one share one encode. A client App reads
//! [`bevy::ZaoSnapshots`]: `interpolated()` gives every entity's state at
//! the render time of a jitter buffer whose delay follows the measured
//! arrival jitter; [`bevy::SnapshotApplied`] messages give each applied
//! chunk raw. BENCHMARKS.md ("Snapshots") measures the bytes and the
//! server's cost.
//!
//! ```
//! use bevy_app::App;
//! use bevy_ecs::prelude::*;
//! use zao::bevy::prelude::*;
//! use zao_messages::{EntitySnapshot, EntityState};
//!
//! /// Both sides: the snapshot type, and the server's tick rate for the
//! /// clients' jitter buffers.
//! fn protocol(app: &mut App) {
//!     app.add_zao_delta_snapshot::<EntitySnapshot>(JitterConfig::from_hz(60.0));
//! }
//!
//! /// Server: the world, once a tick, to everyone.
//! fn broadcast(mut sender: ZaoServerSender, mut tick: Local<u32>) {
//!     *tick += 1;
//!     let world = EntitySnapshot { tick: *tick, entities: vec![] };
//!     let _ = sender.send_delta_snapshot(&world, SendTarget::All);
//! }
//!
//! /// Client: draw every entity where the jitter buffer says it is now.
//! fn draw(snapshots: Res<ZaoSnapshots<EntitySnapshot>>) {
//!     for state in snapshots.interpolated() {
//!         let _: EntityState = state;
//!     }
//! }
//! # protocol(&mut App::new());
//! # let _ = (broadcast, draw);
//! ```
//!
//! ### Listen server
//!
//! A server App can be a player too: with both plugins,
//! [`bevy::ZaoCommandsExt::connect_zao_local`] connects its client to its
//! own server in memory (no socket, no TLS). It gets a client id and an
//! entity like anyone, so the same game systems serve the host and remote
//! players.
//!
//! ### Tests on the simulated network
//!
//! [`bevy::testing::ZaoTestNet`] steps a server App and client Apps over
//! [`sim`] (the real QUIC state machine, on a virtual clock), a link
//! scenario per client, no sockets and no sleeps; the lifecycle commands
//! work there unchanged. The plugin's own tests (`tests/bevy.rs`) run on it.
//!
//! ### Reading the traffic
//!
//! With `RUST_LOG=zao::traffic=trace` (any `tracing` subscriber), every
//! message the plugin sends or receives is logged as readable text
//! (`client 3 → server: Chat { text: "gg" }`), rendered by the inspector
//! only when that level is on.
//!
//! ## Inspector
//!
//! Every type describes its wire form ([`Schema::SHAPE`]), and a
//! [`proto::Protocol`] exports its messages' ids, names, channels,
//! fingerprints and shapes as JSON ([`proto::Protocol::to_json`]) for tools
//! in any language. [`inspect::Inspector`] reads any message of a protocol
//! without its Rust type, under the same [`DecodeLimits`]: as a dynamic
//! [`inspect::Value`], as readable text that reads back to the same bytes
//! (floats bit for bit), and as an annotated hex view. Errors name the byte
//! offset and the field path. [`inspect::CaptureWriter`] records a session
//! to a file (`docs/CAPTURE.md`), and the `zao-inspect` command prints one.
//!
//! ```
//! # #[cfg(feature = "inspect")] {
//! use zao::inspect::Inspector;
//! use zao::proto::{Channel, Direction, Protocol};
//!
//! #[derive(zao::Encode, zao::Decode, zao::NetMessage)]
//! #[zao(id = 3)]
//! struct Hit { target: u32, damage: f32, crit: bool }
//!
//! let mut protocol = Protocol::new();
//! protocol.add::<Hit>(Channel::RELIABLE, Direction::Both);
//! let inspector = Inspector::from_protocol(&protocol);
//!
//! let bytes = inspector.from_text("Hit { target: 9, damage: 12.5, crit: true }")?;
//! assert_eq!(bytes, [3, 9, 0, 0, 0, 0, 0, 0x48, 0x41, 1]);
//! assert_eq!(inspector.to_text(&bytes)?, "Hit { target: 9, damage: 12.5, crit: true }");
//! print!("{}", inspector.annotate(&bytes)); // offset, bytes, field, value
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! `docs/INSPECT.md` specifies the text form and the JSON.
//!
//! ## Cargo features
//!
//! - `derive` (default): `#[derive(Encode, Decode, NetMessage)]`, and the
//!   sans-IO session protocol, [`proto`], whose messages derive them.
//!   Without it (`--no-default-features`), zao is the codec alone:
//!   [`Encode`], [`Decode`], [`Writer`], [`Reader`] and their impls.
//! - `glam` (default): glam 0.33 vectors and quaternions, the glam that Bevy
//!   0.20 uses.
//! - `quic` (default): the transport, [`quic`]: quinn 0.11, rustls with ring,
//!   rcgen development certificates, tokio.
//! - `sim` (default, implies `quic`): the simulated network, [`sim`], on
//!   quinn-proto.
//! - `bevy` (default, implies `quic`): the Bevy 0.20 plugin, [`bevy`], on
//!   bevy_app, bevy_ecs, bevy_state and bevy_time with their default features off.
//! - `inspect` (default): [`inspect`], the inspector and session captures;
//!   no dependency.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

// Lets the derives' `::zao::...` paths resolve inside this crate too.
#[allow(unused_extern_crates)]
extern crate self as zao;

#[cfg(feature = "bevy")]
pub mod bevy;
// Certificates, TLS and QUIC parameters that the quinn transport and the
// simulated network share.
#[cfg(feature = "quic")]
mod endpoint;
#[cfg(feature = "fleet")]
pub mod fleet;
#[cfg(feature = "inspect")]
pub mod inspect;
// The session protocol's own messages derive `Encode`/`Decode`.
#[cfg(feature = "derive")]
pub mod proto;
#[cfg(feature = "quic")]
pub mod quic;
#[cfg(feature = "sim")]
pub mod sim;
pub mod wire;

pub use wire::{
    Decode, DecodeError, DecodeLimits, Encode, EncodeError, NetMessage, Reader, Schema, Sink,
    Writer, decode_message, encode_message, encode_message_to, message_len, split_message,
    varint_len,
};
#[cfg(feature = "derive")]
pub use zao_derive::{Decode, Encode, NetMessage, Snapshot, SnapshotItem};
// zao's own types derive their impls whether or not the feature re-exports
// the derives.
#[cfg(not(feature = "derive"))]
#[allow(unused_imports)]
pub(crate) use zao_derive::{Decode, Encode, NetMessage, Snapshot, SnapshotItem};

/// glam, re-exported: the version Bevy 0.20 uses, whose `Vec3` and `Quat`
/// Zao encodes, so a headless game needs no glam dependency of its own.
#[cfg(feature = "glam")]
pub use glam;

/// zerocopy, re-exported for blittable types: derive its traits with
/// `#[zerocopy(crate = "zao::zerocopy")]` and no direct dependency.
pub use zerocopy;

// The README's code blocks are tested as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// What the derives' generated code needs. Not public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::wire::Then;
    pub use crate::wire::{blit, schema, size, utf8};
    pub use zerocopy;
}
