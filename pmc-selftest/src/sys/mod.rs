//! The self-test's contact with the machine: an instruction loop of known
//! length (inline assembly), freshly mapped pages, the thread's CPU clock and
//! its CPU affinity, and the native backend's own check (`fast_read.rs`:
//! Linux's user-space reads). The only `unsafe` of the crate lives here, and
//! every choice by OS.

#[cfg(target_os = "linux")]
mod fast_read;

/// The native backend's user-space read check, where it has one (Linux).
pub(crate) fn native_user_reads() -> Option<crate::UserReadProbe> {
    #[cfg(target_os = "linux")]
    return Some(fast_read::probe);
    #[cfg(not(target_os = "linux"))]
    None
}

/// Whether [`insn_loop`] is exact on this architecture (x86_64, aarch64).
pub(crate) const EXACT_LOOP: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

/// Runs exactly `2 * n` user instructions of loop body, `n` of them taken or
/// final branches, plus a constant few (a compare-and-branch before the loop,
/// the call and return): the self-test's workload of known length, and the
/// hardware tests' (pmc-tests, `pmc-workload insns N`). aarch64: `subs x, x,
/// #1; b.ne`; x86_64: `dec; jnz`. Elsewhere a plain loop whose count is not
/// known.
///
/// ```
/// // Two runs differ by exactly 2 * 1000 instructions:u on x86_64 and aarch64.
/// pmc_selftest::insn_loop(0);
/// pmc_selftest::insn_loop(1000);
/// ```
#[inline(never)]
pub fn insn_loop(n: u64) {
    #[cfg(target_arch = "aarch64")]
    // SAFETY: register-only arithmetic and branches inside the asm block; no
    // memory, no stack; the flags are declared clobbered by default.
    unsafe {
        std::arch::asm!(
            "cbz {n}, 3f",
            "2:",
            "subs {n}, {n}, #1",
            "b.ne 2b",
            "3:",
            n = inout(reg) n => _,
            options(nomem, nostack),
        );
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: as above: registers and branches only.
    unsafe {
        std::arch::asm!(
            "test {n}, {n}",
            "jz 3f",
            "2:",
            "dec {n}",
            "jnz 2b",
            "3:",
            n = inout(reg) n => _,
            options(nomem, nostack),
        );
    }
    #[cfg(not(any(target_arch = "aarch64", target_arch = "x86_64")))]
    {
        let mut i = 0u64;
        while std::hint::black_box(i) < n {
            i += 1;
        }
    }
}

/// What [`touch_fresh_pages`] did.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Touched {
    /// Pages written, one byte each.
    pub pages: u64,
    /// Whether `MADV_NOHUGEPAGE` was applied (each page then faults once).
    pub no_huge_pages: bool,
}

/// Maps `pages` fresh anonymous pages, asks for no transparent huge pages,
/// writes one byte to each (one page fault each), and unmaps them.
#[cfg(unix)]
pub(crate) fn touch_fresh_pages(pages: usize) -> std::io::Result<Touched> {
    use nix::sys::mman::{mmap_anonymous, munmap, MapFlags, ProtFlags};
    use std::num::NonZeroUsize;
    let page = page_size();
    let len = pages
        .checked_mul(page)
        .and_then(NonZeroUsize::new)
        .ok_or_else(|| std::io::Error::other("no pages to touch"))?;
    // SAFETY: a new private anonymous mapping at an address the kernel picks;
    // it aliases no Rust object.
    let map = unsafe {
        mmap_anonymous(
            None,
            len,
            ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
            MapFlags::MAP_PRIVATE,
        )
    }?;
    let no_huge_pages = no_huge_pages(map, len.get());
    let base = map.cast::<u8>();
    for i in 0..pages {
        // SAFETY: `i * page < len`, inside the mapping made above, which is
        // readable and writable and not referenced elsewhere.
        unsafe { base.as_ptr().add(i * page).write_volatile(1) };
    }
    // SAFETY: the mapping made above, with its length; no reference into it
    // outlives this call.
    unsafe { munmap(map, len.get()) }?;
    Ok(Touched {
        pages: pages as u64,
        no_huge_pages,
    })
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn no_huge_pages(map: std::ptr::NonNull<std::ffi::c_void>, len: usize) -> bool {
    use nix::sys::mman::{madvise, MmapAdvise};
    // SAFETY: advice on the whole of a mapping this module owns; NOHUGEPAGE
    // changes no contents.
    unsafe { madvise(map, len, MmapAdvise::MADV_NOHUGEPAGE) }.is_ok()
}

#[cfg(all(unix, not(any(target_os = "linux", target_os = "android"))))]
fn no_huge_pages(_map: std::ptr::NonNull<std::ffi::c_void>, _len: usize) -> bool {
    // FreeBSD promotes to superpages only fully populated, aligned 2 MiB
    // runs; the self-test touches far fewer pages than that.
    true
}

/// Elsewhere: no pages.
#[cfg(not(unix))]
pub(crate) fn touch_fresh_pages(_pages: usize) -> std::io::Result<Touched> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "no anonymous mappings on this OS",
    ))
}

/// The page size (4096 when it cannot be read).
pub(crate) fn page_size() -> usize {
    #[cfg(unix)]
    {
        use nix::unistd::{sysconf, SysconfVar};
        if let Ok(Some(n)) = sysconf(SysconfVar::PAGE_SIZE) {
            if let Ok(n) = usize::try_from(n) {
                if n > 0 {
                    return n;
                }
            }
        }
    }
    4096
}

/// The calling thread's CPU time in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`).
pub(crate) fn thread_cpu_ns() -> Option<u64> {
    #[cfg(unix)]
    {
        use nix::time::{clock_gettime, ClockId};
        let t = clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).ok()?;
        let s = u64::try_from(t.tv_sec()).ok()?;
        let ns = u64::try_from(t.tv_nsec()).ok()?;
        return s.checked_mul(1_000_000_000)?.checked_add(ns);
    }
    #[allow(unreachable_code)]
    None
}

/// The CPUs the calling thread may run on, or `None` where affinity cannot
/// be set (then migrations cannot be forced).
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn allowed_cpus() -> Option<Vec<usize>> {
    use nix::sched::{sched_getaffinity, CpuSet};
    use nix::unistd::Pid;
    let set = sched_getaffinity(Pid::from_raw(0)).ok()?;
    Some(
        (0..CpuSet::count())
            .filter(|&c| set.is_set(c).unwrap_or(false))
            .collect(),
    )
}

/// Moves the calling thread onto exactly these CPUs (the kernel migrates it
/// before the call returns when it is running elsewhere).
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn set_affinity(cpus: &[usize]) -> std::io::Result<()> {
    use nix::sched::{sched_setaffinity, CpuSet};
    use nix::unistd::Pid;
    let mut set = CpuSet::new();
    for &c in cpus {
        set.set(c)?;
    }
    sched_setaffinity(Pid::from_raw(0), &set)?;
    Ok(())
}

/// Elsewhere: affinity is not set by the self-test.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(crate) fn allowed_cpus() -> Option<Vec<usize>> {
    None
}

/// Elsewhere: affinity is not set by the self-test.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(crate) fn set_affinity(_cpus: &[usize]) -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "the self-test sets CPU affinity on Linux only",
    ))
}
