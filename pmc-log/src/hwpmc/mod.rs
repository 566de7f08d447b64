//! FreeBSD hwpmc log import, and a kernel-format [`Encoder`].
//!
//! hwpmc writes a flat stream of native-endian, 4-byte-packed records to the
//! fd given to `PMC_OP_CONFIGURELOG` (`sys/sys/pmclog.h`; hwpmc.md §4).
//! [`Parser`] (`parser.rs`) reads raw kernel records ([`Event`]; damage in
//! its documentation), one decoder per type in `decode.rs`; [`Importer`]
//! (`import.rs`: a log in memory), [`StreamImporter`] (fed in chunks of any size as the kernel
//! writes them, at most [`MAX_BUFFERED`] bytes buffered) and [`convert`]
//! turn them into pmc-log [`Record`]s with an [`ImportReport`], one
//! conversion per type in `to_record.rs` (the table there); [`Encoder`]
//! writes the kernel's format (`encode.rs`), for fixtures and simulated
//! drivers; `consts.rs` holds the constants pmc-freebsd shares, `flags.rs`
//! the mapping of hwpmc's `PMC_F_*` flags to pmc-log's.
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

mod flags;
mod import;
mod parser;
use flags::event_name;
pub use flags::{imported_allocation, map_flags, pl_flags, pmc_f_flags};
use import::Converter;
pub use import::{Importer, MAX_TRACKED_FORKS};
use parser::{split_multipart, Core, Step, MAX_ITEM};
pub use parser::{Parser, MAX_SKIPPED_LISTED, MAX_TRACKED_PMCS};

pub use consts::*;
pub use encode::Encoder;
pub use stream::{ConvertReader, SharedQueue, StreamImporter, MAX_BUFFERED};

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
