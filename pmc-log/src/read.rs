//! Readers: a zero-copy reader over `&[u8]` and a streaming reader over
//! [`io::Read`]. Both share one state machine, so they skip, resynchronise
//! and report damage identically.

use std::fmt;
use std::io;

use crate::bytes::ByteCursor;
use crate::codec::decode_body;
use crate::error::ReadError;
use crate::format::{
    decode_block_header, kind, record_crc, BLOCK_HEADER_LEN, BYTE_ORDER_LE, MAGIC, PREAMBLE_LEN,
    RECORD_HEADER_LEN, SYNC, VERSION_MAJOR,
};
use crate::record::{Header, Record};

/// Why a region of the input was skipped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkipReason {
    /// No valid block header here (bad sync or CRC); the reader scanned
    /// forward to the next valid one.
    BadBlockHeader,
    /// A record's length does not fit in its block; the rest of the block
    /// was skipped.
    BadRecordLength,
    /// A record's CRC did not match; the rest of the block was skipped.
    BadChecksum,
    /// A record had a valid CRC but a body this reader could not decode
    /// (only that record was skipped).
    Malformed {
        /// The field that failed.
        field: &'static str,
    },
    /// The input ends inside a block header or record: the file was cut
    /// (or is still being written).
    Truncated,
    /// A valid block header starts right where a block's next record should
    /// be, before the end that block claims: the block lost its last
    /// `missing` bytes (a torn write). Its records before the cut were
    /// returned; the region has length 0 (nothing was skipped, the bytes are
    /// not in the input).
    BlockCut {
        /// Bytes of the cut block's claimed payload that are not there.
        missing: u64,
    },
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::BadBlockHeader => f.write_str("damaged block header"),
            SkipReason::BadRecordLength => f.write_str("record length exceeds its block"),
            SkipReason::BadChecksum => f.write_str("record checksum mismatch"),
            SkipReason::Malformed { field } => write!(f, "malformed record (field `{field}`)"),
            SkipReason::Truncated => f.write_str("input ends mid-record"),
            SkipReason::BlockCut { missing } => write!(
                f,
                "block cut short: the next block starts {missing} bytes before this one's claimed end"
            ),
        }
    }
}

/// One skipped region of the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// Byte offset of the region from the start of the input.
    pub offset: u64,
    /// Its length in bytes.
    pub len: u64,
    /// Why it was skipped.
    pub reason: SkipReason,
}

/// What a reader saw: record counts, skipped regions, and whether the log
/// was closed cleanly.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadReport {
    /// Records returned.
    pub records: u64,
    /// Well-formed records of kinds this reader does not know (skipped,
    /// forward compatibility).
    pub unknown_records: u64,
    /// Valid block headers seen.
    pub blocks: u64,
    /// Block sequence numbers that never appeared (whole blocks lost).
    pub missing_blocks: u64,
    /// Skipped regions, in input order.
    pub skipped: Vec<Skipped>,
    /// True once the clean-close marker has been read.
    pub closed_cleanly: bool,
}

impl ReadReport {
    /// Total bytes skipped.
    pub fn skipped_bytes(&self) -> u64 {
        self.skipped.iter().map(|s| s.len).sum()
    }
    /// True when nothing was skipped or lost and the log was closed cleanly.
    pub fn is_clean(&self) -> bool {
        self.skipped.is_empty() && self.missing_blocks == 0 && self.closed_cleanly
    }
    fn skip(&mut self, offset: u64, len: u64, reason: SkipReason) {
        if len > 0 || matches!(reason, SkipReason::BlockCut { .. }) {
            self.skipped.push(Skipped {
                offset,
                len,
                reason,
            });
        }
    }
}

impl fmt::Display for ReadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} records in {} blocks", self.records, self.blocks)?;
        if self.unknown_records > 0 {
            write!(f, ", {} of unknown kind skipped", self.unknown_records)?;
        }
        if !self.skipped.is_empty() {
            write!(
                f,
                ", {} bytes skipped in {} regions",
                self.skipped_bytes(),
                self.skipped.len()
            )?;
            for s in &self.skipped {
                write!(f, "; {} bytes at offset {}: {}", s.len, s.offset, s.reason)?;
            }
        }
        if self.missing_blocks > 0 {
            write!(f, ", {} blocks missing", self.missing_blocks)?;
        }
        if !self.closed_cleanly {
            f.write_str(", not closed cleanly (no close marker: the writer crashed, was killed, or is still writing)")?;
        }
        Ok(())
    }
}

/// Check the 16-byte preamble.
fn check_preamble(p: &[u8]) -> Result<(), ReadError> {
    let Some(p) = p.get(..PREAMBLE_LEN) else {
        return Err(ReadError::TooShort { len: p.len() });
    };
    let c = ByteCursor::le(p);
    let found = c.array_at::<8>(0).unwrap_or_default();
    if found != MAGIC {
        return Err(ReadError::NotAPmcLog {
            found,
            expected: MAGIC,
        });
    }
    let major = c.u16_at(8).unwrap_or_default();
    let minor = c.u16_at(10).unwrap_or_default();
    if major != VERSION_MAJOR {
        return Err(ReadError::UnsupportedVersion {
            major,
            minor,
            supported: VERSION_MAJOR,
        });
    }
    if p[12] != BYTE_ORDER_LE {
        return Err(ReadError::ByteOrder(p[12]));
    }
    Ok(())
}

#[derive(Clone, Copy, Debug)]
enum Mode {
    /// Expecting a block header at `pos`.
    Between,
    /// Inside a block whose payload ends at `end` (absolute).
    InBlock { end: u64 },
    /// Scanning for a valid block header; the damaged region began at `from`
    /// and is reported with `why`. `claimed_end` is the end the damaged block
    /// claimed (0 for damage between blocks).
    Resync {
        from: u64,
        why: SkipReason,
        claimed_end: u64,
    },
}

enum Loc {
    /// A CRC-verified record: kind, absolute offset, and body range in `buf`.
    Rec {
        kind: u16,
        at: u64,
        body: (usize, usize),
    },
    /// More input is needed to make progress (streaming only).
    NeedMore,
    /// End of input.
    End,
}

enum Step<'a> {
    Rec(Record<'a>),
    NeedMore,
    End,
}

/// The shared parsing state machine. Positions are absolute input offsets;
/// `buf` holds the input from absolute offset `base`.
#[derive(Debug)]
struct Core {
    pos: u64,
    mode: Mode,
    next_seq: Option<u64>,
    report: ReadReport,
}

impl Core {
    fn new() -> Self {
        Core {
            pos: PREAMBLE_LEN as u64,
            mode: Mode::Between,
            next_seq: None,
            report: ReadReport::default(),
        }
    }

    /// Advance. With `eof` false, running out of input returns `NeedMore`
    /// and nothing is reported; with `eof` true the incomplete tail is
    /// reported as truncated. One step per mode; a step that only changes
    /// the mode returns `None` and the next mode's step runs.
    fn locate(&mut self, buf: &[u8], base: u64, eof: bool) -> Loc {
        let input = Input { buf, base, eof };
        loop {
            let loc = match self.mode {
                Mode::Between => self.between(&input),
                Mode::Resync {
                    from,
                    why,
                    claimed_end,
                } => self.resync(&input, from, why, claimed_end),
                Mode::InBlock { end } => self.in_block(&input, end),
            };
            if let Some(loc) = loc {
                return loc;
            }
        }
    }

    /// Expecting a block header at `pos`.
    fn between(&mut self, input: &Input<'_>) -> Option<Loc> {
        let avail_end = input.end();
        if self.pos >= avail_end {
            return Some(if input.eof { Loc::End } else { Loc::NeedMore });
        }
        let Some(hb) = input.from(self.pos) else {
            return Some(Loc::End);
        };
        if hb.len() < BLOCK_HEADER_LEN {
            // Could be a cut header or damage: only decide at EOF.
            if hb.get(..4.min(hb.len())) != SYNC.get(..4.min(hb.len())) {
                self.bad_block_header();
                return None;
            }
            if input.eof {
                return Some(self.truncated(hb.len() as u64, avail_end));
            }
            return Some(Loc::NeedMore);
        }
        match decode_block_header(hb) {
            Some(h) => self.enter_block(h),
            None => self.bad_block_header(),
        }
        None
    }

    /// No valid block header at `pos`: scan from the next byte.
    fn bad_block_header(&mut self) {
        self.mode = Mode::Resync {
            from: self.pos,
            why: SkipReason::BadBlockHeader,
            claimed_end: 0,
        };
        self.pos += 1;
    }

    /// The input ends `len` bytes into a block header or record at `pos`:
    /// report the cut and end.
    fn truncated(&mut self, len: u64, avail_end: u64) -> Loc {
        self.report.skip(self.pos, len, SkipReason::Truncated);
        self.pos = avail_end;
        self.mode = Mode::Between;
        Loc::End
    }

    /// Scanning for a valid block header after damage at `from`.
    fn resync(
        &mut self,
        input: &Input<'_>,
        from: u64,
        why: SkipReason,
        claimed_end: u64,
    ) -> Option<Loc> {
        let avail_end = input.end();
        let hay = input.from(self.pos).unwrap_or_default();
        match scan_for_block_header(hay, input.eof) {
            Scan::Found(at, h) => {
                let abs = self.pos + at as u64;
                if abs > from {
                    self.report.skip(from, abs - from, why);
                } else if claimed_end > abs {
                    self.report.skip(
                        abs,
                        0,
                        SkipReason::BlockCut {
                            missing: claimed_end - abs,
                        },
                    );
                }
                self.pos = abs;
                self.enter_block(h);
                None
            }
            Scan::Partial(at) => {
                // Possible header, not all here yet.
                self.pos += at as u64;
                Some(Loc::NeedMore)
            }
            Scan::Nothing if input.eof => {
                self.report.skip(from, avail_end - from, why);
                self.pos = avail_end;
                self.mode = Mode::Between;
                Some(Loc::End)
            }
            Scan::Nothing => {
                // Keep the last few bytes: a sync may straddle reads.
                self.pos = avail_end.saturating_sub(3).max(self.pos);
                Some(Loc::NeedMore)
            }
        }
    }

    /// Inside a block whose payload ends at `end`: the record at `pos`,
    /// checked against the block and its CRC.
    #[inline]
    fn in_block(&mut self, input: &Input<'_>, end: u64) -> Option<Loc> {
        let avail_end = input.end();
        if self.pos >= end {
            self.mode = Mode::Between;
            return None;
        }
        if self.pos >= avail_end {
            return Some(if input.eof {
                self.mode = Mode::Between;
                Loc::End
            } else {
                Loc::NeedMore
            });
        }
        let rest = input.from(self.pos).unwrap_or_default();
        let in_block = end - self.pos;
        if in_block < RECORD_HEADER_LEN as u64 {
            // No record fits: damage (a writer never leaves this).
            self.damaged_in_block(end, SkipReason::BadRecordLength);
            return None;
        }
        let Some(head) = rest.get(..RECORD_HEADER_LEN) else {
            if input.eof {
                return Some(self.truncated(rest.len() as u64, avail_end));
            }
            return Some(Loc::NeedMore);
        };
        let h = ByteCursor::le(head);
        let body_len = h.u32_at(0).unwrap_or_default();
        let k = h.u16_at(4).unwrap_or_default();
        let crc = h.u32_at(8).unwrap_or_default();
        let total = RECORD_HEADER_LEN as u64 + u64::from(body_len);
        if total > in_block {
            self.damaged_in_block(end, SkipReason::BadRecordLength);
            return None;
        }
        let Some(body) = rest.get(RECORD_HEADER_LEN..total as usize) else {
            return self.record_past_input(input, rest, end);
        };
        if record_crc(head.get(..8).unwrap_or_default(), body) != crc {
            self.damaged_in_block(end, SkipReason::BadChecksum);
            return None;
        }
        let at = self.pos;
        self.pos += total;
        let start = input.idx(at) + RECORD_HEADER_LEN;
        Some(Loc::Rec {
            kind: k,
            at,
            body: (start, start + body_len as usize),
        })
    }

    /// The record at `pos` (`rest` onwards) runs past the input. At EOF
    /// that is a cut, unless a valid block header follows it: then it is
    /// damage, and the block there is read.
    #[cold]
    fn record_past_input(&mut self, input: &Input<'_>, rest: &[u8], end: u64) -> Option<Loc> {
        if !input.eof {
            return Some(Loc::NeedMore);
        }
        if find_block_header(rest.get(1..).unwrap_or_default()).is_some() {
            self.damaged_in_block(end, SkipReason::BadRecordLength);
            return None;
        }
        Some(self.truncated(rest.len() as u64, input.end()))
    }

    /// Account for a located record: decode it, or count/report it when
    /// it is of unknown kind or malformed (`None`).
    #[inline]
    fn decode<'a>(
        &mut self,
        buf: &'a [u8],
        k: u16,
        at: u64,
        body: (usize, usize),
    ) -> Option<Record<'a>> {
        let bytes = buf.get(body.0..body.1).unwrap_or_default();
        match decode_body(k, bytes) {
            Ok(Some(r)) => {
                self.report.records += 1;
                if k == kind::CLOSE {
                    self.report.closed_cleanly = true;
                }
                Some(r)
            }
            Ok(None) => {
                self.report.unknown_records += 1;
                None
            }
            Err(e) => {
                let total = (body.1 - body.0 + RECORD_HEADER_LEN) as u64;
                self.report
                    .skip(at, total, SkipReason::Malformed { field: e.field() });
                None
            }
        }
    }

    /// Advance to the next decodable record.
    #[inline]
    fn step<'a>(&mut self, buf: &'a [u8], base: u64, eof: bool) -> Step<'a> {
        loop {
            match self.locate(buf, base, eof) {
                Loc::Rec { kind, at, body } => {
                    if let Some(r) = self.decode(buf, kind, at, body) {
                        return Step::Rec(r);
                    }
                }
                Loc::NeedMore => return Step::NeedMore,
                Loc::End => return Step::End,
            }
        }
    }

    fn enter_block(&mut self, h: crate::format::BlockHeader) {
        self.report.blocks += 1;
        if let Some(expected) = self.next_seq {
            if h.seq > expected {
                self.report.missing_blocks += h.seq - expected;
            }
        }
        self.next_seq = Some(h.seq.saturating_add(1));
        self.pos += BLOCK_HEADER_LEN as u64;
        self.mode = Mode::InBlock {
            end: self.pos + u64::from(h.payload_len),
        };
    }

    /// A record at `pos` inside the block ending at `end` failed its checks.
    /// Its length cannot be trusted, so neither can the block's claimed end
    /// (a torn block's claimed end lies inside whatever was written after
    /// it): rescan for the next valid block header from `pos` itself (a
    /// block header can sit exactly where the damaged record starts: a block
    /// that lost its tail) and report everything up to it with `why`.
    fn damaged_in_block(&mut self, end: u64, why: SkipReason) {
        self.mode = Mode::Resync {
            from: self.pos,
            why,
            claimed_end: end,
        };
    }
}

/// The input a [`Core`] step looks at: `buf` holds it from absolute offset
/// `base`; `eof` says no more follows.
struct Input<'b> {
    buf: &'b [u8],
    base: u64,
    eof: bool,
}

impl<'b> Input<'b> {
    /// The absolute offset where `buf` ends.
    #[inline]
    fn end(&self) -> u64 {
        self.base + self.buf.len() as u64
    }
    /// `abs` as an index into `buf`; callers ensure `abs >= base`.
    #[inline]
    fn idx(&self, abs: u64) -> usize {
        (abs - self.base) as usize
    }
    /// `buf` from absolute offset `abs` on.
    #[inline]
    fn from(&self, abs: u64) -> Option<&'b [u8]> {
        self.buf.get(self.idx(abs)..)
    }
}

/// What a resync scan found in its haystack.
enum Scan {
    /// A valid block header at that offset.
    Found(usize, crate::format::BlockHeader),
    /// What may be a block header at that offset, not all there yet (only
    /// before EOF).
    Partial(usize),
    /// No block header.
    Nothing,
}

/// Scan `hay` for the first valid block header; before EOF, a sync prefix
/// too short to decide stops the scan there.
fn scan_for_block_header(hay: &[u8], eof: bool) -> Scan {
    let mut i = 0usize;
    while let Some(rel) = hay
        .get(i..)
        .and_then(|h| h.iter().position(|&b| b == SYNC[0]))
    {
        let at = i + rel;
        let cand = hay.get(at..).unwrap_or_default();
        if cand.len() < BLOCK_HEADER_LEN {
            if cand.get(..SYNC.len().min(cand.len())) == SYNC.get(..SYNC.len().min(cand.len()))
                && !eof
            {
                return Scan::Partial(at);
            }
            i = at + 1;
            continue;
        }
        if let Some(h) = decode_block_header(cand) {
            return Scan::Found(at, h);
        }
        i = at + 1;
    }
    Scan::Nothing
}

/// The first valid block header in `hay`: its offset and fields.
fn find_block_header(hay: &[u8]) -> Option<(usize, crate::format::BlockHeader)> {
    let mut i = 0usize;
    while let Some(rel) = hay
        .get(i..)
        .and_then(|h| h.iter().position(|&b| b == SYNC[0]))
    {
        let at = i + rel;
        if let Some(h) = hay.get(at..).and_then(decode_block_header) {
            return Some((at, h));
        }
        i = at + 1;
    }
    None
}

/// A zero-copy reader over a complete log in memory (or memory-mapped).
///
/// ```
/// use pmc_log::record::{Header, Record, Sample, Callchain};
/// use pmc_log::{Reader, Writer};
/// let mut w = Writer::new(Vec::new(), &Header::default())?;
/// let frames = [0x1000u64, 0x2000];
/// w.write(&Record::Sample(Sample { time: 1, pmc_id: 0, pid: 7, tid: 7, cpu: Some(1),
///     period: 100, callchain: Callchain::from_frames(&frames), kernel_frames: 0,
///     raw: Default::default() }))?;
/// let bytes = w.finish()?;
///
/// let reader = Reader::new(&bytes)?;
/// let mut samples = 0;
/// let mut it = reader.records();
/// for r in &mut it {
///     if let Record::Sample(s) = r {
///         // `s.callchain` borrows `bytes`: no copy, no allocation.
///         assert_eq!(s.callchain.get(1), Some(0x2000));
///         samples += 1;
///     }
/// }
/// assert_eq!(samples, 1);
/// assert!(it.report().is_clean());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Reader<'a> {
    data: &'a [u8],
}

impl<'a> Reader<'a> {
    /// Check the preamble of `data`.
    ///
    /// # Errors
    /// [`ReadError::TooShort`], [`ReadError::NotAPmcLog`],
    /// [`ReadError::UnsupportedVersion`], [`ReadError::ByteOrder`]. Damage
    /// after the preamble is never an error.
    pub fn new(data: &'a [u8]) -> Result<Self, ReadError> {
        check_preamble(data)?;
        Ok(Reader { data })
    }

    /// The file header, if the first record is an intact header.
    pub fn header(&self) -> Option<Header<'a>> {
        match self.records().next() {
            Some(Record::Header(h)) => Some(h),
            _ => None,
        }
    }

    /// Iterate over all records, the header first.
    pub fn records(&self) -> RecordIter<'a> {
        RecordIter {
            data: self.data,
            core: Core::new(),
            done: false,
        }
    }
}

/// Iterator over the records of a [`Reader`]. Damaged regions are skipped;
/// [`RecordIter::report`] says what was skipped so far.
#[derive(Debug)]
pub struct RecordIter<'a> {
    data: &'a [u8],
    core: Core,
    done: bool,
}

impl<'a> RecordIter<'a> {
    /// What has been read and skipped so far. Complete after the iterator
    /// has returned `None`.
    pub fn report(&self) -> &ReadReport {
        &self.core.report
    }
    /// Input offset just past the last record returned (or the furthest
    /// point examined after the end).
    pub fn position(&self) -> u64 {
        self.core.pos
    }
    /// Consume the iterator, returning its report.
    pub fn into_report(self) -> ReadReport {
        self.core.report
    }
}

impl<'a> Iterator for RecordIter<'a> {
    type Item = Record<'a>;
    #[inline]
    fn next(&mut self) -> Option<Record<'a>> {
        if self.done {
            return None;
        }
        match self.core.step(self.data, 0, true) {
            Step::Rec(r) => Some(r),
            Step::NeedMore | Step::End => {
                self.done = true;
                None
            }
        }
    }
}

/// A streaming reader over any [`io::Read`]: pipes, sockets, and files that
/// are still being written.
///
/// Records come out as soon as their bytes arrive, so a reader following a
/// live log sees each record once its block is flushed. `next_record`
/// returns `Ok(None)` when the input has no more data *for now*; calling it
/// again later picks up data appended since. At the real end call
/// [`StreamReader::end_of_input`] and read on (the records only the end
/// reveals), then [`StreamReader::finish`] for the report.
///
/// Memory stays bounded by the largest block (16 MiB), and buffers grow
/// only as data actually arrives, never from a length field alone.
///
/// ```
/// use pmc_log::record::{Header, Record, Exit};
/// use pmc_log::{StreamReader, Writer};
/// let mut w = Writer::new(Vec::new(), &Header::default())?;
/// w.write(&Record::Exit(Exit { time: 10, pid: 1, tid: 1 }))?;
/// let bytes = w.finish()?;
/// let mut r = StreamReader::new(&bytes[..])?;
/// let mut n = 0;
/// while let Some(_rec) = r.next_record()? {
///     n += 1;
/// }
/// assert_eq!(n, 3);
/// assert!(r.finish().is_clean());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct StreamReader<R: io::Read> {
    inner: R,
    /// Buffer space; `space[..filled]` holds input from offset `base`.
    space: Vec<u8>,
    filled: usize,
    /// Absolute offset of `space[0]`.
    base: u64,
    core: Core,
    chunk: usize,
    /// [`StreamReader::end_of_input`] was called: no more input will come.
    ended: bool,
    /// [`StreamReader::to_end`]: the first read of 0 bytes is the end of input.
    to_end: bool,
}

impl<R: io::Read> StreamReader<R> {
    /// Read and check the preamble.
    ///
    /// # Errors
    /// As [`Reader::new`], plus [`ReadError::Io`].
    pub fn new(mut inner: R) -> Result<Self, ReadError> {
        let mut p = [0u8; PREAMBLE_LEN];
        let mut got = 0;
        while got < PREAMBLE_LEN {
            match inner.read(&mut p[got..]) {
                Ok(0) => return Err(ReadError::TooShort { len: got }),
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        check_preamble(&p)?;
        Ok(StreamReader {
            inner,
            space: Vec::new(),
            filled: 0,
            base: PREAMBLE_LEN as u64,
            core: Core::new(),
            chunk: 64 << 10,
            ended: false,
            to_end: false,
        })
    }

    /// The next record, `Ok(None)` when no more input is available now.
    ///
    /// A reader following a growing file calls it again later. Once the
    /// input has ended for good (a pipe's writer closed, a finished file),
    /// call [`end_of_input`](StreamReader::end_of_input) and read on until
    /// `None` again: the records that only the end of input reveals (those
    /// after damage whose resynchronisation needed to see what follows) come
    /// then, as [`Reader`] returns them.
    ///
    /// # Errors
    /// [`ReadError::Io`] from the underlying reader.
    pub fn next_record(&mut self) -> Result<Option<Record<'_>>, ReadError> {
        let found = loop {
            match self
                .core
                .locate(&self.space[..self.filled], self.base, self.ended)
            {
                Loc::Rec { kind, at, body } => {
                    // Decode once to account for it; the returned record is
                    // decoded again below, outside the loop, for the borrow.
                    let bytes = self.space.get(body.0..body.1).unwrap_or_default();
                    match decode_body(kind, bytes) {
                        Ok(Some(_)) => break (kind, at, body),
                        _ => {
                            let _ = self.core.decode(&self.space, kind, at, body);
                        }
                    }
                }
                Loc::NeedMore | Loc::End => {
                    if !self.refill()? {
                        if self.to_end && !self.ended {
                            self.ended = true;
                            continue;
                        }
                        return Ok(None);
                    }
                }
            }
        };
        let (kind, at, body) = found;
        Ok(self.core.decode(&self.space, kind, at, body))
    }

    /// Drop consumed bytes and read more. `Ok(false)` at end of input.
    fn refill(&mut self) -> Result<bool, ReadError> {
        let consumed = (self.core.pos.saturating_sub(self.base) as usize).min(self.filled);
        if consumed > 0 {
            self.space.copy_within(consumed..self.filled, 0);
            self.filled -= consumed;
            self.base += consumed as u64;
        }
        if self.filled == self.space.len() {
            // Full of unconsumed data (one large record): grow. Growth is
            // driven by bytes that actually arrived, never by a length field.
            let new_len = (self.space.len() * 2).max(self.chunk);
            self.space.resize(new_len, 0);
        }
        let n = loop {
            match self.inner.read(&mut self.space[self.filled..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        };
        self.filled += n;
        Ok(n > 0)
    }

    /// Stream offset just past the last record returned (the preamble
    /// counted), as [`RecordIter::position`] gives for a log in memory.
    ///
    /// ```
    /// use pmc_log::record::{Exit, Header, Record};
    /// use pmc_log::{StreamReader, Writer};
    /// let mut w = Writer::new(Vec::new(), &Header::default())?;
    /// w.write(&Record::Exit(Exit { time: 10, pid: 1, tid: 1 }))?;
    /// let bytes = w.finish()?;
    /// let mut r = StreamReader::new(&bytes[..])?;
    /// assert_eq!(r.position(), 16);
    /// r.next_record()?;
    /// assert!(r.position() > 16 && r.position() <= bytes.len() as u64);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn position(&self) -> u64 {
        self.core.pos.max(PREAMBLE_LEN as u64)
    }

    /// Declares that no more input will come.
    ///
    /// From now on [`next_record`](StreamReader::next_record) makes the end-of-input
    /// decisions (an incomplete tail is skipped and reported as
    /// [`SkipReason::Truncated`]) and returns every record left, so that a
    /// stream yields what the slice [`Reader`] yields from the same bytes.
    ///
    /// ```
    /// use pmc_log::record::{Header, Record, Exit};
    /// use pmc_log::{StreamReader, Writer};
    /// let mut w = Writer::new(Vec::new(), &Header::default())?;
    /// w.write(&Record::Exit(Exit { time: 10, pid: 1, tid: 1 }))?;
    /// let bytes = w.finish()?;
    /// let mut r = StreamReader::new(&bytes[..])?;
    /// let mut n = 0;
    /// while r.next_record()?.is_some() {
    ///     n += 1;
    /// }
    /// r.end_of_input(); // a finished file: nothing more will come
    /// while r.next_record()?.is_some() {
    ///     n += 1;
    /// }
    /// assert_eq!(n, r.report().records);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn end_of_input(&mut self) {
        self.ended = true;
    }

    /// For an input read to its end (a pipe or socket until its writer
    /// closes, a finished file): the first read of 0 bytes is taken as the
    /// end of input ([`end_of_input`](StreamReader::end_of_input)), so
    /// `next_record` returns every record the slice [`Reader`] would before
    /// its `None`. Not for a reader following a growing file.
    #[must_use]
    pub fn to_end(mut self) -> Self {
        self.to_end = true;
        self
    }

    /// What has been read and skipped so far.
    pub fn report(&self) -> &ReadReport {
        &self.core.report
    }

    /// End of input: account for an incomplete tail (reported as
    /// [`SkipReason::Truncated`]) and return the final report.
    pub fn finish(mut self) -> ReadReport {
        while let Step::Rec(_) = self.core.step(&self.space[..self.filled], self.base, true) {}
        self.core.report
    }
}
