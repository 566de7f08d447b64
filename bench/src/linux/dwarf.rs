//! DWARF call graphs (section `dwarf`): `pmcstat -P --call-graph dwarf`
//! against `perf record --call-graph dwarf` on a C program built without
//! frame pointers, in the same run.
//!
//! Both tools have the kernel copy the user registers and 8 KiB of user
//! stack with every sample. perf writes the copies into perf.data and
//! unwinds them in `perf report`; pmcstat's drain thread unwinds them while
//! recording and logs only the callchain. So the comparison is end to end:
//! record + report, CPU of both steps, and the file in between.
//!
//! The workload (`prog`, compiled here at `-O1 -fomit-frame-pointer`)
//! reports its own work's wall time and its own CPU (`getrusage(RUSAGE_SELF)`
//! at exit) into a file, so recorder CPU = rusage of the recorder's process
//! tree (wait4) - the workload's own CPU. The kernel's per-sample work (timer
//! interrupt, register and stack copy into the ring) runs in the workload's
//! context and is charged to it: it shows as workload slowdown.

use super::profiler::{file_len, perf_samples, pmcstat_counts, remove_scratch, scratch, Run};
use super::{median, skipped, sys, Opts, Row};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

const S: &str = "dwarf";

/// A known call structure: main -> outer_caller -> mid_a -> hot_leaf (3/4 of
/// the work) and main -> side_caller -> mid_b -> hot_leaf (1/4).
/// `prog ROUNDS [REPORT]` writes "work_wall_ns self_cpu_ns parent_cpu_ns" to REPORT (the
/// last: its parent's, the recorder's, CPU when the work began, from
/// `/proc/PPID/task/*/schedstat`).
const PROG: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/resource.h>
#include <dirent.h>
#include <unistd.h>
volatile unsigned long sink;
volatile unsigned long zero;
/* The parent's (the recorder's) CPU so far, ns: its threads' run times. */
static long long parent_cpu_ns(void) {
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/task", (int)getppid());
    DIR *d = opendir(dir);
    if (!d) return 0;
    long long total = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char p[320];
        snprintf(p, sizeof p, "%s/%s/schedstat", dir, e->d_name);
        FILE *f = fopen(p, "r");
        if (!f) continue;
        long long ns = 0;
        if (fscanf(f, "%lld", &ns) == 1) total += ns;
        fclose(f);
    }
    closedir(d);
    return total;
}
__attribute__((noinline)) unsigned long hot_leaf(unsigned long n) {
    unsigned long x = 0;
    for (unsigned long i = 0; i < n; i++) x += i * i ^ (x >> 3);
    return x;
}
__attribute__((noinline)) unsigned long mid_a(int r) { return hot_leaf(100000 + (r & 1) + zero) + 1; }
__attribute__((noinline)) unsigned long mid_b(int r) { return hot_leaf(100003 + (r & 3) + zero) ^ 5; }
__attribute__((noinline)) unsigned long outer_caller(int rounds) {
    unsigned long t = 0;
    for (int r = 0; r < rounds; r++) t += mid_a(r);
    return t;
}
__attribute__((noinline)) unsigned long side_caller(int rounds) {
    unsigned long t = 7;
    for (int r = 0; r < rounds; r++) t ^= mid_b(r);
    return t;
}
int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 1000;
    struct timespec a, b;
    struct rusage u;
    long long parent = parent_cpu_ns();
    clock_gettime(CLOCK_MONOTONIC, &a);
    sink = outer_caller(3 * rounds);
    sink += side_caller(rounds);
    clock_gettime(CLOCK_MONOTONIC, &b);
    getrusage(RUSAGE_SELF, &u);
    if (argc > 2) {
        FILE *f = fopen(argv[2], "w");
        if (!f) return 1;
        fprintf(f, "%lld %lld %lld\n",
            (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec),
            ((long long)u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1000000000LL
                + ((long long)u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1000LL,
            parent);
        fclose(f);
    }
    printf("%lu\n", sink);
    return 0;
}
"#;

/// Runs `cmd` with stdout to `out` and stderr to `err`, reaps it with wait4.
fn run_to(cmd: &mut Command, out: &Path, err: &Path) -> Option<Run> {
    let o = std::fs::File::create(out).ok()?;
    let e = std::fs::File::create(err).ok()?;
    let t = Instant::now();
    let child = cmd.stdin(Stdio::null()).stdout(o).stderr(e).spawn().ok()?;
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

/// The workload's report: (work wall ms, own CPU ms, the recorder's CPU when the work
/// began, ms).
fn read_report(p: &Path) -> Option<(f64, f64, f64)> {
    let s = std::fs::read_to_string(p).ok()?;
    let mut w = s.split_whitespace().map(|v| v.parse::<f64>().ok());
    Some((w.next()?? / 1e6, w.next()?? / 1e6, w.next()?? / 1e6))
}

/// `pmcstat: N samples unwound ..., M (x%) stopped before ...` -> M.
fn pmcstat_truncated(stderr: &str) -> Option<u64> {
    let l = stderr.lines().find(|l| l.contains(" samples unwound"))?;
    let (_, rest) = l.split_once(", ")?;
    rest.split_whitespace().next()?.parse().ok()
}

/// `# Total Lost Samples: N` in perf report's header.
fn perf_report_lost(out: &str) -> Option<u64> {
    out.lines()
        .find_map(|l| l.strip_prefix("# Total Lost Samples:"))
        .and_then(|v| v.trim().parse().ok())
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Tool {
    Bare,
    PmcFp,
    PmcDwarf,
    PerfDwarf,
}

impl Tool {
    fn name(self) -> &'static str {
        match self {
            Tool::Bare => "bare",
            Tool::PmcFp => "pmcstat fp",
            Tool::PmcDwarf => "pmcstat dwarf",
            Tool::PerfDwarf => "perf dwarf",
        }
    }
}

/// Every run of one (tool, rate).
#[derive(Default, Clone)]
struct Obs {
    /// The workload's own wall time of its work.
    work_wall_ms: Vec<f64>,
    /// Recorder tree CPU - the workload's own CPU.
    rec_cpu_ms: Vec<f64>,
    /// The report step's CPU.
    rep_cpu_ms: Vec<f64>,
    /// Recorder CPU per sample, per run (us).
    rec_us_per_sample: Vec<f64>,
    /// Per run: (repetition, recorder CPU from the moment the work began (its start-up
    /// left out), ms, samples).
    after_start: Vec<(usize, f64, f64)>,
    samples: Vec<f64>,
    lost: Vec<f64>,
    truncated: Vec<f64>,
    bytes_per_sample: Vec<f64>,
    /// Samples whose chain reaches main (pmcstat only), fraction.
    reach_main: Vec<f64>,
    /// Samples under outer_caller (pmcstat only), fraction (the program: 3/4).
    under_outer: Vec<f64>,
}

fn med(v: &[f64]) -> f64 {
    median(&mut v.to_vec())
}

/// `pmcstat -R LOG --folded -` -> (fraction of hot_leaf samples whose chain
/// reaches main, of those under outer_caller).
fn folded_shares(pmcstat: &Path, log: &Path) -> Option<(f64, f64)> {
    let out = Command::new(pmcstat)
        .arg("-R")
        .arg(log)
        .args(["--folded", "-"])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let (mut n, mut main, mut outer) = (0u64, 0u64, 0u64);
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((stack, k)) = l.rsplit_once(' ') else {
            continue;
        };
        let k: u64 = k.parse().unwrap_or(0);
        let f: Vec<&str> = stack.split(';').collect();
        if !f.contains(&"hot_leaf") {
            continue;
        }
        n += k;
        if f.contains(&"main") {
            main += k;
        }
        if f.contains(&"outer_caller") {
            outer += k;
        }
    }
    (n > 0).then(|| (main as f64 / n as f64, outer as f64 / n as f64))
}

/// The section: see the module documentation and BENCHMARKS.md.
pub(crate) fn bench_dwarf(o: &Opts, rows: &mut Vec<Row>) {
    let what = "pmcstat --call-graph dwarf vs perf record --call-graph dwarf";
    let Some(pmcstat) = o.pmcstat.clone().filter(|p| p.exists()) else {
        rows.push(skipped(
            S,
            what,
            "no pmcstat binary: cargo build --release -p pmcstat, or --pmcstat PATH",
        ));
        return;
    };
    if !super::have("perf", &["--version"]) {
        rows.push(skipped(S, what, "perf not on PATH"));
        return;
    }
    let dir = scratch("dwarf");
    let src = dir.join("prog.c");
    let prog = dir.join("prog");
    let cc_ok = std::fs::write(&src, PROG).is_ok()
        && Command::new("cc")
            .args(["-O1", "-fomit-frame-pointer", "-o"])
            .arg(&prog)
            .arg(&src)
            .status()
            .is_ok_and(|s| s.success());
    if !cc_ok {
        rows.push(skipped(S, what, "cannot compile the C workload with cc"));
        remove_scratch(&dir);
        return;
    }
    let rep = dir.join("report");
    let err = dir.join("stderr");
    let out = dir.join("stdout");
    // Calibrate: rounds for about `secs` of work (best of two short runs).
    let secs = if o.quick { 0.5 } else { 2.0 };
    let probe = 200u64;
    let mut per_round = f64::MAX;
    for _ in 0..2 {
        let mut c = Command::new(&prog);
        c.arg(probe.to_string()).arg(&rep);
        if run_to(&mut c, &out, &err).is_some() {
            if let Some((w, _, _)) = read_report(&rep) {
                per_round = per_round.min(w / probe as f64);
            }
        }
    }
    if per_round == f64::MAX {
        rows.push(skipped(S, what, "the C workload failed"));
        remove_scratch(&dir);
        return;
    }
    let rounds = ((secs * 1e3 / per_round) as u64).max(1).to_string();
    let rates = [1000u64, 4000];
    let reps = if o.quick { 2 } else { 5 };
    let tools = [Tool::PmcFp, Tool::PmcDwarf, Tool::PerfDwarf];
    // obs[0]: bare; then 1 + rate index * 3 + tool index.
    let mut obs = vec![Obs::default(); 1 + rates.len() * tools.len()];
    for r in 0..reps {
        let mut plan = vec![(Tool::Bare, 0usize)];
        for ri in 0..rates.len() {
            for j in 0..tools.len() {
                plan.push((tools[(r + j) % tools.len()], ri));
            }
        }
        for (tool, ri) in plan {
            let key = match tool {
                Tool::Bare => 0,
                t => 1 + ri * tools.len() + tools.iter().position(|x| *x == t).unwrap_or(0),
            };
            let hz = rates[ri].to_string();
            eprintln!("  rep {}/{reps}: {} {hz} Hz", r + 1, tool.name());
            let file = dir.join(match tool {
                Tool::PerfDwarf => "perf.data",
                _ => "x.pmclog",
            });
            let _ = std::fs::remove_file(&rep);
            let _ = std::fs::remove_file(&file);
            let mut c = match tool {
                Tool::Bare => Command::new(&prog),
                Tool::PmcFp | Tool::PmcDwarf => {
                    let mut c = Command::new(&pmcstat);
                    c.args(["-P", "cpu-clock", "--freq", &hz, "--call-graph"])
                        .arg(if tool == Tool::PmcFp { "fp" } else { "dwarf" })
                        .arg("-O")
                        .arg(&file)
                        .arg("--")
                        .arg(&prog);
                    c
                }
                Tool::PerfDwarf => {
                    let mut c = Command::new("perf");
                    c.args(["record", "-e", "cpu-clock", "-F", &hz, "--call-graph"])
                        .arg("dwarf")
                        .arg("-o")
                        .arg(&file)
                        .arg("--")
                        .arg(&prog);
                    c
                }
            };
            c.arg(&rounds).arg(&rep);
            let Some(run) = run_to(&mut c, &out, &err) else {
                continue;
            };
            let Some((work_ms, self_ms, pre_ms)) = read_report(&rep) else {
                continue;
            };
            let ob = &mut obs[key];
            ob.work_wall_ms.push(work_ms);
            let rec_cpu = run.cpu_ms - self_ms;
            ob.rec_cpu_ms.push(rec_cpu);
            let samples = match tool {
                Tool::Bare => continue,
                Tool::PmcFp | Tool::PmcDwarf => {
                    let (n, lost) = pmcstat_counts(&run.stderr).unwrap_or((0, 0));
                    ob.lost.push(lost as f64);
                    if tool == Tool::PmcDwarf {
                        ob.truncated
                            .push(pmcstat_truncated(&run.stderr).unwrap_or(0) as f64);
                    }
                    if let Some((m, outer)) = folded_shares(&pmcstat, &file) {
                        ob.reach_main.push(m);
                        ob.under_outer.push(outer);
                    }
                    n
                }
                Tool::PerfDwarf => perf_samples(&run.stderr).unwrap_or(0),
            };
            ob.samples.push(samples as f64);
            ob.bytes_per_sample
                .push(file_len(&file) as f64 / samples.max(1) as f64);
            ob.rec_us_per_sample
                .push(rec_cpu * 1e3 / samples.max(1) as f64);
            ob.after_start.push((r, rec_cpu - pre_ms, samples as f64));
            // The report step (timed for the dwarf variants).
            let mut c = match tool {
                Tool::PerfDwarf => {
                    let mut c = Command::new("perf");
                    c.args(["report", "--stdio", "-i"]).arg(&file);
                    c
                }
                _ => {
                    let mut c = Command::new(&pmcstat);
                    c.arg("-R").arg(&file).args(["-G", "-"]);
                    c
                }
            };
            if let Some(run) = run_to(&mut c, &out, &err) {
                ob.rep_cpu_ms.push(run.cpu_ms);
                if tool == Tool::PerfDwarf {
                    let text = std::fs::read_to_string(&out).unwrap_or_default();
                    ob.lost.push(perf_report_lost(&text).unwrap_or(0) as f64);
                }
            }
        }
    }
    remove_scratch(&dir);
    report(rows, &obs, &rates, secs);
}

fn report(rows: &mut Vec<Row>, obs: &[Obs], rates: &[u64], secs: f64) {
    let bare = &obs[0];
    if bare.work_wall_ms.is_empty() {
        rows.push(skipped(S, "bare workload", "every bare run failed"));
        return;
    }
    let bw = med(&bare.work_wall_ms);
    let spread = {
        let v = &bare.work_wall_ms;
        let (lo, hi) = v
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
        (hi - lo) / bw * 100.0
    };
    rows.push(Row {
        section: S,
        what: format!("bare C workload (~{secs:.1} s, -O1 -fomit-frame-pointer): wall"),
        value: bw,
        unit: "ms",
        vs: None,
        note: format!(
            "{} runs, spread {spread:.1}%; recorder CPU of the bare run (should be ~0): {:.1} ms",
            bare.work_wall_ms.len(),
            med(&bare.rec_cpu_ms)
        ),
    });
    let verdict = |ok: bool, by: f64| -> String {
        if ok {
            "met".into()
        } else {
            format!("MISSED by {:.0}%", (by - 1.0) * 100.0)
        }
    };
    for (ri, hz) in rates.iter().enumerate() {
        let k = |t: usize| &obs[1 + ri * 3 + t];
        let (fp, dw, pf) = (k(0), k(1), k(2));
        let label = format!("{} kHz", hz / 1000);
        if dw.samples.is_empty() || pf.samples.is_empty() || fp.samples.is_empty() {
            rows.push(skipped(S, &label, "a run failed (see stderr)"));
            continue;
        }
        // 1. Bytes per sample.
        let (pb, qb) = (med(&dw.bytes_per_sample), med(&pf.bytes_per_sample));
        rows.push(Row {
            section: S,
            what: format!("{label}: log bytes per sample"),
            value: pb,
            unit: "B/smp",
            vs: Some((format!("perf.data: {qb:.0} B/smp"), pb / qb)),
            note: format!(
                "target <= 1/20 of perf.data: {}; 1/{:.0} (fp log: {:.1} B/smp)",
                verdict(pb <= qb / 20.0, pb / (qb / 20.0)),
                qb / pb,
                med(&fp.bytes_per_sample)
            ),
        });
        // 2. End to end: record + report, workload's own CPU excluded.
        let e2e = |o: &Obs| -> Vec<f64> {
            o.rec_cpu_ms
                .iter()
                .zip(&o.rep_cpu_ms)
                .map(|(a, b)| a + b)
                .collect()
        };
        let (pe, qe) = (med(&e2e(dw)), med(&e2e(pf)));
        rows.push(Row {
            section: S,
            what: format!("{label}: record + report CPU"),
            value: pe,
            unit: "ms",
            vs: Some((format!("perf record+report: {qe:.0} ms"), pe / qe)),
            note: format!(
                "target < perf: {}; record {:.1} + report {:.1} ms (perf {:.1} + {:.1}); pmcstat -R -G, perf report --stdio",
                verdict(pe < qe, pe / qe),
                med(&dw.rec_cpu_ms),
                med(&dw.rep_cpu_ms),
                med(&pf.rec_cpu_ms),
                med(&pf.rep_cpu_ms)
            ),
        });
        // 3. Lost samples.
        let (pl, ql) = (med(&dw.lost), med(&pf.lost));
        let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
        rows.push(Row {
            section: S,
            what: format!("{label}: lost samples (dwarf)"),
            value: pl,
            unit: "smp",
            vs: None,
            note: format!(
                "perf record: {ql:.0}; {}max over runs {:.0} (perf {:.0}); samples {:.0} (perf {:.0}); fp mode lost {:.0}; truncated chains {:.0} ({:.2}%)",
                if *hz == 1000 {
                    format!("target 0 at 1 kHz: {}; ", verdict(max(&dw.lost) == 0.0, 2.0))
                } else {
                    String::new()
                },
                max(&dw.lost),
                max(&pf.lost),
                med(&dw.samples),
                med(&pf.samples),
                max(&fp.lost),
                med(&dw.truncated),
                med(&dw.truncated) * 100.0 / med(&dw.samples).max(1.0)
            ),
        });
        // 4. Unwinding throughput: recorder CPU dwarf - fp, per sample.
        let per: Vec<f64> = dw
            .rec_us_per_sample
            .iter()
            .zip(&fp.rec_us_per_sample)
            .map(|(a, b)| a - b)
            .collect();
        let extra_us = med(&per);
        rows.push(Row {
            section: S,
            what: format!("{label}: recorder CPU per sample, dwarf - fp"),
            value: extra_us,
            unit: "us",
            vs: None,
            note: format!(
                "{:.0} samples/s per core (copy out of the ring + unwind + log); recorder CPU dwarf {:.1} ms, fp {:.1} ms; perf record {:.1} us/smp",
                1e6 / extra_us.max(1e-9),
                med(&dw.rec_cpu_ms),
                med(&fp.rec_cpu_ms),
                med(&pf.rec_us_per_sample)
            ),
        });
        // Correctness: share of hot_leaf samples whose chain reaches main.
        rows.push(Row {
            section: S,
            what: format!("{label}: hot_leaf samples reaching main"),
            value: med(&dw.reach_main) * 100.0,
            unit: "%",
            vs: None,
            note: format!(
                "{:.1}% under outer_caller (expected ~75%); fp mode (the control, callers lost without frame pointers): {:.1}% reach main; pmcstat -R --folded",
                med(&dw.under_outer) * 100.0,
                med(&fp.reach_main) * 100.0
            ),
        });
        // Workload slowdown (information).
        let sd = |o: &Obs| (med(&o.work_wall_ms) / bw - 1.0) * 100.0;
        rows.push(Row {
            section: S,
            what: format!("{label}: workload slowdown, pmcstat dwarf"),
            value: sd(dw),
            unit: "%",
            vs: Some((
                format!("perf dwarf: {:+.1}%", sd(pf)),
                med(&dw.work_wall_ms) / med(&pf.work_wall_ms),
            )),
            note: format!(
                "work wall vs bare, information; pmcstat fp {:+.1}%; bare spread {spread:.1}%",
                sd(fp)
            ),
        });
    }
    marginal(rows, obs);
}

/// The DWARF recorder's goal: 500,000 samples a second per core, 2 us of recorder CPU per
/// sample beyond a frame-pointer sample's.
const DWARF_GOAL_PER_SEC: f64 = 500_000.0;

/// Marginal CPU per sample from the 4 kHz - 1 kHz difference, which cancels the fixed
/// costs (start-up, loading unwind tables, the report's symbol tables). The recorder's is
/// taken per repetition, on its CPU from the moment the work began (start-up left out,
/// the same at both rates), dwarf less fp, and its median over the repetitions is the
/// unwinding throughput the target is about; record+report from medians.
fn marginal(rows: &mut Vec<Row>, obs: &[Obs]) {
    let m = |lo: &Obs, hi: &Obs, cpu: &dyn Fn(&Obs) -> f64| -> Option<f64> {
        let dn = med(&hi.samples) - med(&lo.samples);
        (dn > 0.0 && !lo.rec_cpu_ms.is_empty() && !hi.rec_cpu_ms.is_empty())
            .then(|| (cpu(hi) - cpu(lo)) * 1e3 / dn)
    };
    let rec = |o: &Obs| med(&o.rec_cpu_ms);
    let both = |o: &Obs| med(&o.rec_cpu_ms) + med(&o.rep_cpu_ms);
    let (Some(dw_all), Some(pf_rec), Some(pf_all)) = (
        m(&obs[2], &obs[5], &both),
        m(&obs[3], &obs[6], &rec),
        m(&obs[3], &obs[6], &both),
    ) else {
        return;
    };
    // Per repetition: (4 kHz - 1 kHz) CPU from the start of the work over the samples.
    let slope = |lo: &Obs, hi: &Obs, r: usize| -> Option<f64> {
        let at = |o: &Obs| o.after_start.iter().find(|x| x.0 == r).map(|x| (x.1, x.2));
        let ((c1, n1), (c2, n2)) = (at(lo)?, at(hi)?);
        (n2 > n1).then(|| (c2 - c1) * 1e3 / (n2 - n1))
    };
    let reps = obs[1]
        .after_start
        .iter()
        .map(|x| x.0)
        .max()
        .map_or(0, |r| r + 1);
    let (mut fps, mut dws, mut unwinds) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..reps {
        if let (Some(fp), Some(dw)) = (slope(&obs[1], &obs[4], r), slope(&obs[2], &obs[5], r)) {
            fps.push(fp);
            dws.push(dw);
            unwinds.push(dw - fp);
        }
    }
    if unwinds.is_empty() {
        return;
    }
    let (fp, dw, unwind) = (med(&fps), med(&dws), med(&unwinds));
    let per_sec = if unwind > 0.0 {
        1e6 / unwind
    } else {
        f64::INFINITY
    };
    rows.push(Row {
        section: S,
        what: "marginal recorder CPU/sample, dwarf - fp (4k-1k)".into(),
        value: unwind,
        unit: "us",
        vs: None,
        note: format!(
            "{per_sec:.0} samples/s per core; target >= {:.0}k samples/s per core: {}; dwarf {dw:.2} us, fp {fp:.2} us per sample (medians over {} repetitions of the CPU from the start of the work: {})",
            DWARF_GOAL_PER_SEC / 1e3,
            if per_sec >= DWARF_GOAL_PER_SEC {
                "met".to_string()
            } else {
                format!("MISSED by {:.0}%", (DWARF_GOAL_PER_SEC / per_sec - 1.0) * 100.0)
            },
            unwinds.len(),
            unwinds
                .iter()
                .map(|u| format!("{u:.2}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    });
    rows.push(Row {
        section: S,
        what: "marginal record+report CPU/sample (4k-1k)".into(),
        value: dw_all,
        unit: "us",
        vs: Some((
            format!("perf record+report: {pf_all:.1} us"),
            dw_all / pf_all,
        )),
        note: format!("perf record alone {pf_rec:.1} us/smp (writes 8 KiB/smp); medians, noisy"),
    });
}
