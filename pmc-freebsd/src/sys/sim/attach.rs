//! PMC_OP_PMCATTACH / PMCDETACH: targets, debuggability, descendants, and
//! the process flag `P_HWPMC` that decides whether hwpmc sees a process at
//! all.
//!
//! `P_HWPMC`, the process flag hwpmc's scheduler, fork, exec and exit hooks
//! test, is set by an attach and by allocation (on the owner) and cleared when
//! no PMC targets a process, and also by a refused attach (EEXIST, EBUSY) on a
//! process still measured: its PMCs then stop counting, its forks and exit are
//! not followed. A refused attach with `PMC_F_DESCENDANTS` detaches the whole
//! subtree again; a PMC left without targets attaches to its owner at its next
//! start.

use super::log::LogRecord;
use super::{PState, Signal, State};
use crate::errno::Errno;
use crate::sys::abi::*;

impl State {
    pub(super) fn target_pid(&self, pid: i32) -> Result<i32, Errno> {
        if pid < 0 {
            return Err(Errno::EINVAL);
        }
        let pid = if pid == 0 { self.current } else { pid };
        if !self.procs.contains_key(&pid) {
            return Err(Errno::ESRCH);
        }
        Ok(pid)
    }

    pub(super) fn can_debug(&self, pid: i32) -> bool {
        if pid == self.current || self.is_privileged() {
            return true;
        }
        self.cfg.unprivileged_proc_debug && self.procs.get(&pid).is_some_and(|p| p.debuggable)
    }

    /// `pid` and its descendants, in the order hwpmc walks them: the
    /// process, then depth first through `p_children`, newest child first
    /// (fork inserts at the head of the list).
    pub(super) fn descendants(&self, pid: i32) -> Vec<i32> {
        let mut out = Vec::new();
        let mut stack = vec![pid];
        while let Some(p) = stack.pop() {
            out.push(p);
            if out.len() > 100_000 {
                break;
            }
            // Pushed oldest first, so the newest (highest pid) pops first.
            stack.extend(
                self.procs
                    .iter()
                    .filter(|(c, pr)| pr.parent == p && **c != p)
                    .map(|(c, _)| *c),
            );
        }
        out
    }

    /// Whether hwpmc sees `pid` at all: `P_HWPMC` in its `p_flag`.
    /// `freebsd/freebsd-src` `sys/sys/pmckern.h`@039ea811
    /// `PMC_PROC_IS_USING_PMCS(p)`: "(__predict_false(atomic_load_acq_int(
    /// &(p)->p_flag) & P_HWPMC))", which the schedulers test before calling
    /// hwpmc at a context switch (`sys/kern/sched_ule.c`@d8d5f036
    /// `sched_switch()`: "if (PMC_PROC_IS_USING_PMCS(td->td_proc))
    /// PMC_SWITCH_CONTEXT(td, PMC_FN_CSW_OUT);"), and `hwpmc_mod.c`@009268db
    /// tests in `pmc_process_exec()` ("is_using_hwpmcs = (p->p_flag &
    /// P_HWPMC) != 0;"), `pmc_process_exit()` and `pmc_process_fork()`.
    pub(super) fn uses_hwpmc(&self, pid: i32) -> bool {
        self.procs.get(&pid).is_some_and(|p| p.hwpmc)
    }

    fn set_hwpmc(&mut self, pid: i32, on: bool) {
        if let Some(p) = self.procs.get_mut(&pid) {
            p.hwpmc = on;
        }
    }

    /// PMC_OP_PMCATTACH, `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db `pmc_do_op_pmcattach()`: "if
    /// (a.pm_pid < 0) { return (EINVAL); } else if (a.pm_pid == 0) {
    /// a.pm_pid = td->td_proc->p_pid; }", `pmc_find_pmc()`, "if
    /// (PMC_IS_SYSTEM_MODE(PMC_TO_MODE(pm))) return (EINVAL);", "if
    /// (pm->pm_state == PMC_STATE_RUNNING) { return (EBUSY); }", "if ((p =
    /// pfind(a.pm_pid)) == NULL) return (ESRCH);", then "error =
    /// p_candebug(curthread, p);" and `pmc_attach_process()`.
    pub(super) fn attach(&mut self, a: &mut pmc_op_pmcattach) -> Result<(), Errno> {
        if a.pm_pid < 0 {
            return Err(Errno::EINVAL);
        }
        let key = self.find(a.pm_pmc)?;
        let p = self.pmcs.get(&key).ok_or(Errno::EINVAL)?;
        if p.is_system() {
            return Err(Errno::EINVAL);
        }
        if p.state == PState::Running {
            return Err(Errno::EBUSY);
        }
        let pid = self.target_pid(a.pm_pid)?;
        if !self.can_debug(pid) {
            return Err(Errno::EPERM);
        }
        self.attach_process(key, pid)
    }

    /// `hwpmc_mod.c`@009268db `pmc_attach_process()`: without DESCENDANTS
    /// "return (pmc_attach_one_process(p, pm));"; with it, every process of
    /// the subtree in turn, "if ((error = pmc_attach_one_process(p, pm)) !=
    /// 0) break;", and on the first failure "if (error != 0)
    /// (void)pmc_detach_process(top, pm);": the whole subtree is detached
    /// again, the processes attached before this call included, and the
    /// PMC, left without targets, loses PMC_F_ATTACH_DONE, so its next
    /// PMCSTART attaches it to its owner. (No "GETMSR was used" refusal:
    /// its test of `PMC_PP_ENABLE_MSR_ACCESS`, a process-descriptor flag,
    /// in `pm_flags` is dead.)
    pub(super) fn attach_process(&mut self, key: (i32, u32), top: i32) -> Result<(), Errno> {
        let descendants = self.pmcs.get(&key).ok_or(Errno::EINVAL)?.flags & PMC_F_DESCENDANTS != 0;
        if !descendants {
            return self.attach_one_process(key, top);
        }
        for pid in self.descendants(top) {
            if let Err(e) = self.attach_one_process(key, pid) {
                self.detach_process(key, top);
                return Err(e);
            }
        }
        Ok(())
    }

    /// `hwpmc_mod.c`@009268db `pmc_attach_one_process()`: first "p->p_flag
    /// |= P_HWPMC;", then "if (pp->pp_pmcs[ri].pp_pmc == pm) {/* already
    /// present at slot [ri] */ error = EEXIST; goto fail; }", "if
    /// (pp->pp_pmcs[ri].pp_pmc != NULL) { error = EBUSY; goto fail; }", and
    /// the failure path "fail: PROC_LOCK(p); p->p_flag &= ~P_HWPMC;" whatever
    /// else measures the process: its other PMCs stop counting (the
    /// scheduler no longer calls hwpmc for it), its forks and exit are no
    /// longer followed. On success `pmc_link_target_process()` ("if
    /// (pm->pm_owner->po_owner == pp->pp_proc) pm->pm_flags |=
    /// PMC_F_ATTACHED_TO_OWNER"), "if (PMC_IS_SAMPLING_MODE(PMC_TO_MODE(pm))
    /// && (pm->pm_flags & PMC_F_ATTACHED_TO_OWNER) == 0) pm->pm_flags |=
    /// PMC_F_NEEDS_LOGFILE;", "pm->pm_flags |= PMC_F_ATTACH_DONE;" and, with
    /// a log, one PMCATTACH record per process
    /// ("pmclog_process_pmcattach(pm, p->p_pid, fullpath);") and, for a
    /// sampling PMC, the process's mappings (`State::log_process_mappings`).
    pub(super) fn attach_one_process(&mut self, key: (i32, u32), pid: i32) -> Result<(), Errno> {
        self.set_hwpmc(pid, true);
        let p = self.pmcs.get(&key).ok_or(Errno::EINVAL)?;
        let row = p.row;
        let error = if p.targets.contains_key(&pid) {
            Some(Errno::EEXIST)
        } else if self
            .pmcs
            .iter()
            .any(|(k, o)| *k != key && o.row == row && o.targets.contains_key(&pid))
        {
            Some(Errno::EBUSY)
        } else {
            None
        };
        if let Some(e) = error {
            self.set_hwpmc(pid, false);
            return Err(e);
        }
        let path = self
            .procs
            .get(&pid)
            .map(|p| p.path.clone())
            .unwrap_or_default();
        let p = self.pmc_mut(key)?;
        p.targets.insert(pid, 0);
        if pid == p.owner {
            p.flags |= PMC_F_ATTACHED_TO_OWNER;
        }
        if p.is_sampling() && p.flags & PMC_F_ATTACHED_TO_OWNER == 0 {
            p.flags |= PMC_F_NEEDS_LOGFILE;
        }
        p.flags |= PMC_F_ATTACH_DONE;
        let (id, sampling) = (p.id, p.is_sampling());
        self.emit(
            key.0,
            LogRecord::PmcAttach {
                pmcid: id,
                pid,
                path,
            },
        );
        // "if (PMC_IS_SAMPLING_MODE(PMC_TO_MODE(pm)))
        // pmc_log_process_mappings(pm->pm_owner, p);"
        if sampling {
            self.log_process_mappings(key.0, pid);
        }
        Ok(())
    }

    /// PMC_OP_PMCDETACH, `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db `pmc_do_op_pmcdetach()`: "if
    /// (a.pm_pid < 0) { return (EINVAL); }", `pmc_find_pmc()`, "if ((p =
    /// pfind(a.pm_pid)) == NULL) return (ESRCH);", then "error =
    /// pmc_detach_process(p, pm);" (no system-mode check: a system PMC is
    /// at no process's row, so `pmc_detach_one_process()` answers ESRCH or
    /// EINVAL).
    pub(super) fn detach(&mut self, a: &mut pmc_op_pmcattach) -> Result<(), Errno> {
        if a.pm_pid < 0 {
            return Err(Errno::EINVAL);
        }
        let key = self.find(a.pm_pmc)?;
        let pid = self.target_pid(a.pm_pid)?;
        let descendants = self.pmcs.get(&key).ok_or(Errno::EINVAL)?.flags & PMC_F_DESCENDANTS != 0;
        if !descendants {
            return self.detach_one_process(key, pid);
        }
        self.detach_process(key, pid);
        Ok(())
    }

    /// `hwpmc_mod.c`@009268db `pmc_detach_process()` with DESCENDANTS:
    /// every process of the subtree, "(void)pmc_detach_one_process(p, pm,
    /// PMC_FLAG_REMOVE);" ("We ignore errors since we could be detaching a
    /// PMC from a partially attached proc tree."), then "if
    /// (LIST_EMPTY(&pm->pm_targets)) pm->pm_flags &= ~PMC_F_ATTACH_DONE;".
    /// Without DESCENDANTS, only `top`.
    pub(super) fn detach_process(&mut self, key: (i32, u32), top: i32) {
        let descendants = self
            .pmcs
            .get(&key)
            .is_some_and(|p| p.flags & PMC_F_DESCENDANTS != 0);
        if !descendants {
            let _ = self.detach_one_process(key, top);
            return;
        }
        for pid in self.descendants(top) {
            let _ = self.detach_one_process(key, pid);
        }
        if let Some(p) = self.pmcs.get_mut(&key) {
            if p.targets.is_empty() {
                p.flags &= !PMC_F_ATTACH_DONE;
            }
        }
    }

    /// `hwpmc_mod.c`@009268db `pmc_detach_one_process()`: "if ((pp =
    /// pmc_find_process_descriptor(p, 0)) == NULL) return (ESRCH);" (no PMC
    /// targets the process), "if (pp->pp_pmcs[ri].pp_pmc != pm) return
    /// (EINVAL);", then `pmc_unlink_target_process()` (SIGIO to the owner
    /// of a PMC left without targets: "if (LIST_EMPTY(&pm->pm_targets)) {
    /// ... kern_psignal(p, SIGIO);"), a PMCDETACH record, and once no PMC
    /// targets the process, "p->p_flag &= ~P_HWPMC;".
    pub(super) fn detach_one_process(&mut self, key: (i32, u32), pid: i32) -> Result<(), Errno> {
        if self.pmcs_targeting(pid).is_empty() {
            return Err(Errno::ESRCH);
        }
        let p = self.pmc_mut(key)?;
        if p.targets.remove(&pid).is_none() {
            return Err(Errno::EINVAL);
        }
        // pmc_unlink_target_process(): "LIST_FOREACH(pt, &pp->pp_tds,
        // pt_next) pt->pt_pmcs[ri].pt_pmcval = (pmc_value_t)0;".
        p.thread_left.retain(|(tp, _), _| *tp != pid);
        if pid == p.owner {
            p.flags &= !PMC_F_ATTACHED_TO_OWNER;
        }
        let (id, empty) = (p.id, p.targets.is_empty());
        if empty {
            self.signals.push((key.0, Signal::Io));
        }
        self.emit(key.0, LogRecord::PmcDetach { pmcid: id, pid });
        if self.pmcs_targeting(pid).is_empty() {
            self.set_hwpmc(pid, false);
        }
        Ok(())
    }
}
