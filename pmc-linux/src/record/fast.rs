//! The fixed-word fast path: [`SampleLayout`] decodes the samples whose fields are all one
//! u64 word (but the callchain and a user context) into [`SampleFields`], without the general
//! parser.

use super::{
    record_type, sample_type, Callchain, CpuMode, ParseConfig, RecordHeader, RegsUser, Sample,
    HEADER_LEN,
};

/// The layout of a ring's samples when every field they carry is one u64 word but the
/// callchain and the user context (the `sample_type` bits `IDENTIFIER`, `IP`, `TID`, `TIME`,
/// `ADDR`, `ID`, `STREAM_ID`, `CPU`, `PERIOD`, `CALLCHAIN`, `REGS_USER` and `STACK_USER`, and
/// nothing else): what every frame-pointer sampling PMC's samples are, and every DWARF one's.
/// [`SampleLayout::decode`] reads such a sample without the general parser
/// ([`ParseConfig::parse`]) and without building a [`Sample`]: the drain thread's hot path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleLayout {
    cfg: ParseConfig,
    /// Bytes of the fixed words.
    fixed: usize,
    /// Per field of [`FIXED_WORD_BITS`], the index of its word among the fixed words, or
    /// [`NO_WORD`]: worked out once per layout, so that decoding a sample tests no bits.
    slots: [u8; FIXED_WORD_BITS.len()],
}

/// The `sample_type` bits of the one-word fields, in the order their words come in a sample.
const FIXED_WORD_BITS: [u64; 9] = [
    sample_type::IDENTIFIER,
    sample_type::IP,
    sample_type::TID,
    sample_type::TIME,
    sample_type::ADDR,
    sample_type::ID,
    sample_type::STREAM_ID,
    sample_type::CPU,
    sample_type::PERIOD,
];

/// A [`SampleLayout`] slot of a field the samples do not carry.
const NO_WORD: u8 = u8::MAX;

/// The fields of a sample of a [`SampleLayout`]: those of [`Sample`] such a sample can have.
/// Each field is `Some` when its `sample_type` bit is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SampleFields<'a> {
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
    /// `PERF_SAMPLE_CALLCHAIN`
    pub callchain: Option<Callchain<'a>>,
    /// `PERF_SAMPLE_REGS_USER` (see [`Sample::regs_user`]).
    pub regs_user: Option<RegsUser<'a>>,
    /// `PERF_SAMPLE_STACK_USER`, cut to its `dyn_size` (see [`Sample::stack_user`]).
    pub stack_user: Option<&'a [u8]>,
}

impl<'a> SampleFields<'a> {
    /// The fields of a sample decoded by the general parser (its other fields left out).
    pub fn of(s: &Sample<'a>) -> SampleFields<'a> {
        SampleFields {
            misc: s.misc,
            identifier: s.identifier,
            ip: s.ip,
            pid: s.pid,
            tid: s.tid,
            time: s.time,
            addr: s.addr,
            id: s.id,
            stream_id: s.stream_id,
            cpu: s.cpu,
            period: s.period,
            callchain: s.callchain,
            regs_user: s.regs_user,
            stack_user: s.stack_user,
        }
    }

    /// The CPU mode bits of [`SampleFields::misc`].
    pub fn cpu_mode(&self) -> CpuMode {
        CpuMode::from_misc(self.misc)
    }
}

impl ParseConfig {
    /// The layout of this config's samples, if they carry nothing but fixed words, a
    /// callchain and a user context (see [`SampleLayout`]).
    pub fn sample_layout(&self) -> Option<SampleLayout> {
        let decoded = FIXED_SAMPLE_WORDS
            | sample_type::CALLCHAIN
            | sample_type::REGS_USER
            | sample_type::STACK_USER;
        let (slots, words) = word_slots(self);
        (self.sample_type & !decoded == 0).then(|| SampleLayout {
            cfg: *self,
            fixed: words * 8,
            slots,
        })
    }
}

impl SampleLayout {
    /// Decodes `record`, a whole `PERF_RECORD_SAMPLE` (header included) of this layout,
    /// into the same fields [`ParseConfig::parse`] gives. `None` when it is not a sample,
    /// or not exactly of this layout (short, with a callchain count that does not end the
    /// record, or with bytes after its fields): the general parser then decodes it or says
    /// what is wrong.
    pub fn decode<'a>(&self, record: &'a [u8]) -> Option<SampleFields<'a>> {
        let mut f = SampleFields::default();
        self.decode_into(record, &mut f).then_some(f)
    }

    /// [`SampleLayout::decode`] into `f`, in place (the drain's hot path: no copy of the
    /// fields on the way out): every field of `f` is set. Returns false where `decode`
    /// gives `None`; `f` then holds what was decoded before the fault.
    ///
    /// ```
    /// use pmc_linux::internals::record::{sample_type, ParseConfig, SampleFields};
    ///
    /// let cfg = ParseConfig { sample_type: sample_type::IP | sample_type::TIME, ..Default::default() };
    /// let layout = cfg.sample_layout().expect("fixed words only");
    /// // PERF_RECORD_SAMPLE (9), misc 0, 24 bytes: ip, time.
    /// let mut rec = Vec::new();
    /// rec.extend_from_slice(&9u32.to_ne_bytes());
    /// rec.extend_from_slice(&0u16.to_ne_bytes());
    /// rec.extend_from_slice(&24u16.to_ne_bytes());
    /// rec.extend_from_slice(&0x4000u64.to_ne_bytes());
    /// rec.extend_from_slice(&77u64.to_ne_bytes());
    /// let mut f = SampleFields::default();
    /// assert!(layout.decode_into(&rec, &mut f));
    /// assert_eq!((f.ip, f.time), (Some(0x4000), Some(77)));
    /// assert!(!layout.decode_into(&rec[..16], &mut f));
    /// ```
    #[inline]
    pub fn decode_into<'a>(&self, record: &'a [u8], f: &mut SampleFields<'a>) -> bool {
        self.decode_parts(record, f).is_some()
    }

    fn decode_parts<'a>(&self, record: &'a [u8], f: &mut SampleFields<'a>) -> Option<()> {
        let header = RecordHeader::parse(record)?;
        if header.kind != record_type::SAMPLE {
            return None;
        }
        let body = record.get(HEADER_LEN..usize::from(header.size))?;
        let (words, mut rest) = body.split_at_checked(self.fixed)?;
        fields_by_slots(&self.slots, words, f);
        f.misc = header.misc;
        (f.callchain, f.regs_user, f.stack_user) = (None, None, None);
        // `u64 count; then count units of `unit` bytes`, off the front of `rest`.
        let counted = |rest: &mut &'a [u8], unit: u64| -> Option<(u64, &'a [u8])> {
            let (n, after) = rest.split_at_checked(8)?;
            let n = u64::from_ne_bytes(n.try_into().ok()?);
            let (items, after) =
                after.split_at_checked(usize::try_from(n.checked_mul(unit)?).ok()?)?;
            *rest = after;
            Some((n, items))
        };
        if self.cfg.has(sample_type::CALLCHAIN) {
            let (_, ips) = counted(&mut rest, 8)?;
            f.callchain = Some(Callchain { ips });
        }
        if self.cfg.has(sample_type::REGS_USER) {
            // `{ u64 abi; u64 regs[weight(sample_regs_user)]; }`, no registers with abi 0.
            let (abi, after) = rest.split_at_checked(8)?;
            let abi = u64::from_ne_bytes(abi.try_into().ok()?);
            let n = if abi == 0 {
                0
            } else {
                self.cfg.sample_regs_user.count_ones() as usize
            };
            let (regs, after) = after.split_at_checked(n.checked_mul(8)?)?;
            rest = after;
            f.regs_user = Some(RegsUser { abi, regs });
        }
        if self.cfg.has(sample_type::STACK_USER) {
            // `{ u64 size; char data[size]; u64 dyn_size; }`, the last two when size is not
            // 0; cut to dyn_size.
            let (size, data) = counted(&mut rest, 1)?;
            f.stack_user = Some(if size == 0 {
                &[]
            } else {
                let (dyn_size, after) = rest.split_at_checked(8)?;
                rest = after;
                let dyn_size =
                    usize::try_from(u64::from_ne_bytes(dyn_size.try_into().ok()?)).ok()?;
                data.get(..dyn_size)?
            });
        }
        rest.is_empty().then_some(())
    }
}

/// The `sample_type` bits of the sample fields before `PERF_SAMPLE_READ`: one u64 word each
/// (those of [`FIXED_WORD_BITS`]).
pub(super) const FIXED_SAMPLE_WORDS: u64 = {
    let mut all = 0;
    let mut i = 0;
    while i < FIXED_WORD_BITS.len() {
        all |= FIXED_WORD_BITS[i];
        i += 1;
    }
    all
};

/// Per field of [`FIXED_WORD_BITS`], the index of its word among `cfg`'s fixed words (or
/// [`NO_WORD`]), and how many fixed words `cfg`'s samples carry.
fn word_slots(cfg: &ParseConfig) -> ([u8; FIXED_WORD_BITS.len()], usize) {
    let mut slots = [NO_WORD; FIXED_WORD_BITS.len()];
    let mut next = 0u8;
    for (slot, bit) in slots.iter_mut().zip(FIXED_WORD_BITS) {
        if cfg.has(bit) {
            *slot = next;
            next += 1;
        }
    }
    (slots, usize::from(next))
}

/// Sets the fields of [`FIXED_SAMPLE_WORDS`] in `f` from `words`, one native-endian u64 word
/// per field with a slot (a short `words` leaves the last fields `None`).
#[inline(always)]
fn fields_by_slots(slots: &[u8; FIXED_WORD_BITS.len()], words: &[u8], f: &mut SampleFields<'_>) {
    let word = |i: usize| -> Option<[u8; 8]> {
        let at = usize::from(*slots.get(i)?) * 8;
        words.get(at..at + 8)?.try_into().ok()
    };
    let u64_of = u64::from_ne_bytes;
    // `{ u32, u32 }` pairs: pid and tid, cpu and res.
    let lo = |b: [u8; 8]| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
    let hi = |b: [u8; 8]| u32::from_ne_bytes([b[4], b[5], b[6], b[7]]);
    let tid = word(2);
    f.identifier = word(0).map(u64_of);
    f.ip = word(1).map(u64_of);
    f.pid = tid.map(lo);
    f.tid = tid.map(hi);
    f.time = word(3).map(u64_of);
    f.addr = word(4).map(u64_of);
    f.id = word(5).map(u64_of);
    f.stream_id = word(6).map(u64_of);
    f.cpu = word(7).map(lo);
    f.period = word(8).map(u64_of);
}

/// The sample fields of [`FIXED_SAMPLE_WORDS`] from `words`, which holds one native-endian
/// u64 word per bit set in the config (a short `words` leaves the last fields `None`): the
/// general parser's, by the slots [`SampleLayout`] keeps.
pub(super) fn fixed_sample_fields(cfg: &ParseConfig, words: &[u8]) -> SampleFields<'static> {
    let mut f = SampleFields::default();
    fields_by_slots(&word_slots(cfg).0, words, &mut f);
    f
}
