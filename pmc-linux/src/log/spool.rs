//! The log's spool: a bounded queue of sealed pmc-log blocks between the hub's
//! [`pmc_log::Writer`] and the log's sink, written out by a thread of its own, so that the
//! drain thread never waits on the sink (a pipe to a slow reader, a TCP peer, a slow disk).
//!
//! While the sink keeps up the queue stays short. When it falls more than the bound behind,
//! a sealed block that would pass the bound is dropped whole, and its records are counted
//! ([`Unwritten`]): its samples are reported as lost (the summary's `lost_spool`, and a `Lost`
//! record the hub writes once the queue has room again); the log shows the gap as missing
//! blocks (FORMAT.md §3, rule 4). The preamble and the header's block are written before
//! [`Spool::new`] returns, straight to the sink, so that a sink that cannot be written fails
//! `configure_log` as before.
//!
//! A write error of the sink is kept (the sink takes nothing after it, as
//! [`pmc_log::Writer`]'s rule); the next write or flush returns it, so the writer fails, and
//! [`SpoolHandle::error`] has it at once for `log_error`. The blocks queued behind it are
//! counted as not written.

use pmc_core::LogSink;
use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// The default bound: how far (in bytes of sealed blocks) the sink may fall behind the drain
/// before whole blocks are dropped. About 300,000 samples with short callchains.
pub const DEFAULT_SPOOL_BYTES: usize = 32 << 20;

/// Records the spool did not write: dropped at the bound, or queued behind a write error.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Unwritten {
    /// Blocks dropped because the queue was full.
    pub blocks: u64,
    /// Their records.
    pub records: u64,
    /// Of those, samples (and user stacks are not counted here: they follow their sample).
    pub samples: u64,
    /// Records of the block a write error cut, and of the blocks queued behind it (never
    /// written).
    pub after_error: u64,
}

struct Queue {
    blocks: VecDeque<Vec<u8>>,
    bytes: usize,
    bound: usize,
    /// The sink's first error (errno, or kind): it takes nothing after it.
    error: Option<(Option<i32>, io::ErrorKind)>,
    done: bool,
    /// Flush requests made and done (generations).
    flush_wanted: u64,
    flushed: u64,
    unwritten: Unwritten,
}

struct Shared {
    q: Mutex<Queue>,
    cv: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // The queue's state stays consistent between statements; go on after a panic.
        self.q.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn rebuild((errno, kind): (Option<i32>, io::ErrorKind)) -> io::Error {
    errno.map_or_else(|| io::Error::from(kind), io::Error::from_raw_os_error)
}

/// The write end of the spool: what the hub's [`pmc_log::Writer`] writes into.
pub(crate) struct Spool {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// The sink until the writer thread takes it (the preamble and the header block are
    /// written straight to it).
    sink: Option<LogSink>,
    /// Writes so far.
    writes: u64,
}

/// The hub's view of a spool: what it did not write, and the sink's error.
#[derive(Clone)]
pub(crate) struct SpoolHandle(Arc<Shared>);

impl std::fmt::Debug for SpoolHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpoolHandle")
            .field("unwritten", &self.unwritten())
            .finish_non_exhaustive()
    }
}

impl SpoolHandle {
    /// What was not written so far.
    pub(crate) fn unwritten(&self) -> Unwritten {
        self.0.lock().unwritten
    }

    /// The sink's write error, if it failed.
    pub(crate) fn error(&self) -> Option<io::Error> {
        self.0.lock().error.map(rebuild)
    }
}

impl Spool {
    /// A spool in front of `sink`, dropping blocks beyond `bound` bytes queued.
    pub(crate) fn new(sink: LogSink, bound: usize) -> (Spool, SpoolHandle) {
        let shared = Arc::new(Shared {
            q: Mutex::new(Queue {
                blocks: VecDeque::new(),
                bytes: 0,
                bound,
                error: None,
                done: false,
                flush_wanted: 0,
                flushed: 0,
                unwritten: Unwritten::default(),
            }),
            cv: Condvar::new(),
        });
        let handle = SpoolHandle(shared.clone());
        let spool = Spool {
            shared,
            thread: None,
            sink: Some(sink),
            writes: 0,
        };
        (spool, handle)
    }

    /// Starts the writer thread with the sink (at the first block after the header's).
    fn start(&mut self) -> io::Result<()> {
        let Some(sink) = self.sink.take() else {
            return Ok(());
        };
        let shared = self.shared.clone();
        let handle = std::thread::Builder::new()
            .name("pmc-log-writer".into())
            .spawn(move || write_loop(&shared, sink))?;
        self.thread = Some(handle);
        Ok(())
    }
}

/// Counts the records and samples of a sealed pmc-log block (FORMAT.md §2: a 32-byte block
/// header, then records of a 12-byte header `u32 body_len, u16 kind, u16 flags, u32 crc` and
/// their bodies). Bytes that are not a block count as nothing.
fn count_block(block: &[u8]) -> (u64, u64) {
    use pmc_log::format::{BLOCK_HEADER_LEN, RECORD_HEADER_LEN};
    const SAMPLE: u16 = 3;
    let (mut records, mut samples) = (0, 0);
    let mut pos = BLOCK_HEADER_LEN;
    while let Some(head) = block.get(pos..pos + RECORD_HEADER_LEN) {
        let body = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let kind = u16::from_le_bytes([head[4], head[5]]);
        records += 1;
        if kind == SAMPLE {
            samples += 1;
        }
        pos = pos.saturating_add(RECORD_HEADER_LEN).saturating_add(body);
    }
    (records, samples)
}

impl Write for Spool {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writes += 1;
        if let Some(sink) = self.sink.as_mut().filter(|_| self.writes <= 2) {
            // The preamble, then the header's block: straight to the sink.
            return sink.write(buf);
        }
        self.start()?;
        let mut q = self.shared.lock();
        if let Some(e) = q.error {
            return Err(rebuild(e));
        }
        if q.bytes.saturating_add(buf.len()) > q.bound && !q.blocks.is_empty() {
            let (records, samples) = count_block(buf);
            q.unwritten.blocks += 1;
            q.unwritten.records += records;
            q.unwritten.samples += samples;
            return Ok(buf.len());
        }
        q.bytes += buf.len();
        q.blocks.push_back(buf.to_vec());
        self.shared.cv.notify_all();
        Ok(buf.len())
    }

    /// Waits until every block queued is written and the sink flushed.
    fn flush(&mut self) -> io::Result<()> {
        if let Some(sink) = self.sink.as_mut() {
            return sink.flush();
        }
        if self.thread.is_none() {
            // Its thread could not start (the write that tried failed): nothing to wait for.
            return Err(io::Error::other("the log's writer thread did not start"));
        }
        let mut q = self.shared.lock();
        q.flush_wanted += 1;
        let gen = q.flush_wanted;
        self.shared.cv.notify_all();
        while q.flushed < gen && q.error.is_none() {
            q = self.shared.cv.wait(q).unwrap_or_else(|p| p.into_inner());
        }
        match q.error {
            Some(e) => Err(rebuild(e)),
            None => Ok(()),
        }
    }
}

impl Drop for Spool {
    /// Writes what is queued (the writer flushed before: this returns once the thread ends).
    fn drop(&mut self) {
        self.shared.lock().done = true;
        self.shared.cv.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The writer thread: writes the queued blocks in order, flushes on request, and ends when
/// the spool is dropped and its queue written (or the sink failed).
fn write_loop(shared: &Shared, mut sink: LogSink) {
    let mut q = shared.lock();
    loop {
        if let Some(block) = q.blocks.pop_front() {
            drop(q);
            let r = sink.write_all(&block);
            q = shared.lock();
            q.bytes -= block.len();
            if let Err(e) = r {
                q.error = Some((e.raw_os_error(), e.kind()));
                // Nothing more is written: the block that failed (cut at some byte, as the
                // writer's own rule) and what is queued behind it are counted.
                let rest: u64 = std::iter::once(&block)
                    .chain(q.blocks.iter())
                    .map(|b| count_block(b).0)
                    .sum();
                q.unwritten.after_error += rest;
                q.blocks.clear();
                q.bytes = 0;
                shared.cv.notify_all();
            }
            continue;
        }
        if q.error.is_none() && q.flushed < q.flush_wanted {
            let gen = q.flush_wanted;
            drop(q);
            let r = sink.flush();
            q = shared.lock();
            if let Err(e) = r {
                q.error = Some((e.raw_os_error(), e.kind()));
            }
            q.flushed = gen;
            shared.cv.notify_all();
            continue;
        }
        if q.done {
            return;
        }
        q = shared.cv.wait(q).unwrap_or_else(|p| p.into_inner());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errno;
    use pmc_log::record::{self as log, Record};
    use std::sync::mpsc;

    /// A sink that takes the preamble and the header's block, then nothing until the test
    /// opens it; it writes into a shared buffer.
    struct Gate {
        open: mpsc::Receiver<()>,
        writes: u32,
        out: Arc<Mutex<Vec<u8>>>,
    }

    impl Write for Gate {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.writes += 1;
            if self.writes == 3 {
                // Bounded: a test that never opens the gate fails rather than hangs.
                self.open
                    .recv_timeout(std::time::Duration::from_secs(120))
                    .map_err(|_| io::Error::other("the gate never opened"))?;
            }
            self.out.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn sample(i: u64) -> Record<'static> {
        let frames = [0x1000 + i];
        Record::Sample(
            log::Sample {
                time: i,
                pmc_id: 0,
                pid: 1,
                tid: 1,
                cpu: Some(0),
                period: 1,
                callchain: log::Callchain::from_frames(&frames),
                kernel_frames: 0,
                raw: log::Bytes::default(),
            }
            .into_owned(),
        )
    }

    /// Issue 21: writing never waits on a sink that takes nothing: blocks beyond the bound
    /// are dropped and their samples counted; once the sink takes again, everything queued
    /// is written, and every sample is either read back or counted as dropped.
    #[test]
    fn a_blocked_sink_never_blocks_the_writer_and_drops_are_counted() {
        let (open, rx) = mpsc::channel();
        let out = Arc::new(Mutex::new(Vec::new()));
        let gate = Gate {
            open: rx,
            writes: 0,
            out: out.clone(),
        };
        let (spool, handle) = Spool::new(Box::new(gate), 64 << 10);
        let header = log::Header::default();
        let mut w = pmc_log::Writer::with_block_size(spool, &header, 4096).expect("header");
        let n = 20_000u64;
        for i in 0..n {
            w.write(&sample(i)).expect("never blocks, never fails");
        }
        let dropped = handle.unwritten();
        assert!(dropped.blocks > 0 && dropped.samples > 0, "{dropped:?}");
        open.send(()).expect("open the gate");
        w.finish().expect("finish");
        let bytes = out.lock().unwrap().clone();
        let reader = pmc_log::Reader::new(&bytes).expect("log");
        let mut it = reader.records();
        let samples = it
            .by_ref()
            .filter(|r| matches!(r, Record::Sample(_)))
            .count() as u64;
        let rep = it.into_report();
        assert!(rep.closed_cleanly, "{rep}");
        assert_eq!(samples + dropped.samples, n, "{dropped:?} {rep}");
        assert_eq!(handle.unwritten().after_error, 0);
    }

    /// A sink that fails: the error is there for the hub at once, the next write returns it,
    /// and what was queued behind it is counted.
    #[test]
    fn a_failed_sink_fails_the_next_write() {
        struct Full(u32);
        impl Write for Full {
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                self.0 += 1;
                if self.0 > 2 {
                    return Err(io::Error::from_raw_os_error(errno::ENOSPC));
                }
                Ok(buf.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let (spool, handle) = Spool::new(Box::new(Full(0)), 1 << 20);
        let mut w =
            pmc_log::Writer::with_block_size(spool, &log::Header::default(), 4096).expect("hdr");
        let mut failed = None;
        for i in 0..100_000u64 {
            if let Err(e) = w.write(&sample(i)) {
                failed = Some(e);
                break;
            }
            if i % 1000 == 999 {
                // Bounded wait for the thread to meet the error.
                let _ = w.flush();
            }
        }
        assert!(failed.is_some() || w.failed().is_some());
        let e = handle.error().expect("the sink's error");
        assert_eq!(e.raw_os_error(), Some(errno::ENOSPC));
    }
}
