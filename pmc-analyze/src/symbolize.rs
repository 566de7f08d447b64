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

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pmc_log::record::{Map, Record, EXEC_LEGACY_ENTRY};

use crate::kallsyms::Kallsyms;
use crate::object::{build_id_hex, ElfObject, ObjectType, SourceLocation};
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
    /// `perf report --inline` does. Off by default (pmcstat does not).
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

    /// Follow one record's effect on process state. Samples are ignored
    /// here (see [`Symbolizer::resolve`]).
    pub fn observe(&mut self, r: &Record<'_>) {
        match r {
            Record::Header(h) => {
                if h.page_size.is_power_of_two() {
                    self.opts.page_size = u64::from(h.page_size);
                }
                self.set_log_origin(&h.os, &h.kernel_release);
            }
            Record::Comm(c) => {
                let p = self.procs.entry(c.pid).or_default();
                // An exec replaces the address space (perf logs the COMM of
                // an exec before the new image's MMAP2 records).
                if c.exec {
                    p.maps = Arc::default();
                }
                // A thread renaming itself does not rename its process.
                if c.exec || c.tid == c.pid || c.tid < 0 || p.comm.is_none() {
                    p.comm = Some(Arc::from(c.comm.to_string_lossy().as_ref()));
                }
            }
            Record::ProcessCreate(pc) => {
                let p = self.procs.entry(pc.pid).or_default();
                p.comm = Some(Arc::from(pc.comm.to_string_lossy().as_ref()));
            }
            Record::Fork(f) if f.child_pid != f.parent_pid => {
                let parent = self.procs.get(&f.parent_pid).cloned().unwrap_or_default();
                self.procs.insert(f.child_pid, parent);
            }
            Record::Exec(e) => self.exec(e),
            Record::Map(m) => self.map(m),
            Record::Unmap(u) => {
                if let Some(p) = self.procs.get_mut(&u.pid) {
                    if p.maps.contains_key(&u.start) {
                        Arc::make_mut(&mut p.maps).remove(&u.start);
                    }
                }
            }
            // The process is gone: its table (or its share of a forked one) goes too. The
            // kernel's mappings (pid -1) stay.
            Record::Exit(x) if x.pid != -1 => {
                self.procs.remove(&x.pid);
            }
            _ => {}
        }
    }

    fn exec(&mut self, e: &pmc_log::record::Exec<'_>) {
        let path = e.path.as_bytes().to_vec();
        let name = String::from_utf8_lossy(&path);
        let comm: Arc<str> = Arc::from(basename(&name));
        {
            let p = self.procs.entry(e.pid).or_default();
            p.maps = Arc::default();
            p.comm = Some(comm);
        }
        let obj = self.object_id(&path, &[]);
        let Some(elf) = self.loaded(obj) else { return };
        let legacy = e.flags & EXEC_LEGACY_ENTRY != 0;
        let bias = match elf.object_type() {
            ObjectType::Executable => Some(0),
            _ if e.dyn_base != 0 && !legacy => Some(e.dyn_base),
            _ => None,
        };
        if let (Some(bias), Some((lo, hi))) = (bias, elf.svma_extent()) {
            self.insert_map(
                e.pid,
                lo.wrapping_add(bias),
                hi.wrapping_add(bias),
                obj,
                Xlate::Bias(bias),
            );
        }
        if e.base != 0 && !legacy {
            if let Some(interp) = elf.interpreter() {
                let ipath = interp.as_os_str().as_encoded_bytes().to_vec();
                let iobj = self.object_id(&ipath, &[]);
                if let Some(ielf) = self.loaded(iobj) {
                    let bias = e.base.wrapping_sub(ielf.base_svma(self.opts.page_size));
                    if let Some((lo, hi)) = ielf.svma_extent() {
                        self.insert_map(
                            e.pid,
                            lo.wrapping_add(bias),
                            hi.wrapping_add(bias),
                            iobj,
                            Xlate::Bias(bias),
                        );
                    }
                }
            }
        }
    }

    fn map(&mut self, m: &Map<'_>) {
        let obj = self.object_id(m.path.as_bytes(), m.build_id.as_bytes());
        if m.len > 0 {
            let end = m.start.saturating_add(m.len);
            let x = Xlate::FileOffset {
                start: m.start,
                pgoff: m.pgoff,
            };
            self.insert_map(m.pid, m.start, end, obj, x);
            return;
        }
        // No length (hwpmc MAP_IN): `start` is where the text segment went.
        let page = self.opts.page_size;
        match self.loaded(obj) {
            Some(elf) => {
                let bias = match elf.object_type() {
                    ObjectType::Executable => 0,
                    _ => m.start.wrapping_sub(elf.text_svma(page).unwrap_or(0)),
                };
                let (lo, hi) = elf.svma_extent().unwrap_or((0, u64::MAX));
                let (s, e) = (lo.wrapping_add(bias), hi.wrapping_add(bias));
                if s <= m.start && m.start < e {
                    self.insert_map(m.pid, s, e, obj, Xlate::Bias(bias));
                } else {
                    self.insert_open_ended(m.pid, m.start, obj, Xlate::Bias(bias));
                }
            }
            None => self.insert_open_ended(m.pid, m.start, obj, Xlate::Bias(m.start)),
        }
    }

    /// A mapping of unknown extent: up to the next known mapping, without
    /// displacing any.
    fn insert_open_ended(&mut self, pid: i32, start: u64, obj: u32, xlate: Xlate) {
        let next = self
            .procs
            .get(&pid)
            .and_then(|p| p.maps.range(start.saturating_add(1)..).next())
            .map_or(u64::MAX, |(s, _)| *s);
        self.insert_map(pid, start, next, obj, xlate);
    }

    fn insert_map(&mut self, pid: i32, start: u64, end: u64, obj: u32, xlate: Xlate) {
        if end <= start {
            return;
        }
        let maps = Arc::make_mut(&mut self.procs.entry(pid).or_default().maps);
        // A new mapping replaces whatever it overlaps, as mmap(MAP_FIXED) does.
        let covered: Vec<u64> = maps.range(start..end).map(|(s, _)| *s).collect();
        for s in covered {
            maps.remove(&s);
        }
        if let Some((_, prev)) = maps.range_mut(..start).next_back() {
            if prev.end > start {
                prev.end = start;
            }
        }
        maps.insert(start, Mapping { end, obj, xlate });
    }

    fn object_id(&mut self, path: &[u8], build_id: &[u8]) -> u32 {
        let key = (path.to_vec(), build_id.to_vec());
        if let Some(&id) = self.by_path.get(&key) {
            return id;
        }
        let text = String::from_utf8_lossy(path).into_owned();
        let pseudo = text.is_empty()
            || text.starts_with('[')
            || text.starts_with("//")
            || text.starts_with("anon_inode:")
            || text.starts_with("/memfd:");
        let id = u32::try_from(self.objects.len()).unwrap_or(u32::MAX);
        self.objects.push(ObjSlot {
            path: PathBuf::from(&text),
            display: Arc::from(text.as_str()),
            expected_build_id: build_id.to_vec(),
            state: if pseudo {
                ObjState::Pseudo
            } else {
                ObjState::Unloaded
            },
            text: None,
            last_used: 0,
        });
        self.by_path.insert(key, id);
        id
    }

    fn loaded(&mut self, obj: u32) -> Option<Arc<ElfObject>> {
        self.tick = self.tick.wrapping_add(1);
        let tick = self.tick;
        let slot = self.objects.get_mut(obj as usize)?;
        match &slot.state {
            ObjState::Loaded(e) => {
                slot.last_used = tick;
                return Some(e.clone());
            }
            ObjState::Pseudo | ObjState::Failed => return None,
            ObjState::Unloaded => {}
        }
        let (state, warning) = self.load(obj as usize);
        if let Some(w) = warning {
            self.warnings.push(w);
        }
        let slot = self.objects.get_mut(obj as usize)?;
        slot.state = state;
        slot.last_used = tick;
        let elf = match &slot.state {
            ObjState::Loaded(e) => e.clone(),
            _ => return None,
        };
        for section in elf.skipped_debug_sections() {
            // Once per object and section, however often the object is reopened.
            if self.refused_links.insert((obj, format!("\0{section}"))) {
                self.warnings.push(Warning::DebugSectionSkipped {
                    path: slot.display.to_string(),
                    section: section.clone(),
                });
            }
        }
        for named in elf.refused_debug_links() {
            // Once per object and name, however often the object is reopened.
            if self.refused_links.insert((obj, named.clone())) {
                let path = slot.display.to_string();
                self.warnings.push(Warning::OutsideRoot {
                    path,
                    named: named.clone(),
                });
            }
        }
        slot.text = elf.text_extent();
        self.open.push(obj);
        if self.open.len() > MAX_OPEN_OBJECTS {
            self.close_least_recently_used(obj);
        }
        Some(elf)
    }

    /// Closes (unmaps) the open object used longest ago, other than `keep`; it is read again
    /// when next needed.
    fn close_least_recently_used(&mut self, keep: u32) {
        let objects = &self.objects;
        let oldest = self
            .open
            .iter()
            .enumerate()
            .filter(|(_, &o)| o != keep)
            .min_by_key(|(_, &o)| objects.get(o as usize).map_or(0, |s| s.last_used))
            .map(|(i, &o)| (i, o));
        if let Some((i, o)) = oldest {
            self.check_cut(o);
            self.open.swap_remove(i);
            if let Some(slot) = self.objects.get_mut(o as usize) {
                slot.state = ObjState::Unloaded;
            }
        }
    }

    fn load(&self, obj: usize) -> (ObjState, Option<Warning>) {
        let Some(slot) = self.objects.get(obj) else {
            return (ObjState::Failed, None);
        };
        let root = self.opts.root.as_deref();
        let on_disk = match root {
            Some(root) => match under_root(root, &slot.path) {
                Some(p) => p,
                None => {
                    let w = Warning::OutsideRoot {
                        path: slot.display.to_string(),
                        named: slot.display.to_string(),
                    };
                    return (ObjState::Failed, Some(w));
                }
            },
            None => slot.path.clone(),
        };
        let want = &slot.expected_build_id;
        let mut mismatch = None;
        let mut unreadable = None;
        match ElfObject::open_in(&on_disk, root, self.opts.debug_info) {
            Ok(elf) => match elf.build_id() {
                Some(got) if !want.is_empty() && got != want.as_slice() => {
                    mismatch = Some(build_id_hex(got));
                }
                got => {
                    let warning =
                        (!want.is_empty() && got.is_none()).then(|| Warning::BuildIdUnverified {
                            path: slot.display.to_string(),
                            expected: build_id_hex(want),
                        });
                    return (ObjState::Loaded(Arc::new(elf)), warning);
                }
            },
            Err(e) => unreadable = Some(e.to_string()),
        }
        // Missing or different file: look for the right build in the
        // build-id caches (perf's ~/.debug, the distribution's debug files).
        for cand in build_id_candidates(want, root) {
            if let Ok(elf) = ElfObject::open_in(&cand, root, self.opts.debug_info) {
                if elf.build_id() == Some(want.as_slice()) {
                    return (ObjState::Loaded(Arc::new(elf)), None);
                }
            }
        }
        let warning = match (mismatch, unreadable) {
            (Some(found), _) => Warning::BuildIdMismatch {
                path: slot.display.to_string(),
                expected: build_id_hex(want),
                found,
            },
            (None, reason) => Warning::ObjectUnreadable {
                path: slot.display.to_string(),
                reason: reason.unwrap_or_default(),
            },
        };
        (ObjState::Failed, Some(warning))
    }

    fn intern(&mut self, key: FuncKey, make: impl FnOnce(&Self) -> Function) -> FuncId {
        if let Some(&id) = self.by_key.get(&key) {
            return id;
        }
        let f = make(self);
        let id = FuncId::try_from(self.functions.len()).unwrap_or(FuncId::MAX);
        self.functions.push(f);
        self.by_key.insert(key, id);
        id
    }

    fn demangle(&self, name: &str) -> String {
        if self.opts.demangle {
            demangle(name)
        } else {
            name.to_string()
        }
    }

    /// Resolve one callchain frame of process `pid`. `kernel` marks a frame
    /// the log flagged as kernel; `caller` marks a return address (not the
    /// sampled PC), looked up at `ip - 1` so a call at a function's very end
    /// is attributed to that function.
    pub fn resolve(&mut self, pid: i32, ip: u64, kernel: bool, caller: bool) -> FuncId {
        self.resolve_full(pid, ip, kernel, caller).0
    }

    /// [`Symbolizer::resolve`] plus the SVMA and the exact source location
    /// of this address (uncached DWARF lookup: for per-address listings).
    pub fn lookup_address(&mut self, pid: i32, ip: u64, kernel: bool, caller: bool) -> AddressInfo {
        let (function, svma, obj) = self.resolve_full(pid, ip, kernel, caller);
        let f = self.functions.get(function as usize);
        let offset = match (svma, f.and_then(|f| f.address)) {
            (Some(s), Some(a)) if s >= a => Some(s - a),
            _ => None,
        };
        let source = match (svma, obj.and_then(|o| self.objects.get(o as usize))) {
            (
                Some(s),
                Some(ObjSlot {
                    state: ObjState::Loaded(elf),
                    ..
                }),
            ) => elf.location(s),
            _ => None,
        };
        AddressInfo {
            function,
            svma,
            offset,
            source,
        }
    }

    /// Resolve one address as [`Symbolizer::resolve`] does, keeping the
    /// object and the object-relative address (for per-address reports:
    /// gmon histograms, sampled-PC listings).
    pub fn resolve_pc(&mut self, pid: i32, ip: u64, kernel: bool, caller: bool) -> ResolvedPc {
        let (function, svma, object) = self.resolve_full(pid, ip, kernel, caller);
        ResolvedPc {
            function,
            object,
            svma,
        }
    }

    /// The path and text extent of object `obj` (from [`ResolvedPc::object`]).
    pub fn object_info(&self, obj: u32) -> Option<ObjectInfo> {
        let slot = self.objects.get(obj as usize)?;
        let text = match &slot.state {
            ObjState::Loaded(elf) => elf.text_extent(),
            _ => slot.text,
        };
        Some(ObjectInfo {
            path: slot.display.clone(),
            text,
        })
    }

    /// The bounds `[start, end)` (SVMA) of the function symbol covering
    /// `svma` in object `obj`, when the object was read and has one.
    pub fn symbol_bounds(&self, obj: u32, svma: u64) -> Option<(u64, u64)> {
        match &self.objects.get(obj as usize)?.state {
            ObjState::Loaded(elf) => elf.symbol_bounds(svma),
            _ => None,
        }
    }

    /// The raw (not demangled) name and bounds `[start, end)` (SVMA) of the
    /// function symbol covering `svma` in object `obj` (for listings that
    /// other tools parse, such as pmcannotate's input).
    pub fn raw_symbol(&self, obj: u32, svma: u64) -> Option<(String, u64, u64)> {
        match &self.objects.get(obj as usize)?.state {
            ObjState::Loaded(elf) => {
                let hit = elf.symbol(svma)?;
                let (start, end) = elf.symbol_bounds(svma)?;
                Some((hit.name.to_string(), start, end))
            }
            _ => None,
        }
    }

    /// The number of objects seen so far (valid `obj` values are below it).
    pub fn object_count(&self) -> usize {
        self.objects.len()
    }

    fn resolve_full(
        &mut self,
        pid: i32,
        ip: u64,
        kernel: bool,
        caller: bool,
    ) -> (FuncId, Option<u64>, Option<u32>) {
        let probe = if caller { ip.saturating_sub(1) } else { ip };
        let kernel = kernel || probe >= KERNEL_START;
        if kernel {
            if !self.kallsyms_decided {
                self.set_log_origin("", "");
            }
            if let Some(&id) = self.kernel_cache.get(&probe) {
                return (id, Some(probe), None);
            }
            let hit = self
                .kallsyms
                .as_ref()
                .and_then(|k| k.lookup(probe))
                .map(|s| {
                    (
                        s.index,
                        s.start,
                        self.demangle(s.name),
                        s.module.map(|m| Arc::<str>::from(format!("[{m}]"))),
                    )
                });
            if let Some((index, start, name, module)) = hit {
                let kname = self.kernel_name.clone();
                let id = self.intern(FuncKey::Kernel { index }, |_| Function {
                    name,
                    object: Some(module.unwrap_or(kname)),
                    source: None,
                    kernel: true,
                    address: Some(start),
                    inlined: false,
                });
                self.kernel_cache.insert(probe, id);
                return (id, Some(probe), None);
            }
            // FreeBSD: the kernel and its modules are Map records of pid -1.
            if let Some(r) = self.resolve_mapped(-1, probe, true) {
                return r;
            }
            let id = self.intern(FuncKey::KernelUnknown, |s| Function {
                name: "[kernel]".into(),
                object: Some(s.kernel_name.clone()),
                source: None,
                kernel: true,
                address: None,
                inlined: false,
            });
            return (id, None, None);
        }
        if let Some(r) = self
            .resolve_mapped(pid, probe, false)
            .or_else(|| self.resolve_mapped(-1, probe, false))
        {
            return r;
        }
        let id = self.intern(FuncKey::Unknown, |_| Function {
            name: "[unknown]".into(),
            object: None,
            source: None,
            kernel: false,
            address: None,
            inlined: false,
        });
        (id, None, None)
    }

    fn resolve_mapped(
        &mut self,
        pid: i32,
        ip: u64,
        kernel: bool,
    ) -> Option<(FuncId, Option<u64>, Option<u32>)> {
        let m = {
            let p = self.procs.get(&pid)?;
            let (_, m) = p.maps.range(..=ip).next_back()?;
            if ip >= m.end {
                return None;
            }
            *m
        };
        let elf = self.loaded(m.obj);
        let svma = elf.as_ref().and_then(|elf| match m.xlate {
            Xlate::Bias(b) => Some(ip.wrapping_sub(b)),
            Xlate::FileOffset { .. } if elf.object_type() == ObjectType::Executable => Some(ip),
            Xlate::FileOffset { start, pgoff } => {
                elf.file_offset_to_svma(ip.wrapping_sub(start).wrapping_add(pgoff))
            }
        });
        if let (Some(elf), Some(svma)) = (elf, svma) {
            if let Some(&id) = self.addr_cache.get(&(m.obj, svma)) {
                return Some((id, Some(svma), Some(m.obj)));
            }
            let id = match elf.symbol(svma) {
                Some(hit) => {
                    let display = self.objects.get(m.obj as usize).map(|s| s.display.clone());
                    let debug = self.opts.debug_info;
                    self.intern(
                        FuncKey::Sym {
                            obj: m.obj,
                            index: hit.index,
                        },
                        |s| Function {
                            name: s.demangle(hit.name),
                            object: display,
                            source: if debug { elf.location(hit.start) } else { None },
                            kernel,
                            address: Some(hit.start),
                            inlined: false,
                        },
                    )
                }
                None => self.object_stand_in(m.obj, kernel),
            };
            if self.opts.inlines {
                let chain = elf.inlined_at(svma);
                if !chain.is_empty() {
                    let ids: Box<[FuncId]> = chain
                        .into_iter()
                        .map(|f| self.inline_function(m.obj, f, kernel))
                        .collect();
                    self.inline_cache.insert((m.obj, svma), ids);
                }
            }
            self.addr_cache.insert((m.obj, svma), id);
            return Some((id, Some(svma), Some(m.obj)));
        }
        Some((self.object_stand_in(m.obj, kernel), None, Some(m.obj)))
    }

    fn inline_function(
        &mut self,
        obj: u32,
        f: crate::object::InlinedFrame,
        kernel: bool,
    ) -> FuncId {
        let key = (obj, f.name);
        if let Some(&id) = self.inline_ids.get(&key) {
            return id;
        }
        let name = if key.1.is_empty() {
            "[inlined]".to_string()
        } else {
            self.demangle(&key.1)
        };
        let id = FuncId::try_from(self.functions.len()).unwrap_or(FuncId::MAX);
        self.functions.push(Function {
            name,
            object: self.objects.get(obj as usize).map(|s| s.display.clone()),
            source: None,
            kernel,
            address: None,
            inlined: true,
        });
        self.inline_ids.insert(key, id);
        id
    }

    fn object_stand_in(&mut self, obj: u32, kernel: bool) -> FuncId {
        self.intern(FuncKey::Object { obj }, |s| {
            let slot = s.objects.get(obj as usize);
            let display = slot.map(|s| s.display.clone());
            let name = match slot {
                Some(ObjSlot { display, .. }) if display.starts_with('[') => display.to_string(),
                Some(ObjSlot { display, .. }) => format!("[{}]", basename(display)),
                None => "[unknown]".into(),
            };
            Function {
                name,
                object: display,
                source: None,
                kernel,
                address: None,
                inlined: false,
            }
        })
    }

    /// The mapping covering frame `ip` of process `pid` (or the kernel's,
    /// pid -1), looked up as [`Symbolizer::resolve`] does; `None` for
    /// unmapped addresses and for kernel addresses that kallsyms resolves.
    pub fn mapping_at(
        &mut self,
        pid: i32,
        ip: u64,
        kernel: bool,
        caller: bool,
    ) -> Option<MappedRange> {
        let probe = if caller { ip.saturating_sub(1) } else { ip };
        let kernel = kernel || probe >= KERNEL_START;
        let find = |procs: &HashMap<i32, Process>, pid: i32| {
            let (&start, m) = procs.get(&pid)?.maps.range(..=probe).next_back()?;
            (probe < m.end).then_some(MappedRange {
                start,
                end: m.end,
                object: m.obj,
                xlate: m.xlate,
            })
        };
        if kernel {
            if !self.kallsyms_decided {
                self.set_log_origin("", "");
            }
            if self
                .kallsyms
                .as_ref()
                .is_some_and(|k| k.lookup(probe).is_some())
            {
                return None;
            }
            return find(&self.procs, -1);
        }
        find(&self.procs, pid).or_else(|| find(&self.procs, -1))
    }

    /// True when kernel addresses resolve through a kallsyms table.
    pub fn has_kallsyms(&self) -> bool {
        self.kallsyms.is_some()
    }

    /// Path, build-id and file offset of a mapping from
    /// [`Symbolizer::mapping_at`] (reads the object if not read yet).
    pub fn mapping_details(&mut self, m: &MappedRange) -> MappingDetails {
        let elf = self.loaded(m.object);
        let (path, want) = match self.objects.get(m.object as usize) {
            Some(slot) => (slot.display.clone(), slot.expected_build_id.clone()),
            None => (Arc::from("[unknown]"), Vec::new()),
        };
        let build_id = match (&elf, want.is_empty()) {
            (Some(e), true) => e.build_id().map(<[u8]>::to_vec).unwrap_or_default(),
            _ => want,
        };
        let file_offset = match m.xlate {
            Xlate::FileOffset { start, pgoff } => pgoff.wrapping_add(m.start.wrapping_sub(start)),
            Xlate::Bias(bias) => {
                let svma = m.start.wrapping_sub(bias);
                elf.as_ref()
                    .and_then(|e| {
                        e.segments()
                            .iter()
                            .find(|s| svma >= s.vaddr && svma - s.vaddr < s.memsz.max(1))
                            .map(|s| s.offset.wrapping_add(svma - s.vaddr))
                    })
                    .unwrap_or(0)
            }
        };
        MappingDetails {
            path,
            build_id,
            file_offset,
            symbols: elf.is_some(),
            debug_info: elf.as_ref().is_some_and(|e| e.has_debug_info()),
        }
    }

    /// The source-level frames at one callchain frame, **innermost first**:
    /// the functions inlined there (from DWARF, whatever
    /// [`SymbolizeOptions::inlines`] says), then the function
    /// [`Symbolizer::resolve`] returns, each with its line (for the outer
    /// ones, the line of the inlined call). Never empty.
    pub fn source_frames(
        &mut self,
        pid: i32,
        ip: u64,
        kernel: bool,
        caller: bool,
    ) -> Vec<SourceFrame> {
        let (id, svma, obj) = self.resolve_full(pid, ip, kernel, caller);
        let elf = obj
            .and_then(|o| self.objects.get(o as usize))
            .and_then(|slot| match &slot.state {
                ObjState::Loaded(e) => Some(e.clone()),
                _ => None,
            });
        let mut out = Vec::new();
        let mut outer = None;
        if let (Some(elf), Some(svma), Some(obj)) = (elf, svma, obj) {
            let mut frames = elf.frames_at(svma);
            outer = frames.pop().and_then(|f| f.source);
            let kernel = self.functions.get(id as usize).map_or(kernel, |f| f.kernel);
            for f in frames {
                let source = f.source.clone();
                let function = self.inline_function(obj, f, kernel);
                out.push(SourceFrame { function, source });
            }
        }
        out.push(SourceFrame {
            function: id,
            source: outer,
        });
        out
    }

    /// Resolve a sample's callchain (leaf first, as in the log) into
    /// functions, appended to `out` **root first**. Frames that are perf
    /// context markers are skipped; a last frame of
    /// [`TRUNCATED_FRAME`](pmc_log::record::TRUNCATED_FRAME) (the unwinder stopped there)
    /// becomes a root function named `[truncated]`. With [`SymbolizeOptions::inlines`], the
    /// functions inlined at each address come as frames of their own, below
    /// the function they were inlined into.
    pub fn resolve_callchain(
        &mut self,
        pid: i32,
        frames: impl ExactSizeIterator<Item = u64>,
        kernel_frames: u32,
        out: &mut Vec<FuncId>,
    ) {
        let start = out.len();
        let kernel_frames = usize::try_from(kernel_frames).unwrap_or(usize::MAX);
        for (i, ip) in frames.enumerate() {
            if ip == pmc_log::record::TRUNCATED_FRAME {
                // The unwinder stopped here: the callers beyond are unknown, and say so.
                let id = self.intern(FuncKey::Truncated, |_| Function {
                    name: "[truncated]".into(),
                    object: None,
                    source: None,
                    kernel: false,
                    address: None,
                    inlined: false,
                });
                out.push(id);
                continue;
            }
            if ip >= PERF_CONTEXT_MAX {
                continue;
            }
            let kernel = i < kernel_frames;
            // The first frame of each half (kernel, user) is a PC (the
            // sampled one, or where user mode was interrupted); the others
            // are return addresses.
            let caller = if kernel { i > 0 } else { i > kernel_frames };
            let (id, svma, obj) = self.resolve_full(pid, ip, kernel, caller);
            if self.opts.inlines {
                if let (Some(svma), Some(obj)) = (svma, obj) {
                    if let Some(chain) = self.inline_cache.get(&(obj, svma)) {
                        out.extend_from_slice(chain);
                    }
                }
            }
            out.push(id);
        }
        out.get_mut(start..).unwrap_or_default().reverse();
    }
}

/// `path` (a path from the log) resolved lexically under `root`: `.` dropped, `..` taking
/// one component back; `None` when a `..` would climb above the root.
fn under_root(root: &Path, path: &Path) -> Option<PathBuf> {
    use std::path::Component;
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for c in path.components() {
        match c {
            Component::Prefix(_) | Component::RootDir | Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::Normal(n) => parts.push(n),
        }
    }
    let mut out = root.to_path_buf();
    out.extend(parts);
    Some(out)
}

fn build_id_candidates(id: &[u8], root: Option<&Path>) -> Vec<PathBuf> {
    if id.len() < 2 {
        return Vec::new();
    }
    let h = build_id_hex(id);
    let (dir, rest) = h.split_at(2);
    let mut v = Vec::new();
    if let Some(home) = std::env::var_os("HOME") {
        v.push(PathBuf::from(home).join(format!(".debug/.build-id/{dir}/{rest}/elf")));
    }
    let debug = format!("usr/lib/debug/.build-id/{dir}/{rest}.debug");
    // Under -r DIR, the root's debug directory (as perf's --symfs); the user's own cache
    // (~/.debug, named by build-id, never by the log) stays where it is.
    v.push(match root {
        Some(r) => r.join(debug),
        None => Path::new("/").join(debug),
    });
    v
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
mod tests {
    use super::*;
    use pmc_log::record::{Exit, Fork, Map};

    fn map(pid: i32, start: u64, path: &str) -> Record<'static> {
        Record::Map(Map {
            time: 0,
            pid,
            start,
            len: 0x1000,
            pgoff: 0,
            build_id: Vec::new().into(),
            path: path.to_string().into(),
        })
    }

    /// A fork shares the parent's table until one side changes it; an exit drops the child.
    #[test]
    fn forks_copy_on_write_and_exits_free() {
        let mut s = Symbolizer::new(SymbolizeOptions {
            kernel: KernelSymbols::Disabled,
            ..SymbolizeOptions::default()
        });
        s.observe(&map(1, 0x1000, "/nonexistent/a"));
        s.observe(&Record::Fork(Fork {
            time: 0,
            parent_pid: 1,
            parent_tid: 1,
            child_pid: 2,
            child_tid: 2,
        }));
        assert!(Arc::ptr_eq(&s.procs[&1].maps, &s.procs[&2].maps), "shared");
        s.observe(&map(2, 0x9000, "/nonexistent/b"));
        assert!(!Arc::ptr_eq(&s.procs[&1].maps, &s.procs[&2].maps), "copied");
        assert!(s.mapping_at(2, 0x1004, false, false).is_some());
        assert!(s.mapping_at(2, 0x9004, false, false).is_some());
        assert!(
            s.mapping_at(1, 0x9004, false, false).is_none(),
            "parent unchanged"
        );
        s.observe(&Record::Exit(Exit {
            time: 1,
            pid: 2,
            tid: 2,
        }));
        assert!(!s.procs.contains_key(&2));
        assert!(s.mapping_at(1, 0x1004, false, false).is_some());
    }
}
