//! `pmc_pmu_*`: the CPU's named events, listed on C's `stdout`, looked up,
//! turned into an allocation request.

use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::abi::*;
use crate::pmu;

use super::name_entry;

/// A string argument that may be NULL.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string that outlives `'a`.
unsafe fn opt_str<'a>(p: *const c_char) -> Option<&'a str> {
    if p.is_null() {
        return None;
    }
    // SAFETY: non-null, and NUL-terminated by the function's contract.
    unsafe { CStr::from_ptr(p) }.to_str().ok()
}

/// `pmc_pmu_enabled`: 1 when this machine's CPU has a table of named
/// events (pmc-events'; FreeBSD's libpmc: its pmu-events table), else 0.
#[no_mangle]
pub extern "C" fn pmc_pmu_enabled() -> c_int {
    catch_unwind(|| c_int::from(pmu::enabled())).unwrap_or(0)
}

/// Writes `text` to C's `stdout` (the `FILE *` the caller's `printf` uses,
/// so that the two interleave as written).
fn c_print(text: &str) {
    let Ok(c) = CString::new(text.replace('\0', "")) else {
        return;
    };
    #[cfg(target_os = "freebsd")]
    extern "C" {
        #[link_name = "__stdoutp"]
        static mut C_STDOUT: *mut libc::FILE;
    }
    #[cfg(not(target_os = "freebsd"))]
    extern "C" {
        #[link_name = "stdout"]
        static mut C_STDOUT: *mut libc::FILE;
    }
    // SAFETY: C's stdout stream, initialized by the C runtime before main;
    // read once (a copy of the pointer), and fputs takes a NUL-terminated string.
    unsafe {
        let out = C_STDOUT;
        libc::fputs(c.as_ptr(), out);
    }
}

fn print_entry(which: pmu::Print, filter: *const c_char) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: NULL or a NUL-terminated string by the C contract, read within this call.
        let filter = unsafe { opt_str(filter) };
        if filter.is_none() && which != pmu::Print::Names {
            return;
        }
        c_print(&pmu::listing(which, filter));
    }));
}

/// `pmc_pmu_print_counters`: `\tNAME` for each of the CPU's named events
/// whose name contains `event_name` (case ignored; NULL: every event), on
/// stdout.
///
/// # Safety
/// `event_name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn pmc_pmu_print_counters(event_name: *const c_char) {
    print_entry(pmu::Print::Names, event_name);
}

/// `pmc_pmu_print_counter_desc`: `NAME:\tDESCRIPTION` for each event whose
/// name contains `ev` and that has a description.
///
/// # Safety
/// `ev` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn pmc_pmu_print_counter_desc(ev: *const c_char) {
    print_entry(pmu::Print::Desc, ev);
}

/// `pmc_pmu_print_counter_desc_long`: as `pmc_pmu_print_counter_desc` with
/// the long description where there is one (pmc-events keeps none: the
/// short one).
///
/// # Safety
/// `ev` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn pmc_pmu_print_counter_desc_long(ev: *const c_char) {
    print_entry(pmu::Print::DescLong, ev);
}

/// `pmc_pmu_print_counter_full`: `name:`, `desc:` and `event:` lines for each
/// event whose name contains `ev`.
///
/// # Safety
/// `ev` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn pmc_pmu_print_counter_full(ev: *const c_char) {
    print_entry(pmu::Print::Full, ev);
}

/// `pmc_pmu_sample_rate_get`: the event's default sampling count (65536,
/// libpmc's `DEFAULT_SAMPLE_COUNT`, for every event: pmc-events keeps no
/// sampling counts).
///
/// # Safety
/// `event_name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn pmc_pmu_sample_rate_get(event_name: *const c_char) -> u64 {
    catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: NULL or a NUL-terminated string by the C contract.
        pmu::sample_rate(unsafe { opt_str(event_name) }.unwrap_or(""))
    }))
    .unwrap_or(pmu::DEFAULT_SAMPLE_COUNT)
}

/// `pmc_pmu_pmcallocate`: fills `*pm` for the named event as libpmc does
/// for hwpmc (`pm_class`, the table index in `pm_ev`, `PMC_F_EV_PMU` in
/// `pm_flags`, `pm_caps`, `pm_md`). Returns 0, or an errno value
/// (`ENOENT`: not an event of this CPU's table; `EFAULT`: NULL).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `pm` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn pmc_pmu_pmcallocate(
    name: *const c_char,
    pm: *mut pmc_op_pmcallocate,
) -> c_int {
    catch_unwind(AssertUnwindSafe(|| {
        if pm.is_null() {
            return libc::EFAULT;
        }
        // SAFETY: NULL or a NUL-terminated string by the C contract.
        let Some(name) = (unsafe { opt_str(name) }) else {
            return libc::EFAULT;
        };
        // SAFETY: `pm` is non-null and writable by the C contract; read and
        // written in place, as libpmc does.
        let pm = unsafe { &mut *pm };
        pmu::pmcallocate(name, pm)
    }))
    .unwrap_or(libc::EIO)
}

/// `pmc_pmu_event_get_by_idx`: the name of event `idx` of `cpuid`'s table
/// (a `kern.hwpmc.cpuid` string such as `GenuineIntel-6-55-4`; NULL: this
/// machine's), or NULL (`EINVAL`).
///
/// # Safety
/// `cpuid` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn pmc_pmu_event_get_by_idx(
    cpuid: *const c_char,
    idx: c_int,
) -> *const c_char {
    let v = u32::try_from(idx).unwrap_or(u32::MAX);
    name_entry("pmu event index", v, || {
        // SAFETY: NULL or a NUL-terminated string by the C contract.
        let cpuid = unsafe { opt_str(cpuid) };
        pmu::event_by_idx(cpuid, idx).map(CStr::as_ptr)
    })
}

/// `pmc_pmu_idx_get_by_event`: the index of the named event (libpmc's
/// aliases taken) in `cpuid`'s table (NULL: this machine's), or -1.
///
/// # Safety
/// `cpuid` and `event` are NULL or NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn pmc_pmu_idx_get_by_event(
    cpuid: *const c_char,
    event: *const c_char,
) -> c_int {
    catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: NULL or NUL-terminated strings by the C contract.
        let (cpuid, event) = unsafe { (opt_str(cpuid), opt_str(event)) };
        event.map_or(-1, |e| pmu::idx_by_event(cpuid, e))
    }))
    .unwrap_or(-1)
}

/// `pmc_pmu_stat_mode`: the six counters of pmcstat's counting mode, by this
/// CPU's names, into `*cntrs` (the library's array); 0, or `EOPNOTSUPP`
/// without a table (`EFAULT`: NULL).
///
/// # Safety
/// `cntrs` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn pmc_pmu_stat_mode(cntrs: *mut *mut *const c_char) -> c_int {
    catch_unwind(AssertUnwindSafe(|| {
        if cntrs.is_null() {
            return libc::EFAULT;
        }
        static ARRAY: std::sync::OnceLock<Option<StatNames>> = std::sync::OnceLock::new();
        let Some(names) =
            ARRAY.get_or_init(|| pmu::stat_mode().map(|n| StatNames(n.map(CStr::as_ptr))))
        else {
            return libc::EOPNOTSUPP;
        };
        // SAFETY: `cntrs` is non-null and writable by the C contract; the
        // array is static, and C only reads it (libpmc's is `const char *[]`).
        unsafe { cntrs.write(names.0.as_ptr().cast_mut()) };
        0
    }))
    .unwrap_or(libc::EIO)
}

/// The stat-mode names handed to C (pointers to static strings).
struct StatNames([*const c_char; 6]);
// SAFETY: the pointers are to 'static, immutable C strings.
unsafe impl Send for StatNames {}
// SAFETY: as above: shared reads of immutable data.
unsafe impl Sync for StatNames {}
