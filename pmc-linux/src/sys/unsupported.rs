//! [`RealSys`](super::RealSys) on systems without perf_event: every perf call fails with
//! `ENOSYS`, so the backend's logic still builds (and its pure parts still test) everywhere.

use crate::errno;
use perf_event_open_sys::bindings::perf_event_attr;
use std::os::fd::{BorrowedFd, OwnedFd};

use super::{Clock, Errno, Ioctl};

/// This system has no perf_event.
pub(super) const HAVE_PERF_EVENT: bool = false;

/// `perf_event_open`: `ENOSYS`.
pub(super) fn perf_event_open(
    _attr: &mut perf_event_attr,
    _pid: i32,
    _cpu: i32,
    _group: Option<BorrowedFd<'_>>,
    _flags: u64,
) -> Result<OwnedFd, Errno> {
    Err(Errno(errno::ENOSYS))
}

/// `ioctl`: `ENOSYS`.
pub(super) fn ioctl(_fd: BorrowedFd<'_>, _op: Ioctl) -> Result<(), Errno> {
    Err(Errno(errno::ENOSYS))
}

/// `read`: `ENOSYS`.
pub(super) fn read(_fd: BorrowedFd<'_>, _buf: &mut [u8]) -> Result<usize, Errno> {
    Err(Errno(errno::ENOSYS))
}

/// `PERF_EVENT_IOC_ID`: `ENOSYS`.
pub(super) fn event_id(_fd: BorrowedFd<'_>) -> Result<u64, Errno> {
    Err(Errno(errno::ENOSYS))
}

/// `poll`: `ENOSYS`.
pub(super) fn poll(_fds: &[BorrowedFd<'_>], _timeout_ms: i32) -> Result<Vec<i16>, Errno> {
    Err(Errno(errno::ENOSYS))
}

/// `clock_gettime`: 0.
pub(super) fn clock_ns(_clock: Clock) -> u64 {
    0
}

/// No threads to name (the perf calls all fail with `ENOSYS`).
pub(super) fn gettid() -> i32 {
    0
}
