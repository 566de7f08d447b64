//! Timers: real and virtual time in ns, us and nominal cycles.

use std::panic::catch_unwind;

use super::machine::mhz;
use super::os;

/// `PAPI_get_real_nsec`: wall-clock ns from an arbitrary start.
#[no_mangle]
pub extern "C" fn PAPI_get_real_nsec() -> i64 {
    os::real_nsec()
}

/// `PAPI_get_real_usec`.
#[no_mangle]
pub extern "C" fn PAPI_get_real_usec() -> i64 {
    os::real_nsec() / 1000
}

pub(super) fn real_cyc() -> i64 {
    (i128::from(os::real_nsec()) * i128::from(mhz()) / 1000) as i64
}

/// `PAPI_get_real_cyc`: wall-clock time in cycles of the CPU's nominal
/// clock (`cpu_max_mhz`).
#[no_mangle]
pub extern "C" fn PAPI_get_real_cyc() -> i64 {
    catch_unwind(real_cyc).unwrap_or(0)
}

/// `PAPI_get_virt_nsec`: the calling thread's CPU time in ns.
#[no_mangle]
pub extern "C" fn PAPI_get_virt_nsec() -> i64 {
    os::virt_nsec()
}

/// `PAPI_get_virt_usec`.
#[no_mangle]
pub extern "C" fn PAPI_get_virt_usec() -> i64 {
    os::virt_nsec() / 1000
}

/// `PAPI_get_virt_cyc`: the calling thread's CPU time in nominal cycles.
#[no_mangle]
pub extern "C" fn PAPI_get_virt_cyc() -> i64 {
    catch_unwind(|| (i128::from(os::virt_nsec()) * i128::from(mhz()) / 1000) as i64).unwrap_or(0)
}
