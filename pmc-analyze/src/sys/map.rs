//! Read-only file mappings, shareable as `&[u8]` by the ELF and DWARF readers, that survive
//! the file being truncated under them.
//!
//! [`Bytes`] is one mapping (`Bytes::map`; [`Bytes::cut`] says where a truncation was
//! repaired); `install` sets up the SIGBUS handler behind the fixed table of mappings.
//! Below: how a truncation is repaired, and why that is safe in a handler.
//!
//! A mapped file that shrinks raises SIGBUS on the next read of a page past its new end: a
//! user re-running `pmcstat -O out.log` while `pmcstat -R out.log` reads it, or an object
//! rebuilt in place, would kill the reader. Every mapping made here is registered in a fixed
//! table that a SIGBUS handler consults: a fault (`BUS_ADRERR`) inside a registered mapping is
//! repaired by mapping anonymous zero pages over the rest of it (`mmap(MAP_FIXED)`), and the
//! offset of the first such page is recorded as the mapping's *cut* ([`Bytes::cut`]); the
//! faulting read then completes and sees zeros. Readers are bounds-checked decoders for
//! which zeros are just damaged input, and their callers report the cut.
//!
//! The design uses no `sigsetjmp`/`siglongjmp` (which would skip Rust destructors and leave
//! borrows live): the handler returns normally and the interrupted instruction re-executes.
//! It does only what is safe in a signal handler: atomic loads and stores on static arrays,
//! and the `mmap`/`sigaction` system calls (no allocation, no locks). A fault that is not in
//! a registered mapping goes to the handler installed before (Rust's own stack-overflow
//! handler, normally), or kills the process as SIGBUS always did.

use std::fmt;
use std::fs::File;
use std::io;
use std::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// How many mappings can be guarded at once: the open objects (twice: each may have a
/// separate debug file), the log, and room to spare. A mapping past it is read into memory
/// instead.
const SLOTS: usize = 4096;

/// Start address of each registered mapping (0: free slot).
static STARTS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
/// Its length (0 while being registered or released).
static LENS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
/// The offset of the first zero-filled page (`usize::MAX`: none).
static CUTS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(usize::MAX) }; SLOTS];
/// One past the highest slot ever used (the handler scans up to it).
static HIGH: AtomicUsize = AtomicUsize::new(0);
static PAGE: AtomicUsize = AtomicUsize::new(4096);
/// The SIGBUS disposition before ours (`None`: installing ours failed, so nothing is mapped
/// through the guard).
static PREVIOUS: OnceLock<Option<libc::sigaction>> = OnceLock::new();

/// Installs the handler once; false if it could not be.
fn install() -> bool {
    PREVIOUS
        .get_or_init(|| {
            // SAFETY: sysconf has no preconditions.
            let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
            if let Ok(p) = usize::try_from(page) {
                if p.is_power_of_two() {
                    PAGE.store(p, Ordering::Relaxed);
                }
            }
            // SAFETY: an all-zero sigaction is a valid value to fill in; `on_sigbus` has the
            // SA_SIGINFO signature; `old` is valid for writes.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_sigbus as *const () as usize;
                sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_RESTART;
                libc::sigemptyset(&mut sa.sa_mask);
                let mut old: libc::sigaction = std::mem::zeroed();
                (libc::sigaction(libc::SIGBUS, &sa, &mut old) == 0).then_some(old)
            }
        })
        .is_some()
}

/// The SIGBUS handler; see the module documentation.
extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let (code, addr) = unsafe { ((*info).si_code, (*info).si_addr() as usize) };
    if code == libc::BUS_ADRERR {
        let page = PAGE.load(Ordering::Relaxed);
        let high = HIGH.load(Ordering::Acquire).min(SLOTS);
        for i in 0..high {
            let start = STARTS[i].load(Ordering::Acquire);
            let len = LENS[i].load(Ordering::Acquire);
            if start == 0 || addr < start || addr - start >= len {
                continue;
            }
            let from = addr & !(page - 1);
            let end = start + len;
            // SAFETY: [from, end) lies inside mapping `i`, which the faulting thread is
            // reading (so it is not being unmapped); replacing its pages by anonymous
            // read-only zero pages changes what it reads, never which memory is mapped.
            let r = unsafe {
                libc::mmap(
                    from as *mut libc::c_void,
                    end - from,
                    libc::PROT_READ,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                    -1,
                    0,
                )
            };
            if r != libc::MAP_FAILED {
                CUTS[i].fetch_min(from - start, Ordering::AcqRel);
                return;
            }
            break;
        }
    }
    // Not ours: the previous handler, or the default action (the fault repeats and kills).
    match PREVIOUS.get() {
        Some(Some(prev))
            if prev.sa_sigaction != libc::SIG_DFL && prev.sa_sigaction != libc::SIG_IGN =>
        {
            if prev.sa_flags & libc::SA_SIGINFO != 0 {
                // SAFETY: the previous handler was installed with this signature.
                let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    unsafe { std::mem::transmute(prev.sa_sigaction) };
                f(sig, info, ctx);
            } else {
                // SAFETY: the previous handler was installed with this signature.
                let f: extern "C" fn(libc::c_int) =
                    unsafe { std::mem::transmute(prev.sa_sigaction) };
                f(sig);
            }
        }
        _ => {
            // SAFETY: resetting a disposition to its default is async-signal-safe.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(libc::SIGBUS, &sa, std::ptr::null_mut());
            }
        }
    }
}

/// A registered mapping: unregistered, then unmapped, when dropped.
struct Guarded {
    map: memmap2::Mmap,
    slot: usize,
}

impl Guarded {
    fn cut(&self) -> Option<usize> {
        let c = CUTS[self.slot].load(Ordering::Acquire);
        (c != usize::MAX).then_some(c)
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        // Released before `map` is unmapped (the field drops after this), so the handler
        // never repairs an address that is no longer ours.
        LENS[self.slot].store(0, Ordering::Release);
        STARTS[self.slot].store(0, Ordering::Release);
    }
}

/// Claims a free slot for `[start, start + len)`.
fn register(start: usize, len: usize) -> Option<usize> {
    for i in 0..SLOTS {
        if STARTS[i]
            .compare_exchange(0, start, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            CUTS[i].store(usize::MAX, Ordering::Release);
            LENS[i].store(len, Ordering::Release);
            HIGH.fetch_max(i + 1, Ordering::AcqRel);
            return Some(i);
        }
    }
    None
}

enum Backing {
    Map(Guarded),
    Heap(Arc<[u8]>),
    /// Bytes made here (an inflated section), holding what must live as long as they do
    /// (their share of a budget).
    Owned(Vec<u8>, #[allow(dead_code)] Option<Box<dyn Send + Sync>>),
}

/// Immutable bytes: a read-only mapping of a file, or bytes on the heap. Cloning shares them.
///
/// A mapping costs address space, not memory: only the pages the parsers touch are read, and
/// the kernel may drop them again under pressure. A file truncated while mapped reads as
/// zeros from the cut on ([`Bytes::cut`]), instead of raising SIGBUS.
#[derive(Clone)]
pub struct Bytes(Arc<Backing>);

impl Bytes {
    /// Maps the first `len` bytes of `file` read-only (`len` must be the file's size, from
    /// `fstat`; `0` gives empty bytes without a mapping, which `mmap(2)` refuses). When the
    /// SIGBUS guard is unavailable (the handler could not be installed, or every slot is in
    /// use) the file is read into memory instead.
    pub(crate) fn map(file: &File, len: usize) -> io::Result<Bytes> {
        if len == 0 {
            return Ok(Bytes::from(Arc::<[u8]>::from(&[][..])));
        }
        if install() {
            // SAFETY: `Mmap` is a private, read-only mapping; this crate never writes through
            // it and hands out only shared `&[u8]` views. Another process may still change
            // the file (as for every file mapping): the readers of these bytes are
            // bounds-checked decoders, to which changed bytes are damaged input. A
            // truncation, which would raise SIGBUS, is repaired by the handler above once the
            // mapping is registered, before any `&[u8]` of it is handed out.
            let map = unsafe { memmap2::MmapOptions::new().len(len).map(file)? };
            if let Some(slot) = register(map.as_ptr() as usize, map.len()) {
                return Ok(Bytes(Arc::new(Backing::Map(Guarded { map, slot }))));
            }
        }
        let mut v = Vec::new();
        v.try_reserve_exact(len)
            .map_err(|_| io::Error::new(io::ErrorKind::OutOfMemory, "cannot hold the file"))?;
        io::Read::read_to_end(&mut io::Read::take(file, len as u64), &mut v)?;
        Ok(Bytes::from(v))
    }

    /// Where the file was found truncated while mapped: its bytes from this offset on (a
    /// page boundary) read as zeros. `None` while intact, and for heap bytes.
    pub fn cut(&self) -> Option<usize> {
        match &*self.0 {
            Backing::Map(g) => g.cut(),
            Backing::Heap(_) | Backing::Owned(..) => None,
        }
    }
}

impl From<Arc<[u8]>> for Bytes {
    fn from(a: Arc<[u8]>) -> Bytes {
        Bytes(Arc::new(Backing::Heap(a)))
    }
}

impl From<Vec<u8>> for Bytes {
    /// Takes the vector as it is (no copy).
    fn from(v: Vec<u8>) -> Bytes {
        Bytes(Arc::new(Backing::Owned(v, None)))
    }
}

impl Bytes {
    /// `v`, keeping `keep` alive until the bytes are dropped (the share of a budget they
    /// stand for).
    pub(crate) fn owned_with(v: Vec<u8>, keep: Box<dyn Send + Sync>) -> Bytes {
        Bytes(Arc::new(Backing::Owned(v, Some(keep))))
    }
}

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &*self.0 {
            Backing::Map(g) => &g.map,
            Backing::Heap(h) => h,
            Backing::Owned(v, _) => v,
        }
    }
}

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &*self.0 {
            Backing::Map(_) => "mapped",
            Backing::Heap(_) | Backing::Owned(..) => "heap",
        };
        write!(f, "Bytes({kind}, {} bytes)", self.len())
    }
}

// SAFETY: `deref` returns a view of the `Backing` behind the `Arc`: the pages of an `Mmap`
// (fixed until it is unmapped on drop; the SIGBUS repair replaces pages in place, never
// moves them) or an `Arc<[u8]>`'s heap block. Neither moves when a `Bytes` is moved, and the
// `Arc` keeps it alive for as long as any `Bytes` exists.
unsafe impl gimli::StableDeref for Bytes {}
// SAFETY: a clone shares the same `Arc<Backing>`, so it dereferences to the same address.
unsafe impl gimli::CloneStableDeref for Bytes {}
