//! What decides a record's layout ([`ParseConfig`]), the record header, the errors, the
//! counts, and [`ParseConfig::parse`], which hands each record kind to its decoder.

use thiserror::Error;

use super::decode::{decoder, sample_id, Body, Decoder};
use super::sample::sample;
use super::{sample_type, CpuMode, Record, HEADER_LEN};

/// Why a record could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ParseError {
    /// The record ended before a field the header and the [`ParseConfig`] promise.
    #[error(
        "record truncated: {needed} more bytes needed at offset {offset} of a {len}-byte record"
    )]
    UnexpectedEof {
        /// Offset in the record (header included) where the read started.
        offset: usize,
        /// Bytes the read needed.
        needed: usize,
        /// Length of the record.
        len: usize,
    },
    /// `perf_event_header.size` is below 8 or above the bytes given.
    #[error("record header size {size} is invalid for a buffer of {available} bytes")]
    BadSize {
        /// `perf_event_header.size`.
        size: u16,
        /// Bytes handed to the parser.
        available: usize,
    },
    /// A count read from the record (callchain `nr`, group `nr`, raw `size`, build-id size)
    /// does not fit in the record or its field.
    #[error("{what} of {value} does not fit in the record (offset {offset})")]
    BadCount {
        /// Which field.
        what: &'static str,
        /// The value read.
        value: u64,
        /// Offset of the count field in the record (header included).
        offset: usize,
    },
}

/// The `perf_event_attr` fields that decide record layouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ParseConfig {
    /// `perf_event_attr.sample_type` (`PERF_SAMPLE_*`, see [`sample_type`]).
    pub sample_type: u64,
    /// `perf_event_attr.read_format` (`PERF_FORMAT_*`, see [`read_format`](super::read_format)).
    pub read_format: u64,
    /// `perf_event_attr.sample_id_all`: non-sample records end with a `sample_id` trailer.
    pub sample_id_all: bool,
    /// `perf_event_attr.sample_regs_user`: which user registers `PERF_SAMPLE_REGS_USER`
    /// carries (one u64 each, in bit order).
    pub sample_regs_user: u64,
}

/// `struct perf_event_header`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RecordHeader {
    /// `type`: `PERF_RECORD_*` (see [`record_type`](super::record_type)).
    pub kind: u32,
    /// `misc`: `PERF_RECORD_MISC_*` flags (see [`misc`](super::misc)).
    pub misc: u16,
    /// `size`: length of the whole record, header included.
    pub size: u16,
}

impl RecordHeader {
    /// Decodes a header from its 8 native-endian bytes.
    pub fn from_bytes(b: [u8; HEADER_LEN]) -> Self {
        let [t0, t1, t2, t3, m0, m1, s0, s1] = b;
        Self {
            kind: u32::from_ne_bytes([t0, t1, t2, t3]),
            misc: u16::from_ne_bytes([m0, m1]),
            size: u16::from_ne_bytes([s0, s1]),
        }
    }

    /// Decodes the header at the start of `bytes`, if there are 8 bytes.
    pub fn parse(bytes: &[u8]) -> Option<Self> {
        bytes
            .first_chunk::<HEADER_LEN>()
            .map(|b| Self::from_bytes(*b))
    }

    /// The CPU mode bits of `misc`.
    pub fn cpu_mode(&self) -> CpuMode {
        CpuMode::from_misc(self.misc)
    }
}

/// Counts of what a stream of records contained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ParseStats {
    /// Records decoded (unknown ones included).
    pub records: u64,
    /// Records of a type this module does not decode.
    pub unknown: u64,
    /// Records that failed to decode.
    pub errors: u64,
}

impl ParseStats {
    /// Counts one parse result.
    pub fn note(&mut self, result: &Result<Record<'_>, ParseError>) {
        match result {
            Ok(Record::Unknown { .. }) => {
                self.records = self.records.saturating_add(1);
                self.unknown = self.unknown.saturating_add(1);
            }
            Ok(_) => self.records = self.records.saturating_add(1),
            Err(_) => self.errors = self.errors.saturating_add(1),
        }
    }
}

impl ParseConfig {
    /// A config for the given `perf_event_attr` fields.
    pub fn new(sample_type: u64, read_format: u64, sample_id_all: bool) -> Self {
        Self {
            sample_type,
            read_format,
            sample_id_all,
            sample_regs_user: 0,
        }
    }

    /// The same, with `perf_event_attr.sample_regs_user` (for `PERF_SAMPLE_REGS_USER`).
    pub fn with_regs_user(mut self, mask: u64) -> Self {
        self.sample_regs_user = mask;
        self
    }

    pub(super) fn has(&self, bit: u64) -> bool {
        self.sample_type & bit != 0
    }

    /// Length in bytes of the `sample_id` trailer of non-sample records (0 without
    /// `sample_id_all`).
    pub fn sample_id_len(&self) -> usize {
        if !self.sample_id_all {
            return 0;
        }
        [
            sample_type::TID,
            sample_type::TIME,
            sample_type::ID,
            sample_type::STREAM_ID,
            sample_type::CPU,
            sample_type::IDENTIFIER,
        ]
        .iter()
        .filter(|&&b| self.has(b))
        .count()
            * 8
    }

    /// Decodes one record, header included. `record` must hold at least
    /// `perf_event_header.size` bytes; bytes beyond it are ignored.
    ///
    /// # Errors
    ///
    /// [`ParseError::BadSize`] if the header is missing or its size is below 8 or beyond
    /// `record`; [`ParseError::UnexpectedEof`] or [`ParseError::BadCount`] if the body is
    /// shorter than the config and its own counts say.
    pub fn parse<'a>(&self, record: &'a [u8]) -> Result<Record<'a>, ParseError> {
        let header = RecordHeader::parse(record).ok_or(ParseError::BadSize {
            size: 0,
            available: record.len(),
        })?;
        let size = usize::from(header.size);
        let record = match record.get(..size) {
            Some(r) if size >= HEADER_LEN => r,
            _ => {
                return Err(ParseError::BadSize {
                    size: header.size,
                    available: record.len(),
                })
            }
        };
        let decode = match decoder(header.kind) {
            None => {
                let body = record.get(HEADER_LEN..).unwrap_or_default();
                return Ok(Record::Unknown { header, body });
            }
            Some(Decoder::Sample) => {
                let mut b = Body::new(self, record, HEADER_LEN, size, header.misc);
                return sample(&mut b).map(Record::Sample);
            }
            Some(Decoder::WithSampleId(decode)) => decode,
        };
        // Split off the sample_id trailer from the end: its length is fixed by the config,
        // while the fields before it may be variable (file names, group reads).
        let trailer_len = self.sample_id_len();
        let fields_end = size
            .checked_sub(trailer_len)
            .filter(|&end| end >= HEADER_LEN)
            .ok_or(ParseError::UnexpectedEof {
                offset: HEADER_LEN,
                needed: trailer_len,
                len: size,
            })?;
        let id = sample_id(&mut Body::new(self, record, fields_end, size, header.misc))?;
        let mut b = Body::new(self, record, HEADER_LEN, fields_end, header.misc);
        b.sample_id = id;
        decode(&mut b)
    }
}
