//! Session captures (docs/CAPTURE.md): when a server or client config names
//! a file, or the environment does (`ZAO_CAPTURE` for servers,
//! `ZAO_CAPTURE_CLIENT` for clients), every connection's messages go to it,
//! for `zao-inspect` to read later.
//!
//! The file is written by a thread of its own: a connection's driver only
//! hands its session's taps to a bounded queue, so a slow disk never holds
//! the network back. A full queue drops records (counted, and logged once);
//! a capture at its size limit
//! ([`ServerConfig::capture_max_bytes`](super::ServerConfig::capture_max_bytes))
//! stops with a logged reason.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Instant;

use bytes::Bytes;

use crate::inspect::{CaptureWriter, Flow};
use crate::proto::{Channel, Protocol, Role, Session, Tap};

/// The environment variable that makes every server capture to its path.
pub const CAPTURE_ENV: &str = "ZAO_CAPTURE";
/// The environment variable that makes every client capture to its path
/// (`{port}` in it becomes the client's local port, so clients in one
/// process write one file each).
pub const CAPTURE_CLIENT_ENV: &str = "ZAO_CAPTURE_CLIENT";
/// The default size limit of a capture file: 1 GiB.
pub const DEFAULT_CAPTURE_MAX_BYTES: u64 = 1 << 30;

/// Records waiting for the writer thread; more are dropped.
const QUEUE: usize = 8192;

/// A capture file shared by an endpoint's connection drivers.
pub(crate) type Capture = Arc<CaptureHandle>;

/// What the writer thread writes.
enum Entry {
    Message {
        time: Instant,
        connection: u64,
        flow: Flow,
        channel: Channel,
        message: Bytes,
    },
    Connected {
        time: Instant,
        connection: u64,
        peer: String,
    },
    Disconnected {
        time: Instant,
        connection: u64,
        reason: String,
    },
}

/// The drivers' side of a capture: the queue to the writer thread.
#[derive(Debug)]
pub(crate) struct CaptureHandle {
    queue: Mutex<Option<SyncSender<Entry>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    dropped: AtomicU64,
    path: PathBuf,
}

impl Drop for CaptureHandle {
    /// The last driver and the endpoint are gone: the writer thread writes
    /// what is queued, flushes and exits on its own.
    fn drop(&mut self) {
        drop(
            self.queue
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
    }
}

/// The capture an endpoint writes: the config's path, else the
/// environment's; `None` for neither.
pub(crate) fn open(
    configured: Option<&Path>,
    max_bytes: u64,
    role: Role,
    port: u16,
    protocol: &Protocol,
) -> std::io::Result<Option<Capture>> {
    let env = match role {
        Role::Server => CAPTURE_ENV,
        Role::Client => CAPTURE_CLIENT_ENV,
    };
    let path = match configured {
        Some(path) => path.to_owned(),
        None => match std::env::var_os(env) {
            Some(path) => {
                PathBuf::from(path.to_string_lossy().replace("{port}", &port.to_string()))
            }
            None => return Ok(None),
        },
    };
    let writer = CaptureWriter::create(&path, protocol, role)?.with_max_bytes(max_bytes);
    tracing::info!(path = %path.display(), max_bytes, "zao: capturing to a file");
    let (queue, entries) = sync_channel(QUEUE);
    let thread = std::thread::Builder::new()
        .name("zao-capture".to_owned())
        .spawn({
            let path = path.clone();
            move || write_entries(writer, &entries, &path)
        })?;
    Ok(Some(Arc::new(CaptureHandle {
        queue: Mutex::new(Some(queue)),
        thread: Mutex::new(Some(thread)),
        dropped: AtomicU64::new(0),
        path,
    })))
}

/// The writer thread: every entry until the drivers are gone, then a flush.
fn write_entries(
    mut writer: CaptureWriter<BufWriter<File>>,
    entries: &Receiver<Entry>,
    path: &Path,
) {
    let mut stopped = false;
    for entry in entries {
        if stopped {
            continue; // drained, so the drivers' sends never block
        }
        let result = match entry {
            Entry::Message {
                time,
                connection,
                flow,
                channel,
                message,
            } => writer.message(time, connection, flow, channel, &message),
            Entry::Connected {
                time,
                connection,
                peer,
            } => writer.connected(time, connection, &peer),
            Entry::Disconnected {
                time,
                connection,
                reason,
            } => writer
                .disconnected(time, connection, &reason)
                .and_then(|()| writer.flush()),
        };
        if let Err(e) = result {
            tracing::warn!(path = %path.display(), "zao: capture stopped: {e}");
            stopped = true;
            let _ = writer.flush();
        }
    }
    if let Err(e) = writer.flush() {
        tracing::warn!(path = %path.display(), "zao: capture flush failed: {e}");
    }
}

/// Hands what the session tapped since the last call to the writer thread.
pub(crate) fn record(capture: &Capture, session: &mut Session, now: Instant) {
    let connection = session.client_id().map_or(0, |c| c.0);
    let role = session.role();
    let peer = session.peer();
    let mut taps = core::iter::from_fn(|| session.poll_tap()).peekable();
    if taps.peek().is_none() {
        return;
    }
    let queue = capture.queue.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(queue) = queue.as_ref() else {
        return; // finished: the endpoint is stopping
    };
    for tap in taps {
        let entry = match tap {
            Tap::Message {
                sent,
                channel,
                message,
            } => Entry::Message {
                time: now,
                connection,
                flow: match (role, sent) {
                    (Role::Server, true) | (Role::Client, false) => Flow::ServerToClient,
                    _ => Flow::ClientToServer,
                },
                channel,
                message,
            },
            Tap::Connected => Entry::Connected {
                time: now,
                connection,
                peer: peer.to_string(),
            },
            Tap::Closed(reason) => Entry::Disconnected {
                time: now,
                connection,
                reason,
            },
        };
        match queue.try_send(entry) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                if capture.dropped.fetch_add(1, Ordering::Relaxed) == 0 {
                    tracing::warn!(
                        path = %capture.path.display(),
                        "zao: the capture cannot keep up; records are dropped"
                    );
                }
            }
            Err(TrySendError::Disconnected(_)) => return,
        }
    }
}

/// Ends the capture (the endpoint stopped): the writer thread writes what
/// is queued, flushes and exits; with `wait`, this returns once it has.
pub(crate) fn finish(capture: &Capture, wait: bool) {
    drop(
        capture
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take(),
    );
    let dropped = capture.dropped.load(Ordering::Relaxed);
    if dropped > 0 {
        tracing::warn!(
            path = %capture.path.display(),
            dropped,
            "zao: the capture missed records its writer could not keep up with"
        );
    }
    let thread = capture
        .thread
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    if wait && let Some(thread) = thread {
        let _ = thread.join();
    }
}
