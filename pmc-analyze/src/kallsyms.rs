//! Kernel symbols from `/proc/kallsyms`.

use std::path::Path;

use crate::error::Result;

#[derive(Clone, Copy, Debug)]
struct KSym {
    start: u64,
    name_off: u32,
    name_len: u16,
    /// Index into `modules`, `u16::MAX` for the core kernel.
    module: u16,
}

/// A kernel symbol found by [`Kallsyms::lookup`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelSymbol<'a> {
    /// Index in the sorted table (stable for this table).
    pub index: u32,
    /// Symbol name.
    pub name: &'a str,
    /// Module name (`None` for the core kernel).
    pub module: Option<&'a str>,
    /// Symbol address.
    pub start: u64,
    /// Where the symbol ends: the next symbol's address (`None` for the last).
    pub end: Option<u64>,
}

/// The text symbols of `/proc/kallsyms` (or a copy of it), sorted by address.
///
/// A symbol's extent is up to the next symbol; addresses past the last
/// symbol of a module or past `_etext` are not resolved.
#[derive(Debug, Default)]
pub struct Kallsyms {
    syms: Vec<KSym>,
    names: String,
    modules: Vec<String>,
}

impl Kallsyms {
    /// Read and parse a kallsyms file (a regular file of at most
    /// [`crate::file::MAX_KALLSYMS_SIZE`] bytes; anything else is refused).
    /// An ELF file (a `vmlinux`) gives its symbol table's functions, at
    /// their link-time addresses: right for a kernel without KASLR (or
    /// booted `nokaslr`); a randomized kernel needs its kallsyms.
    pub fn open(path: &Path) -> Result<Self> {
        // Only a regular file, opened without blocking, at most MAX_KALLSYMS_SIZE bytes.
        let text = crate::file::read_regular(path, crate::file::MAX_KALLSYMS_SIZE)?;
        if text.starts_with(b"\x7fELF") {
            return Self::from_elf(path, &text);
        }
        Ok(Self::parse(&String::from_utf8_lossy(&text)))
    }

    /// The function symbols of a kernel image (`vmlinux`), as kallsyms
    /// lines: text symbols, and the other defined symbols as boundaries.
    fn from_elf(path: &Path, data: &[u8]) -> Result<Self> {
        use object::{Object, ObjectSymbol, SymbolKind};
        use std::fmt::Write as _;
        let file = object::File::parse(data).map_err(|e| crate::error::Error::Object {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let mut text = String::new();
        for sym in file.symbols() {
            let Ok(name) = sym.name() else { continue };
            if name.is_empty() || sym.is_undefined() {
                continue;
            }
            let ty = match sym.kind() {
                SymbolKind::Text => 't',
                SymbolKind::Data | SymbolKind::Unknown => 'd',
                _ => continue,
            };
            let _ = writeln!(text, "{:016x} {ty} {name}", sym.address());
        }
        Ok(Self::parse(&text))
    }

    /// Parse kallsyms text (`address type name [module]` per line). Lines
    /// that do not parse are skipped. When every address is zero (the
    /// `kptr_restrict` view of an unprivileged reader), the table is empty.
    pub fn parse(text: &str) -> Self {
        let mut k = Kallsyms::default();
        let mut raw: Vec<(u64, bool, KSym)> = Vec::new();
        for line in text.lines() {
            let mut it = line.split_ascii_whitespace();
            let (Some(addr), Some(ty), Some(name)) = (it.next(), it.next(), it.next()) else {
                continue;
            };
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            let is_text = matches!(ty, "t" | "T" | "w" | "W");
            // Non-text symbols still bound the extent of the text before them.
            let module = it
                .next()
                .map(|m| m.trim_start_matches('[').trim_end_matches(']'));
            let module = match module {
                Some(m) => match k.modules.iter().position(|x| x == m) {
                    Some(i) => i,
                    None => {
                        k.modules.push(m.to_string());
                        k.modules.len() - 1
                    }
                },
                None => usize::from(u16::MAX),
            };
            let (Ok(name_off), Ok(name_len), Ok(module)) = (
                u32::try_from(k.names.len()),
                u16::try_from(name.len()),
                u16::try_from(module),
            ) else {
                continue;
            };
            if is_text {
                k.names.push_str(name);
            }
            raw.push((
                addr,
                is_text,
                KSym {
                    start: addr,
                    name_off,
                    name_len: if is_text { name_len } else { 0 },
                    module,
                },
            ));
        }
        if raw.iter().all(|(a, _, _)| *a == 0) {
            return Kallsyms::default();
        }
        // Aliases (one address, several names): text before non-text, and
        // among text symbols the last in file order, as perf names them.
        // perf's `symbols__fixup_end` gives every alias but the last one a
        // zero length, and `choose_best_symbol` ("Prefer a symbol with non
        // zero length") then keeps the last (tools/perf/util/symbol.c): on
        // x86 kallsyms lists `__pi___x86_indirect_thunk_rax` before
        // `__x86_indirect_thunk_rax`, and perf reports the second.
        raw.sort_by_key(|(a, text, _)| (*a, !*text)); // stable: file order kept
        let mut syms: Vec<KSym> = Vec::with_capacity(raw.len());
        let mut last: Option<(u64, bool)> = None;
        for (addr, text, sym) in raw {
            match (last, syms.last_mut()) {
                (Some((a, prev_text)), Some(prev)) if a == addr => {
                    if text && prev_text {
                        *prev = sym;
                    }
                }
                _ => {
                    syms.push(sym);
                    last = Some((addr, text));
                }
            }
        }
        k.syms = syms;
        k
    }

    /// Number of symbols (text and boundary markers).
    pub fn len(&self) -> usize {
        self.syms.len()
    }

    /// True when there are no usable symbols (unreadable or restricted).
    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    /// The text symbol containing `addr`.
    pub fn lookup(&self, addr: u64) -> Option<KernelSymbol<'_>> {
        let i = self
            .syms
            .partition_point(|s| s.start <= addr)
            .checked_sub(1)?;
        let s = self.syms.get(i)?;
        // The last symbol has no known end: accept only addresses close by.
        if i + 1 == self.syms.len() && addr - s.start > 1 << 20 {
            return None;
        }
        if s.name_len == 0 {
            return None; // a data symbol or end marker
        }
        let off = s.name_off as usize;
        let name = self.names.get(off..off + usize::from(s.name_len))?;
        Some(KernelSymbol {
            index: u32::try_from(i).ok()?,
            name,
            module: self.modules.get(usize::from(s.module)).map(String::as_str),
            start: s.start,
            end: self.syms.get(i + 1).map(|n| n.start),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_looks_up() {
        let k = Kallsyms::parse(
            "ffffffff81000000 T _text\n\
             ffffffff81000100 t do_one\n\
             ffffffff81000200 D some_data\n\
             garbage line\n\
             zz T bad_addr\n\
             ffffffffc0000000 t mod_fn\t[kvm]\n",
        );
        assert_eq!(k.lookup(0xffffffff81000150).map(|s| s.name), Some("do_one"));
        assert_eq!(k.lookup(0xffffffff81000000).map(|s| s.name), Some("_text"));
        assert_eq!(
            k.lookup(0xffffffff81000250),
            None,
            "data symbol ends do_one"
        );
        let m = k.lookup(0xffffffffc0000010);
        assert_eq!(m.map(|s| (s.name, s.module)), Some(("mod_fn", Some("kvm"))));
        assert_eq!(k.lookup(0x1000), None);
    }

    #[test]
    fn an_alias_is_named_as_perf_names_it_the_last_in_file_order() {
        let k = Kallsyms::parse(
            "ffffffff82253980 T __pi___x86_indirect_thunk_rax\n\
             ffffffff82253980 D a_data_marker\n\
             ffffffff82253980 T __x86_indirect_thunk_rax\n\
             ffffffff822539a0 T __x86_indirect_thunk_rbx\n",
        );
        let at = |a| k.lookup(a).map(|s| s.name);
        assert_eq!(at(0xffffffff82253980), Some("__x86_indirect_thunk_rax"));
        assert_eq!(at(0xffffffff82253990), Some("__x86_indirect_thunk_rax"));
        assert_eq!(at(0xffffffff822539a0), Some("__x86_indirect_thunk_rbx"));
    }

    #[test]
    fn restricted_view_is_empty() {
        let k = Kallsyms::parse("0000000000000000 T _text\n0000000000000000 t x\n");
        assert!(k.is_empty());
        assert_eq!(k.lookup(0), None);
    }
}
