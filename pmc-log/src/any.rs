//! Opening a log of either format: pmc-log, or FreeBSD hwpmc's kernel
//! stream (converted): [`detect`] and [`open_any`].

use crate::hwpmc::{self, HwpmcError, ImportReport};
use crate::read::Reader;
use crate::ReadError;
use std::borrow::Cow;

/// A log format, told by its first bytes ([`detect`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LogFormat {
    /// pmc-log: the preamble's [`MAGIC`](crate::format::MAGIC).
    PmcLog,
    /// FreeBSD hwpmc's kernel stream (`pmcstat -O`): a first record header
    /// with magic 0xEE in the top byte of a little-endian word, or the
    /// `PMCL` prefix of a `pmc record` file.
    Hwpmc,
}

/// The format of a log by its magic: pmc-log's preamble, hwpmc's `PMCL`
/// file prefix, or a first hwpmc record header (magic 0xEE in the top byte
/// of a little-endian word). `None` when it is neither (or shorter than a
/// word). Nothing past the magic is checked: [`open_any`] does that.
///
/// ```
/// use pmc_log::{detect, LogFormat};
///
/// assert_eq!(detect(&pmc_log::format::MAGIC), Some(LogFormat::PmcLog));
/// assert_eq!(detect(&[0x10, 0x00, 0x01, 0xEE]), Some(LogFormat::Hwpmc));
/// assert_eq!(detect(b"hello"), None);
/// ```
pub fn detect(data: &[u8]) -> Option<LogFormat> {
    if data.starts_with(&crate::format::MAGIC) {
        return Some(LogFormat::PmcLog);
    }
    let word = crate::bytes::ByteCursor::le(data).u32_at(0).ok()?;
    // `pmc record`'s prefix: the bytes `LCMP` as a little-endian word.
    (word == hwpmc::PMCL_MAGIC || hwpmc::pmclog_header_magic_ok(word)).then_some(LogFormat::Hwpmc)
}

/// A log opened by [`open_any`]: pmc-log bytes, borrowed when the input
/// was pmc-log already, converted when it was an hwpmc log.
#[derive(Debug)]
#[non_exhaustive]
pub struct AnyLog<'a> {
    /// The input's format.
    pub format: LogFormat,
    /// The log as pmc-log.
    pub bytes: Cow<'a, [u8]>,
    /// For an hwpmc log, what the conversion did (records in and out,
    /// damaged regions skipped, whether it was closed cleanly).
    pub import: Option<ImportReport>,
}

impl AnyLog<'_> {
    /// A reader over the pmc-log bytes.
    ///
    /// ```
    /// use pmc_log::hwpmc::Encoder;
    ///
    /// // A FreeBSD hwpmc log (INITIALIZE, CLOSELOG), as `pmcstat -O` writes it.
    /// let mut e = Encoder::new(Vec::new());
    /// e.initialize(1, 0x0A00_0000, 0, 1_000_000_000, 0, 0, "")?;
    /// e.closelog(2)?;
    /// let raw = e.into_inner();
    /// let log = pmc_log::open_any(&raw)?;
    /// assert_eq!(log.format, pmc_log::LogFormat::Hwpmc);
    /// let mut records = log.reader()?.records();
    /// assert!(records.by_ref().count() >= 1);
    /// assert!(records.report().closed_cleanly);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Reader::new`] (a converted hwpmc log always has a valid preamble).
    pub fn reader(&self) -> Result<Reader<'_>, ReadError> {
        Reader::new(&self.bytes)
    }
}

/// Why [`open_any`] could not open a log.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The input starts with neither format's magic.
    #[error("not a pmc log: it starts with {found:02x?}, which is neither pmc-log's magic ({magic:02x?}) nor an hwpmc log header (a little-endian word with 0xee in its top byte, or \"PMCL\"); check that the file was written by pmc_log::Writer or hwpmc (pmcstat -O)")]
    UnknownFormat {
        /// Up to the first 8 bytes of the input.
        found: Vec<u8>,
        /// pmc-log's magic.
        magic: [u8; 8],
    },
    /// It has hwpmc's magic but could not be converted.
    #[error("not a readable hwpmc log: {0}")]
    Hwpmc(#[from] HwpmcError),
}

/// Opens a log of either format by its magic ([`detect`]).
///
/// The pmc-log bytes are borrowed as they are, an hwpmc log is converted with
/// [`hwpmc::convert`] (in memory: the result is about the input's size).
/// Damage inside either is not an error: it is skipped and reported
/// ([`AnyLog::import`] for the conversion, [`Reader`]'s report for
/// pmc-log).
///
/// ```
/// use pmc_log::record::Header;
/// use pmc_log::{open_any, LogFormat, Writer};
///
/// let file = Writer::new(Vec::new(), &Header::default())?.finish()?;
/// let log = open_any(&file)?;
/// assert_eq!(log.format, LogFormat::PmcLog);
/// assert!(log.import.is_none());
/// let mut records = log.reader()?.records();
/// records.by_ref().for_each(drop);
/// assert!(records.report().closed_cleanly);
///
/// assert!(open_any(b"GIF89a..").is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`OpenError::UnknownFormat`] for neither magic; [`OpenError::Hwpmc`]
/// when an hwpmc log cannot be converted (an unsupported version).
pub fn open_any(data: &[u8]) -> Result<AnyLog<'_>, OpenError> {
    match detect(data) {
        Some(LogFormat::PmcLog) => Ok(AnyLog {
            format: LogFormat::PmcLog,
            bytes: Cow::Borrowed(data),
            import: None,
        }),
        Some(LogFormat::Hwpmc) => {
            // Out of memory while converting is an error (HwpmcError::Write), not an abort.
            let (out, report) = hwpmc::convert(data, crate::TryVec::new())?;
            Ok(AnyLog {
                format: LogFormat::Hwpmc,
                bytes: Cow::Owned(out.into_inner()),
                import: Some(report),
            })
        }
        None => Err(OpenError::UnknownFormat {
            found: data.iter().take(8).copied().collect(),
            magic: crate::format::MAGIC,
        }),
    }
}
