//! One allocated PMC: its verbs (attach, start, stop, read, write) as
//! `PMC_OP_*` requests on each of its hwpmc PMCs, its state through
//! `pmc_core::lifecycle`.

use super::inner::Inner;
use super::units::{ns_per_unit, to_kernel_units};
use crate::errno::Errno;
use crate::errno_map::Context;
use crate::events::{self, Encoding};
use crate::log::kernel_logs;
use crate::sys::abi::*;
use crate::sys::{OpArg, PmcOp, RealSys, Sys};
use pmc_core::lifecycle::{Lifecycle, Refusal};
use pmc_core::{
    Allocation, Error, ErrorKind, Flags, Instance, InstanceReading, NativeField, Op, Reading,
    Result, State, Target,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One allocated PMC: for system scope on several CPUs, one hwpmc PMC per
/// CPU (read as their sum).
pub struct FreebsdPmc<S: Sys = RealSys> {
    pub(super) inner: Arc<Inner<S>>,
    pub(super) allocation: Allocation,
    /// (CPU for system scope, hwpmc id).
    pub(super) ids: Vec<(Option<u32>, u32)>,
    pub(super) encoding: Encoding,
    pub(super) count: u64,
    /// Why the PMC samples less often than asked, if it does.
    pub(super) rate_warning: Option<String>,
    /// State and targets, with hwpmc's rules (`pmc_core::lifecycle`).
    pub(super) life: Lifecycle,
    pub(super) running_since: Option<Instant>,
    pub(super) ran: Duration,
    pub(super) released: bool,
}

impl<S: Sys> std::fmt::Debug for FreebsdPmc<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FreebsdPmc")
            .field("allocation", &self.allocation)
            .field("ids", &self.ids)
            .field("state", &self.life.state())
            .finish_non_exhaustive()
    }
}

impl<S: Sys> FreebsdPmc<S> {
    /// Nanoseconds per unit of this PMC's readings: `1e9 / kern.hz` for the portable clocks
    /// (hwpmc counts them in ticks), 1 otherwise.
    fn ns_per_unit(&self) -> u64 {
        ns_per_unit(&self.allocation.event, self.inner.hz)
    }

    /// `PMC_OP_PMCRW` of a system-scope sampling PMC: per CPU, the
    /// kernel's reload-down counter, the events left until the next sample
    /// (`hwpmc_core.c:iap_read_pmc`). Not an event total.
    ///
    /// A process-scope sampling PMC has no such value to read: hwpmc keeps
    /// its countdown per target thread and answers PMCRW with
    /// `pm_savedvalue`, which sampling never changes (0 unless written;
    /// `hwpmc_mod.c`@009268db `pmc_do_op_pmcrw()`, `pmc_process_csw_out()`),
    /// so this refuses it.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`] for a counting PMC (use `read`);
    /// [`ErrorKind::NotSupported`] for process scope; the `PMC_OP_PMCRW`
    /// errors.
    pub fn sample_countdown(&self) -> Result<Vec<(Option<u32>, u64)>> {
        if !self.allocation.mode.is_sampling() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                Op::Read,
                "sample_countdown is for sampling PMCs",
            )
            .with_help("use Pmc::read for a counting PMC"));
        }
        if !self.allocation.scope.is_system() {
            return Err(Error::new(
                ErrorKind::NotSupported,
                Op::Read,
                format!(
                    "hwpmc keeps the countdown of a process-scope sampling PMC ({}) per target thread; PMC_OP_PMCRW returns a saved value that sampling never changes",
                    self.allocation.event
                ),
            )
            .with_help("count the samples in the log, or use a system-scope PMC (Allocation::system) to read its countdown"));
        }
        self.ids
            .iter()
            .map(|(cpu, id)| Ok((*cpu, self.rw(*id, *cpu, None)?)))
            .collect()
    }

    /// Why this PMC samples less often than its allocation asked (hwpmc's
    /// minimum reload count), if it does; also in `native_config` as
    /// `warning`.
    pub fn rate_warning(&self) -> Option<&str> {
        self.rate_warning.as_deref()
    }

    /// hwpmc sends the samples of a PMC attached to its owner to profil(2),
    /// never to the log (`hwpmc_mod.c:pmc_process_samples`: "if
    /// (pm->pm_flags & PMC_F_ATTACHED_TO_OWNER) addupc_intr(...) else
    /// pmclog_process_callchain(...)"): refuse rather than log nothing.
    fn refuse_sampling_self(&self, op: Op) -> Result<()> {
        Err(Error::new(
            ErrorKind::NotSupported,
            op,
            format!(
                "hwpmc does not log the samples of a process-scope sampling PMC ({}) attached to the process that allocated it: it feeds them to profil(2)",
                self.allocation.event
            ),
        )
        .with_help(
            "sample another process (Pmc::attach with Target::Pid, or Target::Exec for a command launched paused), or use system scope (Allocation::system)",
        ))
    }

    /// A PMC whose records go to the log (sampling, or LOG_PROCCSW /
    /// LOG_PROCEXIT), in a Backend without a log while another Backend of
    /// this process holds hwpmc's one log: the kernel would start it (the
    /// process owns a log: `pmc_start()` tests the owner's
    /// PMC_PO_OWNS_LOGFILE) and write its records to the other Backend's
    /// sink. Refused instead.
    fn refuse_foreign_log(&self) -> Result<()> {
        let logs = self.allocation.mode.is_sampling()
            || self.allocation.flags.contains(Flags::LOG_PROCCSW)
            || self.allocation.flags.contains(Flags::LOG_PROCEXIT);
        if !logs || self.inner.has_log() || !kernel_logs().contains(&self.inner.log_key()) {
            return Ok(());
        }
        Err(Error::new(
            ErrorKind::LogRequired,
            Op::Start,
            format!(
                "{} writes to hwpmc's log, which another pmc_freebsd::Backend in this process holds: the kernel keeps one log per process, so its records would go to that Backend's sink",
                self.allocation.event
            ),
        )
        .with_help("allocate it from the Backend that holds the log, or drop that Backend and configure_log on this one"))
    }

    /// Whether a `PMC_F_DESCENDANTS` attach to `target` would take in the
    /// owner (this process): `target` is one of its ancestors. hwpmc then
    /// links the owner too (`hwpmc_mod.c`@009268db `pmc_attach_process()`
    /// walks the target's `p_children`), `pmc_link_target_process()` sets
    /// `PMC_F_ATTACHED_TO_OWNER` ("if (pm->pm_owner->po_owner ==
    /// pp->pp_proc) pm->pm_flags |= PMC_F_ATTACHED_TO_OWNER"), and
    /// `pmc_process_samples()` then sends every sample of the PMC to
    /// profil(2), none to the log. The ancestors come from
    /// [`Sys::parent_pid`]; where it cannot tell, this says no.
    fn subtree_holds_owner(&self, target: Target) -> bool {
        if !self.allocation.flags.contains(Flags::DESCENDANTS) {
            return false;
        }
        let (Target::Pid(t) | Target::Exec(t)) = target else {
            return false;
        };
        let Ok(t) = i32::try_from(t) else {
            return false;
        };
        let mut pid = self.inner.sys.current_pid();
        // A bounded walk: pid 1 (init) or 0 ends it, as does a loop.
        for _ in 0..4096 {
            if pid == t {
                return true;
            }
            if pid <= 1 {
                return false;
            }
            match self.inner.sys.parent_pid(pid) {
                Some(parent) if parent != pid => pid = parent,
                _ => return false,
            }
        }
        false
    }

    /// The hwpmc handles: `(cpu, pmcid)`, one per CPU for system scope.
    pub fn pmc_ids(&self) -> &[(Option<u32>, u32)] {
        &self.ids
    }

    fn ctx(&self, cpu: Option<u32>) -> Context {
        Context {
            system: self.allocation.scope.is_system(),
            sampling: self.allocation.mode.is_sampling(),
            cpu,
            event: Some(self.allocation.event.to_string()),
            ..Context::default()
        }
    }

    /// START or STOP on every per-CPU PMC. A START that fails part-way
    /// stops the ones already started, so the PMC stays all-or-nothing.
    fn simple(&self, op: PmcOp) -> Result<()> {
        for (i, (cpu, id)) in self.ids.iter().enumerate() {
            let mut s = pmc_op_simple { pm_pmcid: *id };
            let arg = match op {
                PmcOp::PmcStart => OpArg::PmcStart(&mut s),
                _ => OpArg::PmcStop(&mut s),
            };
            if let Err(e) = self.inner.sys.call(arg) {
                if op == PmcOp::PmcStart {
                    for (_, started) in &self.ids[..i] {
                        let mut s = pmc_op_simple { pm_pmcid: *started };
                        let _ = self.inner.sys.call(OpArg::PmcStop(&mut s));
                    }
                }
                return Err(self.inner.err(op, e, &self.ctx(*cpu)));
            }
        }
        Ok(())
    }

    /// The error hwpmc gives for what the life cycle refused (the same errno
    /// through the same map, so the same message as the kernel's answer).
    fn refused(&self, op: PmcOp, r: Refusal, pid: Option<i32>) -> Error {
        let mut ctx = self.ctx(self.ids.first().and_then(|(cpu, _)| *cpu));
        ctx.write = r.op() == Op::Write;
        ctx.pid = pid;
        self.inner.err(op, Errno(r.hwpmc_errno()), &ctx)
    }

    fn attach_op(&mut self, target: Target, detach: bool) -> Result<()> {
        let pid = match target {
            Target::Current => 0,
            Target::CurrentThread => {
                return Err(Error::new(
                    ErrorKind::NotSupported,
                    if detach { Op::Detach } else { Op::Attach },
                    "hwpmc counts whole processes: there is no per-thread target on FreeBSD",
                )
                .with_help("attach Target::Current (every thread of the calling process)"));
            }
            Target::Pid(p) | Target::Exec(p) => i32::try_from(p).map_err(|_| {
                Error::new(
                    ErrorKind::InvalidArgument,
                    if detach { Op::Detach } else { Op::Attach },
                    format!("pid {p} is out of range"),
                )
            })?,
        };
        let op = if detach {
            PmcOp::PmcDetach
        } else {
            PmcOp::PmcAttach
        };
        let me = self.inner.sys.current_pid();
        let ctx_pid = if pid == 0 { me } else { pid };
        if !detach {
            // PMC_OP_PMCATTACH's checks of the PMC itself (system scope: EINVAL;
            // running: EBUSY), answered here as hwpmc would. Detach and the target
            // rules stay the kernel's: it keeps the real target set (descendants
            // added, exited targets dropped) and tells ESRCH from EINVAL.
            self.life
                .check_process_scope(Op::Attach)
                .and_then(|()| self.life.check_stopped(Op::Attach))
                .map_err(|r| self.refused(op, r, Some(ctx_pid)))?;
        }
        let attached = self.life.is_attached(target);
        // hwpmc's refusal of an attach (EEXIST, EBUSY) clears P_HWPMC on a
        // process that may still be measured, and with DESCENDANTS detaches
        // the whole subtree again (see `attach_guard`): what this PMC
        // already targets is refused here, unsent; the processes that have
        // the flag now are noted, to give it back if the kernel refuses.
        let guard = if detach {
            None
        } else {
            Some(self.attach_guard(ctx_pid, op)?)
        };
        for (cpu, id) in &self.ids {
            let mut a = pmc_op_pmcattach {
                pm_pmc: *id,
                pm_pid: pid,
            };
            let arg = if detach {
                OpArg::PmcDetach(&mut a)
            } else {
                OpArg::PmcAttach(&mut a)
            };
            if let Err(e) = self.inner.sys.call(arg) {
                let mut ctx = self.ctx(*cpu);
                ctx.pid = Some(ctx_pid);
                ctx.attached = Some(attached);
                if let (Some(had), Errno::EBUSY | Errno::EEXIST) = (&guard, e) {
                    ctx.flag_repair = Some(self.inner.restore_hwpmc(had));
                }
                return Err(self.inner.err(op, e, &ctx));
            }
        }
        if detach {
            self.life.record_detach(target);
        } else {
            self.life.record_attach(target);
        }
        Ok(())
    }

    /// The processes an attach to `pid` takes in: `pid`, and with
    /// `PMC_F_DESCENDANTS` its whole subtree as hwpmc walks it
    /// (`pmc_attach_process()` follows `p_children`), read through
    /// [`Sys::children`] (only `pid` where that is unknown). Bounded.
    fn target_set(&self, pid: i32) -> std::collections::BTreeSet<i32> {
        let mut set = std::collections::BTreeSet::from([pid]);
        if !self.allocation.flags.contains(Flags::DESCENDANTS) {
            return set;
        }
        let mut todo = vec![pid];
        while let Some(p) = todo.pop() {
            for c in self.inner.sys.children(p).unwrap_or_default() {
                if set.len() >= 1 << 16 {
                    return set;
                }
                if set.insert(c) {
                    todo.push(c);
                }
            }
        }
        set
    }

    /// Before a PMCATTACH to `pid`: refuses, unsent, an attach hwpmc would
    /// answer with EEXIST, and returns the processes of the attach that
    /// have `P_HWPMC` now.
    ///
    /// `hwpmc_mod.c`@009268db `pmc_attach_one_process()` sets P_HWPMC on
    /// the process, finds "pp->pp_pmcs[ri].pp_pmc == pm" (EEXIST) or
    /// another PMC at the row (EBUSY), and then "fail: ... p->p_flag &=
    /// ~P_HWPMC;" whatever else measures the process: the scheduler stops
    /// switching its PMCs in and out, its forks and exit are no longer
    /// followed. With DESCENDANTS `pmc_attach_process()` then runs
    /// "(void)pmc_detach_process(top, pm);": the whole subtree loses this
    /// PMC, and a PMC left without targets loses PMC_F_ATTACH_DONE, so its
    /// next PMCSTART attaches it to its owner (freebsd-audit-3 finding B).
    ///
    /// EEXIST is knowable: this PMC's targets (and their subtrees with
    /// DESCENDANTS) meet the processes this attach takes in. EBUSY is not:
    /// the PMCs of one owner never share a row (`pmc_can_allocate_rowindex()`
    /// refuses an owner a second process PMC on a row), so only another
    /// process's PMC can hold the row, and hwpmc tells no one which rows
    /// a process's PMCs use. For that case the caller gives P_HWPMC back
    /// to the processes that had it ([`Inner::restore_hwpmc`]).
    fn attach_guard(&self, pid: i32, op: PmcOp) -> Result<Vec<i32>> {
        let new = self.target_set(pid);
        for t in self.life.targets() {
            let tp = i32::try_from(self.life.pid_of(*t)).unwrap_or(-1);
            let held = self.target_set(tp);
            if let Some(common) = new.intersection(&held).next() {
                let mut ctx = self.ctx(self.ids.first().and_then(|(cpu, _)| *cpu));
                ctx.pid = Some(pid);
                ctx.not_sent = Some(*common);
                return Err(self.inner.err(op, Errno::EEXIST, &ctx));
            }
        }
        Ok(new
            .into_iter()
            .filter(|p| self.inner.sys.uses_hwpmc(*p) == Some(true))
            .collect())
    }

    fn rw(&self, id: u32, cpu: Option<u32>, new: Option<u64>) -> Result<u64> {
        let mut rw = pmc_op_pmcrw {
            pm_flags: PMC_F_OLDVALUE | if new.is_some() { PMC_F_NEWVALUE } else { 0 },
            pm_pmcid: id,
            pm_value: new.unwrap_or(0),
        };
        self.inner.sys.call(OpArg::PmcRw(&mut rw)).map_err(|e| {
            let mut ctx = self.ctx(cpu);
            ctx.write = new.is_some();
            self.inner.err(PmcOp::PmcRw, e, &ctx)
        })?;
        Ok(rw.pm_value)
    }

    fn times(&self) -> u64 {
        let mut d = self.ran;
        if let Some(s) = self.running_since {
            d += s.elapsed();
        }
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        if ns == 0 && (self.running_since.is_some() || self.life.state() == State::Stopped) {
            1
        } else {
            ns
        }
    }

    /// hwpmc keeps a sampling PMC's recent samples in per-CPU rings until
    /// the next hardclock tick, and then logs only those whose PMC still
    /// runs (`hwpmc_mod.c`@009268db `pmc_process_samples()`: "/* skip
    /// non-running samples */ if (pm->pm_state != PMC_STATE_RUNNING) goto
    /// entrydone;"); PMCSTOP and PMCRELEASE do not drain the rings. So
    /// before stopping or releasing a running sampling PMC, FLUSHLOG, which
    /// processes every CPU's ring first (`hwpmc_logging.c` `pmclog_flush()`
    /// -> `pmclog_schedule_all()` -> `pmclog_schedule_one_cond()`: "if
    /// (PMC_CPU_HAS_SAMPLES(cpu)) PMC_CALL_HOOK_UNLOCKED(curthread,
    /// PMC_FN_DO_SAMPLES, NULL)"). Errors are ignored: without a log there
    /// is nothing to keep.
    ///
    /// With `Flags::USERCALLCHAIN` a sample taken in the kernel waits in
    /// the ring until its thread returns to user mode, whose AST appends
    /// the user callchain only while the PMC runs
    /// (`pmc_capture_user_callchain()`: "if (ps->ps_td != td ||
    /// ps->ps_nsamples != PMC_USER_CALLCHAIN_PENDING ||
    /// ps->ps_pmc->pm_state != PMC_STATE_RUNNING) continue;"); the sweep
    /// keeps such a sample at most a tick ("if (ticks - ps->ps_ticks > 1)
    /// ... goto entrydone;"). So for such a PMC the flush is repeated after
    /// two ticks (`2 / kern.hz` s) of the PMC still running: the samples
    /// whose return came in time are then logged, the others were lost to
    /// the kernel's own limit, not to the stop.
    fn drain_samples(&self) {
        if !self.allocation.mode.is_sampling() || self.life.state() != State::Running {
            return;
        }
        let has_log = self
            .inner
            .log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some();
        if has_log {
            let _ = self.inner.sys.call(OpArg::FlushLog);
            if self.allocation.flags.contains(Flags::USERCALLCHAIN) {
                let tick_ns = 1_000_000_000 / self.inner.hz.max(1);
                self.inner
                    .sys
                    .pause(Duration::from_nanos(tick_ns.saturating_mul(2)));
                let _ = self.inner.sys.call(OpArg::FlushLog);
            }
        }
    }

    fn do_release(&mut self) -> Result<()> {
        if self.released {
            return Ok(());
        }
        self.released = true;
        self.drain_samples();
        let mut first = None;
        for (cpu, id) in &self.ids {
            let mut s = pmc_op_simple { pm_pmcid: *id };
            if let Err(e) = self.inner.sys.call(OpArg::PmcRelease(&mut s)) {
                first.get_or_insert_with(|| self.inner.err(PmcOp::PmcRelease, e, &self.ctx(*cpu)));
            }
        }
        first.map_or(Ok(()), Err)
    }
}

impl<S: Sys> Drop for FreebsdPmc<S> {
    fn drop(&mut self) {
        let _ = self.do_release();
    }
}

impl<S: Sys + 'static> pmc_core::Pmc for FreebsdPmc<S> {
    fn allocation(&self) -> &Allocation {
        &self.allocation
    }

    fn state(&self) -> State {
        self.life.state()
    }

    fn attach(&mut self, target: Target) -> Result<()> {
        if self.allocation.mode.is_sampling()
            && !self.allocation.scope.is_system()
            && self.life.is_owner(target)
        {
            return self.refuse_sampling_self(Op::Attach);
        }
        if self.allocation.mode.is_sampling()
            && !self.allocation.scope.is_system()
            && self.subtree_holds_owner(target)
        {
            return Err(Error::new(
                ErrorKind::NotSupported,
                Op::Attach,
                format!(
                    "{target:?} is an ancestor of this process: with descendants, hwpmc would attach this process too and then feed every sample of {} to profil(2), logging none",
                    self.allocation.event
                ),
            )
            .with_help(
                "attach without Flags::DESCENDANTS, attach to a process that is not an ancestor (e.g. Target::Exec for a command launched paused), or use system scope (Allocation::system)",
            ));
        }
        self.attach_op(target, false)
    }

    fn detach(&mut self, target: Target) -> Result<()> {
        self.attach_op(target, true)
    }

    fn targets(&self) -> Vec<Target> {
        self.life.targets().to_vec()
    }

    fn start(&mut self) -> Result<()> {
        if !self.life.start_needed() {
            return Ok(());
        }
        // Started without a target, hwpmc attaches it to its owner
        // (hwpmc_mod.c:pmc_start), which for sampling logs nothing.
        if self.allocation.mode.is_sampling() && self.life.start_attaches_owner() {
            return self.refuse_sampling_self(Op::Start);
        }
        self.refuse_foreign_log()?;
        self.simple(PmcOp::PmcStart)?;
        // Running, and attached to the owner if it had no target.
        self.life.record_start();
        self.running_since = Some(Instant::now());
        Ok(())
    }

    fn stop(&mut self) -> Result<()> {
        if !self.life.stop_needed() {
            // Nothing to stop. (hwpmc answers EINVAL for a PMC that never
            // started; like the other backends, this is a no-op.)
            return Ok(());
        }
        self.drain_samples();
        self.simple(PmcOp::PmcStop)?;
        self.life.record_stop();
        if let Some(s) = self.running_since.take() {
            self.ran += s.elapsed();
        }
        Ok(())
    }

    /// Counting PMCs only: hwpmc reads a system sampling PMC as its
    /// reload-down counter (the events left until the next sample,
    /// `hwpmc_core.c:iap_read_pmc`) and a process sampling PMC as
    /// `pm_savedvalue` (0 unless written), never an event total, so `read`
    /// refuses them ([`ErrorKind::NotSupported`]); a system PMC's
    /// countdown is `FreebsdPmc::sample_countdown`.
    fn read(&self) -> Result<Reading> {
        if self.allocation.mode.is_sampling() {
            return Err(Error::new(
                ErrorKind::NotSupported,
                Op::Read,
                format!(
                    "hwpmc reads a sampling PMC ({}) as the countdown to its next sample (system scope) or a saved value sampling never changes (process scope), not as an event total",
                    self.allocation.event
                ),
            )
            .with_help(
                "allocate a counting PMC for totals (Allocation::counting), or count the samples in the log; FreebsdPmc::sample_countdown gives a system PMC's countdown",
            ));
        }
        let mut total = 0u64;
        for (cpu, id) in &self.ids {
            total = total.wrapping_add(self.rw(*id, *cpu, None)?);
        }
        let t = self.times();
        Ok(Reading::new(total.saturating_mul(self.ns_per_unit()), t, t))
    }

    fn read_instances(&self) -> Result<Vec<InstanceReading>> {
        let t = self.times();
        if self.allocation.scope.is_system() {
            let mut out = Vec::with_capacity(self.ids.len());
            for (cpu, id) in &self.ids {
                let v = self.rw(*id, *cpu, None)?.saturating_mul(self.ns_per_unit());
                out.push(InstanceReading {
                    instance: Instance::Cpu(cpu.unwrap_or(0)),
                    reading: Reading::new(v, t, t),
                });
            }
            return Ok(out);
        }
        match self.life.targets() {
            [one] => Ok(vec![InstanceReading {
                instance: Instance::Target(*one),
                reading: self.read()?,
            }]),
            _ => Err(Error::new(
                ErrorKind::NotSupported,
                Op::Read,
                format!(
                    "hwpmc reads a process PMC only as the total over its {} targets",
                    self.life.targets().len()
                ),
            )
            .with_help("use one PMC per target, or read() for the total")),
        }
    }

    fn write(&mut self, value: u64) -> Result<u64> {
        // PMC_OP_PMCRW with PMC_F_NEWVALUE on a running PMC: EBUSY.
        self.life
            .check_stopped(Op::Write)
            .map_err(|r| self.refused(PmcOp::PmcRw, r, None))?;
        let mut old = 0u64;
        let unit = self.ns_per_unit();
        for (i, (cpu, id)) in self.ids.clone().into_iter().enumerate() {
            let v = if i == 0 { value / unit } else { 0 };
            old = old.wrapping_add(self.rw(id, cpu, Some(v))?);
        }
        Ok(old.saturating_mul(unit))
    }

    /// Sampling PMCs: `PMC_OP_PMCSETCOUNT`, the reload count of every
    /// per-CPU PMC. Counting PMCs: the count starts from `count`. hwpmc's
    /// SETCOUNT of a counting PMC only sets `pm_initial`, which only
    /// `pmc_start()` of a system PMC loads (`hwpmc_mod.c`@009268db
    /// PMC_OP_PMCSETCOUNT: "else pm->pm_sc.pm_initial = sc.pm_count"): a
    /// process PMC would ignore it. So a counting PMC gets SETCOUNT (for the
    /// next start of a system PMC) and a `PMC_F_NEWVALUE` write (the value
    /// read from now on, and what a process PMC counts on from), as
    /// [`write`](pmc_core::Pmc::write) does: all of `count` on the first
    /// CPU, 0 on the others.
    fn set_count(&mut self, count: u64) -> Result<()> {
        // PMC_OP_PMCSETCOUNT on a running PMC: EBUSY.
        self.life
            .check_stopped(Op::SetCount)
            .map_err(|r| self.refused(PmcOp::PmcSetCount, r, None))?;
        // A portable clock's count is nanoseconds; hwpmc's is ticks.
        let count = to_kernel_units(&self.allocation.event, count, self.inner.hz);
        let sampling = self.allocation.mode.is_sampling();
        for (i, (cpu, id)) in self.ids.clone().into_iter().enumerate() {
            let this = if sampling || i == 0 { count } else { 0 };
            let mut s = pmc_op_pmcsetcount {
                pm_count: this,
                pm_pmcid: id,
            };
            self.inner
                .sys
                .call(OpArg::PmcSetCount(&mut s))
                .map_err(|e| self.inner.err(PmcOp::PmcSetCount, e, &self.ctx(cpu)))?;
            if !sampling {
                self.rw(id, cpu, Some(this))?;
            }
        }
        self.count = count;
        Ok(())
    }

    fn native_config(&self) -> Vec<NativeField> {
        let f = |n: &str, v: String| NativeField {
            name: n.to_owned(),
            value: v,
        };
        let mode = match (
            self.allocation.scope.is_system(),
            self.allocation.mode.is_sampling(),
        ) {
            (true, true) => "PMC_MODE_SS",
            (true, false) => "PMC_MODE_SC",
            (false, true) => "PMC_MODE_TS",
            (false, false) => "PMC_MODE_TC",
        };
        let w = self.encoding.md.words();
        vec![
            f("event", self.encoding.name.clone()),
            f("pm_class", format!("{:#x}", self.encoding.class)),
            f("pm_ev", format!("{:#x}", self.encoding.ev)),
            f("pm_mode", mode.to_owned()),
            f("pm_caps", format!("{:#x}", self.encoding.caps)),
            f("pm_flags", format!("{:#x}", self.encoding.flags)),
            f("pm_count", self.count.to_string()),
            f(
                "pm_md",
                format!("{:#x} {:#x} {:#x} {:#x}", w[0], w[1], w[2], w[3]),
            ),
            f(
                "pm_pmcid",
                self.ids
                    .iter()
                    .map(|(_, id)| format!("{id:#x}"))
                    .collect::<Vec<_>>()
                    .join(","),
            ),
        ]
        .into_iter()
        .chain(
            matches!(
                self.encoding.class,
                PMC_CLASS_IAF | PMC_CLASS_IAP | PMC_CLASS_K8
            )
            .then(|| {
                f(
                    "freebsd-name",
                    events::freebsd_pmclog_name(self.encoding.ev, self.encoding.flags).describe(),
                )
            }),
        )
        .chain(self.rate_warning.clone().map(|w| f("warning", w)))
        .collect()
    }

    fn release(mut self) -> Result<()> {
        self.do_release()
    }
}
