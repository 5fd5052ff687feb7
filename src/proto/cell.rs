//! A session shared by its driver and the application, as quinn shares a
//! `quinn_proto::Connection`: the application locks it to send or read, then
//! wakes the driver, which locks it to feed QUIC's events in and carry its
//! transmits out.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::Waker;
use std::time::{Duration, Instant};

use super::Session;

/// A [`Session`] behind a lock, with the driver's wake-up.
#[derive(Debug)]
pub(crate) struct SessionCell {
    session: Mutex<Session>,
    /// Signalled by the driver after each drive, for threads that wait on
    /// the session's state ([`wait_until`](Self::wait_until)).
    driven: Condvar,
    waker: Mutex<Option<Waker>>,
    /// The application touched the session since the driver last looked.
    notified: AtomicBool,
    /// Listed in its server's ready queue (it has events for the app).
    pub(crate) ready: AtomicBool,
    /// Its handshake no longer counts against the pending limits.
    pub(crate) handshake_released: AtomicBool,
    /// Its client slot and identity are given back.
    pub(crate) slot_released: AtomicBool,
    /// Server side: its attempt proved its address (a Retry answered), so
    /// its handshake counts in the validated pool of its address.
    pub(crate) validated: AtomicBool,
}

impl SessionCell {
    pub(crate) fn new(session: Session) -> Arc<Self> {
        Arc::new(Self {
            session: Mutex::new(session),
            driven: Condvar::new(),
            waker: Mutex::new(None),
            notified: AtomicBool::new(false),
            ready: AtomicBool::new(false),
            handshake_released: AtomicBool::new(false),
            slot_released: AtomicBool::new(false),
            validated: AtomicBool::new(false),
        })
    }

    /// Locks the session. A panic while it was locked cannot leave it
    /// half-updated in a way that matters more than losing the connection,
    /// so a poisoned lock is taken as is.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Session> {
        self.session.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The driver: the session may have changed (it was fed and drained);
    /// wakes the threads in [`wait_until`](Self::wait_until).
    pub(crate) fn driven(&self) {
        self.driven.notify_all();
    }

    /// Blocks until `done` returns `Some` for the session or `timeout`
    /// passes (`None`), checking after every drive, never by polling.
    pub(crate) fn wait_until<T>(
        &self,
        timeout: Duration,
        mut done: impl FnMut(&Session) -> Option<T>,
    ) -> Option<T> {
        let end = Instant::now() + timeout;
        let mut session = self.lock();
        loop {
            if let Some(found) = done(&session) {
                return Some(found);
            }
            let left = end.checked_duration_since(Instant::now())?;
            session = self
                .driven
                .wait_timeout(session, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Tells the driver the application queued something.
    pub(crate) fn wake(&self) {
        self.notified.store(true, Ordering::Release);
        let waker = self
            .waker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// The driver: registers its waker, then says whether it was woken since
    /// it last asked (registering first, so no wake-up is lost between).
    pub(crate) fn take_notified(&self, waker: Option<&Waker>) -> bool {
        if let Some(waker) = waker {
            *self.waker.lock().unwrap_or_else(PoisonError::into_inner) = Some(waker.clone());
        }
        self.notified.swap(false, Ordering::AcqRel)
    }
}
