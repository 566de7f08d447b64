//! # pmc-unsupported: the backend of an OS without one
//!
//! - [`Backend`] (`backend.rs`): pmc-core's `Backend` over the [`Sys`] seam; here every call fails.
//! - `sys/`: the only door to the OS; [`RealSys`] answers `ENOSYS` (there is nothing to open).
//! - `errno.rs`, `errno_map.rs`: [`Errno`] and its mapping to a typed `pmc_core::Error` with help.
//! - `events.rs`, `info.rs`: the event listing (empty) and the diagnostics (one row).
//! - `log/`: the sample log (refused: nothing samples).
//!
//! On an OS where pmc has no backend (neither Linux nor FreeBSD), the
//! facade's `pmc::Native` and `pmc::Unsupported` are this crate's
//! [`Backend`], so code written against `pmc::Native` compiles there and
//! fails at run time: [`Backend::open`] returns
//! `ErrorKind::Unsupported`, saying to run on Linux or FreeBSD.
//!
//! ```
//! let e = pmc_unsupported::Backend::open().unwrap_err();
//! assert_eq!(e.kind(), pmc_core::ErrorKind::Unsupported);
//! ```
//!
//! It is also the template a third backend copies: pmc-linux and
//! pmc-freebsd are laid out the same way, file for file.
//!
//! ## Required items
//!
//! Each backend crate has these, with these names:
//!
//! - `Backend<S: Sys = RealSys>` (`backend.rs`): implements
//!   `pmc_core::Backend` (allocate, groups, the log, listing, diagnose) and
//!   its PMC and group types implement `pmc_core::Pmc` and
//!   `pmc_core::Group` (hwpmc's verbs), generic over the seam, no dynamic
//!   dispatch; `Backend::open()`/`Backend::new()` on the real OS (what
//!   `pmc::Native::open()` calls), `Backend::with_sys(sys)` on a fake.
//! - `Sys` (`sys/mod.rs`): the trait every OS fact and syscall goes
//!   through; nothing above `sys/` touches the OS.
//! - `RealSys` (`sys/real.rs`): the real OS, one file per OS selected by
//!   one `cfg_if`, `ENOSYS` elsewhere; the fake (`sys/fake.rs`) implements
//!   `Sys` too, so everything above runs without the OS.
//! - `Errno` (`errno.rs`): the errno newtype `Sys` returns; its `Display`
//!   names the errno.
//! - `errno_map.rs`: (errno, operation) to a `pmc_core::Error` whose kind a
//!   caller can match and whose help says what to do next.
//! - `events.rs`: event names to the OS's encodings, and the listing.
//! - `info.rs`: the machine's facts and the diagnostics report.
//! - `log/`: the sample-log side (the kernel's records to pmc-log records).
//! - `internals` (doc-hidden, at the end of `lib.rs`): the one re-export of
//!   what tests, benches, fuzzers or sister crates need beyond the API.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![warn(unreachable_pub, unnameable_types)]

mod backend;
mod errno;
mod errno_map;
mod events;
mod info;
mod log;
mod sys;

pub use backend::{Backend, UnsupportedGroup, UnsupportedPmc};
pub use errno::Errno;
pub use sys::{RealSys, Sys};

/// What tests, benches, fuzzers and sister crates use beyond the public
/// API (not part of it).
#[doc(hidden)]
pub mod internals {
    pub use crate::errno_map::error;
    pub use crate::events::list;
    pub use crate::info::diagnose;
}
