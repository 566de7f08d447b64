//! The errno the [`Sys`](crate::Sys) seam returns.

use std::fmt;

/// An OS error number, as `Sys` returns it; `Display` names it
/// (`ENOSYS: Function not implemented (os error 38)` on Linux).
///
/// ```
/// let e = pmc_unsupported::Errno::ENOSYS;
/// assert!(e.to_string().starts_with("ENOSYS"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Errno(pub i32);

impl Errno {
    /// `ENOSYS`: the OS has no such call (here: no counter facility).
    pub const ENOSYS: Errno = Errno(libc::ENOSYS);

    /// The errno's symbolic name, where this crate knows it.
    fn name(self) -> Option<&'static str> {
        match self.0 {
            libc::ENOSYS => Some("ENOSYS"),
            _ => None,
        }
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = std::io::Error::from_raw_os_error(self.0);
        match self.name() {
            Some(name) => write!(f, "{name}: {text}"),
            None => write!(f, "errno {}: {text}", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_the_errno() {
        assert!(Errno::ENOSYS.to_string().starts_with("ENOSYS: "));
        assert!(Errno(-1).to_string().starts_with("errno -1: "));
    }
}
