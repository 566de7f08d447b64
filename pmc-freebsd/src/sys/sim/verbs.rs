//! PMC_OP_PMCSTART, PMCSTOP, PMCRELEASE, PMCRW, PMCSETCOUNT, PMCGETMSR.
//!
//! The rules here (each cited where it is applied):
//! * `PMC_OP_PMCRW` looks only at OLDVALUE/NEWVALUE.
//! * System sampling, the log-process flags, and process sampling attached
//!   to another process need a log for `PMC_OP_PMCSTART` (`EDOOFUS`).
//! * A counting PMC keeps its value across stop/start. `PMC_OP_PMCSETCOUNT`
//!   sets `pm_initial`, which only `pmc_start()` of a system PMC loads: on
//!   a process counting PMC it changes nothing; a `PMC_F_NEWVALUE` write
//!   sets `pm_savedvalue` (process) or the counter (system).
//! * `PMC_OP_PMCRW` of a process sampling PMC reads `pm_savedvalue` (0
//!   unless written) unless it runs attached to its owner; only a system
//!   sampling PMC (or an owner-attached running one) reads the countdown.

use super::{PState, State};
use crate::errno::Errno;
use crate::sys::abi::*;

impl State {
    /// PMC_OP_PMCSTART. Source: `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db `pmc_syscall_handler()`: "if
    /// (pm->pm_state == PMC_STATE_RUNNING) /* already running */ break;
    /// else if (pm->pm_state != PMC_STATE_STOPPED && pm->pm_state !=
    /// PMC_STATE_ALLOCATED) { error = EINVAL; ...}"; `pmc_start()`: "if
    /// ((pm->pm_flags & PMC_F_NEEDS_LOGFILE) != 0 && (po->po_flags &
    /// PMC_PO_OWNS_LOGFILE) == 0) return (EDOOFUS);", for a sampling PMC the
    /// kernel objects' mappings (`State::log_kernel_mappings`), for system
    /// sampling every process's (`State::log_all_process_mappings`), for a
    /// process PMC "if
    /// (LIST_EMPTY(&pm->pm_targets)) { error = (pm->pm_flags &
    /// PMC_F_ATTACH_DONE) != 0 ? ESRCH : pmc_attach_process(po->po_owner,
    /// pm); }", for a system PMC "if (!pmc_cpu_is_active(cpu)) return
    /// (ENXIO);".
    pub(super) fn start(&mut self, a: &mut pmc_op_simple) -> Result<(), Errno> {
        let key = self.find(a.pm_pmcid)?;
        let p = self.pmcs.get(&key).ok_or(Errno::EINVAL)?;
        if p.state == PState::Running {
            return Ok(());
        }
        let has_log = self.owners.get(&key.0).is_some_and(|o| o.log.is_some());
        if p.flags & PMC_F_NEEDS_LOGFILE != 0 && !has_log {
            return Err(Errno::EDOOFUS);
        }
        let (system, sampling, mode) = (p.is_system(), p.is_sampling(), p.mode);
        if sampling {
            self.log_kernel_mappings(key.0, mode == PMC_MODE_SS);
        }
        if mode == PMC_MODE_SS {
            self.log_all_process_mappings(key.0);
        }
        let p = self.pmcs.get(&key).ok_or(Errno::EINVAL)?;
        if system {
            if !self.online.get(p.cpu as usize).copied().unwrap_or(false) {
                return Err(Errno::ENXIO);
            }
        } else if p.targets.is_empty() {
            if p.flags & PMC_F_ATTACH_DONE != 0 {
                return Err(Errno::ESRCH);
            }
            let owner = p.owner;
            self.attach_process(key, owner)?;
        }
        let p = self.pmc_mut(key)?;
        // hwpmc_mod.c@009268db pmc_start, system PMC: "v =
        // PMC_IS_SAMPLING_MODE(mode) ? pm->pm_sc.pm_reloadcount :
        // pm->pm_sc.pm_initial; ... pcd->pcd_write_pmc(cpu, adjri, pm, v)".
        // (A sampling system PMC's countdown is left as it was: the
        // simulator does not model the reload on restart.)
        if p.is_system() && !p.is_sampling() {
            p.value = p.initial;
        }
        p.state = PState::Running;
        Ok(())
    }

    /// PMC_OP_PMCSTOP. Source: `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db `pmc_syscall_handler()`: "if
    /// (pm->pm_state == PMC_STATE_STOPPED) /* already stopped */ break; else
    /// if (pm->pm_state != PMC_STATE_RUNNING) { error = EINVAL; ...}";
    /// `pmc_stop()`: "pm->pm_state = PMC_STATE_STOPPED;", "if
    /// (PMC_IS_VIRTUAL_MODE(PMC_TO_MODE(pm))) return (0);", then for a
    /// system PMC "if (!pmc_cpu_is_active(cpu)) return (ENXIO);".
    pub(super) fn stop(&mut self, a: &mut pmc_op_simple) -> Result<(), Errno> {
        let key = self.find(a.pm_pmcid)?;
        let online = self.online.clone();
        let p = self.pmc_mut(key)?;
        match p.state {
            PState::Stopped => return Ok(()),
            // Never started.
            PState::Allocated => return Err(Errno::EINVAL),
            PState::Running => p.state = PState::Stopped,
        }
        if p.is_system() && !online.get(p.cpu as usize).copied().unwrap_or(false) {
            return Err(Errno::ENXIO);
        }
        // hwpmc_mod.c@009268db pmc_stop, system PMC: "error =
        // pcd->pcd_read_pmc(cpu, adjri, pm, &pm->pm_sc.pm_initial)", so a
        // later PMCSTART resumes from the count.
        if p.is_system() && !p.is_sampling() {
            p.initial = p.value;
        }
        Ok(())
    }

    /// PMC_OP_PMCRELEASE, `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db `pmc_do_op_pmcrelease()`: "error =
    /// pmc_find_pmc(pmcid, &pm); if (error != 0) return (error);", then
    /// `pmc_release_pmc_descriptor(pm); pmc_maybe_remove_owner(po);` (the
    /// owner goes with its last PMC unless it owns a log).
    pub(super) fn release(&mut self, a: &mut pmc_op_simple) -> Result<(), Errno> {
        let key = self.find(a.pm_pmcid)?;
        let p = self.pmcs.remove(&key).ok_or(Errno::EINVAL)?;
        if p.is_system() {
            if let Some(rc) = self
                .rows
                .get_mut(p.row)
                .and_then(|r| r.cpus.get_mut(p.cpu as usize))
            {
                rc.system.retain(|k| *k != key);
            }
        } else if let Some(r) = self.rows.get_mut(p.row) {
            r.thread_refs = r.thread_refs.saturating_sub(1);
        }
        if let Some(o) = self.owners.get_mut(&key.0) {
            o.pmcs.remove(&key.1);
            if o.pmcs.is_empty() && o.log.is_none() {
                self.owners.remove(&key.0);
            }
        }
        Ok(())
    }

    pub(super) fn rw(&mut self, a: &mut pmc_op_pmcrw) -> Result<(), Errno> {
        // At least one of OLDVALUE/NEWVALUE; other bits are ignored
        // (hwpmc_mod.c@009268db pmc_do_op_pmcrw(): "if ((prw->pm_flags &
        // (PMC_F_OLDVALUE | PMC_F_NEWVALUE)) == 0) return (EINVAL);").
        let rw = PMC_F_OLDVALUE | PMC_F_NEWVALUE;
        if a.pm_flags & rw == 0 {
            return Err(Errno::EINVAL);
        }
        let key = self.find(a.pm_pmcid)?;
        let online = self.online.clone();
        let p = self.pmc_mut(key)?;
        if a.pm_flags & PMC_F_NEWVALUE != 0 && p.state == PState::Running {
            return Err(Errno::EBUSY);
        }
        if p.is_system() && !online.get(p.cpu as usize).copied().unwrap_or(false) {
            return Err(Errno::ENXIO);
        }
        // hwpmc_mod.c@009268db pmc_do_op_pmcrw, process (virtual) PMC:
        // "if ((pm->pm_flags & PMC_F_ATTACHED_TO_OWNER) && (pm->pm_state ==
        // PMC_STATE_RUNNING)) error = (*pcd->pcd_read_pmc)(...); else *valp =
        // pm->pm_gv.pm_savedvalue;" and NEWVALUE "pm->pm_gv.pm_savedvalue =
        // prw->pm_value". A TS PMC's countdown lives per thread
        // (pmc_process_csw_out: "pt->pt_pmcs[ri].pt_pmcval = newvalue"),
        // never in pm_savedvalue, so a TS PMC on another process reads 0 or
        // the last NEWVALUE. Reads from the hardware (a system PMC, or a
        // running PMC attached to its owner) of a sampling PMC give the
        // reload-down counter, the events left until the next sample
        // (hwpmc_core.c@2d614aa2 iap_read_pmc(): "if (PMC_IS_SAMPLING_MODE(...)) *v =
        // iap_perfctr_value_to_reload_count(tmp)").
        let from_hw =
            p.is_system() || (p.flags & PMC_F_ATTACHED_TO_OWNER != 0 && p.state == PState::Running);
        let owner_thread = (p.owner, p.owner.wrapping_mul(100));
        let old = if p.is_sampling() && from_hw && p.is_system() {
            p.left
        } else if p.is_sampling() && from_hw {
            // The calling thread's countdown (pt_pmcval, or a full period).
            p.thread_left
                .get(&owner_thread)
                .copied()
                .filter(|v| *v > 0)
                .unwrap_or(p.reload)
        } else {
            p.value
        };
        if a.pm_flags & PMC_F_NEWVALUE != 0 {
            if p.is_sampling() && p.is_system() {
                // pcd_write_pmc of a sampling PMC loads the countdown.
                p.left = a.pm_value.max(1);
            } else {
                p.value = a.pm_value;
            }
        }
        if a.pm_flags & PMC_F_OLDVALUE != 0 {
            a.pm_value = old;
        }
        Ok(())
    }

    /// PMC_OP_PMCSETCOUNT. Source: `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db `pmc_syscall_handler()`: "if
    /// (pm->pm_state == PMC_STATE_RUNNING) { error = EBUSY; break; }", then
    /// the reload count or `pm_initial` (quoted below).
    pub(super) fn setcount(&mut self, a: &mut pmc_op_pmcsetcount) -> Result<(), Errno> {
        let key = self.find(a.pm_pmcid)?;
        let floor = self.min_reload();
        let p = self.pmc_mut(key)?;
        if p.state == PState::Running {
            return Err(Errno::EBUSY);
        }
        // hwpmc_mod.c@009268db PMC_OP_PMCSETCOUNT: "if
        // (PMC_IS_SAMPLING_MODE(PMC_TO_MODE(pm))) { ... pm->pm_sc.pm_reloadcount
        // = MAX(MAX(1, pmc_mincount), sc.pm_count); } else
        // pm->pm_sc.pm_initial = sc.pm_count;". pm_initial is read only by
        // pmc_start() of a system PMC: on a process counting PMC SETCOUNT
        // changes nothing anyone reads (PMCRW reads pm_savedvalue).
        if p.is_sampling() {
            p.reload = a.pm_count.max(floor);
            p.left = p.reload;
        } else {
            p.initial = a.pm_count;
        }
        Ok(())
    }

    /// PMC_OP_PMCGETMSR, `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db `pmc_syscall_handler()`: "if
    /// (!PMC_IS_VIRTUAL_MODE(PMC_TO_MODE(pm)) || (pm->pm_flags &
    /// PMC_F_DESCENDANTS)) { error = EINVAL; ...}", "if ((pt =
    /// LIST_FIRST(&pm->pm_targets)) == NULL || LIST_NEXT(pt, pt_next) !=
    /// NULL || pt->pt_process->pp_proc != pm->pm_owner->po_owner) { error =
    /// EINVAL; ...}", "/* PMC class has no 'GETMSR' support */ if
    /// (pcd->pcd_get_msr == NULL) { error = ENOSYS; ...}". The simulator's
    /// ENOSYS without RDPMC ([`SimConfig::rdpmc`]) is SIM-ONLY: a machine
    /// choice, not a kernel rule.
    pub(super) fn getmsr(&mut self, a: &mut pmc_op_getmsr) -> Result<(), Errno> {
        let key = self.find(a.pm_pmcid)?;
        let rdpmc = self.cfg.rdpmc;
        let index = self
            .pmcs
            .get(&key)
            .and_then(|p| self.rows.get(p.row))
            .map_or(0, |r| r.index);
        let p = self.pmc_mut(key)?;
        // hwpmc(4): process-private, no DESCENDANTS, attached only to its owner.
        let only_owner = p.targets.len() == 1 && p.targets.contains_key(&p.owner);
        if p.is_system() || p.flags & PMC_F_DESCENDANTS != 0 || !only_owner {
            return Err(Errno::EINVAL);
        }
        match p.class {
            PMC_CLASS_IAP | PMC_CLASS_K8 => a.pm_msr = index,
            PMC_CLASS_IAF => a.pm_msr = 0x4000_0000 | index,
            // The class has no RDPMC access (SOFT).
            _ => return Err(Errno::ENOSYS),
        }
        if !rdpmc {
            return Err(Errno::ENOSYS);
        }
        Ok(())
    }
}
