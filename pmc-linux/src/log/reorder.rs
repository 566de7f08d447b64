//! The reorder buffer: records of several rings in time order.

use crate::log::unwind::{Regs, UserStack};
use pmc_log::record as log;
use std::collections::VecDeque;
use std::ops::Range;

/// How far behind a drain pass's start a record's time must be before it is written. A
/// record is stamped before the kernel commits it to its ring; the slack covers that gap.
pub(super) const REORDER_SLACK_NS: u64 = 10_000_000;

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
/// allocation and a sort moves 72 bytes per record, not a whole owned record. A captured
/// user stack is copied into [`Stacks`], chunks of memory reused pass after pass. Other
/// records (and samples with raw data) wait boxed. The sort is stable, on time alone
/// (equal times keep their arrival order), and finds the rings' runs already in order: a
/// pass costs about a merge of as many sorted runs as rings were drained.
#[derive(Default)]
pub(super) struct Reorder {
    pending: Vec<Pending>,
    /// The frames of the pending samples ([`Item::Sample`]), back to back.
    frames: Vec<u64>,
    /// The arena the frames of the samples still pending after a flush move to (kept for its
    /// capacity).
    spare: Vec<u64>,
    /// The captured user stacks of the pending samples.
    stacks: Stacks,
}

/// A record waiting for its time.
struct Pending {
    time: u64,
    item: Item,
}

/// What waits: a sample in the reorder buffer's own compact form, or any log record.
enum Item {
    /// A sample without raw data: its fields, its frames at `frames` in the arena, and its
    /// captured user stack.
    Sample {
        head: SampleHead,
        frames: Range<usize>,
        stack: Option<StackRef>,
    },
    /// Any other record, with a sample's user stack.
    Record(Box<(log::Record<'static>, Option<StackRef>)>),
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
        self.pending.push(Pending {
            time: rec.time(),
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
    pub(super) fn push_sample(
        &mut self,
        head: SampleHead,
        from: usize,
        stack: Option<UserStack<'_>>,
    ) {
        let frames = from.min(self.frames.len())..self.frames.len();
        let stack = stack.map(|u| self.stacks.put(&u));
        self.pending.push(Pending {
            time: head.time,
            item: Item::Sample {
                head,
                frames,
                stack,
            },
        });
    }

    /// Hands `emit`, in time order, the records stamped at or before `upto` (all with
    /// `u64::MAX`), each with its sample's user stack; the hub writes each through its
    /// post-processors (the unwinding stage among them).
    pub(super) fn flush(
        &mut self,
        upto: u64,
        emit: &mut dyn FnMut(&mut log::Record<'_>, Option<&UserStack<'_>>),
    ) {
        if self.pending.is_empty() {
            return;
        }
        // Stable: records of equal times keep their arrival order.
        self.pending.sort_by_key(|p| p.time);
        let n = self.pending.partition_point(|p| p.time <= upto);
        let Reorder {
            pending,
            frames,
            spare,
            stacks,
        } = self;
        for p in pending.drain(..n) {
            let stack = match p.item {
                Item::Sample {
                    head,
                    frames: range,
                    stack,
                } => {
                    let chain = frames.get(range).unwrap_or_default();
                    let u = stack.as_ref().map(|r| stacks.get(r));
                    emit(&mut log::Record::Sample(head.sample(chain)), u.as_ref());
                    stack
                }
                Item::Record(b) => {
                    let (mut rec, stack) = *b;
                    let u = stack.as_ref().map(|r| stacks.get(r));
                    emit(&mut rec, u.as_ref());
                    stack
                }
            };
            if let Some(r) = stack {
                stacks.release(&r);
            }
        }
        // The frames of the samples still pending move to the front of the other arena.
        spare.clear();
        for p in pending.iter_mut() {
            if let Item::Sample { frames: range, .. } = &mut p.item {
                let from = spare.len();
                spare.extend_from_slice(frames.get(range.clone()).unwrap_or_default());
                *range = from..spare.len();
            }
        }
        std::mem::swap(frames, spare);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::hub::write_log;
    use crate::log::synth::host_header;
    use crate::log::testutil::Buf;
    use pmc_core::LogSink;

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
        r.flush(60, &mut |rec, _| write_log(&mut writer, &mut error, rec));
        assert_eq!(r.pending.len(), 2);
        // The next pass brings 65 from CPU 1; close flushes everything.
        r.push(lost(65, 1));
        r.flush(u64::MAX, &mut |rec, _| {
            write_log(&mut writer, &mut error, rec)
        });
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
}
