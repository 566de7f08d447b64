//! The names the parser knows: the portable events, Linux generic and cache
//! names, hwpmc class prefixes and the pmu-events table; the suggestion for
//! a mistyped name.

use std::fmt;

/// Events that mean the same thing on every backend.
///
/// Each maps to a native event on Linux (`PERF_TYPE_HARDWARE` /
/// `PERF_TYPE_SOFTWARE`) and on FreeBSD (an architectural hwpmc event, or a
/// SOFT-class event).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum PortableEvent {
    /// Core clock cycles while the CPU is not halted. Linux:
    /// `PERF_COUNT_HW_CPU_CYCLES`; FreeBSD: `unhalted-cycles`.
    Cycles,
    /// Instructions retired. Linux: `PERF_COUNT_HW_INSTRUCTIONS`; FreeBSD:
    /// `instructions`.
    Instructions,
    /// Branch instructions retired. Linux: `PERF_COUNT_HW_BRANCH_INSTRUCTIONS`;
    /// FreeBSD: `branches`.
    Branches,
    /// Mispredicted branches retired. Linux: `PERF_COUNT_HW_BRANCH_MISSES`;
    /// FreeBSD: `branch-mispredicts`.
    BranchMisses,
    /// Last-level cache references. Linux: `PERF_COUNT_HW_CACHE_REFERENCES`;
    /// FreeBSD: the architectural LLC-reference event.
    CacheReferences,
    /// Last-level cache misses. Linux: `PERF_COUNT_HW_CACHE_MISSES`; FreeBSD:
    /// the architectural LLC-miss event.
    CacheMisses,
    /// A per-CPU wall clock in nanoseconds (a timer, not a hardware counter).
    /// Linux: `PERF_COUNT_SW_CPU_CLOCK`. FreeBSD: hwpmc has no nanosecond
    /// clock, so the backend counts `SOFT-CLOCK.HARD` ticks of `kern.hz` (see
    /// [`SoftClock`](super::SoftClock)) and converts: a reading is ticks x `1e9 / kern.hz` ns
    /// (one tick's resolution, 1 ms at the default hz), a sampling period in
    /// ns becomes the nearest whole number of ticks. Counts that hwpmc writes
    /// into its own log (process exits, context switches) stay in ticks.
    CpuClock,
    /// Time the measured task was on a CPU, in nanoseconds. Linux:
    /// `PERF_COUNT_SW_TASK_CLOCK`. FreeBSD: as [`PortableEvent::CpuClock`]
    /// (`SOFT-CLOCK.HARD` ticks, converted to ns).
    TaskClock,
    /// Page faults, minor and major. Linux: `PERF_COUNT_SW_PAGE_FAULTS`;
    /// FreeBSD: `SOFT-PAGE_FAULT.ALL`.
    PageFaults,
    /// Context switches of the measured task(s). Linux:
    /// `PERF_COUNT_SW_CONTEXT_SWITCHES`; FreeBSD: emulated with log-proccsw
    /// where no SOFT event exists.
    ContextSwitches,
    /// Migrations of the measured task(s) between CPUs. Linux:
    /// `PERF_COUNT_SW_CPU_MIGRATIONS`.
    CpuMigrations,
}

impl PortableEvent {
    /// Every portable event, in documentation order.
    pub const ALL: [PortableEvent; 11] = [
        PortableEvent::Cycles,
        PortableEvent::Instructions,
        PortableEvent::Branches,
        PortableEvent::BranchMisses,
        PortableEvent::CacheReferences,
        PortableEvent::CacheMisses,
        PortableEvent::CpuClock,
        PortableEvent::TaskClock,
        PortableEvent::PageFaults,
        PortableEvent::ContextSwitches,
        PortableEvent::CpuMigrations,
    ];

    /// The canonical (perf-style) name.
    pub const fn name(self) -> &'static str {
        match self {
            PortableEvent::Cycles => "cycles",
            PortableEvent::Instructions => "instructions",
            PortableEvent::Branches => "branches",
            PortableEvent::BranchMisses => "branch-misses",
            PortableEvent::CacheReferences => "cache-references",
            PortableEvent::CacheMisses => "cache-misses",
            PortableEvent::CpuClock => "cpu-clock",
            PortableEvent::TaskClock => "task-clock",
            PortableEvent::PageFaults => "page-faults",
            PortableEvent::ContextSwitches => "context-switches",
            PortableEvent::CpuMigrations => "cpu-migrations",
        }
    }

    /// Whether this event needs a hardware PMU (as opposed to a kernel
    /// software counter).
    pub const fn is_hardware(self) -> bool {
        matches!(
            self,
            PortableEvent::Cycles
                | PortableEvent::Instructions
                | PortableEvent::Branches
                | PortableEvent::BranchMisses
                | PortableEvent::CacheReferences
                | PortableEvent::CacheMisses
        )
    }

    /// Whether this is a clock event (`cpu-clock`, `task-clock`): its unit is
    /// time, nanoseconds on Linux (ticks of `kern.hz` on FreeBSD, see
    /// [`PortableEvent::CpuClock`]).
    pub const fn is_clock(self) -> bool {
        matches!(self, PortableEvent::CpuClock | PortableEvent::TaskClock)
    }

    /// Looks up a portable name or one of its aliases (perf and hwpmc
    /// spellings), ignoring ASCII case and treating `_` as `-`.
    pub fn from_name(name: &str) -> Option<PortableEvent> {
        let n = normalize(name);
        Some(match n.as_str() {
            "cycles" | "cpu-cycles" | "unhalted-cycles" | "unhalted-core-cycles" => {
                PortableEvent::Cycles
            }
            "instructions" | "instructions-retired" => PortableEvent::Instructions,
            "branches" | "branch-instructions" => PortableEvent::Branches,
            "branch-misses" | "branch-mispredicts" => PortableEvent::BranchMisses,
            "cache-references" | "llc-references" => PortableEvent::CacheReferences,
            "cache-misses" | "llc-misses" => PortableEvent::CacheMisses,
            "cpu-clock" => PortableEvent::CpuClock,
            "task-clock" => PortableEvent::TaskClock,
            "page-faults" | "faults" => PortableEvent::PageFaults,
            "context-switches" | "cs" => PortableEvent::ContextSwitches,
            "cpu-migrations" | "migrations" => PortableEvent::CpuMigrations,
            _ => return None,
        })
    }
}

impl fmt::Display for PortableEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Linux generic event names that are not portable but that the parser
/// knows (so that a typo is caught before reaching the kernel).
pub const LINUX_GENERIC_NAMES: &[&str] = &[
    "bus-cycles",
    "ref-cycles",
    "stalled-cycles-frontend",
    "stalled-cycles-backend",
    "idle-cycles-frontend",
    "idle-cycles-backend",
    "minor-faults",
    "major-faults",
    "alignment-faults",
    "emulation-faults",
    "dummy",
    "bpf-output",
    "cgroup-switches",
    "duration_time",
];

/// Cache-event name parts (`L1-dcache-load-misses` style), as perf spells them.
pub const LINUX_CACHE_NAMES: &[&str] = &[
    "L1-dcache",
    "L1-icache",
    "LLC",
    "dTLB",
    "iTLB",
    "branch",
    "node",
];
/// Cache-event operations: the access count and the miss count spellings.
pub const LINUX_CACHE_OPS: &[(&str, &str)] = &[
    ("loads", "load-misses"),
    ("stores", "store-misses"),
    ("prefetches", "prefetch-misses"),
];

/// hwpmc class prefixes that make a bare name a native hwpmc event
/// (`k8-dc-misses`, `iap-inst-retired.any`, `tsc-tsc`, `soft-clock.hard`).
pub const HWPMC_CLASS_PREFIXES: &[&str] = &[
    "k7-", "k8-", "iaf-", "iap-", "ucf-", "ucp-", "tsc-", "soft-", "armv7-", "armv8-", "ibs-",
    "rapl-", "dmc-", "cmn-", "mips", "ppc", "e500-", "beri-", "powerpc-",
];

pub(super) fn normalize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c == '_' {
                '-'
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect()
}

pub(super) fn is_generic_name(name: &str) -> bool {
    if LINUX_GENERIC_NAMES
        .iter()
        .any(|n| n.eq_ignore_ascii_case(name))
    {
        return true;
    }
    for cache in LINUX_CACHE_NAMES {
        for (access, miss) in LINUX_CACHE_OPS {
            for op in [access, miss] {
                if format!("{cache}-{op}").eq_ignore_ascii_case(name) {
                    return true;
                }
            }
        }
    }
    false
}

/// Whether `name` is an event name (so that `name:x` is `x` as modifiers,
/// not a tracepoint).
pub(super) fn is_known_name(name: &str) -> bool {
    PortableEvent::from_name(name).is_some()
        || is_generic_name(name)
        || is_table_name(name)
        || name
            .strip_prefix('r')
            .is_some_and(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))
}

/// A CPU event of the pmu-events table (any model), a libpmc alias, or
/// `tsc`: case-insensitive, as libpmc's `strcasecmp`.
fn is_table_name(name: &str) -> bool {
    name.eq_ignore_ascii_case("tsc")
        || pmc_events::is_known(name)
        || pmc_events::is_libpmc_alias(name)
}

/// SOFT events (`SOFT-CLOCK.HARD`, `clock.hard`, `PAGE_FAULT.ALL`): words
/// joined by `.` in either case (libpmc compares case-insensitively), a
/// known hwpmc class prefix, or a table name / libpmc alias.
pub(super) fn is_hwpmc_name(name: &str) -> bool {
    if is_table_name(name) {
        return true;
    }
    let lower = name.to_ascii_lowercase();
    if HWPMC_CLASS_PREFIXES
        .iter()
        .any(|p| lower.starts_with(p) && lower.len() > p.len())
    {
        return name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    }
    let Some((a, b)) = name.split_once('.') else {
        return false;
    };
    let word = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    // One case throughout (`CLOCK.HARD`, `clock.hard`), so a mistyped
    // mixed-case name still gets a suggestion.
    let one_case = name == name.to_ascii_uppercase() || name == lower;
    one_case && word(a) && b.split('.').all(word)
}

fn known_names() -> impl Iterator<Item = &'static str> {
    PortableEvent::ALL
        .iter()
        .map(|p| p.name())
        .chain(LINUX_GENERIC_NAMES.iter().copied())
        .chain([
            "unhalted-cycles",
            "branch-mispredicts",
            "cpu-cycles",
            "branch-instructions",
        ])
}

pub(super) fn suggest(name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    known_names()
        .map(|cand| (edit_distance(&lower, cand), cand))
        .filter(|(d, cand)| *d <= 2.max(cand.len() / 4))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().take(64).collect();
    let b: Vec<char> = b.chars().take(64).collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
            // Transposition counts as one edit.
            if i > 0 && j > 0 && a[i] == b[j - 1] && a[i - 1] == b[j] {
                cur[j + 1] = cur[j + 1].min(prev[j - 1] + 1);
            }
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}
