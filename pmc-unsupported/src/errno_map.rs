//! An errno from the [`Sys`](crate::Sys) seam, met during an operation,
//! as the typed error a caller matches on, with what to do next.

use crate::errno::Errno;
use pmc_core::{Error, ErrorKind, Op};

/// The error for `errno` met during `op`.
///
/// `ENOSYS` is this OS having no counter facility pmc can use:
/// [`ErrorKind::Unsupported`] (not an OS failure, so no errno is attached),
/// with the help to run on a system that has a backend. Anything else is
/// [`ErrorKind::Os`] with its errno. A backend copied from this crate adds
/// one arm per (errno, operation) it can explain.
pub fn error(errno: Errno, op: Op) -> Error {
    match errno {
        Errno::ENOSYS => Error::new(
            ErrorKind::Unsupported,
            op,
            "pmc supports Linux and FreeBSD only",
        )
        .with_help("run on Linux (perf_event) or FreeBSD (hwpmc)"),
        Errno(n) => Error::new(ErrorKind::Os, op, format!("{op} failed: {errno}")).with_errno(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enosys_is_unsupported_with_help_and_others_are_os_errors() {
        let e = error(Errno::ENOSYS, Op::Allocate);
        assert_eq!(
            (e.kind(), e.op(), e.errno()),
            (ErrorKind::Unsupported, Op::Allocate, None)
        );
        assert!(e.help().is_some_and(|h| h.contains("Linux")), "{e}");
        let e = error(Errno(libc::EIO), Op::Read);
        assert_eq!((e.kind(), e.errno()), (ErrorKind::Os, Some(libc::EIO)));
    }
}
