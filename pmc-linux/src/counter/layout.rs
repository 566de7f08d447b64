//! Which fds a target gets: its threads, and the CPUs of each.

use super::*;

pub(super) fn pid_i32(pid: u32) -> Result<i32> {
    i32::try_from(pid).ok().filter(|p| *p > 0).ok_or_else(|| {
        Error::new(
            ErrorKind::NoSuchProcess,
            Op::Attach,
            format!("{pid} is not a valid pid"),
        )
        .with_errno(libc::EINVAL)
    })
}

/// The thread ids of process `pid` (the calling process for `None`), main thread first, the
/// others in ascending order.
pub(super) fn thread_ids(sys: &dyn Sys, pid: Option<u32>) -> Result<Vec<i32>> {
    let pid = pid.unwrap_or_else(|| sys.getpid());
    let mut tids = sys.thread_ids(pid).ok_or_else(|| {
        Error::new(
            ErrorKind::NoSuchProcess,
            Op::Attach,
            format!("no process with pid {pid}"),
        )
        .with_errno(libc::ESRCH)
    })?;
    tids.sort_unstable();
    let main = i32::try_from(pid).unwrap_or(0);
    if let Some(i) = tids.iter().position(|t| *t == main) {
        tids.swap(0, i);
    }
    Ok(tids)
}

impl Counters {
    /// The CPUs a per-task fd set is opened on: every online CPU when the rings must be per
    /// CPU (sampling an inherited event), else `-1` (any).
    pub(super) fn task_cpus(&self, follow_threads: bool) -> Vec<i32> {
        if self.per_cpu_task || (follow_threads && self.is_sampling()) {
            self._shared
                .sys
                .online_cpus()
                .into_iter()
                .filter_map(|c| i32::try_from(c).ok())
                .collect()
        } else {
            vec![-1]
        }
    }
}
