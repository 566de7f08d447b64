//! Overflow and profiling: `PAPI_overflow`, `PAPI_profil`,
//! `PAPI_sprofil`, and the delivery of an overflow to its handler or profile.

use std::ffi::{c_int, c_uint, c_void};
use std::panic::catch_unwind;
use std::ptr;

use super::{entry, null, ok, put, slice_mut};
use crate::abi::*;
use crate::error::fail;
use crate::eventset::{Action, OverflowCall, ProfRegion, Profile};
use crate::state;

/// Acts on one overflow (the poller's or `PAPI_stop`'s, lock released):
/// calls the program's handler, or counts the address in its profile.
pub(crate) fn call_handler(c: &OverflowCall) {
    match &c.action {
        Action::Handler(h) => {
            // SAFETY: the handler is the C function the program passed to
            // PAPI_overflow, called with the arguments PAPI documents (context NULL).
            let _ = catch_unwind(|| unsafe {
                h(
                    c.set,
                    c.address as usize as *mut c_void,
                    c.vector,
                    ptr::null_mut(),
                )
            });
        }
        Action::Profile(p) => profile_hit(p, c.address),
    }
}

/// A sample of `PAPI_PROFIL_RANDOM` is dropped one time in four.
fn dropped() -> bool {
    use std::sync::atomic::{AtomicU64, Ordering};
    static STATE: AtomicU64 = AtomicU64::new(0x9e37_79b9_7f4a_7c15);
    let x = STATE.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed);
    let z = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    (z ^ (z >> 27)) & 3 == 0
}

/// Adds a sample to a profile's bucket, saturating as profil(2)'s counters do.
fn profile_hit(p: &Profile, address: u64) {
    if p.flags & PAPI_PROFIL_RANDOM != 0 && dropped() {
        return;
    }
    let Some((r, i)) = p.bucket(address) else {
        return;
    };
    let region = &p.regions[r];
    let at = region.base + i * p.bucket_bytes();
    // SAFETY: PAPI_profil's contract: the buffer of `size` bytes stays valid
    // and the program's while profiling; `bucket` keeps `i` below
    // size / bucket_bytes; unaligned accesses are avoided by read/write_unaligned.
    unsafe {
        match p.bucket_bytes() {
            8 => {
                let q = at as *mut u64;
                q.write_unaligned(q.read_unaligned().saturating_add(1));
            }
            4 => {
                let q = at as *mut u32;
                q.write_unaligned(q.read_unaligned().saturating_add(1));
            }
            _ => {
                let q = at as *mut u16;
                q.write_unaligned(q.read_unaligned().saturating_add(1));
            }
        }
    }
}

/// `PAPI_overflow`: calls `handler` every `threshold` counts of `EventCode`
/// (0 turns it off). See `overflow.rs` for how and where the handler runs.
#[no_mangle]
pub extern "C" fn PAPI_overflow(
    EventSet: c_int,
    EventCode: c_int,
    threshold: c_int,
    flags: c_int,
    handler: PAPI_overflow_handler_t,
) -> c_int {
    entry(|| {
        if flags & !(PAPI_OVERFLOW_FORCE_SW | PAPI_OVERFLOW_HARDWARE) != 0 {
            return fail(
                PAPI_EINVAL,
                format!("overflow flags {flags:#x} are not PAPI's"),
            );
        }
        ok(state::overflow(
            EventSet,
            EventCode as u32,
            threshold,
            handler,
        ))
    })
}

/// `PAPI_get_overflow_event_index`: the positions in the set of the events
/// whose bits `overflow_vector` sets.
///
/// # Safety
/// `array` is NULL or `*number` writable ints; `number` NULL or a writable int.
#[no_mangle]
pub unsafe extern "C" fn PAPI_get_overflow_event_index(
    EventSet: c_int,
    overflow_vector: i64,
    array: *mut c_int,
    number: *mut c_int,
) -> c_int {
    entry(|| {
        if array.is_null() || number.is_null() {
            return Err(null("array or number"));
        }
        // SAFETY: non-null, readable by the contract.
        let room = unsafe { number.read() };
        if room <= 0 {
            return fail(PAPI_EINVAL, "*number must be positive");
        }
        let idx = state::overflow_indices(EventSet, overflow_vector)?;
        // SAFETY: `room` ints by the contract.
        let out = unsafe { slice_mut(array, room as usize, "array") }?;
        let n = idx.len().min(out.len());
        out[..n].copy_from_slice(&idx[..n]);
        ok(put(number, "number", n as c_int))
    })
}

/// `PAPI_profil`: a histogram of where `EventCode` overflows every
/// `threshold` counts, profil(2)-style, in `buf` (see `PAPI_sprofil`).
#[no_mangle]
pub extern "C" fn PAPI_profil(
    buf: *mut c_void,
    bufsiz: c_uint,
    offset: *mut c_void,
    scale: c_uint,
    EventSet: c_int,
    EventCode: c_int,
    threshold: c_int,
    flags: c_int,
) -> c_int {
    entry(|| {
        let r = ProfRegion {
            base: buf as usize,
            size: bufsiz as usize,
            offset: offset as usize as u64,
            scale,
        };
        ok(state::profile(
            EventSet,
            EventCode as u32,
            threshold,
            vec![r],
            flags,
        ))
    })
}

/// `PAPI_sprofil`: as `PAPI_profil` over `profcnt` regions; a region of
/// offset 0 and scale 2 takes the samples outside the others. The
/// histogram is filled as samples are drained (see `overflow.rs`); the
/// buffers must stay valid while the set runs.
///
/// # Safety
/// `prof` is NULL or `profcnt` readable `PAPI_sprofil_t`.
#[no_mangle]
pub unsafe extern "C" fn PAPI_sprofil(
    prof: *mut PAPI_sprofil_t,
    profcnt: c_int,
    EventSet: c_int,
    EventCode: c_int,
    threshold: c_int,
    flags: c_int,
) -> c_int {
    entry(|| {
        if profcnt <= 0 {
            return fail(PAPI_EINVAL, "PAPI_sprofil: profcnt must be positive");
        }
        // SAFETY: `profcnt` structures by the contract.
        let regions = unsafe { slice_mut(prof, profcnt as usize, "prof") }?
            .iter()
            .map(|p| ProfRegion {
                base: p.pr_base as usize,
                size: p.pr_size as usize,
                offset: p.pr_off as usize as u64,
                scale: p.pr_scale,
            })
            .collect();
        ok(state::profile(
            EventSet,
            EventCode as u32,
            threshold,
            regions,
            flags,
        ))
    })
}
