//! A log write that fails (a full disk, a closed pipe): the writer's memory
//! stays flat, the error keeps its kind, nothing is written after it, and
//! every record written before it reads back.
//!
//! Its own test binary: a counting global allocator measures the live heap,
//! so "memory stays flat" is checked with the allocator as the judge, not
//! with the writer's own bookkeeping.

#[path = "util/mod.rs"]
#[allow(dead_code)]
mod util;

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{self, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use pmc_log::record::Record;
use pmc_log::{Reader, WriteError, Writer};
use util::{gen_record, header, Rng};

struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts bytes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size(), Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        LIVE.fetch_add(new, Ordering::Relaxed);
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(p, l, new) }
    }
}

/// Both tests read the process-wide allocation count: one at a time.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// A device with `room` bytes of space: writes past it are cut short, then
/// fail with ENOSPC. `grow` gives space back (the disk freed up).
#[derive(Clone, Default)]
struct Disk(Arc<Mutex<(Vec<u8>, usize, usize)>>); // (data, room, failed writes)

impl Disk {
    fn new(room: usize) -> Self {
        Disk(Arc::new(Mutex::new((Vec::new(), room, 0))))
    }
    fn data(&self) -> Vec<u8> {
        self.0.lock().unwrap().0.clone()
    }
    fn len(&self) -> usize {
        self.0.lock().unwrap().0.len()
    }
    fn grow(&self, n: usize) {
        self.0.lock().unwrap().1 += n;
    }
    fn failures(&self) -> usize {
        self.0.lock().unwrap().2
    }
}

impl Write for Disk {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        let mut g = self.0.lock().unwrap();
        let room = g.1.saturating_sub(g.0.len());
        if room == 0 {
            g.2 += 1;
            return Err(io::Error::from_raw_os_error(28)); // ENOSPC
        }
        let n = b.len().min(room);
        g.0.extend_from_slice(&b[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Records `0..n` of the deterministic stream.
fn records(n: u64) -> Vec<Record<'static>> {
    let mut rng = Rng(99);
    (0..n).map(|i| gen_record(&mut rng, i)).collect()
}

#[test]
fn full_disk_fails_the_writer_memory_stays_flat_and_nothing_is_hidden() {
    let _serial = serial();
    let n = if cfg!(miri) { 300 } else { 200_000 };
    let recs = records(n);
    let disk = Disk::new(if cfg!(miri) { 4 << 10 } else { 256 << 10 });
    let mut w = Writer::with_block_size(disk.clone(), &header(), 4096).unwrap();
    let mut first_error = None;
    let mut live_at_failure = 0;
    let mut peak_after = 0;
    let mut errors_after = 0u64;
    for (i, r) in recs.iter().enumerate() {
        match w.write(r) {
            Ok(()) => assert!(first_error.is_none(), "a write succeeded after the failure"),
            Err(e) if first_error.is_none() => {
                assert_eq!(e.io_kind(), Some(io::ErrorKind::StorageFull), "{e}");
                assert!(matches!(e, WriteError::Io(_)), "{e:?}");
                first_error = Some(i);
                live_at_failure = LIVE.load(Ordering::Relaxed);
                // Space comes back: nothing written from now on may land in the file.
                disk.grow(1 << 30);
            }
            Err(e) => {
                assert!(
                    matches!(
                        e,
                        WriteError::Failed {
                            kind: io::ErrorKind::StorageFull,
                            ..
                        }
                    ),
                    "{e:?}"
                );
                errors_after += 1;
                peak_after = peak_after.max(LIVE.load(Ordering::Relaxed));
            }
        }
    }
    let failed_at = first_error.expect("the disk filled up");
    let len_at_failure = disk.len();
    assert!(w.flush().is_err());
    assert_eq!(w.failed(), Some(io::ErrorKind::StorageFull));
    let dropped = w.records_dropped();
    // Every record offered (and the header) is either written or counted as dropped.
    assert_eq!(w.records_written() + dropped, n + 1);
    assert!(matches!(w.finish(), Err(WriteError::Failed { .. })));
    assert_eq!(
        disk.len(),
        len_at_failure,
        "bytes were written after the failure"
    );
    assert_eq!(disk.failures(), 1, "the writer retried");

    let growth = peak_after.saturating_sub(live_at_failure);
    println!(
        "full disk after {failed_at} records: {errors_after} later writes refused, \
         heap growth after the failure {growth} bytes, {dropped} records dropped"
    );
    // The pending block is dropped and nothing accumulates: the heap may not
    // grow by even one block (4 KiB) while 100k+ records are refused.
    assert!(growth < 4096, "heap grew {growth} bytes after the failure");

    // Every record written before the failure reads back, in order, and the
    // file ends with the cut block (no garbage, no giant block after it).
    let data = disk.data();
    let reader = Reader::new(&data).unwrap();
    let mut it = reader.records();
    let got: Vec<Record<'_>> = it.by_ref().skip(1).collect();
    let rep = it.into_report();
    assert!(!rep.closed_cleanly);
    assert!(got.len() as u64 + dropped >= failed_at as u64 + 1 + errors_after);
    assert!(got.len() <= failed_at + 1);
    assert_eq!(
        got[..],
        recs[..got.len()],
        "recovered records are not the written prefix"
    );
    // Only the cut tail may be skipped: less than one block.
    assert!(rep.skipped_bytes() < 4096 + 64, "{rep}");
    println!(
        "recovered {} of the {failed_at} records offered before the failure: {rep}",
        got.len()
    );
}

#[test]
fn failed_flush_also_fails_the_writer() {
    let _serial = serial();
    struct BadFlush(Vec<u8>);
    impl Write for BadFlush {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        }
    }
    let mut w = Writer::new(BadFlush(Vec::new()), &header()).unwrap();
    w.write(&records(1)[0]).unwrap();
    let e = w.flush().unwrap_err();
    assert_eq!(e.io_kind(), Some(io::ErrorKind::BrokenPipe));
    let e = w.write(&records(1)[0]).unwrap_err();
    assert!(
        matches!(
            e,
            WriteError::Failed {
                kind: io::ErrorKind::BrokenPipe,
                dropped: 1
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("stopped"), "{e}");
}
