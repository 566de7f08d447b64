//! What allocating a PMC builds before any fd is opened: the `perf_event_attr` of each
//! member, its checks, and its ring size (the fds are opened by
//! [`InstanceSet`](super::instances::InstanceSet)).

use crate::counter::{Member, CLOCK_MONOTONIC};
use crate::errno_map::Facts;
use crate::events::Resolved;
use crate::shared::Shared;
use crate::sys::Sys;
use crate::{errno, events};
use perf_event_open_sys::bindings as b;
use perf_event_open_sys::bindings::perf_event_attr;
use pmc_core::{Allocation, Error, ErrorKind, Mode, Op, Rate, Result};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The attr member `m` is opened with in a fd set (`leader`: its first member), from its
/// allocate-time attr: who starts disabled, the group's pinned and exclusive bits,
/// `enable_on_exec` for an exec target, the leader's tracking bits, and inheritance into the
/// target's new threads (`follow_threads`).
pub(super) fn open_attr(
    m: &Member,
    leader: bool,
    enabled: bool,
    exec: bool,
    exit_reads: bool,
    follow_threads: bool,
) -> perf_event_attr {
    let mut attr = m.attr;
    // perf_event_open(2): only the leader of a group starts disabled; members follow
    // it, as perf opens them. Members are in the kernel's group whatever the read
    // layout (an inherited group is read member by member): a member opened disabled
    // and enabled after its leader was scheduled in loses the time until the next
    // reschedule, and with `inherit` its count (issue 20: 13,589-16,322 of 16,385
    // page faults, `time_running < time_enabled` on software events).
    attr.set_disabled(u64::from(!enabled && leader));
    // perf's :D (pinned) and :e (exclusive) are the group's: the leader's bits.
    let mods = &m.alloc.event.modifiers;
    attr.set_pinned(u64::from(leader && mods.pinned));
    attr.set_exclusive(u64::from(leader && mods.exclusive));
    attr.set_enable_on_exec(u64::from(exec));
    if leader && !m.alloc.mode.is_sampling() && exit_reads {
        // log-procexit: the exits, forks and command names of the tasks.
        attr.set_comm(1);
        attr.set_comm_exec(1);
        attr.set_task(1);
    }
    if leader && m.alloc.mode.is_sampling() {
        // Bookkeeping, as perf record's tracking event: new executable mappings,
        // command names (and execs), forks and exits.
        // (mmap2 needs mmap too: the kernel counts mmap listeners by `mmap`.)
        attr.set_mmap(1);
        attr.set_mmap2(1);
        attr.set_comm(1);
        attr.set_comm_exec(1);
        attr.set_task(1);
    }
    if follow_threads && attr.inherit() == 0 {
        attr.set_inherit(1);
        attr.set_inherit_thread(1);
    }
    attr
}

pub(super) fn build_attr(
    sys: &dyn Sys,
    a: &Allocation,
    r: &Resolved,
    facts: &Facts,
    group_read: bool,
    ring_bytes: usize,
) -> perf_event_attr {
    let mut attr = perf_event_attr {
        type_: r.type_,
        size: std::mem::size_of::<perf_event_attr>() as u32,
        config: r.config,
        ..Default::default()
    };
    // aarch64: ask for user-space reads (the rdpmc format bit) when they are on (crate::user_read).
    attr.__bindgen_anon_3.config1 = r.config1
        | crate::user_read::machine_user_read_bits(
            sys,
            r.type_,
            r.config1,
            a.scope.is_system(),
            a.mode.is_sampling(),
        );
    attr.__bindgen_anon_4.config2 = r.config2;
    attr.read_format = u64::from(
        b::PERF_FORMAT_TOTAL_TIME_ENABLED | b::PERF_FORMAT_TOTAL_TIME_RUNNING | b::PERF_FORMAT_ID,
    );
    if group_read {
        attr.read_format |= u64::from(b::PERF_FORMAT_GROUP);
    }
    attr.set_disabled(1);
    let m = &a.event.modifiers;
    // As perf does: an unprivileged process at paranoid >= 2 counts user mode
    // only unless it asked for more (and is then told why it cannot).
    let kernel = if m.is_restricted() {
        m.kernel
    } else {
        facts.privileged || facts.paranoid.is_none_or(|p| p < 2) || a.scope.is_system()
    };
    attr.set_exclude_user(u64::from(!m.counts_user()));
    attr.set_exclude_kernel(u64::from(!kernel));
    attr.set_exclude_hv(u64::from(!m.counts_hv() || !kernel));
    // perf's :P: the highest precision, lowered at open until the PMU takes it
    // (open_set_once); a software event has none.
    let precise = if m.max_precise {
        if r.is_hardware() {
            3
        } else {
            0
        }
    } else {
        m.precise.min(3)
    };
    attr.set_precise_ip(u64::from(precise));
    // perf's :I, :G, :H (perf-list(1)); :D and :e are set on a group's leader alone
    // (open_set_once), as perf sets them.
    attr.set_exclude_idle(u64::from(m.exclude_idle));
    attr.set_exclude_host(u64::from(m.guest));
    attr.set_exclude_guest(u64::from(m.host));
    if a.flags.contains(pmc_core::Flags::DESCENDANTS) && !a.scope.is_system() {
        attr.set_inherit(1);
    }
    if a.flags.contains(pmc_core::Flags::LOG_PROCEXIT)
        && !a.mode.is_sampling()
        && !a.scope.is_system()
    {
        set_exit_read_bits(&mut attr);
    }
    if let Mode::Sampling(rate) = a.mode {
        set_sampling_bits(&mut attr, a, rate, ring_bytes);
    }
    attr
}

/// log-procexit on a counting PMC, as perf record -s: the kernel writes each inherited task's
/// count to the ring at its exit (PERF_RECORD_READ), and the side-band records say which task
/// and when.
fn set_exit_read_bits(attr: &mut perf_event_attr) {
    attr.set_inherit_stat(1);
    attr.sample_type = u64::from(
        b::PERF_SAMPLE_TID | b::PERF_SAMPLE_TIME | b::PERF_SAMPLE_CPU | b::PERF_SAMPLE_IDENTIFIER,
    );
    attr.set_sample_id_all(1);
    attr.set_use_clockid(1);
    attr.clockid = CLOCK_MONOTONIC;
}

/// A sampling PMC's attr: the rate, what each sample carries, and the ring's wakeup.
fn set_sampling_bits(attr: &mut perf_event_attr, a: &Allocation, rate: Rate, ring_bytes: usize) {
    match rate {
        // A SOFT clock's period is in ticks (events::soft_clock_period).
        Rate::Period(p) => {
            attr.__bindgen_anon_1.sample_period = events::soft_clock_period(&a.event, p)
        }
        Rate::Frequency(f) => {
            attr.set_freq(1);
            attr.__bindgen_anon_1.sample_freq = f;
        }
    }
    attr.sample_type = u64::from(
        b::PERF_SAMPLE_IP | b::PERF_SAMPLE_TID | b::PERF_SAMPLE_TIME | b::PERF_SAMPLE_CPU,
    );
    // The period travels with each sample only when it varies (a frequency), as perf record
    // does. At a fixed period it is the one asked for, and asking for it anyway changes what
    // a software or tracepoint event samples: the kernel then writes one sample per event
    // occurrence, each of period 1 (perf_swevent_event(): `if ((event->attr.sample_type &
    // PERF_SAMPLE_PERIOD) && !event->attr.freq) { data->period = nr; return
    // perf_swevent_overflow(event, 1, data, regs); }`, kernel/events/core.c, Linux 3.x to
    // 6.18), so a period of 1,000 page faults gave 1,000 times the samples asked for, and the
    // losses that come with them. The drain fills the period in (RingSource::fixed_period).
    if matches!(rate, Rate::Frequency(_)) {
        attr.sample_type |= u64::from(b::PERF_SAMPLE_PERIOD);
    }
    if a.flags.contains(pmc_core::Flags::CALLCHAIN) {
        attr.sample_type |= u64::from(b::PERF_SAMPLE_CALLCHAIN);
    }
    #[cfg(feature = "sampling")]
    if let (true, Some(stack_size)) = (
        crate::log::unwind::wants_stack(a),
        a.call_graph.stack_size(),
    ) {
        // As perf record --call-graph dwarf: the user registers and stack with each
        // sample; the kernel's callchain keeps only its kernel part.
        attr.sample_type |= u64::from(b::PERF_SAMPLE_REGS_USER | b::PERF_SAMPLE_STACK_USER);
        attr.sample_regs_user = crate::log::unwind::REGS_MASK;
        attr.sample_stack_user = stack_size;
        attr.set_exclude_callchain_user(1);
    }
    // Which PMC a record belongs to when several share a ring.
    attr.sample_type |= u64::from(b::PERF_SAMPLE_IDENTIFIER);
    // Side-band records carry pid/tid/time/cpu/id too.
    attr.set_sample_id_all(1);
    // One documented clock for every timestamp in the log.
    attr.set_use_clockid(1);
    attr.clockid = CLOCK_MONOTONIC;
    attr.set_watermark(1);
    attr.__bindgen_anon_2.wakeup_watermark = u32::try_from(wakeup_bytes(a, ring_bytes))
        .unwrap_or(u32::MAX)
        .max(1);
}

/// Samples a ring keeps room for after it wakes the drain thread, at the least.
const HEADROOM_SAMPLES: usize = 64;

/// When a ring of `ring_bytes` wakes the drain thread: half full, as perf record's rings
/// (the kernel's default watermark), so that each wake-up (a context switch, tens of
/// microseconds of CPU on a virtual machine) drains as many samples as it can; the other
/// half and the drain's period ([`crate::DRAIN_PERIOD`]) keep it from filling. A quarter
/// full when half a ring would keep room for fewer than [`HEADROOM_SAMPLES`] samples with
/// user stacks (a DWARF PMC's ring within the unprivileged locked-memory limit): then
/// headroom matters more than wake-ups.
pub(super) fn wakeup_bytes(a: &Allocation, ring_bytes: usize) -> usize {
    let half = ring_bytes / 2;
    // Without the sampling feature no PMC samples user stacks.
    #[cfg(feature = "sampling")]
    let stack = crate::log::unwind::wants_stack(a)
        .then(|| a.call_graph.stack_size())
        .flatten();
    #[cfg(not(feature = "sampling"))]
    let stack: Option<u32> = {
        let _ = a;
        None
    };
    match stack {
        // A sample with a stack: the stack, its registers and the fixed fields.
        Some(size) if half / (size as usize + 512) < HEADROOM_SAMPLES => ring_bytes / 4,
        _ => half,
    }
}

/// The data pages of each ring of a PMC allocated now.
#[cfg(feature = "sampling")]
pub(super) fn ring_pages_for<S: Sys>(
    allocs: &[Allocation],
    shared: &Shared<S>,
    facts: &Facts,
) -> usize {
    let pages = shared.ring_pages.load(Ordering::Relaxed);
    if pages != 0 {
        return pages;
    }
    let stacks = allocs.iter().any(crate::log::unwind::wants_stack);
    let unlimited = facts.paranoid == Some(-1) || crate::sys::facts::has_ipc_lock(&shared.sys);
    match (stacks, unlimited, facts.privileged) {
        // Samples with user stacks are kilobytes each: 2 MiB rings, woken every ~120
        // samples of 8 KiB, where no locked-memory limit applies; perf's 512 KiB for a
        // privileged caller under the limit (an unprivileged one stays well within
        // perf_event_mlock_kb).
        (true, true, _) => crate::log::DWARF_RING_PAGES,
        (true, false, true) | (false, true, _) => crate::log::PERF_RING_PAGES,
        _ => crate::log::DEFAULT_RING_PAGES,
    }
}

/// Without the `sampling` feature nothing is sampled and no ring is mapped.
#[cfg(not(feature = "sampling"))]
pub(super) fn ring_pages_for<S: Sys>(_: &[Allocation], _: &Shared<S>, _: &Facts) -> usize {
    0
}

/// Refuses what this build cannot record: a DWARF call graph it cannot unwind or, without the
/// `sampling` feature (a counting-only build), sampling and the log flags at all.
fn check_recording(a: &Allocation) -> Result<()> {
    #[cfg(feature = "sampling")]
    return crate::log::unwind::check(a);
    #[cfg(not(feature = "sampling"))]
    {
        let what = if a.mode.is_sampling() {
            "sampling"
        } else if a.flags.contains(pmc_core::Flags::LOG_PROCEXIT) {
            "log-procexit"
        } else if a.flags.contains(pmc_core::Flags::LOG_PROCCSW) {
            "log-proccsw"
        } else {
            return Ok(());
        };
        Err(crate::shared::not_built(
            Op::Allocate,
            &format!("`{}`: {what}", a.event),
        ))
    }
}

/// The process-only log flags, and log-procexit's refusal of counting groups.
pub(super) fn check_log_flags(a: &Allocation, group_len: usize) -> Result<()> {
    if a.flags.contains(pmc_core::Flags::LOG_PROCCSW) && a.scope.is_system() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            Op::Allocate,
            "log-proccsw needs a process-scope PMC: it logs the counts of the target \
             processes at their context switches",
        )
        .with_errno(errno::EINVAL)
        .with_help("allocate it with process scope and attach it to the processes to watch"));
    }
    if a.flags.contains(pmc_core::Flags::LOG_PROCEXIT) && a.scope.is_system() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            Op::Allocate,
            "log-procexit needs a process-scope PMC: it logs the counts of the target \
             processes at their exits",
        )
        .with_errno(errno::EINVAL)
        .with_help("allocate it with process scope and attach it to the processes to watch"));
    }
    if a.flags.contains(pmc_core::Flags::LOG_PROCEXIT) && !a.mode.is_sampling() && group_len > 1 {
        return Err(Error::new(
            ErrorKind::NotSupported,
            Op::Allocate,
            "log-procexit on a counting group: each counting PMC with log-procexit \
             has its events of its own on Linux",
        )
        .with_help("allocate the PMC alone"));
    }
    Ok(())
}

impl Member {
    /// A member of a PMC being allocated: its event resolved, its attr built, its log id.
    pub(super) fn new<S: Sys>(
        a: &Allocation,
        facts: &Facts,
        grouped: bool,
        ring_bytes: usize,
        shared: &Shared<S>,
    ) -> Result<Member> {
        a.check_cgroup()?;
        check_recording(a)?;
        events::check_allocation(a)?;
        if a.event.modifiers.sample_read && a.mode.is_sampling() {
            // PERF_SAMPLE_READ's counts would have no place in the log's samples.
            return Err(Error::new(
                ErrorKind::NotSupported,
                Op::Allocate,
                format!(
                    "`{}`: the :S modifier (read the counts with each sample) is not \
                     supported for sampling: the log's samples carry no counts",
                    a.event
                ),
            )
            .with_help("drop :S; Group::read gives a group's counts together"));
        }
        let resolved = events::resolve(&shared.sys, &a.event)?;
        if let Mode::Sampling(Rate::Frequency(f)) = a.mode {
            if let Some(max) = facts.max_sample_rate.filter(|m| f > *m) {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    Op::Allocate,
                    format!("sampling frequency {f} Hz is above kernel.perf_event_max_sample_rate = {max}"),
                )
                .with_help("use a lower frequency, or raise the limit: sysctl -w kernel.perf_event_max_sample_rate=<hz>"));
            }
        }
        let mut attr = build_attr(&shared.sys, a, &resolved, facts, grouped, ring_bytes);
        if a.mode.is_sampling() && !shared.no_format_lost.load(Ordering::Relaxed) {
            // The kernel's count of the samples it could not write (Linux 6.0+), read at stop:
            // samples lost while the drain was held up (a blocked log writer, a stopped
            // process) have no PERF_RECORD_LOST if the events stop before draining resumes.
            attr.read_format |= u64::from(b::PERF_FORMAT_LOST);
        }
        #[cfg(feature = "sampling")]
        let pmc_id = a
            .log_id
            .unwrap_or_else(|| shared.next_pmc_id.fetch_add(1, Ordering::Relaxed));
        let fixed = match a.mode {
            // As set_sampling_bits gives it to the kernel.
            Mode::Sampling(Rate::Period(p)) => events::soft_clock_period(&a.event, p),
            _ => 0,
        };
        Ok(Member {
            alloc: a.clone(),
            #[cfg(feature = "sampling")]
            pmc_id,
            event: a.event.to_string(),
            resolved,
            attr,
            opened: attr,
            fixed_period: Arc::new(AtomicU64::new(fixed)),
        })
    }
}

/// A counting-only build (no `sampling` feature) counts, and refuses what needs the sample log
/// at allocation, naming the feature (the fake kernel: no privileges needed).
#[cfg(all(test, not(feature = "sampling")))]
mod counting_only {
    use crate::sys::fake::FakeKernel;
    use pmc_core::{Allocation, Backend as _, ErrorKind, Flags, Pmc as _, Rate};
    use std::sync::Arc;

    #[test]
    fn sampling_and_the_log_are_refused_naming_the_feature() {
        let backend = crate::Backend::with_sys(Arc::new(FakeKernel::new()));
        let clock = || "cpu-clock".parse().expect("event");
        let mut pmc = backend
            .allocate(&Allocation::counting(clock()))
            .expect("counting still allocates");
        pmc.start().expect("start");
        pmc.stop().expect("stop");
        pmc.read().expect("read");
        for a in [
            Allocation::sampling(clock(), Rate::Period(1000)),
            Allocation::counting(clock()).flags(Flags::LOG_PROCEXIT),
            Allocation::counting(clock()).flags(Flags::LOG_PROCCSW),
        ] {
            let e = backend.allocate(&a).expect_err("refused");
            assert_eq!(e.kind(), ErrorKind::NotSupported, "{e}");
            assert!(e.to_string().contains("`sampling` feature"), "{e}");
        }
        let e = backend
            .configure_log(Box::new(std::io::sink()))
            .expect_err("no log");
        assert_eq!(e.kind(), ErrorKind::NotSupported, "{e}");
    }
}
