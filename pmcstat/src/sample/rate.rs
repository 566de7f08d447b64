//! The sampling rate: `-n`, `--freq`, a spec's `,freq=`, and the defaults by
//! the event's kind.

use pmc::{EventSpec, Rate};

use crate::config::Sample;

/// pmcstat(8)'s default sampling period (`-n`), kept for hardware events where the kernel
/// has no frequency mode of its own (FreeBSD's hwpmc): one sample every 65536 events (at
/// 2-3 GHz, 30,000-45,000 samples a second of cycles).
pub const DEFAULT_RATE: u64 = 65536;

/// The default period of a counted software event (page faults, context switches) where the
/// kernel has no frequency mode: hwpmc's smallest reload count (`kern.hwpmc.mincount`, 1000
/// unless set lower; hwpmc raises any period below it). 65536 page faults is more than most
/// programs take in a second, so pmcstat(8)'s default gave none (issue 34: xz, 0 samples).
pub const DEFAULT_SOFT_RATE: u64 = 1000;

/// The default sampling frequency: perf record's (`-F 4000` for any event without `-c`/`-F`),
/// for the time events (`cpu-clock`, `task-clock`) everywhere, and for every other event but
/// tracepoints and FreeBSD's SOFT clocks where the kernel adapts the period to a frequency
/// itself ([`pmc::Backend::native_frequency`], Linux): `perf record -e page-faults` took
/// 1,835 samples of xz where 65536 events a sample took none. 65536 units of a time event
/// would be a sample every 65.5 us of cpu-clock (15.3 kHz per CPU: issue 20 measured 4-5x
/// perf's samples and 20,000 lost in 5 s of `-T -S clock.stat`).
pub const DEFAULT_TIME_FREQ: u64 = 4000;

/// Splits a `,freq=HZ` qualifier off an event spec: `("cpu-clock", Some(1000))`.
pub fn split_freq(spec: &str) -> Result<(String, Option<u64>), String> {
    let mut freq = None;
    let mut rest = Vec::new();
    for part in spec.split(',') {
        match part.trim().strip_prefix("freq=") {
            Some(v) => {
                let hz: u64 = v
                    .parse()
                    .map_err(|_| format!("bad frequency `{v}` in `{spec}`"))?;
                if hz == 0 {
                    return Err(format!("frequency must be at least 1 in `{spec}`"));
                }
                freq = Some(hz);
            }
            None => rest.push(part),
        }
    }
    Ok((rest.join(","), freq))
}

/// The rate of a PMC without its own `,freq=`: `--freq`, else `-n`, else the default for
/// the event's kind ([`default_rate`]), with a note saying which default was chosen (for `-v`).
pub(super) fn rate_for(
    args: &Sample,
    spec: &EventSpec,
    native_frequency: bool,
) -> (Rate, Option<String>) {
    match (args.frequency, args.rate) {
        (Some(hz), _) => (Rate::Frequency(hz), None),
        (None, Some(n)) => (Rate::Period(n), None),
        (None, None) => {
            let (rate, why) = default_rate(spec, native_frequency);
            (rate, Some(why))
        }
    }
}

/// The default rate of a sampling PMC by the event's kind, and why, so that a one-second
/// run gets a useful number of samples:
///
/// | event | default | as |
/// |---|---|---|
/// | FreeBSD's SOFT clocks (`clock.hard`, `clock.stat`, `clock.prof`) | every tick (`-n 1`): 1000, 127, 8128 a second (on Linux every 1 ms, 7.874 ms, 123 us of CPU time) | hwpmc's `pmc_soft_intr()`: one sample per reload count of ticks |
/// | tracepoints | every event (`-n 1`) | perf record |
/// | `cpu-clock`, `task-clock` | 4000 Hz | perf record |
/// | any other event, where the kernel has a frequency mode (Linux) | 4000 Hz | perf record |
/// | software events (page faults, switches) without one (FreeBSD) | every 1000 events | hwpmc's smallest reload count |
/// | hardware events without one (FreeBSD) | every 65536 events | pmcstat(8) |
pub fn default_rate(spec: &EventSpec, native_frequency: bool) -> (Rate, String) {
    const CHANGE: &str = "-n/--freq to change";
    if let Some(c) = spec.soft_clock() {
        return (
            Rate::Period(1),
            format!(
                "one sample per tick of {} ({} ticks a second by default, {}; on Linux every \
                 {} ms of CPU time): default for a clock, as its name says; {CHANGE}",
                c.name(),
                c.default_hz(),
                c.rate_name(),
                c.tick_ns() as f64 / 1e6
            ),
        );
    }
    if matches!(spec.source, pmc::EventSource::Tracepoint { .. }) {
        return (
            Rate::Period(1),
            format!("every event (default for a tracepoint, as perf record); {CHANGE}"),
        );
    }
    if spec.is_time() || native_frequency {
        return (
            Rate::Frequency(DEFAULT_TIME_FREQ),
            format!(
                "{DEFAULT_TIME_FREQ} Hz (default, as perf record: the kernel adapts the period \
                 to the event's rate); {CHANGE}"
            ),
        );
    }
    if is_software(spec) {
        return (
            Rate::Period(DEFAULT_SOFT_RATE),
            format!(
                "one sample every {DEFAULT_SOFT_RATE} events (default for a software event \
                 without a kernel frequency mode: hwpmc's smallest reload count); {CHANGE}"
            ),
        );
    }
    (
        Rate::Period(DEFAULT_RATE),
        format!(
            "one sample every {DEFAULT_RATE} events (default for a hardware event without a \
             kernel frequency mode, as pmcstat(8)); {CHANGE}"
        ),
    )
}

/// Whether the event is a kernel software event counting occurrences (page faults, context
/// switches, migrations; hwpmc's SOFT class): rarer than a hardware event's.
pub(super) fn is_software(spec: &EventSpec) -> bool {
    match &spec.source {
        pmc::EventSource::Portable(p) => !p.is_hardware(),
        pmc::EventSource::Generic(g) => [
            "minor-faults",
            "major-faults",
            "alignment-faults",
            "emulation-faults",
            "cgroup-switches",
        ]
        .iter()
        .any(|n| n.eq_ignore_ascii_case(g)),
        pmc::EventSource::Hwpmc(n) => {
            let lower = n.to_ascii_lowercase();
            lower.starts_with("soft-")
                || lower.starts_with("soft_")
                || lower.starts_with("page_fault.")
        }
        _ => false,
    }
}

/// A rate as the warnings say it: `at 4000 Hz`, `every 65536 events`.
pub(super) fn rate_text(rate: Rate) -> String {
    match rate {
        Rate::Frequency(hz) => format!("at {hz} Hz"),
        Rate::Period(1) => "at every event".to_owned(),
        Rate::Period(n) => format!("every {n} events"),
    }
}
