//! The drain's post-processors: the bookkeeping jobs that follow the record stream beside
//! its conversion (log-proccsw, log-procexit, DWARF unwinding).
//!
//! The hub runs each [`PostProcessor`] at fixed points, in the order of [`PostChain`]:
//!
//! 1. [`drained`](PostProcessor::drained): every perf record as read from its ring (ring
//!    order, one ring after another), before conversion, with the ring's metadata. A
//!    processor may take the record in place of the log ([`Flow::Consumed`]: it is neither
//!    converted nor shown to the processors after it) and may emit records, which enter the
//!    reorder buffer at that point.
//! 2. [`ordered`](PostProcessor::ordered): every record leaving the reorder buffer, in time
//!    order, just before it is written. A processor may rewrite it (the unwinder completes a
//!    sample's callchain from its captured stack) and may emit records, written right after it.
//! 3. [`direct`](PostProcessor::direct): every record the hub writes directly (synthesized
//!    comms and maps, descriptors, counter values, user data), after all that was drained.
//! 4. [`end_pass`](PostProcessor::end_pass): after a pass over every ring (not after a drain of
//!    one PMC's rings).
//! 5. [`event`](PostProcessor::event): the PMCs' life cycle ([`HubEvent`]).
//! 6. [`summary`](PostProcessor::summary): after each flush of the reorder buffer, to put the
//!    processor's counts into the [`SamplingDetails`].
//!
//! Nothing here is called while the log is not configured: records drained then are counted
//! in the summary and dropped.

use super::source::{RingMeta, RingPurpose, RingSource};
use super::SamplingDetails;
use crate::log::unwind::{Stage, UserStack};
use crate::record::Record;
use pmc_log::record as log;

/// Whether a drained perf record goes on to the next processors and to conversion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flow {
    /// Shown to the next processor, then converted into a log record.
    Pass,
    /// Taken by this processor: the log does not get it (it may get what the processor
    /// emitted instead).
    Consumed,
}

/// A PMC's life-cycle event at the hub.
#[derive(Debug)]
pub(super) enum HubEvent<'a> {
    /// A PMC was registered: its descriptor was just written.
    Registered(&'a log::PmcDescriptor<'static>),
    /// A counting PMC with log-procexit stopped and its rings were drained: the processes
    /// known to have exited are logged (see [`ExitReads`](super::procexit::ExitReads)).
    Stopped {
        /// The PMC's log id.
        pmc: u32,
    },
    /// One target of a counting PMC with log-procexit is gone, with every task that inherited
    /// its events (the kernel hung up each of its events), and the PMC's rings were drained.
    TargetGone {
        /// The PMC's log id.
        pmc: u32,
        /// The target's pid.
        target: i32,
        /// The target's total: its events' counts, read after the hang-up (`None`: unread).
        total: Option<u64>,
        /// When the hang-up was seen (the log's clock).
        time: u64,
    },
    /// A target of a counting PMC with log-procexit was detached (or its events replaced):
    /// what is known is logged, and the target forgotten.
    TargetClosed {
        /// The PMC's log id.
        pmc: u32,
        /// The target's pid.
        target: i32,
    },
    /// These rings (one PMC's) were drained a last time and are going away.
    Unregistering(&'a [&'a RingSource]),
}

/// One bookkeeping job of the drain thread (see the module documentation for when each
/// method is called). Every method has a do-nothing default.
pub(super) trait PostProcessor: Send {
    /// Whether it wants the records drained from rings of this purpose
    /// ([`drained`](PostProcessor::drained) is called for those only).
    fn wants(&self, purpose: RingPurpose) -> bool;

    /// Whether [`drained`](PostProcessor::drained) does anything with the samples of rings of
    /// this purpose (by default, whether it wants the ring at all). When no processor does,
    /// the drain decodes those samples on its fast path and does not show them here.
    fn drains_samples(&self, purpose: RingPurpose) -> bool {
        self.wants(purpose)
    }

    /// A perf record drained from a ring, in ring order, before conversion. Records pushed to
    /// `out` enter the reorder buffer now (after whatever was drained before).
    fn drained(
        &mut self,
        _meta: &RingMeta,
        _rec: &Record<'_>,
        _out: &mut Vec<log::Record<'static>>,
    ) -> Flow {
        Flow::Pass
    }

    /// Whether [`ordered`](PostProcessor::ordered) does anything with a sample that carries
    /// no user stack (by default, yes). When no processor does, such samples are written
    /// without being shown to the chain.
    fn orders_samples(&self) -> bool {
        true
    }

    /// A record leaving the reorder buffer in time order, about to be written; `stack` is a
    /// sample's captured user stack. Records pushed to `after` are written right after it.
    fn ordered(
        &mut self,
        _rec: &mut log::Record<'_>,
        _stack: Option<&UserStack<'_>>,
        _after: &mut Vec<log::Record<'static>>,
    ) {
    }

    /// A record the hub writes directly, after everything drained so far.
    fn direct(&mut self, _rec: &log::Record<'_>) {}

    /// A pass over every ring ended.
    fn end_pass(&mut self) {}

    /// A PMC's life-cycle event. Records pushed to `out` enter the reorder buffer.
    fn event(&mut self, _ev: &HubEvent<'_>, _out: &mut Vec<log::Record<'static>>) {}

    /// Puts this processor's counts into `summary`.
    fn summary(&mut self, _summary: &mut SamplingDetails) {}
}

/// The post-processors of a hub, in the order they run (the hub assembles the chain).
pub(super) struct PostChain(pub(super) Vec<Box<dyn PostProcessor>>);

impl PostChain {
    /// Whether a processor looks at the samples drained from rings of this purpose (see
    /// [`PostProcessor::drains_samples`]).
    pub(super) fn drains_samples(&self, purpose: RingPurpose) -> bool {
        self.0.iter().any(|p| p.drains_samples(purpose))
    }

    /// Runs `rec`, drained from a ring, through the processors; records they emit go to
    /// `out`, in order. [`Flow::Consumed`] if one of them took it.
    pub(super) fn drained(
        &mut self,
        meta: &RingMeta,
        rec: &Record<'_>,
        out: &mut dyn FnMut(log::Record<'static>),
    ) -> Flow {
        let mut emitted = Vec::new();
        for p in self.0.iter_mut().filter(|p| p.wants(meta.purpose)) {
            let flow = p.drained(meta, rec, &mut emitted);
            emitted.drain(..).for_each(&mut *out);
            if flow == Flow::Consumed {
                return Flow::Consumed;
            }
        }
        Flow::Pass
    }

    /// Whether a processor looks at samples without user stacks as they leave the reorder
    /// buffer (see [`PostProcessor::orders_samples`]).
    pub(super) fn orders_samples(&self) -> bool {
        self.0.iter().any(|p| p.orders_samples())
    }

    /// Runs `rec`, leaving the reorder buffer, through the processors, then hands it and the
    /// records they emitted after it to `write`.
    pub(super) fn ordered(
        &mut self,
        rec: &mut log::Record<'_>,
        stack: Option<&UserStack<'_>>,
        write: &mut dyn FnMut(&log::Record<'_>),
    ) {
        let mut after = Vec::new();
        for p in &mut self.0 {
            p.ordered(rec, stack, &mut after);
        }
        write(rec);
        for r in &after {
            write(r);
        }
    }

    /// Shows every processor a record written directly.
    pub(super) fn direct(&mut self, rec: &log::Record<'_>) {
        self.0.iter_mut().for_each(|p| p.direct(rec));
    }

    /// Tells every processor that a pass over every ring ended.
    pub(super) fn end_pass(&mut self) {
        self.0.iter_mut().for_each(|p| p.end_pass());
    }

    /// Tells every processor of a PMC's life-cycle event; records they emit go to `out`.
    pub(super) fn event(&mut self, ev: &HubEvent<'_>, out: &mut dyn FnMut(log::Record<'static>)) {
        let mut emitted = Vec::new();
        for p in &mut self.0 {
            p.event(ev, &mut emitted);
            emitted.drain(..).for_each(&mut *out);
        }
    }

    /// Puts every processor's counts into `summary`.
    pub(super) fn summary(&mut self, summary: &mut SamplingDetails) {
        self.0.iter_mut().for_each(|p| p.summary(summary));
    }
}

/// The unwinding stage ([`crate::log::unwind`]): follows the maps, execs, forks and exits of every
/// record the log takes, drained or written directly, and completes each sample that carries
/// a user stack as it leaves the reorder buffer (by then its process's `MMAP2`s have passed).
impl PostProcessor for Stage {
    /// None drained: it works on samples as they are written.
    fn wants(&self, _purpose: RingPurpose) -> bool {
        false
    }

    /// Only samples with a stack, to unwind.
    fn orders_samples(&self) -> bool {
        false
    }

    fn ordered(
        &mut self,
        rec: &mut log::Record<'_>,
        stack: Option<&UserStack<'_>>,
        _after: &mut Vec<log::Record<'static>>,
    ) {
        self.observe(rec);
        if let (log::Record::Sample(s), Some(u)) = (rec, stack) {
            self.complete(s, u);
        }
    }

    fn direct(&mut self, rec: &log::Record<'_>) {
        self.observe(rec);
    }

    fn summary(&mut self, summary: &mut SamplingDetails) {
        self.tally(summary);
    }
}

#[cfg(all(test, feature = "dwarf"))]
pub(super) mod tests {
    use super::*;

    pub(in crate::log) fn stack(pc: u64) -> UserStack<'static> {
        UserStack {
            regs: crate::log::unwind::Regs {
                pc,
                sp: 0x7ff0_0000,
                fp: 0,
                lr: 0,
            },
            stack: &[0; 64],
        }
    }

    pub(in crate::log) fn user_sample(time: u64, pid: i32, pc: u64) -> log::Sample<'static> {
        log::Sample {
            time,
            pmc_id: 1,
            pid,
            tid: pid,
            cpu: None,
            period: 1,
            callchain: log::Callchain::from_vec(vec![0xffff_ffff_8100_0000, pc]),
            kernel_frames: 1,
            raw: log::Bytes::default(),
        }
    }

    /// The unwinding stage as a post-processor: records other than samples with a stack
    /// leave it as they came and it writes nothing after them; a sample with a stack gets
    /// its user frames from the unwind (here the PC alone, truncated: pid 99 has no known
    /// mapping), and the summary counts the unwinds and the truncated ones.
    #[test]
    fn unwinding_stage_passes_records_through_and_counts_truncations() {
        let mut stage = Stage::default();
        let plain = [
            log::Record::Comm(log::Comm {
                time: 1,
                pid: 99,
                tid: 99,
                exec: true,
                comm: log::Bytes::from("x"),
            }),
            log::Record::Lost(log::Lost {
                time: 2,
                pmc_id: Some(1),
                cpu: Some(0),
                count: 3,
            }),
            log::Record::Sample(user_sample(3, 99, 0x40_1000)),
            log::Record::Exit(log::Exit {
                time: 4,
                pid: 98,
                tid: 98,
            }),
        ];
        for rec in plain {
            let (mut r, mut after) = (rec.clone(), Vec::new());
            stage.ordered(&mut r, None, &mut after);
            assert_eq!((r, after.len()), (rec, 0));
        }
        let mut summary = SamplingDetails::default();
        stage.summary(&mut summary);
        assert_eq!((summary.unwound, summary.unwind_truncated), (0, 0));
        for pc in [0x40_1000, 0x40_2000] {
            let mut r = log::Record::Sample(user_sample(5, 99, 0));
            let mut after = Vec::new();
            stage.ordered(&mut r, Some(&stack(pc)), &mut after);
            let log::Record::Sample(s) = r else {
                panic!("{r:?}")
            };
            assert_eq!(
                s.callchain.to_vec(),
                [0xffff_ffff_8100_0000, pc, log::TRUNCATED_FRAME]
            );
            assert!(after.is_empty());
        }
        stage.summary(&mut summary);
        assert_eq!((summary.unwound, summary.unwind_truncated), (2, 2));
        assert!(summary.unwind_refused.is_empty());
    }

    /// Records written directly reach the unwinding stage too: a mapping synthesized at start
    /// is the one a later sample's PC falls in (a device, refused and reported).
    #[test]
    // Opens /dev/zero (the unwinder's object reader), which Miri does not support.
    #[cfg_attr(miri, ignore)]
    fn unwinding_stage_follows_records_written_directly() {
        let mut stage = Stage::default();
        stage.direct(&log::Record::Map(log::Map {
            time: 1,
            pid: 7,
            start: 0x1000,
            len: 0x1000,
            pgoff: 0,
            build_id: log::Bytes::default(),
            path: log::Bytes::from("/dev/zero"),
        }));
        let mut r = log::Record::Sample(user_sample(2, 7, 0));
        stage.ordered(&mut r, Some(&stack(0x1010)), &mut Vec::new());
        let mut summary = SamplingDetails::default();
        stage.summary(&mut summary);
        assert_eq!(summary.unwind_refused.len(), 1, "{summary:?}");
        assert!(summary.unwind_refused[0].starts_with("/dev/zero"));
    }
}
