//! The fallback ladder of one member's `perf_event_open`: what is tried again, and what a
//! refusal is reported as, when a kernel or PMU refuses what the attr asks. Each rung names
//! the kernel version or condition that makes it necessary:
//!
//! * [`lower_precise_ip`]: perf's `:P` (the highest `precise_ip` the PMU takes);
//! * [`without_format_lost`]: `PERF_FORMAT_LOST` (Linux 6.0);
//! * [`inherit_refused`]: `inherit_thread` (Linux 5.13) and inherited `PERF_SAMPLE_READ`
//!   (Linux 6.12);
//! * [`cgroup_refused`]: a cgroup the kernel refuses (no perf_event controller, a file);
//! * [`group_misfit`]: a hardware group larger than the PMU's counters.
//!
//! [`open_member`] climbs the ladder; [`InstanceSet`](super::instances::InstanceSet) calls it
//! for each member of a fd set, leader first.

use super::Member;
use crate::cgroup::{self, Cgroup};
use crate::errno;
use crate::errno_map::{self, OpenContext};
use crate::sys::{Errno, Sys};
use perf_event_open_sys::bindings as b;
use perf_event_open_sys::bindings::perf_event_attr;
use pmc_core::{Error, ErrorKind, Mode, Op, Rate};
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

const FORMAT_LOST: u64 = b::PERF_FORMAT_LOST as u64;

/// Where and as what one member of a fd set is opened: perf_event_open's arguments but the
/// attr.
#[derive(Clone, Copy)]
pub(super) struct Slot<'a> {
    /// The target thread or process (-1: every task of a CPU), for errors and races.
    pub(super) pid: i32,
    /// perf_event_open's `pid`: `pid`, or a cgroup directory's fd.
    pub(super) pid_arg: i32,
    /// perf_event_open's `cpu` (-1: any).
    pub(super) cpu: i32,
    /// The fd set's leader (`None`: this member is the leader).
    pub(super) group: Option<BorrowedFd<'a>>,
    /// perf_event_open's flags (`PERF_FLAG_PID_CGROUP` for a cgroup).
    pub(super) flags: u64,
    /// A system-scope cgroup PMC's cgroup (`pid_arg` is its directory).
    pub(super) cgroup: Option<&'a Cgroup>,
    /// The member's place in the set (0: the leader).
    pub(super) position: usize,
}

impl Slot<'_> {
    fn leader(&self) -> bool {
        self.position == 0
    }

    fn open<S: Sys>(&self, sys: &S, attr: &mut perf_event_attr) -> Result<OwnedFd, Errno> {
        sys.perf_event_open(attr, self.pid_arg, self.cpu, self.group, self.flags)
    }
}

/// Opens member `m` with `attr` at `at`, down the ladder; on success records the attr it
/// was opened with in `m.opened` (and, on a kernel without `PERF_FORMAT_LOST`, in
/// `no_format_lost`). The error says whether a member lost a race with its thread (a
/// member refused with EINVAL or ENODEV on another thread: worth a retry of the whole set).
pub(super) fn open_member<S: Sys>(
    sys: &S,
    at: &Slot<'_>,
    m: &mut Member,
    mut attr: perf_event_attr,
    no_format_lost: &AtomicBool,
) -> Result<OwnedFd, (Error, bool)> {
    let opened = at.open(sys, &mut attr);
    let opened = lower_precise_ip(sys, at, m, &mut attr, opened);
    let opened = without_format_lost(sys, at, m, &mut attr, no_format_lost, opened);
    // (A leader: a member's EINVAL on another thread may be a race, retried by the caller.)
    if matches!(opened, Err(Errno(errno::EINVAL))) && attr.inherit_thread() == 1 && at.leader() {
        if let Some(e) = inherit_refused(sys, at, &m.event, &attr) {
            return Err((e, false));
        }
    }
    let race =
        matches!(opened, Err(Errno(errno::ENODEV | errno::EINVAL))) && !at.leader() && at.pid > 0;
    if let (Err(errno), Some(cg), true) = (&opened, at.cgroup, at.leader()) {
        if let Some(e) = cgroup_refused(sys, at.cpu, &attr, *errno, cg, &m.event) {
            return Err((e, false));
        }
    }
    let fd = opened.map_err(|errno| {
        let e = open_error(sys, at, m, &attr, errno, race);
        let retry = race && e.kind() != ErrorKind::NoSuchProcess;
        (e, retry)
    })?;
    m.opened = attr;
    Ok(fd)
}

/// perf's `:P`: the highest `precise_ip` the PMU takes, as perf probes it
/// (evsel__detect_precise_ip: from 3 down to 0, on EINVAL or EOPNOTSUPP). The PMU, not the
/// kernel version, decides (x86 PEBS levels, none on most other PMUs).
fn lower_precise_ip<S: Sys>(
    sys: &S,
    at: &Slot<'_>,
    m: &mut Member,
    attr: &mut perf_event_attr,
    mut opened: Result<OwnedFd, Errno>,
) -> Result<OwnedFd, Errno> {
    while matches!(opened, Err(Errno(errno::EINVAL | errno::EOPNOTSUPP)))
        && m.alloc.event.modifiers.max_precise
        && attr.precise_ip() > 0
    {
        attr.set_precise_ip(attr.precise_ip() - 1);
        m.attr.set_precise_ip(attr.precise_ip());
        opened = at.open(sys, attr);
    }
    opened
}

/// Before Linux 6.0 `PERF_FORMAT_LOST` is beyond `PERF_FORMAT_MAX` (core.c perf_copy_attr:
/// `if (attr->read_format & ~(PERF_FORMAT_MAX-1)) return -EINVAL`): on EINVAL open without
/// it, and remember (`no_format_lost`) that the lost count may be incomplete (no count of
/// what is lost while the drain is held up).
fn without_format_lost<S: Sys>(
    sys: &S,
    at: &Slot<'_>,
    m: &mut Member,
    attr: &mut perf_event_attr,
    no_format_lost: &AtomicBool,
    opened: Result<OwnedFd, Errno>,
) -> Result<OwnedFd, Errno> {
    if !matches!(opened, Err(Errno(errno::EINVAL))) || attr.read_format & FORMAT_LOST == 0 {
        return opened;
    }
    let mut plain = *attr;
    plain.read_format &= !FORMAT_LOST;
    let again = at.open(sys, &mut plain);
    if again.is_ok() {
        no_format_lost.store(true, Ordering::Relaxed);
        m.attr.read_format &= !FORMAT_LOST;
        *attr = plain;
    }
    again
}

/// A leader with `inherit_thread` refused with EINVAL: what did the kernel refuse? If plain
/// `inherit` opens, `inherit_thread` (Linux < 5.13): new threads cannot be followed without
/// child processes. If only a non-inherited event opens, inheriting this event at all (e.g.
/// `PERF_SAMPLE_READ` before Linux 6.12). Either way the error to refuse with, rather than
/// count only the threads there are now (issue 20: half the work, no warning); `None`: the
/// event itself (reported as the kernel's EINVAL).
fn inherit_refused<S: Sys>(
    sys: &S,
    at: &Slot<'_>,
    event: &str,
    attr: &perf_event_attr,
) -> Option<Error> {
    let mut inherit_only = *attr;
    inherit_only.set_inherit_thread(0);
    if at.open(sys, &mut inherit_only).is_ok() {
        return Some(no_inherit_thread(event));
    }
    let mut plain = inherit_only;
    plain.set_inherit(0);
    if at.open(sys, &mut plain).is_ok() {
        return Some(no_inherit(event, attr));
    }
    None
}

/// A cgroup PMC's leader refused on `cpu`: was it the cgroup the kernel refused (ENOENT,
/// EBADF, EINVAL, EOPNOTSUPP: a hierarchy without perf_event, not a directory, ...)? The
/// same event opens on this CPU without it: then the error that says so (`None`: the
/// event's own refusal is to be reported).
fn cgroup_refused<S: Sys>(
    sys: &S,
    cpu: i32,
    attr: &perf_event_attr,
    errno: Errno,
    cg: &Cgroup,
    event: &str,
) -> Option<Error> {
    let mut plain = *attr;
    let cgroup_errno = matches!(
        errno.0,
        errno::ENOENT | errno::EBADF | errno::EINVAL | errno::EOPNOTSUPP
    );
    (cgroup_errno && sys.perf_event_open(&mut plain, -1, cpu, None, 0).is_ok())
        .then(|| cgroup::refused(errno, cg, event))
}

/// The error of member `m`'s open refused with `errno` (after the ladder).
fn open_error<S: Sys>(
    sys: &S,
    at: &Slot<'_>,
    m: &Member,
    attr: &perf_event_attr,
    errno: Errno,
    race: bool,
) -> Error {
    // A member whose leader was just opened on a thread that is now exiting fails with
    // ENODEV, not ESRCH (the leader's context is torn down). Report it as the vanished
    // thread it is, so attach skips it like any thread that exited.
    let errno = if race && sys.thread_exiting(at.pid) {
        Errno(errno::ESRCH)
    } else {
        errno
    };
    if errno == Errno(errno::EINVAL) && !at.leader() && m.resolved.is_hardware() {
        return group_misfit(at.position + 1, &m.event, errno);
    }
    let freq = match m.alloc.mode {
        Mode::Sampling(Rate::Frequency(f)) => Some(f),
        Mode::Sampling(Rate::Period(_)) => Some(0),
        Mode::Counting => None,
    };
    let ctx = OpenContext {
        event: &m.event,
        resolved: &m.resolved,
        pid: at.pid,
        cpu: at.cpu,
        counts_kernel: attr.exclude_kernel() == 0,
        sample_freq: freq,
    };
    errno_map::open_error(errno, &ctx, &sys.facts())
}

/// Member `n` (from 1) of a hardware group refused with EINVAL: the PMU drivers validate a
/// group against their counters when a member joins (armv8/x86 validate_group), so the
/// group no longer fits, not a bad event (the leader, same kind, opened).
fn group_misfit(n: usize, event: &str, errno: Errno) -> Error {
    Error::new(
        ErrorKind::NotSupported,
        Op::Allocate,
        format!(
            "a group of {n} or more hardware events does not fit on this PMU's counters: the \
             kernel refused member {n} (`{event}`) with EINVAL"
        ),
    )
    .with_errno(errno.0)
    .with_help(
        "use smaller groups (a group is scheduled all at once), or allocate the events \
         separately so the kernel multiplexes them",
    )
}

/// A process target on a kernel without `inherit_thread` (before 5.13): its threads created
/// later cannot be counted without its child processes.
fn no_inherit_thread(event: &str) -> Error {
    Error::new(
        ErrorKind::NotSupported,
        Op::Attach,
        format!(
            "`{event}`: this kernel cannot follow a process's new threads without following its \
             child processes too (perf_event's inherit_thread needs Linux 5.13); counting only \
             the threads there are now would undercount"
        ),
    )
    .with_errno(errno::EINVAL)
    .with_help(
        "allocate with Allocation::descendants() to count new threads and child processes, \
         or attach Target::CurrentThread to count the calling thread alone",
    )
}

/// A process target whose event this kernel opens only without `inherit`: its threads
/// created later cannot be followed.
fn no_inherit(event: &str, attr: &perf_event_attr) -> Error {
    let sample_read = attr.sample_type & u64::from(b::PERF_SAMPLE_READ) != 0;
    let (why, help) = if sample_read {
        (
            "counts read at each sample (PERF_SAMPLE_READ, as log-proccsw's context-switch \
             records need) cannot be inherited into new threads before Linux 6.12",
            "leave out log-proccsw, or attach Target::CurrentThread to log the calling \
             thread alone",
        )
    } else {
        (
            "this kernel refuses to inherit it into new threads (EINVAL with `inherit`, \
             accepted without)",
            "attach Target::CurrentThread to count the calling thread alone",
        )
    };
    Error::new(
        ErrorKind::NotSupported,
        Op::Attach,
        format!(
            "`{event}`: a process is counted with the threads it creates later, but {why}; \
             counting only the threads there are now would undercount"
        ),
    )
    .with_errno(errno::EINVAL)
    .with_help(help)
}
