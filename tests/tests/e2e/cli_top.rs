//! `pmcstat -T`, the top(1)-like view, driven as a person would: in a real
//! terminal (tmux), read back from the screen, with pmcstat(8)'s keys.
#![cfg(target_os = "linux")]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use pmc_tests::{pmcstat_path, skip};

const WORKLOAD: &str = env!("CARGO_BIN_EXE_pmc-workload");

/// A tmux session that is killed when dropped.
struct Tmux {
    name: String,
}

impl Tmux {
    fn start(tag: &str, command: &str) -> Option<Tmux> {
        let name = format!("pmc-{tag}-{}", std::process::id());
        let ok = Command::new("tmux")
            .args([
                "new-session",
                "-d",
                "-s",
                &name,
                "-x",
                "160",
                "-y",
                "40",
                command,
            ])
            .status()
            .ok()?
            .success();
        ok.then_some(Tmux { name })
    }

    fn screen(&self) -> String {
        Command::new("tmux")
            .args(["capture-pane", "-p", "-t", &self.name])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }

    fn keys(&self, keys: &str) {
        let _ = Command::new("tmux")
            .args(["send-keys", "-t", &self.name, keys])
            .status();
    }

    /// Waits until the screen satisfies `what` (a generous deadline for a
    /// loaded machine; this is not a timing assertion), returning it.
    fn wait_for(&self, why: &str, what: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let s = self.screen();
            if what(&s) {
                return s;
            }
            assert!(Instant::now() < deadline, "screen never showed {why}:\n{s}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.name])
            .status();
    }
}

fn tmux_available() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The running processes whose command line starts with `prefix`.
fn processes_starting_with(prefix: &str) -> usize {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|c| {
            let line: Vec<u8> = c.iter().map(|&b| if b == 0 { b' ' } else { b }).collect();
            line.starts_with(prefix.as_bytes())
        })
        .count()
}

#[test]
fn live_top_view_takes_pmcstats_keys_and_quits_cleanly() {
    let name = "live_top_view_takes_pmcstats_keys_and_quits_cleanly";
    let Some(bin) = pmcstat_path() else {
        skip!(name, "pmcstat binary not built");
        return;
    };
    if !tmux_available() {
        skip!(name, "tmux is not installed");
        return;
    }
    // A duration no other test uses, to find this workload by command line.
    let spin = format!("{WORKLOAD} spin-cpu-ms 86421");
    let cmd = format!(
        "{} -T -w 0.3 -P cpu-clock --freq 1000 -- {spin}; echo PMCSTAT-EXIT=$?; sleep 60",
        bin.display()
    );
    let Some(t) = Tmux::start("top", &cmd) else {
        skip!(name, "tmux could not start a session");
        return;
    };
    let s = t.wait_for("the hot function", |s| {
        s.contains("PMC: cpu-clock.0 Samples:") && s.contains("pmc_tests::spin_cpu")
    });
    assert!(
        s.contains("%SAMP") && s.contains("FUNCTION") && s.contains("[delta]"),
        "{s}"
    );
    t.keys("n");
    t.wait_for("the objects display", |s| {
        s.contains("switching to objects") && s.contains("pmc-workload") && !s.contains("FUNCTION")
    });
    t.keys("c");
    t.keys("a");
    t.wait_for("accumulation mode", |s| s.contains("[accumulate]"));
    t.keys(" ");
    t.wait_for("the pause", |s| s.contains("paused"));
    t.keys(" ");
    t.keys("q");
    let s = t.wait_for("pmcstat's exit", |s| s.contains("PMCSTAT-EXIT="));
    // The exit status is the command's, as on any other stop: it died of the SIGTERM
    // that `q` sent it (128 + 15).
    assert!(
        s.contains("PMCSTAT-EXIT=143"),
        "q: the command's status: {s}"
    );
    // The launched command got SIGTERM and was waited for: nothing is left.
    assert_eq!(
        processes_starting_with(&spin),
        0,
        "the command outlived pmcstat"
    );
}

/// pmcstat(8)'s `pmcstat -TS SPEC`: system-wide, no command, until `q`.
#[test]
fn system_top_view_without_a_command_runs_until_q() {
    let name = "system_top_view_without_a_command_runs_until_q";
    let Some(bin) = pmcstat_path() else {
        skip!(name, "pmcstat binary not built");
        return;
    };
    if !tmux_available() {
        skip!(name, "tmux is not installed");
        return;
    }
    let cmd = format!(
        "{} -TS cpu-clock -w 0.3; echo PMCSTAT-EXIT=$?; sleep 60",
        bin.display()
    );
    let Some(t) = Tmux::start("top-system", &cmd) else {
        skip!(name, "tmux could not start a session");
        return;
    };
    let s = t.wait_for("the view or pmcstat's exit", |s| {
        s.contains("PMC: cpu-clock") || s.contains("PMCSTAT-EXIT=")
    });
    assert!(
        !s.contains("PMCSTAT-EXIT="),
        "pmcstat -TS ended by itself: {s}"
    );
    t.wait_for("samples", |s| s.contains("Samples:") && s.contains("%SAMP"));
    t.keys("q");
    let s = t.wait_for("pmcstat's exit", |s| s.contains("PMCSTAT-EXIT="));
    // No command: `q` is a clean stop: 0, or 3 when samples were lost, which pmcstat
    // says (a loaded machine: one CI rehearsal lost 115,143 of a debug pmcstat's
    // system-wide samples while other tests ran).
    let lost = s.contains("PMCSTAT-EXIT=3") && s.contains("samples were lost");
    assert!(s.contains("PMCSTAT-EXIT=0") || lost, "{s}");
}

#[test]
fn replayed_top_view_ends_on_the_whole_log() {
    let name = "replayed_top_view_ends_on_the_whole_log";
    let Some(bin) = pmcstat_path() else {
        skip!(name, "pmcstat binary not built");
        return;
    };
    if !tmux_available() {
        skip!(name, "tmux is not installed");
        return;
    }
    let log = std::env::temp_dir().join(format!("pmc-top-replay-{}.pmclog", std::process::id()));
    let rec = Command::new(&bin)
        .args(["-P", "cpu-clock", "--freq", "1000", "-O"])
        .arg(&log)
        .args(["--", WORKLOAD, "spin-cpu-ms", "400"])
        .output()
        .expect("record");
    assert!(rec.status.success(), "{rec:?}");
    let cmd = format!(
        "{} -R {} -T -w 0.1; echo PMCSTAT-EXIT=$?; sleep 60",
        bin.display(),
        log.display()
    );
    let Some(t) = Tmux::start("replay", &cmd) else {
        skip!(name, "tmux could not start a session");
        return;
    };
    let s = t.wait_for("the end of the replay", |s| {
        s.contains("end of log: q quits")
    });
    assert!(
        s.contains("[accumulate]") && s.contains("pmc_tests::spin_cpu"),
        "{s}"
    );
    // The final view holds every sample of the log.
    let shown: u64 = s
        .lines()
        .find_map(|l| {
            l.split("Samples: ")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .expect("a Samples: line");
    let text = Command::new(&bin)
        .args(["-R"])
        .arg(&log)
        .arg("--summary")
        .output()
        .expect("summary");
    let summary =
        String::from_utf8_lossy(&text.stdout).into_owned() + &String::from_utf8_lossy(&text.stderr);
    assert!(
        summary.contains(&format!("({shown} samples)")),
        "the replay's final view ({shown}) and --summary agree: {summary}"
    );
    t.keys("q");
    let s = t.wait_for("pmcstat's exit", |s| s.contains("PMCSTAT-EXIT="));
    assert!(s.contains("PMCSTAT-EXIT=0"), "{s}");
    drop(t);

    // The same log through a FIFO: read once as it comes (as an hwpmc log file is,
    // converted as it is read), never held whole; the final view is the same.
    let fifo = log.with_extension("fifo");
    let _ = std::fs::remove_file(&fifo);
    let made = Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        skip!(
            name,
            "mkfifo could not make a FIFO: the stream part is not run"
        );
        let _ = std::fs::remove_file(&log);
        return;
    }
    let cmd = format!(
        "(cat {log} > {fifo} &); {} -R {fifo} -T -w 0.1; echo PMCSTAT-EXIT=$?; sleep 60",
        bin.display(),
        log = log.display(),
        fifo = fifo.display()
    );
    let Some(t) = Tmux::start("replay-fifo", &cmd) else {
        skip!(name, "tmux could not start a second session");
        return;
    };
    let s = t.wait_for("the end of the streamed replay", |s| {
        s.contains("end of log: q quits") || s.contains("PMCSTAT-EXIT=")
    });
    assert!(
        s.contains(&format!("Samples: {shown}")),
        "the streamed replay shows the {shown} samples of the file's: {s}"
    );
    t.keys("q");
    let s = t.wait_for("pmcstat's exit", |s| s.contains("PMCSTAT-EXIT="));
    assert!(s.contains("PMCSTAT-EXIT=0"), "{s}");
    let _ = std::fs::remove_file(&log);
    let _ = std::fs::remove_file(&fifo);
}

#[test]
fn top_view_needs_a_terminal_and_no_log_file() {
    let Some(bin) = pmcstat_path() else {
        skip!(
            "top_view_needs_a_terminal_and_no_log_file",
            "pmcstat binary not built"
        );
        return;
    };
    let out = Command::new(&bin)
        .args(["-T", "-P", "cpu-clock", "--", "true"])
        .output()
        .expect("run pmcstat");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not a terminal")
            || String::from_utf8_lossy(&out.stderr).contains("not one"),
        "{out:?}"
    );
    let out = Command::new(&bin)
        .args([
            "-T",
            "-P",
            "cpu-clock",
            "-O",
            "/tmp/never.pmclog",
            "--",
            "true",
        ])
        .output()
        .expect("run pmcstat");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(!Path::new("/tmp/never.pmclog").exists());
}

/// `-R FIFO` opens the FIFO once. A reader that opens it, finds it is not a regular
/// file and closes it releases a writer blocked in its open (`cat log > fifo &`),
/// whose next write then fails with EPIPE: the log was lost and the second open waited
/// for a writer that was gone (the streamed replay above showed a blank screen for
/// 60 s in a loaded CI run). strace counts pmcstat's opens of the FIFO.
#[test]
fn a_fifo_log_is_opened_once() {
    let name = "a_fifo_log_is_opened_once";
    let Some(bin) = pmcstat_path() else {
        skip!(name, "pmcstat binary not built");
        return;
    };
    if !Command::new("strace")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        skip!(name, "strace is not installed: the opens cannot be counted");
        return;
    }
    let base = std::env::temp_dir().join(format!("pmc-fifo-once-{}", std::process::id()));
    let log = base.with_extension("pmclog");
    let rec = Command::new(&bin)
        .args(["-P", "cpu-clock", "--freq", "1000", "-O"])
        .arg(&log)
        .args(["--", WORKLOAD, "spin-cpu-ms", "100"])
        .output()
        .expect("record");
    assert!(rec.status.success(), "{rec:?}");
    let bytes = std::fs::read(&log).expect("the log");
    let fifo = base.with_extension("fifo");
    let _ = std::fs::remove_file(&fifo);
    if !Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success())
    {
        skip!(name, "mkfifo could not make a FIFO");
        let _ = std::fs::remove_file(&log);
        return;
    }
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            use std::io::Write;
            // Blocks in open until a reader opens the FIFO, as `cat > fifo` does.
            let mut w = std::fs::OpenOptions::new().write(true).open(&fifo)?;
            w.write_all(&bytes)
        })
    };
    let trace = base.with_extension("strace");
    // `timeout`: the defect made pmcstat wait for ever for a writer that was gone.
    let out = Command::new("timeout")
        .args(["120", "strace", "-f", "-e", "trace=open,openat", "-o"])
        .arg(&trace)
        .arg(&bin)
        .arg("-R")
        .arg(&fifo)
        .arg("--summary")
        .output()
        .expect("timeout strace pmcstat -R FIFO --summary");
    let wrote = writer.join().expect("the writer thread");
    let trace_text = std::fs::read_to_string(&trace).unwrap_or_default();
    let fifo_s = fifo.display().to_string();
    let opens = trace_text
        .lines()
        .filter(|l| l.contains(&format!("\"{fifo_s}\"")) && !l.contains("O_WRONLY"))
        .count();
    for p in [&log, &fifo, &trace] {
        let _ = std::fs::remove_file(p);
    }
    assert_eq!(
        opens, 1,
        "pmcstat opened the FIFO {opens} times:\n{trace_text}"
    );
    assert!(wrote.is_ok(), "the writer lost its reader: {wrote:?}");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && text.contains("samples)"), "{text}");
}
