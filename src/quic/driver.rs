//! One driver task per connection: the pump of `zao::proto` over the quinn
//! adapter ([`QuinnLink`]), stepped whenever quinn, the session's timer or
//! the application wakes the task, as quinn's own `ConnectionDriver` is for
//! quinn-proto. Nothing here decides anything: this only waits.

use std::future::poll_fn;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use super::link::{InputWake, QuinnLink, Web};
use crate::endpoint::Pinned;
use crate::proto::ServerShared;
use crate::proto::SessionCell;
use crate::proto::pump::Pump;

/// Steps in one poll before the task yields to others (a busy connection
/// must not starve the rest of the runtime).
const STEPS_PER_POLL: usize = 16;

/// Where a driver records the session's messages, if anywhere.
#[cfg(feature = "inspect")]
pub(crate) type Capture = Option<super::capture::Capture>;
/// Captures need the `inspect` feature.
#[cfg(not(feature = "inspect"))]
pub(crate) type Capture = Option<NoCapture>;

/// No capture can exist without the `inspect` feature (like `Infallible`,
/// but cloned as a capture handle is, so the code reads the same).
#[cfg(not(feature = "inspect"))]
#[derive(Clone, Debug)]
pub(crate) enum NoCapture {}

/// Drives the connection of `connecting` with the session in `cell` (and,
/// on a server, its admission in `server`) until both are done; `pinned`
/// for a client that pins the server's certificate; `web` for WebTransport.
pub(crate) async fn drive(
    connecting: quinn::Connecting,
    pinned: Pinned,
    cell: Arc<SessionCell>,
    server: Option<Arc<ServerShared>>,
    #[cfg_attr(not(feature = "inspect"), allow(unused_variables))] capture: Capture,
    web: Web,
) {
    let input = InputWake::new();
    let io = Waker::from(input.clone());
    let mut link = QuinnLink::new(connecting, pinned, input.clone(), web);
    let mut pump = Pump::new(cell.clone(), server);
    // The session's next timer, re-armed only when it moves.
    let mut timer = Box::pin(tokio::time::sleep(Duration::from_secs(3600)));
    let mut armed: Option<Instant> = None;
    poll_fn(|cx| {
        input.set_task(cx.waker());
        // quinn wakes `io`, which says so, then wakes this task.
        let mut io_cx = Context::from_waker(&io);
        for _ in 0..STEPS_PER_POLL {
            // Registered before the step, so an application wake during it
            // schedules this task again.
            let _ = cell.take_notified(Some(cx.waker()));
            let now = Instant::now();
            let step = pump.step(now, &mut io_cx, &mut link);
            #[cfg(feature = "inspect")]
            if let Some(capture) = &capture {
                super::capture::record(capture, &mut cell.lock(), now);
            }
            if step.done {
                return Poll::Ready(());
            }
            if step.busy {
                continue;
            }
            if let Some(at) = step.wake_at {
                if armed != Some(at) {
                    armed = Some(at);
                    timer.as_mut().reset(at.into());
                }
                if timer.as_mut().poll(cx).is_ready() {
                    armed = None;
                    continue;
                }
            }
            return Poll::Pending;
        }
        // Bounded: come back after others had their turn.
        cx.waker().wake_by_ref();
        Poll::Pending
    })
    .await;
}
