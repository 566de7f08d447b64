//! The kernel's half of [`RealSys`](super::RealSys) on Linux: `perf_event_open(2)`, the perf
//! ioctls, `read`, `poll`, `clock_gettime` and `gettid`.

use perf_event_open_sys::bindings::perf_event_attr;
use std::os::fd::{BorrowedFd, OwnedFd};

use super::{Clock, Errno, Ioctl};

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
    loop {
        match nix::unistd::read(fd, buf) {
            Err(nix::errno::Errno::EINTR) => continue,
            r => return r.map_err(Errno::from),
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

/// `poll(fds, POLLIN, timeout_ms)`.
pub(super) fn poll(fds: &[BorrowedFd<'_>], timeout_ms: i32) -> Result<Vec<i16>, Errno> {
    use nix::poll::{PollFd, PollFlags, PollTimeout};
    let mut pfds: Vec<PollFd<'_>> = fds
        .iter()
        .map(|fd| PollFd::new(*fd, PollFlags::POLLIN))
        .collect();
    // Any negative timeout waits forever, as poll(2) does.
    let timeout = PollTimeout::try_from(timeout_ms).unwrap_or(PollTimeout::NONE);
    match nix::poll::poll(&mut pfds, timeout) {
        Ok(_) => {}
        Err(nix::errno::Errno::EINTR) => return Ok(vec![0; pfds.len()]),
        Err(e) => return Err(e.into()),
    }
    // The kernel reports only POLLIN (asked for) and POLLERR/POLLHUP/POLLNVAL, all of which
    // nix knows, so `revents()` is never `None` here.
    Ok(pfds
        .iter()
        .map(|p| p.revents().map_or(0, |r| r.bits()))
        .collect())
}

/// `clock_gettime(clock)` in nanoseconds (0 if the clock is unavailable).
pub(super) fn clock_ns(clock: Clock) -> u64 {
    let id = match clock {
        Clock::Monotonic => nix::time::ClockId::CLOCK_MONOTONIC,
        Clock::Realtime => nix::time::ClockId::CLOCK_REALTIME,
    };
    let Ok(ts) = nix::time::clock_gettime(id) else {
        return 0;
    };
    (ts.tv_sec() as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec() as u64)
}

/// The calling thread's id: `gettid(2)` (no `/proc` read, no allocation).
pub(super) fn gettid() -> i32 {
    nix::unistd::gettid().as_raw()
}

/// The calling thread's errno, right after a raw call failed.
fn last_errno() -> Errno {
    Errno(nix::errno::Errno::last_raw())
}
