//! Benchmark support for `pmc-bench` (see `src/main.rs` and BENCHMARKS.md at
//! the workspace root): interleaved measurement, medians, the result table,
//! and bare system calls to compare the library against (perf_event fds on
//! Linux, hwpmc's `PMC_OP_*` requests on FreeBSD).
#![deny(unsafe_code)]

pub mod sys;

#[cfg(target_os = "linux")]
use perf_event_open_sys::bindings as b;
use std::time::Instant;

/// The median of `v` (0 for an empty slice); sorts `v`.
pub fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Runs `variants` interleaved: `rounds` rounds, each running every variant
/// once (`batch` calls), in an order rotated every round so none always goes
/// first. Returns, per variant, the ns per call of every round.
pub fn interleave(rounds: usize, batch: usize, variants: &mut [&mut dyn FnMut()]) -> Vec<Vec<f64>> {
    let k = variants.len();
    let mut out = vec![Vec::with_capacity(rounds); k];
    // Warm-up: one batch each.
    for v in variants.iter_mut() {
        for _ in 0..batch {
            v();
        }
    }
    for r in 0..rounds {
        for j in 0..k {
            let i = (r + j) % k;
            let t = Instant::now();
            for _ in 0..batch {
                (variants[i])();
            }
            out[i].push(t.elapsed().as_nanos() as f64 / batch as f64);
        }
    }
    out
}

/// The median over rounds of `a[i] / b[i]`: a ratio robust to drift between rounds.
pub fn median_ratio(a: &[f64], b: &[f64]) -> f64 {
    let mut r: Vec<f64> = a
        .iter()
        .zip(b)
        .filter(|(_, y)| **y > 0.0)
        .map(|(x, y)| x / y)
        .collect();
    median(&mut r)
}

/// One line of the result table.
#[derive(Debug, Clone)]
pub struct Row {
    /// Section (`read`, `control`, ...).
    pub section: &'static str,
    /// What was measured.
    pub what: String,
    /// Its median, in `unit`.
    pub value: f64,
    /// `ns`, `ms`, `us/PMC`, ...
    pub unit: &'static str,
    /// The baseline it is compared with, and the ratio (median of per-round ratios).
    pub vs: Option<(String, f64)>,
    /// The target and whether it is met, or a note.
    pub note: String,
}

/// A row that could not be measured here.
pub fn skipped(section: &'static str, what: &str, why: &str) -> Row {
    Row {
        section,
        what: what.to_string(),
        value: f64::NAN,
        unit: "",
        vs: None,
        note: format!("SKIPPED: {why}"),
    }
}

/// Prints the table.
pub fn print_table(rows: &[Row]) {
    println!(
        "{:<9} {:<44} {:>12} {:<7} {:<30} {:>7}  target / note",
        "section", "measurement", "median", "unit", "baseline (same run)", "ratio"
    );
    println!("{}", "-".repeat(140));
    for r in rows {
        let value = if r.value.is_nan() {
            "-".to_string()
        } else if r.value >= 100.0 {
            format!("{:.0}", r.value)
        } else {
            format!("{:.2}", r.value)
        };
        let (base, ratio) = match &r.vs {
            Some((b, x)) => (b.clone(), format!("{x:.2}x")),
            None => (String::new(), String::new()),
        };
        println!(
            "{:<9} {:<44} {:>12} {:<7} {:<30} {:>7}  {}",
            r.section, r.what, value, r.unit, base, ratio, r.note
        );
    }
}

#[cfg(target_os = "linux")]
/// A `perf_event_attr` for a software event as pmc builds it for a counting
/// PMC: disabled, `read_format` = TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING | ID
/// (plus GROUP when `group`).
pub fn sw_attr(config: u32, group: bool, inherit: bool) -> b::perf_event_attr {
    let mut attr = b::perf_event_attr {
        type_: b::PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<b::perf_event_attr>() as u32,
        config: u64::from(config),
        ..Default::default()
    };
    attr.read_format = u64::from(
        b::PERF_FORMAT_TOTAL_TIME_ENABLED | b::PERF_FORMAT_TOTAL_TIME_RUNNING | b::PERF_FORMAT_ID,
    );
    if group {
        attr.read_format |= u64::from(b::PERF_FORMAT_GROUP);
    }
    attr.set_disabled(1);
    attr.set_inherit(u64::from(inherit));
    attr
}

/// Resident set size of this process, in bytes (`/proc/self/statm`).
pub fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|v| v.parse::<u64>().ok())
        })
        .map_or(0, |pages| pages * 4096)
}

/// Software event ids, re-exported for the binary.
#[cfg(target_os = "linux")]
pub use b::{
    PERF_COUNT_SW_CONTEXT_SWITCHES, PERF_COUNT_SW_CPU_CLOCK, PERF_COUNT_SW_CPU_MIGRATIONS,
    PERF_COUNT_SW_PAGE_FAULTS, PERF_COUNT_SW_TASK_CLOCK,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&mut []), 0.0);
        assert_eq!(median_ratio(&[2.0, 4.0, 9.0], &[1.0, 2.0, 0.0]), 2.0);
    }

    #[test]
    fn interleave_runs_every_variant_every_round() {
        let (mut a, mut b) = (0, 0);
        let mut va = || a += 1;
        let mut vb = || b += 1;
        let r = interleave(5, 3, &mut [&mut va, &mut vb]);
        assert_eq!(r.len(), 2);
        assert!(r.iter().all(|v| v.len() == 5));
        assert_eq!((a, b), (18, 18)); // warm-up batch + 5 rounds, 3 calls each
    }
}
