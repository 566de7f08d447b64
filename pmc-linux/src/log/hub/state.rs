//! [`HubState`]'s work under the lock: a drain pass (the rings, the exits, the kernel's lost
//! counts), the ordered writes, synthesis, the error check.

use crate::log::now;
use crate::log::post::HubEvent;
use crate::log::reorder::REORDER_SLACK_NS;
use crate::log::source::{
    drain_ring, kernel_lost, replay_ring, Copied, Drained, RingMeta, RingSource,
};
use crate::log::spool::SpoolHandle;
use crate::log::synth::{all_pids, kernel_map, synthesize, Synth};
use crate::sys::Sys;
use pmc_core::Result;
use pmc_log::record as log;
use std::io::Write as _;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::Ordering;

use super::error::{no_log, write_error, LogFailure};
use super::lost::{event_value, loss_record, owner_lost};
use super::samples::{convert_sample, take_drained, write_ordered};
use super::{HubState, ToLog};

impl HubState {
    /// Drains every ring (or only `token`'s) into the writer, in time order (see
    /// [`Reorder`](crate::log::reorder::Reorder)), after the backlog's deferred passes
    /// ([`HubState::replay_backlog`]).
    pub(super) fn drain(&mut self, token: Option<u32>) {
        self.replay_backlog();
        // Hang-ups first: whatever a gone target's tasks wrote is in the rings by then.
        let gone = self.poll_exit_fds(token);
        let pass_start = now(&*self.sys.0);
        for i in 0..self.rings.len() {
            if token.is_none_or(|t| t == self.rings[i].token) {
                self.drain_one(i);
            }
        }
        self.finish_targets(&gone);
        self.finish_pass(pass_start, token.is_none());
    }

    /// The end of a pass that began at `pass_start` (over every ring if `every_ring`): the
    /// records stamped well before it written in time order, the counts updated, the spool
    /// woken.
    pub(super) fn finish_pass(&mut self, pass_start: u64, every_ring: bool) {
        self.account_spool();
        self.write_upto(pass_start.saturating_sub(REORDER_SLACK_NS));
        self.post.summary(&mut self.summary);
        if every_ring {
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
    pub(super) fn account_spool(&mut self) {
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
        let may_have_lost = self.take_one(i, None);
        self.read_owner_lost(i, may_have_lost);
    }

    /// Decodes what a deferred pass copied of ring `i` (`bytes`, see [`Copied`]) into the
    /// reorder buffer, as [`HubState::drain_one`] would have then.
    pub(super) fn replay_one(&mut self, i: usize, bytes: &[u8], copied: &Copied) {
        self.take_one(i, Some((bytes, copied.bad)));
        self.read_owner_lost(i, copied.may_have_lost);
    }

    /// Ring `i`'s records into the reorder buffer, from the ring, or from a deferred pass's
    /// copy of it (its bytes, and how many records the copy could not read). Returns whether
    /// the ring may have lost records.
    fn take_one(&mut self, i: usize, copy: Option<(&[u8], u64)>) -> bool {
        let HubState {
            writer,
            rings,
            summary,
            reorder,
            post,
            sys,
            ..
        } = self;
        let Some(ring) = rings.get_mut(i) else {
            return false;
        };
        let unreported = ring.lost_unreported;
        let fast = !post.drains_samples(ring.purpose);
        let mut take = |meta: &RingMeta, r: Drained<'_, '_>| {
            if writer.is_none() {
                return;
            }
            match r {
                Drained::Record(r) => take_drained(&*sys.0, post, reorder, meta, r),
                Drained::Sample(s) => {
                    let stack = crate::log::unwind::UserStack::of(s);
                    convert_sample(meta, s, &[], stack, reorder);
                }
            }
        };
        let bad = match copy {
            None => drain_ring(ring, summary, fast, &mut take),
            Some((bytes, unread)) => unread + replay_ring(ring, bytes, summary, fast, &mut take),
        };
        // Losses counted from the kernel's count that a PERF_RECORD_LOST has now reported
        // were lost to a full ring between drains, not while the drain was held up.
        let reported = unreported.saturating_sub(ring.lost_unreported);
        summary.lost_unreported = summary.lost_unreported.saturating_sub(reported);
        if bad > 0 && writer.is_some() {
            reorder.push(loss_record(ring, now(&*sys.0)));
        }
        ring.may_have_lost
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
    fn read_owner_lost(&mut self, i: usize, may_have_lost: bool) {
        let HubState {
            rings,
            summary,
            reorder,
            writer,
            sys,
            ..
        } = self;
        let Some(ring) = rings.get_mut(i).filter(|_| may_have_lost) else {
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
        write_ordered(reorder, post, upto, &mut ToLog { writer, error });
    }

    /// The writer's counts into the summary.
    pub(super) fn count_written(&mut self) {
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
    pub(super) fn flush_writer(&mut self) -> Result<()> {
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
    pub(super) fn count_written_spool(&mut self) {
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
    pub(super) fn drain_all(&mut self) {
        self.drain(None);
        self.write_upto(u64::MAX);
        self.post.summary(&mut self.summary);
        self.count_written();
    }

    /// Writes `rec` now, after every record drained so far (records written directly, such
    /// as user data marking a point in the program, follow all that was drained before).
    pub(super) fn write(&mut self, rec: &log::Record<'_>) -> Result<()> {
        self.replay_backlog();
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
    pub(super) fn synthesize(&mut self, synth: &Synth, kernel: bool) -> Result<()> {
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
    pub(super) fn check_error(&self) -> Result<()> {
        match &self.error {
            Some(f) => Err(f.to_error()),
            None => Ok(()),
        }
    }

    pub(super) fn stop_thread(&mut self) -> Option<std::thread::JoinHandle<()>> {
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
