//! `PERF_RECORD_SAMPLE`: [`Sample`] and the views it holds (group reads, callchains, user
//! registers), and the general sample decoder.

use pmc_log::bytes::ByteCursor;

use super::decode::{read_values, word, Body};
use super::fast::{fixed_sample_fields, FIXED_SAMPLE_WORDS};
use super::{context, sample_type, CpuMode, ParseError};

/// `PERF_RECORD_SAMPLE`. Each field is `Some` when its `sample_type` bit is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sample<'a> {
    /// `perf_event_header.misc` (CPU mode, `PERF_RECORD_MISC_EXACT_IP`).
    pub misc: u16,
    /// `PERF_SAMPLE_IDENTIFIER`
    pub identifier: Option<u64>,
    /// `PERF_SAMPLE_IP`
    pub ip: Option<u64>,
    /// `PERF_SAMPLE_TID`: process id.
    pub pid: Option<u32>,
    /// `PERF_SAMPLE_TID`: thread id.
    pub tid: Option<u32>,
    /// `PERF_SAMPLE_TIME`
    pub time: Option<u64>,
    /// `PERF_SAMPLE_ADDR`
    pub addr: Option<u64>,
    /// `PERF_SAMPLE_ID`
    pub id: Option<u64>,
    /// `PERF_SAMPLE_STREAM_ID`
    pub stream_id: Option<u64>,
    /// `PERF_SAMPLE_CPU`
    pub cpu: Option<u32>,
    /// `PERF_SAMPLE_PERIOD`
    pub period: Option<u64>,
    /// `PERF_SAMPLE_READ`
    pub read: Option<ReadValues<'a>>,
    /// `PERF_SAMPLE_CALLCHAIN`
    pub callchain: Option<Callchain<'a>>,
    /// `PERF_SAMPLE_RAW`: the `data[size]` bytes (the u32 size and the padding excluded).
    pub raw: Option<&'a [u8]>,
    /// `PERF_SAMPLE_REGS_USER`: `abi` (`PERF_SAMPLE_REGS_ABI_*`; 0 when the sampled task had
    /// no user context, e.g. a kernel thread) and the registers of
    /// [`ParseConfig::sample_regs_user`](super::ParseConfig::sample_regs_user) in bit order (empty with abi 0).
    pub regs_user: Option<RegsUser<'a>>,
    /// `PERF_SAMPLE_STACK_USER`: the user stack copied from the user stack pointer up, cut to
    /// `dyn_size` (the bytes the kernel really copied; empty without a user context).
    pub stack_user: Option<&'a [u8]>,
    /// Bytes after the decoded fields (`PERF_SAMPLE_BRANCH_STACK` and later), undecoded.
    pub unparsed: &'a [u8],
}

/// `PERF_SAMPLE_REGS_USER`'s `{ u64 abi; u64 regs[weight(mask)]; }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RegsUser<'a> {
    /// `PERF_SAMPLE_REGS_ABI_NONE` (0), `_32` (1) or `_64` (2).
    pub abi: u64,
    /// The registers, native-endian u64s, in the order of the mask's bits.
    pub regs: &'a [u8],
}

impl RegsUser<'_> {
    /// The `i`-th register present (in mask bit order).
    pub fn get(&self, i: usize) -> Option<u64> {
        ByteCursor::ne(self.regs).u64_at(i.checked_mul(8)?).ok()
    }
}

impl Sample<'_> {
    /// The CPU mode bits of [`Sample::misc`].
    pub fn cpu_mode(&self) -> CpuMode {
        CpuMode::from_misc(self.misc)
    }
}

/// `struct read_format`, as found in `PERF_SAMPLE_READ` and `PERF_RECORD_READ`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadValues<'a> {
    /// Without `PERF_FORMAT_GROUP`: one counter.
    Single(ReadSingle),
    /// With `PERF_FORMAT_GROUP`: all counters of the group.
    Group(ReadGroup<'a>),
}

/// `struct read_format` without `PERF_FORMAT_GROUP`:
/// `{ value; time_enabled?; time_running?; id?; lost? }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReadSingle {
    /// The counter value.
    pub value: u64,
    /// `PERF_FORMAT_TOTAL_TIME_ENABLED`
    pub time_enabled: Option<u64>,
    /// `PERF_FORMAT_TOTAL_TIME_RUNNING`
    pub time_running: Option<u64>,
    /// `PERF_FORMAT_ID`
    pub id: Option<u64>,
    /// `PERF_FORMAT_LOST`
    pub lost: Option<u64>,
}

/// `struct read_format` with `PERF_FORMAT_GROUP`:
/// `{ nr; time_enabled?; time_running?; { value; id?; lost? } cntr[nr] }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadGroup<'a> {
    /// `PERF_FORMAT_TOTAL_TIME_ENABLED`
    pub time_enabled: Option<u64>,
    /// `PERF_FORMAT_TOTAL_TIME_RUNNING`
    pub time_running: Option<u64>,
    pub(super) has_id: bool,
    pub(super) has_lost: bool,
    pub(super) entries: &'a [u8],
}

/// One counter of a [`ReadGroup`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GroupEntry {
    /// The counter value.
    pub value: u64,
    /// `PERF_FORMAT_ID`
    pub id: Option<u64>,
    /// `PERF_FORMAT_LOST`
    pub lost: Option<u64>,
}

impl<'a> ReadGroup<'a> {
    pub(super) fn stride(has_id: bool, has_lost: bool) -> usize {
        8 * (1 + usize::from(has_id) + usize::from(has_lost))
    }

    /// Number of counters (`nr`).
    pub fn len(&self) -> usize {
        self.entries.len() / Self::stride(self.has_id, self.has_lost)
    }

    /// True if the group has no counters.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The counters, in group order (leader first).
    pub fn iter(&self) -> GroupEntries<'a> {
        GroupEntries {
            chunks: self
                .entries
                .chunks_exact(Self::stride(self.has_id, self.has_lost)),
            has_id: self.has_id,
            has_lost: self.has_lost,
        }
    }
}

impl<'a> IntoIterator for &ReadGroup<'a> {
    type Item = GroupEntry;
    type IntoIter = GroupEntries<'a>;
    fn into_iter(self) -> GroupEntries<'a> {
        self.iter()
    }
}

/// Iterator over the counters of a [`ReadGroup`].
#[derive(Debug, Clone)]
pub struct GroupEntries<'a> {
    chunks: std::slice::ChunksExact<'a, u8>,
    pub(super) has_id: bool,
    pub(super) has_lost: bool,
}

impl Iterator for GroupEntries<'_> {
    type Item = GroupEntry;
    fn next(&mut self) -> Option<GroupEntry> {
        let chunk = self.chunks.next()?;
        let mut words = chunk.chunks_exact(8).map(word);
        let value = words.next()?;
        let id = if self.has_id { words.next() } else { None };
        let lost = if self.has_lost { words.next() } else { None };
        Some(GroupEntry { value, id, lost })
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.chunks.size_hint()
    }
}

/// `PERF_SAMPLE_CALLCHAIN`: `{ u64 nr; u64 ips[nr]; }`, kept as a view of the `ips` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Callchain<'a> {
    pub(super) ips: &'a [u8],
}

impl<'a> Callchain<'a> {
    /// Number of raw entries (`nr`), context markers included.
    pub fn raw_len(&self) -> usize {
        self.ips.len() / 8
    }

    /// The raw entries, context markers included.
    pub fn raw(&self) -> impl Iterator<Item = u64> + 'a {
        self.ips.chunks_exact(8).map(word)
    }

    /// The frames with the `PERF_CONTEXT_*` markers removed, each tagged with the context the
    /// last marker before it announced.
    pub fn frames(&self) -> Frames<'a> {
        Frames {
            chunks: self.ips.chunks_exact(8),
            context: FrameContext::Unknown,
        }
    }
}

/// Which part of the stack a callchain frame belongs to, from the marker that preceded it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameContext {
    /// No marker preceded the frame, or the marker is not one this module knows.
    Unknown,
    /// After `PERF_CONTEXT_KERNEL`.
    Kernel,
    /// After `PERF_CONTEXT_USER` (or `PERF_CONTEXT_USER_DEFERRED`).
    User,
    /// After `PERF_CONTEXT_HV`.
    Hypervisor,
    /// After `PERF_CONTEXT_GUEST`.
    Guest,
    /// After `PERF_CONTEXT_GUEST_KERNEL`.
    GuestKernel,
    /// After `PERF_CONTEXT_GUEST_USER`.
    GuestUser,
}

impl FrameContext {
    /// The context a marker announces, or `None` if `entry` is an address, not a marker.
    pub fn from_marker(entry: u64) -> Option<Self> {
        if entry < context::MAX {
            return None;
        }
        Some(match entry {
            context::KERNEL => Self::Kernel,
            context::USER | context::USER_DEFERRED => Self::User,
            context::HV => Self::Hypervisor,
            context::GUEST => Self::Guest,
            context::GUEST_KERNEL => Self::GuestKernel,
            context::GUEST_USER => Self::GuestUser,
            _ => Self::Unknown,
        })
    }

    /// True for kernel frames, host or guest.
    pub fn is_kernel(self) -> bool {
        matches!(self, Self::Kernel | Self::GuestKernel)
    }

    /// True for user frames, host or guest.
    pub fn is_user(self) -> bool {
        matches!(self, Self::User | Self::GuestUser)
    }
}

/// One callchain frame: an address and the context it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    /// Instruction pointer (a return address for every frame but the first of each context).
    pub addr: u64,
    /// The part of the stack the frame belongs to.
    pub context: FrameContext,
}

/// Iterator over the frames of a [`Callchain`], markers removed.
#[derive(Debug, Clone)]
pub struct Frames<'a> {
    chunks: std::slice::ChunksExact<'a, u8>,
    context: FrameContext,
}

impl Iterator for Frames<'_> {
    type Item = Frame;
    fn next(&mut self) -> Option<Frame> {
        for chunk in self.chunks.by_ref() {
            let entry = word(chunk);
            match FrameContext::from_marker(entry) {
                Some(ctx) => self.context = ctx,
                None => {
                    return Some(Frame {
                        addr: entry,
                        context: self.context,
                    })
                }
            }
        }
        None
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, self.chunks.size_hint().1)
    }
}

/// `PERF_RECORD_SAMPLE`: each field present when its `sample_type` bit is set, in
/// `perf_event.h`'s order.
pub(super) fn sample<'a>(b: &mut Body<'a, '_>) -> Result<Sample<'a>, ParseError> {
    let mut s = Sample {
        misc: b.misc,
        ..Sample::default()
    };
    // The fields before READ are one u64 word each: read at once when the body holds them
    // (every sample the drain reads), else one by one for the error's offset.
    let fixed = (b.cfg.sample_type & FIXED_SAMPLE_WORDS).count_ones() as usize * 8;
    if b.c.remaining() >= fixed {
        let words = b.take(fixed)?;
        let f = fixed_sample_fields(b.cfg, words);
        (s.identifier, s.ip, s.pid, s.tid, s.time) = (f.identifier, f.ip, f.pid, f.tid, f.time);
        (s.addr, s.id, s.stream_id, s.cpu, s.period) = (f.addr, f.id, f.stream_id, f.cpu, f.period);
    } else {
        s.identifier = b.u64_if(b.has(sample_type::IDENTIFIER))?;
        s.ip = b.u64_if(b.has(sample_type::IP))?;
        if b.has(sample_type::TID) {
            let (pid, tid) = b.pair()?;
            (s.pid, s.tid) = (Some(pid), Some(tid));
        }
        s.time = b.u64_if(b.has(sample_type::TIME))?;
        s.addr = b.u64_if(b.has(sample_type::ADDR))?;
        s.id = b.u64_if(b.has(sample_type::ID))?;
        s.stream_id = b.u64_if(b.has(sample_type::STREAM_ID))?;
        if b.has(sample_type::CPU) {
            s.cpu = Some(b.pair()?.0); // { cpu, res }
        }
        s.period = b.u64_if(b.has(sample_type::PERIOD))?;
    }
    if b.has(sample_type::READ) {
        s.read = Some(read_values(b)?);
    }
    if b.has(sample_type::CALLCHAIN) {
        let ips = b.u64_counted("callchain nr", 8)?;
        s.callchain = Some(Callchain { ips });
    }
    if b.has(sample_type::RAW) {
        // { u32 size; char data[size]; } padded so that the u32 and data end 8-aligned.
        let size_offset = b.c.pos();
        let size = b.u32()?;
        let data = b.counted("raw size", u64::from(size), size_offset, 1)?;
        let pad = (8 - (4 + data.len()) % 8) % 8;
        b.take(pad.min(b.c.remaining()))?;
        s.raw = Some(data);
    }
    // BRANCH_STACK's length depends on branch_sample_type, which the config does not
    // carry: after it, nothing is decoded.
    if !b.has(sample_type::BRANCH_STACK) {
        if b.has(sample_type::REGS_USER) {
            s.regs_user = Some(regs_user(b)?);
        }
        if b.has(sample_type::STACK_USER) {
            s.stack_user = Some(stack_user(b)?);
        }
    }
    s.unparsed = b.c.rest();
    Ok(s)
}

/// `PERF_SAMPLE_REGS_USER`: `{ u64 abi; u64 regs[weight(sample_regs_user)]; }` (no
/// registers with abi 0).
pub(super) fn regs_user<'a>(b: &mut Body<'a, '_>) -> Result<RegsUser<'a>, ParseError> {
    let abi = b.u64()?;
    let n = match abi {
        0 => 0,
        _ => u64::from(b.cfg.sample_regs_user.count_ones()),
    };
    let at = b.c.pos();
    let regs = b.counted("regs_user count", n, at, 8)?;
    Ok(RegsUser { abi, regs })
}

/// `PERF_SAMPLE_STACK_USER`: `{ u64 size; char data[size]; u64 dyn_size; }` (data and
/// dyn_size only when size is not 0), cut to `dyn_size`.
pub(super) fn stack_user<'a>(b: &mut Body<'a, '_>) -> Result<&'a [u8], ParseError> {
    let size_offset = b.c.pos();
    let size = b.u64()?;
    if size == 0 {
        return Ok(&[]);
    }
    let data = b.counted("stack_user size", size, size_offset, 1)?;
    let dyn_offset = b.c.pos();
    let dyn_size = b.u64()?;
    let bad = ParseError::BadCount {
        what: "stack_user dyn_size",
        value: dyn_size,
        offset: dyn_offset,
    };
    usize::try_from(dyn_size)
        .ok()
        .and_then(|d| data.get(..d))
        .ok_or(bad)
}
