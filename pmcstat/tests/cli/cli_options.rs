//! pmcstat(8)'s -q, -W, -E and -i end to end on this machine (software events only).
#![cfg(target_os = "linux")]

use crate::common;
use common::pmcstat;

/// A child process that burns well over the 0.1 ms the uncounted-children
/// note needs, under a shell that does not exec it.
const CHILD_LOOP: &str = "sh -c 'i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done'; true";

fn temp(name: &str) -> std::path::PathBuf {
    pmc_testkit::workdir("pmcstat-opts").join(name)
}

/// The task-clock value (msec) of a perf-stat-like table.
fn task_clock_ms(table: &str) -> Option<f64> {
    table.lines().find_map(|l| {
        let mut w = l.split_whitespace();
        let v = w.next()?.replace(',', "");
        (w.next()? == "msec" && w.next()? == "task-clock").then(|| v.parse().ok())?
    })
}

#[test]
fn quiet_keeps_the_counts_and_drops_the_notes() {
    let (code, _, loud) = pmcstat(&["-p", "task-clock", "--", "sh", "-c", CHILD_LOOP]);
    if code != 0 {
        pmc_testkit::skip!("counting not permitted here: {loud}");
        return;
    }
    let (code, _, quiet) = pmcstat(&["-q", "-p", "task-clock", "--", "sh", "-c", CHILD_LOOP]);
    assert_eq!(code, 0, "{quiet}");
    // The counts print either way.
    let (a, b) = (task_clock_ms(&loud), task_clock_ms(&quiet));
    assert!(a.is_some_and(|v| v > 0.0), "{loud}");
    assert!(b.is_some_and(|v| v > 0.0), "{quiet}");
    assert!(quiet.contains("seconds time elapsed"), "{quiet}");
    // The note about the uncounted child process goes.
    assert!(loud.contains("note: child processes ran"), "{loud}");
    assert!(!quiet.contains("note:"), "{quiet}");
    let lines = |s: &str| s.lines().filter(|l| !l.trim().is_empty()).count();
    assert!(
        lines(&quiet) < lines(&loud),
        "-q: {} lines, without: {}\n{quiet}\n---\n{loud}",
        lines(&quiet),
        lines(&loud)
    );
    // -q and -v pull opposite ways: a usage error.
    let (code, _, err) = pmcstat(&["-q", "-v", "-p", "task-clock", "true"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn quiet_sampling_drops_the_status_line() {
    let log = temp("quiet.pmclog");
    let log_s = log.to_string_lossy().into_owned();
    let args = [
        "-P",
        "cpu-clock",
        "--freq",
        "1000",
        "-O",
        &log_s,
        "--",
        "sh",
        "-c",
        CHILD_LOOP,
    ];
    let (code, _, loud) = pmcstat(&args);
    if code != 0 {
        let _ = std::fs::remove_file(&log);
        pmc_testkit::skip!("sampling not permitted here: {loud}");
        return;
    }
    assert!(loud.contains("written to"), "{loud}");
    let mut q = vec!["-q"];
    q.extend_from_slice(&args);
    let (code, _, quiet) = pmcstat(&q);
    let size = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0);
    let _ = std::fs::remove_file(&log);
    assert_eq!(code, 0, "{quiet}");
    assert!(!quiet.contains("written to"), "{quiet}");
    assert!(size > 0, "the log is still written");
}

/// A shell that works, then waits for a `sleep`, six times: at least six
/// context switches of its one thread.
const SLEEPY: &str =
    "for i in 1 2 3 4 5 6; do j=0; while [ $j -lt 3000 ]; do j=$((j+1)); done; sleep 0.02; done";

/// The log's counter records of `kind`.
fn counters(
    log: &std::path::Path,
    kind: pmc_log::record::CounterKind,
) -> Vec<pmc_log::record::Counter> {
    let bytes = std::fs::read(log).unwrap();
    let reader = pmc_log::Reader::new(&bytes).unwrap();
    let mut it = reader.records();
    let out = it
        .by_ref()
        .filter_map(|r| match r {
            pmc_log::record::Record::Counter(c) if c.kind == kind => Some(c),
            _ => None,
        })
        .collect();
    assert!(it.report().closed_cleanly, "{:?}", it.report());
    out
}

#[test]
fn context_switch_counts_go_to_the_log() {
    let log = temp("csw.pmclog");
    let log_s = log.to_string_lossy().into_owned();
    let (code, _, err) = pmcstat(&[
        "-W",
        "-O",
        &log_s,
        "-p",
        "task-clock",
        "--",
        "sh",
        "-c",
        SLEEPY,
    ]);
    if code == 1 && (err.contains("paranoid") || err.contains("ermission")) {
        let _ = std::fs::remove_file(&log);
        pmc_testkit::skip!("-W needs kernel-mode counting: {err}");
        return;
    }
    if code == 1 && err.contains("before Linux 6.12") {
        // The PMU lab's 6.1 guest: its switch group cannot follow the command's new threads.
        let _ = std::fs::remove_file(&log);
        pmc_testkit::skip!("-W on a command needs Linux 6.12 (refused, as it should be): {err}");
        return;
    }
    assert_eq!(code, 0, "{err}");
    let total_ms = task_clock_ms(&err).expect("the task-clock row");
    assert!(err.contains("written to"), "{err}");
    let csw = counters(&log, pmc_log::record::CounterKind::ContextSwitch);
    // pmcstat -R prints each as pmcstat(8)'s `cswval` line.
    let (code, listing, rerr) = pmcstat(&["-R", &log_s]);
    let _ = std::fs::remove_file(&log);
    assert_eq!(code, 0, "{rerr}");
    let cswval = listing.lines().filter(|l| l.starts_with("cswval")).count();
    assert_eq!(cswval, csw.len(), "{listing}");
    assert!(
        csw.len() >= 6,
        "{} context-switch records: {csw:?}",
        csw.len()
    );
    // One thread, the shell's: one pid, one tid.
    assert!(
        csw.iter()
            .all(|c| c.pid == csw[0].pid && c.tid == csw[0].pid),
        "{csw:?}"
    );
    // The slices add up to the total but for the last one, which ends at the exit.
    let sum_ms = csw.iter().map(|c| c.value).sum::<u64>() as f64 / 1e6;
    assert!(
        sum_ms <= total_ms * 1.02 + 0.05 && sum_ms >= total_ms * 0.5,
        "the slices add up to {sum_ms:.3} ms of {total_ms:.3} ms"
    );
    eprintln!(
        "-W: {} slices, {sum_ms:.3} ms of {total_ms:.3} ms task-clock",
        csw.len()
    );
}

#[test]
fn context_switch_logging_needs_a_log_and_a_process() {
    let (code, _, err) = pmcstat(&["-W", "-p", "task-clock", "--", "true"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("-W") && err.contains("-O FILE"), "{err}");
    let (code, _, err) = pmcstat(&["-W", "-P", "cpu-clock", "--", "true"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("-O FILE"), "{err}");
    let log = temp("csw-system.pmclog");
    let log_s = log.to_string_lossy().into_owned();
    let (code, _, err) = pmcstat(&["-W", "-O", &log_s, "-s", "task-clock", "-l", "0.1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("process-mode"), "{err}");
    assert!(!log.exists(), "no log for a refused run");
}

/// Samples per thread id in a log.
fn samples_by_tid(log: &std::path::Path) -> std::collections::BTreeMap<i32, u64> {
    let bytes = std::fs::read(log).unwrap();
    let reader = pmc_log::Reader::new(&bytes).unwrap();
    let mut by_tid = std::collections::BTreeMap::new();
    for r in reader.records() {
        if let pmc_log::record::Record::Sample(s) = r {
            *by_tid.entry(s.tid).or_insert(0u64) += 1;
        }
    }
    by_tid
}

#[test]
fn thread_filter_keeps_one_threads_samples_in_every_report() {
    let log = temp("tid.pmclog");
    let log_s = log.to_string_lossy().into_owned();
    let work = "i=0; while [ $i -lt 60000 ]; do i=$((i+1)); done";
    let script = format!("sh -c '{work}' & sh -c '{work}'; wait");
    let (code, _, err) = pmcstat(&[
        "-P",
        "cpu-clock",
        "--freq",
        "2000",
        "-d",
        "-O",
        &log_s,
        "--",
        "sh",
        "-c",
        &script,
    ]);
    if code != 0 {
        let _ = std::fs::remove_file(&log);
        pmc_testkit::skip!("sampling not permitted here: {err}");
        return;
    }
    let by_tid = samples_by_tid(&log);
    let total: u64 = by_tid.values().sum();
    let (&tid, &mine) = by_tid.iter().max_by_key(|(_, n)| **n).unwrap();
    assert!(
        by_tid.len() >= 2 && mine < total,
        "samples by thread: {by_tid:?}"
    );
    let t = tid.to_string();
    let run = |extra: &[&str]| {
        let mut a = vec!["-R", log_s.as_str(), "-i", t.as_str()];
        a.extend_from_slice(extra);
        let (code, out, err) = pmcstat(&a);
        assert_eq!(code, 0, "{a:?}: {err}");
        assert!(
            err.contains(&format!("{mine} of {total} samples")),
            "{a:?}: {err}"
        );
        out
    };
    // The record dump: only the thread's samples.
    let dump = run(&["--dump"]);
    let samples: Vec<&str> = dump.lines().filter(|l| l.starts_with("sample")).collect();
    assert_eq!(samples.len() as u64, mine, "{by_tid:?}");
    assert!(samples.iter().all(|l| l.contains(&format!(" tid={tid} "))));
    // pmcstat(8)'s record lines.
    let lines = run(&[]);
    let callchains = lines.lines().filter(|l| l.starts_with("callchain")).count();
    assert_eq!(callchains as u64, mine);
    // The summary and the call graph count the thread's samples only.
    let summary = run(&["--summary"]);
    assert!(summary.contains(&format!("({mine} samples)")), "{summary}");
    let graph = run(&["-G", "-"]);
    assert!(graph.contains(&format!("[{mine} samples]")), "{graph}");
    // Without -i: all of them.
    let (_, summary, _) = pmcstat(&["-R", &log_s, "--summary"]);
    assert!(summary.contains(&format!("({total} samples)")), "{summary}");
    // A thread with no samples: a warning naming the threads that have some.
    let (code, _, err) = pmcstat(&["-R", &log_s, "-i", "2147483647", "--summary"]);
    let _ = std::fs::remove_file(&log);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("none of the") && err.contains(&format!("{tid} ({mine})")),
        "{err}"
    );
    // Usage errors: -i needs -R, and a thread id.
    for args in [
        &["-i", "5", "--", "true"][..],
        &["-R", "x", "-i", "0"],
        &["-R", "x", "-i", "a"],
    ] {
        let (code, _, err) = pmcstat(args);
        assert_eq!(code, 2, "{args:?}: {err}");
    }
}

/// `-E`'s table: (pid, command, counts) per row.
fn exit_rows(text: &str) -> Vec<(i32, String, Vec<u64>)> {
    let Some(start) = text.find("# -E: counts at process exit") else {
        return Vec::new();
    };
    text[start..]
        .lines()
        .skip(2)
        .map_while(|l| {
            let mut w = l.split_whitespace();
            let pid = w.next()?.parse().ok()?;
            let comm = w.next()?.to_owned();
            let counts = w.map(|v| v.parse().ok()).collect::<Option<Vec<u64>>>()?;
            Some((pid, comm, counts))
        })
        .collect()
}

#[test]
fn exit_counts_per_process() {
    let small = "i=0; while [ $i -lt 10000 ]; do i=$((i+1)); done";
    let big = "i=0; while [ $i -lt 60000 ]; do i=$((i+1)); done";
    // Two child processes one after the other, then the shell: three exits in this order.
    let script = format!("sh -c '{small}'; sh -c '{big}'; true");
    let log = temp("exit.pmclog");
    let log_s = log.to_string_lossy().into_owned();
    // task-clock: 1 ms a sample. (At 0.1 ms the PMU lab's emulated guest lost 7,493 of 54,314
    // samples, all of the small child's, so its exit had no row.)
    let period = 1_000_000u64;
    let p = period.to_string();
    let (code, _, err) = pmcstat(&[
        "-E",
        "-d",
        "-P",
        "task-clock",
        "-n",
        &p,
        "-O",
        &log_s,
        "--",
        "sh",
        "-c",
        &script,
    ]);
    if code != 0 {
        let _ = std::fs::remove_file(&log);
        pmc_testkit::skip!("sampling not permitted here: {err}");
        return;
    }
    let rows = exit_rows(&err);
    assert_eq!(rows.len(), 3, "one row per process that exited:\n{err}");
    let (small_n, big_n, shell_n) = (rows[0].2[0], rows[1].2[0], rows[2].2[0]);
    assert!(rows.iter().all(|r| r.1 == "sh"), "{rows:?}");
    assert!(
        big_n > 2 * small_n && small_n > 0,
        "the bigger loop counts more: {rows:?}"
    );
    assert!(
        rows.iter().all(|r| r.2[0] % period == 0),
        "sums of periods: {rows:?}"
    );
    // Each row is the log's exit record, and the sum of that process's sample periods.
    let bytes = std::fs::read(&log).unwrap();
    let _ = std::fs::remove_file(&log);
    let reader = pmc_log::Reader::new(&bytes).unwrap();
    let mut periods = std::collections::BTreeMap::<i32, u64>::new();
    let mut exitvals = Vec::new();
    for r in reader.records() {
        match r {
            pmc_log::record::Record::Sample(s) => *periods.entry(s.pid).or_default() += s.period,
            pmc_log::record::Record::Counter(c)
                if c.kind == pmc_log::record::CounterKind::ProcessExit =>
            {
                exitvals.push((c.pid, c.value))
            }
            _ => {}
        }
    }
    let printed: Vec<(i32, u64)> = rows.iter().map(|r| (r.0, r.2[0])).collect();
    assert_eq!(printed, exitvals);
    // A process with no sample (the shell may run under one period) has its row, 0, as
    // hwpmc logs a PROCEXIT for every process.
    for (pid, v) in &printed {
        assert_eq!(
            periods.get(pid).copied().unwrap_or(0),
            *v,
            "pid {pid}: {periods:?}"
        );
    }
    eprintln!("-E: small {small_n} ns, big {big_n} ns, shell {shell_n} ns");

    // Without -O the same table comes from the live log.
    let (code, _, err) = pmcstat(&[
        "-E",
        "-d",
        "-P",
        "task-clock",
        "-n",
        &p,
        "--",
        "sh",
        "-c",
        &script,
    ]);
    assert_eq!(code, 0, "{err}");
    let rows = exit_rows(&err);
    assert_eq!(rows.len(), 3, "{err}");
    assert!(rows[1].2[0] > 2 * rows[0].2[0], "{rows:?}");
}

/// Forks 3 children one after the other, child i touching (i+1)*1000 fresh
/// pages, then touches 500 itself: known page faults per process.
const KIDS: &str = r#"
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
static void touch(long pages) {
    char *p = mmap(0, pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) _exit(1);
    madvise(p, pages * 4096, MADV_NOHUGEPAGE);
    for (long i = 0; i < pages; i++) p[i * 4096] = 1;
}
int main(void) {
    for (int i = 0; i < 3; i++) {
        pid_t k = fork();
        if (k == 0) { touch((i + 1) * 1000); _exit(0); }
        waitpid(k, 0, 0);
    }
    touch(500);
    return 0;
}
"#;

#[test]
fn exit_counts_of_a_counting_pmc_are_each_processs_own() {
    let dir = temp("kids");
    std::fs::create_dir_all(&dir).unwrap();
    let Some(exe) = pmc_testkit::cc::build(&dir, "kids", KIDS, &["-O1"]) else {
        return;
    };
    let exe_s = exe.to_string_lossy().into_owned();
    // Several runs: the kernel's context swaps (which decide which task gets no READ record)
    // differ from run to run.
    for run in 0..5 {
        let (code, _, err) = pmcstat(&["-E", "-d", "-p", "page-faults", "--", &exe_s]);
        if code != 0 && run == 0 {
            pmc_testkit::skip!("counting not permitted here: {err}");
            return;
        }
        assert_eq!(code, 0, "{err}");
        let rows = exit_rows(&err);
        assert_eq!(rows.len(), 4, "the 3 children, then the parent:\n{err}");
        assert!(rows.iter().all(|r| r.1 == "kids"), "{rows:?}");
        // Each child's own page faults: its pages and a few dozen of its own (exit, stack).
        for (i, r) in rows[..3].iter().enumerate() {
            let pages = (i as u64 + 1) * 1000;
            assert!(
                (pages..pages + 100).contains(&r.2[0]),
                "child {i} touched {pages} pages: {rows:?}\n{err}"
            );
        }
        // The parent: its 500 pages and its start-up (the C library, the exec).
        assert!((500..700).contains(&rows[3].2[0]), "{rows:?}\n{err}");
        // The rows add up to the total counted.
        let total: u64 = err
            .lines()
            .find(|l| l.contains("page-faults") && !l.starts_with('#'))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|v| v.replace(',', "").parse().ok())
            .expect("the total row");
        let sum: u64 = rows.iter().map(|r| r.2[0]).sum();
        assert_eq!(sum, total, "{err}");
    }
    // The same through a log: exitval records, one per process.
    let log = dir.join("exit.pmclog");
    let log_s = log.to_string_lossy().into_owned();
    let (code, _, err) = pmcstat(&["-E", "-d", "-p", "page-faults", "-O", &log_s, "--", &exe_s]);
    assert_eq!(code, 0, "{err}");
    let bytes = std::fs::read(&log).unwrap();
    let reader = pmc_log::Reader::new(&bytes).unwrap();
    let exitvals: Vec<(i32, u64)> = reader
        .records()
        .filter_map(|r| match r {
            pmc_log::record::Record::Counter(c)
                if c.kind == pmc_log::record::CounterKind::ProcessExit =>
            {
                Some((c.pid, c.value))
            }
            _ => None,
        })
        .collect();
    let printed: Vec<(i32, u64)> = exit_rows(&err).iter().map(|r| (r.0, r.2[0])).collect();
    assert_eq!(printed, exitvals);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn exit_counts_usage() {
    // Two counting PMCs: the kernel would mix their per-process counts; refused.
    let (code, _, err) = pmcstat(&["-E", "-d", "-p", "task-clock", "-p", "page-faults", "true"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("-E") && err.contains("one"), "{err}");
    // System-mode PMCs have no processes.
    let (code, _, err) = pmcstat(&["-E", "-s", "task-clock", "-l", "0.1"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = pmcstat(&["-E", "-S", "cpu-clock", "-l", "0.1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("process sampling"), "{err}");
}

/// `pmcstat --generate`: the man page and shell completions, from the binary as
/// a packager runs it (issue 22).
/// The man page names the options `pmcstat --help` lists; the completions are
/// scripts for their shells; `--generate` takes nothing else.
#[test]
fn generate_writes_the_reference() {
    let (code, help, err) = pmcstat(&["--help"]);
    assert_eq!(code, 0, "{err}");
    let (code, man, err) = pmcstat(&["--generate", "man"]);
    assert_eq!(code, 0, "{err}");
    assert!(man.contains(".TH pmcstat"), "{man}");
    let man = man.replace("\\-", "-");
    // Every long option --help shows is in the man page.
    let longs: Vec<&str> = help
        .split(|c: char| c.is_whitespace() || c == ',' || c == '=' || c == '[' || c == ']')
        .filter(|w| w.starts_with("--") && w.len() > 2 && !w.contains('`'))
        .filter(|w| {
            w[2..]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
        .collect();
    assert!(longs.len() >= 20, "{longs:?}");
    for l in &longs {
        assert!(man.contains(l), "the man page lacks {l}");
    }
    assert!(!help.contains("--generate"), "--generate is hidden");
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef pmcstat"),
        ("fish", "complete -c pmcstat"),
    ] {
        let (code, out, err) = pmcstat(&["--generate", shell]);
        assert_eq!(code, 0, "{shell}: {err}");
        assert!(out.contains(marker), "{shell}: {out}");
        assert!(out.contains("json-report"), "{shell}: {out}");
    }
    let (code, _, err) = pmcstat(&["--generate", "man", "-p", "page-faults", "true"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = pmcstat(&["--generate", "troff"]);
    assert_eq!(code, 2, "{err}");
}

/// `--cgroup NAME` (perf's -G) filters system-wide PMCs only (-s, -a, -S, -a -P, --metrics
/// -s): with a process mode or -R it is a usage error naming the flags, before anything is
/// counted. (tests/tests/e2e/cgroup.rs counts and samples real cgroups.)
#[test]
fn cgroup_goes_with_system_wide_counting_only() {
    for (args, names) in [
        (
            &["-p", "page-faults", "--cgroup", "x", "true"][..],
            "-p counts processes",
        ),
        (
            &["-e", "page-faults", "--cgroup", "x", "true"][..],
            "add -a (--all-cpus)",
        ),
        (&["--cgroup", "x", "true"][..], "add -a (--all-cpus)"),
        (
            &["-t", "1", "-s", "page-faults", "--cgroup", "x"][..],
            "-t counts processes",
        ),
        (
            &["-P", "cpu-clock", "--cgroup", "x", "true"][..],
            "-P samples processes",
        ),
        (
            &[
                "-S",
                "cpu-clock",
                "-s",
                "page-faults",
                "--cgroup",
                "x",
                "true",
            ][..],
            "separate runs",
        ),
        (
            &["--metrics", "0", "--cgroup", "x"][..],
            "with --metrics give the events with -s",
        ),
        (
            &[
                "--metrics",
                "0",
                "-s",
                "page-faults",
                "-t",
                "1",
                "--cgroup",
                "x",
            ][..],
            "(-t, -p, -e)",
        ),
        (
            &["-a", "--cgroup", "", "true"][..],
            "give it a cgroup's name",
        ),
    ] {
        let (code, _, err) = pmcstat(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains("--cgroup") && err.contains(names),
            "{args:?}: {err}"
        );
    }
}
