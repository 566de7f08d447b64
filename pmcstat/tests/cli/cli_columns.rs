//! `--columns`: FreeBSD pmcstat(8)'s columnar counting output, end to end,
//! with software events, checked against `perf stat`.
#![cfg(target_os = "linux")]

use std::path::Path;
use std::process::Command;

use crate::common;
use common::pmcstat;

/// Touches PAGES fresh pages of anonymous memory (no huge pages), in ROUNDS
/// rounds 150 ms apart, so that -w 0.1 sees several rows: a deterministic
/// number of page faults.
const PROG: &str = r#"
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#define PAGES 8000
#define ROUNDS 4
int main(void) {
    long psz = 4096;
    char *p = mmap(0, PAGES * psz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 1;
    madvise(p, PAGES * psz, MADV_NOHUGEPAGE);
    struct timespec ts = {0, 150 * 1000 * 1000};
    for (int r = 0; r < ROUNDS; r++) {
        for (long i = r * (PAGES / ROUNDS); i < (r + 1) * (PAGES / ROUNDS); i++) p[i * psz] = 1;
        nanosleep(&ts, 0);
    }
    return 0;
}
"#;

/// A parsed table: the column names and the rows.
#[derive(Debug)]
struct Table {
    columns: Vec<String>,
    rows: Vec<Vec<u64>>,
}

/// Parses pmcstat(8)'s table strictly: a `# ` header, then rows of exactly as
/// many numbers, each field right-aligned so that it ends where its header ends.
fn parse(out: &str) -> Table {
    let mut lines = out.lines().filter(|l| !l.is_empty());
    let header = lines.next().expect("a header line");
    assert!(header.starts_with("# "), "header: {header:?}\n{out}");
    let columns: Vec<String> = header[2..].split_whitespace().map(str::to_owned).collect();
    // Where each header field ends: the rows' numbers end there too.
    let ends = |l: &str| -> Vec<usize> {
        let b = l.as_bytes();
        (0..b.len())
            .filter(|&i| b[i] != b' ' && b[i] != b'#' && (i + 1 == b.len() || b[i + 1] == b' '))
            .map(|i| i + 1)
            .collect()
    };
    let header_ends = ends(header);
    let mut rows = Vec::new();
    for l in lines {
        if l.starts_with("# ") {
            assert_eq!(l, header, "a repeated header is the same");
            continue;
        }
        assert!(l.ends_with(' '), "each field ends with a space: {l:?}");
        let row: Vec<u64> = l
            .split_whitespace()
            .map(|v| {
                v.parse()
                    .unwrap_or_else(|_| panic!("not a count: {v:?} in {l:?}"))
            })
            .collect();
        assert_eq!(row.len(), columns.len(), "row {l:?} under {header:?}");
        assert_eq!(ends(l), header_ends, "aligned: {l:?} under {header:?}");
        rows.push(row);
    }
    Table { columns, rows }
}

fn perf_page_faults(exe: &Path) -> Option<u64> {
    let out = Command::new("perf")
        .args(["stat", "-x,", "-e", "page-faults", "--"])
        .arg(exe)
        .output()
        .ok()?;
    let err = String::from_utf8_lossy(&out.stderr);
    err.lines()
        .find(|l| l.contains("page-faults"))?
        .split(',')
        .next()?
        .parse()
        .ok()
}

fn within(a: u64, b: u64, pct: f64) -> bool {
    (a as f64 - b as f64).abs() <= b as f64 * pct / 100.0
}

#[test]
fn header_has_a_column_per_pmc() {
    let (code, _, err) = pmcstat(&[
        "--columns",
        "-p",
        "page-faults",
        "-p",
        "context-switches",
        "-s",
        "task-clock",
        "-c",
        "0",
        "--",
        "true",
    ]);
    if code != 0 {
        pmc_testkit::skip!("counting not permitted here: {err}");
        return;
    }
    let t = parse(&err);
    assert_eq!(
        t.columns,
        ["p/page-faults", "p/context-switches", "s/00/task-clock"],
        "{err}"
    );
    // No -w: pmcstat(8) prints every 5 s and when the command exits: one row.
    assert_eq!(t.rows.len(), 1, "{err}");
    assert!(t.rows[0][0] > 0, "{err}");
    // Without -c, a system-mode PMC is a column per CPU.
    let (code, _, err) = pmcstat(&["--columns", "-s", "task-clock", "-l", "0.05"]);
    assert_eq!(code, 0, "{err}");
    let t = parse(&err);
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    if let Some((0, last)) = online
        .trim()
        .split_once('-')
        .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)))
    {
        let want: Vec<String> = (0..=last).map(|c| format!("s/{c:02}/task-clock")).collect();
        assert_eq!(t.columns, want, "{err}");
    }
    assert!(!t.columns.is_empty(), "{err}");
    assert_eq!(t.rows.len(), 1, "{err}");
    // Usage: not with --json, -x or -r N.
    for bad in [
        &["--columns", "--json", "-p", "page-faults", "true"][..],
        &["--columns", "-x,", "-p", "page-faults", "true"],
        &["--columns", "-r", "2", "-p", "page-faults", "true"],
    ] {
        let (code, _, err) = pmcstat(bad);
        assert_eq!(code, 2, "{bad:?}: {err}");
    }
}

#[test]
fn interval_rows_add_up_and_match_perf_stat() {
    let dir = pmc_testkit::workdir("pmcstat-cols-faults");
    let Some(exe) = pmc_testkit::cc::build(&dir, "touch", PROG, &["-O1"]) else {
        return;
    };
    let exe_s = exe.to_string_lossy().into_owned();
    let (code, _, err) = pmcstat(&[
        "--columns",
        "-w",
        "0.1",
        "-p",
        "page-faults",
        "-p",
        "task-clock",
        "--",
        &exe_s,
    ]);
    if code != 0 {
        pmc_testkit::skip!("counting not permitted here: {err}");
        return;
    }
    let inc = parse(&err);
    assert_eq!(inc.columns, ["p/page-faults", "p/task-clock"], "{err}");
    // 4 rounds 150 ms apart: 6 rows of 0.1 s at least, and the last at exit.
    assert!(inc.rows.len() >= 5, "{err}");
    let sum: u64 = inc.rows.iter().map(|r| r[0]).sum();
    // The faults are spread over the run, not all in one row.
    let busy = inc.rows.iter().filter(|r| r[0] >= 1000).count();
    assert!(busy >= 3, "rows with >= 1000 faults: {busy}\n{err}");

    // -C: running totals, never decreasing, the last one the total.
    let (code, _, err_c) = pmcstat(&[
        "--columns",
        "-C",
        "-w",
        "0.1",
        "-p",
        "page-faults",
        "-p",
        "task-clock",
        "--",
        &exe_s,
    ]);
    assert_eq!(code, 0, "{err_c}");
    let cum = parse(&err_c);
    assert!(cum.rows.len() >= 5, "{err_c}");
    for w in cum.rows.windows(2) {
        assert!(w[1][0] >= w[0][0] && w[1][1] >= w[0][1], "{err_c}");
    }
    let total = cum.rows.last().unwrap()[0];
    assert!(
        total >= 8000,
        "the program touches 8000 pages: {total}\n{err_c}"
    );
    // The incremental rows add up to what a cumulative run ends with (two runs of
    // a deterministic program: within 2%).
    assert!(within(sum, total, 2.0), "sum {sum} vs total {total}");

    let Some(perf) = perf_page_faults(&exe) else {
        pmc_testkit::skip!("perf stat -e page-faults did not run");
        return;
    };
    assert!(within(sum, perf, 2.0), "rows sum {sum}, perf stat {perf}");
    assert!(
        within(total, perf, 2.0),
        "-C total {total}, perf stat {perf}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Touches argv[1] fresh pages of anonymous memory (no huge pages); built
/// static, so that nothing but the kernel's exec and the program itself
/// faults.
const STATIC_PROG: &str = r#"
#include <stdlib.h>
#include <sys/mman.h>
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 0, psz = 4096;
    volatile char *p = mmap(0, n * psz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 1;
    madvise((void *)p, n * psz, MADV_NOHUGEPAGE);
    for (long i = 0; i < n; i++) p[i * psz] = 1;
    return 0;
}
"#;

/// The first field of the `page-faults` line of a `-x,` table (perf stat's
/// and pmcstat's CSV).
fn csv_page_faults(stderr: &str) -> Option<u64> {
    stderr
        .lines()
        .find(|l| l.contains("page-faults"))?
        .split(',')
        .next()?
        .parse()
        .ok()
}

/// A launched command (pmc::launch::Session: the PMC attached to the child
/// held before its exec, started by the exec, as perf stat starts its
/// counters) is counted as perf stat counts it, exactly, with a CPU hog
/// beside it: every page fault from the exec on. The child's faults before
/// its exec are outside both, as is the exec's copy of its strings (the
/// kernel faults those pages in through get_user_pages: rusage counts them,
/// perf_event never does). With address-space randomization off (setarch -R,
/// for both) a static program faults the same from run to run, so the two
/// counts are equal, not close; a round where perf's own runs before and
/// after differ judges nothing.
#[test]
fn a_launched_command_counts_as_perf_stat_exactly_under_load() {
    use pmc_testkit::cli::works;
    if !works("setarch", &["-R", "true"]) || !works("perf", &["stat", "-e", "page-faults", "true"])
    {
        pmc_testkit::skip!("no perf stat or setarch -R here");
        return;
    }
    let dir = pmc_testkit::workdir("pmcstat-launch-exact");
    let exe = match pmc_testkit::cc::compile(&dir, "touch", STATIC_PROG, &["-O1", "-static"]) {
        Ok(exe) => exe,
        Err(why) => {
            pmc_testkit::skip!("cannot build a static program (libc6-dev's libc.a): {why}");
            return;
        }
    };
    let exe_s = exe.to_string_lossy().into_owned();
    let count = |tool: &[&str]| -> u64 {
        let out = Command::new("setarch")
            .arg("-R")
            .args(tool)
            .args(["--", &exe_s, "3000"])
            .output()
            .expect("setarch");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{tool:?}: {err}");
        csv_page_faults(&err).unwrap_or_else(|| panic!("{tool:?}: no page-faults row in {err}"))
    };
    let perf = ["perf", "stat", "-x,", "-e", "page-faults"];
    let ours = [common::PMCSTAT, "-x,", "-p", "page-faults"];
    let _hog = pmc_testkit::Hog::start();
    let mut judged = 0;
    for _ in 0..3 {
        let (before, mine, after) = (count(&perf), count(&ours), count(&perf));
        println!("JUDGE page faults of a launched static program: pmcstat {mine}, perf stat {before} and {after}");
        if before != after {
            continue;
        }
        assert_eq!(mine, before, "pmcstat {mine}, perf stat {before}");
        judged += 1;
    }
    if judged == 0 {
        pmc_testkit::skip!("perf stat's own counts of the program varied in every round");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
