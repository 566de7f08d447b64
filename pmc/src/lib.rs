//! # pmc: portable performance counters
//!
//! One API to hardware (and software) performance counters on Linux
//! (`perf_event_open(2)`) and FreeBSD (`hwpmc(4)`), modelled on hwpmc's
//! verbs: allocate, attach, detach, start, stop, read, write, set_count,
//! release (on drop).
//!
//! ```
//! use pmc::{Allocation, Backend, Pmc};
//!
//! fn main() -> pmc::Result<()> {
//!     let backend = pmc::Native::open()?;
//!     let mut faults = backend.allocate(&Allocation::counting("page-faults".parse()?))?;
//!     faults.start()?; // attaches to this process: all its threads, later ones too
//!     let buf = vec![7u8; 1 << 22];
//!     faults.stop()?;
//!     let r = faults.read()?;
//!     println!("{} page faults ({} bytes), running {:?}", r.value, buf.len(), r.running_ratio());
//!     Ok(())
//! }
//! ```
//!
//! A process PMC counts the whole process, as hwpmc does: every thread it
//! has and every thread it creates after `start` (Linux 5.13+; older kernels
//! refuse rather than undercount), and its child processes only with
//! [`Allocation::descendants`]. [`Target::CurrentThread`] is the calling
//! thread alone (Linux), for user-space counter reads.
//!
//! # Required types
//!
//! Each backend crate exports the same names, and this crate picks the
//! native one (the only place in the project that chooses by OS):
//!
//! | name | Linux | FreeBSD | elsewhere |
//! |---|---|---|---|
//! | [`Native`] | `pmc_linux::Backend` | `pmc_freebsd::Backend` | `pmc::Unsupported` |
//!
//! `Native::open()` returns the backend; everything else goes through the
//! [`Backend`], [`Pmc`] and [`Group`] traits re-exported from `pmc-core`.
//! [`NativePmc`] and [`NativeGroup`] name the backend's PMC and group types,
//! for storing them in your own structs.
//!
//! # Conveniences
//!
//! - [`measure`] counts events around a closure, and [`Region`] is the same
//!   as a guard: both count the calling process and the threads it starts
//!   meanwhile.
//! - The crate's `examples/` run as they are: `cargo run -p pmc --example
//!   region` (also `group_ratio`, `child_process`, `system_wide`,
//!   `sample_and_read`).
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub use pmc_core::*;

mod region;
pub use region::{measure, Count, Region};

/// The native backend's PMC type (`<Native as Backend>::Pmc`).
pub type NativePmc = <Native as Backend>::Pmc;
/// The native backend's group type (`<Native as Backend>::Group`).
pub type NativeGroup = <Native as Backend>::Group;

cfg_if::cfg_if! {
    if #[cfg(target_os = "linux")] {
        /// The native backend: perf_event on Linux.
        pub type Native = pmc_linux::Backend;
        pub use pmc_linux as native;
    } else if #[cfg(target_os = "freebsd")] {
        /// The native backend: hwpmc on FreeBSD.
        pub type Native = pmc_freebsd::Backend;
        pub use pmc_freebsd as native;
    } else {
        mod unsupported;
        pub use unsupported::Unsupported;
        /// The native backend: none on this OS; every call fails with
        /// [`ErrorKind::Unsupported`].
        pub type Native = Unsupported;
    }
}
