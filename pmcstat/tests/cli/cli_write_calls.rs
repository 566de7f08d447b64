//! Text output at the speed of the disk: into a file or a pipe, pmcstat's
//! reports go out in large writes, not one write(2) per line (Rust's standard
//! output is line-buffered even there); where a person watches, the `-I`
//! intervals still go out as each one ends. The writes are counted with
//! `strace -c`.
#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common;
use common::PMCSTAT;

/// Samples in the log: each a line of `-R` and 8 callchain lines.
const SAMPLES: u64 = 20_000;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pmcstat-writes-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A log of [`SAMPLES`] samples with 8-frame callchains, as the benchmark's.
fn write_log(path: &Path) {
    use pmc_log::record::{Callchain, Clock, Header, Record, Sample};
    let header = Header {
        os: "Linux".into(),
        clock: Clock::Monotonic,
        ticks_per_second: 1_000_000_000,
        backend: "test".into(),
        ..Header::default()
    };
    let f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut w = pmc_log::Writer::new(f, &header).unwrap();
    let mut frames = [0u64; 8];
    for i in 0..SAMPLES {
        for (d, f) in frames.iter_mut().enumerate() {
            *f = 0x5555_0000_0000 + (i.wrapping_mul(2_654_435_761) % 4096) * 16 + d as u64 * 0x1000;
        }
        let s = Sample {
            time: 1_000_000 + i * 1000,
            pmc_id: 0,
            pid: 1000 + (i % 7) as i32,
            tid: 1000 + (i % 13) as i32,
            cpu: Some((i % 2) as u32),
            period: 65536,
            callchain: Callchain::from_frames(&frames),
            kernel_frames: 2,
            raw: Default::default(),
        };
        w.write(&Record::Sample(s)).unwrap();
    }
    w.finish().unwrap();
}

/// Runs pmcstat under `strace -f -c` with standard output and error into files:
/// (its write(2)/writev(2) calls, bytes on standard output, bytes on standard error).
fn writes(dir: &Path, args: &[&str]) -> (u64, u64, u64) {
    let (out, err, trace) = (dir.join("out"), dir.join("err"), dir.join("trace"));
    let status = Command::new("strace")
        .args(["-f", "-qq", "-c", "-e", "trace=write,writev", "-o"])
        .arg(&trace)
        .arg(PMCSTAT)
        .args(args)
        .stdout(Stdio::from(std::fs::File::create(&out).unwrap()))
        .stderr(Stdio::from(std::fs::File::create(&err).unwrap()))
        .status()
        .unwrap();
    let summary = std::fs::read_to_string(&trace).unwrap();
    let errors = std::fs::read_to_string(&err).unwrap_or_default();
    assert!(
        status.success(),
        "pmcstat {args:?}: {status}\n{errors}\n{summary}"
    );
    // strace -c's table: `% time seconds usecs/call calls [errors] syscall`.
    let calls: u64 = summary
        .lines()
        .filter(|l| matches!(l.split_whitespace().last(), Some("write" | "writev")))
        .filter_map(|l| l.split_whitespace().nth(3)?.parse::<u64>().ok())
        .sum();
    let len = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    (calls, len(&out), len(&err))
}

fn strace_works() -> bool {
    pmc_testkit::cli::works("strace", &["-f", "-qq", "-c", "-o", "/dev/null", "true"])
}

/// Every text report of `-R` into a file: at most one write(2) per 4 KiB written
/// (and a few for the messages), where it was one per line.
#[test]
fn reports_into_a_file_are_written_in_large_blocks() {
    if !strace_works() {
        pmc_testkit::skip!("strace does not run here: write(2) calls not counted");
        return;
    }
    let dir = scratch("reports");
    let log = dir.join("big.pmclog");
    write_log(&log);
    let log_s = log.to_string_lossy().into_owned();
    // (-G and --folded of this log's unmapped addresses are short: one line each.)
    for extra in [
        &[][..],
        &["--script"],
        &["--dump"],
        &["--json"],
        &["-G", "-"],
        &["--folded", "-"],
    ] {
        let mut args = vec!["-R", log_s.as_str()];
        args.extend_from_slice(extra);
        let (calls, out, err) = writes(&dir, &args);
        eprintln!("pmcstat {extra:?}: {calls} writes for {out} + {err} bytes");
        assert!(out > 0, "{extra:?}: nothing written");
        let most = (out + err) / 4096 + 20;
        assert!(
            calls <= most,
            "pmcstat -R {extra:?}: {calls} write calls for {out} bytes (at most {most})"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Counting: the table on standard error into a file is a few writes; and with
/// `-I`, every interval goes out as it ends (at least one write each) rather
/// than at exit.
#[test]
fn counts_are_buffered_and_intervals_flushed() {
    if !strace_works() {
        pmc_testkit::skip!("strace does not run here: write(2) calls not counted");
        return;
    }
    let dir = scratch("counts");
    let events = "task-clock,page-faults,context-switches";
    let (code, _, err) = common::pmcstat(&["-e", events, "--", "true"]);
    if code != 0 {
        pmc_testkit::skip!("counting not permitted here: {err}");
        return;
    }
    let (calls, _, bytes) = writes(&dir, &["-e", events, "--", "true"]);
    assert!(
        calls <= 3,
        "the table: {calls} write calls for {bytes} bytes"
    );
    let (calls, _, _) = writes(&dir, &["-I", "100", "-e", events, "--", "sleep", "0.55"]);
    let text = std::fs::read_to_string(dir.join("err")).unwrap();
    let intervals = {
        let mut times: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("task-clock"))
            .filter_map(|l| l.split_whitespace().next())
            .filter(|t| t.parse::<f64>().is_ok())
            .collect();
        times.dedup();
        times.len() as u64
    };
    assert!(intervals >= 3, "{text}");
    assert!(
        (intervals..=intervals + 4).contains(&calls),
        "{intervals} intervals, {calls} write calls: one flush per interval\n{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
