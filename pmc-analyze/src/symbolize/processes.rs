//! Following a log's process events (`Symbolizer::observe`): exec, map,
//! fork, exit; which object is mapped where in which process.

use super::{basename, Mapping, Symbolizer, Xlate};
use crate::object::ObjectType;
use pmc_log::record::{Map, Record, EXEC_LEGACY_ENTRY};
use std::sync::Arc;

impl Symbolizer {
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
}
