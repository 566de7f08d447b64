//! Why a sink stopped: a `pmc_core::Error` made where the reader failed.

use pmc_core::{Error, ErrorKind, Op};

/// Why the sink stopped receiving records: a [`pmc_core::Error`] made where
/// the reader met the failure, with the kind it has there (a full disk is
/// `ErrorKind::Os` with ENOSPC and its `io::Error` as the source; a sink that
/// refuses with EACCES is `ErrorKind::Permission`; a sink that fails with a
/// `pmc_core::Error` inside its `io::Error` keeps that error's kind), kept
/// whole and cloned to every caller that asks (`Backend::log_error`,
/// `flush_log`, `close_log`, the reader thread's result).
pub(super) type Failure = Error;

/// The prefix of every error the reader reports.
const STOPPED: &str = "the log reader stopped writing the log";

/// A failure described by text alone.
pub(super) fn failure_msg(message: &str) -> Failure {
    Error::new(ErrorKind::Os, Op::Log, format!("{STOPPED}: {message}"))
}

/// The failure for a sink's I/O error `e`, met doing `what`.
pub(super) fn failure_io(what: &str, e: &std::io::Error) -> Failure {
    from_chain(what, e)
}

/// A failure from an error chain (the converter's, or the sink's own): a
/// `pmc_core::Error` in it (a sink that reports one inside its `io::Error`)
/// keeps its kind, errno and help; else the first `io::Error` gives the
/// errno and kind (the pmc-log writer's `WriteError` at least the kind);
/// else it is an OS error described by its text.
pub(super) fn from_chain(what: &str, e: &(dyn std::error::Error + 'static)) -> Failure {
    let (mut errno, mut io_kind) = (None, None);
    let mut src: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = src {
        // `io::Error::source` skips the error it wraps: look inside it too.
        let inner = s
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .map(|i| i as &(dyn std::error::Error + 'static));
        if let Some(pe) = [Some(s), inner]
            .into_iter()
            .flatten()
            .find_map(|x| x.downcast_ref::<Error>())
        {
            let mut f = Error::new(
                pe.kind(),
                Op::Log,
                format!("{STOPPED}: {what}: {}", pe.message()),
            );
            if let Some(n) = pe.errno() {
                f = f.with_errno(n);
            }
            if let Some(h) = pe.help() {
                f = f.with_help(h);
            }
            return f.with_source(pe.clone());
        }
        if let Some(w) = s.downcast_ref::<pmc_log::WriteError>() {
            io_kind = io_kind.or(w.io_kind());
        }
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            io_kind = Some(io.kind());
            errno = errno.or(io.raw_os_error());
            break;
        }
        src = s.source();
    }
    let mut f = Error::new(
        io_kind.map_or(ErrorKind::Os, ErrorKind::of_io),
        Op::Log,
        format!("{STOPPED}: {what}: {e}"),
    );
    if let Some(n) = errno {
        f = f
            .with_errno(n)
            .with_source(std::io::Error::from_raw_os_error(n));
    } else if let Some(k) = io_kind {
        f = f.with_source(std::io::Error::from(k));
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io_kind_of(e: &Error) -> Option<std::io::ErrorKind> {
        std::error::Error::source(e)
            .and_then(|s| s.downcast_ref::<std::io::Error>())
            .map(std::io::Error::kind)
    }

    #[test]
    fn an_io_error_gives_its_errno_and_kind() {
        let full = failure_io(
            "cannot write the log",
            &std::io::Error::from_raw_os_error(28),
        );
        assert_eq!(
            (full.kind(), full.op(), full.errno()),
            (ErrorKind::Os, Op::Log, Some(28))
        );
        assert_eq!(io_kind_of(&full), Some(std::io::ErrorKind::StorageFull));
        assert!(full
            .message()
            .starts_with("the log reader stopped writing the log: cannot write the log: "));
        for n in [1, 13] {
            let refused = failure_io(
                "cannot write the log",
                &std::io::Error::from_raw_os_error(n),
            );
            assert_eq!(
                (refused.kind(), refused.errno()),
                (ErrorKind::Permission, Some(n))
            );
        }
        let pipe = failure_io("x", &std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        assert_eq!((pipe.kind(), pipe.errno()), (ErrorKind::Os, None));
        assert_eq!(io_kind_of(&pipe), Some(std::io::ErrorKind::BrokenPipe));
    }

    #[test]
    fn a_pmc_error_inside_the_chain_keeps_its_kind() {
        let inner = Error::new(ErrorKind::NoSuchProcess, Op::Log, "the reader exited")
            .with_errno(32)
            .with_help("restart it");
        let f = failure_io("cannot write the log", &std::io::Error::other(inner));
        assert_eq!(
            (f.kind(), f.errno(), f.help()),
            (ErrorKind::NoSuchProcess, Some(32), Some("restart it"))
        );
        assert_eq!(
            f.message(),
            "the log reader stopped writing the log: cannot write the log: the reader exited"
        );
        // Through pmc-log's writer error too.
        let w = pmc_log::WriteError::Io(std::io::Error::other(Error::new(
            ErrorKind::Permission,
            Op::Log,
            "no",
        )));
        assert_eq!(from_chain("convert", &w).kind(), ErrorKind::Permission);
    }

    #[test]
    fn a_writer_that_failed_earlier_gives_the_kind_it_kept() {
        let w = pmc_log::WriteError::Failed {
            kind: std::io::ErrorKind::PermissionDenied,
            dropped: 3,
        };
        let f = from_chain("convert", &w);
        assert_eq!((f.kind(), f.errno()), (ErrorKind::Permission, None));
        assert_eq!(io_kind_of(&f), Some(std::io::ErrorKind::PermissionDenied));
        let text = failure_msg("the reader has ended");
        assert_eq!(
            (text.kind(), text.message()),
            (
                ErrorKind::Os,
                "the log reader stopped writing the log: the reader has ended"
            )
        );
    }
}
