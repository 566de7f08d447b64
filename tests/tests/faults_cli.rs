//! The fault suite for pmcstat (issue 10): signals at random points of counting and sampling
//! runs, hostile map paths, output errors and planted links, EMFILE, and commands that die at
//! once. Every test runs the built `pmcstat` binary as a user would, measures the child's
//! peak RSS with `wait4(2)`'s `ru_maxrss`, and prints one summary row:
//!
//! ```text
//! FAULT <name>: injected=.. expected=.. recovered=.. rss_peak_kb=..
//! ```
//!
//! Expectations are properties (exit status, what was printed, what is left on disk, a stated
//! RSS bound), never timings: a test waits for a readiness signal (the command has written its
//! pid) before injecting, and a watchdog only turns a hang into a failure.
#![cfg(target_os = "linux")]

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pmc_log::record::{Callchain, Comm, Header, Map, Mode, PmcDescriptor, Record, Sample, Scope};
use pmc_tests::TempDir;

mod common;
use common::pmcstat_or_skip;

/// A hang is a failure after this long (a watchdog, not a timed assertion).
const WATCHDOG: Duration = Duration::from_secs(120);

/// The peak RSS bound for `-R` over a log whose maps name `/dev/zero`, a FIFO and a 1 GiB
/// sparse file (before the fix: past 1.8 GB, growing until memory ran out, or a hang).
const RSS_BOUND_KB: u64 = 200 * 1024;

/// How a child ended, what it printed, and its peak RSS.
struct Ran {
    /// Exit code, or 128 + the signal that killed it.
    code: i32,
    stdout: String,
    stderr: String,
    rss_peak_kb: u64,
}

/// Spawns `cmd` (output to files, so a full pipe cannot stall it), calls `inject` with its
/// pid, then reaps it with `wait4`, which also gives `ru_maxrss`.
#[allow(clippy::zombie_processes)] // reaped below with wait4, which std does not know about
fn run_measured(mut cmd: Command, dir: &Path, inject: impl FnOnce(u32)) -> Ran {
    let out = dir.join(format!("out-{}", rand_ish()));
    let err = dir.join(format!("err-{}", rand_ish()));
    cmd.stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .stdin(Stdio::null());
    let child = cmd.spawn().expect("spawn");
    let pid = child.id();
    inject(pid);
    let deadline = Instant::now() + WATCHDOG;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `status` and `ru` are valid for writes; `pid` is our unreaped child.
        let r = unsafe { libc::wait4(pid as i32, &mut status, libc::WNOHANG, &mut ru) };
        if r == pid as i32 {
            break;
        }
        assert!(r == 0, "wait4: {}", std::io::Error::last_os_error());
        if Instant::now() > deadline {
            // SAFETY: kill on our own unreaped child.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            panic!("pmcstat hung for {WATCHDOG:?}: {cmd:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    };
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    let ran = Ran {
        code,
        stdout: read(&out),
        stderr: read(&err),
        rss_peak_kb: ru.ru_maxrss as u64,
    };
    let _ = std::fs::remove_file(out);
    let _ = std::fs::remove_file(err);
    eprintln!(
        "$ {cmd:?}\n{}{}[exit {}, rss_peak {} kB]",
        ran.stdout, ran.stderr, ran.code, ran.rss_peak_kb
    );
    ran
}

/// A varying number (no rand crate needed): the clock's nanoseconds.
fn rand_ish() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::from(d.subsec_nanos()))
        .unwrap_or(0)
}

/// Waits (bounded by the watchdog) until `file` holds a pid, written by the command once it
/// runs: the readiness signal.
fn wait_ready(file: &Path) -> i32 {
    let deadline = Instant::now() + WATCHDOG;
    loop {
        if let Some(pid) = std::fs::read_to_string(file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return pid;
        }
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether `pid` is still a live (not zombie) process: an orphan if its parent has exited.
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// Kills `pid` if still alive (cleanup after a failed expectation).
fn reap_orphan(pid: i32) {
    if alive(pid) {
        // SAFETY: kill has no memory preconditions.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

fn sig_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "signal",
    }
}

/// Counting: a signal at a random point after the command started stops counting, prints
/// the counts, passes the signal to the command (not orphaned) and exits 128 + signal.
/// Covers a launched command and `-t PID`.
#[test]
fn signals_during_counting() {
    let name = "signals_during_counting";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let dir = TempDir::new("faults-sig-count", 0o755).unwrap();
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let ready = dir.0.join(format!("ready-{sig}"));
        let delay = Duration::from_millis(rand_ish() % 300);
        let mut cmd = Command::new(&p);
        cmd.args(["-p", "task-clock", "-p", "page-faults", "--", "sh", "-c"])
            .arg(format!("echo $$ > {}; exec sleep 60", ready.display()));
        let mut target = 0;
        let ran = run_measured(cmd, &dir.0, |pid| {
            target = wait_ready(&ready);
            std::thread::sleep(delay);
            // SAFETY: kill has no memory preconditions.
            unsafe { libc::kill(pid as i32, sig) };
        });
        let orphan = alive(target);
        reap_orphan(target);
        let counted = ran.stderr.contains("Performance counter stats")
            && ran.stderr.contains("page-faults")
            && !ran.stderr.contains("<not counted>      page-faults");
        pmc_testkit::row!(
            "FAULT {name}-{}: injected={} {}ms after the command started expected=exit {} \
             counts printed, no orphan recovered=exit {} counts_printed={counted} orphan={orphan} \
             rss_peak_kb={}",
            sig_name(sig),
            sig_name(sig),
            delay.as_millis(),
            128 + sig,
            ran.code,
            ran.rss_peak_kb
        );
        assert_eq!(ran.code, 128 + sig, "{}", sig_name(sig));
        assert!(counted, "no counts printed after {}", sig_name(sig));
        assert!(
            !orphan,
            "the command was left running after {}",
            sig_name(sig)
        );
    }

    // -t PID, which only a signal can end: counts are printed, the target is left alone.
    let ready = dir.0.join("ready-t");
    let mut bg = Command::new("sh");
    bg.arg("-c")
        .arg(format!("echo $$ > {}; exec sleep 60", ready.display()));
    let mut bg = bg.spawn().unwrap();
    let target = wait_ready(&ready);
    let mut cmd = Command::new(&p);
    cmd.args(["-p", "task-clock", "-t", &target.to_string()]);
    let ran = run_measured(cmd, &dir.0, |pid| {
        std::thread::sleep(Duration::from_millis(100 + rand_ish() % 300));
        // SAFETY: kill has no memory preconditions.
        unsafe { libc::kill(pid as i32, libc::SIGINT) };
    });
    let target_alive = alive(target);
    let _ = bg.kill();
    let _ = bg.wait();
    pmc_testkit::row!(
        "FAULT {name}-t-PID: injected=SIGINT expected=exit 130, counts printed, target left \
         running recovered=exit {} counts_printed={} target_alive={target_alive} rss_peak_kb={}",
        ran.code,
        ran.stderr.contains("Performance counter stats"),
        ran.rss_peak_kb
    );
    assert_eq!(ran.code, 130);
    assert!(ran
        .stderr
        .contains("Performance counter stats for process id"));
    assert!(target_alive, "-t must not signal the process it watches");
}

/// A second SIGINT exits at once, even when the command ignores the first.
#[test]
fn second_sigint_exits_at_once() {
    let name = "second_sigint_exits_at_once";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let dir = TempDir::new("faults-sig-twice", 0o755).unwrap();
    let ready = dir.0.join("ready");
    let mut cmd = Command::new(&p);
    cmd.args(["-p", "task-clock", "--", "sh", "-c"])
        .arg(format!(
            "trap '' INT; echo $$ > {}; while :; do sleep 1; done",
            ready.display()
        ));
    let mut target = 0;
    let ran = run_measured(cmd, &dir.0, |pid| {
        target = wait_ready(&ready);
        for _ in 0..2 {
            // SAFETY: kill has no memory preconditions.
            unsafe { libc::kill(pid as i32, libc::SIGINT) };
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    reap_orphan(target);
    pmc_testkit::row!(
        "FAULT {name}: injected=SIGINT twice (the command ignores it) expected=exit 130 \
         recovered=exit {} rss_peak_kb={}",
        ran.code,
        ran.rss_peak_kb
    );
    assert_eq!(ran.code, 130);
}

/// Sampling into a log: a signal at a random point drains the rings and closes the log
/// cleanly (the pmc-log reader says so), and the samples are there.
#[test]
fn signals_during_sampling() {
    let name = "signals_during_sampling";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let dir = TempDir::new("faults-sig-sample", 0o755).unwrap();
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let ready = dir.0.join(format!("ready-{sig}"));
        let log = dir.0.join(format!("log-{sig}.pmclog"));
        let delay = Duration::from_millis(200 + rand_ish() % 300);
        let mut cmd = Command::new(&p);
        cmd.args(["-P", "cpu-clock", "--freq", "1000", "-O"])
            .arg(&log)
            .args(["--", "sh", "-c"])
            .arg(format!(
                "echo $$ > {}; while :; do :; done",
                ready.display()
            ));
        let mut target = 0;
        let ran = run_measured(cmd, &dir.0, |pid| {
            target = wait_ready(&ready);
            std::thread::sleep(delay);
            // SAFETY: kill has no memory preconditions.
            unsafe { libc::kill(pid as i32, sig) };
        });
        let orphan = alive(target);
        reap_orphan(target);
        let bytes = std::fs::read(&log).unwrap_or_default();
        let (samples, report) = match pmc_log::Reader::new(&bytes) {
            Ok(r) => {
                let mut it = r.records();
                let n = it
                    .by_ref()
                    .filter(|r| matches!(r, Record::Sample(_)))
                    .count();
                (n, Some(it.into_report()))
            }
            Err(_) => (0, None),
        };
        let clean = report.as_ref().is_some_and(|r| r.is_clean());
        pmc_testkit::row!(
            "FAULT {name}-{}: injected={} {}ms after the command started expected=exit {}, log \
             closed cleanly, samples>0, no orphan recovered=exit {} clean={clean} samples={samples} \
             skipped_bytes={} orphan={orphan} rss_peak_kb={}",
            sig_name(sig),
            sig_name(sig),
            delay.as_millis(),
            128 + sig,
            ran.code,
            report.as_ref().map_or(0, |r| r.skipped_bytes()),
            ran.rss_peak_kb
        );
        assert_eq!(ran.code, 128 + sig);
        assert!(clean, "log not closed cleanly: {report:?}");
        assert!(samples > 0, "no samples in the log");
        assert!(!orphan);
    }
}

fn header() -> Header<'static> {
    Header {
        os: "Linux".into(),
        page_size: 4096,
        ..Header::default()
    }
}

/// A log whose maps name `paths`, one 4 KiB map each at 0x10000000 + i MiB, with 100 samples
/// (two frames) inside each.
fn hostile_log(paths: &[&Path]) -> Vec<u8> {
    hostile_log_named(paths, "cpu-clock", "victim")
}

/// [`hostile_log`] with the PMC's event and the process's command named as given.
fn hostile_log_named(paths: &[&Path], event: &str, comm: &str) -> Vec<u8> {
    let mut w = pmc_log::Writer::new(Vec::new(), &header()).unwrap();
    w.write(&Record::Pmc(PmcDescriptor {
        time: 0,
        pmc_id: 0,
        event_spec: event.to_owned().into(),
        canonical_name: event.to_owned().into(),
        scope: Scope::Process,
        cpu: None,
        mode: Mode::SamplingPeriod(100_000),
        flags: pmc_log::record::FLAG_CALLCHAIN,
        native_config: "".into(),
    }))
    .unwrap();
    w.write(&Record::Comm(Comm {
        time: 1,
        pid: 42,
        tid: 42,
        exec: true,
        comm: comm.to_owned().into(),
    }))
    .unwrap();
    for (i, p) in paths.iter().enumerate() {
        w.write(&Record::Map(Map {
            time: 1,
            pid: 42,
            start: 0x1000_0000 + ((i as u64) << 20),
            len: 0x1000,
            pgoff: 0,
            build_id: Vec::new().into(),
            path: p.to_string_lossy().into_owned().into(),
        }))
        .unwrap();
    }
    for i in 0..paths.len() as u64 {
        for k in 0..100u64 {
            let base = 0x1000_0000 + (i << 20);
            w.write(&Record::Sample(Sample {
                time: 2,
                pmc_id: 0,
                pid: 42,
                tid: 42,
                cpu: Some(0),
                period: 100_000,
                callchain: Callchain::from_vec(vec![base + 0x10 + k, base + 0x800]),
                kernel_frames: 0,
                raw: Default::default(),
            }))
            .unwrap();
        }
    }
    w.finish().unwrap()
}

/// Maps naming `/dev/zero`, a FIFO (no writer: opening it to read would block forever) and a
/// 1 GiB sparse file: every report finishes, warns once per refused or unreadable object,
/// and stays under RSS_BOUND_KB.
#[test]
fn hostile_map_paths() {
    let name = "hostile_map_paths";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let dir = TempDir::new("faults-maps", 0o755).unwrap();
    let fifo = dir.0.join("fifo");
    let cpath = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(cpath.as_ptr(), 0o600) }, 0);
    let sparse = dir.0.join("sparse-1g");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let paths: [&Path; 3] = [Path::new("/dev/zero"), &fifo, &sparse];
    let log = dir.0.join("hostile.pmclog");
    std::fs::write(&log, hostile_log(&paths)).unwrap();
    let out = dir.0.join("report");
    let out_s = out.to_string_lossy().into_owned();
    for report in [
        vec!["--summary"],
        vec!["-G", &out_s],
        vec!["--folded", &out_s],
        vec!["--flamegraph", &out_s],
    ] {
        let mut cmd = Command::new(&p);
        cmd.arg("-R").arg(&log).args(&report);
        let ran = run_measured(cmd, &dir.0, |_| {});
        let warned = paths
            .iter()
            .filter(|q| {
                ran.stderr
                    .lines()
                    .any(|l| l.contains("warning") && l.contains(&*q.to_string_lossy()))
            })
            .count();
        let printed = !ran.stdout.is_empty() || std::fs::metadata(&out).is_ok_and(|m| m.len() > 0);
        pmc_testkit::row!(
            "FAULT {name} {}: injected=maps naming /dev/zero, a FIFO, a 1 GiB sparse file \
             expected=exit 0, 3 warnings, a report, rss < {RSS_BOUND_KB} kB recovered=exit {} \
             warnings={warned} report_written={printed} rss_peak_kb={}",
            report[0],
            ran.code,
            ran.rss_peak_kb
        );
        assert_eq!(ran.code, 0);
        assert_eq!(warned, 3, "one warning per refused object");
        assert!(printed, "no report");
        assert!(ran.rss_peak_kb < RSS_BOUND_KB, "RSS {} kB", ran.rss_peak_kb);
        let _ = std::fs::remove_file(&out);
    }

    // -R of a device: refused or streamed, never read into memory without bound.
    let mut cmd = Command::new(&p);
    cmd.args(["-R", "/dev/zero", "--summary"]);
    let ran = run_measured(cmd, &dir.0, |_| {});
    pmc_testkit::row!(
        "FAULT {name} -R /dev/zero: injected=a character device as the log expected=exit 1 with \
         a message, rss < {RSS_BOUND_KB} kB recovered=exit {} rss_peak_kb={}",
        ran.code,
        ran.rss_peak_kb
    );
    assert_eq!(ran.code, 1);
    assert!(ran.stderr.contains("/dev/zero"));
    assert!(ran.rss_peak_kb < RSS_BOUND_KB);

    // -R of a FIFO: streamed (a writer feeds it the log), not refused, not hung.
    let good = dir.0.join("good.pmclog");
    std::fs::write(&good, hostile_log(&[Path::new("/nonexistent/lib.so")])).unwrap();
    let writer = {
        let fifo = fifo.clone();
        let good = good.clone();
        std::thread::spawn(move || {
            use std::os::unix::fs::OpenOptionsExt;
            let data = std::fs::read(good).unwrap();
            // Wait (bounded) for pmcstat to open the FIFO for reading: a non-blocking open
            // for writing fails with ENXIO until a reader exists, and never hangs this test.
            let deadline = Instant::now() + WATCHDOG;
            let mut f = loop {
                match std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(&fifo)
                {
                    Ok(f) => break f,
                    Err(_) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(10))
                    }
                    Err(e) => panic!("pmcstat never opened the FIFO: {e}"),
                }
            };
            // Blocking writes from here (the reader drains as it parses).
            let fd = std::os::fd::AsRawFd::as_raw_fd(&f);
            // SAFETY: fcntl on a descriptor this closure owns.
            unsafe { libc::fcntl(fd, libc::F_SETFL, 0) };
            std::io::Write::write_all(&mut f, &data).unwrap();
        })
    };
    let mut cmd = Command::new(&p);
    cmd.arg("-R").arg(&fifo).args(["--summary"]);
    let ran = run_measured(cmd, &dir.0, |_| {});
    writer.join().unwrap();
    pmc_testkit::row!(
        "FAULT {name} -R FIFO: injected=a FIFO as the log expected=streamed, 100 samples \
         recovered=exit {} summary={} rss_peak_kb={}",
        ran.code,
        ran.stdout.contains("(100 samples)"),
        ran.rss_peak_kb
    );
    assert_eq!(ran.code, 0);
    assert!(ran.stdout.contains("(100 samples)"), "{}", ran.stdout);
}

/// Output errors: results to /dev/full are an error naming the file (exit 1), never exit 0
/// with the counts lost; a closed pipe ends quietly (by SIGPIPE, as perf), never a panic
/// (exit 101).
#[test]
fn output_errors() {
    let name = "output_errors";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let dir = TempDir::new("faults-out", 0o755).unwrap();
    let log = dir.0.join("ok.pmclog");
    std::fs::write(&log, hostile_log(&[Path::new("/nonexistent/lib.so")])).unwrap();
    let log_s = log.to_string_lossy().into_owned();
    for args in [
        vec!["-o", "/dev/full", "-p", "task-clock", "--", "true"],
        vec!["-R", &log_s, "-G", "/dev/full"],
        vec!["-R", &log_s, "--folded", "/dev/full"],
        vec!["-R", &log_s, "--flamegraph", "/dev/full"],
        vec!["-R", &log_s, "--summary", "-o", "/dev/full"],
    ] {
        let mut cmd = Command::new(&p);
        cmd.args(&args);
        let ran = run_measured(cmd, &dir.0, |_| {});
        let named = ran.stderr.contains("/dev/full") && ran.stderr.contains("No space left");
        pmc_testkit::row!(
            "FAULT {name} {}: injected=ENOSPC on every write expected=exit 1 naming /dev/full \
             recovered=exit {} message={named} rss_peak_kb={}",
            args.join(" "),
            ran.code,
            ran.rss_peak_kb
        );
        assert_eq!(ran.code, 1, "{args:?}");
        assert!(named, "{args:?}: {}", ran.stderr);
    }

    // EPIPE: `pmcstat -P ... 2>&1 | head -1`, and `pmcstat -R log | head -1`.
    for args in [
        vec![
            "-P",
            "cpu-clock",
            "--freq",
            "1000",
            "--",
            "sh",
            "-c",
            "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done",
        ],
        vec!["-R", &log_s],
        vec!["-p", "task-clock", "--", "true"],
    ] {
        let mut child = Command::new(&p)
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = [0u8; 1];
        // Read one byte of whichever stream the output goes to, then close both.
        let mut so = child.stdout.take().unwrap();
        let se = child.stderr.take().unwrap();
        drop(se);
        let _ = so.read(&mut first);
        drop(so);
        let st = child.wait().unwrap();
        let code = st.code().unwrap_or(-1);
        let signal = std::os::unix::process::ExitStatusExt::signal(&st);
        pmc_testkit::row!(
            "FAULT {name} EPIPE {}: injected=closed pipe on stdout and stderr expected=no panic \
             (exit != 101): killed by SIGPIPE as perf (issue 32), or exit 0 if nothing was \
             written after the close recovered=exit {code} signal={signal:?}",
            args[..2].join(" ")
        );
        assert_ne!(code, 101, "panicked on a closed pipe: {args:?}");
        assert!(
            code == 0 || signal == Some(libc::SIGPIPE),
            "{args:?}: exit {code}, signal {signal:?}"
        );
    }
}

/// A planted symlink cannot redirect -o, -O or -G; a failed start leaves no partial log.
#[test]
fn planted_links_and_failed_starts() {
    let name = "planted_links_and_failed_starts";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let dir = TempDir::new("faults-links", 0o755).unwrap();
    let victim = dir.0.join("victim");
    let link = dir.0.join("link");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let log = dir.0.join("ok.pmclog");
    std::fs::write(&log, hostile_log(&[Path::new("/nonexistent/lib.so")])).unwrap();
    let link_s = link.to_string_lossy().into_owned();
    let log_s = log.to_string_lossy().into_owned();
    for args in [
        vec!["-o", &link_s, "-p", "task-clock", "--", "true"],
        vec!["-P", "cpu-clock", "-O", &link_s, "--", "true"],
        vec!["-R", &log_s, "-G", &link_s],
    ] {
        std::fs::write(&victim, b"precious").unwrap();
        let mut cmd = Command::new(&p);
        cmd.args(&args);
        let ran = run_measured(cmd, &dir.0, |_| {});
        let intact = std::fs::read(&victim).unwrap() == b"precious";
        pmc_testkit::row!(
            "FAULT {name} {}: injected=symlink to another file expected=refused (exit 1), \
             target intact recovered=exit {} intact={intact} rss_peak_kb={}",
            args[..2].join(" "),
            ran.code,
            ran.rss_peak_kb
        );
        assert_eq!(ran.code, 1, "{args:?}");
        assert!(intact, "{args:?} wrote through the link");
        assert!(ran.stderr.contains("symbolic link"), "{}", ran.stderr);
    }

    // Failed starts: the -O log is removed, not left unclosed.
    let out = dir.0.join("failed.pmclog");
    let out_s = out.to_string_lossy().into_owned();
    let noexec = dir.0.join("noexec.sh");
    std::fs::write(&noexec, "#!/bin/sh\n").unwrap();
    let noexec_s = noexec.to_string_lossy().into_owned();
    for (what, cmdline, status) in [
        ("command not found", "/nonexistent/command", 127),
        ("permission denied", noexec_s.as_str(), 126),
    ] {
        let mut cmd = Command::new(&p);
        cmd.args(["-P", "cpu-clock", "-O", &out_s, "--", cmdline]);
        let ran = run_measured(cmd, &dir.0, |_| {});
        let left = out.exists();
        pmc_testkit::row!(
            "FAULT {name} {what}: injected=exec failure expected=exit {status}, no log left \
             recovered=exit {} log_left={left} rss_peak_kb={}",
            ran.code,
            ran.rss_peak_kb
        );
        assert_eq!(ran.code, status);
        assert!(!left, "a failed start left {}", out.display());
    }
}

/// Commands that die at once: killed by SIGKILL (exit 137, counts still printed), or that
/// cannot be run (the shell's 127 or 126, with a message).
#[test]
fn command_dies_at_once() {
    let name = "command_dies_at_once";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let dir = TempDir::new("faults-die", 0o755).unwrap();
    let mut cmd = Command::new(&p);
    cmd.args(["-p", "task-clock", "--", "sh", "-c", "kill -9 $$"]);
    let ran = run_measured(cmd, &dir.0, |_| {});
    let printed = ran.stderr.contains("Performance counter stats");
    pmc_testkit::row!(
        "FAULT {name} kill-9: injected=the command SIGKILLs itself expected=exit 137, counts \
         printed recovered=exit {} counts_printed={printed} rss_peak_kb={}",
        ran.code,
        ran.rss_peak_kb
    );
    assert_eq!(ran.code, 137);
    assert!(printed);

    // Issue 32 item 9: a command that cannot be run exits as the shell does for it (127 not
    // found, 126 not executable), counting (-p) and sampling (-P) alike; the shell is the
    // oracle.
    let noexec = dir.0.join("not-executable");
    std::fs::write(&noexec, "#!/bin/sh\n").unwrap();
    let noexec = noexec.to_str().unwrap().to_owned();
    for (what, prog) in [
        ("missing", "/nonexistent/command"),
        ("not-on-path", "pmc-no-such-command"),
        ("not-executable", noexec.as_str()),
        ("directory", "/"),
    ] {
        let shell = Command::new("sh")
            .args(["-c", &format!("exec {prog}")])
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .code();
        for mode in ["-p", "-P"] {
            let mut cmd = Command::new(&p);
            cmd.args([mode, "task-clock", "--", prog]);
            let ran = run_measured(cmd, &dir.0, |_| {});
            pmc_testkit::row!(
                "FAULT {name} {what}{mode}: injected={prog} expected=exit {shell:?} (sh's) with \
                 a message recovered=exit {} rss_peak_kb={}",
                ran.code,
                ran.rss_peak_kb
            );
            assert!(matches!(shell, Some(126 | 127)), "sh: {shell:?}");
            assert_eq!(Some(ran.code), shell, "{what} {mode}");
            assert!(ran.stderr.contains(prog), "{}", ran.stderr);
            assert!(!ran.stderr.contains("panicked"));
        }
    }
}

/// Issue 32 item 8: `-R` with an option that measures (`-O`, a PMC, `-t`, `-l`, a command)
/// is a usage error, as pmcstat(8) refuses `-O` with `-R`: exit 2, no log written, the
/// command never run. Before, `-R` ignored them and exited 0.
#[test]
fn read_log_refuses_measuring_options() {
    let name = "read_log_refuses_measuring_options";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let dir = TempDir::new("faults-r-usage", 0o755).unwrap();
    let log = dir.0.join("in.pmclog");
    std::fs::write(&log, hostile_log(&[Path::new("/nonexistent/lib.so")])).unwrap();
    let out = dir.0.join("out.pmclog");
    let ran_marker = dir.0.join("ran");
    let (out_s, marker_s) = (s(&out), s(&ran_marker));
    let touch = ["--", "touch", marker_s.as_str()];
    for extra in [
        &["-O", out_s.as_str()][..],
        &["-P", "cpu-clock"],
        &["-S", "cpu-clock"],
        &["-p", "task-clock"],
        &["-s", "task-clock"],
        &["-t", "1"],
        &["-l", "1"],
        &touch,
        &["-G", "-", "--", "touch", marker_s.as_str()],
    ] {
        let mut cmd = Command::new(&p);
        cmd.arg("-R").arg(&log).args(extra);
        let ran = run_measured(cmd, &dir.0, |_| {});
        let (written, run) = (out.exists(), ran_marker.exists());
        pmc_testkit::row!(
            "FAULT {name} {}: injected=-R with a measuring option expected=exit 2, nothing \
             written or run recovered=exit {} log_written={written} command_run={run}",
            extra.join(" "),
            ran.code
        );
        assert_eq!(ran.code, 2, "{extra:?}: {}", ran.stderr);
        assert!(ran.stderr.contains("-R"), "{}", ran.stderr);
        assert!(!written && !run, "{extra:?}");
    }
}

/// The first cgroup2 mount point (`/proc/self/mountinfo`).
fn cgroup2_mount() -> Option<std::path::PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        let point = left.split(' ').nth(4)?;
        (right.split(' ').next()? == "cgroup2").then(|| std::path::PathBuf::from(point))
    })
}

/// Issue 32 item 10: `-x SEP` rows keep their shape whatever a name holds: a cgroup named
/// `au3"x,y;z` (a comma, a quote, a semicolon) gives perf's 11 cells with `-x ,`, in the
/// total, interval (12 with the time) and `-r` rows, as Python's csv module reads them (the
/// oracle); an empty separator or a line break in it is refused (exit 2). Before: 12
/// cells, and `-x ''` ran the cells together.
#[test]
fn csv_cells_keep_their_rows() {
    let name = "csv_cells_keep_their_rows";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    for sep in ["", "\n", ";\r\n"] {
        let out = Command::new(&p)
            .args(["-x", sep, "-p", "task-clock", "--", "true"])
            .output()
            .unwrap();
        let code = out.status.code();
        pmc_testkit::row!(
            "FAULT {name} -x {sep:?}: injected=a separator that cannot separate rows \
             expected=exit 2 recovered=exit {code:?}"
        );
        assert_eq!(code, Some(2), "-x {sep:?}");
    }
    if !pmc_testkit::cli::works("python3", &["-c", "import csv"]) {
        pmc_testkit::skip!(name = name, "no python3 (its csv module counts the cells)");
        return;
    }
    // SAFETY: geteuid has no preconditions.
    let Some(root) = cgroup2_mount().filter(|_| unsafe { libc::geteuid() } == 0) else {
        pmc_testkit::skip!(
            name = name,
            "needs root and a cgroup2 mount to make a cgroup"
        );
        return;
    };
    // A comma, a quote, a semicolon, and (issue 32 item 12) a screen clear.
    let cg = format!("pmc-faults-au3\"x,y;z\u{1b}[2J-{}", std::process::id());
    let dir = root.join(&cg);
    std::fs::create_dir(&dir).unwrap();
    let runs: [(&str, &[&str], usize); 3] = [
        ("total", &["-l", "0.05"], 11),
        ("interval", &["-w", "0.05", "-l", "0.12"], 12),
        ("repeat", &["-r", "2", "--", "true"], 11),
    ];
    let mut failed = Vec::new();
    for (what, args, want) in runs {
        let out = Command::new(&p)
            .args(["-x", ",", "-s", "task-clock", "--cgroup", &cg])
            .args(args)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stderr).into_owned();
        let rows: Vec<&str> = text.lines().filter(|l| l.contains("task-clock")).collect();
        let py = Command::new("python3")
            .args([
                "-c",
                "import csv,sys; print(' '.join(str(len(r)) for r in csv.reader(sys.stdin)))",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write as _;
                c.stdin
                    .take()
                    .unwrap()
                    .write_all(rows.join("\n").as_bytes())?;
                c.wait_with_output()
            })
            .unwrap();
        let cells = String::from_utf8_lossy(&py.stdout).trim().to_owned();
        pmc_testkit::row!(
            "FAULT {name} {what}: injected=cgroup {cg:?} with -x , expected={want} cells a row \
             recovered=rows {} cells [{cells}]",
            rows.len()
        );
        let ok = !rows.is_empty() && cells.split(' ').all(|n| n == want.to_string());
        if !ok {
            failed.push(format!("{what}: {text}"));
        }
    }
    // The table and pmcstat(8)'s columns name the cgroup too: escaped.
    for args in [
        &["-l", "0.05"][..],
        &["--columns", "-w", "0.05", "-l", "0.06"],
    ] {
        let out = Command::new(&p)
            .args(["-s", "task-clock", "--cgroup", &cg])
            .args(args)
            .output()
            .unwrap();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let raw = all.contains('\u{1b}');
        pmc_testkit::row!(
            "FAULT {name} {}: injected=ESC in a cgroup name expected=escaped \
             recovered=exit {:?} raw_controls={raw}",
            args[0],
            out.status.code()
        );
        if raw || !out.status.success() {
            failed.push(format!("{args:?}: {all}"));
        }
    }
    let _ = std::fs::remove_dir(&dir);
    assert!(failed.is_empty(), "{failed:#?}");
}

/// A path as a `String` for an argument list.
fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// EMFILE: with RLIMIT_NOFILE lowered in the child, pmcstat either works or says why, and
/// never panics.
#[test]
fn emfile() {
    let name = "emfile";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let dir = TempDir::new("faults-emfile", 0o755).unwrap();
    let mut errors = 0;
    let mut oks = 0;
    let mut peak = 0;
    for limit in [4u64, 5, 6, 8, 10, 12, 16] {
        let mut cmd = Command::new(&p);
        cmd.args(["-p", "task-clock", "-p", "page-faults", "--", "true"]);
        // SAFETY: setrlimit is async-signal-safe; the value is computed before the fork.
        unsafe {
            cmd.pre_exec(move || {
                let r = libc::rlimit {
                    rlim_cur: limit,
                    rlim_max: limit,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &r) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let ran = run_measured(cmd, &dir.0, |_| {});
        peak = peak.max(ran.rss_peak_kb);
        assert!(!ran.stderr.contains("panicked"), "limit {limit}: panic");
        match ran.code {
            0 => oks += 1,
            1 => {
                errors += 1;
                assert!(
                    ran.stderr.lines().any(|l| l.starts_with("pmcstat: ")),
                    "limit {limit}: no message"
                );
            }
            c => panic!("limit {limit}: exit {c}"),
        }
    }
    pmc_testkit::row!(
        "FAULT {name}: injected=RLIMIT_NOFILE 4..16 expected=exit 0 or exit 1 with a message, \
         no panic recovered=ok {oks}, clear errors {errors} rss_peak_kb={peak}"
    );
    assert!(errors > 0, "the low limits should have failed somewhere");
}

/// `pmcstat: N samples (M lost) of ...` from a sampling run's summary.
fn samples_and_lost(stderr: &str) -> Option<(u64, u64)> {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("pmcstat: ") && l.contains(" samples ("))?;
    let mut words = line.split_whitespace().skip(1);
    let samples = words.next()?.parse().ok()?;
    let lost = words.nth(1)?.strip_prefix('(')?.parse().ok()?;
    Some((samples, lost))
}

/// The command of the lost-sample runs: writes its pid to `ready`, then uses `ms` of CPU time
/// (so the samples a run should take do not depend on the machine's load).
fn spin_command(ready: &Path, ms: u64) -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        format!(
            "echo $$ > {}; exec {} spin-cpu-ms {ms}",
            ready.display(),
            env!("CARGO_BIN_EXE_pmc-workload")
        ),
    ]
}

/// Waits (bounded by the watchdog) until process `pid` has exited (a zombie or reaped).
fn wait_exited(pid: i32) {
    let deadline = Instant::now() + WATCHDOG;
    while alive(pid) {
        assert!(Instant::now() < deadline, "the command never ended");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The same command sampled into a file: samples + lost, the reference for the runs below.
fn reference_run(p: &Path, dir: &Path, ms: u64) -> u64 {
    let ready = dir.join("ready-ref");
    let mut cmd = Command::new(p);
    cmd.args(["-P", "cpu-clock", "-O"])
        .arg(dir.join("ref.pmclog"))
        .arg("--")
        .args(spin_command(&ready, ms));
    let ran = run_measured(cmd, dir, |_| {});
    let (s, l) = samples_and_lost(&ran.stderr).expect("a summary line");
    assert_eq!(ran.code, lost_status(l), "{}", ran.stderr);
    s + l
}

/// pmcstat's exit status after a command that exited 0: 3 if `lost` samples were lost.
fn lost_status(lost: u64) -> i32 {
    if lost > 0 {
        3
    } else {
        0
    }
}

/// Issue 21: `-O -` read only after the command ended. Before, the drain thread waited on the
/// full pipe, the rings overflowed and the kernel's losses were never reported:
/// `4751 samples (0 lost)` where a file got 149,204. Now the drain spools the log in memory
/// (within its bound, nothing is lost), and whatever is lost is counted: samples + lost is
/// the file run's, within a wide band. Exit status: 3 when samples were lost (before: 0, the
/// command's, whatever was lost), else the command's 0.
#[test]
fn samples_lost_while_the_log_reader_is_late() {
    let name = "samples_lost_while_the_log_reader_is_late";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let dir = TempDir::new("faults-late-reader", 0o755).unwrap();
    // 16,000 samples at 4000 Hz: far more than the rings and the pipe hold (about 6,000).
    let ms = 4000;
    let reference = reference_run(&p, &dir.0, ms);
    let ready = dir.0.join("ready");
    let err = dir.0.join("err");
    let mut child = Command::new(&p)
        .args(["-P", "cpu-clock", "-O", "-", "--"])
        .args(spin_command(&ready, ms))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("spawn");
    let pid = child.id();
    let mut out = child.stdout.take().expect("stdout");
    // The late reader: nothing is read until the command has ended.
    let target = wait_ready(&ready);
    wait_exited(target);
    let mut log = Vec::new();
    out.read_to_end(&mut log).expect("read the log");
    let deadline = Instant::now() + WATCHDOG;
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() > deadline {
            // SAFETY: kill has no memory preconditions.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            panic!("pmcstat hung after its log was read");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = std::fs::read_to_string(&err).unwrap_or_default();
    eprintln!("{stderr}");
    let (samples, lost) = samples_and_lost(&stderr).expect("a summary line");
    let logged = pmc_log::Reader::new(&log)
        .map(|r| {
            r.records()
                .filter(|r| matches!(r, Record::Sample(_)))
                .count() as u64
        })
        .unwrap_or(0);
    pmc_testkit::row!(
        "FAULT {name}: injected=-O - read only after the command ended expected=exit 3 if any \
         lost else 0, samples + lost within [1/2, 2] of the file run's {reference} \
         recovered=exit {} samples={samples} lost={lost} in_log={logged}",
        status.code().unwrap_or(-1)
    );
    assert_eq!(status.code(), Some(lost_status(lost)), "{stderr}");
    let total = samples + lost;
    assert!(
        total * 2 >= reference && total <= reference * 2,
        "{samples} samples + {lost} lost against {reference} in a file"
    );
    // What the log holds is what the summary says was written (plus what it says was lost).
    assert!(
        logged <= samples && logged + lost >= samples.min(total),
        "{logged} in the log"
    );
}

/// Issue 21: pmcstat stopped (SIGSTOP) for the whole run, continued after the command ended.
/// Its drain was stopped too, so the rings overflowed with no `PERF_RECORD_LOST` after; the
/// kernel's count (PERF_FORMAT_LOST) is read at the end. Before: `11,235 samples (0 lost)` of
/// ~75,000. Now: some lost, samples + lost within a wide band of the file run's, and the
/// summary says why. Exit status: 3, samples lost (before: 0, the command's), and the summary
/// says so.
#[test]
fn samples_lost_while_pmcstat_is_stopped() {
    let name = "samples_lost_while_pmcstat_is_stopped";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let dir = TempDir::new("faults-sigstop", 0o755).unwrap();
    // 12,000 samples at 4000 Hz: more than the rings hold (about 3,000 each, one per CPU).
    let ms = 3000;
    let reference = reference_run(&p, &dir.0, ms);
    let ready = dir.0.join("ready");
    let mut cmd = Command::new(&p);
    cmd.args(["-P", "cpu-clock", "-O"])
        .arg(dir.0.join("stopped.pmclog"))
        .arg("--")
        .args(spin_command(&ready, ms));
    let ran = run_measured(cmd, &dir.0, |pid| {
        let target = wait_ready(&ready);
        // SAFETY: kill has no memory preconditions.
        unsafe { libc::kill(pid as i32, libc::SIGSTOP) };
        wait_exited(target);
        // SAFETY: as above.
        unsafe { libc::kill(pid as i32, libc::SIGCONT) };
    });
    let (samples, lost) = samples_and_lost(&ran.stderr).expect("a summary line");
    let why = ran.stderr.contains("could not drain");
    pmc_testkit::row!(
        "FAULT {name}: injected=SIGSTOP from the command's start to its end expected=exit 3, \
         lost>0, samples + lost within [1/2, 2] of the file run's {reference}, the reason \
         printed recovered=exit {} samples={samples} lost={lost} reason={why} rss_peak_kb={}",
        ran.code,
        ran.rss_peak_kb
    );
    assert_eq!(ran.code, 3, "{}", ran.stderr);
    assert!(ran.stderr.contains("exit status 3"), "{}", ran.stderr);
    assert!(lost > 0, "nothing counted as lost: {}", ran.stderr);
    let total = samples + lost;
    assert!(
        total * 2 >= reference && total <= reference * 2,
        "{samples} samples + {lost} lost against {reference} in a file"
    );
    assert!(why, "{}", ran.stderr);
}

/// A log recorded here (`-P cpu-clock` on a shell loop): real objects, so `-g` writes gmon
/// files (`cpu-clock/dash.gmon`, `cpu-clock/libc.so.6.gmon`, ...).
fn recorded_log(p: &Path, dir: &Path) -> std::path::PathBuf {
    let log = dir.join("recorded.pmclog");
    let st = Command::new(p)
        .args(["-q", "-P", "cpu-clock", "--freq", "2000", "-O"])
        .arg(&log)
        .args([
            "--",
            "sh",
            "-c",
            "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done",
        ])
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "recording the test log failed: {st:?}");
    log
}

/// Issue 21 item 5: an output that is the input log (by name, or by a hard link) is
/// refused and the log is left as it was; before, `--perf-data` died of SIGBUS leaving it
/// at 0 bytes and every other report replaced it and exited 0.
#[test]
fn outputs_never_replace_the_log() {
    let name = "outputs_never_replace_the_log";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let dir = TempDir::new("faults-same", 0o755).unwrap();
    let good = std::fs::read(recorded_log(&p, &dir.0)).unwrap();
    let log = dir.0.join("in.pmclog");
    let hard = dir.0.join("hard.pmclog");
    let (log_s, hard_s) = (
        log.to_string_lossy().into_owned(),
        hard.to_string_lossy().into_owned(),
    );
    for (flag, out) in [
        ("--perf-data", &log_s),
        ("-G", &log_s),
        ("-F", &log_s),
        ("--pprof", &log_s),
        ("--flamegraph", &log_s),
        ("--folded", &log_s),
        ("-m", &log_s),
        ("-a", &log_s),
        ("-o", &log_s),
        ("-G", &hard_s),
    ] {
        std::fs::write(&log, &good).unwrap();
        let _ = std::fs::remove_file(&hard);
        std::fs::hard_link(&log, &hard).unwrap();
        let mut cmd = Command::new(&p);
        cmd.arg("-R").arg(&log).args([flag, out.as_str()]);
        if flag == "-o" {
            cmd.arg("--summary");
        }
        let ran = run_measured(cmd, &dir.0, |_| {});
        let intact = std::fs::read(&log).is_ok_and(|b| b == good);
        let which = if out == &hard_s {
            "hard link"
        } else {
            "same path"
        };
        pmc_testkit::row!(
            "FAULT {name} {flag} ({which}): injected=output = the -R log expected=exit 1, log \
             intact recovered=exit {} intact={intact} rss_peak_kb={}",
            ran.code,
            ran.rss_peak_kb
        );
        assert_eq!(ran.code, 1, "{flag} {out}");
        assert!(intact, "{flag} {out}: the log was overwritten");
        assert!(ran.stderr.contains("log being read"), "{}", ran.stderr);
    }
}

/// Issue 21 item 5: a failed export (here `RLIMIT_FSIZE`, as a full disk: EFBIG) leaves no
/// partial file and keeps the previous one; before, the previous file was truncated and a
/// partial one left.
#[test]
fn failed_exports_keep_the_previous_file() {
    let name = "failed_exports_keep_the_previous_file";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let dir = TempDir::new("faults-partial", 0o755).unwrap();
    let log = recorded_log(&p, &dir.0);
    let out = dir.0.join("out");
    let out_s = out.to_string_lossy().into_owned();
    for flag in [
        "--perf-data",
        "-G",
        "-F",
        "--pprof",
        "--flamegraph",
        "--folded",
        "-m",
        "-a",
        "-o",
    ] {
        std::fs::write(&out, b"previous good report").unwrap();
        let mut cmd = Command::new(&p);
        cmd.arg("-R").arg(&log).args([flag, &out_s]);
        if flag == "-o" {
            cmd.arg("--summary");
        }
        // SAFETY: signal and setrlimit are async-signal-safe. SIGXFSZ ignored: the write
        // fails with EFBIG instead of killing pmcstat.
        unsafe {
            cmd.pre_exec(|| {
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                let r = libc::rlimit {
                    rlim_cur: 64,
                    rlim_max: 64,
                };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &r) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let ran = run_measured(cmd, &dir.0, |_| {});
        let kept = std::fs::read(&out).is_ok_and(|b| b == b"previous good report");
        let leftovers: Vec<String> = std::fs::read_dir(&dir.0)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        pmc_testkit::row!(
            "FAULT {name} {flag}: injected=EFBIG after 64 bytes expected=exit 1, previous file \
             kept, no temporary left recovered=exit {} kept={kept} leftovers={} rss_peak_kb={}",
            ran.code,
            leftovers.len(),
            ran.rss_peak_kb
        );
        assert_eq!(ran.code, 1, "{flag}");
        assert!(kept, "{flag}: the previous file was damaged");
        assert!(leftovers.is_empty(), "{flag}: left {leftovers:?}");
    }
}

/// Issue 21 item 3: every writer refuses a planted link, the `-g -D` tree included (a link
/// as the PMC's directory or as a gmon file); before, `-g` wrote through both.
#[test]
fn planted_links_every_writer() {
    let name = "planted_links_every_writer";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let dir = TempDir::new("faults-links-all", 0o755).unwrap();
    let log = recorded_log(&p, &dir.0);
    let victim = dir.0.join("victim");
    let link = dir.0.join("link");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let link_s = link.to_string_lossy().into_owned();
    for flag in [
        "--perf-data",
        "-F",
        "--pprof",
        "--flamegraph",
        "--folded",
        "-m",
        "-a",
        "--script",
    ] {
        std::fs::write(&victim, b"precious").unwrap();
        let mut cmd = Command::new(&p);
        cmd.arg("-R").arg(&log);
        if flag == "--script" {
            cmd.args([flag, "-o", &link_s]);
        } else {
            cmd.args([flag, &link_s]);
        }
        let ran = run_measured(cmd, &dir.0, |_| {});
        let intact = std::fs::read(&victim).unwrap() == b"precious";
        pmc_testkit::row!(
            "FAULT {name} {flag}: injected=symlink to another file expected=refused (exit 1), \
             target intact recovered=exit {} intact={intact} rss_peak_kb={}",
            ran.code,
            ran.rss_peak_kb
        );
        assert_eq!(ran.code, 1, "{flag}");
        assert!(intact, "{flag} wrote through the link");
        assert!(ran.stderr.contains("symbolic link"), "{}", ran.stderr);
    }

    // -g -D: the gmon tree. A link as the PMC's directory, then as a gmon file.
    let samples = dir.0.join("samples");
    let elsewhere = dir.0.join("elsewhere");
    for case in ["directory", "file"] {
        let _ = std::fs::remove_dir_all(&samples);
        let _ = std::fs::remove_dir_all(&elsewhere);
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(&victim, b"precious").unwrap();
        if case == "directory" {
            std::fs::create_dir_all(&samples).unwrap();
            std::os::unix::fs::symlink(&elsewhere, samples.join("cpu-clock")).unwrap();
        } else {
            std::fs::create_dir_all(samples.join("cpu-clock")).unwrap();
            for obj in ["dash.gmon", "libc.so.6.gmon", "sh.gmon", "bash.gmon"] {
                std::os::unix::fs::symlink(&victim, samples.join("cpu-clock").join(obj)).unwrap();
            }
        }
        let mut cmd = Command::new(&p);
        cmd.arg("-R").arg(&log).arg("-g").arg("-D").arg(&samples);
        let ran = run_measured(cmd, &dir.0, |_| {});
        let intact = std::fs::read(&victim).unwrap() == b"precious";
        let written_elsewhere = std::fs::read_dir(&elsewhere).unwrap().count();
        pmc_testkit::row!(
            "FAULT {name} -g -D ({case} link): injected=symlink in the gmon tree \
             expected=refused, nothing written through it recovered=exit {} intact={intact} \
             files_through_link={written_elsewhere} rss_peak_kb={}",
            ran.code,
            ran.rss_peak_kb
        );
        assert!(intact, "-g wrote through a file link");
        assert_eq!(written_elsewhere, 0, "-g wrote through a directory link");
        assert!(ran.stderr.contains("symbolic link"), "{}", ran.stderr);
    }
}

/// Issue 21 item 8: a second run recording into the `-O` file of a running one is refused
/// with a message, and the first one's log reads back clean; before, both claimed success
/// and part of the samples were unreadable.
#[test]
fn second_recorder_is_refused() {
    let name = "second_recorder_is_refused";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let dir = TempDir::new("faults-lock", 0o755).unwrap();
    let log = dir.0.join("shared.pmclog");
    let ready = dir.0.join("ready");
    let go = dir.0.join("go");
    let script = format!(
        "echo $$ > {}; while [ ! -e {} ]; do i=0; while [ $i -lt 2000 ]; do i=$((i+1)); done; \
         done",
        ready.display(),
        go.display()
    );
    let mut first = Command::new(&p)
        .args(["-q", "-P", "cpu-clock", "--freq", "1000", "-O"])
        .arg(&log)
        .args(["--", "sh", "-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_ready(&ready);
    let mut cmd = Command::new(&p);
    cmd.args(["-P", "cpu-clock", "--freq", "1000", "-O"])
        .arg(&log)
        .args([
            "--",
            "sh",
            "-c",
            "i=0; while [ $i -lt 50000 ]; do i=$((i+1)); done",
        ]);
    let second = run_measured(cmd, &dir.0, |_| {});
    std::fs::write(&go, b"").unwrap();
    let first_code = first.wait().unwrap().code().unwrap_or(-1);
    let out = Command::new(&p).arg("-R").arg(&log).output().unwrap();
    let damaged = String::from_utf8_lossy(&out.stderr).into_owned();
    let clean =
        out.status.success() && !damaged.contains("skipped") && !damaged.contains("damaged");
    pmc_testkit::row!(
        "FAULT {name}: injected=a second pmcstat -O on the same file expected=second exit 1 \
         with a message, first exit 0, log clean recovered=second exit {} first exit \
         {first_code} clean={clean} rss_peak_kb={}",
        second.code,
        second.rss_peak_kb
    );
    assert_eq!(second.code, 1, "the second recorder was not refused");
    assert!(
        second.stderr.contains("recording into it"),
        "{}",
        second.stderr
    );
    assert_eq!(first_code, 0);
    assert!(clean, "{damaged}");
}

/// Issue 32 item 2 (root, with `nobody` for real): in a sticky directory everyone may write
/// to, a file and a FIFO that `nobody` made are neither written into nor replaced by root's
/// `-O`, `-o`, `-G` (nobody's file keeps its bytes and owner; nobody's reader of the FIFO
/// gets nothing), and root's new outputs there are 0600. Before: `-O` wrote root's
/// recording into nobody's file, `-G` streamed the call graph to nobody's reader, `-o` left
/// a 0644 file.
#[test]
fn another_users_files_in_a_shared_directory() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let name = "another_users_files_in_a_shared_directory";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        pmc_testkit::skip!(
            name = name,
            "needs root (to be the victim, and to become nobody)"
        );
        return;
    }
    let dir = TempDir::new("faults-sticky", 0o1777).unwrap();
    let log = dir.0.join("in.pmclog");
    std::fs::write(&log, hostile_log(&[Path::new("/nonexistent/lib.so")])).unwrap();
    let (planted, fifo) = (dir.0.join("planted"), dir.0.join("fifo"));
    let mut mk = Command::new("sh");
    mk.arg("-c").arg(format!(
        "echo nobody > '{}' && mkfifo -m 666 '{}'",
        planted.display(),
        fifo.display()
    ));
    pmc_testkit::cli::as_user(&mut mk, 65534, 65534);
    assert!(mk.status().unwrap().success(), "nobody could not plant");
    let log_s = s(&log);
    let (planted_s, fifo_s) = (s(&planted), s(&fifo));
    let cases: [(&str, Vec<&str>, &str); 5] = [
        (
            "-O file",
            vec!["-P", "cpu-clock", "-O", &planted_s, "--", "true"],
            "file",
        ),
        (
            "-o file",
            vec!["-p", "task-clock", "-o", &planted_s, "--", "true"],
            "file",
        ),
        ("-G file", vec!["-R", &log_s, "-G", &planted_s], "file"),
        ("-G FIFO", vec!["-R", &log_s, "-G", &fifo_s], "fifo"),
        (
            "-O FIFO",
            vec!["-P", "cpu-clock", "-O", &fifo_s, "--", "true"],
            "fifo",
        ),
    ];
    let mut failed = Vec::new();
    for (what, args, target) in cases {
        // nobody reads the FIFO (for 20 s at most) into a file of its own.
        let got = dir.0.join("got");
        let _ = std::fs::remove_file(&got);
        let reader = (target == "fifo").then(|| {
            let mut r = Command::new("sh");
            r.arg("-c").arg(format!(
                "exec timeout 20 cat '{}' > '{}'",
                fifo.display(),
                got.display()
            ));
            pmc_testkit::cli::as_user(&mut r, 65534, 65534);
            r.spawn().unwrap()
        });
        let mut cmd = Command::new(&p);
        cmd.args(&args);
        let ran = run_measured(cmd, &dir.0, |_| {});
        if let Some(mut r) = reader {
            // Release a reader still waiting for a writer (pmcstat never opened the FIFO).
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&fifo);
            let _ = r.wait();
        }
        let leaked = match target {
            "fifo" => std::fs::metadata(&got).map_or(0, |m| m.len()),
            _ => {
                let m = std::fs::metadata(&planted).unwrap();
                let same = std::fs::read(&planted).unwrap() == b"nobody\n" && m.uid() == 65534;
                u64::from(!same)
            }
        };
        pmc_testkit::row!(
            "FAULT {name} {what}: injected=nobody's {target} in a 1777 directory expected=exit \
             1, nothing written or replaced recovered=exit {} leaked_bytes_or_replaced={leaked}",
            ran.code
        );
        if ran.code != 1 || leaked != 0 || !ran.stderr.contains("another user") {
            failed.push(format!(
                "{what}: exit {} leaked={leaked}: {}",
                ran.code, ran.stderr
            ));
        }
    }
    // Root's own outputs there: 0600, whatever the umask.
    let mine = dir.0.join("counts");
    let ran = Command::new(&p)
        .args(["-p", "task-clock", "-o", &s(&mine), "--", "true"])
        .output()
        .unwrap();
    let mode = std::fs::metadata(&mine).map_or(0, |m| m.permissions().mode() & 0o777);
    pmc_testkit::row!(
        "FAULT {name} new -o: injected=root's output in a 1777 directory expected=0600 \
         recovered=exit {:?} mode={mode:o}",
        ran.status.code()
    );
    assert!(failed.is_empty(), "{failed:#?}");
    assert_eq!(mode, 0o600);
}

/// Issue 32 item 3: the output's directory is resolved once and the last link is not
/// followed, whatever the spelling: `-O /dev/shm/NAME` with NAME a link, `-G /dev/../DIR/out`
/// with `out` a link, are refused and the links' target is intact. Before: both wrote
/// through the link (the `/dev/` prefix was taken for the system's own links).
#[test]
fn planted_links_behind_dev() {
    let name = "planted_links_behind_dev";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let dir = TempDir::new("faults-dev-links", 0o755).unwrap();
    let log = dir.0.join("in.pmclog");
    std::fs::write(&log, hostile_log(&[Path::new("/nonexistent/lib.so")])).unwrap();
    let victim = dir.0.join("victim");
    let out = dir.0.join("out");
    std::os::unix::fs::symlink(&victim, &out).unwrap();
    let dotdot = Path::new("/dev/..")
        .join(dir.0.strip_prefix("/").unwrap())
        .join("out");
    let shm = Path::new("/dev/shm").join(format!("pmc-faults-{}", std::process::id()));
    let mut cases = vec![(
        "-G /dev/../DIR/out",
        vec!["-R".to_owned(), s(&log), "-G".into(), s(&dotdot)],
    )];
    if Path::new("/dev/shm").is_dir() {
        let _ = std::fs::remove_file(&shm);
        std::os::unix::fs::symlink(&victim, &shm).unwrap();
        cases.push((
            "-O /dev/shm/NAME",
            vec![
                "-P".into(),
                "cpu-clock".into(),
                "-O".into(),
                s(&shm),
                "--".into(),
                "true".into(),
            ],
        ));
        cases.push((
            "-G /dev/shm/NAME",
            vec!["-R".into(), s(&log), "-G".into(), s(&shm)],
        ));
    }
    let mut failed = Vec::new();
    for (what, args) in cases {
        std::fs::write(&victim, b"precious").unwrap();
        let mut cmd = Command::new(&p);
        cmd.args(&args);
        let ran = run_measured(cmd, &dir.0, |_| {});
        let intact = std::fs::read(&victim).unwrap() == b"precious";
        pmc_testkit::row!(
            "FAULT {name} {what}: injected=a link at the output's name expected=exit 1, \
             target intact recovered=exit {} intact={intact}",
            ran.code
        );
        if ran.code != 1 || !intact || !ran.stderr.contains("symbolic link") {
            failed.push(format!(
                "{what}: exit {} intact={intact}: {}",
                ran.code, ran.stderr
            ));
        }
    }
    let _ = std::fs::remove_file(&shm);
    // The system's own links are still followed.
    let ran = Command::new(&p)
        .arg("-R")
        .arg(&log)
        .args(["-G", "/dev/stdout"])
        .output()
        .unwrap();
    assert!(
        ran.status.success() && !ran.stdout.is_empty(),
        "-G /dev/stdout: {ran:?}"
    );
    assert!(failed.is_empty(), "{failed:#?}");
}

/// Issue 32 item 4: an export naming a log another pmcstat is recording (`-G`, `-o`,
/// `--perf-data`) is refused (the recorder's lock covers its name), and the recorder's log
/// is still the file under that name, read back clean. Before: the export renamed over it
/// and the recorder went on writing into the unlinked inode, reporting "written to".
#[test]
fn exports_never_replace_a_live_log() {
    use std::os::unix::fs::MetadataExt;
    let name = "exports_never_replace_a_live_log";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let dir = TempDir::new("faults-live-log", 0o755).unwrap();
    let other = dir.0.join("other.pmclog");
    std::fs::write(&other, hostile_log(&[Path::new("/nonexistent/lib.so")])).unwrap();
    let rec = dir.0.join("rec.pmclog");
    let (ready, go) = (dir.0.join("ready"), dir.0.join("go"));
    let script = format!(
        "echo $$ > '{}'; while [ ! -e '{}' ]; do sleep 0.05; done",
        ready.display(),
        go.display()
    );
    let mut recorder = Command::new(&p)
        .args(["-q", "-P", "cpu-clock", "-O"])
        .arg(&rec)
        .args(["--", "sh", "-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_ready(&ready);
    let ino = std::fs::metadata(&rec).unwrap().ino();
    let rec_s = s(&rec);
    let mut failed = Vec::new();
    for flag in ["-G", "-o", "--perf-data"] {
        let mut cmd = Command::new(&p);
        cmd.arg("-R").arg(&other).args([flag, rec_s.as_str()]);
        let ran = run_measured(cmd, &dir.0, |_| {});
        let same = std::fs::metadata(&rec).is_ok_and(|m| m.ino() == ino);
        pmc_testkit::row!(
            "FAULT {name} {flag}: injected=an export naming a log being recorded \
             expected=exit 1, the log kept recovered=exit {} same_file={same}",
            ran.code
        );
        if ran.code != 1 || !same || !ran.stderr.contains("recording into it") {
            failed.push(format!(
                "{flag}: exit {} same={same}: {}",
                ran.code, ran.stderr
            ));
        }
    }
    std::fs::write(&go, b"").unwrap();
    let code = recorder.wait().unwrap().code();
    let out = Command::new(&p).arg("-R").arg(&rec).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(failed.is_empty(), "{failed:#?}");
    assert_eq!(code, Some(0));
    assert!(out.status.success() && !err.contains("skipped"), "{err}");
}

/// Issue 32 item 11: an export killed with SIGKILL while its output is under way (the log
/// comes through a FIFO, half of it) leaves no temporary file next to the output: it has no
/// name until complete (O_TMPFILE). And a named temporary a dead process left (the form
/// pmc uses where O_TMPFILE is missing) is removed by the next export of that name, while
/// a live process's and another name's are kept. Before: a hidden `.NAME.*.tmp` of the
/// killed export stayed (200 MB in the issue), and no run removed it.
#[test]
fn killed_export_leaves_no_temporary() {
    let name = "killed_export_leaves_no_temporary";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let dir = TempDir::new("faults-killed-export", 0o755).unwrap();
    let fifo = dir.0.join("log.fifo");
    let cpath = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(cpath.as_ptr(), 0o600) }, 0);
    let out_dir = dir.0.join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let out = out_dir.join("report.txt");
    std::fs::write(&out, b"previous").unwrap();
    let data = hostile_log(&[Path::new("/nonexistent/lib.so")]);
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            // Blocks until pmcstat opens the FIFO to read (bounded by the watchdog's kill).
            let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&fifo) else {
                return;
            };
            let _ = std::io::Write::write_all(&mut f, &data[..data.len() / 2]);
            let _ = go_rx.recv_timeout(WATCHDOG);
        })
    };
    let mut cmd = Command::new(&p);
    cmd.arg("-R").arg(&fifo).arg("-o").arg(&out);
    let mut open_tmp = Vec::new();
    let ran = run_measured(cmd, &dir.0, |pid| {
        let deadline = Instant::now() + WATCHDOG;
        while open_tmp.is_empty() && Instant::now() < deadline {
            open_tmp = temporaries_open_in(pid, &out_dir);
            std::thread::sleep(Duration::from_millis(5));
        }
        // SAFETY: kill on our own child.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    });
    let _ = go_tx.send(());
    writer.join().unwrap();
    let names = |d: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let left = names(&out_dir);
    pmc_testkit::row!(
        "FAULT {name} SIGKILL: injected=SIGKILL while -R -o writes (open: {open_tmp:?}) \
         expected=killed, only report.txt left recovered=exit {} left={left:?}",
        ran.code
    );
    assert_eq!(ran.code, 137);
    assert!(
        !open_tmp.is_empty(),
        "the export never opened its temporary file"
    );
    assert_eq!(left, ["report.txt"], "a temporary file was left");
    assert_eq!(std::fs::read(&out).unwrap(), b"previous");

    // Named temporaries: a dead process's of this name is removed, nothing else.
    let log = dir.0.join("in.pmclog");
    std::fs::write(&log, hostile_log(&[Path::new("/nonexistent/lib.so")])).unwrap();
    let dead = ".report.txt.pmc-4194305-1-1.tmp"; // above the kernel's pid_max
    let init = std::fs::read_to_string("/proc/1/stat").unwrap();
    let init_start = init
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .nth(19)
        .unwrap();
    let live = format!(".report.txt.pmc-1-{init_start}-1.tmp");
    let other = ".other.txt.pmc-4194305-1-1.tmp";
    for n in [dead, live.as_str(), other] {
        std::fs::write(out_dir.join(n), b"x").unwrap();
    }
    let mut cmd = Command::new(&p);
    cmd.arg("-R").arg(&log).arg("-o").arg(&out);
    let ran = run_measured(cmd, &dir.0, |_| {});
    let left = names(&out_dir);
    pmc_testkit::row!(
        "FAULT {name} stale: injected=temporaries of a dead process, a live one, another name \
         expected=only the dead one's removed recovered=exit {} left={left:?}",
        ran.code
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert_eq!(left, [other, live.as_str(), "report.txt"]);
}

/// Bytes waiting in the pipe or FIFO `fd` reads (`FIONREAD`).
fn queued(fd: &impl std::os::fd::AsRawFd) -> usize {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int into `n`, which lives across the call.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), libc::FIONREAD, &mut n) };
    if r == 0 {
        usize::try_from(n).unwrap_or(0)
    } else {
        0
    }
}

/// How `child` ended, waited for at most `limit` (then killed: `None`): exit code, or the
/// signal that killed it as `-signal`.
fn ended(child: &mut std::process::Child, limit: Duration) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    let deadline = Instant::now() + limit;
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return Some(st.code().unwrap_or_else(|| -st.signal().unwrap_or(0)));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Issue 32 item 7: when the reader of the counts goes away (`| head -2` after two interval
/// lines), pmcstat ends at once, killed by SIGPIPE as perf is, for the counts on standard
/// error, `-x, -o /dev/stdout`, and with a command (which gets the SIGPIPE); perf stat, the
/// oracle, ends the same way. Before: pmcstat counted on until `-l` (or forever).
#[test]
fn closed_reader_ends_the_run_by_sigpipe() {
    let name = "closed_reader_ends_the_run_by_sigpipe";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let perf = pmc_testkit::cli::works("perf", &["--version"]);
    let cases: [(&str, &str, Vec<&str>); 4] = [
        (
            "pmcstat stderr",
            "pmcstat",
            vec!["-s", "task-clock", "-I", "100", "-l", "60"],
        ),
        (
            "pmcstat -o /dev/stdout",
            "pmcstat",
            vec![
                "-x",
                ",",
                "-o",
                "/dev/stdout",
                "-s",
                "task-clock",
                "-I",
                "100",
                "-l",
                "60",
            ],
        ),
        (
            "pmcstat command",
            "pmcstat",
            vec![
                "-x",
                ",",
                "-o",
                "/dev/stdout",
                "-p",
                "task-clock",
                "-I",
                "100",
                "--",
                "sleep",
                "60",
            ],
        ),
        (
            "perf stat -a",
            "perf",
            vec![
                "stat",
                "-a",
                "-e",
                "task-clock",
                "-I",
                "100",
                "--",
                "sleep",
                "60",
            ],
        ),
    ];
    let mut failed = Vec::new();
    for (what, bin, args) in cases {
        if bin == "perf" && !perf {
            pmc_testkit::skip!(name = name, "perf (the oracle) is not installed");
            continue;
        }
        let to_stderr = !args.contains(&"/dev/stdout");
        let mut cmd = Command::new(if bin == "perf" {
            Path::new("perf")
        } else {
            p.as_path()
        });
        cmd.args(&args).stdin(Stdio::null());
        if to_stderr {
            cmd.stdout(Stdio::null()).stderr(Stdio::piped());
        } else {
            cmd.stdout(Stdio::piped()).stderr(Stdio::null());
        }
        let mut child = cmd.spawn().unwrap();
        // Two lines, then the reader goes away (as `head -2`).
        let mut lines = 0;
        {
            let reader: Box<dyn std::io::Read> = match (child.stdout.take(), child.stderr.take()) {
                (Some(o), _) => Box::new(o),
                (None, Some(e)) => Box::new(e),
                _ => unreachable!(),
            };
            let mut r = std::io::BufReader::new(reader);
            let mut line = String::new();
            while lines < 2 && std::io::BufRead::read_line(&mut r, &mut line).unwrap_or(0) > 0 {
                if !line.trim().is_empty() {
                    lines += 1;
                }
                line.clear();
            }
        }
        let got = ended(&mut child, Duration::from_secs(30));
        pmc_testkit::row!(
            "FAULT {name} {what}: injected=the reader closed after {lines} lines \
             expected=killed by SIGPIPE (-13) before -l 60 recovered={got:?}"
        );
        if got != Some(-libc::SIGPIPE) {
            failed.push(format!("{what}: {got:?}"));
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}

/// Issue 32 item 7: with `-O FIFO` or `-O -` whose reader stalls (opened, never read), the
/// first SIGTERM ends pmcstat (exit 143) with the summary and the loss message: the log's
/// close gives up on a sink that took nothing for 2 s. Before: the first SIGTERM did not
/// end it (the watchdog's kill, 30 s later).
#[test]
fn stalled_log_reader_and_one_sigterm() {
    let name = "stalled_log_reader_and_one_sigterm";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let dir = TempDir::new("faults-stalled-log", 0o755).unwrap();
    let fifo = dir.0.join("log.fifo");
    let cpath = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(cpath.as_ptr(), 0o600) }, 0);
    let mut failed = Vec::new();
    for target in ["FIFO", "-"] {
        let err_path = dir.0.join("stderr");
        let mut cmd = Command::new(&p);
        cmd.args(["-S", "cpu-clock", "--freq", "4000", "-l", "120", "-O"])
            .stdin(Stdio::null())
            .stderr(std::fs::File::create(&err_path).unwrap());
        // The stalled reader: the FIFO opened (non-blocking, then kept) and never read, or
        // pmcstat's standard output, a pipe never read.
        let mut held_fifo = None;
        if target == "FIFO" {
            cmd.arg(&fifo).stdout(Stdio::null());
            held_fifo = Some(
                std::fs::OpenOptions::new()
                    .read(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(&fifo)
                    .unwrap(),
            );
        } else {
            cmd.arg("-").stdout(Stdio::piped());
        }
        let mut child = cmd.spawn().unwrap();
        let pipe_out = child.stdout.take();
        // Ready: the pipe holds 32 KiB of the log, half its default capacity, and the reader
        // takes none of it (a watchdog, not a timing).
        let deadline = Instant::now() + WATCHDOG;
        loop {
            let n = match (&held_fifo, &pipe_out) {
                (Some(f), _) => queued(f),
                (None, Some(o)) => queued(o),
                _ => 0,
            };
            if n >= 32 << 10 || Instant::now() > deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // SAFETY: kill on our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let got = ended(&mut child, Duration::from_secs(30));
        drop((held_fifo, pipe_out));
        let err = std::fs::read_to_string(&err_path).unwrap_or_default();
        let summary = err.contains("samples (") && err.contains("lost");
        pmc_testkit::row!(
            "FAULT {name} -O {target}: injected=a reader that stalls, then one SIGTERM \
             expected=exit 143 with the summary and the loss recovered=exit {got:?} \
             summary={summary}"
        );
        if got != Some(143) || !summary {
            failed.push(format!("-O {target}: {got:?}\n{err}"));
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}

/// The kernel function a process sleeps in (`/proc/PID/wchan`).
fn wchan(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/wchan")).unwrap_or_default()
}

/// Issue 21 item 14: `-o`, `-O` and `-G` onto a FIFO with no reader wait for one, and the
/// first SIGTERM ends the wait (exit 1 with a message, or 143); before, the open blocked
/// and the first SIGTERM did nothing (the watchdog's kill: exit 137).
#[test]
fn fifo_outputs_without_a_reader() {
    let name = "fifo_outputs_without_a_reader";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let dir = TempDir::new("faults-fifo-out", 0o755).unwrap();
    let fifo = dir.0.join("fifo");
    let cpath = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(cpath.as_ptr(), 0o600) }, 0);
    let log = dir.0.join("ok.pmclog");
    std::fs::write(&log, hostile_log(&[Path::new("/nonexistent/lib.so")])).unwrap();
    let fifo_s = fifo.to_string_lossy().into_owned();
    let log_s = log.to_string_lossy().into_owned();
    for args in [
        vec!["-o", &fifo_s, "-p", "task-clock", "--", "true"],
        vec!["-P", "cpu-clock", "-O", &fifo_s, "--", "true"],
        vec!["-R", &log_s, "-G", &fifo_s],
    ] {
        let mut cmd = Command::new(&p);
        cmd.args(&args);
        let ran = run_measured(cmd, &dir.0, |pid| {
            // Ready: asleep in the FIFO's open (before) or between tries (after).
            let deadline = Instant::now() + WATCHDOG;
            while !(wchan(pid).contains("fifo") || wchan(pid).contains("sleep"))
                && Instant::now() < deadline
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            // SAFETY: kill on our own child.
            unsafe { libc::kill(pid as i32, libc::SIGTERM) };
            // One SIGTERM only; a stuck open is killed by a watchdog of our own.
            let watchdog = Instant::now() + Duration::from_secs(20);
            while Path::new(&format!("/proc/{pid}/stat")).exists()
                && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .unwrap_or_default()
                    .contains(") Z")
            {
                if Instant::now() > watchdog {
                    // SAFETY: kill on our own child.
                    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        pmc_testkit::row!(
            "FAULT {name} {} {}: injected=FIFO without a reader, then one SIGTERM expected=ends \
             (exit 1 or 143), no hang recovered=exit {} rss_peak_kb={}",
            args[0],
            args[1],
            ran.code,
            ran.rss_peak_kb
        );
        assert!(
            ran.code == 1 || ran.code == 143,
            "{args:?}: exit {} (137: the SIGTERM did nothing, killed)",
            ran.code
        );
    }

    // With a reader arriving later, the report goes through the FIFO.
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            std::fs::read(fifo).unwrap()
        })
    };
    let mut cmd = Command::new(&p);
    cmd.args(["-R", &log_s, "--folded", &fifo_s]);
    let ran = run_measured(cmd, &dir.0, |_| {});
    let got = reader.join().unwrap();
    pmc_testkit::row!(
        "FAULT {name} --folded with a reader: injected=a reader 200 ms late expected=exit 0, \
         the stacks delivered recovered=exit {} bytes={}",
        ran.code,
        got.len()
    );
    assert_eq!(ran.code, 0);
    assert!(!got.is_empty());
}

/// Issue 21 item 11: control characters in a log's strings (a map path with an OSC title,
/// a screen clear and a newline followed by a forged line; a command name with ESC) are
/// escaped in the record lines, warnings and reports; before, they reached the terminal.
#[test]
fn log_strings_are_escaped() {
    let name = "log_strings_are_escaped";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let dir = TempDir::new("faults-escape", 0o755).unwrap();
    let evil =
        "/nonexistent/x\u{1b}]0;PWNED\u{7}\u{1b}[2J\npmcstat: log clean, 0 samples lost\u{9b}";
    // Issue 32 item 12: the event and command names too (C1 CSI, ESC, BEL, a newline).
    let evil_event = "cpu-clock\u{1b}]0;EV\u{7}\u{9b}2J\npmcstat: forged";
    let evil_comm = "vic\u{1b}[2J\u{9b}tim";
    let log = dir.0.join("evil.pmclog");
    std::fs::write(
        &log,
        hostile_log_named(&[Path::new(evil)], evil_event, evil_comm),
    )
    .unwrap();
    let out = dir.0.join("report");
    let out_s = out.to_string_lossy().into_owned();
    let mut failed = Vec::new();
    for report in [
        vec![],
        vec!["--json"],
        vec!["--dump"],
        vec!["--summary"],
        vec!["--summary", "-x", ","],
        vec!["--summary", "--json"],
        // A file, or standard output: one writer each (`-F -` is the issue's case).
        vec!["-G", &out_s],
        vec!["--folded", &out_s],
        vec!["-m", &out_s],
        vec!["-a", "-"],
        vec!["-F", "-"],
        vec!["--script", "-o", &out_s],
    ] {
        let _ = std::fs::remove_file(&out);
        let mut cmd = Command::new(&p);
        cmd.arg("-R").arg(&log).args(&report);
        let ran = run_measured(cmd, &dir.0, |_| {});
        let file = std::fs::read_to_string(&out).unwrap_or_default();
        let all = format!("{}{}{file}", ran.stdout, ran.stderr);
        let raw = all.contains(['\u{1b}', '\u{7}', '\u{9b}']);
        let forged = all.lines().any(|l| l.starts_with("pmcstat: log clean"));
        let what = if report.is_empty() {
            "records".to_owned()
        } else {
            report.join(" ").replace(&out_s, "FILE")
        };
        pmc_testkit::row!(
            "FAULT {name} {what}: injected=ESC, BEL, CSI and a newline in a map path, the event \
             and the command \
             expected=exit 0, all escaped recovered=exit {} raw_controls={raw} \
             forged_line={forged} rss_peak_kb={}",
            ran.code,
            ran.rss_peak_kb
        );
        if ran.code != 0 || raw || forged {
            failed.push(format!(
                "{}: exit {} raw_controls={raw} forged={forged}",
                report.join(" "),
                ran.code
            ));
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}

/// Issue 32 item 12, live and from the command line: a process named with ESC, BEL and a C1
/// CSI (a copy of `true` named so) under `-E -p task-clock`, in text and `--json`; event
/// strings with controls; 100 KB arguments echoed in errors (cut, not echoed whole).
#[test]
fn live_names_and_long_arguments_are_shown_safely() {
    let name = "live_names_and_long_arguments_are_shown_safely";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let dir = TempDir::new("faults-live-names", 0o755).unwrap();
    let evil = dir.0.join("t\u{1b}]0;X\u{7}\u{9b}2J");
    std::fs::copy("/bin/true", &evil).unwrap();
    let evil_s = s(&evil);
    let long = "a".repeat(100_000);
    let long_path = format!("{}/{long}", s(&dir.0));
    let cases: [(&str, Vec<&str>); 8] = [
        ("-E text", vec!["-E", "-p", "task-clock", "--", &evil_s]),
        (
            "-E --json",
            vec!["-E", "--json", "-p", "task-clock", "--", &evil_s],
        ),
        (
            "-E -x",
            vec!["-E", "-x", ",", "-p", "task-clock", "--", &evil_s],
        ),
        (
            "event with controls",
            vec!["-p", "cpu-clock\u{1b}]0;T\u{7}\u{9b}", "true"],
        ),
        ("100 KB -t", vec!["-p", "task-clock", "-t", &long]),
        (
            "100 KB -o",
            vec!["-p", "task-clock", "-o", &long_path, "true"],
        ),
        (
            "100 KB --cgroup",
            vec!["-s", "task-clock", "--cgroup", &long, "-l", "0.01"],
        ),
        ("100 KB -R -i", vec!["-R", "/dev/null", "-i", &long]),
    ];
    let mut failed = Vec::new();
    for (what, args) in cases {
        let mut cmd = Command::new(&p);
        cmd.args(&args);
        let ran = run_measured(cmd, &dir.0, |_| {});
        let all = format!("{}{}", ran.stdout, ran.stderr);
        let raw = all.contains(['\u{1b}', '\u{7}', '\u{9b}']);
        pmc_testkit::row!(
            "FAULT {name} {what}: injected=ESC/BEL/CSI in a name or a 100 KB argument \
             expected=no raw control, output under 8 KB recovered=exit {} raw_controls={raw} \
             bytes={}",
            ran.code,
            all.len()
        );
        if raw || all.len() > 8 << 10 {
            failed.push(format!(
                "{what}: exit {} raw={raw} bytes={}",
                ran.code,
                all.len()
            ));
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}

/// Issue 32 item 12: a log that is nothing but damage (a good preamble, then 64 KB of
/// noise) is an error (exit 1), mapped or streamed; before, every report exited 0.
#[test]
fn log_of_nothing_but_damage_fails() {
    let name = "log_of_nothing_but_damage_fails";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let dir = TempDir::new("faults-all-damage", 0o755).unwrap();
    let good = hostile_log(&[Path::new("/nonexistent/lib.so")]);
    let mut bytes = good[..pmc_log::format::PREAMBLE_LEN].to_vec();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    bytes.extend((0..64 << 10).map(|_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x as u8
    }));
    let log = dir.0.join("noise.pmclog");
    std::fs::write(&log, &bytes).unwrap();
    for args in [vec![], vec!["--summary"], vec!["-G", "-"]] {
        for stdin in [false, true] {
            let mut cmd = Command::new(&p);
            if stdin {
                cmd.args(["-R", "-"]);
            } else {
                cmd.arg("-R").arg(&log);
            }
            cmd.args(&args);
            let ran = if stdin {
                let mut child = cmd
                    .stdin(std::fs::File::open(&log).unwrap())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap();
                let _ = &mut child;
                let out = child.wait_with_output().unwrap();
                (
                    out.status.code(),
                    String::from_utf8_lossy(&out.stderr).into_owned(),
                )
            } else {
                let ran = run_measured(cmd, &dir.0, |_| {});
                (Some(ran.code), ran.stderr)
            };
            let what = format!(
                "{}{}",
                if stdin { "-R - " } else { "-R FILE " },
                args.join(" ")
            );
            pmc_testkit::row!(
                "FAULT {name} {what}: injected=a preamble then 64 KB of noise expected=exit 1 \
                 recovered=exit {:?}",
                ran.0
            );
            // A regular file on stdin is mapped (as -R FILE); a report from a pipe may end
            // before the whole stream is judged, but the file cases cover both readers.
            assert_eq!(ran.0, Some(1), "{what}: {}", ran.1);
            assert!(ran.1.contains("no readable record"), "{what}: {}", ran.1);
        }
    }
}

/// Issue 21 item 13: advice that fits a CLI user. `-R -` reads standard input (as `-O -`
/// writes standard output); `-k DIR` whose kallsyms is a device says so; EPIPE on `-O -`
/// blames the reader, not the disk; `-P` without `-d` on a forking command says what the
/// samplers missed, as counting does; `--mmap-pages` exists.
#[test]
fn advice_fits_the_cli() {
    let name = "advice_fits_the_cli";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let dir = TempDir::new("faults-advice", 0o755).unwrap();
    let log = dir.0.join("ok.pmclog");
    std::fs::write(&log, hostile_log(&[Path::new("/nonexistent/lib.so")])).unwrap();

    // -R - from a pipe.
    let mut child = Command::new(&p)
        .args(["-R", "-", "--summary"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let data = std::fs::read(&log).unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || std::io::Write::write_all(&mut stdin, &data));
    let out = child.wait_with_output().unwrap();
    let _ = feeder.join();
    let read = String::from_utf8_lossy(&out.stdout).contains("(100 samples)");
    pmc_testkit::row!(
        "FAULT {name} -R -: injected=the log on a pipe to standard input expected=exit 0, read \
         recovered=exit {:?} read={read}",
        out.status.code()
    );
    assert!(
        out.status.success() && read,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // -k DIR whose kallsyms is a character device.
    let k = dir.0.join("kdir");
    std::fs::create_dir_all(&k).unwrap();
    std::os::unix::fs::symlink("/dev/null", k.join("kallsyms")).unwrap();
    let mut cmd = Command::new(&p);
    cmd.arg("-R").arg(&log).arg("-k").arg(&k).arg("--summary");
    let ran = run_measured(cmd, &dir.0, |_| {});
    let says = ran.stderr.contains("character device");
    pmc_testkit::row!(
        "FAULT {name} -k device: injected=DIR/kallsyms -> /dev/null expected=names the device \
         recovered=exit {} says_device={says}",
        ran.code
    );
    assert!(says, "{}", ran.stderr);

    // EPIPE on -O -: the reader closed the pipe.
    let mut child = Command::new(&p)
        .args([
            "-P",
            "cpu-clock",
            "--freq",
            "4000",
            "-O",
            "-",
            "--",
            "sh",
            "-c",
        ])
        .arg("i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut so = child.stdout.take().unwrap();
    let mut first = [0u8; 16];
    let _ = so.read(&mut first);
    drop(so);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let blames_disk = err.contains("free space");
    let blames_reader = err.contains("reader");
    pmc_testkit::row!(
        "FAULT {name} EPIPE -O -: injected=the log's reader closes the pipe expected=help names \
         the reader, not free space recovered=exit {:?} reader={blames_reader} \
         free_space={blames_disk}",
        out.status.code()
    );
    assert!(blames_reader && !blames_disk, "{err}");

    // -P without -d on a forking command.
    let plog = dir.0.join("p.pmclog");
    let mut cmd = Command::new(&p);
    cmd.args(["-P", "cpu-clock", "-O"]).arg(&plog).args([
        "--",
        "sh",
        "-c",
        "sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'; true",
    ]);
    let ran = run_measured(cmd, &dir.0, |_| {});
    let hint = ran.stderr.contains("add -d");
    pmc_testkit::row!(
        "FAULT {name} -P without -d: injected=the work runs in a child process expected=a hint \
         to add -d recovered=exit {} hint={hint}",
        ran.code
    );
    assert_eq!(ran.code, 0);
    assert!(hint, "{}", ran.stderr);

    // --mmap-pages: accepted with a power of two, refused with a message otherwise.
    let mut cmd = Command::new(&p);
    cmd.args(["-P", "cpu-clock", "--mmap-pages", "8", "-O"])
        .arg(&plog)
        .args(["--", "true"]);
    let ok = run_measured(cmd, &dir.0, |_| {});
    let mut cmd = Command::new(&p);
    cmd.args(["-P", "cpu-clock", "--mmap-pages", "3", "-O"])
        .arg(&plog)
        .args(["--", "true"]);
    let bad = run_measured(cmd, &dir.0, |_| {});
    pmc_testkit::row!(
        "FAULT {name} --mmap-pages: injected=8, then 3 pages expected=exit 0, then exit 1 \
         naming --mmap-pages recovered=exit {} then exit {}",
        ok.code,
        bad.code
    );
    assert_eq!(ok.code, 0, "{}", ok.stderr);
    assert_eq!(bad.code, 1);
    assert!(bad.stderr.contains("--mmap-pages"), "{}", bad.stderr);
}

/// The temporary files process `pid` has open in directory `dir` (its `/proc/PID/fd`
/// links): named (`.NAME...tmp`) or unnamed (`/DIR/#123 (deleted)`, `O_TMPFILE`).
fn temporaries_open_in(pid: u32, dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    fds.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|t| {
            let name = t.file_name().map(|n| n.to_string_lossy().into_owned());
            t.parent() == Some(dir)
                && name.is_some_and(|n| n.ends_with(".tmp") || n.ends_with(" (deleted)"))
        })
        .collect()
}

/// Issue 21 item 5: a signal during an export leaves no partial file and keeps the previous
/// one. The log comes through a FIFO, half of it, so the export is under way (its temporary
/// file exists) when SIGTERM comes; then the rest arrives. Before: SIGTERM killed pmcstat
/// with the output truncated and half written.
#[test]
fn signal_during_export_keeps_the_previous_file() {
    let name = "signal_during_export_keeps_the_previous_file";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let dir = TempDir::new("faults-export-signal", 0o755).unwrap();
    let fifo = dir.0.join("log.fifo");
    let cpath = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(cpath.as_ptr(), 0o600) }, 0);
    let out = dir.0.join("report.txt");
    std::fs::write(&out, b"previous good report").unwrap();
    let data = hostile_log(&[Path::new("/nonexistent/lib.so")]);
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            use std::os::unix::fs::OpenOptionsExt;
            let deadline = Instant::now() + WATCHDOG;
            let mut f = loop {
                match std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(&fifo)
                {
                    Ok(f) => break f,
                    Err(_) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(10))
                    }
                    Err(e) => panic!("pmcstat never opened the FIFO: {e}"),
                }
            };
            let fd = std::os::fd::AsRawFd::as_raw_fd(&f);
            // SAFETY: fcntl on a descriptor this closure owns.
            unsafe { libc::fcntl(fd, libc::F_SETFL, 0) };
            let half = data.len() / 2;
            std::io::Write::write_all(&mut f, &data[..half]).unwrap();
            let _ = go_rx.recv_timeout(WATCHDOG);
            let _ = std::io::Write::write_all(&mut f, &data[half..]);
        })
    };
    let tmp_exists = |d: &Path| {
        std::fs::read_dir(d)
            .unwrap()
            .filter_map(|e| e.ok())
            .any(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
    };
    let mut cmd = Command::new(&p);
    cmd.arg("-R").arg(&fifo).arg("-o").arg(&out);
    let mut under_way = false;
    let ran = run_measured(cmd, &dir.0, |pid| {
        // Ready: the export has begun (its temporary file is open: named, or unnamed with
        // O_TMPFILE), or, unfixed, the output was truncated.
        let deadline = Instant::now() + WATCHDOG;
        while Instant::now() < deadline {
            if tmp_exists(&dir.0)
                || !temporaries_open_in(pid, &dir.0).is_empty()
                || std::fs::metadata(&out).is_ok_and(|m| m.len() != 20)
            {
                under_way = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // SAFETY: kill on our own child.
        unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        let _ = go_tx.send(());
    });
    writer.join().unwrap();
    let kept = std::fs::read(&out).is_ok_and(|b| b == b"previous good report");
    let left = tmp_exists(&dir.0);
    pmc_testkit::row!(
        "FAULT {name}: injected=SIGTERM during -R -o (export under way={under_way}) \
         expected=exit 143, previous file kept, no temporary left recovered=exit {} \
         kept={kept} temporary_left={left} rss_peak_kb={}",
        ran.code,
        ran.rss_peak_kb
    );
    assert!(under_way, "the export never started");
    assert!(kept, "the previous file was not kept");
    assert!(!left, "a temporary file was left");
    assert!(ran.code == 143 || ran.code == 1, "exit {}", ran.code);
}

// ---------------------------------------------------------------------------------------------
// Reports bounded by their input (issue 21 items 2, 9, 12)
// ---------------------------------------------------------------------------------------------

/// The peak RSS bound for `-R` reports over an 8 MB log holding one 1M-frame sample (before:
/// -G 225 MB, --flamegraph 217 MB, --pprof 331 MB).
const DEEP_RSS_BOUND_KB: u64 = 100 * 1024;

/// The bound on a report's size: this many output bytes per input byte, plus 1 MiB. A -G
/// line stands for at least one 8-byte frame of the log and is at most 200 bytes plus the
/// function's name (indentation capped at 64 levels); an unresolved frame's name is short.
const OUTPUT_PER_INPUT_BYTE: u64 = 32;

/// A `cpu-clock` PMC descriptor with callchains.
fn pmc_descriptor() -> Record<'static> {
    Record::Pmc(PmcDescriptor {
        time: 0,
        pmc_id: 0,
        event_spec: "cpu-clock".into(),
        canonical_name: "cpu-clock".into(),
        scope: Scope::Process,
        cpu: None,
        mode: Mode::SamplingPeriod(100_000),
        flags: pmc_log::record::FLAG_CALLCHAIN,
        native_config: "".into(),
    })
}

/// A sample of pid 42 at `time` with `callchain`.
fn sample(time: u64, callchain: Vec<u64>) -> Record<'static> {
    Record::Sample(Sample {
        time,
        pmc_id: 0,
        pid: 42,
        tid: 42,
        cpu: Some(0),
        period: 100_000,
        callchain: Callchain::from_vec(callchain),
        kernel_frames: 0,
        raw: Default::default(),
    })
}

/// Runs pmcstat `args` with its output files limited to `fsize` bytes (RLIMIT_FSIZE: a
/// report past its bound dies with SIGXFSZ rather than filling the shared disk). Its peak RSS
/// is taken by GNU time (`/usr/bin/time -f %M`) when installed: `wait4`'s `ru_maxrss` of a
/// direct child also counts the test process's own RSS shared at fork, which grows as the
/// suite runs; pmcstat forked by `time` starts small.
fn run_bounded(p: &Path, args: &[&std::ffi::OsStr], dir: &Path, fsize: u64) -> Ran {
    const TAG: &str = "pmcstat-maxrss-kb=";
    let time = Path::new("/usr/bin/time");
    let mut cmd = if time.exists() {
        let mut c = Command::new(time);
        c.arg("-f").arg(format!("{TAG}%M")).arg(p);
        c
    } else {
        Command::new(p)
    };
    cmd.args(args);
    // SAFETY: setrlimit is async-signal-safe; the closure touches nothing else.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: fsize,
                rlim_max: fsize,
            };
            libc::setrlimit(libc::RLIMIT_FSIZE, &lim);
            Ok(())
        });
    }
    let mut ran = run_measured(cmd, dir, |_| {});
    if let Some(kb) = ran
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix(TAG)?.trim().parse().ok())
    {
        ran.rss_peak_kb = kb;
    }
    ran
}

/// Item 2: a `--call-graph dwarf-raw` log (samples with `UserStack` records) with one block
/// zeroed. `-R` unwinds it through a rewrite; the damage must still be reported (before:
/// samples lost with no warning in any mode).
#[test]
fn dwarf_raw_damage_reported() {
    let name = "dwarf_raw_damage_reported";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let dir = TempDir::new("faults-dwarfraw", 0o755).unwrap();
    let mut w = pmc_log::Writer::with_block_size(Vec::new(), &header(), 4096).unwrap();
    w.write(&pmc_descriptor()).unwrap();
    for t in 1..=500u64 {
        w.write(&sample(t, vec![0x1000 + t])).unwrap();
        w.write(&Record::UserStack(pmc_log::record::UserStack {
            time: t,
            pmc_id: 0,
            pid: 42,
            tid: 42,
            arch: pmc_log::record::ARCH_NATIVE,
            pc: 0x1000 + t,
            sp: 0x7fff_0000,
            fp: 0,
            lr: 0,
            stack: vec![0u8; 64].into(),
        }))
        .unwrap();
    }
    let mut data = w.finish().unwrap();
    // Zero the third block (blocks of 4096 payload bytes after the preamble).
    let at = data.len() / 3;
    data[at..at + 4096].fill(0);
    let log = dir.0.join("dwarfraw.pmclog");
    std::fs::write(&log, &data).unwrap();
    let out = dir.0.join("report");
    let mut bad = Vec::new();
    for report in [
        &["--summary"][..],
        &["-G", "-"],
        &["-q", "--folded", "-"],
        &[],
    ] {
        let mut args: Vec<&std::ffi::OsStr> = vec!["-R".as_ref(), log.as_os_str()];
        args.extend(report.iter().map(std::ffi::OsStr::new));
        let ran = run_bounded(&p, &args, &dir.0, 64 << 20);
        let warned = ran
            .stderr
            .lines()
            .any(|l| l.contains("warning") && l.contains("skipped"));
        pmc_testkit::row!(
            "FAULT {name} {}: injected=4096 zero bytes in a dwarf-raw log of 500 samples \
             expected=exit 0, a warning naming the skipped bytes recovered=exit {} warned={warned} \
             rss_peak_kb={}",
            report.first().copied().unwrap_or("(dump)"),
            ran.code,
            ran.rss_peak_kb
        );
        if ran.code != 0 || !warned {
            bad.push(format!("{report:?}: exit {}, warned={warned}", ran.code));
        }
        let _ = std::fs::remove_file(&out);
    }
    assert!(bad.is_empty(), "damage not reported: {bad:?}");
}

/// A log of one sample whose callchain has `frames` frames (unresolved addresses).
fn deep_log(frames: u64) -> Vec<u8> {
    let mut w = pmc_log::Writer::with_block_size(Vec::new(), &header(), 16 << 20).unwrap();
    w.write(&pmc_descriptor()).unwrap();
    w.write(&sample(1, (0..frames).map(|i| 0x1000 + i * 16).collect()))
        .unwrap();
    w.finish().unwrap()
}

/// Items 9 and 12: one 1M-frame sample (an 8 MB log). `-G -z 0` printed depth² bytes (40 GB
/// from 1.6 MB); -G, --flamegraph and --pprof took 217 to 331 MB. Every report must stay
/// within OUTPUT_PER_INPUT_BYTE of the input and DEEP_RSS_BOUND_KB, and say that the chain
/// was cut.
#[test]
fn deep_sample_reports_bounded() {
    let name = "deep_sample_reports_bounded";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let dir = TempDir::new("faults-deep", 0o755).unwrap();
    let log = dir.0.join("deep.pmclog");
    let data = deep_log(1 << 20);
    std::fs::write(&log, &data).unwrap();
    let input = data.len() as u64;
    let bound = input * OUTPUT_PER_INPUT_BYTE + (1 << 20);
    let out = dir.0.join("report");
    let mut bad = Vec::new();
    for report in [
        &["-G"][..],
        &["-G", "-z", "0"],
        &["-G", "-z", "0", "--callgraph-order", "caller"],
        &["--flamegraph"],
        &["--folded"],
        &["--pprof"],
    ] {
        let mut args: Vec<&std::ffi::OsStr> = vec!["-R".as_ref(), log.as_os_str()];
        args.push(report[0].as_ref());
        args.push(out.as_os_str());
        args.extend(report[1..].iter().map(std::ffi::OsStr::new));
        let ran = run_bounded(&p, &args, &dir.0, bound + 1);
        let size = std::fs::metadata(&out).map_or(0, |m| m.len());
        let told = ran.stderr.contains("frames");
        pmc_testkit::row!(
            "FAULT {name} {}: injected=one 1048576-frame sample ({input} B log) expected=exit 0, \
             output <= {bound} B, rss < {DEEP_RSS_BOUND_KB} kB, the cut told recovered=exit {} \
             output={size} told={told} rss_peak_kb={}",
            report.join(" "),
            ran.code,
            ran.rss_peak_kb
        );
        if ran.code != 0 || size > bound || ran.rss_peak_kb >= DEEP_RSS_BOUND_KB || !told {
            bad.push(format!(
                "{}: exit {}, {size} B, {} kB, told={told}",
                report.join(" "),
                ran.code,
                ran.rss_peak_kb
            ));
        }
        let _ = std::fs::remove_file(&out);
    }
    assert!(bad.is_empty(), "unbounded reports: {bad:?}");
}
/// An hwpmc log: INITIALIZE, a mapping, `n` callchains of 1 to 7 frames, CLOSELOG.
fn hwpmc_log(n: u32) -> Vec<u8> {
    let mut e = pmc_log::hwpmc::Encoder::new(Vec::new());
    e.initialize(
        0,
        0x0A01_0000,
        0x9D,
        1_000_000_000,
        0,
        0,
        "GenuineIntel-6-9A-4",
    )
    .unwrap();
    e.map_in(1, 42, 0x40_0000, b"/nonexistent/prog").unwrap();
    for i in 0..n {
        let depth = 1 + (i % 7) as usize;
        let pcs: Vec<u64> = (0..depth as u64)
            .map(|d| 0x40_1000 + d * 0x10 + u64::from(i % 1000))
            .collect();
        e.callchain(u64::from(i) + 2, 42, 42, 0x100, 0, true, &pcs)
            .unwrap();
    }
    e.closelog(u64::from(n) + 3).unwrap();
    e.into_inner()
}

/// Item 12: an hwpmc log through a FIFO (before: refused, "not a pmc log"), and one from a
/// regular file with a report that reads it once (before: converted whole in memory, about
/// 4.3 times its size). Both must stream: RSS under 1.5 times the input (pmcstat's own
/// baseline is about 12 MB). The log is written to a file and the FIFO fed from it
/// (`run_bounded` says how RSS is measured).
#[test]
fn hwpmc_log_streamed() {
    let name = "hwpmc_log_streamed";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let dir = TempDir::new("faults-hwpmc", 0o755).unwrap();
    let fifo = dir.0.join("fifo");
    let cpath = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(cpath.as_ptr(), 0o600) }, 0);
    let n = 200_000u32;
    let log = dir.0.join("hwpmc.log");
    std::fs::write(&log, hwpmc_log(n)).unwrap();
    let input_kb = std::fs::metadata(&log).unwrap().len() / 1024;
    let bound_kb = input_kb * 3 / 2;
    let writer = {
        let fifo = fifo.clone();
        let log = log.clone();
        std::thread::spawn(move || {
            use std::os::unix::fs::OpenOptionsExt;
            // Wait (bounded) for pmcstat to open the FIFO for reading: a non-blocking open
            // for writing fails with ENXIO until a reader exists.
            let deadline = Instant::now() + WATCHDOG;
            let f = loop {
                match std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(&fifo)
                {
                    Ok(f) => break Some(f),
                    Err(_) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(10))
                    }
                    Err(_) => break None,
                }
            };
            if let Some(mut f) = f {
                let fd = std::os::fd::AsRawFd::as_raw_fd(&f);
                // SAFETY: fcntl on a descriptor this closure owns.
                unsafe { libc::fcntl(fd, libc::F_SETFL, 0) };
                // A refusal closes the FIFO: EPIPE, ignored.
                let _ = std::io::copy(&mut std::fs::File::open(log).unwrap(), &mut f);
            }
        })
    };
    let summary = |log: &Path| {
        let args = ["-R".as_ref(), log.as_os_str(), "--summary".as_ref()];
        run_bounded(&p, &args, &dir.0, u64::MAX)
    };
    let ran = summary(&fifo);
    writer.join().unwrap();
    let want = format!("({n} samples)");
    let mut bad = Vec::new();
    for (what, ran) in [("FIFO", ran), ("file", summary(&log))] {
        let got = ran.stdout.contains(&want);
        pmc_testkit::row!(
            "FAULT {name} {what}: injected=a {input_kb} kB hwpmc log ({what}) expected=exit 0, \
             {n} samples, rss < {bound_kb} kB recovered=exit {} summary={got} rss_peak_kb={}",
            ran.code,
            ran.rss_peak_kb
        );
        if ran.code != 0 || !got || ran.rss_peak_kb >= bound_kb {
            bad.push(format!(
                "{what}: exit {}, {} kB: {}",
                ran.code, ran.rss_peak_kb, ran.stderr
            ));
        }
    }
    assert!(bad.is_empty(), "{bad:?}");
}

/// Writes an hwpmc log of at least `bytes` bytes to `path` (as [`hwpmc_log`], streamed to
/// the file); returns the number of callchains.
fn write_hwpmc_log(path: &Path, bytes: u64) -> u32 {
    let per = hwpmc_log(10_000).len() as u64 / 10_000;
    let n = u32::try_from(bytes / per.max(1) + 1).unwrap();
    let f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut e = pmc_log::hwpmc::Encoder::new(f);
    e.initialize(
        0,
        0x0A01_0000,
        0x9D,
        1_000_000_000,
        0,
        0,
        "GenuineIntel-6-9A-4",
    )
    .unwrap();
    e.map_in(1, 42, 0x40_0000, b"/nonexistent/prog").unwrap();
    for i in 0..n {
        let depth = 1 + (i % 7) as usize;
        let pcs: Vec<u64> = (0..depth as u64)
            .map(|d| 0x40_1000 + d * 0x10 + u64::from(i % 1000))
            .collect();
        e.callchain(u64::from(i) + 2, 42, 42, 0x100, 0, true, &pcs)
            .unwrap();
    }
    e.closelog(u64::from(n) + 3).unwrap();
    use std::io::Write as _;
    e.into_inner().flush().unwrap();
    n
}

/// Issue 21 item 12: a 32 MB hwpmc log file through each `-R` output that reads the whole
/// log (`-m`, `-a`, `--script`, `--pprof`, `--perf-data`). Before, each converted it whole in
/// memory first (RSS above the input's size); now each output reads the file in a pass of its
/// own, converted as it is read. Bound: 64 MB of RSS for the listings and pprof (pmcstat's
/// baseline is about 12 MB; what grows is per distinct stack and symbol, not per input byte),
/// whatever the input's size; `--perf-data` keeps the perf.data data section it writes in
/// memory (the format puts the attributes before the data), so its bound is that output's
/// size plus the same 64 MB, not the input's converted copy on top.
#[test]
fn hwpmc_log_streamed_by_every_output() {
    let name = "hwpmc_log_streamed_by_every_output";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let dir = TempDir::new("faults-hwpmc-outputs", 0o755).unwrap();
    let log = dir.0.join("hwpmc.log");
    // 32 MB: a debug build's -a takes about a minute over it (100 MB passes the watchdog).
    let n = write_hwpmc_log(&log, 32 << 20);
    let input_kb = std::fs::metadata(&log).unwrap().len() / 1024;
    const BOUND_KB: u64 = 64 * 1024;
    let out = dir.0.join("out");
    let mut bad = Vec::new();
    for flag in ["-m", "-a", "--script", "--pprof", "--perf-data"] {
        let mut args: Vec<&std::ffi::OsStr> = vec!["-R".as_ref(), log.as_os_str()];
        if flag == "--script" {
            args.extend(["--script".as_ref(), "-o".as_ref(), out.as_os_str()]);
        } else {
            args.extend([flag.as_ref(), out.as_os_str()]);
        }
        // Outputs up to 2 GB (a listing line per frame); removed after each run.
        let ran = run_bounded(&p, &args, &dir.0, 2 << 30);
        let out_kb = std::fs::metadata(&out).map_or(0, |m| m.len() / 1024);
        let bound_kb = if flag == "--perf-data" {
            BOUND_KB + out_kb
        } else {
            BOUND_KB
        };
        // The conversion is told once, as for a log converted whole (FORMAT.md: damage is
        // reported on every path).
        let told = ran.stderr.matches("FreeBSD hwpmc log converted").count();
        pmc_testkit::row!(
            "FAULT {name} {flag}: injected=a {input_kb} kB hwpmc log file ({n} callchains) \
             expected=exit 0, the conversion told once, rss < {bound_kb} kB recovered=exit {} \
             told={told} output_kb={out_kb} rss_peak_kb={}",
            ran.code,
            ran.rss_peak_kb
        );
        // -m lists only samples with a symbol: none here (the object does not exist).
        if ran.code != 0
            || told != 1
            || (out_kb == 0 && flag != "-m")
            || ran.rss_peak_kb >= bound_kb
        {
            bad.push(format!(
                "{flag}: exit {}, {} kB (bound {bound_kb}): {}",
                ran.code,
                ran.rss_peak_kb,
                ran.stderr.lines().take(5).collect::<Vec<_>>().join(" | ")
            ));
        }
        let _ = std::fs::remove_file(&out);
    }
    assert!(bad.is_empty(), "{bad:?}");
}

/// Issue 21 item 7: memory running out while `-R --perf-data` builds its output (the
/// perf.data data section is held in memory) is an error with a message, exit 1, never an
/// abort (SIGABRT, "memory allocation failed"). The limit is `RLIMIT_DATA` (private writable
/// memory, so the mapped binary does not count): 40 MB, under what the data section of this
/// 32 MB hwpmc log needs. Before: SIGABRT (the whole conversion, then the data section,
/// grew until malloc failed).
#[test]
fn perf_data_out_of_memory() {
    let name = "perf_data_out_of_memory";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let dir = TempDir::new("faults-perf-data-oom", 0o755).unwrap();
    let log = dir.0.join("hwpmc.log");
    let n = write_hwpmc_log(&log, 32 << 20);
    let out = dir.0.join("out.perf.data");
    const LIMIT: u64 = 40 << 20;
    let mut cmd = Command::new(&p);
    cmd.arg("-R").arg(&log).arg("--perf-data").arg(&out);
    // SAFETY: setrlimit is async-signal-safe; the closure touches nothing else.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: LIMIT,
                rlim_max: LIMIT,
            };
            libc::setrlimit(libc::RLIMIT_DATA, &lim);
            Ok(())
        });
    }
    let ran = run_measured(cmd, &dir.0, |_| {});
    let said = ran.stderr.contains("out of memory");
    pmc_testkit::row!(
        "FAULT {name}: injected=RLIMIT_DATA {} MB, --perf-data of a {n}-callchain hwpmc log \
         expected=exit 1 saying out of memory, no abort, no output file recovered=exit {} \
         said={said} output={}",
        LIMIT >> 20,
        ran.code,
        out.exists()
    );
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    assert!(said, "{}", ran.stderr);
    assert!(!out.exists(), "a partial perf.data was left");
}
