//! The model's state under its lock: processes, inheritance, faults, the lookup of an
//! event by fd, groups, rings, and the checks `perf_event_open` makes.

use crate::errno;
use crate::sys::mmap::RingMemory;
use crate::sys::Errno;
use perf_event_open_sys::bindings as b;
use perf_event_open_sys::bindings::perf_event_attr;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::Arc;

use super::{live, Call, Ev, St, FMT_GROUP, FMT_LOST};

impl St {
    pub(super) fn process_of(&self, tid: i32) -> Option<u32> {
        self.procs
            .iter()
            .find(|(_, p)| p.tids.contains(&tid))
            .map(|(pid, _)| *pid)
    }

    /// `parent`'s inherited events now count `child` too (`thread`: a CLONE_THREAD child).
    pub(super) fn inherit(&mut self, parent: i32, child: i32, thread: bool) {
        for ev in self.events.values_mut() {
            let a = &ev.view.attr;
            let follows = a.inherit() == 1 && (thread || a.inherit_thread() == 0);
            if follows && ev.view.tids.contains(&parent) {
                ev.view.tids.insert(child);
            }
        }
    }

    /// The first fault matching the call, consumed.
    pub(super) fn fault(
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
    pub(super) fn ev(&self, fd: BorrowedFd<'_>) -> Result<&Ev, Errno> {
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
    pub(super) fn group(&self, leader: i32) -> Vec<i32> {
        let mut v: Vec<(u64, i32)> = self
            .events
            .iter()
            .filter(|(fd, e)| e.view.leader == leader && live(**fd, &e.link))
            .map(|(fd, e)| (if *fd == leader { 0 } else { e.seq + 1 }, *fd))
            .collect();
        v.sort_unstable();
        v.into_iter().map(|(_, fd)| fd).collect()
    }

    pub(super) fn ring_of(&self, fd: i32) -> Option<Arc<RingMemory>> {
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
    pub(super) fn check_open(
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
