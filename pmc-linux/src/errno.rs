//! [`Errno`]: the error number a system call of the [`Sys`](crate::Sys) seam failed with.

/// A raw OS error number (`errno`), as the [`Sys`](crate::Sys) seam returns it. `Display`
/// names it (`EACCES (Permission denied)`).
///
/// ```
/// let e = pmc_linux::Errno(libc::EACCES);
/// assert_eq!(e.to_string(), "EACCES (Permission denied)");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Errno(pub i32);

impl std::fmt::Display for Errno {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let e = nix::errno::Errno::from_raw(self.0);
        if e == nix::errno::Errno::UnknownErrno {
            write!(f, "errno {}", self.0)
        } else {
            write!(f, "{e:?} ({})", e.desc())
        }
    }
}

impl std::error::Error for Errno {}

impl From<nix::errno::Errno> for Errno {
    fn from(e: nix::errno::Errno) -> Errno {
        Errno(e as i32)
    }
}

impl From<Errno> for std::io::Error {
    fn from(e: Errno) -> std::io::Error {
        std::io::Error::from_raw_os_error(e.0)
    }
}
