//! Reading the perf_event ring buffer: the consumer side of the kernel's sample ring.
//!
//! - [`RingReader`] over a [`RingStorage`] ([`MmapRing`] for the kernel's, a `Vec` in tests):
//!   [`Batch`]es of [`RingRecord`]s between `data_tail` and `data_head` (its documentation:
//!   non-overwrite mode, the design, an example);
//! - [`ControlCells`]: the control page's head and tail, with the protocol's barriers (its
//!   documentation: the protocol and its orderings);
//! - [`RingError`] for a ring that breaks the protocol (its documentation: the values not
//!   trusted), [`RingStats`] for what was read.

use std::sync::atomic::{AtomicU64, Ordering};

use thiserror::Error;

use crate::record::{RecordHeader, HEADER_LEN};

#[doc(inline)]
pub use crate::sys::mmap::{perf_event_open_raw, MmapRing, RingStorage};

/// An atomic cell pair an in-memory [`RingStorage`] can use for `data_head`/`data_tail`, with
/// the orderings of the protocol.
///
/// # The protocol
///
/// `mmap(fd, (1 + 2^n) * page_size)` on a sampling event maps one control page
/// (`struct perf_event_mmap_page`) followed by a data area of `2^n` pages. The kernel is the
/// producer and we are the only consumer:
///
/// * `data_head` (offset 1024 of the control page) is a free-running byte counter the kernel
///   advances after it has written whole records. It never wraps at the buffer size; the byte
///   for position `p` lives at `data[p & (size - 1)]`, which is why the size is a power of two.
/// * `data_tail` (offset 1032) is a free-running counter we advance once we are done with the
///   bytes before it.
/// * Records are `struct perf_event_header { u32 type; u16 misc; u16 size; }` plus a body, `size`
///   bytes in all, 8-byte aligned. A record may **wrap**: start near the end of the data area and
///   continue at its beginning. [`RawRecord`] shows such a record as two slices;
///   [`Batch::next_record`] copies only wrapped records into a scratch buffer owned by the reader,
///   which grows to the largest record seen (at most 64 KiB) and is then reused: no allocation per
///   record in steady state.
///
/// # Orderings
///
/// The kernel writes record bytes, then publishes them with a store-release of `data_head`
/// (`smp_store_release` / `smp_wmb` in `perf_output_put_handle`). We load `data_head` with
/// [`Ordering::Acquire`], so every byte before it is visible to us. When we are done, we store
/// `data_tail` with [`Ordering::Release`], so our reads of those bytes happen before the kernel,
/// which reads `data_tail` before writing (`perf_output_begin`), may overwrite them. This is the
/// pairing documented at the top of `kernel/events/ring_buffer.c`.
#[derive(Debug, Default)]
pub struct ControlCells {
    /// `data_head`.
    pub head: AtomicU64,
    /// `data_tail`.
    pub tail: AtomicU64,
}

impl ControlCells {
    /// Loads `data_head` with [`Ordering::Acquire`].
    pub fn load_head(&self) -> u64 {
        self.head.load(Ordering::Acquire)
    }
    /// Stores `data_head` with [`Ordering::Release`] (the producer side).
    pub fn store_head(&self, head: u64) {
        self.head.store(head, Ordering::Release)
    }
    /// Loads `data_tail` with [`Ordering::Acquire`] (the producer side; the consumer may use it
    /// too).
    pub fn load_tail(&self) -> u64 {
        self.tail.load(Ordering::Acquire)
    }
    /// Stores `data_tail` with [`Ordering::Release`].
    pub fn store_tail(&self, tail: u64) {
        self.tail.store(tail, Ordering::Release)
    }
}

/// What went wrong in the ring. Each is counted in [`RingStats`] and resolved by discarding the
/// unread bytes up to `data_head`.
///
/// # Hostile values
///
/// Nothing read from the control page or a record header is trusted. Each of these is reported
/// once as a [`RingError`], counted in [`RingStats`], and resolved by discarding everything up
/// to the current `data_head` (there is no way to find the next record boundary after a bad
/// header):
///
/// * `data_head - data_tail` greater than the buffer (overrun, or `data_head` moved backwards);
/// * a header `size` below 8 (including 0, which would otherwise loop forever);
/// * a header `size` larger than the bytes published;
/// * storage that refuses to lend a range it should hold.
///
/// Every step of the reader consumes at least 8 bytes or ends the batch, so it always
/// terminates.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum RingError {
    /// The data area size is not a power of two (or is smaller than one record header).
    #[error("ring data area of {size} bytes is not a power of two >= 8")]
    BadSize {
        /// The size.
        size: usize,
    },
    /// `data_head - data_tail` exceeds the buffer size: the producer overran the consumer or
    /// `data_head` moved backwards.
    #[error("ring overrun: data_head {head} is {distance} bytes past data_tail {tail}, buffer is {size} bytes")]
    Overrun {
        /// `data_head` as read.
        head: u64,
        /// Our position.
        tail: u64,
        /// `head.wrapping_sub(tail)`.
        distance: u64,
        /// Data area size.
        size: usize,
    },
    /// A record header has a size below 8 bytes.
    #[error("record at ring position {position} has size {size}, below the 8-byte header")]
    HeaderTooSmall {
        /// Ring position of the header.
        position: u64,
        /// `perf_event_header.size`.
        size: u16,
    },
    /// A record header claims more bytes than were published.
    #[error("record at ring position {position} has size {size} but only {available} bytes are published")]
    Truncated {
        /// Ring position of the header.
        position: u64,
        /// `perf_event_header.size`.
        size: u16,
        /// Bytes between the record start and `data_head`.
        available: u64,
    },
    /// The storage refused to lend bytes it should hold.
    #[error("ring storage could not lend {len} bytes at offset {offset}")]
    Unreadable {
        /// Offset in the data area.
        offset: usize,
        /// Length asked for.
        len: usize,
    },
}

/// Counters kept by a [`RingReader`] over its lifetime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RingStats {
    /// Records handed out.
    pub records: u64,
    /// Bytes of records handed out.
    pub bytes: u64,
    /// Records that wrapped the end of the data area.
    pub wrapped: u64,
    /// Corruption events ([`RingError`]s reported).
    pub errors: u64,
    /// Bytes discarded to resynchronise after an error.
    pub discarded_bytes: u64,
}

/// The bytes of one record, lent from the ring without copying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordBytes<'a> {
    /// The record is contiguous in the data area.
    Contiguous(&'a [u8]),
    /// The record wraps: its first part ends the data area, its second starts it.
    Split(&'a [u8], &'a [u8]),
}

impl<'a> RecordBytes<'a> {
    /// Total length.
    pub fn len(&self) -> usize {
        match self {
            Self::Contiguous(a) => a.len(),
            Self::Split(a, b) => a.len() + b.len(),
        }
    }

    /// True if there are no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes as one slice: borrowed if contiguous, otherwise copied into `scratch`
    /// (cleared first; its capacity is reused).
    pub fn contiguous<'s>(&self, scratch: &'s mut Vec<u8>) -> &'s [u8]
    where
        'a: 's,
    {
        match *self {
            Self::Contiguous(a) => a,
            Self::Split(a, b) => {
                scratch.clear();
                scratch.extend_from_slice(a);
                scratch.extend_from_slice(b);
                scratch
            }
        }
    }

    /// Copies the bytes into `out`, which must be exactly [`RecordBytes::len`] long; returns
    /// false (copying nothing) otherwise.
    pub fn copy_to(&self, out: &mut [u8]) -> bool {
        if out.len() != self.len() {
            return false;
        }
        let (a, b) = match *self {
            Self::Contiguous(a) => (a, &[][..]),
            Self::Split(a, b) => (a, b),
        };
        let (oa, ob) = out.split_at_mut(a.len());
        oa.copy_from_slice(a);
        ob.copy_from_slice(b);
        true
    }
}

/// A record lent by [`Batch::next_raw`]: header plus zero-copy bytes (header included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawRecord<'a> {
    /// The decoded header.
    pub header: RecordHeader,
    /// Ring position (free-running byte counter) of the header.
    pub position: u64,
    /// The whole record, header included, `header.size` bytes.
    pub bytes: RecordBytes<'a>,
}

/// A record lent by [`Batch::next_record`]: header plus contiguous bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingRecord<'a> {
    /// The decoded header.
    pub header: RecordHeader,
    /// Ring position (free-running byte counter) of the header.
    pub position: u64,
    /// The whole record, header included, `header.size` bytes: ready for
    /// [`crate::record::ParseConfig::parse`].
    pub bytes: &'a [u8],
    /// True if the record wrapped and `bytes` is a copy in the reader's scratch buffer.
    pub copied: bool,
}

/// The consumer of one ring buffer.
///
/// # Overwrite vs. non-overwrite mode
///
/// With a writable mapping (`PROT_READ | PROT_WRITE`) the buffer is in **non-overwrite** mode:
/// the kernel never writes into `[data_tail, data_head)`; when the buffer is full it drops new
/// records and later reports the count in a `PERF_RECORD_LOST` record. With a read-only mapping
/// the kernel ignores `data_tail` and overwrites the oldest data (flight-recorder mode), and a
/// reader must read backwards from `data_head` and cope with torn records. **pmc uses
/// non-overwrite mode only.** That is what makes it sound to lend out `&[u8]` views of
/// `[data_tail, data_head)` for as long as we have not advanced `data_tail`.
///
/// # Design
///
/// [`RingReader`] is safe code, generic over a [`RingStorage`]: the real mmap-backed storage
/// lives in the crate's `sys` seam ([`MmapRing`] on Linux), and tests use an in-memory one
/// (built on [`ControlCells`]), so the wrap-around logic runs under Miri.
///
/// A [`Batch`] snapshots `data_head` once, hands out records up to it, and on drop (or
/// [`Batch::commit`]) publishes the new `data_tail`. Records are lent: a view borrows the batch,
/// so the tail cannot be advanced while a view of the bytes is alive.
///
/// # Example
///
/// An in-memory ring with one record that wraps the end of a 64-byte data area:
///
/// ```
/// use pmc_linux::internals::ring::{ControlCells, RingReader, RingStorage};
/// use std::sync::atomic::Ordering;
///
/// struct Mem { data: Vec<u8>, cells: ControlCells }
/// impl RingStorage for Mem {
///     fn data_size(&self) -> usize { self.data.len() }
///     fn load_head(&self) -> u64 { self.cells.load_head() }
///     fn load_tail(&self) -> u64 { self.cells.tail.load(Ordering::Relaxed) }
///     fn store_tail(&mut self, tail: u64) { self.cells.store_tail(tail) }
///     fn data(&self, offset: usize, len: usize) -> Option<&[u8]> {
///         self.data.get(offset..offset.checked_add(len)?)
///     }
/// }
///
/// // A 16-byte PERF_RECORD_LOST-shaped record at position 56: 8 bytes before the end, 8 after.
/// let mut data = vec![0u8; 64];
/// let record: Vec<u8> = [2u32.to_ne_bytes().as_slice(), &0u16.to_ne_bytes(),
///                        &16u16.to_ne_bytes(), &7u64.to_ne_bytes()].concat();
/// data[56..].copy_from_slice(&record[..8]);
/// data[..8].copy_from_slice(&record[8..]);
/// let cells = ControlCells::default();
/// cells.tail.store(56, Ordering::Relaxed);
/// cells.store_head(72);
///
/// let mut reader = RingReader::new(Mem { data, cells })?;
/// let mut batch = reader.batch();
/// let rec = batch.next_record().expect("one record")?;
/// assert!(rec.copied); // it wrapped, so it was copied into the reusable scratch buffer
/// assert_eq!(rec.bytes, &record[..]);
/// assert!(batch.next_record().is_none());
/// drop(batch); // publishes data_tail = 72
/// assert_eq!(reader.storage().load_tail(), 72);
/// # Ok::<(), pmc_linux::internals::ring::RingError>(())
/// ```
#[derive(Debug)]
pub struct RingReader<S> {
    storage: S,
    mask: u64,
    size: usize,
    scratch: Vec<u8>,
    stats: RingStats,
}

impl<S: RingStorage> RingReader<S> {
    /// A reader over `storage`, starting at the storage's current `data_tail`.
    ///
    /// # Errors
    ///
    /// [`RingError::BadSize`] if the data area is not a power of two of at least 8 bytes.
    pub fn new(storage: S) -> Result<Self, RingError> {
        let size = storage.data_size();
        if !size.is_power_of_two() || size < HEADER_LEN {
            return Err(RingError::BadSize { size });
        }
        Ok(Self {
            storage,
            mask: (size as u64).wrapping_sub(1),
            size,
            scratch: Vec::new(),
            stats: RingStats::default(),
        })
    }

    /// Starts reading the records published so far (one Acquire load of `data_head`).
    pub fn batch(&mut self) -> Batch<'_, S> {
        let tail = self.storage.load_tail();
        let head = self.storage.load_head();
        Batch {
            reader: self,
            pos: tail,
            committed: tail,
            head,
            checked: false,
        }
    }

    /// Bytes published and not yet consumed (may exceed the buffer size if the ring is corrupt).
    pub fn pending(&self) -> u64 {
        let tail = self.storage.load_tail();
        self.storage.load_head().wrapping_sub(tail)
    }

    /// Counters since creation.
    pub fn stats(&self) -> RingStats {
        self.stats
    }

    /// Size of the data area in bytes.
    pub fn data_size(&self) -> usize {
        self.size
    }

    /// The storage.
    pub fn storage(&self) -> &S {
        &self.storage
    }

    /// The storage, mutably (tests use it to play the producer between batches). Each
    /// [`RingReader::batch`] reloads `data_tail` from the storage, so a tail moved here is
    /// honoured.
    pub fn storage_mut(&mut self) -> &mut S {
        &mut self.storage
    }

    /// Gives the storage back.
    pub fn into_inner(self) -> S {
        self.storage
    }
}

/// A place in a [`Batch`] ([`Batch::mark`]) that [`Batch::rewind`] goes back to.
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    pos: u64,
    stats: RingStats,
}

/// Where the next record is: ring position, header, data offset, and the lengths of the part
/// before the end of the data area and of the wrapped part (0 if contiguous).
struct Located {
    position: u64,
    header: RecordHeader,
    offset: usize,
    first: usize,
    second: usize,
}

/// Records published up to one snapshot of `data_head`. Dropping the batch publishes
/// `data_tail` up to the end of the last record handed out.
#[derive(Debug)]
pub struct Batch<'r, S: RingStorage> {
    reader: &'r mut RingReader<S>,
    /// Start of the next record.
    pos: u64,
    /// Last `data_tail` value stored.
    committed: u64,
    /// Snapshot of `data_head`.
    head: u64,
    /// True once the head/tail distance has been validated.
    checked: bool,
}

impl<S: RingStorage> Batch<'_, S> {
    /// Bytes left in this batch.
    pub fn remaining(&self) -> u64 {
        self.head.wrapping_sub(self.pos)
    }

    /// Publishes `data_tail` up to the records handed out so far, freeing their space for the
    /// kernel. Called automatically on drop.
    pub fn commit(&mut self) {
        if self.pos != self.committed {
            self.reader.storage.store_tail(self.pos);
            self.committed = self.pos;
        }
    }

    /// Records an error, skips to `data_head` and returns the error.
    fn resync(&mut self, err: RingError) -> RingError {
        let stats = &mut self.reader.stats;
        stats.errors = stats.errors.saturating_add(1);
        // After an overrun the distance is not a byte count we can trust; count what the
        // buffer could at most have held.
        let skipped = self
            .head
            .wrapping_sub(self.pos)
            .min(self.reader.size as u64);
        stats.discarded_bytes = stats.discarded_bytes.saturating_add(skipped);
        self.pos = self.head;
        err
    }

    fn offset(&self, pos: u64) -> usize {
        // The mask is below `size`, a usize, so the cast is exact.
        (pos & self.reader.mask) as usize
    }

    /// Locates the next record and validates its header. Inlined into each caller's loop
    /// (the drain's hot path: as a call, ~80 more instructions a sample under callgrind).
    #[inline(always)]
    fn locate(&mut self) -> Option<Result<Located, RingError>> {
        if !self.checked {
            self.checked = true;
            let distance = self.head.wrapping_sub(self.pos);
            if distance > self.reader.size as u64 {
                let err = RingError::Overrun {
                    head: self.head,
                    tail: self.pos,
                    distance,
                    size: self.reader.size,
                };
                return Some(Err(self.resync(err)));
            }
        }
        let available = self.head.wrapping_sub(self.pos);
        if available == 0 {
            return None;
        }
        let position = self.pos;
        if available < HEADER_LEN as u64 {
            let err = RingError::Truncated {
                position,
                size: HEADER_LEN as u16,
                available,
            };
            return Some(Err(self.resync(err)));
        }
        // The header in one piece (a fixed-size copy), or across the end of the area.
        let at = self.offset(position);
        let whole = (at + HEADER_LEN <= self.reader.size)
            .then(|| self.lend(at, HEADER_LEN).ok())
            .flatten()
            .and_then(|b| <[u8; HEADER_LEN]>::try_from(b).ok());
        let hdr = match whole {
            Some(h) => h,
            None => {
                let mut hdr = [0u8; HEADER_LEN];
                if let Err(e) = self.read_into(position, &mut hdr) {
                    return Some(Err(self.resync(e)));
                }
                hdr
            }
        };
        let header = RecordHeader::from_bytes(hdr);
        let size = usize::from(header.size);
        if size < HEADER_LEN {
            let err = RingError::HeaderTooSmall {
                position,
                size: header.size,
            };
            return Some(Err(self.resync(err)));
        }
        if size as u64 > available {
            let err = RingError::Truncated {
                position,
                size: header.size,
                available,
            };
            return Some(Err(self.resync(err)));
        }
        let offset = self.offset(position);
        // `offset < size_of_area`, so this does not underflow.
        let to_end = self.reader.size - offset;
        let first = size.min(to_end);
        Some(Ok(Located {
            position,
            header,
            offset,
            first,
            second: size - first,
        }))
    }

    /// Copies `out.len()` bytes at ring position `pos` into `out`, across the wrap if needed.
    fn read_into(&self, pos: u64, out: &mut [u8]) -> Result<(), RingError> {
        let offset = self.offset(pos);
        let first = out.len().min(self.reader.size - offset);
        let (a, b) = out.split_at_mut(first);
        let src_a = self
            .reader
            .storage
            .data(offset, a.len())
            .filter(|s| s.len() == a.len())
            .ok_or(RingError::Unreadable {
                offset,
                len: a.len(),
            })?;
        a.copy_from_slice(src_a);
        if !b.is_empty() {
            let src_b = self
                .reader
                .storage
                .data(0, b.len())
                .filter(|s| s.len() == b.len())
                .ok_or(RingError::Unreadable {
                    offset: 0,
                    len: b.len(),
                })?;
            b.copy_from_slice(src_b);
        }
        Ok(())
    }

    #[inline]
    fn lend(&self, offset: usize, len: usize) -> Result<&[u8], RingError> {
        self.reader
            .storage
            .data(offset, len)
            .filter(|s| s.len() == len)
            .ok_or(RingError::Unreadable { offset, len })
    }

    #[inline]
    fn advance(&mut self, size: usize, wrapped: bool) {
        self.pos = self.pos.wrapping_add(size as u64);
        let stats = &mut self.reader.stats;
        stats.records = stats.records.saturating_add(1);
        stats.bytes = stats.bytes.saturating_add(size as u64);
        stats.wrapped = stats.wrapped.saturating_add(u64::from(wrapped));
    }

    /// Every record left in the batch at once, without copying: each header is validated
    /// as [`Batch::next_raw`] does and shown to `each`, and the records come back to back as
    /// at most two slices of the data area (the second, if any, from its start: the part
    /// after the wrap). A corrupt record ends the walk as it ends `next_raw`'s (counted in
    /// [`RingStats`], the batch skips to `data_head`); the slices hold the records before it.
    ///
    /// ```
    /// use pmc_linux::internals::ring::{ControlCells, RingReader, RingStorage};
    /// use std::sync::atomic::Ordering;
    ///
    /// struct Mem { data: Vec<u8>, cells: ControlCells }
    /// impl RingStorage for Mem {
    ///     fn data_size(&self) -> usize { self.data.len() }
    ///     fn load_head(&self) -> u64 { self.cells.load_head() }
    ///     fn load_tail(&self) -> u64 { self.cells.tail.load(Ordering::Relaxed) }
    ///     fn store_tail(&mut self, tail: u64) { self.cells.store_tail(tail) }
    ///     fn data(&self, offset: usize, len: usize) -> Option<&[u8]> {
    ///         self.data.get(offset..offset.checked_add(len)?)
    ///     }
    /// }
    ///
    /// // Two 16-byte records from position 40: a SAMPLE (9), then a LOST (2) that wraps.
    /// let rec = |kind: u32| -> Vec<u8> {
    ///     [kind.to_ne_bytes().as_slice(), &0u16.to_ne_bytes(), &16u16.to_ne_bytes(),
    ///      &7u64.to_ne_bytes()].concat()
    /// };
    /// let mut data = vec![0u8; 64];
    /// data[40..56].copy_from_slice(&rec(9));
    /// data[56..].copy_from_slice(&rec(2)[..8]);
    /// data[..8].copy_from_slice(&rec(2)[8..]);
    /// let cells = ControlCells::default();
    /// cells.tail.store(40, Ordering::Relaxed);
    /// cells.store_head(72);
    ///
    /// let mut reader = RingReader::new(Mem { data, cells })?;
    /// let mut batch = reader.batch();
    /// let mut kinds = Vec::new();
    /// let (a, b) = batch.take_all(&mut |h| kinds.push(h.kind));
    /// assert_eq!(kinds, [9, 2]);
    /// assert_eq!([a, b].concat(), [rec(9), rec(2)].concat());
    /// drop(batch); // publishes data_tail = 72
    /// assert_eq!(reader.storage().load_tail(), 72);
    /// # Ok::<(), pmc_linux::internals::ring::RingError>(())
    /// ```
    pub fn take_all(&mut self, each: &mut dyn FnMut(&RecordHeader)) -> (&[u8], &[u8]) {
        let start = self.pos;
        let mut end = start;
        while let Some(Ok(l)) = self.locate() {
            each(&l.header);
            self.advance(l.first + l.second, l.second > 0);
            end = self.pos;
        }
        let len = usize::try_from(end.wrapping_sub(start)).unwrap_or(0);
        let offset = self.offset(start);
        let first = len.min(self.reader.size - offset);
        let a = self.lend(offset, first).unwrap_or_default();
        let b = match len - first {
            0 => &[][..],
            rest => self.lend(0, rest).unwrap_or_default(),
        };
        (a, b)
    }

    /// This place in the batch, to come back to with [`Batch::rewind`].
    pub fn mark(&self) -> Mark {
        Mark {
            pos: self.pos,
            stats: self.reader.stats,
        }
    }

    /// Puts the batch back to `mark` (of this batch): the records handed out since are not
    /// consumed (the next batch hands them out again) nor counted in [`RingStats`].
    pub fn rewind(&mut self, mark: Mark) {
        if self.head.wrapping_sub(mark.pos) <= self.head.wrapping_sub(self.committed) {
            self.pos = mark.pos;
            self.reader.stats = mark.stats;
        }
    }

    /// The next record without copying; a wrapped record comes as [`RecordBytes::Split`].
    ///
    /// Returns `None` at the end of the batch. An `Err` reports corruption; the batch has then
    /// skipped to `data_head`, and the next call returns `None`.
    pub fn next_raw(&mut self) -> Option<Result<RawRecord<'_>, RingError>> {
        let Located {
            position,
            header,
            offset,
            first,
            second,
        } = match self.locate()? {
            Ok(x) => x,
            Err(e) => return Some(Err(e)),
        };
        // Validate both parts before handing anything out.
        if let Err(e) = self.lend(offset, first) {
            return Some(Err(self.resync(e)));
        }
        if second > 0 {
            if let Err(e) = self.lend(0, second) {
                return Some(Err(self.resync(e)));
            }
        }
        self.advance(first + second, second > 0);
        let bytes = match (self.lend(offset, first), second) {
            (Ok(a), 0) => RecordBytes::Contiguous(a),
            (Ok(a), _) => match self.lend(0, second) {
                Ok(b) => RecordBytes::Split(a, b),
                Err(e) => return Some(Err(e)),
            },
            (Err(e), _) => return Some(Err(e)),
        };
        Some(Ok(RawRecord {
            header,
            position,
            bytes,
        }))
    }

    /// The next record as one slice: borrowed from the ring if contiguous, copied into the
    /// reader's reusable scratch buffer if it wraps.
    ///
    /// Returns `None` at the end of the batch. An `Err` reports corruption; the batch has then
    /// skipped to `data_head`, and the next call returns `None`.
    #[inline]
    pub fn next_record(&mut self) -> Option<Result<RingRecord<'_>, RingError>> {
        let Located {
            position,
            header,
            offset,
            first,
            second,
        } = match self.locate()? {
            Ok(x) => x,
            Err(e) => return Some(Err(e)),
        };
        let size = first + second;
        if second == 0 {
            if let Err(e) = self.lend(offset, first) {
                return Some(Err(self.resync(e)));
            }
            self.advance(size, false);
            return match self.lend(offset, first) {
                Ok(bytes) => Some(Ok(RingRecord {
                    header,
                    position,
                    bytes,
                    copied: false,
                })),
                Err(e) => Some(Err(e)),
            };
        }
        let mut scratch = std::mem::take(&mut self.reader.scratch);
        scratch.clear();
        scratch.resize(size, 0);
        let res = self.read_into(position, &mut scratch);
        self.reader.scratch = scratch;
        if let Err(e) = res {
            return Some(Err(self.resync(e)));
        }
        self.advance(size, true);
        Some(Ok(RingRecord {
            header,
            position,
            bytes: &self.reader.scratch,
            copied: true,
        }))
    }
}

impl<S: RingStorage> Drop for Batch<'_, S> {
    fn drop(&mut self) {
        self.commit();
    }
}
