//! The perf_event ring-buffer mapping: `mmap`/`munmap` of a sampling fd and the only raw
//! accesses to the control page (`data_head`, `data_tail`) and the data area.
//!
//! [`MmapRing`] is the mapping and the kernel's [`RingStorage`]; `RingMemory` is one mapping
//! shared by several readers; [`perf_event_open_raw`] opens a sampling fd. Why it is sound:
//!
//! # Safety
//!
//! [`MmapRing`] owns a `MAP_SHARED`, `PROT_READ | PROT_WRITE` mapping of a perf_event fd:
//! one control page (`struct perf_event_mmap_page`) and a power-of-two data area. The kernel
//! writes the data area and `data_head` concurrently with us. Soundness rests on three facts:
//!
//! 1. `data_head` and `data_tail` are only accessed through `&AtomicU64` made from their
//!    8-aligned addresses in the control page (offsets 1024 and 1032), never through plain
//!    references, and those atomics never leave this module.
//! 2. In non-overwrite mode (writable mapping) the kernel never writes into
//!    `[data_tail, data_head)`. [`MmapRing::data`] lends only ranges inside that window, checked
//!    against the current head and tail on every call, and the tail only moves through
//!    `&mut self` ([`MmapRing::store_tail`]), so it cannot move while a lent slice is alive. The
//!    tail only moves forwards, inside `[data_tail, data_head]`.
//! 3. The fd is checked to be a perf_event fd (`PERF_EVENT_IOC_ID` succeeds), so no other
//!    file's shared pages are mapped.
//!
//! Residual assumption, as with every perf ring reader: no other process maps the same event and
//! advances its `data_tail` behind our back.

use std::io;
use std::mem::{offset_of, size_of};
use std::num::NonZeroUsize;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use perf_event_open_sys::bindings::perf_event_mmap_page;

/// Byte storage and control cells of a ring buffer.
///
/// Implemented by the kernel mapping ([`MmapRing`]) and by in-memory buffers in tests.
///
/// # Contract
///
/// * [`load_head`](RingStorage::load_head) loads `data_head` with [`Ordering::Acquire`];
/// * [`store_tail`](RingStorage::store_tail) stores `data_tail` with [`Ordering::Release`] and
///   takes `&mut self`, so no view lent by [`data`](RingStorage::data) is alive while the tail
///   moves;
/// * [`data`](RingStorage::data) lends bytes of the data area. The reader asks only for bytes in
///   `[data_tail, data_head)` and never across the end of the area; an implementation over
///   memory another party writes (the kernel) should refuse anything else.
///
/// The orderings live in the implementation rather than as `&AtomicU64` accessors so that safe
/// code cannot store arbitrary values into the kernel's control page through a shared reference.
#[cfg(feature = "sampling")]
pub trait RingStorage {
    /// Size of the data area in bytes. `RingReader::new` rejects sizes that are not a power of
    /// two.
    fn data_size(&self) -> usize;

    /// `data_head`, loaded with [`Ordering::Acquire`].
    fn load_head(&self) -> u64;

    /// `data_tail` as last stored (the reader is its only writer, so `Relaxed` suffices).
    fn load_tail(&self) -> u64;

    /// Stores `data_tail` with [`Ordering::Release`], handing `[old tail, tail)` back to the
    /// producer. Implementations may ignore a value outside `[data_tail, data_head]`.
    fn store_tail(&mut self, tail: u64);

    /// The bytes `[offset, offset + len)` of the data area, or `None` if the range is out of
    /// bounds or not readable.
    fn data(&self, offset: usize, len: usize) -> Option<&[u8]>;
}

const HEAD_OFFSET: usize = offset_of!(perf_event_mmap_page, data_head);
const TAIL_OFFSET: usize = offset_of!(perf_event_mmap_page, data_tail);
const DATA_OFFSET_OFFSET: usize = offset_of!(perf_event_mmap_page, data_offset);
const DATA_SIZE_OFFSET: usize = offset_of!(perf_event_mmap_page, data_size);

// The layout the rest of this file relies on (include/uapi/linux/perf_event.h).
const _: () = assert!(HEAD_OFFSET == 1024);
const _: () = assert!(TAIL_OFFSET == 1032);
const _: () = assert!(HEAD_OFFSET % 8 == 0 && TAIL_OFFSET % 8 == 0);
const _: () = assert!(DATA_OFFSET_OFFSET % 8 == 0 && DATA_SIZE_OFFSET % 8 == 0);

/// `perf_event_open(attr, pid, cpu, group_fd, PERF_FLAG_FD_CLOEXEC)`—Opens one perf event,
/// for tests outside the crate (the crate itself calls `sys::perf_event_open`, which this
/// wraps).
///
/// Sets `attr.size` to the size of the bindings' struct when it is 0.
///
/// # Errors
///
/// The raw `errno` of the syscall, as an [`io::Error`].
#[cfg(feature = "sampling")]
#[doc(hidden)]
#[doc(alias = "perf_event_open")]
pub fn perf_event_open_raw(
    attr: &mut perf_event_open_sys::bindings::perf_event_attr,
    pid: i32,
    cpu: i32,
    group_fd: Option<BorrowedFd<'_>>,
) -> io::Result<std::os::fd::OwnedFd> {
    if attr.size == 0 {
        attr.size = size_of::<perf_event_open_sys::bindings::perf_event_attr>() as u32;
    }
    super::os::perf_event_open(attr, pid, cpu, group_fd, 0).map_err(io::Error::from)
}

/// Fails unless `fd` is a perf_event fd.
fn check_perf_fd(fd: BorrowedFd<'_>) -> io::Result<()> {
    // PERF_EVENT_IOC_ID fails on anything else (and everywhere but Linux, with ENOSYS).
    super::os::event_id(fd).map(|_| ()).map_err(|e| {
        let err = io::Error::from(e);
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("fd {} is not a perf_event fd: {err}", fd.as_raw_fd()),
        )
    })
}

fn page_size() -> io::Result<usize> {
    let ps = super::sysconf_page_size();
    usize::try_from(ps)
        .ok()
        .filter(|p| p.is_power_of_two() && *p >= 4096)
        .ok_or_else(|| io::Error::other(format!("sysconf(_SC_PAGESIZE) returned {ps}")))
}

/// The ring buffer of one perf_event fd, mapped writable (non-overwrite mode).
///
/// Use it through the ring reader (`crate::ring::RingReader`, feature `sampling`). Dropping it
/// unmaps the buffer; the mapping stays valid if the fd is closed first.
#[derive(Debug)]
pub struct MmapRing {
    base: NonNull<u8>,
    map_len: usize,
    data_offset: usize,
    data_size: usize,
    backing: Backing,
}

/// Who owns the memory behind an [`MmapRing`].
#[derive(Debug, Clone)]
enum Backing {
    /// `mmap` of a perf fd; `munmap` on drop.
    Mmap,
    /// Heap memory shared with a simulated kernel (the fake kernel's rings), freed with the
    /// last reference.
    #[cfg(any(test, feature = "fake-kernel"))]
    Shared {
        /// Freed with the last reference.
        _memory: std::sync::Arc<RingMemory>,
    },
    /// A heap allocation of `map_len / 8` u64s standing in for the mapping (unit tests, so the
    /// unsafe code itself runs under Miri with a producer thread playing the kernel).
    #[cfg(all(test, feature = "sampling"))]
    Heap,
}

// SAFETY: the mapping is process-wide memory, not tied to the creating thread; all accesses go
// through atomics or through slices whose bytes the kernel does not write (see the module docs).
unsafe impl Send for MmapRing {}

impl MmapRing {
    /// `mmap(NULL, (1 + data_pages) * page_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)`—
    /// Maps the ring buffer of a sampling event.
    ///
    /// `data_pages` must be a power of two (perf_event_open(2)).
    ///
    /// # Errors
    ///
    /// `InvalidInput` if `data_pages` is not a power of two or `fd` is not a perf_event fd; the
    /// `mmap` errno otherwise (`EPERM` when over `perf_event_mlock_kb` without
    /// `CAP_IPC_LOCK`, `EINVAL` for a counting-only or already-mapped-with-another-size event).
    #[doc(alias = "mmap")]
    pub fn new(fd: BorrowedFd<'_>, data_pages: usize) -> io::Result<Self> {
        if !data_pages.is_power_of_two() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("ring data pages must be a power of two, got {data_pages}"),
            ));
        }
        check_perf_fd(fd)?;
        let page = page_size()?;
        let too_big = || io::Error::new(io::ErrorKind::InvalidInput, "ring size overflows");
        let data_size = data_pages.checked_mul(page).ok_or_else(too_big)?;
        let map_len = data_size.checked_add(page).ok_or_else(too_big)?;
        let len = NonZeroUsize::new(map_len).ok_or_else(too_big)?;
        let ptr = super::mmap_shared(fd, len, true).map_err(io::Error::from)?;
        let base = ptr;
        let mut ring = Self {
            base,
            map_len,
            data_offset: page,
            data_size,
            backing: Backing::Mmap,
        };
        // Since Linux 4.1 the control page says where the data area is; trust it only if it
        // describes a power-of-two area inside the mapping.
        let off = ring.control_u64(DATA_OFFSET_OFFSET).load(Ordering::Relaxed);
        let size = ring.control_u64(DATA_SIZE_OFFSET).load(Ordering::Relaxed);
        if let (Ok(off), Ok(size)) = (usize::try_from(off), usize::try_from(size)) {
            let fits = off
                .checked_add(size)
                .is_some_and(|end| end <= map_len && off >= size_of::<perf_event_mmap_page>());
            if size.is_power_of_two() && fits && off % 8 == 0 {
                ring.data_offset = off;
                ring.data_size = size;
            }
        }
        Ok(ring)
    }

    #[cfg(any(test, feature = "fake-kernel"))]
    /// A ring over heap memory that a simulated kernel writes through [`RingMemory::push`].
    pub(crate) fn shared(mem: std::sync::Arc<RingMemory>) -> Self {
        Self {
            base: mem.base,
            map_len: mem.map_len,
            data_offset: mem.data_offset,
            data_size: mem.data_size,
            backing: Backing::Shared { _memory: mem },
        }
    }

    /// An atomic view of the u64 at `offset` of the control page.
    fn control_u64(&self, offset: usize) -> &AtomicU64 {
        debug_assert!(offset % 8 == 0 && offset + 8 <= size_of::<perf_event_mmap_page>());
        // SAFETY: callers pass one of the const offsets above: 8-aligned (the mapping is
        // page-aligned) and inside the control page, which lives as long as `self`. The kernel
        // accesses these fields only with single-copy-atomic loads and stores.
        unsafe { &*self.base.as_ptr().add(offset).cast::<AtomicU64>() }
    }

    /// Size of the whole mapping in bytes.
    pub fn map_len(&self) -> usize {
        self.map_len
    }

    /// True if `[offset, offset + len)` lies inside `[data_tail, data_head)`, i.e. published by
    /// the kernel and not yet handed back.
    #[cfg(feature = "sampling")]
    fn published(&self, offset: usize, len: usize) -> bool {
        let size = self.data_size as u64;
        let tail = self.control_u64(TAIL_OFFSET).load(Ordering::Relaxed);
        let head = self.control_u64(HEAD_OFFSET).load(Ordering::Acquire);
        let avail = head.wrapping_sub(tail);
        if avail > size {
            return false;
        }
        let rel = (offset as u64).wrapping_sub(tail) & (size - 1);
        rel.checked_add(len as u64).is_some_and(|end| end <= avail)
    }
}

#[cfg(feature = "sampling")]
impl RingStorage for MmapRing {
    fn data_size(&self) -> usize {
        self.data_size
    }

    fn load_head(&self) -> u64 {
        self.control_u64(HEAD_OFFSET).load(Ordering::Acquire)
    }

    fn load_tail(&self) -> u64 {
        self.control_u64(TAIL_OFFSET).load(Ordering::Relaxed)
    }

    fn store_tail(&mut self, tail: u64) {
        let cell = self.control_u64(TAIL_OFFSET);
        let old = cell.load(Ordering::Relaxed);
        let head = self.control_u64(HEAD_OFFSET).load(Ordering::Acquire);
        // Only forwards, and never past what the kernel published: anything else could hand
        // back bytes the kernel is writing while we still lend them.
        if tail.wrapping_sub(old) <= head.wrapping_sub(old) {
            cell.store(tail, Ordering::Release);
        }
    }

    fn data(&self, offset: usize, len: usize) -> Option<&[u8]> {
        let end = offset.checked_add(len)?;
        if end > self.data_size || !self.published(offset, len) {
            return None;
        }
        // SAFETY: `data_offset + end <= map_len` (checked in `new` and above), so the range is
        // inside the live mapping. It lies in `[data_tail, data_head)`, which the kernel does not
        // write in non-overwrite mode, and the tail cannot move while the returned slice borrows
        // `self` (store_tail takes `&mut self`). The bytes were published by the kernel's
        // release store of data_head, which our Acquire load in `published` synchronised with.
        Some(unsafe {
            std::slice::from_raw_parts(self.base.as_ptr().add(self.data_offset + offset), len)
        })
    }
}

impl Drop for MmapRing {
    fn drop(&mut self) {
        match self.backing {
            Backing::Mmap => {
                // munmap of a mapping we own cannot fail in a way we could act on in drop.
                // SAFETY: `base`/`map_len` are exactly the mapping created in `new`, unmapped
                // only here; no slice or atomic view of it can outlive `self`.
                unsafe { super::munmap(self.base, self.map_len) };
            }
            #[cfg(any(test, feature = "fake-kernel"))]
            Backing::Shared { .. } => {} // the Arc frees it
            #[cfg(all(test, feature = "sampling"))]
            Backing::Heap => {
                let words = std::ptr::slice_from_raw_parts_mut(
                    self.base.as_ptr().cast::<u64>(),
                    self.map_len / 8,
                );
                // SAFETY: `base`/`map_len` came from `Box::into_raw` of a `Box<[u64]>` of
                // exactly this length in `on_heap`, and are freed only here.
                drop(unsafe { Box::from_raw(words) });
            }
        }
    }
}

#[cfg(any(test, feature = "fake-kernel"))]
/// Heap memory laid out as a perf ring mapping (a control page, then a power-of-two data
/// area), written by a simulated kernel with the kernel's protocol and read through an
/// [`MmapRing`] made by [`MmapRing::shared`].
#[derive(Debug)]
pub(crate) struct RingMemory {
    base: NonNull<u8>,
    map_len: usize,
    data_offset: usize,
    data_size: usize,
    /// The producer's side: serializes writers.
    writer: std::sync::Mutex<()>,
}

#[cfg(any(test, feature = "fake-kernel"))]
// SAFETY: the memory is a heap allocation owned by this value, not tied to a thread; every
// shared access goes through atomics (head, tail) or writes into bytes the reader has released
// (see `push`), serialized by `writer`.
unsafe impl Send for RingMemory {}
#[cfg(any(test, feature = "fake-kernel"))]
// SAFETY: as for Send: `&RingMemory` only allows `push`, which follows the ring protocol.
unsafe impl Sync for RingMemory {}

#[cfg(any(test, feature = "fake-kernel"))]
impl RingMemory {
    /// A zeroed ring of one control page of `page` bytes and `data_pages` pages of data.
    /// `None` unless both are powers of two (and `page` at least the control page) or the size
    /// overflows.
    pub(crate) fn new(page: usize, data_pages: usize) -> Option<Self> {
        if !page.is_power_of_two()
            || page < size_of::<perf_event_mmap_page>()
            || !data_pages.is_power_of_two()
        {
            return None;
        }
        let data_size = data_pages.checked_mul(page)?;
        let map_len = data_size.checked_add(page)?;
        let words: Box<[u64]> = vec![0u64; map_len / 8].into_boxed_slice();
        let base = NonNull::new(Box::into_raw(words).cast::<u8>())?;
        Some(Self {
            base,
            map_len,
            data_offset: page,
            data_size,
            writer: std::sync::Mutex::new(()),
        })
    }

    fn cell(&self, offset: usize) -> &AtomicU64 {
        // SAFETY: HEAD/TAIL offsets are 8-aligned (the allocation is of u64s) and inside the
        // control page of the live allocation.
        unsafe { &*self.base.as_ptr().add(offset).cast::<AtomicU64>() }
    }

    /// Writes `rec` at `data_head` and publishes it, as the kernel does (`perf_output_begin`:
    /// the record is dropped, `false`, when it does not fit before `data_tail`).
    pub(crate) fn push(&self, rec: &[u8]) -> bool {
        let Ok(_w) = self.writer.lock() else {
            return false;
        };
        let tail = self.cell(TAIL_OFFSET).load(Ordering::Acquire);
        let head = self.cell(HEAD_OFFSET).load(Ordering::Relaxed);
        let used = head.wrapping_sub(tail);
        if (self.data_size as u64).saturating_sub(used) < rec.len() as u64 {
            return false;
        }
        let mask = self.data_size as u64 - 1;
        for (i, b) in rec.iter().enumerate() {
            let idx = (head.wrapping_add(i as u64) & mask) as usize;
            // SAFETY: idx < data_size, so the byte is in the data area of the live allocation;
            // it lies in [head, tail + size), which the reader released (the Acquire load of
            // the tail pairs with its Release store) and does not read until we publish.
            unsafe { self.base.as_ptr().add(self.data_offset + idx).write(*b) };
        }
        self.cell(HEAD_OFFSET)
            .store(head.wrapping_add(rec.len() as u64), Ordering::Release);
        true
    }

    /// `data_head` as the writer last published it.
    pub(crate) fn head(&self) -> u64 {
        self.cell(HEAD_OFFSET).load(Ordering::Acquire)
    }

    /// `data_tail` as the reader last stored it.
    pub(crate) fn tail(&self) -> u64 {
        self.cell(TAIL_OFFSET).load(Ordering::Acquire)
    }
}

#[cfg(any(test, feature = "fake-kernel"))]
impl Drop for RingMemory {
    fn drop(&mut self) {
        let words =
            std::ptr::slice_from_raw_parts_mut(self.base.as_ptr().cast::<u64>(), self.map_len / 8);
        // SAFETY: `base`/`map_len` came from `Box::into_raw` of a `Box<[u64]>` of exactly this
        // length in `new`, and are freed only here, once no `MmapRing` holds the Arc.
        drop(unsafe { Box::from_raw(words) });
    }
}

#[cfg(all(test, feature = "sampling"))]
mod tests {
    //! The unsafe code above, exercised on heap memory so Miri can check it: a producer thread
    //! plays the kernel (writes records into free space, publishes `data_head` with Release,
    //! reads `data_tail` with Acquire), the consumer is the real `RingReader<MmapRing>`. Miri's
    //! data-race detector and weak-memory emulation then check the protocol and the claim that
    //! lent slices never overlap bytes being written.

    use super::*;
    use crate::ring::RingReader;

    const PAGE: usize = 4096;

    impl MmapRing {
        fn on_heap(data_size: usize) -> Self {
            assert!(data_size.is_power_of_two() && data_size % 8 == 0);
            let map_len = PAGE + data_size;
            let words: Box<[u64]> = vec![0u64; map_len / 8].into_boxed_slice();
            let base = NonNull::new(Box::into_raw(words).cast::<u8>()).expect("non-null box");
            Self {
                base,
                map_len,
                data_offset: PAGE,
                data_size,
                backing: Backing::Heap,
            }
        }
    }

    /// The kernel's side of the protocol, over the same memory.
    struct Producer {
        base: NonNull<u8>,
        data_offset: usize,
        size: usize,
        /// Our write position (published or not).
        head: u64,
    }

    // SAFETY: only used while the ring it points into is alive (scoped threads below); all
    // shared accesses are atomics or writes into space the consumer has released.
    unsafe impl Send for Producer {}

    impl Producer {
        fn for_ring(r: &MmapRing) -> Self {
            Self {
                base: r.base,
                data_offset: r.data_offset,
                size: r.data_size,
                head: r.load_head(),
            }
        }

        fn cell(&self, offset: usize) -> &AtomicU64 {
            // SAFETY: HEAD/TAIL offsets: 8-aligned u64s inside the live allocation.
            unsafe { &*self.base.as_ptr().add(offset).cast::<AtomicU64>() }
        }

        /// Writes `rec` at the unpublished head if it fits (as perf_output_begin checks).
        fn write(&mut self, rec: &[u8]) -> bool {
            let tail = self.cell(TAIL_OFFSET).load(Ordering::Acquire);
            let used = self.head.wrapping_sub(tail);
            if (self.size as u64).saturating_sub(used) < rec.len() as u64 {
                return false;
            }
            for (i, b) in rec.iter().enumerate() {
                let idx = (self.head.wrapping_add(i as u64) & (self.size as u64 - 1)) as usize;
                // SAFETY: idx < size, so the byte is in the data area of the live allocation;
                // it lies in [head, tail + size), which the consumer released (Acquire above
                // pairs with its Release store of data_tail) and does not read until we publish.
                unsafe { self.base.as_ptr().add(self.data_offset + idx).write(*b) };
            }
            self.head = self.head.wrapping_add(rec.len() as u64);
            true
        }

        fn publish(&self) {
            self.cell(HEAD_OFFSET).store(self.head, Ordering::Release);
        }
    }

    fn record(seq: u64) -> Vec<u8> {
        let size = 8 * (1 + (seq * 7 % 9) as usize); // 8..=72 bytes
        let mut r = Vec::with_capacity(size);
        r.extend_from_slice(&9u32.to_ne_bytes());
        r.extend_from_slice(&(seq as u16).to_ne_bytes());
        r.extend_from_slice(&(size as u16).to_ne_bytes());
        while r.len() < size {
            r.push((seq as u8).wrapping_add(r.len() as u8));
        }
        r
    }

    #[test]
    fn threaded_producer_and_reader() {
        let n: u64 = if cfg!(miri) { 300 } else { 200_000 };
        let ring = MmapRing::on_heap(256);
        let mut producer = Producer::for_ring(&ring);
        let mut reader = RingReader::new(ring).expect("power of two");
        std::thread::scope(|s| {
            s.spawn(move || {
                let mut seq = 0;
                while seq < n {
                    if producer.write(&record(seq)) {
                        seq += 1;
                        if seq % 3 == 0 {
                            producer.publish();
                        }
                    } else {
                        producer.publish();
                        std::thread::yield_now();
                    }
                }
                producer.publish();
            });
            let mut expect = 0;
            while expect < n {
                let mut batch = reader.batch();
                while let Some(r) = batch.next_record() {
                    let r = r.expect("no corruption");
                    assert_eq!(r.bytes, &record(expect)[..], "record {expect}");
                    expect += 1;
                }
                drop(batch);
                std::thread::yield_now();
            }
        });
        let stats = reader.stats();
        assert_eq!(stats.records, n);
        assert_eq!(stats.errors, 0);
        assert!(stats.wrapped > 0);
    }

    #[test]
    fn lends_only_the_published_window() {
        let ring = MmapRing::on_heap(64);
        let mut p = Producer::for_ring(&ring);
        assert!(p.write(&record(0))); // 8 bytes
        assert!(!p.write(&record(1)), "64 bytes do not fit in the 56 left");
        let mut ring = ring;
        assert_eq!(ring.data(0, 8), None, "unpublished");
        p.publish();
        assert_eq!(ring.data(0, 8).map(<[u8]>::len), Some(8));
        assert_eq!(ring.data(0, 16), None, "beyond head");
        assert_eq!(ring.data(60, 8), None, "beyond the area");
        assert_eq!(ring.data(usize::MAX, 2), None);
        // The tail never moves backwards or past the head.
        ring.store_tail(16);
        assert_eq!(ring.load_tail(), 0);
        ring.store_tail(u64::MAX);
        assert_eq!(ring.load_tail(), 0);
        ring.store_tail(8);
        assert_eq!(ring.load_tail(), 8);
        ring.store_tail(0);
        assert_eq!(ring.load_tail(), 8);
        assert_eq!(ring.data(0, 8), None, "handed back");
    }
}
