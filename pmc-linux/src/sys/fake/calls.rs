//! [`Sys`] for [`FakeKernel`]: each call answered from the model, as the kernel would.

use crate::errno;
use crate::sys::mmap::{MmapRing, RingMemory};
use crate::sys::{Clock, Errno, Facts, FileMeta, Ioctl, Rlimit, Sys};
use perf_event_open_sys::bindings as b;
use perf_event_open_sys::bindings::perf_event_attr;
use std::collections::BTreeSet;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::Arc;

use super::{
    live, Call, Ev, FakeEvent, FakeKernel, St, FMT_ENABLED, FMT_GROUP, FMT_ID, FMT_LOST,
    FMT_RUNNING,
};

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
        let (rd, wr) = fake_pipe()?;
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
        let (period, _, _) = crate::sys::attr_unions(&ev.view.attr);
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
        crate::sys::os::poll(fds, timeout_ms)
    }

    fn clock_ns(&self, clock: Clock) -> u64 {
        crate::sys::os::clock_ns(clock)
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
        let (rd, _wr) = fake_pipe()?;
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
        crate::sys::stext_in(text.lines().map(str::to_owned))
    }
}

/// A close-on-exec pipe standing for a perf fd: (read end, write end).
fn fake_pipe() -> Result<(OwnedFd, OwnedFd), Errno> {
    use std::os::fd::FromRawFd;
    let mut fds = [-1; 2];
    // SAFETY: pipe2 writes two descriptors into the live local 2-int array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(crate::sys::last_errno());
    }
    // SAFETY: pipe2 succeeded, so both are new descriptors that nothing else owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}
