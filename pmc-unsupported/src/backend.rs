//! [`Backend`]: pmc-core's `Backend` over the [`Sys`] seam. On this OS
//! every call fails (the facility does not open), so no PMC or group is
//! ever allocated: [`UnsupportedPmc`] and [`UnsupportedGroup`] have no
//! values, and their verbs cannot be called.

use crate::errno::Errno;
use crate::sys::{RealSys, Sys};
use crate::{errno_map, events, info, log};
use pmc_core::info::{Check, EventInfo};
use pmc_core::{
    Allocation, Group, InstanceReading, LogSink, NativeField, Op, Pmc, Reading, Result, State,
    Target,
};

/// The backend of an OS where pmc has none: `pmc::Native` and
/// `pmc::Unsupported` there.
///
/// [`Backend::open`] fails with
/// [`ErrorKind::Unsupported`](pmc_core::ErrorKind::Unsupported), saying to
/// run on Linux or FreeBSD; a backend made with [`Backend::with_sys`]
/// answers every call with the same error.
///
/// ```
/// use pmc_core::{Allocation, Backend, ErrorKind};
///
/// match pmc_unsupported::Backend::open() {
///     Ok(backend) => {
///         let spec = "page-faults".parse()?;
///         let e = backend.allocate(&Allocation::counting(spec)).unwrap_err();
///         assert_eq!(e.kind(), ErrorKind::Unsupported);
///     }
///     Err(e) => {
///         assert_eq!(e.kind(), ErrorKind::Unsupported);
///         assert!(e.help().is_some());
///     }
/// }
/// # Ok::<(), pmc_core::Error>(())
/// ```
#[derive(Debug)]
pub struct Backend<S: Sys = RealSys> {
    sys: S,
}

impl Backend<RealSys> {
    /// The backend on this OS: fails, since it has none.
    ///
    /// # Errors
    ///
    /// Always [`ErrorKind::Unsupported`](pmc_core::ErrorKind::Unsupported),
    /// with help saying to run on Linux or FreeBSD.
    pub fn new() -> Result<Backend> {
        let backend = Backend::with_sys(RealSys);
        backend.counters(Op::Open)?;
        Ok(backend)
    }

    /// [`Backend::new`], under the name every backend has for the facade's
    /// `pmc::Native::open()`.
    ///
    /// # Errors
    ///
    /// As [`Backend::new`].
    pub fn open() -> Result<Backend> {
        Backend::new()
    }
}

impl<S: Sys> Backend<S> {
    /// A backend over `sys` (a fake OS in tests). Nothing is opened until a
    /// call needs it.
    ///
    /// ```
    /// use pmc_core::Backend as _;
    /// let backend = pmc_unsupported::Backend::with_sys(pmc_unsupported::RealSys);
    /// assert!(backend.list_events(false).is_empty());
    /// ```
    pub fn with_sys(sys: S) -> Backend<S> {
        Backend { sys }
    }

    /// Opens the counter facility for `op`: the OS's error, mapped.
    fn counters(&self, op: Op) -> Result<()> {
        self.sys
            .open_counters()
            .map_err(|e| errno_map::error(e, op))
    }

    /// Every verb: the facility's error, or, should it open (a fake), the
    /// `ENOSYS` answer: this backend counts nothing.
    fn refuse<T>(&self, op: Op) -> Result<T> {
        self.counters(op)?;
        Err(errno_map::error(Errno::ENOSYS, op))
    }
}

impl<S: Sys> pmc_core::Backend for Backend<S> {
    type Pmc = UnsupportedPmc;
    type Group = UnsupportedGroup;

    fn name(&self) -> &'static str {
        "unsupported"
    }
    fn allocate(&self, _: &Allocation) -> Result<UnsupportedPmc> {
        self.refuse(Op::Allocate)
    }
    fn allocate_group<A: AsRef<[Allocation]> + ?Sized>(&self, _: &A) -> Result<UnsupportedGroup> {
        self.refuse(Op::Allocate)
    }
    fn configure_log(&self, sink: LogSink) -> Result<()> {
        log::refuse(&self.sys, Some(sink))
    }
    fn flush_log(&self) -> Result<()> {
        log::refuse(&self.sys, None)
    }
    fn close_log(&self) -> Result<()> {
        log::refuse(&self.sys, None)
    }
    fn write_log(&self, _: u32) -> Result<()> {
        log::refuse(&self.sys, None)
    }
    fn list_events(&self, tracepoints: bool) -> Vec<EventInfo> {
        events::list(tracepoints)
    }
    fn diagnose(&self) -> Vec<Check> {
        info::diagnose()
    }
}

/// The PMC type of [`Backend`]: it has no values (no PMC is ever
/// allocated here), so its verbs cannot be called.
#[derive(Debug)]
pub enum UnsupportedPmc {}

/// The group type of [`Backend`]: it has no values (no group is ever
/// allocated here), so its verbs cannot be called.
#[derive(Debug)]
pub enum UnsupportedGroup {}

impl Pmc for UnsupportedPmc {
    fn allocation(&self) -> &Allocation {
        match *self {}
    }
    fn state(&self) -> State {
        match *self {}
    }
    fn attach(&mut self, _: Target) -> Result<()> {
        match *self {}
    }
    fn detach(&mut self, _: Target) -> Result<()> {
        match *self {}
    }
    fn targets(&self) -> Vec<Target> {
        match *self {}
    }
    fn start(&mut self) -> Result<()> {
        match *self {}
    }
    fn stop(&mut self) -> Result<()> {
        match *self {}
    }
    fn read(&self) -> Result<Reading> {
        match *self {}
    }
    fn read_instances(&self) -> Result<Vec<InstanceReading>> {
        match *self {}
    }
    fn write(&mut self, _: u64) -> Result<u64> {
        match *self {}
    }
    fn set_count(&mut self, _: u64) -> Result<()> {
        match *self {}
    }
    fn native_config(&self) -> Vec<NativeField> {
        match *self {}
    }
    fn release(self) -> Result<()> {
        match self {}
    }
}

impl Group for UnsupportedGroup {
    fn allocations(&self) -> &[Allocation] {
        match *self {}
    }
    fn state(&self) -> State {
        match *self {}
    }
    fn attach(&mut self, _: Target) -> Result<()> {
        match *self {}
    }
    fn detach(&mut self, _: Target) -> Result<()> {
        match *self {}
    }
    fn start(&mut self) -> Result<()> {
        match *self {}
    }
    fn stop(&mut self) -> Result<()> {
        match *self {}
    }
    fn read_into(&self, _: &mut [Reading]) -> Result<()> {
        match *self {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::fake::FakeSys;
    use pmc_core::{Backend as _, ErrorKind};

    #[test]
    fn open_fails_as_the_facade_always_did() {
        let e = Backend::open().unwrap_err();
        assert_eq!(
            (e.kind(), e.op(), e.errno()),
            (ErrorKind::Unsupported, Op::Open, None)
        );
        assert_eq!(e.message(), "pmc supports Linux and FreeBSD only");
        assert_eq!(
            e.help(),
            Some("run on Linux (perf_event) or FreeBSD (hwpmc)")
        );
    }

    #[test]
    fn every_call_fails_with_the_facilitys_error_or_unsupported() {
        let spec = "page-faults".parse().unwrap();
        let a = Allocation::counting(spec);
        // The facility fails: its errno, mapped, for every call.
        let b = Backend::with_sys(FakeSys {
            open_error: Some(Errno(libc::EACCES)),
        });
        for (e, op) in [
            (b.allocate(&a).unwrap_err(), Op::Allocate),
            (
                b.allocate_group(std::slice::from_ref(&a)).unwrap_err(),
                Op::Allocate,
            ),
            (
                b.configure_log(Box::new(std::io::sink())).unwrap_err(),
                Op::Log,
            ),
            (b.flush_log().unwrap_err(), Op::Log),
            (b.close_log().unwrap_err(), Op::Log),
            (b.write_log(7).unwrap_err(), Op::Log),
        ] {
            assert_eq!(
                (e.kind(), e.op(), e.errno()),
                (ErrorKind::Os, op, Some(libc::EACCES))
            );
        }
        // The facility opens (only a fake's does): still nothing to count.
        let b = Backend::with_sys(FakeSys { open_error: None });
        let e = b.allocate(&a).unwrap_err();
        assert_eq!((e.kind(), e.op()), (ErrorKind::Unsupported, Op::Allocate));
        let e = b.close_log().unwrap_err();
        assert_eq!((e.kind(), e.op()), (ErrorKind::Unsupported, Op::Log));
        assert!(b.list_events(true).is_empty());
        assert_eq!(b.diagnose().len(), 1);
        assert_eq!(b.name(), "unsupported");
    }

    #[test]
    fn a_cgroup_allocation_is_refused_as_any_allocation() {
        let a = Allocation::counting("page-faults".parse().unwrap())
            .system(pmc_core::Cpus::All)
            .cgroup("pmctest");
        let b = Backend::with_sys(FakeSys { open_error: None });
        let e = b.allocate(&a).unwrap_err();
        assert_eq!((e.kind(), e.op()), (ErrorKind::Unsupported, Op::Allocate));
        let e = b.allocate_group(std::slice::from_ref(&a)).unwrap_err();
        assert_eq!((e.kind(), e.op()), (ErrorKind::Unsupported, Op::Allocate));
    }
}
