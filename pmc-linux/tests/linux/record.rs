//! Record parsing round trips: an encoder written from the kernel's layout comments in
//! `include/uapi/linux/perf_event.h` (independent of the parser) writes each record type; the
//! parser must read back exactly what was written, for many `sample_type`/`read_format`
//! combinations, both READ layouts and callchain context splits. Also: hostile records never
//! panic.

use pmc_linux::internals::record::{
    context, misc, read_format as rf, record_type as rt, sample_type as st, Comm, CpuMode, FileId,
    Frame, FrameContext, GroupEntry, Lost, LostSamples, Mmap, Mmap2, ParseConfig, ParseError,
    ParseStats, ReadSingle, ReadValues, Record, RecordHeader, SampleFields, SampleId, Switch,
    SwitchCpuWide, TaskEvent, Throttle,
};
use proptest::prelude::*;

// ---------------------------------------------------------------------------------------------
// Encoder (test-side, per perf_event.h)
// ---------------------------------------------------------------------------------------------

#[derive(Default)]
struct Enc(Vec<u8>);

impl Enc {
    fn u8(&mut self, v: u8) -> &mut Self {
        self.0.push(v);
        self
    }
    fn u16(&mut self, v: u16) -> &mut Self {
        self.0.extend_from_slice(&v.to_ne_bytes());
        self
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_ne_bytes());
        self
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_ne_bytes());
        self
    }
    fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.0.extend_from_slice(b);
        self
    }
    /// `char name[]`, NUL-terminated and padded with NULs to a multiple of 8.
    fn c_str(&mut self, s: &[u8]) -> &mut Self {
        self.0.extend_from_slice(s);
        let padded = (s.len() + 1).div_ceil(8) * 8;
        self.0.resize(self.0.len() + padded - s.len(), 0);
        self
    }
    /// `struct sample_id`, if `sample_id_all`.
    fn sample_id(&mut self, cfg: &ParseConfig, id: &SampleId) -> &mut Self {
        if !cfg.sample_id_all {
            return self;
        }
        let t = cfg.sample_type;
        if t & st::TID != 0 {
            self.u32(id.pid.unwrap_or(0)).u32(id.tid.unwrap_or(0));
        }
        if t & st::TIME != 0 {
            self.u64(id.time.unwrap_or(0));
        }
        if t & st::ID != 0 {
            self.u64(id.id.unwrap_or(0));
        }
        if t & st::STREAM_ID != 0 {
            self.u64(id.stream_id.unwrap_or(0));
        }
        if t & st::CPU != 0 {
            self.u32(id.cpu.unwrap_or(0)).u32(0xdead); // res
        }
        if t & st::IDENTIFIER != 0 {
            self.u64(id.identifier.unwrap_or(0));
        }
        self
    }
    /// Prepends `struct perf_event_header`.
    fn finish(&self, kind: u32, misc_bits: u16) -> Vec<u8> {
        let size = u16::try_from(self.0.len() + 8).expect("test record fits in u16");
        let mut out = Vec::with_capacity(usize::from(size));
        out.extend_from_slice(&kind.to_ne_bytes());
        out.extend_from_slice(&misc_bits.to_ne_bytes());
        out.extend_from_slice(&size.to_ne_bytes());
        out.extend_from_slice(&self.0);
        out
    }
}

/// What the encoder knows about a sample_id as the parser should report it: each field present
/// exactly when its bit is set (and `sample_id_all`).
fn expected_sample_id(cfg: &ParseConfig, full: &SampleId) -> SampleId {
    if !cfg.sample_id_all {
        return SampleId::default();
    }
    let t = cfg.sample_type;
    let on = |bit: u64| t & bit != 0;
    SampleId {
        pid: full.pid.filter(|_| on(st::TID)),
        tid: full.tid.filter(|_| on(st::TID)),
        time: full.time.filter(|_| on(st::TIME)),
        id: full.id.filter(|_| on(st::ID)),
        stream_id: full.stream_id.filter(|_| on(st::STREAM_ID)),
        cpu: full.cpu.filter(|_| on(st::CPU)),
        identifier: full.identifier.filter(|_| on(st::IDENTIFIER)),
    }
}

#[derive(Debug, Clone)]
struct ReadSpec {
    value: u64,
    enabled: u64,
    running: u64,
    id: u64,
    lost: u64,
    /// (value, id, lost) per group member; used with PERF_FORMAT_GROUP.
    group: Vec<(u64, u64, u64)>,
}

/// `struct read_format`, both layouts.
fn encode_read(e: &mut Enc, fmt: u64, r: &ReadSpec) {
    let has = |bit: u64| fmt & bit != 0;
    if has(rf::GROUP) {
        e.u64(r.group.len() as u64);
        if has(rf::TOTAL_TIME_ENABLED) {
            e.u64(r.enabled);
        }
        if has(rf::TOTAL_TIME_RUNNING) {
            e.u64(r.running);
        }
        for &(value, id, lost) in &r.group {
            e.u64(value);
            if has(rf::ID) {
                e.u64(id);
            }
            if has(rf::LOST) {
                e.u64(lost);
            }
        }
    } else {
        e.u64(r.value);
        if has(rf::TOTAL_TIME_ENABLED) {
            e.u64(r.enabled);
        }
        if has(rf::TOTAL_TIME_RUNNING) {
            e.u64(r.running);
        }
        if has(rf::ID) {
            e.u64(r.id);
        }
        if has(rf::LOST) {
            e.u64(r.lost);
        }
    }
}

fn check_read(fmt: u64, got: &ReadValues<'_>, want: &ReadSpec) {
    let has = |bit: u64| fmt & bit != 0;
    let opt = |bit: u64, v: u64| if has(bit) { Some(v) } else { None };
    match got {
        ReadValues::Single(s) => {
            assert!(!has(rf::GROUP), "group layout parsed as single");
            assert_eq!(
                *s,
                ReadSingle {
                    value: want.value,
                    time_enabled: opt(rf::TOTAL_TIME_ENABLED, want.enabled),
                    time_running: opt(rf::TOTAL_TIME_RUNNING, want.running),
                    id: opt(rf::ID, want.id),
                    lost: opt(rf::LOST, want.lost),
                }
            );
        }
        ReadValues::Group(g) => {
            assert!(has(rf::GROUP), "single layout parsed as group");
            assert_eq!(g.time_enabled, opt(rf::TOTAL_TIME_ENABLED, want.enabled));
            assert_eq!(g.time_running, opt(rf::TOTAL_TIME_RUNNING, want.running));
            assert_eq!(g.len(), want.group.len());
            assert_eq!(g.is_empty(), want.group.is_empty());
            let entries: Vec<GroupEntry> = g.iter().collect();
            let expect: Vec<GroupEntry> = want
                .group
                .iter()
                .map(|&(value, id, lost)| GroupEntry {
                    value,
                    id: opt(rf::ID, id),
                    lost: opt(rf::LOST, lost),
                })
                .collect();
            assert_eq!(entries, expect);
        }
    }
}

#[derive(Debug, Clone)]
struct SampleSpec {
    misc: u16,
    identifier: u64,
    ip: u64,
    pid: u32,
    tid: u32,
    time: u64,
    addr: u64,
    id: u64,
    stream_id: u64,
    cpu: u32,
    period: u64,
    read: ReadSpec,
    /// Callchain as (marker, frames) sections; marker None = frames before any marker.
    callchain: Vec<(Option<u64>, Vec<u64>)>,
    raw: Vec<u8>,
    /// Bytes of undecoded fields (branch stack and later).
    tail: Vec<u8>,
}

fn encode_sample(cfg: &ParseConfig, s: &SampleSpec) -> Vec<u8> {
    let t = cfg.sample_type;
    let has = |bit: u64| t & bit != 0;
    let mut e = Enc::default();
    if has(st::IDENTIFIER) {
        e.u64(s.identifier);
    }
    if has(st::IP) {
        e.u64(s.ip);
    }
    if has(st::TID) {
        e.u32(s.pid).u32(s.tid);
    }
    if has(st::TIME) {
        e.u64(s.time);
    }
    if has(st::ADDR) {
        e.u64(s.addr);
    }
    if has(st::ID) {
        e.u64(s.id);
    }
    if has(st::STREAM_ID) {
        e.u64(s.stream_id);
    }
    if has(st::CPU) {
        e.u32(s.cpu).u32(0);
    }
    if has(st::PERIOD) {
        e.u64(s.period);
    }
    if has(st::READ) {
        encode_read(&mut e, cfg.read_format, &s.read);
    }
    if has(st::CALLCHAIN) {
        let flat = flatten_callchain(&s.callchain);
        e.u64(flat.len() as u64);
        for ip in flat {
            e.u64(ip);
        }
    }
    if has(st::RAW) {
        // The kernel rounds `size` so that the u32 and the data end 8-aligned.
        assert_eq!((4 + s.raw.len()) % 8, 0, "test raw length");
        e.u32(s.raw.len() as u32).bytes(&s.raw);
    }
    e.bytes(&s.tail);
    e.finish(rt::SAMPLE, s.misc)
}

fn flatten_callchain(sections: &[(Option<u64>, Vec<u64>)]) -> Vec<u64> {
    let mut flat = Vec::new();
    for (marker, frames) in sections {
        flat.extend(marker.iter().copied());
        flat.extend(frames.iter().copied());
    }
    flat
}

fn marker_context(marker: Option<u64>) -> FrameContext {
    match marker {
        None => FrameContext::Unknown,
        Some(context::KERNEL) => FrameContext::Kernel,
        Some(context::USER) | Some(context::USER_DEFERRED) => FrameContext::User,
        Some(context::HV) => FrameContext::Hypervisor,
        Some(context::GUEST) => FrameContext::Guest,
        Some(context::GUEST_KERNEL) => FrameContext::GuestKernel,
        Some(context::GUEST_USER) => FrameContext::GuestUser,
        Some(_) => FrameContext::Unknown,
    }
}

fn check_sample(cfg: &ParseConfig, bytes: &[u8], s: &SampleSpec) {
    let rec = cfg.parse(bytes).unwrap_or_else(|e| panic!("{cfg:?}: {e}"));
    let Record::Sample(got) = rec else {
        panic!("not a sample: {rec:?}")
    };
    let t = cfg.sample_type;
    let opt = |bit: u64, v: u64| if t & bit != 0 { Some(v) } else { None };
    let opt32 = |bit: u64, v: u32| if t & bit != 0 { Some(v) } else { None };
    assert_eq!(got.misc, s.misc);
    assert_eq!(got.identifier, opt(st::IDENTIFIER, s.identifier));
    assert_eq!(got.ip, opt(st::IP, s.ip));
    assert_eq!(got.pid, opt32(st::TID, s.pid));
    assert_eq!(got.tid, opt32(st::TID, s.tid));
    assert_eq!(got.time, opt(st::TIME, s.time));
    assert_eq!(got.addr, opt(st::ADDR, s.addr));
    assert_eq!(got.id, opt(st::ID, s.id));
    assert_eq!(got.stream_id, opt(st::STREAM_ID, s.stream_id));
    assert_eq!(got.cpu, opt32(st::CPU, s.cpu));
    assert_eq!(got.period, opt(st::PERIOD, s.period));
    match (&got.read, t & st::READ != 0) {
        (Some(r), true) => check_read(cfg.read_format, r, &s.read),
        (None, false) => {}
        (r, _) => panic!("read presence wrong: {r:?}"),
    }
    match (&got.callchain, t & st::CALLCHAIN != 0) {
        (Some(c), true) => {
            let flat = flatten_callchain(&s.callchain);
            assert_eq!(c.raw_len(), flat.len());
            assert_eq!(c.raw().collect::<Vec<_>>(), flat);
            let expect: Vec<Frame> = s
                .callchain
                .iter()
                .flat_map(|(m, frames)| {
                    let ctx = marker_context(*m);
                    frames.iter().map(move |&addr| Frame { addr, context: ctx })
                })
                .collect();
            // Frames without any marker in their section inherit the previous section's
            // context; the generator only puts a marker-less section first.
            assert_eq!(c.frames().collect::<Vec<_>>(), expect);
        }
        (None, false) => {}
        (c, _) => panic!("callchain presence wrong: {c:?}"),
    }
    assert_eq!(
        got.raw,
        if t & st::RAW != 0 {
            Some(&s.raw[..])
        } else {
            None
        }
    );
    assert_eq!(got.unparsed, &s.tail[..]);
}

// ---------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------

fn arb_read() -> impl Strategy<Value = ReadSpec> {
    (
        any::<[u64; 5]>(),
        proptest::collection::vec(any::<(u64, u64, u64)>(), 0..6),
    )
        .prop_map(|(v, group)| ReadSpec {
            value: v[0],
            enabled: v[1],
            running: v[2],
            id: v[3],
            lost: v[4],
            group,
        })
}

fn arb_marker() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(context::KERNEL),
        Just(context::USER),
        Just(context::HV),
        Just(context::GUEST),
        Just(context::GUEST_KERNEL),
        Just(context::GUEST_USER),
        Just(context::USER_DEFERRED),
        Just(context::MAX), // a marker value we do not name: Unknown context
    ]
}

fn arb_callchain() -> impl Strategy<Value = Vec<(Option<u64>, Vec<u64>)>> {
    let addr = 0u64..context::MAX;
    (
        proptest::collection::vec(addr.clone(), 0..3),
        proptest::collection::vec((arb_marker(), proptest::collection::vec(addr, 0..5)), 0..5),
    )
        .prop_map(|(lead, sections)| {
            let mut out = Vec::new();
            if !lead.is_empty() {
                out.push((None, lead));
            }
            out.extend(sections.into_iter().map(|(m, f)| (Some(m), f)));
            out
        })
}

fn arb_sample() -> impl Strategy<Value = SampleSpec> {
    (
        any::<(u16, u64, u64, u32, u32, u64, u64)>(),
        any::<(u64, u64, u32, u64)>(),
        arb_read(),
        arb_callchain(),
        (0usize..6).prop_flat_map(|k| proptest::collection::vec(any::<u8>(), 4 + 8 * k)),
        (0usize..4).prop_flat_map(|k| proptest::collection::vec(any::<u8>(), 8 * k)),
    )
        .prop_map(
            |(
                (misc, identifier, ip, pid, tid, time, addr),
                (id, stream_id, cpu, period),
                read,
                callchain,
                raw,
                tail,
            )| {
                SampleSpec {
                    misc,
                    identifier,
                    ip,
                    pid,
                    tid,
                    time,
                    addr,
                    id,
                    stream_id,
                    cpu,
                    period,
                    read,
                    callchain,
                    raw,
                    tail,
                }
            },
        )
}

fn arb_config() -> impl Strategy<Value = ParseConfig> {
    (any::<u64>(), 0u64..32, any::<bool>()).prop_map(|(t, f, all)| ParseConfig {
        sample_type: t & st::DECODED,
        read_format: f,
        sample_id_all: all,
        sample_regs_user: 0,
    })
}

fn arb_sample_id() -> impl Strategy<Value = SampleId> {
    any::<(u32, u32, u64, u64, u64, u32, u64)>().prop_map(
        |(pid, tid, time, id, sid, cpu, ident)| SampleId {
            pid: Some(pid),
            tid: Some(tid),
            time: Some(time),
            id: Some(id),
            stream_id: Some(sid),
            cpu: Some(cpu),
            identifier: Some(ident),
        },
    )
}

/// 512 cases natively; a handful under Miri, without the failure file (Miri isolates the fs).
fn config() -> ProptestConfig {
    if cfg!(miri) {
        ProptestConfig {
            cases: 4,
            failure_persistence: None,
            ..ProptestConfig::default()
        }
    } else {
        ProptestConfig {
            cases: 512,
            ..ProptestConfig::default()
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Round trips
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(config())]

    #[test]
    fn sample_round_trip(cfg in arb_config(), mut s in arb_sample()) {
        // Undecoded bytes only exist when a later sample_type bit is set.
        let mut cfg = cfg;
        if !s.tail.is_empty() {
            cfg.sample_type |= st::BRANCH_STACK;
        }
        if cfg.sample_type & st::BRANCH_STACK == 0 {
            s.tail.clear();
        }
        let bytes = encode_sample(&cfg, &s);
        check_sample(&cfg, &bytes, &s);
    }

    #[test]
    fn non_sample_round_trip(cfg in arb_config(), id in arb_sample_id(), v in any::<[u64; 6]>(),
                             name in proptest::collection::vec(1u8..=255, 0..40),
                             misc_bits in any::<u16>(), read in arb_read(),
                             build_id_len in 0u8..=20) {
        let sid = expected_sample_id(&cfg, &id);
        let (pid, tid) = (v[0] as u32, (v[0] >> 32) as u32);
        let mut records: Vec<(Vec<u8>, Record<'_>)> = Vec::new();

        let mut e = Enc::default();
        e.u32(pid).u32(tid).u64(v[1]).u64(v[2]).u64(v[3]).c_str(&name).sample_id(&cfg, &id);
        records.push((e.finish(rt::MMAP, misc_bits), Record::Mmap(Mmap {
            misc: misc_bits, pid, tid, addr: v[1], len: v[2], pgoff: v[3], filename: &name,
            sample_id: sid,
        })));

        // MMAP2 with inode.
        let m = misc_bits & !misc::MMAP_BUILD_ID;
        let mut e = Enc::default();
        e.u32(pid).u32(tid).u64(v[1]).u64(v[2]).u64(v[3])
            .u32(v[4] as u32).u32((v[4] >> 32) as u32).u64(v[5]).u64(v[0])
            .u32(7).u32(0x22).c_str(&name).sample_id(&cfg, &id);
        records.push((e.finish(rt::MMAP2, m), Record::Mmap2(Mmap2 {
            misc: m, pid, tid, addr: v[1], len: v[2], pgoff: v[3],
            file_id: FileId::Inode { maj: v[4] as u32, min: (v[4] >> 32) as u32, ino: v[5], ino_generation: v[0] },
            prot: 7, flags: 0x22, filename: &name, sample_id: sid,
        })));

        // MMAP2 with build id: u8 size, u8 + u16 reserved, u8 build_id[20].
        let m = misc_bits | misc::MMAP_BUILD_ID;
        let build_id: Vec<u8> = (0..20u8).map(|i| i.wrapping_mul(13).wrapping_add(v[4] as u8)).collect();
        let mut e = Enc::default();
        e.u32(pid).u32(tid).u64(v[1]).u64(v[2]).u64(v[3])
            .u8(build_id_len).u8(0).u16(0).bytes(&build_id)
            .u32(5).u32(0x802).c_str(&name).sample_id(&cfg, &id);
        records.push((e.finish(rt::MMAP2, m), Record::Mmap2(Mmap2 {
            misc: m, pid, tid, addr: v[1], len: v[2], pgoff: v[3],
            file_id: FileId::BuildId(&build_id[..usize::from(build_id_len)]),
            prot: 5, flags: 0x802, filename: &name, sample_id: sid,
        })));

        let mut e = Enc::default();
        e.u32(pid).u32(tid).c_str(&name).sample_id(&cfg, &id);
        records.push((e.finish(rt::COMM, misc_bits), Record::Comm(Comm {
            misc: misc_bits, pid, tid, comm: &name, sample_id: sid,
        })));

        for kind in [rt::FORK, rt::EXIT] {
            let mut e = Enc::default();
            e.u32(pid).u32(tid).u32(v[4] as u32).u32((v[4] >> 32) as u32).u64(v[5]).sample_id(&cfg, &id);
            let ev = TaskEvent { misc: misc_bits, pid, ppid: tid, tid: v[4] as u32,
                                 ptid: (v[4] >> 32) as u32, time: v[5], sample_id: sid };
            records.push((e.finish(kind, misc_bits),
                          if kind == rt::FORK { Record::Fork(ev) } else { Record::Exit(ev) }));
        }

        let mut e = Enc::default();
        e.u64(v[1]).u64(v[2]).sample_id(&cfg, &id);
        records.push((e.finish(rt::LOST, misc_bits), Record::Lost(Lost { id: v[1], lost: v[2], sample_id: sid })));

        let mut e = Enc::default();
        e.u64(v[3]).sample_id(&cfg, &id);
        records.push((e.finish(rt::LOST_SAMPLES, misc_bits),
                      Record::LostSamples(LostSamples { lost: v[3], sample_id: sid })));

        for kind in [rt::THROTTLE, rt::UNTHROTTLE] {
            let mut e = Enc::default();
            e.u64(v[1]).u64(v[2]).u64(v[3]).sample_id(&cfg, &id);
            let t = Throttle { time: v[1], id: v[2], stream_id: v[3], sample_id: sid };
            records.push((e.finish(kind, misc_bits),
                          if kind == rt::THROTTLE { Record::Throttle(t) } else { Record::Unthrottle(t) }));
        }

        let mut e = Enc::default();
        e.sample_id(&cfg, &id);
        records.push((e.finish(rt::SWITCH, misc_bits), Record::Switch(Switch { misc: misc_bits, sample_id: sid })));

        let mut e = Enc::default();
        e.u32(pid).u32(tid).sample_id(&cfg, &id);
        records.push((e.finish(rt::SWITCH_CPU_WIDE, misc_bits), Record::SwitchCpuWide(SwitchCpuWide {
            misc: misc_bits, next_prev_pid: pid, next_prev_tid: tid, sample_id: sid,
        })));

        for (bytes, want) in &records {
            let got = cfg.parse(bytes);
            prop_assert_eq!(got.as_ref(), Ok(want), "{:?}", cfg);
        }

        // READ, both layouts, with its trailer after a variable-length body.
        let mut e = Enc::default();
        e.u32(pid).u32(tid);
        encode_read(&mut e, cfg.read_format, &read);
        e.sample_id(&cfg, &id);
        let bytes = e.finish(rt::READ, 0);
        match cfg.parse(&bytes) {
            Ok(Record::Read(r)) => {
                prop_assert_eq!((r.pid, r.tid), (pid, tid));
                prop_assert_eq!(r.sample_id, sid);
                check_read(cfg.read_format, &r.values, &read);
            }
            other => prop_assert!(false, "{:?}", other),
        }
    }

    /// The drain's fast decoder of fixed-word samples ([`SampleLayout`]) gives the general
    /// parser's fields, or declines: for every config it takes, on whole records, on every
    /// prefix and on records with bytes appended (header sizes patched), and on garbage.
    #[test]
    fn sample_layout_agrees_with_the_parser(cfg in arb_config(), mut s in arb_sample(),
                                            extra in proptest::collection::vec(any::<u8>(), 0..24),
                                            garbage in proptest::collection::vec(any::<u8>(), 0..200)) {
        let fast = st::IDENTIFIER | st::IP | st::TID | st::TIME | st::ADDR | st::ID
            | st::STREAM_ID | st::CPU | st::PERIOD | st::CALLCHAIN;
        let mut cfg = cfg;
        prop_assert!(cfg.sample_layout().is_none() || cfg.sample_type & !fast == 0);
        cfg.sample_type &= fast;
        s.tail.clear();
        let layout = cfg.sample_layout().expect("a fixed-word config has a layout");
        let bytes = encode_sample(&cfg, &s);
        let agrees = |b: &[u8]| layout_agrees(&cfg, b);
        // Whole: decoded, as parsed.
        prop_assert!(layout.decode(&bytes).is_some());
        prop_assert!(agrees(&bytes));
        for len in 0..bytes.len() {
            let mut cut = bytes[..len].to_vec();
            if len >= 8 {
                cut[6..8].copy_from_slice(&(len as u16).to_ne_bytes());
            }
            prop_assert!(agrees(&cut), "prefix of {len}");
        }
        let mut longer = bytes.clone();
        longer.extend_from_slice(&extra);
        let n = longer.len() as u16;
        longer[6..8].copy_from_slice(&n.to_ne_bytes());
        prop_assert!(agrees(&longer));
        prop_assert!(agrees(&garbage));
        let mut g = garbage.clone();
        if g.len() >= 8 {
            g[0..4].copy_from_slice(&rt::SAMPLE.to_ne_bytes());
            let n = g.len() as u16;
            g[6..8].copy_from_slice(&n.to_ne_bytes());
        }
        prop_assert!(agrees(&g));
    }

    /// The same with a user context (`REGS_USER` and `STACK_USER`, as a DWARF sampling PMC's
    /// samples carry): the fast decoder gives the general parser's registers and stack (cut
    /// to `dyn_size`), or declines, for any ABI (no registers with 0), register mask, stack
    /// size and `dyn_size` (past the size: an error the parser reports), on whole records,
    /// every prefix and records with bytes appended.
    #[test]
    fn sample_layout_with_a_user_context_agrees_with_the_parser(
        cfg in arb_config(), mut s in arb_sample(), abi in 0u64..3,
        mask in any::<u64>(), nregs in 0u32..6,
        stack in proptest::collection::vec(any::<u8>(), 0..48), dyn_extra in 0usize..50,
        extra in proptest::collection::vec(any::<u8>(), 1..24),
    ) {
        let fast = st::IDENTIFIER | st::IP | st::TID | st::TIME | st::ADDR | st::ID
            | st::STREAM_ID | st::CPU | st::PERIOD | st::CALLCHAIN;
        let mut cfg = cfg;
        cfg.sample_type = (cfg.sample_type & fast) | st::REGS_USER | st::STACK_USER;
        // A mask of `nregs` bits.
        let mut m = mask;
        while m.count_ones() > nregs {
            m &= m - 1;
        }
        cfg.sample_regs_user = m;
        let layout = cfg.sample_layout().expect("fixed words and a user context have a layout");
        // REGS_USER then STACK_USER, after the other fields.
        let mut tail = abi.to_ne_bytes().to_vec();
        if abi != 0 {
            for i in 0..u64::from(m.count_ones()) {
                tail.extend_from_slice(&(0x1000 + i).to_ne_bytes());
            }
        }
        tail.extend_from_slice(&(stack.len() as u64).to_ne_bytes());
        if !stack.is_empty() {
            tail.extend_from_slice(&stack);
            let dyn_size = dyn_extra.min(stack.len() + 2) as u64;
            tail.extend_from_slice(&dyn_size.to_ne_bytes());
        }
        s.tail = tail;
        let bytes = encode_sample(&cfg, &s);
        let agrees = |b: &[u8]| layout_agrees(&cfg, b);
        // Whole: decoded as parsed, when the parser takes it (a dyn_size past the size it
        // refuses, and the fast decoder declines).
        let parsed = matches!(cfg.parse(&bytes), Ok(Record::Sample(_)));
        prop_assert_eq!(layout.decode(&bytes).is_some(), parsed);
        prop_assert!(agrees(&bytes));
        if let Some(f) = layout.decode(&bytes) {
            let regs = f.regs_user.expect("registers decoded");
            prop_assert_eq!(regs.abi, abi);
            prop_assert_eq!(regs.regs.len(), if abi == 0 { 0 } else { 8 * m.count_ones() as usize });
            let want = if stack.is_empty() { 0 } else { dyn_extra.min(stack.len()) };
            prop_assert_eq!(f.stack_user.map(<[u8]>::len), Some(want));
        }
        for len in 0..bytes.len() {
            let mut cut = bytes[..len].to_vec();
            if len >= 8 {
                cut[6..8].copy_from_slice(&(len as u16).to_ne_bytes());
            }
            prop_assert!(agrees(&cut), "prefix of {len}");
            if len >= 8 && len < bytes.len() {
                prop_assert!(layout.decode(&cut).is_none(), "a prefix of {len} is not whole");
            }
        }
        let mut longer = bytes.clone();
        longer.extend_from_slice(&extra);
        let n = longer.len() as u16;
        longer[6..8].copy_from_slice(&n.to_ne_bytes());
        prop_assert!(agrees(&longer));
        prop_assert!(layout.decode(&longer).is_none(), "bytes after the stack");
    }

    /// Every prefix of a valid record, with its header size patched to the prefix length, is
    /// an error or a shorter valid parse, never a panic; random bytes likewise.
    #[test]
    fn truncation_and_garbage_never_panic(cfg in arb_config(), s in arb_sample(),
                                          garbage in proptest::collection::vec(any::<u8>(), 0..200)) {
        let bytes = encode_sample(&cfg, &s);
        for len in 0..bytes.len() {
            let mut cut = bytes[..len].to_vec();
            if len >= 8 {
                cut[6..8].copy_from_slice(&(len as u16).to_ne_bytes());
            }
            let _ = cfg.parse(&cut);
        }
        let _ = cfg.parse(&garbage);
        for kind in 0..20u32 {
            let mut g = garbage.clone();
            if g.len() >= 8 {
                g[0..4].copy_from_slice(&kind.to_ne_bytes());
                let n = g.len() as u16;
                g[6..8].copy_from_slice(&n.to_ne_bytes());
            }
            let _ = cfg.parse(&g);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Fixed cases
// ---------------------------------------------------------------------------------------------

/// The layouts swapped by linux-perf-data's sibling parser: same bytes, different read_format,
/// different meaning. Pinned here byte by byte.
#[test]
fn read_group_vs_single_layouts_pinned() {
    let words: [u64; 7] = [2, 1000, 900, 11, 101, 22, 202];
    let mut e = Enc::default();
    for w in words {
        e.u64(w);
    }
    let body = e;
    let bytes = body.finish(rt::SAMPLE, 0);
    let fmt = rf::TOTAL_TIME_ENABLED | rf::TOTAL_TIME_RUNNING | rf::ID;
    // GROUP: nr=2, enabled=1000, running=900, {11, id 101}, {22, id 202}.
    let cfg = ParseConfig::new(st::READ, fmt | rf::GROUP, false);
    let Ok(Record::Sample(s)) = cfg.parse(&bytes) else {
        panic!()
    };
    let Some(ReadValues::Group(g)) = s.read else {
        panic!("{:?}", s.read)
    };
    assert_eq!((g.time_enabled, g.time_running), (Some(1000), Some(900)));
    assert_eq!(
        g.iter().collect::<Vec<_>>(),
        vec![
            GroupEntry {
                value: 11,
                id: Some(101),
                lost: None
            },
            GroupEntry {
                value: 22,
                id: Some(202),
                lost: None
            }
        ]
    );
    assert!(s.unparsed.is_empty());
    // Not GROUP: value=2, enabled=1000, running=900, id=11; the rest is unparsed.
    let cfg = ParseConfig::new(st::READ, fmt, false);
    let Ok(Record::Sample(s)) = cfg.parse(&bytes) else {
        panic!()
    };
    assert_eq!(
        s.read,
        Some(ReadValues::Single(ReadSingle {
            value: 2,
            time_enabled: Some(1000),
            time_running: Some(900),
            id: Some(11),
            lost: None
        }))
    );
    assert_eq!(s.unparsed.len(), 24);
    // GROUP with LOST: stride 3 words: nr=2 needs 6 words after the times, only 4 present.
    let cfg = ParseConfig::new(st::READ, fmt | rf::GROUP | rf::LOST, false);
    assert!(matches!(
        cfg.parse(&bytes),
        Err(ParseError::BadCount {
            what: "group nr",
            value: 2,
            offset: 8
        })
    ));
}

#[test]
fn callchain_kernel_user_split() {
    let chain = [
        context::KERNEL,
        0xffff_ffff_8100_0000,
        0xffff_ffff_8100_0100,
        context::USER,
        0x40_1000,
        0x40_2000,
        0x40_3000,
    ];
    let mut e = Enc::default();
    e.u64(chain.len() as u64);
    for c in chain {
        e.u64(c);
    }
    let bytes = e.finish(rt::SAMPLE, misc::USER);
    let cfg = ParseConfig::new(st::CALLCHAIN, 0, true);
    let Ok(Record::Sample(s)) = cfg.parse(&bytes) else {
        panic!()
    };
    assert_eq!(s.cpu_mode(), CpuMode::User);
    let c = s.callchain.expect("callchain");
    let frames: Vec<Frame> = c.frames().collect();
    assert_eq!(frames.len(), 5);
    assert!(frames[..2]
        .iter()
        .all(|f| f.context.is_kernel() && !f.context.is_user()));
    assert!(frames[2..]
        .iter()
        .all(|f| f.context.is_user() && !f.context.is_kernel()));
    assert_eq!(frames[2].addr, 0x40_1000);
    assert_eq!(c.raw_len(), 7);
}

#[test]
fn hostile_counts() {
    // callchain nr = u64::MAX, and nr just one too many.
    for nr in [u64::MAX, 2, 1 << 61] {
        let mut e = Enc::default();
        e.u64(nr).u64(1);
        let bytes = e.finish(rt::SAMPLE, 0);
        let cfg = ParseConfig::new(st::CALLCHAIN, 0, false);
        assert_eq!(
            cfg.parse(&bytes),
            Err(ParseError::BadCount {
                what: "callchain nr",
                value: nr,
                offset: 8
            })
        );
    }
    // group nr huge.
    let mut e = Enc::default();
    e.u64(u64::MAX / 8 + 1).u64(5);
    let cfg = ParseConfig::new(st::READ, rf::GROUP, false);
    assert!(matches!(
        cfg.parse(&e.finish(rt::SAMPLE, 0)),
        Err(ParseError::BadCount {
            what: "group nr",
            ..
        })
    ));
    // raw size beyond the record.
    let mut e = Enc::default();
    e.u32(u32::MAX).u32(0);
    let cfg = ParseConfig::new(st::RAW, 0, false);
    assert!(matches!(
        cfg.parse(&e.finish(rt::SAMPLE, 0)),
        Err(ParseError::BadCount {
            what: "raw size",
            ..
        })
    ));
    // build_id_size > 20.
    let mut e = Enc::default();
    e.u32(1)
        .u32(1)
        .u64(0)
        .u64(0)
        .u64(0)
        .u8(21)
        .u8(0)
        .u16(0)
        .bytes(&[0; 20])
        .u32(0)
        .u32(0);
    e.c_str(b"/x");
    let cfg = ParseConfig::default();
    assert!(matches!(
        cfg.parse(&e.finish(rt::MMAP2, misc::MMAP_BUILD_ID)),
        Err(ParseError::BadCount {
            what: "build_id_size",
            value: 21,
            ..
        })
    ));
}

#[test]
fn hostile_sizes() {
    let cfg = ParseConfig::new(st::IP, 0, false);
    assert!(matches!(cfg.parse(&[]), Err(ParseError::BadSize { .. })));
    assert!(matches!(
        cfg.parse(&[9, 0, 0, 0]),
        Err(ParseError::BadSize { .. })
    ));
    for size in [0u16, 4, 7, 17] {
        let mut b = Enc::default().u64(1).finish(rt::SAMPLE, 0);
        b[6..8].copy_from_slice(&size.to_ne_bytes());
        assert_eq!(
            cfg.parse(&b),
            Err(ParseError::BadSize {
                size,
                available: 16
            }),
            "size {size}"
        );
    }
    // Header says 8: the IP is missing.
    let mut b = Enc::default().u64(1).finish(rt::SAMPLE, 0);
    b[6..8].copy_from_slice(&8u16.to_ne_bytes());
    assert_eq!(
        cfg.parse(&b),
        Err(ParseError::UnexpectedEof {
            offset: 8,
            needed: 8,
            len: 8
        })
    );
    // A trailer longer than the record.
    let cfg = ParseConfig::new(st::TID | st::TIME | st::CPU, 0, true);
    let b = Enc::default().u64(1).finish(rt::LOST, 0);
    assert!(matches!(
        cfg.parse(&b),
        Err(ParseError::UnexpectedEof { .. })
    ));
    // Bytes beyond header.size are ignored.
    let cfg = ParseConfig::new(st::IP, 0, false);
    let mut b = Enc::default().u64(7).finish(rt::SAMPLE, 0);
    b.extend_from_slice(&[0xff; 8]);
    let Ok(Record::Sample(s)) = cfg.parse(&b) else {
        panic!()
    };
    assert_eq!((s.ip, s.unparsed.len()), (Some(7), 0));
}

#[test]
fn unknown_types_are_skipped_and_counted() {
    let cfg = ParseConfig::default();
    let mut stats = ParseStats::default();
    for kind in [0u32, 11, 12, 16, 17, 22, 99, u32::MAX] {
        let b = Enc::default().u64(42).finish(kind, 3);
        let r = cfg.parse(&b);
        stats.note(&r);
        match r {
            Ok(Record::Unknown { header, body }) => {
                assert_eq!(
                    header,
                    RecordHeader {
                        kind,
                        misc: 3,
                        size: 16
                    }
                );
                assert_eq!(body, &42u64.to_ne_bytes());
            }
            other => panic!("{other:?}"),
        }
    }
    stats.note(&cfg.parse(&Enc::default().u64(1).u64(2).finish(rt::LOST, 0)));
    stats.note(&cfg.parse(&[0; 3]));
    assert_eq!(
        stats,
        ParseStats {
            records: 9,
            unknown: 8,
            errors: 1
        }
    );
}

#[test]
fn comm_exec_and_switch_flags() {
    let cfg = ParseConfig::default();
    let mut e = Enc::default();
    e.u32(1).u32(2).c_str(b"exactly8"); // 8 chars + NUL pads to 16
    let b = e.finish(rt::COMM, misc::COMM_EXEC);
    let Ok(Record::Comm(c)) = cfg.parse(&b) else {
        panic!()
    };
    assert!(c.is_exec());
    assert_eq!(c.comm, b"exactly8");
    // A comm with no NUL at all (hostile) is taken whole.
    let mut e = Enc::default();
    e.u32(1).u32(2).bytes(b"abcdefgh");
    let b = e.finish(rt::COMM, 0);
    let Ok(Record::Comm(c)) = cfg.parse(&b) else {
        panic!()
    };
    assert!(!c.is_exec());
    assert_eq!(c.comm, b"abcdefgh");

    let b = Enc::default().finish(rt::SWITCH, misc::SWITCH_OUT | misc::SWITCH_OUT_PREEMPT);
    let Ok(Record::Switch(s)) = cfg.parse(&b) else {
        panic!()
    };
    assert!(s.is_out() && s.is_preempt());
    let b = Enc::default().u32(5).u32(6).finish(rt::SWITCH_CPU_WIDE, 0);
    let Ok(Record::SwitchCpuWide(s)) = cfg.parse(&b) else {
        panic!()
    };
    assert!(!s.is_out() && !s.is_preempt());
    assert_eq!((s.next_prev_pid, s.next_prev_tid), (5, 6));
}

/// Our constants against the kernel's, as generated in perf-event-open-sys.
#[test]
fn constants_match_kernel_headers() {
    use perf_event_open_sys::bindings as b;
    assert_eq!(rt::MMAP, b::PERF_RECORD_MMAP);
    assert_eq!(rt::LOST, b::PERF_RECORD_LOST);
    assert_eq!(rt::COMM, b::PERF_RECORD_COMM);
    assert_eq!(rt::EXIT, b::PERF_RECORD_EXIT);
    assert_eq!(rt::THROTTLE, b::PERF_RECORD_THROTTLE);
    assert_eq!(rt::UNTHROTTLE, b::PERF_RECORD_UNTHROTTLE);
    assert_eq!(rt::FORK, b::PERF_RECORD_FORK);
    assert_eq!(rt::READ, b::PERF_RECORD_READ);
    assert_eq!(rt::SAMPLE, b::PERF_RECORD_SAMPLE);
    assert_eq!(rt::MMAP2, b::PERF_RECORD_MMAP2);
    assert_eq!(rt::LOST_SAMPLES, b::PERF_RECORD_LOST_SAMPLES);
    assert_eq!(rt::SWITCH, b::PERF_RECORD_SWITCH);
    assert_eq!(rt::SWITCH_CPU_WIDE, b::PERF_RECORD_SWITCH_CPU_WIDE);
    let pairs = [
        (st::IP, b::PERF_SAMPLE_IP),
        (st::TID, b::PERF_SAMPLE_TID),
        (st::TIME, b::PERF_SAMPLE_TIME),
        (st::ADDR, b::PERF_SAMPLE_ADDR),
        (st::READ, b::PERF_SAMPLE_READ),
        (st::CALLCHAIN, b::PERF_SAMPLE_CALLCHAIN),
        (st::ID, b::PERF_SAMPLE_ID),
        (st::CPU, b::PERF_SAMPLE_CPU),
        (st::PERIOD, b::PERF_SAMPLE_PERIOD),
        (st::STREAM_ID, b::PERF_SAMPLE_STREAM_ID),
        (st::RAW, b::PERF_SAMPLE_RAW),
        (st::BRANCH_STACK, b::PERF_SAMPLE_BRANCH_STACK),
        (st::IDENTIFIER, b::PERF_SAMPLE_IDENTIFIER),
        (rf::TOTAL_TIME_ENABLED, b::PERF_FORMAT_TOTAL_TIME_ENABLED),
        (rf::TOTAL_TIME_RUNNING, b::PERF_FORMAT_TOTAL_TIME_RUNNING),
        (rf::ID, b::PERF_FORMAT_ID),
        (rf::GROUP, b::PERF_FORMAT_GROUP),
        (rf::LOST, b::PERF_FORMAT_LOST),
    ];
    for (ours, theirs) in pairs {
        assert_eq!(ours, theirs as u64);
    }
    let misc_pairs = [
        (misc::CPUMODE_MASK, b::PERF_RECORD_MISC_CPUMODE_MASK),
        (misc::KERNEL, b::PERF_RECORD_MISC_KERNEL),
        (misc::USER, b::PERF_RECORD_MISC_USER),
        (misc::HYPERVISOR, b::PERF_RECORD_MISC_HYPERVISOR),
        (misc::GUEST_KERNEL, b::PERF_RECORD_MISC_GUEST_KERNEL),
        (misc::GUEST_USER, b::PERF_RECORD_MISC_GUEST_USER),
        (misc::COMM_EXEC, b::PERF_RECORD_MISC_COMM_EXEC),
        (misc::SWITCH_OUT, b::PERF_RECORD_MISC_SWITCH_OUT),
        (
            misc::SWITCH_OUT_PREEMPT,
            b::PERF_RECORD_MISC_SWITCH_OUT_PREEMPT,
        ),
        (misc::MMAP_BUILD_ID, b::PERF_RECORD_MISC_MMAP_BUILD_ID),
    ];
    for (ours, theirs) in misc_pairs {
        assert_eq!(u32::from(ours), theirs);
    }
    let ctx = [
        (context::HV, b::PERF_CONTEXT_HV),
        (context::KERNEL, b::PERF_CONTEXT_KERNEL),
        (context::USER, b::PERF_CONTEXT_USER),
        (context::GUEST, b::PERF_CONTEXT_GUEST),
        (context::GUEST_KERNEL, b::PERF_CONTEXT_GUEST_KERNEL),
        (context::GUEST_USER, b::PERF_CONTEXT_GUEST_USER),
        (context::MAX, b::PERF_CONTEXT_MAX),
    ];
    for (ours, theirs) in ctx {
        assert_eq!(ours, theirs);
    }
}

/// `PERF_SAMPLE_REGS_USER` and `PERF_SAMPLE_STACK_USER` as perf_output_sample writes them:
/// `{ abi; regs[weight(mask)] }` (no regs with abi 0), then `{ size; data[size]; dyn_size }`
/// (nothing after size 0), the data cut to dyn_size; a dyn_size over size is refused.
#[test]
fn user_regs_and_stack() {
    let mask = (1u64 << 6) | (1 << 7) | (1 << 8);
    let cfg =
        ParseConfig::new(st::IP | st::REGS_USER | st::STACK_USER, 0, true).with_regs_user(mask);
    let mut e = Enc::default();
    e.u64(0x40_1000); // ip
    e.u64(2); // abi 64
    for r in [0x7ff0_0100u64, 0x7ff0_0000, 0x40_1000] {
        e.u64(r);
    }
    e.u64(32); // size
    for w in [1u64, 2, 3, 4] {
        e.u64(w);
    }
    e.u64(16); // dyn_size
    let bytes = e.finish(rt::SAMPLE, misc::USER);
    let Ok(Record::Sample(s)) = cfg.parse(&bytes) else {
        panic!()
    };
    let r = s.regs_user.expect("regs");
    assert_eq!(r.abi, 2);
    assert_eq!(
        (r.get(0), r.get(1), r.get(2), r.get(3)),
        (Some(0x7ff0_0100), Some(0x7ff0_0000), Some(0x40_1000), None)
    );
    assert_eq!(s.stack_user.map(<[u8]>::len), Some(16));
    assert!(s.unparsed.is_empty());

    // A kernel thread: abi 0, no registers, stack size 0.
    let mut e = Enc::default();
    e.u64(0xffff_ffff_8100_0000);
    e.u64(0);
    e.u64(0);
    let bytes = e.finish(rt::SAMPLE, misc::KERNEL);
    let Ok(Record::Sample(s)) = cfg.parse(&bytes) else {
        panic!()
    };
    assert_eq!(s.regs_user.map(|r| r.regs.len()), Some(0));
    assert_eq!(s.stack_user, Some(&[][..]));

    // dyn_size larger than the copied size.
    let mut e = Enc::default();
    e.u64(0x40_1000);
    e.u64(0);
    e.u64(8);
    e.u64(0);
    e.u64(9);
    let bytes = e.finish(rt::SAMPLE, misc::USER);
    assert!(
        matches!(cfg.parse(&bytes), Err(ParseError::BadCount { .. })),
        "{:?}",
        cfg.parse(&bytes)
    );
}

/// Whether `cfg`'s fast decoder declines `b` (in place too), or gives the general parser's
/// fields, in place over fields left from another sample as well (every one is set).
fn layout_agrees(cfg: &ParseConfig, b: &[u8]) -> bool {
    let Some(layout) = cfg.sample_layout() else {
        return false;
    };
    match layout.decode(b) {
        None => !layout.decode_into(b, &mut dirty_fields()),
        Some(f) => {
            matches!(cfg.parse(b), Ok(Record::Sample(p))
                if SampleFields::of(&p) == f && p.unparsed.is_empty())
                && {
                    let mut d = dirty_fields();
                    layout.decode_into(b, &mut d) && d == f
                }
        }
    }
}

/// Sample fields with every field set (a callchain, registers and a stack among them), as
/// a decode in place finds them after another sample.
fn dirty_fields() -> SampleFields<'static> {
    let cfg = pmc_linux::internals::record::ParseConfig {
        sample_type: st::CALLCHAIN,
        ..Default::default()
    };
    // PERF_RECORD_SAMPLE, misc 0, 24 bytes: nr 1, one address.
    static REC: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    let rec = REC.get_or_init(|| {
        [
            rt::SAMPLE.to_ne_bytes().as_slice(),
            &0u16.to_ne_bytes(),
            &24u16.to_ne_bytes(),
            &1u64.to_ne_bytes(),
            &0xdead_0000u64.to_ne_bytes(),
        ]
        .concat()
    });
    let layout = cfg.sample_layout().expect("a callchain-only layout");
    let chain = layout.decode(rec).and_then(|f| f.callchain);
    assert!(chain.is_some(), "the dirty callchain decodes");
    SampleFields {
        misc: 0x7fff,
        identifier: Some(91),
        ip: Some(92),
        pid: Some(93),
        tid: Some(94),
        time: Some(95),
        addr: Some(96),
        id: Some(97),
        stream_id: Some(98),
        cpu: Some(99),
        period: Some(100),
        callchain: chain,
        regs_user: Some(pmc_linux::internals::record::RegsUser {
            abi: 2,
            regs: &[7; 16],
        }),
        stack_user: Some(&[5; 3]),
    }
}
