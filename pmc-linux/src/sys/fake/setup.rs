//! [`FakeKernel`]'s set-up: a new kernel, the machine's facts and files, refusals of
//! features, and the processes and threads (add, spawn, fork, exec, exit).

use crate::sys::Facts;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use super::{FakeKernel, Proc, St};

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

    pub(super) fn st(&self) -> MutexGuard<'_, St> {
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
}
