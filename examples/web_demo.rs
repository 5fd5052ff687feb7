//! Browsers and native clients in one world: a Zao server that takes
//! WebTransport (a page in Chromium) and raw QUIC (native bots in this
//! process) on one UDP port, broadcasting the demos' world as delta
//! snapshots at a fixed tick, and a page served on localhost that draws it.
//!
//! ```sh
//! (cd clients/ts && npm ci)   # once: builds the page's JavaScript
//! cargo run --release --example web_demo
//! ```
//!
//! Then open the printed `http://127.0.0.1:…/` in Chromium (or Chrome,
//! Edge: a browser with WebTransport). The page fetches the certificate
//! hash from this server, pins it, connects, and draws the entities with
//! RTT, bytes per second, snapshots applied and the jitter buffer's delay.
//!
//! Flags: `--udp-port N`, `--http-port N` (0: any free one), `--entities N`
//! (256), `--hz N` (60), `--native-bots N` (1), `--seconds N` (0: until
//! stopped). It prints `ZAO_WEB_DEMO {json}` when ready and
//! `ZAO_WEB_STATS {json}` once a second (the browser test reads both):
//! every client with its transport, RTT and bytes per second.
//!
//! Every client message is answered: `PlayerMoved`, `SpawnEntity` and
//! `Inventory` are echoed to their sender, a `PlayerInput` gets a
//! `PlayerMoved` whose entity is `0x8000_0000 | tick`; every 30 ticks a
//! full `WorldSnapshot` goes out beside the deltas.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use glam::Vec3;
use zao::proto::{Channel, ClientEvent, DeltaReceiver, ServerEvent, Target};
use zao::quic::{CertHash, Client, ClientConfig, ClientId, Server, ServerConfig};
use zao_messages::{
    EntitySnapshot, GameMessage, PlayerMoved, WorldSnapshot, demo_world, samples, web_protocol,
};

struct Settings {
    udp_port: u16,
    http_port: u16,
    entities: usize,
    hz: u32,
    bots: usize,
    seconds: u64,
}

fn settings() -> Result<Settings, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |flag: &str, default: u64| -> Result<u64, String> {
        match args.iter().position(|a| a == flag) {
            None => Ok(default),
            Some(i) => args
                .get(i + 1)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{flag} takes a number")),
        }
    };
    for arg in args.iter().filter(|a| a.starts_with("--")) {
        if ![
            "--udp-port",
            "--http-port",
            "--entities",
            "--hz",
            "--native-bots",
            "--seconds",
        ]
        .contains(&arg.as_str())
        {
            return Err(format!("unknown flag {arg}"));
        }
    }
    Ok(Settings {
        udp_port: u16::try_from(number("--udp-port", 0)?).map_err(|e| e.to_string())?,
        http_port: u16::try_from(number("--http-port", 0)?).map_err(|e| e.to_string())?,
        entities: usize::try_from(number("--entities", 256)?).map_err(|e| e.to_string())?,
        hz: u32::try_from(number("--hz", 60)?.max(1)).map_err(|e| e.to_string())?,
        bots: usize::try_from(number("--native-bots", 1)?).map_err(|e| e.to_string())?,
        seconds: number("--seconds", 0)?,
    })
}

fn main() {
    let settings = match settings() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("web_demo: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&settings) {
        eprintln!("web_demo: {e}");
        std::process::exit(1);
    }
}

fn run(settings: &Settings) -> Result<(), Box<dyn std::error::Error>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/ts");
    if !root.join("dist/src/index.js").exists() {
        eprintln!(
            "web_demo: the page's JavaScript is not built: run `npm ci` in clients/ts (the page will not load until then)"
        );
    }
    let bind = SocketAddr::from(([127, 0, 0, 1], settings.udp_port));
    let mut server = Server::start(ServerConfig::development(bind, web_protocol())?)?;
    let udp = server.local_addr();
    let hashes = Arc::new(Mutex::new(server.certificate_hashes()));
    let http = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], settings.http_port)))?;
    let http_addr = http.local_addr()?;
    {
        let hashes = hashes.clone();
        std::thread::Builder::new()
            .name("web_demo-http".into())
            .spawn(move || serve_pages(&http, &root, &hashes, udp.port()))?;
    }
    let mut bots: Vec<Bot> = (0..settings.bots)
        .map(|_| Bot::connect(udp, server.certificate_hash()))
        .collect::<Result<_, _>>()?;
    println!(
        "ZAO_WEB_DEMO {{\"page\":\"http://{http_addr}/\",\"webtransport\":\"https://{udp}/\",\"certificate\":\"http://{http_addr}{}\"}}",
        zao::quic::CERTIFICATE_PATH
    );
    eprintln!("web_demo: open http://{http_addr}/ in Chromium (WebTransport on udp {udp})");
    std::io::stdout().flush()?;

    let period = Duration::from_secs(1) / settings.hz;
    let start = Instant::now();
    let mut next_stats = start + Duration::from_secs(1);
    let mut sent: BTreeMap<ClientId, u64> = BTreeMap::new();
    let mut tick: u32 = 0;
    loop {
        let due = start + period * tick;
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
        answer(&mut server);
        let world = demo_world(tick, settings.entities);
        server.send_delta_snapshot(Target::All, &world)?;
        for client in server.clients() {
            *sent.entry(client).or_default() += 1;
        }
        if tick.is_multiple_of(30) {
            let full = WorldSnapshot {
                tick,
                ..samples::world_snapshot(8)
            };
            server.send_snapshot(Target::All, &full)?;
        }
        server.flush();
        for bot in &mut bots {
            bot.poll(tick);
        }
        if Instant::now() >= next_stats {
            next_stats += Duration::from_secs(1);
            *hashes.lock().unwrap_or_else(PoisonError::into_inner) = server.certificate_hashes();
            print_stats(&server, tick, &sent);
        }
        tick += 1;
        if settings.seconds > 0 && start.elapsed() >= Duration::from_secs(settings.seconds) {
            break;
        }
    }
    for bot in bots {
        bot.client.shutdown();
    }
    server.shutdown();
    Ok(())
}

/// Answers every client message: echoes, and a `PlayerMoved` for each
/// `PlayerInput`.
fn answer(server: &mut Server) {
    while let Some(event) = server.poll_event() {
        let ServerEvent::Message {
            client, message, ..
        } = event
        else {
            continue;
        };
        let target = Target::One(client);
        let result = match GameMessage::decode(message.message()) {
            Ok(GameMessage::PlayerMoved(m)) => server.send(target, Channel::UNRELIABLE, &m),
            Ok(GameMessage::SpawnEntity(m)) => server.send(target, Channel::RELIABLE, &m),
            Ok(GameMessage::Inventory(m)) => server.send(target, Channel::RELIABLE, &m),
            Ok(GameMessage::PlayerInput(input)) => server.send(
                target,
                Channel::UNRELIABLE,
                &PlayerMoved {
                    entity: 0x8000_0000 | input.tick,
                    position: Vec3::ZERO,
                },
            ),
            _ => Ok(()),
        };
        if let Err(e) = result {
            eprintln!("web_demo: answer to {client} not sent: {e}");
        }
    }
}

/// One `ZAO_WEB_STATS` line: every client, its transport and figures.
fn print_stats(server: &Server, tick: u32, sent: &BTreeMap<ClientId, u64>) {
    let clients: Vec<String> = server
        .clients()
        .into_iter()
        .filter_map(|id| {
            let stats = server.stats(id)?;
            Some(format!(
                "{{\"id\":{},\"transport\":\"{}\",\"rtt_ms\":{:.2},\"bytes_out_per_s\":{:.0},\"snapshots_sent\":{}}}",
                id.0,
                stats.transport,
                stats.rtt.as_secs_f64() * 1e3,
                stats.bytes_out_per_sec,
                sent.get(&id).copied().unwrap_or(0)
            ))
        })
        .collect();
    println!(
        "ZAO_WEB_STATS {{\"tick\":{tick},\"clients\":[{}]}}",
        clients.join(",")
    );
    let _ = std::io::stdout().flush();
}

/// A native client in the same world: it applies the delta snapshots,
/// acks them, and moves.
struct Bot {
    client: Client,
    receiver: DeltaReceiver<EntitySnapshot>,
    acked: u64,
}

impl Bot {
    fn connect(server: SocketAddr, hash: CertHash) -> Result<Self, zao::quic::StartError> {
        let client = Client::connect(ClientConfig::pinned(server, hash, web_protocol()))?;
        Ok(Self {
            client,
            receiver: DeltaReceiver::new(),
            acked: 0,
        })
    }

    fn poll(&mut self, tick: u32) {
        while let Some(event) = self.client.poll_event() {
            if let ClientEvent::Disconnected { reason } = event {
                eprintln!("web_demo: a native bot left: {reason}");
            }
        }
        while let Some(chunk) = self.client.poll_snapshot() {
            let _ = self.receiver.handle_chunk(&chunk);
        }
        let ack = self.receiver.ack();
        if ack.newest != self.acked && self.client.send_acks(&[ack]).is_ok() {
            self.acked = ack.newest;
        }
        if self.client.is_connected() && tick.is_multiple_of(6) {
            let moved = PlayerMoved {
                entity: 0x4000_0000 | self.client.id().map_or(0, |id| id.0 as u32),
                position: Vec3::new((tick % 100) as f32, 0.0, 0.0),
            };
            let _ = self.client.send(Channel::UNRELIABLE, &moved);
            self.client.flush();
        }
    }
}

/// The page's HTTP server: static files from `clients/ts` and the
/// certificate hashes, one request per connection.
fn serve_pages(
    listener: &TcpListener,
    root: &Path,
    hashes: &Arc<Mutex<Vec<CertHash>>>,
    udp_port: u16,
) {
    for stream in listener.incoming().flatten() {
        let root = root.to_owned();
        let hashes = hashes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        std::thread::spawn(move || {
            let _ = serve_one(stream, &root, &hashes, udp_port);
        });
    }
}

fn serve_one(
    mut stream: TcpStream,
    root: &Path,
    hashes: &[CertHash],
    udp_port: u16,
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut line = String::new();
    let mut reader = BufReader::new(stream.try_clone()?);
    reader.read_line(&mut line)?;
    // The rest of the head is read and ignored.
    let mut header = String::new();
    while reader.read_line(&mut header)? > 2 {
        header.clear();
    }
    let path = line.split(' ').nth(1).unwrap_or("/");
    let path = path.split('?').next().unwrap_or("/");
    let (status, kind, body) = if path == zao::quic::CERTIFICATE_PATH {
        let list: Vec<String> = hashes.iter().map(|h| format!("\"{h}\"")).collect();
        let json = format!("{{\"hashes\":[{}],\"port\":{udp_port}}}", list.join(","));
        ("200 OK", "application/json", json.into_bytes())
    } else {
        match file_for(root, path).and_then(|p| std::fs::read(&p).ok().map(|b| (p, b))) {
            Some((file, body)) => ("200 OK", content_type(&file), body),
            None => ("404 Not Found", "text/plain", b"not found".to_vec()),
        }
    };
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    stream.write_all(&body)?;
    stream.flush()
}

/// The file a request path names: `/` the page, `/web/…` and `/dist/…`
/// under `clients/ts`; nothing else, and never a path that climbs out.
fn file_for(root: &Path, path: &str) -> Option<PathBuf> {
    if path == "/" {
        return Some(root.join("web/index.html"));
    }
    let rest = path.strip_prefix('/')?;
    if !(rest.starts_with("web/") || rest.starts_with("dist/")) {
        return None;
    }
    if rest
        .split('/')
        .any(|part| part.is_empty() || part == "." || part == "..")
    {
        return None;
    }
    Some(root.join(rest))
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript",
        Some("json") => "application/json",
        Some("css") => "text/css",
        Some("png") => "image/png",
        _ => "application/octet-stream",
    }
}
