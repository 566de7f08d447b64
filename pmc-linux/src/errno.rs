//! [`Errno`]: the error number a system call of the [`Sys`](crate::Sys) seam failed with,
//! and Linux's errno values, fixed.
//!
//! The values are Linux's own (asm-generic `errno-base.h`, `errno.h`: x86_64 and aarch64
//! share them), not taken from the host's libc, whose numbers differ elsewhere (macOS and
//! FreeBSD: `ENOSYS` 78, `EOPNOTSUPP` 102 or 45), so the crate type-checks and means the
//! same on every OS, as pmc-freebsd's `errno.rs` does for FreeBSD's. On Linux a unit test
//! checks each against the C library's.

/// A raw OS error number (`errno`), as the [`Sys`](crate::Sys) seam returns it. `Display`
/// names it (`EACCES (Permission denied)`) from Linux's table, on any OS.
///
/// ```
/// let e = pmc_linux::Errno(pmc_linux::errno::EACCES);
/// assert_eq!(e.to_string(), "EACCES (Permission denied)");
/// assert_eq!(pmc_linux::Errno(95).name(), Some("EOPNOTSUPP"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Errno(pub i32);

macro_rules! linux_errnos {
    ($($name:ident = $v:expr, $desc:expr;)*) => {
        $(
            #[doc = concat!("Linux's `", stringify!($name), "` (", stringify!($v), "): ", $desc, ".")]
            pub const $name: i32 = $v;
        )*

        impl Errno {
            /// Linux's C name (`"EBUSY"`), if this is one of its errno values.
            pub fn name(self) -> Option<&'static str> {
                match self.0 {
                    $( $v => Some(stringify!($name)), )*
                    _ => None,
                }
            }

            /// Linux's strerror(3) text (the GNU C library's), if known.
            pub fn description(self) -> Option<&'static str> {
                match self.0 {
                    $( $v => Some($desc), )*
                    _ => None,
                }
            }
        }

        #[cfg(all(test, target_os = "linux"))]
        const ALL: &[(&str, i32)] = &[$( (stringify!($name), $v), )*];
    };
}

linux_errnos! {
    EPERM = 1, "Operation not permitted";
    ENOENT = 2, "No such file or directory";
    ESRCH = 3, "No such process";
    EINTR = 4, "Interrupted system call";
    EIO = 5, "Input/output error";
    ENXIO = 6, "No such device or address";
    E2BIG = 7, "Argument list too long";
    ENOEXEC = 8, "Exec format error";
    EBADF = 9, "Bad file descriptor";
    ECHILD = 10, "No child processes";
    EAGAIN = 11, "Resource temporarily unavailable";
    ENOMEM = 12, "Cannot allocate memory";
    EACCES = 13, "Permission denied";
    EFAULT = 14, "Bad address";
    ENOTBLK = 15, "Block device required";
    EBUSY = 16, "Device or resource busy";
    EEXIST = 17, "File exists";
    EXDEV = 18, "Invalid cross-device link";
    ENODEV = 19, "No such device";
    ENOTDIR = 20, "Not a directory";
    EISDIR = 21, "Is a directory";
    EINVAL = 22, "Invalid argument";
    ENFILE = 23, "Too many open files in system";
    EMFILE = 24, "Too many open files";
    ENOTTY = 25, "Inappropriate ioctl for device";
    ETXTBSY = 26, "Text file busy";
    EFBIG = 27, "File too large";
    ENOSPC = 28, "No space left on device";
    ESPIPE = 29, "Illegal seek";
    EROFS = 30, "Read-only file system";
    EMLINK = 31, "Too many links";
    EPIPE = 32, "Broken pipe";
    EDOM = 33, "Numerical argument out of domain";
    ERANGE = 34, "Numerical result out of range";
    EDEADLK = 35, "Resource deadlock avoided";
    ENAMETOOLONG = 36, "File name too long";
    ENOLCK = 37, "No locks available";
    ENOSYS = 38, "Function not implemented";
    ENOTEMPTY = 39, "Directory not empty";
    ELOOP = 40, "Too many levels of symbolic links";
    ENOMSG = 42, "No message of desired type";
    EIDRM = 43, "Identifier removed";
    ECHRNG = 44, "Channel number out of range";
    EL2NSYNC = 45, "Level 2 not synchronized";
    EL3HLT = 46, "Level 3 halted";
    EL3RST = 47, "Level 3 reset";
    ELNRNG = 48, "Link number out of range";
    EUNATCH = 49, "Protocol driver not attached";
    ENOCSI = 50, "No CSI structure available";
    EL2HLT = 51, "Level 2 halted";
    EBADE = 52, "Invalid exchange";
    EBADR = 53, "Invalid request descriptor";
    EXFULL = 54, "Exchange full";
    ENOANO = 55, "No anode";
    EBADRQC = 56, "Invalid request code";
    EBADSLT = 57, "Invalid slot";
    EBFONT = 59, "Bad font file format";
    ENOSTR = 60, "Device not a stream";
    ENODATA = 61, "No data available";
    ETIME = 62, "Timer expired";
    ENOSR = 63, "Out of streams resources";
    ENONET = 64, "Machine is not on the network";
    ENOPKG = 65, "Package not installed";
    EREMOTE = 66, "Object is remote";
    ENOLINK = 67, "Link has been severed";
    EADV = 68, "Advertise error";
    ESRMNT = 69, "Srmount error";
    ECOMM = 70, "Communication error on send";
    EPROTO = 71, "Protocol error";
    EMULTIHOP = 72, "Multihop attempted";
    EDOTDOT = 73, "RFS specific error";
    EBADMSG = 74, "Bad message";
    EOVERFLOW = 75, "Value too large for defined data type";
    ENOTUNIQ = 76, "Name not unique on network";
    EBADFD = 77, "File descriptor in bad state";
    EREMCHG = 78, "Remote address changed";
    ELIBACC = 79, "Can not access a needed shared library";
    ELIBBAD = 80, "Accessing a corrupted shared library";
    ELIBSCN = 81, ".lib section in a.out corrupted";
    ELIBMAX = 82, "Attempting to link in too many shared libraries";
    ELIBEXEC = 83, "Cannot exec a shared library directly";
    EILSEQ = 84, "Invalid or incomplete multibyte or wide character";
    ERESTART = 85, "Interrupted system call should be restarted";
    ESTRPIPE = 86, "Streams pipe error";
    EUSERS = 87, "Too many users";
    ENOTSOCK = 88, "Socket operation on non-socket";
    EDESTADDRREQ = 89, "Destination address required";
    EMSGSIZE = 90, "Message too long";
    EPROTOTYPE = 91, "Protocol wrong type for socket";
    ENOPROTOOPT = 92, "Protocol not available";
    EPROTONOSUPPORT = 93, "Protocol not supported";
    ESOCKTNOSUPPORT = 94, "Socket type not supported";
    EOPNOTSUPP = 95, "Operation not supported";
    EPFNOSUPPORT = 96, "Protocol family not supported";
    EAFNOSUPPORT = 97, "Address family not supported by protocol";
    EADDRINUSE = 98, "Address already in use";
    EADDRNOTAVAIL = 99, "Cannot assign requested address";
    ENETDOWN = 100, "Network is down";
    ENETUNREACH = 101, "Network is unreachable";
    ENETRESET = 102, "Network dropped connection on reset";
    ECONNABORTED = 103, "Software caused connection abort";
    ECONNRESET = 104, "Connection reset by peer";
    ENOBUFS = 105, "No buffer space available";
    EISCONN = 106, "Transport endpoint is already connected";
    ENOTCONN = 107, "Transport endpoint is not connected";
    ESHUTDOWN = 108, "Cannot send after transport endpoint shutdown";
    ETOOMANYREFS = 109, "Too many references: cannot splice";
    ETIMEDOUT = 110, "Connection timed out";
    ECONNREFUSED = 111, "Connection refused";
    EHOSTDOWN = 112, "Host is down";
    EHOSTUNREACH = 113, "No route to host";
    EALREADY = 114, "Operation already in progress";
    EINPROGRESS = 115, "Operation now in progress";
    ESTALE = 116, "Stale file handle";
    EUCLEAN = 117, "Structure needs cleaning";
    ENOTNAM = 118, "Not a XENIX named type file";
    ENAVAIL = 119, "No XENIX semaphores available";
    EISNAM = 120, "Is a named type file";
    EREMOTEIO = 121, "Remote I/O error";
    EDQUOT = 122, "Disk quota exceeded";
    ENOMEDIUM = 123, "No medium found";
    EMEDIUMTYPE = 124, "Wrong medium type";
    ECANCELED = 125, "Operation canceled";
    ENOKEY = 126, "Required key not available";
    EKEYEXPIRED = 127, "Key has expired";
    EKEYREVOKED = 128, "Key has been revoked";
    EKEYREJECTED = 129, "Key was rejected by service";
    EOWNERDEAD = 130, "Owner died";
    ENOTRECOVERABLE = 131, "State not recoverable";
    ERFKILL = 132, "Operation not possible due to RF-kill";
    EHWPOISON = 133, "Memory page has hardware error";
}

impl std::fmt::Display for Errno {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.name(), self.description()) {
            (Some(name), Some(desc)) => write!(f, "{name} ({desc})"),
            _ => write!(f, "errno {}", self.0),
        }
    }
}

impl std::error::Error for Errno {}

impl From<Errno> for std::io::Error {
    fn from(e: Errno) -> std::io::Error {
        std::io::Error::from_raw_os_error(e.0)
    }
}

/// The oracle is the host's C library: on Linux its values and strerror(3) texts are the
/// ones the table fixes.
#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn the_fixed_values_are_the_c_librarys() {
        for &(name, v) in ALL {
            // nix names each value as the C headers do (EAGAIN for EWOULDBLOCK's 11).
            let host = nix::errno::Errno::from_raw(v);
            assert_eq!(format!("{host:?}"), name, "{v}");
            let text = std::io::Error::from_raw_os_error(v).to_string();
            assert_eq!(
                text,
                format!("{} (os error {v})", Errno(v).description().unwrap()),
                "{name}"
            );
        }
        // Every errno the C library names is in the table (Display never loses one).
        for v in 1..200 {
            if nix::errno::Errno::from_raw(v) != nix::errno::Errno::UnknownErrno {
                assert!(Errno(v).name().is_some(), "errno {v} missing");
            }
        }
        let spot = [
            (EPERM, libc::EPERM),
            (EAGAIN, libc::EAGAIN),
            (ENOSYS, libc::ENOSYS),
            (EOPNOTSUPP, libc::EOPNOTSUPP),
            (ECHILD, libc::ECHILD),
        ];
        for (fixed, host) in spot {
            assert_eq!(fixed, host);
        }
    }
}
