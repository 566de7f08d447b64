//! Shared test helpers: a C program with a known call structure, compiled
//! at test time, and synthetic pmc-logs whose Map records point at it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use object::{Object, ObjectSegment, ObjectSymbol};
use pmc_log::record::{Callchain, Comm, Header, Map, Mode, PmcDescriptor, Record, Sample, Scope};
use pmc_log::Writer;

pub const PROG_C: &str = r#"#include <stdint.h>
#include <stdlib.h>

volatile uint64_t sink;

__attribute__((noinline)) void hot_leaf(uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        sink += i * i;
}

__attribute__((noinline)) void cold_leaf(uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        sink ^= i;
}

__attribute__((noinline)) void outer(uint64_t n)
{
    hot_leaf(n);
    cold_leaf(n / 9);
}

int main(int argc, char **argv)
{
    uint64_t n = argc > 1 ? strtoull(argv[1], 0, 10) : 1000;
    outer(n);
    return 0;
}
"#;

/// Line of the entry of `hot_leaf` in PROG_C: its `{` line, where gcc puts
/// the prologue (binutils `addr2line` says the same).
pub const HOT_LEAF_LINE: u32 = 7;

static SEQ: AtomicUsize = AtomicUsize::new(0);

/// A scratch directory for one test, removed when dropped (kept when
/// `PMC_ANALYZE_KEEP` is set, for looking at the files).
pub struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::env::var_os("PMC_ANALYZE_KEEP").is_none() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// A fresh scratch directory for one test.
pub fn scratch(name: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!(
        "pmc-analyze-{}-{}-{name}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create scratch dir");
    Scratch(d)
}

/// Compile PROG_C with `cc -g -O0 -fno-omit-frame-pointer` plus `extra`.
/// Panics (fails the test) when no C compiler works: the tests need one.
pub fn compile(dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let src = dir.join("prog.c");
    std::fs::write(&src, PROG_C).expect("write prog.c");
    let out = dir.join(name);
    let st = Command::new("cc")
        .args(["-g", "-O0", "-fno-omit-frame-pointer"])
        .args(extra)
        .arg("-o")
        .arg(&out)
        .arg(&src)
        .status()
        .expect("running cc (a C compiler is needed for these tests)");
    assert!(st.success(), "cc failed");
    out
}

/// A symbol of a real ELF file.
#[derive(Clone, Copy, Debug)]
pub struct Sym {
    pub addr: u64,
    pub size: u64,
}

pub fn symbol(path: &Path, name: &str) -> Sym {
    let data = std::fs::read(path).expect("read binary");
    let f = object::File::parse(&*data).expect("parse binary");
    let s = f
        .symbols()
        .find(|s| s.name() == Ok(name))
        .unwrap_or_else(|| panic!("{name} not in {}", path.display()));
    Sym {
        addr: s.address(),
        size: s.size(),
    }
}

pub fn symbol_matching(path: &Path, pred: impl Fn(&str) -> bool) -> Sym {
    let data = std::fs::read(path).expect("read binary");
    let f = object::File::parse(&*data).expect("parse binary");
    let s = f
        .symbols()
        .find(|s| s.name().is_ok_and(&pred))
        .expect("symbol not found");
    Sym {
        addr: s.address(),
        size: s.size(),
    }
}

pub fn build_id(path: &Path) -> Vec<u8> {
    let data = std::fs::read(path).expect("read binary");
    let f = object::File::parse(&*data).expect("parse binary");
    f.build_id()
        .ok()
        .flatten()
        .map(<[u8]>::to_vec)
        .unwrap_or_default()
}

pub fn is_pie(path: &Path) -> bool {
    let data = std::fs::read(path).expect("read binary");
    let f = object::File::parse(&*data).expect("parse binary");
    f.kind() == object::ObjectKind::Dynamic
}

/// The Map records the kernel would log for `path` loaded at `base`
/// (one per PT_LOAD, page-aligned, as perf MMAP2).
pub fn maps_for(pid: i32, path: &Path, base: u64, build_id: &[u8]) -> Vec<Record<'static>> {
    let data = std::fs::read(path).expect("read binary");
    let f = object::File::parse(&*data).expect("parse binary");
    let page = 4096u64;
    f.segments()
        .map(|s| {
            let (off, _) = s.file_range();
            let lo = s.address() & !(page - 1);
            let hi = (s.address() + s.size() + page - 1) & !(page - 1);
            Record::Map(Map {
                time: 1,
                pid,
                start: base + lo,
                len: hi - lo,
                pgoff: off & !(page - 1),
                build_id: build_id.to_vec().into(),
                path: path.to_string_lossy().into_owned().into(),
            })
        })
        .collect()
}

pub fn header() -> Header<'static> {
    Header {
        os: "Linux".into(),
        page_size: 4096,
        ..Header::default()
    }
}

pub fn pmc(id: u32, name: &str) -> Record<'static> {
    Record::Pmc(PmcDescriptor {
        time: 0,
        pmc_id: id,
        event_spec: name.to_string().into(),
        canonical_name: name.to_string().into(),
        scope: Scope::Process,
        cpu: None,
        mode: Mode::SamplingPeriod(100_000),
        flags: pmc_log::record::FLAG_CALLCHAIN,
        native_config: "".into(),
    })
}

pub fn comm(pid: i32, name: &str) -> Record<'static> {
    Record::Comm(Comm {
        time: 1,
        pid,
        tid: pid,
        exec: true,
        comm: name.to_string().into(),
    })
}

pub fn sample(pid: i32, frames: Vec<u64>, kernel_frames: u32) -> Record<'static> {
    Record::Sample(Sample {
        time: 2,
        pmc_id: 0,
        pid,
        tid: pid,
        cpu: Some(0),
        period: 100_000,
        callchain: Callchain::from_vec(frames),
        kernel_frames,
        raw: Default::default(),
    })
}

pub fn write_log(records: &[Record<'_>]) -> Vec<u8> {
    let mut w = Writer::new(Vec::new(), &header()).expect("writer");
    for r in records {
        w.write(r).expect("write record");
    }
    w.finish().expect("finish")
}

/// Addresses inside main, outer, hot_leaf and cold_leaf of `prog` loaded
/// with `bias` (mid-function, as return addresses and PCs would be).
pub struct Addrs {
    pub main: u64,
    pub outer: u64,
    pub hot_leaf: u64,
    pub cold_leaf: u64,
}

pub fn addrs(prog: &Path, bias: u64) -> Addrs {
    let mid = |n: &str| {
        let s = symbol(prog, n);
        bias + s.addr + s.size / 2
    };
    Addrs {
        main: mid("main"),
        outer: mid("outer"),
        hot_leaf: mid("hot_leaf"),
        cold_leaf: mid("cold_leaf"),
    }
}

/// The synthetic profile: 900 samples main->outer->hot_leaf, 100 samples
/// main->outer->cold_leaf.
pub fn standard_samples(pid: i32, a: &Addrs) -> Vec<Record<'static>> {
    let mut v = Vec::new();
    for _ in 0..900 {
        v.push(sample(pid, vec![a.hot_leaf, a.outer, a.main], 0));
    }
    for _ in 0..100 {
        v.push(sample(pid, vec![a.cold_leaf, a.outer, a.main], 0));
    }
    v
}
