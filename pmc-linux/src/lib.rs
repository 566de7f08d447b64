//! # pmc-linux: the perf_event backend of pmc
//!
//! [`Backend`] implements pmc-core's API over `perf_event_open(2)`: [`LinuxPmc`] and
//! [`LinuxGroup`] count and sample (`counter/`), [`FastReader`] reads in user space, `log/`
//! drains rings into the log, [`Sys`] / [`RealSys`] is the only door to the OS ([`Errno`]).
//! The table below maps the files, bottom up.
//!
//! You probably want the `pmc` facade, which picks this backend on Linux as
//! `pmc::Native`.
//!
//! The map, bottom up:
//!
//! | layer | files |
//! |---|---|
//! | the OS, the only door to it | `sys/` ([`Sys`], [`RealSys`]: `sys/linux.rs` or `sys/unsupported.rs`; the fake kernel) and [`Errno`] |
//! | meaning of what it says | `errno_map.rs` (errno x op -> typed error), `events.rs` (names -> encodings), `info.rs` (listing, diagnose), [`mod@env`] |
//! | the backend | `backend.rs` ([`Backend`]), `counter/` (the hwpmc verbs over fds: [`LinuxPmc`], [`LinuxGroup`]), `rdpmc.rs` ([`FastReader`]) |
//! | the sample-log side | `log/` (rings -> records -> samples: the drain, the post-processors), over `ring.rs` and `record/` |
//!
//! This crate maps pmc-core's hwpmc-style API onto `perf_event_open(2)`:
//! one fd per target thread or CPU, groups with `PERF_FORMAT_GROUP`,
//! `read_format` with `TOTAL_TIME_ENABLED/RUNNING` for multiplex scaling,
//! and the enable/disable/reset/period ioctls.
//!
//! ```
//! use pmc_core::{Allocation, Backend as _, Pmc as _};
//! # fn main() -> pmc_core::Result<()> {
//! let backend = pmc_linux::Backend::open()?;
//! let mut faults = backend.allocate(&Allocation::counting("page-faults".parse()?))?;
//! faults.start()?;
//! let v = vec![1u8; 1 << 20];
//! faults.stop()?;
//! println!("{} page faults for {} bytes", faults.read()?.value, v.len());
//! # Ok(()) }
//! ```
//!
//! ## Required items
//!
//! Every backend crate of pmc is laid out the same way (pmc-freebsd too); a new one provides:
//!
//! * `Backend<S: Sys = RealSys>` (`backend.rs`): implements `pmc_core::Backend` and the hwpmc
//!   verbs, generic over the seam and monomorphised; `Backend::new()` for the real OS,
//!   `Backend::with_sys(sys)` for a fake or simulator.
//! * `Sys` (`sys/mod.rs`): the only door to the OS (syscalls, ioctls, mmap, `/proc`, sysfs,
//!   `/dev`); every OS fact comes through it, so everything above runs against the fake.
//! * `RealSys` (`sys/real.rs`): the real OS, its body in `sys/<os>.rs`, `sys/unsupported.rs`
//!   answering `ENOSYS` elsewhere, chosen by one `cfg_if`.
//! * the fake (`sys/fake/` here, `sys/sim/` on FreeBSD): a behavioural model implementing
//!   `Sys`, each rule cited.
//! * `Errno` (`errno.rs`): the one errno newtype `Sys` fails with; `Display` names it.
//! * `errno_map.rs`: (errno, op, facts) -> `pmc_core::Error` with what to do next.
//! * `events.rs`: event names -> the kernel's encodings; listing.
//! * `info.rs`: machine facts and diagnose.
//! * `log/`: the sample-log side.
//! * `internals`: the one `#[doc(hidden)]` re-export of what tests, benchmarks, fuzzers and
//!   sister crates need beyond the public API.
//!
//! # Platform support
//!
//! The crate builds on every OS (so its pure parts test anywhere; CI
//! type-checks it for FreeBSD and macOS); only the system calls in `sys` are
//! Linux-only, and elsewhere they fail with `ENOSYS`. Linux's own numbers
//! (errno values, `CLOCK_MONOTONIC`) are fixed in the crate, not the host
//! libc's ([`errno`]).
#![deny(unsafe_code)]
#![warn(missing_docs, unreachable_pub, unnameable_types)]

mod backend;
mod cgroup;
mod counter;
mod describe;
pub mod env;
pub mod errno;
mod errno_map;
mod events;
mod info;
#[cfg(feature = "sampling")]
mod log;
mod rdpmc;
#[cfg(feature = "sampling")]
mod record;
#[cfg(feature = "sampling")]
mod ring;
mod shared;
mod sys;
mod user_read;

pub use backend::Backend;
pub use counter::{LinuxGroup, LinuxPmc, MAX_GROUP_MEMBERS};
pub use describe::attr_fields;
pub use errno::Errno;
#[cfg(feature = "sampling")]
pub use log::{
    OwnedSample, SamplingDetails, DEFAULT_RING_PAGES, DEFAULT_SPOOL_BYTES, DRAIN_PERIOD,
    DWARF_RING_PAGES, PERF_RING_PAGES,
};
pub use rdpmc::{Fallback, FastReader, ReadPath, MAX_RETRIES};
pub use sys::{RealSys, Sys};

/// What this crate's tests, the benchmarks, the fuzz harness and sister crates need beyond the
/// public API: the ring reader and record parser, the seam's vocabulary, and the fake kernel
/// (feature `fake-kernel`). Not a stable API.
#[doc(hidden)]
pub mod internals {
    /// The perf record parser (`record/`).
    #[cfg(feature = "sampling")]
    pub mod record {
        pub use crate::record::*;
    }
    /// The ring-buffer reader (`ring.rs`).
    #[cfg(feature = "sampling")]
    pub mod ring {
        pub use crate::ring::*;
    }
    /// The fake kernel (`sys/fake/`).
    #[cfg(any(test, feature = "fake-kernel"))]
    pub mod fake {
        pub use crate::sys::fake::*;
    }
    pub use crate::sys::{Clock, Facts, FileMeta, Ioctl, MmapRing, Rlimit};
}
