//! SIGTERM, the signal every orchestrator stops a process with (Kubernetes
//! sends it, then SIGKILL after `terminationGracePeriodSeconds`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Watches for SIGTERM from a thread of its own: once it arrives,
/// [`received`](Self::received) says so, and the process no longer dies
/// of it (the game drains, then exits). Dropping the watcher stops its
/// thread; SIGTERM then stays caught (and ignored) for the process's life.
#[derive(Debug)]
pub struct ShutdownSignal {
    received: Arc<AtomicBool>,
    _stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl ShutdownSignal {
    /// Starts watching; `None` where there is no SIGTERM (not Unix) or the
    /// handler could not be installed (logged).
    #[must_use]
    pub fn sigterm() -> Option<Self> {
        #[cfg(unix)]
        {
            let received = Arc::new(AtomicBool::new(false));
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let (installed, install) = std::sync::mpsc::sync_channel::<bool>(1);
            let flag = received.clone();
            let spawned = std::thread::Builder::new()
                .name("zao-sigterm".into())
                .spawn(move || watch(&flag, &installed, stopped));
            if let Err(e) = spawned {
                tracing::warn!("zao fleet: no SIGTERM watcher: {e}");
                return None;
            }
            // Installed before this returns: a SIGTERM from now on drains.
            if install.recv() != Ok(true) {
                return None;
            }
            Some(Self {
                received,
                _stop: Some(stop),
            })
        }
        #[cfg(not(unix))]
        None
    }

    /// Whether SIGTERM arrived.
    #[must_use]
    pub fn received(&self) -> bool {
        self.received.load(Ordering::Acquire)
    }
}

#[cfg(unix)]
fn watch(
    flag: &AtomicBool,
    installed: &std::sync::mpsc::SyncSender<bool>,
    stopped: tokio::sync::oneshot::Receiver<()>,
) {
    use tokio::signal::unix::{SignalKind, signal};
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            tracing::warn!("zao fleet: no SIGTERM watcher: {e}");
            let _ = installed.send(false);
            return;
        }
    };
    runtime.block_on(async {
        let mut term = match signal(SignalKind::terminate()) {
            Ok(term) => term,
            Err(e) => {
                tracing::warn!("zao fleet: no SIGTERM handler: {e}");
                let _ = installed.send(false);
                return;
            }
        };
        let _ = installed.send(true);
        tokio::select! {
            _ = term.recv() => {
                tracing::info!("zao fleet: SIGTERM: draining");
                flag.store(true, Ordering::Release);
            }
            _ = stopped => {}
        }
    });
}
