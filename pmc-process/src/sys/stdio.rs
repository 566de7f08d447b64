//! [`Stdio`]: where a launched command's standard streams go (the launcher's own type on
//! every system, so that code building a [`Command`](crate::launch::Command) builds
//! everywhere).

use std::os::fd::OwnedFd;

/// Where a launched command's standard input, output or error goes
/// ([`Command::stdin`](crate::launch::Command::stdin),
/// [`stdout`](crate::launch::Command::stdout), [`stderr`](crate::launch::Command::stderr)).
#[derive(Debug)]
pub enum Stdio {
    /// The launching process's own (the default).
    Inherit,
    /// `/dev/null`.
    Null,
    /// This descriptor (a file, a pipe end, a socket); the child gets a
    /// copy, so the caller's stays open.
    Fd(OwnedFd),
}

impl Stdio {
    /// The launching process's own stream.
    pub fn inherit() -> Stdio {
        Stdio::Inherit
    }
    /// `/dev/null`.
    pub fn null() -> Stdio {
        Stdio::Null
    }
}

impl From<OwnedFd> for Stdio {
    fn from(fd: OwnedFd) -> Stdio {
        Stdio::Fd(fd)
    }
}

impl From<std::fs::File> for Stdio {
    fn from(f: std::fs::File) -> Stdio {
        Stdio::Fd(f.into())
    }
}
