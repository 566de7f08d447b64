//! pmc(3)'s calls: `pmc_init`, allocation and the verbs on a PMC, the
//! machine's description, the log calls, row administration.

use std::ffi::{c_char, c_int};
use std::panic::catch_unwind;
use std::ptr;

use crate::abi::*;
use crate::state::{self, CError};

use super::logfile::LogFile;
use super::{efault, entry, ok0, put, utf8_arg, LAST};

/// Extension: the message of the calling thread's last failed pmc call
/// (empty when none failed); valid until that thread's next failing call.
#[no_mangle]
pub extern "C" fn pmc_strerror_last() -> *const c_char {
    catch_unwind(|| LAST.with(|l| l.borrow().as_ptr())).unwrap_or(ptr::null())
}

/// `pmc_init`: opens the library's connection to the kernel's counters.
/// Returns 0, or -1 with errno (`ENXIO`: no perf_event support).
#[no_mangle]
pub extern "C" fn pmc_init() -> c_int {
    entry(|| ok0(state::init()))
}

/// `pmc_allocate`: allocates a PMC counting `ctrspec` (libpmc's syntax,
/// perf's, or a portable name) in `mode` with `PMC_F_*` flags, on `cpu`
/// (system modes) or `PMC_CPU_ANY`, sampling every `count` events (sampling
/// modes; 0: the default, 65536); its id goes to `*pmcid`.
///
/// # Safety
/// `ctrspec` is a NUL-terminated string or NULL; `pmcid` is writable or NULL.
#[no_mangle]
pub unsafe extern "C" fn pmc_allocate(
    ctrspec: *const c_char,
    mode: ModeArg,
    flags: u32,
    cpu: c_int,
    pmcid: *mut pmc_id_t,
    count: u64,
) -> c_int {
    entry(|| {
        // SAFETY: NULL or a NUL-terminated string by the C contract, read within this call.
        let spec = unsafe { utf8_arg(ctrspec, "ctrspec") }?;
        if pmcid.is_null() {
            return Err(efault("pmcid"));
        }
        let id = state::allocate(spec, mode.0, flags, cpu, count)?;
        // SAFETY: `pmcid` is NULL or writable, by the C contract.
        unsafe { put(pmcid, "pmcid", id) }
    })
}

/// `pmc_attach`: attaches a process-mode PMC to process `pid` (0: the
/// caller).
#[no_mangle]
pub extern "C" fn pmc_attach(pmcid: pmc_id_t, pid: libc::pid_t) -> c_int {
    entry(|| ok0(state::attach(pmcid, pid)))
}

/// `pmc_detach`: detaches a process-mode PMC from `pid` (0: the caller).
#[no_mangle]
pub extern "C" fn pmc_detach(pmcid: pmc_id_t, pid: libc::pid_t) -> c_int {
    entry(|| ok0(state::detach(pmcid, pid)))
}

/// `pmc_start`: starts counting (or sampling).
#[no_mangle]
pub extern "C" fn pmc_start(pmcid: pmc_id_t) -> c_int {
    entry(|| ok0(state::start(pmcid)))
}

/// `pmc_stop`: stops counting.
#[no_mangle]
pub extern "C" fn pmc_stop(pmcid: pmc_id_t) -> c_int {
    entry(|| ok0(state::stop(pmcid)))
}

/// `pmc_release`: frees a PMC.
#[no_mangle]
pub extern "C" fn pmc_release(pmcid: pmc_id_t) -> c_int {
    entry(|| ok0(state::release(pmcid)))
}

/// `pmc_read`: the PMC's count into `*value`.
///
/// # Safety
/// `value` is writable or NULL.
#[no_mangle]
pub unsafe extern "C" fn pmc_read(pmcid: pmc_id_t, value: *mut pmc_value_t) -> c_int {
    entry(|| {
        if value.is_null() {
            return Err(efault("value"));
        }
        let v = state::read(pmcid)?;
        // SAFETY: `value` is NULL or writable, by the C contract.
        unsafe { put(value, "value", v) }
    })
}

/// `pmc_write`: sets the PMC's count (stopped PMCs only: `EBUSY`).
#[no_mangle]
pub extern "C" fn pmc_write(pmcid: pmc_id_t, value: pmc_value_t) -> c_int {
    entry(|| state::write(pmcid, value).map(|_| 0))
}

/// `pmc_rw`: sets the count to `newvalue` and returns the previous one in
/// `*oldvalue` (if not NULL).
///
/// # Safety
/// `oldvalue` is writable or NULL.
#[no_mangle]
pub unsafe extern "C" fn pmc_rw(
    pmcid: pmc_id_t,
    newvalue: pmc_value_t,
    oldvalue: *mut pmc_value_t,
) -> c_int {
    entry(|| {
        let old = state::write(pmcid, newvalue)?;
        if oldvalue.is_null() {
            return Ok(0);
        }
        // SAFETY: `oldvalue` is NULL or writable, by the C contract.
        unsafe { put(oldvalue, "oldvalue", old) }
    })
}

/// `pmc_set`: the reload count of a sampling PMC, the initial count of a
/// counting one.
#[no_mangle]
pub extern "C" fn pmc_set(pmcid: pmc_id_t, value: pmc_value_t) -> c_int {
    entry(|| ok0(state::set(pmcid, value)))
}

/// `pmc_capabilities`: the PMC's `PMC_CAP_*` bits into `*caps`.
///
/// # Safety
/// `caps` is writable or NULL.
#[no_mangle]
pub unsafe extern "C" fn pmc_capabilities(pmcid: pmc_id_t, caps: *mut u32) -> c_int {
    entry(|| {
        if caps.is_null() {
            return Err(efault("caps"));
        }
        let c = state::capabilities(pmcid)?;
        // SAFETY: `caps` is NULL or writable, by the C contract.
        unsafe { put(caps, "caps", c) }
    })
}

/// `pmc_width`: the PMC's width in bits into `*width` (64: perf's counts).
///
/// # Safety
/// `width` is writable or NULL.
#[no_mangle]
pub unsafe extern "C" fn pmc_width(pmcid: pmc_id_t, width: *mut u32) -> c_int {
    entry(|| {
        if width.is_null() {
            return Err(efault("width"));
        }
        let w = state::width(pmcid)?;
        // SAFETY: `width` is NULL or writable, by the C contract.
        unsafe { put(width, "width", w) }
    })
}

/// `pmc_ncpu`: the number of CPUs, or -1 (`ENXIO` before `pmc_init`).
#[no_mangle]
pub extern "C" fn pmc_ncpu() -> c_int {
    entry(|| {
        let i = state::checked_cpuinfo()?;
        Ok(c_int::try_from(i.pm_ncpu).unwrap_or(c_int::MAX))
    })
}

/// `pmc_npmc`: PMC rows per CPU, or -1 (`EINVAL`: no such CPU).
#[no_mangle]
pub extern "C" fn pmc_npmc(cpu: c_int) -> c_int {
    entry(|| state::npmc(cpu).map(|n| c_int::try_from(n).unwrap_or(c_int::MAX)))
}

/// `pmc_cpuinfo`: a pointer to the library's CPU description (do not free).
///
/// # Safety
/// `cpu_info` is writable or NULL.
#[no_mangle]
pub unsafe extern "C" fn pmc_cpuinfo(cpu_info: *mut *const pmc_cpuinfo) -> c_int {
    entry(|| {
        if cpu_info.is_null() {
            return Err(efault("cpu_info"));
        }
        let i: *const pmc_cpuinfo = state::checked_cpuinfo()?;
        // SAFETY: `cpu_info` is NULL or writable, by the C contract.
        unsafe { put(cpu_info, "cpu_info", i) }
    })
}

/// `pmc_pmcinfo`: the rows of `cpu` into a `malloc`ed `struct pmc_pmcinfo`
/// with `pmc_npmc(cpu)` entries; the caller frees it with `free(3)`.
///
/// # Safety
/// `pmc_info` is writable or NULL.
#[no_mangle]
pub unsafe extern "C" fn pmc_pmcinfo(cpu: c_int, pmc_info: *mut *mut pmc_pmcinfo) -> c_int {
    entry(|| {
        if pmc_info.is_null() {
            return Err(efault("pmc_info"));
        }
        let rows = state::pmcinfo(cpu)?;
        let head = std::mem::size_of::<pmc_pmcinfo>();
        let size = head + std::mem::size_of::<crate::abi::pmc_info>() * rows.len();
        // SAFETY: malloc with a non-zero size; the result is checked for NULL.
        let p = unsafe { libc::malloc(size) }.cast::<pmc_pmcinfo>();
        if p.is_null() {
            return Err(CError::new(libc::ENOMEM, "cannot allocate the PMC rows"));
        }
        // SAFETY: `p` holds `size` bytes, malloc's alignment suits
        // pmc_pmcinfo (8); the header is written first, then the rows at
        // `pm_pmcs`, which the size covers.
        unsafe {
            p.write(pmc_pmcinfo {
                pm_cpu: cpu,
                pm_pmcs: [],
            });
            let first = ptr::addr_of_mut!((*p).pm_pmcs).cast::<crate::abi::pmc_info>();
            ptr::copy_nonoverlapping(rows.as_ptr(), first, rows.len());
        }
        // SAFETY: `pmc_info` is NULL or writable, by the C contract.
        unsafe { put(pmc_info, "pmc_info", p) }
    })
}

/// `pmc_configure_logfile`: sends the log to `fd` (the library keeps a
/// duplicate); -1 stops logging. Linux writes pmc-log's format (pmclog(3)
/// reads it).
#[no_mangle]
pub extern "C" fn pmc_configure_logfile(fd: c_int) -> c_int {
    entry(|| {
        if fd == -1 {
            return ok0(state::configure_log(None));
        }
        if fd < 0 {
            return Err(CError::new(
                libc::EBADF,
                format!("{fd} is not a file descriptor"),
            ));
        }
        // SAFETY: the descriptor is only borrowed for the dup below; a
        // closed number makes dup fail with EBADF.
        let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        let owned = nix::unistd::dup(borrowed)
            .map_err(|e| CError::new(e as i32, format!("cannot use fd {fd} for the log: {e}")))?;
        ok0(state::configure_log(Some(Box::new(LogFile(
            std::fs::File::from(owned),
        )))))
    })
}

/// `pmc_flush_logfile`: writes out what the log holds.
#[no_mangle]
pub extern "C" fn pmc_flush_logfile() -> c_int {
    entry(|| ok0(state::flush_log()))
}

/// `pmc_close_logfile`: flushes and closes the log.
#[no_mangle]
pub extern "C" fn pmc_close_logfile() -> c_int {
    entry(|| ok0(state::close_log()))
}

/// `pmc_writelog`: appends a user-data record to the log.
#[no_mangle]
pub extern "C" fn pmc_writelog(userdata: u32) -> c_int {
    entry(|| ok0(state::write_log(userdata)))
}

/// `pmc_get_driver_stats`: this library's counts in hwpmc's terms (calls,
/// failed calls, samples logged, samples lost).
///
/// # Safety
/// `gms` is writable or NULL.
#[no_mangle]
pub unsafe extern "C" fn pmc_get_driver_stats(gms: *mut pmc_driverstats) -> c_int {
    entry(|| {
        if gms.is_null() {
            return Err(efault("gms"));
        }
        let s = state::driver_stats()?;
        // SAFETY: `gms` is NULL or writable, by the C contract.
        unsafe { put(gms, "gms", s) }
    })
}

/// `pmc_get_msr`: pmc_get_msr(3)'s EINVAL cases, then ENOSYS: hwpmc gives a
/// self-attached process PMC a fixed row whose register holds the count, so
/// a caller may `rdpmc` it; perf moves an event between counters as it
/// schedules it, and the register holds the count less an offset kept in
/// the event's mapped page. `pmc_read` returns the count; Rust callers have
/// `pmc::native::FastReader`, which reads in user space with perf's protocol.
///
/// # Safety
/// `msr` is writable or NULL.
#[no_mangle]
pub unsafe extern "C" fn pmc_get_msr(pmcid: pmc_id_t, msr: *mut u32) -> c_int {
    entry(|| {
        if msr.is_null() {
            return Err(efault("msr"));
        }
        let m = state::get_msr(pmcid)?;
        // SAFETY: `msr` is NULL or writable, by the C contract.
        unsafe { put(msr, "msr", m) }
    })
}

/// `pmc_enable`: pmc_disable(3)'s errors, then `EOPNOTSUPP`: perf has no
/// per-row administration.
#[no_mangle]
pub extern "C" fn pmc_enable(cpu: c_int, pmc: c_int) -> c_int {
    entry(|| ok0(state::admin("pmc_enable", cpu, pmc, false)))
}

/// `pmc_disable`: as `pmc_enable`; `EBUSY` for a row in use.
#[no_mangle]
pub extern "C" fn pmc_disable(cpu: c_int, pmc: c_int) -> c_int {
    entry(|| ok0(state::admin("pmc_disable", cpu, pmc, true)))
}
