//! Injected errors: the [`Call`]s the model can fail and the [`Fault`] that says when.

use crate::sys::Errno;

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
    pub(super) call: Call,
    pub(super) errno: Errno,
    pub(super) pid: Option<i32>,
    pub(super) cpu: Option<i32>,
    pub(super) members_only: bool,
    pub(super) skip: u32,
    pub(super) times: u32,
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
