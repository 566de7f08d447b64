//! # pmc-freebsd: the FreeBSD hwpmc(4) backend of `pmc`
//!
//! - [`Backend`] (`backend.rs`): `pmc_core::Backend` over hwpmc, generic over the [`Sys`] seam
//! - [`sys`]: the seam ([`Sys`]), its ABI (`sys::abi`), [`RealSys`] and the simulator `sys::sim`
//! - `errno.rs` / `errno_map/`: FreeBSD's [`Errno`] and (errno, op) -> typed error with remedy
//! - `events/` / `info.rs`: event names -> `pmc_op_pmcallocate`; listing and diagnostics
//! - `log/`: the kernel log, read by a thread and swapped between user-space sinks
//!
//! You probably want the `pmc` facade crate, which picks this backend on
//! FreeBSD. This crate talks to hwpmc directly through its dynamically
//! numbered syscall (`modfind("hwpmc")`, `modstat`, `syscall(nr, PMC_OP_*,
//! arg)`), without libpmc. It builds on every OS: [`RealSys`] reaches hwpmc
//! on FreeBSD and answers `ENOSYS` elsewhere, and the simulated hwpmc
//! (`sys::sim`, feature `sim`) runs the backend's real code on any host.
//!
//! ## Required items
//!
//! What a backend crate of pmc holds (pmc-linux has the same tree):
//!
//! | item | what it must do |
//! |---|---|
//! | [`Backend`] | implement `pmc_core::Backend` (and its `Pmc`, `Group`) over `S: Sys`, monomorphised; [`Backend::new`] opens [`RealSys`], [`Backend::with_sys`] any other |
//! | [`Sys`] | be the only door to the OS: every `PMC_OP_*` request, sysctl, uid and process fact |
//! | [`RealSys`] | the real OS: the hwpmc syscall on FreeBSD (`sys/freebsd.rs`), `ENOSYS` elsewhere (`sys/unsupported.rs`) |
//! | `sys::sim` | a model of the kernel side implementing [`Sys`], each rule citing hwpmc's source |
//! | [`Errno`] | one errno newtype, FreeBSD's numbers on every host, `Display` naming it |
//! | `errno_map` | turn (errno, op, facts) into a `pmc_core::Error` saying what to do next |
//! | `events`, `info` | event names to the kernel's encodings, the listing; machine facts and `diagnose` |
//! | `log` | the sample-log side: the kernel log into pmc-log (or hwpmc's own format) sinks |
//!
//! # Example
//!
//! ```no_run
//! use pmc_core::{Allocation, Backend as _, Pmc as _};
//! # fn main() -> pmc_core::Result<()> {
//! let backend = pmc_freebsd::Backend::new()?; // help: kldload hwpmc, if not loaded
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
#![warn(unreachable_pub, unnameable_types)]

mod backend;
mod errno;
mod errno_map;
mod events;
mod info;
mod log;
pub mod sys;

pub use backend::{Backend, FreebsdGroup, FreebsdPmc, RowInfo, ASSUMED_HZ, NOMINAL_EVENTS_PER_SEC};
pub use errno::Errno;
pub use events::{Machine, UnknownCpu, Vendor};
pub use sys::{RealSys, Sys};

/// Items this crate's own tests need beyond the public API; not an API
/// (hidden, unstable). pmc-linux has the same module.
#[doc(hidden)]
pub mod internals {
    pub use crate::sys::cstr::c_str;
}
