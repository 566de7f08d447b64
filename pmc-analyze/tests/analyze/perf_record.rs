//! A real profile: `perf record -g` of the test program, converted to a
//! pmc-log from `perf script -D` (raw sample IPs, callchains and MMAP2
//! records), symbolized by this crate and checked against perf's own
//! symbolization of the very same frames.
//!
//! Skipped (with a message) when `perf` is missing or not allowed to record.

use crate::common;

use std::collections::HashMap;
use std::process::Command;

use common::*;
use pmc_analyze::callgraph::{write_callgraph, CallGraphOptions, CallTree, Order};
use pmc_analyze::{AnalyzeOptions, Profile, SymbolizeOptions, Symbolizer, Weight};
use pmc_log::record::{Callchain, Header, Map, Record, Sample};

const PERF_CONTEXT_KERNEL: u64 = 0xffff_ffff_ffff_ff80;
const PERF_CONTEXT_USER: u64 = 0xffff_ffff_ffff_fe00;

#[derive(Debug, Default)]
struct Converted {
    records: Vec<Record<'static>>,
    /// perf's symbol name per frame of each sample, leaf first.
    perf_names: Vec<Vec<String>>,
}

fn hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok()
}

/// `PID/TID: [0xSTART(0xLEN) @ PGOFF ...]: prot PATH`
fn parse_mmap(line: &str) -> Option<Record<'static>> {
    let rest = line.split_once("PERF_RECORD_MMAP")?.1;
    let rest = rest.trim_start_matches('2').trim_start();
    let (pid, rest) = rest.split_once('/')?;
    let pid: i32 = pid.trim().parse().ok()?;
    let inside = rest.split_once('[')?.1;
    let (start, rest) = inside.split_once('(')?;
    let (len, rest) = rest.split_once(')')?;
    let pgoff = rest.split_once('@')?.1.split_whitespace().next()?;
    let pgoff = pgoff.trim_end_matches(']');
    let path = line
        .rsplit_once("]: ")?
        .1
        .split_once(' ')?
        .1
        .trim()
        .to_string();
    Some(Record::Map(Map {
        time: 0,
        pid,
        start: hex(start)?,
        len: hex(len)?,
        pgoff: hex(pgoff).unwrap_or(0),
        build_id: Default::default(),
        path: path.into(),
    }))
}

fn convert(dump: &str) -> Converted {
    let mut out = Converted::default();
    let mut comms: HashMap<i32, String> = HashMap::new();
    let mut lines = dump.lines().peekable();
    while let Some(line) = lines.next() {
        if line.contains("PERF_RECORD_MMAP") && line.contains(": [0x") {
            if let Some(r) = parse_mmap(line) {
                out.records.push(r);
            }
            continue;
        }
        if let Some(rest) = line.split_once("PERF_RECORD_FORK(").map(|x| x.1) {
            // "(child_pid:child_tid):(parent_pid:parent_tid)"
            let nums: Vec<i32> = rest
                .split(|c: char| !c.is_ascii_digit())
                .filter(|t| !t.is_empty())
                .filter_map(|t| t.parse().ok())
                .collect();
            if let [cp, ct, pp, pt, ..] = nums[..] {
                out.records.push(Record::Fork(pmc_log::record::Fork {
                    time: 0,
                    parent_pid: pp,
                    parent_tid: pt,
                    child_pid: cp,
                    child_tid: ct,
                }));
            }
            continue;
        }
        if let Some(rest) = line.split_once("PERF_RECORD_COMM exec: ").map(|x| x.1) {
            // "name:pid/tid": an exec empties the address space.
            if let Some((name, ids)) = rest.trim().rsplit_once(':') {
                if let Some((pid, tid)) = ids.split_once('/') {
                    if let (Ok(pid), Ok(tid)) = (pid.parse::<i32>(), tid.parse::<i32>()) {
                        comms.insert(pid, name.to_string());
                        let mut r = comm(pid, name);
                        if let Record::Comm(c) = &mut r {
                            c.tid = tid;
                        }
                        out.records.push(r);
                    }
                }
            }
            continue;
        }
        if !line.contains("PERF_RECORD_SAMPLE(") {
            continue;
        }
        // "...: PID/TID: 0xIP period: N addr: 0"
        let after = line.split_once("): ").map(|x| x.1).unwrap_or_default();
        let (pidtid, rest) = after.split_once(": ").unwrap_or_default();
        let (pid, tid) = pidtid.split_once('/').unwrap_or_default();
        let (Ok(pid), Ok(tid)) = (pid.parse::<i32>(), tid.parse::<i32>()) else {
            continue;
        };
        let period = rest
            .split_once("period: ")
            .and_then(|x| x.1.split_whitespace().next())
            .and_then(|p| p.parse::<u64>().ok())
            .unwrap_or(1);
        let mut raw = Vec::new();
        let mut perf_names = Vec::new();
        let mut comm = None;
        while let Some(l) = lines.peek() {
            let t = l.trim();
            if t.is_empty() && !perf_names.is_empty() {
                break;
            }
            if t.starts_with("0x") && t.contains("@") && t.contains("event:") {
                break; // next record
            }
            if let Some(f) = t.strip_prefix(".....") {
                if let Some((_, v)) = f.split_once(':') {
                    if let Some(v) = hex(v) {
                        raw.push(v);
                    }
                }
            } else if let Some(th) = t.strip_prefix("... thread:") {
                comm = th.trim().rsplit_once(':').map(|(c, _)| c.to_string());
            } else if l.starts_with('\t') {
                // "\t addr sym+off (dso)"
                let mut it = t.splitn(2, ' ');
                let _addr = it.next();
                let sym = it.next().unwrap_or("").trim();
                let sym = sym.rsplit_once(" (").map_or(sym, |x| x.0);
                let sym = sym.rsplit_once("+0x").map_or(sym, |x| x.0);
                perf_names.push(sym.to_string());
            }
            lines.next();
        }
        if let Some(c) = comm {
            if comms.get(&pid) != Some(&c) {
                comms.insert(pid, c.clone());
                out.records.push(comm_record(pid, &c));
            }
        }
        // Markers out; the frames after PERF_CONTEXT_KERNEL are kernel.
        let mut frames = Vec::new();
        let mut kernel_frames = 0u32;
        let mut in_kernel = false;
        for v in raw {
            match v {
                PERF_CONTEXT_KERNEL => in_kernel = true,
                PERF_CONTEXT_USER => in_kernel = false,
                v if v >= 0xffff_ffff_ffff_f001 => {}
                v => {
                    frames.push(v);
                    if in_kernel {
                        kernel_frames += 1;
                    }
                }
            }
        }
        if frames.is_empty() {
            continue;
        }
        out.records.push(Record::Sample(Sample {
            time: 0,
            pmc_id: 0,
            pid,
            tid,
            cpu: None,
            period,
            callchain: Callchain::from_vec(frames),
            kernel_frames,
            raw: Default::default(),
        }));
        out.perf_names.push(perf_names);
    }
    out
}

fn comm_record(pid: i32, c: &str) -> Record<'static> {
    let mut r = comm(pid, c);
    if let Record::Comm(x) = &mut r {
        x.exec = false;
    }
    r
}

/// `perf record -g` a command and convert the result to a pmc-log.
/// `None` (with a message) when perf cannot record here.
fn record(dir: &std::path::Path, cmd: &[&std::ffi::OsStr]) -> Option<(Vec<u8>, Converted)> {
    let data = dir.join("perf.data");
    let rec = Command::new("perf")
        .args(["record", "-q", "-e", "cpu-clock", "-F", "2000", "-g", "-o"])
        .arg(&data)
        .arg("--")
        .args(cmd)
        .output();
    match rec {
        Ok(r) if r.status.success() => {}
        Ok(r) => {
            pmc_testkit::skip!("perf record failed: {}", String::from_utf8_lossy(&r.stderr));
            return None;
        }
        Err(e) => {
            pmc_testkit::skip!("perf not runnable: {e}");
            return None;
        }
    }
    let dump = Command::new("perf")
        .args(["script", "-D", "-i"])
        .arg(&data)
        .output()
        .expect("perf script");
    let dump = String::from_utf8_lossy(&dump.stdout);
    let conv = convert(&dump);

    // Write the pmc-log, with this kernel's release so kallsyms is used.
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let header = Header {
        os: "Linux".into(),
        kernel_release: release.trim().to_string().into(),
        page_size: 4096,
        ..Header::default()
    };
    let mut w = pmc_log::Writer::new(Vec::new(), &header).expect("writer");
    w.write(&pmc(0, "cpu-clock")).expect("w");
    for r in &conv.records {
        w.write(r).expect("w");
    }
    Some((w.finish().expect("finish"), conv))
}

/// Resolve every frame of `log` and compare with perf's names:
/// `(agree, total)`, printing the disagreements.
fn compare_with_perf(log: &[u8], conv: &Converted) -> (usize, usize) {
    let mut sym = Symbolizer::new(SymbolizeOptions::default());
    let mut i = 0usize;
    let (mut agree, mut total) = (0usize, 0usize);
    let mut disagreements: HashMap<(String, String), usize> = HashMap::new();
    for r in pmc_log::Reader::new(log).expect("reader").records() {
        sym.observe(&r);
        let Record::Sample(s) = &r else { continue };
        let Some(names) = conv.perf_names.get(i) else {
            break;
        };
        i += 1;
        let mut ids = Vec::new();
        sym.resolve_callchain(s.pid, s.callchain.iter(), s.kernel_frames, &mut ids);
        ids.reverse(); // leaf first, as perf prints
        for (id, perf) in ids.iter().zip(names) {
            let ours = &sym.functions()[*id as usize].name;
            total += 1;
            // perf prints C++ names without parameters, and versioned
            // dynamic symbols with their version.
            let ours_short = ours.split('(').next().unwrap_or(ours);
            let perf_short = perf.split('@').next().unwrap_or(perf);
            if ours == perf
                || ours_short == perf_short
                || (perf == "[unknown]" && ours.starts_with('['))
            {
                agree += 1;
            } else {
                *disagreements
                    .entry((perf.clone(), ours.clone()))
                    .or_default() += 1;
            }
        }
    }
    let mut d: Vec<_> = disagreements.into_iter().collect();
    d.sort_by_key(|x| std::cmp::Reverse(x.1));
    for ((perf, ours), n) in d.iter().take(20) {
        println!("  perf {perf:?} vs ours {ours:?}: {n}");
    }
    (agree, total)
}

/// Profile any command: `PMC_ANALYZE_PERF_CMD="cmd args" cargo test --release
/// -p pmc-analyze --test analyze perf_record:: -- --ignored --nocapture`.
#[test]
#[ignore]
fn perf_record_any_command() {
    let Ok(cmd) = std::env::var("PMC_ANALYZE_PERF_CMD") else {
        println!("set PMC_ANALYZE_PERF_CMD");
        return;
    };
    let dir = scratch("perf-any");
    let args: Vec<&std::ffi::OsStr> = cmd.split_whitespace().map(std::ffi::OsStr::new).collect();
    let Some((log, conv)) = record(&dir, &args) else {
        return;
    };
    let t = std::time::Instant::now();
    let p = Profile::from_log(&log, AnalyzeOptions::default()).expect("profile");
    println!(
        "{} samples, {} frames, {} functions: analysed in {:.3} s",
        p.stats.samples,
        p.stats.frames,
        p.functions.len(),
        t.elapsed().as_secs_f64()
    );
    for w in &p.warnings {
        println!("warning: {w}");
    }
    let (agree, total) = compare_with_perf(&log, &conv);
    println!("{agree}/{total} frames agree with perf");
    let top = pmc_analyze::top::TopReport::build(&p, &Default::default());
    let mut out = Vec::new();
    top.write_text(&mut out).expect("text");
    println!("{}", String::from_utf8_lossy(&out));
}

#[test]
fn perf_record_profile_matches_perf() {
    let dir = scratch("perf");
    let prog = compile(&dir, "prog", &[]);
    let Some((log, conv)) = record(&dir, &[prog.as_os_str(), std::ffi::OsStr::new("150000000")])
    else {
        return;
    };
    let nsamples = conv.perf_names.len();
    assert!(nsamples >= 50, "only {nsamples} samples from perf");

    // Frame by frame against perf's names.
    let (agree, total) = compare_with_perf(&log, &conv);
    println!("{nsamples} samples, {total} frames, {agree} agree with perf");
    assert!(total > 0);
    assert!(
        agree as f64 >= 0.98 * total as f64,
        "only {agree}/{total} frames agree with perf"
    );

    // The call graph of the real profile.
    let p = Profile::from_log(&log, AnalyzeOptions::default()).expect("profile");
    let tree = CallTree::build(&p, None, Order::Callers, Weight::Samples);
    let mut text = Vec::new();
    write_callgraph(&p, &CallGraphOptions::default(), &mut text).expect("write");
    let text = String::from_utf8(text).expect("utf8");
    println!("{text}");
    // With glibc, main sits under __libc_start_call_main / __libc_start_main.
    let main_root = tree
        .find_path(&p, &["__libc_start_call_main", "main", "outer", "hot_leaf"])
        .or_else(|| tree.find_path(&p, &["main", "outer", "hot_leaf"]))
        .expect("hot_leaf under outer under main");
    let hot = tree.nodes[main_root].total;
    assert!(
        hot as f64 >= 0.5 * tree.total as f64,
        "hot_leaf has {hot} of {} samples",
        tree.total
    );
    let mut svg = Vec::new();
    pmc_analyze::flame::write_flamegraph(
        &p,
        &pmc_analyze::flame::FlameGraphOptions {
            palette: Some("java".into()),
            ..Default::default()
        },
        &mut svg,
    )
    .expect("svg");
    assert!(String::from_utf8_lossy(&svg).contains("hot_leaf"));
    if let Ok(path) = std::env::var("PMC_ANALYZE_PERF_SVG_OUT") {
        std::fs::write(path, &svg).expect("save svg");
    }
    let sum: f64 = text
        .lines()
        .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()))
        .filter_map(|l| l.split('%').next()?.parse::<f64>().ok())
        .sum();
    assert!((sum - 100.0).abs() <= 0.1, "top-level lines add to {sum}");
}
