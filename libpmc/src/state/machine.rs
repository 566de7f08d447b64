//! The machine as pmc(3) reports it: CPUs (`pmc_ncpu`, online or not),
//! classes and their capabilities (`pmc_cpuinfo`), rows (`pmc_npmc`,
//! `pmc_pmcinfo`, `pmc_enable`/`pmc_disable`), event names by class.

use std::ffi::{CStr, CString};
use std::sync::OnceLock;

use pmc_facade::Backend;
use pmc_log::hwpmc::PMC_ID_CPU_ANY;

use crate::abi::*;
use crate::host;
use crate::names;

use super::{initialized, not_initialized, unsupported, with_lib, CError, R, ROWS_PER_CLASS};

static CPUINFO: OnceLock<pmc_cpuinfo> = OnceLock::new();

/// Number of CPUs (the highest possible CPU number + 1).
pub(crate) fn ncpu() -> u32 {
    host::cpus_configured().max(1)
}

/// The class of this machine's hardware events: by the CPU's vendor, when
/// it has a PMU perf drives.
pub(crate) fn hardware_class() -> Option<u32> {
    if !host::has_hardware_pmu() {
        return None;
    }
    if cfg!(target_arch = "aarch64") {
        return Some(PMC_CLASS_ARMV8);
    }
    match host::cpu()? {
        pmc_events::CpuId::X86 { vendor, .. } => match vendor {
            pmc_events::X86Vendor::Amd => Some(PMC_CLASS_K8),
            pmc_events::X86Vendor::Intel => Some(PMC_CLASS_IAP),
            pmc_events::X86Vendor::Other => None,
        },
        pmc_events::CpuId::Arm { .. } => Some(PMC_CLASS_ARMV8),
    }
}

const SOFT_CAPS: u32 =
    PMC_CAP_READ | PMC_CAP_WRITE | PMC_CAP_INTERRUPT | PMC_CAP_USER | PMC_CAP_SYSTEM;

pub(super) fn class_caps(class: u32) -> u32 {
    if class == PMC_CLASS_SOFT {
        SOFT_CAPS
    } else {
        SOFT_CAPS | PMC_CAP_EDGE | PMC_CAP_THRESHOLD | PMC_CAP_INVERT | PMC_CAP_QUALIFIER
    }
}

/// `pmc_cpuinfo`'s answer, computed once.
pub(crate) fn cpuinfo() -> &'static pmc_cpuinfo {
    CPUINFO.get_or_init(|| {
        let empty = pmc_classinfo {
            pm_class: 0,
            pm_caps: 0,
            pm_width: 0,
            pm_num: 0,
        };
        let mut classes = [empty; PMC_CLASS_MAX as usize];
        let mut n = 0;
        for class in std::iter::once(PMC_CLASS_SOFT).chain(hardware_class()) {
            classes[n] = pmc_classinfo {
                pm_class: class,
                pm_caps: class_caps(class),
                pm_width: 64,
                pm_num: ROWS_PER_CLASS,
            };
            n += 1;
        }
        let nclass = u32::try_from(n).unwrap_or(1);
        pmc_cpuinfo {
            pm_cputype: PMC_CPU_GENERIC,
            pm_ncpu: ncpu(),
            pm_npmc: nclass * ROWS_PER_CLASS,
            pm_nclass: nclass,
            pm_classes: classes,
        }
    })
}

/// `pmc_cpuinfo`, after `pmc_init`.
pub(crate) fn checked_cpuinfo() -> R<&'static pmc_cpuinfo> {
    if !initialized() {
        return Err(not_initialized());
    }
    Ok(cpuinfo())
}

/// `pmc_npmc(cpu)`.
pub(crate) fn npmc(cpu: i32) -> R<u32> {
    let info = checked_cpuinfo()?;
    check_cpu(cpu, info)?;
    Ok(info.pm_npmc)
}

/// A CPU number: `EINVAL` outside `0..pmc_ncpu()`, `ENXIO` offline.
pub(super) fn check_cpu(cpu: i32, info: &pmc_cpuinfo) -> R<u32> {
    match u32::try_from(cpu) {
        Ok(c) if c < info.pm_ncpu => {
            if host::cpu_online(c) {
                Ok(c)
            } else {
                Err(CError::new(
                    libc::ENXIO,
                    format!("CPU {c} is offline (not in /sys/devices/system/cpu/online)"),
                ))
            }
        }
        _ => Err(CError::new(
            libc::EINVAL,
            format!("CPU {cpu} is not in 0..{} (pmc_ncpu())", info.pm_ncpu),
        )),
    }
}

/// `pmc_enable`/`pmc_disable(cpu, row)`: pmc_disable(3)'s errors (EPERM
/// without privilege, EINVAL for a bad CPU or row, ENXIO for an offline CPU,
/// EBUSY to disable a row in use), then EOPNOTSUPP: perf has no per-row
/// administration.
pub(crate) fn admin(call: &str, cpu: i32, row: i32, disable: bool) -> R<()> {
    let info = checked_cpuinfo()?;
    if !nix::unistd::geteuid().is_root() {
        return Err(CError::new(
            libc::EPERM,
            format!("{call}: administering PMC rows needs root (FreeBSD: PRIV_PMC_MANAGE)"),
        ));
    }
    let c = check_cpu(cpu, info)?;
    let r = usize::try_from(row)
        .ok()
        .filter(|r| *r < info.pm_npmc as usize)
        .ok_or_else(|| {
            CError::new(
                libc::EINVAL,
                format!(
                    "{call}: row {row} is not in 0..{} (pmc_npmc())",
                    info.pm_npmc
                ),
            )
        })?;
    if disable {
        let rows = pmcinfo(i32::try_from(c).unwrap_or(0))?;
        if rows.get(r).is_some_and(|x| x.pm_rowdisp != PMC_DISP_FREE) {
            return Err(CError::new(
                libc::EBUSY,
                format!("{call}: row {row} of CPU {c} is in use by an allocated PMC"),
            ));
        }
    }
    Err(unsupported(call, "perf has no per-row administration"))
}

/// `pmc_pmcinfo(cpu)`: the rows of `cpu`, this process's PMCs on it first.
pub(crate) fn pmcinfo(cpu: i32) -> R<Vec<pmc_info>> {
    let info = checked_cpuinfo()?;
    let cpu = check_cpu(cpu, info)?;
    with_lib(|lib| {
        let pid = i32::try_from(std::process::id()).unwrap_or(0);
        let free = |class: u32, row: u32| {
            let mut r = pmc_info {
                pm_name: [0; PMC_NAME_MAX as usize],
                pm_class: class,
                pm_enabled: 1,
                pm_rowdisp: PMC_DISP_FREE,
                pm_ownerpid: -1,
                pm_mode: 0,
                pm_event: 0,
                pm_flags: 0,
                pm_reloadcount: 0,
            };
            let cls = names::class(class).map(CStr::to_bytes).unwrap_or(b"?");
            let name = format!("{}-{row}", String::from_utf8_lossy(cls));
            for (d, s) in r
                .pm_name
                .iter_mut()
                .zip(name.bytes().take(PMC_NAME_MAX as usize - 1))
            {
                *d = s as std::ffi::c_char;
            }
            r
        };
        let mut rows = Vec::new();
        for c in &info.pm_classes[..info.pm_nclass as usize] {
            let class = c.pm_class;
            let mut mine = lib
                .pmcs
                .iter()
                .filter(|(_, s)| s.class == class && (s.cpu == cpu || s.cpu == PMC_ID_CPU_ANY));
            for row in 0..c.pm_num {
                let mut r = free(class, row);
                if let Some((_, s)) = mine.next() {
                    r.pm_rowdisp = if s.cpu != PMC_ID_CPU_ANY {
                        PMC_DISP_STANDALONE
                    } else {
                        PMC_DISP_THREAD
                    };
                    r.pm_ownerpid = pid;
                    r.pm_mode = s.mode;
                    r.pm_event = s.event;
                    r.pm_flags = s.flags;
                    r.pm_reloadcount = s.reload;
                }
                rows.push(r);
            }
        }
        Ok(rows)
    })
}

/// `pmc_event_names_of_class`: the SOFT events, and the machine's hardware
/// class's; EINVAL for any other class (pmc_event_names_of_class(3): "cl was
/// invalid").
pub(crate) fn event_names_of_class(class: u32) -> R<&'static [&'static CStr]> {
    if !initialized() {
        return Err(not_initialized());
    }
    if class == PMC_CLASS_SOFT {
        return Ok(&names::SOFT_EVENTS);
    }
    let Some(name) = names::class(class) else {
        return Err(CError::new(
            libc::EINVAL,
            format!("{class} is not a PMC_CLASS_* value"),
        ));
    };
    // The classes pmc_cpuinfo reports (computed once), so that the two answers agree.
    let info = cpuinfo();
    let listed = info.pm_classes[..(info.pm_nclass as usize).min(PMC_CLASS_MAX as usize)]
        .iter()
        .any(|c| c.pm_class == class);
    if listed {
        if let Some(names) = HARDWARE_NAMES.get() {
            return Ok(names);
        }
        let events = with_lib(|lib| Ok(lib.backend.list_events(false)))?;
        return Ok(HARDWARE_NAMES.get_or_init(|| hardware_event_names(&events)));
    }
    Err(CError::new(
        libc::EINVAL,
        format!(
            "class {} is not this machine's: pmc_cpuinfo lists its classes",
            name.to_string_lossy()
        ),
    ))
}

/// The hardware class's event names, listed once per process (the caller's
/// arrays point into it, as into FreeBSD's tables).
static HARDWARE_NAMES: OnceLock<Box<[&'static CStr]>> = OnceLock::new();

/// The names of this machine's hardware events, in the backend's listing
/// order, each once: the portable hardware names (`cycles`, `instructions`),
/// perf's generic hardware and cache events, and the CPU PMU's own (sysfs
/// aliases, the pmu-events table), less those the listing found unavailable.
fn hardware_event_names(events: &[pmc_facade::info::EventInfo]) -> Box<[&'static CStr]> {
    use pmc_facade::info::{Availability, EventSource};
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for e in events {
        let hardware = match &e.source {
            EventSource::Portable => pmc_facade::PortableEvent::ALL
                .iter()
                .any(|p| p.is_hardware() && p.name() == e.name),
            EventSource::Hardware | EventSource::Cache => true,
            EventSource::Pmu(pmu) => pmu.starts_with("cpu") || pmu.starts_with("armv8"),
            _ => false,
        };
        if !hardware
            || matches!(e.availability, Availability::Unavailable(_))
            || e.name.contains("/.../")
            || !seen.insert(e.name.clone())
        {
            continue;
        }
        if let Ok(c) = CString::new(e.name.clone()) {
            // Leaked once per process: the names live as long as FreeBSD's tables.
            out.push(&*Box::leak(c.into_boxed_c_str()));
        }
    }
    out.into_boxed_slice()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmc_facade::info::{Availability, EventInfo, EventSource};

    fn ev(name: &str, source: EventSource, availability: Availability) -> EventInfo {
        EventInfo {
            name: name.into(),
            source,
            description: String::new(),
            availability,
        }
    }

    #[test]
    fn the_hardware_class_lists_the_cpus_events_that_can_open() {
        let no = || Availability::Unavailable("no".into());
        let events = [
            ev("cycles", EventSource::Portable, Availability::Available),
            ev(
                "page-faults",
                EventSource::Portable,
                Availability::Available,
            ),
            ev("ref-cycles", EventSource::Hardware, no()),
            ev(
                "L1-dcache-loads",
                EventSource::Cache,
                Availability::Available,
            ),
            ev("task-clock", EventSource::Software, Availability::Available),
            ev(
                "armv8_pmuv3_0/cpu_cycles/",
                EventSource::Pmu("armv8_pmuv3_0".into()),
                Availability::Available,
            ),
            ev(
                "inst_retired",
                EventSource::Pmu("cpu (pmu-events x)".into()),
                Availability::NotProbed("many".into()),
            ),
            ev(
                "uncore/.../",
                EventSource::Pmu("uncore".into()),
                Availability::Available,
            ),
            ev(
                "cpu/.../",
                EventSource::Pmu("cpu".into()),
                Availability::Available,
            ),
            ev(
                "sched:sched_switch",
                EventSource::Tracepoint,
                Availability::Available,
            ),
            ev("cycles", EventSource::Hardware, Availability::Available),
        ];
        let names: Vec<&str> = hardware_event_names(&events)
            .iter()
            .map(|c| c.to_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "cycles",
                "L1-dcache-loads",
                "armv8_pmuv3_0/cpu_cycles/",
                "inst_retired"
            ]
        );
    }
}
