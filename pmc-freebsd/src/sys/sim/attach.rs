//! PMC_OP_PMCATTACH / PMCDETACH: targets, debuggability, descendants.

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

    pub(super) fn descendants(&self, pid: i32) -> Vec<i32> {
        let mut out = vec![pid];
        let mut i = 0;
        while i < out.len() {
            let parent = out[i];
            out.extend(
                self.procs
                    .iter()
                    .filter(|(c, p)| p.parent == parent && **c != parent)
                    .map(|(c, _)| *c),
            );
            i += 1;
            if out.len() > 100_000 {
                break;
            }
        }
        out
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
        self.attach_checked(key, pid)
    }

    pub(super) fn attach_checked(&mut self, key: (i32, u32), pid: i32) -> Result<(), Errno> {
        if !self.can_debug(pid) {
            return Err(Errno::EPERM);
        }
        let p = self.pmcs.get(&key).ok_or(Errno::EINVAL)?;
        // No "GETMSR was used" refusal: hwpmc_mod.c:pmc_attach_process tests
        // `pm->pm_flags & PMC_PP_ENABLE_MSR_ACCESS`, a process-descriptor
        // flag (0x1, the never-set PMC_F_UNUSED1 in pm_flags), so the check
        // is dead and the attach goes ahead.
        // hwpmc_mod.c:pmc_attach_one_process: same PMC at the row: EEXIST;
        // another PMC at the row: EBUSY.
        if p.targets.contains_key(&pid) {
            return Err(Errno::EEXIST);
        }
        let row = p.row;
        let busy = self
            .pmcs
            .iter()
            .any(|(k, o)| *k != key && o.row == row && o.targets.contains_key(&pid));
        if busy {
            return Err(Errno::EBUSY);
        }
        let pids = if p.flags & PMC_F_DESCENDANTS != 0 {
            self.descendants(pid)
        } else {
            vec![pid]
        };
        let path = self
            .procs
            .get(&pid)
            .map(|p| p.path.clone())
            .unwrap_or_default();
        let id = key.1;
        let p = self.pmc_mut(key)?;
        // A sampling PMC attached to another process logs its samples, so
        // it needs a log (hwpmc_mod.c); attached to its owner, it feeds
        // profil(2) instead.
        if p.is_sampling() && p.flags & PMC_F_ATTACHED_TO_OWNER == 0 && pid != p.owner {
            p.flags |= PMC_F_NEEDS_LOGFILE;
        }
        for t in pids {
            p.targets.entry(t).or_insert(0);
        }
        // hwpmc_mod.c@009268db pmc_link_target_process, for each process of
        // the (DESCENDANTS) subtree: "if (pm->pm_owner->po_owner ==
        // pp->pp_proc) pm->pm_flags |= PMC_F_ATTACHED_TO_OWNER", so an
        // attach to an ancestor of the owner takes the owner in too.
        if p.targets.contains_key(&p.owner) {
            p.flags |= PMC_F_ATTACHED_TO_OWNER;
        }
        p.flags |= PMC_F_ATTACH_DONE;
        self.emit(
            key.0,
            LogRecord::PmcAttach {
                pmcid: id,
                pid,
                path,
            },
        );
        Ok(())
    }

    /// PMC_OP_PMCDETACH, `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db `pmc_do_op_pmcdetach()`: "if
    /// (a.pm_pid < 0) { return (EINVAL); }", `pmc_find_pmc()`, "if ((p =
    /// pfind(a.pm_pid)) == NULL) return (ESRCH);", then
    /// `pmc_detach_process()` (no system-mode check).
    pub(super) fn detach(&mut self, a: &mut pmc_op_pmcattach) -> Result<(), Errno> {
        if a.pm_pid < 0 {
            return Err(Errno::EINVAL);
        }
        let key = self.find(a.pm_pmc)?;
        let p = self.pmcs.get(&key).ok_or(Errno::EINVAL)?;
        // PMC_OP_PMCDETACH has no system-mode check (hwpmc_mod.c): a
        // system PMC is at no process's row, so pmc_detach_one_process
        // answers ESRCH (the pid is nobody's target) or EINVAL (it is the
        // target of another PMC).
        let pid = self.target_pid(a.pm_pid)?;
        let descendants = p.flags & PMC_F_DESCENDANTS != 0;
        let pids = if descendants {
            self.descendants(pid)
        } else {
            vec![pid]
        };
        if !descendants {
            if !self.pmcs.values().any(|o| o.targets.contains_key(&pid)) {
                return Err(Errno::ESRCH);
            }
            if !p.targets.contains_key(&pid) {
                return Err(Errno::EINVAL);
            }
        }
        // With DESCENDANTS the whole tree is detached and errors are
        // ignored (a partially attached tree), as in hwpmc_mod.c.
        let p = self.pmc_mut(key)?;
        let removed: Vec<i32> = pids
            .into_iter()
            .filter(|t| p.targets.remove(t).is_some())
            .collect();
        let owner = p.owner;
        if !p.targets.contains_key(&owner) {
            p.flags &= !PMC_F_ATTACHED_TO_OWNER;
        }
        let (id, empty) = (p.id, p.targets.is_empty());
        if empty && descendants {
            p.flags &= !PMC_F_ATTACH_DONE;
        }
        for t in &removed {
            self.emit(key.0, LogRecord::PmcDetach { pmcid: id, pid: *t });
        }
        if empty && !removed.is_empty() {
            self.signals.push((key.0, Signal::Io));
        }
        Ok(())
    }
}
