//! hwpmc's units against the portable ones: clock ticks and nanoseconds.

/// Nanoseconds per unit of `event` as this backend reports it: the portable `cpu-clock` and
/// `task-clock` are nanoseconds on every backend ([`pmc_core::PortableEvent::CpuClock`]), but
/// hwpmc has no nanosecond clock: they count `SOFT-CLOCK.HARD`, one per `hardclock()` call on
/// the CPU running the target (`kern_clock.c` `hardclock()`:
/// `PMC_SOFT_CALL_TF( , , clock, hard, ...)`; `hwpmc_soft.c` `pmc_soft_intr()` adds 1), so a
/// tick is `1e9 / kern.hz` ns of them. 1 for every other event (`SOFT-CLOCK.HARD` by its own
/// name counts ticks, as on FreeBSD).
pub(super) fn ns_per_unit(event: &pmc_core::EventSpec, hz: u64) -> u64 {
    if event
        .as_portable()
        .is_some_and(pmc_core::PortableEvent::is_clock)
    {
        (1_000_000_000 / hz.max(1)).max(1)
    } else {
        1
    }
}

/// `value` of `event` in the kernel's unit: nanoseconds of a portable clock become ticks of
/// `kern.hz` (rounded to the nearest, at least 1), everything else stays.
pub(super) fn to_kernel_units(event: &pmc_core::EventSpec, value: u64, hz: u64) -> u64 {
    match ns_per_unit(event, hz) {
        1 => value,
        ns => (value.saturating_add(ns / 2) / ns).max(1),
    }
}
