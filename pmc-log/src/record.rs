//! The record model shared by every backend and frontend.
//!
//! [`Record`] is one enum over every kind: [`Header`], [`PmcDescriptor`], [`Sample`], [`Comm`],
//! [`Exec`], [`Map`], [`Fork`], ...; [`Callchain`] and [`Bytes`] borrow or own their bytes;
//! `FLAG_*` are a descriptor's flags, [`TRUNCATED_FRAME`] ends a cut chain. Details follow.
//!
//! One [`Record`] type serves both the zero-copy reader (fields borrow the
//! input through [`Cow::Borrowed`], [`Bytes`] and [`Callchain`]) and owned
//! use (`Record<'static>`, obtained with [`Record::into_owned`]). All types
//! derive serde `Serialize`/`Deserialize`; deserializing always produces the
//! owned form.
//!
//! Timestamps (`time`) are in the unit given by the file's [`Header`]
//! (`clock` and `ticks_per_second`). Process and thread ids are `i32`, with
//! `-1` meaning "unknown / not applicable" (the kernel on FreeBSD, for
//! example). Optional CPU numbers and PMC ids are `Option<u32>`.
//!
//! ```
//! use pmc_log::record::{Record, Sample, Callchain};
//! let frames = [0xffff_ffff_8100_0000u64, 0x40_1000, 0x40_2000];
//! let s = Record::Sample(Sample {
//!     time: 1, pmc_id: 0, pid: 42, tid: 42, cpu: Some(0), period: 65536,
//!     callchain: Callchain::from_frames(&frames), kernel_frames: 1,
//!     raw: Default::default(),
//! });
//! assert_eq!(s.time(), 1);
//! let owned: Record<'static> = s.clone().into_owned();
//! assert_eq!(owned, s);
//! ```

use std::borrow::Cow;
use std::fmt;

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

/// Flag bit of [`PmcDescriptor::flags`]: the PMC follows descendants of the
/// target process (hwpmc `PMC_F_DESCENDANTS`, perf `inherit`).
pub const FLAG_DESCENDANTS: u32 = 1;
/// Flag bit of [`PmcDescriptor::flags`]: samples carry callchains
/// (hwpmc `PMC_F_CALLCHAIN`, perf `PERF_SAMPLE_CALLCHAIN`).
pub const FLAG_CALLCHAIN: u32 = 2;
/// Flag bit of [`PmcDescriptor::flags`]: log the count when a process exits
/// (hwpmc `PMC_F_LOG_PROCEXIT`, `pmcstat -E`).
pub const FLAG_LOG_PROCEXIT: u32 = 4;
/// Flag bit of [`PmcDescriptor::flags`]: log the count at each context switch
/// (hwpmc `PMC_F_LOG_PROCCSW`, `pmcstat -W`).
pub const FLAG_LOG_PROCCSW: u32 = 8;
/// Flag bit of [`PmcDescriptor::flags`]: the user part of each callchain was unwound from a
/// captured user stack with DWARF call-frame information (pmc's `CallGraph::Dwarf`, perf's
/// `--call-graph dwarf`), not by following frame pointers.
pub const FLAG_DWARF_CALLCHAIN: u32 = 16;
/// Flag bit of [`PmcDescriptor::flags`]: callchains of samples taken in the kernel go on
/// into user space (hwpmc `PMC_F_USERCALLCHAIN`, `pmcstat -U`); without it they hold the
/// kernel's frames only.
pub const FLAG_USERCALLCHAIN: u32 = 32;

/// A callchain entry that is not an address: the unwinder stopped before the stack's root
/// (no unwind information, the captured stack ended, a frame did not check out), so frames
/// beyond it are unknown. It is only ever the last entry. Readers that do not know it see an
/// address that resolves to nothing.
///
/// ```
/// assert_eq!(pmc_log::record::TRUNCATED_FRAME, u64::MAX);
/// ```
pub const TRUNCATED_FRAME: u64 = u64::MAX;

/// Flag bit of [`Exec::flags`]: the record came from a legacy hwpmc
/// PROCEXEC layout; `base` holds the entry address and `dyn_base` is 0.
pub const EXEC_LEGACY_ENTRY: u32 = 1;

/// Raw bytes that usually hold text (paths, command names).
///
/// Paths on Linux and FreeBSD are arbitrary bytes, so the format stores
/// them as bytes. Serde writes valid UTF-8 as a string and anything else as
/// an array of byte values; it reads either.
///
/// ```
/// use pmc_log::record::Bytes;
/// let b = Bytes::from("/bin/sh");
/// assert_eq!(b.as_bytes(), b"/bin/sh");
/// assert_eq!(b.to_string_lossy(), "/bin/sh");
/// ```
#[derive(Clone, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Bytes<'a>(pub Cow<'a, [u8]>);

impl<'a> Bytes<'a> {
    /// Borrow the given slice.
    pub const fn borrowed(b: &'a [u8]) -> Self {
        Bytes(Cow::Borrowed(b))
    }
    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
    /// The bytes as text, replacing invalid UTF-8 with U+FFFD.
    pub fn to_string_lossy(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.0)
    }
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// Copy into an owned value with no borrow.
    pub fn into_owned(self) -> Bytes<'static> {
        Bytes(Cow::Owned(self.0.into_owned()))
    }
}

impl fmt::Debug for Bytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.to_string_lossy())
    }
}

impl<'a> From<&'a str> for Bytes<'a> {
    fn from(s: &'a str) -> Self {
        Bytes(Cow::Borrowed(s.as_bytes()))
    }
}
impl<'a> From<&'a [u8]> for Bytes<'a> {
    fn from(s: &'a [u8]) -> Self {
        Bytes(Cow::Borrowed(s))
    }
}
impl From<Vec<u8>> for Bytes<'static> {
    fn from(s: Vec<u8>) -> Self {
        Bytes(Cow::Owned(s))
    }
}
impl From<String> for Bytes<'static> {
    fn from(s: String) -> Self {
        Bytes(Cow::Owned(s.into_bytes()))
    }
}

#[cfg(feature = "serde")]
impl Serialize for Bytes<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(&self.0) {
            Ok(text) => s.serialize_str(text),
            Err(_) => s.collect_seq(self.0.iter()),
        }
    }
}

#[cfg(feature = "serde")]
impl<'de, 'a> Deserialize<'de> for Bytes<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Bytes<'static>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an array of bytes")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Bytes::from(v.as_bytes().to_vec()))
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Self::Value, E> {
                Ok(Bytes::from(v.to_vec()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(b) = seq.next_element::<u8>()? {
                    out.push(b);
                }
                Ok(Bytes::from(out))
            }
        }
        d.deserialize_any(V)
            .map(|b| Bytes(Cow::Owned(b.0.into_owned())))
    }
}

/// A callchain: instruction addresses, leaf (the sampled PC) first.
///
/// In the zero-copy reader this is a view over the raw little-endian bytes
/// of the file; [`Callchain::iter`] decodes frames on the fly with no
/// allocation. Producers build one from a `&[u64]` or a `Vec<u64>`.
///
/// ```
/// use pmc_log::record::Callchain;
/// let c = Callchain::from_frames(&[1, 2, 3]);
/// assert_eq!(c.len(), 3);
/// assert_eq!(c.iter().collect::<Vec<_>>(), vec![1, 2, 3]);
/// assert_eq!(c.get(2), Some(3));
/// ```
#[derive(Clone)]
pub struct Callchain<'a>(Repr<'a>);

#[derive(Clone)]
enum Repr<'a> {
    /// Little-endian u64 values; length is a multiple of 8.
    Raw(&'a [u8]),
    Frames(Cow<'a, [u64]>),
}

impl Default for Callchain<'_> {
    fn default() -> Self {
        Callchain(Repr::Frames(Cow::Borrowed(&[])))
    }
}

impl<'a> Callchain<'a> {
    /// Borrow a slice of frames.
    pub fn from_frames(frames: &'a [u64]) -> Self {
        Callchain(Repr::Frames(Cow::Borrowed(frames)))
    }
    /// Take ownership of a vector of frames.
    pub fn from_vec(frames: Vec<u64>) -> Callchain<'static> {
        Callchain(Repr::Frames(Cow::Owned(frames)))
    }
    /// View raw little-endian bytes as frames. Trailing bytes that do not
    /// make a whole frame are ignored.
    pub fn from_le_bytes(raw: &'a [u8]) -> Self {
        let whole = raw.len() / 8 * 8;
        Callchain(Repr::Raw(raw.get(..whole).unwrap_or_default()))
    }
    /// Number of frames.
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Raw(b) => b.len() / 8,
            Repr::Frames(f) => f.len(),
        }
    }
    /// True when there are no frames.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The frame at `i` (0 = leaf), if any.
    pub fn get(&self, i: usize) -> Option<u64> {
        match &self.0 {
            Repr::Raw(b) => {
                let start = i.checked_mul(8)?;
                let chunk = b.get(start..start.checked_add(8)?)?;
                let arr: [u8; 8] = chunk.try_into().ok()?;
                Some(u64::from_le_bytes(arr))
            }
            Repr::Frames(f) => f.get(i).copied(),
        }
    }
    /// Iterate over the frames, leaf first.
    pub fn iter(&self) -> CallchainIter<'_> {
        match &self.0 {
            Repr::Raw(b) => CallchainIter(IterRepr::Raw(b.chunks_exact(8))),
            Repr::Frames(f) => CallchainIter(IterRepr::Frames(f.iter())),
        }
    }
    /// Copy the frames into a vector.
    pub fn to_vec(&self) -> Vec<u64> {
        self.iter().collect()
    }
    /// The raw little-endian bytes, when this is a view over a file.
    pub fn raw_bytes(&self) -> Option<&'a [u8]> {
        match self.0 {
            Repr::Raw(b) => Some(b),
            Repr::Frames(_) => None,
        }
    }
    /// Copy into an owned value with no borrow.
    pub fn into_owned(self) -> Callchain<'static> {
        match self.0 {
            Repr::Frames(Cow::Owned(v)) => Callchain(Repr::Frames(Cow::Owned(v))),
            other => Callchain::from_vec(Callchain(other).to_vec()),
        }
    }
}

/// Iterator over the frames of a [`Callchain`].
pub struct CallchainIter<'c>(IterRepr<'c>);

enum IterRepr<'c> {
    Raw(std::slice::ChunksExact<'c, u8>),
    Frames(std::slice::Iter<'c, u64>),
}

impl Iterator for CallchainIter<'_> {
    type Item = u64;
    #[inline]
    fn next(&mut self) -> Option<u64> {
        match &mut self.0 {
            IterRepr::Raw(c) => {
                let chunk = c.next()?;
                let mut arr = [0u8; 8];
                arr.copy_from_slice(chunk);
                Some(u64::from_le_bytes(arr))
            }
            IterRepr::Frames(f) => f.next().copied(),
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            IterRepr::Raw(c) => c.size_hint(),
            IterRepr::Frames(f) => f.size_hint(),
        }
    }
}

impl ExactSizeIterator for CallchainIter<'_> {}

impl PartialEq for Callchain<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}
impl Eq for Callchain<'_> {}

impl fmt::Debug for Callchain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.iter().map(|a| format!("{a:#x}")))
            .finish()
    }
}

#[cfg(feature = "serde")]
impl Serialize for Callchain<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

#[cfg(feature = "serde")]
impl<'de, 'a> Deserialize<'de> for Callchain<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<u64>::deserialize(d).map(|v| Callchain(Repr::Frames(Cow::Owned(v))))
    }
}

/// The clock that timestamps were taken from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum Clock {
    /// Not known (code 0).
    Unknown,
    /// `CLOCK_REALTIME` (code 1).
    Realtime,
    /// `CLOCK_MONOTONIC` (code 2), perf's `use_clockid` default choice.
    Monotonic,
    /// `CLOCK_MONOTONIC_RAW` (code 3).
    MonotonicRaw,
    /// `CLOCK_BOOTTIME` (code 4).
    Boottime,
    /// Raw time-stamp counter ticks (code 5), as in hwpmc's `pl_tsc`.
    Tsc,
    /// perf's default `local_clock()` (code 6), nanoseconds since boot-ish.
    PerfLocal,
}

impl Clock {
    /// The on-disk code.
    pub fn code(self) -> u8 {
        match self {
            Clock::Unknown => 0,
            Clock::Realtime => 1,
            Clock::Monotonic => 2,
            Clock::MonotonicRaw => 3,
            Clock::Boottime => 4,
            Clock::Tsc => 5,
            Clock::PerfLocal => 6,
        }
    }
    /// Decode an on-disk code; unknown codes map to [`Clock::Unknown`].
    pub fn from_code(c: u8) -> Clock {
        match c {
            1 => Clock::Realtime,
            2 => Clock::Monotonic,
            3 => Clock::MonotonicRaw,
            4 => Clock::Boottime,
            5 => Clock::Tsc,
            6 => Clock::PerfLocal,
            _ => Clock::Unknown,
        }
    }
}

/// The file header: what produced the log, on which host, with which clock.
///
/// It is always the first record of a file.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Header<'a> {
    /// Operating system, e.g. `"Linux"` or `"FreeBSD"`.
    pub os: Cow<'a, str>,
    /// Kernel release, e.g. `"6.1.0-18-amd64"`.
    pub kernel_release: Cow<'a, str>,
    /// Machine architecture, e.g. `"x86_64"` or `"amd64"`.
    pub arch: Cow<'a, str>,
    /// Human-readable CPU model (`/proc/cpuinfo` model name, `hw.model`).
    pub cpu_model: Cow<'a, str>,
    /// Machine-readable CPU id (`GenuineIntel-6-55-4`, hwpmc's `kern.hwpmc.cpuid`).
    pub cpuid: Cow<'a, str>,
    /// Number of CPUs.
    pub cpu_count: u32,
    /// Page size in bytes.
    pub page_size: u32,
    /// Clock of the `time` fields.
    pub clock: Clock,
    /// Timestamp ticks per second: 1_000_000_000 for nanoseconds, the TSC
    /// frequency for [`Clock::Tsc`], 0 when unknown.
    pub ticks_per_second: u64,
    /// Wall-clock time at the start of the log, nanoseconds since the Unix epoch.
    pub start_wall_ns: i64,
    /// Timestamp (in the clock above) taken at the same moment as `start_wall_ns`.
    pub start_time: u64,
    /// The producer, e.g. `"pmc-linux 0.1.0"` or `"hwpmc 0x0a010000 (imported)"`.
    pub backend: Cow<'a, str>,
}

impl Default for Header<'_> {
    fn default() -> Self {
        Header {
            os: Cow::Borrowed(""),
            kernel_release: Cow::Borrowed(""),
            arch: Cow::Borrowed(""),
            cpu_model: Cow::Borrowed(""),
            cpuid: Cow::Borrowed(""),
            cpu_count: 0,
            page_size: 0,
            clock: Clock::Unknown,
            ticks_per_second: 0,
            start_wall_ns: 0,
            start_time: 0,
            backend: Cow::Borrowed(""),
        }
    }
}

/// Whether a PMC measures one process (and maybe its descendants) or a CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Scope {
    /// Process (thread) scope: hwpmc TC/TS, perf with a pid.
    Process,
    /// System (CPU) scope: hwpmc SC/SS, perf with pid -1 and a CPU.
    System,
}

/// Counting or sampling, and the sampling rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Mode {
    /// Counting only.
    Counting,
    /// Sample every N events.
    SamplingPeriod(u64),
    /// Sample N times per second (perf `-F`).
    SamplingFrequency(u64),
}

/// A PMC descriptor: what a PMC id in later records means.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct PmcDescriptor<'a> {
    /// When the PMC was allocated.
    pub time: u64,
    /// The id used by [`Sample::pmc_id`] and [`Counter::pmc_id`].
    pub pmc_id: u32,
    /// The event spec as the user wrote it (`"cycles:u"`, `"instructions,usr"`).
    pub event_spec: Cow<'a, str>,
    /// The canonical event name (`"cpu-cycles"`).
    pub canonical_name: Cow<'a, str>,
    /// Process or system scope.
    pub scope: Scope,
    /// The CPU for system-scope PMCs, `None` for any CPU.
    pub cpu: Option<u32>,
    /// Counting or sampling.
    pub mode: Mode,
    /// `FLAG_*` bits of this module.
    pub flags: u32,
    /// Backend-native configuration, `key=value` pairs separated by commas
    /// (`"type=0,config=0x0"` on Linux, `"event=0x1000,flags=0x80"` for hwpmc).
    pub native_config: Cow<'a, str>,
}

/// One sample.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Sample<'a> {
    /// Timestamp.
    pub time: u64,
    /// The PMC that fired.
    pub pmc_id: u32,
    /// Process id (-1 when unknown, e.g. the kernel).
    pub pid: i32,
    /// Thread id (-1 when unknown).
    pub tid: i32,
    /// CPU, when known.
    pub cpu: Option<u32>,
    /// Sampling period (events since the last sample), or weight. 0 if unknown.
    pub period: u64,
    /// Instruction addresses, leaf first.
    pub callchain: Callchain<'a>,
    /// The first `kernel_frames` frames are kernel addresses; the rest are user.
    pub kernel_frames: u32,
    /// Extra raw data (perf `PERF_SAMPLE_RAW`, hwpmc multipart IBS words), usually empty.
    pub raw: Bytes<'a>,
}

impl Sample<'_> {
    /// The same sample owning its callchain and raw data.
    pub fn into_owned(self) -> Sample<'static> {
        Sample {
            time: self.time,
            pmc_id: self.pmc_id,
            pid: self.pid,
            tid: self.tid,
            cpu: self.cpu,
            period: self.period,
            callchain: self.callchain.into_owned(),
            kernel_frames: self.kernel_frames,
            raw: self.raw.into_owned(),
        }
    }
}

/// A command name change, or an exec seen as a new command name (perf `COMM`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Comm<'a> {
    /// Timestamp.
    pub time: u64,
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// True when the name changed because of an exec.
    pub exec: bool,
    /// The new command name.
    pub comm: Bytes<'a>,
}

/// A process exec'd a new image (hwpmc `PROCEXEC`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Exec<'a> {
    /// Timestamp.
    pub time: u64,
    /// Process id.
    pub pid: i32,
    /// The PMC that logged it, if any.
    pub pmc_id: Option<u32>,
    /// Runtime linker load address (hwpmc `pl_base`, AT_BASE); with
    /// [`EXEC_LEGACY_ENTRY`] set, the entry address instead.
    pub base: u64,
    /// Load base of a PIE executable (hwpmc `pl_dyn`), 0 if not PIE/unknown.
    pub dyn_base: u64,
    /// `EXEC_*` bits.
    pub flags: u32,
    /// Path of the new image.
    pub path: Bytes<'a>,
}

/// A process forked.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Fork {
    /// Timestamp.
    pub time: u64,
    /// Parent process id.
    pub parent_pid: i32,
    /// Parent thread id (-1 if unknown).
    pub parent_tid: i32,
    /// Child process id.
    pub child_pid: i32,
    /// Child thread id (-1 if unknown).
    pub child_tid: i32,
}

/// A process exited (hwpmc `SYSEXIT`, perf `EXIT` of the main thread).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Exit {
    /// Timestamp.
    pub time: u64,
    /// Process id.
    pub pid: i32,
    /// Thread id (-1 if unknown).
    pub tid: i32,
}

/// A thread was created, or existed when the log started (hwpmc `THR_CREATE`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ThreadCreate<'a> {
    /// Timestamp.
    pub time: u64,
    /// Process id (-1 if unknown).
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// Backend flags (hwpmc `pl_flags`).
    pub flags: u32,
    /// Thread name.
    pub name: Bytes<'a>,
}

/// A thread exited.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ThreadExit {
    /// Timestamp.
    pub time: u64,
    /// Process id (-1 if unknown).
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
}

/// A process was created, or existed when the log started (hwpmc `PROC_CREATE`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ProcessCreate<'a> {
    /// Timestamp.
    pub time: u64,
    /// Process id.
    pub pid: i32,
    /// Backend flags (hwpmc `pl_flags`).
    pub flags: u32,
    /// Command name.
    pub comm: Bytes<'a>,
}

/// An executable mapping appeared (perf `MMAP2`, hwpmc `MAP_IN`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Map<'a> {
    /// Timestamp.
    pub time: u64,
    /// Process id (-1 for the kernel).
    pub pid: i32,
    /// Start address.
    pub start: u64,
    /// Length in bytes, 0 when unknown (hwpmc `MAP_IN` has no length).
    pub len: u64,
    /// File offset of `start`.
    pub pgoff: u64,
    /// Build id, empty when unknown.
    pub build_id: Bytes<'a>,
    /// Path of the mapped file.
    pub path: Bytes<'a>,
}

/// An executable mapping went away (hwpmc `MAP_OUT`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Unmap {
    /// Timestamp.
    pub time: u64,
    /// Process id.
    pub pid: i32,
    /// Start address.
    pub start: u64,
    /// End address (exclusive).
    pub end: u64,
}

/// A PMC was attached to a process (hwpmc `PMCATTACH`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Attach<'a> {
    /// Timestamp.
    pub time: u64,
    /// PMC id.
    pub pmc_id: u32,
    /// Process id.
    pub pid: i32,
    /// Executable path of the process.
    pub path: Bytes<'a>,
}

/// A PMC was detached from a process (hwpmc `PMCDETACH`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Detach {
    /// Timestamp.
    pub time: u64,
    /// PMC id.
    pub pmc_id: u32,
    /// Process id.
    pub pid: i32,
}

/// When a [`Counter`] value was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum CounterKind {
    /// Periodic reading (code 0).
    Interval,
    /// At process exit (code 1; hwpmc `PROCEXIT`, log-procexit).
    ProcessExit,
    /// At a context switch, the delta for the time slice (code 2; hwpmc `PROCCSW`).
    ContextSwitch,
}

/// A counter value.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Counter {
    /// Timestamp.
    pub time: u64,
    /// PMC id.
    pub pmc_id: u32,
    /// Process id (-1 if not applicable).
    pub pid: i32,
    /// Thread id (-1 if not applicable).
    pub tid: i32,
    /// CPU, when known.
    pub cpu: Option<u32>,
    /// Why the value was logged.
    pub kind: CounterKind,
    /// The count.
    pub value: u64,
    /// Nanoseconds the counter was enabled (0 if unknown).
    pub time_enabled: u64,
    /// Nanoseconds the counter was actually counting (0 if unknown).
    pub time_running: u64,
}

/// Samples were lost (perf `LOST`, hwpmc `DROPNOTIFY`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Lost {
    /// Timestamp.
    pub time: u64,
    /// The PMC that lost samples, when known.
    pub pmc_id: Option<u32>,
    /// The CPU, when known.
    pub cpu: Option<u32>,
    /// How many were lost; 0 means "some, count unknown" (hwpmc).
    pub count: u64,
}

/// Opaque user data (hwpmc `PMC_OP_WRITELOG`, whose payload is 4 bytes LE).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct UserData<'a> {
    /// Timestamp.
    pub time: u64,
    /// Process that wrote it (-1 if unknown).
    pub pid: i32,
    /// The data.
    pub data: Bytes<'a>,
}

/// [`UserStack::arch`]: x86-64 (registers `rip`, `rsp`, `rbp`).
pub const ARCH_X86_64: u16 = 1;
/// [`UserStack::arch`]: AArch64 (registers `pc`, `sp`, `x29`, `x30`).
pub const ARCH_AARCH64: u16 = 2;
/// [`UserStack::arch`] of the machine this is built for ([`ARCH_X86_64`], [`ARCH_AARCH64`],
/// or 0 for an architecture the format has no code for).
pub const ARCH_NATIVE: u16 = if cfg!(target_arch = "aarch64") {
    ARCH_AARCH64
} else if cfg!(target_arch = "x86_64") {
    ARCH_X86_64
} else {
    0
};

/// The user registers and user stack of the sample written just before it (same time, PMC,
/// pid and tid), kept so that the sample's user callchain can be unwound when the log is read
/// (pmc's `CallGraph::DwarfRaw`): the sample itself holds the kernel frames and the user PC.
/// Kilobytes per sample, as in perf.data; the default (`CallGraph::Dwarf`) unwinds while
/// recording and writes no such record.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct UserStack<'a> {
    /// Timestamp (the sample's).
    pub time: u64,
    /// The PMC that fired.
    pub pmc_id: u32,
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// [`ARCH_X86_64`] or [`ARCH_AARCH64`]: which registers `pc`/`sp`/`fp`/`lr` are.
    pub arch: u16,
    /// Program counter.
    pub pc: u64,
    /// Stack pointer: `stack` starts at this address.
    pub sp: u64,
    /// Frame pointer.
    pub fp: u64,
    /// Link register (0 on x86-64).
    pub lr: u64,
    /// The user stack from `sp` up.
    pub stack: Bytes<'a>,
}

/// The clean-close marker: the writer finished normally.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Close {
    /// Timestamp.
    pub time: u64,
    /// Number of records written before this one (the header included).
    pub records: u64,
}

/// A record of the log. See `FORMAT.md` for the on-disk encoding.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "type", rename_all = "snake_case"))]
#[non_exhaustive]
pub enum Record<'a> {
    /// File header (kind 1).
    Header(Header<'a>),
    /// PMC descriptor (kind 2).
    Pmc(PmcDescriptor<'a>),
    /// Sample (kind 3).
    Sample(Sample<'a>),
    /// Command name (kind 4).
    Comm(Comm<'a>),
    /// Exec (kind 5).
    Exec(Exec<'a>),
    /// Fork (kind 6).
    Fork(Fork),
    /// Process exit (kind 7).
    Exit(Exit),
    /// Thread creation (kind 8).
    ThreadCreate(ThreadCreate<'a>),
    /// Thread exit (kind 9).
    ThreadExit(ThreadExit),
    /// Process creation (kind 10).
    ProcessCreate(ProcessCreate<'a>),
    /// Executable mapping (kind 11).
    Map(Map<'a>),
    /// Mapping removal (kind 12).
    Unmap(Unmap),
    /// PMC attached to a process (kind 13).
    Attach(Attach<'a>),
    /// PMC detached from a process (kind 14).
    Detach(Detach),
    /// Counter value (kind 15).
    Counter(Counter),
    /// Lost samples (kind 16).
    Lost(Lost),
    /// User data (kind 17).
    UserData(UserData<'a>),
    /// A sample's user registers and stack, for unwinding when read.
    UserStack(UserStack<'a>),
    /// Clean-close marker (kind 18).
    Close(Close),
}

fn own(c: Cow<'_, str>) -> Cow<'static, str> {
    Cow::Owned(c.into_owned())
}

impl Record<'_> {
    /// The record's timestamp (`start_time` for the header).
    pub fn time(&self) -> u64 {
        match self {
            Record::Header(r) => r.start_time,
            Record::Pmc(r) => r.time,
            Record::Sample(r) => r.time,
            Record::Comm(r) => r.time,
            Record::Exec(r) => r.time,
            Record::Fork(r) => r.time,
            Record::Exit(r) => r.time,
            Record::ThreadCreate(r) => r.time,
            Record::ThreadExit(r) => r.time,
            Record::ProcessCreate(r) => r.time,
            Record::Map(r) => r.time,
            Record::Unmap(r) => r.time,
            Record::Attach(r) => r.time,
            Record::Detach(r) => r.time,
            Record::Counter(r) => r.time,
            Record::Lost(r) => r.time,
            Record::UserData(r) => r.time,
            Record::UserStack(r) => r.time,
            Record::Close(r) => r.time,
        }
    }

    /// The on-disk kind code (see [`crate::format::kind`]).
    pub fn kind(&self) -> u16 {
        use crate::format::kind;
        match self {
            Record::Header(_) => kind::HEADER,
            Record::Pmc(_) => kind::PMC,
            Record::Sample(_) => kind::SAMPLE,
            Record::Comm(_) => kind::COMM,
            Record::Exec(_) => kind::EXEC,
            Record::Fork(_) => kind::FORK,
            Record::Exit(_) => kind::EXIT,
            Record::ThreadCreate(_) => kind::THREAD_CREATE,
            Record::ThreadExit(_) => kind::THREAD_EXIT,
            Record::ProcessCreate(_) => kind::PROCESS_CREATE,
            Record::Map(_) => kind::MAP,
            Record::Unmap(_) => kind::UNMAP,
            Record::Attach(_) => kind::ATTACH,
            Record::Detach(_) => kind::DETACH,
            Record::Counter(_) => kind::COUNTER,
            Record::Lost(_) => kind::LOST,
            Record::UserData(_) => kind::USER_DATA,
            Record::UserStack(_) => kind::USER_STACK,
            Record::Close(_) => kind::CLOSE,
        }
    }

    /// Copy every borrowed field, giving a record that owns its data.
    pub fn into_owned(self) -> Record<'static> {
        match self {
            Record::Header(h) => Record::Header(own_header(h)),
            Record::Pmc(p) => Record::Pmc(own_pmc(p)),
            Record::Sample(s) => Record::Sample(s.into_owned()),
            Record::Comm(c) => Record::Comm(Comm {
                comm: c.comm.into_owned(),
                ..c
            }),
            Record::Exec(e) => Record::Exec(Exec {
                path: e.path.into_owned(),
                ..e
            }),
            Record::Fork(f) => Record::Fork(f),
            Record::Exit(e) => Record::Exit(e),
            Record::ThreadCreate(t) => Record::ThreadCreate(ThreadCreate {
                name: t.name.into_owned(),
                ..t
            }),
            Record::ThreadExit(t) => Record::ThreadExit(t),
            Record::ProcessCreate(p) => Record::ProcessCreate(ProcessCreate {
                comm: p.comm.into_owned(),
                ..p
            }),
            Record::Map(m) => Record::Map(own_map(m)),
            Record::Unmap(u) => Record::Unmap(u),
            Record::Attach(a) => Record::Attach(Attach {
                path: a.path.into_owned(),
                ..a
            }),
            Record::Detach(d) => Record::Detach(d),
            Record::Counter(c) => Record::Counter(c),
            Record::Lost(l) => Record::Lost(l),
            Record::UserData(u) => Record::UserData(UserData {
                data: u.data.into_owned(),
                ..u
            }),
            Record::UserStack(u) => Record::UserStack(UserStack {
                stack: u.stack.into_owned(),
                ..u
            }),
            Record::Close(c) => Record::Close(c),
        }
    }
}

fn own_header(h: Header<'_>) -> Header<'static> {
    Header {
        os: own(h.os),
        kernel_release: own(h.kernel_release),
        arch: own(h.arch),
        cpu_model: own(h.cpu_model),
        cpuid: own(h.cpuid),
        cpu_count: h.cpu_count,
        page_size: h.page_size,
        clock: h.clock,
        ticks_per_second: h.ticks_per_second,
        start_wall_ns: h.start_wall_ns,
        start_time: h.start_time,
        backend: own(h.backend),
    }
}

fn own_pmc(p: PmcDescriptor<'_>) -> PmcDescriptor<'static> {
    PmcDescriptor {
        time: p.time,
        pmc_id: p.pmc_id,
        event_spec: own(p.event_spec),
        canonical_name: own(p.canonical_name),
        scope: p.scope,
        cpu: p.cpu,
        mode: p.mode,
        flags: p.flags,
        native_config: own(p.native_config),
    }
}

fn own_map(m: Map<'_>) -> Map<'static> {
    Map {
        time: m.time,
        pid: m.pid,
        start: m.start,
        len: m.len,
        pgoff: m.pgoff,
        build_id: m.build_id.into_owned(),
        path: m.path.into_owned(),
    }
}
