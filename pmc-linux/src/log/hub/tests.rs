//! The hub's unit tests: the write error kept, the drain's path without a kernel.

use crate::errno;
use crate::log::post::{HubEvent, PostChain};
use crate::log::reorder::Reorder;
use crate::log::source::RingMeta;
use crate::log::testutil::{cfg, meta, pid_tid, record, trailer};
use crate::log::SamplingDetails;
use crate::record::record_type;
use crate::sys::RealSys;
use pmc_core::{ErrorKind, Op};
use pmc_log::record as log;

use super::error::LogFailure;
use super::samples::{take_drained, write_ordered};

/// A write error keeps its kind (refused access is `Permission`, a full disk `Os`), its
/// errno and its `io::Error` kind, as FreeBSD's log pump reports it; only the first
/// failure is kept.
#[test]
fn log_failure_keeps_the_io_errors_kind() {
    let denied = pmc_log::WriteError::Io(std::io::Error::from_raw_os_error(errno::EACCES));
    let full = pmc_log::WriteError::Io(std::io::Error::from_raw_os_error(errno::ENOSPC));
    let e = LogFailure::from(&denied).to_error();
    assert_eq!(
        (e.kind(), e.op(), e.errno()),
        (ErrorKind::Permission, Op::Log, Some(errno::EACCES))
    );
    let e = LogFailure::from(&full).to_error();
    assert_eq!((e.kind(), e.errno()), (ErrorKind::Os, Some(errno::ENOSPC)));
    let mut slot = None;
    LogFailure::note(&mut slot, &full);
    LogFailure::note(&mut slot, &denied);
    assert_eq!(
        slot.map(|f| f.to_error().errno()),
        Some(Some(errno::ENOSPC))
    );
}

/// The drain's path without a kernel: `rings` drained one after another (each its
/// records in order), then everything written in time order; what the log gets.
fn pipeline(post: &mut PostChain, rings: &[(RingMeta, Vec<Vec<u8>>)]) -> Vec<log::Record<'static>> {
    let mut reorder = Reorder::default();
    for (meta, recs) in rings {
        for bytes in recs {
            let r = cfg().parse(bytes).expect("parses");
            take_drained(&RealSys, post, &mut reorder, meta, &r);
        }
    }
    let mut out = Vec::new();
    write_ordered(&mut reorder, post, u64::MAX, &mut |r: &log::Record<'_>| {
        out.push(r.clone().into_owned())
    });
    out
}

/// log-procexit sums in time order: a sample read from another CPU's ring after its
/// process's `EXIT` (in ring order) still counts in the process's count, which follows
/// the `EXIT`; a later sample (after the exit in time) does not.
#[test]
fn procexit_counts_a_sample_drained_after_its_exit() {
    let mut post = PostChain::default();
    let d = log::PmcDescriptor {
        time: 0,
        pmc_id: 3,
        event_spec: "cpu-clock".into(),
        canonical_name: "cpu-clock".into(),
        scope: log::Scope::Process,
        cpu: None,
        mode: log::Mode::SamplingPeriod(100),
        flags: log::FLAG_LOG_PROCEXIT,
        native_config: "".into(),
    };
    post.event(&HubEvent::Registered(&d), &mut |_| panic!("nothing to log"));
    let sample = |time: u64, cpu: u64, period: u64| {
        record(
            record_type::SAMPLE,
            2,
            &[77, 0x40_1000, pid_tid(10, 10), time, cpu, period, 0],
        )
    };
    let mut exit = vec![pid_tid(10, 1), pid_tid(10, 1), 300];
    exit.extend(trailer(10, 10, 300, 0, 77));
    let cpu0 = RingMeta {
        cpu: Some(0),
        ..meta()
    };
    let rings = [
        (cpu0, vec![record(record_type::EXIT, 0, &exit)]),
        (
            meta(),
            vec![
                sample(100, 1, 7),
                sample(200, 1, 500),
                sample(400, 1, 1_000),
            ],
        ),
    ];
    let got: Vec<(&str, u64, u64)> = pipeline(&mut post, &rings)
        .iter()
        .map(|r| match r {
            log::Record::Sample(s) => ("sample", s.time, s.period),
            log::Record::Exit(x) => ("exit", x.time, 0),
            log::Record::Counter(c) => {
                assert_eq!(
                    (c.pmc_id, c.pid, c.kind),
                    (3, 10, log::CounterKind::ProcessExit)
                );
                ("count", c.time, c.value)
            }
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        got,
        [
            ("sample", 100, 7),
            ("sample", 200, 500),
            ("exit", 300, 0),
            ("count", 300, 507),
            ("sample", 400, 1_000)
        ]
    );
}

/// The unwinder sees the `MMAP2`s before the samples: a sample drained (from one CPU's
/// ring) before its process's mapping (from another's) is unwound after the mapping
/// has passed through the stage (a device here: refused and reported, which shows the
/// stage knew it).
#[cfg(feature = "dwarf")]
#[test]
// Opens /dev/zero (the unwinder's object reader), which Miri does not support.
#[cfg_attr(miri, ignore)]
fn the_unwinder_sees_maps_before_samples() {
    use crate::log::post::tests::{stack, user_sample};
    let mut post = PostChain::default();
    let mut reorder = Reorder::default();
    reorder.push_with(
        log::Record::Sample(user_sample(200, 7, 0)),
        Some(stack(0x1010)),
    );
    reorder.push(log::Record::Map(log::Map {
        time: 100,
        pid: 7,
        start: 0x1000,
        len: 0x1000,
        pgoff: 0,
        build_id: log::Bytes::default(),
        path: log::Bytes::from("/dev/zero"),
    }));
    let mut times = Vec::new();
    write_ordered(&mut reorder, &mut post, u64::MAX, &mut |r: &log::Record<
        '_,
    >| {
        times.push(r.time())
    });
    assert_eq!(times, [100, 200]);
    let mut summary = SamplingDetails::default();
    post.summary(&mut summary);
    assert_eq!(summary.unwound, 1);
    assert_eq!(summary.unwind_refused.len(), 1, "{summary:?}");
    assert!(summary.unwind_refused[0].starts_with("/dev/zero"));
}
