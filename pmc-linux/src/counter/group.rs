//! [`LinuxGroup`]: pmc-core's `Group` over one [`Counters`] of several members.

use crate::counter::Counters;
use crate::shared::Shared;
use crate::sys::{RealSys, Sys};
use pmc_core::{Allocation, GroupInstanceReading, NativeField, Reading, Result, State, Target};
use std::sync::Arc;

/// Several PMCs scheduled together on Linux (a perf event group).
pub struct LinuxGroup<S: Sys = RealSys> {
    c: Counters<S>,
    allocs: Vec<Allocation>,
}

impl<S: Sys> LinuxGroup<S> {
    pub(crate) fn new(allocs: &[Allocation], shared: Arc<Shared<S>>) -> Result<LinuxGroup<S>> {
        Ok(LinuxGroup {
            c: Counters::new(allocs, shared)?,
            allocs: allocs.to_vec(),
        })
    }
}

impl<S: Sys> std::fmt::Debug for LinuxGroup<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinuxGroup")
            .field("allocations", &self.allocs)
            .field("state", &self.c.life.state())
            .finish()
    }
}

impl<S: Sys> pmc_core::Group for LinuxGroup<S> {
    fn allocations(&self) -> &[Allocation] {
        &self.allocs
    }
    fn state(&self) -> State {
        self.c.life.state()
    }
    fn attach(&mut self, target: Target) -> Result<()> {
        self.c.attach(target)
    }
    fn detach(&mut self, target: Target) -> Result<()> {
        self.c.detach(target)
    }
    fn start(&mut self) -> Result<()> {
        self.c.start()
    }
    fn stop(&mut self) -> Result<()> {
        self.c.stop()
    }
    /// As the inherent `LinuxGroup::log_counts`.
    #[cfg(feature = "sampling")]
    fn log_counts(&self) -> Result<()> {
        self.c.log_counts()
    }
    fn read_instances(&self) -> Result<Vec<GroupInstanceReading>> {
        self.c.read_group_instances()
    }
    fn read_into(&self, out: &mut [Reading]) -> Result<()> {
        self.c.read_into(out)
    }
    /// Each member's `perf_event_attr` as opened (after any fallback), like `perf stat -vv`.
    fn native_configs(&self) -> Vec<Vec<NativeField>> {
        self.c
            .members
            .iter()
            .map(|m| m.native_fields(&m.opened))
            .collect()
    }
}

impl<S: Sys> LinuxGroup<S> {
    /// Writes each member's current total into the backend's log as an interval
    /// [`Counter`](pmc_log::record::Counter) record.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidState`](pmc_core::ErrorKind::InvalidState) when no log is configured; read errors as
    /// [`read_into`](pmc_core::Group::read_into).
    #[cfg(feature = "sampling")]
    pub fn log_counts(&self) -> Result<()> {
        self.c.log_counts()
    }
}
