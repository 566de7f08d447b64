//! Which fds a target gets: its threads, and the CPUs of each.

use crate::counter::Member;
use crate::errno;
use crate::sys::{Errno, Sys};
use pmc_core::{Error, ErrorKind, Op, Result, Target};

pub(super) fn pid_i32(pid: u32) -> Result<i32> {
    i32::try_from(pid).ok().filter(|p| *p > 0).ok_or_else(|| {
        Error::new(
            ErrorKind::NoSuchProcess,
            Op::Attach,
            format!("{pid} is not a valid pid"),
        )
        .with_errno(errno::EINVAL)
    })
}

/// The thread ids of process `pid` (the calling process for `None`), main thread first, the
/// others in ascending order.
pub(super) fn thread_ids(sys: &dyn Sys, pid: Option<u32>) -> Result<Vec<i32>> {
    let pid = pid.unwrap_or_else(|| sys.getpid());
    let mut tids = sys.thread_ids(pid).map_err(|Errno(e)| match e {
        errno::ESRCH => Error::new(
            ErrorKind::NoSuchProcess,
            Op::Attach,
            format!("no process with pid {pid}"),
        )
        .with_errno(errno::ESRCH),
        // Listing the threads takes a descriptor: with none left, that is the error.
        errno::EMFILE | errno::ENFILE => {
            crate::errno_map::too_many_files(&sys.facts(), Op::Attach).with_errno(e)
        }
        _ => Error::new(
            ErrorKind::Os,
            Op::Attach,
            format!(
                "cannot list the threads of pid {pid} (/proc/{pid}/task): {}",
                std::io::Error::from_raw_os_error(e)
            ),
        )
        .with_errno(e),
    })?;
    tids.sort_unstable();
    let main = i32::try_from(pid).unwrap_or(0);
    if let Some(i) = tids.iter().position(|t| *t == main) {
        tids.swap(0, i);
    }
    Ok(tids)
}

/// How the fds of one instance (a CPU or a target) are laid out: which `(pid, cpu)` each fd
/// set is opened on, and whether the kernel copies them into new threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FdLayout {
    /// One fd set per CPU counting every task there (system scope).
    PerCpu,
    /// One fd set on the calling thread, on any CPU, not inherited ([`Target::CurrentThread`],
    /// so its fds can be mapped, e.g. for rdpmc).
    PerThread,
    /// One fd set per thread, on any CPU, inherited by the threads it creates later
    /// (`inherit` + `inherit_thread`): a process counted whole.
    Inherited,
    /// One fd set per (thread, CPU): the kernel will not map the ring of an inherited per-task
    /// event, so sampling inherited events (and log-procexit's per-CPU reads) get one ring per
    /// CPU, as `perf record` does. `follow_threads` as [`FdLayout::Inherited`].
    PerThreadCpu {
        /// Inherited by the target's new threads.
        follow_threads: bool,
    },
}

impl FdLayout {
    /// Whether the fds are inherited by the threads the target creates later.
    pub(super) fn follow_threads(self) -> bool {
        matches!(
            self,
            FdLayout::Inherited
                | FdLayout::PerThreadCpu {
                    follow_threads: true
                }
        )
    }

    /// The CPUs each thread's fd sets are opened on: every online CPU, or `-1` (any).
    pub(super) fn task_cpus(self, sys: &dyn Sys) -> Vec<i32> {
        match self {
            FdLayout::PerThreadCpu { .. } => sys
                .online_cpus()
                .into_iter()
                .filter_map(|c| i32::try_from(c).ok())
                .collect(),
            FdLayout::PerCpu | FdLayout::PerThread | FdLayout::Inherited => vec![-1],
        }
    }
}

/// How the counts of one fd set are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ReadLayout {
    /// One `read(2)` of the leader with `PERF_FORMAT_GROUP`: every member at once.
    Group,
    /// One `read(2)` per member: single PMCs, and inherited groups (older kernels refuse
    /// `inherit` with `PERF_FORMAT_GROUP`).
    PerMember,
    /// log-procexit's per-CPU events on the same tasks: counts and running times add up over
    /// the CPUs, the enabled time is one CPU's.
    PerCpuTotals,
}

impl FdLayout {
    /// The fd layout of `target` for a PMC of `members` (`exit_reads`: a counting PMC with
    /// log-procexit).
    pub(super) fn of(members: &[Member], exit_reads: bool, target: &Target) -> FdLayout {
        if members[0].alloc.scope.is_system() {
            return FdLayout::PerCpu;
        }
        // A process (the calling one, a pid or a launched command) is counted whole: its
        // threads created later inherit the events (without descendants, its child processes
        // do not). Only the calling thread alone is not followed into new threads.
        let follow_threads = *target != Target::CurrentThread;
        let sampling = members[0].alloc.mode.is_sampling();
        // Whether the PMC counts descendants (`inherit`).
        let inherits = members
            .iter()
            .any(|m| m.alloc.flags.contains(pmc_core::Flags::DESCENDANTS));
        let inherited_rings = sampling && inherits;
        if inherited_rings || exit_reads || (follow_threads && sampling) {
            FdLayout::PerThreadCpu { follow_threads }
        } else if follow_threads {
            FdLayout::Inherited
        } else {
            FdLayout::PerThread
        }
    }
}
