//! The bounded cursor every decoder reads through ([`Body`]), the one table of the record
//! kinds decoded, and the decoders of every kind but the sample.

use perf_event_open_sys::bindings as b;
use pmc_log::bytes::{cstr, ByteCursor, Short};

use super::{
    misc, read_format, sample_type, Comm, FileId, Lost, LostSamples, Mmap, Mmap2, ParseConfig,
    ParseError, ReadGroup, ReadRecord, ReadSingle, ReadValues, Record, SampleId, Switch,
    SwitchCpuWide, TaskEvent, Throttle,
};

/// Reads a native-endian u64 from an 8-byte chunk (`chunks_exact(8)`; anything shorter reads
/// as 0).
pub(super) fn word(chunk: &[u8]) -> u64 {
    ByteCursor::ne(chunk).u64_at(0).unwrap_or_default()
}

/// One record being decoded: pmc-log's bounded cursor over it (header included, so offsets
/// are the record's; [`Short`] becomes [`ParseError::UnexpectedEof`]), with what every
/// per-kind decoder may need.
pub(super) struct Body<'a, 'c> {
    pub(super) c: ByteCursor<'a>,
    /// `perf_event_header.size`, for the errors.
    record_len: usize,
    pub(super) cfg: &'c ParseConfig,
    /// `perf_event_header.misc`.
    pub(super) misc: u16,
    /// The decoded `sample_id` trailer (default for samples).
    pub(super) sample_id: SampleId,
}

impl<'a, 'c> Body<'a, 'c> {
    /// The bytes `record[start..end]`, read from `start`.
    pub(super) fn new(
        cfg: &'c ParseConfig,
        record: &'a [u8],
        start: usize,
        end: usize,
        misc: u16,
    ) -> Self {
        let mut c = ByteCursor::ne(record.get(..end).unwrap_or_default());
        let _ = c.skip(start); // start <= end: the callers check
        Self {
            c,
            record_len: record.len(),
            cfg,
            misc,
            sample_id: SampleId::default(),
        }
    }

    fn eof(&self) -> impl Fn(Short) -> ParseError {
        let len = self.record_len;
        move |s| ParseError::UnexpectedEof {
            offset: s.offset,
            needed: s.needed,
            len,
        }
    }

    pub(super) fn u32(&mut self) -> Result<u32, ParseError> {
        self.c.u32().map_err(self.eof())
    }

    pub(super) fn u64(&mut self) -> Result<u64, ParseError> {
        self.c.u64().map_err(self.eof())
    }

    pub(super) fn u64_if(&mut self, present: bool) -> Result<Option<u64>, ParseError> {
        self.c.u64_if(present).map_err(self.eof())
    }

    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8], ParseError> {
        self.c.take(n).map_err(self.eof())
    }

    /// Two `u32`s: `{ pid, tid }`, or `{ cpu, res }`.
    pub(super) fn pair(&mut self) -> Result<(u32, u32), ParseError> {
        Ok((self.u32()?, self.u32()?))
    }

    /// `count` (read at `at`) items of `item_len` bytes, checked against the record.
    pub(super) fn counted(
        &mut self,
        what: &'static str,
        count: u64,
        at: usize,
        item_len: usize,
    ) -> Result<&'a [u8], ParseError> {
        let bad = ParseError::BadCount {
            what,
            value: count,
            offset: at,
        };
        self.c.counted(count, item_len).ok_or(bad)
    }

    /// A `u64` count, then the items it counts.
    pub(super) fn u64_counted(
        &mut self,
        what: &'static str,
        item_len: usize,
    ) -> Result<&'a [u8], ParseError> {
        let at = self.c.pos();
        let n = self.u64()?;
        self.counted(what, n, at, item_len)
    }

    pub(super) fn has(&self, bit: u64) -> bool {
        self.cfg.has(bit)
    }
}

/// Decodes the fields of one record kind (before its `sample_id` trailer).
pub(super) type Decode = for<'a, 'c> fn(&mut Body<'a, 'c>) -> Result<Record<'a>, ParseError>;

/// What a record kind needs: `PERF_RECORD_SAMPLE` has a layout of its own and no trailer;
/// every other kind is a [`Decode`] followed by the trailer.
#[derive(Clone, Copy)]
pub(super) enum Decoder {
    Sample,
    WithSampleId(Decode),
}

/// The one list of the record kinds this module decodes.
pub(super) fn decoder(kind: u32) -> Option<Decoder> {
    use Decoder::WithSampleId as W;
    Some(match kind {
        b::PERF_RECORD_SAMPLE => Decoder::Sample,
        b::PERF_RECORD_MMAP => W(mmap),
        b::PERF_RECORD_MMAP2 => W(mmap2),
        b::PERF_RECORD_COMM => W(comm),
        b::PERF_RECORD_FORK => W(|b| task(b).map(Record::Fork)),
        b::PERF_RECORD_EXIT => W(|b| task(b).map(Record::Exit)),
        b::PERF_RECORD_LOST => W(lost),
        b::PERF_RECORD_LOST_SAMPLES => W(lost_samples),
        b::PERF_RECORD_THROTTLE => W(|b| throttle(b).map(Record::Throttle)),
        b::PERF_RECORD_UNTHROTTLE => W(|b| throttle(b).map(Record::Unthrottle)),
        b::PERF_RECORD_SWITCH => W(switch),
        b::PERF_RECORD_SWITCH_CPU_WIDE => W(switch_cpu_wide),
        b::PERF_RECORD_READ => W(read),
        _ => return None,
    })
}

/// `PERF_RECORD_MMAP`: `{ pid, tid, addr, len, pgoff, filename[] }`.
fn mmap<'a>(b: &mut Body<'a, '_>) -> Result<Record<'a>, ParseError> {
    let (pid, tid) = b.pair()?;
    Ok(Record::Mmap(Mmap {
        misc: b.misc,
        pid,
        tid,
        addr: b.u64()?,
        len: b.u64()?,
        pgoff: b.u64()?,
        filename: cstr(b.c.rest()),
        sample_id: b.sample_id,
    }))
}

/// `PERF_RECORD_MMAP2`: `{ pid, tid, addr, len, pgoff, { maj, min, ino, ino_generation } |
/// { build_id_size, __reserved[3], build_id[20] }, prot, flags, filename[] }`.
fn mmap2<'a>(b: &mut Body<'a, '_>) -> Result<Record<'a>, ParseError> {
    let (pid, tid) = b.pair()?;
    let (addr, len, pgoff) = (b.u64()?, b.u64()?, b.u64()?);
    let file_id = if b.misc & misc::MMAP_BUILD_ID != 0 {
        let at = b.c.pos();
        let id_size = b.take(4)?.first().copied().unwrap_or_default();
        let id = b.take(20)?;
        let bad = ParseError::BadCount {
            what: "build_id_size",
            value: u64::from(id_size),
            offset: at,
        };
        FileId::BuildId(id.get(..usize::from(id_size)).ok_or(bad)?)
    } else {
        FileId::Inode {
            maj: b.u32()?,
            min: b.u32()?,
            ino: b.u64()?,
            ino_generation: b.u64()?,
        }
    };
    Ok(Record::Mmap2(Mmap2 {
        misc: b.misc,
        pid,
        tid,
        addr,
        len,
        pgoff,
        file_id,
        prot: b.u32()?,
        flags: b.u32()?,
        filename: cstr(b.c.rest()),
        sample_id: b.sample_id,
    }))
}

/// `PERF_RECORD_COMM`: `{ pid, tid, comm[] }`.
fn comm<'a>(b: &mut Body<'a, '_>) -> Result<Record<'a>, ParseError> {
    let (pid, tid) = b.pair()?;
    Ok(Record::Comm(Comm {
        misc: b.misc,
        pid,
        tid,
        comm: cstr(b.c.rest()),
        sample_id: b.sample_id,
    }))
}

/// `PERF_RECORD_FORK` and `PERF_RECORD_EXIT`: `{ pid, ppid, tid, ptid, time }`.
fn task(b: &mut Body<'_, '_>) -> Result<TaskEvent, ParseError> {
    Ok(TaskEvent {
        misc: b.misc,
        pid: b.u32()?,
        ppid: b.u32()?,
        tid: b.u32()?,
        ptid: b.u32()?,
        time: b.u64()?,
        sample_id: b.sample_id,
    })
}

/// `PERF_RECORD_LOST`: `{ id, lost }`.
fn lost<'a>(b: &mut Body<'a, '_>) -> Result<Record<'a>, ParseError> {
    Ok(Record::Lost(Lost {
        id: b.u64()?,
        lost: b.u64()?,
        sample_id: b.sample_id,
    }))
}

/// `PERF_RECORD_LOST_SAMPLES`: `{ lost }`.
fn lost_samples<'a>(b: &mut Body<'a, '_>) -> Result<Record<'a>, ParseError> {
    Ok(Record::LostSamples(LostSamples {
        lost: b.u64()?,
        sample_id: b.sample_id,
    }))
}

/// `PERF_RECORD_THROTTLE` and `PERF_RECORD_UNTHROTTLE`: `{ time, id, stream_id }`.
fn throttle(b: &mut Body<'_, '_>) -> Result<Throttle, ParseError> {
    Ok(Throttle {
        time: b.u64()?,
        id: b.u64()?,
        stream_id: b.u64()?,
        sample_id: b.sample_id,
    })
}

/// `PERF_RECORD_SWITCH`: no fields (the direction is in `misc`).
fn switch<'a>(b: &mut Body<'a, '_>) -> Result<Record<'a>, ParseError> {
    Ok(Record::Switch(Switch {
        misc: b.misc,
        sample_id: b.sample_id,
    }))
}

/// `PERF_RECORD_SWITCH_CPU_WIDE`: `{ next_prev_pid, next_prev_tid }`.
fn switch_cpu_wide<'a>(b: &mut Body<'a, '_>) -> Result<Record<'a>, ParseError> {
    let (next_prev_pid, next_prev_tid) = b.pair()?;
    Ok(Record::SwitchCpuWide(SwitchCpuWide {
        misc: b.misc,
        next_prev_pid,
        next_prev_tid,
        sample_id: b.sample_id,
    }))
}

/// `PERF_RECORD_READ`: `{ pid, tid, struct read_format values }`.
fn read<'a>(b: &mut Body<'a, '_>) -> Result<Record<'a>, ParseError> {
    let (pid, tid) = b.pair()?;
    Ok(Record::Read(ReadRecord {
        pid,
        tid,
        values: read_values(b)?,
        sample_id: b.sample_id,
    }))
}

/// The `struct sample_id` trailer of every kind but `PERF_RECORD_SAMPLE`.
pub(super) fn sample_id(b: &mut Body<'_, '_>) -> Result<SampleId, ParseError> {
    let mut id = SampleId::default();
    if !b.cfg.sample_id_all {
        return Ok(id);
    }
    if b.has(sample_type::TID) {
        let (pid, tid) = b.pair()?;
        (id.pid, id.tid) = (Some(pid), Some(tid));
    }
    id.time = b.u64_if(b.has(sample_type::TIME))?;
    id.id = b.u64_if(b.has(sample_type::ID))?;
    id.stream_id = b.u64_if(b.has(sample_type::STREAM_ID))?;
    if b.has(sample_type::CPU) {
        id.cpu = Some(b.pair()?.0); // { cpu, res }
    }
    id.identifier = b.u64_if(b.has(sample_type::IDENTIFIER))?;
    Ok(id)
}

/// `struct read_format`, laid out by `read_format`.
pub(super) fn read_values<'a>(b: &mut Body<'a, '_>) -> Result<ReadValues<'a>, ParseError> {
    let format = b.cfg.read_format;
    let has = |bit: u64| format & bit != 0;
    let enabled = has(read_format::TOTAL_TIME_ENABLED);
    let running = has(read_format::TOTAL_TIME_RUNNING);
    let (has_id, has_lost) = (has(read_format::ID), has(read_format::LOST));
    if !has(read_format::GROUP) {
        return Ok(ReadValues::Single(ReadSingle {
            value: b.u64()?,
            time_enabled: b.u64_if(enabled)?,
            time_running: b.u64_if(running)?,
            id: b.u64_if(has_id)?,
            lost: b.u64_if(has_lost)?,
        }));
    }
    let nr_offset = b.c.pos();
    let nr = b.u64()?;
    let time_enabled = b.u64_if(enabled)?;
    let time_running = b.u64_if(running)?;
    let stride = ReadGroup::stride(has_id, has_lost);
    Ok(ReadValues::Group(ReadGroup {
        time_enabled,
        time_running,
        has_id,
        has_lost,
        entries: b.counted("group nr", nr, nr_offset, stride)?,
    }))
}
