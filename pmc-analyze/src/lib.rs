//! # pmc-analyze: symbolized reports over pmc-log sample logs
//!
//! A [`pmc_log`] log becomes a [`Profile`] (stacks resolved by the [`Symbolizer`]), then the
//! reports of `pmcstat -R`: [`callgraph`], [`flame`], [`top`], [`gmon`], [`callgrind`],
//! [`pprof`], [`printlog`], [`annotate`]. Files are created through [`output`]; problems found
//! on the way are [`Warning`]s, failures [`Error`]s.
//!
//! # Details
//!
//! This crate turns a [`pmc_log`] log (from the Linux perf_event backend or
//! an imported FreeBSD hwpmc log) into the reports of `pmcstat -R`:
//!
//! - **Symbolization** ([`Symbolizer`]): sampled addresses to functions and,
//!   where DWARF exists, `file:line`, from the log's `Map`/`Exec`/`Comm`
//!   records, the executables and shared objects (ELF `.symtab`/`.dynsym`,
//!   PLT stubs named `func@plt` from the `.rela.plt` jump slots as perf
//!   names them, separate debug files, DWARF through `addr2line`), and the
//!   kernel through `/proc/kallsyms` (or a saved copy, or a `vmlinux`). Build-ids in the log are checked against the
//!   files; a mismatch is reported ([`Warning::BuildIdMismatch`]) and the
//!   object's frames are shown as `[object]` rather than mis-symbolized.
//! - **Aggregation** ([`Profile`]): distinct stacks with sample and period
//!   counts, per PMC and command.
//! - **Reports**: a call graph, top-down (the default) or in FreeBSD
//!   `pmcstat -G`'s callee-first layout ([`callgraph`]), gprof `gmon.out` files per object
//!   ([`gmon`], `pmcstat -g`), callgrind files for `callgrind_annotate` and
//!   KCachegrind ([`callgrind`], `pmcstat -F`), the record listing of
//!   `pmcstat -R` ([`printlog`]), folded stacks and SVG flame graphs
//!   ([`flame`], through `inferno`), top-N tables by function and
//!   object as text, JSON and CSV ([`top`]), and the per-sample address
//!   listings of `pmcstat -m` and `-a` ([`annotate`]), and a gzipped
//!   pprof `profile.proto` for `go tool pprof` ([`pprof`]).
//!
//! ```no_run
//! use pmc_analyze::{AnalyzeOptions, Profile};
//! use pmc_analyze::callgraph::{write_callgraph, CallGraphOptions, Order};
//! use pmc_analyze::flame::{write_flamegraph, write_folded, FlameGraphOptions, FoldedOptions};
//! use pmc_analyze::top::{TopOptions, TopReport};
//!
//! let log = std::fs::read("pmc.log")?;
//! let profile = Profile::from_log(&log, AnalyzeOptions::default())?;
//! for w in &profile.warnings {
//!     eprintln!("warning: {w}");
//! }
//! let mut out = std::io::stdout().lock();
//! // pmcstat -G: sampled functions first, then their callers. (The default,
//! // CallGraphOptions::default(), is top-down: outermost callers first.)
//! let callees_first = CallGraphOptions { order: Order::Callees, ..Default::default() };
//! write_callgraph(&profile, &callees_first, &mut out)?;
//! write_folded(&profile, &FoldedOptions::default(), &mut out)?;          // --folded
//! let mut svg = std::fs::File::create("flame.svg")?;
//! write_flamegraph(&profile, &FlameGraphOptions::default(), &mut svg)?;  // --flamegraph
//! TopReport::build(&profile, &TopOptions::default()).write_text(&mut out)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! For a log arriving through a pipe, use [`Profile::from_stream`], or feed
//! [`ProfileBuilder::add`] record by record and call
//! [`ProfileBuilder::finish`]:
//!
//! ```
//! use pmc_analyze::callgraph::{write_callgraph, CallGraphOptions};
//! use pmc_analyze::flame::{write_folded, FoldedOptions};
//! use pmc_analyze::{AnalyzeOptions, Kallsyms, ProfileBuilder};
//! use pmc_log::record::{Callchain, Comm, Record, Sample};
//!
//! let mut b = ProfileBuilder::new(AnalyzeOptions::default());
//! // Kernel symbols from a saved kallsyms (here: made up).
//! b.symbolizer_mut().set_kallsyms(Kallsyms::parse(
//!     "ffffffff81000000 T do_syscall\nffffffff81000100 T vfs_read\nffffffff81000200 T end\n",
//! ));
//! b.add(&Record::Comm(Comm { time: 0, pid: 7, tid: 7, exec: true, comm: "cat".into() }));
//! for leaf in [0xffff_ffff_8100_0110u64, 0xffff_ffff_8100_0120, 0xffff_ffff_8100_0010] {
//!     let frames = [leaf, 0xffff_ffff_8100_0020];
//!     b.add(&Record::Sample(Sample {
//!         time: 1, pmc_id: 0, pid: 7, tid: 7, cpu: Some(0), period: 1000,
//!         callchain: Callchain::from_frames(&frames), kernel_frames: 2,
//!         raw: Default::default(),
//!     }));
//! }
//! let profile = b.finish();
//!
//! let mut folded = Vec::new();
//! write_folded(&profile, &FoldedOptions::default(), &mut folded)?;
//! assert_eq!(
//!     String::from_utf8(folded)?,
//!     "cat;do_syscall_[k];do_syscall_[k] 1\ncat;do_syscall_[k];vfs_read_[k] 2\n",
//! );
//!
//! // The default order is top-down (Order::Callers), pmcstat's --callgraph-order caller;
//! // pmcstat -G's own default is Order::Callees.
//! let mut graph = Vec::new();
//! write_callgraph(&profile, &CallGraphOptions::default(), &mut graph)?;
//! assert_eq!(
//!     String::from_utf8(graph)?,
//!     "@ pmc0 [3 samples]\n\n\
//!      100.00%  [3]  do_syscall @ [kernel.kallsyms]\n\
//!      \x20 66.67%  [2]  vfs_read @ [kernel.kallsyms]\n\
//!      \x20 33.33%  [1]  do_syscall @ [kernel.kallsyms]\n",
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Nothing here panics on bad input: a damaged log is skipped as the reader
//! reports, and unreadable or foreign objects leave their frames
//! unsymbolized with a [`Warning`].
#![warn(unreachable_pub, unnameable_types)]
#![deny(unsafe_code)]

pub mod annotate;

/// The deepest callchain a report keeps: 512 frames, hwpmc's own limit
/// (`kern.hwpmc.callchaindepth`) and four times perf's default
/// (`kernel.perf_event_max_stack`, 127). A deeper sample keeps its 511
/// innermost frames and a root frame `[truncated]`, as an unwind that
/// stopped short does; [`Warning::DeepStacks`] counts them. This bounds a
/// report's memory and size by the log's sample count, not by one sample's
/// depth (a 1M-frame sample cost hundreds of MB in `-G`, flame graphs and
/// pprof).
///
/// ```
/// assert_eq!(pmc_analyze::MAX_STACK_DEPTH, 512);
/// ```
pub const MAX_STACK_DEPTH: usize = 512;

pub mod callgraph;
pub mod callgrind;
pub mod error;
pub mod file;
pub mod flame;
pub mod gmon;
pub mod kallsyms;
pub mod object;
pub mod output;
pub mod pprof;
pub mod printlog;
pub mod profile;
pub mod symbolize;
#[allow(unsafe_code)] // read-only file mappings, with SAFETY comments
mod sys;
pub mod top;

pub use error::{Error, Result};
pub use kallsyms::Kallsyms;
pub use object::ElfObject;
pub use profile::{
    AnalyzeOptions, Filter, PmcInfo, Profile, ProfileBuilder, SampledPc, Stack, Stats, Weight,
};
pub use symbolize::{
    FuncId, Function, KernelSymbols, MappedRange, MappingDetails, ObjectInfo, ResolvedPc,
    SourceFrame, SymbolizeOptions, Symbolizer, MAX_OPEN_OBJECTS,
};

use std::fmt;

/// Something the analysis could not do as asked; the reports are still
/// produced, with the affected frames unsymbolized.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Warning {
    /// An object named by the log could not be read or parsed.
    ObjectUnreadable {
        /// Path from the log.
        path: String,
        /// Why.
        reason: String,
    },
    /// The file at the path is a different build than the one sampled.
    BuildIdMismatch {
        /// Path from the log.
        path: String,
        /// Build-id recorded in the log.
        expected: String,
        /// Build-id of the file found.
        found: String,
    },
    /// The log has a build-id but the file has none: used unverified.
    BuildIdUnverified {
        /// Path from the log.
        path: String,
        /// Build-id recorded in the log.
        expected: String,
    },
    /// Kernel symbols could not be read.
    KallsymsUnavailable {
        /// The kallsyms file.
        path: String,
        /// Why.
        reason: String,
    },
    /// The log was taken on another kernel; `/proc/kallsyms` was not used.
    KallsymsSkipped {
        /// Kernel release in the log header.
        log_release: String,
        /// Release of the running kernel.
        running_release: String,
    },
    /// The log reports lost samples.
    LostSamples {
        /// Number of lost-sample records.
        records: u64,
        /// Samples lost (0: unknown).
        count: u64,
    },
    /// Damaged parts of the log were skipped.
    DamagedLog {
        /// Bytes skipped.
        skipped_bytes: u64,
    },
    /// The log has no clean-close marker (the writer did not finish).
    NotClosed,
    /// An object was truncated while mapped: its bytes from `offset` on read as zeros (its
    /// symbols there may be missing).
    TruncatedObject {
        /// The object, as the log names it.
        path: String,
        /// The file that was cut (the object or its separate debug file).
        file: String,
        /// Where (a page boundary).
        offset: u64,
    },
    /// A path the log (or an object's `.gnu_debuglink`) names would lead outside the root
    /// (`-r DIR`) or out of the debug directories: refused, not read.
    OutsideRoot {
        /// The object, as the log names it.
        path: String,
        /// What was refused: the log's path, or the debug link's name.
        named: String,
    },
    /// A debug section of an object was not read (a compressed section declaring more than
    /// is left of [`object::DEBUG_INFLATE_BUDGET`], or whose data does not inflate as
    /// declared): the object's file:line information is missing.
    DebugSectionSkipped {
        /// The object, as the log names it.
        path: String,
        /// The section and why (`.debug_str: it declares ...`).
        section: String,
    },
    /// Samples whose callchain was deeper than [`MAX_STACK_DEPTH`]: cut to
    /// their innermost frames under a `[truncated]` root.
    DeepStacks {
        /// Samples cut.
        samples: u64,
        /// Their deepest callchain, in frames.
        deepest: u64,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::ObjectUnreadable { path, reason } => {
                write!(f, "{path}: cannot read symbols ({reason}); its frames are shown as [{}]", symbolize::basename(path))
            }
            Warning::BuildIdMismatch { path, expected, found } => write!(
                f,
                "{path}: build-id {found} differs from the sampled build {expected} \
                 (the file changed since the log was taken); not symbolized"
            ),
            Warning::BuildIdUnverified { path, expected } => write!(
                f,
                "{path}: has no build-id to check against the log's {expected}; symbolized unverified"
            ),
            Warning::KallsymsUnavailable { path, reason } => {
                write!(f, "{path}: kernel symbols unavailable: {reason}")
            }
            Warning::KallsymsSkipped { log_release, running_release } => write!(
                f,
                "log taken on kernel {log_release}, this is {running_release}: \
                 /proc/kallsyms not used (pass a saved kallsyms file)"
            ),
            Warning::LostSamples { records, count: 0 } => {
                write!(f, "samples were lost ({records} drop notices, count unknown)")
            }
            Warning::LostSamples { records, count } => {
                write!(f, "{count} samples lost ({records} lost-sample records)")
            }
            Warning::DamagedLog { skipped_bytes } => {
                write!(f, "log damaged: {skipped_bytes} bytes skipped")
            }
            Warning::NotClosed => write!(f, "log not closed cleanly (the writer did not finish)"),
            Warning::TruncatedObject { path, file, offset } => write!(
                f,
                "{path}: {file} was truncated while being read: from byte {offset} on it read \
                 as zeros, so some of its frames may be unsymbolized"
            ),
            Warning::OutsideRoot { path, named } if path == named => write!(
                f,
                "{path}: leads outside the root (its `..` climbs above -r DIR); refused, not read"
            ),
            Warning::OutsideRoot { path, named } => write!(
                f,
                "{path}: separate debug file {named:?} leads outside the root or the debug \
                 directories (a .gnu_debuglink must be a plain file name); refused, not read"
            ),
            Warning::DebugSectionSkipped { path, section } => write!(
                f,
                "{path}: debug section {section}; skipped, so its file:line information is missing"
            ),
            Warning::DeepStacks { samples, deepest } => write!(
                f,
                "{samples} samples have callchains deeper than {MAX_STACK_DEPTH} frames \
                 (the deepest {deepest} frames): each keeps its {} innermost frames under [truncated]",
                MAX_STACK_DEPTH - 1
            ),
        }
    }
}
