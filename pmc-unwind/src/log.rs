//! Unwinding samples of a pmc-log: while recording (the Linux drain thread), and when a log
//! recorded with its stacks (`UserStack` records) is read.
//!
//! [`LogUnwinder::observe`] follows the processes' mappings through the log's records (maps,
//! exec'ing comms, forks, exits); [`LogUnwinder::complete`] replaces a sample's user frames
//! with the unwound ones. [`unwind_log`] rewrites a whole log that way.

use pmc_log::record::{self as log, Record};

use crate::{Unwinder, UserRegs};

/// An [`Unwinder`] fed by log records (see the module documentation).
#[derive(Debug, Default)]
pub struct LogUnwinder {
    unwinder: Unwinder,
    /// Where a sample's new callchain is built (kept for its capacity).
    scratch: Vec<u64>,
}

impl LogUnwinder {
    /// A log unwinder over `unwinder` (e.g. one [`Unwinder::with_root`]).
    pub fn new(unwinder: Unwinder) -> LogUnwinder {
        LogUnwinder {
            unwinder,
            scratch: Vec::new(),
        }
    }

    /// Follows the processes' mappings through one record of the log, in log order.
    pub fn observe(&mut self, rec: &Record<'_>) {
        match rec {
            Record::Map(m) => self.unwinder.add_map(
                m.pid,
                m.start,
                m.len,
                m.pgoff,
                m.path.as_bytes(),
                m.build_id.as_bytes(),
            ),
            Record::Comm(c) if c.exec => self.unwinder.exec(c.pid),
            Record::Exec(e) => self.unwinder.exec(e.pid),
            Record::Fork(f) => self.unwinder.fork(f.parent_pid, f.child_pid),
            Record::Exit(x) => self.unwinder.exit(x.pid),
            _ => {}
        }
    }

    /// Replaces the user part of `s`'s callchain with the frames unwound from `regs` and
    /// `stack`: the kernel frames stay first, then the user PC and return addresses, then
    /// [`log::TRUNCATED_FRAME`] if the unwind stopped before the stack's root.
    pub fn complete(&mut self, s: &mut log::Sample<'_>, regs: &UserRegs, stack: &[u8]) {
        // The new callchain is built in a buffer kept from sample to sample, then copied
        // out at its length: one allocation per sample, none to grow it frame by frame.
        let kernel = usize::try_from(s.kernel_frames).unwrap_or(usize::MAX);
        let frames = &mut self.scratch;
        frames.clear();
        frames.extend(s.callchain.iter().take(kernel));
        let r = self.unwinder.unwind(s.pid, regs, stack, frames);
        if r.truncated {
            frames.push(log::TRUNCATED_FRAME);
        }
        s.callchain = log::Callchain::from_vec(frames.to_vec());
    }

    /// The unwinder (its counts, its refusals).
    pub fn unwinder(&mut self) -> &mut Unwinder {
        &mut self.unwinder
    }
}

/// What [`unwind_log`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnwindReport {
    /// Samples unwound from their `UserStack` records.
    pub unwound: u64,
    /// Of those, unwinds that stopped before the stack's root.
    pub truncated: u64,
    /// `UserStack` records of another architecture than this build unwinds, or with no
    /// sample before them: their samples keep the PC alone.
    pub skipped: u64,
    /// Objects whose unwind tables could not be used (`path: reason`).
    pub refused: Vec<String>,
    /// What the reader of the input skipped (damaged regions, missing blocks) and whether
    /// the input was closed cleanly. The rewritten log is clean whatever the input was, so
    /// this is the only place the input's damage is told: a caller reports it
    /// ([`pmc_log::ReadReport::is_clean`]) as it would report its own reader's.
    pub read: pmc_log::ReadReport,
}

/// Why [`unwind_log`] failed.
#[derive(Debug)]
pub enum UnwindLogError {
    /// The input is not a readable pmc-log.
    Read(pmc_log::ReadError),
    /// The rewritten log could not be written (its encoder refused a record).
    Write(pmc_log::WriteError),
}

impl std::fmt::Display for UnwindLogError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UnwindLogError::Read(e) => write!(f, "cannot read the log: {e}"),
            UnwindLogError::Write(e) => write!(f, "cannot write the unwound log: {e}"),
        }
    }
}

impl std::error::Error for UnwindLogError {}

/// The `arch` code of [`log::UserStack`] this build unwinds.
pub const NATIVE_ARCH: u16 = log::ARCH_NATIVE;

/// Rewrites a pmc-log whose samples carry `UserStack` records: each such sample gets its
/// unwound user callchain, and the stacks are dropped. Other records pass unchanged; a log
/// without stacks comes back record for record. Object paths are looked up as `unwinder`
/// says ([`Unwinder::with_root`]).
///
/// # Errors
/// The log's own read error (not a pmc-log), or a write error of the new log.
pub fn unwind_log(
    bytes: &[u8],
    unwinder: Unwinder,
) -> Result<(Vec<u8>, UnwindReport), UnwindLogError> {
    let reader = pmc_log::Reader::new(bytes).map_err(UnwindLogError::Read)?;
    let header = reader.header().unwrap_or_default();
    let write_err = UnwindLogError::Write;
    // The rewrite grows with the log: running out of memory is a write error, not an abort.
    let mut w = pmc_log::Writer::new(pmc_log::TryVec::new(), &header).map_err(write_err)?;
    let mut lu = LogUnwinder::new(unwinder);
    let mut report = UnwindReport::default();
    // The sample waiting for its UserStack record, if any.
    let mut pending: Option<log::Sample<'static>> = None;
    let mut closed = None;
    let mut records = reader.records();
    for r in records.by_ref() {
        if let Record::UserStack(u) = &r {
            match pending.take() {
                Some(mut s)
                    if s.time == u.time
                        && s.pid == u.pid
                        && s.tid == u.tid
                        && u.arch == NATIVE_ARCH =>
                {
                    let regs = UserRegs {
                        pc: u.pc,
                        sp: u.sp,
                        fp: u.fp,
                        lr: u.lr,
                    };
                    lu.complete(&mut s, &regs, u.stack.as_bytes());
                    w.write(&Record::Sample(s)).map_err(write_err)?;
                }
                Some(s) => {
                    report.skipped += 1;
                    w.write(&Record::Sample(s)).map_err(write_err)?;
                }
                None => report.skipped += 1,
            }
            continue;
        }
        if let Some(s) = pending.take() {
            w.write(&Record::Sample(s)).map_err(write_err)?;
        }
        lu.observe(&r);
        match r {
            Record::Header(_) => {}
            Record::Close(c) => closed = Some(c.time),
            Record::Sample(s) => pending = Some(s.into_owned()),
            other => w.write(&other).map_err(write_err)?,
        }
    }
    if let Some(s) = pending.take() {
        w.write(&Record::Sample(s)).map_err(write_err)?;
    }
    let st = lu.unwinder.stats();
    report.unwound = st.unwinds;
    report.truncated = st.truncated;
    report.refused = lu.unwinder.take_refusals();
    report.read = records.into_report();
    let out = match closed {
        Some(t) => w.finish_at(t),
        None => w.into_inner_unclosed(),
    }
    .map_err(write_err)?;
    Ok((out.into_inner(), report))
}
