//! This OS has no backend: [`Unsupported`] stands in for one so that code
//! written against `pmc::Native` still compiles, and fails at run time with
//! [`ErrorKind::Unsupported`] instead of at build time.

use pmc_core::info::{Check, EventInfo};
use pmc_core::{
    Allocation, Backend, Error, ErrorKind, Group, InstanceReading, LogSink, NativeField, Op, Pmc,
    Reading, Result, State, Target,
};

/// The "backend" of an OS with no performance-counter support in pmc:
/// [`Unsupported::open`] fails with [`ErrorKind::Unsupported`], so no value
/// of this type ever exists and none of its trait methods can be called.
#[derive(Debug)]
pub enum Unsupported {}

impl Unsupported {
    /// Always fails: this OS has no backend.
    pub fn open() -> Result<Unsupported> {
        Err(Error::new(
            ErrorKind::Unsupported,
            Op::Open,
            "pmc supports Linux and FreeBSD only",
        )
        .with_help("run on Linux (perf_event) or FreeBSD (hwpmc)"))
    }
}

impl Backend for Unsupported {
    type Pmc = Unsupported;
    type Group = Unsupported;
    fn name(&self) -> &'static str {
        match *self {}
    }
    fn allocate(&self, _: &Allocation) -> Result<Unsupported> {
        match *self {}
    }
    fn allocate_group(&self, _: &[Allocation]) -> Result<Unsupported> {
        match *self {}
    }
    fn configure_log(&self, _: LogSink) -> Result<()> {
        match *self {}
    }
    fn flush_log(&self) -> Result<()> {
        match *self {}
    }
    fn close_log(&self) -> Result<()> {
        match *self {}
    }
    fn write_log(&self, _: u32) -> Result<()> {
        match *self {}
    }
    fn list_events(&self, _: bool) -> Vec<EventInfo> {
        match *self {}
    }
    fn diagnose(&self) -> Vec<Check> {
        match *self {}
    }
}

impl Pmc for Unsupported {
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

impl Group for Unsupported {
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
