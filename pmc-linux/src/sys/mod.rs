//! The only door to the OS, and the only module of pmc-linux that may use `unsafe`: the
//! [`Sys`] trait (system calls, ioctls, mmap, `/proc` and `/sys`), [`RealSys`] (the running
//! system) and, for tests, the fake kernel. Everything the layers above need from the OS comes
//! through [`Sys`], so all of it runs against the fake; the types [`Sys`]'s signatures use live
//! here or below, and this module imports nothing from the layers above it.
//!
//! # Safety
//!
//! Functions here take references, `BorrowedFd`s and slices, and return
//! `Result<_, Errno>`; each `unsafe` block names the user memory the kernel
//! reads or writes. Raw pointers never leave this module. Every call is libc's (or
//! perf-event-open-sys's for `perf_event_open` and the perf ioctls), each in one small
//! function here: a counting-only build needs no POSIX wrapper crate, and nix (3 s of a
//! cold build's 8) stays with what launches processes (pmc-process, feature `launch`).
//! The OS is chosen once, below: `linux.rs` is the kernel's
//! half of [`RealSys`], `unsupported.rs` answers `ENOSYS` elsewhere, so the backend's logic
//! still builds (and its pure parts still test) everywhere; the ring and rdpmc page mappings
//! are plain `mmap(2)` on any Unix (with no perf fd to map, they are never reached elsewhere).
#![allow(unsafe_code)]

cfg_if::cfg_if! {
    if #[cfg(target_os = "linux")] {
        mod linux;
        use linux as os;
    } else {
        mod unsupported;
        use unsupported as os;
    }
}

pub(crate) mod facts;
#[cfg(any(test, feature = "fake-kernel"))]
pub(crate) mod fake;
pub(crate) mod mmap;
pub use mmap::MmapRing;
pub(crate) mod rdpmc;
mod real;

pub use facts::Facts;
pub use real::RealSys;

use perf_event_open_sys::bindings::perf_event_attr;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::Arc;

/// The system as the counting and sampling code sees it: the perf_event calls on fds, and the
/// `/proc` and `/sys` facts they need. [`RealSys`] is the kernel; `FakeKernel` (feature
/// `fake-kernel`, and the crate's own unit tests) is a model of it that needs no privileges.
///
/// Descriptors are real `OwnedFd`s whatever the implementation (a fake hands out descriptors of
/// its own, e.g. pipes), so closing, duplicating and polling them keeps working; an
/// implementation keys its state by the raw fd number.
pub trait Sys: Send + Sync + std::fmt::Debug + 'static {
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
    /// As `MmapRing::new`.
    fn map_ring(&self, fd: BorrowedFd<'_>, data_pages: usize) -> std::io::Result<MmapRing>;
    /// `poll(fds, POLLIN, timeout_ms)`: waits until one of `fds` is readable (a perf ring passed
    /// its wakeup watermark, or the event hung up) or the timeout expires. Returns each fd's
    /// `revents`, in order; all zero on timeout or when interrupted by a signal.
    ///
    /// # Errors
    ///
    /// The call's errno.
    fn poll(&self, fds: &[BorrowedFd<'_>], timeout_ms: i32) -> Result<Vec<i16>, Errno>;
    /// `clock_gettime(clock)` in nanoseconds (0 if the clock is unavailable).
    fn clock_ns(&self, clock: Clock) -> u64;
    /// The thread ids of process `pid` (`/proc/<pid>/task`), in any order; `ESRCH` if there is
    /// no such process, else the errno of reading the directory (`EMFILE` with no descriptor
    /// left).
    fn thread_ids(&self, pid: u32) -> Result<Vec<i32>, Errno>;
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
    /// `getrlimit(resource)`: the soft limit, or `None` when unlimited or unknown.
    fn rlimit_soft(&self, resource: Rlimit) -> Option<u64>;
    /// The bytes of a `/proc`, `/sys` or tracefs file.
    ///
    /// # Errors
    ///
    /// As `std::fs::read`.
    fn read_file(&self, path: &Path) -> std::io::Result<Vec<u8>>;
    /// The names in a `/proc`, `/sys` or tracefs directory, in any order.
    ///
    /// # Errors
    ///
    /// As `std::fs::read_dir`.
    fn read_dir(&self, path: &Path) -> std::io::Result<Vec<String>>;
    /// Whether `path` is a directory, and its permission bits (symbolic links followed).
    ///
    /// # Errors
    ///
    /// As `std::fs::metadata`.
    fn metadata(&self, path: &Path) -> std::io::Result<FileMeta>;
    /// `open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)`: a control group's directory, whose fd
    /// is the `pid` of a cgroup event (`perf_event_open` with `PERF_FLAG_PID_CGROUP`).
    ///
    /// # Errors
    ///
    /// The call's errno (`ENOENT`, `ENOTDIR`, `EACCES`, ...).
    fn open_dir(&self, path: &Path) -> Result<OwnedFd, Errno>;
    /// `/proc/cpuinfo` (read once; empty if it cannot be read).
    fn cpuinfo(&self) -> Arc<str>;
    /// The address of `_stext` in `/proc/kallsyms` (an early line: the 100k-line file is not
    /// read to its end); `None` if unreadable, `Some(0)` when addresses are hidden
    /// (`kernel.kptr_restrict`).
    fn kernel_stext(&self) -> Option<u64>;
    /// The hypervisor's CPUID vendor signature (leaf `0x4000_0000`, `KVMKVMKVM`), when
    /// the CPU says it runs under one; `None` on bare metal, off x86_64, and by default.
    fn hypervisor_signature(&self) -> Option<[u8; 12]> {
        None
    }
}

/// A [`Sys`] shared between a backend and the test driving it.
impl<T: Sys + ?Sized> Sys for Arc<T> {
    #[inline]
    fn perf_event_open(
        &self,
        attr: &mut perf_event_attr,
        pid: i32,
        cpu: i32,
        group: Option<BorrowedFd<'_>>,
        flags: u64,
    ) -> Result<OwnedFd, Errno> {
        (**self).perf_event_open(attr, pid, cpu, group, flags)
    }
    #[inline]
    fn ioctl(&self, fd: BorrowedFd<'_>, op: Ioctl) -> Result<(), Errno> {
        (**self).ioctl(fd, op)
    }
    #[inline]
    fn read(&self, fd: BorrowedFd<'_>, buf: &mut [u8]) -> Result<usize, Errno> {
        (**self).read(fd, buf)
    }
    #[inline]
    fn event_id(&self, fd: BorrowedFd<'_>) -> Result<u64, Errno> {
        (**self).event_id(fd)
    }
    fn map_ring(&self, fd: BorrowedFd<'_>, data_pages: usize) -> std::io::Result<MmapRing> {
        (**self).map_ring(fd, data_pages)
    }
    fn poll(&self, fds: &[BorrowedFd<'_>], timeout_ms: i32) -> Result<Vec<i16>, Errno> {
        (**self).poll(fds, timeout_ms)
    }
    fn clock_ns(&self, clock: Clock) -> u64 {
        (**self).clock_ns(clock)
    }
    fn thread_ids(&self, pid: u32) -> Result<Vec<i32>, Errno> {
        (**self).thread_ids(pid)
    }
    fn thread_exiting(&self, tid: i32) -> bool {
        (**self).thread_exiting(tid)
    }
    fn process_alive(&self, pid: u32) -> bool {
        (**self).process_alive(pid)
    }
    fn gettid(&self) -> i32 {
        (**self).gettid()
    }
    fn getpid(&self) -> u32 {
        (**self).getpid()
    }
    fn page_size(&self) -> usize {
        (**self).page_size()
    }
    fn online_cpus(&self) -> Vec<u32> {
        (**self).online_cpus()
    }
    fn facts(&self) -> Facts {
        (**self).facts()
    }
    fn rlimit_soft(&self, resource: Rlimit) -> Option<u64> {
        (**self).rlimit_soft(resource)
    }
    fn read_file(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        (**self).read_file(path)
    }
    fn read_dir(&self, path: &Path) -> std::io::Result<Vec<String>> {
        (**self).read_dir(path)
    }
    fn metadata(&self, path: &Path) -> std::io::Result<FileMeta> {
        (**self).metadata(path)
    }
    fn open_dir(&self, path: &Path) -> Result<OwnedFd, Errno> {
        (**self).open_dir(path)
    }
    fn cpuinfo(&self) -> Arc<str> {
        (**self).cpuinfo()
    }
    fn kernel_stext(&self) -> Option<u64> {
        (**self).kernel_stext()
    }
    fn hypervisor_signature(&self) -> Option<[u8; 12]> {
        (**self).hypervisor_signature()
    }
}

pub(crate) use crate::errno::Errno;

/// Whether this system has perf_event (Linux).
pub(crate) const HAVE_PERF_EVENT: bool = os::HAVE_PERF_EVENT;

/// The clocks [`Sys::clock_ns`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// `CLOCK_MONOTONIC`: the clock of every timestamp in the log.
    Monotonic,
    /// `CLOCK_REALTIME`: the wall clock.
    Realtime,
}

/// What [`Sys::metadata`] tells of a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileMeta {
    /// It is a directory.
    pub is_dir: bool,
    /// Its permission bits (`st_mode & 07777`).
    pub mode: u32,
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

/// The resource limits the error messages name.
#[derive(Debug, Clone, Copy)]
pub enum Rlimit {
    /// `RLIMIT_NOFILE`.
    NoFile,
    /// `RLIMIT_MEMLOCK`.
    MemLock,
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

/// The address of `_stext` among `/proc/kallsyms` lines (`addr type name`), reading no
/// further than its line.
fn stext_in(lines: impl Iterator<Item = String>) -> Option<u64> {
    lines.into_iter().find_map(|line| {
        let mut f = line.split_whitespace();
        let (addr, _, name) = (f.next()?, f.next()?, f.next()?);
        (name == "_stext").then(|| u64::from_str_radix(addr, 16).ok())?
    })
}

/// The page size (`sysconf(_SC_PAGESIZE)`), 4096 if it cannot be read.
fn page_size() -> usize {
    usize::try_from(sysconf_page_size())
        .ok()
        .filter(|p| p.is_power_of_two())
        .unwrap_or(4096)
}

/// `sysconf(_SC_PAGESIZE)` as returned, -1 when it fails.
fn sysconf_page_size() -> libc::c_long {
    // SAFETY: sysconf takes an integer and touches no memory.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) }
}

/// The calling thread's errno, right after a raw call failed.
fn last_errno() -> Errno {
    Errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
}

/// `mmap(NULL, len, PROT_READ [| PROT_WRITE], MAP_SHARED, fd, 0)`: a fresh shared mapping of
/// `fd` (a perf ring with its control page, or the control page alone for rdpmc).
fn mmap_shared(
    fd: BorrowedFd<'_>,
    len: std::num::NonZeroUsize,
    writable: bool,
) -> Result<std::ptr::NonNull<u8>, Errno> {
    use std::os::fd::AsRawFd;
    let prot = if writable {
        libc::PROT_READ | libc::PROT_WRITE
    } else {
        libc::PROT_READ
    };
    // SAFETY: a fresh mapping at an address the kernel chooses (NULL hint, no MAP_FIXED), so it
    // aliases no existing memory; the kernel validates fd, length and offset.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len.get(),
            prot,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(last_errno());
    }
    std::ptr::NonNull::new(p.cast::<u8>()).ok_or(Errno(crate::errno::EINVAL))
}

/// `munmap(base, len)`.
///
/// # Safety
///
/// `base`/`len` are exactly a mapping [`mmap_shared`] returned, not yet unmapped, and no
/// reference into it outlives this call.
unsafe fn munmap(base: std::ptr::NonNull<u8>, len: usize) {
    // SAFETY: the caller's contract above; munmap of a whole live mapping cannot fail.
    unsafe { libc::munmap(base.as_ptr().cast(), len) };
}

/// The integer unions of `perf_event_attr`: (`sample_period`/`sample_freq`,
/// `config1`, `config2`).
pub(crate) fn attr_unions(attr: &perf_event_attr) -> (u64, u64, u64) {
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
