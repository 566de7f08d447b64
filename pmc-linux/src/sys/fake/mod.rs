//! A fake kernel: [`Sys`](super::Sys) over a model of perf_event, so the counting and sampling code can be
//! tested without privileges, without a PMU, and on any kernel.
//!
//! [`FakeKernel`] is the model: the test drives it ([`FakeKernel::tick`], samples from a
//! [`SampleSpec`]), injects errors ([`Fault`] on a [`Call`]) and inspects [`FakeEvent`]s.
//! Below: each rule it follows, and its source.
//!
//! Each rule below follows the kernel as `perf_event_open(2)` documents it or as
//! `kernel/events/core.c` implements it (named at the rule); rules the man page leaves open were
//! checked on Linux 6.18 (`perf_event_open` from a script, as root).
//!
//! * Descriptors are the read ends of pipes: real fds that close, dup and poll like any other
//!   (never readable; `POLLHUP` once the event's task exits, as a perf fd reports). The model
//!   keys its events by fd number and knows an fd closed when the number no longer names the
//!   same pipe (`/proc/self/fd`).
//! * The test drives time: [`FakeKernel::tick`] runs a thread on a CPU for `n` nanoseconds,
//!   during which each of its active events counts `n` (times the event's multiplexing share,
//!   [`FakeKernel::multiplex`]); [`FakeKernel::add_count`] adds to one event.
//! * Processes, threads, forks, execs and exits are the test's too ([`FakeKernel::add_process`],
//!   [`FakeKernel::spawn_thread`], [`FakeKernel::exec`], [`FakeKernel::exit_thread`]).
//! * Errors are injected per call ([`Fault`]).
//! * Rings are heap memory the model writes records into with the kernel's protocol
//!   ([`FakeKernel::write_record`], [`FakeKernel::sample`]), read through the real
//!   [`MmapRing`](super::mmap::MmapRing)/[`crate::ring::RingReader`].
//!
//! `mod.rs` holds the model's state ([`FakeKernel`], the events, processes); `setup.rs` the
//! test's set-up (facts, refusals, processes and threads), `drive.rs` what a test drives and
//! inspects (time, counts, records, samples), `fault.rs` injected errors, `state.rs` the
//! lookups and checks under the lock, `calls.rs` [`Sys`](super::Sys) answered from the model.

mod calls;
mod drive;
mod fault;
mod setup;
mod state;
#[cfg(test)]
mod tests;

pub use drive::SampleSpec;
pub use fault::{Call, Fault};

use super::mmap::RingMemory;
use super::{Facts, Ioctl};
use perf_event_open_sys::bindings as b;
use perf_event_open_sys::bindings::perf_event_attr;
use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// What the model knows of one open event, for a test's assertions.
#[derive(Debug, Clone)]
pub struct FakeEvent {
    /// Its fd number.
    pub fd: i32,
    /// The thread it was opened on (`-1`: every task on `cpu`).
    pub pid: i32,
    /// Its CPU (`-1`: any).
    pub cpu: i32,
    /// The fd of its group leader (its own for a leader).
    pub leader: i32,
    /// The attr it was opened with (`disabled`, `enable_on_exec` as the kernel keeps them:
    /// `enable_on_exec` is cleared by the exec).
    pub attr: perf_event_attr,
    /// `PERF_EVENT_IOC_ID`.
    pub id: u64,
    /// Enabled (by `disabled = 0`, an enable ioctl or an exec).
    pub enabled: bool,
    /// The count.
    pub count: u64,
    /// `time_enabled`, ns.
    pub time_enabled: u64,
    /// `time_running`, ns.
    pub time_running: u64,
    /// The threads it counts: its own and those that inherited it.
    pub tids: BTreeSet<i32>,
    /// `PERF_EVENT_IOC_SET_OUTPUT`'s target fd.
    pub output: Option<i32>,
    /// Its ring is mapped.
    pub mapped: bool,
    /// Records it could not write because its ring was full (`event->lost_samples`, read with
    /// `PERF_FORMAT_LOST`).
    pub lost: u64,
    /// The `flags` of its `perf_event_open` (without `PERF_FLAG_FD_CLOEXEC`, which the real
    /// call adds).
    pub flags: u64,
    /// A cgroup event (`PERF_FLAG_PID_CGROUP`): the directory whose fd was its `pid`
    /// ([`FakeKernel::open_dir`](super::Sys::open_dir)).
    pub cgroup: Option<PathBuf>,
}

impl FakeEvent {
    /// Whether it is a group leader.
    pub fn is_leader(&self) -> bool {
        self.leader == self.fd
    }
}

struct Ev {
    /// `/proc/self/fd/<fd>` at open: the pipe that is this event.
    link: String,
    /// The write end: dropped when the event's task exits, so a poll of the fd reports POLLHUP.
    hangup: Option<OwnedFd>,
    /// Open order.
    seq: u64,
    view: FakeEvent,
    /// Percent of enabled time the event is scheduled (multiplexing).
    share: u64,
    ring: Option<Arc<RingMemory>>,
}

#[derive(Debug, Clone, Default)]
struct Proc {
    tids: Vec<i32>,
    exiting: BTreeSet<i32>,
}

struct St {
    pid: u32,
    tid: i32,
    procs: BTreeMap<u32, Proc>,
    /// The possible CPUs (`nr_cpu_ids`) and which are online.
    possible: u32,
    online: Vec<u32>,
    events: BTreeMap<i32, Ev>,
    seq: u64,
    next_id: u64,
    faults: Vec<Fault>,
    facts: Facts,
    inherit_thread: bool,
    /// `inherit` with `PERF_SAMPLE_READ` accepted (Linux 6.12+, with `PERF_SAMPLE_TID`).
    inherited_sample_read: bool,
    inherit_group_read: bool,
    /// `PERF_FORMAT_LOST` is known (Linux 6.0+).
    format_lost: bool,
    /// Each ring's records lost since its last `PERF_RECORD_LOST` (`rb->lost`), by the ring's
    /// address.
    ring_lost: BTreeMap<usize, u64>,
    opens: u64,
    /// Every ioctl made, in order: `(fd, op)`.
    ioctl_log: Vec<(i32, Ioctl)>,
    /// The `/proc`, `/sys` and tracefs files the test gave, by path; their directories are
    /// implied by the paths.
    files: BTreeMap<PathBuf, Vec<u8>>,
    /// The directories opened with `open_dir`, by fd: (`/proc/self/fd` link, path).
    dirs: BTreeMap<i32, (String, PathBuf)>,
    /// Cgroup events open (`CONFIG_CGROUP_PERF`, and the directories are of a hierarchy with
    /// perf_event); false: refused with this errno.
    cgroup_errno: Option<i32>,
    /// CPUID's hypervisor vendor signature ([`FakeKernel::set_hypervisor`]).
    hypervisor: Option<[u8; 12]>,
}

/// The fake kernel. See the [module docs](self).
pub struct FakeKernel {
    st: Mutex<St>,
}

impl std::fmt::Debug for FakeKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeKernel").finish_non_exhaustive()
    }
}

impl Default for FakeKernel {
    fn default() -> Self {
        Self::new()
    }
}

/// `perf_event_attr.read_format` bits (`include/uapi/linux/perf_event.h`).
const FMT_ENABLED: u64 = b::PERF_FORMAT_TOTAL_TIME_ENABLED as u64;
const FMT_RUNNING: u64 = b::PERF_FORMAT_TOTAL_TIME_RUNNING as u64;
const FMT_ID: u64 = b::PERF_FORMAT_ID as u64;
const FMT_GROUP: u64 = b::PERF_FORMAT_GROUP as u64;
const FMT_LOST: u64 = 1 << 4;

/// Whether fd `fd` is still the pipe `link` (not closed, its number not reused).
fn live(fd: i32, link: &str) -> bool {
    std::fs::read_link(format!("/proc/self/fd/{fd}")).is_ok_and(|l| l.to_str() == Some(link))
}
