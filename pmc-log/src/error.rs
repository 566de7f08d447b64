//! Error types of the writer and readers.

use std::io;

/// An error while writing a log.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// The underlying writer failed.
    #[error("I/O error writing the pmc log: {0} (check free disk space and that the pipe reader is alive)")]
    Io(#[from] io::Error),
    /// A variable-length field is longer than its length prefix allows.
    #[error("record field `{field}` is {len} bytes, more than the format allows ({max}); shorten it before logging")]
    FieldTooLong {
        /// The field.
        field: &'static str,
        /// Its length.
        len: usize,
        /// The maximum.
        max: usize,
    },
    /// The writer met an I/O error earlier and has stopped: nothing more is
    /// written after the first failure (see [`crate::Writer`]).
    #[error("the pmc log writer stopped at an earlier I/O error ({kind}); {dropped} records were not written. Records written before the error stay readable; free space (or fix the output) and start a new log")]
    Failed {
        /// The kind of the first I/O error.
        kind: io::ErrorKind,
        /// Records accepted by `write` that are not in the output (the
        /// pending block at the failure, and every record offered since).
        dropped: u64,
    },
    /// One record does not fit in the largest block.
    #[error("record of {len} bytes exceeds the largest block payload of {max} bytes; split the data (e.g. shorten the callchain)")]
    RecordTooLarge {
        /// Encoded record length.
        len: usize,
        /// Largest allowed.
        max: usize,
    },
}

impl WriteError {
    /// The I/O error kind, for [`WriteError::Io`] and [`WriteError::Failed`]
    /// (`StorageFull` for a full disk, `BrokenPipe` for a closed pipe, ...).
    pub fn io_kind(&self) -> Option<io::ErrorKind> {
        match self {
            WriteError::Io(e) => Some(e.kind()),
            WriteError::Failed { kind, .. } => Some(*kind),
            _ => None,
        }
    }
}

/// An error that prevents reading a log at all. Damage inside a log is not
/// an error: it is skipped and described in a [`crate::read::ReadReport`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// Fewer bytes than the 16-byte preamble.
    #[error("input is {len} bytes, shorter than the 16-byte pmc log preamble: the file is empty or was cut before any record")]
    TooShort {
        /// Input length.
        len: usize,
    },
    /// The magic number does not match.
    #[error("not a pmc log: it starts with {found:02x?}, expected {expected:02x?}; a FreeBSD hwpmc log (first byte pattern `.. .. .. ee`) must be converted with pmc_log::hwpmc")]
    NotAPmcLog {
        /// The first bytes found.
        found: [u8; 8],
        /// The expected magic.
        expected: [u8; 8],
    },
    /// The major version is not the one this reader implements.
    #[error("pmc log version {major}.{minor} is not supported: this reader implements {supported}.x; upgrade pmc-log to read it")]
    UnsupportedVersion {
        /// Major version in the file.
        major: u16,
        /// Minor version in the file.
        minor: u16,
        /// The major this reader supports.
        supported: u16,
    },
    /// The byte-order field is not little-endian.
    #[error("pmc log byte order code {0} is not supported (only 1 = little-endian is defined); the file is damaged or from a future writer")]
    ByteOrder(u8),
    /// The underlying reader failed.
    #[error("I/O error reading the pmc log: {0}")]
    Io(#[from] io::Error),
}
