//! The log pump converts hwpmc's stream to pmc-log as it arrives: records
//! reach the sink during the session, `flush_log` makes everything so far
//! readable, and the pump's buffer stays bounded however long the log.

use pmc_core::{Allocation, Backend as _, Pmc as _, Rate, Target};
use pmc_freebsd::sys::sim::{SimConfig, SimDriver, Work};
use pmc_freebsd::Backend;
use pmc_log::Record;
use std::io::Write;
use std::sync::{Arc, Mutex};

type B = Backend<Arc<SimDriver>>;

fn default() -> (Arc<SimDriver>, B) {
    let sim = Arc::new(SimDriver::new(SimConfig::default()));
    let b = Backend::with_sys(sim.clone()).expect("handshake with the simulator");
    (sim, b)
}

#[derive(Clone, Default)]
struct SharedBuf(Arc<Mutex<Vec<u8>>>);
impl Write for SharedBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl SharedBuf {
    fn snapshot(&self) -> Vec<u8> {
        self.0.lock().unwrap().clone()
    }
}

/// Per kind, how many records; and whether the log was closed cleanly.
struct Summary {
    pmcs: usize,
    attaches: usize,
    samples: usize,
    kinds: Vec<&'static str>,
    closed: bool,
    clean: bool,
}

fn summary(bytes: &[u8]) -> Summary {
    let reader = pmc_log::Reader::new(bytes).expect("a pmc-log file");
    let mut it = reader.records();
    let mut s = Summary {
        pmcs: 0,
        attaches: 0,
        samples: 0,
        kinds: Vec::new(),
        closed: false,
        clean: false,
    };
    for r in it.by_ref() {
        s.kinds.push(match r {
            Record::Header(_) => "header",
            Record::Pmc(_) => {
                s.pmcs += 1;
                "pmc"
            }
            Record::Attach(_) => {
                s.attaches += 1;
                "attach"
            }
            Record::Sample(_) => {
                s.samples += 1;
                "sample"
            }
            Record::Close(_) => "close",
            _ => "other",
        });
    }
    s.closed = it.report().closed_cleanly;
    s.clean = it.report().is_clean();
    s
}

fn work(instructions: u64) -> Work {
    Work {
        pid: 2000,
        nanos: 1_000,
        instructions,
        ..Work::default()
    }
}

#[test]
fn flush_log_makes_the_session_so_far_readable_while_it_runs() {
    let (sim, b) = default();
    let buf = SharedBuf::default();
    b.configure_log(Box::new(buf.clone())).unwrap();
    sim.spawn(2000, 1000, true, "/usr/bin/make");
    let mut p = b
        .allocate(&Allocation::sampling(
            "instructions".parse().unwrap(),
            Rate::Period(5_000),
        ))
        .unwrap();
    p.attach(Target::Pid(2000)).unwrap();
    p.start().unwrap();
    sim.run(work(12_000)); // 2 samples
    b.flush_log().unwrap();
    // Read the sink while the session is still open.
    let s = summary(&buf.snapshot());
    // "other": the target's mapping (attach), the kernel objects (start).
    assert_eq!(
        s.kinds,
        vec!["header", "pmc", "attach", "other", "other", "other", "sample", "sample"]
    );
    assert!(!s.closed, "the log is still open");
    sim.run(work(15_000)); // 3 more
    b.flush_log().unwrap();
    let s = summary(&buf.snapshot());
    assert_eq!((s.pmcs, s.attaches, s.samples), (1, 1, 5));
    assert!(!s.closed);
    sim.run(work(5_000)); // 1 more, reaches the sink at close
    p.stop().unwrap();
    b.close_log().unwrap();
    let s = summary(&buf.snapshot());
    assert_eq!((s.pmcs, s.attaches, s.samples), (1, 1, 6));
    assert_eq!(s.kinds.last(), Some(&"close"));
    assert!(s.closed && s.clean, "closed cleanly, no damage");
}

#[test]
fn flush_log_on_an_idle_log_returns_promptly() {
    let (_sim, b) = default();
    let buf = SharedBuf::default();
    b.configure_log(Box::new(buf.clone())).unwrap();
    let t = std::time::Instant::now();
    for _ in 0..5 {
        b.flush_log().unwrap();
    }
    assert!(
        t.elapsed() < std::time::Duration::from_secs(2),
        "{:?}",
        t.elapsed()
    );
    // The header (from INITIALIZE) is already there.
    assert_eq!(summary(&buf.snapshot()).kinds, vec!["header"]);
    b.close_log().unwrap();
    assert!(summary(&buf.snapshot()).closed);
}

/// Many MiB of samples: they reach the sink during the session, without
/// any flush_log, and the pump never holds more than a record's worth.
#[test]
#[cfg_attr(miri, ignore)]
fn a_long_session_streams_with_a_bounded_buffer() {
    let (sim, b) = default();
    let buf = SharedBuf::default();
    b.configure_log(Box::new(buf.clone())).unwrap();
    sim.spawn(2000, 1000, true, "/usr/bin/make");
    let mut p = b
        .allocate(&Allocation::sampling(
            "instructions".parse().unwrap(),
            Rate::Period(5_000),
        ))
        .unwrap();
    p.attach(Target::Pid(2000)).unwrap();
    p.start().unwrap();
    let per_run = 50_000u64;
    let runs = 6u64;
    for _ in 0..runs {
        // 10 ms slices: hwpmc logs samples at hardclock ticks (the
        // simulator's every 1 ms), so the session must last some ticks.
        sim.run(Work {
            nanos: 10_000_000,
            ..work(5_000 * per_run)
        });
    }
    // Nothing flushed by hand: the records written so far are in the sink
    // already (all but the pump's current block and what is in flight).
    let during = buf.snapshot().len();
    assert!(during > 4 << 20, "only {during} bytes reached the sink");
    p.stop().unwrap();
    b.flush_log().unwrap();
    let read = b.log_bytes_read().unwrap();
    let max = b.log_max_buffered().unwrap();
    assert!(read > 10 << 20, "the simulator wrote {read} bytes");
    assert!(
        max <= pmc_log::hwpmc::MAX_BUFFERED,
        "the pump held {max} bytes"
    );
    b.close_log().unwrap();
    // The kernel log lives as long as the backend; only the sink ended.
    assert_eq!(b.log_bytes_read(), Some(read));
    assert_eq!(
        b.log_bytes_discarded(),
        Some(0),
        "nothing arrived without a sink"
    );
    let s = summary(&buf.snapshot());
    assert_eq!(s.samples as u64, per_run * runs);
    assert!(s.closed && s.clean);
}

/// configure_hwpmc_log gets the same flush_log semantics: hwpmc's bytes
/// so far are in the sink.
#[test]
fn flush_log_pushes_the_hwpmc_format_too() {
    let (sim, b) = default();
    let buf = SharedBuf::default();
    b.configure_hwpmc_log(Box::new(buf.clone())).unwrap();
    sim.spawn(2000, 1000, true, "/usr/bin/make");
    let mut p = b
        .allocate(&Allocation::sampling(
            "instructions".parse().unwrap(),
            Rate::Period(5_000),
        ))
        .unwrap();
    p.attach(Target::Pid(2000)).unwrap();
    p.start().unwrap();
    sim.run(work(12_000));
    b.flush_log().unwrap();
    let raw = buf.snapshot();
    let (converted, report) = pmc_log::hwpmc::convert(&raw, Vec::new()).unwrap();
    assert!(report.skipped.is_empty() && !report.closed_cleanly);
    assert_eq!(summary(&converted).samples, 2);
    p.stop().unwrap();
    b.close_log().unwrap();
}
