//! Reading counts: `read(2)` of one fd set's words as its `read_format` lays them out, and
//! [`Counters`]' reads, its totals with the kept counts (the sums per instance are
//! [`InstanceSet`](super::instances::InstanceSet)'s).

use crate::counter::layout::ReadLayout;
use crate::counter::{Counters, Member, READ_WORDS};
use crate::sys::{Errno, Sys};
use crate::{errno, errno_map};
use perf_event_open_sys::bindings as b;
use pmc_core::{Error, ErrorKind, GroupInstanceReading, InstanceReading, Op, Reading, Result};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

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
            Err(Errno(errno::ECHILD)) if tries < ECHILD_RETRIES => {
                tries += 1;
                std::thread::yield_now();
            }
            Err(e) => {
                let err = errno_map::op_error(Op::Read, e);
                return Err(if e.0 == errno::ECHILD {
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

/// Whether the members' reads carry `PERF_FORMAT_LOST` (sampling PMCs on Linux 6.0+):
/// a `lost` word after each member's `id` (perf_event_open(2), "Reading results").
pub(super) fn reads_lost(members: &[Member]) -> bool {
    members
        .first()
        .is_some_and(|m| m.attr.read_format & u64::from(b::PERF_FORMAT_LOST) != 0)
}

/// Words in one member's own read: value, time_enabled, time_running, id [, lost].
pub(super) fn member_words(members: &[Member]) -> usize {
    4 + usize::from(reads_lost(members))
}

/// Words per member in a group read: value, id [, lost].
pub(super) fn group_stride(members: &[Member]) -> usize {
    2 + usize::from(reads_lost(members))
}

/// The verbs' reads: a PMC's or group's totals (kept counts plus its instances' sums), and
/// per instance.
impl<S: Sys> Counters<S> {
    /// A single PMC's reading.
    pub(super) fn read_one(&self) -> Result<Reading> {
        // The common case, one fd (a PMC on one thread or one CPU): one
        // read(2) and a few instructions, no loops.
        if let Some([fd]) = self.fds.lone_set() {
            // value, time_enabled, time_running, id [, lost].
            let want = member_words(&self.members);
            let mut b = [0u8; 40];
            let n = (self._shared.sys)
                .read(fd.as_fd(), &mut b[..want * 8])
                .map_err(|e| errno_map::op_error(Op::Read, e))?;
            if n != want * 8 {
                return Err(short_read(n / 8, want));
            }
            let w = |i: usize| {
                let mut a = [0u8; 8];
                a.copy_from_slice(&b[i * 8..i * 8 + 8]);
                u64::from_ne_bytes(a)
            };
            let mut r = self.retired[0];
            r.accumulate(&Reading::new(w(0), w(1), w(2)));
            r.value = r.value.wrapping_add(self.base[0]);
            return Ok(r);
        }
        let mut r = [Reading::default()];
        self.read_into(&mut r)?;
        Ok(r[0])
    }

    pub(super) fn read_into(&self, out: &mut [Reading]) -> Result<()> {
        pmc_core::lifecycle::check_read_slots(self.members.len(), out.len())?;
        // The common group case, one leader fd (one thread or one CPU): one
        // read(2), decoded straight from the buffer in a single pass.
        let group = self.fds.read_layout() == ReadLayout::Group;
        if let Some(leader) = self
            .fds
            .lone_set()
            .filter(|_| group)
            .and_then(|s| s.first())
        {
            let mut b = [0u8; READ_WORDS * 8];
            let stride = group_stride(&self.members);
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
        out.copy_from_slice(&self.retired);
        self.fds.sum_into(&self.members, out)?;
        for (slot, base) in out.iter_mut().zip(&self.base) {
            slot.value = slot.value.wrapping_add(*base);
        }
        Ok(())
    }

    pub(super) fn read_instances(&self) -> Result<Vec<InstanceReading>> {
        let mut v = Vec::with_capacity(self.fds.instances().len());
        let mut one = vec![Reading::default(); self.members.len()];
        for inst in self.fds.instances() {
            one.fill(Reading::default());
            self.fds.read_instance(&self.members, inst, &mut one)?;
            v.push(InstanceReading {
                instance: inst.instance,
                reading: one[0],
            });
        }
        Ok(v)
    }

    /// Every member on each instance (a group's [`read_instances`](pmc_core::Group::read_instances)).
    pub(super) fn read_group_instances(&self) -> Result<Vec<GroupInstanceReading>> {
        let mut v = Vec::with_capacity(self.fds.instances().len());
        for inst in self.fds.instances() {
            let mut readings = vec![Reading::default(); self.members.len()];
            self.fds.read_instance(&self.members, inst, &mut readings)?;
            v.push(GroupInstanceReading {
                instance: inst.instance,
                readings,
            });
        }
        Ok(v)
    }
}
