//! The sampling set of a PMC: its rings' size and purpose, who reads them (the log's drain
//! thread or the owner), and the descriptors the log gets (the rings are mapped from the fds
//! by [`InstanceSet::build_rings`](super::instances::InstanceSet::build_rings)).

use crate::counter::Member;
#[cfg(feature = "sampling")]
use crate::log::{LocalRings, RingPurpose};
use crate::sys::Sys;
use pmc_core::{Mode, Rate, Scope};

/// The rings of a PMC and where their records go.
pub(super) struct Rings {
    /// Data pages per ring.
    pub(super) pages: usize,
    /// What the records are.
    pub(super) purpose: RingPurpose,
    /// Who reads them.
    pub(super) delivery: Delivery,
}

/// Who reads a PMC's rings.
pub(super) enum Delivery {
    /// The backend's log (its drain thread).
    Log,
    /// The owner, through [`Pmc::samples`](pmc_core::Pmc::samples); `None` until the first rings are mapped.
    Local(Option<Box<LocalRings>>),
}

impl Rings {
    /// Rings of `pages` data pages for `purpose`, feeding the log.
    pub(super) fn new(pages: usize, purpose: RingPurpose) -> Rings {
        Rings {
            pages,
            purpose,
            delivery: Delivery::Log,
        }
    }
}

/// The log descriptors of the members.
pub(super) fn descriptors(
    members: &[Member],
    purpose: Option<RingPurpose>,
    sys: &dyn Sys,
) -> Vec<pmc_log::record::PmcDescriptor<'static>> {
    use pmc_log::record as log;
    let time = crate::log::now(sys);
    // A switch group's leader is internal: its samples become the owner's counter records.
    members
        .iter()
        .skip(usize::from(purpose == Some(RingPurpose::SwitchCounts)))
        .map(|m| {
            let cpu = match &m.alloc.scope {
                Scope::System {
                    cpu: pmc_core::Cpus::One(c),
                } => Some(*c),
                _ => None,
            };
            let mode = match m.alloc.mode {
                Mode::Counting => log::Mode::Counting,
                Mode::Sampling(Rate::Period(p)) => log::Mode::SamplingPeriod(p),
                Mode::Sampling(Rate::Frequency(f)) => log::Mode::SamplingFrequency(f),
            };
            let native = m
                .native_fields(&m.opened)
                .into_iter()
                .map(|f| format!("{}={}", f.name, f.value))
                .collect::<Vec<_>>()
                .join(",");
            log::PmcDescriptor {
                time,
                pmc_id: m.pmc_id,
                event_spec: m.event.clone().into(),
                canonical_name: m.event.clone().into(),
                scope: if m.alloc.scope.is_system() {
                    log::Scope::System
                } else {
                    log::Scope::Process
                },
                cpu,
                mode,
                flags: m.alloc.flags.bits()
                    | if crate::log::unwind::wants_stack(&m.alloc) {
                        log::FLAG_DWARF_CALLCHAIN
                    } else {
                        0
                    },
                native_config: native.into(),
            }
        })
        .collect()
}
