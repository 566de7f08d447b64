//! The log hub: the writer, the registered rings, and the drain thread.
//!
//! `mod.rs` holds the hub's state ([`Hub`], `HubState`) and the drain thread's loop;
//! `calls.rs` the backend's calls, `state.rs` the drain pass and the writes under the lock,
//! `samples.rs` a record's way from its ring to the log, `lost.rs` the kernel's lost counts,
//! `error.rs` the errors, `backlog.rs` the passes deferred while sampling goes on.

mod backlog;
mod calls;
mod error;
mod lost;
mod samples;
mod state;
#[cfg(test)]
mod tests;

pub(crate) use self::backlog::BacklogBound;
use self::error::LogFailure;
use super::post::PostChain;
use super::reorder::Reorder;
use super::source::RingSource;
use super::spool::{Spool, SpoolHandle, Unwritten};
use super::synth::Synth;
use super::{SamplingDetails, DRAIN_PERIOD};
use crate::sys::{RealSys, Sys};
use pmc_log::record as log;
use std::collections::HashSet;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// The backend's log: the writer, the registered rings, and the drain thread.
#[derive(Debug, Default)]
pub(crate) struct Hub {
    state: Mutex<HubState>,
    /// The spool's bound for logs configured from now on (0: [`DEFAULT_SPOOL_BYTES`](super::spool::DEFAULT_SPOOL_BYTES)).
    spool_bytes: AtomicUsize,
    /// The backlog's bound for logs configured from now on.
    backlog: Mutex<backlog::BacklogBound>,
}

#[derive(Default)]
struct HubState {
    writer: Option<pmc_log::Writer<Spool>>,
    rings: Vec<RingSource>,
    /// Descriptors of registered PMCs, written again at the start of a replacement log.
    descriptors: Vec<log::PmcDescriptor<'static>>,
    synthesized: HashSet<u32>,
    /// What each registered PMC (by token) had synthesized, to repeat in a replacement log.
    bookkeeping: Vec<(u32, Synth, bool)>,
    summary: SamplingDetails,
    thread: Option<std::thread::JoinHandle<()>>,
    stop: Option<Arc<AtomicBool>>,
    /// Write end of the drain thread's wake-up socket.
    waker: Option<UnixStream>,
    /// The first error writing the log; the log takes nothing more after it. Reported by
    /// `log_error` (as soon as the drain thread meets it), flush_log and close_log.
    error: Option<LogFailure>,
    /// Records drained but not yet written, for time order across rings (see [`Reorder`]).
    reorder: Reorder,
    /// The bookkeeping jobs that follow the records: log-procexit, log-proccsw, DWARF
    /// unwinding (see [`super::post`]).
    post: PostChain,
    /// The log's spool (between the writer and the sink): what it could not write.
    spool: Option<SpoolHandle>,
    /// The spool's counts already in the summary.
    spool_seen: Unwritten,
    /// How long the log's close waits for a sink that takes nothing (see
    /// [`Hub::set_close_wait`]).
    close_wait: Option<std::time::Duration>,
    /// Drain passes kept as raw ring bytes, decoded later (see [`backlog`]).
    backlog: backlog::Backlog,
    /// The backend's door to the system: the clock, `/proc` for synthesis, `poll`, and the
    /// kernel's lost counts read at each drain pass.
    sys: HubSys,
}

/// The hub's post-processors, in the order they run: log-procexit (its counting half takes
/// `READ`s as they are drained), log-proccsw (takes switch groups' samples as they are
/// drained), then the unwinding stage. (At the reorder output only the unwinding stage
/// rewrites records and only log-procexit emits records, so their order there does not
/// matter.)
impl Default for PostChain {
    fn default() -> Self {
        PostChain(vec![
            Box::new(super::procexit::ProcExit::default()),
            Box::new(super::proccsw::ProcCsw::default()),
            Box::new(super::unwind::Stage::default()),
        ])
    }
}

/// The backend's [`Sys`] as the hub holds it (the real system until [`Hub::with_sys`] sets it).
#[derive(Clone)]
struct HubSys(Arc<dyn Sys>);

impl Default for HubSys {
    fn default() -> Self {
        HubSys(Arc::new(RealSys))
    }
}

impl std::fmt::Debug for HubState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubState")
            .field("log", &self.writer.is_some())
            .field("rings", &self.rings.len())
            .field("summary", &self.summary)
            .finish_non_exhaustive()
    }
}

/// Error collection: writes `rec` if there is a log; the first write error is kept in
/// `error` (the writer takes nothing after it, and counts what it dropped).
pub(super) fn write_log<W: std::io::Write>(
    writer: &mut Option<pmc_log::Writer<W>>,
    error: &mut Option<LogFailure>,
    rec: &log::Record<'_>,
) {
    if let Some(w) = writer.as_mut() {
        if let Err(e) = w.write(rec) {
            LogFailure::note(error, &e);
        }
    }
}

/// The log's writer as the reorder buffer's output ([`samples::Out`]): [`write_log`], and
/// samples no post-processor changed written as they are
/// ([`pmc_log::Writer::write_sample`]).
pub(super) struct ToLog<'a, W: std::io::Write> {
    pub(super) writer: &'a mut Option<pmc_log::Writer<W>>,
    pub(super) error: &'a mut Option<LogFailure>,
}

impl<W: std::io::Write> samples::Out for ToLog<'_, W> {
    fn record(&mut self, r: &log::Record<'_>) {
        write_log(self.writer, self.error, r);
    }
    fn sample(&mut self, s: &log::Sample<'_>) {
        if let Some(w) = self.writer.as_mut() {
            if let Err(e) = w.write_sample(s) {
                LogFailure::note(self.error, &e);
            }
        }
    }
}

fn drain_loop(hub: &Weak<Hub>, stop: &AtomicBool, wake: &UnixStream) {
    let timeout = i32::try_from(DRAIN_PERIOD.as_millis()).unwrap_or(100);
    loop {
        let (sys, fds): (HubSys, Vec<Arc<OwnedFd>>) = {
            let Some(h) = hub.upgrade() else { return };
            let Ok(st) = h.state.lock() else { return };
            let fds = st
                .rings
                .iter()
                .filter(|r| !r.hung_up)
                .map(|r| r.poll_fd.clone())
                .collect();
            (st.sys.clone(), fds)
        };
        // The wake-up socket first, then the rings.
        let borrowed: Vec<BorrowedFd<'_>> = std::iter::once(wake.as_fd())
            .chain(fds.iter().map(|f| f.as_fd()))
            .collect();
        let revents = match sys.0.poll(&borrowed, timeout) {
            Ok(r) => r.into_iter().skip(1).collect(),
            Err(_) => {
                std::thread::sleep(DRAIN_PERIOD);
                Vec::new()
            }
        };
        if stop.load(Ordering::Acquire) {
            return;
        }
        let Some(h) = hub.upgrade() else { return };
        let Ok(mut st) = h.state.lock() else { return };
        // An event whose task exited reports POLLHUP forever: stop polling it (its ring is still
        // drained every round).
        for (fd, ev) in fds.iter().zip(&revents) {
            if ev & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
                for r in st.rings.iter_mut() {
                    if Arc::ptr_eq(&r.poll_fd, fd) {
                        r.hung_up = true;
                    }
                }
            }
        }
        st.periodic_pass();
    }
}
