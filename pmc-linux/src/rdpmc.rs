//! The fast read path (user-space counter reads): [`FastReader`], whose docs say how a
//! read works, when it falls back to `read(2)`, and what it costs.

use std::marker::PhantomData;
use std::os::fd::BorrowedFd;

use pmc_core::{Error, ErrorKind, Op, Reading, Result};

use crate::counter::LinuxPmc;
use crate::sys::facts::read_trimmed;
pub(crate) use crate::sys::rdpmc::{PageFields, PageSource};
use crate::sys::{RealSys, Sys};
use std::path::Path;

/// How many times a read retries while the kernel updates the control page
/// before it falls back to `read(2)`. An update takes nanoseconds and happens
/// at most once per context switch, so a second attempt nearly always works.
pub const MAX_RETRIES: u32 = 64;

/// `cap_user_rdpmc` in `perf_event_mmap_page::capabilities`.
pub(crate) const CAP_USER_RDPMC: u64 = 1 << 2;
/// `cap_user_time`.
pub(crate) const CAP_USER_TIME: u64 = 1 << 3;
/// `cap_user_time_short`.
pub(crate) const CAP_USER_TIME_SHORT: u64 = 1 << 5;

/// The hardware a read consults inside the seqlock: a fake in tests.
pub(crate) trait CounterSource {
    /// The raw value of hardware counter `counter` (the page's `index - 1`).
    fn counter(&mut self, counter: u32) -> u64;
    /// The timestamp counter the page's `time_*` fields convert (TSC, CNTVCT).
    fn timestamp(&mut self) -> u64;
}

/// Why a read went through `read(2)` instead of user space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fallback {
    /// This architecture has no user-space counter read in this crate.
    UnsupportedArch,
    /// No hardware PMU (`/sys/bus/event_source/devices/cpu` absent): VMs, containers.
    NoHardwarePmu,
    /// User reads are switched off: `/sys/bus/event_source/devices/cpu/rdpmc`
    /// is 0, or aarch64's `kernel.perf_user_access` is 0 or absent.
    Disabled,
    /// Mapping the control page failed, with this errno (e.g. `EPERM` past
    /// the locked-memory limit).
    MapFailed(i32),
    /// `index == 0`: the counter is not on the PMU now (a software event,
    /// stopped, or multiplexed out).
    NotScheduled,
    /// The kernel did not set `cap_user_rdpmc` for this event.
    NoUserRdpmc,
    /// The kernel did not set `cap_user_time`, so times cannot be extrapolated.
    NoUserTime,
    /// `pmc_width` outside 1..=64.
    BadWidth(u16),
    /// `time_shift` of 64 or more.
    BadTimeShift(u16),
    /// The page changed under every one of [`MAX_RETRIES`] attempts.
    Contended,
}

impl std::fmt::Display for Fallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fallback::UnsupportedArch => write!(f, "no user-space counter reads on this architecture"),
            Fallback::NoHardwarePmu => write!(f, "no hardware PMU"),
            Fallback::Disabled => write!(f, "user-space counter reads are disabled (sysfs cpu/rdpmc = 0, or kernel.perf_user_access = 0)"),
            Fallback::MapFailed(e) => write!(f, "cannot map the control page (errno {e})"),
            Fallback::NotScheduled => write!(f, "the counter is not on the PMU (index 0)"),
            Fallback::NoUserRdpmc => write!(f, "the kernel did not enable user reads for this event (cap_user_rdpmc = 0)"),
            Fallback::NoUserTime => write!(f, "no user-space time (cap_user_time = 0)"),
            Fallback::BadWidth(w) => write!(f, "odd pmc_width {w}"),
            Fallback::BadTimeShift(s) => write!(f, "odd time_shift {s}"),
            Fallback::Contended => write!(f, "the control page kept changing"),
        }
    }
}

/// The path a read took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadPath {
    /// Read in user space; no system call.
    User,
    /// One `read(2)`, for this reason.
    Syscall(Fallback),
}

/// Sign-extends a `width`-bit hardware value; `None` for widths outside 1..=64.
pub(crate) fn sign_extend(raw: u64, width: u16) -> Option<i64> {
    if !(1..=64).contains(&width) {
        return None;
    }
    let s = 64 - u32::from(width);
    Some(((raw << s) as i64) >> s)
}

/// Nanoseconds since the page's last update, from timestamp `cyc`, as in
/// `perf_event.h` (128-bit intermediate, so no overflow whatever the values).
/// `None` for a `time_shift` of 64 or more.
pub(crate) fn time_delta(f: &PageFields, cyc: u64) -> Option<u64> {
    if f.time_shift >= 64 {
        return None;
    }
    let cyc = if f.capabilities & CAP_USER_TIME_SHORT != 0 {
        f.time_cycles
            .wrapping_add(cyc.wrapping_sub(f.time_cycles) & f.time_mask)
    } else {
        cyc
    };
    let shift = u32::from(f.time_shift);
    let mult = u64::from(f.time_mult);
    let quot = cyc >> shift;
    let rem = cyc & ((1u64 << shift) - 1);
    let frac = ((u128::from(rem) * u128::from(mult)) >> shift) as u64;
    Some(
        f.time_offset
            .wrapping_add(quot.wrapping_mul(mult))
            .wrapping_add(frac),
    )
}

/// Turns one consistent snapshot (fields, timestamp, raw hardware value)
/// into a reading, or says why this snapshot cannot be used.
pub(crate) fn compute(
    f: &PageFields,
    cyc: u64,
    raw: u64,
) -> std::result::Result<Reading, Fallback> {
    if f.index == 0 {
        return Err(Fallback::NotScheduled);
    }
    if f.capabilities & CAP_USER_RDPMC == 0 {
        return Err(Fallback::NoUserRdpmc);
    }
    if f.capabilities & CAP_USER_TIME == 0 {
        return Err(Fallback::NoUserTime);
    }
    let pmc = sign_extend(raw, f.pmc_width).ok_or(Fallback::BadWidth(f.pmc_width))?;
    let delta = time_delta(f, cyc).ok_or(Fallback::BadTimeShift(f.time_shift))?;
    let value = (f.offset as u64).wrapping_add(pmc as u64);
    // index != 0: the counter is running now, so both times advance.
    Ok(Reading::new(
        value,
        f.time_enabled.wrapping_add(delta),
        f.time_running.wrapping_add(delta),
    ))
}

/// Whether a snapshot allows touching the hardware counter at all.
fn can_read_counter(f: &PageFields) -> bool {
    f.index != 0
        && f.capabilities & CAP_USER_RDPMC != 0
        && f.capabilities & CAP_USER_TIME != 0
        && (1..=64).contains(&f.pmc_width)
}

/// One user-space read under the page's seqlock: the pure heart of
/// [`FastReader`], generic over the page and the hardware so it is tested
/// against simulations.
///
/// The hardware counter is only read when the snapshot says it may be
/// (`index != 0`, `cap_user_rdpmc`, `cap_user_time`, a sane width), and
/// inside the seqlock, so a reschedule between loading `index` and reading
/// the counter is detected and retried.
pub(crate) fn read_self(
    page: &impl PageSource,
    hw: &mut impl CounterSource,
    max_retries: u32,
) -> std::result::Result<Reading, Fallback> {
    for _ in 0..max_retries {
        let seq = page.begin();
        if seq & 1 != 0 {
            std::hint::spin_loop();
            continue;
        }
        let f = page.fields();
        let ok = can_read_counter(&f);
        let (cyc, raw) = if ok {
            (hw.timestamp(), hw.counter(f.index - 1))
        } else {
            (0, 0)
        };
        if page.end() != seq {
            continue;
        }
        return compute(&f, cyc, raw);
    }
    Err(Fallback::Contended)
}

/// Decides from the machine's settings whether user-space reads can work at
/// all: `cpu_rdpmc` is the content of `/sys/bus/event_source/devices/cpu/rdpmc`
/// (or `cpu_core`'s on hybrid CPUs; `None` when no such PMU exists),
/// `perf_user_access` that of `/proc/sys/kernel/perf_user_access`.
pub(crate) fn user_access(
    arch: &str,
    cpu_rdpmc: Option<&str>,
    perf_user_access: Option<&str>,
) -> std::result::Result<(), Fallback> {
    match arch {
        "x86_64" => match cpu_rdpmc.map(str::trim) {
            None => Err(Fallback::NoHardwarePmu),
            Some("0") => Err(Fallback::Disabled),
            Some(_) => Ok(()),
        },
        "aarch64" => match perf_user_access.map(str::trim) {
            Some("0") | None => Err(Fallback::Disabled),
            Some(_) => Ok(()),
        },
        _ => Err(Fallback::UnsupportedArch),
    }
}

/// [`user_access`] for this machine.
pub(crate) fn machine_user_access(sys: &dyn Sys) -> std::result::Result<(), Fallback> {
    let read = |p: &str| read_trimmed(sys, p);
    let cpu = ["cpu", "cpu_core", "cpu_atom"]
        .iter()
        .find_map(|d| read(&format!("/sys/bus/event_source/devices/{d}/rdpmc")));
    let arch = std::env::consts::ARCH;
    let access = if arch == "aarch64" {
        read("/proc/sys/kernel/perf_user_access")
    } else {
        None
    };
    if arch == "aarch64"
        && sys
            .read_dir(Path::new(crate::events::PMU_DIR))
            .map(|d| !d.iter().any(|n| n.starts_with("armv8")))
            .unwrap_or(true)
    {
        return Err(Fallback::NoHardwarePmu);
    }
    user_access(arch, cpu.as_deref(), access.as_deref())
}

struct Hardware {
    serialize: bool,
}

impl CounterSource for Hardware {
    fn counter(&mut self, counter: u32) -> u64 {
        crate::sys::rdpmc::read_counter(counter, self.serialize)
    }
    fn timestamp(&mut self) -> u64 {
        crate::sys::rdpmc::timestamp()
    }
}

/// Reads a self-monitoring counting PMC from user space when the hardware
/// and kernel allow it, else with one `read(2)`.
///
/// Borrows the PMC: stop, write or release it after dropping the reader.
///
/// The fast read path: reading a self-monitoring counting PMC from user space
/// (`rdpmc` on x86_64, `mrs PMEVCNTR<n>_EL0` on aarch64) instead of `read(2)`.
///
/// ```no_run
/// use pmc_core::{Allocation, Backend as _, Pmc as _, Target};
/// # fn main() -> pmc_core::Result<()> {
/// let backend = pmc_linux::Backend::open()?;
/// let mut pmc = backend.allocate(&Allocation::counting("instructions:u".parse()?))?;
/// pmc.attach(Target::CurrentThread)?; // this thread alone
/// pmc.start()?;
/// let fast = pmc_linux::FastReader::new(&pmc)?;
/// let before = fast.read()?;
/// let v: u64 = (0..1000u64).sum();
/// let after = fast.read()?;
/// println!("{} instructions for {v}", after.value - before.value);
/// # Ok(()) }
/// ```
///
/// # How a read works
///
/// [`FastReader::new`] maps the counter's control page (`struct
/// perf_event_mmap_page`: one read-only page, no ring buffer). Each read then
/// follows the kernel's protocol (`include/uapi/linux/perf_event.h`):
///
/// 1. load the page's `lock` (acquire); an odd value is an update in
///    progress, retry;
/// 2. load the fields (atomics), read the timestamp counter and, when
///    `cap_user_rdpmc` is set and `index != 0`, hardware counter
///    `index - 1`;
/// 3. load `lock` again (after an acquire fence); if it moved, the kernel
///    rescheduled the counter meanwhile: retry (at most [`MAX_RETRIES`]
///    times, then fall back);
/// 4. sign-extend the hardware value from `pmc_width` bits and add `offset`;
/// 5. extrapolate `time_enabled`/`time_running` to now from the timestamp with
///    `time_mult`/`time_shift`/`time_offset` (and `time_cycles`/`time_mask`
///    when `cap_user_time_short`), so a multiplexed counter scales correctly.
///
/// Steps 4-5 and the decisions are the pure function `read_self`, tested
/// against a simulated page and a fake counter (and run under Miri).
///
/// # When it falls back to `read(2)`
///
/// Transparently, with exactly one `read(2)` of the counter's fd, when the
/// counter is not on the PMU right now (`index == 0`: software events, a
/// stopped or multiplexed-out counter), when the kernel does not offer user
/// reads (`cap_user_rdpmc`/`cap_user_time` clear, `/sys/bus/event_source/devices/cpu/rdpmc`
/// is 0, aarch64's `kernel.perf_user_access` is off or the event was not
/// opened with `config1` bit 1), when there is no hardware PMU at all (VMs),
/// when mapping the page failed (e.g. the locked-memory limit), on other
/// architectures, or when the seqlock stayed contended. [`FastReader::read_traced`]
/// says which path was taken and why.
///
/// # aarch64
///
/// The arm64 kernel lets EL0 read a counter only when
/// `kernel.perf_user_access` is 1 *and* the event asked for it with the
/// PMU's `rdpmc` format bit (`config1:1`); it refuses that bit on CPU-bound
/// events. So the backend sets the bit, read from the PMU's
/// `format/rdpmc`, on per-thread counting events of the CPU PMU whenever the
/// sysctl is 1 at allocate time (`crate::user_read::user_read_bits`); a `long` event keeps
/// its config1 as asked (the kernel refuses user reads of chained counters).
/// The page's `index` then names the register: 32 is `PMCCNTR_EL0`, n is
/// `PMEVCNTR<n-1>_EL0`.
///
/// # Where this is tested
///
/// The aarch64 path runs for real in the PMU lab (`ci/pmu-lab`, QEMU's
/// emulated Armv8 PMU): fast reads agree with read(2), a million of them make
/// no system call (counted by `raw_syscalls:sys_enter`), and with access off
/// every read is exactly one read(2), without SIGILL (`tests/tests/hw.rs`).
/// The x86_64 `rdpmc` path cannot run in CI: the CI host is a VM without a
/// PMU, and QEMU's x86 emulation has no PMU at all (checked). It is covered
/// by the simulated-page tests below (seqlock, sign extension, time
/// extrapolation, fallbacks) and on real x86 hardware by the same hw tests.
///
/// # Cost
///
/// A read allocates nothing. The user-space path makes no system call; the
/// fallback makes exactly one (`read(2)`).
///
/// # Serialization
///
/// [`FastReader::read`] does not serialize: the CPU may execute the counter
/// read a few instructions early or late, which is fine for regions of
/// thousands of instructions and costs nothing. [`FastReader::read_serialized`]
/// first waits for earlier instructions to complete (`lfence` on x86_64,
/// `isb` on aarch64); use it to measure tiny regions.
///
/// # Threads
///
/// A per-thread counter is only live on the PMU while its thread runs, so
/// only that thread may read it from user space: [`FastReader::new`] accepts
/// a PMC that counts exactly the calling thread (allocated with process scope,
/// attached to [`Target::CurrentThread`](pmc_core::Target::CurrentThread) on
/// that thread, not a group, no descendants), and a `FastReader` is neither
/// `Send` nor `Sync`. A PMC on [`Target::Current`](pmc_core::Target::Current)
/// counts the whole process, its later threads included: the kernel follows
/// them with inherited events, which it does not map.
pub struct FastReader<'a> {
    fd: BorrowedFd<'a>,
    /// The mapped control page, or why there is none.
    page: std::result::Result<crate::sys::rdpmc::ControlPage, Fallback>,
    /// What `LinuxPmc::read` adds to the fd's count (write base, detached targets).
    base: u64,
    retired: Reading,
    /// A per-thread counter: keep the reader on its thread.
    _not_send: PhantomData<*const ()>,
}

impl std::fmt::Debug for FastReader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FastReader")
            .field("fd", &self.fd)
            .field("user_reads", &self.unavailable())
            .finish_non_exhaustive()
    }
}

impl<'a> FastReader<'a> {
    /// A fast reader for `pmc`, which must count exactly the calling thread
    /// (see [Threads](FastReader#threads)).
    ///
    /// Never fails because user reads are impossible here: it then reads
    /// with `read(2)` ([`unavailable`](FastReader::unavailable) says why).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidState`] when `pmc` is not attached (start it
    /// first), [`ErrorKind::InvalidArgument`] when it counts more than the
    /// calling thread.
    pub fn new(pmc: &'a LinuxPmc) -> Result<FastReader<'a>> {
        let s = pmc.self_monitoring().map_err(|why| {
            let kind = if why.contains("attached") {
                ErrorKind::InvalidState
            } else {
                ErrorKind::InvalidArgument
            };
            Error::new(kind, Op::Read, format!("no fast reads for this PMC: {why}"))
                .with_help("user-space reads need a counting PMC on the calling thread only: process scope, attached to Target::CurrentThread on this thread before start, no group, no descendants")
        })?;
        Ok(FastReader {
            fd: s.fd,
            page: Self::map(s.fd),
            base: s.base,
            retired: s.retired,
            _not_send: PhantomData,
        })
    }

    fn map(fd: BorrowedFd<'_>) -> std::result::Result<crate::sys::rdpmc::ControlPage, Fallback> {
        if !crate::sys::rdpmc::HAVE_USER_READS {
            return Err(Fallback::UnsupportedArch);
        }
        machine_user_access(&RealSys)?;
        crate::sys::rdpmc::ControlPage::map(fd).map_err(|e| Fallback::MapFailed(e.0))
    }

    /// Why this reader always uses `read(2)`, if it does (no PMU, disabled,
    /// mapping failed, architecture); `None` when user reads are attempted.
    pub fn unavailable(&self) -> Option<Fallback> {
        self.page.as_ref().err().copied()
    }

    /// Reads the PMC, as `Pmc::read` would: the raw count and its times.
    ///
    /// # Errors
    ///
    /// Those of `read(2)` when it falls back.
    pub fn read(&self) -> Result<Reading> {
        self.read_traced(false).map(|(r, _)| r)
    }

    /// As [`read`](FastReader::read), but serialized: earlier instructions
    /// complete before the counter is read.
    ///
    /// # Errors
    ///
    /// Those of `read(2)` when it falls back.
    pub fn read_serialized(&self) -> Result<Reading> {
        self.read_traced(true).map(|(r, _)| r)
    }

    /// Reads the PMC and says which path the read took.
    ///
    /// # Errors
    ///
    /// Those of `read(2)` when it falls back.
    pub fn read_traced(&self, serialize: bool) -> Result<(Reading, ReadPath)> {
        let (mut r, path) = match self.user_read(serialize) {
            Ok(r) => (r, ReadPath::User),
            Err(why) => (self.syscall_read()?, ReadPath::Syscall(why)),
        };
        r.value = r.value.wrapping_add(self.base);
        r.accumulate(&self.retired);
        Ok((r, path))
    }

    fn user_read(&self, serialize: bool) -> std::result::Result<Reading, Fallback> {
        let page = self.page.as_ref().map_err(|e| *e)?;
        read_self(page, &mut Hardware { serialize }, MAX_RETRIES)
    }

    /// Exactly one `read(2)` of `value, time_enabled, time_running, id` (and `lost`, which
    /// only sampling PMCs carry: the buffer has room for it, so such a read is not ENOSPC).
    fn syscall_read(&self) -> Result<Reading> {
        let mut buf = [0u8; 40];
        let n = RealSys
            .read(self.fd, &mut buf)
            .map_err(|e| crate::errno_map::op_error(Op::Read, e))?;
        if n < 24 {
            return Err(Error::new(
                ErrorKind::Os,
                Op::Read,
                format!("the kernel returned {n} bytes for a read_format of 32"),
            ));
        }
        let w = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&buf[i * 8..i * 8 + 8]);
            u64::from_ne_bytes(a)
        };
        Ok(Reading::new(w(0), w(1), w(2)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// A plain-struct control page whose `lock` follows a script, to
    /// exercise retries.
    struct ScriptedPage {
        fields: PageFields,
        /// (begin, end) values per attempt; the last repeats.
        locks: Vec<(u32, u32)>,
        attempt: Cell<usize>,
    }

    impl ScriptedPage {
        fn stable(fields: PageFields) -> Self {
            ScriptedPage {
                fields,
                locks: vec![(2, 2)],
                attempt: Cell::new(0),
            }
        }
        fn current(&self) -> (u32, u32) {
            let i = self.attempt.get().min(self.locks.len() - 1);
            self.locks[i]
        }
    }

    impl PageSource for ScriptedPage {
        fn begin(&self) -> u32 {
            let (b, _) = self.current();
            if b & 1 != 0 {
                self.attempt.set(self.attempt.get() + 1);
            }
            b
        }
        fn fields(&self) -> PageFields {
            self.fields
        }
        fn end(&self) -> u32 {
            let (_, e) = self.current();
            self.attempt.set(self.attempt.get() + 1);
            e
        }
    }

    /// A fake PMU: fixed counter values and a fixed timestamp; counts reads.
    #[derive(Default)]
    struct FakeHw {
        raw: u64,
        tsc: u64,
        counter_reads: u32,
        last_counter: Option<u32>,
    }

    impl CounterSource for FakeHw {
        fn counter(&mut self, counter: u32) -> u64 {
            self.counter_reads += 1;
            self.last_counter = Some(counter);
            self.raw
        }
        fn timestamp(&mut self) -> u64 {
            self.tsc
        }
    }

    fn live() -> PageFields {
        PageFields {
            index: 3,
            offset: 1000,
            time_enabled: 500,
            time_running: 500,
            capabilities: CAP_USER_RDPMC | CAP_USER_TIME,
            pmc_width: 48,
            time_shift: 0,
            time_mult: 0,
            time_offset: 0,
            ..PageFields::default()
        }
    }

    #[test]
    fn rdpmc_sign_extension() {
        assert_eq!(sign_extend(0x7fff_ffff_ffff, 48), Some(0x7fff_ffff_ffff));
        assert_eq!(sign_extend(0xffff_ffff_ffff, 48), Some(-1));
        assert_eq!(sign_extend(0x8000_0000_0000, 48), Some(-(1 << 47)));
        assert_eq!(sign_extend(0xdead_0000_0000_0005, 48), Some(5));
        assert_eq!(sign_extend(u64::MAX, 64), Some(-1));
        assert_eq!(sign_extend(1, 1), Some(-1));
        assert_eq!(sign_extend(5, 0), None);
        assert_eq!(sign_extend(5, 65), None);
        assert_eq!(sign_extend(5, u16::MAX), None);
    }

    #[test]
    fn rdpmc_count_is_offset_plus_sign_extended_counter() {
        let mut hw = FakeHw {
            raw: 0xffff_ffff_fff6, // -10 in 48 bits
            ..FakeHw::default()
        };
        let r = read_self(&ScriptedPage::stable(live()), &mut hw, MAX_RETRIES).unwrap();
        assert_eq!(r.value, 990);
        assert_eq!(hw.last_counter, Some(2), "rdpmc uses index - 1");
        // A negative offset (the kernel's usual: count - counter start).
        let f = PageFields {
            offset: -(1 << 40),
            ..live()
        };
        hw.raw = (1 << 40) + 7;
        let r = read_self(&ScriptedPage::stable(f), &mut hw, MAX_RETRIES).unwrap();
        assert_eq!(r.value, 7);
    }

    #[test]
    fn rdpmc_time_extrapolation() {
        // 1 ns per 2 cycles: mult = 2^31, shift = 32.
        let f = PageFields {
            time_mult: 1 << 31,
            time_shift: 32,
            time_offset: 100u64.wrapping_neg(), // delta = cyc/2 - 100
            time_enabled: 1_000,
            time_running: 400, // multiplexed so far
            ..live()
        };
        let mut hw = FakeHw {
            raw: 3_000,
            tsc: 1_200,
            ..FakeHw::default()
        };
        let r = read_self(&ScriptedPage::stable(f), &mut hw, MAX_RETRIES).unwrap();
        assert_eq!(r.time_enabled, 1_000 + 500);
        assert_eq!(r.time_running, 400 + 500);
        assert_eq!(r.value, 4_000);
        assert_eq!(r.scaled(), Some(4_000 * 1_500 / 900));
        // Odd (huge) values wrap instead of panicking.
        let f = PageFields {
            time_mult: u32::MAX,
            time_shift: 63,
            time_offset: u64::MAX,
            time_enabled: u64::MAX,
            ..live()
        };
        hw.tsc = u64::MAX;
        assert!(read_self(&ScriptedPage::stable(f), &mut hw, MAX_RETRIES).is_ok());
    }

    #[test]
    fn rdpmc_time_delta_matches_the_header_formula() {
        let f = PageFields {
            time_mult: 3_000_000_000,
            time_shift: 31,
            time_offset: 12_345,
            ..live()
        };
        for cyc in [0u64, 1, 1 << 31, (1 << 40) + 17, u64::MAX >> 8] {
            let quot = cyc >> 31;
            let rem = cyc & ((1 << 31) - 1);
            let want = 12_345u64
                .wrapping_add(quot.wrapping_mul(3_000_000_000))
                .wrapping_add((rem * 3_000_000_000) >> 31);
            assert_eq!(time_delta(&f, cyc), Some(want), "cyc {cyc}");
        }
        assert_eq!(
            time_delta(
                &PageFields {
                    time_shift: 64,
                    ..f
                },
                1
            ),
            None
        );
    }

    #[test]
    fn rdpmc_time_short_counter() {
        // A 32-bit timestamp counter that wrapped since time_cycles.
        let f = PageFields {
            capabilities: CAP_USER_RDPMC | CAP_USER_TIME | CAP_USER_TIME_SHORT,
            time_cycles: 0xffff_fff0,
            time_mask: 0xffff_ffff,
            time_mult: 1,
            time_shift: 0,
            time_offset: 0xffff_fff0u64.wrapping_neg(), // delta = cyc - time_cycles
            ..live()
        };
        let cyc = 0x1_0000_0010u64 & 0xffff_ffff; // the short counter reads 0x10
        let d = time_delta(&f, cyc).unwrap();
        assert_eq!(d, 0x20);
    }

    #[test]
    fn rdpmc_falls_back_when_not_scheduled_without_touching_the_counter() {
        let mut hw = FakeHw::default();
        let f = PageFields { index: 0, ..live() };
        assert_eq!(
            read_self(&ScriptedPage::stable(f), &mut hw, MAX_RETRIES),
            Err(Fallback::NotScheduled)
        );
        let f = PageFields {
            capabilities: CAP_USER_TIME,
            ..live()
        };
        assert_eq!(
            read_self(&ScriptedPage::stable(f), &mut hw, MAX_RETRIES),
            Err(Fallback::NoUserRdpmc)
        );
        let f = PageFields {
            capabilities: CAP_USER_RDPMC,
            ..live()
        };
        assert_eq!(
            read_self(&ScriptedPage::stable(f), &mut hw, MAX_RETRIES),
            Err(Fallback::NoUserTime)
        );
        for w in [0, 65, 200] {
            let f = PageFields {
                pmc_width: w,
                ..live()
            };
            assert_eq!(
                read_self(&ScriptedPage::stable(f), &mut hw, MAX_RETRIES),
                Err(Fallback::BadWidth(w))
            );
        }
        let f = PageFields {
            time_shift: 64,
            ..live()
        };
        assert_eq!(
            read_self(&ScriptedPage::stable(f), &mut hw, MAX_RETRIES),
            Err(Fallback::BadTimeShift(64))
        );
        // Only the time_shift case (checked after the read) touched the counter.
        assert_eq!(hw.counter_reads, 1);
    }

    #[test]
    fn rdpmc_seqlock_retries_on_change_and_odd_lock() {
        let mut hw = FakeHw {
            raw: 1,
            ..FakeHw::default()
        };
        let page = ScriptedPage {
            fields: live(),
            locks: vec![(2, 4), (5, 5), (4, 6), (6, 6)],
            attempt: Cell::new(0),
        };
        let r = read_self(&page, &mut hw, MAX_RETRIES).unwrap();
        assert_eq!(r.value, 1001);
        assert_eq!(page.attempt.get(), 4);
        // Counter read in attempts 1, 3 and 4 (not on the odd lock).
        assert_eq!(hw.counter_reads, 3);
    }

    #[test]
    fn rdpmc_contended_page_gives_up() {
        let mut hw = FakeHw::default();
        let page = ScriptedPage {
            fields: live(),
            locks: vec![(2, 4)],
            attempt: Cell::new(0),
        };
        assert_eq!(read_self(&page, &mut hw, 5), Err(Fallback::Contended));
        assert_eq!(page.attempt.get(), 5);
        let page = ScriptedPage {
            fields: live(),
            locks: vec![(3, 3)],
            attempt: Cell::new(0),
        };
        assert_eq!(read_self(&page, &mut hw, 5), Err(Fallback::Contended));
    }

    #[test]
    fn rdpmc_user_access_decisions() {
        assert_eq!(
            user_access("x86_64", None, None),
            Err(Fallback::NoHardwarePmu)
        );
        assert_eq!(
            user_access("x86_64", Some("0\n"), None),
            Err(Fallback::Disabled)
        );
        assert_eq!(user_access("x86_64", Some("1\n"), None), Ok(()));
        assert_eq!(user_access("x86_64", Some("2\n"), None), Ok(()));
        assert_eq!(user_access("aarch64", None, None), Err(Fallback::Disabled));
        assert_eq!(
            user_access("aarch64", None, Some("0\n")),
            Err(Fallback::Disabled)
        );
        assert_eq!(user_access("aarch64", None, Some("1\n")), Ok(()));
        assert_eq!(
            user_access("riscv64", Some("1"), Some("1")),
            Err(Fallback::UnsupportedArch)
        );
    }

    /// The real page accessor (`sys::rdpmc::ControlPage`) over a simulated
    /// page, with a thread playing the kernel: every snapshot a read accepts
    /// must be one the kernel published (no torn reads). Runs under Miri.
    #[test]
    fn rdpmc_seqlock_against_a_concurrent_kernel() {
        use crate::sys::rdpmc::{ControlPage, SimPage};
        use std::sync::atomic::{fence, AtomicBool, Ordering::*};
        use std::sync::Arc;

        let sim = Arc::new(SimPage::default());
        let publish = |s: &SimPage, gen: u64| {
            // perf_event_update_userpage: ++lock; barrier; fields; barrier; ++lock.
            let seq = s.lock.load(Relaxed);
            s.lock.store(seq.wrapping_add(1), Relaxed);
            fence(Release);
            s.index.store(1 + (gen % 4) as u32, Relaxed);
            s.offset.store(gen * 7, Relaxed);
            s.time_enabled.store(gen * 10, Relaxed);
            s.time_running.store(gen * 10, Relaxed);
            s.lock.store(seq.wrapping_add(2), Release);
        };
        sim.capabilities
            .store(CAP_USER_RDPMC | CAP_USER_TIME, Relaxed);
        sim.width_shift_mult.store(SimPage::pack(48, 0, 0), Relaxed);
        publish(&sim, 1);
        let stop = Arc::new(AtomicBool::new(false));
        let n: u64 = if cfg!(miri) { 40 } else { 100_000 };
        let kernel = {
            let (sim, stop) = (sim.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut gen = 1;
                while !stop.load(Relaxed) && gen < n {
                    gen += 1;
                    publish(&sim, gen);
                }
            })
        };
        let page = ControlPage::simulated(sim.clone());
        let mut hw = FakeHw {
            raw: 5,
            ..FakeHw::default()
        };
        let mut ok = 0;
        for _ in 0..n {
            match read_self(&page, &mut hw, MAX_RETRIES) {
                Ok(r) => {
                    let gen = r.time_enabled / 10;
                    assert_eq!(r.value, gen * 7 + 5, "torn read: {r:?}");
                    assert_eq!(r.time_running, r.time_enabled);
                    assert_eq!(hw.last_counter, Some((gen % 4) as u32));
                    ok += 1;
                }
                Err(Fallback::Contended) => {}
                Err(e) => panic!("unexpected fallback {e}"),
            }
        }
        stop.store(true, Relaxed);
        kernel.join().unwrap();
        // Quiet page: the read must succeed and see the last generation.
        let r = read_self(&page, &mut hw, MAX_RETRIES).unwrap();
        let last = r.time_enabled / 10;
        assert_eq!(r.value, last * 7 + 5);
        assert!(last >= 1 && ok + 1 > 0);
        // The page as last published.
        let f = page.fields();
        assert_eq!(f.pmc_width, 48);
        assert_eq!(f.capabilities, CAP_USER_RDPMC | CAP_USER_TIME);
    }

    #[test]
    fn rdpmc_page_fields_decode_the_shared_word() {
        use crate::sys::rdpmc::{ControlPage, SimPage};
        use std::sync::atomic::Ordering::Relaxed;
        let sim = std::sync::Arc::new(SimPage::default());
        sim.width_shift_mult
            .store(SimPage::pack(40, 31, 0xdead_beef), Relaxed);
        sim.time_cycles.store(9, Relaxed);
        sim.time_mask.store(0xff, Relaxed);
        sim.offset.store((-5i64) as u64, Relaxed);
        let page = ControlPage::simulated(sim);
        let f = page.fields();
        assert_eq!(
            (f.pmc_width, f.time_shift, f.time_mult),
            (40, 31, 0xdead_beef)
        );
        assert_eq!((f.time_cycles, f.time_mask, f.offset), (9, 0xff, -5));
    }
}
