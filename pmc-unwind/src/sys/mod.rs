//! The unsafe seam: read-only file mappings that survive the file being truncated under
//! them.
//!
//! [`Image`] is one mapping ([`Image::map`]; `cut`, in tests, says where it was repaired),
//! [`Guarded`] its entry in the table the SIGBUS handler ([`install`]) reads. Below: how a
//! truncation is repaired.
//!
//! A mapped object that shrinks raises SIGBUS on the next read of a page past its new end
//! (a library rebuilt in place while a live `pmcstat` unwinds through it). Every mapping
//! made here is registered in a fixed table that a SIGBUS handler consults: a fault
//! (`BUS_ADRERR`) inside a registered mapping is repaired by mapping anonymous zero pages
//! over the rest of it (`mmap(MAP_FIXED)`), and the faulting read completes and sees zeros,
//! which framehop's bounds-checked CFI readers take as damaged unwind tables (the walk ends
//! as truncated). No `sigsetjmp`/`siglongjmp`: the handler returns normally; it does atomic
//! loads and stores and the `mmap`/`sigaction` system calls only. A fault outside these
//! mappings goes to the handler installed before (pmc-analyze's guard, which works the same
//! way, or Rust's stack-overflow handler), or kills the process as SIGBUS always did.

use std::fs::File;
use std::io;
use std::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// How many mappings can be guarded at once: the unwinder's cached objects and room to
/// spare. A mapping past it is read into memory instead.
const SLOTS: usize = 1024;

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
pub(crate) struct Guarded {
    map: memmap2::Mmap,
    slot: usize,
}

#[cfg(test)]
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

/// Immutable bytes of an object: a read-only mapping of a file, or bytes on the heap (the
/// vdso, copied once). Cloning shares them.
#[derive(Clone)]
pub(crate) enum Image {
    Map(Arc<Guarded>),
    Heap(Arc<[u8]>),
}

impl Image {
    /// Maps `file` (a regular file of `len > 0` bytes, checked by the caller with fstat on the
    /// same descriptor) read-only; without the SIGBUS guard (no handler, no free slot) it is
    /// read into memory instead.
    pub(crate) fn map(file: &File, len: usize) -> io::Result<Image> {
        if len == 0 {
            return Ok(Image::Heap(Arc::from(&[][..])));
        }
        if install() {
            // SAFETY: a private, read-only mapping; this crate never writes through it and
            // hands out only shared `&[u8]` views. Another process may still change the file
            // (as for every file mapping): framehop's readers are bounds-checked, and changed
            // bytes are damaged unwind tables to them. A truncation, which would raise
            // SIGBUS, is repaired by the handler above once the mapping is registered, before
            // any view of it is handed out.
            let map = unsafe { memmap2::MmapOptions::new().len(len).map(file)? };
            if let Some(slot) = register(map.as_ptr() as usize, map.len()) {
                return Ok(Image::Map(Arc::new(Guarded { map, slot })));
            }
        }
        let mut v = Vec::new();
        v.try_reserve_exact(len)
            .map_err(|_| io::Error::new(io::ErrorKind::OutOfMemory, "cannot hold the file"))?;
        io::Read::read_to_end(&mut io::Read::take(file, len as u64), &mut v)?;
        Ok(Image::Heap(v.into()))
    }

    /// Where the file was found truncated while mapped (its bytes from there on read as
    /// zeros); `None` while intact.
    #[cfg(test)]
    pub(crate) fn cut(&self) -> Option<usize> {
        match self {
            Image::Map(g) => g.cut(),
            Image::Heap(_) => None,
        }
    }
}

impl Deref for Image {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Image::Map(m) => &m.map,
            Image::Heap(h) => h,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Before the guard this test died of SIGBUS.
    #[test]
    fn a_file_truncated_while_mapped_reads_zeros() {
        let p = std::env::temp_dir().join(format!("pmc-unwind-trunc-{}", std::process::id()));
        std::fs::write(&p, vec![0x5au8; 64 << 10]).unwrap();
        let f = File::open(&p).unwrap();
        let img = Image::map(&f, 64 << 10).unwrap();
        assert_eq!(img.cut(), None);
        std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(4096)
            .unwrap();
        assert_eq!(img.iter().filter(|&&b| b != 0).count(), 4096);
        assert_eq!(img.cut(), Some(4096));
        let _ = std::fs::remove_file(&p);
    }
}
