//! FreeBSD libpmc's C API, pmc(3), on pmc: `libpmc.so`, `libpmc.a` and `include/pmc.h`.
//! The C entry points are in [`sys`], over the safe logic of `state/` (the global state),
//! `names.rs` (`pmc_name_of_*`) and `pmu.rs` (`pmc_pmu_*`), with the machine's facts from
//! `host.rs`; [`abi`] holds the headers' types and constants (generated from
//! `abi/headers.toml`, as the headers are), [`pmclog`] is pmclog(3).
//! Below: a C example, the error convention, threads.
//!
//! A C program written for FreeBSD's libpmc builds on
//! Linux with only its include and link lines changed, and other languages
//! bind one API.
//!
//! ```c
//! #include <pmc.h>
//! pmc_id_t id; pmc_value_t v;
//! if (pmc_init() < 0) err(1, "pmc_init");
//! if (pmc_allocate("page-faults", PMC_MODE_TC, 0, PMC_CPU_ANY, &id, 0) < 0) err(1, "allocate");
//! pmc_attach(id, 0); pmc_start(id); /* work */ pmc_stop(id); pmc_read(id, &v);
//! ```
//!
//! Calls return 0 (or a count) on success and -1 with `errno` set on
//! failure, as pmc(3) says; what Linux cannot do fails with `EOPNOTSUPP`.
//! The extension `pmc_strerror_last()` returns the message of the calling
//! thread's last failure (what failed, and what to do). Global state is as
//! libpmc's: `pmc_init` once per process (later calls return 0), then any
//! thread may call. No Rust panic crosses into C: every entry point catches
//! it and fails with `EIO`.
//!
//! Each function's contract is in `include/pmc.h` and the crate's README
//! section; the entry points are in [`sys`], the logic in safe modules.
#![warn(unreachable_pub, unnameable_types)]

pub mod abi;
mod host;
mod names;
pub mod pmclog;
mod pmu;
mod state;
#[allow(unsafe_code)]
pub mod sys;
