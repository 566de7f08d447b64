//! The only module of pmc-linux that may use `unsafe`: the system calls.
//!
//! # Safety
//!
//! Functions here take references, `BorrowedFd`s and slices, and return
//! `Result<_, Errno>`; each `unsafe` block names the user memory the kernel
//! reads or writes. Raw pointers never leave this module. The POSIX calls
//! (`read`, `poll`, `clock_gettime`, `sysconf`, `getrlimit`, `mmap`) go
//! through nix's wrappers; only `perf_event_open` and the perf ioctls, which
//! nix does not wrap, are raw. On systems other
//! than Linux every call fails with `ENOSYS`, so the backend's logic still
//! builds (and its pure parts still test) everywhere; the ring and rdpmc page
//! mappings are plain `mmap(2)` on any Unix (with no perf fd to map, they are
//! never reached elsewhere). This is the only place in pmc-linux that chooses
//! by OS.
#![allow(unsafe_code)]

#[cfg(any(test, feature = "fake-kernel"))]
pub mod fake;
pub(crate) mod mmap;
pub(crate) mod rdpmc;

use perf_event_open_sys::bindings::perf_event_attr;
use std::os::fd::{BorrowedFd, OwnedFd};

use crate::errno_map::Facts;
use mmap::MmapRing;

/// The system as the counting and sampling code sees it: the perf_event calls on fds, and the
/// `/proc` and `/sys` facts they need. [`RealSys`] is the kernel; `FakeKernel` (feature
/// `fake-kernel`, and the crate's own unit tests) is a model of it that needs no privileges.
///
/// Descriptors are real `OwnedFd`s whatever the implementation (a fake hands out descriptors of
/// its own, e.g. pipes), so closing, duplicating and polling them keeps working; an
/// implementation keys its state by the raw fd number.
#[doc(hidden)]
pub trait Sys: Send + Sync + std::fmt::Debug {
    /// `perf_event_open(attr, pid, cpu, group_fd, flags | PERF_FLAG_FD_CLOEXEC)`.
    ///
    /// # Errors
    ///
    /// The call's errno.
    fn perf_event_open(
        &self,
        attr: &mut perf_event_attr,
        pid: i32,
        cpu: i32,
        group: Option<BorrowedFd<'_>>,
        flags: u64,
    ) -> Result<OwnedFd, Errno>;
    /// `ioctl(fd, PERF_EVENT_IOC_*, arg)`.
    ///
    /// # Errors
    ///
    /// The call's errno.
    fn ioctl(&self, fd: BorrowedFd<'_>, op: Ioctl) -> Result<(), Errno>;
    /// `read(fd, buf)`: one `read_format` block.
    ///
    /// # Errors
    ///
    /// The call's errno.
    fn read(&self, fd: BorrowedFd<'_>, buf: &mut [u8]) -> Result<usize, Errno>;
    /// `PERF_EVENT_IOC_ID`.
    ///
    /// # Errors
    ///
    /// The call's errno.
    fn event_id(&self, fd: BorrowedFd<'_>) -> Result<u64, Errno>;
    /// Maps the ring buffer of `fd`: one control page and `data_pages` data pages.
    ///
    /// # Errors
    ///
    /// As [`MmapRing::new`].
    fn map_ring(&self, fd: BorrowedFd<'_>, data_pages: usize) -> std::io::Result<MmapRing>;
    /// The thread ids of process `pid` (`/proc/<pid>/task`), in any order; `None` if there is
    /// no such process.
    fn thread_ids(&self, pid: u32) -> Option<Vec<i32>>;
    /// Whether thread `tid` has gone or is exiting.
    fn thread_exiting(&self, tid: i32) -> bool;
    /// Whether process `pid` still exists (a zombie counts as existing).
    fn process_alive(&self, pid: u32) -> bool;
    /// The calling thread's id.
    fn gettid(&self) -> i32;
    /// The calling process's id.
    fn getpid(&self) -> u32;
    /// The page size.
    fn page_size(&self) -> usize;
    /// The online CPUs.
    fn online_cpus(&self) -> Vec<u32>;
    /// The machine's facts the error messages and attr defaults depend on.
    fn facts(&self) -> Facts;
}

/// The kernel: [`Sys`] over the real system calls and `/proc`.
/// The backend's handle on the kernel: the real one called directly (a `match`, no vtable:
/// the read path is a `read(2)` plus a few instructions, and an indirect call costs a
/// measurable share of it), or any other [`Sys`] (the fake kernel in tests) through its
/// trait object.
#[derive(Debug, Clone)]
pub(crate) enum SysHandle {
    /// The kernel.
    Real(RealSys),
    /// A stand-in.
    Other(std::sync::Arc<dyn Sys>),
}

macro_rules! dispatch {
    ($self:ident, $s:ident => $e:expr) => {
        match $self {
            SysHandle::Real($s) => $e,
            SysHandle::Other(a) => {
                let $s = &**a;
                $e
            }
        }
    };
}

impl Sys for SysHandle {
    #[inline]
    fn perf_event_open(
        &self,
        attr: &mut perf_event_attr,
        pid: i32,
        cpu: i32,
        group: Option<BorrowedFd<'_>>,
        flags: u64,
    ) -> Result<OwnedFd, Errno> {
        dispatch!(self, s => s.perf_event_open(attr, pid, cpu, group, flags))
    }
    #[inline]
    fn ioctl(&self, fd: BorrowedFd<'_>, op: Ioctl) -> Result<(), Errno> {
        dispatch!(self, s => s.ioctl(fd, op))
    }
    #[inline]
    fn read(&self, fd: BorrowedFd<'_>, buf: &mut [u8]) -> Result<usize, Errno> {
        dispatch!(self, s => s.read(fd, buf))
    }
    #[inline]
    fn event_id(&self, fd: BorrowedFd<'_>) -> Result<u64, Errno> {
        dispatch!(self, s => s.event_id(fd))
    }
    fn map_ring(&self, fd: BorrowedFd<'_>, data_pages: usize) -> std::io::Result<MmapRing> {
        dispatch!(self, s => s.map_ring(fd, data_pages))
    }
    fn thread_ids(&self, pid: u32) -> Option<Vec<i32>> {
        dispatch!(self, s => s.thread_ids(pid))
    }
    fn thread_exiting(&self, tid: i32) -> bool {
        dispatch!(self, s => s.thread_exiting(tid))
    }
    fn process_alive(&self, pid: u32) -> bool {
        dispatch!(self, s => s.process_alive(pid))
    }
    fn gettid(&self) -> i32 {
        dispatch!(self, s => s.gettid())
    }
    fn getpid(&self) -> u32 {
        dispatch!(self, s => s.getpid())
    }
    fn page_size(&self) -> usize {
        dispatch!(self, s => s.page_size())
    }
    fn online_cpus(&self) -> Vec<u32> {
        dispatch!(self, s => s.online_cpus())
    }
    fn facts(&self) -> Facts {
        dispatch!(self, s => s.facts())
    }
}

#[doc(hidden)]
#[derive(Debug, Clone, Copy, Default)]
pub struct RealSys;

impl Sys for RealSys {
    fn perf_event_open(
        &self,
        attr: &mut perf_event_attr,
        pid: i32,
        cpu: i32,
        group: Option<BorrowedFd<'_>>,
        flags: u64,
    ) -> Result<OwnedFd, Errno> {
        perf_event_open_flags(attr, pid, cpu, group, flags)
    }
    fn ioctl(&self, fd: BorrowedFd<'_>, op: Ioctl) -> Result<(), Errno> {
        ioctl(fd, op)
    }
    fn read(&self, fd: BorrowedFd<'_>, buf: &mut [u8]) -> Result<usize, Errno> {
        read(fd, buf)
    }
    fn event_id(&self, fd: BorrowedFd<'_>) -> Result<u64, Errno> {
        event_id(fd)
    }
    fn map_ring(&self, fd: BorrowedFd<'_>, data_pages: usize) -> std::io::Result<MmapRing> {
        MmapRing::new(fd, data_pages)
    }
    fn thread_ids(&self, pid: u32) -> Option<Vec<i32>> {
        let rd = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
        Some(
            rd.flatten()
                .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
                .collect(),
        )
    }
    fn thread_exiting(&self, tid: i32) -> bool {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{tid}/stat")) else {
            return true;
        };
        stat_exiting(&stat)
    }
    fn process_alive(&self, pid: u32) -> bool {
        pmc_process::process::exists(pid)
    }
    fn gettid(&self) -> i32 {
        gettid()
    }
    fn getpid(&self) -> u32 {
        std::process::id()
    }
    fn page_size(&self) -> usize {
        page_size()
    }
    fn online_cpus(&self) -> Vec<u32> {
        crate::env::online_cpus()
    }
    fn facts(&self) -> Facts {
        Facts::probe()
    }
}

/// Whether a `/proc/<tid>/stat` line says the thread is a zombie, dead, or `PF_EXITING` (0x4 in
/// its flags).
pub(crate) fn stat_exiting(stat: &str) -> bool {
    // The fields after the command name, which is in parentheses and may contain anything.
    let Some(rest) = stat.rfind(')').and_then(|i| stat.get(i + 1..)) else {
        return false;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first().copied().unwrap_or("");
    // Field 9 of stat (flags) is the 7th after the state.
    let flags: u64 = fields.get(6).and_then(|f| f.parse().ok()).unwrap_or(0);
    matches!(state, "Z" | "X" | "x") || flags & 0x4 != 0
}

/// The calling thread's id: `gettid(2)` (no `/proc` read, no allocation).
#[cfg(target_os = "linux")]
fn gettid() -> i32 {
    nix::unistd::gettid().as_raw()
}

/// No threads to name elsewhere (the perf calls all fail with `ENOSYS` there).
#[cfg(not(target_os = "linux"))]
fn gettid() -> i32 {
    0
}

/// A raw OS error number.
pub type Errno = i32;

/// Whether this system has perf_event (Linux).
pub(crate) const HAVE_PERF_EVENT: bool = cfg!(target_os = "linux");

/// `perf_event_open(attr, pid, cpu, group_fd, PERF_FLAG_FD_CLOEXEC)`—Opens one
/// counter, close-on-exec.
pub fn perf_event_open(
    attr: &mut perf_event_attr,
    pid: i32,
    cpu: i32,
    group: Option<BorrowedFd<'_>>,
) -> Result<OwnedFd, Errno> {
    perf_event_open_flags(attr, pid, cpu, group, 0)
}

/// `perf_event_open(attr, pid, cpu, group_fd, flags | PERF_FLAG_FD_CLOEXEC)`.
#[cfg(target_os = "linux")]
fn perf_event_open_flags(
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

/// The perf_event ioctls the counting backend uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ioctl {
    /// `PERF_EVENT_IOC_ENABLE`, with `PERF_IOC_FLAG_GROUP` if `true`.
    Enable(bool),
    /// `PERF_EVENT_IOC_DISABLE`, with `PERF_IOC_FLAG_GROUP` if `true`.
    Disable(bool),
    /// `PERF_EVENT_IOC_RESET`, with `PERF_IOC_FLAG_GROUP` if `true`.
    Reset(bool),
    /// `PERF_EVENT_IOC_PERIOD`: a new sampling period.
    Period(u64),
    /// `PERF_EVENT_IOC_SET_OUTPUT`: send this event's records to the ring buffer of the event
    /// whose fd is given (same CPU, or same task for per-task events; the kernel checks).
    SetOutput(i32),
}

/// `ioctl(fd, PERF_EVENT_IOC_*, arg)`.
#[cfg(target_os = "linux")]
pub fn ioctl(fd: BorrowedFd<'_>, op: Ioctl) -> Result<(), Errno> {
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

/// `read(fd, buf)`—one read of a counter's `read_format` block.
#[cfg(target_os = "linux")]
pub fn read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> Result<usize, Errno> {
    loop {
        match nix::unistd::read(fd, buf) {
            Err(nix::errno::Errno::EINTR) => continue,
            r => return r.map_err(|e| e as Errno),
        }
    }
}

/// `PERF_EVENT_IOC_ID`: the kernel's id of the event behind `fd` (what `PERF_SAMPLE_IDENTIFIER`
/// and `PERF_FORMAT_ID` report).
#[cfg(target_os = "linux")]
pub fn event_id(fd: BorrowedFd<'_>) -> Result<u64, Errno> {
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

/// `poll(fds, POLLIN, timeout_ms)`: waits until one of `fds` is readable (a perf ring passed its
/// wakeup watermark, or the event hung up) or the timeout expires. Returns each fd's `revents`,
/// in order; all zero on timeout or when interrupted by a signal.
#[cfg(target_os = "linux")]
pub fn poll(fds: &[BorrowedFd<'_>], timeout_ms: i32) -> Result<Vec<i16>, Errno> {
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
        Err(e) => return Err(e as Errno),
    }
    // The kernel reports only POLLIN (asked for) and POLLERR/POLLHUP/POLLNVAL, all of which
    // nix knows, so `revents()` is never `None` here.
    Ok(pfds
        .iter()
        .map(|p| p.revents().map_or(0, |r| r.bits()))
        .collect())
}

/// `clock_gettime(clock)` in nanoseconds (0 if the clock is unavailable).
#[cfg(target_os = "linux")]
pub fn clock_ns(clock: libc::clockid_t) -> u64 {
    let Ok(ts) = nix::time::clock_gettime(nix::time::ClockId::from_raw(clock)) else {
        return 0;
    };
    (ts.tv_sec() as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec() as u64)
}

/// The page size (`sysconf(_SC_PAGESIZE)`), 4096 if it cannot be read.
pub fn page_size() -> usize {
    usize::try_from(sysconf_page_size())
        .ok()
        .filter(|p| p.is_power_of_two())
        .unwrap_or(4096)
}

/// `sysconf(_SC_PAGESIZE)` as returned, -1 when it fails.
fn sysconf_page_size() -> libc::c_long {
    nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .unwrap_or(-1)
}

/// The calling thread's errno, right after a raw call failed.
#[cfg(target_os = "linux")]
fn last_errno() -> Errno {
    nix::errno::Errno::last_raw()
}

/// `perf_event_open` elsewhere: `ENOSYS`.
#[cfg(not(target_os = "linux"))]
fn perf_event_open_flags(
    _attr: &mut perf_event_attr,
    _pid: i32,
    _cpu: i32,
    _group: Option<BorrowedFd<'_>>,
    _flags: u64,
) -> Result<OwnedFd, Errno> {
    Err(libc::ENOSYS)
}

/// `ioctl` elsewhere: `ENOSYS`.
#[cfg(not(target_os = "linux"))]
pub fn ioctl(_fd: BorrowedFd<'_>, _op: Ioctl) -> Result<(), Errno> {
    Err(libc::ENOSYS)
}

/// `PERF_EVENT_IOC_ID` elsewhere: `ENOSYS`.
#[cfg(not(target_os = "linux"))]
pub fn event_id(_fd: BorrowedFd<'_>) -> Result<u64, Errno> {
    Err(libc::ENOSYS)
}

/// `poll` elsewhere: `ENOSYS`.
#[cfg(not(target_os = "linux"))]
pub fn poll(_fds: &[BorrowedFd<'_>], _timeout_ms: i32) -> Result<Vec<i16>, Errno> {
    Err(libc::ENOSYS)
}

/// `clock_gettime` elsewhere: 0.
#[cfg(not(target_os = "linux"))]
pub fn clock_ns(_clock: i32) -> u64 {
    0
}

/// `read` elsewhere: `ENOSYS`.
#[cfg(not(target_os = "linux"))]
pub fn read(_fd: BorrowedFd<'_>, _buf: &mut [u8]) -> Result<usize, Errno> {
    Err(libc::ENOSYS)
}

/// The process's effective capabilities from `/proc/self/status` (`CapEff`).
pub fn effective_caps() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("CapEff:"))?;
    u64::from_str_radix(line.trim_start_matches("CapEff:").trim(), 16).ok()
}

/// `getrlimit(resource)`: the soft limit, or `None` when unlimited or unknown.
pub fn rlimit_soft(resource: Rlimit) -> Option<u64> {
    use nix::sys::resource::{getrlimit, Resource, RLIM_INFINITY};
    let res = match resource {
        Rlimit::NoFile => Resource::RLIMIT_NOFILE,
        #[cfg(not(target_vendor = "apple"))]
        Rlimit::MemLock => Resource::RLIMIT_MEMLOCK,
        // nix has no RLIMIT_MEMLOCK on Apple systems, where perf_event's locked-memory
        // limit means nothing anyway.
        #[cfg(target_vendor = "apple")]
        Rlimit::MemLock => return None,
    };
    let (cur, _max) = getrlimit(res).ok()?;
    // rlim_t is u64 on Linux but i64 on FreeBSD.
    #[allow(clippy::unnecessary_cast)]
    (cur != RLIM_INFINITY).then_some(cur as u64)
}

/// The resource limits the error messages name.
#[derive(Debug, Clone, Copy)]
pub enum Rlimit {
    /// `RLIMIT_NOFILE`.
    NoFile,
    /// `RLIMIT_MEMLOCK`.
    MemLock,
}

/// The integer unions of `perf_event_attr`: (`sample_period`/`sample_freq`,
/// `config1`, `config2`).
pub fn attr_unions(attr: &perf_event_attr) -> (u64, u64, u64) {
    // SAFETY: every variant of these unions is a plain u64 (bindgen unions of
    // `__u64`s), so reading any of them reads initialized integer bytes.
    unsafe {
        (
            attr.__bindgen_anon_1.sample_period,
            attr.__bindgen_anon_3.config1,
            attr.__bindgen_anon_4.config2,
        )
    }
}
