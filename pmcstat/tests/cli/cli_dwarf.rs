//! `--call-graph dwarf`: call graphs of code built without frame pointers, judged by
//! `perf record --call-graph dwarf` on the same binary.
//!
//! The programs call one hot leaf from two callers in a known ratio (3:1, interleaved round
//! by round so that a busy host cannot favour one caller), so each tool's
//! share of `hot_leaf` samples under each caller is a number that can be compared. A C
//! program at `-O1 -fomit-frame-pointer` (where the kernel's frame-pointer walk loses the
//! callers, the control), a program with frame pointers whose leaf takes an exact number of
//! page faults under each caller (both modes must find each caller's exact count), and a
//! Rust release binary.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;
use common::command as pmcstat;

const PROG: &str = r#"
#include <stdlib.h>
#include <stdio.h>
volatile unsigned long sink, zero;
/* Each call's length varies (50,000 to 150,000 iterations, the same sequence every run), so
   a sampling timer cannot lock onto the rounds' period and see one caller more than its
   share; the callers' average lengths are equal. */
static unsigned long lcg = 1;
static unsigned long jitter(void) {
    lcg = lcg * 6364136223846793005UL + 1442695040888963407UL;
    return 50000 + (lcg >> 33) % 100001;
}
__attribute__((noinline)) unsigned long hot_leaf(unsigned long n) {
    unsigned long x = 0;
    for (unsigned long i = 0; i < n; i++) x += i * i ^ (x >> 3);
    return x;
}
__attribute__((noinline)) unsigned long outer_caller(int rounds) {
    unsigned long t = 0;
    for (int r = 0; r < rounds; r++) t += hot_leaf(jitter() + zero);
    return t;
}
__attribute__((noinline)) unsigned long side_caller(int rounds) {
    unsigned long t = 7;
    for (int r = 0; r < rounds; r++) t ^= hot_leaf(jitter() + zero);
    return t;
}
int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 1000;
    /* Interleaved, so that a busy host slowing one phase cannot move the 3:1 split. */
    for (int i = 0; i < rounds; i++) {
        sink += outer_caller(3);
        sink ^= side_caller(1);
    }
    printf("%lu\n", sink);
    return 0;
}
"#;

/// hot_leaf writes one fresh page per call, so sampling page-faults at period 1 gives
/// exactly one hot_leaf sample per call: 3 per round under outer_caller, 1 under
/// side_caller. The truth is the program's own call counts, not a sample share, so a busy
/// host or a timer aliasing with the rounds cannot move it.
const FAULT_PROG: &str = r#"
#include <stdlib.h>
#include <stdio.h>
#include <sys/mman.h>
static char *pages;
static unsigned long next_page;
__attribute__((noinline)) void hot_leaf(void) {
    pages[next_page++ * 4096] = 1;
}
__attribute__((noinline)) void outer_caller(int calls) {
    for (int c = 0; c < calls; c++) hot_leaf();
}
__attribute__((noinline)) void side_caller(int calls) {
    for (int c = 0; c < calls; c++) hot_leaf();
}
int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 500;
    size_t len = (size_t)rounds * 4 * 4096;
    pages = mmap(0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pages == MAP_FAILED) return 2;
    madvise(pages, len, MADV_NOHUGEPAGE);
    for (int i = 0; i < rounds; i++) {
        outer_caller(3);
        side_caller(1);
    }
    printf("%lu\n", next_page);
    return 0;
}
"#;

const RUST_PROG: &str = r#"
use std::hint::black_box;
#[inline(never)]
fn hot_leaf(n: u64) -> u64 {
    let mut x = 0u64;
    for i in 0..n {
        x = x.wrapping_add(black_box(i).wrapping_mul(i) ^ (x >> 3));
    }
    x
}
// Each call's length varies (the same sequence every run), so a sampling timer cannot lock
// onto the rounds' period; the callers' average lengths are equal.
static LCG: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
fn jitter() -> u64 {
    use std::sync::atomic::Ordering::Relaxed;
    let x = LCG
        .load(Relaxed)
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    LCG.store(x, Relaxed);
    50_000 + (x >> 33) % 100_001
}
#[inline(never)]
fn outer_caller(rounds: u64) -> u64 {
    let mut t = 0u64;
    for _ in 0..rounds {
        t = t.wrapping_add(hot_leaf(black_box(jitter())));
    }
    t
}
#[inline(never)]
fn side_caller(rounds: u64) -> u64 {
    let mut t = 7u64;
    for _ in 0..rounds {
        t ^= hot_leaf(black_box(jitter()));
    }
    t
}
fn main() {
    let rounds: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    // Interleaved, so that a busy host slowing one phase cannot move the 3:1 split.
    let mut t = 0u64;
    for _ in 0..rounds {
        t = t.wrapping_add(outer_caller(black_box(3)));
        t ^= side_caller(black_box(1));
    }
    println!("{t}");
}
"#;

/// Rounds giving about 1.5 s of work (hot_leaf at ~1 ns per iteration).
const ROUNDS: &str = "3500";

fn workdir(name: &str) -> PathBuf {
    pmc_testkit::workdir(&format!("pmcstat-dwarf-{name}"))
}

fn have(tool: &str, arg: &str) -> bool {
    pmc_testkit::cli::works(tool, &[arg])
}

/// Builds PROG, or records a skip saying why not.
fn cc(dir: &Path, name: &str, flags: &[&str]) -> Option<PathBuf> {
    pmc_testkit::cc::build(dir, name, PROG, flags)
}

/// The function name without its path (`prog::hot_leaf` -> `hot_leaf`), and without
/// perf's ` (inlined)` note.
fn short(name: &str) -> &str {
    let name = name.trim_end_matches(" (inlined)");
    name.rsplit("::").next().unwrap_or(name)
}

/// Shares of `hot_leaf` samples by caller: (samples with hot_leaf, under outer_caller,
/// under side_caller, reaching main above the caller). `chains` are root-first names.
fn shares(chains: &[Vec<String>]) -> (usize, f64, f64, f64) {
    let (mut n, mut outer, mut side, mut main) = (0, 0, 0, 0);
    for c in chains {
        let Some(i) = c.iter().rposition(|f| short(f) == "hot_leaf") else {
            continue;
        };
        n += 1;
        let parent = i.checked_sub(1).map(|p| short(&c[p]));
        match parent {
            Some("outer_caller") => outer += 1,
            Some("side_caller") => side += 1,
            _ => {}
        }
        if i >= 2 && c[..i - 1].iter().any(|f| short(f) == "main") {
            main += 1;
        }
    }
    let f = |k: usize| k as f64 / n.max(1) as f64;
    (n, f(outer), f(side), f(main))
}

/// Records `exe` with pmcstat in `mode` (`fp` or `dwarf`) and returns (root-first chains
/// from `-R --folded`, log bytes, samples).
fn record(dir: &Path, exe: &Path, mode: &str) -> (Vec<Vec<String>>, u64, usize) {
    record_event(
        dir,
        exe,
        mode,
        &["-P", "cpu-clock", "--freq", "1000"],
        ROUNDS,
    )
}

/// Records `exe rounds` with pmcstat's `event` arguments in `mode`, as [`record`].
fn record_event(
    dir: &Path,
    exe: &Path,
    mode: &str,
    event: &[&str],
    rounds: &str,
) -> (Vec<Vec<String>>, u64, usize) {
    let log = dir.join(format!("{}.pmclog", mode.replace(',', "-")));
    let out = pmcstat()
        .args(event)
        .args(["--call-graph", mode, "-O"])
        .arg(&log)
        .arg("--")
        .arg(exe)
        .arg(rounds)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    eprintln!("pmcstat {mode}: {err}");
    let folded = pmcstat()
        .args(["-R"])
        .arg(&log)
        .args(["--folded", "-"])
        .output()
        .unwrap();
    assert!(folded.status.success());
    let mut chains = Vec::new();
    let mut samples = 0;
    for l in String::from_utf8_lossy(&folded.stdout).lines() {
        let Some((stack, n)) = l.rsplit_once(' ') else {
            continue;
        };
        let n: usize = n.parse().unwrap_or(0);
        samples += n;
        let frames: Vec<String> = stack.split(';').map(str::to_owned).collect();
        for _ in 0..n {
            chains.push(frames.clone());
        }
    }
    (chains, std::fs::metadata(&log).unwrap().len(), samples)
}

/// `perf record --call-graph dwarf` on `exe`: (root-first chains from perf script, perf.data
/// bytes, samples).
fn perf_record(dir: &Path, exe: &Path) -> (Vec<Vec<String>>, u64, usize) {
    let data = dir.join("perf.data");
    let rec = Command::new("perf")
        .args([
            "record",
            "-q",
            "-e",
            "cpu-clock",
            "-F",
            "1000",
            "--call-graph",
            "dwarf",
            "-o",
        ])
        .arg(&data)
        .arg("--")
        .arg(exe)
        .arg(ROUNDS)
        .output()
        .unwrap();
    assert!(
        rec.status.success(),
        "{}",
        String::from_utf8_lossy(&rec.stderr)
    );
    let script = Command::new("perf")
        .args(["script", "-F", "ip,sym", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&script.stdout);
    let mut chains = Vec::new();
    for block in text.split("\n\n") {
        let mut frames: Vec<String> = block
            .lines()
            .filter_map(|l| {
                let mut it = l.split_whitespace();
                let _ip = it.next()?;
                Some(it.collect::<Vec<_>>().join(" "))
            })
            .filter(|f| !f.is_empty())
            .collect();
        if frames.is_empty() {
            continue;
        }
        frames.reverse();
        chains.push(frames);
    }
    let n = chains.len();
    (chains, std::fs::metadata(&data).unwrap().len(), n)
}

#[test]
fn dwarf_call_graph_of_a_c_program_without_frame_pointers_matches_perf() {
    let dir = workdir("c");
    let Some(exe) = cc(&dir, "prog", &["-O1", "-fomit-frame-pointer"]) else {
        return;
    };

    // The control: frame pointers lose hot_leaf's callers in this build.
    let (fp, _, _) = record(&dir, &exe, "fp");
    let (n, outer, side, _) = shares(&fp);
    eprintln!("fp: {n} hot_leaf samples, under outer {outer:.3}, under side {side:.3}");
    assert!(n > 300, "{n} hot_leaf samples");
    assert!(
        outer + side < 0.5,
        "frame pointers found the callers ({outer:.3} + {side:.3}): the control does not hold"
    );

    let (dw, log_bytes, samples) = record(&dir, &exe, "dwarf");
    let (n, outer, side, main) = shares(&dw);
    eprintln!(
        "dwarf: {n} hot_leaf samples, under outer {outer:.3}, side {side:.3}, reaching main {main:.3}"
    );
    assert!(n > 300, "{n} hot_leaf samples");
    assert!(
        outer + side >= 0.95,
        "callers found for {:.3}",
        outer + side
    );
    assert!(main >= 0.95, "main reached for {main:.3}");
    assert!(
        (0.6..=0.9).contains(&outer),
        "outer share {outer:.3} (3:1 expected)"
    );

    if !have("perf", "--version") {
        pmc_testkit::skip!("perf agreement part: perf is not installed");
        return;
    }
    let (pc, perf_bytes, perf_samples) = perf_record(&dir, &exe);
    let (pn, pouter, pside, pmain) = shares(&pc);
    eprintln!(
        "perf: {pn} hot_leaf samples, under outer {pouter:.3}, side {pside:.3}, reaching main {pmain:.3}"
    );
    assert!(pn > 300, "perf: {pn} hot_leaf samples");
    assert!(
        (outer - pouter).abs() <= 0.05 && (side - pside).abs() <= 0.05,
        "pmcstat {outer:.3}/{side:.3} vs perf {pouter:.3}/{pside:.3}"
    );
    // What the log costs: at most 1/20 of perf.data's bytes per sample.
    let ours = log_bytes as f64 / samples.max(1) as f64;
    let theirs = perf_bytes as f64 / perf_samples.max(1) as f64;
    eprintln!(
        "bytes per sample: pmc-log {ours:.0}, perf.data {theirs:.0} ({:.1}x)",
        theirs / ours
    );
    assert!(
        ours * 20.0 <= theirs,
        "{ours:.0} vs {theirs:.0} bytes per sample"
    );
}

/// Counts of `hot_leaf` samples by caller: (under outer_caller, under side_caller, reaching
/// main above the caller).
fn counts(chains: &[Vec<String>]) -> (usize, usize, usize) {
    let (mut outer, mut side, mut main) = (0, 0, 0);
    for c in chains {
        let Some(i) = c.iter().rposition(|f| short(f) == "hot_leaf") else {
            continue;
        };
        match i.checked_sub(1).map(|p| short(&c[p])) {
            Some("outer_caller") => outer += 1,
            Some("side_caller") => side += 1,
            _ => {}
        }
        if i >= 2 && c[..i - 1].iter().any(|f| short(f) == "main") {
            main += 1;
        }
    }
    (outer, side, main)
}

#[test]
fn frame_pointer_build_gives_the_same_call_graph_both_ways() {
    let dir = workdir("fp");
    let Some(exe) = pmc_testkit::cc::build(
        &dir,
        "faults",
        FAULT_PROG,
        // -O0: gcc 12 drops leaf frame pointers at -O1 even with
        // -mno-omit-leaf-frame-pointer, and then frame pointers skip the leaf's caller.
        &["-O0", "-fno-omit-frame-pointer"],
    ) else {
        return;
    };
    // Every page fault a sample; 500 rounds are 1,500 calls under outer_caller and 500
    // under side_caller, each one fresh page. The calls take a few milliseconds, so the ring
    // holds every sample even if pmcstat is not scheduled to drain it meanwhile: 8 MiB for
    // about 2,100 samples of 2 KiB of stack each (main's frame is well within 2 KiB).
    const ROUNDS: usize = 500;
    let event = ["-P", "page-faults", "-n", "1", "--mmap-pages", "2048"];
    let rounds = ROUNDS.to_string();
    let (fp, _, fp_samples) = record_event(&dir, &exe, "fp", &event, &rounds);
    let (dw, _, dw_samples) = record_event(&dir, &exe, "dwarf,2048", &event, &rounds);
    let (o1, s1, m1) = counts(&fp);
    let (o2, s2, m2) = counts(&dw);
    eprintln!(
        "fp {fp_samples} samples: outer {o1}, side {s1}, main {m1}; \
         dwarf {dw_samples} samples: outer {o2}, side {s2}, main {m2}"
    );
    let want = (3 * ROUNDS, ROUNDS, 4 * ROUNDS);
    assert_eq!((o1, s1, m1), want, "frame pointers: (outer, side, main)");
    assert_eq!((o2, s2, m2), want, "DWARF: (outer, side, main)");
}

#[test]
fn dwarf_call_graph_of_a_rust_release_binary_matches_perf() {
    let dir = workdir("rust");
    let src = dir.join("prog.rs");
    std::fs::write(&src, RUST_PROG).unwrap();
    let exe = dir.join("rprog");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let built = Command::new(&rustc)
        .args([
            "-C",
            "opt-level=3",
            "-C",
            "debuginfo=0",
            "--edition",
            "2021",
            "-o",
        ])
        .arg(&exe)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    if !built {
        pmc_testkit::skip!("no rustc to build the Rust test program");
        return;
    }
    let (dw, _, _) = record(&dir, &exe, "dwarf");
    let (n, outer, side, main) = shares(&dw);
    eprintln!("rust dwarf: {n}: {outer:.3}/{side:.3}/{main:.3}");
    assert!(n > 300, "{n} hot_leaf samples");
    assert!(
        outer + side >= 0.95,
        "callers found for {:.3}",
        outer + side
    );
    assert!(main >= 0.95, "main reached for {main:.3}");
    if !have("perf", "--version") {
        pmc_testkit::skip!("perf agreement part: perf is not installed");
        return;
    }
    let (pc, _, _) = perf_record(&dir, &exe);
    let (pn, pouter, pside, _) = shares(&pc);
    eprintln!("rust perf: {pn}: {pouter:.3}/{pside:.3}");
    assert!(pn > 300);
    assert!(
        (outer - pouter).abs() <= 0.05 && (side - pside).abs() <= 0.05,
        "pmcstat {outer:.3}/{side:.3} vs perf {pouter:.3}/{pside:.3}"
    );
}

#[test]
fn call_graph_values_are_checked() {
    for bad in ["dwarf,70000", "dwarf,x", "lbr", "dwarf,0"] {
        let out = pmcstat()
            .args(["-P", "cpu-clock", "--call-graph", bad, "--", "true"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "--call-graph {bad}");
    }
    let out = pmcstat()
        .args([
            "-P",
            "cpu-clock",
            "-N",
            "--call-graph",
            "dwarf",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "-N with --call-graph dwarf");
}

/// Chains from `pmcstat -R LOG [-r ROOT] --folded -`, and its stderr.
fn read_back(log: &Path, root: Option<&Path>) -> (Vec<Vec<String>>, String) {
    let mut cmd = pmcstat();
    cmd.arg("-R").arg(log);
    if let Some(r) = root {
        cmd.arg("-r").arg(r);
    }
    let out = cmd.args(["--folded", "-"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut chains = Vec::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((stack, n)) = l.rsplit_once(' ') else {
            continue;
        };
        for _ in 0..n.parse::<usize>().unwrap_or(0) {
            chains.push(stack.split(';').map(str::to_owned).collect());
        }
    }
    (chains, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// `--call-graph dwarf-raw`: the stacks go into the log (kilobytes per sample) and `-R`
/// unwinds them with the same code, giving the call graph `dwarf` gives while recording.
/// When the binary is gone, the unwind stops at it and says so; `-r DIR` with a copy of it
/// brings the call graph back.
#[test]
fn dwarf_raw_keeps_stacks_and_unwinds_when_the_log_is_read() {
    let dir = workdir("raw");
    let Some(exe) = cc(&dir, "prog", &["-O1", "-fomit-frame-pointer"]) else {
        return;
    };
    let usage = pmcstat()
        .args(["-P", "cpu-clock", "--call-graph", "dwarf-raw", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(usage.status.code(), Some(2), "dwarf-raw without -O");

    let log = dir.join("raw.pmclog");
    let out = pmcstat()
        .args([
            "-P",
            "cpu-clock",
            "--freq",
            "1000",
            "--call-graph",
            "dwarf-raw",
            "-O",
        ])
        .arg(&log)
        .arg("--")
        .arg(&exe)
        .arg(ROUNDS)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (chains, err) = read_back(&log, None);
    let (n, outer, side, main) = shares(&chains);
    eprintln!("raw: {n}: {outer:.3}/{side:.3}/{main:.3}; {err}");
    assert!(n > 300, "{n} hot_leaf samples");
    assert!(
        outer + side >= 0.95 && main >= 0.95,
        "{outer:.3}+{side:.3}, main {main:.3}"
    );
    assert!((0.6..=0.9).contains(&outer), "outer share {outer:.3}");
    assert!(err.contains("unwound from the log's stacks"), "{err}");
    // The stacks are in the file: kilobytes per sample.
    let per_sample = std::fs::metadata(&log).unwrap().len() / n as u64;
    assert!(per_sample > 1000, "{per_sample} bytes per sample");

    // The binary is gone: its frames end the unwind, and -R says why.
    let root = dir.join("root");
    let copy = root.join(exe.strip_prefix("/").unwrap());
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::rename(&exe, &copy).unwrap();
    let (chains, err) = read_back(&log, None);
    let (_, outer, side, _) = shares(&chains);
    assert!(
        outer + side < 0.5,
        "callers without the binary: {outer:.3}+{side:.3}"
    );
    assert!(err.contains("no unwinding through"), "{err}");

    // -r DIR holding the binary at its path: the call graph is back.
    let (chains, err) = read_back(&log, Some(&root));
    let (n, outer, side, main) = shares(&chains);
    eprintln!("raw with -r: {n}: {outer:.3}/{side:.3}/{main:.3}; {err}");
    assert!(
        outer + side >= 0.95 && main >= 0.95,
        "{outer:.3}+{side:.3}, main {main:.3}"
    );
}
