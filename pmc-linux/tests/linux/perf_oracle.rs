//! `perf` as an oracle for the record parser: `perf record` writes kernel records into
//! perf.data unchanged (plus perf's own synthesized ones); we parse its data section with
//! `ParseConfig` built from the attr in the file and compare with what `perf report --stats`
//! and `perf script` print: record counts per type, every sample (pid, tid, time, period,
//! callchain), and the sample_id trailers of FORK/EXIT/SWITCH records.
//!
//! Skips with a printed reason when `perf` is missing or cannot record.
#![cfg(target_os = "linux")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use pmc_linux::internals::record::{
    record_type as rt, ParseConfig, ParseStats, Record, RecordHeader,
};

fn u64_at(b: &[u8], off: usize) -> u64 {
    let w = b.get(off..off + 8).expect("perf.data too short");
    u64::from_ne_bytes(w.try_into().expect("8 bytes"))
}

/// perf.data: `struct perf_file_header { u64 magic, size, attr_size; perf_file_section attrs,
/// data, event_types; ... }` with `perf_file_section { u64 offset, size }`. Returns the config
/// of the first attr and the data section.
fn read_perf_data(path: &Path) -> (ParseConfig, Vec<u8>) {
    let file = std::fs::read(path).expect("read perf.data");
    assert_eq!(&file[..8], b"PERFILE2", "not a perf.data v2 file");
    let attrs_off = u64_at(&file, 24) as usize;
    let data_off = u64_at(&file, 40) as usize;
    let data_size = u64_at(&file, 48) as usize;
    // perf_event_attr: sample_type @24, read_format @32, flag bits @40 (sample_id_all = bit 18).
    let sample_type = u64_at(&file, attrs_off + 24);
    let read_format = u64_at(&file, attrs_off + 32);
    let flags = u64_at(&file, attrs_off + 40);
    let cfg = ParseConfig::new(sample_type, read_format, flags & (1 << 18) != 0);
    let data = file[data_off..data_off + data_size].to_vec();
    (cfg, data)
}

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("pmc-oracle-{}-{name}", std::process::id()))
}

fn perf(args: &[&str]) -> Option<String> {
    let out = Command::new("perf").args(args).output().ok()?;
    if !out.status.success() {
        eprintln!(
            "perf {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord, Clone)]
struct SampleLine {
    time: u64,
    pid: u32,
    tid: u32,
    cpu: u32,
    period: u64,
    addr: u64,
    frames: Vec<u64>,
}

/// "secs.nanos" -> ns
fn parse_time(s: &str) -> u64 {
    let (secs, ns) = s
        .trim()
        .trim_end_matches(':')
        .split_once('.')
        .expect("time");
    secs.parse::<u64>().expect("secs") * 1_000_000_000 + ns.parse::<u64>().expect("ns")
}

fn parse_pid_tid(s: &str) -> (u32, u32) {
    let (p, t) = s.split_once('/').expect("pid/tid");
    (p.parse().expect("pid"), t.parse().expect("tid"))
}

/// `perf script -F pid,tid,cpu,time,period,addr,ip --ns`: a header line per sample
/// ("pid/tid [cpu] secs.ns: period addr"), then one tab-indented frame per line, then a blank
/// line.
fn perf_samples(script: &str) -> Vec<SampleLine> {
    let mut out = Vec::new();
    let mut cur: Option<SampleLine> = None;
    for line in script.lines() {
        if let Some(frame) = line.strip_prefix('\t') {
            let addr = u64::from_str_radix(frame.trim(), 16).expect("hex frame");
            cur.as_mut().expect("frame before header").frames.push(addr);
        } else if line.trim().is_empty() {
            out.extend(cur.take());
        } else {
            out.extend(cur.take());
            let mut f = line.split_whitespace();
            let (pid, tid) = parse_pid_tid(f.next().expect("pid/tid"));
            let cpu = f.next().expect("cpu");
            let cpu = cpu
                .trim_matches(|c| c == '[' || c == ']')
                .parse()
                .expect("cpu");
            let time = parse_time(f.next().expect("time"));
            let period = f.next().expect("period").parse().expect("period");
            let addr = u64::from_str_radix(f.next().expect("addr"), 16).expect("addr");
            cur = Some(SampleLine {
                time,
                pid,
                tid,
                cpu,
                period,
                addr,
                frames: Vec::new(),
            });
        }
    }
    out.extend(cur);
    out
}

#[test]
fn parser_agrees_with_perf() {
    let data_path = temp_path("perf.data");
    let path = data_path.to_str().expect("utf-8 temp path");
    let workload = "for i in 1 2 3; do ls /usr >/dev/null; done; i=0; \
                    while [ $i -lt 20000 ]; do i=$((i+1)); done";
    let recorded = Command::new("perf")
        .args([
            "record",
            "-q",
            "-o",
            path,
            "-e",
            "cpu-clock",
            "-c",
            "100000",
            "-g",
            "--switch-events",
            "--sample-cpu",
            "-d", // ADDR, and DATA_SRC: a field after RAW we leave unparsed
            "-R", // RAW: cpu-clock has no raw data, the kernel writes a 4-byte dummy
            "--",
            "sh",
            "-c",
            workload,
        ])
        .output();
    match recorded {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            pmc_testkit::skip!("perf record failed: {}", String::from_utf8_lossy(&o.stderr));
            return;
        }
        Err(e) => {
            pmc_testkit::skip!("perf not runnable: {e}");
            return;
        }
    }
    let (cfg, data) = read_perf_data(&data_path);
    eprintln!("{cfg:?}");
    assert!(cfg.sample_id_all, "perf sets sample_id_all");

    // Walk the data section.
    let mut stats = ParseStats::default();
    let mut by_type: BTreeMap<u32, u64> = BTreeMap::new();
    let mut ours = Vec::new();
    let mut tasks = Vec::new();
    let mut switches = Vec::new();
    let mut comms = Vec::new();
    let mut maps: Vec<(u64, u64, u64)> = Vec::new();
    let mut off = 0;
    while off < data.len() {
        let header = RecordHeader::parse(&data[off..]).expect("header");
        let size = usize::from(header.size);
        assert!(size >= 8 && off + size <= data.len(), "bad record at {off}");
        let result = cfg.parse(&data[off..off + size]);
        stats.note(&result);
        *by_type.entry(header.kind).or_default() += 1;
        match result.unwrap_or_else(|e| panic!("record at {off} type {}: {e}", header.kind)) {
            Record::Sample(s) => ours.push({
                assert_eq!(s.raw.map(<[u8]>::len), Some(4), "dummy raw data");
                assert_eq!(s.unparsed.len(), 8, "DATA_SRC left unparsed");
                SampleLine {
                    time: s.time.expect("time"),
                    pid: s.pid.expect("pid"),
                    tid: s.tid.expect("tid"),
                    cpu: s.cpu.expect("cpu"),
                    // Without PERF_SAMPLE_PERIOD perf prints the attr's fixed period.
                    period: s.period.unwrap_or(100_000),
                    addr: s.addr.expect("addr"),
                    frames: s
                        .callchain
                        .expect("callchain")
                        .frames()
                        .map(|f| f.addr)
                        .collect(),
                }
            }),
            Record::Fork(t) => tasks.push(format!(
                "{}/{} {}: FORK({}:{}):({}:{})",
                t.sample_id.pid.unwrap_or(0),
                t.sample_id.tid.unwrap_or(0),
                t.sample_id.time.unwrap_or(0),
                t.pid,
                t.tid,
                t.ppid,
                t.ptid
            )),
            Record::Exit(t) => tasks.push(format!(
                "{}/{} {}: EXIT({}:{}):({}:{})",
                t.sample_id.pid.unwrap_or(0),
                t.sample_id.tid.unwrap_or(0),
                t.sample_id.time.unwrap_or(0),
                t.pid,
                t.tid,
                t.ppid,
                t.ptid
            )),
            Record::Switch(s) => switches.push(format!(
                "{}/{} {}: {}",
                s.sample_id.pid.unwrap_or(0),
                s.sample_id.tid.unwrap_or(0),
                s.sample_id.time.unwrap_or(0),
                if s.is_out() { "OUT" } else { "IN" }
            )),
            Record::Mmap(m) => maps.push((m.addr, m.len, m.pgoff)),
            Record::Mmap2(m) => maps.push((m.addr, m.len, m.pgoff)),
            Record::Comm(c) => comms.push(format!(
                "{}:{}/{}{}",
                String::from_utf8_lossy(c.comm),
                c.pid,
                c.tid,
                if c.is_exec() { " exec" } else { "" }
            )),
            _ => {}
        }
        off += size;
    }
    assert_eq!(stats.errors, 0);

    // 1. Counts per type against `perf report --stats`.
    let report = perf(&["report", "-i", path, "--stats"]).expect("perf report");
    let perf_count = |name: &str| -> u64 {
        report
            .lines()
            .find_map(|l| {
                let (n, rest) = l.split_once(" events:")?;
                (n.trim() == name).then(|| rest.split_whitespace().next()?.parse().ok())?
            })
            .unwrap_or(0)
    };
    for (name, kind) in [
        ("MMAP", rt::MMAP),
        ("MMAP2", rt::MMAP2),
        ("COMM", rt::COMM),
        ("FORK", rt::FORK),
        ("EXIT", rt::EXIT),
        ("SAMPLE", rt::SAMPLE),
        ("SWITCH", rt::SWITCH),
    ] {
        let ours = by_type.get(&kind).copied().unwrap_or(0);
        assert_eq!(ours, perf_count(name), "{name} count");
    }
    assert_eq!(stats.records, perf_count("TOTAL"));
    assert!(by_type.get(&rt::SAMPLE).copied().unwrap_or(0) > 20);
    assert!(by_type.get(&rt::FORK).copied().unwrap_or(0) > 0);

    // 2. Every sample, callchain included, against `perf script`.
    let script = perf(&[
        "script",
        "-i",
        path,
        "-F",
        "pid,tid,cpu,time,period,addr,ip",
        "--ns",
    ])
    .expect("perf script");
    let mut theirs = perf_samples(&script);
    ours.sort();
    theirs.sort();
    assert_eq!(ours.len(), theirs.len(), "sample count");
    // perf script prints a frame inside a file-backed map as `addr - start + pgoff` (map_ip);
    // frames in the kernel, anonymous or unknown maps as they are. Accept either, using the
    // mappings we parsed ourselves, so MMAP/MMAP2 addr/len/pgoff are checked too.
    let same_frame = |ours: u64, theirs: u64| {
        ours == theirs
            || maps.iter().any(|&(start, len, pgoff)| {
                ours.wrapping_sub(start) < len && ours - start + pgoff == theirs
            })
    };
    let mut relative = 0;
    for (a, b) in ours.iter().zip(&theirs) {
        let strip = |s: &SampleLine| SampleLine {
            frames: Vec::new(),
            ..s.clone()
        };
        assert_eq!(strip(a), strip(b));
        assert_eq!(a.frames.len(), b.frames.len(), "{a:x?} vs {b:x?}");
        for (&fa, &fb) in a.frames.iter().zip(&b.frames) {
            assert!(same_frame(fa, fb), "frame {fa:#x} vs {fb:#x} in {a:x?}");
            relative += usize::from(fa != fb);
        }
    }
    assert!(relative > 0, "expected some map-relative frames");

    // 3. FORK/EXIT/SWITCH: body fields and sample_id trailers against `perf script`'s task and
    //    switch events, whose leading pid/tid/time come from the trailer.
    let events = perf(&[
        "script",
        "-i",
        path,
        "--show-task-events",
        "--show-switch-events",
        "--show-mmap-events",
        "-F",
        "pid,tid,time",
        "--ns",
    ])
    .expect("perf script events");
    let mut perf_tasks = Vec::new();
    let mut perf_switches = Vec::new();
    let mut perf_comms = Vec::new();
    for line in events.lines() {
        let mut f = line.split_whitespace();
        let (Some(pt), Some(time), Some(kind)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let Some((pid, tid)) = pt.split_once('/') else {
            continue;
        };
        let time = parse_time(time);
        if let Some(rest) = kind.strip_prefix("PERF_RECORD_FORK") {
            perf_tasks.push(format!("{pid}/{tid} {time}: FORK{rest}"));
        } else if let Some(rest) = kind.strip_prefix("PERF_RECORD_EXIT") {
            perf_tasks.push(format!("{pid}/{tid} {time}: EXIT{rest}"));
        } else if kind == "PERF_RECORD_SWITCH" {
            let dir = f.next().unwrap_or("");
            perf_switches.push(format!("{pid}/{tid} {time}: {dir}"));
        } else if kind == "PERF_RECORD_COMM" || kind == "PERF_RECORD_COMM:" {
            let mut name = f.collect::<Vec<_>>().join(" ");
            if let Some(n) = name.strip_prefix("exec: ") {
                // "exec: sh:8891/8891" -> "sh:8891/8891 exec"
                name = format!("{n} exec");
            }
            perf_comms.push(name);
        }
    }
    tasks.sort();
    perf_tasks.sort();
    assert_eq!(tasks, perf_tasks);
    switches.sort();
    perf_switches.sort();
    assert_eq!(switches, perf_switches);
    comms.sort();
    perf_comms.sort();
    assert_eq!(comms, perf_comms);
    eprintln!(
        "perf oracle: {} samples, {} task events, {} switches, {} comms, types {by_type:?}",
        ours.len(),
        tasks.len(),
        switches.len(),
        comms.len()
    );
    let _ = std::fs::remove_file(&data_path);
}
