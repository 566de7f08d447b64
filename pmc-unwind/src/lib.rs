//! DWARF call-frame unwinding of captured user stacks, for pmc's sampling logs.
//!
//! An [`Unwinder`] learns each process's mappings ([`Unwinder::add_map`], `exec`, `fork`,
//! `exit`) and turns [`UserRegs`] plus stack bytes into an [`Unwound`] chain
//! ([`Unwinder::unwind`]); [`Stats`] counts; [`log`] does it over a pmc-log. Details follow.
//!
//! A sampling PMC opened with `CallGraph::Dwarf` (pmc-core) makes the kernel copy, with each
//! sample, the user registers and the top of the user stack (Linux's
//! `PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER`, as `perf record --call-graph dwarf`).
//! This crate turns those bytes into a callchain while recording, so the log stores a few
//! addresses per sample instead of kilobytes of stack, and every reader of the log (call
//! graphs, flame graphs, perf.data and pprof exports) works unchanged.
//!
//! The unwinding itself is [framehop](https://docs.rs/framehop)'s (the unwinder samply
//! uses), driven by each object's `.eh_frame` (indexed by `.eh_frame_hdr`) or
//! `.debug_frame`. This crate keeps what framehop needs: the executable mappings of every
//! process (from the log's map records, forks and execs), the objects behind them (opened
//! once, mapped, cached by path and checked against the mapping's build-id), and the vdso,
//! copied from this process (one kernel, one vdso image).
//!
//! An unwind that cannot go on (no unwind information, the captured stack ends, a frame
//! that does not check out) stops there and says so ([`Unwound::truncated`]): it never
//! guesses a frame.
//!
//! ```
//! use pmc_unwind::{UserRegs, Unwinder};
//! let mut u = Unwinder::new();
//! // A process whose mappings were never seen: only the sampled PC, marked truncated.
//! let mut chain = Vec::new();
//! let r = u.unwind(42, &UserRegs { pc: 0x1000, sp: 0x7ff0, fp: 0, lr: 0 }, &[], &mut chain);
//! assert_eq!(chain, [0x1000]);
//! assert!(r.truncated);
//! ```
#![warn(unreachable_pub, unnameable_types)]
#![forbid(unsafe_code)]

pub mod log;
mod object;

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use framehop::Unwinder as _;

use crate::object::Object;
pub use crate::object::{Section, MAX_OBJECT_SIZE};

/// The most frames one unwind yields (perf's default `kernel.perf_event_max_stack`); a deeper
/// stack ends truncated.
pub const MAX_FRAMES: usize = 127;

/// The most objects kept open at once; beyond it the least recently added are dropped and
/// reopened when needed, so a run over many short-lived binaries stays bounded.
pub const MAX_OBJECTS: usize = 4096;

/// The user registers an unwind starts from (a subset of the sample's `REGS_USER`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UserRegs {
    /// Program counter (x86-64 `rip`, AArch64 `pc`).
    pub pc: u64,
    /// Stack pointer; the captured stack starts here.
    pub sp: u64,
    /// Frame pointer (x86-64 `rbp`, AArch64 `x29`).
    pub fp: u64,
    /// Link register (AArch64 `x30`; unused on x86-64).
    pub lr: u64,
}

/// How one unwind ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Unwound {
    /// Frames appended (the PC first, then return addresses).
    pub frames: usize,
    /// The unwind stopped before the stack's root: frames beyond the last are unknown.
    pub truncated: bool,
}

/// Counts kept across unwinds, for reports and benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    /// Unwinds done.
    pub unwinds: u64,
    /// Frames produced.
    pub frames: u64,
    /// Unwinds that ended truncated.
    pub truncated: u64,
    /// Objects opened and parsed.
    pub objects: u64,
    /// Objects that could not be used (not a regular file, too large, not ELF, replaced,
    /// no call-frame information); their frames end an unwind.
    pub objects_refused: u64,
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
type Native = framehop::UnwinderNative<Section, framehop::MayAllocateDuringUnwind>;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
type NativeCache = framehop::CacheNative<framehop::MayAllocateDuringUnwind>;

/// One executable mapping, as a map record gave it.
#[derive(Clone, Debug)]
struct Mapping {
    range: Range<u64>,
    pgoff: u64,
    path: Arc<[u8]>,
    build_id: Arc<[u8]>,
}

/// The mappings of one process; framehop's modules are built at its first unwind, so
/// processes that are never unwound cost a list of mappings.
#[derive(Clone, Default)]
struct Process {
    maps: Vec<Mapping>,
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    unwinder: Option<Native>,
}

type ObjectKey = (Vec<u8>, Vec<u8>);

/// Unwinds the captured user stacks of many processes; see the crate documentation.
pub struct Unwinder {
    /// Shared between a parent and its forked children until one of them changes (maps,
    /// unmaps, builds its unwinder): a fork costs a reference count, an exit frees it.
    procs: HashMap<i32, Arc<Process>>,
    /// Objects by (path, build-id); `None` for one that could not be used.
    objects: HashMap<ObjectKey, Option<Arc<Object>>>,
    order: std::collections::VecDeque<ObjectKey>,
    vdso: Option<Option<Arc<Object>>>,
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    cache: Box<NativeCache>,
    stats: Stats,
    refusals: Vec<String>,
    /// Where object paths are looked up (`/` when `None`).
    root: Option<std::path::PathBuf>,
}

impl Default for Unwinder {
    fn default() -> Self {
        Unwinder::new()
    }
}

impl std::fmt::Debug for Unwinder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unwinder")
            .field("processes", &self.procs.len())
            .field("objects", &self.objects.len())
            .field("stats", &self.stats)
            .finish()
    }
}

/// Whether this build can unwind (x86-64 and AArch64; elsewhere every unwind is the PC alone,
/// truncated).
pub const SUPPORTED: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

impl Unwinder {
    /// An unwinder that knows no process yet.
    pub fn new() -> Unwinder {
        Unwinder {
            procs: HashMap::new(),
            objects: HashMap::new(),
            order: std::collections::VecDeque::new(),
            vdso: None,
            #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
            cache: Box::new(NativeCache::new()),
            stats: Stats::default(),
            refusals: Vec::new(),
            root: None,
        }
    }

    /// Looks up object paths under `root` instead of `/` (pmcstat's `-r DIR` with `-R`: the
    /// binaries of another machine, or of this one at record time). The vdso is this
    /// kernel's whatever the root.
    pub fn with_root(mut self, root: Option<std::path::PathBuf>) -> Unwinder {
        self.root = root;
        self
    }

    /// Counts so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Objects that could not be used, one line each (`path: reason`), at most 64 kept; taken
    /// out, so each is reported once.
    pub fn take_refusals(&mut self) -> Vec<String> {
        std::mem::take(&mut self.refusals)
    }

    fn object(&mut self, path: &[u8], build_id: &[u8]) -> Option<Arc<Object>> {
        if path == b"[vdso]" {
            if self.vdso.is_none() {
                let v = vdso_image().and_then(|b| Object::from_bytes(b).ok());
                self.vdso = Some(v.map(Arc::new));
            }
            return self.vdso.clone().flatten();
        }
        // Anonymous and special mappings ([stack], //anon, memfd:...) and deleted files have
        // no object to read.
        if !path.starts_with(b"/")
            || path.starts_with(b"//anon")
            || path.starts_with(b"/memfd:")
            || path.starts_with(b"/SYSV")
            || path.ends_with(b" (deleted)")
        {
            return None;
        }
        let key = (path.to_vec(), build_id.to_vec());
        if let Some(o) = self.objects.get(&key) {
            return o.clone();
        }
        let p = Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(path));
        let rooted = match &self.root {
            Some(r) => match pmc_filemap::under_root(r, p) {
                Some(q) => Some(q),
                None => {
                    self.refuse(path, "it leads outside the root (-r DIR); refused".into());
                    self.objects.insert(key, None);
                    return None;
                }
            },
            None => None,
        };
        let bid = (!build_id.is_empty()).then_some(build_id);
        let o = match Object::open(rooted.as_deref().unwrap_or(p), self.root.as_deref(), bid) {
            Ok(o) if o.has_cfi() => {
                self.stats.objects += 1;
                Some(Arc::new(o))
            }
            Ok(_) => {
                self.refuse(path, "no .eh_frame or .debug_frame".into());
                None
            }
            Err(why) => {
                self.refuse(path, why);
                None
            }
        };
        if self.order.len() >= MAX_OBJECTS {
            if let Some(old) = self.order.pop_front() {
                self.objects.remove(&old);
            }
        }
        self.order.push_back(key.clone());
        self.objects.insert(key, o.clone());
        o
    }

    fn refuse(&mut self, path: &[u8], why: String) {
        self.stats.objects_refused += 1;
        if self.refusals.len() < 64 {
            self.refusals
                .push(format!("{}: {why}", String::from_utf8_lossy(path)));
        }
    }

    /// Records an executable mapping of `pid`: `len` bytes at `start`, from file offset
    /// `pgoff` of `path` (with its build-id when the kernel gave one). A mapping over an
    /// older one replaces it (munmap is not reported). Cheap: objects are opened when the
    /// process is first unwound.
    pub fn add_map(
        &mut self,
        pid: i32,
        start: u64,
        len: u64,
        pgoff: u64,
        path: &[u8],
        build_id: &[u8],
    ) {
        let m = Mapping {
            range: start..start.saturating_add(len),
            pgoff,
            path: path.into(),
            build_id: build_id.into(),
        };
        let proc = Arc::make_mut(self.procs.entry(pid).or_default());
        let r = m.range.clone();
        let old: Vec<u64> = proc
            .maps
            .iter()
            .filter(|o| o.range.start < r.end && r.start < o.range.end)
            .map(|o| o.range.start)
            .collect();
        proc.maps.retain(|o| !old.contains(&o.range.start));
        proc.maps.push(m.clone());
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        if proc.unwinder.is_some() {
            if let Some(u) = self
                .procs
                .get_mut(&pid)
                .map(Arc::make_mut)
                .and_then(|p| p.unwinder.as_mut())
            {
                for s in old {
                    u.remove_module(s);
                }
            }
            if let Some(module) = self.module(&m) {
                if let Some(u) = self
                    .procs
                    .get_mut(&pid)
                    .map(Arc::make_mut)
                    .and_then(|p| p.unwinder.as_mut())
                {
                    u.add_module(module);
                }
            }
        }
    }

    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    fn module(&mut self, m: &Mapping) -> Option<framehop::Module<Section>> {
        let obj = self.object(&m.path, &m.build_id)?;
        let bias = obj.bias(m.range.start, m.pgoff)?;
        let name = String::from_utf8_lossy(&m.path).into_owned();
        Some(framehop::Module::new(
            name,
            m.range.clone(),
            bias,
            obj.section_info(),
        ))
    }

    /// Builds `pid`'s framehop unwinder from its mappings, once.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    fn build(&mut self, pid: i32) {
        let maps = match self.procs.get(&pid) {
            Some(p) if p.unwinder.is_none() => p.maps.clone(),
            _ => return,
        };
        let mut u = Native::new();
        for m in &maps {
            if let Some(module) = self.module(m) {
                u.add_module(module);
            }
        }
        if let Some(p) = self.procs.get_mut(&pid).map(Arc::make_mut) {
            p.unwinder = Some(u);
        }
    }

    /// `pid` exec'd: its old mappings are gone.
    pub fn exec(&mut self, pid: i32) {
        self.procs.remove(&pid);
    }

    /// `child` was forked from `parent`: it starts with the parent's mappings.
    pub fn fork(&mut self, parent: i32, child: i32) {
        if parent == child {
            return;
        }
        if let Some(p) = self.procs.get(&parent).cloned() {
            self.procs.insert(child, p);
        }
    }

    /// `pid` exited.
    pub fn exit(&mut self, pid: i32) {
        self.procs.remove(&pid);
    }

    /// Unwinds one sample of `pid`: `regs` are its user registers and `stack` the user stack
    /// captured from `regs.sp` up. Appends the PC and then each return address (unadjusted,
    /// as in kernel callchains) to `out`, at most [`MAX_FRAMES`].
    pub fn unwind(
        &mut self,
        pid: i32,
        regs: &UserRegs,
        stack: &[u8],
        out: &mut Vec<u64>,
    ) -> Unwound {
        self.stats.unwinds += 1;
        let before = out.len();
        let truncated = self.walk(pid, regs, stack, out);
        let frames = out.len() - before;
        self.stats.frames += frames as u64;
        self.stats.truncated += u64::from(truncated);
        Unwound { frames, truncated }
    }

    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    fn walk(&mut self, pid: i32, regs: &UserRegs, stack: &[u8], out: &mut Vec<u64>) -> bool {
        self.build(pid);
        let Some((unwinder, maps)) = self
            .procs
            .get(&pid)
            .and_then(|p| Some((p.unwinder.as_ref()?, &p.maps)))
        else {
            out.push(regs.pc);
            return true;
        };
        let sp = regs.sp;
        let mut read = |addr: u64| -> Result<u64, ()> {
            let off = usize::try_from(addr.checked_sub(sp).ok_or(())?).map_err(|_| ())?;
            let b = stack.get(off..off.checked_add(8).ok_or(())?).ok_or(())?;
            Ok(u64::from_ne_bytes(b.try_into().map_err(|_| ())?))
        };
        #[cfg(target_arch = "x86_64")]
        let start = framehop::x86_64::UnwindRegsX86_64::new(regs.pc, regs.sp, regs.fp);
        #[cfg(target_arch = "aarch64")]
        let start = framehop::aarch64::UnwindRegsAarch64::new(regs.lr, regs.sp, regs.fp);
        let mut it = unwinder.iter_frames(regs.pc, start, &mut *self.cache, &mut read);
        let mut n = 0;
        loop {
            match it.next() {
                Ok(Some(f)) => {
                    if n == MAX_FRAMES {
                        return true;
                    }
                    // A return address must lie in the process's executable mappings: one
                    // that does not was read from a slot that holds no return address (an
                    // entry point's argc, a stack the kernel switched), so the walk stops
                    // there rather than give a wrong frame.
                    if let framehop::FrameAddress::ReturnAddress(ra) = f {
                        let ra = u64::from(ra);
                        if !maps.iter().any(|m| m.range.contains(&ra)) {
                            return true;
                        }
                    }
                    out.push(f.address());
                    n += 1;
                }
                Ok(None) => return false,
                Err(_) => return true,
            }
        }
    }

    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    fn walk(&mut self, _pid: i32, regs: &UserRegs, _stack: &[u8], out: &mut Vec<u64>) -> bool {
        out.push(regs.pc);
        true
    }
}

/// This process's vdso image (the kernel maps the same one into every process of this ABI),
/// read through `/proc/self/mem` at the `[vdso]` range of `/proc/self/maps`.
fn vdso_image() -> Option<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let line = maps.lines().find(|l| l.ends_with("[vdso]"))?;
    let range = line.split_whitespace().next()?;
    let (a, b) = range.split_once('-')?;
    let start = u64::from_str_radix(a, 16).ok()?;
    let end = u64::from_str_radix(b, 16).ok()?;
    let len = usize::try_from(end.checked_sub(start)?).ok()?;
    if len > 1 << 20 {
        return None;
    }
    let mut f = std::fs::File::open("/proc/self/mem").ok()?;
    f.seek(SeekFrom::Start(start)).ok()?;
    let mut buf = vec![0; len];
    f.read_exact(&mut buf).ok()?;
    Some(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With a root, a path whose `..` climbs above it and a link inside it pointing out are
    /// refused and counted, never opened (before: both were opened and used).
    #[test]
    fn paths_leaving_the_root_are_refused() {
        let d = std::env::temp_dir().join(format!("pmc-unwind-root-{}", std::process::id()));
        let root = d.join("root");
        std::fs::create_dir_all(&root).unwrap();
        let exe = std::env::current_exe().unwrap();
        std::os::unix::fs::symlink(&exe, root.join("link")).unwrap();
        let mut u = Unwinder::new().with_root(Some(root.clone()));
        let up = format!("/../../../../../../../..{}", exe.display());
        assert!(u.object(up.as_bytes(), b"").is_none());
        assert!(u.object(b"/link", b"").is_none());
        assert_eq!(u.stats().objects_refused, 2);
        assert!(
            u.refusals.iter().all(|r| r.contains("outside the root")),
            "{:?}",
            u.refusals
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    /// A mapping of a device is refused (never read), reported once, and the unwind
    /// stops at the PC, truncated.
    #[test]
    fn hostile_map_paths_are_refused_and_reported() {
        let mut u = Unwinder::new();
        u.add_map(7, 0x1000, 0x1000, 0, b"/dev/zero", b"");
        u.add_map(7, 0x3000, 0x1000, 0, b"//anon", b"");
        let mut out = Vec::new();
        let regs = UserRegs {
            pc: 0x1010,
            sp: 0x8000,
            fp: 0,
            lr: 0,
        };
        let r = u.unwind(7, &regs, &[0; 64], &mut out);
        assert_eq!(out.first(), Some(&0x1010));
        assert!(r.truncated || out.len() == 1, "{out:x?}");
        let refused = u.take_refusals();
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(refused[0].starts_with("/dev/zero"), "{refused:?}");
        assert!(u.take_refusals().is_empty());
        assert_eq!(u.stats().objects_refused, 1);
    }

    /// A forked child starts with its parent's mappings; exec and exit forget them.
    #[test]
    fn fork_exec_and_exit_follow_the_mappings() {
        let mut u = Unwinder::new();
        u.add_map(1, 0x1000, 0x1000, 0, b"/x", b"");
        u.fork(1, 2);
        assert_eq!(u.procs.get(&2).map(|p| p.maps.len()), Some(1));
        u.exec(2);
        assert!(!u.procs.contains_key(&2));
        u.exit(1);
        assert!(u.procs.is_empty());
    }

    /// A new mapping over an old one replaces it (munmap is not reported).
    #[test]
    fn overlapping_maps_replace() {
        let mut u = Unwinder::new();
        u.add_map(1, 0x1000, 0x2000, 0, b"/a", b"");
        u.add_map(1, 0x2000, 0x1000, 0, b"/b", b"");
        let maps = &u.procs[&1].maps;
        assert_eq!(maps.len(), 1);
        assert_eq!(&*maps[0].path, b"/b");
    }
}
