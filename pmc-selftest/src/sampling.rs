//! The sampling checks: sampling periods against task-clock, and a log written into memory
//! and read back through pmc-log.

use std::sync::{Arc, Mutex};

use pmc::{Allocation, Backend, Error, ErrorKind, Pmc, Rate};

use crate::checks::{not_counted, Ctx, Refused};
use crate::{
    absent, alloc_failed, attach_calling_thread, spec, workload, Ran, Relation, Row, Verdict,
};

/// The sampling check's period: `cpu-clock` every 100 us.
const SAMPLE_PERIOD: u64 = 100_000;
/// The sampling check's CPU time: 50 ms.
const SAMPLE_CPU_NS: u64 = 50_000_000;
/// The log round trip's sampling period: 1 ms.
const LOG_PERIOD: u64 = 1_000_000;
/// The user records the log round trip writes.
const USER_RECORDS: u32 = 3;

impl<B: Backend> Ctx<'_, B> {
    /// cpu-clock samples delivered in process: their periods add up to the
    /// task-clock of the same run.
    pub(crate) fn sampling(&self) -> Row {
        let row = Row::new(
            "sampling period",
            format!("cpu-clock/{SAMPLE_PERIOD}"),
            false,
        );
        let (mut s, mut t) = match self.start_sampler_and_clock() {
            Ok(pair) => pair,
            Err(why) => return why.on(row),
        };
        let mut periods = Periods::default();
        let mut chunks = 0u32;
        let used = workload::spin_cpu(SAMPLE_CPU_NS, || {
            chunks += 1;
            if chunks % 16 == 0 {
                periods.drain(&mut s);
            }
        });
        self.opts.ran(Ran {
            check: "sampling period",
            cpu_ns: used,
            ..Ran::default()
        });
        let stopped = s.stop().and_then(|()| t.stop());
        periods.drain(&mut s);
        if let Some(e) = periods.error {
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
        let (verdict, note) = judge_periods(&periods, expected);
        row.judged(periods.sum, expected, Relation::About, verdict, note)
    }

    /// The `cpu-clock` sampler delivering in process and the `task-clock` counter to judge
    /// it by, both on the calling thread and started; or why not.
    fn start_sampler_and_clock(&self) -> Result<(B::Pmc, B::Pmc), Refused> {
        let (Some(clock), Some(task)) = (spec("cpu-clock"), spec("task-clock")) else {
            return Err(Refused::Fail(
                "cpu-clock or task-clock does not parse".into(),
            ));
        };
        let mut s = self
            .backend
            .allocate(&Allocation::sampling(clock, Rate::Period(SAMPLE_PERIOD)))
            .map_err(Refused::Alloc)?;
        if let Err(e) = s.sample_in_process() {
            return Err(if e.kind() == ErrorKind::NotSupported {
                Refused::Skip(format!("no in-process samples here: {e}"))
            } else {
                Refused::Fail(format!("cannot sample in process: {e}"))
            });
        }
        let mut t = self
            .backend
            .allocate(&Allocation::counting(task))
            .map_err(Refused::Alloc)?;
        attach_calling_thread(&mut t)
            .and_then(|()| attach_calling_thread(&mut s))
            .and_then(|()| t.start())
            .and_then(|()| s.start())
            .map_err(|e| Refused::Fail(format!("cannot start: {e}")))?;
        Ok((s, t))
    }

    /// Samples and user records through the backend's log into memory and
    /// back through pmc-log's reader.
    pub(crate) fn log_round_trip(&self) -> Row {
        let row = Row::new("log round trip", format!("cpu-clock/{LOG_PERIOD}"), false);
        let buf = Arc::new(Mutex::new(Vec::new()));
        if let Err(e) = self.backend.configure_log(Box::new(Memory(buf.clone()))) {
            return alloc_failed(row, &e);
        }
        let written = match self.write_log() {
            Ok(w) => w,
            Err(e) => {
                let _ = self.backend.close_log();
                return alloc_failed(row, &e);
            }
        };
        let bytes = std::mem::take(&mut *buf.lock().unwrap_or_else(|p| p.into_inner()));
        match ReadBack::of(&bytes) {
            Ok(back) => judge_round_trip(row, &written, &back, bytes.len()),
            Err(e) => row.fail(format!(
                "the log ({} bytes) does not read back: {e}",
                bytes.len()
            )),
        }
    }

    /// Writes the round trip's log: [`USER_RECORDS`] user records and `cpu-clock` samples,
    /// then flushes and closes it.
    fn write_log(&self) -> Result<Written, Error> {
        // Why the log holds no samples, when the backend cannot sample the
        // calling process into its log (hwpmc sends those to profil(2)).
        let mut no_samples = None;
        for k in 0..USER_RECORDS {
            self.backend.write_log(0x5e1f_7e50 + k)?;
        }
        match self.sample_into_log(LOG_PERIOD) {
            Ok(()) => {}
            Err(e) if absent(&e) => no_samples = Some(e.message().to_owned()),
            Err(e) => return Err(e),
        }
        self.backend.flush_log()?;
        let summary = self.backend.sampling_summary().ok();
        self.backend.close_log()?;
        Ok(Written {
            samples: summary.map(|s| s.samples),
            no_samples,
        })
    }

    /// Samples `cpu-clock` every `period` ns for 20 ms of CPU into the
    /// configured log.
    fn sample_into_log(&self, period: u64) -> Result<(), Error> {
        let clock = spec("cpu-clock").ok_or_else(|| {
            Error::new(
                ErrorKind::Parse,
                pmc::Op::Allocate,
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
}

/// The samples delivered in process so far: how many, the sum of their periods, and the
/// first error reading them.
#[derive(Default)]
struct Periods {
    samples: u64,
    sum: u64,
    error: Option<Error>,
}

impl Periods {
    /// Takes the samples `s` has delivered.
    fn drain<P: Pmc>(&mut self, s: &mut P) {
        match s.samples() {
            Ok(v) => {
                self.samples += v.len() as u64;
                self.sum = v.iter().fold(self.sum, |a, x| a.saturating_add(x.period));
            }
            Err(e) => self.error = Some(e),
        }
    }
}

/// The sampling check's verdict: the periods' sum against `task_clock` (95-102 % a PASS;
/// less a WARN, the timer fired late; up to 110 % a WARN; more, or no samples, a FAIL).
fn judge_periods(p: &Periods, task_clock: u64) -> (Verdict, String) {
    let (samples, sum) = (p.samples, p.sum);
    let ratio = if task_clock == 0 {
        0.0
    } else {
        sum as f64 / task_clock as f64
    };
    if samples == 0 {
        (
            Verdict::Fail,
            format!("no samples in {task_clock} ns of task-clock"),
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
    }
}

/// What the round trip wrote: the samples the backend counted (`None`: it does not count
/// them), and why there are none, when it cannot sample into its log.
struct Written {
    samples: Option<u64>,
    no_samples: Option<String>,
}

/// What pmc-log's reader found in the log.
struct ReadBack {
    samples: u64,
    user: u32,
    report: pmc_log::ReadReport,
}

impl ReadBack {
    fn of(bytes: &[u8]) -> Result<ReadBack, pmc_log::ReadError> {
        let reader = pmc_log::Reader::new(bytes)?;
        let (mut samples, mut user) = (0u64, 0u32);
        let mut it = reader.records();
        for r in it.by_ref() {
            match r {
                pmc_log::record::Record::Sample(_) => samples += 1,
                pmc_log::record::Record::UserData(_) => user += 1,
                _ => {}
            }
        }
        Ok(ReadBack {
            samples,
            user,
            report: it.into_report(),
        })
    }
}

/// The round trip's row: every user record back, no damage, and as many samples as the
/// backend counted (any number when it does not count them).
fn judge_round_trip(row: Row, written: &Written, back: &ReadBack, len: usize) -> Row {
    let ReadBack {
        samples,
        user,
        ref report,
    } = *back;
    let mut problems = Vec::new();
    if user != USER_RECORDS {
        problems.push(format!("{user} of {USER_RECORDS} user records came back"));
    }
    if !report.is_clean() {
        problems.push(format!("the reader skipped damage: {report:?}"));
    }
    if let Some(w) = written.samples {
        if w != samples {
            problems.push(format!(
                "{samples} samples read back, the backend counted {w}"
            ));
        }
    }
    let mut note = match written.samples {
        Some(_) => format!("{len} bytes; {user} user records"),
        None => format!(
            "{len} bytes; {user} user records; the backend does not count its samples, so any number is right"
        ),
    };
    if let Some(why) = &written.no_samples {
        note = format!("{note}; no samples: {why}");
    }
    let (verdict, note) = if problems.is_empty() {
        (Verdict::Pass, note)
    } else {
        (Verdict::Fail, problems.join("; "))
    };
    let mut row = row.judged(
        samples,
        written.samples.unwrap_or(samples),
        Relation::Exact,
        verdict,
        note,
    );
    if written.samples.is_none() {
        row.expected = None;
    }
    row
}

/// The in-memory log sink: stops taking bytes at 8 MiB (memory bounded).
struct Memory(Arc<Mutex<Vec<u8>>>);

const LOG_LIMIT: usize = 8 << 20;

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
