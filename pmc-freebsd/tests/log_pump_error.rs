//! A log sink that fails (a full disk) under the log pump: the error is there for
//! `Backend::log_error` as soon as the pump meets it, with its errno and io::ErrorKind
//! (not only as text, not only at close); nothing more reaches the sink; the pump's memory
//! stays bounded; everything written before the failure reads back.

use crate::common::{make_work, run_until_log_error, sample_make_into};
use pmc_core::{Allocation, Backend as _, ErrorKind, Pmc as _, Rate, Target};
use pmc_freebsd::sys::sim::{SimConfig, SimDriver};
use pmc_freebsd::Backend;
use std::io::Write;
use std::sync::{Arc, Mutex};

/// A "disk" with `room` bytes: writes past it are cut short, then fail with ENOSPC.
#[derive(Clone)]
struct FullDisk(Arc<Mutex<(Vec<u8>, usize)>>);

impl Write for FullDisk {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let mut g = self.0.lock().unwrap();
        let room = g.1.saturating_sub(g.0.len());
        if room == 0 {
            return Err(std::io::Error::from_raw_os_error(28)); // ENOSPC
        }
        let n = b.len().min(room);
        g.0.extend_from_slice(&b[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn full_disk_is_reported_at_once_with_its_kind() {
    let disk = FullDisk(Arc::new(Mutex::new((Vec::new(), 100 << 10))));
    let (sim, b, mut p) = sample_make_into(disk.clone());
    let work = make_work();
    // Run until the pump has met the full disk (no timed assertion: as long as it takes).
    let (err, rounds) = run_until_log_error(&sim, &b, "the disk never filled");
    println!("after {rounds} rounds: {err}");
    // The portable trait method sees the same error.
    let via_trait = pmc_core::Backend::log_error(&b).expect("Backend::log_error");
    assert_eq!(via_trait.errno(), Some(28), "{via_trait}");
    assert_eq!(err.kind(), ErrorKind::Os);
    assert_eq!(err.errno(), Some(28), "{err}");
    let io = std::error::Error::source(&err)
        .and_then(|s| s.downcast_ref::<std::io::Error>())
        .expect("the io::Error is the source");
    assert_eq!(io.kind(), std::io::ErrorKind::StorageFull);
    // flush_log reports it too; nothing more is written, even when space comes back.
    assert!(b.flush_log().is_err());
    let len = disk.0.lock().unwrap().0.len();
    disk.0.lock().unwrap().1 = usize::MAX;
    for _ in 0..50 {
        sim.run(work);
    }
    let _ = b.flush_log();
    assert_eq!(
        disk.0.lock().unwrap().0.len(),
        len,
        "written after the failure"
    );
    assert!(b.log_max_buffered().unwrap() <= pmc_log::hwpmc::MAX_BUFFERED);
    p.stop().unwrap();
    assert!(b.close_log().is_err());
    // Every complete record written before the failure reads back; only the cut tail is
    // skipped.
    let bytes = disk.0.lock().unwrap().0.clone();
    let reader = pmc_log::Reader::new(&bytes).unwrap();
    let mut it = reader.records();
    let n = it.by_ref().count();
    let rep = it.into_report();
    println!("{n} records read back: {rep}");
    assert!(n > 100);
    assert!(rep
        .skipped
        .iter()
        .all(|s| s.reason == pmc_log::SkipReason::Truncated));
}

/// The capabilities hwpmc has not: `Backend::sampling_summary` and `Pmc::log_counts` are
/// NotSupported, with help naming an API; `log_error` is `None` while the log is good.
#[test]
#[cfg_attr(miri, ignore)]
fn capabilities_hwpmc_lacks_are_not_supported() {
    let sim = Arc::new(SimDriver::new(SimConfig::default()));
    let b: Backend<Arc<SimDriver>> = Backend::with_sys(sim.clone()).unwrap();
    b.configure_log(Box::new(std::io::sink())).unwrap();
    assert!(pmc_core::Backend::log_error(&b).is_none());
    let e = pmc_core::Backend::sampling_summary(&b).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotSupported);
    assert!(e.message().contains("Backend::sampling_summary"), "{e}");
    assert!(e.help().is_some_and(|h| h.contains("pmc_log")), "{e}");
    sim.spawn(2000, 1000, true, "/usr/bin/make");
    let mut p = b
        .allocate(&Allocation::sampling(
            "instructions".parse().unwrap(),
            Rate::Period(5_000),
        ))
        .unwrap();
    p.attach(Target::Pid(2000)).unwrap();
    let e = pmc_core::Pmc::log_counts(&p).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotSupported);
    assert!(e.message().contains("Pmc::log_counts"), "{e}");
    assert!(
        e.help().is_some_and(|h| h.contains("read_instances")),
        "{e}"
    );
    b.close_log().unwrap();
}
