//! What a Backend and its PMCs share: the seam, the machine learnt at
//! open time, and the kernel log.

use crate::errno::Errno;
use crate::errno_map::{self, Context};
use crate::events::Machine;
use crate::log::LogPump;
use crate::sys::abi::*;
use crate::sys::{OpArg, PmcOp, Sys};
use pmc_core::Error;
use std::sync::Mutex;

pub(super) struct Inner<S: Sys> {
    pub(super) sys: S,
    pub(super) machine: Machine,
    pub(super) ncpu: u32,
    /// `kern.hz`, for converting frequencies into clock ticks.
    pub(super) hz: u64,
    /// The kernel's smallest reload count (`kern.hwpmc.mincount`, or
    /// `DEFAULT_MIN_RELOAD`).
    pub(super) min_reload: u64,
    /// `pm_npmc`: rows per CPU.
    pub(super) npmc: u32,
    /// CPUs `PMC_OP_GETPMCINFO` called absent or disabled at open time.
    pub(super) offline: Vec<u32>,
    pub(super) log: Mutex<Option<LogPump>>,
}

impl<S: Sys> Inner<S> {
    /// This process's key in [`KERNEL_LOGS`].
    pub(super) fn log_key(&self) -> (usize, i32) {
        (self.sys.kernel_id(), self.sys.current_pid())
    }

    /// Whether this Backend holds the kernel log.
    pub(super) fn has_log(&self) -> bool {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    /// After the log is deconfigured, hwpmc keeps the process's owner
    /// descriptor, shut down, for as long as the process lives:
    /// CONFIGURELOG(-1) never removes it, `pmclog_close()` left
    /// PMC_PO_SHUTDOWN, and PMCRELEASE's `pmc_maybe_remove_owner()` only
    /// removes an owner with no PMCs and no log ("if
    /// (LIST_EMPTY(&po->po_pmcs) && ((po->po_flags & PMC_PO_OWNS_LOGFILE)
    /// == 0))"), `hwpmc_mod.c`@009268db. A later CONFIGURELOG in this
    /// process would then fail with ENOMEM (its INITIALIZE record cannot be
    /// reserved under SHUTDOWN) and sampling starts with EDOOFUS. Allocating
    /// and releasing a throwaway SOFT PMC runs `pmc_maybe_remove_owner()`
    /// with neither, which removes the descriptor. (Another Backend's PMCs
    /// still allocated in this process keep it: see
    /// [`configure_log`](pmc_core::Backend::configure_log).)
    ///
    /// The throwaway PMC asks for `PMC_CAP_READ`: `soft_allocate_pmc()`
    /// refuses a PMC with none of the class's caps ("if ((pm->pm_caps &
    /// SOFT_CAPS) == 0) return (EINVAL);", `hwpmc_soft.c`@06d60b70), and with
    /// caps 0 the owner was never removed on a real kernel
    /// (freebsd-audit-3 finding A).
    pub(super) fn remove_owner(&self) {
        let Some((_, ev)) = self.machine.soft_events.first() else {
            return;
        };
        let mut a = pmc_op_pmcallocate {
            pm_caps: PMC_CAP_READ,
            pm_mode: PMC_MODE_TC,
            pm_class: PMC_CLASS_SOFT,
            pm_ev: *ev,
            pm_cpu: PMC_CPU_ANY,
            ..Default::default()
        };
        if self.sys.call(OpArg::PmcAllocate(&mut a)).is_ok() {
            let mut s = pmc_op_simple {
                pm_pmcid: a.pm_pmcid,
            };
            let _ = self.sys.call(OpArg::PmcRelease(&mut s));
        }
    }

    /// After hwpmc refused a PMCATTACH (EEXIST, EBUSY), which cleared
    /// P_HWPMC on the process it failed on whatever else measures it
    /// (`hwpmc_mod.c`@009268db `pmc_attach_one_process()`: "fail: ...
    /// p->p_flag &= ~P_HWPMC;"): gives the flag back to each of `had` (the
    /// processes that had it before) that lost it. A successful attach sets
    /// it ("p->p_flag |= P_HWPMC;"), and the detach that follows clears it
    /// only when no PMC targets the process any more ("if (pp->pp_refcnt !=
    /// 0) /* still a target of some PMC */ return (0);"): so a throwaway
    /// SOFT PMC is attached and detached again. A row the process already
    /// uses answers EBUSY (and clears the flag again): up to four throwaway
    /// PMCs, on four rows. Returns (restored, still without the flag); the
    /// throwaway PMC's allocation, attach and detach records go to this
    /// process's log, if any.
    pub(super) fn restore_hwpmc(&self, had: &[i32]) -> (Vec<i32>, Vec<i32>) {
        let lost: Vec<i32> = had
            .iter()
            .copied()
            .filter(|p| self.sys.uses_hwpmc(*p) == Some(false))
            .collect();
        if lost.is_empty() {
            return (Vec::new(), Vec::new());
        }
        let mut spares: Vec<u32> = Vec::new();
        let spare = |n: usize, spares: &mut Vec<u32>| -> Option<u32> {
            while spares.len() <= n {
                let (_, ev) = self.machine.soft_events.first()?;
                let mut a = pmc_op_pmcallocate {
                    pm_caps: PMC_CAP_READ,
                    pm_mode: PMC_MODE_TC,
                    pm_class: PMC_CLASS_SOFT,
                    pm_ev: *ev,
                    pm_cpu: PMC_CPU_ANY,
                    ..Default::default()
                };
                self.sys.call(OpArg::PmcAllocate(&mut a)).ok()?;
                spares.push(a.pm_pmcid);
            }
            spares.get(n).copied()
        };
        let (mut restored, mut failed) = (Vec::new(), Vec::new());
        for pid in lost {
            let mut ok = false;
            for n in 0..4 {
                let Some(id) = spare(n, &mut spares) else {
                    break;
                };
                let mut a = pmc_op_pmcattach {
                    pm_pmc: id,
                    pm_pid: pid,
                };
                match self.sys.call(OpArg::PmcAttach(&mut a)) {
                    Ok(()) => {
                        let _ = self.sys.call(OpArg::PmcDetach(&mut a));
                        ok = self.sys.uses_hwpmc(pid) == Some(true);
                        break;
                    }
                    Err(Errno::EBUSY | Errno::EEXIST) => continue,
                    Err(_) => break,
                }
            }
            if ok {
                restored.push(pid);
            } else {
                failed.push(pid);
            }
        }
        for id in spares {
            let mut s = pmc_op_simple { pm_pmcid: id };
            let _ = self.sys.call(OpArg::PmcRelease(&mut s));
        }
        (restored, failed)
    }

    /// The typed error for `e`; for EPERM, first reads the sysctls and uid
    /// behind it so the message can name the setting to change.
    pub(super) fn err(&self, op: PmcOp, e: Errno, ctx: &Context) -> Error {
        if e == Errno::EPERM {
            let mut ctx = ctx.clone();
            ctx.facts = errno_map::Facts::read(&self.sys);
            return errno_map::to_error(op, e, &ctx);
        }
        errno_map::to_error(op, e, ctx)
    }
}
