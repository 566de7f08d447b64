//! The profilers' own user-space instructions per extra sample under callgrind (section
//! `profiler instr`): `pmcstat -P/-S` against `perf record -g [-a]`, a count rather than a
//! time, so the same on a loaded machine.

use super::profiler::{perf_samples, pmcstat_counts, remove_scratch, run_child, scratch};
use super::{calibrate, have, skipped, Opts, Row};
use std::process::Command;

/// The profilers' own user-space instructions per extra sample, counted by callgrind (a
/// count, not a time: the same from run to run and on a loaded machine): `pmcstat -P` and
/// `perf record -g` (callgrind follows the profiler, not the workload it starts) over a
/// 1.5 s spin at 1 and 10 kHz, the difference in instructions over the difference in
/// samples. What it leaves out is the kernel's part and the cost of a cache miss, which the
/// CPU rows above measure with their noise. Skipped, visibly, without valgrind.
pub(crate) fn bench_instructions(o: &Opts, rows: &mut Vec<Row>) {
    const S: &str = "profiler";
    const WHAT: &str = "pmcstat -P/-S: user instructions/sample (callgrind)";
    let Some(pmcstat) = o.pmcstat.clone().filter(|p| p.exists()) else {
        rows.push(skipped(
            S,
            WHAT,
            "no pmcstat binary: cargo build --release -p pmcstat, or --pmcstat PATH",
        ));
        return;
    };
    if !have("perf", &["--version"]) {
        rows.push(skipped(S, WHAT, "perf not on PATH"));
        return;
    }
    if !have("valgrind", &["--version"]) {
        rows.push(skipped(
            S,
            WHAT,
            "valgrind not on PATH (apt install valgrind)",
        ));
        return;
    }
    let exe = std::env::current_exe().expect("current exe");
    let iters = calibrate(if o.quick { 0.5 } else { 1.5 });
    let dir = scratch("instructions");
    let err = dir.join("stderr");
    let out = dir.join("callgrind.out");
    // (instructions, samples) of one run under callgrind.
    let run = |pmc: bool, sys_wide: bool, hz: u64| -> Option<(f64, u64)> {
        let log = dir.join(if pmc { "cg.pmclog" } else { "cg.data" });
        let hz = hz.to_string();
        let mut c = Command::new("valgrind");
        c.arg("--tool=callgrind")
            .arg(format!("--callgrind-out-file={}", out.display()));
        if pmc {
            c.arg(&pmcstat)
                .arg(if sys_wide { "-S" } else { "-P" })
                .args(["cpu-clock", "--freq", &hz, "-O"])
                .arg(&log);
        } else {
            c.args(["perf", "record", "-g", "-e", "cpu-clock", "-F", &hz]);
            if sys_wide {
                c.arg("-a");
            }
            c.arg("-o").arg(&log);
        }
        c.arg("--")
            .arg(&exe)
            .args(["--spin", &iters.to_string(), "--report", "/dev/null"]);
        let r = run_child(&mut c, &err);
        let _ = std::fs::remove_file(&log);
        let _ = std::fs::remove_file(&out);
        let r = r?;
        let ir = callgrind_collected(&r.stderr)?;
        let n = if pmc {
            pmcstat_counts(&r.stderr)?.0
        } else {
            perf_samples(&r.stderr)?
        };
        Some((ir, n))
    };
    let slope = |pmc: bool, sys_wide: bool| -> Option<f64> {
        let (i1, n1) = run(pmc, sys_wide, 1000)?;
        let (i2, n2) = run(pmc, sys_wide, 10000)?;
        (n2 > n1).then(|| (i2 - i1) / (n2 - n1) as f64)
    };
    for sys_wide in [false, true] {
        let (flag, pflag) = if sys_wide { ("-S", " -a") } else { ("-P", "") };
        let what = format!("pmcstat {flag}: user instructions/sample (callgrind, 10k-1k)");
        let (Some(p), Some(q)) = (slope(true, sys_wide), slope(false, sys_wide)) else {
            rows.push(skipped(
                S,
                &what,
                "a run under callgrind failed (see stderr)",
            ));
            continue;
        };
        // perf record -a's own fixed part (it reads the maps of every process alive) moves
        // with the processes on the machine: on a busy one its slope can come out at or
        // below zero, and then there is no ratio to give.
        let (vs, note) = if q > 0.0 {
            (
                Some((format!("perf record -g{pflag}: {q:.0} instr"), p / q)),
                format!(
                    "target <= perf record: {}; user space only (callgrind)",
                    if p <= q {
                        "met".to_string()
                    } else {
                        format!("MISSED by {:.0}%", (p / q - 1.0) * 100.0)
                    }
                ),
            )
        } else {
            (
                None,
                format!(
                    "perf record -g{pflag}'s slope came out at {q:.0} instr (its fixed part \
                     moved with the processes alive): no ratio; run on a quiet machine"
                ),
            )
        };
        rows.push(Row {
            section: S,
            what,
            value: p,
            unit: "instr",
            vs,
            note,
        });
    }
    remove_scratch(&dir);
}

/// `==123== Collected : 40529947` (callgrind's total of instructions) -> 40529947.
fn callgrind_collected(stderr: &str) -> Option<f64> {
    let l = stderr.lines().find(|l| l.contains("Collected :"))?;
    l.rsplit(':').next()?.trim().parse().ok()
}
