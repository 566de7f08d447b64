//! # pmc-selftest: a self-test of this machine's counters
//!
//! Calibrated workloads whose counts are known, each counted through a
//! [`Backend`] of pmc's API and judged: a program over the library (`pmcstat
//! --selftest` runs it), not part of its face.
//!
//! [`run`] (or [`run_native`]) takes [`Options`] and gives a [`Report`] of [`Row`]s, each
//! with a [`Verdict`] (`report.rs`). The checks are in `checks.rs` (counting) and
//! `sampling.rs`, the workloads in `workload.rs` (their contact with the machine, the loop's
//! assembly and fresh pages, in `sys/`), the user-space read probe in `sys/fast_read.rs`
//! (Linux). Below: the example, the checks, the verdicts.
//!
//! Laptops, cloud VMs and CI runners differ: a VM may have no virtual PMU,
//! a hypervisor may multiplex the counters, the NMI watchdog may hold one,
//! `perf_event_paranoid` may hide the kernel's part. [`run`] says which of
//! the event classes work here, one [`Row`] per check, each with what was
//! measured, what was expected, their ratio and a [`Verdict`]; a row that
//! is not a PASS says why and what the likely cause is (from
//! [`Backend::diagnose`]).
//!
//! ```
//! let report = pmc_selftest::run_native()?;
//! print!("{report}");
//! for row in &report.rows {
//!     if row.verdict == pmc_selftest::Verdict::Fail {
//!         eprintln!("{}: {}", row.check, row.note);
//!     }
//! }
//! # Ok::<(), pmc::Error>(())
//! ```
//!
//! # The checks
//!
//! | check | workload | expected |
//! |---|---|---|
//! | `instructions` | an assembly loop of `2N` instructions (x86_64, aarch64) | exactly `2N` more than the same loop with `N = 0` |
//! | `branches` | the same loop: one branch per iteration | exactly `N` more |
//! | `cycles` | the loop, against the thread's CPU clock | cycles / ns between 0.2 and 10 (GHz) |
//! | `page faults` | one write into each of 512 fresh pages (`MADV_NOHUGEPAGE`) | one fault per page, at most 1/16 more |
//! | `context switches` | 200 round trips of a byte between two threads | at least 2 per round trip |
//! | `cpu migrations` | 8 moves of the thread with `sched_setaffinity` (Linux, 2+ CPUs) | at least 7 |
//! | `user-space reads` | the loop read from user space (`rdpmc`/`mrs`) and with `read(2)` (Linux) | the same count |
//! | `multiplexing` | 16 `instructions:u` counters over a loop of `20N` (200M instructions) | each scaled count within 3 % of `20N` (the error is about one rotation's share of the run: 1.8 % at 100M in the PMU lab) |
//! | `sampling period` | `cpu-clock` sampled every 100 us over 50 ms of CPU | the periods add up to `task-clock` (95-102 %; less is a WARN: timer expiries dropped; more than 110 % a FAIL) |
//! | `log round trip` | 3 user records and `cpu-clock` samples into an in-memory log | read back: 3 user records, as many samples as the backend counted |
//!
//! The hardware rows (instructions, branches, cycles, user-space reads,
//! multiplexing) SKIP without a PMU, saying so; software rows that the
//! kernel cannot show an unprivileged process (context switches and
//! migrations are kernel-mode events, invisible at `perf_event_paranoid` 2)
//! SKIP with that reason.
//!
//! # Verdicts
//!
//! PASS: as expected. WARN: counted, but off in a way that does not make
//! the counts wrong for most uses (a clock rate outside 0.2-10 GHz, a few
//! missed context switches, multiplexing error between 3 % and 20 %, huge
//! pages folding page faults, a sampling timer that fires late). FAIL: wrong or no counts. SKIP: cannot be
//! checked here, with the reason. [`Report::passed`] is true when no row
//! FAILs; `pmcstat --selftest` exits 0 then (warnings are printed, not
//! failures), 1 otherwise.
//!
//! # Cost
//!
//! Well under a second of CPU on hardware (the loops are 20M and 200M
//! instructions, the sampling checks 70 ms of CPU); memory is bounded (the
//! in-memory log stops taking bytes at 8 MiB, the pages are unmapped).

#![warn(unreachable_pub, unnameable_types)]
#![deny(unsafe_code)]
#![deny(missing_docs)]

use std::sync::Arc;

use pmc::{Backend, Error, ErrorKind, EventSpec, Pmc};

mod checks;
mod report;
mod sampling;
// The loop's assembly, fresh pages, the thread's clock and affinity (the crate's only
// `unsafe`), and the OS's own checks (Linux's user-space reads): every choice by OS.
#[allow(unsafe_code)]
mod sys;
mod workload;

use checks::Ctx;
pub use report::{Relation, Report, Row, Verdict};
pub use sys::insn_loop;

/// Runs the self-test ([`run`]) on the native backend, `pmc::Native`, with its user-space
/// read check where it has one (Linux: pmc-linux's `FastReader`).
///
/// ```
/// let report = pmc_selftest::run_native()?;
/// // On a VM without a PMU the hardware rows SKIP; nothing may FAIL.
/// println!("{report}");
/// # Ok::<(), pmc::Error>(())
/// ```
///
/// # Errors
/// Only opening the backend (`pmc::Native::open`); every check's own failure is a row.
pub fn run_native() -> Result<Report, Error> {
    let backend = pmc::Native::open()?;
    let options = Options {
        user_reads: sys::native_user_reads(),
        ..Options::default()
    };
    Ok(run(&backend, &options))
}

/// Attaches `p` to the calling thread alone where the backend can ([`pmc::Target::CurrentThread`],
/// Linux), so that the other threads of a program that runs the self-test add nothing to its
/// calibrated counts (with descendants, the threads the workload starts still count). A
/// backend that counts whole processes only (hwpmc) refuses it: then `start` attaches the
/// process, as hwpmc counts it.
pub(crate) fn attach_calling_thread<P: Pmc + ?Sized>(p: &mut P) -> Result<(), Error> {
    match p.attach(pmc::Target::CurrentThread) {
        Err(e) if e.kind() == ErrorKind::NotSupported => Ok(()),
        r => r,
    }
}

/// What a workload did, for [`Options::on_workload`]: the truth a model of
/// the machine (a simulator, a fake kernel) needs to count it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Ran {
    /// The check the workload belongs to.
    pub check: &'static str,
    /// User instructions of the loop (`2N`; 0 when not exact).
    pub instructions: u64,
    /// Branches of the loop (`N`).
    pub branches: u64,
    /// CPU time the thread used, nanoseconds (when measured).
    pub cpu_ns: u64,
    /// Fresh pages written (one fault each).
    pub pages: u64,
    /// Round trips between two threads (two context switches each).
    pub round_trips: u64,
    /// CPU moves forced.
    pub migrations: u64,
}

/// A user-space read probe (see [`Options::user_reads`]).
pub type UserReadProbe = fn(&Options) -> Row;

/// The workload hook (see [`Options::on_workload`]).
pub type WorkloadHook = Arc<dyn Fn(&Ran) + Send + Sync>;

/// What [`run`] does.
#[derive(Clone)]
#[non_exhaustive]
pub struct Options {
    /// `N`, the loop's iterations for the exact checks (default 10M: 20M
    /// instructions). The multiplexing check runs 10N.
    pub iterations: u64,
    /// Called right after each workload, while its PMCs still run, with
    /// what the workload did: lets a simulated backend count it (tests;
    /// `None` on real machines).
    pub on_workload: Option<WorkloadHook>,
    /// The user-space read check, for a backend that has one
    /// ([`run_native`] sets pmc-linux's `FastReader` check); without
    /// it the row SKIPs.
    pub user_reads: Option<UserReadProbe>,
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("iterations", &self.iterations)
            .field("on_workload", &self.on_workload.is_some())
            .field("user_reads", &self.user_reads.is_some())
            .finish()
    }
}

impl Default for Options {
    fn default() -> Options {
        Options {
            iterations: 10_000_000,
            on_workload: None,
            user_reads: None,
        }
    }
}

impl Options {
    /// Sets [`Options::iterations`].
    pub fn iterations(mut self, n: u64) -> Options {
        self.iterations = n;
        self
    }

    /// Sets [`Options::on_workload`].
    pub fn on_workload(mut self, hook: impl Fn(&Ran) + Send + Sync + 'static) -> Options {
        self.on_workload = Some(Arc::new(hook));
        self
    }

    /// Sets [`Options::user_reads`].
    pub fn user_reads(mut self, probe: UserReadProbe) -> Options {
        self.user_reads = Some(probe);
        self
    }

    pub(crate) fn ran(&self, ran: Ran) {
        if let Some(h) = &self.on_workload {
            h(&ran);
        }
    }
}

/// Runs every check against `backend`. Never fails: a check that cannot
/// run is a SKIP or a FAIL row saying why.
///
/// ```
/// use pmc_selftest::{Options, Verdict};
/// let backend = pmc::Native::open()?;
/// let report = pmc_selftest::run(&backend, &Options::default().iterations(100_000));
/// assert!(report.row("page faults").is_some());
/// # Ok::<(), pmc::Error>(())
/// ```
pub fn run<B: Backend>(backend: &B, options: &Options) -> Report {
    let ctx = Ctx {
        backend,
        opts: options,
        diagnosis: std::sync::OnceLock::new(),
    };
    let mut rows = vec![
        ctx.exact_loop("instructions", "instructions:u", 2),
        ctx.exact_loop("branches", "branches:u", 1),
        ctx.cycles(),
        ctx.page_faults(),
        ctx.context_switches(),
        ctx.migrations(),
        ctx.user_reads(),
        ctx.multiplexing(),
        ctx.sampling(),
        ctx.log_round_trip(),
    ];
    for r in &mut rows {
        if r.verdict != Verdict::Pass {
            // The machine's diagnosis first: it names the cause and its fix; the row's own
            // cause (an absent event's, from its error) is kept only without one.
            let c = ctx.causes(r);
            if !c.is_empty() {
                r.causes = c;
            }
        }
    }
    Report {
        backend: backend.name().to_owned(),
        rows,
    }
}

/// Whether an allocation error means "not on this machine" (a SKIP) rather
/// than "broken" (a FAIL).
pub(crate) fn absent(e: &Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::NoPmu
            | ErrorKind::NoSuchEvent
            | ErrorKind::NotSupported
            | ErrorKind::Unsupported
    )
}

pub(crate) fn spec(event: &str) -> Option<EventSpec> {
    event.parse().ok()
}

/// A row for a failed allocation: SKIP when the event is absent here,
/// FAIL otherwise.
pub(crate) fn alloc_failed(row: Row, e: &Error) -> Row {
    if absent(e) {
        // The message alone; the error's kind is the cause, its help the fix. The run
        // keeps this cause only where the machine's diagnosis names none.
        let mut row = row.skip(format!("not available here: {}", e.message()));
        let cause = absence_cause(e.kind());
        row.causes.push(match e.help() {
            Some(h) => format!("{cause} (fix: {h})"),
            None => cause.to_owned(),
        });
        row
    } else {
        row.fail(format!("cannot count: {e}"))
    }
}

/// The cause an absent event's error kind names.
fn absence_cause(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::NoPmu => "no hardware PMU: the kernel exposes no CPU counters here",
        ErrorKind::NoSuchEvent => "this machine has no such event (PMU, tracepoint or alias)",
        ErrorKind::Unsupported => "no performance-counter backend for this operating system",
        _ => "the kernel or the CPU does not support this event",
    }
}

/// `|m - e| / e`.
pub(crate) fn rel_err(m: u64, e: u64) -> f64 {
    if e == 0 {
        return if m == 0 { 0.0 } else { f64::INFINITY };
    }
    (m as f64 - e as f64).abs() / e as f64
}
