//! Event listing (`pmcstat -L`) and diagnostics (`pmcstat --diagnose`) for
//! FreeBSD: every event that resolves is probed by allocating a PMC for it
//! (`PMC_OP_PMCALLOCATE`) and releasing it again, so "available" means "the
//! kernel took it here". The Linux backend's `info.rs` plays the same role.

use crate::backend::Backend;
use crate::errno_map;
use crate::events;
use crate::sys::abi::*;
use crate::sys::Sys;
use pmc_core::info::{Availability, Check, EventInfo, EventSource as Src};
use pmc_core::{Allocation, Cpus, ErrorKind, EventSpec, PortableEvent};

/// The name of a `PMC_CLASS_*`, as `pmccontrol -L` prints it.
pub(crate) fn class_name(class: u32) -> String {
    match class {
        PMC_CLASS_TSC => "TSC".into(),
        PMC_CLASS_K8 => "K8".into(),
        PMC_CLASS_IBS => "IBS".into(),
        PMC_CLASS_IAF => "IAF".into(),
        PMC_CLASS_IAP => "IAP".into(),
        PMC_CLASS_UCF => "UCF".into(),
        PMC_CLASS_UCP => "UCP".into(),
        PMC_CLASS_SOFT => "SOFT".into(),
        PMC_CLASS_ARMV7 => "ARMV7".into(),
        PMC_CLASS_ARMV8 => "ARMV8".into(),
        PMC_CLASS_RAPL => "RAPL".into(),
        PMC_CLASS_PERF => "PERF".into(),
        c => format!("class {c:#x}"),
    }
}

/// Allocates and releases a PMC to see whether it can be opened here.
fn probe<S: Sys + 'static>(b: &Backend<S>, a: &Allocation) -> Availability {
    match pmc_core::Backend::allocate(b, a) {
        Ok(p) => match pmc_core::Pmc::release(p) {
            Ok(()) => Availability::Available,
            Err(e) => Availability::Unavailable(e.to_string()),
        },
        Err(e) => Availability::Unavailable(e.to_string()),
    }
}

/// Probes the counting allocation of an event string (system scope on CPU 0
/// when `system`).
fn probe_name<S: Sys + 'static>(b: &Backend<S>, name: &str, system: bool) -> Availability {
    match name.parse::<EventSpec>() {
        Ok(spec) => {
            let a = Allocation::counting(spec);
            probe(b, &if system { a.system(Cpus::One(0)) } else { a })
        }
        Err(e) => Availability::Unavailable(e.to_string()),
    }
}

/// Every event this machine offers (`Backend::list_events`): the portable
/// events with their hwpmc encodings, the SOFT events the driver reported,
/// one line per hardware class (raw encodings), and the CPU's own named
/// events from the pmc-events table; each probed where it resolves.
impl<S: Sys + 'static> Backend<S> {
    /// `Backend::list_events`: as [`list_events`] lists them.
    pub(crate) fn event_listing(&self) -> Vec<EventInfo> {
        list_events(self)
    }

    /// `Backend::diagnose`: as [`diagnose`] checks.
    pub(crate) fn checks(&self) -> Vec<Check> {
        diagnose(self)
    }
}

fn list_events<S: Sys + 'static>(b: &Backend<S>) -> Vec<EventInfo> {
    let mut out = portable_events(b);
    out.extend(soft_events(b));
    out.extend(class_events(b));
    out.extend(table_events(b));
    out
}

fn portable_events<S: Sys + 'static>(b: &Backend<S>) -> Vec<EventInfo> {
    PortableEvent::ALL
        .iter()
        .map(|p| {
            let spec = EventSpec::portable(*p);
            let description = match events::resolve(&spec, b.machine(), false) {
                Ok(encs) => encs
                    .iter()
                    .map(|e| e.name.clone())
                    .collect::<Vec<_>>()
                    .join(" or "),
                Err(_) => "no hwpmc equivalent here".into(),
            };
            EventInfo {
                name: p.name().into(),
                source: Src::Portable,
                description,
                availability: probe(b, &Allocation::counting(spec)),
            }
        })
        .collect()
}

fn soft_events<S: Sys + 'static>(b: &Backend<S>) -> Vec<EventInfo> {
    b.machine()
        .soft_events
        .iter()
        .map(|(name, code)| {
            let full = format!("SOFT-{name}");
            EventInfo {
                availability: probe_name(b, &full, false),
                name: full,
                source: Src::HwpmcClass("SOFT".into()),
                description: format!("software event {name} (pm_ev {code:#x})"),
            }
        })
        .collect()
}

fn class_events<S: Sys + 'static>(b: &Backend<S>) -> Vec<EventInfo> {
    let mut out = Vec::new();
    for c in &b.machine().classes {
        let cname = class_name(c.pm_class);
        match c.pm_class {
            PMC_CLASS_SOFT => {}
            PMC_CLASS_TSC => out.push(EventInfo {
                name: "tsc-tsc".into(),
                source: Src::HwpmcClass(cname),
                description: "the time-stamp counter (system-scope counting only)".into(),
                availability: probe_name(b, "tsc-tsc", true),
            }),
            _ => out.push(EventInfo {
                name: "event=0x..,umask=0x..".into(),
                source: Src::HwpmcClass(cname.clone()),
                description: format!(
                    "{} {cname} counters, {} bits wide; raw events with usr, os, edge, inv, cmask=",
                    c.pm_num, c.pm_width
                ),
                availability: Availability::NotProbed(
                    "raw encodings; the named ones are listed below".into(),
                ),
            }),
        }
    }
    out
}

/// The CPU's own events (pmc-events table), each resolved and, where it
/// resolves, allocated once to see that the kernel takes it.
fn table_events<S: Sys + 'static>(b: &Backend<S>) -> Vec<EventInfo> {
    let machine = b.machine();
    // A CPU the kernel does not know: its table's names cannot open here;
    // one line says why instead (freebsd-audit-3 finding I).
    if let Some(u) = machine.unknown_cpu() {
        return vec![EventInfo {
            name: "(hardware events)".to_owned(),
            source: Src::HwpmcClass("none".to_owned()),
            description: format!(
                "pmc-events has {} for this CPU, not offered",
                machine.table().map_or("no table", |t| t.name())
            ),
            availability: Availability::Unavailable(u.explain()),
        }];
    }
    let table = machine.table().map(|t| t.name()).unwrap_or("none");
    events::table_listing(machine)
        .into_iter()
        .map(|(e, r)| {
            let (description, availability) = match r {
                Ok(encs) => {
                    let class = encs.first().map_or(0, |x| x.class);
                    let d = format!("{} [{} {:#x}]", e.desc, class_name(class), e.config());
                    (d, probe_name(b, e.name, false))
                }
                Err(err) => (
                    format!("{} [{:#x}]", e.desc, e.config()),
                    Availability::Unavailable(err.message().to_owned()),
                ),
            };
            EventInfo {
                name: e.name.to_owned(),
                source: Src::HwpmcClass(format!("pmu-events {table}")),
                description: description.trim_start().to_owned(),
                availability,
            }
        })
        .collect()
}

/// What works here and why not (`Backend::diagnose`): the driver and its
/// ABI, the CPU, the PMC classes, hardware and software events, the
/// privilege settings, a process- and a system-scope allocation, and the
/// CPUs hwpmc calls absent or disabled.
fn diagnose<S: Sys + 'static>(b: &Backend<S>) -> Vec<Check> {
    let mut out = machine_checks(b);
    out.push(privilege_check(b));
    out.extend(allocation_checks(b));
    out.push(cpu_check(b));
    out
}

fn machine_checks<S: Sys>(b: &Backend<S>) -> Vec<Check> {
    let m = b.machine();
    let mut out = vec![
        Check::yes(
            "hwpmc driver",
            format!(
                "loaded, ABI version {:#010x} (major {:#04x})",
                m.version,
                m.version >> 24
            ),
        ),
        Check::info(
            "CPU",
            format!(
                "pmc_cputype {:#x} ({:?}), {} CPUs",
                m.cputype,
                m.vendor(),
                b.ncpu()
            ),
        ),
    ];
    let classes: Vec<String> = m
        .classes
        .iter()
        .map(|c| format!("{}x{}", class_name(c.pm_class), c.pm_num))
        .collect();
    out.push(Check::info("PMC classes", classes.join(", ")));
    if [PMC_CLASS_IAP, PMC_CLASS_IAF, PMC_CLASS_K8]
        .iter()
        .any(|c| m.has_class(*c))
    {
        out.push(Check::yes("hardware PMCs", "hardware counters present"));
    } else if let Some(u) = m.unknown_cpu() {
        out.push(Check::no(
            "hardware PMCs",
            u.explain(),
            "use SOFT events (page-faults, cpu-clock); hardware events need a FreeBSD kernel whose hwpmc_intel.c knows this model",
        ));
    } else {
        out.push(Check::no(
            "hardware PMCs",
            "no hardware counter class (a VM without a virtual PMU, or a CPU hwpmc does not know)",
            "use SOFT events (page-faults, cpu-clock), enable the virtual PMU in the hypervisor, or run on hardware",
        ));
    }
    if m.soft_events.is_empty() {
        out.push(Check::no(
            "software events",
            "hwpmc reported no SOFT events",
            "kldload hwpmc on a kernel with HWPMC_HOOKS",
        ));
    } else {
        let names: Vec<&str> = m.soft_events.iter().map(|(n, _)| n.as_str()).collect();
        out.push(Check::yes("software events", names.join(", ")));
    }
    out
}

fn privilege_check<S: Sys>(b: &Backend<S>) -> Check {
    let f = errno_map::Facts::read(b.sys());
    let show = |v: Option<i64>| v.map_or_else(|| "unknown".to_owned(), |v| v.to_string());
    Check::info(
        "privilege",
        format!(
            "euid {}, jailed {}, security.bsd.unprivileged_syspmcs = {}, \
             security.bsd.unprivileged_proc_debug = {}",
            f.euid
                .map_or_else(|| "unknown".to_owned(), |u| u.to_string()),
            f.jailed
                .map_or_else(|| "unknown".to_owned(), |j| j.to_string()),
            show(f.unprivileged_syspmcs),
            show(f.unprivileged_proc_debug)
        ),
    )
}

fn allocation_checks<S: Sys + 'static>(b: &Backend<S>) -> Vec<Check> {
    let page_faults = EventSpec::portable(PortableEvent::PageFaults);
    [
        (
            "process-scope counting",
            Allocation::counting(page_faults.clone()),
        ),
        (
            "system-scope counting",
            Allocation::counting(page_faults).system(Cpus::One(0)),
        ),
    ]
    .into_iter()
    .map(|(name, a)| match pmc_core::Backend::allocate(b, &a) {
        Ok(p) => {
            let _ = pmc_core::Pmc::release(p);
            Check::yes(name, "allocated and released a page-faults PMC")
        }
        Err(e) => Check::no(
            name,
            e.message().to_owned(),
            e.help().unwrap_or("see hwpmc(4)").to_owned(),
        ),
    })
    .collect()
}

fn cpu_check<S: Sys>(b: &Backend<S>) -> Check {
    let offline: Vec<String> = (0..b.ncpu().min(4096))
        .filter(|c| b.rows(*c).is_err_and(|e| e.kind() == ErrorKind::NoSuchCpu))
        .map(|c| c.to_string())
        .collect();
    if offline.is_empty() {
        Check::yes("CPUs", format!("all {} CPUs online", b.ncpu()))
    } else {
        Check::info(
            "CPUs",
            format!("absent or disabled: {}", offline.join(", ")),
        )
    }
}
