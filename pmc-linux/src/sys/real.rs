//! [`RealSys`]: the running system. The perf_event calls come from the OS's file
//! (`linux.rs`, or `unsupported.rs` answering `ENOSYS`); `/proc` and `/sys` are files on any
//! Unix.

use crate::errno;
use perf_event_open_sys::bindings::perf_event_attr;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::Path;

use super::mmap::MmapRing;
use super::{os, Clock, Errno, Facts, FileMeta, Ioctl, Rlimit, Sys};

/// The kernel: [`Sys`] over the real system calls, `/proc` and `/sys`.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealSys;

impl Sys for RealSys {
    #[inline]
    fn perf_event_open(
        &self,
        attr: &mut perf_event_attr,
        pid: i32,
        cpu: i32,
        group: Option<BorrowedFd<'_>>,
        flags: u64,
    ) -> Result<OwnedFd, Errno> {
        os::perf_event_open(attr, pid, cpu, group, flags)
    }
    #[inline]
    fn ioctl(&self, fd: BorrowedFd<'_>, op: Ioctl) -> Result<(), Errno> {
        os::ioctl(fd, op)
    }
    #[inline]
    fn read(&self, fd: BorrowedFd<'_>, buf: &mut [u8]) -> Result<usize, Errno> {
        os::read(fd, buf)
    }
    #[inline]
    fn event_id(&self, fd: BorrowedFd<'_>) -> Result<u64, Errno> {
        os::event_id(fd)
    }
    fn map_ring(&self, fd: BorrowedFd<'_>, data_pages: usize) -> std::io::Result<MmapRing> {
        MmapRing::new(fd, data_pages)
    }
    fn poll(&self, fds: &[BorrowedFd<'_>], timeout_ms: i32) -> Result<Vec<i16>, Errno> {
        os::poll(fds, timeout_ms)
    }
    fn clock_ns(&self, clock: Clock) -> u64 {
        os::clock_ns(clock)
    }
    fn thread_ids(&self, pid: u32) -> Result<Vec<i32>, Errno> {
        let rd = std::fs::read_dir(format!("/proc/{pid}/task")).map_err(|e| {
            Errno(match e.raw_os_error() {
                Some(errno::ENOENT) | None => errno::ESRCH,
                Some(n) => n,
            })
        })?;
        Ok(rd
            .flatten()
            .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
            .collect())
    }
    fn thread_exiting(&self, tid: i32) -> bool {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{tid}/stat")) else {
            return true;
        };
        super::stat_exiting(&stat)
    }
    fn process_alive(&self, pid: u32) -> bool {
        pmc_process::process::exists(pid)
    }
    fn gettid(&self) -> i32 {
        os::gettid()
    }
    fn getpid(&self) -> u32 {
        std::process::id()
    }
    fn page_size(&self) -> usize {
        super::page_size()
    }
    fn online_cpus(&self) -> Vec<u32> {
        super::facts::online_cpus(self)
    }
    fn facts(&self) -> Facts {
        Facts::probe(self)
    }
    fn rlimit_soft(&self, resource: Rlimit) -> Option<u64> {
        let res = match resource {
            Rlimit::NoFile => libc::RLIMIT_NOFILE,
            #[cfg(not(target_vendor = "apple"))]
            Rlimit::MemLock => libc::RLIMIT_MEMLOCK,
            // perf_event's locked-memory limit means nothing on Apple systems.
            #[cfg(target_vendor = "apple")]
            Rlimit::MemLock => return None,
        };
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: the kernel writes one rlimit into the live local `lim`.
        let rc = unsafe { libc::getrlimit(res, &mut lim) };
        // rlim_t is u64 on Linux but i64 on FreeBSD.
        #[allow(clippy::unnecessary_cast)]
        (rc == 0 && lim.rlim_cur != libc::RLIM_INFINITY).then_some(lim.rlim_cur as u64)
    }
    fn read_file(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        std::fs::read(path)
    }
    fn read_dir(&self, path: &Path) -> std::io::Result<Vec<String>> {
        Ok(std::fs::read_dir(path)?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect())
    }
    fn metadata(&self, path: &Path) -> std::io::Result<FileMeta> {
        use std::os::unix::fs::PermissionsExt;
        let m = std::fs::metadata(path)?;
        Ok(FileMeta {
            is_dir: m.is_dir(),
            mode: m.permissions().mode() & 0o7777,
        })
    }
    fn open_dir(&self, path: &Path) -> Result<OwnedFd, Errno> {
        use std::os::unix::fs::OpenOptionsExt;
        // std opens with O_CLOEXEC; O_DIRECTORY refuses anything but a directory (ENOTDIR).
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY)
            .open(path)
            .map(OwnedFd::from)
            .map_err(|e| Errno(e.raw_os_error().unwrap_or(errno::EIO)))
    }
    fn cpuinfo(&self) -> std::sync::Arc<str> {
        static CPUINFO: std::sync::OnceLock<std::sync::Arc<str>> = std::sync::OnceLock::new();
        CPUINFO
            .get_or_init(|| {
                std::fs::read_to_string("/proc/cpuinfo")
                    .unwrap_or_default()
                    .into()
            })
            .clone()
    }
    fn hypervisor_signature(&self) -> Option<[u8; 12]> {
        pmc_events::sys::hypervisor_signature()
    }
    fn kernel_stext(&self) -> Option<u64> {
        use std::io::BufRead;
        let file = std::fs::File::open("/proc/kallsyms").ok()?;
        super::stext_in(std::io::BufReader::new(file).lines().map_while(|l| l.ok()))
    }
}
