//! [`Hub`]'s calls, made by the backend: configure, flush and close the log, write
//! counters and user records, register and unregister rings, start the drain thread.

use crate::log::convert::to_i32;
use crate::log::post::HubEvent;
use crate::log::source::{kernel_lost, RingSource};
use crate::log::spool::{Spool, Unwritten, DEFAULT_SPOOL_BYTES};
use crate::log::synth::{host_header, Synth};
use crate::log::{now, SamplingDetails};
use crate::sys::Sys;
use pmc_core::{Error, ErrorKind, LogSink, Op, Result};
use pmc_log::record as log;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, MutexGuard};

use super::backlog::BacklogBound;
use super::error::{no_log, poisoned, write_error, LogFailure};
use super::{drain_loop, Hub, HubState, HubSys};

impl Hub {
    /// A hub whose drain passes read the kernel's lost counts through `sys` (see
    /// [`owner_lost`](super::lost::owner_lost)).
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
    /// [`DRAIN_PERIOD`](crate::log::DRAIN_PERIOD) of the write that failed.
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

    /// Sets the backlog's bound (see [`backlog`](super::backlog)) for logs configured from
    /// now on; a `bytes` of 0 defers nothing.
    pub(crate) fn set_backlog(&self, bound: BacklogBound) {
        if let Ok(mut b) = self.backlog.lock() {
            *b = bound;
        }
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
        let mut writer = pmc_log::Writer::new(spool, &header).map_err(|e| write_error(&e))?;
        writer.set_block_handoff(Spool::take_block);
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
        st.backlog.bound = self.backlog.lock().map(|b| *b).unwrap_or_default();
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
    /// [`ExitReads`](crate::log::procexit::ExitReads)). A target still running is logged at its
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
        // The losses the backlog's records report are accounted first.
        st.replay_backlog();
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
