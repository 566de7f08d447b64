//! Reading counts: `read(2)` of each fd set as its `read_format` lays it out, summed per
//! instance, plus the counts kept from detached targets and the `write` base.

use super::*;
use std::os::fd::BorrowedFd;

pub(super) fn short_read(n: usize, want: usize) -> Error {
    Error::new(
        ErrorKind::Os,
        Op::Read,
        format!("the kernel returned {n} words for a read_format of {want}"),
    )
}

/// How many times a read the kernel answers `ECHILD` is tried again.
const ECHILD_RETRIES: u32 = 10_000;

/// `read(2)` of counts, tried again while the kernel answers `ECHILD`.
///
/// A group inherited into threads or children is read by summing each copy;
/// Linux refuses the sum while a copy's group differs from its parent's, which
/// it does for a moment while an exiting thread's copy is torn down member by
/// member (`__perf_read_group_add()`, since the CVE-2023-5717 fix in 6.6 and
/// its backports: "if (parent && (parent->group_generation !=
/// leader->group_generation || parent->nr_siblings != leader->nr_siblings))
/// { ret = -ECHILD; ... }"). pmc's groups never change after allocation, so
/// the refusal ends when the exit does: the read is tried again (yielding the
/// CPU to the exiting thread), and only a refusal that does not end is an error.
pub(super) fn read_counts<S: Sys + ?Sized>(
    sys: &S,
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
) -> Result<usize> {
    let mut tries = 0;
    loop {
        match sys.read(fd, buf) {
            Err(Errno(libc::ECHILD)) if tries < ECHILD_RETRIES => {
                tries += 1;
                std::thread::yield_now();
            }
            Err(e) => {
                let err = errno_map::op_error(Op::Read, e);
                return Err(if e.0 == libc::ECHILD {
                    err.with_help(format!(
                        "the kernel refused to sum an inherited group {ECHILD_RETRIES} times \
                         (ECHILD: a thread's or child's copy of the group did not match the \
                         group); read again once the threads or children being created or \
                         ending have settled"
                    ))
                } else {
                    err
                });
            }
            Ok(n) => return Ok(n),
        }
    }
}

/// One `read(2)` of up to `words.len()` words; no allocation, and a single
/// counter's read zeroes a 32-byte buffer, not a group's 536.
pub(super) fn read_words<S: Sys + ?Sized>(
    sys: &S,
    fd: &OwnedFd,
    words: &mut [u64],
) -> Result<usize> {
    if words.len() <= 4 {
        read_words_in::<S, 32>(sys, fd, words)
    } else if words.len() <= 11 {
        read_words_in::<S, 88>(sys, fd, words)
    } else {
        read_words_in::<S, { READ_WORDS * 8 }>(sys, fd, words)
    }
}

pub(super) fn read_words_in<S: Sys + ?Sized, const B: usize>(
    sys: &S,
    fd: &OwnedFd,
    words: &mut [u64],
) -> Result<usize> {
    let mut bytes = [0u8; B];
    let len = (words.len() * 8).min(B);
    let n = read_counts(sys, fd.as_fd(), &mut bytes[..len])?;
    for (w, chunk) in words.iter_mut().zip(bytes[..n].chunks_exact(8)) {
        let mut a = [0u8; 8];
        a.copy_from_slice(chunk);
        *w = u64::from_ne_bytes(a);
    }
    Ok(n / 8)
}

impl<S: Sys> Counters<S> {
    /// Whether the members' reads carry `PERF_FORMAT_LOST` (sampling PMCs on Linux 6.0+):
    /// a `lost` word after each member's `id` (perf_event_open(2), "Reading results").
    pub(super) fn reads_lost(&self) -> bool {
        self.members
            .first()
            .is_some_and(|m| m.attr.read_format & crate::record::read_format::LOST != 0)
    }

    /// Words in one member's own read: value, time_enabled, time_running, id [, lost].
    pub(super) fn member_words(&self) -> usize {
        4 + usize::from(self.reads_lost())
    }

    /// Words per member in a group read: value, id [, lost].
    pub(super) fn group_stride(&self) -> usize {
        2 + usize::from(self.reads_lost())
    }

    /// The kernel's count of the records it could not write (`PERF_FORMAT_LOST`), per event:
    /// `(event id, lost)` for every fd of the mapped instances; empty when the reads carry
    /// no such count (core.c `perf_read_one` and `__perf_read_group_add` write
    /// `atomic64_read(&event->lost_samples)`, which `__perf_output_begin` increments, on the
    /// parent of an inherited event, for each record that did not fit).
    pub(super) fn kernel_lost(&self) -> Result<Vec<(u64, u64)>> {
        let mut out = Vec::new();
        if !self.reads_lost() {
            return Ok(out);
        }
        let sys = &self._shared.sys;
        for inst in self.instances.iter().filter(|i| i.mapped) {
            for set in &inst.threads {
                if self.read == ReadLayout::Group {
                    let Some(leader) = set.first() else { continue };
                    let want = 3 + 3 * self.members.len();
                    let mut buf = [0u64; READ_WORDS];
                    let words = buf.get_mut(..want).ok_or_else(|| short_read(0, want))?;
                    let n = read_words(sys, leader, words)?;
                    if n != want {
                        return Err(short_read(n, want));
                    }
                    for i in 0..self.members.len() {
                        out.push((words[4 + 3 * i], words[5 + 3 * i]));
                    }
                } else {
                    for fd in set {
                        let mut words = [0u64; 5];
                        let n = read_words(sys, fd, &mut words)?;
                        if n != 5 {
                            return Err(short_read(n, 5));
                        }
                        out.push((words[3], words[4]));
                    }
                }
            }
        }
        Ok(out)
    }

    /// Adds one instance's readings (summed over its threads) into `out`.
    pub(super) fn read_instance(&self, inst: &InstanceFds, out: &mut [Reading]) -> Result<()> {
        if inst.exec == ExecState::Pending {
            return Ok(()); // not started since attach: whatever an exec enabled is not ours
        }
        self.read_instance_fds(inst, out)
    }

    /// [`read_instance`](Counters::read_instance) whether started or not.
    pub(super) fn read_instance_fds(&self, inst: &InstanceFds, out: &mut [Reading]) -> Result<()> {
        if self.read == ReadLayout::PerCpuTotals {
            // One event per CPU on the same tasks: each is enabled while the task runs
            // anywhere but counts only while it runs on its CPU, so the counts and running
            // times add up across the CPUs and the enabled time is one CPU's (summing it
            // would read as multiplexing and scale the count up).
            let mut sum = vec![(0u64, 0u64, 0u64); out.len()];
            let want = self.member_words();
            for set in &inst.threads {
                for (fd, acc) in set.iter().zip(sum.iter_mut()) {
                    let mut words = [0u64; 5];
                    let n = read_words(&self._shared.sys, fd, &mut words[..want])?;
                    if n != want {
                        return Err(short_read(n, want));
                    }
                    acc.0 = acc.0.saturating_add(words[0]);
                    acc.1 = acc.1.max(words[1]);
                    acc.2 = acc.2.saturating_add(words[2]);
                }
            }
            for (slot, (v, en, run)) in out.iter_mut().zip(sum) {
                slot.accumulate(&Reading::new(v, en, run.min(en)));
            }
            return Ok(());
        }
        if self.read == ReadLayout::PerMember && inst.cpus.iter().any(|&c| c >= 0) {
            return self.read_per_thread_cpu(inst, out);
        }
        for set in &inst.threads {
            if self.read == ReadLayout::PerMember {
                let want = self.member_words();
                for (fd, slot) in set.iter().zip(out.iter_mut()) {
                    // Small buffers: the read path zeroes 32 (40) bytes, not 1 KiB.
                    let mut words = [0u64; 5];
                    let n = read_words(&self._shared.sys, fd, &mut words[..want])?;
                    if n != want {
                        return Err(short_read(n, want));
                    }
                    slot.accumulate(&Reading::new(words[0], words[1], words[2]));
                }
            } else if let Some(leader) = set.first() {
                let stride = self.group_stride();
                let want = 3 + stride * self.members.len();
                // Groups of up to 4: 88-byte buffers, not 536-byte ones.
                let mut small = [0u64; 11];
                let mut big;
                let words: &mut [u64] = if want <= small.len() {
                    &mut small[..want]
                } else {
                    big = [0u64; READ_WORDS];
                    big.get_mut(..want).ok_or_else(|| short_read(0, want))?
                };
                let n = read_words(&self._shared.sys, leader, words)?;
                if n != want || words[0] as usize != self.members.len() {
                    return Err(short_read(n, want));
                }
                let (en, run) = (words[1], words[2]);
                for (i, slot) in out.iter_mut().enumerate() {
                    slot.accumulate(&Reading::new(words[3 + stride * i], en, run));
                }
            }
        }
        Ok(())
    }

    /// A process instance with one fd set per (thread, CPU) (sampling with descendants or of
    /// another process: [`FdLayout::PerThreadCpu`](super::layout::FdLayout)). A thread's
    /// per-CPU events are each enabled while it runs anywhere but run only while it runs on
    /// their CPU, so per thread the counts and running times add up over its CPUs and the
    /// enabled time is one CPU's (summing it would read as multiplexing: `scaled()` came out
    /// 2x the count on 2 CPUs). Threads then add up as usual. A thread's sets are consecutive,
    /// its CPUs ascending (`open_pid`, `attach`), so a CPU not above the previous one starts
    /// the next thread.
    fn read_per_thread_cpu(&self, inst: &InstanceFds, out: &mut [Reading]) -> Result<()> {
        let mut thread = vec![(0u64, 0u64, 0u64); out.len()];
        let flush = |thread: &mut [(u64, u64, u64)], out: &mut [Reading]| {
            for (slot, acc) in out.iter_mut().zip(thread.iter_mut()) {
                let (v, en, run) = std::mem::take(acc);
                slot.accumulate(&Reading::new(v, en, run.min(en)));
            }
        };
        let mut prev: Option<i32> = None;
        // Sampling events carry PERF_FORMAT_LOST: a fifth word.
        let want = self.member_words();
        for (set, &cpu) in inst.threads.iter().zip(&inst.cpus) {
            if prev.is_some_and(|p| cpu < 0 || cpu <= p) {
                flush(&mut thread, out);
            }
            prev = Some(cpu);
            for (fd, acc) in set.iter().zip(thread.iter_mut()) {
                let mut words = [0u64; 5];
                let n = read_words(&self._shared.sys, fd, &mut words[..want])?;
                if n != want {
                    return Err(short_read(n, want));
                }
                acc.0 = acc.0.saturating_add(words[0]);
                acc.1 = acc.1.max(words[1]);
                acc.2 = acc.2.saturating_add(words[2]);
            }
        }
        flush(&mut thread, out);
        Ok(())
    }

    pub(super) fn read_into(&self, out: &mut [Reading]) -> Result<()> {
        pmc_core::lifecycle::check_read_slots(self.members.len(), out.len())?;
        // The common group case, one leader fd (one thread or one CPU): one
        // read(2), decoded straight from the buffer in a single pass.
        if let ([inst], ReadLayout::Group) = (self.instances.as_slice(), self.read) {
            if let (false, [set]) = (inst.exec == ExecState::Pending, inst.threads.as_slice()) {
                if let Some(leader) = set.first() {
                    let mut b = [0u8; READ_WORDS * 8];
                    let stride = self.group_stride();
                    let want = 3 + stride * out.len();
                    if want > READ_WORDS {
                        return Err(short_read(0, want));
                    }
                    let n = read_counts(&self._shared.sys, leader.as_fd(), &mut b[..want * 8])?;
                    let w = |i: usize| {
                        let mut a = [0u8; 8];
                        a.copy_from_slice(&b[i * 8..i * 8 + 8]);
                        u64::from_ne_bytes(a)
                    };
                    if n != want * 8 || w(0) != out.len() as u64 {
                        return Err(short_read(n / 8, want));
                    }
                    let (en, run) = (w(1), w(2));
                    for (i, slot) in out.iter_mut().enumerate() {
                        let mut r = self.retired[i];
                        r.accumulate(&Reading::new(w(3 + stride * i), en, run));
                        r.value = r.value.wrapping_add(self.base[i]);
                        *slot = r;
                    }
                    return Ok(());
                }
            }
        }
        out.copy_from_slice(&self.retired);
        for inst in &self.instances {
            self.read_instance(inst, out)?;
        }
        for (slot, base) in out.iter_mut().zip(&self.base) {
            slot.value = slot.value.wrapping_add(*base);
        }
        Ok(())
    }

    pub(super) fn read_instances(&self) -> Result<Vec<InstanceReading>> {
        let mut v = Vec::with_capacity(self.instances.len());
        let mut one = vec![Reading::default(); self.members.len()];
        for inst in &self.instances {
            one.fill(Reading::default());
            self.read_instance(inst, &mut one)?;
            v.push(InstanceReading {
                instance: inst.instance,
                reading: one[0],
            });
        }
        Ok(v)
    }

    /// Every member on each instance (a group's [`read_instances`](pmc_core::Group::read_instances)).
    pub(super) fn read_group_instances(&self) -> Result<Vec<GroupInstanceReading>> {
        let mut v = Vec::with_capacity(self.instances.len());
        for inst in &self.instances {
            let mut readings = vec![Reading::default(); self.members.len()];
            self.read_instance(inst, &mut readings)?;
            v.push(GroupInstanceReading {
                instance: inst.instance,
                readings,
            });
        }
        Ok(v)
    }

    /// Writes the current counts to the log as interval `Counter` records: one per instance
    /// (CPU or target) for a single PMC, one total per member for a group.
    pub(super) fn log_counts(&self) -> Result<()> {
        use pmc_log::record as log;
        let time = crate::log::now(&self._shared.sys);
        let mut counters = Vec::new();
        let counter = |pmc_id, pid, cpu, r: &Reading| log::Counter {
            time,
            pmc_id,
            pid,
            tid: -1,
            cpu,
            kind: log::CounterKind::Interval,
            value: r.value,
            time_enabled: r.time_enabled,
            time_running: r.time_running,
        };
        if self.members.len() == 1 {
            for ir in self.read_instances()? {
                let (pid, cpu) = match ir.instance {
                    Instance::Cpu(c) => (-1, Some(c)),
                    Instance::Target(t) => {
                        let pid = t.pid().unwrap_or_else(|| self._shared.sys.getpid());
                        (i32::try_from(pid).unwrap_or(-1), None)
                    }
                };
                counters.push(counter(self.members[0].pmc_id, pid, cpu, &ir.reading));
            }
        } else {
            let mut out = vec![Reading::default(); self.members.len()];
            self.read_into(&mut out)?;
            for (m, r) in self.members.iter().zip(&out) {
                counters.push(counter(m.pmc_id, -1, None, r));
            }
        }
        self._shared
            .hub
            .write_counters(self.descriptors(), &counters)
    }
}
