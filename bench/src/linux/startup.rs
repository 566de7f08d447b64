//! Section 3, start-up: `pmcstat` against `perf stat` on a short program.

use super::{ratio, row, Opts};
use pmc_bench::{median, skipped, sys, Row};
use std::hint::black_box;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `cmd` to completion, output discarded: (wall ms, CPU ms of it and its children).
pub(super) fn run_timed(cmd: &mut Command) -> Option<(f64, f64)> {
    let cpu0 = sys::children_cpu_ns();
    let t = Instant::now();
    let st = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    let wall = t.elapsed().as_secs_f64() * 1e3;
    let cpu = (sys::children_cpu_ns() - cpu0) as f64 / 1e6;
    st.success().then_some((wall, cpu))
}

pub(super) fn have(cmd: &str, args: &[&str]) -> bool {
    Command::new(cmd)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

pub(super) fn bench_startup(o: &Opts, rows: &mut Vec<Row>) {
    const S: &str = "start-up";
    let Some(pmcstat) = o.pmcstat.clone().filter(|p| p.exists()) else {
        rows.push(skipped(
            S,
            "pmcstat start-up",
            "no pmcstat binary: cargo build --release -p pmcstat, or --pmcstat PATH",
        ));
        return;
    };
    let perf = have("perf", &["stat", "-e", "task-clock", "--", "true"]);
    let truebin = if std::path::Path::new("/usr/bin/true").exists() {
        "/usr/bin/true"
    } else {
        "/bin/true"
    };
    let n = if o.quick { 9 } else { 31 };
    let mk = |which: usize, prog: &[String]| -> Command {
        match which {
            0 => {
                let mut c = Command::new(&prog[0]);
                c.args(&prog[1..]);
                c
            }
            1 => {
                let mut c = Command::new(&pmcstat);
                c.args(["-p", "task-clock", "--"]).args(prog);
                c
            }
            _ => {
                let mut c = Command::new("perf");
                c.args(["stat", "-e", "task-clock", "--"]).args(prog);
                c
            }
        }
    };
    let k = if perf { 3 } else { 2 };
    let prog = vec![truebin.to_string()];
    let mut wall = vec![Vec::new(); 3];
    for r in 0..n {
        for j in 0..k {
            let i = (r + j) % k;
            if let Some((w, _)) = run_timed(&mut mk(i, &prog)) {
                wall[i].push(w);
            }
        }
    }
    let med = |v: &[f64]| median(&mut v.to_vec());
    let (t_true, t_pmc) = (med(&wall[0]), med(&wall[1]));
    rows.push(row(S, "bare `true` (fork+exec+wait)", &wall[0], "ms"));
    let mut p = row(S, "pmcstat -p task-clock -- true", &wall[1], "ms");
    p.vs = Some(("bare true".into(), ratio(&wall[1], &wall[0])));
    p.note = format!("overhead {:.2} ms", t_pmc - t_true);
    rows.push(p);
    if perf {
        let t_perf = med(&wall[2]);
        let mut q = row(S, "perf stat -e task-clock -- true", &wall[2], "ms");
        q.vs = Some(("bare true".into(), ratio(&wall[2], &wall[0])));
        q.note = format!("overhead {:.2} ms", t_perf - t_true);
        rows.push(q);
        let ratio = (t_pmc - t_true) / (t_perf - t_true).max(1e-9);
        rows.push(Row {
            section: S,
            what: "pmcstat overhead / perf stat overhead".into(),
            value: t_pmc - t_true,
            unit: "ms",
            vs: Some(("perf stat overhead".into(), ratio)),
            note: if ratio <= 0.5 {
                "target <= 0.5x: met".into()
            } else {
                format!(
                    "target <= 0.5x: MISSED by {:.1}%",
                    (ratio / 0.5 - 1.0) * 100.0
                )
            },
        });
    } else {
        rows.push(skipped(
            S,
            "perf stat -e task-clock -- true",
            "perf not runnable",
        ));
    }

    // A ~1 s CPU-bound program: this binary with --spin N, N calibrated here.
    let exe = std::env::current_exe().expect("current exe");
    let iters = calibrate(if o.quick { 0.3 } else { 1.0 });
    let prog = vec![
        exe.display().to_string(),
        "--spin".into(),
        iters.to_string(),
    ];
    let m = if o.quick { 3 } else { 5 };
    let mut wall = vec![Vec::new(); 3];
    let mut cpu = vec![Vec::new(); 3];
    for r in 0..m {
        for j in 0..k {
            let i = (r + j) % k;
            if let Some((w, c)) = run_timed(&mut mk(i, &prog)) {
                wall[i].push(w);
                cpu[i].push(c);
            }
        }
    }
    let label = format!("{:.1} s spin", med(&wall[0]) / 1e3);
    rows.push(row(S, &format!("bare {label}: wall"), &wall[0], "ms"));
    rows.push(row(S, &format!("bare {label}: CPU"), &cpu[0], "ms"));
    let names = ["", "pmcstat", "perf stat"];
    for i in 1..k {
        let mut w = row(
            S,
            &format!("{} on {label}: extra wall", names[i]),
            &[],
            "ms",
        );
        w.value = med(&wall[i]) - med(&wall[0]);
        w.vs = Some(("bare wall".into(), ratio(&wall[i], &wall[0])));
        rows.push(w);
        let mut c = row(S, &format!("{} on {label}: extra CPU", names[i]), &[], "ms");
        c.value = med(&cpu[i]) - med(&cpu[0]);
        c.vs = Some(("bare CPU".into(), ratio(&cpu[i], &cpu[0])));
        rows.push(c);
    }
}

/// A CPU-bound loop of `n` iterations (xorshift; the compiler cannot fold it).
pub(super) fn spin(n: u64) -> u64 {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x = black_box(x);
    }
    x
}

/// Iterations of [`spin`] that take about `secs` seconds here (timed over 50 ms).
pub(super) fn calibrate(secs: f64) -> u64 {
    let t = Instant::now();
    let mut n = 1u64 << 20;
    let mut done = 0u64;
    while t.elapsed() < Duration::from_millis(50) {
        black_box(spin(n));
        done += n;
        n *= 2;
    }
    let per_iter = t.elapsed().as_secs_f64() / done as f64;
    ((secs / per_iter) as u64).max(1)
}
