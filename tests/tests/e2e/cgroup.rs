//! Cgroup counters (`Allocation::cgroup`, pmcstat's `--cgroup`): perf's cgroup mode, checked
//! against outside truths. A fresh cgroup under the cgroup2 mount holds a workload that
//! touches N fresh pages while another process outside it touches M; the cgroup's
//! page-fault count must hold the N (plus the workload's start-up) and none of the M, and
//! agree with `perf stat -a -G` on the same runs.
//!
//! Needs root and a cgroup2 mount; without either each test skips visibly.
#![cfg(target_os = "linux")]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use pmc::{Allocation, Backend as _, Cpus, ErrorKind, Pmc as _, Rate};
use pmc_tests::{perf_available, pmcstat_path, skip};

const WORKLOAD: &str = env!("CARGO_BIN_EXE_pmc-workload");

/// Pages the workload inside the cgroup touches.
const INSIDE: u64 = 10_000;
/// Pages the process outside the cgroup touches, at the same time.
const OUTSIDE: u64 = 40_000;
/// The page faults of starting the workload inside the cgroup (the shell after it moved
/// itself in, the exec, the dynamic loader, Rust's runtime), at most. Measured here: 128-130
/// above the 10,000 pages (pmc 10,128, perf 10,129); the bound leaves room for other kernels
/// and libcs and stays far below OUTSIDE (counting the outside process too read 53,600).
const STARTUP: u64 = 3_000;

/// A cgroup made for one test under the cgroup2 mount, removed at drop (its processes moved
/// to the mount's root first), even when the test fails.
struct TestCgroup {
    /// The name relative to the mount (what perf's -G takes).
    name: String,
    dir: PathBuf,
    root: PathBuf,
}

impl TestCgroup {
    /// `Err(reason)` to skip.
    fn new(tag: &str) -> Result<TestCgroup, String> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err("not root: creating a cgroup needs root".into());
        }
        let root = cgroup2_mount().ok_or("no cgroup2 mount in /proc/self/mountinfo")?;
        let name = format!("pmc-test-{tag}-{}", std::process::id());
        let dir = root.join(&name);
        std::fs::create_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        Ok(TestCgroup { name, dir, root })
    }

    /// `sh -c 'echo $$ > cgroup.procs; exec WORKLOAD ARGS'`: the shell moves itself into the
    /// cgroup, then becomes the workload.
    fn spawn(&self, args: &str) -> Child {
        let procs = self.dir.join("cgroup.procs");
        Command::new("sh")
            .arg("-c")
            .arg(format!(
                "echo $$ > {} && exec {WORKLOAD} {args}",
                procs.display()
            ))
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn the workload in the cgroup")
    }

    /// The command line perf and pmcstat run: the same as [`TestCgroup::spawn`].
    fn command(&self, args: &str) -> Vec<String> {
        let procs = self.dir.join("cgroup.procs");
        vec![
            "sh".into(),
            "-c".into(),
            format!("echo $$ > {} && exec {WORKLOAD} {args}", procs.display()),
        ]
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        let procs = std::fs::read_to_string(self.dir.join("cgroup.procs")).unwrap_or_default();
        for pid in procs.split_whitespace() {
            let _ = std::fs::write(self.root.join("cgroup.procs"), pid);
        }
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        eprintln!("warning: could not remove {}", self.dir.display());
    }
}

/// The first cgroup2 mount point.
fn cgroup2_mount() -> Option<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        let point = left.split(' ').nth(4)?;
        (right.split(' ').next()? == "cgroup2").then(|| PathBuf::from(point))
    })
}

/// The process outside the cgroup: touches OUTSIDE pages.
fn outsider() -> Child {
    Command::new(WORKLOAD)
        .args(["touch-pages", &OUTSIDE.to_string()])
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn the outside workload")
}

fn wait_ok(mut c: Child, what: &str) {
    let st = c.wait().expect("wait");
    assert!(st.success(), "{what} failed: {st}");
}

/// The bounds every cgroup count must keep: all of the inside pages, the start-up at most,
/// none of the outside pages.
fn check_bounds(who: &str, count: u64) {
    eprintln!(
        "{who}: {count} page faults in the cgroup (inside {INSIDE} pages, outside {OUTSIDE})"
    );
    assert!(
        count >= INSIDE,
        "{who}: {count} < the {INSIDE} pages touched inside"
    );
    assert!(
        count < INSIDE + STARTUP,
        "{who}: {count} >= {INSIDE} + {STARTUP} start-up faults: the outside process's \
         {OUTSIDE} counted?"
    );
    assert!(
        count < INSIDE + OUTSIDE,
        "{who}: {count} holds the outside pages"
    );
}

/// `perf stat -a -x, -e page-faults -G NAME -- COMMAND`'s count, with the outside process
/// running meanwhile.
fn perf_count(cg: &TestCgroup, args: &str) -> Result<u64, String> {
    perf_available()?;
    let out_proc = outsider();
    let out = Command::new("perf")
        .args([
            "stat",
            "-a",
            "-x,",
            "-e",
            "page-faults",
            "-G",
            &cg.name,
            "--",
        ])
        .args(cg.command(args))
        .stdout(Stdio::null())
        .output();
    wait_ok(out_proc, "the outside workload");
    let out = out.map_err(|e| format!("cannot run perf: {e}"))?;
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!("perf stat -G failed ({}): {err}", out.status));
    }
    err.lines()
        .find(|l| l.contains("page-faults"))
        .and_then(|l| l.split(',').next()?.parse().ok())
        .ok_or_else(|| format!("no page-faults count in perf's output: {err}"))
}

#[test]
fn cgroup_page_faults_count_the_cgroup_only_as_perf_does() {
    let cg = match TestCgroup::new("lib") {
        Ok(c) => c,
        Err(why) => {
            return skip!(
                "cgroup_page_faults_count_the_cgroup_only_as_perf_does",
                "{why}"
            )
        }
    };
    let backend = pmc::Native::open().expect("backend");
    let alloc = Allocation::counting("page-faults".parse().expect("event"))
        .system(Cpus::All)
        .cgroup(cg.name.clone());
    let mut p = backend.allocate(&alloc).expect("allocate a cgroup PMC");
    p.start().expect("start");
    let outside = outsider();
    let inside = cg.spawn(&format!("touch-pages {INSIDE}"));
    wait_ok(inside, "the cgroup's workload");
    wait_ok(outside, "the outside workload");
    p.stop().expect("stop");
    let count = p.read().expect("read").value;
    check_bounds("pmc", count);

    // The same by absolute path.
    let by_path = Allocation::counting("page-faults".parse().expect("event"))
        .system(Cpus::All)
        .cgroup(cg.dir.to_string_lossy().into_owned());
    let mut q = backend
        .allocate(&by_path)
        .expect("allocate by absolute path");
    q.start().expect("start");
    wait_ok(
        cg.spawn(&format!("touch-pages {INSIDE}")),
        "the cgroup's workload",
    );
    q.stop().expect("stop");
    check_bounds("pmc (absolute path)", q.read().expect("read").value);

    match perf_count(&cg, &format!("touch-pages {INSIDE}")) {
        Ok(perf) => {
            check_bounds("perf stat -a -G", perf);
            // Both count the same command from the shell's move into the cgroup; they differ
            // by the start-up's variation only.
            let diff = count.abs_diff(perf);
            eprintln!("pmc {count} vs perf {perf}: difference {diff}");
            assert!(
                diff < STARTUP,
                "pmc {count} and perf {perf} differ by {diff} >= {STARTUP}"
            );
        }
        Err(why) => skip!(
            "cgroup_page_faults_count_the_cgroup_only_as_perf_does/perf",
            "the comparison with perf: {why}"
        ),
    }
}

/// Sampling in a cgroup (perf record -a -G): page-fault samples every 100 faults come from
/// the cgroup's process only, and their periods add up to its faults.
#[test]
fn cgroup_samples_come_from_the_cgroup_only() {
    let name = "cgroup_samples_come_from_the_cgroup_only";
    let cg = match TestCgroup::new("sampling") {
        Ok(c) => c,
        Err(why) => return skip!(name, "{why}"),
    };
    let backend = pmc::Native::open().expect("backend");
    let alloc = Allocation::sampling("page-faults".parse().expect("event"), Rate::Period(100))
        .flags(pmc::Flags::NONE)
        .system(Cpus::All)
        .cgroup(cg.name.clone());
    let mut p = backend.allocate(&alloc).expect("allocate a cgroup sampler");
    p.sample_in_process().expect("sample in process");
    p.start().expect("start");
    let outside = outsider();
    let outside_pid = outside.id();
    let inside = cg.spawn(&format!("touch-pages {INSIDE}"));
    let inside_pid = inside.id();
    wait_ok(inside, "the cgroup's workload");
    wait_ok(outside, "the outside workload");
    p.stop().expect("stop");
    let samples = p.samples().expect("samples");
    let from = |pid: u32| {
        samples
            .iter()
            .filter(|s| s.pid == pid)
            .map(|s| s.period)
            .sum::<u64>()
    };
    let (ins, outs, all) = (
        from(inside_pid),
        from(outside_pid),
        samples.iter().map(|s| s.period).sum::<u64>(),
    );
    eprintln!(
        "{} samples: periods {all} in all, {ins} of the cgroup's process, {outs} of the outside one",
        samples.len()
    );
    assert_eq!(outs, 0, "samples of the process outside the cgroup");
    assert!(
        ins + 100 >= INSIDE,
        "{ins} sampled faults of the cgroup's {INSIDE} pages"
    );
    assert!(all < INSIDE + STARTUP, "{all} sampled faults in all");
}

#[test]
fn a_missing_cgroup_is_no_such_cgroup_naming_the_path() {
    if cgroup2_mount().is_none() {
        return skip!(
            "a_missing_cgroup_is_no_such_cgroup_naming_the_path",
            "no cgroup2 mount"
        );
    }
    let backend = pmc::Native::open().expect("backend");
    let name = format!("pmc-test-absent-{}", std::process::id());
    let alloc = Allocation::counting("page-faults".parse().expect("event"))
        .system(Cpus::All)
        .cgroup(name.clone());
    let e = backend.allocate(&alloc).expect_err("no such cgroup");
    assert_eq!(e.kind(), ErrorKind::NoSuchCgroup, "{e}");
    assert!(e.to_string().contains(&name), "{e}");
}

/// pmcstat's `--cgroup`: the table's row and the JSON report carry the cgroup, and the
/// count keeps the same bounds.
#[test]
fn pmcstat_cgroup_counts_and_labels_the_cgroup() {
    let name = "pmcstat_cgroup_counts_and_labels_the_cgroup";
    let Some(pmcstat) = pmcstat_path() else {
        return skip!(name, "no pmcstat binary in this build's target directory");
    };
    let cg = match TestCgroup::new("cli") {
        Ok(c) => c,
        Err(why) => return skip!(name, "{why}"),
    };
    let outside = outsider();
    let out = Command::new(&pmcstat)
        .args([
            "--all-cpus",
            "-e",
            "page-faults",
            "--cgroup",
            &cg.name,
            "--json-report",
            "--",
        ])
        .args(cg.command(&format!("touch-pages {INSIDE}")))
        .output()
        .expect("run pmcstat");
    wait_ok(outside, "the outside workload");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "pmcstat --cgroup failed: {err}");
    let line = err
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON report: {err}"));
    let j: serde_json::Value = serde_json::from_str(line).expect("the JSON report parses");
    let c = j["counters"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["event"] == "page-faults"))
        .unwrap_or_else(|| panic!("no page-faults in {j}"));
    assert_eq!(c["cgroup"], cg.name.as_str(), "{c}");
    check_bounds("pmcstat --cgroup", c["value"].as_u64().expect("a count"));
}

/// `--columns` with `--cgroup`: pmcstat(8)'s header names the cgroup after each event
/// (`s/NN/page-faults@NAME`), and the last row of running totals (-C) sums, over the CPUs'
/// columns, to a count within the cgroup's bounds.
#[test]
fn pmcstat_columns_name_the_cgroup() {
    let name = "pmcstat_columns_name_the_cgroup";
    let Some(pmcstat) = pmcstat_path() else {
        return skip!(name, "no pmcstat binary in this build's target directory");
    };
    let cg = match TestCgroup::new("columns") {
        Ok(c) => c,
        Err(why) => return skip!(name, "{why}"),
    };
    let outside = outsider();
    let out = Command::new(&pmcstat)
        .args(["--all-cpus", "-e", "page-faults", "--cgroup", &cg.name])
        .args(["--columns", "-C", "--"])
        .args(cg.command(&format!("touch-pages {INSIDE}")))
        .output()
        .expect("run pmcstat");
    wait_ok(outside, "the outside workload");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "pmcstat --columns --cgroup failed: {err}"
    );
    let header = err
        .lines()
        .find(|l| l.starts_with("# "))
        .unwrap_or_else(|| panic!("no header: {err}"));
    let columns: Vec<&str> = header[2..].split_whitespace().collect();
    let want = format!("/page-faults@{}", cg.name);
    assert!(
        !columns.is_empty()
            && columns
                .iter()
                .all(|c| c.starts_with("s/") && c.ends_with(&want)),
        "every column names the cgroup ({want}): {header}"
    );
    let last = err
        .lines()
        .rev()
        .find(|l| !l.starts_with('#') && l.split_whitespace().count() == columns.len())
        .unwrap_or_else(|| panic!("no row of {} counts: {err}", columns.len()));
    let total: u64 = last
        .split_whitespace()
        .map(|v| {
            v.parse::<u64>()
                .unwrap_or_else(|_| panic!("a count: {last}"))
        })
        .sum();
    check_bounds("pmcstat --columns --cgroup", total);
}

/// The sum over CPUs of `series{...,cgroup="NAME"}` in an exposition; panics on a series of
/// that name without the cgroup label.
fn cgroup_sum(text: &str, series: &str, name: &str) -> f64 {
    let mut sum = 0.0;
    let mut found = false;
    for l in text
        .lines()
        .filter(|l| l.starts_with(&format!("{series}{{")))
    {
        assert!(
            l.contains(&format!("cgroup=\"{name}\"")),
            "a series without the cgroup: {l}"
        );
        found = true;
        sum += l
            .rsplit(' ')
            .next()
            .and_then(|v| v.parse::<f64>().ok())
            .expect("a value");
    }
    assert!(found, "no {series} series in: {text}");
    sum
}

fn scrape(addr: &str) -> String {
    use std::io::{Read, Write};
    for _ in 0..600 {
        if let Ok(mut s) = std::net::TcpStream::connect(addr) {
            let _ = write!(s, "GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n");
            let mut text = String::new();
            if s.read_to_string(&mut text).is_ok() && text.contains(" 200 ") {
                return text
                    .split_once("\r\n\r\n")
                    .map(|x| x.1)
                    .unwrap_or("")
                    .to_string();
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("pmcstat --metrics never answered on {addr}");
}

/// pmcstat --metrics -s page-faults --cgroup NAME: every series carries the `cgroup` label,
/// and what they add up to over the workload keeps the bounds.
#[test]
fn pmcstat_metrics_label_the_cgroup_series() {
    let name = "pmcstat_metrics_label_the_cgroup_series";
    let Some(pmcstat) = pmcstat_path() else {
        return skip!(name, "no pmcstat binary in this build's target directory");
    };
    let cg = match TestCgroup::new("metrics") {
        Ok(c) => c,
        Err(why) => return skip!(name, "{why}"),
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let addr = format!("127.0.0.1:{port}");
    let mut exporter = Command::new(&pmcstat)
        .args([
            "--metrics",
            &addr,
            "-s",
            "page-faults",
            "--cgroup",
            &cg.name,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start pmcstat --metrics");
    let before = cgroup_sum(&scrape(&addr), "pmc_page_faults_total", &cg.name);
    let outside = outsider();
    wait_ok(
        cg.spawn(&format!("touch-pages {INSIDE}")),
        "the cgroup's workload",
    );
    wait_ok(outside, "the outside workload");
    let after = cgroup_sum(&scrape(&addr), "pmc_page_faults_total", &cg.name);
    let _ = exporter.kill();
    let _ = exporter.wait();
    check_bounds("pmcstat --metrics --cgroup", (after - before) as u64);
}

/// pmcstat -S page-faults -n 100 --cgroup NAME -O LOG (perf record -a -G): the log's samples
/// are of the cgroup's process only.
#[test]
fn pmcstat_samples_the_cgroup_only() {
    let name = "pmcstat_samples_the_cgroup_only";
    let Some(pmcstat) = pmcstat_path() else {
        return skip!(name, "no pmcstat binary in this build's target directory");
    };
    let cg = match TestCgroup::new("cli-sampling") {
        Ok(c) => c,
        Err(why) => return skip!(name, "{why}"),
    };
    let dir = pmc_testkit::workdir("pmc-tests-cgroup-sampling");
    let log = dir.join("cgroup.pmclog");
    let outside = outsider();
    let outside_pid = outside.id();
    let out = Command::new(&pmcstat)
        .args(["-S", "page-faults", "-n", "100", "--cgroup", &cg.name, "-O"])
        .arg(&log)
        .arg("--")
        .args(cg.command(&format!("touch-pages {INSIDE}")))
        .output()
        .expect("run pmcstat");
    wait_ok(outside, "the outside workload");
    assert!(
        out.status.success(),
        "pmcstat -S --cgroup failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = std::fs::read(&log).expect("the log");
    let reader = pmc_log::Reader::new(&bytes).expect("the log parses");
    let (mut all, mut outs) = (0u64, 0u64);
    let mut natives = Vec::new();
    for r in reader.records() {
        match r {
            pmc_log::record::Record::Sample(s) => {
                all += s.period;
                if s.pid == outside_pid as i32 {
                    outs += s.period;
                }
            }
            pmc_log::record::Record::Pmc(p) => natives.push(p.native_config.to_string()),
            _ => {}
        }
    }
    // The log says which cgroup its PMCs sampled: `cgroup=NAME` in each native config.
    let said = format!("cgroup={}", cg.name);
    assert!(
        !natives.is_empty() && natives.iter().all(|n| n.split(',').any(|kv| kv == said)),
        "each PMC of the log names its cgroup ({said}): {natives:?}"
    );
    eprintln!("pmcstat -S --cgroup: sampled periods {all}, {outs} of the outside process");
    assert_eq!(outs, 0, "samples of the process outside the cgroup");
    assert!(
        all + 100 >= INSIDE && all < INSIDE + STARTUP,
        "{all} sampled faults"
    );
}
