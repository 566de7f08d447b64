//! Intel: a [`Raw`] to IAF (fixed) and IAP encodings.

use super::table::pmu_index;
use super::{priv_bits, Encoding, Machine, Raw};
use crate::sys::abi::*;
use pmc_core::Modifiers;

pub(super) fn intel(
    raw: Raw,
    m: &Modifiers,
    sampling: bool,
    machine: &Machine,
    name: &str,
) -> Vec<Encoding> {
    let (usr, os) = priv_bits(m);
    let mut cfg = (raw.event as u32 & IAP_EVSEL_MASK)
        | (((raw.umask as u32) & 0xFF) << 8)
        | (((raw.cmask as u32) & 0xFF) << 24);
    let mut caps = PMC_CAP_READ | PMC_CAP_WRITE;
    if usr {
        cfg |= IAP_USR;
    }
    if os {
        cfg |= IAP_OS;
    }
    if m.is_restricted() {
        caps |= if usr { PMC_CAP_USER } else { 0 } | if os { PMC_CAP_SYSTEM } else { 0 };
    }
    if raw.edge {
        cfg |= IAP_EDGE;
        caps |= PMC_CAP_EDGE;
    }
    if raw.inv {
        cfg |= IAP_INV;
        caps |= PMC_CAP_INVERT;
    }
    if raw.any {
        cfg |= IAP_ANY;
    }
    if raw.cmask != 0 {
        caps |= PMC_CAP_THRESHOLD;
    }
    if sampling {
        cfg |= IAP_INT;
        caps |= PMC_CAP_INTERRUPT;
    }
    let ev_pmu = if machine.takes_ev_pmu() {
        PMC_F_EV_PMU
    } else {
        0
    };
    let mut out = Vec::new();
    // Fixed counters first: instructions, core cycles, reference cycles.
    let fixed = match (raw.event, raw.umask, raw.cmask, raw.edge || raw.inv) {
        // The table's fixed-only spellings: event 0 with umask 1/2/3.
        (0xC0, 0, 0, false) | (0x00, 1, 0, false) => Some(PMC_EV_IAF_INSTR_RETIRED_ANY),
        (0x3C, 0, 0, false) | (0x00, 2, 0, false) => Some(PMC_EV_IAF_CPU_CLK_UNHALTED_CORE),
        (0x00, 3, 0, false) => Some(PMC_EV_IAF_CPU_CLK_UNHALTED_REF),
        _ => None,
    };
    if let Some(ev) = fixed {
        if machine.has_class(PMC_CLASS_IAF) {
            // EV_PMU: libpmc's table index (pmclog.c names the PMC by it);
            // without: the PMC_EV_IAF_* code `_pmc_name_of_event` knows.
            let ev = if ev_pmu != 0 {
                pmu_index(
                    machine,
                    &raw,
                    Some((ev - PMC_EV_IAF_INSTR_RETIRED_ANY) as u8),
                )
            } else {
                ev
            };
            out.push(Encoding {
                class: PMC_CLASS_IAF,
                ev,
                flags: ev_pmu,
                caps: caps & !(PMC_CAP_EDGE | PMC_CAP_INVERT | PMC_CAP_THRESHOLD),
                md: pmc_md_op_pmcallocate::iap(cfg, 0),
                name: format!("IAF {name}"),
            });
        }
    }
    if machine.has_class(PMC_CLASS_IAP) && raw.event != 0 {
        out.push(Encoding {
            class: PMC_CLASS_IAP,
            ev: if ev_pmu != 0 {
                pmu_index(machine, &raw, None)
            } else {
                0
            },
            flags: ev_pmu,
            caps: caps | PMC_CAP_QUALIFIER,
            md: pmc_md_op_pmcallocate::iap(cfg, 0),
            name: format!("IAP {name}"),
        });
    }
    out
}
