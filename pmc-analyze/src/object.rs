//! One ELF object, parsed once: sorted symbol table, load segments,
//! build-id, and (when present) DWARF line information.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol, SectionKind, SymbolKind};

use crate::error::{Error, Result};

use crate::file::{map_regular, map_regular_under, Bytes, MAX_OBJECT_SIZE};

type Reader = gimli::EndianReader<gimli::RunTimeEndian, Bytes>;

/// The ELF file type, as far as address translation cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ObjectType {
    /// `ET_EXEC`: linked at fixed addresses; sampled addresses are symbol addresses.
    Executable,
    /// `ET_DYN`: a shared object or a PIE, loaded with a bias.
    Dynamic,
    /// Anything else (`ET_REL` kernel modules, core files, ...).
    Other,
}

/// A `PT_LOAD` segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// `p_vaddr`.
    pub vaddr: u64,
    /// `p_memsz`.
    pub memsz: u64,
    /// `p_offset`.
    pub offset: u64,
    /// `p_filesz`.
    pub filesz: u64,
    /// `PF_X` is set.
    pub executable: bool,
}

#[derive(Clone, Copy, Debug)]
struct Sym {
    start: u64,
    end: u64,
    /// Where the name is: [`NameSource`].
    src: NameSource,
    name_off: u32,
    name_len: u32,
}

/// Which bytes a symbol's name is a slice of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NameSource {
    /// The object's own string table, in its mapping.
    Object,
    /// The separate debug file's, in its mapping.
    DebugFile,
    /// [`Names::owned`]: built names (`func@plt`).
    Owned,
}

/// Symbol names, borrowed from the mapped files rather than copied: 40,000 symbols naming
/// one 65,000-byte string cost 40,000 offsets, not 2.6 GB. Only the built `func@plt` names
/// are owned, each distinct one once, and their total is bounded by the object's size.
struct Names {
    object: Bytes,
    debug_file: Option<Bytes>,
    owned: String,
}

impl Names {
    fn get(&self, s: &Sym) -> &str {
        let bytes: &[u8] = match s.src {
            NameSource::Object => &self.object,
            NameSource::DebugFile => self.debug_file.as_deref().unwrap_or_default(),
            NameSource::Owned => self.owned.as_bytes(),
        };
        let off = s.name_off as usize;
        // A NUL inside a name (string-table names end at their first NUL) means the file
        // changed under the mapping (a truncated file reads as zeros): no name.
        bytes
            .get(off..off.saturating_add(s.name_len as usize))
            .filter(|b| !b.contains(&0))
            .and_then(|b| std::str::from_utf8(b).ok())
            .unwrap_or("")
    }
}

/// Where `name`, a slice of `base` (a symbol name the `object` crate read from a string
/// table in `base`), lies in it.
fn slice_of(base: &[u8], name: &str) -> Option<(u32, u32)> {
    let off = (name.as_ptr() as usize).checked_sub(base.as_ptr() as usize)?;
    let end = off.checked_add(name.len())?;
    (end <= base.len()).then_some(())?;
    Some((u32::try_from(off).ok()?, u32::try_from(name.len()).ok()?))
}

/// A symbol found by [`ElfObject::symbol`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SymbolHit<'a> {
    /// Index in the object's sorted symbol table (stable for this object).
    pub index: u32,
    /// The raw (mangled) symbol name.
    pub name: &'a str,
    /// The symbol's address (SVMA).
    pub start: u64,
}

/// A source location.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub struct SourceLocation {
    /// Source file path as recorded in the debug info.
    pub file: String,
    /// Line number (0 when unknown).
    pub line: u32,
}

/// An ELF object parsed once for symbolization.
///
/// Symbols (`.symtab`, `.dynsym`, and the `.symtab` of a separate debug file
/// found through the build-id or `.gnu_debuglink`) are kept in one table
/// sorted by address; lookups are a binary search. DWARF line tables are
/// read through `addr2line`, lazily per compilation unit.
pub struct ElfObject {
    path: PathBuf,
    kind: ObjectType,
    build_id: Option<Vec<u8>>,
    segments: Vec<Segment>,
    interp: Option<PathBuf>,
    symbols: Vec<Sym>,
    names: Names,
    /// Behind a mutex: addr2line parses units lazily through `&self`.
    dwarf: Option<Mutex<addr2line::Context<Reader>>>,
    debug_file: Option<PathBuf>,
    refused: Vec<String>,
    /// Debug sections not read, with why (`.debug_str: it declares ...`).
    skipped_debug: Vec<String>,
}

impl std::fmt::Debug for ElfObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ElfObject")
            .field("path", &self.path)
            .field("kind", &self.kind)
            .field("symbols", &self.symbols.len())
            .field("dwarf", &self.dwarf.is_some())
            .finish_non_exhaustive()
    }
}

/// Directories searched for separate debug files, as gdb does.
const DEBUG_ROOT: &str = "/usr/lib/debug";

fn obj_err(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Object {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

impl ElfObject {
    /// Map and parse the file at `path`. With `debug_info`, also load
    /// DWARF (from the file or a separate debug file) for file:line lookups.
    ///
    /// Only a regular file of at most [`MAX_OBJECT_SIZE`] bytes is opened
    /// (without blocking, so a FIFO cannot hang it), and it is mapped, not
    /// read: memory grows with the pages parsed, not with the file
    /// ([`crate::file`]). Anything else is [`Error::Refused`].
    pub fn open(path: &Path, debug_info: bool) -> Result<Self> {
        Self::open_in(path, None, debug_info)
    }

    /// [`ElfObject::open`] for a file under `root` (`-r DIR`, perf's `--symfs`): separate
    /// debug files are looked for under `root` too, and a `.gnu_debuglink` that is not a
    /// plain file name (`../x`, `/x`) is refused ([`ElfObject::refused_debug_links`]).
    pub(crate) fn open_in(path: &Path, root: Option<&Path>, debug_info: bool) -> Result<Self> {
        let data = match root {
            Some(r) => map_regular_under(path, r, MAX_OBJECT_SIZE)?,
            None => map_regular(path, MAX_OBJECT_SIZE)?,
        };
        Self::parse_bytes(path, root, data, debug_info)
    }

    /// Parse an object from bytes already in memory; `path` is used for
    /// messages and to find separate debug files.
    pub fn parse(path: &Path, data: Arc<[u8]>, debug_info: bool) -> Result<Self> {
        Self::parse_bytes(path, None, Bytes::from(data), debug_info)
    }

    fn parse_bytes(
        path: &Path,
        root: Option<&Path>,
        data: Bytes,
        debug_info: bool,
    ) -> Result<Self> {
        let file = object::File::parse(&*data).map_err(|e| obj_err(path, e))?;
        let kind = match file.kind() {
            object::ObjectKind::Executable => ObjectType::Executable,
            object::ObjectKind::Dynamic => ObjectType::Dynamic,
            _ => ObjectType::Other,
        };
        let build_id = file.build_id().ok().flatten().map(<[u8]>::to_vec);
        let segments = file
            .segments()
            .map(|s| {
                let (offset, filesz) = s.file_range();
                let executable = match s.flags() {
                    object::SegmentFlags::Elf { p_flags } => p_flags & object::elf::PF_X != 0,
                    _ => false,
                };
                Segment {
                    vaddr: s.address(),
                    memsz: s.size(),
                    offset,
                    filesz,
                    executable,
                }
            })
            .collect();
        let interp = file
            .section_by_name(".interp")
            .and_then(|s| s.data().ok())
            .map(|d| d.split(|&b| b == 0).next().unwrap_or_default())
            .filter(|d| !d.is_empty())
            .map(|d| PathBuf::from(String::from_utf8_lossy(d).into_owned()));

        let mut owned = String::new();
        let mut raw: Vec<(Sym, u8)> = Vec::new();
        collect_symbols(&file, &data, NameSource::Object, &mut raw);
        collect_plt(&file, data.len(), &mut owned, &mut raw);
        let mut debug_bytes = None;

        // A separate debug file (by build-id, then by .gnu_debuglink) supplies
        // DWARF and the full .symtab of a stripped object.
        let mut debug_file = None;
        let mut dwarf = None;
        let mut refused = Vec::new();
        let mut skipped_debug = Vec::new();
        let has_own_dwarf = file.section_by_name(".debug_info").is_some();
        let need_debug_file = !has_own_dwarf || !file.symbols().any(|_| true);
        if need_debug_file {
            let found = find_debug_file(path, root, &file, build_id.as_deref(), &mut refused);
            if let Some((dpath, ddata)) = found {
                if let Ok(dfile) = object::File::parse(&*ddata) {
                    collect_symbols(&dfile, &ddata, NameSource::DebugFile, &mut raw);
                    debug_bytes = Some(ddata.clone());
                    if debug_info && dfile.section_by_name(".debug_info").is_some() {
                        dwarf = load_dwarf(&dfile, &ddata, &mut skipped_debug);
                    }
                    debug_file = Some(dpath);
                }
            }
        }
        if debug_info && dwarf.is_none() && has_own_dwarf {
            dwarf = load_dwarf(&file, &data, &mut skipped_debug);
        }
        let names = Names {
            object: data,
            debug_file: debug_bytes,
            owned,
        };
        let symbols = finish_symbols(raw, &names);
        let dwarf = dwarf.map(Mutex::new);
        Ok(ElfObject {
            path: path.to_path_buf(),
            kind,
            build_id,
            segments,
            interp,
            symbols,
            names,
            dwarf,
            debug_file,
            refused,
            skipped_debug,
        })
    }

    /// The debug sections not read, each with why (`.debug_str: it declares N bytes
    /// inflated, more than ...`): compressed sections past [`DEBUG_INFLATE_BUDGET`] or
    /// whose data does not inflate as declared. Their file:line information is missing.
    pub fn skipped_debug_sections(&self) -> &[String] {
        &self.skipped_debug
    }

    /// Where the object's file (or its separate debug file) was found truncated while mapped:
    /// from that offset on its bytes read as zeros, so lookups there may come back empty
    /// ([`crate::file::Bytes::cut`]). `None` while both are intact.
    pub fn cut(&self) -> Option<(&Path, usize)> {
        if let Some(c) = self.names.object.cut() {
            return Some((&self.path, c));
        }
        let c = self.names.debug_file.as_ref()?.cut()?;
        Some((self.debug_file.as_deref().unwrap_or(&self.path), c))
    }

    /// The `.gnu_debuglink` names refused because they are not plain file names: followed,
    /// they would read a file outside the debug directories (or outside `-r DIR`).
    pub fn refused_debug_links(&self) -> &[String] {
        &self.refused
    }

    /// The path the object was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `ET_EXEC`, `ET_DYN` or other.
    pub fn object_type(&self) -> ObjectType {
        self.kind
    }

    /// The GNU build-id note, if any.
    pub fn build_id(&self) -> Option<&[u8]> {
        self.build_id.as_deref()
    }

    /// The `PT_LOAD` segments.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// The program interpreter (`PT_INTERP`), e.g. `/lib64/ld-linux-x86-64.so.2`.
    pub fn interpreter(&self) -> Option<&Path> {
        self.interp.as_deref()
    }

    /// Number of function symbols.
    pub fn symbol_count(&self) -> usize {
        self.symbols.len()
    }

    /// True when DWARF line information was loaded.
    pub fn has_debug_info(&self) -> bool {
        self.dwarf.is_some()
    }

    /// The separate debug file used, if any.
    pub fn debug_file(&self) -> Option<&Path> {
        self.debug_file.as_deref()
    }

    /// Translate a file offset (from a mapping's `pgoff`) to the address the
    /// object's symbols use (SVMA), through the `PT_LOAD` segment that holds
    /// that offset.
    pub fn file_offset_to_svma(&self, offset: u64) -> Option<u64> {
        self.segments
            .iter()
            .filter(|s| s.executable)
            .chain(self.segments.iter().filter(|s| !s.executable))
            .find(|s| offset >= s.offset && offset - s.offset < s.filesz.max(1))
            .map(|s| (offset - s.offset).wrapping_add(s.vaddr))
    }

    /// The lowest `PT_LOAD` address, page-aligned down (the load base's SVMA).
    pub fn base_svma(&self, page_size: u64) -> u64 {
        let mask = page_mask(page_size);
        self.segments.iter().map(|s| s.vaddr).min().unwrap_or(0) & mask
    }

    /// The first executable `PT_LOAD` segment's address, page-aligned down.
    pub fn text_svma(&self, page_size: u64) -> Option<u64> {
        let mask = page_mask(page_size);
        self.segments
            .iter()
            .find(|s| s.executable)
            .map(|s| s.vaddr & mask)
    }

    /// `[lowest, highest)` SVMA covered by the `PT_LOAD` segments.
    pub fn svma_extent(&self) -> Option<(u64, u64)> {
        let lo = self.segments.iter().map(|s| s.vaddr).min()?;
        let hi = self
            .segments
            .iter()
            .map(|s| s.vaddr.saturating_add(s.memsz))
            .max()?;
        Some((lo, hi))
    }

    /// `[lowest, highest)` SVMA covered by the executable `PT_LOAD`
    /// segments (the range a gmon histogram of this object covers).
    pub fn text_extent(&self) -> Option<(u64, u64)> {
        let exec = || self.segments.iter().filter(|s| s.executable);
        let lo = exec().map(|s| s.vaddr).min()?;
        let hi = exec().map(|s| s.vaddr.saturating_add(s.memsz)).max()?;
        (hi > lo).then_some((lo, hi))
    }

    /// The bounds `[start, end)` of the function symbol containing `svma`.
    pub fn symbol_bounds(&self, svma: u64) -> Option<(u64, u64)> {
        let idx = self.symbols.partition_point(|s| s.start <= svma);
        let s = self.symbols.get(idx.checked_sub(1)?)?;
        (svma < s.end).then_some((s.start, s.end))
    }

    /// The function symbol containing `svma`, by binary search.
    pub fn symbol(&self, svma: u64) -> Option<SymbolHit<'_>> {
        let idx = self.symbols.partition_point(|s| s.start <= svma);
        let i = idx.checked_sub(1)?;
        let s = self.symbols.get(i)?;
        if svma >= s.end {
            return None;
        }
        let name = self.names.get(s);
        Some(SymbolHit {
            index: u32::try_from(i).ok()?,
            name,
            start: s.start,
        })
    }

    /// The functions inlined at `svma`, innermost first, from DWARF; the
    /// outermost (real) function is not included. Empty without debug info.
    pub fn inlined_at(&self, svma: u64) -> Vec<InlinedFrame> {
        let mut out = self.frames_at(svma);
        // The last frame is the real function.
        out.pop();
        out
    }

    /// Every source-level frame at `svma` from DWARF, innermost first: the
    /// functions inlined there, then the real (outermost) function, each
    /// with its location (for a caller, the line of the inlined call).
    /// Empty without debug info.
    pub fn frames_at(&self, svma: u64) -> Vec<InlinedFrame> {
        let mut out = Vec::new();
        if svma == u64::MAX {
            return out;
        }
        let Some(Ok(ctx)) = self.dwarf.as_ref().map(|m| m.lock()) else {
            return out;
        };
        let Ok(mut frames) = ctx.find_frames(svma).skip_all_loads() else {
            return out;
        };
        while let Ok(Some(f)) = frames.next() {
            let name = f
                .function
                .as_ref()
                .and_then(|n| n.raw_name().ok())
                .map(|n| n.into_owned())
                .unwrap_or_default();
            let source = f.location.and_then(|l| {
                Some(SourceLocation {
                    file: l.file?.to_string(),
                    line: l.line.unwrap_or(0),
                })
            });
            out.push(InlinedFrame { name, source });
            if out.len() > 256 {
                break; // a DWARF cycle in a damaged file
            }
        }
        out
    }

    /// The source location of `svma` from DWARF, if debug info was loaded.
    pub fn location(&self, svma: u64) -> Option<SourceLocation> {
        // addr2line computes `probe + 1` (an overflow panic in debug builds).
        if svma == u64::MAX {
            return None;
        }
        let ctx = self.dwarf.as_ref()?.lock().ok()?;
        let loc = ctx.find_location(svma).ok().flatten()?;
        Some(SourceLocation {
            file: loc.file?.to_string(),
            line: loc.line.unwrap_or(0),
        })
    }
}

fn page_mask(page_size: u64) -> u64 {
    !(page_size.max(1).checked_next_power_of_two().unwrap_or(4096) - 1)
}

/// A function inlined at an address (see [`ElfObject::inlined_at`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InlinedFrame {
    /// The inlined function's raw (possibly mangled) name.
    pub name: String,
    /// The source location inside it, if known.
    pub source: Option<SourceLocation>,
}

/// Collect function symbols (`.symtab` and `.dynsym`). The `u8` is a
/// preference rank for aliases at one address (lower wins).
fn collect_symbols(
    file: &object::File<'_>,
    base: &[u8],
    src: NameSource,
    out: &mut Vec<(Sym, u8)>,
) {
    let text_end = |idx: Option<object::SectionIndex>| -> Option<u64> {
        let s = file.section_by_index(idx?).ok()?;
        Some(s.address().saturating_add(s.size()))
    };
    let in_text = |idx: Option<object::SectionIndex>| -> bool {
        // By flag, not kind: in a separate debug file code sections are
        // NOBITS but keep SHF_EXECINSTR.
        idx.and_then(|i| file.section_by_index(i).ok())
            .is_some_and(|s| match s.flags() {
                object::SectionFlags::Elf { sh_flags } => {
                    sh_flags & u64::from(object::elf::SHF_EXECINSTR) != 0
                }
                _ => s.kind() == SectionKind::Text,
            })
    };
    for sym in file.symbols().chain(file.dynamic_symbols()) {
        // Functions, and (as perf does) untyped labels in code sections,
        // such as assembly entry points (`_dl_start_user`).
        let label = sym.kind() == SymbolKind::Unknown
            && !sym.is_undefined()
            && in_text(sym.section().index());
        if !(sym.kind() == SymbolKind::Text && sym.is_definition() || label) {
            continue;
        }
        let Ok(name) = sym.name() else { continue };
        if name.is_empty() || label && (name.starts_with('$') || name.starts_with(".L")) {
            continue;
        }
        // The name stays in the file (borrowed at lookup); one outside it cannot be.
        let Some((off, len)) = slice_of(base, name) else {
            continue;
        };
        let start = sym.address();
        let end = if sym.size() > 0 {
            start.saturating_add(sym.size())
        } else {
            // Unknown size: up to the next symbol, at most the section end.
            text_end(sym.section().index()).unwrap_or(u64::MAX)
        };
        let rank = u8::from(label) * LABEL_RANK
            + u8::from(sym.size() == 0) * 4
            + u8::from(sym.is_weak()) * 2
            + u8::from(!sym.is_global() && !sym.is_weak());
        out.push((
            Sym {
                start,
                end,
                src,
                name_off: off,
                name_len: len,
            },
            rank,
        ));
    }
}

/// PLT stubs as perf names them, `func@plt`: the JUMP_SLOT relocations of
/// `.rela.plt`, in order, with their dynamic symbols' names, laid onto the
/// PLT's entries. x86-64: `.plt.sec` (IBT), 16-byte entries, when present,
/// else `.plt` after its 16-byte header; aarch64: `.plt` after its 32-byte
/// header, 16-byte entries. Other architectures get none; an object with
/// more relocations than entries gets only the entries that fit.
///
/// Each distinct name is built once, and their total stays within `budget` bytes (the
/// object's size): a crafted object cannot make them outgrow the file.
fn collect_plt(
    file: &object::File<'_>,
    budget: usize,
    names: &mut String,
    out: &mut Vec<(Sym, u8)>,
) {
    use object::{Architecture, ObjectSymbolTable, RelocationFlags, RelocationTarget};
    const ENTRY: u64 = 16;
    let (jump_slot, sections): (u32, &[(&str, u64)]) = match file.architecture() {
        Architecture::X86_64 => (
            object::elf::R_X86_64_JUMP_SLOT,
            &[(".plt.sec", 0), (".plt", 16)],
        ),
        Architecture::Aarch64 => (object::elf::R_AARCH64_JUMP_SLOT, &[(".plt", 32)]),
        _ => return,
    };
    let Some((plt, header)) = sections
        .iter()
        .find_map(|(n, h)| Some((file.section_by_name(n)?, *h)))
    else {
        return;
    };
    let (Some(relocs), Some(dynsym)) = (file.dynamic_relocations(), file.dynamic_symbol_table())
    else {
        return;
    };
    let mut seen: std::collections::HashMap<(usize, usize), (u32, u32)> =
        std::collections::HashMap::new();
    let first = plt.address().saturating_add(header);
    let end = plt.address().saturating_add(plt.size());
    let slots = relocs.filter(
        |(_, r)| matches!(r.flags(), RelocationFlags::Elf { r_type } if r_type == jump_slot),
    );
    for (i, (_, r)) in (0u64..).zip(slots) {
        let start = first.saturating_add(i.saturating_mul(ENTRY));
        if start.saturating_add(ENTRY) > end {
            break;
        }
        let RelocationTarget::Symbol(idx) = r.target() else {
            continue;
        };
        let Some(name) = dynsym.symbol_by_index(idx).ok().and_then(|s| s.name().ok()) else {
            continue;
        };
        if name.is_empty() {
            continue;
        }
        let key = (name.as_ptr() as usize, name.len());
        let (off, len) = match seen.get(&key) {
            Some(&v) => v,
            None => {
                let full = name.len().saturating_add("@plt".len());
                if names.len().saturating_add(full) > budget {
                    return;
                }
                let (Ok(off), Ok(len)) = (u32::try_from(names.len()), u32::try_from(full)) else {
                    return;
                };
                names.push_str(name);
                names.push_str("@plt");
                seen.insert(key, (off, len));
                (off, len)
            }
        };
        out.push((
            Sym {
                start,
                end: start.saturating_add(ENTRY),
                src: NameSource::Owned,
                name_off: off,
                name_len: len,
            },
            0,
        ));
    }
}

/// Rank bit of labels: they lose to functions at the same address, and
/// labels inside a sized function are dropped.
const LABEL_RANK: u8 = 16;

/// Sort by address; among aliases at one address prefer, as perf does, a
/// function over a label, a sized symbol, a global over a local over a weak
/// one, fewer leading underscores, then the longest name.
fn finish_symbols(mut raw: Vec<(Sym, u8)>, names: &Names) -> Vec<Sym> {
    let name = |s: &Sym| names.get(s);
    let underscores = |s: &Sym| name(s).bytes().take_while(|&b| b == b'_').count();
    raw.sort_by(|(a, ra), (b, rb)| {
        a.start
            .cmp(&b.start)
            .then(ra.cmp(rb))
            .then_with(|| underscores(a).cmp(&underscores(b)))
            .then(b.name_len.cmp(&a.name_len))
            .then_with(|| name(a).cmp(name(b)))
    });
    raw.dedup_by_key(|(s, _)| s.start);
    let mut covered_until = 0u64;
    raw.retain(|(s, rank)| {
        if *rank >= LABEL_RANK {
            return s.start >= covered_until;
        }
        if *rank & 4 == 0 {
            covered_until = covered_until.max(s.end);
        }
        true
    });
    // Sized symbols keep their size; unsized ones (rank >= 4) stop at the
    // next symbol or their section's end, whichever is first.
    let starts: Vec<u64> = raw.iter().map(|(s, _)| s.start).collect();
    raw.into_iter()
        .enumerate()
        .map(|(i, (mut s, rank))| {
            if rank >= 4 {
                let next = starts.get(i + 1).copied().unwrap_or(u64::MAX);
                s.end = s.end.min(next);
            }
            if s.end <= s.start {
                s.end = s.start.saturating_add(1);
            }
            s
        })
        .collect()
}

/// The most bytes compressed debug sections (`SHF_COMPRESSED`: zlib, zstd) may inflate to,
/// over every object this process holds open at once. A section's inflating is bounded by
/// the size its header declares, and a section whose declared size passes what is left of
/// this budget is not inflated at all: it is skipped and reported
/// ([`ElfObject::skipped_debug_sections`], [`crate::Warning::DebugSectionSkipped`]), its
/// objects' file:line information missing. (A 540 KB ELF whose `.debug_str` declares and
/// inflates to 512 MB is a decompression bomb.)
///
/// ```
/// assert_eq!(pmc_analyze::object::DEBUG_INFLATE_BUDGET, 256 << 20);
/// ```
pub const DEBUG_INFLATE_BUDGET: u64 = 256 << 20;

/// Bytes of inflated debug sections held now (against [`DEBUG_INFLATE_BUDGET`]).
static INFLATED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A share of [`DEBUG_INFLATE_BUDGET`], given back when dropped (with the bytes it stands for).
struct BudgetShare(u64);

impl BudgetShare {
    /// `n` bytes of the budget, if that many are left.
    fn take(n: u64) -> Option<BudgetShare> {
        use std::sync::atomic::Ordering;
        INFLATED
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                used.checked_add(n).filter(|&t| t <= DEBUG_INFLATE_BUDGET)
            })
            .ok()
            .map(|_| BudgetShare(n))
    }
}

impl Drop for BudgetShare {
    fn drop(&mut self) {
        INFLATED.fetch_sub(self.0, std::sync::atomic::Ordering::SeqCst);
    }
}

/// A compressed section inflated within its declared size and the budget; `Err` says why
/// it was not.
fn inflate(c: &object::CompressedData<'_>) -> std::result::Result<Bytes, String> {
    use std::io::Read;
    let size = c.uncompressed_size;
    let Some(share) = BudgetShare::take(size) else {
        return Err(format!(
            "it declares {size} bytes inflated, more than the {} MiB left of the budget for \
             compressed debug sections",
            DEBUG_INFLATE_BUDGET.saturating_sub(INFLATED.load(std::sync::atomic::Ordering::SeqCst))
                >> 20
        ));
    };
    let mut v = Vec::new();
    let len = usize::try_from(size).map_err(|_| "too large for this system".to_owned())?;
    v.try_reserve_exact(len)
        .map_err(|_| format!("cannot hold its {size} bytes"))?;
    // Never more than declared: read up to the declared size, then one byte more, which
    // must not be there.
    fn bounded(mut d: impl Read, size: u64, v: &mut Vec<u8>) -> std::io::Result<(usize, bool)> {
        let n = (&mut d).take(size).read_to_end(v)?;
        let mut one = [0u8; 1];
        Ok((n, d.read(&mut one)? > 0))
    }
    let read = match c.format {
        object::CompressionFormat::Zlib => {
            bounded(flate2::read::ZlibDecoder::new(c.data), size, &mut v)
        }
        object::CompressionFormat::Zstandard => {
            match ruzstd::decoding::StreamingDecoder::new(c.data) {
                Ok(d) => bounded(d, size, &mut v),
                Err(e) => return Err(format!("bad zstd data ({e})")),
            }
        }
        _ => return Err("an unknown compression".into()),
    };
    match read {
        Ok((n, false)) if n as u64 == size => Ok(Bytes::owned_with(v, Box::new(share))),
        Ok((_, true)) => Err(format!("it inflates past the {size} bytes it declares")),
        Ok((n, false)) => Err(format!(
            "it inflates to {n} bytes, not the {size} it declares"
        )),
        Err(e) => Err(format!("bad compressed data ({e})")),
    }
}

/// The DWARF of `file` (whose bytes are `data`): uncompressed sections are views into the
/// file, compressed ones inflated within [`DEBUG_INFLATE_BUDGET`]; each section that could
/// not be read is named in `skipped` with why.
fn load_dwarf(
    file: &object::File<'_>,
    data: &Bytes,
    skipped: &mut Vec<String>,
) -> Option<addr2line::Context<Reader>> {
    let endian = if file.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    };
    let whole = gimli::EndianReader::new(data.clone(), endian);
    let empty = Bytes::from(Vec::new());
    let mut load = |id: gimli::SectionId| -> std::result::Result<Reader, gimli::Error> {
        let none = || gimli::EndianReader::new(empty.clone(), endian);
        let Some(section) = file.section_by_name(id.name()) else {
            return Ok(none());
        };
        if section.kind() == SectionKind::UninitializedData {
            return Ok(none());
        }
        let compressed = match section.compressed_data() {
            Ok(c) => c,
            Err(e) => {
                skipped.push(format!("{}: {e}", id.name()));
                return Ok(none());
            }
        };
        if compressed.format == object::CompressionFormat::None {
            // Uncompressed: a view into the file, no copy.
            let range = section.file_range().and_then(|(o, l)| {
                let o = usize::try_from(o).ok()?;
                let e = o.checked_add(usize::try_from(l).ok()?)?;
                (e <= data.len()).then_some(o..e)
            });
            return Ok(range.map_or_else(none, |r| whole.range(r)));
        }
        match inflate(&compressed) {
            Ok(b) => Ok(gimli::EndianReader::new(b, endian)),
            Err(why) => {
                skipped.push(format!("{}: {why}", id.name()));
                Ok(none())
            }
        }
    };
    let dwarf = gimli::Dwarf::load(&mut load).ok()?;
    addr2line::Context::from_dwarf(dwarf).ok()
}

/// Is a `.gnu_debuglink` name a plain file name (what `objcopy --add-gnu-debuglink` writes)?
/// Anything with a `/`, or `.`/`..`, would lead out of the directories searched.
fn plain_file_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains('/') && !name.contains('\0')
}

fn find_debug_file(
    path: &Path,
    root: Option<&Path>,
    file: &object::File<'_>,
    build_id: Option<&[u8]>,
    refused: &mut Vec<String>,
) -> Option<(PathBuf, Bytes)> {
    // The debug directory: the root's own with -r DIR, as perf's --symfs does.
    let debug_root = match root {
        Some(r) => r.join(DEBUG_ROOT.trim_start_matches('/')),
        None => PathBuf::from(DEBUG_ROOT),
    };
    let mut candidates = Vec::new();
    if let Some(id) = build_id.filter(|id| id.len() >= 2) {
        let h = hex(id);
        let (dir, rest) = h.split_at(2);
        candidates.push(debug_root.join(format!(".build-id/{dir}/{rest}.debug")));
    }
    if let Ok(Some((name, _crc))) = file.gnu_debuglink() {
        let name = String::from_utf8_lossy(name).into_owned();
        match path.parent() {
            _ if !plain_file_name(&name) => refused.push(name),
            Some(dir) => {
                candidates.push(dir.join(&name));
                candidates.push(dir.join(".debug").join(&name));
                let inside = root.and_then(|r| dir.strip_prefix(r).ok()).unwrap_or(dir);
                let rel = inside.strip_prefix("/").unwrap_or(inside);
                candidates.push(debug_root.join(rel).join(&name));
            }
            None => {}
        }
    }
    for c in candidates {
        if c == path {
            continue;
        }
        // Debug files are found by name, so they get the same checks as objects.
        let mapped = match root {
            Some(r) => map_regular_under(&c, r, MAX_OBJECT_SIZE),
            None => map_regular(&c, MAX_OBJECT_SIZE),
        };
        let bytes = match mapped {
            Ok(b) => b,
            Err(Error::Refused { reason, .. }) if reason.contains("outside the root") => {
                refused.push(format!("{} ({reason})", c.display()));
                continue;
            }
            Err(_) => continue,
        };
        // A build-id match is required when both sides have one.
        let ok = match (build_id, object::File::parse(&*bytes).ok()) {
            (Some(want), Some(f)) => f.build_id().ok().flatten().is_none_or(|got| got == want),
            (None, Some(_)) => true,
            (_, None) => false,
        };
        if ok {
            return Some((c, bytes));
        }
    }
    None
}

/// Lower-case hex of a build-id, for messages.
pub fn build_id_hex(id: &[u8]) -> String {
    hex(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 32 item 6: a compressed section inflates within its declared size and the
    /// budget; one that declares more than is left, or inflates to more or less than it
    /// declares, is refused (and the refusal allocates nothing).
    #[test]
    fn compressed_sections_inflate_within_bounds() {
        use std::io::Write;
        let text = b"main\0hot_leaf\0cold_leaf\0".repeat(100);
        let zlib = |data: &[u8]| {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        };
        let z = zlib(&text);
        let c = |format, data: &'static [u8], size| object::CompressedData {
            format,
            data,
            uncompressed_size: size,
        };
        let z: &'static [u8] = Box::leak(z.into_boxed_slice());
        let zl = object::CompressionFormat::Zlib;
        let ok = inflate(&c(zl, z, text.len() as u64)).unwrap();
        assert_eq!(&*ok, &text[..]);
        let short = inflate(&c(zl, z, text.len() as u64 - 1)).err().unwrap();
        assert!(short.contains("past"), "{short}");
        let long = inflate(&c(zl, z, text.len() as u64 + 1)).err().unwrap();
        assert!(long.contains("not the"), "{long}");
        let bomb = inflate(&c(zl, z, DEBUG_INFLATE_BUDGET + 1)).err().unwrap();
        assert!(bomb.contains("budget"), "{bomb}");
        let zs: &'static [u8] = Box::leak(
            ruzstd::encoding::compress_to_vec(
                &text[..],
                ruzstd::encoding::CompressionLevel::Fastest,
            )
            .into_boxed_slice(),
        );
        let zstd = object::CompressionFormat::Zstandard;
        assert_eq!(
            &*inflate(&c(zstd, zs, text.len() as u64)).unwrap(),
            &text[..]
        );
        assert!(inflate(&c(zstd, zs, 10)).is_err());
    }

    /// An object truncated while open: its names read as empty past the cut, the cut is
    /// reported, and nothing raises SIGBUS.
    #[test]
    fn an_object_truncated_while_open_reports_the_cut() {
        let exe = std::env::current_exe().unwrap();
        let p = std::env::temp_dir().join(format!("pmc-analyze-obj-{}", std::process::id()));
        std::fs::copy(&exe, &p).unwrap();
        let elf = ElfObject::open(&p, false).unwrap();
        assert!(elf.symbol_count() > 0);
        assert!(elf.cut().is_none());
        std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(4096)
            .unwrap();
        // Every symbol's name lives past the first page: each reads as zeros now.
        let any = (0..elf.symbol_count())
            .filter_map(|i| elf.symbols.get(i).map(|s| elf.names.get(s).len()))
            .filter(|&n| n > 0)
            .count();
        let (file, offset) = elf.cut().expect("the cut is reported");
        assert_eq!(file, p.as_path());
        assert!(offset >= 4096, "{offset}");
        assert!(any < elf.symbol_count(), "names past the cut read as empty");
        let _ = std::fs::remove_file(&p);
    }
}
