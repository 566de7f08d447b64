//! AMD: a [`Raw`] to K8 encodings, legacy `PMC_EV_K8_*` codes first.

use super::table::pmu_index;
use super::{err, priv_bits, Encoding, Machine, Raw};
use crate::sys::abi::*;
use pmc_core::{Error, ErrorKind, EventSpec, Modifiers};

/// The legacy K8 event code (`PMC_EV_K8_*`) of an AMD encoding, where
/// pmc knows one: the event select of a row of the kernel's
/// `amd_event_codes[]` with unit mask 0x00 (`freebsd/freebsd-src`
/// `sys/dev/hwpmc/hwpmc_amd.c`@eb5956fd), with no unit mask, threshold,
/// edge or invert asked for. Only the two codes `abi-amd64.json` pins.
pub(super) fn k8_legacy_code(raw: &Raw) -> Option<u32> {
    if raw.umask != 0 || raw.cmask != 0 || raw.edge || raw.inv || raw.any {
        return None;
    }
    match raw.event {
        0x76 => Some(PMC_EV_K8_BU_CPU_CLK_UNHALTED),
        0xC0 => Some(PMC_EV_K8_FR_RETIRED_X86_INSTRUCTIONS),
        _ => None,
    }
}

/// K8. `pm_ev` is, in order of preference:
///
/// 1. the legacy `PMC_EV_K8_*` code, without `PMC_F_EV_PMU`, for core
///    cycles and retired instructions. Every kernel programs it: with a
///    `pmc_cpuid` string `amd_allocate_pmc()` takes `pm_amd_config` and
///    ignores `pm_ev`, without one it looks `pm_ev` up ([`Machine::
///    amd_legacy_only`]). And FreeBSD's reader names it right: 15-CURRENT's
///    `lib/libpmc/pmclog.c` (`fel1x-developer/freebsd-src`@2d614aa2
///    `pmclog_get_event()`) names a PMCALLOCATE "if ((pl_flags &
///    PMC_F_EV_PMU) != 0)" by `pmc_pmu_event_get_by_idx()`, "else if
///    (pl_event <= PMC_EVENT_LAST)" by `_pmc_name_of_event()`, whose K8
///    range reads libpmc's own `k8_event_table` (issue 23 item 2).
/// 2. with `PMC_F_EV_PMU` (0x0A only), the event's index in pmc's
///    pmu-events table: FreeBSD's `pmcstat -R` names the PMC by entry
///    `pm_ev` of *its* table, generated in directory-walk order, so it
///    misnames it unless the tables coincide (see the module docs).
/// 3. on 0x09, 0: the kernel reads only `pm_amd_config`.
///
/// A kernel without `pmc_cpuid` takes only (1); anything else is refused
/// here rather than with the kernel's bare EINVAL.
pub(super) fn amd(
    spec: &EventSpec,
    raw: Raw,
    m: &Modifiers,
    sampling: bool,
    machine: &Machine,
    name: &str,
) -> Result<Vec<Encoding>, Error> {
    if !machine.has_class(PMC_CLASS_K8) {
        return Ok(Vec::new());
    }
    let (usr, os) = priv_bits(m);
    let ev = raw.event & 0xFFF;
    let mut cfg =
        (ev & 0xFF) | ((ev & 0xF00) << 24) | ((raw.umask & 0xFF) << 8) | ((raw.cmask & 0xFF) << 24);
    let mut caps = PMC_CAP_READ | PMC_CAP_WRITE | PMC_CAP_QUALIFIER;
    if usr {
        cfg |= AMD_PMC_USR;
    }
    if os {
        cfg |= AMD_PMC_OS;
    }
    if m.is_restricted() {
        caps |= if usr { PMC_CAP_USER } else { 0 } | if os { PMC_CAP_SYSTEM } else { 0 };
    }
    if raw.edge {
        cfg |= AMD_PMC_EDGE;
        caps |= PMC_CAP_EDGE;
    }
    if raw.inv {
        // libpmc's pmu path sets EDGE here (a bug, hwpmc.md §2.5); INVERT is right.
        cfg |= AMD_PMC_INVERT;
        caps |= PMC_CAP_INVERT;
    }
    if raw.cmask != 0 {
        caps |= PMC_CAP_THRESHOLD;
    }
    if sampling {
        cfg |= AMD_PMC_INT;
        caps |= PMC_CAP_INTERRUPT;
    }
    let md = pmc_md_op_pmcallocate::amd(cfg, PMC_AMD_SUB_CLASS_CORE);
    let mut out = Vec::new();
    if let Some(code) = k8_legacy_code(&raw) {
        out.push(Encoding {
            class: PMC_CLASS_K8,
            ev: code,
            flags: 0,
            // The legacy path builds USR/OS/INT from the caps and
            // refuses a unit mask the row does not allow (0x00).
            caps: caps & !PMC_CAP_QUALIFIER,
            md,
            name: format!("K8 {name}"),
        });
        // A kernel that refuses K8 without EV_PMU (AMD's 2026 tree, by its
        // ATF test `amd_missing_pmu_flag`) answers EINVAL, and the
        // allocation tries the EV_PMU encoding next.
        if machine.amd_legacy_only() || !machine.takes_ev_pmu() {
            return Ok(out);
        }
    } else if machine.amd_legacy_only() {
        return Err(err(
            ErrorKind::NotSupported,
            spec,
            "this kernel's hwpmc has no CPU id string for this AMD CPU (kern.hwpmc.cpuid is empty: a 2020-era hwpmc_amd.c sets it only for family 0x17), so amd_allocate_pmc() programs only the events of its own K8 table, of which pmc encodes core cycles (0x76) and retired instructions (0xc0)",
            "count `cycles` or `instructions`, or run a FreeBSD whose hwpmc sets kern.hwpmc.cpuid for this CPU (2023 or later)",
        ));
    }
    // EV_PMU only where the kernel knows it (issue 14 item 2: 0x09 kernels
    // return EINVAL for it); on 0x09 `amd_allocate_pmc` takes
    // `pm_amd_config` as is (its `pmc_cpuid` branch).
    let ev_pmu = machine.takes_ev_pmu();
    out.push(Encoding {
        class: PMC_CLASS_K8,
        ev: if ev_pmu {
            pmu_index(machine, &raw, None)
        } else {
            0
        },
        flags: if ev_pmu { PMC_F_EV_PMU } else { 0 },
        caps,
        md,
        name: format!("K8 {name}"),
    });
    Ok(out)
}
