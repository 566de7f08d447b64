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
    let (cfg, caps) = iap_bits(&raw, m, sampling);
    let ev_pmu = if machine.takes_ev_pmu() {
        PMC_F_EV_PMU
    } else {
        0
    };
    let mut out = Vec::new();
    // Fixed counters first: instructions, core cycles, reference cycles,
    // and on four-row machines under a 0x0A kernel TOPDOWN.SLOTS.
    if let Some(row) = fixed_row(&raw, machine, ev_pmu) {
        if machine.has_class(PMC_CLASS_IAF) {
            out.push(iaf(row, raw, cfg, caps, ev_pmu, machine, name));
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

/// The IAP programming (`pm_iap_config`: event select, unit mask, counter
/// mask, the privilege, edge, invert, any-thread and interrupt bits) and
/// the capabilities it asks for.
fn iap_bits(raw: &Raw, m: &Modifiers, sampling: bool) -> (u32, u32) {
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
    (cfg, caps)
}

/// The fixed counter (IAF row) that counts `raw`, when one does and `raw`
/// has no counter mask, edge or invert.
fn fixed_row(raw: &Raw, machine: &Machine, ev_pmu: u32) -> Option<u32> {
    let plain = raw.cmask == 0 && !(raw.edge || raw.inv);
    match (raw.event, raw.umask) {
        // The table's fixed-only spellings: event 0 with umask 1..4.
        (0xC0, 0) | (0x00, 1) => Some(0),
        (0x3C, 0) | (0x00, 2) => Some(1),
        (0x00, 3) => Some(2),
        (0x00, 4) | (0xA4, 1) if iaf_rows(machine) >= 4 && ev_pmu != 0 => Some(3),
        _ => None,
    }
    .filter(|_| plain)
}

/// The IAF encoding of fixed row `row`.
fn iaf(
    row: u32,
    raw: Raw,
    cfg: u32,
    caps: u32,
    ev_pmu: u32,
    machine: &Machine,
    name: &str,
) -> Encoding {
    // The event select and unit mask every hwpmc_core.c accepts on
    // this row and no other (freebsd-audit-3 finding C): the
    // 2019-2021 iaf_allocate_pmc() pins only 0xC0 (row 0), 0x3C
    // (row 1) and 0x00/3 (row 2) and puts anything else on the
    // first free row, so `event=0,umask=2` would count retired
    // instructions there; later trees take "if (ev == 0x0) { if
    // (umask != ri + 1) return (EINVAL); }" or the row's own
    // pair. TOPDOWN.SLOTS (row 3, 0x00/4) exists only in those
    // later trees: offered to 0x0A kernels only (the 0x09 ones may
    // be 2019-2021 and would put it on row 0).
    let (e, u) = [(0xC0, 0), (0x3C, 0), (0x00, 3), (0x00, 4)][row as usize];
    let iaf_cfg = (cfg & !(IAP_EVSEL_MASK | IAP_UMASK_MASK)) | e | (u << 8);
    // EV_PMU: libpmc's table index (pmclog.c names the PMC by it);
    // without: the PMC_EV_IAF_* code `_pmc_name_of_event` knows.
    let ev = match (ev_pmu != 0, row) {
        (true, 3) => pmu_index(
            machine,
            &Raw {
                event: 0,
                umask: 4,
                ..raw
            },
            None,
        ),
        (true, r) => pmu_index(machine, &raw, Some(r as u8)),
        (false, r) => PMC_EV_IAF_INSTR_RETIRED_ANY + r,
    };
    Encoding {
        class: PMC_CLASS_IAF,
        ev,
        flags: ev_pmu,
        caps: caps & !(PMC_CAP_EDGE | PMC_CAP_INVERT | PMC_CAP_THRESHOLD),
        md: pmc_md_op_pmcallocate::iap(iaf_cfg, 0),
        name: format!("IAF {name}"),
    }
}

/// The machine's fixed counters (`pm_num` of its IAF class).
fn iaf_rows(machine: &Machine) -> u32 {
    machine
        .classes
        .iter()
        .find(|c| c.pm_class == PMC_CLASS_IAF)
        .map_or(0, |c| c.pm_num)
}
