//! The kernel's half of [`RealSys`](super::RealSys) on Linux: `perf_event_open(2)`, the perf
//! ioctls, `read`, `poll`, `clock_gettime` and `gettid`.

use perf_event_open_sys::bindings::perf_event_attr;
use std::os::fd::{BorrowedFd, OwnedFd};

use super::{last_errno, Clock, Errno, Ioctl};

/// This system has perf_event.
pub(super) const HAVE_PERF_EVENT: bool = true;

/// `perf_event_open(attr, pid, cpu, group_fd, flags | PERF_FLAG_FD_CLOEXEC)`.
pub(super) fn perf_event_open(
    attr: &mut perf_event_attr,
    pid: i32,
    cpu: i32,
    group: Option<BorrowedFd<'_>>,
    flags: u64,
) -> Result<OwnedFd, Errno> {
    use std::os::fd::{AsRawFd, FromRawFd};
    let group_fd = group.map_or(-1, |g| g.as_raw_fd());
    let flags =
        (flags | u64::from(perf_event_open_sys::bindings::PERF_FLAG_FD_CLOEXEC)) as libc::c_ulong;
    // SAFETY: `attr` is a valid, exclusively borrowed perf_event_attr whose
    // `size` field is at most its real size; the kernel reads it and may write
    // back `size` on E2BIG. The other arguments are integers.
    let fd = unsafe { perf_event_open_sys::perf_event_open(attr, pid, cpu, group_fd, flags) };
    if fd < 0 {
        return Err(last_errno());
    }
    // SAFETY: the syscall returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `ioctl(fd, PERF_EVENT_IOC_*, arg)`.
pub(super) fn ioctl(fd: BorrowedFd<'_>, op: Ioctl) -> Result<(), Errno> {
    use perf_event_open_sys::ioctls;
    use std::os::fd::AsRawFd;
    let raw = fd.as_raw_fd();
    let flag = |g: bool| {
        if g {
            perf_event_open_sys::bindings::PERF_IOC_FLAG_GROUP
        } else {
            0
        }
    };
    // SAFETY: ENABLE/DISABLE/RESET/SET_OUTPUT take an integer argument (a flag or
    // an fd number the kernel validates) and touch no user memory; PERIOD reads one u64 through the pointer, which points at the
    // local `period` for the duration of the call.
    let rc = unsafe {
        match op {
            Ioctl::Enable(g) => ioctls::ENABLE(raw, flag(g)),
            Ioctl::Disable(g) => ioctls::DISABLE(raw, flag(g)),
            Ioctl::Reset(g) => ioctls::RESET(raw, flag(g)),
            Ioctl::SetOutput(target) => ioctls::SET_OUTPUT(raw, target),
            Ioctl::Period(p) => {
                let mut period = p;
                libc::ioctl(
                    raw,
                    perf_event_open_sys::bindings::PERIOD as _,
                    &mut period as *mut u64,
                )
            }
        }
    };
    if rc < 0 {
        return Err(last_errno());
    }
    Ok(())
}

/// `read(fd, buf)`: one read of a counter's `read_format` block.
pub(super) fn read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> Result<usize, Errno> {
    use std::os::fd::AsRawFd;
    loop {
        // SAFETY: the kernel writes at most `buf.len()` bytes into `buf`, which is exclusively
        // borrowed for the call.
        let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if let Ok(n) = usize::try_from(n) {
            return Ok(n);
        }
        match last_errno() {
            Errno(libc::EINTR) => continue,
            e => return Err(e),
        }
    }
}

/// `PERF_EVENT_IOC_ID`: the kernel's id of the event behind `fd` (what `PERF_SAMPLE_IDENTIFIER`
/// and `PERF_FORMAT_ID` report).
pub(super) fn event_id(fd: BorrowedFd<'_>) -> Result<u64, Errno> {
    use std::os::fd::AsRawFd;
    let mut id: u64 = 0;
    // SAFETY: PERF_EVENT_IOC_ID writes one u64 through the pointer, which points at the live
    // local `id` for the duration of the call.
    let rc = unsafe { perf_event_open_sys::ioctls::ID(fd.as_raw_fd(), &mut id) };
    if rc < 0 {
        return Err(last_errno());
    }
    Ok(id)
}

/// `poll(fds, POLLIN, timeout_ms)`: each fd's `revents`, all 0 when a signal interrupted it.
pub(super) fn poll(fds: &[BorrowedFd<'_>], timeout_ms: i32) -> Result<Vec<i16>, Errno> {
    use std::os::fd::AsRawFd;
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|fd| libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let n = libc::nfds_t::try_from(pfds.len()).map_err(|_| Errno(libc::EINVAL))?;
    // SAFETY: `pfds` is a live array of exactly `n` pollfds, which the kernel reads and whose
    // `revents` it writes for the duration of the call. Any negative timeout waits forever.
    let rc = unsafe { libc::poll(pfds.as_mut_ptr(), n, timeout_ms) };
    if rc < 0 {
        return match last_errno() {
            Errno(libc::EINTR) => Ok(vec![0; pfds.len()]),
            e => Err(e),
        };
    }
    Ok(pfds.iter().map(|p| p.revents).collect())
}

/// `clock_gettime(clock)` in nanoseconds (0 if the clock is unavailable).
pub(super) fn clock_ns(clock: Clock) -> u64 {
    let id = match clock {
        Clock::Monotonic => libc::CLOCK_MONOTONIC,
        Clock::Realtime => libc::CLOCK_REALTIME,
    };
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: the kernel writes one timespec into the live local `ts`.
    if unsafe { libc::clock_gettime(id, &mut ts) } != 0 {
        return 0;
    }
    u64::try_from(ts.tv_sec)
        .unwrap_or(0)
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::try_from(ts.tv_nsec).unwrap_or(0))
}

/// The calling thread's id: `gettid(2)` (no `/proc` read, no allocation).
pub(super) fn gettid() -> i32 {
    // SAFETY: gettid takes no arguments, touches no memory and cannot fail.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) };
    i32::try_from(tid).unwrap_or(0)
}
