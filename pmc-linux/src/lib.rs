//! # pmc-linux: the perf_event backend of pmc
//!
//! You probably want the `pmc` facade, which picks this backend on Linux as
//! `pmc::Native`.
//!
//! This crate maps pmc-core's hwpmc-style API onto `perf_event_open(2)`:
//! one fd per target thread or CPU, groups with `PERF_FORMAT_GROUP`,
//! `read_format` with `TOTAL_TIME_ENABLED/RUNNING` for multiplex scaling,
//! and the enable/disable/reset/period ioctls. See [`counter`] for where
//! hwpmc semantics are emulated, and [`sampler`] for sampling: ring buffers, the
//! drain thread writing the pmc-log, and in-process samples.
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
//! # Platform support
//!
//! The crate builds on every OS (so its pure parts test anywhere); only the
//! system calls in `sys` are Linux-only, and elsewhere they fail with
//! `ENOSYS`.
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod backend;
pub mod counter;
mod describe;
pub mod env;
mod errno;
pub mod rdpmc;
pub mod sampler;
mod sys;
mod unwind;

// The modules behind the API: public only with the `internals` feature (this crate's tests,
// the fuzz harness, the benchmarks), so a user sees the backend, its PMC and group types,
// the sampling summary, in-process samples, fast reads and the machine facts of `env`.
macro_rules! internal_mods {
    ($($(#[$m:meta])* $name:ident;)*) => {$(
        $(#[$m])*
        #[cfg(feature = "internals")]
        pub mod $name;
        $(#[$m])*
        #[cfg(not(feature = "internals"))]
        #[allow(dead_code)]
        mod $name;
    )*};
}
internal_mods! {
    errno_map;
    events;
    info;
    record;
    ring;
}

pub use backend::Backend;
pub use counter::{LinuxGroup, LinuxPmc};
pub use describe::attr_fields;
pub use rdpmc::{Fallback, FastReader, ReadPath};
pub use sampler::{CpuCounts, OwnedSample, SamplingSummary};
#[cfg(any(test, feature = "fake-kernel"))]
pub use sys::fake;
#[doc(hidden)]
pub use sys::{Clock, Errno, Facts, FileMeta, Ioctl, RealSys, Rlimit, Sys};
