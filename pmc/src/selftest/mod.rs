//! A self-test of this machine's counters: calibrated workloads whose counts
//! are known, each counted through a [`Backend`] and judged.
//!
//! [`run`] (or `pmc::selftest()`) takes [`Options`] and gives a [`Report`] of [`Row`]s, each
//! with a [`Verdict`]. The workloads are in `workload.rs`, the user-space read probe in
//! `fast_read.rs` (Linux). Below: the example, the checks, the verdicts.
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
//! let report = pmc::selftest()?;
//! print!("{report}");
//! for row in &report.rows {
//!     if row.verdict == pmc::selftest::Verdict::Fail {
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

use std::sync::Arc;
#[cfg(feature = "sampling")]
use std::sync::Mutex;

use crate::{
    info::{Check, Verdict as DiagVerdict},
    Allocation, Backend, Error, ErrorKind, EventSpec, Pmc, Rate, Reading, Status,
};

pub(crate) mod workload;

/// Attaches `p` to the calling thread alone where the backend can ([`crate::Target::CurrentThread`],
/// Linux), so that the other threads of a program that runs the self-test add nothing to its
/// calibrated counts (with descendants, the threads the workload starts still count). A
/// backend that counts whole processes only (hwpmc) refuses it: then `start` attaches the
/// process, as hwpmc counts it.
pub(crate) fn attach_calling_thread<P: Pmc + ?Sized>(p: &mut P) -> Result<(), Error> {
    match p.attach(crate::Target::CurrentThread) {
        Err(e) if e.kind() == ErrorKind::NotSupported => Ok(()),
        r => r,
    }
}

/// The verdict of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "UPPERCASE"))]
pub enum Verdict {
    /// As expected.
    Pass,
    /// Counted, but off; usable with care (see the row's note).
    Warn,
    /// Wrong or missing counts.
    Fail,
    /// Could not be checked here (the note says why).
    Skip,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(match self {
            Verdict::Pass => "PASS",
            Verdict::Warn => "WARN",
            Verdict::Fail => "FAIL",
            Verdict::Skip => "SKIP",
        })
    }
}

/// How a row's measured value relates to its expected one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Relation {
    /// Exactly the expected value.
    Exact,
    /// At least the expected value.
    AtLeast,
    /// About the expected value (the note says how close).
    About,
    /// Another unit: the ratio is the figure (cycles per nanosecond: GHz).
    Rate,
}

/// One check's result.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Row {
    /// The check's name (`instructions`, `page faults`, ...).
    pub check: &'static str,
    /// The event as counted (`instructions:u`), or what was exercised.
    pub event: String,
    /// Whether the check needs a hardware PMU.
    pub hardware: bool,
    /// What was measured, if anything.
    pub measured: Option<u64>,
    /// What was expected, if known.
    pub expected: Option<u64>,
    /// How `measured` should relate to `expected`.
    pub relation: Relation,
    /// The verdict.
    pub verdict: Verdict,
    /// What was found; for a row that is not a PASS, why.
    pub note: String,
    /// For a WARN, FAIL or SKIP: the machine's likely causes (no vPMU,
    /// the NMI watchdog, `perf_event_paranoid`, the kernel version...).
    pub causes: Vec<String>,
}

impl Row {
    /// `measured / expected`, when both are known and `expected` is not 0.
    ///
    /// ```
    /// use pmc::selftest::{Relation, Row, Verdict};
    /// let row = Row {
    ///     check: "cycles", event: "cycles:u".into(), hardware: true,
    ///     measured: Some(3_000_000), expected: Some(1_000_000), relation: Relation::Rate,
    ///     verdict: Verdict::Pass, note: String::new(), causes: vec![],
    /// };
    /// assert_eq!(row.ratio(), Some(3.0)); // 3 GHz
    /// ```
    pub fn ratio(&self) -> Option<f64> {
        match (self.measured, self.expected) {
            (Some(m), Some(e)) if e > 0 => Some(m as f64 / e as f64),
            _ => None,
        }
    }

    pub(crate) fn new(check: &'static str, event: impl Into<String>, hardware: bool) -> Row {
        Row {
            check,
            event: event.into(),
            hardware,
            measured: None,
            expected: None,
            relation: Relation::Exact,
            verdict: Verdict::Skip,
            note: String::new(),
            causes: Vec::new(),
        }
    }

    pub(crate) fn skip(mut self, note: impl Into<String>) -> Row {
        self.verdict = Verdict::Skip;
        self.note = note.into();
        self
    }

    fn fail(mut self, note: impl Into<String>) -> Row {
        self.verdict = Verdict::Fail;
        self.note = note.into();
        self
    }

    pub(crate) fn judged(
        mut self,
        measured: u64,
        expected: u64,
        relation: Relation,
        verdict: Verdict,
        note: impl Into<String>,
    ) -> Row {
        self.measured = Some(measured);
        self.expected = Some(expected);
        self.relation = relation;
        self.verdict = verdict;
        self.note = note.into();
        self
    }
}

/// Every check's row, in order.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Report {
    /// The backend's name (`linux-perf`, `freebsd-hwpmc`).
    pub backend: String,
    /// One row per check.
    pub rows: Vec<Row>,
}

impl Report {
    /// Whether no row FAILed (SKIPs and WARNs are not failures).
    ///
    /// ```
    /// use pmc::selftest::Report;
    /// assert!(Report { backend: "none".into(), rows: vec![] }.passed());
    /// ```
    pub fn passed(&self) -> bool {
        self.rows.iter().all(|r| r.verdict != Verdict::Fail)
    }

    /// How many rows have `verdict`.
    pub fn count(&self, verdict: Verdict) -> usize {
        self.rows.iter().filter(|r| r.verdict == verdict).count()
    }

    /// The row of `check`, if it ran.
    pub fn row(&self, check: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.check == check)
    }
}

fn relation_sign(r: Relation) -> &'static str {
    match r {
        Relation::Exact => "=",
        Relation::AtLeast => ">=",
        Relation::About => "~",
        Relation::Rate => "ns",
    }
}

impl std::fmt::Display for Report {
    /// The human table: one line per check, then each non-PASS row's likely
    /// causes, then a summary line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "pmc self-test on the {} backend", self.backend)?;
        writeln!(
            f,
            "{:<17} {:<19} {:>13} {:>16} {:>8}  {:<7} NOTE",
            "CHECK", "EVENT", "MEASURED", "EXPECTED", "RATIO", "VERDICT"
        )?;
        // Each cause once: the rows of a machine without a PMU share theirs.
        let mut said = std::collections::BTreeSet::new();
        for r in &self.rows {
            let m = r.measured.map_or("-".to_owned(), |m| m.to_string());
            let e = r.expected.map_or("-".to_owned(), |e| {
                if r.relation == Relation::Rate {
                    format!("{e} ns")
                } else {
                    format!("{} {e}", relation_sign(r.relation))
                }
            });
            let ratio = r.ratio().map_or("-".to_owned(), |x| format!("{x:.4}"));
            writeln!(
                f,
                "{:<17} {:<19} {m:>13} {e:>16} {ratio:>8}  {:<7} {}",
                r.check, r.event, r.verdict, r.note
            )?;
            for c in &r.causes {
                if said.insert(c.as_str()) {
                    writeln!(f, "{:<17} likely cause: {c}", "")?;
                }
            }
        }
        writeln!(
            f,
            "{} passed, {} warned, {} failed, {} skipped: {}",
            self.count(Verdict::Pass),
            self.count(Verdict::Warn),
            self.count(Verdict::Fail),
            self.count(Verdict::Skip),
            if self.passed() {
                "the counters that are here count right"
            } else {
                "some counts are wrong here (see FAIL)"
            }
        )
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
    /// ([`crate::selftest()`] sets pmc-linux's `FastReader` check); without
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

    fn ran(&self, ran: Ran) {
        if let Some(h) = &self.on_workload {
            h(&ran);
        }
    }
}

/// Runs every check against `backend`. Never fails: a check that cannot
/// run is a SKIP or a FAIL row saying why.
///
/// ```
/// use pmc::selftest::{self, Options, Verdict};
/// let backend = pmc::Native::open()?;
/// let report = selftest::run(&backend, &Options::default().iterations(100_000));
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
            let mut c = ctx.causes(r);
            c.append(&mut r.causes);
            r.causes = c;
        }
    }
    Report {
        backend: backend.name().to_owned(),
        rows,
    }
}

/// Whether an allocation error means "not on this machine" (a SKIP) rather
/// than "broken" (a FAIL).
fn absent(e: &Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::NoPmu
            | ErrorKind::NoSuchEvent
            | ErrorKind::NotSupported
            | ErrorKind::Unsupported
    )
}

fn spec(event: &str) -> Option<EventSpec> {
    event.parse().ok()
}

/// A row for a failed allocation: SKIP when the event is absent here,
/// FAIL otherwise.
pub(crate) fn alloc_failed(row: Row, e: &Error) -> Row {
    if absent(e) {
        // The message alone: the help goes to the causes.
        let mut row = row.skip(format!("not available here: {}", e.message()));
        if let Some(h) = e.help() {
            row.causes.push(h.to_owned());
        }
        row
    } else {
        row.fail(format!("cannot count: {e}"))
    }
}

/// `|m - e| / e`.
fn rel_err(m: u64, e: u64) -> f64 {
    if e == 0 {
        return if m == 0 { 0.0 } else { f64::INFINITY };
    }
    (m as f64 - e as f64).abs() / e as f64
}

/// One counted run: the counted event, its reading and the workload's own
/// account.
struct Counted<T> {
    event: EventSpec,
    reading: Reading,
    out: T,
}

struct Ctx<'a, B: Backend> {
    backend: &'a B,
    opts: &'a Options,
    diagnosis: std::sync::OnceLock<Vec<Check>>,
}

impl<B: Backend> Ctx<'_, B> {
    /// Counts `event` around `work` (which returns its output and what it
    /// did, handed to the hook while the PMC runs).
    fn count<T>(
        &self,
        event: &str,
        descendants: bool,
        work: impl FnOnce() -> (T, Ran),
    ) -> Result<Counted<T>, Error> {
        let spec = spec(event).ok_or_else(|| {
            Error::new(
                ErrorKind::Parse,
                crate::Op::Allocate,
                format!("`{event}` does not parse"),
            )
        })?;
        let mut a = Allocation::counting(spec);
        if descendants {
            a = a.descendants();
        }
        let mut p = self.backend.allocate(&a)?;
        attach_calling_thread(&mut p)?;
        p.start()?;
        let (out, ran) = work();
        self.opts.ran(ran);
        p.stop()?;
        let reading = p.read()?;
        let event = p.counted_event();
        let _ = p.release();
        Ok(Counted {
            event,
            reading,
            out,
        })
    }

    fn loop_ran(check: &'static str, n: u64) -> Ran {
        Ran {
            check,
            instructions: n.saturating_mul(2),
            branches: n,
            ..Ran::default()
        }
    }

    /// The exact instruction or branch count of the loop: a run of `N`
    /// minus a run of 0 is `per_iter * N`.
    fn exact_loop(&self, check: &'static str, event: &str, per_iter: u64) -> Row {
        let row = Row::new(check, event, true);
        if !workload::EXACT {
            return row.skip(format!(
                "no loop of known length for {} (x86_64 and aarch64 only)",
                std::env::consts::ARCH
            ));
        }
        let n = self.opts.iterations.max(1);
        let run = |k: u64| {
            self.count(event, false, || {
                workload::insns(k);
                ((), Self::loop_ran(check, k))
            })
        };
        let (base, full) = match (run(0), run(n)) {
            (Ok(b), Ok(f)) => (b, f),
            (Err(e), _) | (_, Err(e)) => return alloc_failed(row, &e),
        };
        let mut row = row;
        row.event = full.event.to_string();
        if let Some(r) = not_counted(&[base.reading, full.reading]) {
            return row.fail(r);
        }
        let (b, f) = (
            base.reading.scaled().unwrap_or(0),
            full.reading.scaled().unwrap_or(0),
        );
        let measured = f.saturating_sub(b);
        let expected = per_iter.saturating_mul(n);
        let err = rel_err(measured, expected);
        let mux = multiplexed_note(&[base.reading, full.reading]);
        let (verdict, note) = if measured == expected {
            (Verdict::Pass, format!("exact{mux}"))
        } else if err <= 1e-4 {
            (
                Verdict::Pass,
                format!(
                    "{:+} off ({:.4}%){mux}",
                    measured as i128 - expected as i128,
                    err * 100.0
                ),
            )
        } else if err <= 1e-2 {
            (
                Verdict::Warn,
                format!("{:.3}% off: not exact{mux}", err * 100.0),
            )
        } else {
            (
                Verdict::Fail,
                format!(
                    "{:.1}% off: this counter does not count {check} right{mux}",
                    err * 100.0
                ),
            )
        };
        row.judged(measured, expected, Relation::Exact, verdict, note)
    }

    /// Cycles against the thread's CPU clock: a clock rate.
    fn cycles(&self) -> Row {
        let row = Row::new("cycles", "cycles:u", true);
        let n = self.opts.iterations.max(1);
        let c = self.count("cycles:u", false, || {
            let t0 = workload::thread_cpu_ns();
            workload::insns(n);
            let ns = match (t0, workload::thread_cpu_ns()) {
                (Some(a), Some(b)) => b.saturating_sub(a),
                _ => 0,
            };
            (
                ns,
                Ran {
                    cpu_ns: ns,
                    ..Self::loop_ran("cycles", n)
                },
            )
        });
        let c = match c {
            Ok(c) => c,
            Err(e) => return alloc_failed(row, &e),
        };
        let mut row = row;
        row.event = c.event.to_string();
        if let Some(r) = not_counted(&[c.reading]) {
            return row.fail(r);
        }
        if c.out == 0 {
            return row.skip("the thread's CPU clock did not advance: no reference to judge by");
        }
        let cycles = c.reading.scaled().unwrap_or(0);
        let ghz = cycles as f64 / c.out as f64;
        let mux = multiplexed_note(&[c.reading]);
        let (verdict, note) = if cycles == 0 {
            (
                Verdict::Fail,
                format!("no cycles in {} ns of CPU{mux}", c.out),
            )
        } else if (0.2..=10.0).contains(&ghz) {
            (Verdict::Pass, format!("{ghz:.2} GHz{mux}"))
        } else {
            (
                Verdict::Warn,
                format!("{ghz:.3} GHz is not a clock rate: cycles or the clock are off{mux}"),
            )
        };
        row.judged(cycles, c.out, Relation::Rate, verdict, note)
    }

    fn page_faults(&self) -> Row {
        const PAGES: usize = 512;
        let row = Row::new("page faults", "page-faults", false);
        let c = self.count("page-faults", false, || {
            let t = workload::touch_pages(PAGES);
            let pages = t.as_ref().map_or(0, |t| t.pages);
            (
                t,
                Ran {
                    check: "page faults",
                    pages,
                    ..Ran::default()
                },
            )
        });
        let c = match c {
            Ok(c) => c,
            Err(e) => return alloc_failed(row, &e),
        };
        let mut row = row;
        row.event = c.event.to_string();
        let touched = match c.out {
            Ok(t) => t,
            Err(e) => return row.skip(format!("could not map fresh pages: {e}")),
        };
        if let Some(r) = not_counted(&[c.reading]) {
            return row.fail(r);
        }
        let m = c.reading.scaled().unwrap_or(0);
        let e = touched.pages;
        let ratio = m as f64 / e as f64;
        let (verdict, note) = if (1.0..=1.0625).contains(&ratio) {
            (Verdict::Pass, format!("{e} pages written, one fault each"))
        } else if ratio < 1.0 && !touched.no_huge_pages && ratio > 0.0 {
            (
                Verdict::Warn,
                "fewer faults than pages: MADV_NOHUGEPAGE was refused, huge pages fault once for many".into(),
            )
        } else if (0.5..=2.0).contains(&ratio) {
            (
                Verdict::Warn,
                format!("{m} faults for {e} fresh pages: not one each"),
            )
        } else {
            (
                Verdict::Fail,
                format!("{m} faults for {e} fresh pages: page faults are not counted right"),
            )
        };
        row.judged(m, e, Relation::About, verdict, note)
    }

    /// Kernel-only software events read 0 when the backend narrowed the
    /// event to user mode (`perf_event_paranoid` 2, unprivileged).
    fn kernel_hidden(event: &EventSpec, asked: &str) -> bool {
        let asked: Option<EventSpec> = spec(asked);
        asked.is_some_and(|a| a != *event) && !event.modifiers.kernel && event.modifiers.user
    }

    fn context_switches(&self) -> Row {
        const ROUNDS: u64 = 200;
        let row = Row::new("context switches", "context-switches", false);
        let c = self.count("context-switches", true, || {
            let done = workload::ping_pong(ROUNDS);
            let rounds = done.as_ref().map_or(0, |d| *d);
            (
                done,
                Ran {
                    check: "context switches",
                    round_trips: rounds,
                    ..Ran::default()
                },
            )
        });
        let c = match c {
            Ok(c) => c,
            Err(e) => return alloc_failed(row, &e),
        };
        let mut row = row;
        row.event = c.event.to_string();
        let rounds = match c.out {
            Ok(r) => r,
            Err(e) => return row.fail(format!("the ping-pong between two threads failed: {e}")),
        };
        if let Some(r) = not_counted(&[c.reading]) {
            return row.fail(r);
        }
        let m = c.reading.scaled().unwrap_or(0);
        if m == 0 && Self::kernel_hidden(&c.event, "context-switches") {
            return row.skip(paranoid_note("context switches"));
        }
        let e = rounds.saturating_mul(2);
        let (verdict, note) = if m >= e {
            (
                Verdict::Pass,
                format!("{rounds} round trips between two threads"),
            )
        } else if m >= rounds {
            (
                Verdict::Warn,
                "fewer than 2 per round trip: the second thread is not counted (inherit) or some reads did not block".into(),
            )
        } else {
            (
                Verdict::Fail,
                format!(
                    "{m} for {rounds} blocking round trips: context switches are not counted right"
                ),
            )
        };
        row.judged(m, e, Relation::AtLeast, verdict, note)
    }

    fn migrations(&self) -> Row {
        const MOVES: u64 = 8;
        let row = Row::new("cpu migrations", "cpu-migrations", false);
        let c = self.count("cpu-migrations", true, || {
            let made = workload::migrate(MOVES);
            let n = made.as_ref().map_or(0, |m| *m);
            (
                made,
                Ran {
                    check: "cpu migrations",
                    migrations: n,
                    ..Ran::default()
                },
            )
        });
        let c = match c {
            Ok(c) => c,
            Err(e) => return alloc_failed(row, &e),
        };
        let mut row = row;
        row.event = c.event.to_string();
        let moves = match c.out {
            Ok(m) => m,
            Err(why) => return row.skip(why),
        };
        if let Some(r) = not_counted(&[c.reading]) {
            return row.fail(r);
        }
        let m = c.reading.scaled().unwrap_or(0);
        if m == 0 && Self::kernel_hidden(&c.event, "cpu-migrations") {
            return row.skip(paranoid_note("migrations"));
        }
        // The first move may be to the CPU the thread is on already.
        let e = moves.saturating_sub(1);
        let (verdict, note) = if m >= e {
            (
                Verdict::Pass,
                format!("{moves} moves forced with sched_setaffinity"),
            )
        } else {
            (
                Verdict::Fail,
                format!(
                    "{m} migrations for {moves} forced moves: migrations are not counted right"
                ),
            )
        };
        row.judged(m, e, Relation::AtLeast, verdict, note)
    }

    fn user_reads(&self) -> Row {
        match self.opts.user_reads {
            Some(probe) => probe(self.opts),
            None => Row::new("user-space reads", "instructions:u", true).skip(format!(
                "the {} backend has no user-space read path",
                self.backend.name()
            )),
        }
    }

    /// More events than counters: each runs part of the time, and its
    /// scaled count must still be the loop's.
    fn multiplexing(&self) -> Row {
        const EVENTS: usize = 16;
        let row = Row::new("multiplexing", format!("{EVENTS}x instructions:u"), true);
        if !workload::EXACT {
            return row.skip(format!(
                "no loop of known length for {} (x86_64 and aarch64 only)",
                std::env::consts::ARCH
            ));
        }
        let Some(spec) = spec("instructions:u") else {
            return row.fail("instructions:u does not parse");
        };
        let mut pmcs = Vec::with_capacity(EVENTS);
        for k in 0..EVENTS {
            match self.backend.allocate(&Allocation::counting(spec.clone())) {
                Ok(p) => pmcs.push(p),
                Err(e) if k == 0 => return alloc_failed(row, &e),
                Err(e) => {
                    return row.skip(format!(
                        "the backend refused counter {} of {EVENTS} (it does not multiplex: hwpmc refuses more PMCs than counters): {e}",
                        k + 1
                    ))
                }
            }
        }
        for p in &mut pmcs {
            if let Err(e) = attach_calling_thread(p).and_then(|()| p.start()) {
                return row.skip(format!(
                    "the backend could not start {EVENTS} counters at once: {e}"
                ));
            }
        }
        let n = self.opts.iterations.max(1).saturating_mul(10);
        workload::insns(n);
        self.opts.ran(Self::loop_ran("multiplexing", n));
        let mut readings = Vec::with_capacity(EVENTS);
        for p in &mut pmcs {
            let r = p.stop().and_then(|()| p.read());
            match r {
                Ok(r) => readings.push(r),
                Err(e) => return row.fail(format!("stop or read failed: {e}")),
            }
        }
        drop(pmcs);
        if let Some(r) = not_counted(&readings) {
            return row.fail(r);
        }
        let expected = n.saturating_mul(2);
        let Some(worst) = readings
            .iter()
            .map(|r| r.scaled().unwrap_or(0))
            .max_by(|a, b| rel_err(*a, expected).total_cmp(&rel_err(*b, expected)))
        else {
            return row.fail("no readings");
        };
        let muxed = readings.iter().filter(|r| r.is_multiplexed()).count();
        let least = readings
            .iter()
            .filter_map(Reading::running_ratio)
            .fold(1.0f64, f64::min);
        let err = rel_err(worst, expected);
        let how = if muxed == 0 {
            format!("all {EVENTS} fit on the counters, none multiplexed")
        } else {
            format!(
                "{muxed} of {EVENTS} multiplexed, least running {:.0}%",
                least * 100.0
            )
        };
        let (verdict, note) = if err <= 0.03 {
            (
                Verdict::Pass,
                format!("{how}; worst scaled count {:.2}% off", err * 100.0),
            )
        } else if err <= 0.2 {
            (
                Verdict::Warn,
                format!(
                    "{how}; worst scaled count {:.1}% off: scaling is rough here",
                    err * 100.0
                ),
            )
        } else {
            (
                Verdict::Fail,
                format!(
                    "{how}; worst scaled count {:.1}% off: multiplexed counts are wrong",
                    err * 100.0
                ),
            )
        };
        row.judged(worst, expected, Relation::About, verdict, note)
    }

    /// cpu-clock samples delivered in process: their periods add up to the
    /// task-clock of the same run.
    fn sampling(&self) -> Row {
        const PERIOD: u64 = 100_000;
        const CPU_NS: u64 = 50_000_000;
        let row = Row::new("sampling period", format!("cpu-clock/{PERIOD}"), false);
        let (Some(clock), Some(task)) = (spec("cpu-clock"), spec("task-clock")) else {
            return row.fail("cpu-clock or task-clock does not parse");
        };
        let mut s = match self
            .backend
            .allocate(&Allocation::sampling(clock, Rate::Period(PERIOD)))
        {
            Ok(p) => p,
            Err(e) => return alloc_failed(row, &e),
        };
        if let Err(e) = s.sample_in_process() {
            return if e.kind() == ErrorKind::NotSupported {
                row.skip(format!("no in-process samples here: {e}"))
            } else {
                row.fail(format!("cannot sample in process: {e}"))
            };
        }
        let mut t = match self.backend.allocate(&Allocation::counting(task)) {
            Ok(p) => p,
            Err(e) => return alloc_failed(row, &e),
        };
        if let Err(e) = attach_calling_thread(&mut t)
            .and_then(|()| attach_calling_thread(&mut s))
            .and_then(|()| t.start())
            .and_then(|()| s.start())
        {
            return row.fail(format!("cannot start: {e}"));
        }
        let mut sum = 0u64;
        let mut samples = 0u64;
        let mut drain_error = None;
        let mut drain = |s: &mut B::Pmc| match s.samples() {
            Ok(v) => {
                samples += v.len() as u64;
                sum = v.iter().fold(sum, |a, x| a.saturating_add(x.period));
            }
            Err(e) => drain_error = Some(e),
        };
        let mut chunks = 0u32;
        let used = workload::spin_cpu(CPU_NS, || {
            chunks += 1;
            if chunks % 16 == 0 {
                drain(&mut s);
            }
        });
        self.opts.ran(Ran {
            check: "sampling period",
            cpu_ns: used,
            ..Ran::default()
        });
        let stopped = s.stop().and_then(|()| t.stop());
        drain(&mut s);
        if let Some(e) = drain_error {
            return row.fail(format!("reading the samples failed: {e}"));
        }
        if let Err(e) = stopped {
            return row.fail(format!("cannot stop: {e}"));
        }
        let tc = match t.read() {
            Ok(r) => r,
            Err(e) => return row.fail(format!("cannot read task-clock: {e}")),
        };
        if let Some(r) = not_counted(&[tc]) {
            return row.fail(r);
        }
        let expected = tc.scaled().unwrap_or(0);
        let ratio = if expected == 0 {
            0.0
        } else {
            sum as f64 / expected as f64
        };
        let (verdict, note) = if samples == 0 {
            (
                Verdict::Fail,
                format!("no samples in {expected} ns of task-clock"),
            )
        } else if (0.95..=1.02).contains(&ratio) {
            (
                Verdict::Pass,
                format!("{samples} samples; their periods add up to task-clock"),
            )
        } else if ratio < 0.95 {
            // Fewer samples than the CPU time asks for: timer expiries the
            // kernel dropped (an emulated or overloaded CPU takes its timer
            // interrupts late; kernels before 6.x do not fold the overrun
            // into the next period) or throttling. The samples there are
            // still right, only fewer: a warning.
            (
                Verdict::Warn,
                format!(
                    "{samples} samples; their periods cover {:.1}% of task-clock: the sampling timer fired late or was throttled",
                    ratio * 100.0
                ),
            )
        } else if ratio <= 1.1 {
            (
                Verdict::Warn,
                format!(
                    "{samples} samples; their periods are {:.1}% more than task-clock",
                    (ratio - 1.0) * 100.0
                ),
            )
        } else {
            (
                Verdict::Fail,
                format!(
                    "{samples} samples; their periods add up to {:.1}% of task-clock: more than the CPU time",
                    ratio * 100.0
                ),
            )
        };
        row.judged(sum, expected, Relation::About, verdict, note)
    }

    /// Without the `sampling` feature there is no pmc-log reader to read a log back with.
    #[cfg(not(feature = "sampling"))]
    fn log_round_trip(&self) -> Row {
        Row::new("log round trip", "cpu-clock/1000000".to_owned(), false)
            .skip("pmc was built without its `sampling` feature (no sample log)".to_owned())
    }

    /// Samples and user records through the backend's log into memory and
    /// back through pmc-log's reader.
    #[cfg(feature = "sampling")]
    fn log_round_trip(&self) -> Row {
        const USER_RECORDS: u32 = 3;
        const PERIOD: u64 = 1_000_000;
        let row = Row::new("log round trip", format!("cpu-clock/{PERIOD}"), false);
        let buf = Arc::new(Mutex::new(Vec::new()));
        if let Err(e) = self.backend.configure_log(Box::new(Memory(buf.clone()))) {
            return alloc_failed(row, &e);
        }
        // Why the log holds no samples, when the backend cannot sample the
        // calling process into its log (hwpmc sends those to profil(2)).
        let mut no_samples = None;
        let written = (|| -> Result<Option<u64>, Error> {
            for k in 0..USER_RECORDS {
                self.backend.write_log(0x5e1f_7e50 + k)?;
            }
            match self.sample_into_log(PERIOD) {
                Ok(()) => {}
                Err(e) if absent(&e) => no_samples = Some(e.message().to_owned()),
                Err(e) => return Err(e),
            }
            self.backend.flush_log()?;
            let summary = self.backend.sampling_summary().ok();
            self.backend.close_log()?;
            Ok(summary.map(|s| s.samples))
        })();
        let written = match written {
            Ok(w) => w,
            Err(e) => {
                let _ = self.backend.close_log();
                return alloc_failed(row, &e);
            }
        };
        let bytes = std::mem::take(&mut *buf.lock().unwrap_or_else(|p| p.into_inner()));
        let reader = match pmc_log::Reader::new(&bytes) {
            Ok(r) => r,
            Err(e) => {
                return row.fail(format!(
                    "the log ({} bytes) does not read back: {e}",
                    bytes.len()
                ))
            }
        };
        let (mut samples, mut user) = (0u64, 0u32);
        let mut it = reader.records();
        for r in it.by_ref() {
            match r {
                pmc_log::record::Record::Sample(_) => samples += 1,
                pmc_log::record::Record::UserData(_) => user += 1,
                _ => {}
            }
        }
        let report = it.into_report();
        let mut problems = Vec::new();
        if user != USER_RECORDS {
            problems.push(format!("{user} of {USER_RECORDS} user records came back"));
        }
        if !report.is_clean() {
            problems.push(format!("the reader skipped damage: {report:?}"));
        }
        if let Some(w) = written {
            if w != samples {
                problems.push(format!(
                    "{samples} samples read back, the backend counted {w}"
                ));
            }
        }
        let mut note = match written {
            Some(_) => format!("{} bytes; {user} user records", bytes.len()),
            None => format!(
                "{} bytes; {user} user records; the backend does not count its samples, so any number is right",
                bytes.len()
            ),
        };
        if let Some(why) = no_samples {
            note = format!("{note}; no samples: {why}");
        }
        let (verdict, note) = if problems.is_empty() {
            (Verdict::Pass, note)
        } else {
            (Verdict::Fail, problems.join("; "))
        };
        let mut row = row.judged(
            samples,
            written.unwrap_or(samples),
            Relation::Exact,
            verdict,
            note,
        );
        if written.is_none() {
            row.expected = None;
        }
        row
    }

    /// Samples `cpu-clock` every `period` ns for 20 ms of CPU into the
    /// configured log.
    #[cfg(feature = "sampling")]
    fn sample_into_log(&self, period: u64) -> Result<(), Error> {
        let clock = spec("cpu-clock").ok_or_else(|| {
            Error::new(
                ErrorKind::Parse,
                crate::Op::Allocate,
                "cpu-clock does not parse",
            )
        })?;
        let mut p = self
            .backend
            .allocate(&Allocation::sampling(clock, Rate::Period(period)))?;
        attach_calling_thread(&mut p)?;
        p.start()?;
        let used = workload::spin_cpu(20_000_000, || {});
        self.opts.ran(Ran {
            check: "log round trip",
            cpu_ns: used,
            ..Ran::default()
        });
        p.stop()?;
        self.backend.flush_log()?;
        p.release()
    }

    /// The machine's likely causes for a row that is not a PASS: the
    /// backend's diagnostics that say "no", and what the check knows.
    fn causes(&self, row: &Row) -> Vec<String> {
        let diag = self.diagnosis.get_or_init(|| self.backend.diagnose());
        let mut v = Vec::new();
        let relevant: &[&str] = if row.hardware {
            &[
                "hardware PMU",
                "PMU counters",
                "hardware PMCs",
                "NMI watchdog",
                "perf_event_paranoid",
                "counting own processes",
                "hwpmc driver",
            ]
        } else {
            &[
                "perf_event_paranoid",
                "counting own processes",
                "hwpmc driver",
                "privilege",
            ]
        };
        let user_reads = [
            "rdpmc (user-space counter reads)",
            "user-space counter reads",
        ];
        for c in diag {
            let wanted = relevant.contains(&c.name.as_str())
                || (row.check == "user-space reads" && user_reads.contains(&c.name.as_str()));
            if c.verdict == DiagVerdict::No && wanted {
                let fix = c
                    .fix
                    .as_deref()
                    .map(|f| format!(" (fix: {f})"))
                    .unwrap_or_default();
                v.push(format!("{}: {}{fix}", c.name, c.detail));
            }
        }
        if row.verdict == Verdict::Skip && !v.is_empty() {
            return v;
        }
        let kernel = diag
            .iter()
            .find(|c| c.name == "kernel")
            .map(|c| c.detail.clone());
        match row.check {
            "multiplexing" | "cycles" if row.verdict != Verdict::Skip => {
                v.push("hypervisor multiplexing: a VM's virtual PMU may share the host's counters".into())
            }
            "context switches" if row.verdict != Verdict::Skip => v.push(format!(
                "a kernel older than 5.13 has no inherit_thread, so threads started after the PMC may go uncounted (kernel {})",
                kernel.as_deref().unwrap_or("unknown")
            )),
            "sampling period" if row.verdict != Verdict::Skip => v.push(
                "the sampling timer's interrupts arrive late (an emulated or overloaded CPU) or the kernel throttles sampling (kernel.perf_event_max_sample_rate, kernel.perf_cpu_time_max_percent)".into(),
            ),
            "page faults" if row.verdict != Verdict::Skip => v.push(
                "transparent huge pages: a huge page faults once for 512 small ones (/sys/kernel/mm/transparent_hugepage/enabled)".into(),
            ),
            _ => {}
        }
        v
    }
}

/// Why a row whose readings never counted fails.
fn not_counted(readings: &[Reading]) -> Option<String> {
    readings.iter().find_map(|r| match r.status() {
        Status::Ok => None,
        Status::NotCounted => Some(
            "allocated and started, but never counted (time running 0): the counter was never scheduled, another user (the NMI watchdog?) holds it, or the hypervisor gives none"
                .to_owned(),
        ),
        Status::NotSupported => Some("not supported here (the kernel said so at read)".to_owned()),
    })
}

fn multiplexed_note(readings: &[Reading]) -> String {
    match readings
        .iter()
        .filter_map(Reading::running_ratio)
        .fold(1.0f64, f64::min)
    {
        r if r < 1.0 => format!(" (multiplexed: running {:.0}%, scaled)", r * 100.0),
        _ => String::new(),
    }
}

fn paranoid_note(what: &str) -> String {
    format!(
        "the kernel counts {what} in kernel mode, which this unprivileged process may not see (perf_event_paranoid 2: user mode only); run as root, with CAP_PERFMON, or after sysctl kernel.perf_event_paranoid=1"
    )
}

/// The in-memory log sink: stops taking bytes at 8 MiB (memory bounded).
#[cfg(feature = "sampling")]
struct Memory(Arc<Mutex<Vec<u8>>>);

#[cfg(feature = "sampling")]
const LOG_LIMIT: usize = 8 << 20;

#[cfg(feature = "sampling")]
impl std::io::Write for Memory {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut v = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if v.len().saturating_add(buf.len()) > LOG_LIMIT {
            return Err(std::io::Error::new(
                std::io::ErrorKind::StorageFull,
                "the self-test's in-memory log is full (8 MiB)",
            ));
        }
        v.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
