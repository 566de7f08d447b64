//! Turning sampled addresses into functions.
//!
//! A [`Symbolizer`] ([`SymbolizeOptions`], [`KernelSymbols`]) follows a log's process events and
//! resolves addresses to [`Function`]s ([`ResolvedPc`], [`AddressInfo`], [`SourceFrame`] for
//! inlined lines); [`demangle`] names them. Below: address translation, memory, the kernel.
//!
//! The [`Symbolizer`] follows a log's process events ([`Symbolizer::observe`]:
//! `Map`, `Unmap`, `Exec`, `Comm`, `Fork`, ...) to know, at each sample,
//! which object is mapped where in which process, and resolves addresses
//! ([`Symbolizer::resolve`]) to interned [`Function`]s.
//!
//! Address translation (AVMA, the sampled address, to SVMA, the address the
//! object's symbols use):
//!
//! - a mapping with a length (perf `MMAP2`): `file_offset = ip - start +
//!   pgoff`, then the `PT_LOAD` segment holding that offset gives `svma =
//!   file_offset - p_offset + p_vaddr`. This is right for PIEs, shared
//!   objects, and segments whose `p_vaddr - p_offset` differ.
//! - `ET_EXEC` objects: `svma = ip`.
//! - a mapping without a length (hwpmc `MAP_IN`, which logs where the text
//!   segment was mapped): `bias = start - text_svma`, `svma = ip - bias`.
//! - an `Exec` record (hwpmc `PROCEXEC`): the executable at `dyn_base` (PIE)
//!   or its link addresses, and its `PT_INTERP` at `base`.
//!
//! Each object is parsed once (keyed by path and expected build-id), and
//! every `(object, svma)` resolution is cached.
//!
//! The files: this one holds the types and the [`Symbolizer`]'s set-up;
//! `symbolize/processes.rs` follows the process events, `objects.rs` the
//! object cache, `resolve.rs` the resolution and the queries reports make.
//!
//! # Memory
//!
//! What the symbolizer holds is bounded by what is live, not by the log's history:
//!
//! - mapping tables: O(live processes + distinct tables × their mappings). A `Fork`
//!   shares the parent's table (copy-on-write: copied when either side maps or
//!   unmaps), an `Exit` drops the process;
//! - open objects: at most [`MAX_OPEN_OBJECTS`] mapped and parsed at once (the least
//!   recently used is closed and reopened when needed), each holding its sorted
//!   symbol table (offsets: symbol names are borrowed from the mapped string tables,
//!   so a crafted object cannot make them outgrow its file) and, with debug info,
//!   addr2line's lazily parsed units;
//! - per object named by the log, its path and build-id; per interned function and
//!   resolved address, one cache entry.
//!
//! A mapped object truncated while read does not raise SIGBUS: it reads as zeros past
//! the cut ([`crate::file::Bytes::cut`]), reported as [`Warning::TruncatedObject`].
//! With [`SymbolizeOptions::root`], a path whose `..` would climb above the root, and a
//! `.gnu_debuglink` that is not a plain file name, are refused
//! ([`Warning::OutsideRoot`]), never read.

mod objects;
mod processes;
mod resolve;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::kallsyms::Kallsyms;
use crate::object::{ElfObject, SourceLocation};
use crate::Warning;

/// Index of a [`Function`] in [`Symbolizer::functions`].
pub type FuncId = u32;

/// Where kernel symbols come from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum KernelSymbols {
    /// `/proc/kallsyms`, when the log was taken on this kernel (the log
    /// header's OS and release match the running system, or are unknown).
    #[default]
    Auto,
    /// This kallsyms file (for example a copy saved with the log).
    File(PathBuf),
    /// Do not symbolize kernel addresses.
    Disabled,
}

/// Symbolization options.
#[derive(Clone, Debug)]
pub struct SymbolizeOptions {
    /// Load DWARF for source locations (`file:line`). Symbol names come from
    /// the ELF symbol tables either way.
    pub debug_info: bool,
    /// Kernel symbol source.
    pub kernel: KernelSymbols,
    /// Prefix for object paths (perf's `--symfs`): `/usr/lib/x.so` is read
    /// from `<root>/usr/lib/x.so`. Paths are resolved lexically under it: one
    /// whose `..` climbs above it is refused, and separate debug files are
    /// looked for under it too.
    pub root: Option<PathBuf>,
    /// Page size used to align segment addresses (the log header's, or 4096).
    pub page_size: u64,
    /// Demangle C++ and Rust names.
    pub demangle: bool,
    /// Expand inlined functions (from DWARF) into frames of their own, as
    /// `perf report --inline` does ([`Function::inlined`]). Off by default;
    /// pmcstat turns it on for `-G`, `--folded` and `--flamegraph`, and
    /// [`Profile::without_inlines`](crate::Profile::without_inlines) folds
    /// them back for reports of real functions.
    pub inlines: bool,
}

impl Default for SymbolizeOptions {
    fn default() -> Self {
        SymbolizeOptions {
            debug_info: true,
            kernel: KernelSymbols::Auto,
            root: None,
            page_size: 4096,
            demangle: true,
            inlines: false,
        }
    }
}

/// A function (or a stand-in for an unresolved address range).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Function {
    /// Demangled name; `[object]` when the object is known but the address
    /// has no symbol, `[unknown]` when no mapping covers it, `[kernel]` for
    /// unresolved kernel addresses.
    pub name: String,
    /// The object's path (`[kernel.kallsyms]` or the module name for kernel
    /// symbols), if known.
    #[serde(serialize_with = "ser_opt_arc")]
    pub object: Option<Arc<str>>,
    /// Source location of the function's entry, when debug info exists.
    pub source: Option<SourceLocation>,
    /// True for kernel code.
    pub kernel: bool,
    /// The symbol's address in its object (SVMA), when resolved; `None` for
    /// inlined functions.
    pub address: Option<u64>,
    /// True for a function inlined into its caller (with
    /// [`SymbolizeOptions::inlines`]).
    pub inlined: bool,
}

impl Function {
    /// The object's file name (last path component), if known.
    pub fn object_basename(&self) -> Option<&str> {
        self.object.as_deref().map(basename)
    }
}

fn ser_opt_arc<S: serde::Serializer>(v: &Option<Arc<str>>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(x) => s.serialize_some(&**x),
        None => s.serialize_none(),
    }
}

pub(crate) fn basename(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

/// What resolving an address found, for one address (see
/// [`Symbolizer::lookup_address`]).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct AddressInfo {
    /// The function.
    pub function: FuncId,
    /// The address in the object (SVMA), when translated.
    pub svma: Option<u64>,
    /// Offset from the symbol's start.
    pub offset: Option<u64>,
    /// Source location of this very address, when debug info exists.
    pub source: Option<SourceLocation>,
}

/// A sampled address resolved to its function, object and object-relative
/// address (see [`Symbolizer::resolve_pc`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResolvedPc {
    /// The function.
    pub function: FuncId,
    /// The object (an index for [`Symbolizer::object_info`]), when a mapping
    /// covers the address.
    pub object: Option<u32>,
    /// The address in the object (SVMA), when translated.
    pub svma: Option<u64>,
}

/// What reports need to know of an object (see [`Symbolizer::object_info`]).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ObjectInfo {
    /// The object's path as the log names it.
    #[serde(serialize_with = "ser_arc")]
    pub path: Arc<str>,
    /// `[start, end)` SVMA of its executable `PT_LOAD` segments, when the
    /// file was read (`None` for `[vdso]`, unreadable or foreign files).
    pub text: Option<(u64, u64)>,
}

fn ser_arc<S: serde::Serializer>(v: &Arc<str>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(v)
}

/// The mapping of an object that covers an address, in one process (see
/// [`Symbolizer::mapping_at`]). Equal values are the same mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MappedRange {
    /// First address (AVMA).
    pub start: u64,
    /// End address (exclusive).
    pub end: u64,
    object: u32,
    xlate: Xlate,
}

/// What is known of a mapped object (see [`Symbolizer::mapping_details`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MappingDetails {
    /// The object's path, as the log names it (`[vdso]` and the like for
    /// pseudo-objects).
    pub path: Arc<str>,
    /// Build-id: the log's, or else the file's; empty when unknown.
    pub build_id: Vec<u8>,
    /// File offset of [`MappedRange::start`] (0 when unknown).
    pub file_offset: u64,
    /// The object was read: its addresses resolve to symbols.
    pub symbols: bool,
    /// DWARF was loaded: file, line and inlined frames are known.
    pub debug_info: bool,
}

/// One source-level frame at an address (see [`Symbolizer::source_frames`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceFrame {
    /// The function (for an inlined frame, a [`Function::inlined`] one).
    pub function: FuncId,
    /// Where in that function, when debug info has it.
    pub source: Option<SourceLocation>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum FuncKey {
    Sym { obj: u32, index: u32 },
    Kernel { index: u32 },
    Object { obj: u32 },
    Unknown,
    KernelUnknown,
    Truncated,
}

#[derive(Debug)]
enum ObjState {
    Unloaded,
    Loaded(Arc<ElfObject>),
    /// Not a file (`[vdso]`, `//anon`, `[kernel.kallsyms]_text`).
    Pseudo,
    Failed,
}

#[derive(Debug)]
struct ObjSlot {
    path: PathBuf,
    display: Arc<str>,
    expected_build_id: Vec<u8>,
    state: ObjState,
    /// The text extent, kept when the object is closed (for [`Symbolizer::object_info`]).
    text: Option<(u64, u64)>,
    /// When it was last used (a tick of [`Symbolizer::tick`]), for closing the least
    /// recently used one.
    last_used: u64,
}

/// The most objects kept open (mapped, parsed) at once. Past it the least recently used one
/// is closed (unmapped; read again if needed), so a log naming 100,000 objects maps at most
/// this many files (twice as many with separate debug files), far below
/// `vm.max_map_count`'s usual 65,530, and holds their parsed tables only.
pub const MAX_OPEN_OBJECTS: usize = 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Xlate {
    /// `svma` from the file offset `ip - start + pgoff`.
    FileOffset { start: u64, pgoff: u64 },
    /// `svma = ip - bias`.
    Bias(u64),
}

#[derive(Clone, Copy, Debug)]
struct Mapping {
    end: u64,
    obj: u32,
    xlate: Xlate,
}

/// One live process: its name and its mappings. The mapping table is shared between a
/// parent and the children forked from it until one of them maps or unmaps something
/// (copy-on-write through [`Arc::make_mut`]), so a fork costs a reference count, not a copy;
/// an `Exit` drops the process. Memory is O(live processes + distinct mapping tables ×
/// their mappings), whatever the number of forks in the log's history.
#[derive(Clone, Debug, Default)]
struct Process {
    comm: Option<Arc<str>>,
    maps: Arc<BTreeMap<u64, Mapping>>,
}

/// Resolves sampled addresses to functions; see the module documentation.
#[derive(Debug)]
pub struct Symbolizer {
    opts: SymbolizeOptions,
    objects: Vec<ObjSlot>,
    by_path: HashMap<(Vec<u8>, Vec<u8>), u32>,
    kallsyms: Option<Kallsyms>,
    kallsyms_decided: bool,
    kernel_name: Arc<str>,
    functions: Vec<Function>,
    by_key: HashMap<FuncKey, FuncId>,
    addr_cache: HashMap<(u32, u64), FuncId>,
    /// Inlined functions per `(object, svma)`, innermost first.
    inline_cache: HashMap<(u32, u64), Box<[FuncId]>>,
    inline_ids: HashMap<(u32, String), FuncId>,
    kernel_cache: HashMap<u64, FuncId>,
    procs: HashMap<i32, Process>,
    warnings: Vec<Warning>,
    /// The objects in [`ObjState::Loaded`], at most [`MAX_OPEN_OBJECTS`].
    open: Vec<u32>,
    tick: u64,
    /// `.gnu_debuglink` names refused, per object (each warned about once).
    refused_links: std::collections::HashSet<(u32, String)>,
    /// Objects warned about as truncated while mapped.
    cut_warned: std::collections::HashSet<u32>,
}

/// Frames at or above this value are perf `PERF_CONTEXT_*` markers.
pub(crate) const PERF_CONTEXT_MAX: u64 = -4095i64 as u64;
/// Addresses in the upper half of a 64-bit address space are kernel code
/// (x86-64, arm64, riscv64, FreeBSD amd64).
pub(crate) const KERNEL_START: u64 = 0xffff_8000_0000_0000;

impl Symbolizer {
    /// A symbolizer with no process state.
    pub fn new(opts: SymbolizeOptions) -> Self {
        Symbolizer {
            opts,
            objects: Vec::new(),
            by_path: HashMap::new(),
            kallsyms: None,
            kallsyms_decided: false,
            kernel_name: Arc::from("[kernel.kallsyms]"),
            functions: Vec::new(),
            by_key: HashMap::new(),
            addr_cache: HashMap::new(),
            inline_cache: HashMap::new(),
            inline_ids: HashMap::new(),
            kernel_cache: HashMap::new(),
            procs: HashMap::new(),
            warnings: Vec::new(),
            open: Vec::new(),
            tick: 0,
            refused_links: Default::default(),
            cut_warned: Default::default(),
        }
    }

    /// Use these kernel symbols (instead of the [`KernelSymbols`] option).
    pub fn set_kallsyms(&mut self, k: Kallsyms) {
        self.kallsyms = Some(k);
        self.kallsyms_decided = true;
    }

    /// The interned functions; a [`FuncId`] indexes this slice.
    pub fn functions(&self) -> &[Function] {
        &self.functions
    }

    /// Problems met so far (unreadable objects, build-id mismatches, ...).
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    pub(crate) fn take_warnings(&mut self) -> Vec<Warning> {
        for o in self.open.clone() {
            self.check_cut(o);
        }
        std::mem::take(&mut self.warnings)
    }

    /// Warns (once per object) if open object `obj` was truncated while mapped.
    fn check_cut(&mut self, obj: u32) {
        let Some(slot) = self.objects.get(obj as usize) else {
            return;
        };
        let ObjState::Loaded(elf) = &slot.state else {
            return;
        };
        if let Some((file, offset)) = elf.cut() {
            if self.cut_warned.insert(obj) {
                self.warnings.push(Warning::TruncatedObject {
                    path: slot.display.to_string(),
                    file: file.display().to_string(),
                    offset: offset as u64,
                });
            }
        }
    }

    /// The latest command name of `pid` (from `Comm`, `Exec`, `ProcessCreate`).
    pub fn comm(&self, pid: i32) -> Option<&str> {
        self.procs.get(&pid).and_then(|p| p.comm.as_deref())
    }

    /// Decide on kernel symbols given the log header (called by the profile
    /// builder when it sees the header; otherwise on first kernel frame).
    pub fn set_log_origin(&mut self, os: &str, kernel_release: &str) {
        if self.kallsyms_decided {
            return;
        }
        self.kallsyms_decided = true;
        match self.opts.kernel.clone() {
            KernelSymbols::Disabled => {}
            KernelSymbols::File(p) => self.load_kallsyms(&p),
            KernelSymbols::Auto => {
                let running = std::fs::read_to_string("/proc/sys/kernel/osrelease")
                    .map(|s| s.trim().to_string())
                    .unwrap_or_default();
                if !os.is_empty() && os != "Linux" {
                    return; // a FreeBSD log: kernel from its Map records
                }
                if !kernel_release.is_empty() && !running.is_empty() && kernel_release != running {
                    self.warnings.push(Warning::KallsymsSkipped {
                        log_release: kernel_release.to_string(),
                        running_release: running,
                    });
                    return;
                }
                self.load_kallsyms(Path::new("/proc/kallsyms"));
            }
        }
    }

    fn load_kallsyms(&mut self, p: &Path) {
        match Kallsyms::open(p) {
            Ok(k) if k.is_empty() => self.warnings.push(Warning::KallsymsUnavailable {
                path: p.display().to_string(),
                reason: "no addresses (kptr_restrict: run as root or set \
                         /proc/sys/kernel/kptr_restrict to 0)"
                    .into(),
            }),
            Ok(k) => self.kallsyms = Some(k),
            Err(e) => self.warnings.push(Warning::KallsymsUnavailable {
                path: p.display().to_string(),
                reason: e.to_string(),
            }),
        }
    }
}

/// Demangle a Rust (legacy or v0) or C++ symbol name; other names are
/// returned as they are. Rust names lose their hash suffix.
pub fn demangle(name: &str) -> String {
    if let Ok(d) = rustc_demangle::try_demangle(name) {
        return format!("{d:#}");
    }
    if name.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(name.as_bytes()) {
            if let Ok(s) = sym.demangle(&cpp_demangle::DemangleOptions::default()) {
                return s;
            }
        }
    }
    name.to_string()
}

#[cfg(test)]
mod tests;
