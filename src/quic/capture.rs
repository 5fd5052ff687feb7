//! Session captures (docs/CAPTURE.md): when a server or client config names
//! a file, or the environment does (`ZAO_CAPTURE` for servers,
//! `ZAO_CAPTURE_CLIENT` for clients), every connection's messages go to it,
//! for `zao-inspect` to read later.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use crate::inspect::{CaptureWriter, Flow};
use crate::proto::{Protocol, Role, Session, Tap};

/// The environment variable that makes every server capture to its path.
pub const CAPTURE_ENV: &str = "ZAO_CAPTURE";
/// The environment variable that makes every client capture to its path
/// (`{port}` in it becomes the client's local port, so clients in one
/// process write one file each).
pub const CAPTURE_CLIENT_ENV: &str = "ZAO_CAPTURE_CLIENT";

/// A capture file shared by an endpoint's connection drivers.
pub(crate) type Capture = Arc<Mutex<CaptureWriter<BufWriter<File>>>>;

/// The capture an endpoint writes: the config's path, else the
/// environment's; `None` for neither.
pub(crate) fn open(
    configured: Option<&Path>,
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
    let writer = CaptureWriter::create(&path, protocol, role)?;
    tracing::info!(path = %path.display(), "zao: capturing to a file");
    Ok(Some(Arc::new(Mutex::new(writer))))
}

/// Writes what the session tapped since the last call.
pub(crate) fn record(capture: &Capture, session: &mut Session, now: Instant) {
    let taps: Vec<Tap> = core::iter::from_fn(|| session.poll_tap()).collect();
    if taps.is_empty() {
        return;
    }
    let connection = session.client_id().map_or(0, |c| c.0);
    let role = session.role();
    let peer = session.peer().to_string();
    let mut writer = capture.lock().unwrap_or_else(PoisonError::into_inner);
    for tap in taps {
        let result = match tap {
            Tap::Message {
                sent,
                channel,
                message,
            } => {
                let flow = match (role, sent) {
                    (Role::Server, true) | (Role::Client, false) => Flow::ServerToClient,
                    _ => Flow::ClientToServer,
                };
                writer.message(now, connection, flow, channel, &message)
            }
            Tap::Connected => writer.connected(now, connection, &peer),
            Tap::Closed(reason) => {
                let r = writer.disconnected(now, connection, &reason);
                r.and_then(|()| writer.flush())
            }
        };
        if let Err(e) = result {
            tracing::warn!("zao: capture write failed: {e}");
        }
    }
}

/// Flushes the capture (the endpoint stops).
pub(crate) fn flush(capture: &Capture) {
    let mut writer = capture.lock().unwrap_or_else(PoisonError::into_inner);
    if let Err(e) = writer.flush() {
        tracing::warn!("zao: capture flush failed: {e}");
    }
}
