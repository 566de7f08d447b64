//! The records a new sink starts with: the session's state, not its
//! history (freebsd-audit-3 finding E).
//!
//! hwpmc writes each describing record once (an allocation, an attach, the
//! one-time dump of every process and mapping at a first system-sampling
//! start, `hwpmc_mod.c` `pmc_log_all_process_mappings()` and
//! `pmc_process_allproc()`), so a sink swapped in later must be given them
//! again. They are kept keyed by what they describe, and a later record
//! that ends it drops it: a PMCDETACH its PMCATTACH, a MAP_OUT the MAP_INs
//! it covers, an exec the process's old mappings, a SYSEXIT (or PROCEXIT)
//! everything of that process, a THR_EXIT its THR_CREATE. What is always
//! replayed: INITIALIZE, the allocations (one per PMC id, the newest) and
//! the live attaches, a few bytes per PMC. The rest (processes, threads,
//! mappings) is bounded by [`OPTIONAL_MAX`]: over it the oldest go first,
//! counted, so a large dump never crowds out what came after it (the old
//! buffer kept the first megabyte, and a session whose dump filled it lost
//! every later PMCALLOCATE/PMCATTACH for the next sink).

use pmc_log::bytes::ByteCursor;
use pmc_log::hwpmc::{
    pmclog_header_type, PMCLOG_TYPE_INITIALIZE, PMCLOG_TYPE_MAP_IN, PMCLOG_TYPE_MAP_OUT,
    PMCLOG_TYPE_PMCALLOCATE, PMCLOG_TYPE_PMCALLOCATEDYN, PMCLOG_TYPE_PMCATTACH,
    PMCLOG_TYPE_PMCDETACH, PMCLOG_TYPE_PROCEXEC, PMCLOG_TYPE_PROCEXIT, PMCLOG_TYPE_PROCFORK,
    PMCLOG_TYPE_PROC_CREATE, PMCLOG_TYPE_SYSEXIT, PMCLOG_TYPE_THR_CREATE, PMCLOG_TYPE_THR_EXIT,
};
use std::collections::BTreeMap;

/// The most bytes of process, thread and mapping records kept.
pub(crate) const OPTIONAL_MAX: usize = 4 << 20;

/// What a kept record describes (field offsets: `sys/sys/pmclog.h`, pinned
/// by `abi-amd64.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Init,
    /// PMCALLOCATE / PMCALLOCATEDYN: `pl_pmcid` at 16.
    Alloc(u32),
    /// PMCATTACH: `pl_pmcid` at 16, `pl_pid` at 20.
    Attach(u32, i32),
    /// PROC_CREATE: `pl_pid` at 16.
    Proc(i32),
    /// PROCFORK: `pl_newpid` at 20.
    Fork(i32),
    /// PROCEXEC: `pl_pid` at 16, `pl_pmcid` at 20.
    Exec(i32, u32),
    /// MAP_IN: `pl_pid` at 16, `pl_start` at 24 (pid -1: the kernel).
    Map(i32, u64),
    /// THR_CREATE: `pl_pid` at 20, `pl_tid` at 16.
    Thread(i32, i32),
}

impl Key {
    /// Always replayed: the session's header, its PMCs and their targets,
    /// and the kernel's objects (written once, at the first sampling start,
    /// so the oldest of all and the first a bound would evict).
    fn must(self) -> bool {
        matches!(
            self,
            Key::Init | Key::Alloc(_) | Key::Attach(..) | Key::Map(-1, _)
        )
    }
    fn pid(self) -> Option<i32> {
        match self {
            Key::Init | Key::Alloc(_) => None,
            Key::Attach(_, p)
            | Key::Proc(p)
            | Key::Fork(p)
            | Key::Exec(p, _)
            | Key::Map(p, _)
            | Key::Thread(p, _) => Some(p),
        }
    }
}

/// The describing records, in arrival order.
#[derive(Default)]
pub(crate) struct Replay {
    seq: u64,
    by_key: BTreeMap<Key, u64>,
    recs: BTreeMap<u64, (Key, Vec<u8>)>,
    optional_bytes: usize,
}

fn i32_at(r: &ByteCursor<'_>, off: usize) -> Option<i32> {
    r.u32_at(off).ok().map(|v| v as i32)
}

impl Replay {
    /// Takes in one whole record; returns the bytes of records dropped to
    /// stay under [`OPTIONAL_MAX`].
    pub(crate) fn take(&mut self, rec: &[u8]) -> u64 {
        let r = ByteCursor::le(rec);
        let Ok(word) = r.u32_at(0) else { return 0 };
        let (pid16, u16_, pid20) = (i32_at(&r, 16), r.u32_at(16).ok(), i32_at(&r, 20));
        match pmclog_header_type(word) {
            PMCLOG_TYPE_INITIALIZE => self.put(Key::Init, rec),
            PMCLOG_TYPE_PMCALLOCATE | PMCLOG_TYPE_PMCALLOCATEDYN => match u16_ {
                Some(id) => self.put(Key::Alloc(id), rec),
                None => 0,
            },
            PMCLOG_TYPE_PMCATTACH => match (u16_, pid20) {
                (Some(id), Some(pid)) => self.put(Key::Attach(id, pid), rec),
                _ => 0,
            },
            PMCLOG_TYPE_PMCDETACH => {
                if let (Some(id), Some(pid)) = (u16_, pid20) {
                    self.remove(Key::Attach(id, pid));
                }
                0
            }
            PMCLOG_TYPE_PROC_CREATE => match pid16 {
                Some(pid) => {
                    // A new process with that pid: the old one's state is gone.
                    self.forget_process(pid, false);
                    self.put(Key::Proc(pid), rec)
                }
                None => 0,
            },
            PMCLOG_TYPE_PROCFORK => match pid20 {
                Some(pid) => self.put(Key::Fork(pid), rec),
                None => 0,
            },
            PMCLOG_TYPE_PROCEXEC => match (pid16, r.u32_at(20).ok()) {
                (Some(pid), Some(id)) => {
                    // exec replaces the address space.
                    self.remove_range(Key::Map(pid, 0), Key::Map(pid, u64::MAX));
                    self.put(Key::Exec(pid, id), rec)
                }
                _ => 0,
            },
            PMCLOG_TYPE_MAP_IN => match (pid16, r.u64_at(24).ok()) {
                (Some(pid), Some(start)) => self.put(Key::Map(pid, start), rec),
                _ => 0,
            },
            PMCLOG_TYPE_MAP_OUT => {
                if let (Some(pid), Ok(start), Ok(end)) = (pid16, r.u64_at(24), r.u64_at(32)) {
                    if start < end {
                        self.remove_range(Key::Map(pid, start), Key::Map(pid, end - 1));
                    }
                }
                0
            }
            PMCLOG_TYPE_THR_CREATE => match (pid16, pid20) {
                (Some(tid), Some(pid)) => self.put(Key::Thread(pid, tid), rec),
                _ => 0,
            },
            PMCLOG_TYPE_THR_EXIT => {
                if let Some(tid) = pid16 {
                    let gone: Vec<Key> = self
                        .by_key
                        .keys()
                        .filter(|k| matches!(k, Key::Thread(_, t) if *t == tid))
                        .copied()
                        .collect();
                    for k in gone {
                        self.remove(k);
                    }
                }
                0
            }
            // SYSEXIT (system-sampling owners) and PROCEXIT (counting PMCs
            // that log): the process is gone.
            PMCLOG_TYPE_SYSEXIT => {
                if let Some(pid) = pid16 {
                    self.forget_process(pid, true);
                }
                0
            }
            PMCLOG_TYPE_PROCEXIT => {
                if let Some(pid) = pid20 {
                    self.forget_process(pid, true);
                }
                0
            }
            _ => 0,
        }
    }

    /// The records to start a new sink with, in arrival order.
    pub(crate) fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (_, rec) in self.recs.values() {
            out.extend_from_slice(rec);
        }
        out
    }

    /// Whether `rec`'s type is one [`Replay::take`] keeps or acts on.
    pub(crate) fn wants(ty: u32) -> bool {
        matches!(
            ty,
            PMCLOG_TYPE_INITIALIZE
                | PMCLOG_TYPE_PMCALLOCATE
                | PMCLOG_TYPE_PMCALLOCATEDYN
                | PMCLOG_TYPE_PMCATTACH
                | PMCLOG_TYPE_PMCDETACH
                | PMCLOG_TYPE_MAP_IN
                | PMCLOG_TYPE_MAP_OUT
                | PMCLOG_TYPE_PROCEXEC
                | PMCLOG_TYPE_PROCFORK
                | PMCLOG_TYPE_SYSEXIT
                | PMCLOG_TYPE_PROCEXIT
                | PMCLOG_TYPE_PROC_CREATE
                | PMCLOG_TYPE_THR_CREATE
                | PMCLOG_TYPE_THR_EXIT
        )
    }

    fn put(&mut self, key: Key, rec: &[u8]) -> u64 {
        self.remove(key);
        self.seq += 1;
        self.by_key.insert(key, self.seq);
        if !key.must() {
            self.optional_bytes += rec.len();
        }
        self.recs.insert(self.seq, (key, rec.to_vec()));
        let mut dropped = 0u64;
        while self.optional_bytes > OPTIONAL_MAX {
            let Some(oldest) = self
                .recs
                .iter()
                .find(|(_, (k, _))| !k.must())
                .map(|(_, (k, _))| *k)
            else {
                break;
            };
            dropped += self.remove(oldest) as u64;
        }
        dropped
    }

    /// Drops `key`'s record; its size.
    fn remove(&mut self, key: Key) -> usize {
        let Some(seq) = self.by_key.remove(&key) else {
            return 0;
        };
        let n = self.recs.remove(&seq).map_or(0, |(_, r)| r.len());
        if !key.must() {
            self.optional_bytes = self.optional_bytes.saturating_sub(n);
        }
        n
    }

    fn remove_range(&mut self, from: Key, to: Key) {
        let keys: Vec<Key> = self.by_key.range(from..=to).map(|(k, _)| *k).collect();
        for k in keys {
            self.remove(k);
        }
    }

    /// Everything of process `pid`; its attaches too when it is gone.
    fn forget_process(&mut self, pid: i32, attaches: bool) {
        let keys: Vec<Key> = self
            .by_key
            .keys()
            .filter(|k| k.pid() == Some(pid) && (attaches || !matches!(k, Key::Attach(..))))
            .copied()
            .collect();
        for k in keys {
            self.remove(k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmc_log::hwpmc::Encoder;

    fn rec(f: impl FnOnce(&mut Encoder<&mut Vec<u8>>)) -> Vec<u8> {
        let mut out = Vec::new();
        let mut e = Encoder::new(&mut out);
        f(&mut e);
        out
    }

    fn types(r: &Replay) -> Vec<u32> {
        let b = r.bytes();
        let mut out = Vec::new();
        let mut off = 0;
        while off + 4 <= b.len() {
            let w = u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]]);
            out.push(pmclog_header_type(w));
            off += (w & 0xFFFF) as usize;
        }
        out
    }

    /// A state, not a history: what ended is not replayed, and a huge dump
    /// never pushes out an allocation or attach that came after it.
    #[test]
    fn keeps_the_live_state_and_what_must_be_replayed() {
        let mut r = Replay::default();
        r.take(&rec(|e| {
            e.initialize(1, 0x0A00_0000, 0x98, 1, 0, 0, "x").unwrap()
        }));
        r.take(&rec(|e| e.pmc_allocate(2, 7, 0, 0, 1000).unwrap()));
        r.take(&rec(|e| e.pmc_attach(3, 7, 50, b"/bin/sh").unwrap()));
        r.take(&rec(|e| e.map_in(4, 50, 0x1000, b"/lib/a").unwrap()));
        r.take(&rec(|e| e.map_in(5, 50, 0x9000, b"/lib/b").unwrap()));
        r.take(&rec(|e| e.map_out(6, 50, 0x8000, 0xA000).unwrap()));
        assert_eq!(
            types(&r),
            [
                PMCLOG_TYPE_INITIALIZE,
                PMCLOG_TYPE_PMCALLOCATE,
                PMCLOG_TYPE_PMCATTACH,
                PMCLOG_TYPE_MAP_IN
            ]
        );
        r.take(&rec(|e| e.proc_create(7, 60, 0, b"cc").unwrap()));
        r.take(&rec(|e| e.thr_create(8, 6000, 60, 0, b"cc").unwrap()));
        r.take(&rec(|e| e.map_in(9, 60, 0x1000, b"/bin/cc").unwrap()));
        r.take(&rec(|e| e.sysexit(10, 60).unwrap()));
        r.take(&rec(|e| e.pmc_detach(11, 7, 50).unwrap()));
        assert_eq!(
            types(&r),
            [
                PMCLOG_TYPE_INITIALIZE,
                PMCLOG_TYPE_PMCALLOCATE,
                PMCLOG_TYPE_MAP_IN
            ]
        );
        // A dump larger than the bound, then an allocation and an attach.
        let path = [b'p'; 1000];
        let mut dropped = 0;
        for pid in 100..(100 + (OPTIONAL_MAX / 1000 + 100) as i32) {
            dropped += r.take(&rec(|e| e.map_in(12, pid, 0x1000, &path).unwrap()));
        }
        assert!(dropped > 0);
        r.take(&rec(|e| e.pmc_allocate(13, 8, 0, 0, 1000).unwrap()));
        r.take(&rec(|e| e.pmc_attach(14, 8, 99, b"/bin/late").unwrap()));
        let t = types(&r);
        assert_eq!(t[..2], [PMCLOG_TYPE_INITIALIZE, PMCLOG_TYPE_PMCALLOCATE]);
        assert_eq!(
            t[t.len() - 2..],
            [PMCLOG_TYPE_PMCALLOCATE, PMCLOG_TYPE_PMCATTACH],
            "what came after the dump is kept"
        );
        assert!(r.optional_bytes <= OPTIONAL_MAX);
    }
}
