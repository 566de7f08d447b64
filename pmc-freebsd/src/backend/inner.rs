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
