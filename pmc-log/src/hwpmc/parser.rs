//! [`Parser`]: the kernel's record stream framed into [`Event`](super::Event)s:
//! header checks, plausible lengths, resynchronisation after damage,
//! the `PMCL` prefix and multipart (IBS) callchains.

use super::consts::*;
use super::decode::*;
use super::{Event, HwpmcError, ImportReport, Skipped, MAX_NOTES};
use crate::bytes::{cstr, ByteCursor};
use crate::record::*;

/// The `u32` at `off` of `b`, if `b` holds it.
pub(super) fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    ByteCursor::le(b).u32_at(off).ok()
}

/// Where the path of a variable-length record starts, by type (PROCEXEC:
/// by layout).
fn path_offset(ty: u32, new_exec: bool) -> Option<usize> {
    match ty {
        PMCLOG_TYPE_PMCATTACH => Some(24),
        PMCLOG_TYPE_MAP_IN => Some(32),
        PMCLOG_TYPE_PROCEXEC => Some(if new_exec { 40 } else { 32 }),
        _ => None,
    }
}

/// The kernel sizes a path record as `roundup(offsetof(pl_pathname) +
/// strlen(path) + 1, 4)` (`hwpmc_logging.c:pmclog_process_pmcattach`,
/// `_procexec`, `_map_in`): the path's NUL lies in the last 4 bytes.
fn path_len_consistent(r: &[u8], at: usize) -> bool {
    let Some(s) = r.get(at..) else {
        return false;
    };
    match s.iter().position(|&c| c == 0) {
        Some(n) => (at + n + 1).div_ceil(4) * 4 == r.len(),
        None => false,
    }
}

/// Whether `len` is a length a record of type `ty` can have, by
/// `sys/sys/pmclog.h` and the kernel's emitters (`hwpmc_logging.c`):
/// fixed-size records have exactly their size; path records at most their
/// fixed part plus PATH_MAX; a callchain 32 bytes plus 8 per PC, at most
/// PMC_CALLCHAIN_DEPTH_MAX PCs. `None` for types this importer does not know.
fn plausible_len(ty: u32, len: usize) -> Option<bool> {
    let fixed = |n: usize| len == n;
    let path = |off: usize| len > off && len <= (off + FBSD_PATH_MAX).div_ceil(4) * 4;
    Some(match ty {
        PMCLOG_TYPE_CLOSELOG | PMCLOG_TYPE_DROPNOTIFY => fixed(16),
        PMCLOG_TYPE_INITIALIZE => fixed(112),
        PMCLOG_TYPE_PMCALLOCATE | PMCLOG_TYPE_PROCCSW | PMCLOG_TYPE_MAP_OUT => fixed(40),
        PMCLOG_TYPE_PMCDETACH
        | PMCLOG_TYPE_PROCFORK
        | PMCLOG_TYPE_SYSEXIT
        | PMCLOG_TYPE_USERDATA
        | PMCLOG_TYPE_THR_EXIT => fixed(24),
        PMCLOG_TYPE_PROCEXIT => fixed(32),
        PMCLOG_TYPE_PMCALLOCATEDYN => fixed(96),
        PMCLOG_TYPE_THR_CREATE => fixed(52),
        PMCLOG_TYPE_PROC_CREATE => fixed(44),
        PMCLOG_TYPE_PMCATTACH => path(24),
        PMCLOG_TYPE_MAP_IN => path(32),
        // Either PROCEXEC layout (path at 32 or 40).
        PMCLOG_TYPE_PROCEXEC => len > 32 && len <= (40 + FBSD_PATH_MAX).div_ceil(4) * 4,
        PMCLOG_TYPE_CALLCHAIN => {
            len >= 32 && (len - 32) % 8 == 0 && (len - 32) / 8 <= PMC_CALLCHAIN_DEPTH_MAX
        }
        _ => return None,
    })
}

/// A plausible record header at `at` in `w`: magic, known type, a length
/// that type can have, and `pl_spare` 0 when it is there to check.
fn header_at(w: &[u8], at: usize) -> bool {
    let Some(word) = u32_at(w, at) else {
        return false;
    };
    let ty = pmclog_header_type(word);
    pmclog_header_magic_ok(word)
        && known_type(ty)
        && plausible_len(ty, (word & 0xFFFF) as usize) == Some(true)
        && u32_at(w, at + 4).is_none_or(|spare| spare == 0)
}

/// Where a callchain record whose length was damaged upwards really ends:
/// the first plausible record header inside what it claims (the kernel
/// writes records back to back, and a PC whose low word looks like a
/// header followed by a zero high word lies at 0xEE01_0000..0xEE15_FFFF,
/// which real code rarely does).
fn embedded_header(rec: &[u8]) -> Option<usize> {
    (32..rec.len()).step_by(4).find(|&k| header_at(rec, k))
}

/// A PMCALLOCATEDYN's descriptor says which record it was: FreeBSD's
/// `pmcstat -R` prints "allocatedyn" for it (pmc-analyze's printlog).
pub(super) fn allocated_dyn(mut r: Record<'_>) -> Record<'_> {
    if let Record::Pmc(p) = &mut r {
        p.native_config = format!("{},record=allocatedyn", p.native_config).into();
    }
    r
}

/// Zero-copy iterator of the raw records of an hwpmc log, lenient where
/// libpmc is strict: unknown types are skipped by length, damage is skipped
/// by scanning for the next plausible header, and every skip is reported.
///
/// A record's length is checked against what its type can be
/// (`sys/sys/pmclog.h` sizes and the kernel's emitters): fixed-size records
/// must have their size, path records must end with their path's NUL, a
/// callchain must be 32 bytes plus at most PMC_CALLCHAIN_DEPTH_MAX PCs and
/// must not contain another record's header (a length damaged upwards
/// swallows the records after it). An implausible length is damage: the
/// parser resynchronises on the next plausible header and reports every
/// skipped range, so one damaged length costs that record, not the 64 KiB
/// a 16-bit length can claim, and near the end of the input it is not
/// mistaken for truncation. A length damaged downwards (within what the
/// type allows) shortens that record's callchain; the rest of the record
/// is reported as skipped.
#[derive(Debug)]
pub struct Parser<'a> {
    data: &'a [u8],
    pos: usize,
    pub(super) core: Core,
}

/// Header word sanity: magic, known type, length bounds.
fn header_ok(word: u32, remaining: usize) -> Option<(u32, usize)> {
    if !pmclog_header_magic_ok(word) {
        return None;
    }
    let ty = pmclog_header_type(word);
    let len = (word & 0xFFFF) as usize;
    if len < PMCLOG_HEADER_LEN || len % 4 != 0 || len > remaining {
        return None;
    }
    Some((ty, len))
}

/// Types the parser decodes (everything else is skipped by length).
fn known_type(ty: u32) -> bool {
    (1..=20).contains(&ty) && ty != PMCLOG_TYPE_MAPPINGCHANGE
}

/// A resync candidate at a position with `remaining` bytes available.
enum Candidate {
    /// A plausible header whose record fits.
    Accept,
    /// Not a header.
    Reject,
    /// A plausible header whose record does not fit yet: more input decides.
    Undecided,
}

fn candidate(word: u32, remaining: usize) -> Candidate {
    let len = (word & 0xFFFF) as usize;
    if plausible_len(pmclog_header_type(word), len) == Some(false) {
        return Candidate::Reject;
    }
    match header_ok(word, remaining) {
        Some((ty, _)) if known_type(ty) => Candidate::Accept,
        Some(_) => Candidate::Reject,
        None => {
            let len = (word & 0xFFFF) as usize;
            if pmclog_header_magic_ok(word)
                && known_type(pmclog_header_type(word))
                && len >= PMCLOG_HEADER_LEN
                && len % 4 == 0
                && len > remaining
            {
                Candidate::Undecided
            } else {
                Candidate::Reject
            }
        }
    }
}

/// The most damaged regions an [`ImportReport`] lists; further ones are
/// counted in [`ImportReport::skipped_unlisted`] and
/// [`ImportReport::skipped_unlisted_bytes`].
pub const MAX_SKIPPED_LISTED: usize = 4096;

/// The most distinct PMC ids whose sampling rate the importer remembers
/// (for `Sample::period`); samples of PMCs allocated beyond that get period 0.
/// hwpmc has far fewer PMCs (rows x CPUs); the cap bounds hostile input.
pub const MAX_TRACKED_PMCS: usize = 65536;

/// Longest input the parser may need before it can decide anything: a
/// `pmc record` sub-record (8-byte header, 16-bit length) or a kernel record
/// (16-bit length).
pub(super) const MAX_ITEM: usize = 8 + 0xFFFF;

/// `pmc record` prefix facts: (arch code, cpumodel, osrelease).
#[derive(Debug, Clone, Default)]
pub(super) struct PrefixInfo {
    pub(super) arch: u16,
    pub(super) cpumodel: Vec<u8>,
    pub(super) osrelease: Vec<u8>,
}

#[derive(Debug)]
enum Phase {
    /// Before the first word.
    Start,
    /// Before the 8-byte `pmc record` file header.
    PrefixHead,
    /// Inside the `pmc record` sub-records.
    Prefix,
    /// At a kernel record header.
    Records,
    /// Scanning for the next plausible header after damage at `from`.
    Resync { from: u64, reason: &'static str },
    /// The input is over.
    Done,
}

/// What one parser step did.
pub(super) enum Step<'a> {
    /// Consumed that many bytes of the window, maybe producing an event.
    Advance(usize, Option<Event<'a>>),
    /// Nothing can be decided without more input.
    NeedMore,
    /// The input is over.
    End,
}

/// The parser's state machine, shared by [`Parser`] (whole input at once)
/// and [`StreamImporter`] (input in chunks). A step looks at a window
/// starting at the current position and never decides anything that more
/// input could change unless `eof` says there is no more input, so the
/// result does not depend on how the input was split.
#[derive(Debug)]
pub(super) struct Core {
    phase: Phase,
    version: Option<u32>,
    pub(super) report: ImportReport,
    pub(super) prefix: Option<PrefixInfo>,
}

impl Core {
    pub(super) fn new() -> Self {
        Core {
            phase: Phase::Start,
            version: None,
            report: ImportReport::default(),
            prefix: None,
        }
    }

    pub(super) fn is_done(&self) -> bool {
        matches!(self.phase, Phase::Done)
    }

    pub(super) fn skip(&mut self, offset: u64, len: u64, reason: &'static str) {
        if self.report.skipped.len() < MAX_SKIPPED_LISTED {
            self.report.skipped.push(Skipped {
                offset,
                len,
                reason,
            });
        } else {
            self.report.skipped_unlisted += 1;
            self.report.skipped_unlisted_bytes =
                self.report.skipped_unlisted_bytes.saturating_add(len);
        }
    }

    /// One step over `w`, the input from absolute offset `base` on: one
    /// step function per phase.
    pub(super) fn step<'a>(
        &mut self,
        w: &'a [u8],
        base: u64,
        eof: bool,
    ) -> Result<Step<'a>, HwpmcError> {
        match self.phase {
            Phase::Done => Ok(Step::End),
            Phase::Start => self.start(w, eof),
            Phase::PrefixHead => Ok(self.prefix_head(w, base, eof)),
            Phase::Prefix => Ok(self.prefix_record(w, base, eof)),
            Phase::Resync { from, reason } => Ok(self.resync(w, base, eof, from, reason)),
            Phase::Records => Ok(self.record(w, base, eof)),
        }
    }

    /// Before the first word: a `pmc record` file or a kernel log.
    fn start<'a>(&mut self, w: &'a [u8], eof: bool) -> Result<Step<'a>, HwpmcError> {
        if w.is_empty() {
            if eof {
                self.phase = Phase::Done;
                return Ok(Step::End);
            }
            return Ok(Step::NeedMore);
        }
        let Some(word) = u32_at(w, 0) else {
            if eof {
                return Err(HwpmcError::NotHwpmcLog { word: 0 });
            }
            return Ok(Step::NeedMore);
        };
        if word == PMCL_MAGIC {
            self.report.pmc_record_prefix = true;
            self.phase = Phase::PrefixHead;
        } else if pmclog_header_magic_ok(word) {
            self.phase = Phase::Records;
        } else {
            return Err(HwpmcError::NotHwpmcLog { word });
        }
        Ok(Step::Advance(0, None))
    }

    /// The 8-byte `pmc record` file header (its arch code).
    fn prefix_head<'a>(&mut self, w: &'a [u8], base: u64, eof: bool) -> Step<'a> {
        if w.len() < 8 && !eof {
            return Step::NeedMore;
        }
        let arch = ByteCursor::le(w).u16_at(6).unwrap_or(0);
        self.prefix = Some(PrefixInfo {
            arch,
            ..PrefixInfo::default()
        });
        if w.len() < 8 {
            self.skip(base + 8, 0, "pmc record header cut short");
            self.phase = Phase::Records;
            return Step::Advance(w.len(), None);
        }
        self.phase = Phase::Prefix;
        Step::Advance(8, None)
    }

    /// One `pmc record` sub-record: SYSINFO fills the prefix facts, DONE
    /// ends the prefix, others are skipped.
    fn prefix_record<'a>(&mut self, w: &'a [u8], base: u64, eof: bool) -> Step<'a> {
        let Some(h) = w.get(..8) else {
            if !eof {
                return Step::NeedMore;
            }
            self.skip(base, w.len() as u64, "pmc record header cut short");
            self.phase = Phase::Records;
            return Step::Advance(w.len(), None);
        };
        let h = ByteCursor::le(h);
        let ty = h.u8_at(0).unwrap_or_default();
        let len = usize::from(h.u16_at(2).unwrap_or_default());
        let (body, used): (&[u8], usize) = match w.get(8..8 + len) {
            Some(b) => (b, 8 + len),
            None if !eof => return Step::NeedMore,
            None => (&[], w.len()),
        };
        match ty {
            PMCL_INFO_DONE => self.phase = Phase::Records,
            PMCL_INFO_SYSINFO => {
                if let Some(p) = self.prefix.as_mut() {
                    p.cpumodel = cstr(body.get(..64).unwrap_or(body)).to_vec();
                    p.osrelease = cstr(body.get(64..128).unwrap_or_default()).to_vec();
                }
            }
            _ => {}
        }
        Step::Advance(used, None)
    }

    /// Scanning 4-byte steps for the next plausible header after damage at
    /// `from`; the skipped range is reported once one is found (or at EOF).
    fn resync<'a>(
        &mut self,
        w: &'a [u8],
        base: u64,
        eof: bool,
        from: u64,
        reason: &'static str,
    ) -> Step<'a> {
        let mut at = 0usize;
        loop {
            if at + PMCLOG_HEADER_LEN > w.len() {
                if !eof {
                    return advance_or_wait(at);
                }
                let end = base + w.len() as u64;
                self.skip(from, end - from, reason);
                self.phase = Phase::Records;
                return Step::Advance(w.len(), None);
            }
            let word = u32_at(w, at).unwrap_or(0);
            match candidate(word, w.len() - at) {
                Candidate::Accept => {
                    self.skip(from, base + at as u64 - from, reason);
                    self.phase = Phase::Records;
                    return Step::Advance(at, None);
                }
                Candidate::Undecided if !eof => return advance_or_wait(at),
                Candidate::Undecided | Candidate::Reject => at += 4,
            }
        }
    }

    /// At a kernel record header: check the header, then the record.
    fn record<'a>(&mut self, w: &'a [u8], base: u64, eof: bool) -> Step<'a> {
        let remaining = w.len();
        if remaining == 0 {
            if eof {
                self.phase = Phase::Done;
                return Step::End;
            }
            return Step::NeedMore;
        }
        if remaining < PMCLOG_HEADER_LEN {
            if !eof {
                return Step::NeedMore;
            }
            self.skip(base, remaining as u64, "input ends inside a record header");
            self.phase = Phase::Done;
            return Step::End;
        }
        let word = u32_at(w, 0).unwrap_or(0);
        let claimed = (word & 0xFFFF) as usize;
        let wty = pmclog_header_type(word);
        if pmclog_header_magic_ok(word) && plausible_len(wty, claimed) == Some(false) {
            // A known type with a length it cannot have: damage.
            // Resynchronise on the next plausible header.
            return self.start_resync(base, "implausible length for the record type");
        }
        match header_ok(word, remaining) {
            Some((ty, len)) => self.whole_record(w.get(..len).unwrap_or_default(), ty, len, base),
            None => self.overrun(w, base, eof, word),
        }
    }

    /// Damage at `base`: scan for the next plausible header from the next word.
    fn start_resync<'a>(&mut self, base: u64, reason: &'static str) -> Step<'a> {
        self.phase = Phase::Resync { from: base, reason };
        Step::Advance(4, None)
    }

    /// A header whose record does not fit in `w`. A well-formed header whose
    /// length overruns the input: wait for the rest, or report the cut at
    /// the end, unless what is there shows the length was damaged. Anything
    /// else is a bad header.
    fn overrun<'a>(&mut self, w: &'a [u8], base: u64, eof: bool, word: u32) -> Step<'a> {
        let remaining = w.len();
        let len = (word & 0xFFFF) as usize;
        if !(pmclog_header_magic_ok(word) && len > remaining && len % 4 == 0) {
            return self.start_resync(base, "bad record header (magic or length)");
        }
        if !eof {
            return Step::NeedMore;
        }
        if pmclog_header_type(word) == PMCLOG_TYPE_CALLCHAIN {
            if let Some(k) = embedded_header(w) {
                self.skip(base, k as u64, "record length overruns the next record");
                return Step::Advance(k, None);
            }
        }
        self.skip(base, remaining as u64, "input ends inside a record");
        self.phase = Phase::Done;
        Step::End
    }

    /// A record of type `ty` and length `len` that fits in the input (`rec`,
    /// at `base`):
    /// skipped by length when unknown, checked against the next record's
    /// header and its path, decoded.
    fn whole_record<'a>(&mut self, rec: &'a [u8], ty: u32, len: usize, base: u64) -> Step<'a> {
        if !known_type(ty) {
            self.report.records_in += 1;
            self.report.unknown_types += 1;
            return Step::Advance(len, None);
        }
        // A length damaged upwards swallows the next records: a
        // callchain shows it by a record header inside it, a path
        // record by its NUL not ending the record.
        if ty == PMCLOG_TYPE_CALLCHAIN {
            if let Some(k) = embedded_header(rec) {
                self.skip(base, k as u64, "record length overruns the next record");
                return Step::Advance(k, None);
            }
        }
        let new_exec = self.exec_layout_new(rec);
        if let Some(at) = path_offset(ty, new_exec) {
            if !path_len_consistent(rec, at) {
                return self.start_resync(base, "record length does not match its path");
            }
        }
        self.report.records_in += 1;
        match self.decode(ty, rec) {
            Some(ev) => {
                if let Event::Initialize { version, .. } = ev {
                    self.report.version = Some(version);
                }
                if let Event::CloseLog { .. } = ev {
                    self.report.closed_cleanly = true;
                }
                Step::Advance(len, Some(ev))
            }
            None => {
                self.skip(base, len as u64, "record too short for its type");
                Step::Advance(len, None)
            }
        }
    }

    fn note(&mut self, n: String) {
        if self.report.notes.len() < MAX_NOTES && !self.report.notes.contains(&n) {
            self.report.notes.push(n);
        }
    }

    /// The PROCEXEC layout, by the log's version: every 0x09 tree read
    /// (the 2020 tree, the 14-era trees, CheriBSD) declares the legacy
    /// `pl_start` + path@32 (`sys/sys/pmclog.h`); 0x0A trees add `pl_dynaddr`
    /// and put the path at 40. Without INITIALIZE, the record's length
    /// decides (the kernel sizes it to the path, see
    /// [`path_len_consistent`]); when both layouts fit, the legacy one is
    /// taken and the report says so.
    fn exec_layout_new(&mut self, r: &[u8]) -> bool {
        if let Some(v) = self.version {
            return v >> 24 >= 0x0A;
        }
        if r.len() < 16 || r.get(2).map(|&t| u32::from(t)) != Some(PMCLOG_TYPE_PROCEXEC) {
            return false;
        }
        match (path_len_consistent(r, 32), path_len_consistent(r, 40)) {
            (false, true) => true,
            (true, false) => false,
            _ => {
                self.note(
                    "PROCEXEC layout ambiguous without an INITIALIZE record: read as the \
                     legacy layout (path at 32)"
                        .into(),
                );
                false
            }
        }
    }

    /// The event of a record of known type `ty` whose length was checked;
    /// `None` when the record is too short for its type. One decoder per
    /// type.
    fn decode<'a>(&mut self, ty: u32, r: &'a [u8]) -> Option<Event<'a>> {
        let f = Fields::new(r);
        let tsc = f.u64(8)?;
        match ty {
            PMCLOG_TYPE_CLOSELOG => Some(Event::CloseLog { tsc }),
            PMCLOG_TYPE_DROPNOTIFY => Some(Event::DropNotify { tsc }),
            PMCLOG_TYPE_INITIALIZE => self.decode_initialize(&f, tsc),
            PMCLOG_TYPE_PMCALLOCATE => decode_pmc_allocate(&f, tsc),
            PMCLOG_TYPE_PMCALLOCATEDYN => decode_pmc_allocate_dyn(&f, tsc),
            PMCLOG_TYPE_PMCATTACH => decode_pmc_attach(&f, tsc),
            PMCLOG_TYPE_PMCDETACH => decode_pmc_detach(&f, tsc),
            PMCLOG_TYPE_PROCCSW => decode_proc_csw(&f, tsc),
            PMCLOG_TYPE_PROCEXEC => {
                let legacy = !self.exec_layout_new(r);
                decode_proc_exec(&f, tsc, legacy)
            }
            PMCLOG_TYPE_PROCEXIT => decode_proc_exit(&f, tsc),
            PMCLOG_TYPE_PROCFORK => decode_proc_fork(&f, tsc),
            PMCLOG_TYPE_SYSEXIT => decode_sys_exit(&f, tsc),
            PMCLOG_TYPE_USERDATA => decode_user_data(&f, tsc),
            PMCLOG_TYPE_MAP_IN => decode_map_in(&f, tsc),
            PMCLOG_TYPE_MAP_OUT => decode_map_out(&f, tsc),
            PMCLOG_TYPE_CALLCHAIN => decode_callchain(&f, tsc),
            PMCLOG_TYPE_THR_CREATE => decode_thr_create(&f, tsc),
            PMCLOG_TYPE_THR_EXIT => decode_thr_exit(&f, tsc),
            PMCLOG_TYPE_PROC_CREATE => decode_proc_create(&f, tsc),
            _ => None,
        }
    }

    /// INITIALIZE; its version decides the PROCEXEC layout from here on.
    fn decode_initialize<'a>(&mut self, f: &Fields<'a>, tsc: u64) -> Option<Event<'a>> {
        let version = f.u32(16)?;
        self.version = Some(version);
        Some(Event::Initialize {
            tsc,
            version,
            cputype: f.u32(20)?,
            tsc_freq: f.u64(24)?,
            ts_sec: f.i64(32)?,
            ts_nsec: f.i64(40)?,
            cpuid: f.cstr(48, Some(112)),
        })
    }
}

/// A resync that stopped at `at` before EOF: advance to there, or wait
/// for more input when nothing was passed.
fn advance_or_wait<'a>(at: usize) -> Step<'a> {
    if at > 0 {
        Step::Advance(at, None)
    } else {
        Step::NeedMore
    }
}

impl<'a> Parser<'a> {
    /// Start parsing; skips a `pmc record` prefix.
    ///
    /// # Errors
    /// [`HwpmcError::NotHwpmcLog`] when the input starts with neither.
    pub fn new(data: &'a [u8]) -> Result<Self, HwpmcError> {
        let mut p = Parser {
            data,
            pos: 0,
            core: Core::new(),
        };
        // Run through the start and the prefix (they produce no events).
        while matches!(
            p.core.phase,
            Phase::Start | Phase::PrefixHead | Phase::Prefix
        ) {
            let w = p.data.get(p.pos..).unwrap_or_default();
            match p.core.step(w, p.pos as u64, true)? {
                Step::Advance(n, _) => p.pos += n,
                Step::NeedMore | Step::End => break,
            }
        }
        Ok(p)
    }

    /// The report so far.
    pub fn report(&self) -> &ImportReport {
        &self.core.report
    }
}

/// Split a multipart payload into (callchain part, header + other parts).
/// `None` when the part lengths overrun the record.
pub(super) fn split_multipart(area: &[u8]) -> Option<(&[u8], &[u8])> {
    // PMC_MULTIPART_HEADER_ENTRIES (type, length in words) byte pairs.
    let mut hdr = ByteCursor::le(area.get(..PMC_MULTIPART_HEADER_LENGTH)?);
    let mut off = PMC_MULTIPART_HEADER_LENGTH;
    let mut chain = (0usize, 0usize);
    for _ in 0..PMC_MULTIPART_HEADER_ENTRIES {
        let ty = hdr.u8().ok()?;
        let words = usize::from(hdr.u8().ok()?);
        if ty == PMC_CC_MULTIPART_NONE {
            continue;
        }
        area.get(off..off + words * 8)?;
        if ty == PMC_CC_MULTIPART_CALLCHAIN {
            chain = (off, off + words * 8);
        }
        off += words * 8;
    }
    let pcs = area.get(chain.0..chain.1)?;
    // `extra` = the part header and the other parts. When the callchain is
    // the last part (the kernel's order) that is the prefix before it;
    // otherwise keep the whole payload so nothing is lost.
    let extra = if chain.1 == off && chain.0 > 0 {
        area.get(..chain.0)?
    } else {
        area.get(..off)?
    };
    Some((pcs, extra))
}

impl<'a> Iterator for Parser<'a> {
    type Item = Event<'a>;
    fn next(&mut self) -> Option<Event<'a>> {
        loop {
            let data: &'a [u8] = self.data;
            let w = data.get(self.pos..).unwrap_or_default();
            match self.core.step(w, self.pos as u64, true) {
                Ok(Step::Advance(n, ev)) => {
                    self.pos += n;
                    if ev.is_some() {
                        return ev;
                    }
                }
                // With the whole input there is never more to wait for.
                Ok(Step::NeedMore | Step::End) | Err(_) => return None,
            }
        }
    }
}
