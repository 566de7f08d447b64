//! Rates: `PAPI_flips_rate`, `PAPI_flops_rate`, `PAPI_ipc`, `PAPI_epc`.

use std::ffi::c_int;

use super::{entry, ok, put};
use crate::error::R;

/// Stores a float through a caller's pointer.
fn put_f(p: *mut f32, name: &str, v: f32) -> R<()> {
    put(p, name, v)
}

/// `PAPI_flips_rate`, `PAPI_flops_rate` and `PAPI_ipc`: the rate of
/// `kind` since the previous call, its real and process times into
/// `times`, its count and rate into the named pointers.
fn rate_call(
    kind: crate::rates::Kind,
    times: [*mut f32; 2],
    count: (*mut i64, &str),
    rate: (*mut f32, &str),
) -> c_int {
    entry(|| {
        let r = crate::rates::rate(kind)?;
        put_f(times[0], "rtime", r.real_s)?;
        put_f(times[1], "ptime", r.proc_s)?;
        put(count.0, count.1, r.count)?;
        ok(put_f(rate.0, rate.1, r.rate))
    })
}

/// `PAPI_flips_rate`: floating-point instructions (`event`: PAPI_FP_INS,
/// PAPI_VEC_SP or PAPI_VEC_DP) and their rate in millions a second since
/// the previous call (the first call starts counting and answers 0).
///
/// # Safety
/// Every pointer is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn PAPI_flips_rate(
    event: c_int,
    rtime: *mut f32,
    ptime: *mut f32,
    flpins: *mut i64,
    mflips: *mut f32,
) -> c_int {
    let kind = crate::rates::Kind::Flips(event as u32);
    rate_call(kind, [rtime, ptime], (flpins, "flpins"), (mflips, "mflips"))
}

/// `PAPI_flops_rate`: as `PAPI_flips_rate` for operations (PAPI_FP_OPS,
/// PAPI_SP_OPS, PAPI_DP_OPS).
///
/// # Safety
/// Every pointer is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn PAPI_flops_rate(
    event: c_int,
    rtime: *mut f32,
    ptime: *mut f32,
    flpops: *mut i64,
    mflops: *mut f32,
) -> c_int {
    let kind = crate::rates::Kind::Flops(event as u32);
    rate_call(kind, [rtime, ptime], (flpops, "flpops"), (mflops, "mflops"))
}

/// `PAPI_ipc`: instructions and instructions per cycle since the previous call.
///
/// # Safety
/// Every pointer is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn PAPI_ipc(
    rtime: *mut f32,
    ptime: *mut f32,
    ins: *mut i64,
    ipc: *mut f32,
) -> c_int {
    let kind = crate::rates::Kind::Ipc;
    rate_call(kind, [rtime, ptime], (ins, "ins"), (ipc, "ipc"))
}

/// `PAPI_epc`: `event` (PAPI_TOT_INS when 0), reference and core cycles,
/// and events per cycle since the previous call.
///
/// # Safety
/// Every pointer is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn PAPI_epc(
    event: c_int,
    rtime: *mut f32,
    ptime: *mut f32,
    ref_: *mut i64,
    core: *mut i64,
    evt: *mut i64,
    epc: *mut f32,
) -> c_int {
    entry(|| {
        let r = crate::rates::rate(crate::rates::Kind::Epc(event as u32))?;
        put_f(rtime, "rtime", r.real_s)?;
        put_f(ptime, "ptime", r.proc_s)?;
        put(ref_, "ref", r.reference)?;
        put(core, "core", r.cycles)?;
        put(evt, "evt", r.count)?;
        ok(put_f(epc, "epc", r.rate))
    })
}

/// `PAPI_rate_stop`: stops the calling thread's rate counting.
#[no_mangle]
pub extern "C" fn PAPI_rate_stop() -> c_int {
    entry(|| ok(crate::rates::stop()))
}
