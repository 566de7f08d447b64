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
//! - [`selftest()`] checks this machine's counters against calibrated
//!   workloads (exact instruction loops, fresh pages, context switches,
//!   sampling periods...), one row per event class with a verdict:
//!   `pmcstat --selftest`. [`selftest::run`] runs it on any backend.
//! - The crate's `examples/` run as they are: `cargo run -p pmc --example
//!   region` (also `group_ratio`, `child_process`, `system_wide`,
//!   `sample_and_read`).
#![deny(unsafe_code)]
#![deny(missing_docs)]

pub use pmc_core::*;

mod region;
pub use region::{measure, Count, Region};
pub mod selftest;
// The self-test's loop and pages: the facade's only `unsafe`.
#[allow(unsafe_code)]
mod sys;

/// Runs the self-test ([`selftest::run`]) on the native backend, with its
/// user-space read check where it has one (Linux).
///
/// ```
/// let report = pmc::selftest()?;
/// // On a VM without a PMU the hardware rows SKIP; nothing may FAIL.
/// println!("{report}");
/// # Ok::<(), pmc::Error>(())
/// ```
///
/// # Errors
/// Only opening the backend ([`Backend`]'s `open`); every check's own
/// failure is a row.
pub fn selftest() -> Result<selftest::Report> {
    let backend = Native::open()?;
    let options = selftest::Options {
        user_reads: native_user_reads(),
        ..selftest::Options::default()
    };
    Ok(selftest::run(&backend, &options))
}

/// The native backend's PMC type (`<Native as Backend>::Pmc`).
pub type NativePmc = <Native as Backend>::Pmc;
/// The native backend's group type (`<Native as Backend>::Group`).
pub type NativeGroup = <Native as Backend>::Group;

cfg_if::cfg_if! {
    if #[cfg(target_os = "linux")] {
        /// The native backend: perf_event on Linux.
        pub type Native = pmc_linux::Backend;
        pub use pmc_linux as native;
        #[path = "selftest/fast_read.rs"]
        mod fast_read;
        fn native_user_reads() -> Option<selftest::UserReadProbe> {
            Some(fast_read::probe)
        }
    } else if #[cfg(target_os = "freebsd")] {
        /// The native backend: hwpmc on FreeBSD.
        pub type Native = pmc_freebsd::Backend;
        pub use pmc_freebsd as native;
        fn native_user_reads() -> Option<selftest::UserReadProbe> {
            None
        }
    } else {
        mod unsupported;
        pub use unsupported::Unsupported;
        /// The native backend: none on this OS; every call fails with
        /// [`ErrorKind::Unsupported`].
        pub type Native = Unsupported;
        fn native_user_reads() -> Option<selftest::UserReadProbe> {
            None
        }
    }
}
