//! Sampling on perf_event: ring buffers, the log drain thread, and in-process samples.
//!
//! `hub/` (writer, rings, drain thread) reads rings through `source.rs`, converts records in
//! `convert.rs`, orders them in `reorder.rs` and writes through `spool.rs`; `post.rs` runs the
//! post-processors (`proccsw.rs`, `procexit.rs`, `unwind.rs`); `synth.rs` reads `/proc`;
//! `local.rs` gives [`OwnedSample`]s in process; [`SamplingDetails`] sums it up.
//!
//! # How samples reach the log
//!
//! When a sampling PMC starts, [`crate::counter`] maps one ring buffer per CPU (system scope,
//! or process scope with descendants) or per thread (process scope without descendants) and
//! registers the rings with the backend's log hub. Events that share a CPU (group members, the
//! threads of an inherited process PMC on that CPU) send their records to one ring with
//! `PERF_EVENT_IOC_SET_OUTPUT`. The hub:
//!
//! 1. wrote the log header at [`configure_log`](pmc_core::Backend::configure_log) (host facts
//!    from `/proc`, the clock, the start wall time);
//! 2. writes a [`PmcDescriptor`](pmc_log::record::PmcDescriptor) for each PMC before any of its
//!    samples, then synthesizes, as `perf record` does, the command names (`COMM`) and executable
//!    mappings (`/proc/<pid>/maps`) of processes that were already running (the attached pid,
//!    or every process for system scope), so their samples can be symbolized;
//! 3. writes the log through a spool (a bounded queue of sealed blocks written by a thread of
//!    its own, [`DEFAULT_SPOOL_BYTES`]), so that the drain never waits on a slow sink;
//! 4. runs a drain thread that `poll(2)`s the rings (each ring wakes it when half full:
//!    `watermark`/`wakeup_watermark`), with a [`DRAIN_PERIOD`] timeout so a slow trickle of
//!    samples still reaches the log, parses every record with the crate's `record` module, converts it to
//!    a pmc-log record and writes it through one [`pmc_log::Writer`].
//!
//! With a backlog ([`Backend::set_log_backlog`](crate::Backend::set_log_backlog)), a pass over
//! system-wide rings of frame-pointer samples only copies their records into a temporary
//! file, and the decoding waits until sampling stops or the backlog reaches its bound
//! (`hub/backlog.rs`).
//!
//! Beside conversion, the drain runs its bookkeeping jobs (log-proccsw, log-procexit, the
//! DWARF unwinding stage) as post-processors, each seeing every record as drained from its
//! ring and again, in time order, as it is written (see `post.rs`).
//!
//! [`flush_log`](pmc_core::Backend::flush_log) drains every ring and flushes the writer;
//! [`close_log`](pmc_core::Backend::close_log) stops the thread, drains one last time and writes
//! the clean-close marker.
//!
//! # Record mapping
//!
//! | perf record | pmc-log record |
//! |---|---|
//! | `SAMPLE` | [`Sample`](pmc_log::record::Sample) (callchain leaf first, kernel frames first) |
//! | `MMAP2`, `MMAP` (executable only) | [`Map`](pmc_log::record::Map) |
//! | `COMM` (exec flag kept) | [`Comm`](pmc_log::record::Comm) |
//! | `FORK` | [`Fork`](pmc_log::record::Fork), or [`ThreadCreate`](pmc_log::record::ThreadCreate) for a new thread |
//! | `EXIT` | [`Exit`](pmc_log::record::Exit), or [`ThreadExit`](pmc_log::record::ThreadExit) |
//! | `LOST`, `LOST_SAMPLES` | [`Lost`](pmc_log::record::Lost) with the count |
//! | `THROTTLE` | [`Lost`](pmc_log::record::Lost) with count 0 ("some, unknown") |
//! | (at each drain pass after which the ring may have been full, from the ring owner's fd, and at stop, from every fd) the kernel's `PERF_FORMAT_LOST` count beyond the ring's `LOST` records | [`Lost`](pmc_log::record::Lost) with the difference, the ring's PMC and CPU |
//! | (when the log's sink falls behind) samples in blocks the spool dropped | [`Lost`](pmc_log::record::Lost) with their count, no PMC, no CPU |
//! | `EXIT`, for sampling PMCs with log-procexit | also a [`Counter`](pmc_log::record::Counter), kind `ProcessExit` with the sum of the process's sample periods |
//! | `READ` (`inherit_stat`), for counting PMCs with log-procexit | a [`Counter`](pmc_log::record::Counter), kind `ProcessExit` per process that exited, with its count (its tasks' `READ`s summed; the target's own, its events' total less them): each target's when the kernel hangs up its events (it and its tasks are gone, the PMC stopped or not), and at stop those of the processes whose `READ`s came (see `ExitReads`) |
//! | `SAMPLE` of a log-proccsw switch group (a context switch, with `PERF_SAMPLE_READ`) | a [`Counter`](pmc_log::record::Counter) per PMC, kind `ContextSwitch`: the counts (and enabled/running times) of the time slice that just ended, per thread |
//!
//! Every loss is also counted in the [`SamplingDetails`] (per CPU), which
//! [`Backend::sampling_details`](crate::Backend::sampling_details) returns.
//!
//! # Timestamps
//!
//! Every event is opened with `use_clockid` and `clockid = CLOCK_MONOTONIC`, so sample times,
//! synthesized records and the header's `start_time` share one clock: nanoseconds of
//! `CLOCK_MONOTONIC` ([`Clock::Monotonic`](pmc_log::record::Clock::Monotonic)).

mod convert;
mod hub;
mod local;
mod post;
mod proccsw;
mod procexit;
mod reorder;
mod source;
mod spool;
mod summary;
mod synth;
#[cfg(test)]
mod testutil;
pub(crate) mod unwind;

use crate::sys::{Clock, Sys};
use std::time::Duration;

pub(crate) use crate::ring::MmapRing;
pub(crate) use hub::{BacklogBound, Hub};
pub(crate) use local::LocalRings;
pub use local::OwnedSample;
pub(crate) use source::{RingPurpose, RingSource};
pub use spool::DEFAULT_SPOOL_BYTES;
pub use summary::SamplingDetails;
pub(crate) use synth::{exe_path, Synth};

/// The longest the drain thread waits before reading the rings even if none woke it.
pub const DRAIN_PERIOD: Duration = Duration::from_millis(100);

/// The default size of each ring's data area, in pages (256 KiB with 4 KiB pages: about 6000
/// samples with short callchains).
pub const DEFAULT_RING_PAGES: usize = 64;

/// The ring size `perf record` maps, 512 KiB with 4 KiB pages: the default when no
/// locked-memory limit applies (`CAP_IPC_LOCK`, as root, or `perf_event_paranoid` -1). The
/// drain is woken half as often per sample as with [`DEFAULT_RING_PAGES`] (each wake-up is a
/// context switch, tens of microseconds of CPU on a virtual machine), and bursts have twice
/// the room. Also a privileged (`CAP_PERFMON`) caller's DWARF rings under the limit.
pub const PERF_RING_PAGES: usize = 128;

/// The default ring size for PMCs whose samples carry user stacks (`CallGraph::Dwarf`), when
/// no locked-memory limit applies (`CAP_IPC_LOCK`, as root): 2 MiB with 4 KiB pages (about
/// 240 samples of 8 KiB stacks; the drain is woken at half, every ~120 samples, and 30 ms of
/// samples at 4 kHz fit in the other half). `perf record` maps 512 KiB: each wake-up, tens
/// of microseconds of CPU on a virtual machine, then drains 30 samples, and 8 ms of them
/// fill the rest.
pub const DWARF_RING_PAGES: usize = 512;

/// `CLOCK_MONOTONIC` now, in nanoseconds: the clock of every timestamp in the log.
pub(crate) fn now(sys: &dyn Sys) -> u64 {
    sys.clock_ns(Clock::Monotonic)
}
