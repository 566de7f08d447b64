//! # pmc: portable performance counters
//!
//! One API to performance counters on Linux and FreeBSD: open [`Native`], allocate a [`Pmc`]
//! or [`Group`] from an [`Allocation`], start, read. Also [`measure`] / [`Region`] (count a
//! closure), `pmc::launch` (a command launched paused before exec, feature `launch`, on by
//! default), `pmc::analyze` (reports over sample logs, feature `analyze`) and `native` (the
//! OS's own extras). Details: the example, "Required types", "Conveniences".
//!
//! # Details
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
//! | [`Native`] | `pmc_linux::Backend` | `pmc_freebsd::Backend` | `pmc_unsupported::Backend` (`pmc::Unsupported`) |
//! | `native` | the crate `pmc_linux` | the crate `pmc_freebsd` | the crate `pmc_unsupported` |
//!
//! `Native::open()` returns the backend; everything else goes through the
//! [`Backend`], [`Pmc`] and [`Group`] traits re-exported from `pmc-core`.
//! [`NativePmc`] and [`NativeGroup`] name the backend's PMC and group types,
//! for storing them in your own structs.
//!
//! [`Native`] (a type) and `native` (a module) are two names for two
//! things: `Native` is the backend struct you open, and is all portable
//! code needs; `native` is the whole backend crate, for what only that
//! system has (on Linux `pmc::native::FastReader`, user-space counter reads,
//! and `pmc::native::internals::fake::FakeKernel`, a model of perf_event for tests,
//! behind pmc-linux's feature `fake-kernel`). Code using `native` builds on
//! that system only. Its pages are the backend crate's own docs, so their
//! examples say `pmc_linux::` and `pmc_core::`: through this crate, read
//! them as `pmc::native::` and `pmc::`. Rustdoc lists pmc-core's
//! [`Backend`] trait as implemented "for Backend": that is the struct
//! [`Native`] names.
//!
//! # Conveniences
//!
//! - [`measure`] counts events around a closure, and [`Region`] is the same
//!   as a guard: both count the calling process and the threads it starts
//!   meanwhile.
//! - The self-test of this machine's counters against calibrated workloads
//!   (`pmcstat --selftest`) is a program over this API, the crate
//!   `pmc-selftest`: `pmc_selftest::run_native()`, or `pmc_selftest::run` on
//!   any backend.
//! - The crate's `examples/` run as they are: `cargo run -p pmc --example
//!   region` (also `group_ratio`, `child_process`, `system_wide`,
//!   `sample_and_read`).
//!
//! # Reading samples: symbols, call graphs, flame graphs (`pmc::analyze`)
//!
//! A sampling PMC ([`Allocation::sampling`]) writes its samples into the
//! backend's log ([`Backend::configure_log`]) in the pmc-log format, or
//! delivers them to this process ([`Pmc::samples`], Linux). The addresses
//! in them become function names, call graphs and reports with the
//! analysis crate, pmc-analyze, the code behind `pmcstat -R`: with this
//! crate's feature `analyze` it is `pmc::analyze`
//! (`pmc = { version = "0.1", features = ["analyze"] }`), or depend on
//! `pmc-analyze` itself. Its own pages call it `pmc_analyze`: through this
//! crate read `pmc_analyze::` as `pmc::analyze::`. It symbolizes
//! (`analyze::Profile::from_log`, from a log's bytes) and writes every
//! report `pmcstat` has: `-G` call graphs (`analyze::callgraph`;
//! `CallGraphOptions::default()` is top-down, callers first, while
//! `pmcstat -G` prints callees first: `order: Order::Callees`), folded
//! stacks and flame graphs (`analyze::flame`), top-N tables
//! (`analyze::top`), gprof, callgrind and pprof files.
//!
//! ```no_run
//! use pmc::analyze::callgraph::{write_callgraph, CallGraphOptions, Order};
//! use pmc::analyze::top::{TopOptions, TopReport};
//! use pmc::analyze::{AnalyzeOptions, Profile};
//! use pmc::{Allocation, Backend, Pmc, Rate};
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let path = std::env::temp_dir().join("example.pmclog");
//!     let backend = pmc::Native::open()?;
//!     backend.configure_log(Box::new(std::fs::File::create(&path)?))?;
//!     // cpu-clock at 2000 samples per second of CPU time, of this process.
//!     let a = Allocation::sampling("cpu-clock".parse()?, Rate::Frequency(2000));
//!     let mut pmc = backend.allocate(&a)?;
//!     pmc.start()?;
//!     let x = (0..300_000_000u64).fold(0u64, |a, i| a.wrapping_mul(31).wrapping_add(i));
//!     pmc.stop()?;
//!     drop(pmc);
//!     backend.close_log()?; // the log is whole once closed
//!
//!     let profile = Profile::from_log(&std::fs::read(&path)?, AnalyzeOptions::default())?;
//!     let mut out = std::io::stdout().lock();
//!     TopReport::build(&profile, &TopOptions::default()).write_text(&mut out)?;
//!     // pmcstat -G's layout: sampled functions first, each followed by its callers.
//!     let callees_first = CallGraphOptions { order: Order::Callees, ..Default::default() };
//!     write_callgraph(&profile, &callees_first, &mut out)?;
//!     println!("({x})");
//!     Ok(())
//! }
//! ```
//!
//! `cargo run -p pmc --example sample_and_read` is the same, runnable.
#![warn(unreachable_pub, unnameable_types)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub use pmc_core::*;
// `pmc::process` and, on every Unix with the feature `launch`, `pmc::launch`: the processes
// a measurement is about (pmc-process, the OS-specific half kept out of pmc-core).
pub use pmc_process::*;

/// The analysis crate, pmc-analyze (feature `analyze`): symbolization and
/// the reports of `pmcstat -R` over a sample log. See [the crate
/// docs](crate#reading-samples-symbols-call-graphs-flame-graphs-pmcanalyze).
#[cfg(feature = "analyze")]
pub use pmc_analyze as analyze;

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
        /// The native backend crate, pmc-linux, for what only Linux has
        /// (`FastReader`, `fake::FakeKernel`...). Portable code needs
        /// [`Native`] only (crate docs: "Required types").
        pub use pmc_linux as native;
    } else if #[cfg(target_os = "freebsd")] {
        /// The native backend: hwpmc on FreeBSD.
        pub type Native = pmc_freebsd::Backend;
        /// The native backend crate, pmc-freebsd, for what only FreeBSD has
        /// (`Backend::configure_hwpmc_log`, the simulator behind its feature
        /// `sim`...). Portable code needs [`Native`] only (crate docs:
        /// "Required types").
        pub use pmc_freebsd as native;
    } else {
        /// The backend of an OS without one (pmc-unsupported's): `open`
        /// fails with [`ErrorKind::Unsupported`], as every call does.
        pub type Unsupported = pmc_unsupported::Backend;
        /// The native backend: none on this OS; every call fails with
        /// [`ErrorKind::Unsupported`].
        pub type Native = Unsupported;
        /// The native backend crate, pmc-unsupported: the backend of an OS
        /// without one, laid out as every backend crate is. Portable code
        /// needs [`Native`] only (crate docs: "Required types").
        pub use pmc_unsupported as native;
    }
}
