//! The unsafe half of user-space counter reads: the read-only mapping of a
//! counter's control page (`struct perf_event_mmap_page`), atomic loads of its
//! fields, and the `rdpmc`/`rdtsc` (x86_64) and `mrs` (aarch64) instructions.
//!
//! [`ControlPage`] maps the page and loads its `PageFields`; `read_counter` and `timestamp`
//! are the instructions (one pair per architecture); `SimPage` is a page for tests.
//! Below: why each part is sound (# Safety).
//!
//! The logic (seqlock retries, sign extension, time extrapolation, fallback
//! decisions) is pure and lives in [`crate::rdpmc`]; this file only hands it
//! field values and hardware readings.
//!
//! # Safety
//!
//! [`ControlPage`] owns a `PROT_READ`, `MAP_SHARED` mapping of one page of a
//! perf_event fd (the control page only: no data pages, so no ring buffer).
//! The kernel writes the page concurrently, so every field is only ever read
//! through `&AtomicU32`/`&AtomicU64` made from its naturally aligned address
//! inside the page (offsets pinned by const assertions below), never through a
//! plain reference, and those atomics never leave this module. The mapping
//! lives as long as the `ControlPage`; we never write to it.
//!
//! The counter instructions touch no memory. On x86_64 `rdpmc` faults (#GP,
//! delivered as SIGSEGV: a crash, not memory unsafety) unless the kernel set
//! CR4.PCE for this process; it does so for processes that mapped a
//! perf_event with user reads allowed, which is what `cap_user_rdpmc` and a
//! non-zero `index` in the page announce. [`crate::rdpmc`] only calls
//! [`read_counter`] under those conditions, inside the seqlock.

use crate::errno;
use std::mem::offset_of;
use std::os::fd::BorrowedFd;
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

use perf_event_open_sys::bindings::perf_event_mmap_page as Page;

use super::Errno;

/// The fields of `struct perf_event_mmap_page` a counting read uses, as one
/// attempt of the seqlock loaded them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PageFields {
    /// Hardware counter number + 1, or 0 when the counter is not on the PMU.
    pub index: u32,
    /// Add to the sign-extended hardware value to get the count.
    pub offset: i64,
    /// Enabled time (ns) at the last update.
    pub time_enabled: u64,
    /// Running time (ns) at the last update.
    pub time_running: u64,
    /// The capability bits (`CAP_USER_*`).
    pub capabilities: u64,
    /// Width in bits of the hardware counter.
    pub pmc_width: u16,
    /// Timestamp-to-ns conversion: shift.
    pub time_shift: u16,
    /// Timestamp-to-ns conversion: multiplier.
    pub time_mult: u32,
    /// Timestamp-to-ns conversion: offset.
    pub time_offset: u64,
    /// With `cap_user_time_short`: the timestamp the short counter is relative to.
    pub time_cycles: u64,
    /// With `cap_user_time_short`: the mask of the short timestamp counter.
    pub time_mask: u64,
}

/// A control page, real (a mapping) or simulated.
pub(crate) trait PageSource {
    /// Loads `lock` (acquire): the sequence number before reading fields.
    fn begin(&self) -> u32;
    /// Loads the fields (each atomically; together consistent only if
    /// [`end`](PageSource::end) returns what [`begin`](PageSource::begin) did).
    fn fields(&self) -> PageFields;
    /// Loads `lock` again after an acquire fence.
    fn end(&self) -> u32;
}

const LOCK: usize = offset_of!(Page, lock);
const INDEX: usize = offset_of!(Page, index);
const OFFSET: usize = offset_of!(Page, offset);
const TIME_ENABLED: usize = offset_of!(Page, time_enabled);
const TIME_RUNNING: usize = offset_of!(Page, time_running);
const CAPABILITIES: usize = offset_of!(Page, __bindgen_anon_1);
const PMC_WIDTH: usize = offset_of!(Page, pmc_width);
const TIME_OFFSET: usize = offset_of!(Page, time_offset);
const TIME_CYCLES: usize = offset_of!(Page, time_cycles);
const TIME_MASK: usize = offset_of!(Page, time_mask);

// include/uapi/linux/perf_event.h. `pmc_width` (u16), `time_shift` (u16) and
// `time_mult` (u32) share the 8-byte word at 48, which is read as one u64 so
// the three are from the same instant and every access is naturally aligned.
const _: () = assert!(LOCK == 8 && INDEX == 12 && OFFSET == 16);
const _: () = assert!(TIME_ENABLED == 24 && TIME_RUNNING == 32 && CAPABILITIES == 40);
const _: () = assert!(PMC_WIDTH == 48 && offset_of!(Page, time_shift) == 50);
const _: () = assert!(offset_of!(Page, time_mult) == 52 && TIME_OFFSET == 56);
const _: () = assert!(TIME_CYCLES == 80 && TIME_MASK == 88);
const _: () = assert!(std::mem::size_of::<Page>() <= 4096);

enum Backing {
    /// `mmap`ed from a perf_event fd; unmapped on drop.
    Mmap { len: usize },
    /// A simulated page on the heap (tests, Miri): kept alive by the `Arc`.
    #[cfg(test)]
    Sim {
        /// Kept alive by the page.
        _page: std::sync::Arc<SimPage>,
    },
}

/// A read-only view of a counter's control page.
pub(crate) struct ControlPage {
    base: NonNull<u8>,
    backing: Backing,
}

// SAFETY: the page is only read, through atomics; the mapping (or the Arc'd
// simulated page) is owned by this value and valid from any thread.
unsafe impl Send for ControlPage {}
// SAFETY: as above: shared access is atomic loads only.
unsafe impl Sync for ControlPage {}

impl ControlPage {
    /// Maps the control page of `fd` read-only (one page, no data area).
    pub(crate) fn map(fd: BorrowedFd<'_>) -> Result<ControlPage, Errno> {
        let len = usize::try_from(super::sysconf_page_size())
            .ok()
            .filter(|l| *l >= 4096)
            .unwrap_or(4096);
        let map_len = std::num::NonZeroUsize::new(len).ok_or(Errno(errno::EINVAL))?;
        let p = super::mmap_shared(fd, map_len, false)?;
        Ok(ControlPage {
            base: p,
            backing: Backing::Mmap { len },
        })
    }

    /// A view of a simulated page (tests).
    #[cfg(test)]
    pub(crate) fn simulated(page: std::sync::Arc<SimPage>) -> ControlPage {
        let base = NonNull::from(&*page).cast::<u8>();
        ControlPage {
            base,
            backing: Backing::Sim { _page: page },
        }
    }

    fn u32_at(&self, off: usize) -> &AtomicU32 {
        debug_assert!(off % 4 == 0 && off + 4 <= 4096);
        // SAFETY: `off` is one of the const offsets above, 4-aligned and
        // inside the page, which is valid for reads for the lifetime of
        // `self` (page-aligned base). The kernel (or the simulator) only
        // writes the field with same-size accesses; we only load.
        unsafe { &*self.base.as_ptr().add(off).cast::<AtomicU32>() }
    }

    fn u64_at(&self, off: usize) -> &AtomicU64 {
        debug_assert!(off % 8 == 0 && off + 8 <= 4096);
        // SAFETY: as in `u32_at`, with an 8-aligned offset.
        unsafe { &*self.base.as_ptr().add(off).cast::<AtomicU64>() }
    }
}

impl PageSource for ControlPage {
    fn begin(&self) -> u32 {
        self.u32_at(LOCK).load(Ordering::Acquire)
    }

    fn fields(&self) -> PageFields {
        let r = |off| self.u64_at(off).load(Ordering::Relaxed);
        // The u16 at 48, u16 at 50 and u32 at 52, whatever the endianness.
        let w = r(PMC_WIDTH).to_ne_bytes();
        PageFields {
            index: self.u32_at(INDEX).load(Ordering::Relaxed),
            offset: r(OFFSET) as i64,
            time_enabled: r(TIME_ENABLED),
            time_running: r(TIME_RUNNING),
            capabilities: r(CAPABILITIES),
            pmc_width: u16::from_ne_bytes([w[0], w[1]]),
            time_shift: u16::from_ne_bytes([w[2], w[3]]),
            time_mult: u32::from_ne_bytes([w[4], w[5], w[6], w[7]]),
            time_offset: r(TIME_OFFSET),
            time_cycles: r(TIME_CYCLES),
            time_mask: r(TIME_MASK),
        }
    }

    fn end(&self) -> u32 {
        fence(Ordering::Acquire);
        self.u32_at(LOCK).load(Ordering::Relaxed)
    }
}

impl Drop for ControlPage {
    fn drop(&mut self) {
        match self.backing {
            Backing::Mmap { len } => {
                // SAFETY: `base`/`len` are exactly the mapping made in `map`,
                // and no reference into it outlives `self`.
                unsafe { super::munmap(self.base, len) };
            }
            #[cfg(test)]
            Backing::Sim { .. } => {}
        }
    }
}

/// A simulated control page with the kernel's layout, for tests: the test
/// plays the kernel through these atomics, the reader sees it through
/// [`ControlPage`] as it would a mapping.
#[cfg(test)]
#[repr(C, align(4096))]
#[derive(Default)]
pub(crate) struct SimPage {
    pub version: AtomicU32,
    pub compat_version: AtomicU32,
    pub lock: AtomicU32,
    pub index: AtomicU32,
    pub offset: AtomicU64,
    pub time_enabled: AtomicU64,
    pub time_running: AtomicU64,
    pub capabilities: AtomicU64,
    /// `pmc_width | time_shift << 16 | time_mult << 32` (native endian u64).
    pub width_shift_mult: AtomicU64,
    pub time_offset: AtomicU64,
    pub time_zero: AtomicU64,
    pub size: AtomicU64,
    pub time_cycles: AtomicU64,
    pub time_mask: AtomicU64,
}

#[cfg(test)]
const _: () = {
    assert!(offset_of!(SimPage, lock) == LOCK && offset_of!(SimPage, index) == INDEX);
    assert!(offset_of!(SimPage, offset) == OFFSET);
    assert!(offset_of!(SimPage, time_enabled) == TIME_ENABLED);
    assert!(offset_of!(SimPage, time_running) == TIME_RUNNING);
    assert!(offset_of!(SimPage, capabilities) == CAPABILITIES);
    assert!(offset_of!(SimPage, width_shift_mult) == PMC_WIDTH);
    assert!(offset_of!(SimPage, time_offset) == TIME_OFFSET);
    assert!(offset_of!(SimPage, time_cycles) == TIME_CYCLES);
    assert!(offset_of!(SimPage, time_mask) == TIME_MASK);
    assert!(std::mem::size_of::<SimPage>() == 4096);
};

#[cfg(test)]
impl SimPage {
    /// Packs `pmc_width`, `time_shift`, `time_mult` as the kernel lays them out.
    pub(crate) fn pack(width: u16, shift: u16, mult: u32) -> u64 {
        let w = width.to_ne_bytes();
        let s = shift.to_ne_bytes();
        let m = mult.to_ne_bytes();
        u64::from_ne_bytes([w[0], w[1], s[0], s[1], m[0], m[1], m[2], m[3]])
    }
}

/// Whether this build can read counters from user space at all.
pub(crate) const HAVE_USER_READS: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

/// Reads hardware counter `counter` (the page's `index - 1`) from user space.
///
/// `serialize` first waits for earlier instructions to complete (`lfence`
/// on x86_64, `isb` on aarch64), so the read cannot be hoisted above the
/// measured region.
#[cfg(target_arch = "x86_64")]
pub(crate) fn read_counter(counter: u32, serialize: bool) -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: rdpmc/lfence read registers only, touching no memory. Callers
    // (crate::rdpmc) only get here when the control page says the kernel
    // enabled user rdpmc (cap_user_rdpmc) and scheduled this counter
    // (index != 0); otherwise the worst outcome is a #GP signal, not UB.
    unsafe {
        if serialize {
            std::arch::asm!("lfence", "rdpmc", in("ecx") counter, out("eax") lo, out("edx") hi,
                options(nomem, nostack, preserves_flags));
        } else {
            std::arch::asm!("rdpmc", in("ecx") counter, out("eax") lo, out("edx") hi,
                options(nomem, nostack, preserves_flags));
        }
    }
    u64::from(hi) << 32 | u64::from(lo)
}

/// The clock the page's `time_*` fields convert: the TSC.
#[cfg(target_arch = "x86_64")]
pub(crate) fn timestamp() -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: rdtsc reads a register and touches no memory; it is allowed in
    // user mode unless CR4.TSD is set, which Linux does not do for processes
    // that have not asked for it via prctl(PR_SET_TSC).
    unsafe {
        std::arch::asm!("rdtsc", out("eax") lo, out("edx") hi,
            options(nomem, nostack, preserves_flags));
    }
    u64::from(hi) << 32 | u64::from(lo)
}

/// Reads hardware counter `counter` (the page's `index - 1`) from user space:
/// `PMEVCNTR<n>_EL0` for n in 0..=30, `PMCCNTR_EL0` for 31 (the cycle
/// counter, `ARMV8_PMU_CYCLE_IDX`), as libperf does.
#[cfg(target_arch = "aarch64")]
pub(crate) fn read_counter(counter: u32, serialize: bool) -> u64 {
    macro_rules! mrs {
        ($reg:literal) => {{
            let v: u64;
            // SAFETY: `mrs` reads a system register and touches no memory.
            // The kernel grants EL0 access (PMUSERENR_EL0) when
            // perf_user_access is on and the event asked for user reads,
            // which cap_user_rdpmc and a non-zero index announce; callers only
            // get here then. Otherwise the worst outcome is SIGILL, not UB.
            unsafe {
                std::arch::asm!(concat!("mrs {v}, ", $reg), v = out(reg) v,
                    options(nomem, nostack, preserves_flags));
            }
            v
        }};
    }
    if serialize {
        // SAFETY: `isb` is a barrier with no memory or register effects.
        unsafe { std::arch::asm!("isb", options(nomem, nostack, preserves_flags)) };
    }
    match counter {
        0 => mrs!("pmevcntr0_el0"),
        1 => mrs!("pmevcntr1_el0"),
        2 => mrs!("pmevcntr2_el0"),
        3 => mrs!("pmevcntr3_el0"),
        4 => mrs!("pmevcntr4_el0"),
        5 => mrs!("pmevcntr5_el0"),
        6 => mrs!("pmevcntr6_el0"),
        7 => mrs!("pmevcntr7_el0"),
        8 => mrs!("pmevcntr8_el0"),
        9 => mrs!("pmevcntr9_el0"),
        10 => mrs!("pmevcntr10_el0"),
        11 => mrs!("pmevcntr11_el0"),
        12 => mrs!("pmevcntr12_el0"),
        13 => mrs!("pmevcntr13_el0"),
        14 => mrs!("pmevcntr14_el0"),
        15 => mrs!("pmevcntr15_el0"),
        16 => mrs!("pmevcntr16_el0"),
        17 => mrs!("pmevcntr17_el0"),
        18 => mrs!("pmevcntr18_el0"),
        19 => mrs!("pmevcntr19_el0"),
        20 => mrs!("pmevcntr20_el0"),
        21 => mrs!("pmevcntr21_el0"),
        22 => mrs!("pmevcntr22_el0"),
        23 => mrs!("pmevcntr23_el0"),
        24 => mrs!("pmevcntr24_el0"),
        25 => mrs!("pmevcntr25_el0"),
        26 => mrs!("pmevcntr26_el0"),
        27 => mrs!("pmevcntr27_el0"),
        28 => mrs!("pmevcntr28_el0"),
        29 => mrs!("pmevcntr29_el0"),
        30 => mrs!("pmevcntr30_el0"),
        _ => mrs!("pmccntr_el0"),
    }
}

/// The clock the page's `time_*` fields convert: the virtual counter.
#[cfg(target_arch = "aarch64")]
pub(crate) fn timestamp() -> u64 {
    let v: u64;
    // SAFETY: CNTVCT_EL0 is readable at EL0 on Linux (CNTKCTL_EL1.EL0VCTEN);
    // `mrs` touches no memory.
    unsafe {
        std::arch::asm!("mrs {v}, cntvct_el0", v = out(reg) v,
            options(nomem, nostack, preserves_flags));
    }
    v
}

/// No user-space counter reads on this architecture: never called, because
/// [`HAVE_USER_READS`] is false and every read falls back to `read(2)`.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(crate) fn read_counter(_counter: u32, _serialize: bool) -> u64 {
    0
}

/// See [`read_counter`]: never called on this architecture.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(crate) fn timestamp() -> u64 {
    0
}
