//! The streaming writer.

use std::io::{self, Write};

use crate::codec::{encode_body, encode_sample_body, EncodeError};
use crate::error::WriteError;
use crate::format::{
    encode_block_header, preamble, record_crc, BlockHeader, HeadCrc, BLOCK_HEADER_LEN,
    DEFAULT_BLOCK_SIZE, MAX_BLOCK_PAYLOAD, RECORD_HEADER_LEN,
};
use crate::record::{Close, Header, Record, Sample};

/// Writes a log to any [`io::Write`].
///
/// Records are encoded straight into a reusable block buffer (no allocation
/// per record once the buffer has grown to the block size). A block is
/// sealed and written when it is full, on [`Writer::flush`], and on
/// [`Writer::finish`], which also writes the clean-close marker. Dropping a
/// writer without `finish` writes out the pending block but no close marker,
/// so readers report the log as "not closed cleanly".
///
/// # I/O errors
///
/// The first I/O error (a full disk, a closed pipe) **fails** the writer for
/// good: it is returned as [`WriteError::Io`] with its [`io::ErrorKind`], the
/// pending block is discarded (memory goes back to one block), and every
/// later `write`, `flush` or `finish` returns [`WriteError::Failed`] without
/// touching the output. The writer never retries: the failed write may have
/// put part of a block in the output, and nothing appended after it may hide
/// what came before, so the output ends with that cut block. Every record of
/// the blocks written before the error, and every complete record of the cut
/// one, stays readable (FORMAT.md §3). [`Writer::records_dropped`] counts the
/// records that did not make it.
///
/// ```
/// use pmc_log::record::{Header, Record, Exit};
/// use pmc_log::{Reader, Writer};
/// let mut w = Writer::new(Vec::new(), &Header::default())?;
/// w.write(&Record::Exit(Exit { time: 10, pid: 1, tid: 1 }))?;
/// let bytes = w.finish()?;
/// let reader = Reader::new(&bytes)?;
/// let mut it = reader.records();
/// assert!(matches!(it.next(), Some(Record::Header(_))));
/// assert!(matches!(it.next(), Some(Record::Exit(_))));
/// assert!(matches!(it.next(), Some(Record::Close(_))));
/// assert!(it.report().closed_cleanly);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Writer<W: Write> {
    out: Option<W>,
    /// Block header placeholder followed by the payload.
    block: Vec<u8>,
    block_size: usize,
    seq: u64,
    records_in_block: u32,
    records: u64,
    last_time: u64,
    /// The kind of the first I/O error; set, the writer writes nothing more.
    failed: Option<io::ErrorKind>,
    /// Records accepted but not written because of the failure.
    dropped: u64,
    /// The CRCs of recent record headers.
    head_crc: HeadCrc,
    /// How sealed blocks reach `out` when not by `write_all` ([`Writer::set_block_handoff`]).
    handoff: Option<BlockHandoff<W>>,
    /// The record that did not fit a sealed block, on its way to the next (for a hand-off).
    carry: Vec<u8>,
}

/// A function that takes a sealed block for an output: see [`Writer::set_block_handoff`].
pub type BlockHandoff<W> = fn(&mut W, &mut Vec<u8>) -> io::Result<()>;

impl<W: Write> Writer<W> {
    /// Start a log with the default block size (64 KiB): writes the
    /// preamble and the header record (sealed into its own block at once).
    pub fn new(out: W, header: &Header<'_>) -> Result<Self, WriteError> {
        Self::with_block_size(out, header, DEFAULT_BLOCK_SIZE)
    }

    /// Start a log whose blocks hold about `block_size` bytes of records
    /// (clamped to 256 B ..= 16 MiB). Smaller blocks lose less on damage and
    /// on a crash between flushes; larger blocks are slightly smaller files.
    pub fn with_block_size(
        mut out: W,
        header: &Header<'_>,
        block_size: usize,
    ) -> Result<Self, WriteError> {
        out.write_all(&preamble())?;
        let block_size = block_size.clamp(256, MAX_BLOCK_PAYLOAD as usize);
        let mut block = Vec::with_capacity(BLOCK_HEADER_LEN + block_size + 1024);
        block.resize(BLOCK_HEADER_LEN, 0);
        let mut w = Writer {
            out: Some(out),
            block,
            block_size,
            seq: 0,
            records_in_block: 0,
            records: 0,
            last_time: header.start_time,
            failed: None,
            dropped: 0,
            head_crc: HeadCrc::default(),
            handoff: None,
            carry: Vec::new(),
        };
        w.write(&Record::Header(header.clone()))?;
        w.seal()?;
        Ok(w)
    }

    /// Append one record. It is in the output after the next block seal
    /// ([`Writer::flush`], a full block, or [`Writer::finish`]).
    pub fn write(&mut self, r: &Record<'_>) -> Result<(), WriteError> {
        self.write_with(r.kind(), r.time(), |out| encode_body(r, out))
    }

    /// [`Writer::write`] of `Record::Sample(s)`, without the record around it: the same
    /// bytes, for a caller that has the sample alone (a recorder's hot path: no record to
    /// build, match on and drop per sample).
    ///
    /// ```
    /// use pmc_log::record::{Bytes, Callchain, Header, Record, Sample};
    /// use pmc_log::{Reader, Writer};
    ///
    /// let s = Sample {
    ///     time: 5,
    ///     pmc_id: 1,
    ///     pid: 42,
    ///     tid: 43,
    ///     cpu: Some(0),
    ///     period: 1000,
    ///     callchain: Callchain::from_vec(vec![0xffff_ffff_8100_0000, 0x40_1000]),
    ///     kernel_frames: 1,
    ///     raw: Bytes::borrowed(&[]),
    /// };
    /// let mut by_sample = Writer::new(Vec::new(), &Header::default()).unwrap();
    /// by_sample.write_sample(&s).unwrap();
    /// let mut by_record = Writer::new(Vec::new(), &Header::default()).unwrap();
    /// by_record.write(&Record::Sample(s.clone())).unwrap();
    /// let log = by_sample.finish().unwrap();
    /// assert_eq!(log, by_record.finish().unwrap());
    /// let samples: Vec<_> = Reader::new(&log).unwrap().records()
    ///     .filter(|r| matches!(r, Record::Sample(_))).collect();
    /// assert_eq!(samples, [Record::Sample(s)]);
    /// ```
    #[inline]
    pub fn write_sample(&mut self, s: &Sample<'_>) -> Result<(), WriteError> {
        self.write_with(crate::format::kind::SAMPLE, s.time, |out| {
            encode_sample_body(s, out)
        })
    }

    /// Appends one record of `kind` and `time` whose body `encode` writes.
    #[inline]
    fn write_with(
        &mut self,
        kind: u16,
        time: u64,
        encode: impl FnOnce(&mut Vec<u8>) -> Result<(), EncodeError>,
    ) -> Result<(), WriteError> {
        self.check_failed(1)?;
        let start = self.block.len();
        self.block.extend_from_slice(&[0u8; RECORD_HEADER_LEN]);
        if let Err(EncodeError::FieldTooLong(field, len)) = encode(&mut self.block) {
            self.block.truncate(start);
            let max = if matches!(field, "callchain" | "raw" | "data") {
                u32::MAX as usize
            } else {
                u16::MAX as usize
            };
            return Err(WriteError::FieldTooLong { field, len, max });
        }
        let body_len = self.block.len() - start - RECORD_HEADER_LEN;
        let total = body_len + RECORD_HEADER_LEN;
        if total > MAX_BLOCK_PAYLOAD as usize {
            self.block.truncate(start);
            return Err(WriteError::RecordTooLarge {
                len: total,
                max: MAX_BLOCK_PAYLOAD as usize,
            });
        }
        let mut head = [0u8; RECORD_HEADER_LEN];
        head[0..4].copy_from_slice(&(body_len as u32).to_le_bytes());
        head[4..6].copy_from_slice(&kind.to_le_bytes());
        let body = &self.block[start + RECORD_HEADER_LEN..];
        let head8: [u8; 8] = [
            head[0], head[1], head[2], head[3], head[4], head[5], head[6], head[7],
        ];
        let crc = self.head_crc.record_crc(&head8, body);
        head[8..12].copy_from_slice(&crc.to_le_bytes());
        self.block[start..start + RECORD_HEADER_LEN].copy_from_slice(&head);

        let payload_before = start - BLOCK_HEADER_LEN;
        if payload_before > 0 && payload_before + total > self.block_size {
            // The new record overflows a non-empty block: seal the block
            // without it, then move it to the front of the next block.
            if let Err(e) = self.seal_prefix(start) {
                self.dropped += 1; // the new record goes with the failed block
                return Err(e);
            }
        }
        self.records_in_block += 1;
        self.records += 1;
        self.last_time = self.last_time.max(time);
        if self.block.len() - BLOCK_HEADER_LEN >= self.block_size {
            self.seal()?;
        }
        Ok(())
    }

    /// Number of records written so far (the header included): in the output,
    /// or in the pending block. After a failure, the records of the block
    /// that failed are not counted here but in [`Writer::records_dropped`].
    pub fn records_written(&self) -> u64 {
        self.records
    }

    /// The kind of the I/O error that failed this writer, if one did. A
    /// failed writer writes nothing more (see [I/O errors](Writer#io-errors)).
    pub fn failed(&self) -> Option<io::ErrorKind> {
        self.failed
    }

    /// Records passed to [`Writer::write`] that are not in the output because
    /// the writer failed: the pending block at the failure (some of its
    /// records may still be readable if part of the block was written) and
    /// every record offered since.
    pub fn records_dropped(&self) -> u64 {
        self.dropped
    }

    /// `Err(Failed)` once the writer has failed, counting `offered` records
    /// as dropped.
    fn check_failed(&mut self, offered: u64) -> Result<(), WriteError> {
        match self.failed {
            Some(kind) => {
                self.dropped += offered;
                Err(WriteError::Failed {
                    kind,
                    dropped: self.dropped,
                })
            }
            None => Ok(()),
        }
    }

    /// Fail the writer on `e`: drop the pending block and give its memory
    /// back (down to one block), so nothing grows and nothing is re-sent.
    fn fail(&mut self, e: io::Error) -> WriteError {
        self.failed = Some(e.kind());
        self.dropped += u64::from(self.records_in_block);
        self.records -= u64::from(self.records_in_block);
        self.records_in_block = 0;
        self.block.truncate(BLOCK_HEADER_LEN);
        self.block
            .shrink_to(BLOCK_HEADER_LEN + self.block_size + 1024);
        WriteError::Io(e)
    }

    /// Seal the pending block and flush the underlying writer. After
    /// `flush`, every record written so far survives a crash of this process.
    pub fn flush(&mut self) -> Result<(), WriteError> {
        self.check_failed(0)?;
        self.seal()?;
        if let Some(out) = self.out.as_mut() {
            if let Err(e) = out.flush() {
                return Err(self.fail(e));
            }
        }
        Ok(())
    }

    /// Write the clean-close marker (timestamped with the latest record time
    /// seen), flush, and return the underlying writer.
    pub fn finish(self) -> Result<W, WriteError> {
        let t = self.last_time;
        self.finish_at(t)
    }

    /// Like [`Writer::finish`] with an explicit close timestamp.
    pub fn finish_at(mut self, time: u64) -> Result<W, WriteError> {
        let records = self.records;
        self.write(&Record::Close(Close { time, records }))?;
        self.flush()?;
        let out = self.out.take();
        out.ok_or_else(|| WriteError::Io(io::Error::other("writer already finished")))
    }

    /// Flush and return the underlying writer *without* the close marker,
    /// leaving a log that readers report as "not closed cleanly" (used when
    /// converting a log that was itself not closed, and to simulate crashes).
    pub fn into_inner_unclosed(mut self) -> Result<W, WriteError> {
        self.flush()?;
        let out = self.out.take();
        out.ok_or_else(|| WriteError::Io(io::Error::other("writer already finished")))
    }

    /// Has each sealed block taken by `handoff` instead of written with `write_all`: it is
    /// called with the output and the block (exactly its bytes, as `write_all` would get
    /// them), and may keep the block's buffer by swapping another `Vec` into its place,
    /// whose contents the writer discards and whose capacity it reuses for the next block.
    /// An output that queues blocks for a thread of its own (pmc-linux's spool) takes them
    /// so without copying them; an error fails the writer as a failed `write_all` does.
    ///
    /// ```
    /// use pmc_log::record::{Exit, Header, Record};
    /// use pmc_log::Writer;
    /// use std::io::{self, Write};
    /// /// Blocks kept whole, one `Vec` each.
    /// struct Blocks(Vec<Vec<u8>>);
    /// impl Write for Blocks {
    ///     fn write(&mut self, b: &[u8]) -> io::Result<usize> {
    ///         self.0.push(b.to_vec());
    ///         Ok(b.len())
    ///     }
    ///     fn flush(&mut self) -> io::Result<()> {
    ///         Ok(())
    ///     }
    /// }
    /// let mut w = Writer::new(Blocks(Vec::new()), &Header::default())?;
    /// w.set_block_handoff(|out, block| {
    ///     out.0.push(std::mem::take(block));
    ///     Ok(())
    /// });
    /// w.write(&Record::Exit(Exit { time: 10, pid: 1, tid: 1 }))?;
    /// let blocks = w.finish()?.0;
    /// // The preamble, the header's block, then the block with the exit and the close marker.
    /// assert_eq!(blocks.len(), 3);
    /// let log: Vec<u8> = blocks.concat();
    /// assert_eq!(pmc_log::Reader::new(&log)?.records().count(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_block_handoff(&mut self, handoff: BlockHandoff<W>) {
        self.handoff = Some(handoff);
    }

    fn seal(&mut self) -> Result<(), WriteError> {
        let end = self.block.len();
        self.seal_prefix(end)
    }

    /// Write the block header plus `block[BLOCK_HEADER_LEN..end]`, and leave the block
    /// holding what followed `end` (a record that did not fit) after a new header's place.
    /// Counts the records in that range as `records_in_block` (the caller adjusts).
    fn seal_prefix(&mut self, end: usize) -> Result<(), WriteError> {
        if end <= BLOCK_HEADER_LEN {
            return Ok(());
        }
        let h = BlockHeader {
            seq: self.seq,
            payload_len: (end - BLOCK_HEADER_LEN) as u32,
            record_count: self.records_in_block,
        };
        self.block[..BLOCK_HEADER_LEN].copy_from_slice(&encode_block_header(&h));
        let written = match (self.out.as_mut(), self.handoff) {
            (Some(out), Some(handoff)) => {
                self.carry.clear();
                self.carry
                    .extend_from_slice(self.block.get(end..).unwrap_or_default());
                self.block.truncate(end);
                let r = handoff(out, &mut self.block);
                self.block.clear();
                self.block
                    .reserve(BLOCK_HEADER_LEN + self.block_size + 1024);
                self.block.resize(BLOCK_HEADER_LEN, 0);
                self.block.extend_from_slice(&self.carry);
                r
            }
            (out, _) => {
                let r = out.map_or(Ok(()), |o| o.write_all(&self.block[..end]));
                let len = self.block.len();
                self.block.copy_within(end..len, BLOCK_HEADER_LEN);
                self.block.truncate(BLOCK_HEADER_LEN + (len - end));
                r
            }
        };
        if let Err(e) = written {
            return Err(self.fail(e));
        }
        self.seq += 1;
        self.records_in_block = 0;
        Ok(())
    }
}

/// One block of `records` with sequence number `seq`, sealed as [`Writer`] seals its blocks
/// (FORMAT.md §2.2): for a layer between a writer and its output that drops whole blocks
/// when the output falls behind (pmc-linux's spool) and writes in their place, under the
/// sequence number of one it dropped, what must not be lost with them (the count of what
/// was lost, the clean-close marker).
///
/// ```
/// use pmc_log::record::{Lost, Record};
/// let block = pmc_log::write::seal_block(7, &[Record::Lost(Lost {
///     time: 5, pmc_id: None, cpu: None, count: 42,
/// })])?;
/// let sealed = pmc_log::write::SealedBlock::parse(&block).unwrap();
/// assert_eq!(sealed.seq(), 7);
/// let lost: Vec<_> = sealed.records().filter_map(|r| r.decode()).collect();
/// assert!(matches!(lost[..], [Record::Lost(Lost { count: 42, .. })]));
/// # Ok::<(), pmc_log::WriteError>(())
/// ```
pub fn seal_block(seq: u64, records: &[Record<'_>]) -> Result<Vec<u8>, WriteError> {
    let mut block = vec![0u8; BLOCK_HEADER_LEN];
    for r in records {
        let start = block.len();
        block.extend_from_slice(&[0u8; RECORD_HEADER_LEN]);
        if let Err(EncodeError::FieldTooLong(field, len)) = encode_body(r, &mut block) {
            return Err(WriteError::FieldTooLong {
                field,
                len,
                max: u16::MAX as usize,
            });
        }
        let body_len = block.len() - start - RECORD_HEADER_LEN;
        let mut head = [0u8; RECORD_HEADER_LEN];
        head[0..4].copy_from_slice(&(body_len as u32).to_le_bytes());
        head[4..6].copy_from_slice(&r.kind().to_le_bytes());
        let crc = record_crc(&head[..8], &block[start + RECORD_HEADER_LEN..]);
        head[8..12].copy_from_slice(&crc.to_le_bytes());
        block[start..start + RECORD_HEADER_LEN].copy_from_slice(&head);
    }
    let payload_len = block.len() - BLOCK_HEADER_LEN;
    if payload_len > MAX_BLOCK_PAYLOAD as usize {
        return Err(WriteError::RecordTooLarge {
            len: payload_len,
            max: MAX_BLOCK_PAYLOAD as usize,
        });
    }
    let h = BlockHeader {
        seq,
        payload_len: payload_len as u32,
        record_count: records.len() as u32,
    };
    block[..BLOCK_HEADER_LEN].copy_from_slice(&encode_block_header(&h));
    Ok(block)
}

/// A block as [`Writer`] hands it to its output (one `write` call of its output after the
/// preamble), looked into without a reader: its sequence number and its records, for a layer
/// that drops whole blocks and must know what it dropped ([`seal_block`]).
#[derive(Clone, Copy, Debug)]
pub struct SealedBlock<'a> {
    seq: u64,
    payload: &'a [u8],
}

/// One record of a [`SealedBlock`]: its kind and body, decoded on demand.
#[derive(Clone, Copy, Debug)]
pub struct RawRecord<'a> {
    /// The record kind (`format::kind`).
    pub kind: u16,
    /// The body, its CRC checked.
    pub body: &'a [u8],
}

impl<'a> RawRecord<'a> {
    /// The record, or `None` if this version does not know its kind or it does not decode.
    pub fn decode(&self) -> Option<Record<'a>> {
        crate::codec::decode_body(self.kind, self.body)
            .ok()
            .flatten()
    }
}

impl<'a> SealedBlock<'a> {
    /// The block at the start of `bytes`, if a valid block header is there and its payload
    /// fits in `bytes`.
    pub fn parse(bytes: &'a [u8]) -> Option<SealedBlock<'a>> {
        let h = crate::format::decode_block_header(bytes)?;
        let payload = bytes.get(BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + h.payload_len as usize)?;
        Some(SealedBlock {
            seq: h.seq,
            payload,
        })
    }

    /// The block's sequence number.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Its records in order, up to the first whose framing or CRC does not check (none in a
    /// block a [`Writer`] sealed).
    pub fn records(&self) -> impl Iterator<Item = RawRecord<'a>> + 'a {
        let mut rest = self.payload;
        std::iter::from_fn(move || {
            let head = rest.get(..RECORD_HEADER_LEN)?;
            let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
            let kind = u16::from_le_bytes([head[4], head[5]]);
            let crc = u32::from_le_bytes([head[8], head[9], head[10], head[11]]);
            let body = rest.get(RECORD_HEADER_LEN..RECORD_HEADER_LEN.checked_add(len)?)?;
            if record_crc(&head[..8], body) != crc {
                rest = &[];
                return None;
            }
            rest = &rest[RECORD_HEADER_LEN + len..];
            Some(RawRecord { kind, body })
        })
    }
}

impl<W: Write> Drop for Writer<W> {
    fn drop(&mut self) {
        // Best effort: keep what was written, without a close marker (a
        // failed writer writes nothing).
        if self.failed.is_none() {
            let _ = self.flush();
        }
    }
}
