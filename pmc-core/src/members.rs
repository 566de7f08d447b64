//! Typed handles to the members of a group, so that readings are looked up
//! by the member they belong to rather than by position.
//!
//! ```
//! use pmc::{Allocation, GroupReading, GroupSpec, Reading};
//!
//! let mut spec = GroupSpec::new();
//! let clock = spec.add(Allocation::counting("task-clock".parse()?));
//! let faults = spec.add(Allocation::counting("page-faults".parse()?));
//! assert_eq!(spec.allocations().len(), 2);
//!
//! // What `Group::read_members` returns, built by hand here.
//! let r = GroupReading::new(vec![
//!     Reading::new(2_000_000, 10, 10),
//!     Reading::new(500, 10, 10),
//! ]);
//! assert_eq!(r[faults].value, 500);
//! // Page faults per millisecond of CPU time.
//! assert_eq!(r.ratio(faults, clock).map(|x| x * 1e6), Some(250.0));
//! # Ok::<(), pmc::ParseError>(())
//! ```

use crate::{Allocation, Reading};
use std::ops::Index;

/// One member of a group: returned by [`GroupSpec::add`], used to index a
/// [`GroupReading`]. A handle belongs to the spec that made it; with
/// another group's reading, [`GroupReading::get`] gives `None` when it is
/// out of range (indexing panics, as a slice does).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Member(usize);

impl Member {
    /// The member's position in the group: 0 is the leader.
    pub const fn index(self) -> usize {
        self.0
    }
}

/// The allocations of a group, added one member at a time, the leader
/// first. Pass [`allocations`](GroupSpec::allocations) to
/// [`Backend::allocate_group`](crate::Backend::allocate_group).
#[derive(Clone, Debug, Default)]
pub struct GroupSpec {
    allocations: Vec<Allocation>,
}

impl GroupSpec {
    /// An empty group.
    pub fn new() -> GroupSpec {
        GroupSpec::default()
    }

    /// Adds a member; the first one added leads the group.
    pub fn add(&mut self, allocation: Allocation) -> Member {
        self.allocations.push(allocation);
        Member(self.allocations.len() - 1)
    }

    /// The members' allocations, leader first.
    pub fn allocations(&self) -> &[Allocation] {
        &self.allocations
    }

    /// The allocation of one member.
    pub fn get(&self, member: Member) -> Option<&Allocation> {
        self.allocations.get(member.0)
    }
}

/// One [`Reading`] per member of a group, taken together, indexed by
/// [`Member`] (from [`Group::read_members`](crate::Group::read_members)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupReading {
    readings: Vec<Reading>,
}

impl GroupReading {
    /// Readings in member order, leader first.
    pub fn new(readings: Vec<Reading>) -> GroupReading {
        GroupReading { readings }
    }

    /// The reading of one member, `None` if the handle is out of range.
    pub fn get(&self, member: Member) -> Option<&Reading> {
        self.readings.get(member.0)
    }

    /// `a / b` over the members' scaled values (see
    /// [`Reading::scaled`]): `None` when either was not counted or `b` is 0.
    /// Members of one group run together, so the ratio needs no further
    /// scaling.
    pub fn ratio(&self, a: Member, b: Member) -> Option<f64> {
        let a = self.get(a)?.scaled()?;
        let b = self.get(b)?.scaled()?;
        (b != 0).then(|| a as f64 / b as f64)
    }

    /// The readings in member order.
    pub fn as_slice(&self) -> &[Reading] {
        &self.readings
    }

    /// Each member with its reading, in member order.
    pub fn iter(&self) -> impl Iterator<Item = (Member, &Reading)> {
        self.readings
            .iter()
            .enumerate()
            .map(|(i, r)| (Member(i), r))
    }

    /// The readings in member order.
    pub fn into_vec(self) -> Vec<Reading> {
        self.readings
    }
}

impl Index<Member> for GroupReading {
    type Output = Reading;
    fn index(&self, member: Member) -> &Reading {
        &self.readings[member.0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_index_their_own_readings() {
        let mut spec = GroupSpec::new();
        let a = spec.add(Allocation::counting("task-clock".parse().unwrap()));
        let b = spec.add(Allocation::counting("page-faults".parse().unwrap()));
        assert_eq!((a.index(), b.index()), (0, 1));
        assert_eq!(spec.get(b).unwrap().event.to_string(), "page-faults");
        let r = GroupReading::new(vec![Reading::new(10, 4, 2), Reading::new(3, 4, 4)]);
        // Scaled: a ran half the time.
        assert_eq!(r.ratio(a, b), Some(20.0 / 3.0));
        assert_eq!(r.ratio(b, a), Some(3.0 / 20.0));
        assert_eq!(r.iter().map(|(m, _)| m).collect::<Vec<_>>(), vec![a, b]);
    }

    #[test]
    fn a_foreign_handle_or_an_uncounted_member_gives_none() {
        let mut big = GroupSpec::new();
        for _ in 0..3 {
            big.add(Allocation::counting("task-clock".parse().unwrap()));
        }
        let third = Member(2);
        let r = GroupReading::new(vec![Reading::new(1, 1, 1), Reading::not_supported()]);
        assert!(r.get(third).is_none());
        assert_eq!(r.ratio(Member(0), third), None);
        assert_eq!(r.ratio(Member(0), Member(1)), None);
        let zero = GroupReading::new(vec![Reading::new(1, 1, 1), Reading::new(0, 1, 1)]);
        assert_eq!(zero.ratio(Member(0), Member(1)), None);
    }
}
