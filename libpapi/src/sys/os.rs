//! The OS facts and clocks the library asks for: thread ids, the CPU a
//! thread runs on, CPU count, page size, kernel release, the hypervisor's
//! vendor (CPUID), and the clocks behind PAPI's timers.

use nix::time::{clock_gettime, ClockId};

/// The calling thread's kernel id (Linux `gettid`, FreeBSD
/// `pthread_getthreadid_np`).
pub(crate) fn thread_id() -> u64 {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        nix::unistd::gettid().as_raw() as u64
    }
    #[cfg(target_os = "freebsd")]
    {
        // SAFETY: takes no arguments and only returns the caller's id.
        (unsafe { libc::pthread_getthreadid_np() }) as u64
    }
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
    {
        u64::from(std::process::id())
    }
}

/// The CPU the calling thread runs on now (0 when unknown).
pub(crate) fn current_cpu() -> u32 {
    #[cfg(target_os = "linux")]
    {
        nix::sched::sched_getcpu().map_or(0, |c| c as u32)
    }
    #[cfg(not(target_os = "linux"))]
    {
        0
    }
}

/// `sysconf(_SC_NPROCESSORS_CONF)` (0 when unknown).
pub(crate) fn cpus_configured() -> u32 {
    // SAFETY: sysconf takes no pointers and has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    u32::try_from(n).unwrap_or(0)
}

/// The page size in bytes.
pub(crate) fn page_size() -> i64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .unwrap_or(4096)
}

/// `uname -r`.
pub(crate) fn kernel_release() -> String {
    nix::sys::utsname::uname()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The hypervisor's vendor string (CPUID leaf 0x40000000), when CPUID's
/// hypervisor bit says the machine is virtual; `None` on bare metal and
/// off x86.
pub(crate) fn hypervisor_vendor() -> Option<String> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::__cpuid;
        // SAFETY: CPUID exists on every x86_64 CPU; leaf 1 always answers.
        // (`__cpuid` is safe from Rust 1.87; the block keeps older toolchains building.)
        #[allow(unused_unsafe)]
        let l1 = unsafe { __cpuid(1) };
        if l1.ecx & (1 << 31) == 0 {
            return None;
        }
        // SAFETY: with the hypervisor bit set, leaf 0x40000000 is the
        // hypervisor's information leaf.
        #[allow(unused_unsafe)]
        let h = unsafe { __cpuid(0x4000_0000) };
        let mut b = Vec::with_capacity(12);
        for r in [h.ebx, h.ecx, h.edx] {
            b.extend_from_slice(&r.to_le_bytes());
        }
        let s: String = b
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| if c.is_ascii_graphic() { c as char } else { '?' })
            .collect();
        Some(s)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

// `time_t` and `c_long` are 32 bits on some targets: the conversions are not useless there.
#[allow(clippy::useless_conversion)]
fn nanos(clock: ClockId) -> i64 {
    clock_gettime(clock).map_or(0, |t| {
        i64::from(t.tv_sec())
            .wrapping_mul(1_000_000_000)
            .wrapping_add(i64::from(t.tv_nsec()))
    })
}

/// Wall-clock nanoseconds since an arbitrary point (`CLOCK_MONOTONIC`).
pub(crate) fn real_nsec() -> i64 {
    nanos(ClockId::CLOCK_MONOTONIC)
}

/// The calling thread's CPU time in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`),
/// PAPI's "virtual" time.
pub(crate) fn virt_nsec() -> i64 {
    nanos(ClockId::CLOCK_THREAD_CPUTIME_ID)
}

/// The local time as PAPI's report directories name it: `YYYYMMDD-HHMMSS`.
pub(crate) fn local_timestamp() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let t = libc::time_t::try_from(t).unwrap_or(0);
    // SAFETY: an all-zero `tm` is a valid value to be overwritten.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are to locals for the duration of the call;
    // localtime_r is the reentrant form.
    if unsafe { libc::localtime_r(&t, &mut tm) }.is_null() {
        return t.to_string();
    }
    format!(
        "{}{:02}{:02}-{:02}{:02}{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
}
