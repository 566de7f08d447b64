//! The log's backlog (`Backend::set_log_backlog`) against the fake kernel: a deferred log is
//! the log decoding as it goes writes, record for record; passes are deferred (samples
//! counted, nothing written) until a flush, a stop or the bound; the bound and the age
//! replay as they go; a change of period replays first.

use super::tests::SharedSink;
use crate::sys::fake::{FakeKernel, SampleSpec};
use pmc_core::{Allocation, Backend as _, Cpus, Pmc as _, Rate};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type Backend = crate::Backend<Arc<FakeKernel>>;

/// Waits (bounded) until the drain has consumed everything written into `fds`' rings.
fn consumed(k: &FakeKernel, fds: &[(i32, u64)]) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while fds.iter().any(|&(fd, head)| k.ring_tail(fd) != Some(head)) {
        assert!(
            Instant::now() < deadline,
            "the drain thread never emptied the rings"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// What a test compares of a log: every record after the header but the synthesized ones'
/// wall-clock times, in order.
fn records(bytes: &[u8]) -> Vec<String> {
    let reader = pmc_log::Reader::new(bytes).expect("log");
    reader
        .records()
        .map(|r| match r {
            pmc_log::Record::Sample(s) => format!(
                "sample t={} pmc={} pid={} tid={} cpu={:?} period={} chain={:?}",
                s.time,
                s.pmc_id,
                s.pid,
                s.tid,
                s.cpu,
                s.period,
                s.callchain.to_vec()
            ),
            pmc_log::Record::Lost(l) => format!("lost {} cpu={:?}", l.count, l.cpu),
            pmc_log::Record::UserData(_) => "UserData".into(),
            pmc_log::Record::Close(_) => "Close".into(),
            other => format!("{:?}", std::mem::discriminant(&other)),
        })
        .collect()
}

/// What a run does after its rounds, with the PMC running (its fds and CPUs given).
type Between = dyn Fn(&FakeKernel, &Backend, &mut Pmc, &[(i32, u32)]);
type Pmc = crate::LinuxPmc<Arc<FakeKernel>>;

/// `per_round` samples on each of `fds`, from sample number `from`, interleaved in time
/// across the CPUs (so that the log's order is the merge's); waits until the drain took them.
fn sample_round(k: &FakeKernel, fds: &[(i32, u32)], from: u64, per_round: u64) {
    for i in from..from + per_round {
        for &(fd, cpu) in fds {
            let s = SampleSpec {
                ip: 0x40_1000 + i * 16 + u64::from(cpu),
                pid: 100 + cpu as i32,
                tid: 100 + cpu as i32,
                time: 1_000 + i * 20 + u64::from(cpu) * 10,
                cpu,
            };
            assert_eq!(k.sample(fd, s), Some(true), "the ring has room");
        }
    }
    let heads: Vec<(i32, u64)> = fds
        .iter()
        .map(|&(fd, _)| (fd, k.ring_head(fd).expect("ring")))
        .collect();
    consumed(k, &heads);
}

/// One recording over 2 CPUs: `rounds` rounds of `per_round` samples on each, each round
/// drained by the drain thread before the next; then `between` (with the PMC running), stop,
/// close. Returns the summary after the last round, the final one, and the log's records.
struct Run {
    mid: crate::SamplingDetails,
    end: crate::SamplingDetails,
    log: Vec<String>,
}

fn record(
    backlog: Option<(usize, Duration)>,
    rounds: u64,
    per_round: u64,
    between: &Between,
) -> Run {
    let k = Arc::new(FakeKernel::new());
    k.set_cpus(2, &[0, 1]);
    let backend = Backend::with_sys(k.clone());
    if let Some((bytes, age)) = backlog {
        backend.set_log_backlog(bytes, age);
    }
    let out = Arc::new(Mutex::new(Vec::new()));
    backend
        .configure_log(Box::new(SharedSink(out.clone())))
        .expect("log");
    backend.set_ring_pages(4).expect("pages");
    let a = Allocation::sampling("cpu-clock".parse().expect("event"), Rate::Period(1000))
        .system(Cpus::All);
    let mut p = backend.allocate(&a).expect("allocate");
    p.start().expect("start");
    let fds: Vec<(i32, u32)> = k.events().iter().map(|e| (e.fd, e.cpu as u32)).collect();
    assert_eq!(fds.len(), 2);
    for round in 0..rounds {
        sample_round(&k, &fds, round * per_round, per_round);
    }
    let mid = backend.sampling_details();
    between(&k, &backend, &mut p, &fds);
    p.stop().expect("stop");
    drop(p);
    backend.close_log().expect("close");
    let end = backend.sampling_details();
    let log = records(&out.lock().expect("lock"));
    Run { mid, end, log }
}

fn nothing(_: &FakeKernel, _: &Backend, _: &mut Pmc, _: &[(i32, u32)]) {}

const BIG: (usize, Duration) = (64 << 20, Duration::from_secs(3600));

/// The oracle is the log decoding as it goes (itself checked against perf in
/// `tests/sampling.rs`): deferring changes when records are decoded, never which or in what
/// order. While deferred, the samples are counted (the summary stays current) and none is
/// written; the stop decodes them all.
#[test]
#[cfg_attr(miri, ignore)] // The fake kernel's drain thread and a temporary file: native only.
fn a_deferred_log_is_the_log_decoding_as_it_goes_writes() {
    let live = record(None, 3, 40, &nothing);
    let deferred = record(Some(BIG), 3, 40, &nothing);
    let samples = |log: &[String]| log.iter().filter(|r| r.starts_with("sample")).count();
    assert_eq!(samples(&live.log), 240);
    assert_eq!(deferred.log, live.log);
    assert_eq!((live.mid.samples, deferred.mid.samples), (240, 240));
    assert!(
        live.mid.log_records >= 240,
        "decoded as it goes: {:?}",
        live.mid
    );
    assert!(
        deferred.mid.log_records < 240,
        "deferred: no sample written yet: {:?}",
        deferred.mid
    );
    assert_eq!(deferred.end.samples, live.end.samples);
    assert_eq!(deferred.end.log_records, live.end.log_records);
    assert_eq!((deferred.end.errors, deferred.end.lost), (0, 0));
}

/// Over its bound (here one byte, then no age at all) the backlog decodes as it goes: the
/// samples are written before any flush.
#[test]
#[cfg_attr(miri, ignore)] // The fake kernel's drain thread and a temporary file: native only.
fn a_backlog_over_its_bound_or_age_decodes_as_it_goes() {
    let live = record(None, 2, 30, &nothing);
    for bound in [(1, Duration::from_secs(3600)), (64 << 20, Duration::ZERO)] {
        let run = record(Some(bound), 2, 30, &nothing);
        assert_eq!(run.log, live.log, "{bound:?}");
        assert!(
            run.mid.log_records >= 120,
            "{bound:?}: written without a flush: {:?}",
            run.mid
        );
    }
}

/// `flush_log` and a record written into the log (user data) decode the backlog first: the
/// user record follows every sample drained before it, as without a backlog.
#[test]
#[cfg_attr(miri, ignore)] // The fake kernel's drain thread and a temporary file: native only.
fn a_flush_or_a_record_written_directly_decodes_the_backlog_first() {
    let mark = |_: &FakeKernel, b: &Backend, _: &mut Pmc, _: &[(i32, u32)]| {
        b.write_log(7).expect("user data");
    };
    let live = record(None, 2, 30, &mark);
    let deferred = record(Some(BIG), 2, 30, &mark);
    assert_eq!(deferred.log, live.log);
    assert!(
        live.log.iter().any(|r| r.contains("UserData")),
        "{:?}",
        live.log
    );
    let flush = |_: &FakeKernel, b: &Backend, _: &mut Pmc, _: &[(i32, u32)]| {
        let before = b.sampling_details().log_records;
        b.flush_log().expect("flush");
        assert!(b.sampling_details().log_records >= before + 120);
    };
    let flushed = record(Some(BIG), 2, 30, &flush);
    assert_eq!(flushed.log, record(None, 2, 30, &nothing).log);
}

/// Samples at a fixed period do not carry it: the drain gives each its PMC's period. A
/// `set_count` decodes the backlog first, so that the samples taken before it keep the old
/// period, as without a backlog.
#[test]
#[cfg_attr(miri, ignore)] // The fake kernel's drain thread and a temporary file: native only.
fn samples_deferred_before_a_set_count_keep_the_old_period() {
    let change = |k: &FakeKernel, _: &Backend, p: &mut Pmc, fds: &[(i32, u32)]| {
        p.stop().expect("stop");
        p.set_count(250_000).expect("period");
        p.start().expect("start");
        sample_round(k, fds, 100, 10);
    };
    let live = record(None, 2, 20, &change);
    let deferred = record(Some(BIG), 2, 20, &change);
    assert_eq!(deferred.log, live.log);
    let periods: std::collections::BTreeSet<&str> = live
        .log
        .iter()
        .filter_map(|r| r.split(" period=").nth(1)?.split(' ').next())
        .collect();
    assert_eq!(periods.len(), 2, "two periods in the log: {periods:?}");
}
