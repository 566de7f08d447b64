//! The profiler comparisons against perf: sampling overhead of `pmcstat`
//! against `perf record` (section `profiler`), pmc-log decoding against
//! `perf script` (part of section `log`), and symbolized reports of a
//! 1M-sample log against `perf report` (section `symbolize`).
//!
//! Every child is reaped with `wait4(2)`, whose rusage covers the child and
//! every descendant it waited for: a profiler's figure includes the workload
//! it launched, whose own CPU the workload reports itself (`--report FILE`:
//! its spin wall time and its `getrusage(RUSAGE_SELF)` at exit), so
//! profiler CPU = rusage of the profiler's tree - the workload's own CPU.

use super::{calibrate, have, median, row, skipped, sys, Opts, Row};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// One child run: wall time, CPU and peak RSS from wait4, its stderr.
pub(crate) struct Run {
    pub wall_ms: f64,
    pub cpu_ms: f64,
    pub maxrss_kib: u64,
    pub stderr: String,
}

/// Runs `cmd` (stdin and stdout to /dev/null, stderr to `err`), reaps it
/// with wait4. None when it could not start or did not exit with 0.
pub(crate) fn run_child(cmd: &mut Command, err: &Path) -> Option<Run> {
    let f = std::fs::File::create(err).ok()?;
    let t = Instant::now();
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(f)
        .spawn()
        .ok()?;
    let u = sys::wait4(child.id()).ok()?;
    let wall_ms = t.elapsed().as_secs_f64() * 1e3;
    let stderr = std::fs::read_to_string(err).unwrap_or_default();
    if !u.success {
        eprintln!("  child failed: {cmd:?}\n  {}", stderr.trim());
        return None;
    }
    Some(Run {
        wall_ms,
        cpu_ms: u.cpu_ns as f64 / 1e6,
        maxrss_kib: u.maxrss_kib,
        stderr,
    })
}

/// `pmc-bench --rusage-child PROG ARGS..`: runs PROG (stdout to /dev/null,
/// stderr inherited), reaps it with wait4 and prints `ok cpu_ns maxrss_kib`.
///
/// Peak RSS has to be measured from a small parent: at exec the kernel
/// folds the old address space's high-water mark into the process's
/// `maxrss`, and a child spawned straight from the benchmark starts from the
/// benchmark's (hundreds of MB after the log section). This helper is a
/// fresh, small process, so its child's `ru_maxrss` is the program's own
/// (plus this helper's few MB at most).
pub(crate) fn rusage_child(args: &[String]) {
    let Some((prog, rest)) = args.split_first() else {
        std::process::exit(2);
    };
    let Ok(child) = Command::new(prog)
        .args(rest)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
    else {
        std::process::exit(2);
    };
    match sys::wait4(child.id()) {
        Ok(u) => println!("{} {} {}", u8::from(u.success), u.cpu_ns, u.maxrss_kib),
        Err(_) => std::process::exit(2),
    }
}

/// Like [`run_child`] for `prog args..`, with CPU and peak RSS measured by a
/// `--rusage-child` helper (see [`rusage_child`]).
fn run_measured(prog: &Path, args: &[&std::ffi::OsStr], err: &Path) -> Option<Run> {
    let exe = std::env::current_exe().ok()?;
    let f = std::fs::File::create(err).ok()?;
    let t = Instant::now();
    let out = Command::new(exe)
        .arg("--rusage-child")
        .arg(prog)
        .args(args)
        .stdin(Stdio::null())
        .stderr(f)
        .output()
        .ok()?;
    let wall_ms = t.elapsed().as_secs_f64() * 1e3;
    let s = String::from_utf8_lossy(&out.stdout);
    let v: Vec<u64> = s
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    let stderr = std::fs::read_to_string(err).unwrap_or_default();
    if v.len() != 3 || v[0] != 1 {
        eprintln!("  child failed: {prog:?} {args:?}\n  {}", stderr.trim());
        return None;
    }
    Some(Run {
        wall_ms,
        cpu_ms: v[1] as f64 / 1e6,
        maxrss_kib: v[2],
        stderr,
    })
}

pub(crate) fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pmc-bench-{}-{name}", std::process::id()));
    let _ = std::fs::create_dir_all(&d);
    d
}

/// Removes a scratch directory unless `PMC_BENCH_KEEP` is set.
pub(crate) fn remove_scratch(dir: &Path) {
    if std::env::var_os("PMC_BENCH_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

pub(crate) fn file_len(p: &Path) -> u64 {
    std::fs::metadata(p).map_or(0, |m| m.len())
}

/// `pmcstat: N samples (M lost) ...` -> (N, M).
pub(crate) fn pmcstat_counts(stderr: &str) -> Option<(u64, u64)> {
    let l = stderr
        .lines()
        .find(|l| l.starts_with("pmcstat: ") && l.contains(" samples ("))?;
    let mut w = l["pmcstat: ".len()..].split_whitespace();
    let n = w.next()?.parse().ok()?;
    let lost = w.nth(1)?.trim_start_matches('(').parse().ok()?;
    Some((n, lost))
}

/// `[ perf record: Captured and wrote 0.173 MB f (4508 samples) ]` -> 4508.
pub(crate) fn perf_samples(stderr: &str) -> Option<u64> {
    let l = stderr.lines().find(|l| l.contains("Captured and wrote"))?;
    let i = l.rfind('(')?;
    l[i + 1..].split_whitespace().next()?.parse().ok()
}

/// Loss records in a perf.data (`perf report --stats`: LOST and LOST_SAMPLES events).
fn perf_loss_records(data: &Path) -> Option<u64> {
    let out = Command::new("perf")
        .args(["report", "--stats", "-i"])
        .arg(data)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let s = String::from_utf8_lossy(&out.stdout);
    let mut n = 0;
    let mut seen = false;
    for l in s.lines() {
        let t = l.trim_start();
        if t.starts_with("LOST") && t.contains("events:") {
            seen = true;
            n += t
                .split_whitespace()
                .nth(2)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    (seen || s.contains("TOTAL events")).then_some(n)
}

#[derive(Clone, Copy, PartialEq)]
enum Tool {
    Bare,
    Pmc,
    Perf,
}

#[derive(Default, Clone)]
struct Obs {
    spin_wall_ms: Vec<f64>,
    profiler_cpu_ms: Vec<f64>,
    samples: u64,
    lost: u64,
    bytes: u64,
    /// For the marginal cost, one entry per marginal round: (profiler CPU from the moment
    /// the workload began, ms; samples), or None for a run that failed, so that the low
    /// and high rate's entries of one round stay side by side.
    after_start: Vec<Option<(f64, u64)>>,
}

/// Rounds of runs at 1 kHz and at [`MARGINAL_HI_HZ`] for the marginal cost per sample: the
/// median over rounds of each round's slope. One with `--quick`.
///
/// perf record's CPU outside its samples (about 220 ms, its start-up and build-id pass)
/// varies by about 10 ms from run to run. With 1 and 10 kHz (the rates of the table, 45k
/// samples apart in a 5 s spin) that noise alone moved its slope by 0.2 us, as much as the
/// slope itself: three rounds gave 0.06 to 0.50 us. 40 kHz puts 195k samples between the
/// runs of `-P` (390k for `-S` on 2 CPUs), so the same noise moves a slope by 0.05 us
/// (0.025 for `-S`), and the median of five rounds by less.
const MARGINAL_ROUNDS: usize = 5;

/// The high rate of the marginal rounds (below the kernel's default
/// `perf_event_max_sample_rate`, 100 kHz).
const MARGINAL_HI_HZ: u64 = 40_000;

/// One profiler run of the spin workload: (profiler CPU, profiler CPU from the moment the
/// workload began, its spin wall time, ms; the run's stderr). The workload reports its
/// spin wall time, its own CPU and its parent's (the profiler's) CPU when the spin began.
fn profiler_run(c: &mut Command, rep: &Path, err: &Path) -> Option<(f64, f64, f64, String)> {
    let _ = std::fs::remove_file(rep);
    let run = run_child(c, err)?;
    let s = std::fs::read_to_string(rep).ok()?;
    let v: Vec<f64> = s
        .split_whitespace()
        .filter_map(|v| v.parse::<f64>().ok())
        .collect();
    let (spin_ns, self_ns, pre_ns) = (*v.first()?, *v.get(1)?, *v.get(2)?);
    let cpu = run.cpu_ms - self_ns / 1e6;
    Some((cpu, cpu - pre_ns / 1e6, spin_ns / 1e6, run.stderr))
}

/// `pmcstat -P/-S` against `perf record -g [-a]` at 1, 4 and 10 kHz.
pub(crate) fn bench_profiler(o: &Opts, rows: &mut Vec<Row>) {
    const S: &str = "profiler";
    let Some(pmcstat) = o.pmcstat.clone().filter(|p| p.exists()) else {
        rows.push(skipped(
            S,
            "pmcstat against perf record",
            "no pmcstat binary: cargo build --release -p pmcstat, or --pmcstat PATH",
        ));
        return;
    };
    if !have("perf", &["--version"]) {
        rows.push(skipped(
            S,
            "pmcstat against perf record",
            "perf not on PATH",
        ));
        return;
    }
    let exe = std::env::current_exe().expect("current exe");
    let secs = if o.quick { 0.5 } else { 5.0 };
    let iters = calibrate(secs);
    let dir = scratch("profiler");
    let rep = dir.join("report");
    let err = dir.join("stderr");
    // The table's three rates, then the marginal rounds' high rate.
    let rates = [1000u64, 4000, 10000, MARGINAL_HI_HZ];
    let table_rates = &rates[..3];
    // (tool, system-wide, rate index)
    let mut plan: Vec<(Tool, bool, usize)> = vec![(Tool::Bare, false, 0)];
    for (k, (sys_wide, ri)) in [false, true]
        .into_iter()
        .flat_map(|s| (0..table_rates.len()).map(move |r| (s, r)))
        .enumerate()
    {
        // Alternate which profiler goes first.
        if k % 2 == 0 {
            plan.push((Tool::Pmc, sys_wide, ri));
            plan.push((Tool::Perf, sys_wide, ri));
        } else {
            plan.push((Tool::Perf, sys_wide, ri));
            plan.push((Tool::Pmc, sys_wide, ri));
        }
        if k == 2 {
            plan.push((Tool::Bare, false, 0));
        }
    }
    plan.push((Tool::Bare, false, 0));
    let key = |t: Tool, s: bool, r: usize| -> usize {
        match t {
            Tool::Bare => 0,
            Tool::Pmc => 1 + usize::from(s) * 4 + r,
            Tool::Perf => 9 + usize::from(s) * 4 + r,
        }
    };
    // The marginal rounds: pmcstat and perf adjacent at 1 kHz and MARGINAL_HI_HZ, each scope.
    let first_runs = plan.len();
    let rounds = if o.quick { 1 } else { MARGINAL_ROUNDS };
    for r in 0..rounds {
        for sys_wide in [false, true] {
            let mut round = vec![
                (Tool::Pmc, sys_wide, 0),
                (Tool::Perf, sys_wide, 0),
                (Tool::Pmc, sys_wide, 3),
                (Tool::Perf, sys_wide, 3),
            ];
            let len = round.len();
            round.rotate_left(r % len);
            plan.extend(round);
        }
    }
    let mut obs = vec![Obs::default(); 17];
    for (k, &(tool, sys_wide, ri)) in plan.iter().enumerate() {
        let hz = rates[ri].to_string();
        let out = dir.join(match tool {
            Tool::Bare => "none".to_string(),
            Tool::Pmc => format!("{}-{hz}.pmclog", if sys_wide { "S" } else { "P" }),
            Tool::Perf => format!("{}-{hz}.data", if sys_wide { "a" } else { "p" }),
        });
        let _ = std::fs::remove_file(&rep);
        let mut c = match tool {
            Tool::Bare => Command::new(&exe),
            Tool::Pmc => {
                let mut c = Command::new(&pmcstat);
                c.arg(if sys_wide { "-S" } else { "-P" })
                    .args(["cpu-clock", "--freq", &hz, "-O"])
                    .arg(&out)
                    .arg("--")
                    .arg(&exe);
                c
            }
            Tool::Perf => {
                let mut c = Command::new("perf");
                c.args(["record", "-g", "-e", "cpu-clock", "-F", &hz]);
                if sys_wide {
                    c.arg("-a");
                }
                c.arg("-o").arg(&out).arg("--").arg(&exe);
                c
            }
        };
        c.args(["--spin", &iters.to_string(), "--report"]).arg(&rep);
        let Some((cpu, after_start, spin_ms, stderr)) = profiler_run(&mut c, &rep, &err) else {
            if k >= first_runs {
                obs[key(tool, sys_wide, ri)].after_start.push(None);
            }
            continue;
        };
        let ob = &mut obs[key(tool, sys_wide, ri)];
        let n = match tool {
            Tool::Bare => 0,
            Tool::Pmc => pmcstat_counts(&stderr).unwrap_or((0, 0)).0,
            Tool::Perf => perf_samples(&stderr).unwrap_or(0),
        };
        if k >= first_runs {
            ob.after_start.push(Some((after_start, n)));
            // A marginal round: the table's rows keep the first run.
            let _ = std::fs::remove_file(&out);
            let _ = std::fs::remove_file(format!("{}.old", out.display()));
            continue;
        }
        ob.spin_wall_ms.push(spin_ms);
        ob.profiler_cpu_ms.push(cpu);
        match tool {
            Tool::Bare => {}
            Tool::Pmc => {
                ob.samples += n;
                ob.lost += pmcstat_counts(&stderr).unwrap_or((0, 0)).1;
                ob.bytes += file_len(&out);
            }
            Tool::Perf => {
                ob.samples += n;
                ob.lost += perf_loss_records(&out).unwrap_or(0);
                ob.bytes += file_len(&out);
            }
        }
        let _ = std::fs::remove_file(&out);
        let _ = std::fs::remove_file(format!("{}.old", out.display()));
    }
    let pinned = pinned_rounds(&pmcstat, &exe, iters, rounds, &dir, &rep, &err);
    remove_scratch(&dir);
    let med = |v: &[f64]| median(&mut v.to_vec());
    let bare = med(&obs[0].spin_wall_ms);
    // Run-to-run noise: the spread of the bare runs, in % of their median.
    let spread = {
        let v = &obs[0].spin_wall_ms;
        let (lo, hi) = v
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
        if v.len() > 1 {
            (hi - lo) / bare * 100.0
        } else {
            0.0
        }
    };
    let mut b = row(
        S,
        &format!("bare {secs:.1} s spin: wall (workload's own)"),
        &obs[0].spin_wall_ms,
        "ms",
    );
    b.note = format!(
        "{} runs, spread {spread:.1}%; profiler CPU of the bare run (should be ~0): {:.1} ms",
        obs[0].spin_wall_ms.len(),
        med(&obs[0].profiler_cpu_ms)
    );
    rows.push(b);
    let verdict = |ok: bool, by: f64| -> String {
        if ok {
            "met".into()
        } else {
            format!("MISSED by {:.0}%", (by - 1.0) * 100.0)
        }
    };
    for sys_wide in [false, true] {
        marginal(
            rows,
            if sys_wide {
                Scope::System
            } else {
                Scope::Process
            },
            &obs[key(Tool::Pmc, sys_wide, 0)],
            &obs[key(Tool::Pmc, sys_wide, 3)],
            &obs[key(Tool::Perf, sys_wide, 0)],
            &obs[key(Tool::Perf, sys_wide, 3)],
        );
        if sys_wide {
            match &pinned {
                Some([p1, p10, q1, q10]) => marginal(rows, Scope::Pinned, p1, p10, q1, q10),
                None => rows.push(skipped(
                    S,
                    "pmcstat -S -c 0 (profiler on CPU 1): marginal CPU/sample (40k-1k)",
                    "needs 2 CPUs and taskset(1)",
                )),
            }
        }
        for (ri, hz) in table_rates.iter().enumerate() {
            let p = &obs[key(Tool::Pmc, sys_wide, ri)];
            let q = &obs[key(Tool::Perf, sys_wide, ri)];
            let (flag, pflag) = if sys_wide { ("-S", " -a") } else { ("-P", "") };
            let label = format!("pmcstat {flag} {} kHz", hz / 1000);
            if p.spin_wall_ms.is_empty() || q.spin_wall_ms.is_empty() {
                rows.push(skipped(S, &label, "a run failed (see stderr)"));
                continue;
            }
            let (pc, qc) = (med(&p.profiler_cpu_ms), med(&q.profiler_cpu_ms));
            rows.push(Row {
                section: S,
                what: format!("{label}: profiler CPU"),
                value: pc,
                unit: "ms",
                vs: Some((format!("perf record -g{pflag}: {qc:.1} ms"), pc / qc)),
                note: format!(
                    "target <= perf record: {}; {:.1} us per sample",
                    verdict(pc <= qc, pc / qc),
                    pc * 1e3 / p.samples.max(1) as f64
                ),
            });
            let (pw, qw) = (med(&p.spin_wall_ms), med(&q.spin_wall_ms));
            let (ps, qs) = ((pw / bare - 1.0) * 100.0, (qw / bare - 1.0) * 100.0);
            rows.push(Row {
                section: S,
                what: format!("{label}: workload slowdown"),
                value: ps,
                unit: "%",
                vs: Some((format!("perf record -g{pflag}: {qs:+.1}%"), pw / qw)),
                note: format!(
                    "wall of the spin vs bare; ratio = pmc/perf wall; target <= perf record: {}",
                    if pw > qw && (pw / qw - 1.0) * 100.0 <= spread {
                        format!(
                            "MISSED by {:.1}%, within noise (bare spread {spread:.1}%)",
                            (pw / qw - 1.0) * 100.0
                        )
                    } else {
                        verdict(pw <= qw, pw / qw)
                    }
                ),
            });
            let (pb, qb) = (
                p.bytes as f64 / p.samples.max(1) as f64,
                q.bytes as f64 / q.samples.max(1) as f64,
            );
            let zero = if *hz == 4000 {
                format!(
                    "; zero lost at 4 kHz: {}",
                    if p.lost == 0 { "met" } else { "MISSED" }
                )
            } else {
                String::new()
            };
            rows.push(Row {
                section: S,
                what: format!("{label}: bytes per sample on disk"),
                value: pb,
                unit: "B/smp",
                vs: Some((format!("perf.data: {qb:.1} B/smp"), pb / qb)),
                note: format!(
                    "target <= perf.data: {}; samples {} (perf {}); lost {} (perf: {} loss records){zero}",
                    verdict(pb <= qb, pb / qb),
                    p.samples,
                    q.samples,
                    p.lost,
                    q.lost
                ),
            });
        }
    }
}

/// Which marginal row: per process (`-P`), system-wide (`-S`), or system-wide on CPU 0 with
/// the profiler on CPU 1 ([`pinned_rounds`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    Process,
    System,
    Pinned,
}

/// The pinned marginal rounds: `pmcstat -c 0 -S` and `perf record -g -C 0` on CPU 1, their
/// workload on CPU 0, at 1 kHz and [`MARGINAL_HI_HZ`], in the order of the other marginal
/// rounds. [`Obs`] of pmcstat at 1 kHz and at the high rate, then perf's; `None` without two
/// CPUs or taskset(1).
///
/// System-wide, the profiler's own threads run on sampled CPUs: each sampling interrupt that
/// lands while they run is charged to them (without `CONFIG_IRQ_TIME_ACCOUNTING`, interrupt
/// time goes to the task it interrupts), and on a virtual machine one costs tens of
/// microseconds. A recorder that converts as it records (pmcstat) pays that on all of its
/// work; perf record, which copies the rings to its file and parses them once sampling has
/// stopped (its build-id pass), pays it on the copy only. Here the profiler runs where
/// nothing is sampled: each tool's cost of its own work.
#[allow(clippy::too_many_arguments)]
fn pinned_rounds(
    pmcstat: &Path,
    exe: &Path,
    iters: u64,
    rounds: usize,
    dir: &Path,
    rep: &Path,
    err: &Path,
) -> Option<[Obs; 4]> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 || !have("taskset", &["-V"]) {
        return None;
    }
    let mut obs: [Obs; 4] = Default::default();
    for r in 0..rounds {
        let mut round = [
            (Tool::Pmc, 0),
            (Tool::Perf, 0),
            (Tool::Pmc, 1),
            (Tool::Perf, 1),
        ];
        round.rotate_left(r % 4);
        for (tool, hi) in round {
            let hz = [1000, MARGINAL_HI_HZ][hi].to_string();
            let out = dir.join(format!("pinned-{hz}"));
            let mut c = Command::new("taskset");
            c.args(["-c", "1"]);
            match tool {
                Tool::Pmc => {
                    c.arg(pmcstat)
                        .args(["-c", "0", "-S", "cpu-clock", "--freq", &hz, "-O"])
                }
                _ => c.args([
                    "perf",
                    "record",
                    "-g",
                    "-C",
                    "0",
                    "-e",
                    "cpu-clock",
                    "-F",
                    &hz,
                    "-o",
                ]),
            };
            c.arg(&out).args(["--", "taskset", "-c", "0"]).arg(exe);
            c.args(["--spin", &iters.to_string(), "--report"]).arg(rep);
            let at = usize::from(tool == Tool::Perf) * 2 + hi;
            let got = profiler_run(&mut c, rep, err).and_then(|(_, after, _, stderr)| {
                let n = match tool {
                    Tool::Pmc => pmcstat_counts(&stderr)?.0,
                    _ => perf_samples(&stderr)?,
                };
                Some((after, n))
            });
            obs[at].after_start.push(got);
            let _ = std::fs::remove_file(&out);
            let _ = std::fs::remove_file(format!("{}.old", out.display()));
        }
    }
    Some(obs)
}

/// Marginal profiler CPU per sample: in each round, the 40 kHz - 1 kHz difference in the
/// profiler's CPU from the moment its workload began (its start-up, the same at both
/// rates, left out: perf record's is ~100 ms and the noisiest part of its CPU) over the
/// difference in samples; the median over [`MARGINAL_ROUNDS`] rounds. The finalization
/// (perf's build-id pass over perf.data, pmcstat's last drain) stays in: it grows with the
/// samples. Target: pmcstat's at or below perf record's.
fn marginal(rows: &mut Vec<Row>, scope: Scope, p1: &Obs, p10: &Obs, q1: &Obs, q10: &Obs) {
    let med = |v: &[f64]| median(&mut v.to_vec());
    // Slopes of the rounds with both rates (us per sample).
    let slopes = |lo: &Obs, hi: &Obs| -> Vec<f64> {
        lo.after_start
            .iter()
            .zip(&hi.after_start)
            .filter_map(|(lo, hi)| Some(((*lo)?, (*hi)?)))
            .filter(|((_, n1), (_, n2))| n2 > n1)
            .map(|((c1, n1), (c2, n2))| (c2 - c1) * 1e3 / (n2 - n1) as f64)
            .collect()
    };
    let (ps, qs) = (slopes(p1, p10), slopes(q1, q10));
    if ps.is_empty() || qs.is_empty() {
        return;
    }
    let (p, q) = (med(&ps), med(&qs));
    let (flag, pflag) = match scope {
        Scope::Process => ("-P", ""),
        Scope::System => ("-S", " -a"),
        Scope::Pinned => ("-S -c 0 (profiler on CPU 1)", " -C 0"),
    };
    let list = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.2}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let fixed = |o: &Obs, slope: f64| med(&o.profiler_cpu_ms) - slope * o.samples as f64 / 1e3;
    let mut note = format!(
        "target <= perf record: {}; {} rounds, slopes {} (perf {})",
        if p <= q {
            "met".to_string()
        } else if q > 0.0 {
            format!("MISSED by {:.0}%", (p / q - 1.0) * 100.0)
        } else {
            "MISSED".to_string()
        },
        ps.len().min(qs.len()),
        list(&ps),
        list(&qs),
    );
    if scope == Scope::Pinned {
        // See pinned_rounds.
        note.push_str(
            "; nothing sampled where the profilers run: each one's own work, without the \
             sampling interrupts charged to whatever runs on a sampled CPU (the -S row)",
        );
    } else {
        note.push_str(&format!(
            "; fixed cost at 1 kHz ~{:.1} ms (perf {:.1} ms)",
            fixed(p1, p),
            fixed(q1, q)
        ));
    }
    // A difference of two noisy CPU times can come out at or below zero: no ratio then.
    let vs = if q > 0.0 {
        Some((format!("perf record -g{pflag}: {q:.2} us"), p / q))
    } else {
        note.push_str(&format!(
            "; perf record -g{pflag}'s marginal cost came out at {q:.2} us (within its noise): no ratio"
        ));
        None
    };
    rows.push(Row {
        section: "profiler",
        what: format!("pmcstat {flag}: marginal CPU/sample (40k-1k)"),
        value: p,
        unit: "us",
        vs,
        note,
    });
}

/// `perf script` over the same samples as the log section's log, exported
/// to perf.data; rows appended after the decode rows.
pub(crate) fn log_vs_perf_script(o: &Opts, rows: &mut Vec<Row>, log: &[u8], decode_ns: f64) {
    const S: &str = "log";
    if !have("perf", &["--version"]) {
        rows.push(skipped(
            S,
            "perf script over the same samples",
            "perf not on PATH",
        ));
        return;
    }
    let reader = pmc_log::Reader::new(log).expect("reader");
    let header = reader.header().expect("header");
    let n_log = reader
        .records()
        .filter(|r| matches!(r, pmc_log::record::Record::Sample(_)))
        .count() as u64;
    // perf script prints one line per frame: give it a tenth of the samples
    // (the rate is what is compared).
    let n = if o.quick { n_log } else { n_log / 10 };
    let dir = scratch("script");
    let full = dir.join("all.data");
    let part = dir.join("part.data");
    let export = |path: &Path, k: u64| -> u64 {
        let f = std::fs::File::create(path).expect("create perf.data");
        let mut w = std::io::BufWriter::new(f);
        let recs = reader.records().filter({
            let mut seen = 0u64;
            move |r| {
                if matches!(r, pmc_log::record::Record::Sample(_)) {
                    seen += 1;
                    seen <= k
                } else {
                    true
                }
            }
        });
        pmc_log::export::perf_data::write_all(&header, recs, &mut w).expect("export perf.data")
    };
    let t = Instant::now();
    let exported = export(&full, n_log);
    let export_s = t.elapsed().as_secs_f64();
    let perf_bytes = file_len(&full) as f64 / exported.max(1) as f64;
    let pmc_bytes = log.len() as f64 / n_log.max(1) as f64;
    rows.push(Row {
        section: S,
        what: format!("pmc-log bytes/sample, {n_log} samples x 16"),
        value: pmc_bytes,
        unit: "B/smp",
        vs: Some((format!("perf.data: {perf_bytes:.1} B/smp"), pmc_bytes / perf_bytes)),
        note: format!(
            "same samples exported with pmc_log::export::perf_data ({:.1} s); target <= perf.data: {}",
            export_s,
            if pmc_bytes <= perf_bytes { "met" } else { "MISSED" }
        ),
    });
    let _ = std::fs::remove_file(&full);
    let k = export(&part, n);
    // The same k samples as a pmc-log file, for pmcstat -R's text dump.
    let part_log = dir.join("part.pmclog");
    {
        let f = std::fs::File::create(&part_log).expect("create");
        let mut w = pmc_log::Writer::new(std::io::BufWriter::new(f), &header).expect("writer");
        let mut seen = 0u64;
        for r in reader.records() {
            match r {
                pmc_log::record::Record::Header(_) => {}
                pmc_log::record::Record::Sample(_) if seen >= k => {}
                r => {
                    seen += u64::from(matches!(r, pmc_log::record::Record::Sample(_)));
                    w.write(&r).expect("write");
                }
            }
        }
        w.finish().expect("finish");
    }
    let err = dir.join("stderr");
    let mut times = Vec::new();
    let mut dump = Vec::new();
    let pmcstat = o.pmcstat.clone().filter(|p| p.exists());
    for round in 0..if o.quick { 1 } else { 2 } {
        for j in 0..2 {
            if (round + j) % 2 == 0 {
                let mut c = Command::new("perf");
                c.args(["script", "-i"]).arg(&part);
                if let Some(r) = run_child(&mut c, &err) {
                    times.push(r.wall_ms);
                }
            } else if let Some(p) = &pmcstat {
                let mut c = Command::new(p);
                c.arg("-R").arg(&part_log);
                if let Some(r) = run_child(&mut c, &err) {
                    dump.push(r.wall_ms);
                }
            }
        }
    }
    remove_scratch(&dir);
    if times.is_empty() {
        rows.push(skipped(
            S,
            "perf script over the same samples",
            "perf script failed",
        ));
        return;
    }
    let per = median(&mut times) * 1e6 / k.max(1) as f64;
    rows.push(Row {
        section: S,
        what: format!("perf script -i perf.data, {k} samples x 16"),
        value: per,
        unit: "ns/smp",
        vs: Some(("pmc-log decode".into(), per / decode_ns)),
        note: format!(
            "{:.3} M samples/s against pmc-log decode {:.2} M samples/s (perf script formats text; decode only decodes)",
            1e3 / per,
            1e3 / decode_ns
        ),
    });
    if !dump.is_empty() {
        let d = median(&mut dump) * 1e6 / k.max(1) as f64;
        // pmcstat(8)'s record lines, buffered as any text output: at most perf
        // script's time for the same samples (both measured here, in this run).
        let r = d / per;
        rows.push(Row {
            section: S,
            what: format!("pmcstat -R (text dump), same {k} samples"),
            value: d,
            unit: "ns/smp",
            vs: Some(("perf script".into(), r)),
            note: format!(
                "{:.3} M samples/s; both print every record as text to /dev/null (process start-up included); target <= perf script: {}",
                1e3 / d,
                if r <= 1.0 {
                    "met".to_owned()
                } else {
                    format!("MISSED by {:.1}%", (r - 1.0) * 100.0)
                }
            ),
        });
    }
}

/// A symbolized report of a 1M-sample log: `pmcstat -R --summary` against
/// `perf report --stdio` over the same samples exported to perf.data.
pub(crate) fn bench_symbolize(o: &Opts, rows: &mut Vec<Row>) {
    use pmc_log::record::Record;
    const S: &str = "symbolize";
    let Some(pmcstat) = o.pmcstat.clone().filter(|p| p.exists()) else {
        rows.push(skipped(S, "pmcstat -R --summary", "no pmcstat binary"));
        return;
    };
    let n: u64 = if o.quick { 100_000 } else { 1_000_000 };
    let dir = scratch("symbolize");
    let err = dir.join("stderr");
    let small = dir.join("small.pmclog");
    let big = dir.join("big.pmclog");
    let data = dir.join("big.data");
    let exe = std::env::current_exe().expect("current exe");
    // 1. A real profile (maps, comm, kernel and user callchains).
    let mut c = Command::new(&pmcstat);
    c.args(["-P", "cpu-clock", "--freq", "4000", "-O"])
        .arg(&small)
        .arg("--")
        .arg(&exe)
        .args(["--spin", &calibrate(0.5).to_string()]);
    if run_child(&mut c, &err).is_none() {
        rows.push(skipped(
            S,
            "pmcstat -R --summary",
            "recording the profile failed",
        ));
        return;
    }
    // 2. Its samples repeated (later timestamps) up to n samples.
    let bytes = std::fs::read(&small).expect("read the profile");
    let reader = pmc_log::Reader::new(&bytes).expect("reader");
    let header = reader.header().expect("header");
    let mut samples = Vec::new();
    let mut maps = Vec::new();
    let mut w = pmc_log::Writer::new(
        std::io::BufWriter::new(std::fs::File::create(&big).expect("create")),
        &header,
    )
    .expect("writer");
    for r in reader.records() {
        match r {
            Record::Header(_) | Record::Exit(_) | Record::ThreadExit(_) | Record::Unmap(_) => {}
            Record::Sample(s) => samples.push(s),
            r => {
                if let Record::Map(m) = &r {
                    let path = String::from_utf8_lossy(&m.path.0).into_owned();
                    maps.push((m.pid, path, m.start, m.len));
                }
                w.write(&r).expect("write")
            }
        }
    }
    if samples.is_empty() {
        rows.push(skipped(
            S,
            "pmcstat -R --summary",
            "the profile has no samples",
        ));
        return;
    }
    // Synthetic samples of the profiled process: 16 frames each, drawn from
    // 4096 call sites per depth spread over pmc-bench's text mapping (up to
    // 64 Ki distinct addresses, so symbolization and aggregation both count).
    let (pid, tid, t1) = (
        samples[0].pid,
        samples[0].tid,
        samples[samples.len() - 1].time,
    );
    let name = exe
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let Some((start, len)) = maps
        .iter()
        .find(|(p, path, _, _)| *p == pid && path.ends_with(&name))
        .map(|(_, _, s, l)| (*s, *l))
        .filter(|(_, l)| *l > 0)
    else {
        rows.push(skipped(
            S,
            "pmcstat -R --summary",
            "no text mapping of pmc-bench in the profile",
        ));
        return;
    };
    drop(samples);
    const DEPTH: usize = 16;
    let mut frames = [0u64; DEPTH];
    let mut nframes = 0u64;
    for i in 0..n {
        let site = i.wrapping_mul(2_654_435_761) % 4096;
        for (d, f) in frames.iter_mut().enumerate() {
            let h = (site * 16 + d as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20;
            *f = start + h % len;
        }
        nframes += DEPTH as u64;
        let s = pmc_log::record::Sample {
            time: t1 + 1 + i * 250_000,
            pmc_id: 0,
            pid,
            tid,
            cpu: Some((i % 2) as u32),
            period: 250_000,
            callchain: pmc_log::record::Callchain::from_frames(&frames),
            kernel_frames: 0,
            raw: Default::default(),
        };
        w.write(&Record::Sample(s)).expect("write");
    }
    let frames = nframes;
    w.finish().expect("finish");
    // 3. The same records as perf.data.
    let big_bytes = std::fs::read(&big).expect("read");
    let r = pmc_log::Reader::new(&big_bytes).expect("reader");
    let f = std::fs::File::create(&data).expect("create");
    pmc_log::export::perf_data::write_all(&header, r.records(), &mut std::io::BufWriter::new(f))
        .expect("export");
    drop(big_bytes);
    // 4. Interleaved: pmcstat -R --summary, perf report --stdio.
    let perf = have("perf", &["--version"]);
    let rounds = if o.quick { 1 } else { 2 };
    let mut t = [Vec::new(), Vec::new()];
    let mut rss = [Vec::new(), Vec::new()];
    for round in 0..rounds {
        for j in 0..2 {
            let v = (round + j) % 2;
            if v == 1 && !perf {
                continue;
            }
            let perf_args = [
                "report",
                "--stdio",
                "--children",
                "-g",
                "none",
                "--sort",
                "sym,dso",
                "-i",
            ];
            let r = if v == 0 {
                let a = [OsStr::new("-R"), big.as_os_str(), OsStr::new("--summary")];
                run_measured(&pmcstat, &a, &err)
            } else {
                let mut a: Vec<&OsStr> = perf_args.iter().map(OsStr::new).collect();
                a.push(data.as_os_str());
                run_measured(Path::new("perf"), &a, &err)
            };
            if let Some(r) = r {
                t[v].push(r.wall_ms / 1e3);
                rss[v].push(r.maxrss_kib as f64 / 1024.0);
            }
        }
    }
    let (log_len, data_len) = (file_len(&big), file_len(&data));
    remove_scratch(&dir);
    let med = |v: &[f64]| median(&mut v.to_vec());
    if t[0].is_empty() {
        rows.push(skipped(S, "pmcstat -R --summary", "pmcstat -R failed"));
        return;
    }
    let what = format!("pmcstat -R --summary, {}k samples", n / 1000);
    let note_common = format!(
        "{:.1} frames/sample; log {:.0} MB, perf.data {:.0} MB",
        frames as f64 / n as f64,
        log_len as f64 / 1e6,
        data_len as f64 / 1e6
    );
    let mut a = row(S, &format!("{what}: time"), &t[0], "s");
    let mut m = row(S, &format!("{what}: peak RSS"), &rss[0], "MB");
    if t[1].is_empty() {
        a.note = format!("perf report not runnable; {note_common}");
    } else {
        let (pt, qt) = (med(&t[0]), med(&t[1]));
        a.vs = Some((format!("perf report: {qt:.2} s"), pt / qt));
        a.note = format!(
            "{:.2} M samples/s (perf report {:.2}); {note_common}",
            n as f64 / pt / 1e6,
            n as f64 / qt / 1e6
        );
        let (pm, qm) = (med(&rss[0]), med(&rss[1]));
        m.vs = Some((format!("perf report: {qm:.0} MB"), pm / qm));
        m.note = "ru_maxrss from wait4 in a small helper parent".into();
    }
    rows.push(a);
    rows.push(m);
}
