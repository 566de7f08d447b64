//! Incremental hwpmc import: [`StreamImporter`].

use std::io::Write;

use super::{Converter, Core, Event, HwpmcError, ImportReport, Step, MAX_ITEM};
use crate::error::WriteError;
use crate::record::Record;
use crate::write::Writer;

/// The most bytes of the hwpmc stream a [`StreamImporter`] ever holds
/// ([`StreamImporter::buffered`]), whatever the input and however it is
/// split: twice the longest item the parser may have to see whole before
/// it can decide anything (a record's 16-bit length, or a `pmc record`
/// sub-record's 8-byte header plus 16-bit length).
pub const MAX_BUFFERED: usize = 2 * MAX_ITEM;

/// Where converted records go.
enum Out<W: Write> {
    /// No record yet: the header waits for the first kernel record.
    Waiting(W),
    /// The pmc-log header is written.
    Writing(Writer<W>),
    /// Lost to an error.
    Gone,
}

/// An hwpmc log importer fed in chunks, for a log that is still being
/// written (the reader of a `PMC_OP_CONFIGURELOG` pipe).
///
/// [`feed`](Self::feed) takes the kernel's bytes split anywhere (mid-record,
/// mid-header, inside the `pmc record` prefix); every record is converted
/// and written to the pmc-log [`Writer`] as soon as it is complete. Only
/// the incomplete tail is kept, at most [`MAX_BUFFERED`] bytes. The output
/// is byte for byte what [`convert`](super::convert) makes of the whole
/// input, however it was split, as long as [`flush`](Self::flush) (which
/// seals a pmc-log block early) is not called.
///
/// The pmc-log header is built from the first kernel record (INITIALIZE),
/// so nothing is written until that arrives.
///
/// ```
/// use pmc_log::hwpmc::{Encoder, StreamImporter};
/// let mut e = Encoder::new(Vec::new());
/// e.initialize(0, 0x0A01_0000, 0x9D, 1_000_000_000, 0, 0, "GenuineIntel-6-9A-4")?;
/// e.map_in(1, 42, 0x400000, b"/bin/sh")?;
/// e.closelog(2)?;
/// let log = e.into_inner();
/// let mut s = StreamImporter::new(Vec::new());
/// for chunk in log.chunks(5) {
///     s.feed(chunk)?;
/// }
/// let (file, report) = s.finish()?;
/// assert!(report.closed_cleanly);
/// assert_eq!(file, pmc_log::hwpmc::convert(&log, Vec::new())?.0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct StreamImporter<W: Write> {
    core: Core,
    conv: Converter,
    started: bool,
    /// The undecided tail of the input.
    buf: Vec<u8>,
    /// Stream offset of `buf[0]`.
    base: u64,
    out: Out<W>,
    /// Time of the last CLOSELOG seen: the clean-close marker at the end.
    close: Option<u64>,
    failed: bool,
}

impl<W: Write> StreamImporter<W> {
    /// An importer writing pmc-log to `out`.
    pub fn new(out: W) -> Self {
        StreamImporter {
            core: Core::new(),
            conv: Converter::default(),
            started: false,
            buf: Vec::new(),
            base: 0,
            out: Out::Waiting(out),
            close: None,
            failed: false,
        }
    }

    /// Parse the next `data` of the kernel stream, converting and writing
    /// every record it completes. Records reach `out` when the writer seals
    /// a block (it is full, or [`flush`](Self::flush)).
    ///
    /// # Errors
    /// [`HwpmcError::NotHwpmcLog`] (decided by the first 4 bytes),
    /// [`HwpmcError::UnsupportedVersion`], [`HwpmcError::Write`]; after any
    /// error the importer is stopped and every call returns
    /// [`HwpmcError::Stopped`].
    pub fn feed(&mut self, mut data: &[u8]) -> Result<(), HwpmcError> {
        if self.failed {
            return Err(HwpmcError::Stopped);
        }
        while !data.is_empty() {
            if self.core.is_done() {
                // Only reached at the end of input; nothing more is parsed.
                return Ok(());
            }
            if self.buf.is_empty() {
                // Parse straight from the caller's bytes; keep the tail.
                let used = self.run(data, self.base, false)?;
                self.base += used as u64;
                self.buf
                    .extend_from_slice(data.get(used..).unwrap_or_default());
                return Ok(());
            }
            // Top the tail up, never past the bound. The tail is shorter
            // than MAX_ITEM, so there is room, and once the buffer holds
            // MAX_ITEM bytes the parser can always decide something.
            let room = MAX_BUFFERED.saturating_sub(self.buf.len());
            let (now, later) = data.split_at(room.min(data.len()));
            self.buf.extend_from_slice(now);
            data = later;
            let buf = std::mem::take(&mut self.buf);
            let r = self.run(&buf, self.base, false);
            self.buf = buf;
            let used = r?;
            if used == 0 && now.is_empty() {
                // Cannot happen (a full buffer always decides something);
                // never spin on it: report the buffer as damage and go on.
                let len = self.buf.len() as u64;
                self.core.skip(self.base, len, "parser made no progress");
                self.base += len;
                self.buf.clear();
                continue;
            }
            self.buf.drain(..used);
            self.base += used as u64;
        }
        Ok(())
    }

    /// Seal the records converted so far into a pmc-log block and flush
    /// `out`, so a reader (or a crash) sees them. Only whole kernel records
    /// are converted; an incomplete tail waits for its rest.
    ///
    /// # Errors
    /// [`HwpmcError::Write`]; [`HwpmcError::Stopped`] after an earlier error.
    pub fn flush(&mut self) -> Result<(), HwpmcError> {
        if self.failed {
            return Err(HwpmcError::Stopped);
        }
        let r = match &mut self.out {
            Out::Writing(w) => w.flush(),
            Out::Waiting(w) => w.flush().map_err(WriteError::Io),
            Out::Gone => Ok(()),
        };
        r.map_err(|e| self.fail(e.into()))
    }

    /// End of input: parse the tail (an incomplete record is reported in
    /// [`ImportReport::skipped`] as damage), write the clean-close marker if
    /// the kernel stream had a CLOSELOG (else leave the log "not closed
    /// cleanly", like its input), flush, and return `out` with the report.
    ///
    /// # Errors
    /// As [`feed`](Self::feed): 1 to 3 bytes of input in all are
    /// [`HwpmcError::NotHwpmcLog`].
    pub fn finish(mut self) -> Result<(W, ImportReport), HwpmcError> {
        if self.failed {
            return Err(HwpmcError::Stopped);
        }
        let buf = std::mem::take(&mut self.buf);
        let used = self.run(&buf, self.base, true)?;
        self.base += used as u64;
        if !self.started {
            self.started = true;
            self.conv.prefix = self.core.prefix.clone();
            let (h, _) = self.conv.first(None).map_err(|e| self.fail(e))?;
            self.start_writer(&h)?;
        }
        let report = self.report();
        let out = match std::mem::replace(&mut self.out, Out::Gone) {
            Out::Writing(w) => match self.close {
                Some(t) => w.finish_at(t)?,
                None => w.into_inner_unclosed()?,
            },
            Out::Waiting(w) => w,
            Out::Gone => return Err(HwpmcError::Stopped),
        };
        Ok((out, report))
    }

    /// Bytes of the stream held because they do not yet make a whole
    /// record (at most [`MAX_BUFFERED`]).
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// The time of the last CLOSELOG record seen, if any: the kernel closed
    /// the log there. Its clean-close marker is written by
    /// [`finish`](Self::finish), since in a `pmc record` file more may follow;
    /// a reader that ends at the CLOSELOG (as FreeBSD's `pmclog_read` does)
    /// can finish once this is `Some` and nothing is [`buffered`](Self::buffered).
    ///
    /// ```
    /// use pmc_log::hwpmc::{Encoder, StreamImporter};
    /// let mut e = Encoder::new(Vec::new());
    /// e.initialize(0, 0x0A01_0000, 0, 1_000_000_000, 0, 0, "")?;
    /// let mut s = StreamImporter::new(Vec::new());
    /// s.feed(&e.into_inner())?;
    /// assert_eq!(s.closelog_time(), None);
    /// let mut e = Encoder::new(Vec::new());
    /// e.closelog(7)?;
    /// s.feed(&e.into_inner())?;
    /// assert_eq!(s.closelog_time(), Some(7));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn closelog_time(&self) -> Option<u64> {
        self.close
    }

    /// Bytes fed so far.
    pub fn position(&self) -> u64 {
        self.base + self.buf.len() as u64
    }

    /// What was parsed, converted and skipped so far.
    pub fn report(&self) -> ImportReport {
        let mut r = self.core.report.clone();
        r.records_out = self.conv.out;
        self.conv.add_notes(&mut r);
        r
    }

    fn fail(&mut self, e: HwpmcError) -> HwpmcError {
        self.failed = true;
        e
    }

    /// Step the parser over `w` (stream offset `base`), emitting events;
    /// returns the bytes consumed.
    fn run(&mut self, w: &[u8], base: u64, eof: bool) -> Result<usize, HwpmcError> {
        let mut pos = 0usize;
        loop {
            let rest = w.get(pos..).unwrap_or_default();
            match self.core.step(rest, base + pos as u64, eof) {
                Ok(Step::Advance(n, ev)) => {
                    pos += n;
                    if let Some(ev) = ev {
                        self.emit(ev)?;
                    }
                }
                Ok(Step::NeedMore | Step::End) => return Ok(pos),
                Err(e) => return Err(self.fail(e)),
            }
        }
    }

    fn start_writer(&mut self, h: &crate::record::Header<'_>) -> Result<(), HwpmcError> {
        if let Out::Waiting(w) = std::mem::replace(&mut self.out, Out::Gone) {
            match Writer::new(w, h) {
                Ok(w) => self.out = Out::Writing(w),
                Err(e) => return Err(self.fail(e.into())),
            }
        }
        Ok(())
    }

    fn emit(&mut self, ev: Event<'_>) -> Result<(), HwpmcError> {
        let ev = if self.started {
            ev
        } else {
            self.started = true;
            self.conv.prefix = self.core.prefix.clone();
            let (h, rest) = self.conv.first(Some(ev)).map_err(|e| self.fail(e))?;
            self.start_writer(&h)?;
            match rest {
                Some(ev) => ev,
                None => return Ok(()),
            }
        };
        if self.conv.skip(&ev) {
            return Ok(());
        }
        let rec = self.conv.convert(ev);
        self.conv.out += 1;
        match rec {
            Record::Close(c) => self.close = Some(c.time),
            // A second INITIALIZE (concatenated logs) stays a header record.
            other => {
                let r = match &mut self.out {
                    Out::Writing(w) => w.write(&other),
                    _ => Ok(()),
                };
                r.map_err(|e| self.fail(e.into()))?;
            }
        }
        Ok(())
    }
}

impl<W: Write> std::fmt::Debug for StreamImporter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamImporter")
            .field("position", &self.position())
            .field("buffered", &self.buf.len())
            .field("started", &self.started)
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

/// A byte queue shared by a writer and a reader in one thread: what a
/// [`StreamImporter`] writes (pmc-log bytes), drained by the reader of the
/// converted log ([`ConvertReader`], libpmc's `pmclog_read`). Cloning shares
/// the queue. Its [`Read`](std::io::Read) returns what is queued now, and 0
/// when nothing is: "nothing for now", which [`crate::StreamReader`] takes as
/// such (it is told the real end apart).
///
/// ```
/// use pmc_log::hwpmc::SharedQueue;
/// use std::io::{Read, Write};
///
/// let q = SharedQueue::default();
/// let (mut w, mut r) = (q.clone(), q);
/// w.write_all(b"abc")?;
/// let mut buf = [0; 8];
/// assert_eq!(r.read(&mut buf)?, 3);
/// assert!(r.is_empty());
/// assert_eq!(r.read(&mut buf)?, 0); // nothing for now
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Default)]
pub struct SharedQueue(std::rc::Rc<std::cell::RefCell<std::collections::VecDeque<u8>>>);

impl SharedQueue {
    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.0.borrow().is_empty()
    }
    /// How many bytes are queued.
    pub fn len(&self) -> usize {
        self.0.borrow().len()
    }
    /// Queues `data` (what [`Write::write`] does, without a `Result`).
    pub fn push(&self, data: &[u8]) {
        self.0.borrow_mut().extend(data);
    }
}

impl std::fmt::Debug for SharedQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedQueue")
            .field("queued", &self.0.borrow().len())
            .finish()
    }
}

impl Write for SharedQueue {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.push(data);
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl std::io::Read for SharedQueue {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut q = self.0.borrow_mut();
        let n = buf.len().min(q.len());
        for (b, v) in buf.iter_mut().zip(q.drain(..n)) {
            *b = v;
        }
        Ok(n)
    }
}

/// How much of the hwpmc stream a [`ConvertReader`] reads at once.
const READ_CHUNK: usize = 64 << 10;

/// An hwpmc log read from `R` (a FIFO, a pipe, a file) as pmc-log bytes, in
/// bounded memory.
///
/// An [`io::Read`](std::io::Read) adapter over a [`StreamImporter`], so that a
/// pmc-log reader ([`crate::StreamReader`]) reads an hwpmc log with bounded
/// memory: the importer's tail ([`MAX_BUFFERED`]), one read chunk (64 KiB)
/// and the pmc-log block being drained, whatever the log's size.
///
/// ```
/// use pmc_log::hwpmc::{ConvertReader, Encoder};
/// use std::io::Read;
///
/// let mut e = Encoder::new(Vec::new());
/// e.initialize(0, 0x0A01_0000, 0x9D, 1_000_000_000, 0, 0, "GenuineIntel-6-9A-4")?;
/// e.map_in(1, 42, 0x400000, b"/bin/sh")?;
/// e.closelog(2)?;
/// let log = e.into_inner();
/// let mut r = ConvertReader::new(&log[..]);
/// let mut converted = Vec::new();
/// r.read_to_end(&mut converted)?;
/// assert_eq!(converted, pmc_log::hwpmc::convert(&log, Vec::new())?.0);
/// assert!(r.report().is_some_and(|r| r.closed_cleanly));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ConvertReader<R: std::io::Read> {
    inner: R,
    importer: Option<StreamImporter<SharedQueue>>,
    out: SharedQueue,
    chunk: Vec<u8>,
    report: Option<ImportReport>,
}

impl<R: std::io::Read> ConvertReader<R> {
    /// Converts the hwpmc log read from `inner`.
    pub fn new(inner: R) -> Self {
        let out = SharedQueue::default();
        ConvertReader {
            inner,
            importer: Some(StreamImporter::new(out.clone())),
            out,
            chunk: Vec::new(),
            report: None,
        }
    }

    /// The importer's report (records in and out, damaged regions skipped,
    /// whether the log was closed): `None` until the input has ended.
    pub fn report(&self) -> Option<&ImportReport> {
        self.report.as_ref()
    }

    /// Feeds the importer until it has produced bytes or the input ended.
    fn fill(&mut self) -> std::io::Result<()> {
        let conv = |e: HwpmcError| std::io::Error::new(std::io::ErrorKind::InvalidData, e);
        while self.out.is_empty() {
            let Some(imp) = self.importer.as_mut() else {
                return Ok(());
            };
            self.chunk.resize(READ_CHUNK, 0);
            let n = match self.inner.read(&mut self.chunk) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if n == 0 {
                if let Some(imp) = self.importer.take() {
                    let (_, report) = imp.finish().map_err(conv)?;
                    self.report = Some(report);
                }
                return Ok(());
            }
            imp.feed(self.chunk.get(..n).unwrap_or_default())
                .map_err(conv)?;
        }
        Ok(())
    }
}

impl<R: std::io::Read> std::io::Read for ConvertReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.fill()?;
        self.out.read(buf)
    }
}
