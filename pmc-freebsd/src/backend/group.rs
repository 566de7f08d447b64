//! PMCs started and stopped together: hwpmc has no hardware groups, so a
//! group is its members, fanned out through `pmc_core::lifecycle`.

use super::FreebsdPmc;
use crate::sys::{RealSys, Sys};
use pmc_core::lifecycle::{fan_out, fan_out_or_undo, Lifecycle};
use pmc_core::{
    Allocation, Error, ErrorKind, GroupInstanceReading, Op, Reading, Result, State, Target,
};

/// PMCs started and stopped together. hwpmc has no hardware groups, so the
/// members are programmed one after another; their reads are not taken at
/// the same instant.
pub struct FreebsdGroup<S: Sys = RealSys> {
    pub(super) allocations: Vec<Allocation>,
    pub(super) members: Vec<FreebsdPmc<S>>,
    /// The group's state and targets (each member keeps its own too).
    pub(super) life: Lifecycle,
}

impl<S: Sys> std::fmt::Debug for FreebsdGroup<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FreebsdGroup")
            .field("members", &self.members)
            .finish()
    }
}

impl<S: Sys + 'static> pmc_core::Group for FreebsdGroup<S> {
    fn allocations(&self) -> &[Allocation] {
        &self.allocations
    }
    fn state(&self) -> State {
        self.life.state()
    }
    /// Attaches every member; if one fails, the members already attached
    /// are detached again, so the group stays as it was.
    fn attach(&mut self, target: Target) -> Result<()> {
        fan_out_or_undo(
            &mut self.members,
            |m| pmc_core::Pmc::attach(m, target),
            |m| {
                let _ = pmc_core::Pmc::detach(m, target);
            },
        )?;
        self.life.record_attach(target);
        Ok(())
    }
    /// Detaches every member, stopping at the first error.
    fn detach(&mut self, target: Target) -> Result<()> {
        fan_out(&mut self.members, |m| pmc_core::Pmc::detach(m, target))?;
        self.life.record_detach(target);
        Ok(())
    }
    /// Starts every member; if one fails, the members already started are
    /// stopped again, so the group runs whole or not at all.
    fn start(&mut self) -> Result<()> {
        fan_out_or_undo(&mut self.members, pmc_core::Pmc::start, |m| {
            let _ = pmc_core::Pmc::stop(m);
        })?;
        self.life.record_start();
        Ok(())
    }
    /// Stops every member, stopping at the first error.
    fn stop(&mut self) -> Result<()> {
        fan_out(&mut self.members, pmc_core::Pmc::stop)?;
        self.life.record_stop();
        Ok(())
    }
    /// Each member's [`read_instances`](pmc_core::Pmc::read_instances), joined by
    /// instance (hwpmc has no group read: the members are read one after the other).
    fn read_instances(&self) -> Result<Vec<GroupInstanceReading>> {
        let mut out: Vec<GroupInstanceReading> = Vec::new();
        for (n, m) in self.members.iter().enumerate() {
            let mine = pmc_core::Pmc::read_instances(m)?;
            if n == 0 {
                out = mine
                    .into_iter()
                    .map(|i| GroupInstanceReading {
                        instance: i.instance,
                        readings: vec![i.reading],
                    })
                    .collect();
                continue;
            }
            if mine.len() != out.len()
                || mine.iter().zip(&out).any(|(a, b)| a.instance != b.instance)
            {
                return Err(Error::new(
                    ErrorKind::InvalidState,
                    Op::Read,
                    format!(
                        "group member {n} counts on other instances than the leader \
                         ({} against {})",
                        mine.len(),
                        out.len()
                    ),
                )
                .with_help(
                    "attach and detach the group as a whole (Group::attach, Group::detach)",
                ));
            }
            for (slot, i) in out.iter_mut().zip(mine) {
                slot.readings.push(i.reading);
            }
        }
        Ok(out)
    }
    fn read_into(&self, out: &mut [Reading]) -> Result<()> {
        pmc_core::lifecycle::check_read_slots(self.members.len(), out.len())?;
        for (slot, m) in out.iter_mut().zip(&self.members) {
            *slot = pmc_core::Pmc::read(m)?;
        }
        Ok(())
    }
}
