//! File-descriptor calls on the host (the simulator's only ones), for its log writer (as
//! hwpmc's writer thread writes the log file) and its `PMC_OP_CONFIGURELOG`
//! check. Any unix host; elsewhere every fd is bad.

use crate::errno::Errno;

/// `write(fd, buf)`: writes the whole buffer to a raw fd (used by the
/// simulator's log writer, as the kernel's writer thread would).
#[cfg(unix)]
pub(crate) fn write_all_fd(fd: i32, mut buf: &[u8]) -> Result<(), Errno> {
    while !buf.is_empty() {
        // SAFETY: `write` reads at most `buf.len()` bytes from `buf`, which is
        // a live slice; it does not retain the pointer. An invalid fd is
        // reported as EBADF, not undefined behaviour.
        let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
        if n < 0 {
            let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
            if e == libc::EINTR {
                continue;
            }
            return Err(host_errno(e));
        }
        let n = usize::try_from(n).unwrap_or(0).min(buf.len());
        if n == 0 {
            return Err(Errno::EIO);
        }
        buf = &buf[n..];
    }
    Ok(())
}

/// Non-unix hosts have no fds; the simulator's log writer reports EBADF.
#[cfg(not(unix))]
pub(crate) fn write_all_fd(_fd: i32, _buf: &[u8]) -> Result<(), Errno> {
    Err(Errno::EBADF)
}

/// Whether `fd` is an open descriptor opened for writing (`fcntl(F_GETFL)`),
/// as the kernel's `fget_write` checks for `PMC_OP_CONFIGURELOG`.
#[cfg(unix)]
pub(crate) fn fd_is_writable(fd: i32) -> bool {
    if fd < 0 {
        return false;
    }
    // SAFETY: `fcntl(F_GETFL)` takes no pointer argument and touches no user
    // memory; an invalid fd yields -1/EBADF.
    let fl = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    fl >= 0 && (fl & libc::O_ACCMODE) != libc::O_RDONLY
}

/// Non-unix hosts have no fds.
#[cfg(not(unix))]
pub(crate) fn fd_is_writable(_fd: i32) -> bool {
    false
}

/// Maps a host errno to the FreeBSD number (identity on FreeBSD).
#[cfg(unix)]
fn host_errno(e: i32) -> Errno {
    match e {
        libc::EBADF => Errno::EBADF,
        libc::EPIPE => Errno::EPIPE,
        libc::EAGAIN => Errno::EAGAIN,
        libc::EINVAL => Errno::EINVAL,
        libc::EFAULT => Errno::EFAULT,
        libc::ENOMEM => Errno::ENOMEM,
        libc::EPERM => Errno::EPERM,
        _ => Errno::EIO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn write_to_bad_fd_is_ebadf() {
        assert_eq!(write_all_fd(-1, b"x"), Err(Errno::EBADF));
    }
}
