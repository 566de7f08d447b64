//! # pmc-freebsd: the FreeBSD hwpmc(4) backend of `pmc`
//!
//! You probably want the `pmc` facade crate, which picks this backend on
//! FreeBSD.
//!
//! This crate talks to hwpmc directly through its dynamically numbered
//! syscall (`modfind("hwpmc")`, `modstat`, `syscall(nr, PMC_OP_*, arg)`),
//! without libpmc. It builds on every OS: only `sys::RealDriver` (FreeBSD only) is
//! FreeBSD-only, and the simulated driver (`sim`, feature `sim`) runs the
//! backend's real code in tests on any host.
//!
//! # Brief overview
//!
//! | item | what it is |
//! |---|---|
//! | `sys::abi` | `#[repr(C)]` `PMC_OP_*` structs and constants, layout-pinned |
//! | [`sys::Driver`] | the seam every `PMC_OP_*` request passes through |
//! | `errno_map` | errno x op -> kind and FreeBSD remedy (hwpmc(4) ERRORS) |
//! | `events` | portable / raw / hwpmc-style event names -> `pmc_op_pmcallocate` |
//! | `info` | the event listing (`Backend::list_events`) and diagnostics (`Backend::diagnose`), each event probed by allocating it |
//! | [`Backend`] | `pmc_core::Backend` over any driver: `Backend::open()` or `Backend::with_driver(..)` |
//!
//! The public API is [`Backend`] and its PMC and group types, [`Errno`] and
//! the [`sys::Driver`] seam. The modules behind it (`sys::abi`, `errno_map`,
//! `events`, `info`) are public only with the `internals` feature (which
//! `sim` turns on), for this crate's tests and for writing a driver.
//!
//! # Example
//!
//! ```no_run
//! use pmc_core::{Allocation, Backend as _, Pmc as _};
//! # fn main() -> pmc_core::Result<()> {
//! let backend = pmc_freebsd::Backend::open()?; // help: kldload hwpmc, if not loaded
//! let mut pmc = backend.allocate(&Allocation::counting("instructions".parse()?))?;
//! pmc.start()?; // PMC_OP_PMCSTART attaches it to this process
//! // ... work ...
//! pmc.stop()?;
//! println!("{}", pmc.read()?.value);
//! # Ok(()) }
//! ```
//!
//! # If you know hwpmc already
//!
//! | hwpmc | here |
//! |---|---|
//! | `PMC_OP_PMCALLOCATE` mode TC / TS / SC / SS | `Allocation` with `Scope::Process` / `Scope::System`, `Mode::Counting` / `Mode::Sampling` |
//! | `PMC_OP_PMCATTACH` / `PMCDETACH` | `Pmc::attach` / `Pmc::detach` |
//! | `PMC_OP_PMCRW` (OLDVALUE / NEWVALUE) | `Pmc::read` / `Pmc::write` |
//! | `PMC_OP_PMCSETCOUNT` | `Pmc::set_count` |
//! | `PMC_OP_CONFIGURELOG`, `FLUSHLOG`, `CLOSELOG`, `WRITELOG` | `Backend::configure_log`, `flush_log`, `close_log`, `write_log` |
//! | `PMC_OP_PMCRELEASE` | drop, or `Pmc::release` |
//!
//! # Platform behaviour
//!
//! See the README: no multiplexing (running time = enabled time), clock
//! events count ticks, frequencies become periods, groups are emulated, and
//! `configure_log` converts hwpmc's log to pmc-log when the log ends
//! (`Backend::configure_hwpmc_log` streams hwpmc's own format).
//!
//! # References
//! hwpmc(4), pmc(3), pmclog(3), pmcstat(8).
#![deny(unsafe_code)]
#![deny(missing_docs)]

mod backend;
pub mod errno;
#[cfg(feature = "internals")]
pub mod errno_map;
#[cfg(not(feature = "internals"))]
#[allow(dead_code)]
mod errno_map;
#[cfg(feature = "internals")]
pub mod events;
#[cfg(not(feature = "internals"))]
#[allow(dead_code)]
mod events;
#[cfg(feature = "internals")]
pub mod info;
#[cfg(not(feature = "internals"))]
#[allow(dead_code)]
mod info;
mod logpump;
#[cfg(any(test, feature = "sim"))]
pub mod sim;
pub mod sys;

pub use backend::{
    Backend, DefaultDriver, FreebsdGroup, FreebsdPmc, RowInfo, Unavailable, ASSUMED_HZ,
    NOMINAL_EVENTS_PER_SEC,
};
pub use errno::Errno;
