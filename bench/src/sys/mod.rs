//! The benchmark's only unsafe code: the bare system calls the library is
//! measured against (`perf_event_open`, `read`, the enable/disable ioctls
//! on Linux; hwpmc's requests on FreeBSD, `hwpmc.rs`) and a few process
//! facts (`setrlimit`, `getrusage`).
#![allow(unsafe_code)]

#[cfg(target_os = "freebsd")]
pub mod hwpmc;

#[cfg(target_os = "linux")]
use perf_event_open_sys::bindings::perf_event_attr;
#[cfg(target_os = "linux")]
use std::io;
#[cfg(target_os = "linux")]
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

#[cfg(target_os = "linux")]
/// `perf_event_open(attr, pid, cpu, group_fd, PERF_FLAG_FD_CLOEXEC)`.
///
/// # Errors
///
/// The syscall's errno.
pub fn perf_event_open(
    attr: &mut perf_event_attr,
    pid: i32,
    cpu: i32,
    group: Option<BorrowedFd<'_>>,
) -> io::Result<OwnedFd> {
    let group_fd = group.map_or(-1, |g| g.as_raw_fd());
    let flags = perf_event_open_sys::bindings::PERF_FLAG_FD_CLOEXEC as libc::c_ulong;
    // SAFETY: `attr` is a valid, exclusively borrowed perf_event_attr whose
    // `size` is at most its real size; the other arguments are integers.
    let fd = unsafe { perf_event_open_sys::perf_event_open(attr, pid, cpu, group_fd, flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(target_os = "linux")]
/// A bare `read(2)`: what a hand-written perf_event reader does.
///
/// # Errors
///
/// The syscall's errno.
#[inline]
pub fn read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is a valid, exclusively borrowed slice of `buf.len()`
    // bytes that the kernel writes into.
    let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

#[cfg(target_os = "linux")]
/// `PERF_EVENT_IOC_ENABLE` (`enable`) or `PERF_EVENT_IOC_DISABLE`, no group flag.
///
/// # Errors
///
/// The syscall's errno.
#[inline]
pub fn ioctl_enable(fd: BorrowedFd<'_>, enable: bool) -> io::Result<()> {
    // SAFETY: ENABLE/DISABLE take an integer argument and touch no memory.
    let rc = unsafe {
        if enable {
            perf_event_open_sys::ioctls::ENABLE(fd.as_raw_fd(), 0)
        } else {
            perf_event_open_sys::ioctls::DISABLE(fd.as_raw_fd(), 0)
        }
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(target_os = "linux")]
/// Raises `RLIMIT_NOFILE` to at least `want` (soft and, as root, hard);
/// returns the soft limit now in force.
pub fn raise_nofile(want: u64) -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return 0;
    }
    if lim.rlim_cur >= want {
        return lim.rlim_cur;
    }
    let new = libc::rlimit {
        rlim_cur: want,
        rlim_max: lim.rlim_max.max(want),
    };
    // SAFETY: `new` is a valid rlimit the call only reads.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &new) } == 0 {
        return want;
    }
    let soft = libc::rlimit {
        rlim_cur: lim.rlim_max,
        rlim_max: lim.rlim_max,
    };
    // SAFETY: as above.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &soft) } == 0 {
        return lim.rlim_max;
    }
    lim.rlim_cur
}

#[cfg(target_os = "linux")]
/// User + system CPU time (ns) of all waited-for children so far.
pub fn children_cpu_ns() -> u64 {
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } != 0 {
        return 0;
    }
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

#[cfg(target_os = "linux")]
/// User + system CPU time (ns) of this process so far.
pub fn self_cpu_ns() -> u64 {
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0;
    }
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

#[cfg(target_os = "linux")]
/// What `wait4(2)` reports about one child.
#[derive(Debug, Clone, Copy)]
pub struct ChildUsage {
    /// Exited with status 0.
    pub success: bool,
    /// User + system CPU (ns) of the child and every descendant it waited for.
    pub cpu_ns: u64,
    /// Peak resident set size (KiB) of the child (or of the largest of its
    /// waited-for descendants).
    pub maxrss_kib: u64,
}

#[cfg(target_os = "linux")]
/// `wait4(pid, .., 0, &rusage)`: reaps the child `pid` and returns its usage.
///
/// # Errors
///
/// The syscall's errno.
pub fn wait4(pid: u32) -> io::Result<ChildUsage> {
    let mut status = 0i32;
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `status` and `ru` are valid, writable; pid is an integer.
        let rc = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut ru) };
        if rc >= 0 {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    Ok(ChildUsage {
        success: libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        cpu_ns: tv(ru.ru_utime) + tv(ru.ru_stime),
        maxrss_kib: ru.ru_maxrss as u64,
    })
}
