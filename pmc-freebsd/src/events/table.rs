//! Names and fields to a [`Raw`]: the pmu-events table (`table_event`,
//! `pmu_index`), the portable events, raw terms and `rNNNN` configs.

use super::{err, no_pmu, Machine, Raw, Vendor};
use pmc_core::event::Term;
use pmc_core::{Error, ErrorKind, EventSpec, PortableEvent};
use pmc_events::Event;

/// `pm_ev` for an EV_PMU allocation: the index of the table event with this
/// encoding (what libpmc's `pmc_pmu_pmcallocate` writes), else 0.
pub(super) fn pmu_index(machine: &Machine, raw: &Raw, fixed: Option<u8>) -> u32 {
    let Some(t) = machine.table() else { return 0 };
    t.events()
        .find(|e| match fixed {
            Some(f) => e.intel_fixed_counter() == Some(f),
            None => e.msr.is_none() && e.intel_fixed_counter().is_none() && Raw::of(e) == *raw,
        })
        .map_or(0, |e| e.index as u32)
}

/// A named CPU event (table name, class-prefixed name or libpmc alias).
/// `Ok(None)`: not a table name at all.
pub(super) fn table_event(
    spec: &EventSpec,
    name: &str,
    machine: &Machine,
) -> Result<Option<(Event, String)>, Error> {
    let lower = name.to_ascii_lowercase();
    let bare = ["iap-", "iaf-", "k8-", "armv8-"]
        .iter()
        .find_map(|p| lower.strip_prefix(p).map(|_| &name[p.len()..]))
        .unwrap_or(name);
    if let Some(t) = machine.table() {
        if let Some((e, alias)) = pmc_events::lookup(t, bare) {
            if let Some(msr) = e.msr {
                return Err(err(
                    ErrorKind::NotSupported,
                    spec,
                    format!(
                        "{} needs an extra MSR ({msr:?}) that hwpmc's IAP class does not program",
                        e.name
                    ),
                    "pick an event without ldlat/frontend qualifiers",
                ));
            }
            let shown = if alias {
                format!("{} (libpmc alias {bare})", e.name)
            } else {
                e.name.to_owned()
            };
            return Ok(Some((e, shown)));
        }
    }
    let elsewhere: Vec<&str> = pmc_events::tables_with(bare)
        .map(|(t, _)| t.name())
        .collect();
    let alias = machine
        .table_kind()
        .is_some_and(|k| pmc_events::libpmc_alias(k, bare).is_some())
        || pmc_events::is_libpmc_alias(bare);
    if elsewhere.is_empty() && !alias {
        return Ok(None);
    }
    if machine.vendor() == Vendor::Other {
        return Err(no_pmu(spec, machine));
    }
    let here = match (machine.cpu, machine.table()) {
        (Some(c), Some(t)) => format!("this CPU ({c}) uses the {} table, which lacks it", t.name()),
        (Some(c), None) => format!("pmc has no pmu-events table for this CPU ({c})"),
        (None, Some(t)) => format!(
            "this CPU (pm_cputype {:#x}) uses the {} table, which lacks it",
            machine.cputype,
            t.name()
        ),
        (None, None) => format!(
            "this CPU (pm_cputype {:#x}) could not be matched to a pmu-events table",
            machine.cputype
        ),
    };
    let what = if elsewhere.is_empty() {
        format!("`{bare}` is a libpmc alias")
    } else {
        format!("`{bare}` is an event of {}", elsewhere.join(", "))
    };
    Err(err(
        ErrorKind::NotSupported,
        spec,
        format!("{what}, but {here}"),
        "`Backend::list_events` lists this CPU's events; event=0x..,umask=0x.. works on any CPU",
    ))
}

pub(super) fn raw_from_terms(spec: &EventSpec, terms: &[Term]) -> Result<Raw, Error> {
    let mut raw = Raw::default();
    let mut have_event = false;
    for t in terms {
        let v = t.value;
        match (t.key.to_ascii_lowercase().as_str(), v) {
            ("event" | "ev", Some(v)) => {
                raw.event = v;
                have_event = true;
            }
            ("umask" | "mask", Some(v)) => raw.umask = v,
            ("cmask" | "count", Some(v)) => raw.cmask = v,
            ("edge", None) => raw.edge = true,
            ("inv", None) => raw.inv = true,
            ("any" | "anythread", None) => raw.any = true,
            (k, _) => {
                return Err(err(
                    ErrorKind::NotSupported,
                    spec,
                    format!("qualifier `{k}` is not supported by the FreeBSD backend"),
                    "use event=, umask=, cmask=, edge, inv, any, usr, os",
                ))
            }
        }
    }
    if !have_event {
        return Err(err(
            ErrorKind::Parse,
            spec,
            "a raw event needs event=0x..",
            "write e.g. event=0xc0,umask=0x00",
        ));
    }
    if raw.event > 0xFFF || raw.umask > 0xFF || raw.cmask > 0xFF {
        return Err(err(
            ErrorKind::InvalidArgument,
            spec,
            format!(
                "event={:#x}, umask={:#x}, cmask={:#x} out of range",
                raw.event, raw.umask, raw.cmask
            ),
            "event is at most 12 bits (AMD) or 8 bits (Intel); umask and cmask 8 bits",
        ));
    }
    Ok(raw)
}

/// The portable events' raw encodings, per vendor.
pub(super) fn portable_raw(p: PortableEvent, v: Vendor) -> Option<Raw> {
    let r = |event, umask| {
        Some(Raw {
            event,
            umask,
            ..Raw::default()
        })
    };
    match (p, v) {
        (PortableEvent::Cycles, Vendor::Intel) => r(0x3C, 0),
        (PortableEvent::Instructions, Vendor::Intel) => r(0xC0, 0),
        (PortableEvent::Branches, Vendor::Intel) => r(0xC4, 0),
        (PortableEvent::BranchMisses, Vendor::Intel) => r(0xC5, 0),
        (PortableEvent::CacheReferences, Vendor::Intel) => r(0x2E, 0x4F),
        (PortableEvent::CacheMisses, Vendor::Intel) => r(0x2E, 0x41),
        (PortableEvent::Cycles, Vendor::Amd) => r(0x76, 0),
        (PortableEvent::Instructions, Vendor::Amd) => r(0xC0, 0),
        (PortableEvent::Branches, Vendor::Amd) => r(0xC2, 0),
        (PortableEvent::BranchMisses, Vendor::Amd) => r(0xC3, 0),
        (PortableEvent::CacheReferences, Vendor::Amd) => r(0x60, 0xFF),
        (PortableEvent::CacheMisses, Vendor::Amd) => r(0x64, 0x09),
        // Arm PMUv3 architected events (as Linux's armv8 PMU maps them).
        (PortableEvent::Cycles, Vendor::Arm) => r(0x11, 0),
        (PortableEvent::Instructions, Vendor::Arm) => r(0x08, 0),
        (PortableEvent::Branches, Vendor::Arm) => r(0x21, 0),
        (PortableEvent::BranchMisses, Vendor::Arm) => r(0x22, 0),
        (PortableEvent::CacheReferences, Vendor::Arm) => r(0x04, 0),
        (PortableEvent::CacheMisses, Vendor::Arm) => r(0x03, 0),
        _ => None,
    }
}

/// A Linux-style raw config (`rNNNN`, the x86 PERFEVTSEL layout) as a [`Raw`].
pub(super) fn raw_config(config: u64) -> Raw {
    Raw {
        event: (config & 0xFF) | ((config >> 24) & 0xF00),
        umask: (config >> 8) & 0xFF,
        cmask: (config >> 24) & 0xFF,
        edge: config & (1 << 18) != 0,
        inv: config & (1 << 23) != 0,
        any: false,
    }
}
