//! FreeBSD hwpmc log import, and a kernel-format [`Encoder`].
//!
//! hwpmc writes a flat stream of native-endian, 4-byte-packed records to the
//! fd given to `PMC_OP_CONFIGURELOG` (`sys/sys/pmclog.h`; hwpmc.md §4).
//! [`Parser`] reads raw kernel records ([`Event`]; damage in its
//! documentation), one decoder per type in `decode.rs`; [`Importer`] (a log
//! in memory), [`StreamImporter`] (fed in chunks of any size as the kernel
//! writes them, at most [`MAX_BUFFERED`] bytes buffered) and [`convert`]
//! turn them into pmc-log [`Record`]s with an [`ImportReport`], one
//! conversion per type in `to_record.rs` (the table there); [`Encoder`]
//! writes the kernel's format (`encode.rs`), for fixtures and simulated
//! drivers; `consts.rs` holds the constants pmc-freebsd shares.
//!
//! Handled quirks: the `pmc record` `"PMCL"` file prefix (its SYSINFO chunk
//! fills the header's CPU model and OS release), both PROCEXEC layouts
//! (chosen by the log's version: 0x09 legacy, 0x0A current; by the record's
//! length without INITIALIZE), both PMC id layouts (`Converter::decode_id`),
//! multipart (IBS) callchains, merged `PMC_F_USERCALLCHAIN` chains, and
//! PMCALLOCATEDYN as the kernel writes it (reload count at 32, name at 40).

mod consts;
mod decode;
mod encode;
mod stream;
mod to_record;

pub use consts::*;
pub use encode::Encoder;
pub use stream::{ConvertReader, SharedQueue, StreamImporter, MAX_BUFFERED};

use decode::*;
use to_record::*;

use crate::bytes::{cstr, ByteCursor};
use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Write;

use crate::error::WriteError;
use crate::record::*;

/// An error that stops an import.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HwpmcError {
    /// The input does not start with an hwpmc record or a `pmc record` header.
    #[error("not an hwpmc log: first word is {word:#010x}; expected a record header with magic 0xEE in the top byte, or \"PMCL\" (0x504d434c) from `pmc record`. Was the file written by pmcstat -O?")]
    NotHwpmcLog {
        /// The first little-endian u32.
        word: u32,
    },
    /// INITIALIZE carries a version whose log layout this importer does not know.
    #[error("hwpmc log version {version:#010x} is not supported: only major 0x09 and 0x0A (16-byte record header) are; logs from FreeBSD before 12 use the old 12-byte header")]
    UnsupportedVersion {
        /// `pl_version`.
        version: u32,
    },
    /// Writing the converted log failed.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// A [`StreamImporter`] was used after an error had stopped it.
    #[error("the hwpmc import already stopped on an earlier error")]
    Stopped,
}

/// A region of the hwpmc stream that was skipped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// Byte offset in the input.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
    /// Why.
    pub reason: &'static str,
}

/// What the importer saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportReport {
    /// Kernel records parsed.
    pub records_in: u64,
    /// pmc-log records produced.
    pub records_out: u64,
    /// Records of types this importer does not know (skipped by length).
    pub unknown_types: u64,
    /// Damaged or truncated regions.
    pub skipped: Vec<Skipped>,
    /// `pl_version` of INITIALIZE, if seen.
    pub version: Option<u32>,
    /// True if the input had a `pmc record` "PMCL" prefix.
    pub pmc_record_prefix: bool,
    /// True if a CLOSELOG record was seen.
    pub closed_cleanly: bool,
    /// Damaged regions beyond the first [`MAX_SKIPPED_LISTED`], not listed
    /// in `skipped`.
    pub skipped_unlisted: u64,
    /// Bytes in the regions counted by `skipped_unlisted`.
    pub skipped_unlisted_bytes: u64,
    /// What the importer could not decide from the log alone, or decided
    /// from evidence other than the version (each distinct note once, at
    /// most [`MAX_NOTES`]): PMC id layout, PROCEXEC layout.
    pub notes: Vec<String>,
}

/// The most distinct notes an [`ImportReport`] keeps.
pub const MAX_NOTES: usize = 32;

impl ImportReport {
    /// Bytes skipped as damaged or truncated, listed or not.
    pub fn skipped_bytes(&self) -> u64 {
        self.skipped
            .iter()
            .fold(self.skipped_unlisted_bytes, |a, s| a.saturating_add(s.len))
    }
}

/// One raw kernel record, fields as in `sys/sys/pmclog.h`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[allow(missing_docs)] // Field names are the kernel's, minus `pl_`.
pub enum Event<'a> {
    CloseLog {
        tsc: u64,
    },
    DropNotify {
        tsc: u64,
    },
    Initialize {
        tsc: u64,
        version: u32,
        cputype: u32,
        tsc_freq: u64,
        ts_sec: i64,
        ts_nsec: i64,
        cpuid: &'a [u8],
    },
    PmcAllocate {
        tsc: u64,
        pmcid: u32,
        event: u32,
        flags: u32,
        rate: u64,
    },
    /// As the kernel writes it (`hwpmc_logging.c:pmclog_process_pmcallocate`):
    /// the reload count at 32, the name from 40; not as the struct declares.
    PmcAllocateDyn {
        tsc: u64,
        pmcid: u32,
        event: u32,
        flags: u32,
        rate: u64,
        evname: &'a [u8],
    },
    PmcAttach {
        tsc: u64,
        pmcid: u32,
        pid: i32,
        path: &'a [u8],
    },
    PmcDetach {
        tsc: u64,
        pmcid: u32,
        pid: i32,
    },
    ProcCsw {
        tsc: u64,
        value: u64,
        pmcid: u32,
        pid: i32,
        tid: i32,
    },
    /// `legacy`: the pre-PIE layout, where `base` is `pl_start` (entry) and `dyn_base` 0.
    ProcExec {
        tsc: u64,
        pid: i32,
        pmcid: u32,
        base: u64,
        dyn_base: u64,
        path: &'a [u8],
        legacy: bool,
    },
    ProcExit {
        tsc: u64,
        pmcid: u32,
        pid: i32,
        value: u64,
    },
    ProcFork {
        tsc: u64,
        oldpid: i32,
        newpid: i32,
    },
    SysExit {
        tsc: u64,
        pid: i32,
    },
    UserData {
        tsc: u64,
        userdata: u32,
    },
    MapIn {
        tsc: u64,
        pid: i32,
        start: u64,
        path: &'a [u8],
    },
    MapOut {
        tsc: u64,
        pid: i32,
        start: u64,
        end: u64,
    },
    /// `pcs`: the callchain (for multipart records, the CALLCHAIN part);
    /// `extra`: for multipart records, the 8-byte part header followed by
    /// the other parts, else empty.
    Callchain {
        tsc: u64,
        pid: i32,
        tid: i32,
        pmcid: u32,
        cpuflags: u32,
        pcs: Callchain<'a>,
        extra: &'a [u8],
    },
    ThrCreate {
        tsc: u64,
        tid: i32,
        pid: i32,
        flags: u32,
        tdname: &'a [u8],
    },
    ThrExit {
        tsc: u64,
        tid: i32,
    },
    ProcCreate {
        tsc: u64,
        pid: i32,
        flags: u32,
        pcomm: &'a [u8],
    },
}

/// The `u32` at `off` of `b`, if `b` holds it.
fn u32_at(b: &[u8], off: usize) -> Option<u32> {
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
fn allocated_dyn(mut r: Record<'_>) -> Record<'_> {
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
    core: Core,
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
const MAX_ITEM: usize = 8 + 0xFFFF;

/// `pmc record` prefix facts: (arch code, cpumodel, osrelease).
#[derive(Debug, Clone, Default)]
struct PrefixInfo {
    arch: u16,
    cpumodel: Vec<u8>,
    osrelease: Vec<u8>,
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
enum Step<'a> {
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
struct Core {
    phase: Phase,
    version: Option<u32>,
    report: ImportReport,
    prefix: Option<PrefixInfo>,
}

impl Core {
    fn new() -> Self {
        Core {
            phase: Phase::Start,
            version: None,
            report: ImportReport::default(),
            prefix: None,
        }
    }

    fn is_done(&self) -> bool {
        matches!(self.phase, Phase::Done)
    }

    fn skip(&mut self, offset: u64, len: u64, reason: &'static str) {
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
    fn step<'a>(&mut self, w: &'a [u8], base: u64, eof: bool) -> Result<Step<'a>, HwpmcError> {
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
fn split_multipart(area: &[u8]) -> Option<(&[u8], &[u8])> {
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

fn text(b: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(b)
}

/// pmc-log's `FLAG_*` bits and the hwpmc `PMC_F_*` flag each stands for:
/// the one mapping between them, read both ways ([`map_flags`],
/// [`pmc_f_flags`]). `FLAG_DWARF_CALLCHAIN` has no hwpmc flag (FreeBSD
/// unwinds by frame pointers only).
const FLAG_TO_PMC_F: [(u32, u32); 5] = [
    (FLAG_DESCENDANTS, PMC_F_DESCENDANTS),
    (FLAG_CALLCHAIN, PMC_F_CALLCHAIN),
    (FLAG_LOG_PROCEXIT, PMC_F_LOG_PROCEXIT),
    (FLAG_LOG_PROCCSW, PMC_F_LOG_PROCCSW),
    (FLAG_USERCALLCHAIN, PMC_F_USERCALLCHAIN),
];

/// hwpmc `PMC_F_*` flags to pmc-log `FLAG_*` bits (flags without a
/// pmc-log bit, as `PMC_F_EV_PMU`, are dropped).
pub fn map_flags(f: u32) -> u32 {
    FLAG_TO_PMC_F
        .iter()
        .filter(|&&(_, pmc_f)| f & pmc_f != 0)
        .fold(0, |out, &(bit, _)| out | bit)
}

/// pmc-log `FLAG_*` bits to hwpmc `PMC_F_*` flags, the inverse of
/// [`map_flags`] (bits without an hwpmc flag are dropped).
pub fn pmc_f_flags(log: u32) -> u32 {
    FLAG_TO_PMC_F
        .iter()
        .filter(|&&(bit, _)| log & bit != 0)
        .fold(0, |out, &(_, pmc_f)| out | pmc_f)
}

/// A `key=0x..` value of an imported PMC's native configuration.
fn native_hex(native: &str, key: &str) -> Option<u32> {
    native
        .split(',')
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix("=0x"))
        .and_then(|v| u32::from_str_radix(v, 16).ok())
}

/// The kernel's event code and `PMC_F_*` flags of a PMC imported from an
/// hwpmc log, as its PMCALLOCATE(DYN) record wrote them (kept in
/// [`PmcDescriptor::native_config`] as `event=0x..,flags=0x..`); `None`
/// for a PMC of pmc's own logs.
pub fn imported_allocation(p: &PmcDescriptor<'_>) -> Option<(u32, u32)> {
    let native = &*p.native_config;
    native_hex(native, "event").zip(native_hex(native, "flags"))
}

/// A PMC's `PMC_F_*` flags as hwpmc's `pl_flags` carries them: an imported
/// PMC's as its record wrote them, else its `FLAG_*` bits mapped
/// ([`pmc_f_flags`]). What `pmcstat -R` prints and libpmc's pmclog gives a
/// C client, for the same log.
pub fn pl_flags(p: &PmcDescriptor<'_>) -> u32 {
    imported_allocation(p).map_or_else(|| pmc_f_flags(p.flags), |(_, f)| f)
}

/// Names of the few fixed-code events the log can name without the
/// pmu-events table of the recording machine.
fn event_name(event: u32) -> Option<&'static str> {
    Some(match event {
        0x1000 => "TSC",
        0x2000 => "ibs-fetch",
        0x2001 => "ibs-op",
        0x14800 => "MPERF",
        0x14801 => "APERF",
        _ => return None,
    })
}

/// Converts an hwpmc log into pmc-log [`Record`]s, the [`Header`] first.
///
/// ```
/// use pmc_log::hwpmc::{Encoder, Importer};
/// use pmc_log::record::Record;
/// let mut e = Encoder::new(Vec::new());
/// e.initialize(0, 0x0A01_0000, 0x9D, 1_000_000_000, 0, 0, "GenuineIntel-6-9A-4")?;
/// e.map_in(1, 42, 0x400000, b"/bin/sh")?;
/// let log = e.into_inner();
/// let recs: Vec<Record> = Importer::new(&log)?.collect();
/// assert!(matches!(&recs[1], Record::Map(m) if m.path.as_bytes() == b"/bin/sh"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Importer<'a> {
    parser: Parser<'a>,
    pending: Option<Event<'a>>,
    started: bool,
    conv: Converter,
    error: Option<HwpmcError>,
}

impl<'a> Importer<'a> {
    /// Start importing `data`.
    ///
    /// # Errors
    /// [`HwpmcError::NotHwpmcLog`].
    pub fn new(data: &'a [u8]) -> Result<Self, HwpmcError> {
        let parser = Parser::new(data)?;
        let conv = Converter::new(parser.core.prefix.clone());
        Ok(Importer {
            parser,
            pending: None,
            started: false,
            conv,
            error: None,
        })
    }

    /// What was parsed and skipped so far.
    pub fn report(&self) -> ImportReport {
        let mut r = self.parser.core.report.clone();
        r.records_out = self.conv.out;
        self.conv.add_notes(&mut r);
        r
    }

    /// An error that stopped the import early (unsupported version), if any.
    pub fn error(&self) -> Option<&HwpmcError> {
        self.error.as_ref()
    }
}

/// Event-to-record conversion state shared by [`Importer`] and
/// [`StreamImporter`].
#[derive(Debug, Default)]
struct Converter {
    prefix: Option<PrefixInfo>,
    /// Sampling rate (0: counting) and `PMC_F_*` flags per PMC id (at most
    /// [`MAX_TRACKED_PMCS`]).
    rates: HashMap<u32, (u64, u32)>,
    /// Records produced, the header included.
    out: u64,
    /// `pl_version` of INITIALIZE.
    version: Option<u32>,
    /// The PMC id layout the log's allocation records showed, if any did.
    layout: Option<IdLayout>,
    notes: Vec<String>,
    /// The parent of each process a PROCFORK named (at most
    /// [`MAX_TRACKED_FORKS`]), until an exec or exit record for it: to
    /// merge the kernel's duplicate PROCFORKs (see [`Converter::skip`]).
    forks: HashMap<i32, i32>,
}

/// The most forked processes the importer remembers for merging duplicate
/// PROCFORK records; past it the map starts afresh (a duplicate may then
/// pass through as a second, identical fork record).
pub const MAX_TRACKED_FORKS: usize = 65_536;

impl Converter {
    fn new(prefix: Option<PrefixInfo>) -> Self {
        Converter {
            prefix,
            ..Converter::default()
        }
    }

    /// Whether `ev` repeats what an earlier record already said, so it
    /// produces no record. hwpmc writes one PROCFORK per `PMC_F_DESCENDANTS`
    /// PMC attached to the parent, not one per owner (`hwpmc_mod.c`
    /// `pmc_process_fork()`: `pmclog_process_procfork(po, ...)` inside the
    /// loop over the parent's PMCs): a fork already seen for the same child
    /// and parent, with no exec or exit of the child since, is merged.
    fn skip(&mut self, ev: &Event<'_>) -> bool {
        match *ev {
            Event::ProcFork { oldpid, newpid, .. } => {
                if self.forks.get(&newpid) == Some(&oldpid) {
                    self.note(
                        "duplicate PROCFORK records (hwpmc writes one per PMC_F_DESCENDANTS PMC, \
                         hwpmc_mod.c pmc_process_fork) were merged into one fork each"
                            .to_owned(),
                    );
                    return true;
                }
                if self.forks.len() >= MAX_TRACKED_FORKS {
                    self.forks.clear();
                }
                self.forks.insert(newpid, oldpid);
            }
            Event::ProcExec { pid, .. }
            | Event::ProcExit { pid, .. }
            | Event::SysExit { pid, .. } => {
                self.forks.remove(&pid);
            }
            _ => {}
        }
        false
    }

    fn track(&mut self, pmcid: u32, rate: u64, flags: u32) {
        if self.rates.len() < MAX_TRACKED_PMCS || self.rates.contains_key(&pmcid) {
            self.rates.insert(pmcid, (rate, flags));
        }
    }

    fn note(&mut self, n: String) {
        if self.notes.len() < MAX_NOTES && !self.notes.contains(&n) {
            self.notes.push(n);
        }
    }

    fn add_notes(&self, r: &mut ImportReport) {
        for n in &self.notes {
            if r.notes.len() < MAX_NOTES && !r.notes.contains(n) {
                r.notes.push(n.clone());
            }
        }
    }

    /// Whether `id` read in `layout` is a PMC hwpmc can have allocated:
    /// mode at most TC, a class some tree defines, and the CPU field
    /// PMC_CPU_ANY exactly for process (virtual) modes
    /// (`hwpmc_mod.c` PMC_OP_PMCALLOCATE: "Virtual PMCs should only ask for
    /// a default CPU. System mode PMCs need to specify a non-default CPU"),
    /// with a reload count for sampling modes at least the kernel's floor
    /// of 1 (`MAX(1000, pm_count)` in the 2020 tree, `MAX(1, pmc_mincount)`
    /// later).
    fn consistent(layout: IdLayout, id: u32, rate: u64) -> Option<PmcIdFields> {
        let f = layout.split(id);
        let virtual_mode = f.mode == PMC_MODE_TS || f.mode == PMC_MODE_TC;
        let sampling = f.mode == PMC_MODE_SS || f.mode == PMC_MODE_TS;
        (f.mode <= PMC_MODE_TC
            && f.class <= PMC_CLASS_LAST_KNOWN
            && virtual_mode == (f.cpu == PMC_ID_CPU_ANY)
            && (!sampling || rate >= 1))
            .then_some(f)
    }

    /// The fields of an allocated PMC's id, decoded from the evidence in the
    /// log: the layouts under which the id is consistent (see
    /// [`Converter::consistent`]), the layout earlier records showed, and
    /// the version (0x0A: new; 0x09: FreeBSD's own trees use the old one,
    /// CheriBSD's the new). `None` when no layout fits. Every decision not
    /// forced by the id itself is noted in the report.
    fn decode_id(&mut self, id: u32, rate: u64) -> Option<PmcIdFields> {
        let old = Self::consistent(IdLayout::Old, id, rate);
        let new = Self::consistent(IdLayout::New, id, rate);
        let by_version = match self.version.map(|v| v >> 24) {
            Some(0x09) => Some(IdLayout::Old),
            Some(v) if v >= 0x0A => Some(IdLayout::New),
            _ => None,
        };
        let (layout, fields) = match (old, new) {
            (Some(o), Some(n)) if o == n => return Some(o),
            (Some(o), None) => (IdLayout::Old, o),
            (None, Some(n)) => (IdLayout::New, n),
            (Some(o), Some(n)) => {
                let pick = self.layout.or(by_version).unwrap_or(IdLayout::New);
                self.note(format!(
                    "PMC id {id:#010x} reads as a valid PMC in both id layouts; read in the \
                     {pick:?} layout ({})",
                    if self.layout.is_some() {
                        "as earlier allocations showed"
                    } else {
                        "by the log version; ambiguous"
                    }
                ));
                return Some(if pick == IdLayout::Old { o } else { n });
            }
            (None, None) => {
                self.note(format!(
                    "PMC id {id:#010x} is valid in neither id layout: its scope and mode are \
                     unknown (taken from its sampling rate)"
                ));
                return None;
            }
        };
        match self.layout {
            None => {
                self.layout = Some(layout);
                if by_version.is_some_and(|v| v != layout) {
                    self.note(format!(
                        "PMC ids use the {layout:?} id layout although the log version {:#010x} \
                         usually has the other (as CheriBSD's 0x09 kernels do)",
                        self.version.unwrap_or(0)
                    ));
                }
            }
            Some(l) if l != layout => self.note(format!(
                "PMC id {id:#010x} fits only the {layout:?} id layout, earlier ones only the \
                 {l:?} layout: the log is inconsistent"
            )),
            Some(_) => {}
        }
        Some(fields)
    }

    /// The log's header from the first event, and that event back when it
    /// is not INITIALIZE (it is then the first ordinary record).
    fn first<'a>(
        &mut self,
        ev: Option<Event<'a>>,
    ) -> Result<(Header<'a>, Option<Event<'a>>), HwpmcError> {
        let r = match ev {
            Some(ev @ Event::Initialize { .. }) => {
                if let Event::Initialize { version, .. } = ev {
                    let major = version >> 24;
                    if major != 0x09 && major != 0x0A {
                        return Err(HwpmcError::UnsupportedVersion { version });
                    }
                    self.version = Some(version);
                }
                (self.header(Some(&ev)), None)
            }
            other => (self.header(None), other),
        };
        self.out += 1;
        Ok(r)
    }

    fn header<'a>(&self, init: Option<&Event<'a>>) -> Header<'a> {
        let (arch, cpu_model, release): (&str, Cow<'a, str>, Cow<'a, str>) = match &self.prefix {
            Some(p) => (
                match p.arch {
                    1 => "amd64",
                    2 => "arm64",
                    3 => "powerpc64",
                    4 => "riscv64",
                    5 => "arm",
                    _ => "",
                },
                text(&p.cpumodel).into_owned().into(),
                text(&p.osrelease).into_owned().into(),
            ),
            None => ("", Cow::Borrowed(""), Cow::Borrowed("")),
        };
        let mut h = Header {
            os: "FreeBSD".into(),
            kernel_release: release,
            arch: arch.into(),
            cpu_model,
            clock: Clock::Tsc,
            backend: "hwpmc (imported)".into(),
            ..Header::default()
        };
        if let Some(Event::Initialize {
            tsc,
            version,
            cputype,
            tsc_freq,
            ts_sec,
            ts_nsec,
            cpuid,
        }) = init
        {
            h.cpuid = text(cpuid);
            h.ticks_per_second = *tsc_freq;
            h.start_wall_ns = ts_sec
                .saturating_mul(1_000_000_000)
                .saturating_add(*ts_nsec);
            h.start_time = *tsc;
            h.backend =
                format!("hwpmc version={version:#010x} cputype={cputype:#x} (imported)").into();
        }
        h
    }

    /// The pmc-log record of one event: one conversion per event type.
    fn convert<'a>(&mut self, ev: Event<'a>) -> Record<'a> {
        match ev {
            Event::Initialize { version, .. } => self.initialize(version, &ev),
            Event::CloseLog { tsc } => close(tsc, self.out),
            Event::DropNotify { tsc } => lost(tsc),
            Event::PmcAllocate {
                tsc,
                pmcid,
                event,
                flags,
                rate,
            } => self.pmc_allocate(tsc, pmcid, fixed_event_name(event), event, flags, rate),
            Event::PmcAllocateDyn {
                tsc,
                pmcid,
                event,
                flags,
                rate,
                evname,
            } => allocated_dyn(self.pmc_allocate(tsc, pmcid, text(evname), event, flags, rate)),
            Event::PmcAttach {
                tsc,
                pmcid,
                pid,
                path,
            } => attach(tsc, pmcid, pid, path),
            Event::PmcDetach { tsc, pmcid, pid } => detach(tsc, pmcid, pid),
            Event::ProcCsw {
                tsc,
                value,
                pmcid,
                pid,
                tid,
            } => counter(tsc, pmcid, pid, tid, CounterKind::ContextSwitch, value),
            Event::ProcExec {
                tsc,
                pid,
                pmcid,
                base,
                dyn_base,
                path,
                legacy,
            } => proc_exec(tsc, pid, pmcid, base, dyn_base, path, legacy),
            Event::ProcExit {
                tsc,
                pmcid,
                pid,
                value,
            } => counter(tsc, pmcid, pid, -1, CounterKind::ProcessExit, value),
            Event::ProcFork {
                tsc,
                oldpid,
                newpid,
            } => fork(tsc, oldpid, newpid),
            Event::SysExit { tsc, pid } => exit(tsc, pid),
            Event::UserData { tsc, userdata } => user_data(tsc, userdata),
            Event::MapIn {
                tsc,
                pid,
                start,
                path,
            } => map_in(tsc, pid, start, path),
            Event::MapOut {
                tsc,
                pid,
                start,
                end,
            } => map_out(tsc, pid, start, end),
            Event::Callchain {
                tsc,
                pid,
                tid,
                pmcid,
                cpuflags,
                pcs,
                extra,
            } => self.sample(tsc, pmcid, pid, tid, cpuflags, pcs, extra),
            Event::ThrCreate {
                tsc,
                tid,
                pid,
                flags,
                tdname,
            } => thr_create(tsc, pid, tid, flags, tdname),
            Event::ThrExit { tsc, tid } => thr_exit(tsc, tid),
            Event::ProcCreate {
                tsc,
                pid,
                flags,
                pcomm,
            } => proc_create(tsc, pid, flags, pcomm),
        }
    }

    /// INITIALIZE: the log's header, its version kept (the PROCEXEC layout depends on it).
    fn initialize<'a>(&mut self, version: u32, ev: &Event<'a>) -> Record<'a> {
        self.version = Some(version);
        Record::Header(self.header(Some(ev)))
    }

    /// A PMC allocation: its rate and flags remembered for its samples.
    fn pmc_allocate<'a>(
        &mut self,
        tsc: u64,
        pmcid: u32,
        name: Cow<'a, str>,
        event: u32,
        flags: u32,
        rate: u64,
    ) -> Record<'a> {
        self.track(pmcid, rate, flags);
        self.pmc(tsc, pmcid, name, event, flags, rate)
    }

    /// A CALLCHAIN: the period is the PMC's rate; see [`kernel_frames`].
    #[allow(clippy::too_many_arguments)] // The record's fields.
    fn sample<'a>(
        &self,
        tsc: u64,
        pmcid: u32,
        pid: i32,
        tid: i32,
        cpuflags: u32,
        pcs: Callchain<'a>,
        extra: &'a [u8],
    ) -> Record<'a> {
        let (period, pmc_flags) = self.rates.get(&pmcid).copied().unwrap_or((0, 0));
        Record::Sample(Sample {
            time: tsc,
            pmc_id: pmcid,
            pid,
            tid,
            cpu: Some(cpuflags >> 16),
            period,
            kernel_frames: kernel_frames(&pcs, cpuflags, pmc_flags),
            callchain: pcs,
            raw: extra.into(),
        })
    }

    fn pmc<'a>(
        &mut self,
        tsc: u64,
        pmcid: u32,
        name: Cow<'a, str>,
        event: u32,
        flags: u32,
        rate: u64,
    ) -> Record<'a> {
        let cpu_bits = pmcid >> 20;
        let (sampling, scope) = match self.decode_id(pmcid, rate) {
            Some(f) => (
                f.mode == PMC_MODE_SS || f.mode == PMC_MODE_TS,
                if f.mode == PMC_MODE_SS || f.mode == PMC_MODE_SC {
                    Scope::System
                } else {
                    Scope::Process
                },
            ),
            // The CPU field is in the same place in both layouts.
            None => (
                rate > 0,
                if cpu_bits == PMC_ID_CPU_ANY {
                    Scope::Process
                } else {
                    Scope::System
                },
            ),
        };
        Record::Pmc(PmcDescriptor {
            time: tsc,
            pmc_id: pmcid,
            event_spec: name.clone(),
            canonical_name: name,
            scope,
            cpu: (scope == Scope::System && cpu_bits != 0xFFF).then_some(cpu_bits),
            mode: if sampling {
                Mode::SamplingPeriod(rate)
            } else {
                Mode::Counting
            },
            flags: map_flags(flags),
            native_config: format!("event={event:#x},flags={flags:#x},rate={rate}").into(),
        })
    }
}

impl<'a> Iterator for Importer<'a> {
    type Item = Record<'a>;
    fn next(&mut self) -> Option<Record<'a>> {
        if self.error.is_some() {
            return None;
        }
        if !self.started {
            self.started = true;
            let first = self.parser.next();
            match self.conv.first(first) {
                Ok((h, rest)) => {
                    self.pending = rest;
                    return Some(Record::Header(h));
                }
                Err(e) => {
                    self.error = Some(e);
                    return None;
                }
            }
        }
        let ev = loop {
            let ev = match self.pending.take() {
                Some(ev) => ev,
                None => self.parser.next()?,
            };
            if !self.conv.skip(&ev) {
                break ev;
            }
        };
        let rec = self.conv.convert(ev);
        self.conv.out += 1;
        Some(rec)
    }
}

/// Import an hwpmc log into a pmc-log file written to `out`: a
/// [`StreamImporter`] fed the whole input at once.
///
/// A CLOSELOG in the input becomes the clean-close marker; without one the
/// output is flushed but left "not closed cleanly", like its input.
///
/// # Errors
/// [`HwpmcError::NotHwpmcLog`], [`HwpmcError::UnsupportedVersion`],
/// [`HwpmcError::Write`].
pub fn convert<W: Write>(data: &[u8], out: W) -> Result<(W, ImportReport), HwpmcError> {
    let mut s = StreamImporter::new(out);
    s.feed(data)?;
    s.finish()
}
