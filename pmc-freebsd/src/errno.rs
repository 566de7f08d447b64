//! FreeBSD errno values, fixed (not taken from the host's libc, whose
//! numbers differ on Linux), so the simulator and the error map agree on
//! every OS.

use std::fmt;

/// A FreeBSD errno value as returned by the hwpmc syscall.
///
/// A newtype rather than an enum, because the kernel may return values this
/// crate does not know.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Errno(pub i32);

macro_rules! errnos {
    ($($name:ident = $v:expr, $desc:expr;)*) => {
        impl Errno {
            $(
                #[doc = concat!("`", stringify!($name), "` (", stringify!($v), "): ", $desc, ".")]
                pub const $name: Errno = Errno($v);
            )*

            /// The C name (`"EBUSY"`), if known.
            pub fn name(self) -> Option<&'static str> {
                match self.0 {
                    $( $v => Some(stringify!($name)), )*
                    _ => None,
                }
            }

            /// FreeBSD's strerror(3) text, if known.
            pub fn description(self) -> Option<&'static str> {
                match self.0 {
                    $( $v => Some($desc), )*
                    _ => None,
                }
            }
        }
    };
}

errnos! {
    EPERM = 1, "Operation not permitted";
    ENOENT = 2, "No such file or directory";
    ESRCH = 3, "No such process";
    EINTR = 4, "Interrupted system call";
    EIO = 5, "Input/output error";
    ENXIO = 6, "Device not configured";
    EBADF = 9, "Bad file descriptor";
    ENOMEM = 12, "Cannot allocate memory";
    EACCES = 13, "Permission denied";
    EFAULT = 14, "Bad address";
    EBUSY = 16, "Device busy";
    EEXIST = 17, "File exists";
    ENODEV = 19, "Operation not supported by device";
    EINVAL = 22, "Invalid argument";
    EMFILE = 24, "Too many open files";
    EPIPE = 32, "Broken pipe";
    EAGAIN = 35, "Resource temporarily unavailable";
    EOPNOTSUPP = 45, "Operation not supported";
    EPROGMISMATCH = 75, "Program version wrong";
    ENOSYS = 78, "Function not implemented";
    EDOOFUS = 88, "Programming error";
}

impl fmt::Debug for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => write!(f, "{n}"),
            None => write!(f, "Errno({})", self.0),
        }
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.name(), self.description()) {
            (Some(n), Some(d)) => write!(f, "{n}: {d}"),
            _ => write!(f, "errno {}", self.0),
        }
    }
}

impl std::error::Error for Errno {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        assert_eq!(Errno::EDOOFUS.name(), Some("EDOOFUS"));
        assert_eq!(Errno(88), Errno::EDOOFUS);
        assert_eq!(Errno(9999).name(), None);
        assert_eq!(format!("{}", Errno::EBUSY), "EBUSY: Device busy");
        assert_eq!(format!("{:?}", Errno(9999)), "Errno(9999)");
    }
}
