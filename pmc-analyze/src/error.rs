//! Typed errors.

use std::io;
use std::path::PathBuf;

/// Errors of this crate.
///
/// Bad input (a damaged log, a truncated or foreign ELF file, a garbled
/// kallsyms) never panics: reading an object or a symbol file reports one of
/// these, and the analysis carries on with that object unsymbolized (see
/// [`crate::Warning`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A file was not read: not a regular file (a device, FIFO, socket or directory, which
    /// could block or never end), or larger than the limit ([`crate::file`]).
    #[error("{path}: refused: {reason}")]
    Refused {
        /// The file.
        path: PathBuf,
        /// Why (its type, or its size and the limit).
        reason: String,
    },
    /// A file is not an object file this crate can read (not ELF, damaged).
    #[error("{path}: not a readable object file: {message}")]
    Object {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        message: String,
    },
    /// The log could not be opened (bad preamble, unsupported version).
    #[error("log: {0}")]
    Log(#[from] pmc_log::ReadError),
    /// Writing a report failed.
    #[error("writing report: {0}")]
    Write(#[from] io::Error),
    /// Serializing a JSON report failed.
    #[error("writing JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
