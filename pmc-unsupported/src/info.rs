//! The machine's facts and the diagnostics report (`pmcstat --diagnose`).

use pmc_core::info::Check;

/// One row: this OS has no backend, and what to do.
pub fn diagnose() -> Vec<Check> {
    vec![Check::no(
        "performance counters",
        format!("pmc has no backend for {}", std::env::consts::OS),
        "run on Linux (perf_event) or FreeBSD (hwpmc)",
    )]
}
