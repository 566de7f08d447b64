//! What a log starts with: the file [`Header`] (its [`Clock`]) and the
//! [`PmcDescriptor`]s (their [`Scope`] and [`Mode`]).

use std::borrow::Cow;

/// The clock that timestamps were taken from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum Clock {
    /// Not known (code 0).
    Unknown,
    /// `CLOCK_REALTIME` (code 1).
    Realtime,
    /// `CLOCK_MONOTONIC` (code 2), perf's `use_clockid` default choice.
    Monotonic,
    /// `CLOCK_MONOTONIC_RAW` (code 3).
    MonotonicRaw,
    /// `CLOCK_BOOTTIME` (code 4).
    Boottime,
    /// Raw time-stamp counter ticks (code 5), as in hwpmc's `pl_tsc`.
    Tsc,
    /// perf's default `local_clock()` (code 6), nanoseconds since boot-ish.
    PerfLocal,
}

impl Clock {
    /// The on-disk code.
    pub fn code(self) -> u8 {
        match self {
            Clock::Unknown => 0,
            Clock::Realtime => 1,
            Clock::Monotonic => 2,
            Clock::MonotonicRaw => 3,
            Clock::Boottime => 4,
            Clock::Tsc => 5,
            Clock::PerfLocal => 6,
        }
    }
    /// Decode an on-disk code; unknown codes map to [`Clock::Unknown`].
    pub fn from_code(c: u8) -> Clock {
        match c {
            1 => Clock::Realtime,
            2 => Clock::Monotonic,
            3 => Clock::MonotonicRaw,
            4 => Clock::Boottime,
            5 => Clock::Tsc,
            6 => Clock::PerfLocal,
            _ => Clock::Unknown,
        }
    }
}

/// The file header: what produced the log, on which host, with which clock.
///
/// It is always the first record of a file.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Header<'a> {
    /// Operating system, e.g. `"Linux"` or `"FreeBSD"`.
    pub os: Cow<'a, str>,
    /// Kernel release, e.g. `"6.1.0-18-amd64"`.
    pub kernel_release: Cow<'a, str>,
    /// Machine architecture, e.g. `"x86_64"` or `"amd64"`.
    pub arch: Cow<'a, str>,
    /// Human-readable CPU model (`/proc/cpuinfo` model name, `hw.model`).
    pub cpu_model: Cow<'a, str>,
    /// Machine-readable CPU id (`GenuineIntel-6-55-4`, hwpmc's `kern.hwpmc.cpuid`).
    pub cpuid: Cow<'a, str>,
    /// Number of CPUs.
    pub cpu_count: u32,
    /// Page size in bytes.
    pub page_size: u32,
    /// Clock of the `time` fields.
    pub clock: Clock,
    /// Timestamp ticks per second: 1_000_000_000 for nanoseconds, the TSC
    /// frequency for [`Clock::Tsc`], 0 when unknown.
    pub ticks_per_second: u64,
    /// Wall-clock time at the start of the log, nanoseconds since the Unix epoch.
    pub start_wall_ns: i64,
    /// Timestamp (in the clock above) taken at the same moment as `start_wall_ns`.
    pub start_time: u64,
    /// The producer, e.g. `"pmc-linux 0.1.0"` or `"hwpmc 0x0a010000 (imported)"`.
    pub backend: Cow<'a, str>,
}

impl Default for Header<'_> {
    fn default() -> Self {
        Header {
            os: Cow::Borrowed(""),
            kernel_release: Cow::Borrowed(""),
            arch: Cow::Borrowed(""),
            cpu_model: Cow::Borrowed(""),
            cpuid: Cow::Borrowed(""),
            cpu_count: 0,
            page_size: 0,
            clock: Clock::Unknown,
            ticks_per_second: 0,
            start_wall_ns: 0,
            start_time: 0,
            backend: Cow::Borrowed(""),
        }
    }
}

/// Whether a PMC measures one process (and maybe its descendants) or a CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Scope {
    /// Process (thread) scope: hwpmc TC/TS, perf with a pid.
    Process,
    /// System (CPU) scope: hwpmc SC/SS, perf with pid -1 and a CPU.
    System,
}

/// Counting or sampling, and the sampling rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Mode {
    /// Counting only.
    Counting,
    /// Sample every N events.
    SamplingPeriod(u64),
    /// Sample N times per second (perf `-F`).
    SamplingFrequency(u64),
}

/// A PMC descriptor: what a PMC id in later records means.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct PmcDescriptor<'a> {
    /// When the PMC was allocated.
    pub time: u64,
    /// The id used by [`Sample::pmc_id`](super::Sample::pmc_id) and [`Counter::pmc_id`](super::Counter::pmc_id).
    pub pmc_id: u32,
    /// The event spec as the user wrote it (`"cycles:u"`, `"instructions,usr"`).
    pub event_spec: Cow<'a, str>,
    /// The canonical event name (`"cpu-cycles"`).
    pub canonical_name: Cow<'a, str>,
    /// Process or system scope.
    pub scope: Scope,
    /// The CPU for system-scope PMCs, `None` for any CPU.
    pub cpu: Option<u32>,
    /// Counting or sampling.
    pub mode: Mode,
    /// `FLAG_*` bits of this module.
    pub flags: u32,
    /// Backend-native configuration, `key=value` pairs separated by commas
    /// (`"type=0,config=0x0"` on Linux, `"event=0x1000,flags=0x80"` for hwpmc).
    pub native_config: Cow<'a, str>,
}
