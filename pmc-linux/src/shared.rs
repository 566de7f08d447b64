//! What a [`Backend`](crate::Backend) and its PMCs share ([`Shared`]: the system seam, the
//! log's hub, the cached machine facts), and the error of what a counting-only build leaves
//! out. pmc-freebsd's `backend/inner.rs` is its counterpart. A leaf of the backend side:
//! `backend.rs` and `counter/` both use it, it uses neither.

use crate::errno_map::Facts;
#[cfg(feature = "sampling")]
use crate::log::Hub;
use crate::sys::Sys;
#[cfg(not(feature = "sampling"))]
use pmc_core::{Error, ErrorKind, Op};
#[cfg(feature = "sampling")]
use std::sync::Arc;

/// What a backend and its PMCs share.
pub(crate) struct Shared<S: Sys> {
    /// The system calls and `/proc` facts: the kernel, or a fake in tests.
    pub(crate) sys: S,
    /// The sample log and its drain thread.
    #[cfg(feature = "sampling")]
    pub(crate) hub: Arc<Hub>,
    /// Ring data pages for PMCs allocated from now on (0: the default).
    #[cfg(feature = "sampling")]
    pub(crate) ring_pages: std::sync::atomic::AtomicUsize,
    /// The next PMC id in the log.
    #[cfg(feature = "sampling")]
    pub(crate) next_pmc_id: std::sync::atomic::AtomicU32,
    /// The machine's facts (paranoid level, capabilities, limits), probed
    /// at most once a second: they decide attr defaults on the hot
    /// allocate path. Error messages re-probe, so they report the values
    /// at the time of the failure.
    facts: std::sync::Mutex<Option<(std::time::Instant, Facts)>>,
    /// The kernel refused `PERF_FORMAT_LOST` (before Linux 6.0): sampling PMCs are opened
    /// without it, and the lost count may miss what was lost while the drain was held up.
    pub(crate) no_format_lost: std::sync::atomic::AtomicBool,
}

impl<S: Sys> Shared<S> {
    pub(crate) fn new(sys: S) -> Shared<S>
    where
        S: Clone,
    {
        Shared {
            #[cfg(feature = "sampling")]
            hub: Arc::new(Hub::with_sys(Arc::new(sys.clone()))),
            sys,
            #[cfg(feature = "sampling")]
            ring_pages: std::sync::atomic::AtomicUsize::new(0),
            #[cfg(feature = "sampling")]
            next_pmc_id: std::sync::atomic::AtomicU32::new(0),
            facts: std::sync::Mutex::new(None),
            no_format_lost: std::sync::atomic::AtomicBool::new(false),
        }
    }

    pub(crate) fn facts(&self) -> Facts {
        const FRESH: std::time::Duration = std::time::Duration::from_secs(1);
        let Ok(mut cached) = self.facts.lock() else {
            return self.sys.facts();
        };
        match *cached {
            Some((at, f)) if at.elapsed() < FRESH => f,
            _ => {
                let f = self.sys.facts();
                *cached = Some((std::time::Instant::now(), f));
                f
            }
        }
    }
}

/// What a counting-only build (pmc-linux without its `sampling` feature) refuses: sampling,
/// the log flags and the sample log.
#[cfg(not(feature = "sampling"))]
pub(crate) fn not_built(op: Op, what: &str) -> Error {
    Error::new(
        ErrorKind::NotSupported,
        op,
        format!("{what} is not built into this program (pmc-linux without its `sampling` feature)"),
    )
    .with_help(
        "build pmc with its default features (or pmc-linux's `sampling` feature):          `default-features = false` leaves sampling and the sample log out",
    )
}
