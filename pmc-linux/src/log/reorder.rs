//! The reorder buffer: records of several rings in time order.

use crate::log::unwind::{Regs, UserStack};
use pmc_log::record as log;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::ops::Range;

/// How far behind a drain pass's start a record's time must be before it is written. A
/// record is stamped before the kernel commits it to its ring; the slack covers that gap.
pub(super) const REORDER_SLACK_NS: u64 = 10_000_000;

/// Up to this many runs, a flush finds the oldest next entry by looking at each run's (a
/// pass usually has one run per ring drained); past it, with a heap.
const LINEAR_MERGE_RUNS: usize = 4;

/// Puts the records of several rings into time order before they reach the log, as perf's
/// `ordered_events` does for `perf report`.
///
/// Rings are drained one after another, so without it a record of one CPU can reach the
/// log before an older record of another: a sample of a process just exec'd on CPU 1
/// before its `MMAP2` from CPU 0, which then resolves to no mapping. A pass drains every
/// ring, then writes, in time order, every record stamped before the pass began (less
/// [`REORDER_SLACK_NS`]): each of those was in its ring when the pass read it. Later ones
/// wait for the next pass (or flush_log/close_log, or a record written directly, such as
/// user data, which follows everything drained before it). Memory stays bounded by what the
/// rings hold plus that slack's worth of records.
///
/// A sample with a captured user stack ([`crate::log::unwind`]) waits here with its stack, and is
/// unwound as it is written: by then every earlier record, its process's maps among them,
/// has passed through the unwinding stage.
///
/// # Cost
///
/// This is the drain's hot path: every sample passes through it. A sample waits as a small
/// entry (its fields, and the place of its frames in an arena of frames shared by every
/// pending sample: [`Reorder::frames`] then [`Reorder::push_sample`]), so that it costs no
/// allocation and waits in 64 bytes, a cache line, not as a whole owned record. A captured
/// user stack is copied into [`Stacks`], chunks of memory reused pass after pass. Other
/// records (and samples with raw data) wait boxed.
///
/// A pass does not sort: the rings' records arrive as runs already in time order (one run per
/// ring drained, as a ring holds its CPU's records in order), so [`Reorder::push_sample`] and
/// [`Reorder::push`] note where each run begins, and [`Reorder::flush`] merges the runs in
/// place, taking each record out where it waits. That is the order of a stable sort on time
/// alone (equal times keep their arrival order: the earlier run first), with no scratch
/// memory and no move of the waiting entries (a stable sort moved each entry to a scratch
/// buffer it allocated per pass, and back: a fifth of the drain's cache misses).
#[derive(Default)]
pub(super) struct Reorder {
    pending: Vec<Pending>,
    /// Where each run of `pending` in time order begins (the first at 0).
    runs: Vec<usize>,
    /// The time of the last record pushed (a younger one begins a run).
    last: u64,
    /// The merge's cursors: per run, the entries of it not yet taken (kept for its capacity).
    heads: Vec<Range<usize>>,
    /// The merge's heap of (time, run) of the runs' next entries, past [`LINEAR_MERGE_RUNS`]
    /// runs (kept for its capacity).
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    /// The frames of the pending samples ([`Item::Sample`]), back to back.
    frames: Vec<u64>,
    /// The arena the frames of the samples still pending after a flush move to (kept for its
    /// capacity).
    spare: Vec<u64>,
    /// The captured user stacks of the pending samples.
    stacks: Stacks,
    /// Where the pending samples' stacks are in `stacks` (a sample holds an index here, so
    /// that it waits in 64 bytes, a cache line, with or without a stack).
    refs: Vec<StackRef>,
    /// The table the refs of the samples still pending after a flush move to.
    spare_refs: Vec<StackRef>,
}

/// A sample's `stack` index when it has none.
const NO_STACK: u32 = u32::MAX;

/// A record waiting for its time: one cache line (aligned to it).
#[repr(align(64))]
struct Pending {
    time: u64,
    item: Item,
}

/// What waits: a sample in the reorder buffer's own compact form, or any log record.
enum Item {
    /// A sample without raw data: its fields, its `len` frames from `at` in the arena,
    /// and its captured user stack's index in `refs` ([`NO_STACK`]: none).
    Sample {
        head: SampleHead,
        at: u32,
        len: u32,
        stack: u32,
    },
    /// Any other record, with a sample's user stack.
    Record(Box<(log::Record<'static>, Option<StackRef>)>),
    /// A record a flush has taken (until the flush drops it).
    Taken,
}

/// The fields of a [`log::Sample`] but its callchain and raw data (see
/// [`Reorder::push_sample`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SampleHead {
    pub(super) time: u64,
    pub(super) pmc_id: u32,
    pub(super) pid: i32,
    pub(super) tid: i32,
    pub(super) cpu: Option<u32>,
    pub(super) period: u64,
    pub(super) kernel_frames: u32,
}

impl SampleHead {
    /// The log sample of these fields with `frames` (leaf first) and no raw data.
    pub(super) fn sample(self, frames: &[u64]) -> log::Sample<'_> {
        log::Sample {
            time: self.time,
            pmc_id: self.pmc_id,
            pid: self.pid,
            tid: self.tid,
            cpu: self.cpu,
            period: self.period,
            callchain: log::Callchain::from_frames(frames),
            kernel_frames: self.kernel_frames,
            raw: log::Bytes::default(),
        }
    }
}

/// A user stack kept in [`Stacks`]: its registers, and where its bytes are.
#[derive(Debug, Clone, Copy)]
struct StackRef {
    regs: Regs,
    chunk: u64,
    at: usize,
    len: usize,
}

/// The user stacks of pending samples, copied out of the rings (the kernel reuses a ring's
/// space once the drain has read it) into chunks of [`STACK_CHUNK`] bytes. Stacks leave
/// about in the order they came, so the oldest chunk empties first and goes back to a pool:
/// no allocation per stack, and memory already touched.
#[derive(Default)]
struct Stacks {
    /// Chunks in use, oldest first: (bytes, stacks in it not yet written).
    chunks: VecDeque<(Vec<u8>, usize)>,
    /// The id of `chunks[0]` (ids count up as chunks are opened).
    first: u64,
    /// Emptied chunks, for reuse.
    pool: Vec<Vec<u8>>,
}

/// The size of a chunk of [`Stacks`]: 128 stacks of 8 KiB (`CallGraph::dwarf()`'s size).
const STACK_CHUNK: usize = 1 << 20;

impl Stacks {
    /// Copies `u`'s stack in.
    fn put(&mut self, u: &UserStack<'_>) -> StackRef {
        let len = u.stack.len();
        let fits = self
            .chunks
            .back()
            .is_some_and(|(b, _)| b.capacity() - b.len() >= len);
        if !fits {
            let mut buf = self.pool.pop().unwrap_or_default();
            buf.clear();
            buf.reserve(STACK_CHUNK.max(len));
            self.chunks.push_back((buf, 0));
        }
        let id = (self.first + self.chunks.len() as u64).saturating_sub(1);
        let Some((buf, live)) = self.chunks.back_mut() else {
            // Unreachable: a chunk was just opened. An empty stack unwinds to the PC alone.
            return StackRef {
                regs: u.regs,
                chunk: id,
                at: 0,
                len: 0,
            };
        };
        let at = buf.len();
        buf.extend_from_slice(u.stack);
        *live += 1;
        StackRef {
            regs: u.regs,
            chunk: id,
            at,
            len,
        }
    }

    /// The stack `r` refers to (empty if it is gone).
    fn get(&self, r: &StackRef) -> UserStack<'_> {
        let stack = usize::try_from(r.chunk.wrapping_sub(self.first))
            .ok()
            .and_then(|i| self.chunks.get(i))
            .and_then(|(b, _)| b.get(r.at..r.at.checked_add(r.len)?))
            .unwrap_or_default();
        UserStack {
            regs: r.regs,
            stack,
        }
    }

    /// `r`'s stack was written: its chunk has one stack fewer; emptied chunks at the front
    /// go back to the pool (the last one stays open, emptied).
    fn release(&mut self, r: &StackRef) {
        let Some((_, live)) = usize::try_from(r.chunk.wrapping_sub(self.first))
            .ok()
            .and_then(|i| self.chunks.get_mut(i))
        else {
            return;
        };
        *live = live.saturating_sub(1);
        while self.chunks.front().is_some_and(|(_, live)| *live == 0) {
            if self.chunks.len() == 1 {
                if let Some((b, _)) = self.chunks.front_mut() {
                    b.clear();
                }
                break;
            }
            if let Some((b, _)) = self.chunks.pop_front() {
                self.first += 1;
                if self.pool.len() < 2 {
                    self.pool.push(b);
                }
            }
        }
    }
}

impl Reorder {
    pub(super) fn push(&mut self, rec: log::Record<'_>) {
        self.push_with(rec, None);
    }

    /// `rec` with a sample's user stack (copied).
    pub(super) fn push_with(&mut self, rec: log::Record<'_>, stack: Option<UserStack<'_>>) {
        let stack = stack.map(|u| self.stacks.put(&u));
        let time = rec.time();
        self.note_run(time);
        self.pending.push(Pending {
            time,
            item: Item::Record(Box::new((rec.into_owned(), stack))),
        });
    }

    /// The frame arena: a sample's frames are appended here, then given with
    /// [`Reorder::push_sample`] (as `from`, the arena's length before them).
    pub(super) fn frames(&mut self) -> &mut Vec<u64> {
        &mut self.frames
    }

    /// A sample of fields `head` whose frames were appended to [`Reorder::frames`] from
    /// index `from` on, with its captured user stack (copied). (A `from` past the arena's
    /// end counts as no frames.)
    #[inline(always)]
    pub(super) fn push_sample(
        &mut self,
        head: SampleHead,
        from: usize,
        stack: Option<UserStack<'_>>,
    ) {
        let end = self.frames.len();
        let from = from.min(end);
        let stack = stack.map(|u| self.stacks.put(&u));
        self.note_run(head.time);
        let item = match (u32::try_from(from), u32::try_from(end - from)) {
            (Ok(at), Ok(len)) => match stack {
                None => Some(Item::Sample {
                    head,
                    at,
                    len,
                    stack: NO_STACK,
                }),
                Some(r) => u32::try_from(self.refs.len())
                    .ok()
                    .filter(|&i| i != NO_STACK)
                    .map(|i| {
                        self.refs.push(r);
                        Item::Sample {
                            head,
                            at,
                            len,
                            stack: i,
                        }
                    }),
            },
            _ => None,
        };
        // Past 2^32 frames or stacks waiting (not seen in practice), a sample waits boxed.
        let item = item.unwrap_or_else(|| {
            let frames = self.frames.get(from..).unwrap_or_default();
            let rec = log::Record::Sample(head.sample(frames)).into_owned();
            Item::Record(Box::new((rec, stack)))
        });
        self.pending.push(Pending {
            time: head.time,
            item,
        });
    }

    /// A record of `time` is about to be pushed: it begins a run if it is older than the
    /// record before it (or is the first).
    #[inline(always)]
    fn note_run(&mut self, time: u64) {
        if self.pending.is_empty() {
            self.runs.clear();
            self.runs.push(0);
        } else if time < self.last {
            self.runs.push(self.pending.len());
        }
        self.last = time;
    }

    /// Hands `emit`, in time order, the records stamped at or before `upto` (all with
    /// `u64::MAX`), each with its sample's user stack; the hub writes each through its
    /// post-processors (the unwinding stage among them). Records of equal times come in the
    /// order they were pushed.
    pub(super) fn flush(&mut self, upto: u64, emit: &mut dyn Emit) {
        if self.pending.is_empty() {
            return;
        }
        let Reorder {
            pending,
            runs,
            last,
            heads,
            heap,
            frames,
            spare,
            stacks,
            refs,
            spare_refs,
        } = self;
        heads.clear();
        for (r, &from) in runs.iter().enumerate() {
            let to = runs.get(r + 1).copied().unwrap_or(pending.len());
            heads.push(from.min(to)..to);
        }
        let plain = emit.takes_plain_samples();
        let mut take = |pending: &mut Vec<Pending>, i: usize| {
            take_one(pending, i, frames, refs, stacks, plain, emit);
        };
        // The oldest next entry of the runs, while it is due; on equal times the earlier run
        // (pushed first) goes first, as each run's own entries do.
        let time_at = |pending: &[Pending], i: usize| pending.get(i).map_or(u64::MAX, |p| p.time);
        if heads.len() <= LINEAR_MERGE_RUNS {
            // The run whose next entry is oldest takes its turn until its next entry would
            // come after the next entry of another run: runs of one ring's records are
            // taken in stretches, not entry by entry (a single run, in one).
            loop {
                let mut best: Option<(u64, usize)> = None;
                let mut bound = (u64::MAX, usize::MAX);
                for (r, h) in heads.iter().enumerate() {
                    if h.start < h.end {
                        let next = (time_at(pending, h.start), r);
                        match best {
                            Some(b) if b <= next => bound = bound.min(next),
                            Some(b) => {
                                bound = bound.min(b);
                                best = Some(next);
                            }
                            None => best = Some(next),
                        }
                    }
                }
                let Some(r) = best.filter(|&(t, _)| t <= upto).map(|(_, r)| r) else {
                    break;
                };
                let Some(h) = heads.get_mut(r) else { break };
                loop {
                    h.start += 1;
                    take(pending, h.start - 1);
                    let next = (time_at(pending, h.start), r);
                    if h.start >= h.end || next.0 > upto || next > bound {
                        break;
                    }
                }
            }
        } else {
            heap.clear();
            for (r, h) in heads.iter().enumerate() {
                if h.start < h.end {
                    heap.push(Reverse((time_at(pending, h.start), r)));
                }
            }
            while let Some(&Reverse((t, r))) = heap.peek() {
                if t > upto {
                    break;
                }
                heap.pop();
                let Some(h) = heads.get_mut(r) else { break };
                h.start += 1;
                take(pending, h.start - 1);
                if h.start < h.end {
                    heap.push(Reverse((time_at(pending, h.start), r)));
                }
            }
        }
        // What is still due later moves to the front, run after run, each in its order;
        // the taken entries are dropped.
        let mut kept = 0;
        for h in heads.iter() {
            for i in h.clone() {
                pending.swap(kept, i);
                kept += 1;
            }
        }
        pending.truncate(kept);
        runs.clear();
        *last = 0;
        for (i, p) in pending.iter().enumerate() {
            if i == 0 || p.time < *last {
                runs.push(i);
            }
            *last = p.time;
        }
        // The frames and stack refs of the samples still pending move to the front of the
        // other arena and table (no larger than the ones they leave, so their indices fit:
        // the entries kept are in the order they were pushed, run after run, so each one's
        // new place is at or before its old one, which fit in a u32 when it was pushed).
        spare.clear();
        spare_refs.clear();
        for p in pending.iter_mut() {
            if let Item::Sample { at, len, stack, .. } = &mut p.item {
                let from = spare.len();
                spare.extend_from_slice(frames.get(frame_range(*at, *len)).unwrap_or_default());
                *at = u32::try_from(from).unwrap_or(u32::MAX);
                if let Some(r) = refs.get(*stack as usize) {
                    *stack = u32::try_from(spare_refs.len()).unwrap_or(NO_STACK);
                    spare_refs.push(*r);
                }
            }
        }
        std::mem::swap(frames, spare);
        std::mem::swap(refs, spare_refs);
    }
}

/// Hands `emit` the record at `i` of `pending`, leaving [`Item::Taken`] in its place, and
/// releases its user stack.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn take_one(
    pending: &mut [Pending],
    i: usize,
    frames: &[u64],
    refs: &[StackRef],
    stacks: &mut Stacks,
    plain: bool,
    emit: &mut dyn Emit,
) {
    let Some(p) = pending.get_mut(i) else { return };
    let stack = match std::mem::replace(&mut p.item, Item::Taken) {
        Item::Sample {
            head,
            at,
            len,
            stack,
        } => {
            let chain = frames.get(frame_range(at, len)).unwrap_or_default();
            let stack = refs.get(stack as usize).copied();
            if plain && stack.is_none() {
                emit.plain_sample(&head.sample(chain));
                return;
            }
            let u = stack.as_ref().map(|r| stacks.get(r));
            emit.record(&mut log::Record::Sample(head.sample(chain)), u.as_ref());
            stack
        }
        Item::Record(b) => {
            let (mut rec, stack) = *b;
            let u = stack.as_ref().map(|r| stacks.get(r));
            emit.record(&mut rec, u.as_ref());
            stack
        }
        Item::Taken => None,
    };
    if let Some(r) = stack {
        stacks.release(&r);
    }
}

/// Where [`Reorder::flush`] hands the records it takes, in time order.
pub(super) trait Emit {
    /// A record (a sample among them), with its sample's captured user stack.
    fn record(&mut self, rec: &mut log::Record<'_>, stack: Option<&UserStack<'_>>);
    /// Whether samples without a user stack come to [`Emit::plain_sample`] (asked once per
    /// flush): for a writer no post-processor stands before, so that such a sample is
    /// written as it is, with no record built around it.
    fn takes_plain_samples(&self) -> bool {
        false
    }
    /// A sample without a user stack, when [`Emit::takes_plain_samples`].
    fn plain_sample(&mut self, s: &log::Sample<'_>) {
        self.record(&mut log::Record::Sample(s.clone()), None);
    }
}

/// Any closure over a record and its stack (every sample comes as a record).
impl<F: FnMut(&mut log::Record<'_>, Option<&UserStack<'_>>)> Emit for F {
    fn record(&mut self, rec: &mut log::Record<'_>, stack: Option<&UserStack<'_>>) {
        self(rec, stack)
    }
}

/// The arena indices of `len` frames from `at`.
#[inline(always)]
fn frame_range(at: u32, len: u32) -> Range<usize> {
    let at = at as usize;
    at..at.saturating_add(len as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::hub::write_log;
    use crate::log::synth::host_header;
    use crate::log::testutil::Buf;
    use pmc_core::LogSink;

    /// A waiting sample is one cache line (it was two, with its stack's place inline: the
    /// flush's reads of them were a third of the drain's cache misses).
    #[test]
    fn a_waiting_record_is_a_cache_line() {
        assert_eq!(std::mem::size_of::<Pending>(), 64);
    }

    #[test]
    fn records_of_several_rings_reach_the_log_in_time_order() {
        let buf = Buf::default();
        let sink: LogSink = Box::new(buf.clone());
        let mut writer =
            Some(pmc_log::Writer::new(sink, &host_header(&crate::sys::RealSys)).unwrap());
        let mut error = None;
        let lost = |time: u64, cpu: u32| {
            log::Record::Lost(log::Lost {
                time,
                pmc_id: Some(1),
                cpu: Some(cpu),
                count: 1,
            })
        };
        let mut r = Reorder::default();
        // One pass: CPU 0's ring, then CPU 1's, each in its own order.
        for (t, cpu) in [(10, 0), (40, 0), (70, 0), (20, 1), (30, 1), (80, 1)] {
            r.push(lost(t, cpu));
        }
        // The pass began at 60: 70 and 80 may still have older company in the rings.
        r.flush(
            60,
            &mut |rec: &mut log::Record<'_>, _: Option<&UserStack<'_>>| {
                write_log(&mut writer, &mut error, rec)
            },
        );
        assert_eq!(r.pending.len(), 2);
        // The next pass brings 65 from CPU 1; close flushes everything.
        r.push(lost(65, 1));
        r.flush(
            u64::MAX,
            &mut |rec: &mut log::Record<'_>, _: Option<&UserStack<'_>>| {
                write_log(&mut writer, &mut error, rec)
            },
        );
        assert!(r.pending.is_empty() && error.is_none());
        writer.take().unwrap().finish().unwrap();
        let bytes = buf.0.lock().unwrap().clone();
        let reader = pmc_log::Reader::new(&bytes[..]).unwrap();
        let times: Vec<u64> = reader
            .records()
            .filter_map(|r| match r {
                log::Record::Lost(l) => Some(l.time),
                _ => None,
            })
            .collect();
        assert_eq!(times, [10, 20, 30, 40, 65, 70, 80]);
    }

    /// Samples and their stacks wait in the arenas and come out in time order with their own
    /// frames and stack bytes, across flushes and chunks (stacks of 300 KiB: three to a
    /// chunk); emptied chunks are reused, so the chunks in use stay few.
    #[test]
    fn samples_keep_their_frames_and_stacks_across_flushes() {
        let mut r = Reorder::default();
        let stack_of = |i: u64| vec![u8::try_from(i % 251).unwrap(); 300 << 10];
        // Sample i of a round of ten: in reverse time order within its round.
        let time_of = |i: u64| i / 10 * 100 + 9 - i % 10;
        let push = |r: &mut Reorder, i: u64| {
            let from = r.frames().len();
            r.frames().extend([i, i + 1]);
            let bytes = stack_of(i);
            let u = UserStack {
                regs: Regs {
                    pc: i,
                    ..Regs::default()
                },
                stack: &bytes,
            };
            let head = SampleHead {
                time: time_of(i),
                pmc_id: 1,
                pid: 1,
                tid: 1,
                cpu: None,
                period: 1,
                kernel_frames: 0,
            };
            r.push_sample(head, from, Some(u));
        };
        let mut seen = Vec::new();
        let mut check = |rec: &mut log::Record<'_>, u: Option<&UserStack<'_>>| {
            let (log::Record::Sample(s), Some(u)) = (rec, u) else {
                panic!("a sample with its stack")
            };
            let i = u.regs.pc;
            assert_eq!(s.time, time_of(i));
            assert_eq!(s.callchain.to_vec(), [i, i + 1]);
            assert!(u.stack == stack_of(i).as_slice(), "stack of sample {i}");
            seen.push(i);
        };
        for round in 0..4u64 {
            // Ten samples a round, in reverse time order; half of them wait a round.
            for i in (round * 10)..(round * 10 + 10) {
                push(&mut r, i);
            }
            r.flush(round * 100 + 4, &mut check);
            assert!(r.stacks.chunks.len() <= 4, "{}", r.stacks.chunks.len());
        }
        r.flush(u64::MAX, &mut check);
        assert_eq!(seen.len(), 40);
        let mut sorted = seen.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..40).collect::<Vec<u64>>());
        assert!(r.pending.is_empty() && r.stacks.chunks.len() <= 1);
    }

    proptest::proptest! {
        /// The merge of the runs gives what a stable sort on time gives (the order the
        /// flush had before it merged), across flushes that leave records waiting, for
        /// any number of runs (either side of [`LINEAR_MERGE_RUNS`]) and equal times; every
        /// sample keeps its own frames.
        #[test]
        fn flushes_give_a_stable_sort_on_time(
            passes in proptest::collection::vec(
                (proptest::collection::vec((0u64..40, proptest::bool::ANY), 0..60), 0u64..60),
                1..6,
            )
        ) {
            let mut r = Reorder::default();
            let mut waiting: Vec<(u64, u32)> = Vec::new();
            let mut next_id = 0u32;
            for (pass, (recs, cut)) in passes.iter().enumerate() {
                let base = pass as u64 * 20;
                for &(t, as_sample) in recs {
                    let time = base + t;
                    let id = next_id;
                    next_id += 1;
                    if as_sample {
                        let from = r.frames().len();
                        r.frames().extend([u64::from(id), time]);
                        let head = SampleHead {
                            time,
                            pmc_id: id,
                            pid: 1,
                            tid: 1,
                            cpu: None,
                            period: 1,
                            kernel_frames: 0,
                        };
                        r.push_sample(head, from, None);
                    } else {
                        r.push(log::Record::Lost(log::Lost {
                            time,
                            pmc_id: Some(id),
                            cpu: None,
                            count: 1,
                        }));
                    }
                    waiting.push((time, id));
                }
                let upto = if pass + 1 == passes.len() { u64::MAX } else { base + cut };
                let mut want = waiting.clone();
                want.sort_by_key(|&(t, _)| t);
                let due: Vec<(u64, u32)> = want.iter().copied().filter(|&(t, _)| t <= upto).collect();
                waiting = want.into_iter().filter(|&(t, _)| t > upto).collect();
                let mut got = Vec::new();
                r.flush(upto, &mut |rec: &mut log::Record<'_>, _: Option<&UserStack<'_>>| match rec {
                    log::Record::Sample(s) => {
                        assert_eq!(s.callchain.to_vec(), [u64::from(s.pmc_id), s.time]);
                        got.push((s.time, s.pmc_id));
                    }
                    log::Record::Lost(l) => got.push((l.time, l.pmc_id.unwrap_or(u32::MAX))),
                    _ => panic!("only samples and losses were pushed"),
                });
                proptest::prop_assert_eq!(got, due);
                proptest::prop_assert_eq!(r.pending.len(), waiting.len());
            }
            proptest::prop_assert!(r.pending.is_empty());
        }
    }
}
