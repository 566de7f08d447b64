//! The Linux suite: pmc-linux against bare perf_event fds and the perf-event crates.
//!
//! One file a section (`read`, `control`, `startup`, `sampling`, `pmclog`,
//! `scale`); `profiler`, `dwarf` and `metrics` hold the sections that run
//! pmcstat against perf and node_exporter.

mod control;
mod dwarf;
mod instructions;
mod metrics;
mod pmclog;
mod profiler;
mod read;
mod sampling;
mod scale;
mod startup;

use control::bench_control;
use pmclog::bench_log;
use read::bench_read;
use sampling::{bench_sampling, process_cpu_ns, spin_sampled};
use scale::{bench_scale, helper_threads};
use startup::{bench_startup, calibrate, have, spin};

use pmc_bench::{median, print_table, skipped, sys, Row};
use pmc_core::Allocation;
use std::hint::black_box;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

/// One section of the suite: appends its rows.
type Section = fn(&Opts, &mut Vec<Row>);

struct Opts {
    quick: bool,
    only: Option<String>,
    pmcstat: Option<PathBuf>,
}

pub(crate) fn main() {
    let args: Vec<String> = std::env::args().collect();
    // Helper modes (children of the benchmark).
    if let Some(i) = args.iter().position(|a| a == "--spin") {
        let n: u64 = args.get(i + 1).and_then(|v| v.parse().ok()).unwrap_or(1);
        if let Some(j) = args.iter().position(|a| a == "--sampled") {
            let hz: u64 = args.get(j + 1).and_then(|v| v.parse().ok()).unwrap_or(1000);
            if let Err(e) = spin_sampled(hz, n) {
                eprintln!("sampling: {e}");
                std::process::exit(1);
            }
            return;
        }
        if let Some(k) = args.iter().position(|a| a == "--report") {
            // The profiler section's workload: reports its own spin wall
            // time and its own CPU (ns), so a profiler's tree CPU can be split,
            // and its parent's (the profiler's) CPU when the spin began, so
            // that the profiler's start-up can be told from the rest.
            let parent = process_cpu_ns(std::os::unix::process::parent_id());
            let t = Instant::now();
            black_box(spin(n));
            let wall = t.elapsed().as_nanos();
            let line = format!("{wall} {} {}\n", sys::self_cpu_ns(), parent.unwrap_or(0));
            if let Some(f) = args.get(k + 1) {
                std::fs::write(f, line).expect("write the report");
            }
            return;
        }
        black_box(spin(n));
        return;
    }
    if args.get(1).map(String::as_str) == Some("--rusage-child") {
        profiler::rusage_child(&args[2..]);
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--helper-threads") {
        let n: usize = args.get(i + 1).and_then(|v| v.parse().ok()).unwrap_or(256);
        helper_threads(n);
        return;
    }
    let opts = Opts {
        quick: args.iter().any(|a| a == "--quick"),
        only: args
            .iter()
            .position(|a| a == "--only")
            .and_then(|i| args.get(i + 1))
            .cloned(),
        pmcstat: args
            .iter()
            .position(|a| a == "--pmcstat")
            .and_then(|i| args.get(i + 1))
            .map(PathBuf::from)
            .or_else(find_pmcstat),
    };
    let t0 = Instant::now();
    print_machine();
    let mut rows = Vec::new();
    let sections: [(&str, Section); 11] = [
        ("read latency", bench_read),
        ("control latency", bench_control),
        ("start-up and counting overhead", bench_startup),
        ("log throughput", bench_log),
        ("scale", bench_scale),
        ("sampling", bench_sampling),
        ("profiler against perf record", profiler::bench_profiler),
        (
            "profiler instructions (callgrind)",
            instructions::bench_instructions,
        ),
        ("symbolize", profiler::bench_symbolize),
        ("dwarf call graphs", dwarf::bench_dwarf),
        ("metrics scrape cost", metrics::bench_metrics),
    ];
    for (name, f) in sections {
        if opts.only.as_deref().is_some_and(|o| !name.starts_with(o)) {
            continue;
        }
        eprintln!("[{:>5.1}s] {name} ...", t0.elapsed().as_secs_f64());
        f(&opts, &mut rows);
    }
    println!();
    print_table(&rows);
    println!(
        "\ntotal run time: {:.1} s; load average at the end: {}",
        t0.elapsed().as_secs_f64(),
        loadavg()
    );
}

fn print_machine() {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cpu = read("/proc/cpuinfo")
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let date = Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    println!(
        "pmc-bench  {date}  (load average at the start: {})",
        loadavg()
    );
    println!(
        "machine: {} CPUs, {cpu}, Linux {}, perf_event_paranoid {}, hardware PMU: {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        read("/proc/sys/kernel/osrelease").trim(),
        read("/proc/sys/kernel/perf_event_paranoid").trim(),
        if std::path::Path::new("/sys/bus/event_source/devices/cpu").exists() {
            "yes"
        } else {
            "no"
        }
    );
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn find_pmcstat() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("PMCSTAT") {
        return Some(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok()?;
    let p = exe.parent()?.join("pmcstat");
    p.exists().then_some(p)
}

fn backend() -> pmc_linux::Backend {
    pmc_linux::Backend::open().expect("the Linux backend")
}

fn counting(spec: &str) -> Allocation {
    Allocation::counting(spec.parse().expect("event spec"))
}

fn row(section: &'static str, what: &str, ns: &[f64], unit: &'static str) -> Row {
    Row {
        section,
        what: what.to_string(),
        value: median(&mut ns.to_vec()),
        unit,
        vs: None,
        note: String::new(),
    }
}

/// Sets the comparison: the ratio of the two medians.
fn vs(mut r: Row, base_name: &str, a: &[f64], base: &[f64]) -> Row {
    r.vs = Some((base_name.to_string(), ratio(a, base)));
    r
}

/// median(a) / median(base).
fn ratio(a: &[f64], base: &[f64]) -> f64 {
    median(&mut a.to_vec()) / median(&mut base.to_vec()).max(1e-12)
}

fn target(mut r: Row, max_ratio: f64, label: &str) -> Row {
    if let Some((_, x)) = r.vs {
        r.note = if x <= max_ratio {
            format!("target {label}: met")
        } else {
            format!(
                "target {label}: MISSED by {:.1}%",
                (x / max_ratio - 1.0) * 100.0
            )
        };
    }
    r
}

/// Reads a counter's `value, enabled, running, id` with one bare read(2).
fn bare_read(fd: std::os::fd::BorrowedFd<'_>, buf: &mut [u8]) -> u64 {
    let n = sys::read(fd, buf).expect("read");
    black_box(n as u64)
}

// ---------------------------------------------------------------- 1. read

// ---------------------------------------------------------------- 2. control

// ---------------------------------------------------------------- 3. start-up

// ---------------------------------------------------------------- 5. log

// ---------------------------------------------------------------- 6. scale

// ---------------------------------------------------------------- 4. sampling
