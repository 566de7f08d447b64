//! SOFT events (by the kernel's dynamic names) and the TSC class.

use super::{check_mods, err, normalize, Encoding, Machine};
use crate::sys::abi::*;
use pmc_core::{Error, ErrorKind, EventSpec};

pub(super) fn soft(
    spec: &EventSpec,
    machine: &Machine,
    name: &str,
    sampling: bool,
) -> Result<Vec<Encoding>, Error> {
    check_mods(spec, false)?;
    let want = normalize(name);
    let found = machine
        .soft_events
        .iter()
        .find(|(n, _)| normalize(n) == want);
    let Some((n, code)) = found else {
        return Err(err(
            ErrorKind::NoSuchEvent,
            spec,
            format!("hwpmc has no software event {name} here"),
            "list the SOFT events with `Backend::list_events`",
        ));
    };
    let mut caps = PMC_CAP_READ | PMC_CAP_WRITE;
    if sampling {
        caps |= PMC_CAP_INTERRUPT;
    }
    Ok(vec![Encoding {
        class: PMC_CLASS_SOFT,
        ev: *code,
        flags: 0,
        caps: caps & machine.class_caps(PMC_CLASS_SOFT),
        md: pmc_md_op_pmcallocate::default(),
        name: format!("SOFT-{n}"),
    }])
}

pub(super) fn tsc(spec: &EventSpec, machine: &Machine) -> Result<Vec<Encoding>, Error> {
    check_mods(spec, false)?;
    if !machine.has_class(PMC_CLASS_TSC) {
        return Err(err(
            ErrorKind::NoSuchEvent,
            spec,
            "this machine has no TSC class",
            "use SOFT-CLOCK.HARD",
        ));
    }
    Ok(vec![Encoding {
        class: PMC_CLASS_TSC,
        ev: PMC_EV_TSC_TSC,
        flags: 0,
        caps: PMC_CAP_READ,
        md: pmc_md_op_pmcallocate::default(),
        name: "TSC-TSC".into(),
    }])
}
