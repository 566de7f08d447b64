//! our format -> perf.data -> `perf script` / `perf report` (the oracle).
//! Skips, saying why, when perf or nm is not installed.

use std::process::Command;

use pmc_log::export::perf_data;
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
