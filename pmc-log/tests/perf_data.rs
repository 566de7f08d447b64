//! our format -> perf.data -> `perf script` / `perf report` (the oracle).
//! Skips, saying why, when perf or nm is not installed.

use std::process::Command;

use pmc_log::export::perf_data;
use pmc_log::record::TRUNCATED_FRAME;
use pmc_log::record::*;
use pmc_log::{Reader, Writer};

const LIBC: &str = "/lib/x86_64-linux-gnu/libc.so.6";

fn tool(name: &str) -> bool {
    Command::new(name)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Address (file offset == vaddr for libc's text) of a dynamic symbol.
fn sym(name: &str) -> Option<u64> {
    let out = Command::new("nm")
        .args(["-D", "--defined-only", LIBC])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout).lines().find_map(|l| {
        let mut f = l.split_whitespace();
        let addr = f.next()?;
        let _ty = f.next()?;
        let n = f.next()?;
        (n.split('@').next() == Some(name)).then(|| u64::from_str_radix(addr, 16).ok())?
    })
}

#[test]
#[cfg_attr(miri, ignore)]
fn perf_script_sees_our_samples() {
    if !tool("perf") || !tool("nm") || !std::path::Path::new(LIBC).exists() {
        pmc_testkit::skip!("needs perf, nm and {LIBC}");
        return;
    }
    let (Some(malloc), Some(qsort)) = (sym("malloc"), sym("qsort")) else {
        pmc_testkit::skip!("malloc/qsort not found in {LIBC}");
        return;
    };
    let base = 0x7f00_0000_0000u64;
    let len = std::fs::metadata(LIBC).unwrap().len().div_ceil(4096) * 4096;
    let header = Header {
        clock: Clock::Monotonic,
        ticks_per_second: 1_000_000_000,
        ..Header::default()
    };
    let mut w = Writer::new(Vec::new(), &header).unwrap();
    w.write(&Record::Pmc(PmcDescriptor {
        time: 1,
        pmc_id: 0,
        event_spec: "cpu-clock".into(),
        canonical_name: "cpu-clock".into(),
        scope: Scope::Process,
        cpu: None,
        mode: Mode::SamplingPeriod(10_000),
        flags: FLAG_CALLCHAIN,
        native_config: "type=1,config=0".into(),
    }))
    .unwrap();
    let pids = [4242, 4343];
    for (i, &pid) in pids.iter().enumerate() {
        w.write(&Record::Comm(Comm {
            time: 2,
            pid,
            tid: pid,
            exec: true,
            comm: format!("app{i}").into(),
        }))
        .unwrap();
        w.write(&Record::Map(Map {
            time: 3,
            pid,
            start: base,
            len,
            pgoff: 0,
            build_id: Bytes::default(),
            path: LIBC.into(),
        }))
        .unwrap();
    }
    let mut expected = Vec::new();
    for n in 0..100u64 {
        let pid = pids[(n % 2) as usize];
        let leaf = base + if n % 3 == 0 { qsort } else { malloc } + n % 4;
        let frames = [leaf, base + qsort + 0x10];
        w.write(&Record::Sample(Sample {
            time: 1000 + n,
            pmc_id: 0,
            pid,
            tid: pid,
            cpu: Some((n % 2) as u32),
            period: 10_000,
            callchain: Callchain::from_frames(&frames),
            kernel_frames: 0,
            raw: Bytes::default(),
        }))
        .unwrap();
        expected.push((pid, leaf));
    }
    let log = w.finish().unwrap();

    let reader = Reader::new(&log).unwrap();
    let dir = std::env::temp_dir().join(format!("pmc-log-perf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("perf.data");
    let mut f = std::fs::File::create(&path).unwrap();
    let n = perf_data::write_all(&reader.header().unwrap(), reader.records(), &mut f).unwrap();
    drop(f);
    assert_eq!(n, 100);

    let out = Command::new("perf")
        .args(["script", "--force", "-G", "-F", "pid,ip,sym", "-i"])
        .arg(&path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "perf script failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Vec<(i32, u64, String)> = stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (
                f[0].parse().unwrap(),
                u64::from_str_radix(f[1], 16).unwrap(),
                f.get(2).unwrap_or(&"").to_string(),
            )
        })
        .collect();
    assert_eq!(
        got.len(),
        expected.len(),
        "sample count; perf script said:\n{stdout}"
    );
    for ((pid, ip, sym), (epid, eip)) in got.iter().zip(&expected) {
        assert_eq!((pid, ip), (epid, eip));
        let want = if (eip - base) < malloc {
            "qsort"
        } else {
            "malloc"
        };
        assert!(
            sym.starts_with(want),
            "ip {ip:#x}: perf resolved {sym:?}, expected {want}"
        );
    }

    let out = Command::new("perf")
        .args([
            "report",
            "--stdio",
            "--force",
            "--no-children",
            "--sort",
            "comm,dso,sym",
            "-i",
        ])
        .arg(&path)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "perf report failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for needle in ["app0", "app1", "libc.so.6", "malloc", "qsort", "cpu-clock"] {
        assert!(
            report.contains(needle),
            "perf report lacks {needle:?}:\n{report}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A log of `cpu-clock` samples of pid 4242 with libc mapped at `LIBC_BASE`, with these
/// chains (kernel frames first, `kernel_frames` of them), and maybe the kernel's map.
fn log_with_chains(chains: &[(&[u64], u32)], kernel_map: Option<(u64, u64)>) -> Vec<u8> {
    let header = Header {
        clock: Clock::Monotonic,
        ticks_per_second: 1_000_000_000,
        os: "Linux".into(),
        ..Header::default()
    };
    let mut w = Writer::new(Vec::new(), &header).unwrap();
    w.write(&Record::Pmc(PmcDescriptor {
        time: 1,
        pmc_id: 0,
        event_spec: "cpu-clock".into(),
        canonical_name: "cpu-clock".into(),
        scope: Scope::Process,
        cpu: None,
        mode: Mode::SamplingPeriod(10_000),
        flags: FLAG_CALLCHAIN,
        native_config: "type=1,config=0".into(),
    }))
    .unwrap();
    if let Some((start, pgoff)) = kernel_map {
        // As pmc-linux's synth.rs writes it: from _stext to the top of the address space.
        w.write(&Record::Map(Map {
            time: 1,
            pid: -1,
            start,
            len: 0u64.wrapping_sub(start),
            pgoff,
            build_id: Bytes::default(),
            path: "[kernel.kallsyms]".into(),
        }))
        .unwrap();
    }
    w.write(&Record::Comm(Comm {
        time: 2,
        pid: 4242,
        tid: 4242,
        exec: true,
        comm: "app".into(),
    }))
    .unwrap();
    let len = std::fs::metadata(LIBC).unwrap().len().div_ceil(4096) * 4096;
    w.write(&Record::Map(Map {
        time: 3,
        pid: 4242,
        start: LIBC_BASE,
        len,
        pgoff: 0,
        build_id: Bytes::default(),
        path: LIBC.into(),
    }))
    .unwrap();
    for (n, (frames, k)) in chains.iter().enumerate() {
        w.write(&Record::Sample(Sample {
            time: 1000 + n as u64,
            pmc_id: 0,
            pid: 4242,
            tid: 4242,
            cpu: Some(0),
            period: 10_000,
            callchain: Callchain::from_frames(frames),
            kernel_frames: *k,
            raw: Bytes::default(),
        }))
        .unwrap();
    }
    w.finish().unwrap()
}

const LIBC_BASE: u64 = 0x7f00_0000_0000;

/// Export a log to perf.data in a fresh directory named after `tag`.
fn export(tag: &str, log: &[u8]) -> (std::path::PathBuf, u64) {
    let reader = Reader::new(log).unwrap();
    let dir = std::env::temp_dir().join(format!("pmc-log-perf-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("perf.data");
    let mut f = std::fs::File::create(&path).unwrap();
    let n = perf_data::write_all(&reader.header().unwrap(), reader.records(), &mut f).unwrap();
    (path, n)
}

/// Each sample `perf script` shows: its callchain as (address, symbol, object).
fn perf_chains(path: &std::path::Path, extra: &[&str]) -> Vec<Vec<(u64, String, String)>> {
    let out = Command::new("perf")
        .args(["script", "--force", "-F", "comm,tid,ip,sym,dso"])
        .args(extra)
        .arg("-i")
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "perf script failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mut samples: Vec<Vec<(u64, String, String)>> = Vec::new();
    for l in text.lines() {
        if l.trim().is_empty() {
            continue;
        }
        if !l.starts_with(char::is_whitespace) {
            samples.push(Vec::new());
            continue;
        }
        let mut f = l.split_whitespace();
        let addr = u64::from_str_radix(f.next().unwrap(), 16).unwrap();
        let rest: Vec<&str> = f.collect();
        let dso = rest.last().copied().unwrap_or_default().to_owned();
        let sym = rest[..rest.len().saturating_sub(1)].join(" ");
        samples.last_mut().unwrap().push((addr, sym, dso));
    }
    samples
}

fn perf_libc_ready() -> Option<(u64, u64)> {
    if !tool("perf") || !tool("nm") || !std::path::Path::new(LIBC).exists() {
        pmc_testkit::skip!("needs perf, nm and {LIBC}");
        return None;
    }
    let (Some(malloc), Some(qsort)) = (sym("malloc"), sym("qsort")) else {
        pmc_testkit::skip!("malloc/qsort not found in {LIBC}");
        return None;
    };
    Some((malloc, qsort))
}

/// A chain ending in the truncation marker: perf shows the chain without it. Before the
/// fix perf dropped the whole chain (it reads the marker, u64::MAX, as an unknown context):
/// 0 of 50 chains shown.
#[test]
#[cfg_attr(miri, ignore)]
fn truncated_chain_reads_in_perf_without_its_marker() {
    let Some((malloc, qsort)) = perf_libc_ready() else {
        return;
    };
    let frames = [
        LIBC_BASE + malloc + 4,
        LIBC_BASE + qsort + 4,
        TRUNCATED_FRAME,
    ];
    let whole = [LIBC_BASE + qsort + 8, LIBC_BASE + qsort + 4];
    let mut chains: Vec<(&[u64], u32)> = vec![(&frames, 0); 50];
    chains.push((&whole, 0));
    let (path, n) = export("trunc", &log_with_chains(&chains, None));
    assert_eq!(n, 51);
    let got = perf_chains(&path, &[]);
    assert_eq!(got.len(), 51, "samples in perf script");
    let shown = got.iter().filter(|c| !c.is_empty()).count();
    assert_eq!(shown, 51, "samples with a chain in perf script: {got:?}");
    for c in &got[..50] {
        // perf shows user addresses relative to their object.
        let addrs: Vec<u64> = c.iter().map(|f| f.0 + LIBC_BASE).collect();
        assert_eq!(addrs, frames[..2], "the chain minus the marker");
        assert!(c[0].1.starts_with("malloc"), "{c:?}");
        assert!(c[1].1.starts_with("qsort"), "{c:?}");
    }
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

/// A chain longer than a perf record holds: the record is written with the leaf end of the
/// chain (the sample used to be dropped), and perf reads it; `perf script --max-stack`
/// shows as many frames as asked for, from the leaf.
#[test]
#[cfg_attr(miri, ignore)]
fn long_chains_are_cut_to_a_record_perf_reads() {
    let Some((malloc, qsort)) = perf_libc_ready() else {
        return;
    };
    let long: Vec<u64> = (0..20_000u64)
        .map(|i| LIBC_BASE + if i == 0 { malloc } else { qsort + i % 4 })
        .collect();
    let mid: Vec<u64> = long[..500].to_vec();
    let chains: Vec<(&[u64], u32)> = vec![(&long, 0), (&mid, 0)];
    let (path, n) = export("long", &log_with_chains(&chains, None));
    assert_eq!(n, 2);
    let want = perf_data::MAX_CHAIN_ENTRIES - 1; // one entry is PERF_CONTEXT_USER
    let got = perf_chains(&path, &["--max-stack", "10000"]);
    let lens: Vec<usize> = got.iter().map(Vec::len).collect();
    assert_eq!(
        lens,
        [want, 500],
        "frames perf shows with --max-stack 10000"
    );
    let addrs: Vec<u64> = got[0].iter().map(|f| f.0 + LIBC_BASE).collect();
    assert_eq!(addrs, long[..want], "the leaf end is kept");
    // With perf's default (kernel.perf_event_max_stack, 127 unless changed) it shows no
    // more than that, from the leaf: the same as for its own files.
    let got = perf_chains(&path, &[]);
    assert!(
        got.iter()
            .all(|c| !c.is_empty() && c[0].0 + LIBC_BASE == long[0]),
        "{got:?}"
    );
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

/// `(_stext, [(name, address)])` from this machine's `/proc/kallsyms`, when its addresses
/// are shown (root, or `kernel.kptr_restrict` 0).
fn kallsyms(names: &[&str]) -> Option<(u64, Vec<(String, u64)>)> {
    let text = std::fs::read_to_string("/proc/kallsyms").ok()?;
    let mut stext = None;
    let mut found = Vec::new();
    for l in text.lines() {
        let mut f = l.split_whitespace();
        let (Some(a), Some(t), Some(n)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let a = u64::from_str_radix(a, 16).ok()?;
        if a == 0 {
            return None;
        }
        if n == "_stext" {
            stext = Some(a);
        }
        if matches!(t, "T" | "t") && names.contains(&n) && !found.iter().any(|(m, _)| m == n) {
            found.push((n.to_owned(), a));
        }
    }
    (found.len() == names.len()).then_some((stext?, found))
}

/// Kernel frames are named by perf, from the log's kernel map (`[kernel.kallsyms]`, pgoff =
/// `_stext`) and from the one made up for a Linux log without it. Before the fix every
/// kernel frame was `[unknown]` in `[unknown]`.
#[test]
#[cfg_attr(miri, ignore)]
fn kernel_frames_are_named_by_perf() {
    let Some((_, qsort)) = perf_libc_ready() else {
        return;
    };
    let names = ["vfs_read", "ksys_read"];
    let Some((stext, syms)) = kallsyms(&names) else {
        pmc_testkit::skip!("/proc/kallsyms shows no addresses here (kptr_restrict)");
        return;
    };
    // A kernel sample that went on into user space (USERCALLCHAIN), and a kernel-only one.
    let frames = [syms[0].1 + 3, syms[1].1 + 5, LIBC_BASE + qsort + 4];
    let chains: Vec<(&[u64], u32)> = vec![(&frames, 2), (&frames[..2], 2)];
    for (tag, map) in [("kmap", Some((stext, stext))), ("nokmap", None)] {
        let (path, _) = export(tag, &log_with_chains(&chains, map));
        let got = perf_chains(&path, &[]);
        assert_eq!(got.len(), 2, "{tag}");
        for c in &got {
            for (f, want) in c.iter().zip(names) {
                assert!(
                    f.1.starts_with(want) && f.2 == "([kernel.kallsyms])",
                    "{tag}: {f:?}, expected {want} in [kernel.kallsyms]: {got:?}"
                );
            }
        }
        assert_eq!(got[0].len(), 3, "{tag}: {got:?}");
        assert!(got[0][2].1.starts_with("qsort"), "{tag}: {got:?}");
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }
}

/// The callchains of the SAMPLE records of a perf.data file, entries as written.
fn written_chains(file: &[u8]) -> Vec<Vec<u64>> {
    let u64_at = |at: usize| u64::from_le_bytes(file[at..at + 8].try_into().unwrap());
    let (data, size) = (u64_at(40) as usize, u64_at(48) as usize);
    let mut at = data;
    let mut chains = Vec::new();
    while at < data + size {
        let ty = u32::from_le_bytes(file[at..at + 4].try_into().unwrap());
        let len = u16::from_le_bytes(file[at + 6..at + 8].try_into().unwrap()) as usize;
        if ty == 9 {
            // header, id, ip, pid/tid, time, cpu, period, then nr and the entries
            let nr = u64_at(at + 56) as usize;
            chains.push((0..nr).map(|i| u64_at(at + 64 + 8 * i)).collect());
        }
        at += len;
    }
    chains
}

/// The bytes of the chains, without perf: context markers where the kernel frames end,
/// the truncation marker and any other entry perf would take for a marker left out, and a
/// too long chain cut at MAX_CHAIN_ENTRIES from the leaf.
#[test]
fn chains_are_written_with_markers_and_without_the_truncation_marker() {
    const KERNEL: u64 = (-128i64) as u64;
    const USER: u64 = (-512i64) as u64;
    let (k1, k2, u1, u2) = (
        0xffff_ffff_8100_0010,
        0xffff_ffff_8100_0020,
        0x401000,
        0x402000,
    );
    let long: Vec<u64> = (0..10_000).map(|i| 0x400000 + i).collect();
    let chains: Vec<(Vec<u64>, u32)> = vec![
        (vec![k1, k2, u1, u2, TRUNCATED_FRAME], 2),
        (vec![u1, u2, TRUNCATED_FRAME], 0),
        (vec![k1, k2], 2),
        (vec![TRUNCATED_FRAME], 0),
        (vec![u1, (-4095i64) as u64, u2], 0),
        (long.clone(), 0),
    ];
    let mut p = perf_data::PerfDataWriter::new(&Header::default());
    for (frames, k) in &chains {
        p.add(&Record::Sample(Sample {
            time: 1,
            pmc_id: 0,
            pid: 1,
            tid: 1,
            cpu: Some(0),
            period: 1,
            callchain: Callchain::from_frames(frames),
            kernel_frames: *k,
            raw: Bytes::default(),
        }));
    }
    let mut out = Vec::new();
    p.finish(&mut out).unwrap();
    let got = written_chains(&out);
    let mut want_long = vec![USER];
    want_long.extend_from_slice(&long[..perf_data::MAX_CHAIN_ENTRIES - 1]);
    assert_eq!(
        got[..5],
        [
            vec![KERNEL, k1, k2, USER, u1, u2],
            vec![USER, u1, u2],
            vec![KERNEL, k1, k2],
            vec![],
            vec![USER, u1, u2],
        ]
    );
    assert_eq!(got[5], want_long);
    assert_eq!(got.len(), 6, "every sample written");
}

/// Issue 34: a log's losses reach perf's readers. Before, only `PERF_RECORD_LOST` was
/// written and `perf report` said "Total Lost Samples: 0" where 25 were lost; now each loss
/// is also a `PERF_RECORD_LOST_SAMPLES`, as perf record writes its own. Judged by `perf
/// report --stats` (the records perf counts) and `perf report`'s header line.
#[test]
#[cfg_attr(miri, ignore)]
fn losses_are_perfs_total_lost_samples() {
    let Some((malloc, _)) = perf_libc_ready() else {
        return;
    };
    let frames = [LIBC_BASE + malloc + 4];
    let chains: Vec<(&[u64], u32)> = (0..10).map(|_| (&frames[..], 0)).collect();
    // The log with two losses appended before its end: 20 of PMC 0, and 5 of PMC 0 on CPU 1.
    let base = log_with_chains(&chains, None);
    let reader = Reader::new(&base).unwrap();
    let mut w = Writer::new(Vec::new(), &reader.header().unwrap()).unwrap();
    for r in reader.records() {
        w.write(&r).unwrap();
    }
    for (time, cpu, count) in [(2000, 0, 20), (2001, 1, 5)] {
        w.write(&Record::Lost(Lost {
            time,
            pmc_id: Some(0),
            cpu: Some(cpu),
            count,
        }))
        .unwrap();
    }
    let log = w.finish().unwrap();
    let (path, _) = export("lost", &log);
    let perf = |args: &[&str]| {
        let out = Command::new("perf")
            .args(args)
            .arg("-i")
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let stats = perf(&["report", "--stats", "--force"]);
    let count = |name: &str| {
        stats
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .and_then(|l| l.split(':').nth(1))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
    };
    assert_eq!(count("LOST events"), Some(2), "{stats}");
    assert_eq!(count("LOST_SAMPLES events"), Some(2), "{stats}");
    let report = perf(&["report", "--stdio", "--force"]);
    assert!(
        report
            .lines()
            .any(|l| l.trim() == "# Total Lost Samples: 25"),
        "{report}"
    );
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}
