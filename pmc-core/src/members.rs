//! Typed handles to the members of a group, so that readings are looked up
//! by the member they belong to rather than by position.
//!
//! [`GroupSpec::add`] hands out a [`Member`] per allocation; a [`GroupReading`] is indexed by
//! those handles.
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
//! let r = GroupReading::for_members(
//!     spec.allocations(),
//!     vec![Reading::new(2_000_000, 10, 10), Reading::new(500, 10, 10)],
//! );
//! assert_eq!(r[faults].value, 500);
//! // Page faults per millisecond of CPU time.
//! assert_eq!(r.ratio(faults, clock).map(|x| x * 1e6), Some(250.0));
//! # Ok::<(), pmc::ParseError>(())
//! ```

use crate::error::{Error, ErrorKind, Op, Result};
use crate::{Allocation, Reading};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::ops::Index;

/// One member of a group: returned by [`GroupSpec::add`], used to index a
/// [`GroupReading`].
///
/// A handle is bound to its group: its position, and the allocations of
/// its group up to and including its own (the leader first). With the
/// reading of a group that differs there (another group's handle),
/// [`GroupReading::get`] gives `None`, [`GroupReading::member`] a typed
/// error, and indexing panics (as a slice's out-of-range index does). Only
/// a group allocated alike up to that member, which counts the same thing
/// there, takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Member {
    index: usize,
    /// The group's allocations up to this member's, hashed in order: what
    /// binds the handle to its group.
    key: u64,
}

impl Member {
    /// The member's position in the group: 0 is the leader.
    pub const fn index(self) -> usize {
        self.index
    }
}

/// The key of the member after the one keyed `previous` (0 for the leader):
/// the group's allocations up to `allocation`, hashed in order (the same in
/// every `DefaultHasher::new()` of the process).
fn key(previous: u64, allocation: &Allocation) -> u64 {
    let mut h = DefaultHasher::new();
    previous.hash(&mut h);
    allocation.hash(&mut h);
    h.finish()
}

/// The keys of a group's members, leader first.
fn keys(allocations: &[Allocation]) -> Vec<u64> {
    allocations
        .iter()
        .scan(0, |k, a| {
            *k = key(*k, a);
            Some(*k)
        })
        .collect()
}

/// The allocations of a group, added one member at a time, the leader
/// first. Pass it to
/// [`Backend::allocate_group`](crate::Backend::allocate_group)
/// (`backend.allocate_group(&spec)`).
#[derive(Clone, Debug, Default)]
pub struct GroupSpec {
    allocations: Vec<Allocation>,
    /// The members' keys, leader first.
    keys: Vec<u64>,
}

/// The members' allocations, leader first, as
/// [`Backend::allocate_group`](crate::Backend::allocate_group) takes them.
impl AsRef<[Allocation]> for GroupSpec {
    fn as_ref(&self) -> &[Allocation] {
        &self.allocations
    }
}

impl GroupSpec {
    /// An empty group.
    pub fn new() -> GroupSpec {
        GroupSpec::default()
    }

    /// Adds a member; the first one added leads the group.
    pub fn add(&mut self, allocation: Allocation) -> Member {
        let member = Member {
            index: self.allocations.len(),
            key: key(self.keys.last().copied().unwrap_or(0), &allocation),
        };
        self.keys.push(member.key);
        self.allocations.push(allocation);
        member
    }

    /// The members' allocations, leader first.
    pub fn allocations(&self) -> &[Allocation] {
        &self.allocations
    }

    /// The allocation of one member, `None` for another group's handle.
    pub fn get(&self, member: Member) -> Option<&Allocation> {
        (self.keys.get(member.index) == Some(&member.key))
            .then(|| self.allocations.get(member.index))
            .flatten()
    }
}

/// One [`Reading`] per member of a group, taken together, indexed by
/// [`Member`] (from [`Group::read_members`](crate::Group::read_members)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupReading {
    readings: Vec<Reading>,
    /// The members' keys, in member order; empty for a reading built
    /// without its allocations ([`GroupReading::new`]), which any handle in
    /// range indexes.
    keys: Vec<u64>,
}

impl GroupReading {
    /// Readings in member order, leader first, without the members'
    /// allocations: any handle in range indexes it (prefer
    /// [`GroupReading::for_members`]).
    pub fn new(readings: Vec<Reading>) -> GroupReading {
        GroupReading {
            readings,
            keys: Vec::new(),
        }
    }

    /// Readings in member order of a group allocated from `allocations`
    /// (what [`Group::read_members`](crate::Group::read_members) returns):
    /// only the handles of those members index it.
    pub fn for_members(allocations: &[Allocation], readings: Vec<Reading>) -> GroupReading {
        GroupReading {
            readings,
            keys: keys(allocations),
        }
    }

    /// Whether `member` is one of this reading's members.
    fn holds(&self, member: Member) -> bool {
        member.index < self.readings.len()
            && (self.keys.is_empty() || self.keys.get(member.index) == Some(&member.key))
    }

    /// The reading of one member, `None` if the handle is another group's
    /// or out of range.
    pub fn get(&self, member: Member) -> Option<&Reading> {
        self.holds(member).then(|| &self.readings[member.index])
    }

    /// The reading of one member.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidArgument`] for a handle of another group (another
    /// allocation at its position, or a position this group does not have).
    ///
    /// ```
    /// use pmc::{Allocation, ErrorKind, GroupReading, GroupSpec, Reading};
    ///
    /// let mut faults = GroupSpec::new();
    /// let f = faults.add(Allocation::counting("page-faults".parse()?));
    /// let mut clock = GroupSpec::new();
    /// clock.add(Allocation::counting("task-clock".parse()?));
    /// let r = GroupReading::for_members(clock.allocations(), vec![Reading::new(5, 1, 1)]);
    /// assert_eq!(r.member(f).unwrap_err().kind(), ErrorKind::InvalidArgument);
    /// # Ok::<(), pmc::ParseError>(())
    /// ```
    pub fn member(&self, member: Member) -> Result<&Reading> {
        self.get(member).ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidArgument,
                Op::Read,
                format!(
                    "member {} is not in this group reading of {} members \
                     (a handle from another group's GroupSpec)",
                    member.index,
                    self.readings.len()
                ),
            )
            .with_help("index a group's reading with the Members its own GroupSpec::add returned")
        })
    }

    /// `a / b` over the members' scaled values (see
    /// [`Reading::scaled`]): `None` when either was not counted, is another
    /// group's handle, or `b` is 0. Members of one group run together, so
    /// the ratio needs no further scaling.
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
        self.readings.iter().enumerate().map(|(index, r)| {
            let key = self.keys.get(index).copied().unwrap_or(0);
            (Member { index, key }, r)
        })
    }

    /// The readings in member order.
    pub fn into_vec(self) -> Vec<Reading> {
        self.readings
    }
}

impl Index<Member> for GroupReading {
    type Output = Reading;
    /// # Panics
    ///
    /// For another group's handle ([`GroupReading::get`] does not).
    fn index(&self, member: Member) -> &Reading {
        match self.get(member) {
            Some(r) => r,
            None => panic!(
                "member {} is not in this group reading of {} members (a handle from another group)",
                member.index,
                self.readings.len()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counting(event: &str) -> Allocation {
        Allocation::counting(event.parse().unwrap())
    }

    #[test]
    fn members_index_their_own_readings() {
        let mut spec = GroupSpec::new();
        let a = spec.add(counting("task-clock"));
        let b = spec.add(counting("page-faults"));
        assert_eq!((a.index(), b.index()), (0, 1));
        assert_eq!(spec.get(b).unwrap().event.to_string(), "page-faults");
        let readings = vec![Reading::new(10, 4, 2), Reading::new(3, 4, 4)];
        let r = GroupReading::for_members(spec.allocations(), readings.clone());
        // Scaled: a ran half the time.
        assert_eq!(r.ratio(a, b), Some(20.0 / 3.0));
        assert_eq!(r.ratio(b, a), Some(3.0 / 20.0));
        assert_eq!(r.member(b).unwrap().value, 3);
        assert_eq!(r.iter().map(|(m, _)| m).collect::<Vec<_>>(), vec![a, b]);
        // Built without the allocations: any handle in range indexes it.
        let bare = GroupReading::new(readings);
        assert_eq!((bare[a].value, bare[b].value), (10, 3));
    }

    #[test]
    fn another_groups_handle_is_refused() {
        let mut mine = GroupSpec::new();
        mine.add(counting("task-clock"));
        let faults = mine.add(counting("page-faults"));
        let mut other = GroupSpec::new();
        let clock = other.add(counting("task-clock"));
        let switches = other.add(counting("context-switches"));
        let r = GroupReading::for_members(
            mine.allocations(),
            vec![Reading::new(10, 1, 1), Reading::new(3, 1, 1)],
        );
        // Another allocation at the position: refused, though in range.
        assert!(r.get(switches).is_none());
        let e = r.member(switches).unwrap_err();
        assert_eq!((e.kind(), e.op()), (ErrorKind::InvalidArgument, Op::Read));
        assert!(
            e.help().is_some_and(|h| h.contains("GroupSpec::add")),
            "{e}"
        );
        assert_eq!(r.ratio(faults, switches), None);
        assert!(mine.get(switches).is_none());
        // The same allocation at the same position is the same member.
        assert_eq!(r.member(clock).unwrap().value, 10);
        assert_eq!(other.get(clock), mine.allocations().first());
    }

    #[test]
    fn a_handle_is_bound_to_the_members_before_it() {
        // The same allocation at the same position, after another leader: another
        // group's member, refused.
        let mut mine = GroupSpec::new();
        mine.add(counting("task-clock"));
        let faults = mine.add(counting("page-faults"));
        let mut other = GroupSpec::new();
        other.add(counting("cpu-clock"));
        let other_faults = other.add(counting("page-faults"));
        assert_eq!(faults.index(), other_faults.index());
        let r = GroupReading::for_members(
            mine.allocations(),
            vec![Reading::new(10, 1, 1), Reading::new(3, 1, 1)],
        );
        assert_eq!(r.member(faults).unwrap().value, 3);
        assert!(r.get(other_faults).is_none());
        assert!(mine.get(other_faults).is_none());
        // Members added after it do not matter: a group allocated alike up to the
        // member takes its handle.
        let mut longer = mine.clone();
        longer.add(counting("context-switches"));
        assert!(longer.get(faults).is_some());
    }

    #[test]
    #[should_panic(expected = "not in this group reading")]
    fn indexing_with_another_groups_handle_panics() {
        let mut mine = GroupSpec::new();
        mine.add(counting("task-clock"));
        let mut other = GroupSpec::new();
        let faults = other.add(counting("page-faults"));
        let r = GroupReading::for_members(mine.allocations(), vec![Reading::new(1, 1, 1)]);
        let _ = r[faults];
    }

    #[test]
    fn an_out_of_range_or_uncounted_member_gives_none() {
        let mut big = GroupSpec::new();
        let m: Vec<Member> = (0..3).map(|_| big.add(counting("task-clock"))).collect();
        let r = GroupReading::new(vec![Reading::new(1, 1, 1), Reading::not_supported()]);
        assert!(r.get(m[2]).is_none());
        assert_eq!(r.ratio(m[0], m[2]), None);
        assert_eq!(r.ratio(m[0], m[1]), None);
        let zero = GroupReading::new(vec![Reading::new(1, 1, 1), Reading::new(0, 1, 1)]);
        assert_eq!(zero.ratio(m[0], m[1]), None);
    }
}
