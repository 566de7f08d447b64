//! The `pmc_pmu_*` functions of FreeBSD's libpmc (`libpmc_pmu_util.c`) over
//! pmc-events' tables: the CPU's named events ("pmu events"), looked up by
//! name (libpmc's aliases included, case ignored) or by index, printed as
//! pmccontrol(8) and pmcstat(8) print them, and turned into the
//! `struct pmc_op_pmcallocate` hwpmc would be given.
//!
//! A table's index is its position in pmc-events' table (sorted by name),
//! which is what `PMC_F_EV_PMU` allocations carry here; FreeBSD's indices are
//! positions in its own compiled table, so an index in a log written on
//! FreeBSD names FreeBSD's event only when the tables agree.

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::sync::Mutex;

use pmc_events::{CpuId, Event, Kind, Table};

use crate::abi::*;

/// `DEFAULT_SAMPLE_COUNT` of libpmc: the sampling count of an event the
/// table gives none for (pmcstat treats it as "not recognized").
pub(crate) const DEFAULT_SAMPLE_COUNT: u64 = 65536;

/// The table of `cpuid` (a `kern.hwpmc.cpuid` string), or of this machine
/// for `None` (libpmc's `pmu_events_map_get`).
pub(crate) fn table(cpuid: Option<&str>) -> Option<Table> {
    let cpu = match cpuid {
        Some(s) => CpuId::from_hwpmc_cpuid(s)?,
        None => crate::host::cpu()?,
    };
    Table::for_cpu(&cpu)
}

/// libpmc's aliases (`libpmc_pmu_util.c`'s `pmu_*_alias_table`) that
/// pmc-events leaves to pmc's portable events: here they name the table's
/// events, as FreeBSD's do.
const PORTABLE_ALIASES: &[(Kind, &str, &str)] = &[
    (
        Kind::IntelCore,
        "unhalted-cycles",
        "cpu_clk_unhalted.thread",
    ),
    (Kind::IntelCore, "instructions", "inst_retired.any"),
    (
        Kind::IntelCore,
        "branch-mispredicts",
        "br_misp_retired.all_branches",
    ),
    (Kind::IntelCore, "branches", "br_inst_retired.all_branches"),
    (
        Kind::AmdZen,
        "LLC_MISSES",
        "l3_comb_clstr_state.request_miss",
    ),
    (
        Kind::AmdZen,
        "LLC-MISSES",
        "l3_comb_clstr_state.request_miss",
    ),
    (
        Kind::AmdZen,
        "LLC_REFERENCE",
        "l3_request_g1.caching_l3_cache_accesses",
    ),
    (
        Kind::AmdZen,
        "LLC-REFERENCE",
        "l3_request_g1.caching_l3_cache_accesses",
    ),
    (Kind::AmdZen, "BRANCH-INSTRUCTION-RETIRED", "ex_ret_brn"),
    (Kind::AmdZen, "BRANCH-MISSES-RETIRED", "ex_ret_brn_misp"),
    (Kind::AmdZen, "unhalted-cycles", "ls_not_halted_cyc"),
    (Kind::AmdZen, "instructions", "ex_ret_instr"),
    (Kind::AmdZen, "branch-mispredicts", "ex_ret_brn_misp"),
    (Kind::AmdZen, "branches", "ex_ret_brn"),
    (Kind::ArmV8, "UNHALTED_CORE_CYCLES", "CPU_CYCLES"),
    (Kind::ArmV8, "UNHALTED-CORE-CYCLES", "CPU_CYCLES"),
    (Kind::ArmV8, "LLC_MISSES", "LL_CACHE_MISS_RD"),
    (Kind::ArmV8, "LLC-MISSES", "LL_CACHE_MISS_RD"),
    (Kind::ArmV8, "LLC_REFERENCE", "LL_CACHE_RD"),
    (Kind::ArmV8, "LLC-REFERENCE", "LL_CACHE_RD"),
    (Kind::ArmV8, "BRANCH-INSTRUCTION-RETIRED", "BR_RETIRED"),
    (Kind::ArmV8, "BRANCH-MISSES-RETIRED", "BR_MIS_PRED_RETIRED"),
    (Kind::ArmV8, "unhalted-cycles", "CPU_CYCLES"),
    (Kind::ArmV8, "instructions", "INST_RETIRED"),
    (Kind::ArmV8, "branch-mispredicts", "BR_MIS_PRED_RETIRED"),
    (Kind::ArmV8, "branches", "BR_RETIRED"),
];

/// The event named `name` (an alias resolved as libpmc's `pmu_alias_get`
/// does, by the table's vendor), case ignored.
pub(crate) fn lookup(table: Table, name: &str) -> Option<Event> {
    pmc_events::lookup(table, name).map(|(e, _)| e).or_else(|| {
        PORTABLE_ALIASES
            .iter()
            .filter(|(k, a, _)| *k == table.kind() && a.eq_ignore_ascii_case(name))
            .find_map(|(_, _, real)| table.find(real))
    })
}

/// `pmc_pmu_enabled`: whether this machine's CPU has a table.
pub(crate) fn enabled() -> bool {
    table(None).is_some()
}

/// The names handed to C, one `CString` per (table, index), for the life of
/// the process (as FreeBSD's compiled tables live).
fn c_name(t: Table, e: &Event) -> &'static CStr {
    static NAMES: Mutex<Option<HashMap<(&'static str, usize), &'static CStr>>> = Mutex::new(None);
    let mut g = NAMES.lock().unwrap_or_else(|p| p.into_inner());
    let map = g.get_or_insert_with(HashMap::new);
    map.entry((t.name(), e.index)).or_insert_with(|| {
        let c = CString::new(e.name).unwrap_or_default();
        Box::leak(c.into_boxed_c_str())
    })
}

/// `pmc_pmu_event_get_by_idx(cpuid, idx)`: the name at `idx`.
pub(crate) fn event_by_idx(cpuid: Option<&str>, idx: i32) -> Option<&'static CStr> {
    let t = table(cpuid)?;
    let e = t.events().nth(usize::try_from(idx).ok()?)?;
    Some(c_name(t, &e))
}

/// `pmc_pmu_idx_get_by_event(cpuid, name)`: the index of `name`, -1 if none.
pub(crate) fn idx_by_event(cpuid: Option<&str>, name: &str) -> i32 {
    table(cpuid)
        .and_then(|t| lookup(t, name))
        .and_then(|e| i32::try_from(e.index).ok())
        .unwrap_or(-1)
}

/// `pmc_pmu_sample_rate_get(name)`: the table's sampling count for the
/// event. pmc-events keeps no `SampleAfterValue`, so every event gets
/// [`DEFAULT_SAMPLE_COUNT`], as FreeBSD gives every AMD and Arm event (their
/// tables have none either).
pub(crate) fn sample_rate(_name: &str) -> u64 {
    DEFAULT_SAMPLE_COUNT
}

/// `strcasestr(hay, needle) != NULL`.
fn contains_ignore_case(hay: &str, needle: &str) -> bool {
    hay.to_ascii_lowercase()
        .contains(&needle.to_ascii_lowercase())
}

/// The event's encoding as the pmu-events JSON's `EventCode`/`UMask` keys
/// spell it in libpmc's event strings (`event=0xc0,umask=0x1`).
fn event_string(e: &Event) -> String {
    let mut s = format!("event={:#x}", e.code);
    if e.kind != Kind::ArmV8 {
        s += &format!(",umask={:#x}", e.umask);
        if e.cmask != 0 {
            s += &format!(",cmask={}", e.cmask);
        }
        if e.edge {
            s += ",edge=1";
        }
        if e.inv {
            s += ",inv=1";
        }
        if e.any {
            s += ",any=1";
        }
    }
    s
}

/// What `pmc_pmu_print_counters`, `..._counter_desc`, `..._desc_long` and
/// `..._full` print (libpmc's formats), for the events whose name contains
/// `filter` (case ignored; `None`: every event, for `print_counters` only).
pub(crate) fn listing(which: Print, filter: Option<&str>) -> String {
    let Some(t) = table(None) else {
        return String::new();
    };
    let mut out = String::new();
    for e in t.events() {
        if let Some(f) = filter {
            if !contains_ignore_case(e.name, f) {
                continue;
            }
        } else if which != Print::Names {
            continue;
        }
        // pmc-events keeps a one-line description (empty where the source's
        // licence did not allow copying it), no long one.
        let desc = (!e.desc.is_empty()).then_some(e.desc);
        match which {
            Print::Names => out += &format!("\t{}\n", e.name),
            Print::Desc | Print::DescLong => {
                if let Some(d) = desc {
                    out += &format!("{}:\t{d}\n", e.name);
                }
            }
            Print::Full => {
                out += &format!("name: {}\n", e.name);
                if let Some(d) = desc {
                    out += &format!("desc: {d}\n");
                }
                out += &format!("event: {}\n", event_string(&e));
            }
        }
    }
    out
}

/// The four printing functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Print {
    /// `pmc_pmu_print_counters`: `\tNAME`.
    Names,
    /// `pmc_pmu_print_counter_desc`: `NAME:\tDESC`.
    Desc,
    /// `pmc_pmu_print_counter_desc_long`: the long description, else the short.
    DescLong,
    /// `pmc_pmu_print_counter_full`: `name:`, `desc:`, `event:` lines.
    Full,
}

/// `pmc_pmu_pmcallocate(name, pm)`: fills `pm` as libpmc does for hwpmc (the
/// class, the pmu-events index in `pm_ev`, `PMC_F_EV_PMU`, the capabilities
/// and the machine-dependent configuration); 0, or `ENOENT` for an event
/// this machine's table lacks.
pub(crate) fn pmcallocate(name: &str, pm: &mut pmc_op_pmcallocate) -> i32 {
    let Some(t) = table(None) else {
        return libc::ENOENT;
    };
    let Some(e) = lookup(t, name) else {
        return libc::ENOENT;
    };
    let Ok(idx) = u32::try_from(e.index) else {
        return libc::ENOENT;
    };
    pm.pm_md = pmc_md_op_pmcallocate { __pad: [0; 4] };
    pm.pm_caps |= PMC_CAP_READ | PMC_CAP_WRITE;
    pm.pm_ev = idx;
    let caps = pm.pm_caps;
    // Only the Intel and AMD configurations below carry USR/OS bits.
    #[cfg(not(target_arch = "aarch64"))]
    let usr_os = |usr: u64, os: u64| match caps & (PMC_CAP_USER | PMC_CAP_SYSTEM) {
        PMC_CAP_USER => usr,
        PMC_CAP_SYSTEM => os,
        _ => usr | os,
    };
    match e.kind {
        #[cfg(not(target_arch = "aarch64"))]
        Kind::IntelCore => {
            let lname = e.name.to_ascii_lowercase();
            pm.pm_class = if lname.starts_with("unc_") || lname.contains("uncore") {
                pm.pm_caps |= PMC_CAP_QUALIFIER;
                PMC_CLASS_UCP
            } else if e.code == 0 {
                PMC_CLASS_IAF
            } else {
                pm.pm_caps |= PMC_CAP_QUALIFIER;
                PMC_CLASS_IAP
            };
            let mut config = u64::from(e.code & 0xFF)
                | (u64::from(e.umask) << 8)
                | (u64::from(e.cmask) << 24)
                | usr_os(IAP_USR, IAP_OS);
            for (on, bit) in [
                (e.edge, IAP_EDGE),
                (e.any, IAP_ANY),
                (e.inv, IAP_INV),
                (caps & PMC_CAP_INTERRUPT != 0, IAP_INT),
            ] {
                if on {
                    config |= bit;
                }
            }
            pm.pm_md.pm_iap = pmc_md_iap_op_pmcallocate {
                pm_iap_config: u32::try_from(config & 0xFFFF_FFFF).unwrap_or(0),
                pm_iap_rsp: 0,
            };
        }
        #[cfg(not(target_arch = "aarch64"))]
        Kind::AmdZen => {
            pm.pm_class = PMC_CLASS_K8;
            let ev = u64::from(e.code);
            let mut config = (ev & 0xFF) | ((ev & 0xF00) << 24) | usr_os(AMD_PMC_USR, AMD_PMC_OS);
            if e.umask > 0 {
                pm.pm_caps |= PMC_CAP_QUALIFIER;
                config |= (u64::from(e.umask) << 8) & AMD_PMC_UNITMASK;
            }
            config |= (u64::from(e.cmask) << 24) & AMD_PMC_COUNTERMASK;
            for (on, bit) in [
                (e.edge, AMD_PMC_EDGE),
                (e.inv, AMD_PMC_INVERT),
                (caps & PMC_CAP_INTERRUPT != 0, AMD_PMC_INT),
            ] {
                if on {
                    config |= bit;
                }
            }
            pm.pm_md.pm_amd = pmc_md_amd_op_pmcallocate {
                pm_amd_config: config,
                pm_amd_sub_class: PMC_AMD_SUB_CLASS_CORE,
            };
        }
        #[cfg(target_arch = "aarch64")]
        Kind::ArmV8 => {
            pm.pm_class = PMC_CLASS_ARMV8;
            pm.pm_md.pm_md_config = u32::from(e.code);
        }
        // A table of another architecture's kind (a cpuid of another machine).
        #[allow(unreachable_patterns)]
        _ => return libc::ENOENT,
    }
    pm.pm_flags |= PMC_F_EV_PMU;
    0
}

/// `pmc_pmu_stat_mode`: the six counters of pmcstat's counting mode (cycles,
/// instructions, branches, branch misses, last-level cache references and
/// misses) by this CPU's names; `None` without a table.
pub(crate) fn stat_mode() -> Option<&'static [&'static CStr; 6]> {
    const INTEL: [&CStr; 6] = [
        c"cpu_clk_unhalted.thread",
        c"inst_retired.any",
        c"br_inst_retired.all_branches",
        c"br_misp_retired.all_branches",
        c"longest_lat_cache.reference",
        c"longest_lat_cache.miss",
    ];
    const AMD: [&CStr; 6] = [
        c"ls_not_halted_cyc",
        c"ex_ret_instr",
        c"ex_ret_brn",
        c"ex_ret_brn_misp",
        c"l3_request_g1.caching_l3_cache_accesses",
        c"l3_comb_clstr_state.request_miss",
    ];
    const ARM: [&CStr; 6] = [
        c"CPU_CYCLES",
        c"INST_RETIRED",
        c"BR_RETIRED",
        c"BR_MIS_PRED_RETIRED",
        c"LL_CACHE_RD",
        c"LL_CACHE_MISS_RD",
    ];
    Some(match table(None)?.kind() {
        Kind::IntelCore => &INTEL,
        Kind::AmdZen => &AMD,
        Kind::ArmV8 => &ARM,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_indices_agree_for_a_given_cpuid() {
        let cpuid = "GenuineIntel-6-55-4";
        let t = table(Some(cpuid)).expect("Skylake-X has a table");
        let idx = idx_by_event(Some(cpuid), "INST_RETIRED.ANY");
        assert!(idx >= 0);
        let name = event_by_idx(Some(cpuid), idx).expect("a name");
        assert_eq!(
            name.to_str().map(str::to_ascii_lowercase),
            Ok("inst_retired.any".into())
        );
        // libpmc's alias, resolved by the table's vendor.
        assert_eq!(idx_by_event(Some(cpuid), "instructions"), idx);
        assert_eq!(idx_by_event(Some(cpuid), "no-such-event"), -1);
        assert!(event_by_idx(Some(cpuid), -1).is_none());
        let n = i32::try_from(t.len()).expect("small");
        assert!(event_by_idx(Some(cpuid), n).is_none());
        assert!(event_by_idx(Some(cpuid), n - 1).is_some());
    }
}
