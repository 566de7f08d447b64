//! Resolving addresses: `Symbolizer::resolve` and the queries the reports
//! make (symbol bounds, mappings, inlined source frames, call chains).

use super::{
    basename, demangle, AddressInfo, FuncId, FuncKey, Function, MappedRange, MappingDetails,
    ObjSlot, ObjState, ObjectInfo, Process, ResolvedPc, SourceFrame, Symbolizer, Xlate,
    KERNEL_START, PERF_CONTEXT_MAX,
};
use crate::object::ObjectType;
use std::collections::HashMap;
use std::sync::Arc;

impl Symbolizer {
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

    /// The raw name and bounds `[start, end)` of the kallsyms symbol covering kernel
    /// address `ip` (run-time addresses, which are kallsyms' own), for the listings that
    /// [`Symbolizer::raw_symbol`] serves for objects; `None` without kallsyms or a symbol.
    pub fn kernel_raw_symbol(&mut self, ip: u64) -> Option<(String, u64, u64)> {
        if !self.kallsyms_decided {
            self.set_log_origin("", "");
        }
        let s = self.kallsyms.as_ref()?.lookup(ip)?;
        Some((s.name.to_owned(), s.start, s.end.unwrap_or(ip + 1)))
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
    /// [`SymbolizeOptions::inlines`](super::SymbolizeOptions::inlines) says), then the function
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
    /// becomes a root function named `[truncated]`. With [`SymbolizeOptions::inlines`](super::SymbolizeOptions::inlines), the
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
