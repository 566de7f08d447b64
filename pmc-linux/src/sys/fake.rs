//! A fake kernel: [`Sys`] over a model of perf_event, so the counting and sampling code can be
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
//!   [`MmapRing`]/[`crate::ring::RingReader`].

use super::mmap::{MmapRing, RingMemory};
use super::{Clock, Errno, Facts, FileMeta, Ioctl, Rlimit, Sys};
use crate::errno;
use perf_event_open_sys::bindings as b;
use perf_event_open_sys::bindings::perf_event_attr;
use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// A system call the model can fail on demand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// `perf_event_open`.
    Open,
    /// `ioctl` (every `PERF_EVENT_IOC_*` but `ID`).
    Ioctl,
    /// `read`.
    Read,
    /// `PERF_EVENT_IOC_ID`.
    EventId,
    /// The ring's `mmap`.
    Mmap,
}

/// An injected error: the next matching calls fail with `errno`.
#[derive(Debug, Clone)]
pub struct Fault {
    call: Call,
    errno: Errno,
    pid: Option<i32>,
    cpu: Option<i32>,
    members_only: bool,
    skip: u32,
    times: u32,
}

impl Fault {
    /// Fails the next `call` with `errno`, once.
    pub fn new(call: Call, errno: i32) -> Fault {
        Fault {
            call,
            errno: Errno(errno),
            pid: None,
            cpu: None,
            members_only: false,
            skip: 0,
            times: 1,
        }
    }

    /// Only opens for this pid (or tid) match.
    pub fn pid(mut self, pid: i32) -> Fault {
        self.pid = Some(pid);
        self
    }

    /// Only opens on this CPU match.
    pub fn cpu(mut self, cpu: i32) -> Fault {
        self.cpu = Some(cpu);
        self
    }

    /// Only opens of group members (a group fd given) match.
    pub fn members_only(mut self) -> Fault {
        self.members_only = true;
        self
    }

    /// Lets the first `n` matching calls succeed.
    pub fn after(mut self, n: u32) -> Fault {
        self.skip = n;
        self
    }

    /// Fails `n` matching calls (`u32::MAX`: all of them).
    pub fn times(mut self, n: u32) -> Fault {
        self.times = n;
        self
    }
}

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
    /// ([`FakeKernel::open_dir`](Sys::open_dir)).
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

impl FakeKernel {
    /// A kernel with one process (pid 100, one thread 100, the caller), 2 online CPUs,
    /// 4 KiB pages, `inherit_thread` (Linux 5.13+), and the facts of an unprivileged process at
    /// `perf_event_paranoid` 2 on a machine with a PMU.
    pub fn new() -> FakeKernel {
        let mut procs = BTreeMap::new();
        procs.insert(
            100,
            Proc {
                tids: vec![100],
                ..Proc::default()
            },
        );
        FakeKernel {
            st: Mutex::new(St {
                pid: 100,
                tid: 100,
                procs,
                possible: 2,
                online: vec![0, 1],
                events: BTreeMap::new(),
                seq: 0,
                next_id: 1000,
                faults: Vec::new(),
                facts: Facts {
                    paranoid: Some(2),
                    privileged: false,
                    has_pmu: true,
                    nofile: Some(1024),
                    max_sample_rate: Some(100_000),
                    ncpus: 2,
                },
                inherit_thread: true,
                inherited_sample_read: true,
                inherit_group_read: true,
                format_lost: true,
                ring_lost: BTreeMap::new(),
                opens: 0,
                ioctl_log: Vec::new(),
                files: BTreeMap::new(),
                dirs: BTreeMap::new(),
                cgroup_errno: None,
                hypervisor: None,
            }),
        }
    }

    fn st(&self) -> MutexGuard<'_, St> {
        // A test that panicked while holding the lock has failed already; go on with its state.
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Refuses cgroup events (`PERF_FLAG_PID_CGROUP`) on a directory that opens with `errno`:
    /// `ENOENT` as a cgroup v1 hierarchy without perf_event (`css_tryget_online_from_dir`),
    /// `EBADF` as a directory outside cgroupfs, `EINVAL` as a kernel without
    /// `CONFIG_CGROUP_PERF`.
    pub fn refuse_cgroups(&self, errno: i32) {
        self.st().cgroup_errno = Some(errno);
    }

    /// Gives the file `path` (of `/proc`, `/sys` or tracefs) these contents; its parent
    /// directories exist from then on. No file exists until a test gives it.
    pub fn set_file(&self, path: impl AsRef<Path>, contents: impl AsRef<[u8]>) {
        self.st()
            .files
            .insert(path.as_ref().to_path_buf(), contents.as_ref().to_vec());
    }

    /// CPUID's hypervisor vendor signature (leaf `0x4000_0000`), as `KVMKVMKVM\0\0\0`.
    pub fn set_hypervisor(&self, signature: [u8; 12]) {
        self.st().hypervisor = Some(signature);
    }

    /// Sets the facts (paranoid level, privileges, limits) the code under test sees.
    pub fn set_facts(&self, facts: Facts) {
        self.st().facts = facts;
    }

    /// `nr_cpu_ids` and the online CPUs among them.
    pub fn set_cpus(&self, possible: u32, online: &[u32]) {
        let mut st = self.st();
        st.possible = possible;
        st.online = online.to_vec();
        st.facts.ncpus = online.len();
    }

    /// A kernel before 5.13, whose attr has no `inherit_thread` bit (it is reserved, so
    /// setting it fails with EINVAL: `perf_copy_attr` rejects non-zero reserved bits).
    pub fn without_inherit_thread(&self) {
        self.st().inherit_thread = false;
    }

    /// A kernel before 6.12, which refuses `inherit` with `PERF_SAMPLE_READ`
    /// (core.c perf_event_alloc before commit 7e8b255650fc, "perf: Support PERF_SAMPLE_READ
    /// with inherit": "if (attr->inherit && (attr->sample_type & PERF_SAMPLE_READ)) goto
    /// err_ns;", EINVAL).
    pub fn without_inherited_sample_read(&self) {
        self.st().inherited_sample_read = false;
    }

    /// A kernel refusing `inherit` with `PERF_FORMAT_GROUP` (perf_event_open(2), `inherit`:
    /// "Inherit does not work for some combinations of read_format values, such as
    /// PERF_FORMAT_GROUP"; Linux 6.18 accepts it).
    pub fn refuse_inherited_group_reads(&self) {
        self.st().inherit_group_read = false;
    }

    /// A kernel before 6.0, without `PERF_FORMAT_LOST`: an attr asking for it is EINVAL
    /// (core.c `perf_copy_attr`: `if (attr->read_format & ~(PERF_FORMAT_MAX-1)) return
    /// -EINVAL`).
    pub fn without_format_lost(&self) {
        self.st().format_lost = false;
    }

    /// Makes the calling thread `tid` (of the calling process).
    pub fn set_current_thread(&self, tid: i32) {
        self.st().tid = tid;
    }

    /// The calling process's id.
    pub fn pid(&self) -> u32 {
        self.st().pid
    }

    /// Adds a process with these threads (the first is its main thread, `pid`).
    pub fn add_process(&self, pid: u32, tids: &[i32]) {
        self.st().procs.insert(
            pid,
            Proc {
                tids: tids.to_vec(),
                ..Proc::default()
            },
        );
    }

    /// Thread `parent` creates thread `tid` in its process: every event counting `parent` with
    /// `inherit` is inherited (core.c `perf_event_init_task` → `inherit_task_group`, for
    /// `CLONE_THREAD` and, without `inherit_thread`, for forks alike).
    pub fn spawn_thread(&self, parent: i32, tid: i32) {
        let mut st = self.st();
        let Some(pid) = st.process_of(parent) else {
            return;
        };
        if let Some(p) = st.procs.get_mut(&pid) {
            p.tids.push(tid);
        }
        st.inherit(parent, tid, true);
    }

    /// Thread `parent` forks process `child` (one thread): events with `inherit` and without
    /// `inherit_thread` follow it (core.c `inherit_task_group`: `inherit_thread` events are
    /// inherited only with `CLONE_THREAD`).
    pub fn fork(&self, parent: i32, child: u32) {
        let mut st = self.st();
        let Ok(tid) = i32::try_from(child) else {
            return;
        };
        st.procs.insert(
            child,
            Proc {
                tids: vec![tid],
                ..Proc::default()
            },
        );
        st.inherit(parent, tid, false);
    }

    /// Process `pid` execs: its events with `enable_on_exec` are enabled, once (core.c
    /// `perf_event_enable_on_exec` → `event_enable_on_exec` clears the bit).
    pub fn exec(&self, pid: u32) {
        let mut st = self.st();
        let tids: Vec<i32> = st
            .procs
            .get(&pid)
            .map(|p| p.tids.clone())
            .unwrap_or_default();
        for ev in st.events.values_mut() {
            let a = &mut ev.view.attr;
            if a.enable_on_exec() == 1 && ev.view.tids.iter().any(|t| tids.contains(t)) {
                a.set_enable_on_exec(0);
                ev.view.enabled = true;
            }
        }
    }

    /// Marks thread `tid` as exiting (`PF_EXITING`): still listed, but about to go.
    pub fn set_exiting(&self, tid: i32) {
        let mut st = self.st();
        if let Some(pid) = st.process_of(tid) {
            if let Some(p) = st.procs.get_mut(&pid) {
                p.exiting.insert(tid);
            }
        }
    }

    /// Thread `tid` exits: gone from its process (the process with it when it is the main
    /// thread); its events keep their counts and report POLLHUP.
    pub fn exit_thread(&self, tid: i32) {
        let mut st = self.st();
        if let Some(pid) = st.process_of(tid) {
            if u32::try_from(tid) == Ok(pid) {
                st.procs.remove(&pid);
            } else if let Some(p) = st.procs.get_mut(&pid) {
                p.tids.retain(|t| *t != tid);
                p.exiting.remove(&tid);
            }
        }
        for ev in st.events.values_mut() {
            if ev.view.pid == tid {
                ev.hangup = None;
            }
        }
    }

    /// Queues an injected error.
    pub fn inject(&self, fault: Fault) {
        self.st().faults.push(fault);
    }

    /// How many `perf_event_open` calls were made (failed ones included).
    pub fn opens(&self) -> u64 {
        self.st().opens
    }

    /// Every ioctl made, in order, as `(fd, op)`.
    pub fn ioctls(&self) -> Vec<(i32, Ioctl)> {
        self.st().ioctl_log.clone()
    }

    /// The open events (their fds not closed), in open order.
    pub fn events(&self) -> Vec<FakeEvent> {
        let st = self.st();
        let mut v: Vec<(u64, FakeEvent)> = st
            .events
            .iter()
            .filter(|(fd, ev)| live(**fd, &ev.link))
            .map(|(_, ev)| (ev.seq, ev.view.clone()))
            .collect();
        v.sort_by_key(|(seq, _)| *seq);
        v.into_iter().map(|(_, e)| e).collect()
    }

    /// The open event behind `fd`.
    pub fn event(&self, fd: i32) -> Option<FakeEvent> {
        self.events().into_iter().find(|e| e.fd == fd)
    }

    /// Thread `tid` runs `ns` nanoseconds on `cpu`. Every event counting it that is active
    /// (enabled, and its leader enabled: a group is scheduled as a unit, perf_event_open(2)
    /// "group_fd") accrues enabled time; those on `cpu` or on any CPU also run (for their
    /// multiplexing share of the time) and count `ns` times that share. A CPU-wide event on
    /// `cpu` counts whatever runs there.
    pub fn tick(&self, tid: i32, cpu: u32, ns: u64) {
        let mut st = self.st();
        let cpu = i32::try_from(cpu).unwrap_or(-1);
        let enabled: BTreeMap<i32, bool> = st
            .events
            .iter()
            .map(|(fd, e)| (*fd, e.view.enabled))
            .collect();
        for ev in st.events.values_mut() {
            let v = &mut ev.view;
            let active = v.enabled && enabled.get(&v.leader).copied().unwrap_or(false);
            let task = v.pid != -1 && v.tids.contains(&tid);
            let cpu_wide = v.pid == -1 && v.cpu == cpu;
            if !active || !(task || cpu_wide) {
                continue;
            }
            v.time_enabled = v.time_enabled.saturating_add(ns);
            if v.cpu == -1 || v.cpu == cpu {
                let run = ns.saturating_mul(ev.share) / 100;
                v.time_running = v.time_running.saturating_add(run);
                v.count = v.count.saturating_add(run);
            }
        }
    }

    /// Schedules the event behind `fd` for `percent` of its enabled time (the PMU multiplexes
    /// more events than it has counters: `time_running < time_enabled`).
    pub fn multiplex(&self, fd: i32, percent: u64) {
        if let Some(ev) = self.st().events.get_mut(&fd) {
            ev.share = percent.min(100);
        }
    }

    /// Adds `n` to the count of the event behind `fd`, whatever its state.
    pub fn add_count(&self, fd: i32, n: u64) {
        if let Some(ev) = self.st().events.get_mut(&fd) {
            ev.view.count = ev.view.count.wrapping_add(n);
        }
    }

    /// Writes `record` (a whole perf record, header included) into the ring that the event
    /// behind `fd` outputs to (its own, or the one `PERF_EVENT_IOC_SET_OUTPUT` named), as the
    /// kernel does (`perf_output_begin`/`perf_output_end`). `false` when there is no such ring
    /// or the record does not fit.
    pub fn write_record(&self, fd: i32, record: &[u8]) -> bool {
        let st = self.st();
        match st.ring_of(fd) {
            Some(ring) => ring.push(record),
            None => false,
        }
    }

    /// `data_tail` of the ring the event behind `fd` outputs to: how far the reader got.
    pub fn ring_tail(&self, fd: i32) -> Option<u64> {
        self.st().ring_of(fd).map(|r| r.tail())
    }

    /// A `PERF_RECORD_SAMPLE` of the event behind `fd` (thread `tid` of process `pid`, on
    /// `cpu`), laid out for its `sample_type` as perf_event_open(2) lists the fields
    /// (IDENTIFIER, IP, TID, TIME, CPU, PERIOD, CALLCHAIN supported; `None` for other bits),
    /// written into its ring. Returns whether it was written.
    ///
    /// As core.c `__perf_output_begin`: a record that does not fit is lost, counted in the
    /// ring (`local_inc(&rb->lost)`) and in the event (`atomic64_inc(&event->lost_samples)`,
    /// the parent's for an inherited event: the model's inherited events are one); the next
    /// record that fits is preceded by a `PERF_RECORD_LOST` of the ring's count (`lost_event`,
    /// with the event's id and its `sample_id` trailer), which then starts again from 0.
    pub fn sample(&self, fd: i32, s: SampleSpec) -> Option<bool> {
        let (st_type, id, period, id_all) = {
            let st = self.st();
            let ev = st.events.get(&fd)?;
            let (period, _, _) = super::attr_unions(&ev.view.attr);
            let id_all = ev.view.attr.sample_id_all() == 1;
            (ev.view.attr.sample_type, ev.view.id, period, id_all)
        };
        let known = u64::from(
            b::PERF_SAMPLE_IDENTIFIER
                | b::PERF_SAMPLE_IP
                | b::PERF_SAMPLE_TID
                | b::PERF_SAMPLE_TIME
                | b::PERF_SAMPLE_CPU
                | b::PERF_SAMPLE_PERIOD
                | b::PERF_SAMPLE_CALLCHAIN,
        );
        if st_type & !known != 0 {
            return None;
        }
        let has = |bit: u32| st_type & u64::from(bit) != 0;
        let mut body: Vec<u64> = Vec::new();
        if has(b::PERF_SAMPLE_IDENTIFIER) {
            body.push(id);
        }
        if has(b::PERF_SAMPLE_IP) {
            body.push(s.ip);
        }
        if has(b::PERF_SAMPLE_TID) {
            body.push(u64::from(s.pid as u32) | (u64::from(s.tid as u32) << 32));
        }
        if has(b::PERF_SAMPLE_TIME) {
            body.push(s.time);
        }
        if has(b::PERF_SAMPLE_CPU) {
            body.push(u64::from(s.cpu));
        }
        if has(b::PERF_SAMPLE_PERIOD) {
            body.push(period);
        }
        if has(b::PERF_SAMPLE_CALLCHAIN) {
            body.push(0);
        }
        let size = 8 + body.len() * 8;
        let mut rec = Vec::with_capacity(size);
        rec.extend_from_slice(&b::PERF_RECORD_SAMPLE.to_ne_bytes());
        rec.extend_from_slice(&(b::PERF_RECORD_MISC_USER as u16).to_ne_bytes());
        rec.extend_from_slice(&u16::try_from(size).ok()?.to_ne_bytes());
        for w in body {
            rec.extend_from_slice(&w.to_ne_bytes());
        }
        let mut st = self.st();
        let ring = st.ring_of(fd)?;
        let key = Arc::as_ptr(&ring) as usize;
        let pending = st.ring_lost.get(&key).copied().unwrap_or(0);
        let mut out = Vec::new();
        if pending > 0 {
            // perf_event_header, u64 id, u64 lost, then the sample_id trailer (TID, TIME,
            // ID, STREAM_ID, CPU, IDENTIFIER, each if asked for).
            let mut trailer: Vec<u64> = Vec::new();
            if id_all {
                if has(b::PERF_SAMPLE_TID) {
                    trailer.push(u64::from(s.pid as u32) | (u64::from(s.tid as u32) << 32));
                }
                if has(b::PERF_SAMPLE_TIME) {
                    trailer.push(s.time);
                }
                if has(b::PERF_SAMPLE_ID) {
                    trailer.push(id);
                }
                if has(b::PERF_SAMPLE_STREAM_ID) {
                    trailer.push(id);
                }
                if has(b::PERF_SAMPLE_CPU) {
                    trailer.push(u64::from(s.cpu));
                }
                if has(b::PERF_SAMPLE_IDENTIFIER) {
                    trailer.push(id);
                }
            }
            let size = 8 + 16 + trailer.len() * 8;
            out.extend_from_slice(&b::PERF_RECORD_LOST.to_ne_bytes());
            out.extend_from_slice(&0u16.to_ne_bytes());
            out.extend_from_slice(&u16::try_from(size).ok()?.to_ne_bytes());
            for w in [id, pending].into_iter().chain(trailer) {
                out.extend_from_slice(&w.to_ne_bytes());
            }
        }
        out.extend_from_slice(&rec);
        if ring.push(&out) {
            st.ring_lost.remove(&key);
            return Some(true);
        }
        *st.ring_lost.entry(key).or_default() += 1;
        if let Some(ev) = st.events.get_mut(&fd) {
            ev.view.lost += 1;
        }
        Some(false)
    }
}

/// One sample for [`FakeKernel::sample`].
#[derive(Debug, Clone, Copy, Default)]
pub struct SampleSpec {
    /// The instruction pointer.
    pub ip: u64,
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// Time, ns.
    pub time: u64,
    /// The CPU.
    pub cpu: u32,
}

/// Whether fd `fd` is still the pipe `link` (not closed, its number not reused).
fn live(fd: i32, link: &str) -> bool {
    std::fs::read_link(format!("/proc/self/fd/{fd}")).is_ok_and(|l| l.to_str() == Some(link))
}

impl St {
    fn process_of(&self, tid: i32) -> Option<u32> {
        self.procs
            .iter()
            .find(|(_, p)| p.tids.contains(&tid))
            .map(|(pid, _)| *pid)
    }

    /// `parent`'s inherited events now count `child` too (`thread`: a CLONE_THREAD child).
    fn inherit(&mut self, parent: i32, child: i32, thread: bool) {
        for ev in self.events.values_mut() {
            let a = &ev.view.attr;
            let follows = a.inherit() == 1 && (thread || a.inherit_thread() == 0);
            if follows && ev.view.tids.contains(&parent) {
                ev.view.tids.insert(child);
            }
        }
    }

    /// The first fault matching the call, consumed.
    fn fault(
        &mut self,
        call: Call,
        pid: Option<i32>,
        cpu: Option<i32>,
        member: bool,
    ) -> Option<Errno> {
        let i = self.faults.iter().position(|f| {
            f.call == call
                && (f.pid.is_none() || f.pid == pid)
                && (f.cpu.is_none() || f.cpu == cpu)
                && (!f.members_only || member)
        })?;
        let f = &mut self.faults[i];
        if f.skip > 0 {
            f.skip -= 1;
            return None;
        }
        let errno = f.errno;
        if f.times != u32::MAX {
            f.times -= 1;
            if f.times == 0 {
                self.faults.remove(i);
            }
        }
        Some(errno)
    }

    /// The live event behind `fd`, or EBADF-like failure for a descriptor that is not one.
    /// A duplicate of an event's fd (`dup(2)`, as the drain thread polls and reads) is the
    /// same event, as in the kernel: one open file.
    fn ev(&self, fd: BorrowedFd<'_>) -> Result<&Ev, Errno> {
        let n = fd.as_raw_fd();
        if let Some(e) = self.events.get(&n).filter(|e| live(n, &e.link)) {
            return Ok(e);
        }
        let link =
            std::fs::read_link(format!("/proc/self/fd/{n}")).map_err(|_| Errno(errno::EBADF))?;
        // ENOTTY: what the perf ioctls return on a file that is not a perf event.
        self.events
            .iter()
            .find(|(k, e)| link.to_str() == Some(e.link.as_str()) && live(**k, &e.link))
            .map(|(_, e)| e)
            .ok_or(Errno(errno::ENOTTY))
    }

    /// The leader then the siblings of `leader`'s group, in open order.
    fn group(&self, leader: i32) -> Vec<i32> {
        let mut v: Vec<(u64, i32)> = self
            .events
            .iter()
            .filter(|(fd, e)| e.view.leader == leader && live(**fd, &e.link))
            .map(|(fd, e)| (if *fd == leader { 0 } else { e.seq + 1 }, *fd))
            .collect();
        v.sort_unstable();
        v.into_iter().map(|(_, fd)| fd).collect()
    }

    fn ring_of(&self, fd: i32) -> Option<Arc<RingMemory>> {
        let mut at = fd;
        for _ in 0..8 {
            let ev = self.events.get(&at)?;
            if let Some(r) = &ev.ring {
                return Some(r.clone());
            }
            at = ev.view.output?;
        }
        None
    }

    /// The open checks, in the order the kernel makes them; the thread ids the event counts.
    fn check_open(
        &self,
        attr: &perf_event_attr,
        pid: i32,
        cpu: i32,
        group: Option<i32>,
        cgroup: bool,
    ) -> Result<i32, Errno> {
        // perf_event_open(2): "pid == -1 and cpu == -1: This setting is invalid".
        if pid == -1 && cpu == -1 {
            return Err(Errno(errno::EINVAL));
        }
        // core.c perf_event_open: "if ((flags & PERF_FLAG_PID_CGROUP) && (pid == -1 || cpu ==
        // -1)) return -EINVAL"; then perf_cgroup_connect: the pid is an fd of a cgroup
        // directory (EBADF otherwise), of a hierarchy with perf_event.
        if cgroup {
            if pid == -1 || cpu == -1 {
                return Err(Errno(errno::EINVAL));
            }
            if !self.dirs.get(&pid).is_some_and(|(link, _)| live(pid, link)) {
                return Err(Errno(errno::EBADF));
            }
            if let Some(e) = self.cgroup_errno {
                return Err(Errno(e));
            }
        }
        // core.c perf_init_event: no PMU takes a hardware event on a machine without one
        // (a VM without a virtual PMU), "return -ENOENT".
        if !self.facts.has_pmu
            && (attr.type_ == b::PERF_TYPE_HARDWARE || attr.type_ == b::PERF_TYPE_HW_CACHE)
        {
            return Err(Errno(errno::ENOENT));
        }
        // core.c perf_copy_attr: reserved bits must be zero (inherit_thread was reserved
        // before 5.13), and "if (!attr->inherit && attr->inherit_thread) return -EINVAL".
        if attr.inherit_thread() == 1 && (!self.inherit_thread || attr.inherit() == 0) {
            return Err(Errno(errno::EINVAL));
        }
        // core.c perf_event_alloc: before 6.12 "if (attr->inherit && (attr->sample_type &
        // PERF_SAMPLE_READ)) goto err_ns;"; from 6.12 only without PERF_SAMPLE_TID:
        // "if (has_inherit_and_sample_read(attr) && !(attr->sample_type & PERF_SAMPLE_TID))".
        let sample_read = attr.sample_type & u64::from(b::PERF_SAMPLE_READ) != 0;
        let tid = attr.sample_type & u64::from(b::PERF_SAMPLE_TID) != 0;
        if attr.inherit() == 1 && sample_read && (!self.inherited_sample_read || !tid) {
            return Err(Errno(errno::EINVAL));
        }
        if attr.inherit() == 1 && attr.read_format & FMT_GROUP != 0 && !self.inherit_group_read {
            return Err(Errno(errno::EINVAL));
        }
        if attr.read_format & FMT_LOST != 0 && !self.format_lost {
            return Err(Errno(errno::EINVAL));
        }
        // core.c perf_event_alloc: "if ((unsigned)cpu >= nr_cpu_ids) ... return -EINVAL".
        if cpu >= 0 && u32::try_from(cpu).map_or(true, |c| c >= self.possible) {
            return Err(Errno(errno::EINVAL));
        }
        // core.c find_get_context: an offline CPU's context is ENODEV.
        if cpu >= 0 && !self.online.contains(&(cpu as u32)) {
            return Err(Errno(errno::ENODEV));
        }
        // perf_event_open(2): pid 0 is the calling thread; ESRCH "if attempting to attach to a
        // process that does not exist".
        let tid = match pid {
            _ if cgroup => -1,
            0 => self.tid,
            -1 => -1,
            p if p > 0 && self.process_of(p).is_some() => p,
            _ => return Err(Errno(errno::ESRCH)),
        };
        if let Some(g) = group {
            let leader = self
                .events
                .get(&g)
                .filter(|e| live(g, &e.link))
                .ok_or(Errno(errno::EBADF))?;
            let l = &leader.view;
            // core.c perf_event_open: "Do not allow a recursive hierarchy" (the group fd must
            // be a leader), "Do not allow to attach to a group in a different task or CPU
            // context"; an inherited group's members must be inherited too (6.18: EINVAL).
            if !l.is_leader() || l.cpu != cpu || l.pid != tid || l.attr.inherit() != attr.inherit()
            {
                return Err(Errno(errno::EINVAL));
            }
        }
        Ok(tid)
    }
}

impl Sys for FakeKernel {
    fn perf_event_open(
        &self,
        attr: &mut perf_event_attr,
        pid: i32,
        cpu: i32,
        group: Option<BorrowedFd<'_>>,
        flags: u64,
    ) -> Result<OwnedFd, Errno> {
        let mut st = self.st();
        st.opens += 1;
        let group = group.map(|g| g.as_raw_fd());
        if let Some(e) = st.fault(Call::Open, Some(pid), Some(cpu), group.is_some()) {
            return Err(e);
        }
        let is_cgroup = flags & u64::from(b::PERF_FLAG_PID_CGROUP) != 0;
        let tid = st.check_open(attr, pid, cpu, group, is_cgroup)?;
        let cgroup = if is_cgroup {
            st.dirs.get(&pid).map(|(_, p)| p.clone())
        } else {
            None
        };
        let (rd, wr) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(Errno::from)?;
        let fd = rd.as_raw_fd();
        let link = std::fs::read_link(format!("/proc/self/fd/{fd}"))
            .ok()
            .and_then(|l| l.to_str().map(str::to_owned))
            .ok_or(Errno(errno::EMFILE))?;
        st.seq += 1;
        st.next_id += 1;
        let mut tids = BTreeSet::new();
        if tid > 0 {
            tids.insert(tid);
        }
        let view = FakeEvent {
            fd,
            pid: tid,
            cpu,
            leader: group.unwrap_or(fd),
            attr: *attr,
            id: st.next_id,
            enabled: attr.disabled() == 0,
            count: 0,
            time_enabled: 0,
            time_running: 0,
            tids,
            output: None,
            mapped: false,
            lost: 0,
            flags,
            cgroup,
        };
        let ev = Ev {
            link,
            hangup: Some(wr),
            seq: st.seq,
            view,
            share: 100,
            ring: None,
        };
        // A number reused: the event that had it was closed (its fd released).
        st.events.insert(fd, ev);
        Ok(rd)
    }

    fn ioctl(&self, fd: BorrowedFd<'_>, op: Ioctl) -> Result<(), Errno> {
        let mut st = self.st();
        if let Some(e) = st.fault(Call::Ioctl, None, None, false) {
            return Err(e);
        }
        let ev = st.ev(fd)?;
        let me = fd.as_raw_fd();
        let (leader, cpu, pid, own_ring) =
            (ev.view.leader, ev.view.cpu, ev.view.pid, ev.ring.is_some());
        let (period, _, _) = super::attr_unions(&ev.view.attr);
        st.ioctl_log.push((me, op));
        // core.c perf_ioctl → perf_event_for_each: PERF_IOC_FLAG_GROUP applies the call to
        // the whole group, from its leader, even when made on a member.
        let targets = |st: &St, g: bool| if g { st.group(leader) } else { vec![me] };
        match op {
            Ioctl::Enable(g) | Ioctl::Disable(g) => {
                let on = matches!(op, Ioctl::Enable(_));
                for fd in targets(&st, g) {
                    if let Some(e) = st.events.get_mut(&fd) {
                        e.view.enabled = on;
                    }
                }
            }
            Ioctl::Reset(g) => {
                // core.c _perf_event_reset: the count only; the times go on.
                for fd in targets(&st, g) {
                    if let Some(e) = st.events.get_mut(&fd) {
                        e.view.count = 0;
                    }
                }
            }
            Ioctl::Period(p) => {
                // core.c perf_event_period: "if (!is_sampling_event(event)) return -EINVAL;
                // if (!value) return -EINVAL".
                if period == 0 || p == 0 {
                    return Err(Errno(errno::EINVAL));
                }
                // "if (event->attr.freq) { ... event->attr.sample_freq = value; } else {
                // event->attr.sample_period = value; ... }": the mode stays what it was.
                if let Some(e) = st.events.get_mut(&me) {
                    if e.view.attr.freq() == 1 {
                        e.view.attr.__bindgen_anon_1.sample_freq = p;
                    } else {
                        e.view.attr.__bindgen_anon_1.sample_period = p;
                    }
                }
            }
            Ioctl::SetOutput(target) => {
                // core.c perf_event_set_output: same CPU, and for a per-task buffer the same
                // task; an event with a ring of its own cannot be redirected (EBUSY).
                let t = st.events.get(&target).filter(|e| live(target, &e.link));
                let t = t.ok_or(Errno(errno::EBADF))?;
                if t.view.cpu != cpu || (t.view.cpu == -1 && t.view.pid != pid) {
                    return Err(Errno(errno::EINVAL));
                }
                if own_ring {
                    return Err(Errno(errno::EBUSY));
                }
                if let Some(e) = st.events.get_mut(&me) {
                    e.view.output = Some(target);
                }
            }
        }
        Ok(())
    }

    fn read(&self, fd: BorrowedFd<'_>, buf: &mut [u8]) -> Result<usize, Errno> {
        let mut st = self.st();
        if let Some(e) = st.fault(Call::Read, None, None, false) {
            return Err(e);
        }
        let ev = st.ev(fd)?;
        let rf = ev.view.attr.read_format;
        let mut words: Vec<u64> = Vec::new();
        let times = |v: &FakeEvent, w: &mut Vec<u64>| {
            if rf & FMT_ENABLED != 0 {
                w.push(v.time_enabled);
            }
            if rf & FMT_RUNNING != 0 {
                w.push(v.time_running);
            }
        };
        if rf & FMT_GROUP != 0 {
            // perf_event_open(2), "Reading results" with PERF_FORMAT_GROUP, as core.c
            // perf_read_group: nr, the leader's times, then value [id] [lost] per member.
            let members = st.group(ev.view.leader);
            let leader = st.events.get(&ev.view.leader).ok_or(Errno(errno::EINVAL))?;
            words.push(members.len() as u64);
            times(&leader.view, &mut words);
            for m in members.iter().filter_map(|fd| st.events.get(fd)) {
                words.push(m.view.count);
                if rf & FMT_ID != 0 {
                    words.push(m.view.id);
                }
                if rf & FMT_LOST != 0 {
                    // core.c __perf_read_group_add: atomic64_read(&sub->lost_samples).
                    words.push(m.view.lost);
                }
            }
        } else {
            // value [time_enabled] [time_running] [id] [lost].
            words.push(ev.view.count);
            times(&ev.view, &mut words);
            if rf & FMT_ID != 0 {
                words.push(ev.view.id);
            }
            if rf & FMT_LOST != 0 {
                // core.c perf_read_one: atomic64_read(&event->lost_samples).
                words.push(ev.view.lost);
            }
        }
        let size = words.len() * 8;
        // core.c __perf_read: "if (count < event->read_size) return -ENOSPC".
        let out = buf.get_mut(..size).ok_or(Errno(errno::ENOSPC))?;
        for (chunk, w) in out.chunks_exact_mut(8).zip(&words) {
            chunk.copy_from_slice(&w.to_ne_bytes());
        }
        Ok(size)
    }

    fn event_id(&self, fd: BorrowedFd<'_>) -> Result<u64, Errno> {
        let mut st = self.st();
        if let Some(e) = st.fault(Call::EventId, None, None, false) {
            return Err(e);
        }
        Ok(st.ev(fd)?.view.id)
    }

    fn map_ring(&self, fd: BorrowedFd<'_>, data_pages: usize) -> std::io::Result<MmapRing> {
        let mut st = self.st();
        let err = std::io::Error::from_raw_os_error;
        if let Some(e) = st.fault(Call::Mmap, None, None, false) {
            return Err(e.into());
        }
        let ev = st.ev(fd).map_err(std::io::Error::from)?;
        // core.c perf_mmap: "Don't allow mmap() of inherited per-task counters", a
        // power-of-two number of data pages, and an event redirected elsewhere has no ring
        // of its own.
        if (ev.view.cpu == -1 && ev.view.attr.inherit() == 1)
            || !data_pages.is_power_of_two()
            || ev.view.output.is_some()
        {
            return Err(err(errno::EINVAL));
        }
        let existing = ev.ring.clone();
        let ring = match existing {
            Some(r) => r,
            None => Arc::new(RingMemory::new(4096, data_pages).ok_or_else(|| err(errno::ENOMEM))?),
        };
        if let Some(e) = st.events.get_mut(&fd.as_raw_fd()) {
            e.ring = Some(ring.clone());
            e.view.mapped = true;
        }
        Ok(MmapRing::shared(ring))
    }

    fn thread_ids(&self, pid: u32) -> Result<Vec<i32>, Errno> {
        self.st()
            .procs
            .get(&pid)
            .map(|p| p.tids.clone())
            .ok_or(Errno(errno::ESRCH))
    }

    fn thread_exiting(&self, tid: i32) -> bool {
        let st = self.st();
        match st.process_of(tid) {
            Some(pid) => st.procs.get(&pid).is_some_and(|p| p.exiting.contains(&tid)),
            None => true,
        }
    }

    fn process_alive(&self, pid: u32) -> bool {
        self.st().procs.contains_key(&pid)
    }

    fn gettid(&self) -> i32 {
        self.st().tid
    }

    fn getpid(&self) -> u32 {
        self.st().pid
    }

    fn page_size(&self) -> usize {
        4096
    }

    fn online_cpus(&self) -> Vec<u32> {
        self.st().online.clone()
    }

    fn facts(&self) -> Facts {
        self.st().facts
    }

    fn rlimit_soft(&self, resource: Rlimit) -> Option<u64> {
        match resource {
            Rlimit::NoFile => self.st().facts.nofile,
            Rlimit::MemLock => None,
        }
    }

    fn poll(&self, fds: &[BorrowedFd<'_>], timeout_ms: i32) -> Result<Vec<i16>, Errno> {
        // The descriptors are pipes: the host's poll sees their hang-ups.
        super::os::poll(fds, timeout_ms)
    }

    fn clock_ns(&self, clock: Clock) -> u64 {
        super::os::clock_ns(clock)
    }

    fn read_file(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        let st = self.st();
        match st.files.get(path) {
            Some(b) => Ok(b.clone()),
            None if st.files.keys().any(|k| k.starts_with(path)) => {
                Err(std::io::Error::from_raw_os_error(errno::EISDIR))
            }
            None => Err(std::io::ErrorKind::NotFound.into()),
        }
    }

    fn read_dir(&self, path: &Path) -> std::io::Result<Vec<String>> {
        let st = self.st();
        let mut names: Vec<String> = st
            .files
            .keys()
            .filter_map(|k| k.strip_prefix(path).ok())
            .filter_map(|rest| rest.components().next())
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        names.dedup();
        if names.is_empty() {
            return Err(std::io::ErrorKind::NotFound.into());
        }
        Ok(names)
    }

    fn metadata(&self, path: &Path) -> std::io::Result<FileMeta> {
        let st = self.st();
        if st.files.contains_key(path) {
            return Ok(FileMeta {
                is_dir: false,
                mode: 0o644,
            });
        }
        if st.files.keys().any(|k| k.starts_with(path)) {
            return Ok(FileMeta {
                is_dir: true,
                mode: 0o755,
            });
        }
        Err(std::io::ErrorKind::NotFound.into())
    }

    /// A directory the test gave (some file below it, [`FakeKernel::set_file`]) opens as a
    /// pipe's read end, remembered as that directory for cgroup events; anything else is
    /// `ENOENT`, a file `ENOTDIR`.
    fn open_dir(&self, path: &Path) -> Result<OwnedFd, Errno> {
        match self.metadata(path) {
            Ok(m) if m.is_dir => {}
            Ok(_) => return Err(Errno(errno::ENOTDIR)),
            Err(_) => return Err(Errno(errno::ENOENT)),
        }
        let (rd, _wr) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(Errno::from)?;
        let fd = rd.as_raw_fd();
        let link = std::fs::read_link(format!("/proc/self/fd/{fd}"))
            .ok()
            .and_then(|l| l.to_str().map(str::to_owned))
            .ok_or(Errno(errno::EMFILE))?;
        self.st().dirs.insert(fd, (link, path.to_path_buf()));
        Ok(rd)
    }

    fn cpuinfo(&self) -> Arc<str> {
        self.read_file(Path::new("/proc/cpuinfo"))
            .map(|b| String::from_utf8_lossy(&b).into())
            .unwrap_or_else(|_| "".into())
    }

    fn hypervisor_signature(&self) -> Option<[u8; 12]> {
        self.st().hypervisor
    }

    fn kernel_stext(&self) -> Option<u64> {
        let b = self.read_file(Path::new("/proc/kallsyms")).ok()?;
        let text = String::from_utf8_lossy(&b);
        super::stext_in(text.lines().map(str::to_owned))
    }
}

#[cfg(test)]
mod tests {
    //! The model's own rules, each as the kernel behaves (checked on Linux 6.18).

    use super::*;
    use std::os::fd::AsFd;

    fn attr(read_format: u64) -> perf_event_attr {
        let mut a = perf_event_attr {
            type_: b::PERF_TYPE_SOFTWARE,
            size: std::mem::size_of::<perf_event_attr>() as u32,
            config: u64::from(b::PERF_COUNT_SW_TASK_CLOCK),
            read_format,
            ..Default::default()
        };
        a.set_disabled(1);
        a
    }

    fn words(k: &FakeKernel, fd: &OwnedFd, n: usize) -> Result<Vec<u64>, Errno> {
        let mut buf = vec![0u8; n * 8];
        let got = k.read(fd.as_fd(), &mut buf)?;
        Ok(buf[..got]
            .chunks_exact(8)
            .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or_default()))
            .collect())
    }

    #[test]
    fn read_layouts_follow_read_format() {
        let k = FakeKernel::new();
        let all = FMT_ENABLED | FMT_RUNNING | FMT_ID;
        let solo = k
            .perf_event_open(&mut attr(all), 0, -1, None, 0)
            .expect("open");
        k.add_count(solo.as_raw_fd(), 5);
        let id = k.event_id(solo.as_fd()).expect("id");
        assert_eq!(words(&k, &solo, 4), Ok(vec![5, 0, 0, id]));
        assert_eq!(
            words(&k, &solo, 3),
            Err(Errno(errno::ENOSPC)),
            "core.c __perf_read"
        );
        let lead = k
            .perf_event_open(&mut attr(all | FMT_GROUP), 0, -1, None, 0)
            .expect("leader");
        let g = Some(lead.as_fd());
        let m = k
            .perf_event_open(&mut attr(all | FMT_GROUP), 0, -1, g, 0)
            .expect("member");
        k.add_count(m.as_raw_fd(), 9);
        let (lid, mid) = (k.event_id(lead.as_fd()), k.event_id(m.as_fd()));
        let expect = vec![2, 0, 0, 0, lid.expect("id"), 9, mid.expect("id")];
        assert_eq!(words(&k, &lead, 7).as_ref(), Ok(&expect));
        assert_eq!(
            words(&k, &m, 7),
            Ok(expect),
            "a member's read is its group's"
        );
    }

    #[test]
    fn open_refuses_what_the_kernel_refuses() {
        let k = FakeKernel::new();
        let open = |a: &mut perf_event_attr, pid, cpu, g: Option<&OwnedFd>| {
            k.perf_event_open(a, pid, cpu, g.map(|f| f.as_fd()), 0)
                .map(|_| ())
        };
        assert_eq!(open(&mut attr(0), -1, -1, None), Err(Errno(errno::EINVAL)));
        assert_eq!(open(&mut attr(0), 4242, -1, None), Err(Errno(errno::ESRCH)));
        assert_eq!(open(&mut attr(0), 0, 7, None), Err(Errno(errno::EINVAL)));
        let mut it = attr(0);
        it.set_inherit_thread(1);
        assert_eq!(
            open(&mut it, 0, -1, None),
            Err(Errno(errno::EINVAL)),
            "inherit_thread alone"
        );
        let lead = k
            .perf_event_open(&mut attr(0), 0, 0, None, 0)
            .expect("leader");
        assert_eq!(
            open(&mut attr(0), 0, 1, Some(&lead)),
            Err(Errno(errno::EINVAL)),
            "other CPU"
        );
        let m = k
            .perf_event_open(&mut attr(0), 0, 0, Some(lead.as_fd()), 0)
            .expect("member");
        assert_eq!(
            open(&mut attr(0), 0, 0, Some(&m)),
            Err(Errno(errno::EINVAL)),
            "member of a member"
        );
        let mut inh = attr(0);
        inh.set_inherit(1);
        assert_eq!(
            open(&mut inh, 0, 0, Some(&lead)),
            Err(Errno(errno::EINVAL)),
            "inherit mismatch"
        );
        assert_eq!(
            k.ioctl(lead.as_fd(), Ioctl::Period(10)),
            Err(Errno(errno::EINVAL)),
            "counting"
        );
    }

    #[test]
    fn rings_follow_perf_mmap_and_set_output() {
        let k = FakeKernel::new();
        let mut inh = attr(0);
        inh.set_inherit(1);
        let per_task = k.perf_event_open(&mut inh, 0, -1, None, 0).expect("open");
        let e = k
            .map_ring(per_task.as_fd(), 4)
            .expect_err("inherited per-task");
        assert_eq!(e.raw_os_error(), Some(errno::EINVAL));
        let a = k
            .perf_event_open(&mut attr(0), 0, 0, None, 0)
            .expect("cpu 0");
        let c1 = k
            .perf_event_open(&mut attr(0), 0, 1, None, 0)
            .expect("cpu 1");
        let c0 = k
            .perf_event_open(&mut attr(0), 0, 0, None, 0)
            .expect("cpu 0 again");
        assert!(k.map_ring(a.as_fd(), 3).is_err(), "not a power of two");
        let ring = k.map_ring(a.as_fd(), 1).expect("map");
        let out = Ioctl::SetOutput(a.as_raw_fd());
        assert_eq!(
            k.ioctl(c1.as_fd(), out),
            Err(Errno(errno::EINVAL)),
            "another CPU"
        );
        assert_eq!(k.ioctl(c0.as_fd(), out), Ok(()));
        let mut rec = b::PERF_RECORD_LOST.to_ne_bytes().to_vec();
        rec.extend_from_slice(&0u16.to_ne_bytes());
        rec.extend_from_slice(&16u16.to_ne_bytes());
        rec.extend_from_slice(&7u64.to_ne_bytes());
        assert!(k.write_record(c0.as_raw_fd(), &rec), "into a's ring");
        let mut reader = crate::ring::RingReader::new(ring).expect("reader");
        let mut batch = reader.batch();
        let got = batch.next_record().expect("one").expect("valid");
        assert_eq!(got.bytes, &rec[..]);
    }

    #[test]
    fn closed_fds_leave_the_model() {
        let k = FakeKernel::new();
        let fd = k
            .perf_event_open(&mut attr(0), 0, -1, None, 0)
            .expect("open");
        assert_eq!(k.events().len(), 1);
        drop(fd);
        assert!(k.events().is_empty());
    }
}
