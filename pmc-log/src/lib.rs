//! # pmc-log: one sample-log format for perf_event and hwpmc
//!
//! [`Writer`] writes a log of [`Record`]s ([`record`]); [`Reader`], [`StreamReader`] and
//! [`open_any`] read one back with a [`ReadReport`]. [`hwpmc`] imports FreeBSD's kernel log,
//! [`export`] writes text, folded stacks, JSON and perf.data, [`bytes`] is the shared cursor.
//!
//! # Details
//!
//! pmc-log is the file format the `pmc` backends write when sampling and the
//! frontends (`pmcstat -R`) read. It is specified in `FORMAT.md` (in the
//! crate directory) in enough detail to write a reader in another language.
//!
//! # Brief overview
//!
//! - [`record`]: the record model ([`Record`], [`record::Sample`], ...),
//!   shared by both backends. Serde-serializable.
//! - [`Writer`]: streaming writer over any `io::Write`; block-framed,
//!   CRC32C-checked, no allocation per record.
//! - [`Reader`]: zero-copy reader over `&[u8]` (or a memory map). Records
//!   borrow the input; callchains are views over the raw bytes.
//! - [`StreamReader`]: the same over `io::Read`, for pipes and live files.
//! - [`ReadReport`]: what a reader skipped (offset, length, reason) and
//!   whether the log was closed cleanly. Damage is reported, not an error.
//! - [`open_any`]: a log of either format, told by its magic ([`detect`]):
//!   pmc-log as it is, a FreeBSD hwpmc log converted.
//! - [`hwpmc`]: import FreeBSD's hwpmc kernel log, and [`hwpmc::Encoder`] to
//!   produce genuine kernel-format streams (fixtures, simulated drivers).
//! - [`export`]: `pmcstat -R`-style text, folded stacks, JSON Lines, perf.data.
//! - [`bytes`]: the bounded byte cursor every binary decoder of the
//!   workspace reads with (this crate's, the hwpmc importer, the perf record
//!   parser in pmc-linux, hwpmc's ABI structs in pmc-freebsd).
//!
//! ```
//! use pmc_log::record::{Callchain, Header, Record, Sample};
//! use pmc_log::{Reader, Writer};
//!
//! let mut w = Writer::new(Vec::new(), &Header { os: "Linux".into(), ..Header::default() })?;
//! let frames = [0xffff_ffff_8100_1234u64, 0x55_5555_1000];
//! w.write(&Record::Sample(Sample {
//!     time: 100, pmc_id: 0, pid: 42, tid: 42, cpu: Some(0), period: 65536,
//!     callchain: Callchain::from_frames(&frames), kernel_frames: 1,
//!     raw: Default::default(),
//! }))?;
//! let file = w.finish()?;
//!
//! let reader = Reader::new(&file)?;
//! assert_eq!(reader.header().map(|h| h.os.into_owned()), Some("Linux".to_string()));
//! let mut records = reader.records();
//! let n = records.by_ref().filter(|r| matches!(r, Record::Sample(_))).count();
//! assert_eq!(n, 1);
//! assert!(records.report().closed_cleanly);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # If you know hwpmc / perf already
//!
//! | pmc-log | hwpmc log (pmclog(3)) | perf.data |
//! |---|---|---|
//! | [`record::Header`] | `INITIALIZE` + `pmc record` SYSINFO | file header + features |
//! | [`record::PmcDescriptor`] | `PMCALLOCATE`, `PMCALLOCATEDYN` | `perf_event_attr` |
//! | [`record::Sample`] | `CALLCHAIN` | `PERF_RECORD_SAMPLE` |
//! | [`record::Map`] / [`record::Unmap`] | `MAP_IN` / `MAP_OUT` | `MMAP2` |
//! | [`record::Comm`], [`record::Exec`] | `PROCEXEC` | `COMM` |
//! | [`record::Counter`] | `PROCEXIT`, `PROCCSW` | `READ` |
//! | [`record::Lost`] | `DROPNOTIFY` | `LOST` |
//! | [`record::UserData`] | `USERDATA` (`PMC_OP_WRITELOG`) | none |
//! | [`record::Close`] | `CLOSELOG` | `FINISHED_ROUND` (sort of) |
//!
//! The crate has no unsafe code and builds on every OS.
#![warn(unreachable_pub, unnameable_types)]
#![forbid(unsafe_code)]

pub mod any;
pub mod bytes;
mod codec;
pub mod error;
pub mod escape;
pub mod export;
pub mod format;
pub mod hwpmc;
pub mod read;
pub mod record;
pub mod tryvec;
pub mod write;

pub use any::{detect, open_any, AnyLog, LogFormat, OpenError};
pub use error::{ReadError, WriteError};
pub use read::{ReadReport, Reader, RecordIter, SkipReason, Skipped, StreamReader};
pub use record::Record;
pub use tryvec::TryVec;
pub use write::Writer;
