//! The machine's description: PMC_OP_GETCPUINFO, GETPMCINFO, PMCADMIN,
//! GETDYNEVENTINFO, GETCAPS.

use super::{set_c_str, State, SOFT_EVENTS};
use crate::errno::Errno;
use crate::sys::abi::*;
use crate::sys::PmcInfoRequest;

impl State {
    pub(super) fn cpuinfo(&self, a: &mut pmc_op_getcpuinfo) {
        *a = pmc_op_getcpuinfo::default();
        a.pm_cputype = self.cfg.cpu.cputype();
        a.pm_ncpu = self.ncpu();
        a.pm_npmc = self.npmc() as u32;
        a.pm_nclass = self.classes.len().min(PMC_CLASS_MAX) as u32;
        for (slot, c) in a.pm_classes.iter_mut().zip(&self.classes) {
            *slot = pmc_classinfo {
                pm_class: c.class,
                pm_caps: c.caps,
                pm_width: c.width,
                pm_num: c.num,
            };
        }
    }

    pub(super) fn check_cpu(&self, cpu: i64) -> Result<usize, Errno> {
        if cpu < 0 || cpu >= i64::from(self.ncpu()) {
            return Err(Errno::EINVAL);
        }
        let c = cpu as usize;
        if !self.online[c] {
            return Err(Errno::ENXIO);
        }
        Ok(c)
    }

    /// PMC_OP_GETPMCINFO. Source: `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db `pmc_syscall_handler()`: "if
    /// (cpu >= pmc_cpu_max()) { error = EINVAL; ...}", "if
    /// (!pmc_cpu_is_active(cpu)) { error = ENXIO; ...}", then every row:
    /// "npmc = md->pmd_npmc; pmcinfo_size = npmc * sizeof(struct
    /// pmc_info); ... error = copyout(pmcinfo, &gpi->pm_pmcs,
    /// pmcinfo_size);". The kernel never looks at the size of the caller's
    /// buffer: it writes all `pmd_npmc` rows, so a smaller buffer is
    /// overrun (EFAULT only if the overrun reaches unmapped memory). The
    /// simulator answers every row whatever `req.npmc` says; the backend
    /// sizes its buffer from PMC_OP_GETCPUINFO's `pm_npmc`. (It used to
    /// answer EFAULT, a rule no kernel has: issue 23.)
    pub(super) fn pmcinfo(&self, req: &mut PmcInfoRequest) -> Result<(), Errno> {
        let cpu = self.check_cpu(i64::from(req.cpu))?;
        req.pmcs.clear();
        for (ri, r) in self.rows.iter().enumerate() {
            let c = &self.classes[r.class_idx];
            let mut info = pmc_info::default();
            set_c_str(&mut info.pm_name, &format!("{}-{}", c.name, r.index));
            info.pm_class = c.class;
            info.pm_enabled = i32::from(!r.cpus[cpu].disabled);
            info.pm_rowdisp = self.disposition(ri);
            info.pm_ownerpid = -1;
            if let Some(p) = r.cpus[cpu].system.last().and_then(|k| self.pmcs.get(k)) {
                info.pm_ownerpid = p.owner;
                info.pm_mode = p.mode;
                info.pm_event = p.event;
                info.pm_flags = p.flags;
                info.pm_reloadcount = p.reload;
            }
            req.pmcs.push(info);
        }
        Ok(())
    }

    /// PMC_OP_PMCADMIN. Source: `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db `pmc_syscall_handler()`: "error =
    /// priv_check(td, PRIV_PMC_MANAGE);" (EPERM), "if (cpu < 0 || cpu >=
    /// (int) pmc_cpu_max()) { error = EINVAL; ...}", "if
    /// (!pmc_cpu_is_active(cpu)) { error = ENXIO; ...}", "if (request !=
    /// PMC_STATE_DISABLED && request != PMC_STATE_FREE) { error = EINVAL;
    /// ...}", "if (ri < 0 || ri >= (int) md->pmd_npmc) { error = EINVAL;
    /// ...}", "if (PMC_ROW_DISP_IS_THREAD(ri) && request ==
    /// PMC_STATE_DISABLED) { error = EBUSY; ...}", and "if (phw->phw_pmc ==
    /// NULL) { ... } else error = EBUSY;" (a system PMC configured on the
    /// row; a process PMC is on `phw_pmc` only while it runs on that CPU,
    /// which the simulator does not model).
    pub(super) fn admin(&mut self, a: &mut pmc_op_pmcadmin) -> Result<(), Errno> {
        if !self.is_privileged() {
            return Err(Errno::EPERM);
        }
        let cpu = self.check_cpu(i64::from(a.pm_cpu))?;
        let disable = match a.pm_state {
            PMC_STATE_DISABLED => true,
            PMC_STATE_FREE => false,
            _ => return Err(Errno::EINVAL),
        };
        if a.pm_pmc < 0 || a.pm_pmc as usize >= self.npmc() {
            return Err(Errno::EINVAL);
        }
        let ri = a.pm_pmc as usize;
        // Rows reserved for process PMCs cannot be disabled; a row holding a
        // system PMC on this CPU cannot change at all.
        if (disable && self.rows[ri].thread_refs > 0) || !self.rows[ri].cpus[cpu].system.is_empty()
        {
            return Err(Errno::EBUSY);
        }
        self.rows[ri].cpus[cpu].disabled = disable;
        Ok(())
    }

    /// PMC_OP_GETDYNEVENTINFO. Source: `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db `pmc_syscall_handler()`:
    /// "/* Only SOFT class is dynamic. */ if (cl != PMC_CLASS_SOFT) { error
    /// = EINVAL; break; }", then one `pmc_dyn_event_descr` per registered
    /// SOFT event and "copyout(&nevent, &gei->pm_nevent, ...)".
    pub(super) fn dyneventinfo(&self, a: &mut pmc_op_getdyneventinfo) -> Result<(), Errno> {
        if a.pm_class != PMC_CLASS_SOFT {
            return Err(Errno::EINVAL);
        }
        a.pm_nevent = SOFT_EVENTS.len() as u32;
        for (i, (slot, name)) in a.pm_events.iter_mut().zip(SOFT_EVENTS).enumerate() {
            set_c_str(&mut slot.pm_ev_name, name);
            slot.pm_ev_code = PMC_EV_SOFT_FIRST + i as u32;
        }
        Ok(())
    }

    /// PMC_OP_GETCAPS. Below 0x0A03 the op does not exist: `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db
    /// `pmc_syscall_handler()` has no case for it and ends "default: error =
    /// EINVAL;". HEAD's `sys/sys/pmc.h`@5369f8e7 (0x0A030000) adds it; its
    /// kernel handler was not read, so the answer (the class's caps, via
    /// `pmc_find_pmc()`'s ESRCH/EINVAL) is the simulator's assumption.
    pub(super) fn caps(&self, a: &mut pmc_op_caps) -> Result<(), Errno> {
        if self.cfg.version < 0x0A03_0000 {
            return Err(Errno::EINVAL);
        }
        let key = self.find(a.pm_pmcid)?;
        let class = self.pmcs.get(&key).ok_or(Errno::EINVAL)?.class;
        // What the PMC's counter can do: its class's capabilities.
        a.pm_caps = self.class(class).map_or(0, |ci| self.classes[ci].caps);
        Ok(())
    }
}
