//! Reading an instance's fd sets and summing them: per thread, per (thread, CPU), the
//! kernel's lost counts.

use super::{ExecState, InstanceFds, InstanceSet};
use crate::counter::layout::ReadLayout;
use crate::counter::read::{group_stride, member_words, read_words, short_read};
use crate::counter::{Member, READ_WORDS};
use crate::sys::Sys;
use pmc_core::{Reading, Result};
use std::os::fd::OwnedFd;

impl<S: Sys> InstanceSet<S> {
    /// The kernel's count of the records it could not write (`PERF_FORMAT_LOST`), per event:
    /// `(event id, lost)` for every fd of the mapped instances; empty when the reads carry
    /// no such count (core.c `perf_read_one` and `__perf_read_group_add` write
    /// `atomic64_read(&event->lost_samples)`, which `__perf_output_begin` increments, on the
    /// parent of an inherited event, for each record that did not fit).
    #[cfg(feature = "sampling")]
    pub(in crate::counter) fn kernel_lost(&self, members: &[Member]) -> Result<Vec<(u64, u64)>> {
        let mut out = Vec::new();
        if !crate::counter::read::reads_lost(members) {
            return Ok(out);
        }
        let sys = &self.shared.sys;
        for inst in self.instances.iter().filter(|i| i.rings_mapped) {
            for set in &inst.threads {
                if self.read == ReadLayout::Group {
                    let Some(leader) = set.first() else { continue };
                    let want = 3 + 3 * members.len();
                    let mut buf = [0u64; READ_WORDS];
                    let words = buf.get_mut(..want).ok_or_else(|| short_read(0, want))?;
                    let n = read_words(sys, leader, words)?;
                    if n != want {
                        return Err(short_read(n, want));
                    }
                    for i in 0..members.len() {
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
    pub(in crate::counter) fn read_instance(
        &self,
        members: &[Member],
        inst: &InstanceFds,
        out: &mut [Reading],
    ) -> Result<()> {
        if inst.exec == ExecState::Pending {
            return Ok(()); // not started since attach: whatever an exec enabled is not ours
        }
        self.read_instance_fds(members, inst, out)
    }

    /// Adds every instance's readings into `out`.
    pub(in crate::counter) fn sum_into(
        &self,
        members: &[Member],
        out: &mut [Reading],
    ) -> Result<()> {
        for inst in &self.instances {
            self.read_instance(members, inst, out)?;
        }
        Ok(())
    }

    /// One member fd's `value, enabled, running[, id][, lost]`: `want` words
    /// ([`member_words`]), a short read an error. Small buffers: the read path
    /// zeroes 32 (40) bytes, not 1 KiB.
    pub(super) fn read_member(&self, fd: &OwnedFd, want: usize) -> Result<[u64; 5]> {
        let mut words = [0u64; 5];
        let n = read_words(&self.shared.sys, fd, &mut words[..want])?;
        if n != want {
            return Err(short_read(n, want));
        }
        Ok(words)
    }

    /// [`read_instance`](InstanceSet::read_instance) whether started or not.
    pub(in crate::counter) fn read_instance_fds(
        &self,
        members: &[Member],
        inst: &InstanceFds,
        out: &mut [Reading],
    ) -> Result<()> {
        if self.read == ReadLayout::PerCpuTotals {
            // One event per CPU on the same tasks: each is enabled while the task runs
            // anywhere but counts only while it runs on its CPU, so the counts and running
            // times add up across the CPUs and the enabled time is one CPU's (summing it
            // would read as multiplexing and scale the count up).
            let mut sum = vec![(0u64, 0u64, 0u64); out.len()];
            let want = member_words(members);
            for set in &inst.threads {
                for (fd, acc) in set.iter().zip(sum.iter_mut()) {
                    add_cpu_share(acc, &self.read_member(fd, want)?);
                }
            }
            for (slot, (v, en, run)) in out.iter_mut().zip(sum) {
                slot.accumulate(&Reading::new(v, en, run.min(en)));
            }
            return Ok(());
        }
        if self.read == ReadLayout::PerMember && inst.cpus.iter().any(|&c| c >= 0) {
            return self.read_per_thread_cpu(members, inst, out);
        }
        for set in &inst.threads {
            if self.read == ReadLayout::PerMember {
                let want = member_words(members);
                for (fd, slot) in set.iter().zip(out.iter_mut()) {
                    let words = self.read_member(fd, want)?;
                    slot.accumulate(&Reading::new(words[0], words[1], words[2]));
                }
            } else if let Some(leader) = set.first() {
                let stride = group_stride(members);
                let want = 3 + stride * members.len();
                // Groups of up to 4: 88-byte buffers, not 536-byte ones.
                let mut small = [0u64; 11];
                let mut big;
                let words: &mut [u64] = if want <= small.len() {
                    &mut small[..want]
                } else {
                    big = [0u64; READ_WORDS];
                    big.get_mut(..want).ok_or_else(|| short_read(0, want))?
                };
                let n = read_words(&self.shared.sys, leader, words)?;
                if n != want || words[0] as usize != members.len() {
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
    /// another process: [`FdLayout::PerThreadCpu`](crate::counter::layout::FdLayout)). A thread's
    /// per-CPU events are each enabled while it runs anywhere but run only while it runs on
    /// their CPU, so per thread the counts and running times add up over its CPUs and the
    /// enabled time is one CPU's (summing it would read as multiplexing: `scaled()` came out
    /// 2x the count on 2 CPUs). Threads then add up as usual. A thread's sets are consecutive,
    /// its CPUs ascending (`open_pid`, `attach`), so a CPU not above the previous one starts
    /// the next thread.
    pub(super) fn read_per_thread_cpu(
        &self,
        members: &[Member],
        inst: &InstanceFds,
        out: &mut [Reading],
    ) -> Result<()> {
        let mut thread = vec![(0u64, 0u64, 0u64); out.len()];
        let flush = |thread: &mut [(u64, u64, u64)], out: &mut [Reading]| {
            for (slot, acc) in out.iter_mut().zip(thread.iter_mut()) {
                let (v, en, run) = std::mem::take(acc);
                slot.accumulate(&Reading::new(v, en, run.min(en)));
            }
        };
        let mut prev: Option<i32> = None;
        // Sampling events carry PERF_FORMAT_LOST: a fifth word.
        let want = member_words(members);
        for (set, &cpu) in inst.threads.iter().zip(&inst.cpus) {
            if prev.is_some_and(|p| cpu < 0 || cpu <= p) {
                flush(&mut thread, out);
            }
            prev = Some(cpu);
            for (fd, acc) in set.iter().zip(thread.iter_mut()) {
                add_cpu_share(acc, &self.read_member(fd, want)?);
            }
        }
        flush(&mut thread, out);
        Ok(())
    }
}

/// Adds one CPU's share of a task's per-CPU event to `acc` (value, enabled,
/// running): counts and running times add up over the CPUs, the enabled time is
/// one CPU's (each is enabled while the task runs anywhere).
fn add_cpu_share(acc: &mut (u64, u64, u64), words: &[u64; 5]) {
    acc.0 = acc.0.saturating_add(words[0]);
    acc.1 = acc.1.max(words[1]);
    acc.2 = acc.2.saturating_add(words[2]);
}
