//! Encoding and decoding of record bodies (see `FORMAT.md` §4).

use std::borrow::Cow;

use crate::bytes::ByteCursor;
use crate::format::{kind, NONE_U32};
use crate::record::*;

/// Why a record body could not be encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EncodeError {
    /// A string or byte field exceeds its length prefix.
    FieldTooLong(&'static str, usize),
}

/// Why a record body could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DecodeError {
    /// The body ended before the named field.
    Short(&'static str),
    /// A field holds a value this version does not define.
    BadValue(&'static str),
    /// A text field is not UTF-8.
    NotUtf8(&'static str),
}

impl DecodeError {
    pub(crate) fn field(self) -> &'static str {
        match self {
            DecodeError::Short(f) | DecodeError::BadValue(f) | DecodeError::NotUtf8(f) => f,
        }
    }
}

struct Enc<'b>(&'b mut Vec<u8>);

impl Enc<'_> {
    #[inline]
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    #[inline]
    fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    #[inline]
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    #[inline]
    fn i32(&mut self, v: i32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    #[inline]
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    #[inline]
    fn opt(&mut self, v: Option<u32>) {
        self.u32(v.unwrap_or(NONE_U32));
    }
    fn zeros(&mut self, n: usize) {
        self.0.extend(std::iter::repeat_n(0u8, n));
    }
    fn bytes16(&mut self, field: &'static str, b: &[u8]) -> Result<(), EncodeError> {
        let n = u16::try_from(b.len()).map_err(|_| EncodeError::FieldTooLong(field, b.len()))?;
        self.u16(n);
        self.0.extend_from_slice(b);
        Ok(())
    }
}

/// Append the body of `r` to `out`: one encoder per record kind.
pub(crate) fn encode_body(r: &Record<'_>, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    let e = &mut Enc(out);
    match r {
        Record::Header(h) => encode_header(e, h),
        Record::Pmc(p) => encode_pmc(e, p),
        Record::Sample(s) => encode_sample(e, s),
        Record::Comm(c) => encode_comm(e, c),
        Record::Exec(x) => encode_exec(e, x),
        Record::Fork(f) => encode_fork(e, f),
        Record::Exit(x) => encode_exit(e, x),
        Record::ThreadCreate(t) => encode_thread_create(e, t),
        Record::ThreadExit(t) => encode_thread_exit(e, t),
        Record::ProcessCreate(p) => encode_process_create(e, p),
        Record::Map(m) => encode_map(e, m),
        Record::Unmap(u) => encode_unmap(e, u),
        Record::Attach(a) => encode_attach(e, a),
        Record::Detach(d) => encode_detach(e, d),
        Record::Counter(c) => encode_counter(e, c),
        Record::Lost(l) => encode_lost(e, l),
        Record::UserData(u) => encode_user_data(e, u),
        Record::Close(c) => encode_close(e, c),
        Record::UserStack(u) => encode_user_stack(e, u),
    }
}

/// Append the body of a sample to `out` (as [`encode_body`] of `Record::Sample`).
#[inline]
pub(crate) fn encode_sample_body(s: &Sample<'_>, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    encode_sample(&mut Enc(out), s)
}

/// A length as the `u32` prefix of `field`.
fn len32(field: &'static str, n: usize) -> Result<u32, EncodeError> {
    u32::try_from(n).map_err(|_| EncodeError::FieldTooLong(field, n))
}

fn encode_header(e: &mut Enc<'_>, h: &Header<'_>) -> Result<(), EncodeError> {
    e.u32(h.cpu_count);
    e.u32(h.page_size);
    e.u8(h.clock.code());
    e.zeros(7);
    e.u64(h.ticks_per_second);
    e.u64(h.start_wall_ns as u64);
    e.u64(h.start_time);
    e.bytes16("os", h.os.as_bytes())?;
    e.bytes16("kernel_release", h.kernel_release.as_bytes())?;
    e.bytes16("arch", h.arch.as_bytes())?;
    e.bytes16("cpu_model", h.cpu_model.as_bytes())?;
    e.bytes16("cpuid", h.cpuid.as_bytes())?;
    e.bytes16("backend", h.backend.as_bytes())
}

fn encode_pmc(e: &mut Enc<'_>, p: &PmcDescriptor<'_>) -> Result<(), EncodeError> {
    e.u64(p.time);
    e.u32(p.pmc_id);
    e.u8(match p.scope {
        Scope::Process => 0,
        Scope::System => 1,
    });
    let (mode, rate) = match p.mode {
        Mode::Counting => (0, 0),
        Mode::SamplingPeriod(n) => (1, n),
        Mode::SamplingFrequency(n) => (2, n),
    };
    e.u8(mode);
    e.u16(0);
    e.opt(p.cpu);
    e.u32(p.flags);
    e.u64(rate);
    e.bytes16("event_spec", p.event_spec.as_bytes())?;
    e.bytes16("canonical_name", p.canonical_name.as_bytes())?;
    e.bytes16("native_config", p.native_config.as_bytes())
}

/// The fixed part of a sample body: time, pmc_id, pid, tid, cpu, period, the callchain's
/// length, kernel_frames, the raw data's length.
const SAMPLE_FIXED: usize = 44;

#[inline]
fn encode_sample(e: &mut Enc<'_>, s: &Sample<'_>) -> Result<(), EncodeError> {
    let frames = s.callchain.len();
    let raw = s.raw.as_bytes();
    // One fixed part written at once, then the frames into room reserved for them: the
    // drain thread's hot path writes every sample through here.
    let mut fixed = [0u8; SAMPLE_FIXED];
    fixed[0..8].copy_from_slice(&s.time.to_le_bytes());
    fixed[8..12].copy_from_slice(&s.pmc_id.to_le_bytes());
    fixed[12..16].copy_from_slice(&s.pid.to_le_bytes());
    fixed[16..20].copy_from_slice(&s.tid.to_le_bytes());
    fixed[20..24].copy_from_slice(&s.cpu.unwrap_or(NONE_U32).to_le_bytes());
    fixed[24..32].copy_from_slice(&s.period.to_le_bytes());
    fixed[32..36].copy_from_slice(&len32("callchain", frames)?.to_le_bytes());
    fixed[36..40].copy_from_slice(&s.kernel_frames.to_le_bytes());
    fixed[40..44].copy_from_slice(&len32("raw", raw.len())?.to_le_bytes());
    let out = &mut *e.0;
    out.reserve(SAMPLE_FIXED + frames * 8 + raw.len());
    out.extend_from_slice(&fixed);
    match s.callchain.raw_bytes() {
        Some(b) => out.extend_from_slice(b),
        None => {
            for pc in s.callchain.iter() {
                out.extend_from_slice(&pc.to_le_bytes());
            }
        }
    }
    out.extend_from_slice(raw);
    Ok(())
}

fn encode_comm(e: &mut Enc<'_>, c: &Comm<'_>) -> Result<(), EncodeError> {
    e.u64(c.time);
    e.i32(c.pid);
    e.i32(c.tid);
    e.u8(u8::from(c.exec));
    e.zeros(3);
    e.bytes16("comm", c.comm.as_bytes())
}

fn encode_exec(e: &mut Enc<'_>, x: &Exec<'_>) -> Result<(), EncodeError> {
    e.u64(x.time);
    e.i32(x.pid);
    e.opt(x.pmc_id);
    e.u64(x.base);
    e.u64(x.dyn_base);
    e.u32(x.flags);
    e.bytes16("path", x.path.as_bytes())
}

fn encode_fork(e: &mut Enc<'_>, f: &Fork) -> Result<(), EncodeError> {
    e.u64(f.time);
    e.i32(f.parent_pid);
    e.i32(f.parent_tid);
    e.i32(f.child_pid);
    e.i32(f.child_tid);
    Ok(())
}

fn encode_exit(e: &mut Enc<'_>, x: &Exit) -> Result<(), EncodeError> {
    e.u64(x.time);
    e.i32(x.pid);
    e.i32(x.tid);
    Ok(())
}

fn encode_thread_create(e: &mut Enc<'_>, t: &ThreadCreate<'_>) -> Result<(), EncodeError> {
    e.u64(t.time);
    e.i32(t.pid);
    e.i32(t.tid);
    e.u32(t.flags);
    e.bytes16("name", t.name.as_bytes())
}

fn encode_thread_exit(e: &mut Enc<'_>, t: &ThreadExit) -> Result<(), EncodeError> {
    e.u64(t.time);
    e.i32(t.pid);
    e.i32(t.tid);
    Ok(())
}

fn encode_process_create(e: &mut Enc<'_>, p: &ProcessCreate<'_>) -> Result<(), EncodeError> {
    e.u64(p.time);
    e.i32(p.pid);
    e.u32(p.flags);
    e.bytes16("comm", p.comm.as_bytes())
}

fn encode_map(e: &mut Enc<'_>, m: &Map<'_>) -> Result<(), EncodeError> {
    e.u64(m.time);
    e.i32(m.pid);
    e.u32(0);
    e.u64(m.start);
    e.u64(m.len);
    e.u64(m.pgoff);
    e.bytes16("build_id", m.build_id.as_bytes())?;
    e.bytes16("path", m.path.as_bytes())
}

fn encode_unmap(e: &mut Enc<'_>, u: &Unmap) -> Result<(), EncodeError> {
    e.u64(u.time);
    e.i32(u.pid);
    e.u32(0);
    e.u64(u.start);
    e.u64(u.end);
    Ok(())
}

fn encode_attach(e: &mut Enc<'_>, a: &Attach<'_>) -> Result<(), EncodeError> {
    e.u64(a.time);
    e.u32(a.pmc_id);
    e.i32(a.pid);
    e.bytes16("path", a.path.as_bytes())
}

fn encode_detach(e: &mut Enc<'_>, d: &Detach) -> Result<(), EncodeError> {
    e.u64(d.time);
    e.u32(d.pmc_id);
    e.i32(d.pid);
    Ok(())
}

fn encode_counter(e: &mut Enc<'_>, c: &Counter) -> Result<(), EncodeError> {
    e.u64(c.time);
    e.u32(c.pmc_id);
    e.i32(c.pid);
    e.i32(c.tid);
    e.opt(c.cpu);
    e.u8(match c.kind {
        CounterKind::Interval => 0,
        CounterKind::ProcessExit => 1,
        CounterKind::ContextSwitch => 2,
    });
    e.zeros(7);
    e.u64(c.value);
    e.u64(c.time_enabled);
    e.u64(c.time_running);
    Ok(())
}

fn encode_lost(e: &mut Enc<'_>, l: &Lost) -> Result<(), EncodeError> {
    e.u64(l.time);
    e.opt(l.pmc_id);
    e.opt(l.cpu);
    e.u64(l.count);
    Ok(())
}

fn encode_user_data(e: &mut Enc<'_>, u: &UserData<'_>) -> Result<(), EncodeError> {
    e.u64(u.time);
    e.i32(u.pid);
    e.u32(len32("data", u.data.len())?);
    e.0.extend_from_slice(u.data.as_bytes());
    Ok(())
}

fn encode_close(e: &mut Enc<'_>, c: &Close) -> Result<(), EncodeError> {
    e.u64(c.time);
    e.u64(c.records);
    Ok(())
}

fn encode_user_stack(e: &mut Enc<'_>, u: &UserStack<'_>) -> Result<(), EncodeError> {
    e.u64(u.time);
    e.u32(u.pmc_id);
    e.i32(u.pid);
    e.i32(u.tid);
    e.u16(u.arch);
    e.zeros(2);
    e.u64(u.pc);
    e.u64(u.sp);
    e.u64(u.fp);
    e.u64(u.lr);
    e.u32(len32("stack", u.stack.len())?);
    e.0.extend_from_slice(u.stack.as_bytes());
    Ok(())
}

/// A record body read through [`crate::bytes::ByteCursor`] (little-endian),
/// each read naming its field in the error.
struct Cur<'a>(ByteCursor<'a>);

impl<'a> Cur<'a> {
    #[inline]
    fn take(&mut self, n: usize, f: &'static str) -> Result<&'a [u8], DecodeError> {
        self.0.take(n).map_err(|_| DecodeError::Short(f))
    }
    #[inline]
    fn u8(&mut self, f: &'static str) -> Result<u8, DecodeError> {
        self.0.u8().map_err(|_| DecodeError::Short(f))
    }
    #[inline]
    fn u16(&mut self, f: &'static str) -> Result<u16, DecodeError> {
        self.0.u16().map_err(|_| DecodeError::Short(f))
    }
    #[inline]
    fn u32(&mut self, f: &'static str) -> Result<u32, DecodeError> {
        self.0.u32().map_err(|_| DecodeError::Short(f))
    }
    #[inline]
    fn i32(&mut self, f: &'static str) -> Result<i32, DecodeError> {
        self.0.i32().map_err(|_| DecodeError::Short(f))
    }
    #[inline]
    fn u64(&mut self, f: &'static str) -> Result<u64, DecodeError> {
        self.0.u64().map_err(|_| DecodeError::Short(f))
    }
    #[inline]
    fn opt(&mut self, f: &'static str) -> Result<Option<u32>, DecodeError> {
        let v = self.u32(f)?;
        Ok((v != NONE_U32).then_some(v))
    }
    fn skip(&mut self, n: usize, f: &'static str) -> Result<(), DecodeError> {
        self.take(n, f).map(|_| ())
    }
    fn bytes16(&mut self, f: &'static str) -> Result<Bytes<'a>, DecodeError> {
        let n = self.u16(f)?;
        Ok(Bytes::borrowed(self.take(usize::from(n), f)?))
    }
    fn str16(&mut self, f: &'static str) -> Result<Cow<'a, str>, DecodeError> {
        let n = self.u16(f)?;
        let b = self.take(usize::from(n), f)?;
        std::str::from_utf8(b)
            .map(Cow::Borrowed)
            .map_err(|_| DecodeError::NotUtf8(f))
    }
}

/// Decode a body. `Ok(None)` means the kind is unknown to this version.
/// Bytes after the known fields are ignored (fields appended by later minors).
/// One decoder per record kind, dispatched here.
pub(crate) fn decode_body(k: u16, body: &[u8]) -> Result<Option<Record<'_>>, DecodeError> {
    let c = &mut Cur(ByteCursor::le(body));
    let r = match k {
        kind::SAMPLE => decode_sample(c)?,
        kind::HEADER => decode_header(c)?,
        kind::PMC => decode_pmc(c)?,
        kind::COMM => decode_comm(c)?,
        kind::EXEC => decode_exec(c)?,
        kind::FORK => decode_fork(c)?,
        kind::EXIT => decode_exit(c)?,
        kind::THREAD_CREATE => decode_thread_create(c)?,
        kind::THREAD_EXIT => decode_thread_exit(c)?,
        kind::PROCESS_CREATE => decode_process_create(c)?,
        kind::MAP => decode_map(c)?,
        kind::UNMAP => decode_unmap(c)?,
        kind::ATTACH => decode_attach(c)?,
        kind::DETACH => decode_detach(c)?,
        kind::COUNTER => decode_counter(c)?,
        kind::LOST => decode_lost(c)?,
        kind::USER_DATA => decode_user_data(c)?,
        kind::CLOSE => decode_close(c)?,
        kind::USER_STACK => decode_user_stack(c)?,
        _ => return Ok(None),
    };
    Ok(Some(r))
}

#[inline]
fn decode_sample<'a>(c: &mut Cur<'a>) -> Result<Record<'a>, DecodeError> {
    let time = c.u64("time")?;
    let pmc_id = c.u32("pmc_id")?;
    let pid = c.i32("pid")?;
    let tid = c.i32("tid")?;
    let cpu = c.opt("cpu")?;
    let period = c.u64("period")?;
    let n = c.u32("nframes")?;
    let kernel_frames = c.u32("kernel_frames")?;
    let raw_len = c.u32("raw_len")?;
    let nbytes = (n as usize)
        .checked_mul(8)
        .ok_or(DecodeError::Short("callchain"))?;
    let frames = c.take(nbytes, "callchain")?;
    let raw = c.take(raw_len as usize, "raw")?;
    Ok(Record::Sample(Sample {
        time,
        pmc_id,
        pid,
        tid,
        cpu,
        period,
        callchain: Callchain::from_le_bytes(frames),
        kernel_frames,
        raw: Bytes::borrowed(raw),
    }))
}

fn decode_header<'a>(c: &mut Cur<'a>) -> Result<Record<'a>, DecodeError> {
    let cpu_count = c.u32("cpu_count")?;
    let page_size = c.u32("page_size")?;
    let clock = Clock::from_code(c.u8("clock")?);
    c.skip(7, "reserved")?;
    let ticks_per_second = c.u64("ticks_per_second")?;
    let start_wall_ns = c.u64("start_wall_ns")? as i64;
    let start_time = c.u64("start_time")?;
    Ok(Record::Header(Header {
        cpu_count,
        page_size,
        clock,
        ticks_per_second,
        start_wall_ns,
        start_time,
        os: c.str16("os")?,
        kernel_release: c.str16("kernel_release")?,
        arch: c.str16("arch")?,
        cpu_model: c.str16("cpu_model")?,
        cpuid: c.str16("cpuid")?,
        backend: c.str16("backend")?,
    }))
}

fn decode_pmc<'a>(c: &mut Cur<'a>) -> Result<Record<'a>, DecodeError> {
    let time = c.u64("time")?;
    let pmc_id = c.u32("pmc_id")?;
    let scope = match c.u8("scope")? {
        0 => Scope::Process,
        1 => Scope::System,
        _ => return Err(DecodeError::BadValue("scope")),
    };
    let mode = c.u8("mode")?;
    c.skip(2, "reserved")?;
    let cpu = c.opt("cpu")?;
    let flags = c.u32("flags")?;
    let rate = c.u64("rate")?;
    let mode = match mode {
        0 => Mode::Counting,
        1 => Mode::SamplingPeriod(rate),
        2 => Mode::SamplingFrequency(rate),
        _ => return Err(DecodeError::BadValue("mode")),
    };
    Ok(Record::Pmc(PmcDescriptor {
        time,
        pmc_id,
        scope,
        cpu,
        mode,
        flags,
        event_spec: c.str16("event_spec")?,
        canonical_name: c.str16("canonical_name")?,
        native_config: c.str16("native_config")?,
    }))
}

fn decode_comm<'a>(c: &mut Cur<'a>) -> Result<Record<'a>, DecodeError> {
    let time = c.u64("time")?;
    let pid = c.i32("pid")?;
    let tid = c.i32("tid")?;
    let exec = c.u8("exec")? != 0;
    c.skip(3, "reserved")?;
    Ok(Record::Comm(Comm {
        time,
        pid,
        tid,
        exec,
        comm: c.bytes16("comm")?,
    }))
}

fn decode_exec<'a>(c: &mut Cur<'a>) -> Result<Record<'a>, DecodeError> {
    Ok(Record::Exec(Exec {
        time: c.u64("time")?,
        pid: c.i32("pid")?,
        pmc_id: c.opt("pmc_id")?,
        base: c.u64("base")?,
        dyn_base: c.u64("dyn_base")?,
        flags: c.u32("flags")?,
        path: c.bytes16("path")?,
    }))
}

fn decode_fork<'a>(c: &mut Cur<'a>) -> Result<Record<'a>, DecodeError> {
    Ok(Record::Fork(Fork {
        time: c.u64("time")?,
        parent_pid: c.i32("parent_pid")?,
        parent_tid: c.i32("parent_tid")?,
        child_pid: c.i32("child_pid")?,
        child_tid: c.i32("child_tid")?,
    }))
}

fn decode_exit<'a>(c: &mut Cur<'a>) -> Result<Record<'a>, DecodeError> {
    Ok(Record::Exit(Exit {
        time: c.u64("time")?,
        pid: c.i32("pid")?,
        tid: c.i32("tid")?,
    }))
}

fn decode_thread_create<'a>(c: &mut Cur<'a>) -> Result<Record<'a>, DecodeError> {
    Ok(Record::ThreadCreate(ThreadCreate {
        time: c.u64("time")?,
        pid: c.i32("pid")?,
        tid: c.i32("tid")?,
        flags: c.u32("flags")?,
        name: c.bytes16("name")?,
    }))
}

fn decode_thread_exit<'a>(c: &mut Cur<'a>) -> Result<Record<'a>, DecodeError> {
    Ok(Record::ThreadExit(ThreadExit {
        time: c.u64("time")?,
        pid: c.i32("pid")?,
        tid: c.i32("tid")?,
    }))
}

fn decode_process_create<'a>(c: &mut Cur<'a>) -> Result<Record<'a>, DecodeError> {
    Ok(Record::ProcessCreate(ProcessCreate {
        time: c.u64("time")?,
        pid: c.i32("pid")?,
        flags: c.u32("flags")?,
        comm: c.bytes16("comm")?,
    }))
}

fn decode_map<'a>(c: &mut Cur<'a>) -> Result<Record<'a>, DecodeError> {
    let time = c.u64("time")?;
    let pid = c.i32("pid")?;
    c.skip(4, "reserved")?;
    Ok(Record::Map(Map {
        time,
        pid,
        start: c.u64("start")?,
        len: c.u64("len")?,
        pgoff: c.u64("pgoff")?,
        build_id: c.bytes16("build_id")?,
        path: c.bytes16("path")?,
    }))
}

fn decode_unmap<'a>(c: &mut Cur<'a>) -> Result<Record<'a>, DecodeError> {
    let time = c.u64("time")?;
    let pid = c.i32("pid")?;
    c.skip(4, "reserved")?;
    Ok(Record::Unmap(Unmap {
        time,
        pid,
        start: c.u64("start")?,
        end: c.u64("end")?,
    }))
}

fn decode_attach<'a>(c: &mut Cur<'a>) -> Result<Record<'a>, DecodeError> {
    Ok(Record::Attach(Attach {
        time: c.u64("time")?,
        pmc_id: c.u32("pmc_id")?,
        pid: c.i32("pid")?,
        path: c.bytes16("path")?,
    }))
}

fn decode_detach<'a>(c: &mut Cur<'a>) -> Result<Record<'a>, DecodeError> {
    Ok(Record::Detach(Detach {
        time: c.u64("time")?,
        pmc_id: c.u32("pmc_id")?,
        pid: c.i32("pid")?,
    }))
}

fn decode_counter<'a>(c: &mut Cur<'a>) -> Result<Record<'a>, DecodeError> {
    let time = c.u64("time")?;
    let pmc_id = c.u32("pmc_id")?;
    let pid = c.i32("pid")?;
    let tid = c.i32("tid")?;
    let cpu = c.opt("cpu")?;
    let kind = match c.u8("kind")? {
        0 => CounterKind::Interval,
        1 => CounterKind::ProcessExit,
        2 => CounterKind::ContextSwitch,
        _ => return Err(DecodeError::BadValue("kind")),
    };
    c.skip(7, "reserved")?;
    Ok(Record::Counter(Counter {
        time,
        pmc_id,
        pid,
        tid,
        cpu,
        kind,
        value: c.u64("value")?,
        time_enabled: c.u64("time_enabled")?,
        time_running: c.u64("time_running")?,
    }))
}

fn decode_lost<'a>(c: &mut Cur<'a>) -> Result<Record<'a>, DecodeError> {
    Ok(Record::Lost(Lost {
        time: c.u64("time")?,
        pmc_id: c.opt("pmc_id")?,
        cpu: c.opt("cpu")?,
        count: c.u64("count")?,
    }))
}

fn decode_user_data<'a>(c: &mut Cur<'a>) -> Result<Record<'a>, DecodeError> {
    let time = c.u64("time")?;
    let pid = c.i32("pid")?;
    let n = c.u32("data")?;
    Ok(Record::UserData(UserData {
        time,
        pid,
        data: Bytes::borrowed(c.take(n as usize, "data")?),
    }))
}

fn decode_close<'a>(c: &mut Cur<'a>) -> Result<Record<'a>, DecodeError> {
    Ok(Record::Close(Close {
        time: c.u64("time")?,
        records: c.u64("records")?,
    }))
}

fn decode_user_stack<'a>(c: &mut Cur<'a>) -> Result<Record<'a>, DecodeError> {
    let time = c.u64("time")?;
    let pmc_id = c.u32("pmc_id")?;
    let pid = c.i32("pid")?;
    let tid = c.i32("tid")?;
    let arch = c.u16("arch")?;
    c.u16("reserved")?;
    let (pc, sp, fp, lr) = (c.u64("pc")?, c.u64("sp")?, c.u64("fp")?, c.u64("lr")?);
    let n = c.u32("stack")?;
    Ok(Record::UserStack(UserStack {
        time,
        pmc_id,
        pid,
        tid,
        arch,
        pc,
        sp,
        fp,
        lr,
        stack: Bytes::borrowed(c.take(n as usize, "stack")?),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_body_layout() {
        let frames = [0x1122_3344_5566_7788u64, 2];
        let r = Record::Sample(Sample {
            time: 5,
            pmc_id: 9,
            pid: 10,
            tid: 11,
            cpu: None,
            period: 1000,
            callchain: Callchain::from_frames(&frames),
            kernel_frames: 1,
            raw: Bytes::from(&b"xy"[..]),
        });
        let mut v = Vec::new();
        encode_body(&r, &mut v).unwrap();
        assert_eq!(v.len(), 44 + 16 + 2);
        assert_eq!(&v[0..8], &5u64.to_le_bytes());
        assert_eq!(&v[20..24], &u32::MAX.to_le_bytes());
        assert_eq!(&v[32..36], &2u32.to_le_bytes());
        assert_eq!(&v[44..52], &0x1122_3344_5566_7788u64.to_le_bytes());
        assert_eq!(decode_body(kind::SAMPLE, &v).unwrap(), Some(r));
        // Every truncation of the body is an error, never a panic.
        for cut in 0..v.len() {
            assert!(decode_body(kind::SAMPLE, &v[..cut]).is_err(), "cut {cut}");
        }
        // Unknown kinds are not errors.
        assert_eq!(decode_body(999, &v).unwrap(), None);
    }

    #[test]
    fn huge_frame_count_is_bounded_by_body() {
        let mut v = vec![0u8; 44];
        v[32..36].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            decode_body(kind::SAMPLE, &v),
            Err(DecodeError::Short("callchain"))
        );
    }
}
