//! The counting checks, one method of [`Ctx`] each (instructions, branches, cycles, page
//! faults, context switches, migrations, user-space reads, multiplexing), and the likely
//! causes of a row that is not a PASS. The sampling checks are in `sampling.rs`.

use pmc::{
    info::{Check, Verdict as DiagVerdict},
    Allocation, Backend, Error, ErrorKind, EventSpec, Pmc, Reading, Status,
};

use crate::{
    alloc_failed, attach_calling_thread, rel_err, spec, workload, Options, Ran, Relation, Row,
    Verdict,
};

/// One counted run: the counted event, its reading and the workload's own
/// account.
pub(crate) struct Counted<T> {
    pub(crate) event: EventSpec,
    pub(crate) reading: Reading,
    pub(crate) out: T,
}

/// What every check runs with: the backend, the options, and the machine's diagnosis
/// (read once, for the causes of the rows that are not a PASS).
pub(crate) struct Ctx<'a, B: Backend> {
    pub(crate) backend: &'a B,
    pub(crate) opts: &'a Options,
    pub(crate) diagnosis: std::sync::OnceLock<Vec<Check>>,
}

impl<B: Backend> Ctx<'_, B> {
    /// Counts `event` around `work` (which returns its output and what it
    /// did, handed to the hook while the PMC runs).
    pub(crate) fn count<T>(
        &self,
        event: &str,
        descendants: bool,
        work: impl FnOnce() -> (T, Ran),
    ) -> Result<Counted<T>, Error> {
        let spec = spec(event).ok_or_else(|| {
            Error::new(
                ErrorKind::Parse,
                pmc::Op::Allocate,
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

    /// [`Ctx::count`] of `row`'s event: the row naming the event as counted, or the row an
    /// allocation failure makes ([`alloc_failed`]).
    #[allow(clippy::result_large_err)] // the Err is the check's finished row, returned as is
    fn count_row<T>(
        &self,
        mut row: Row,
        descendants: bool,
        work: impl FnOnce() -> (T, Ran),
    ) -> Result<(Row, Counted<T>), Row> {
        match self.count(&row.event, descendants, work) {
            Ok(c) => {
                row.event = c.event.to_string();
                Ok((row, c))
            }
            Err(e) => Err(alloc_failed(row, &e)),
        }
    }

    pub(crate) fn loop_ran(check: &'static str, n: u64) -> Ran {
        Ran {
            check,
            instructions: n.saturating_mul(2),
            branches: n,
            ..Ran::default()
        }
    }

    /// The exact instruction or branch count of the loop: a run of `N`
    /// minus a run of 0 is `per_iter * N`.
    pub(crate) fn exact_loop(&self, check: &'static str, event: &str, per_iter: u64) -> Row {
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
    pub(crate) fn cycles(&self) -> Row {
        let row = Row::new("cycles", "cycles:u", true);
        let n = self.opts.iterations.max(1);
        let c = self.count_row(row, false, || {
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
        let (row, c) = match c {
            Ok(rc) => rc,
            Err(row) => return row,
        };
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

    pub(crate) fn page_faults(&self) -> Row {
        const PAGES: usize = 512;
        let row = Row::new("page faults", "page-faults", false);
        let c = self.count_row(row, false, || {
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
        let (row, c) = match c {
            Ok(rc) => rc,
            Err(row) => return row,
        };
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

    pub(crate) fn context_switches(&self) -> Row {
        const ROUNDS: u64 = 200;
        let row = Row::new("context switches", "context-switches", false);
        let c = self.count_row(row, true, || {
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
        let (row, c) = match c {
            Ok(rc) => rc,
            Err(row) => return row,
        };
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

    pub(crate) fn migrations(&self) -> Row {
        const MOVES: u64 = 8;
        let row = Row::new("cpu migrations", "cpu-migrations", false);
        let c = self.count_row(row, true, || {
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
        let (row, c) = match c {
            Ok(rc) => rc,
            Err(row) => return row,
        };
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

    pub(crate) fn user_reads(&self) -> Row {
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
    pub(crate) fn multiplexing(&self) -> Row {
        let row = Row::new(
            "multiplexing",
            format!("{MUX_EVENTS}x instructions:u"),
            true,
        );
        if !workload::EXACT {
            return row.skip(format!(
                "no loop of known length for {} (x86_64 and aarch64 only)",
                std::env::consts::ARCH
            ));
        }
        let mut pmcs = match self.start_many("instructions:u") {
            Ok(p) => p,
            Err(why) => return why.on(row),
        };
        let n = self.opts.iterations.max(1).saturating_mul(10);
        workload::insns(n);
        self.opts.ran(Self::loop_ran("multiplexing", n));
        let readings = match stop_and_read_all(&mut pmcs) {
            Ok(r) => r,
            Err(e) => return row.fail(format!("stop or read failed: {e}")),
        };
        drop(pmcs);
        if let Some(r) = not_counted(&readings) {
            return row.fail(r);
        }
        let expected = n.saturating_mul(2);
        let Some((worst, verdict, note)) = judge_multiplexed(&readings, expected) else {
            return row.fail("no readings");
        };
        row.judged(worst, expected, Relation::About, verdict, note)
    }

    /// [`MUX_EVENTS`] counters of `event`, allocated, attached and started; or why not.
    fn start_many(&self, event: &str) -> Result<Vec<B::Pmc>, Refused> {
        let Some(spec) = spec(event) else {
            return Err(Refused::Fail(format!("{event} does not parse")));
        };
        let mut pmcs = Vec::with_capacity(MUX_EVENTS);
        for k in 0..MUX_EVENTS {
            match self.backend.allocate(&Allocation::counting(spec.clone())) {
                Ok(p) => pmcs.push(p),
                Err(e) if k == 0 => return Err(Refused::Alloc(e)),
                Err(e) => {
                    return Err(Refused::Skip(format!(
                        "the backend refused counter {} of {MUX_EVENTS} (it does not multiplex: hwpmc refuses more PMCs than counters): {e}",
                        k + 1
                    )))
                }
            }
        }
        for p in &mut pmcs {
            if let Err(e) = attach_calling_thread(p).and_then(|()| p.start()) {
                return Err(Refused::Skip(format!(
                    "the backend could not start {MUX_EVENTS} counters at once: {e}"
                )));
            }
        }
        Ok(pmcs)
    }

    /// The machine's likely causes for a row that is not a PASS: the
    /// backend's diagnostics that say "no", and what the check knows.
    pub(crate) fn causes(&self, row: &Row) -> Vec<String> {
        let diag = self.diagnosis.get_or_init(|| self.backend.diagnose());
        let mut v = diagnosed_causes(diag, row);
        if row.verdict == Verdict::Skip && !v.is_empty() {
            return v;
        }
        let kernel = diag.iter().find(|c| c.name == "kernel");
        v.extend(check_cause(row, kernel.map(|c| c.detail.as_str())));
        v
    }
}

/// The machine's diagnostics (`Backend::diagnose`) that say "no" and bear on `row`, each
/// with its fix.
fn diagnosed_causes(diag: &[Check], row: &Row) -> Vec<String> {
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
    let wanted = |c: &Check| {
        relevant.contains(&c.name.as_str())
            || (row.check == "user-space reads" && user_reads.contains(&c.name.as_str()))
    };
    diag.iter()
        .filter(|c| c.verdict == DiagVerdict::No && wanted(c))
        .map(|c| {
            let fix = c
                .fix
                .as_deref()
                .map(|f| format!(" (fix: {f})"))
                .unwrap_or_default();
            format!("{}: {}{fix}", c.name, c.detail)
        })
        .collect()
}

/// What the check itself knows can make its row WARN or FAIL on a working machine
/// (`kernel`: the diagnosis' kernel version).
fn check_cause(row: &Row, kernel: Option<&str>) -> Option<String> {
    if row.verdict == Verdict::Skip {
        return None;
    }
    Some(match row.check {
        "multiplexing" | "cycles" => {
            "hypervisor multiplexing: a VM's virtual PMU may share the host's counters".into()
        }
        "context switches" => format!(
            "a kernel older than 5.13 has no inherit_thread, so threads started after the PMC may go uncounted (kernel {})",
            kernel.unwrap_or("unknown")
        ),
        "sampling period" => "the sampling timer's interrupts arrive late (an emulated or overloaded CPU) or the kernel throttles sampling (kernel.perf_event_max_sample_rate, kernel.perf_cpu_time_max_percent)".into(),
        "page faults" => "transparent huge pages: a huge page faults once for 512 small ones (/sys/kernel/mm/transparent_hugepage/enabled)".into(),
        _ => return None,
    })
}

/// Why a row whose readings never counted fails.
pub(crate) fn not_counted(readings: &[Reading]) -> Option<String> {
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

/// How many counters the multiplexing check runs at once: more than any PMU has.
const MUX_EVENTS: usize = 16;

/// Why a check could not run its PMCs: the row it becomes.
pub(crate) enum Refused {
    /// An allocation failed: SKIP if the event is absent here, else FAIL ([`alloc_failed`]).
    Alloc(Error),
    /// Cannot be checked here.
    Skip(String),
    /// Broken.
    Fail(String),
}

impl Refused {
    /// `row` with this outcome.
    pub(crate) fn on(self, row: Row) -> Row {
        match self {
            Refused::Alloc(e) => alloc_failed(row, &e),
            Refused::Skip(why) => row.skip(why),
            Refused::Fail(why) => row.fail(why),
        }
    }
}

/// Stops each PMC and reads it.
fn stop_and_read_all<P: Pmc>(pmcs: &mut [P]) -> Result<Vec<Reading>, Error> {
    pmcs.iter_mut()
        .map(|p| p.stop().and_then(|()| p.read()))
        .collect()
}

/// The worst scaled count of `readings` against `expected`, and its verdict: within 3 % a
/// PASS, within 20 % a WARN, else a FAIL. `None` without readings.
fn judge_multiplexed(readings: &[Reading], expected: u64) -> Option<(u64, Verdict, String)> {
    let worst = readings
        .iter()
        .map(|r| r.scaled().unwrap_or(0))
        .max_by(|a, b| rel_err(*a, expected).total_cmp(&rel_err(*b, expected)))?;
    let muxed = readings.iter().filter(|r| r.is_multiplexed()).count();
    let least = readings
        .iter()
        .filter_map(Reading::running_ratio)
        .fold(1.0f64, f64::min);
    let err = rel_err(worst, expected);
    let how = if muxed == 0 {
        format!("all {MUX_EVENTS} fit on the counters, none multiplexed")
    } else {
        format!(
            "{muxed} of {MUX_EVENTS} multiplexed, least running {:.0}%",
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
    Some((worst, verdict, note))
}
