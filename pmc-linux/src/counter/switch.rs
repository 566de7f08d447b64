//! log-proccsw: the switch group that logs a PMC's counts at each context switch.

use crate::counter::layout::ReadLayout;
#[cfg(feature = "sampling")]
use crate::counter::open::build_attr;
#[cfg(feature = "sampling")]
use crate::counter::rings::Rings;
use crate::counter::{Counters, Member, CLOCK_MONOTONIC};
use crate::errno_map::Facts;
#[cfg(feature = "sampling")]
use crate::log::RingPurpose;
use crate::shared::Shared;
use crate::sys::Sys;
use crate::{errno, events};
use perf_event_open_sys::bindings as b;
use pmc_core::{Allocation, Error, ErrorKind, Mode, Op, Rate, Result};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The switch group of a PMC with log-proccsw: a `context-switches` sampler over copies of the
/// PMC's events (see [`SwitchGroup::new`]).
pub(super) struct SwitchGroup<S: Sys>(Counters<S>);

impl<S: Sys> SwitchGroup<S> {
    /// The switch group of a PMC with log-proccsw (hwpmc's `PMC_F_LOG_PROCCSW`).
    ///
    /// perf_event has no "log the counts at every context switch" bit, but it gives enough to
    /// build one: a `context-switches` software event sampling every switch (period 1) with
    /// `PERF_SAMPLE_READ` of its group, whose members are copies of the PMC's events. The
    /// context-switch event fires while the outgoing task's events are still scheduled, so each
    /// sample carries the task's cumulative counts at the moment it leaves the CPU; the drain
    /// thread logs the difference from the previous one as a
    /// [`CounterKind::ContextSwitch`](pmc_log::record::CounterKind::ContextSwitch) record (the
    /// counts of that time slice, as hwpmc's `PROCCSW`) under the PMC's own ids. The copies
    /// count alongside the PMC's events (twice the counters, which matters only for hardware
    /// events), and writes and set_count on the PMC do not touch them. The switch event fires
    /// in the kernel, so this needs kernel-mode counting: CAP_PERFMON or
    /// `perf_event_paranoid` <= 1.
    pub(super) fn new(
        owner: &[Member],
        inherit: bool,
        ring_pages: usize,
        facts: &Facts,
        shared: Arc<Shared<S>>,
    ) -> Result<SwitchGroup<S>> {
        let cs = pmc_core::EventSpec::portable(pmc_core::PortableEvent::ContextSwitches);
        let mut lead_alloc = Allocation::sampling(cs, Rate::Period(1));
        if inherit {
            lead_alloc = lead_alloc.flags(pmc_core::Flags::DESCENDANTS);
        }
        let lead_resolved = events::resolve(&shared.sys, &lead_alloc.event)?;
        let ring_bytes = ring_pages.saturating_mul(shared.sys.page_size());
        let mut lead = build_attr(
            &shared.sys,
            &lead_alloc,
            &lead_resolved,
            facts,
            true,
            ring_bytes,
        );
        lead.sample_type = u64::from(
            b::PERF_SAMPLE_IDENTIFIER
                | b::PERF_SAMPLE_TID
                | b::PERF_SAMPLE_TIME
                | b::PERF_SAMPLE_CPU
                | b::PERF_SAMPLE_READ,
        );
        // The switch happens in the kernel: excluding it would silence the sampler.
        lead.set_exclude_kernel(0);
        lead.set_exclude_user(0);
        let mut members = vec![Member {
            event: lead_alloc.event.to_string(),
            alloc: lead_alloc,
            pmc_id: shared.next_pmc_id.fetch_add(1, Ordering::Relaxed),
            resolved: lead_resolved,
            attr: lead,
            opened: lead,
            fixed_period: Default::default(),
        }];
        for m in owner {
            let mut alloc = m.alloc.clone();
            alloc.mode = Mode::Counting;
            let mut attr = build_attr(&shared.sys, &alloc, &m.resolved, facts, true, ring_bytes);
            // A group has one clock (the kernel refuses members with another).
            attr.set_use_clockid(1);
            attr.clockid = CLOCK_MONOTONIC;
            members.push(Member {
                alloc,
                pmc_id: m.pmc_id,
                event: m.event.clone(),
                resolved: m.resolved.clone(),
                attr,
                opened: attr,
                fixed_period: Default::default(),
            });
        }
        let mut c = Counters::unopened(members, shared, ReadLayout::Group);
        c.rings = Some(Rings::new(ring_pages, RingPurpose::SwitchCounts));
        match c.fds.open_probe(&mut c.members, c.life.is_running()) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::Permission => {
                return Err(Error::permission(
                    Op::Allocate,
                    "log counts at context switches (log-proccsw samples the kernel's \
                     context-switch event)",
                    pmc_core::PermissionReason::PerfEventParanoid {
                        level: c._shared.sys.facts().paranoid,
                        needed: 1,
                    },
                )
                .with_errno(e.errno().unwrap_or(errno::EACCES)));
            }
            Err(e) if e.errno() == Some(errno::EINVAL) && inherit => {
                return Err(Error::new(
                    ErrorKind::NotSupported,
                    Op::Allocate,
                    "log-proccsw with descendants needs PERF_SAMPLE_READ on inherited events, \
                     which this kernel refuses (Linux 6.12 or later has it)",
                )
                .with_errno(errno::EINVAL)
                .with_help("drop descendants, or attach to each process"));
            }
            Err(e) => return Err(e),
        }
        Ok(SwitchGroup(c))
    }
}

impl<S: Sys> std::ops::Deref for SwitchGroup<S> {
    type Target = Counters<S>;
    fn deref(&self) -> &Counters<S> {
        &self.0
    }
}

impl<S: Sys> std::ops::DerefMut for SwitchGroup<S> {
    fn deref_mut(&mut self) -> &mut Counters<S> {
        &mut self.0
    }
}
