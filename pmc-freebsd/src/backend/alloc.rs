//! The allocation side: an `Allocation` becomes `PMC_OP_PMCALLOCATE`
//! requests (mode, flags, the event's encodings, one per CPU for system
//! scope) and its rate a reload count in the kernel's units.

use super::units::to_kernel_units;
use super::{Backend, FreebsdGroup, FreebsdPmc, NOMINAL_EVENTS_PER_SEC};
use crate::errno::Errno;
use crate::errno_map::Context;
use crate::events::{self, Encoding};
use crate::sys::abi::*;
use crate::sys::{OpArg, PmcOp, Sys};
use pmc_core::lifecycle::Lifecycle;
use pmc_core::{Allocation, Cpus, Error, ErrorKind, Flags, Mode, Op, Rate, Result, Scope};
use std::time::Duration;

impl<S: Sys + 'static> Backend<S> {
    /// `Backend::allocate`: one hwpmc PMC, or one per CPU for system scope.
    pub(super) fn allocate_pmc(&self, a: &Allocation) -> Result<FreebsdPmc<S>> {
        refuse_dwarf(a)?;
        refuse_cgroup(a)?;
        let sampling = a.mode.is_sampling();
        let encs = events::resolve(&a.event, &self.inner.machine, sampling)?;
        let (count, rate_warning) = match a.mode {
            Mode::Sampling(rate) => period(
                // A portable clock's period is nanoseconds; hwpmc counts ticks.
                match rate {
                    Rate::Period(p) => Rate::Period(to_kernel_units(&a.event, p, self.inner.hz)),
                    f => f,
                },
                encs.first(),
                self.inner.hz,
                self.inner.min_reload,
                &a.event.to_string(),
            ),
            Mode::Counting => (0, None),
        };
        let mut ids = Vec::new();
        let mut chosen = None;
        match &a.scope {
            Scope::Process => {
                let (id, enc) = self.allocate_one(a, &encs, PMC_CPU_ANY, count)?;
                ids.push((None, id));
                chosen = Some(enc);
            }
            Scope::System { cpu } => {
                let mut held: Vec<(Option<u32>, u32)> = Vec::new();
                let mut first_err = None;
                for (c, skip_absent) in self.cpus(cpu) {
                    // Once one CPU chose an encoding, use it on every CPU.
                    let encs_here = chosen
                        .as_ref()
                        .map_or_else(|| encs.clone(), |e: &Encoding| vec![e.clone()]);
                    match self.allocate_one(a, &encs_here, c, count) {
                        Ok((id, enc)) => {
                            held.push((Some(c), id));
                            chosen = Some(enc);
                        }
                        Err(e) if skip_absent && e.kind() == ErrorKind::NoSuchCpu => {}
                        Err(e) => {
                            first_err = Some(e);
                            break;
                        }
                    }
                }
                if let Some(e) = first_err.or_else(|| {
                    held.is_empty().then(|| {
                        Error::new(ErrorKind::NoSuchCpu, Op::Allocate, "no CPU is online")
                            .with_help("check sysctl kern.smp.cpus")
                    })
                }) {
                    for (_, id) in held {
                        let mut s = pmc_op_simple { pm_pmcid: id };
                        let _ = self.inner.sys.call(OpArg::PmcRelease(&mut s));
                    }
                    return Err(e);
                }
                ids = held;
            }
        }
        let Some(encoding) = chosen else {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                Op::Allocate,
                "nothing was allocated",
            ));
        };
        Ok(FreebsdPmc {
            inner: self.inner.clone(),
            allocation: a.clone(),
            ids,
            encoding,
            count,
            rate_warning,
            life: Lifecycle::new(
                &a.scope,
                u32::try_from(self.inner.sys.current_pid()).unwrap_or(0),
            ),
            running_since: None,
            ran: Duration::ZERO,
            released: false,
        })
    }

    /// `Backend::allocate_group`: the members, each allocated on its own
    /// (hwpmc has no hardware groups).
    pub(super) fn allocate_members(&self, allocations: &[Allocation]) -> Result<FreebsdGroup<S>> {
        for a in allocations {
            refuse_dwarf(a)?;
            refuse_cgroup(a)?;
        }
        let Some(first) = allocations.first() else {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                Op::Allocate,
                "a group needs at least one member",
            ));
        };
        if allocations.iter().any(|a| a.scope != first.scope) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                Op::Allocate,
                "all members of a group must share the scope",
            ));
        }
        let members = allocations
            .iter()
            .map(|a| self.allocate_pmc(a))
            .collect::<Result<Vec<_>>>()?;
        Ok(FreebsdGroup {
            allocations: allocations.to_vec(),
            members,
            life: Lifecycle::new(
                &first.scope,
                u32::try_from(self.inner.sys.current_pid()).unwrap_or(0),
            ),
        })
    }
}

impl<S: Sys> Backend<S> {
    fn allocate_one(
        &self,
        a: &Allocation,
        encs: &[Encoding],
        cpu: u32,
        count: u64,
    ) -> Result<(u32, Encoding)> {
        let sampling = a.mode.is_sampling();
        let system = a.scope.is_system();
        let mode = match (system, sampling) {
            (true, true) => PMC_MODE_SS,
            (true, false) => PMC_MODE_SC,
            (false, true) => PMC_MODE_TS,
            (false, false) => PMC_MODE_TC,
        };
        let mut flags = 0;
        for (f, b) in [
            (Flags::DESCENDANTS, PMC_F_DESCENDANTS),
            (Flags::CALLCHAIN, PMC_F_CALLCHAIN),
            (Flags::LOG_PROCEXIT, PMC_F_LOG_PROCEXIT),
            (Flags::LOG_PROCCSW, PMC_F_LOG_PROCCSW),
            (Flags::USERCALLCHAIN, PMC_F_USERCALLCHAIN),
        ] {
            if a.flags.contains(f) {
                flags |= b;
            }
        }
        if !sampling {
            // meaningless for counting; hwpmc ignores them
            flags &= !(PMC_F_CALLCHAIN | PMC_F_USERCALLCHAIN);
        }
        let ctx = Context {
            system,
            sampling,
            cpu: system.then_some(cpu),
            event: Some(a.event.to_string()),
            ..Context::default()
        };
        let mut last = None;
        for enc in encs {
            let mut req = pmc_op_pmcallocate {
                pm_caps: enc.caps,
                pm_cpu: if system { cpu } else { PMC_CPU_ANY },
                pm_class: enc.class,
                pm_ev: enc.ev,
                pm_flags: flags | enc.flags,
                pm_mode: mode,
                pm_count: count,
                pm_md: enc.md,
                ..Default::default()
            };
            match self.inner.sys.call(OpArg::PmcAllocate(&mut req)) {
                Ok(()) => return Ok((req.pm_pmcid, enc.clone())),
                // No suitable row in this class: try the next encoding.
                Err(e @ (Errno::EINVAL | Errno::EBUSY)) => last = Some(e),
                Err(e) => return Err(self.inner.err(PmcOp::PmcAllocate, e, &ctx)),
            }
        }
        Err(self
            .inner
            .err(PmcOp::PmcAllocate, last.unwrap_or(Errno::EINVAL), &ctx))
    }

    fn cpus(&self, cpus: &Cpus) -> Vec<(u32, bool)> {
        match cpus {
            Cpus::All => (0..self.inner.ncpu)
                .filter(|c| !self.inner.offline.contains(c))
                .map(|c| (c, true))
                .collect(),
            Cpus::One(c) => vec![(*c, false)],
            Cpus::List(l) => l.iter().map(|c| (*c, false)).collect(),
        }
    }
}

/// The reload count for `rate`, raised to the kernel's floor, and a
/// warning when the kernel will not sample as asked (hwpmc raises any
/// smaller count, hwpmc_mod.c PMC_OP_PMCALLOCATE): the effective rate is
/// computed and the nearest count the kernel honours is asked for, so the
/// log and the descriptor say what really happens.
fn period(
    rate: Rate,
    enc: Option<&Encoding>,
    hz: u64,
    min_reload: u64,
    event: &str,
) -> (u64, Option<String>) {
    // Events per second of the event's own clock, where it has one.
    let clock = match enc {
        Some(e) if e.class == PMC_CLASS_SOFT && e.name.starts_with("SOFT-CLOCK") => {
            Some((hz, "clock ticks", format!("kern.hz {hz}")))
        }
        Some(e) if e.class == PMC_CLASS_SOFT => None,
        _ => Some((
            NOMINAL_EVENTS_PER_SEC,
            "events",
            format!("{NOMINAL_EVENTS_PER_SEC} events/s nominal"),
        )),
    };
    let (wanted, asked) = match rate {
        Rate::Period(p) => (p.max(1), format!("a period of {p}")),
        Rate::Frequency(f) => {
            let f = f.max(1);
            let p = match &clock {
                Some((per_sec, _, _)) => (per_sec / f).max(1),
                None => 1,
            };
            (p, format!("{f} Hz"))
        }
    };
    if wanted >= min_reload {
        return (wanted, None);
    }
    let effective = match (&clock, rate) {
        (Some((per_sec, unit, basis)), _) => {
            let hz_eff = *per_sec as f64 / min_reload as f64;
            format!(
                "one sample per {min_reload} {unit}, about {hz_eff:.3} Hz ({basis}){}",
                if matches!(enc, Some(e) if e.class == PMC_CLASS_SOFT) {
                    " per CPU"
                } else {
                    ""
                }
            )
        }
        (None, _) => format!("one sample per {min_reload} events"),
    };
    let warning = format!(
        "{event}: {asked} needs a reload count of {wanted}, below hwpmc's minimum of \
         {min_reload} (kern.hwpmc.mincount); sampling at {effective} instead"
    );
    (min_reload, Some(warning))
}

/// hwpmc cannot copy user stacks with a sample (its callchains are the kernel's frame-pointer
/// walks, `pmc_save_user_callchain`), so DWARF call graphs are refused.
/// [`Allocation::cgroup`]: hwpmc(4) has no cgroup (or jail) filter on a system-scope PMC. The
/// backend-neutral rule first (a process-scope cgroup is an invalid argument anywhere).
fn refuse_cgroup(a: &Allocation) -> Result<()> {
    a.check_cgroup()?;
    if let Some(name) = &a.cgroup {
        return Err(Error::new(
            ErrorKind::NotSupported,
            Op::Allocate,
            format!(
                "`{}`: cgroup `{name}`: hwpmc(4) has no cgroup or jail filter; a system-scope \
                 PMC counts everything on its CPUs",
                a.event
            ),
        )
        .with_help(
            "count system-wide without Allocation::cgroup, or attach process-scope PMCs to \
             the jail's processes with Target::Pid",
        ));
    }
    Ok(())
}

fn refuse_dwarf(a: &Allocation) -> Result<()> {
    if a.call_graph.stack_size().is_some() {
        return Err(Error::new(
            ErrorKind::NotSupported,
            Op::Allocate,
            "hwpmc(4) cannot capture user stacks, so DWARF call graphs are not available on FreeBSD",
        )
        .with_help("use CallGraph::FramePointers (the default) and build the profiled code with -fno-omit-frame-pointer"));
    }
    Ok(())
}
