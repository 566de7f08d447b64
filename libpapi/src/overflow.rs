//! Overflow delivery: the samples of a set's sampling counters become
//! calls of its `PAPI_overflow` handler.
//!
//! PAPI's perf_event component takes a signal at each overflow and calls
//! the handler in the signal handler. pmc delivers samples to the process
//! through its ring buffers instead, so the library drains them: a poller
//! thread every [`POLL`] while some set samples, and `PAPI_stop` before it
//! returns (every overflow of a run is delivered by then). The handler
//! runs on the poller thread or in `PAPI_stop`, never inside a signal
//! handler, with the library's lock released (it may call PAPI), and with
//! `context` NULL; `address` is the sampled instruction address.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::eventset::OverflowCall;

/// How often the poller drains.
pub(crate) const POLL: Duration = Duration::from_millis(5);

static POLLING: AtomicBool = AtomicBool::new(false);

/// Starts the poller unless it runs.
pub(crate) fn ensure_poller() {
    if POLLING.swap(true, Ordering::SeqCst) {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("papi-overflow".into())
        .spawn(|| loop {
            std::thread::sleep(POLL);
            match crate::state::pending_overflows() {
                Some(calls) => deliver(&calls),
                None => {
                    POLLING.store(false, Ordering::SeqCst);
                    // A set may have started sampling between the last
                    // round and the store: it found POLLING set and did
                    // not start a poller, so look once more.
                    match crate::state::pending_overflows() {
                        Some(calls) if !POLLING.swap(true, Ordering::SeqCst) => deliver(&calls),
                        _ => return,
                    }
                }
            }
        });
    if spawned.is_err() {
        POLLING.store(false, Ordering::SeqCst);
    }
}

/// Calls the handlers, in order.
pub(crate) fn deliver(calls: &[OverflowCall]) {
    for c in calls {
        crate::sys::call_handler(c);
    }
}
