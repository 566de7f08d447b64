//! The log hub: the writer, the registered rings, and the drain thread.

use super::convert::{sample_frames, sample_head, to_i32, to_log};
use super::post::{Flow, HubEvent, PostChain};
use super::reorder::{Reorder, REORDER_SLACK_NS};
use super::source::{drain_ring, kernel_lost, Drained, RingMeta, RingSource};
use super::spool::{Spool, SpoolHandle, Unwritten, DEFAULT_SPOOL_BYTES};
use super::synth::{all_pids, host_header, kernel_map, synthesize, Synth};
use super::{now, SamplingDetails, DRAIN_PERIOD};
use crate::record::Record;
use crate::sys::{RealSys, Sys};
use pmc_core::{Error, ErrorKind, LogSink, Op, Result};
use pmc_log::record as log;
use std::collections::HashSet;
use std::io::Write as _;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// The backend's log: the writer, the registered rings, and the drain thread.
#[derive(Debug, Default)]
pub(crate) struct Hub {
    state: Mutex<HubState>,
    /// The spool's bound for logs configured from now on (0: [`DEFAULT_SPOOL_BYTES`]).
    spool_bytes: AtomicUsize,
}

#[derive(Default)]
struct HubState {
    writer: Option<pmc_log::Writer<LogSink>>,
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

fn poisoned() -> Error {
    Error::new(
        ErrorKind::Os,
        Op::Log,
        "the log lock was poisoned by a panic in another thread",
    )
}

pub(crate) fn no_log() -> Error {
    Error::new(ErrorKind::InvalidState, Op::Log, "no log is configured")
        .with_help("call configure_log first")
}

fn write_error(e: &pmc_log::WriteError) -> Error {
    LogFailure::from(e).to_error()
}

/// The first error writing the log, kept so that it can be reported again (by `log_error`,
/// `flush_log` and `close_log`) with its errno and `io::ErrorKind`.
#[derive(Debug, Clone)]
pub(super) struct LogFailure {
    message: String,
    errno: Option<i32>,
    kind: Option<std::io::ErrorKind>,
}

impl From<&pmc_log::WriteError> for LogFailure {
    fn from(e: &pmc_log::WriteError) -> Self {
        let (message, errno) = match e {
            // The errno's text follows in the error's display.
            pmc_log::WriteError::Io(io) if io.raw_os_error().is_some() => {
                (String::new(), io.raw_os_error())
            }
            pmc_log::WriteError::Io(io) => (format!(": {io}"), None),
            e => (format!(": {e}"), None),
        };
        LogFailure {
            message,
            errno,
            kind: e.io_kind(),
        }
    }
}

impl LogFailure {
    /// The error: the kind of the sink's `io::Error` ([`ErrorKind::of_io`]: `Permission`
    /// for refused access, else `Os`, as FreeBSD's log pump), `Op::Log`, the errno, and
    /// the `io::Error` (with its kind) as its source.
    fn to_error(&self) -> Error {
        let mut e = Error::new(
            self.kind.map_or(ErrorKind::Os, ErrorKind::of_io),
            Op::Log,
            format!("cannot write the sample log{}", self.message),
        );
        if let Some(n) = self.errno {
            e = e.with_errno(n);
        }
        if let Some(k) = self.kind {
            e = e.with_source(std::io::Error::from(k)).with_help(
                "the log takes no more records (samples drained since are counted in \
                     SamplingDetails::log_dropped): stop the PMCs, make room or fix the \
                     output, and start a new log with configure_log",
            );
        }
        e
    }

    /// Keeps the first failure.
    pub(super) fn note(slot: &mut Option<LogFailure>, e: &pmc_log::WriteError) {
        if slot.is_none() {
            *slot = Some(LogFailure::from(e));
        }
    }
}

impl HubState {
    /// Drains every ring (or only `token`'s) into the writer, in time order (see
    /// [`Reorder`]).
    fn drain(&mut self, token: Option<u32>) {
        // Hang-ups first: whatever a gone target's tasks wrote is in the rings by then.
        let gone = self.poll_exit_fds(token);
        let pass_start = now(&*self.sys.0);
        for i in 0..self.rings.len() {
            if token.is_none_or(|t| t == self.rings[i].token) {
                self.drain_one(i);
            }
        }
        self.finish_targets(&gone);
        self.account_spool();
        self.write_upto(pass_start.saturating_sub(REORDER_SLACK_NS));
        self.post.summary(&mut self.summary);
        if token.is_none() {
            self.post.end_pass();
        }
        self.count_written();
        if let Some(h) = self.spool.as_ref() {
            h.kick();
        }
    }

    /// log-procexit of counting PMCs: polls the events of the targets not seen gone yet (of
    /// `token`'s rings, or every ring's) and returns the (token, target) whose every event
    /// has hung up: the target and every task that inherited its events have exited.
    fn poll_exit_fds(&mut self, token: Option<u32>) -> Vec<(u32, i32)> {
        let mine = |r: &RingSource| token.is_none_or(|t| t == r.token) && !r.exit_fds.is_empty();
        if !self.rings.iter().any(mine) {
            return Vec::new();
        }
        let revents = {
            let fds: Vec<BorrowedFd<'_>> = self
                .rings
                .iter()
                .filter(|r| mine(r))
                .flat_map(|r| r.exit_fds.iter().filter(|e| !e.hung_up))
                .map(|e| e.fd.as_fd())
                .collect();
            if fds.is_empty() {
                Vec::new()
            } else {
                self.sys.0.poll(&fds, 0).unwrap_or_default()
            }
        };
        let mut ev = revents.into_iter();
        for e in self
            .rings
            .iter_mut()
            .filter(|r| mine(r))
            .flat_map(|r| r.exit_fds.iter_mut().filter(|e| !e.hung_up))
        {
            if ev.next().is_some_and(|v| v & libc::POLLHUP != 0) {
                e.hung_up = true;
            }
        }
        let mut all: Vec<(u32, i32, bool)> = Vec::new();
        for r in self.rings.iter().filter(|r| mine(r)) {
            for e in &r.exit_fds {
                match all.iter_mut().find(|a| (a.0, a.1) == (r.token, e.target)) {
                    Some(a) => a.2 &= e.hung_up,
                    None => all.push((r.token, e.target, e.hung_up)),
                }
            }
        }
        all.into_iter()
            .filter(|a| a.2)
            .map(|(t, target, _)| (t, target))
            .collect()
    }

    /// The targets of `gone` ([`HubState::poll_exit_fds`], their rings drained since): reads
    /// each one's total from its events and has the post-processors log its processes'
    /// counts, then lets its events go.
    fn finish_targets(&mut self, gone: &[(u32, i32)]) {
        let time = now(&*self.sys.0);
        for &(token, target) in gone {
            let mut total = Some(0u64);
            for r in self.rings.iter().filter(|r| r.token == token) {
                for e in r.exit_fds.iter().filter(|e| e.target == target) {
                    total = total
                        .zip(event_value(&*self.sys.0, e.fd.as_fd(), r.cfg.read_format))
                        .map(|(a, v)| a.saturating_add(v));
                }
            }
            if self.writer.is_some() {
                let HubState { post, reorder, .. } = self;
                let ev = HubEvent::TargetGone {
                    pmc: token,
                    target,
                    total,
                    time,
                };
                post.event(&ev, &mut |r| reorder.push(r));
            }
            for r in self.rings.iter_mut().filter(|r| r.token == token) {
                r.exit_fds.retain(|e| e.target != target);
            }
        }
    }

    /// What the spool dropped since the last pass: its samples are lost (counted here; the
    /// spool itself writes the log's `Lost` record for them, outside the queue it drops
    /// from, so that the count is never dropped with them); its sink's error fails the log.
    fn account_spool(&mut self) {
        let Some(h) = self.spool.as_ref() else {
            return;
        };
        let now_seen = h.unwritten();
        if let Some(e) = h.error() {
            LogFailure::note(&mut self.error, &pmc_log::WriteError::Io(e));
            // Fail the writer now (its seal meets the spool's error at once, without
            // waiting): the records of its pending block count as dropped, not written.
            if let Some(w) = self.writer.as_mut().filter(|w| w.failed().is_none()) {
                let _ = w.flush();
            }
        }
        let new = now_seen.samples.saturating_sub(self.spool_seen.samples);
        self.spool_seen = now_seen;
        self.summary.lost += new;
        self.summary.lost_spool += new;
    }

    /// Drains ring `i` into the reorder buffer: each record through the post-processors,
    /// then converted; a loss record after it if some of its data was unreadable.
    fn drain_one(&mut self, i: usize) {
        let HubState {
            writer,
            rings,
            summary,
            reorder,
            post,
            sys,
            ..
        } = self;
        let ring = &mut rings[i];
        let unreported = ring.lost_unreported;
        let fast = !post.drains_samples(ring.purpose);
        let bad = drain_ring(ring, summary, fast, &mut |meta, r| {
            if writer.is_none() {
                return;
            }
            match r {
                Drained::Record(r) => take_drained(&*sys.0, post, reorder, meta, r),
                Drained::Sample(s) => convert_sample(meta, s, &[], None, reorder),
            }
        });
        // Losses counted from the kernel's count that a PERF_RECORD_LOST has now reported
        // were lost to a full ring between drains, not while the drain was held up.
        let reported = unreported.saturating_sub(ring.lost_unreported);
        summary.lost_unreported = summary.lost_unreported.saturating_sub(reported);
        if bad > 0 && writer.is_some() {
            reorder.push(loss_record(ring, now(&*sys.0)));
        }
        self.read_owner_lost(i);
    }

    /// After ring `i` was drained: the kernel's count of the records it could not write into
    /// it (`PERF_FORMAT_LOST`), read through the ring owner's fd, so that losses no
    /// `PERF_RECORD_LOST` has reported yet (the kernel writes one only at the ring's next
    /// output) show in the summary and the log as they grow, not only at stop. One `read(2)`
    /// per ring and pass in which the ring may have been full since the pass before
    /// ([`RingSource::may_have_lost`]: a ring drained before it fills loses nothing, and
    /// the read is a cross-CPU interrupt when the event runs on another CPU); it sees the
    /// owner's events (its group's, with `PERF_FORMAT_GROUP`), so events of other threads
    /// sharing a per-CPU ring are read at stop only.
    fn read_owner_lost(&mut self, i: usize) {
        let HubState {
            rings,
            summary,
            reorder,
            writer,
            sys,
            ..
        } = self;
        let Some(ring) = rings.get_mut(i).filter(|r| r.may_have_lost) else {
            return;
        };
        let Some(kernel) = owner_lost(&*sys.0, ring) else {
            return;
        };
        let extra = kernel_lost(ring, kernel, summary);
        if extra > 0 && writer.is_some() {
            reorder.push(log::Record::Lost(log::Lost {
                time: now(&*sys.0),
                pmc_id: Some(ring.default_pmc),
                cpu: ring.cpu,
                count: extra,
            }));
        }
    }

    /// Writes, in time order, the drained records stamped at or before `upto` (all with
    /// `u64::MAX`), each through the post-processors.
    fn write_upto(&mut self, upto: u64) {
        let HubState {
            writer,
            error,
            reorder,
            post,
            ..
        } = self;
        write_ordered(reorder, post, upto, &mut |r| write_log(writer, error, r));
    }

    /// The writer's counts into the summary.
    fn count_written(&mut self) {
        let spool = self
            .spool
            .as_ref()
            .map(SpoolHandle::unwritten)
            .unwrap_or_default();
        if let Some(w) = self.writer.as_ref() {
            // The writer counts what it handed the spool; the spool, what it did not write.
            self.summary.log_records = w
                .records_written()
                .saturating_sub(spool.records + spool.after_error);
            self.summary.log_dropped = w.records_dropped() + spool.after_error;
        }
        self.summary.spool_dropped = spool.records;
    }

    /// Seals the writer's open block and waits until the sink took what is queued (or
    /// failed); a failure is kept as the log's error.
    fn flush_writer(&mut self) -> Result<()> {
        let HubState { writer, error, .. } = self;
        match writer.as_mut() {
            Some(w) => w.flush().map_err(|e| {
                LogFailure::note(error, &e);
                write_error(&e)
            }),
            None => Err(no_log()),
        }
    }

    /// The spool's last counts into the summary, after the writer finished.
    fn count_written_spool(&mut self) {
        let spool = self
            .spool
            .as_ref()
            .map(SpoolHandle::unwritten)
            .unwrap_or_default();
        self.summary.log_records = self
            .summary
            .log_records
            .saturating_sub(spool.records.saturating_sub(self.summary.spool_dropped));
        self.summary.spool_dropped = spool.records;
    }

    /// Drains every ring and writes every record drained so far, in time order (for
    /// flush_log and close_log).
    fn drain_all(&mut self) {
        self.drain(None);
        self.write_upto(u64::MAX);
        self.post.summary(&mut self.summary);
        self.count_written();
    }

    /// Writes `rec` now, after every record drained so far (records written directly, such
    /// as user data marking a point in the program, follow all that was drained before).
    fn write(&mut self, rec: &log::Record<'_>) -> Result<()> {
        self.write_upto(u64::MAX);
        self.post.direct(rec);
        match self.writer.as_mut() {
            Some(w) => w.write(rec).map_err(|e| {
                LogFailure::note(&mut self.error, &e);
                // A writer stopped at an earlier failure carries no errno of its own: that
                // failure's (EPIPE for a reader gone), as flush_log and close_log report it.
                let err = write_error(&e);
                match self.error.as_ref().and_then(|f| f.errno) {
                    Some(n) if err.errno().is_none() => err.with_errno(n),
                    _ => err,
                }
            }),
            None => Err(no_log()),
        }
    }

    /// Writes the comms and executable mappings of already-running processes (once per pid
    /// per log), and the kernel text if `kernel`.
    fn synthesize(&mut self, synth: &Synth, kernel: bool) -> Result<()> {
        let pids = match synth {
            Synth::Nothing => Vec::new(),
            Synth::Pids(p) => p.clone(),
            Synth::All => all_pids(&*self.sys.0),
        };
        let time = now(&*self.sys.0);
        let mut recs = Vec::new();
        // The kernel text once per log (key u32::MAX), for kernel-mode samples.
        if kernel && self.synthesized.insert(u32::MAX) {
            recs.extend(kernel_map(&*self.sys.0, time).map(log::Record::Map));
        }
        for pid in pids {
            if self.synthesized.insert(pid) {
                synthesize(&*self.sys.0, pid, time, &mut recs);
            }
        }
        for r in &recs {
            self.write(r)?;
        }
        Ok(())
    }

    /// The log's failure, if it failed (it stays failed until a new log is configured).
    fn check_error(&self) -> Result<()> {
        match &self.error {
            Some(f) => Err(f.to_error()),
            None => Ok(()),
        }
    }

    fn stop_thread(&mut self) -> Option<std::thread::JoinHandle<()>> {
        if let Some(s) = self.stop.take() {
            s.store(true, Ordering::Release);
        }
        if let Some(w) = self.waker.take() {
            // Wakes the thread out of poll(2) now rather than at its next timeout. If the
            // write fails, the timeout still ends the wait.
            let _ = (&w).write(&[1]);
        }
        self.thread.take()
    }
}

impl Hub {
    /// A hub whose drain passes read the kernel's lost counts through `sys` (see
    /// [`owner_lost`]).
    pub(crate) fn with_sys(sys: Arc<dyn Sys>) -> Hub {
        let hub = Hub::default();
        if let Ok(mut st) = hub.state.lock() {
            st.sys = HubSys(sys);
        }
        hub
    }

    fn lock(&self) -> Result<MutexGuard<'_, HubState>> {
        self.state.lock().map_err(|_| poisoned())
    }

    /// The error that failed the log, if one did: the drain thread meets it within
    /// [`DRAIN_PERIOD`] of the write that failed.
    pub(crate) fn log_error(&self) -> Option<Error> {
        let st = self.lock().ok()?;
        if let Some(f) = st.error.as_ref() {
            return Some(f.to_error());
        }
        // The spool's writer thread met it: at once, not at the next block.
        let e = st.spool.as_ref()?.error()?;
        Some(LogFailure::from(&pmc_log::WriteError::Io(e)).to_error())
    }

    /// Sets the spool's bound (see [`DEFAULT_SPOOL_BYTES`]) for logs configured from now on.
    pub(crate) fn set_spool_bytes(&self, bytes: usize) {
        self.spool_bytes.store(bytes, Ordering::Relaxed);
    }

    /// Bounds how long flushing and closing the log wait for a sink that takes nothing
    /// (`None`: as long as it takes), for the log configured now and those configured later.
    pub(crate) fn set_close_wait(&self, wait: Option<std::time::Duration>) {
        if let Ok(mut st) = self.lock() {
            st.close_wait = wait;
            if let Some(h) = st.spool.as_ref() {
                h.set_close_wait(wait);
            }
        }
    }

    /// Whether a log is configured.
    pub(crate) fn has_log(&self) -> bool {
        self.lock().is_ok_and(|s| s.writer.is_some())
    }

    /// Starts a log on `sink` (header first), replacing and cleanly closing any earlier one.
    pub(crate) fn configure(self: &Arc<Self>, sink: LogSink) -> Result<()> {
        let sys = self.lock()?.sys.0.clone();
        let header = host_header(&*sys);
        let bound = match self.spool_bytes.load(Ordering::Relaxed) {
            0 => DEFAULT_SPOOL_BYTES,
            n => n,
        };
        let (spool, handle) = Spool::new(sink, bound);
        handle.set_close_wait(self.lock()?.close_wait);
        let mut writer = pmc_log::Writer::new(Box::new(spool) as LogSink, &header)
            .map_err(|e| write_error(&e))?;
        let mut st = self.lock()?;
        let mut result = Ok(());
        if st.writer.is_some() {
            st.drain_all();
            if let Some(old) = st.writer.take() {
                if let Err(e) = old.finish() {
                    result = Err(write_error(&e));
                }
            }
            st.account_spool();
        }
        for d in &st.descriptors {
            writer
                .write(&log::Record::Pmc(d.clone()))
                .map_err(|e| write_error(&e))?;
        }
        st.synthesized.clear();
        st.writer = Some(writer);
        st.error = None;
        st.spool = Some(handle);
        st.spool_seen = Unwritten::default();
        // PMCs still sampling: their processes' bookkeeping again, for the new log.
        let again: Vec<(Synth, bool)> = st
            .bookkeeping
            .iter()
            .map(|(_, s, k)| (s.clone(), *k))
            .collect();
        for (synth, kernel) in again {
            st.synthesize(&synth, kernel)?;
        }
        drop(st);
        self.ensure_thread()?;
        result
    }

    /// Drains every ring into the log and flushes it.
    pub(crate) fn flush(&self) -> Result<()> {
        let mut st = self.lock()?;
        if st.writer.is_none() {
            return Err(no_log());
        }
        st.drain_all();
        st.check_error()?;
        let flushed = st.flush_writer();
        st.count_written();
        flushed
    }

    /// Stops the drain thread, drains the rings a last time, and closes the log with its
    /// clean-close marker. The rings are released: PMCs still running stop feeding a log until
    /// they are started again with a new one.
    pub(crate) fn close(&self) -> Result<()> {
        let handle = {
            let mut st = self.lock()?;
            if st.writer.is_none() {
                return Err(no_log());
            }
            st.stop_thread()
        };
        if let Some(h) = handle {
            let _ = h.join();
        }
        let mut st = self.lock()?;
        st.drain_all();
        // Counted once the sink has taken every record drained or failed: the records of the
        // writer's open block are not written yet, and are dropped if the sink fails (a log
        // on a full disk would otherwise claim a few records it does not hold).
        let _ = st.flush_writer();
        st.count_written();
        st.rings.clear();
        st.bookkeeping.clear();
        let pending = st.check_error();
        let finished = match st.writer.take() {
            Some(w) => w.finish().map(|_| ()).map_err(|e| write_error(&e)),
            None => Err(no_log()),
        };
        // What the last blocks met in the spool (counted; the spool logged it).
        st.account_spool();
        st.count_written_spool();
        st.spool = None;
        st.error = None;
        pending.and(finished)
    }

    /// Appends counter values (interval readings), after the descriptors of their PMCs.
    pub(crate) fn write_counters(
        &self,
        descriptors: Vec<log::PmcDescriptor<'static>>,
        counters: &[log::Counter],
    ) -> Result<()> {
        let mut st = self.lock()?;
        if st.writer.is_none() {
            return Err(no_log());
        }
        for d in descriptors {
            if !st.descriptors.iter().any(|k| k.pmc_id == d.pmc_id) {
                st.write(&log::Record::Pmc(d.clone()))?;
                st.descriptors.push(d);
            }
        }
        for c in counters {
            st.write(&log::Record::Counter(c.clone()))?;
        }
        Ok(())
    }

    /// Appends a user-data record.
    pub(crate) fn write_user(&self, data: u32) -> Result<()> {
        let mut st = self.lock()?;
        let time = now(&*st.sys.0);
        st.write(&log::Record::UserData(log::UserData {
            time,
            pid: to_i32(std::process::id()),
            data: log::Bytes::from(data.to_le_bytes().to_vec()),
        }))
    }

    /// Appends a PMC's attach or detach (hwpmc's PMCATTACH and PMCDETACH records), after
    /// its descriptors, each declared once as [`register`](Hub::register) declares them.
    /// Nothing without a log.
    pub(crate) fn write_target(
        &self,
        descriptors: Vec<log::PmcDescriptor<'static>>,
        record: &log::Record<'_>,
    ) -> Result<()> {
        let mut st = self.lock()?;
        if st.writer.is_none() {
            return Ok(());
        }
        for d in descriptors {
            if st.descriptors.iter().any(|k| k.pmc_id == d.pmc_id) {
                continue;
            }
            st.write(&log::Record::Pmc(d.clone()))?;
            let HubState { post, reorder, .. } = &mut *st;
            post.event(&HubEvent::Registered(&d), &mut |r| reorder.push(r));
            st.descriptors.push(d);
        }
        st.write(record)
    }

    /// The counts so far.
    pub(crate) fn summary(&self) -> SamplingDetails {
        self.lock().map(|s| s.summary.clone()).unwrap_or_default()
    }

    /// Whether rings of `token` are registered.
    pub(crate) fn has_rings(&self, token: u32) -> bool {
        self.lock()
            .is_ok_and(|s| s.rings.iter().any(|r| r.token == token))
    }

    /// Writes the descriptors (once per PMC id), synthesizes the bookkeeping of running
    /// processes (and, if `kernel` samples are taken, the kernel text mapping), and hands the
    /// rings to the drain thread.
    pub(crate) fn register(
        self: &Arc<Self>,
        descriptors: Vec<log::PmcDescriptor<'static>>,
        rings: Vec<RingSource>,
        synth: Synth,
        kernel: bool,
    ) -> Result<()> {
        let mut st = self.lock()?;
        if st.writer.is_none() {
            return Err(no_log());
        }
        for d in descriptors {
            if st.descriptors.iter().any(|k| k.pmc_id == d.pmc_id) {
                continue;
            }
            st.write(&log::Record::Pmc(d.clone()))?;
            let HubState { post, reorder, .. } = &mut *st;
            post.event(&HubEvent::Registered(&d), &mut |r| reorder.push(r));
            st.descriptors.push(d);
        }
        st.synthesize(&synth, kernel)?;
        if let Some(token) = rings.first().map(|r| r.token) {
            st.bookkeeping.push((token, synth, kernel));
        }
        st.rings.extend(rings);
        drop(st);
        self.ensure_thread()
    }

    /// log-procexit of a stopped counting PMC: drains `token`'s rings (which finishes the
    /// targets gone by now), then logs the count of each process known to have exited (see
    /// [`ExitReads`](super::procexit::ExitReads)). A target still running is logged at its
    /// exit, as the drain sees it.
    pub(crate) fn finish_exit_reads(&self, token: u32) {
        if let Ok(mut st) = self.lock() {
            st.drain(Some(token));
            let HubState {
                post,
                reorder,
                writer,
                ..
            } = &mut *st;
            if writer.is_none() {
                return;
            }
            post.event(&HubEvent::Stopped { pmc: token }, &mut |r| reorder.push(r));
        }
    }

    /// log-procexit of a counting PMC: `target` was detached (or its events are being
    /// replaced): drains `token`'s rings, logs the counts of the processes known to have
    /// exited, and lets the target's events go (no exit of it is logged from now on).
    pub(crate) fn exit_target_closed(&self, token: u32, target: i32) {
        if let Ok(mut st) = self.lock() {
            st.drain(Some(token));
            for r in st.rings.iter_mut().filter(|r| r.token == token) {
                r.exit_fds.retain(|e| e.target != target);
            }
            let HubState {
                post,
                reorder,
                writer,
                ..
            } = &mut *st;
            if writer.is_some() {
                let ev = HubEvent::TargetClosed { pmc: token, target };
                post.event(&ev, &mut |r| reorder.push(r));
            }
        }
    }

    /// Drains `token`'s rings now (at stop).
    pub(crate) fn drain_token(&self, token: u32) {
        if let Ok(mut st) = self.lock() {
            st.drain(Some(token));
        }
    }

    /// The kernel's counts of lost records for `token`'s events, `(event id, lost)`
    /// (`PERF_FORMAT_LOST`), read after a drain: what they show beyond the losses the rings'
    /// `PERF_RECORD_LOST`s reported is counted (per ring) and logged as a `Lost` record.
    /// `complete`: the events carry the count (without it, the summary says the lost count may
    /// be incomplete).
    pub(crate) fn kernel_lost(&self, token: u32, counts: &[(u64, u64)], complete: bool) {
        let Ok(mut st) = self.lock() else { return };
        let HubState {
            rings,
            summary,
            reorder,
            writer,
            sys,
            ..
        } = &mut *st;
        if !complete {
            summary.lost_count_incomplete = true;
        }
        for ring in rings.iter_mut().filter(|r| r.token == token) {
            let kernel: u64 = counts
                .iter()
                .filter(|(id, _)| ring.ids.iter().any(|(i, _)| i == id))
                .fold(0u64, |a, (_, n)| a.saturating_add(*n));
            let extra = kernel_lost(ring, kernel, summary);
            if extra > 0 && writer.is_some() {
                reorder.push(log::Record::Lost(log::Lost {
                    time: now(&*sys.0),
                    pmc_id: Some(ring.default_pmc),
                    cpu: ring.cpu,
                    count: extra,
                }));
            }
        }
    }

    /// Drains and drops `token`'s rings (the PMC is going away).
    pub(crate) fn unregister(&self, token: u32) {
        if let Ok(mut st) = self.lock() {
            st.drain(Some(token));
            let HubState {
                post,
                reorder,
                rings,
                ..
            } = &mut *st;
            let gone: Vec<&RingSource> = rings.iter().filter(|r| r.token == token).collect();
            post.event(&HubEvent::Unregistering(&gone), &mut |r| reorder.push(r));
            st.rings.retain(|r| r.token != token);
            st.bookkeeping.retain(|(t, _, _)| *t != token);
        }
    }

    fn ensure_thread(self: &Arc<Self>) -> Result<()> {
        let mut st = self.lock()?;
        if st.thread.is_some() || st.writer.is_none() || st.rings.is_empty() {
            return Ok(());
        }
        let stop = Arc::new(AtomicBool::new(false));
        let weak = Arc::downgrade(self);
        let flag = stop.clone();
        let (waker, wake) = UnixStream::pair().map_err(|e| {
            Error::new(
                ErrorKind::Os,
                Op::Start,
                format!("cannot create the log drain thread's wake-up socket: {e}"),
            )
        })?;
        let handle = std::thread::Builder::new()
            .name("pmc-log-drain".into())
            .spawn(move || drain_loop(&weak, &flag, &wake))
            .map_err(|e| {
                Error::new(
                    ErrorKind::Os,
                    Op::Start,
                    format!("cannot start the log drain thread: {e}"),
                )
            })?;
        st.thread = Some(handle);
        st.stop = Some(stop);
        st.waker = Some(waker);
        Ok(())
    }
}

/// A record drained from a ring (with the ring's metadata): through the post-processors,
/// then, unless one of them took it, converted into the reorder buffer.
fn take_drained(
    sys: &dyn Sys,
    post: &mut PostChain,
    reorder: &mut Reorder,
    meta: &RingMeta,
    r: &Record<'_>,
) {
    if post.drained(meta, r, &mut |rec| reorder.push(rec)) == Flow::Consumed {
        return;
    }
    convert(sys, meta, r, reorder);
}

/// Hands `write`, in time order, the drained records stamped at or before `upto`, each after
/// the post-processors (which may rewrite it, and write records after it).
fn write_ordered(
    reorder: &mut Reorder,
    post: &mut PostChain,
    upto: u64,
    write: &mut dyn FnMut(&log::Record<'_>),
) {
    // Samples no processor looks at go straight to the log.
    let plain = !post.orders_samples();
    reorder.flush(upto, &mut |rec, stack| {
        if plain && stack.is_none() && matches!(rec, log::Record::Sample(_)) {
            return write(rec);
        }
        post.ordered(rec, stack, write);
    });
}

/// Record conversion: `r`, drained from a ring with metadata `meta`, into the reorder buffer
/// as a log record (nothing for records the log does not carry), with its user stack to
/// unwind; with raw capture (`CallGraph::DwarfRaw`), the stack as a `UserStack` record after it.
fn convert(sys: &dyn Sys, meta: &RingMeta, r: &Record<'_>, reorder: &mut Reorder) {
    if let Record::Sample(s) = r {
        let fields = crate::record::SampleFields::of(s);
        let stack = crate::log::unwind::UserStack::of(s);
        return convert_sample(meta, &fields, s.raw.unwrap_or_default(), stack, reorder);
    }
    if let Some(rec) = to_log(sys, r, meta, |id| meta.pmc_of(id)) {
        reorder.push(rec);
    }
}

/// A sample (its fields, its raw data, its captured user stack) into the reorder buffer
/// (the drain's hot path: its frames and its stack go to the buffer's arenas; nothing is
/// allocated).
fn convert_sample(
    meta: &RingMeta,
    s: &crate::record::SampleFields<'_>,
    raw: &[u8],
    stack: Option<crate::log::unwind::UserStack<'_>>,
    reorder: &mut Reorder,
) {
    let frames = reorder.frames();
    let from = frames.len();
    let kernel_frames = sample_frames(s, frames);
    // hwpmc's callchains without PMC_F_USERCALLCHAIN: a sample taken in the kernel has the
    // kernel's frames only (perf's callchain goes on into user space).
    let kernel_only = !meta.user_in_kernel && kernel_frames > 0;
    if kernel_only {
        frames.truncate(from.saturating_add(kernel_frames as usize));
    }
    let head = sample_head(s, meta, &|id| meta.pmc_of(id), kernel_frames);
    // Without user frames for kernel samples: nothing to unwind either.
    let stack = stack.filter(|_| !kernel_only);
    if !raw.is_empty() {
        // Raw data (tracepoints): the sample waits as a whole record.
        let chain = frames.split_off(from);
        let mut sample = head.sample(&[]);
        sample.callchain = log::Callchain::from_vec(chain);
        sample.raw = log::Bytes::borrowed(raw);
        return push_sample_stack(meta, reorder, log::Record::Sample(sample), stack);
    }
    match stack {
        // Raw capture: the stack goes into the log after its sample, not unwound.
        Some(u) if meta.raw_stacks => {
            let user = {
                let frames = reorder.frames();
                u.to_record(&head.sample(frames.get(from..).unwrap_or_default()))
            };
            reorder.push_sample(head, from, None);
            reorder.push(log::Record::UserStack(user));
        }
        stack => reorder.push_sample(head, from, stack),
    }
}

/// A sample with raw data into the reorder buffer, with its user stack (to unwind, or with
/// raw capture as a `UserStack` record after it).
fn push_sample_stack(
    meta: &RingMeta,
    reorder: &mut Reorder,
    rec: log::Record<'_>,
    stack: Option<crate::log::unwind::UserStack<'_>>,
) {
    match (stack, &rec) {
        (Some(u), log::Record::Sample(s)) if meta.raw_stacks => {
            let user = u.to_record(s);
            reorder.push(rec);
            reorder.push(log::Record::UserStack(user));
        }
        (stack, _) => reorder.push_with(rec, stack),
    }
}

/// The kernel's count of lost records of the events one `read(2)` of `ring`'s owner fd
/// reports (perf_event_open(2), "Reading results": `value, [time_enabled], [time_running],
/// [id], lost`, or with `PERF_FORMAT_GROUP` `nr, [times], {value, [id], lost} * nr`), summed
/// over those writing into `ring`; `None` without `PERF_FORMAT_LOST` or when the read fails.
fn owner_lost(sys: &dyn Sys, ring: &RingSource) -> Option<u64> {
    use crate::record::read_format as rf;
    let format = ring.cfg.read_format;
    if format & rf::LOST == 0 {
        return None;
    }
    // 64 words: a group of up to 20 members (a larger one is read at stop only).
    let mut buf = [0u8; 512];
    let n = sys.read(ring.poll_fd.as_fd(), &mut buf).ok()?;
    let words: Vec<u64> = buf
        .get(..n)?
        .chunks_exact(8)
        .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or_default()))
        .collect();
    let times = usize::from(format & rf::TOTAL_TIME_ENABLED != 0)
        + usize::from(format & rf::TOTAL_TIME_RUNNING != 0);
    let has_id = format & rf::ID != 0;
    if format & rf::GROUP == 0 {
        return words.get(1 + times + usize::from(has_id)).copied();
    }
    let nr = usize::try_from(*words.first()?).ok()?;
    let stride = 2 + usize::from(has_id);
    let entries = words.get(1 + times..)?;
    let ours = |e: &[u64]| !has_id || ring.ids.iter().any(|(id, _)| *id == e[1]);
    Some(
        entries
            .chunks_exact(stride)
            .take(nr)
            .filter(|e| ours(e))
            .fold(0u64, |a, e| a.saturating_add(e[stride - 1])),
    )
}

/// The count of one event (not a group) read through `fd`, laid out as `read_format` says:
/// the value comes first. `None` if it cannot be read.
fn event_value(sys: &dyn Sys, fd: BorrowedFd<'_>, read_format: u64) -> Option<u64> {
    if read_format & crate::record::read_format::GROUP != 0 {
        return None;
    }
    // value, time enabled, time running, id, lost.
    let mut buf = [0u8; 40];
    let n = sys.read(fd, &mut buf).ok()?;
    let word = buf.get(..n.min(8)).filter(|w| w.len() == 8)?;
    Some(u64::from_ne_bytes(word.try_into().ok()?))
}

/// Unreadable ring data: the record saying in the log that an unknown number of records
/// (count 0) of `ring` went missing here.
fn loss_record(ring: &RingSource, time: u64) -> log::Record<'static> {
    log::Record::Lost(log::Lost {
        time,
        pmc_id: Some(ring.default_pmc),
        cpu: ring.cpu,
        count: 0,
    })
}

/// Error collection: writes `rec` if there is a log; the first write error is kept in
/// `error` (the writer takes nothing after it, and counts what it dropped).
pub(super) fn write_log(
    writer: &mut Option<pmc_log::Writer<LogSink>>,
    error: &mut Option<LogFailure>,
    rec: &log::Record<'_>,
) {
    if let Some(w) = writer.as_mut() {
        if let Err(e) = w.write(rec) {
            LogFailure::note(error, &e);
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
        st.drain(None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errno;
    use crate::log::testutil::{cfg, meta, pid_tid, record, trailer};
    use crate::record::record_type;

    /// A write error keeps its kind (refused access is `Permission`, a full disk `Os`), its
    /// errno and its `io::Error` kind, as FreeBSD's log pump reports it; only the first
    /// failure is kept.
    #[test]
    fn log_failure_keeps_the_io_errors_kind() {
        let denied = pmc_log::WriteError::Io(std::io::Error::from_raw_os_error(errno::EACCES));
        let full = pmc_log::WriteError::Io(std::io::Error::from_raw_os_error(errno::ENOSPC));
        let e = LogFailure::from(&denied).to_error();
        assert_eq!(
            (e.kind(), e.op(), e.errno()),
            (ErrorKind::Permission, Op::Log, Some(errno::EACCES))
        );
        let e = LogFailure::from(&full).to_error();
        assert_eq!((e.kind(), e.errno()), (ErrorKind::Os, Some(errno::ENOSPC)));
        let mut slot = None;
        LogFailure::note(&mut slot, &full);
        LogFailure::note(&mut slot, &denied);
        assert_eq!(
            slot.map(|f| f.to_error().errno()),
            Some(Some(errno::ENOSPC))
        );
    }

    /// The drain's path without a kernel: `rings` drained one after another (each its
    /// records in order), then everything written in time order; what the log gets.
    fn pipeline(
        post: &mut PostChain,
        rings: &[(RingMeta, Vec<Vec<u8>>)],
    ) -> Vec<log::Record<'static>> {
        let mut reorder = Reorder::default();
        for (meta, recs) in rings {
            for bytes in recs {
                let r = cfg().parse(bytes).expect("parses");
                take_drained(&RealSys, post, &mut reorder, meta, &r);
            }
        }
        let mut out = Vec::new();
        write_ordered(&mut reorder, post, u64::MAX, &mut |r| {
            out.push(r.clone().into_owned())
        });
        out
    }

    /// log-procexit sums in time order: a sample read from another CPU's ring after its
    /// process's `EXIT` (in ring order) still counts in the process's count, which follows
    /// the `EXIT`; a later sample (after the exit in time) does not.
    #[test]
    fn procexit_counts_a_sample_drained_after_its_exit() {
        let mut post = PostChain::default();
        let d = log::PmcDescriptor {
            time: 0,
            pmc_id: 3,
            event_spec: "cpu-clock".into(),
            canonical_name: "cpu-clock".into(),
            scope: log::Scope::Process,
            cpu: None,
            mode: log::Mode::SamplingPeriod(100),
            flags: log::FLAG_LOG_PROCEXIT,
            native_config: "".into(),
        };
        post.event(&HubEvent::Registered(&d), &mut |_| panic!("nothing to log"));
        let sample = |time: u64, cpu: u64, period: u64| {
            record(
                record_type::SAMPLE,
                2,
                &[77, 0x40_1000, pid_tid(10, 10), time, cpu, period, 0],
            )
        };
        let mut exit = vec![pid_tid(10, 1), pid_tid(10, 1), 300];
        exit.extend(trailer(10, 10, 300, 0, 77));
        let cpu0 = RingMeta {
            cpu: Some(0),
            ..meta()
        };
        let rings = [
            (cpu0, vec![record(record_type::EXIT, 0, &exit)]),
            (
                meta(),
                vec![
                    sample(100, 1, 7),
                    sample(200, 1, 500),
                    sample(400, 1, 1_000),
                ],
            ),
        ];
        let got: Vec<(&str, u64, u64)> = pipeline(&mut post, &rings)
            .iter()
            .map(|r| match r {
                log::Record::Sample(s) => ("sample", s.time, s.period),
                log::Record::Exit(x) => ("exit", x.time, 0),
                log::Record::Counter(c) => {
                    assert_eq!(
                        (c.pmc_id, c.pid, c.kind),
                        (3, 10, log::CounterKind::ProcessExit)
                    );
                    ("count", c.time, c.value)
                }
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            got,
            [
                ("sample", 100, 7),
                ("sample", 200, 500),
                ("exit", 300, 0),
                ("count", 300, 507),
                ("sample", 400, 1_000)
            ]
        );
    }

    /// The unwinder sees the `MMAP2`s before the samples: a sample drained (from one CPU's
    /// ring) before its process's mapping (from another's) is unwound after the mapping
    /// has passed through the stage (a device here: refused and reported, which shows the
    /// stage knew it).
    #[cfg(feature = "dwarf")]
    #[test]
    // Opens /dev/zero (the unwinder's object reader), which Miri does not support.
    #[cfg_attr(miri, ignore)]
    fn the_unwinder_sees_maps_before_samples() {
        use crate::log::post::tests::{stack, user_sample};
        let mut post = PostChain::default();
        let mut reorder = Reorder::default();
        reorder.push_with(
            log::Record::Sample(user_sample(200, 7, 0)),
            Some(stack(0x1010)),
        );
        reorder.push(log::Record::Map(log::Map {
            time: 100,
            pid: 7,
            start: 0x1000,
            len: 0x1000,
            pgoff: 0,
            build_id: log::Bytes::default(),
            path: log::Bytes::from("/dev/zero"),
        }));
        let mut times = Vec::new();
        write_ordered(&mut reorder, &mut post, u64::MAX, &mut |r| {
            times.push(r.time())
        });
        assert_eq!(times, [100, 200]);
        let mut summary = SamplingDetails::default();
        post.summary(&mut summary);
        assert_eq!(summary.unwound, 1);
        assert_eq!(summary.unwind_refused.len(), 1, "{summary:?}");
        assert!(summary.unwind_refused[0].starts_with("/dev/zero"));
    }
}
