//! Arm: a [`Raw`] to ARMV8 encodings.

use super::{err, priv_bits, Encoding, Machine, Raw};
use crate::sys::abi::*;
use pmc_core::{Error, ErrorKind, EventSpec};

/// ARMV8: `pm_ev = PMC_EV_ARMV8_FIRST + n` without EV_PMU, which every
/// ABI version takes and `_pmc_name_of_event` names; the event number must
/// fit the enum's 0x00-0xFF range. USR/OS go in as capabilities.
pub(super) fn arm(
    spec: &EventSpec,
    raw: Raw,
    sampling: bool,
    machine: &Machine,
    name: &str,
) -> Result<Vec<Encoding>, Error> {
    if !machine.has_class(PMC_CLASS_ARMV8) {
        return Ok(Vec::new());
    }
    if raw.event > 0xFF || raw.umask != 0 || raw.cmask != 0 || raw.edge || raw.inv || raw.any {
        return Err(err(
            ErrorKind::NotSupported,
            spec,
            format!(
                "Arm event {:#x} needs an event number up to 0xff and no x86 qualifiers for hwpmc's ARMV8 class",
                raw.event
            ),
            "pick an architected event (0x00-0xff); `Backend::list_events` lists them",
        ));
    }
    let m = &spec.modifiers;
    let (usr, os) = priv_bits(m);
    let mut caps = PMC_CAP_READ | PMC_CAP_WRITE;
    if m.is_restricted() {
        caps |= if usr { PMC_CAP_USER } else { 0 } | if os { PMC_CAP_SYSTEM } else { 0 };
    }
    if sampling {
        caps |= PMC_CAP_INTERRUPT;
    }
    Ok(vec![Encoding {
        class: PMC_CLASS_ARMV8,
        ev: PMC_EV_ARMV8_FIRST + raw.event as u32,
        flags: 0,
        caps,
        md: pmc_md_op_pmcallocate::default(),
        name: format!("ARMV8 {name}"),
    }])
}
