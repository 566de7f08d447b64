//! Section 4, sampling: the cost of sampling a spinning program, and the
//! helpers that measure it (CPU time of a process, a calibrated spin).

use super::startup::{calibrate, have, run_timed, spin};
use super::{backend, ratio, row, Opts};
use pmc_bench::{median, skipped, Row};
use pmc_core::{Allocation, Backend as _, Pmc as _};
use std::hint::black_box;
use std::process::Command;

pub(super) fn bench_sampling(o: &Opts, rows: &mut Vec<Row>) {
    const S: &str = "sampling";
    let exe = std::env::current_exe().expect("current exe");
    let iters = calibrate(if o.quick { 0.2 } else { 0.5 });
    let data = std::env::temp_dir().join(format!("pmc-bench-{}.data", std::process::id()));
    let perf = have(
        "perf",
        &[
            "record",
            "-q",
            "-e",
            "cpu-clock",
            "-F",
            "1000",
            "-o",
            &data.display().to_string(),
            "--",
            "true",
        ],
    );
    let rates = [1000u64, 4000];
    let spin_args = |extra: &[String]| -> Command {
        let mut c = Command::new(&exe);
        c.args(extra)
            .args(["--spin".to_string(), iters.to_string()]);
        c
    };
    // Variant 0: bare; 1..=2: pmc at each rate; 3..=4: perf record at each rate.
    let mk = |v: usize| -> Command {
        match v {
            0 => spin_args(&[]),
            1 | 2 => spin_args(&["--sampled".into(), rates[v - 1].to_string()]),
            _ => {
                let mut c = Command::new("perf");
                c.args(["record", "-q", "-e", "cpu-clock", "-F"])
                    .arg(rates[v - 3].to_string())
                    .arg("-o")
                    .arg(&data)
                    .arg("--")
                    .arg(&exe)
                    .args(["--spin".to_string(), iters.to_string()]);
                c
            }
        }
    };
    // A trial run: is sampling available in this build?
    if run_timed(&mut spin_args(&["--sampled".into(), "1000".into()])).is_none() {
        let be = backend();
        let _ = be.configure_log(Box::new(std::io::sink()));
        let why = match be
            .allocate(&Allocation::sampling(
                "cpu-clock".parse().expect("spec"),
                pmc_core::Rate::Frequency(1000),
            ))
            .and_then(|mut p| p.start())
        {
            Ok(()) => "the sampled child failed".to_string(),
            Err(e) => e.message().to_string(),
        };
        rows.push(skipped(
            S,
            "sampling overhead",
            &format!("not yet measurable: {why}"),
        ));
        return;
    }
    let k = if perf { 5 } else { 3 };
    let m = if o.quick { 3 } else { 5 };
    let mut wall = vec![Vec::new(); 5];
    let mut cpu = vec![Vec::new(); 5];
    for r in 0..m {
        for j in 0..k {
            let i = (r + j) % k;
            if let Some((w, c)) = run_timed(&mut mk(i)) {
                wall[i].push(w);
                cpu[i].push(c);
            }
        }
    }
    let _ = std::fs::remove_file(&data);
    let _ = std::fs::remove_file(format!("{}.old", data.display()));
    let med = |v: &[f64]| median(&mut v.to_vec());
    let label = format!("{:.1} s spin", med(&wall[0]) / 1e3);
    rows.push(row(S, &format!("bare {label}: wall"), &wall[0], "ms"));
    rows.push(row(S, &format!("bare {label}: CPU"), &cpu[0], "ms"));
    if !perf {
        rows.push(skipped(
            S,
            "perf record on the same spin",
            "perf record not runnable",
        ));
    }
    for i in 1..k {
        if wall[i].is_empty() {
            continue;
        }
        let who = if i <= 2 {
            "pmc sampling"
        } else {
            "perf record"
        };
        let hz = rates[(i - 1) % 2];
        let mut w = row(
            S,
            &format!("{who} cpu-clock {hz} Hz: extra wall"),
            &[],
            "ms",
        );
        w.value = med(&wall[i]) - med(&wall[0]);
        w.vs = Some(("bare wall".into(), ratio(&wall[i], &wall[0])));
        rows.push(w);
        let mut c = row(S, &format!("{who} cpu-clock {hz} Hz: extra CPU"), &[], "ms");
        c.value = med(&cpu[i]) - med(&cpu[0]);
        c.vs = Some(("bare CPU".into(), ratio(&cpu[i], &cpu[0])));
        let samples = hz as f64 * med(&wall[0]) / 1e3;
        c.note = format!(
            "~{:.1} us CPU per sample (incl. start-up)",
            c.value * 1e3 / samples.max(1.0)
        );
        rows.push(c);
    }
    // Marginal cost per sample: the CPU difference between the two rates
    // over the extra samples, which cancels the fixed start-up cost.
    let secs = med(&wall[0]) / 1e3;
    for (who, lo, hi) in [("pmc sampling", 1, 2), ("perf record", 3, 4)] {
        if hi >= k || cpu[lo].is_empty() || cpu[hi].is_empty() {
            continue;
        }
        let extra = (rates[1] - rates[0]) as f64 * secs;
        let per = (med(&cpu[hi]) - med(&cpu[lo])) * 1e3 / extra.max(1.0);
        let fixed = med(&cpu[lo]) - med(&cpu[0]) - per * rates[0] as f64 * secs / 1e3;
        rows.push(Row {
            section: S,
            what: format!("{who}: marginal CPU per sample (4k-1k)"),
            value: per,
            unit: "us",
            vs: None,
            note: format!("fixed cost ~{fixed:.1} ms CPU; kernel budget 2.5 us/sample"),
        });
    }
}

/// Iterations of [`spin`] that take about `secs` here.
/// CPU time (ns) of process `pid` so far: the sum over its threads of the
/// scheduler's run time (`/proc/PID/task/TID/schedstat`, first field), which
/// has nanosecond resolution where `/proc/PID/stat`'s ticks have 10 ms.
pub(crate) fn process_cpu_ns(pid: u32) -> Option<u64> {
    let mut total = 0u64;
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let Ok(t) = t else { continue };
        let s = std::fs::read_to_string(t.path().join("schedstat")).unwrap_or_default();
        total += s
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
    }
    Some(total)
}

/// `--sampled HZ --spin N`: spins under a sampling cpu-clock PMC on itself,
/// logging to /dev/null.
pub(super) fn spin_sampled(hz: u64, n: u64) -> pmc_core::Result<()> {
    let be = backend();
    let null = std::fs::File::create("/dev/null").map_err(|e| {
        pmc_core::Error::new(pmc_core::ErrorKind::Os, pmc_core::Op::Log, e.to_string())
    })?;
    be.configure_log(Box::new(null))?;
    let mut p = be.allocate(&Allocation::sampling(
        "cpu-clock".parse()?,
        pmc_core::Rate::Frequency(hz),
    ))?;
    p.start()?;
    black_box(spin(n));
    p.stop()?;
    p.release()?;
    be.close_log()
}
