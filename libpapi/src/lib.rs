//! PAPI 7's C API on pmc: `libpapi.so` (soname `libpapi.so.7.0`), `libpapi.a`
//! and `include/papi.h`, so that a program written for PAPI (and compiled
//! against PAPI's own header or this one) counts through pmc: Linux
//! perf_event or FreeBSD hwpmc, software events on a VM without a PMU.
//!
//! ```c
//! #include <papi.h>
//! int set = PAPI_NULL; long long v;
//! PAPI_library_init(PAPI_VER_CURRENT); PAPI_create_eventset(&set);
//! PAPI_add_named_event(set, "perf::PAGE-FAULTS"); PAPI_start(set); /* work */ PAPI_stop(set, &v);
//! ```
//!
//! The library has one component, `pmc` ([`state`]'s component 0). Its
//! native events ([`natives`]) are named as PAPI's perf_event component
//! names them and as pmc does; presets ([`presets`]) map to them per CPU;
//! event sets ([`eventset`]) are pmc groups (or multiplexed PMCs) of the
//! calling thread, a process, or a CPU. Overflow handlers ([`overflow`])
//! are driven by pmc's in-process sampling. The high-level API and its
//! JSON report are [`hl`]; the rate calls [`rates`]. The C entry points
//! are in `sys`, the logic in the safe modules; no Rust panic crosses into
//! C (a caught panic is `PAPI_EBUG`).
#![warn(unreachable_pub, unnameable_types)]

pub mod abi;
mod error;
mod eventset;
mod hl;
mod hwinfo;
mod info;
mod natives;
mod overflow;
mod preset_table;
mod presets;
mod rates;
#[cfg(test)]
mod sim_tests;
mod state;
#[allow(unsafe_code, non_snake_case)]
pub mod sys;
