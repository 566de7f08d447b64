//! The hub's errors: a poisoned lock, no log, and the first failure writing the log
//! ([`LogFailure`]), kept and reported.

use pmc_core::{Error, ErrorKind, Op};

pub(super) fn poisoned() -> Error {
    Error::new(
        ErrorKind::Os,
        Op::Log,
        "the log lock was poisoned by a panic in another thread",
    )
}

pub(crate) fn no_log() -> Error {
    Error::new(ErrorKind::InvalidState, Op::Log, "no log is configured")
        .with_help("call configure_log first")
}

pub(super) fn write_error(e: &pmc_log::WriteError) -> Error {
    LogFailure::from(e).to_error()
}

/// The first error writing the log, kept so that it can be reported again (by `log_error`,
/// `flush_log` and `close_log`) with its errno and `io::ErrorKind`.
#[derive(Debug, Clone)]
pub(in crate::log) struct LogFailure {
    message: String,
    pub(super) errno: Option<i32>,
    kind: Option<std::io::ErrorKind>,
}

impl From<&pmc_log::WriteError> for LogFailure {
    fn from(e: &pmc_log::WriteError) -> Self {
        let (message, errno) = match e {
            // The errno's text follows in the error's display.
            pmc_log::WriteError::Io(io) if io.raw_os_error().is_some() => {
                (String::new(), io.raw_os_error())
            }
            pmc_log::WriteError::Io(io) => (format!(": {io}"), None),
            e => (format!(": {e}"), None),
        };
        LogFailure {
            message,
            errno,
            kind: e.io_kind(),
        }
    }
}

impl LogFailure {
    /// The error: the kind of the sink's `io::Error` ([`ErrorKind::of_io`]: `Permission`
    /// for refused access, else `Os`, as FreeBSD's log pump), `Op::Log`, the errno, and
    /// the `io::Error` (with its kind) as its source.
    pub(super) fn to_error(&self) -> Error {
        let mut e = Error::new(
            self.kind.map_or(ErrorKind::Os, ErrorKind::of_io),
            Op::Log,
            format!("cannot write the sample log{}", self.message),
        );
        if let Some(n) = self.errno {
            e = e.with_errno(n);
        }
        if let Some(k) = self.kind {
            e = e.with_source(std::io::Error::from(k)).with_help(
                "the log takes no more records (samples drained since are counted in \
                     SamplingDetails::log_dropped): stop the PMCs, make room or fix the \
                     output, and start a new log with configure_log",
            );
        }
        e
    }

    /// Keeps the first failure.
    pub(in crate::log) fn note(slot: &mut Option<LogFailure>, e: &pmc_log::WriteError) {
        if slot.is_none() {
            *slot = Some(LogFailure::from(e));
        }
    }
}
