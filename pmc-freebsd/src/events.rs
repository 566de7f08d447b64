//! Event names -> `pmc_op_pmcallocate` fields (class, `pm_ev`, flags, caps,
//! machine-dependent config), per CPU vendor. Pure; unit-tested.
//!
//! | spec | Intel (IAF/IAP) | AMD (K8, `PMC_F_EV_PMU`) | no PMU |
//! |---|---|---|---|
//! | `cycles` | IAF fixed 1 (`0x3c`), else IAP `0x3c` | `0x76` | error `NoPmu` |
//! | `instructions` | IAF fixed 0 (`0xc0`), else IAP `0xc0` | `0xc0` | error `NoPmu` |
//! | `branches` | IAP `0xc4` | `0xc2` | error `NoPmu` |
//! | `branch-misses` | IAP `0xc5` | `0xc3` | error `NoPmu` |
//! | `cache-references` | IAP `0x2e`/`0x4f` | `0x60`/`0xff` | error `NoPmu` |
//! | `cache-misses` | IAP `0x2e`/`0x41` | `0x64`/`0x09` | error `NoPmu` |
//! | `page-faults` | SOFT `PAGE_FAULT.ALL` | same | same |
//! | `cpu-clock`, `task-clock` | SOFT `CLOCK.HARD` (ticks of `kern.hz`, not ns) | same | same |
//! | `context-switches`, `cpu-migrations` | not provided by hwpmc | | |
//! | `SOFT-CLOCK.HARD`, `PAGE_FAULT.READ`, ... | SOFT, by the names `PMC_OP_GETDYNEVENTINFO` returns | | |
//! | `TSC`, `tsc-tsc` | TSC class (system counting only) | | |
//! | `event=0x..,umask=0x..[,cmask=N,edge,inv,usr,os]`, `cpu/event=..,umask=../`, `rNNNN` | IAP raw | K8 raw | error `NoPmu` |
//!
//! `usr`/`os` (`:u`/`:k`) set the USR/OS bits (both when neither is given)
//! and request `PMC_CAP_USER`/`PMC_CAP_SYSTEM`. Sampling adds the INT bit
//! and `PMC_CAP_INTERRUPT`, as libpmc does.
//!
//! Hardware encodings set `PMC_F_EV_PMU` (ABI major 0x0A and later, which
//! the newest kernels require for AMD) with `pm_ev` = 0, because this crate
//! carries no pmu-events table: `pmcstat -R` may print a wrong event name
//! for such PMCs. IAF encodings use the `PMC_EV_IAF_*` codes.

use crate::sys::abi::*;
use pmc_core::event::Term;
use pmc_core::{Error, ErrorKind, EventSource, EventSpec, Modifiers, Op, PortableEvent};

/// The CPU vendor, from `pm_cputype`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vendor {
    /// `PMC_CPU_INTEL_*`.
    Intel,
    /// `PMC_CPU_AMD_K8` (all modern AMD).
    Amd,
    /// Anything else (including `PMC_CPU_GENERIC`: no hardware PMCs).
    Other,
}

impl Vendor {
    /// The vendor of a `pmc_cputype`.
    pub fn of(cputype: u32) -> Vendor {
        match cputype {
            PMC_CPU_AMD_K8 => Vendor::Amd,
            PMC_CPU_INTEL_CORE..=PMC_CPU_INTEL_SAPPHIRE_RAPIDS => Vendor::Intel,
            _ => Vendor::Other,
        }
    }
}

/// What the machine offers, as learnt at open time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Machine {
    /// `pm_cputype`.
    pub cputype: u32,
    /// `PMC_VERSION` of the kernel.
    pub version: u32,
    /// The classes of `PMC_OP_GETCPUINFO`.
    pub classes: Vec<pmc_classinfo>,
    /// SOFT events from `PMC_OP_GETDYNEVENTINFO`: (name, code).
    pub soft_events: Vec<(String, u32)>,
}

impl Machine {
    /// Whether a class is present.
    pub fn has_class(&self, class: u32) -> bool {
        self.classes
            .iter()
            .any(|c| c.pm_class == class && c.pm_num > 0)
    }
    /// The capabilities of a class (0 if absent).
    pub fn class_caps(&self, class: u32) -> u32 {
        self.classes
            .iter()
            .find(|c| c.pm_class == class)
            .map_or(0, |c| c.pm_caps)
    }
    /// The vendor.
    pub fn vendor(&self) -> Vendor {
        Vendor::of(self.cputype)
    }
}

/// One way to program an event: the `pmc_op_pmcallocate` fields other than
/// mode, CPU and count.
#[derive(Debug, Clone, PartialEq)]
pub struct Encoding {
    /// `pm_class`.
    pub class: u32,
    /// `pm_ev`.
    pub ev: u32,
    /// Extra `pm_flags` (`PMC_F_EV_PMU`).
    pub flags: u32,
    /// `pm_caps`.
    pub caps: u32,
    /// `pm_md`.
    pub md: pmc_md_op_pmcallocate,
    /// A readable name of what was chosen (`IAF INST_RETIRED.ANY`).
    pub name: String,
}

/// Normalises a hwpmc event name as libpmc compares them: case-insensitive,
/// with `' '`, `'_'`, `'-'` and `'.'` all equal.
pub fn normalize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if matches!(c, ' ' | '_' | '-' | '.') {
                '_'
            } else {
                c.to_ascii_uppercase()
            }
        })
        .collect()
}

fn err(kind: ErrorKind, spec: &EventSpec, msg: impl Into<String>, help: &str) -> Error {
    Error::new(
        kind,
        Op::Allocate,
        format!("event `{spec}`: {}", msg.into()),
    )
    .with_help(help)
}

fn no_pmu(spec: &EventSpec) -> Error {
    err(
        ErrorKind::NoPmu,
        spec,
        "this machine has no hardware PMCs hwpmc can use (a VM without a virtual PMU, or an unsupported CPU)",
        "use software events (page-faults, cpu-clock, SOFT-CLOCK.HARD) or run on hardware with PMCs",
    )
}

/// Intel IAP/IAF qualifier bits, AMD K8 bits: one description.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Raw {
    event: u64,
    umask: u64,
    cmask: u64,
    edge: bool,
    inv: bool,
    any: bool,
}

fn priv_bits(m: &Modifiers) -> (bool, bool) {
    // Neither or both requested: count both (libpmc).
    (m.counts_user(), m.counts_kernel())
}

fn check_mods(spec: &EventSpec, allow_priv: bool) -> Result<(), Error> {
    let m = &spec.modifiers;
    if m.precise > 0 {
        return Err(err(
            ErrorKind::NotSupported,
            spec,
            "hwpmc has no precise (PEBS/IBS-skid) modifier for this event",
            "drop the :p modifier",
        ));
    }
    if m.hv {
        return Err(err(
            ErrorKind::NotSupported,
            spec,
            "FreeBSD PMCs cannot select hypervisor mode",
            "drop :h",
        ));
    }
    if !allow_priv && m.is_restricted() {
        return Err(err(
            ErrorKind::NotSupported,
            spec,
            "software and TSC events cannot be restricted to user or kernel mode",
            "drop the :u/:k (usr/os) qualifier",
        ));
    }
    Ok(())
}

fn intel(raw: Raw, m: &Modifiers, sampling: bool, machine: &Machine, name: &str) -> Vec<Encoding> {
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
    let ev_pmu = if machine.version >> 24 >= 0x0A {
        PMC_F_EV_PMU
    } else {
        0
    };
    let mut out = Vec::new();
    // Fixed counters first: instructions, core cycles, reference cycles.
    let fixed = match (raw.event, raw.umask, raw.cmask, raw.edge || raw.inv) {
        (0xC0, 0, 0, false) => Some(PMC_EV_IAF_INSTR_RETIRED_ANY),
        (0x3C, 0, 0, false) => Some(PMC_EV_IAF_CPU_CLK_UNHALTED_CORE),
        (0x00, 3, 0, false) => Some(PMC_EV_IAF_CPU_CLK_UNHALTED_REF),
        _ => None,
    };
    if let Some(ev) = fixed {
        if machine.has_class(PMC_CLASS_IAF) {
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
            ev: 0,
            flags: ev_pmu,
            caps: caps | PMC_CAP_QUALIFIER,
            md: pmc_md_op_pmcallocate::iap(cfg, 0),
            name: format!("IAP {name}"),
        });
    }
    out
}

fn amd(raw: Raw, m: &Modifiers, sampling: bool, machine: &Machine, name: &str) -> Vec<Encoding> {
    if !machine.has_class(PMC_CLASS_K8) {
        return Vec::new();
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
    vec![Encoding {
        class: PMC_CLASS_K8,
        ev: 0,
        flags: PMC_F_EV_PMU,
        caps,
        md: pmc_md_op_pmcallocate::amd(cfg, PMC_AMD_SUB_CLASS_CORE),
        name: format!("K8 {name}"),
    }]
}

fn hardware(
    spec: &EventSpec,
    raw: Raw,
    sampling: bool,
    machine: &Machine,
    name: &str,
) -> Result<Vec<Encoding>, Error> {
    check_mods(spec, true)?;
    let mut out = match machine.vendor() {
        Vendor::Intel => intel(raw, &spec.modifiers, sampling, machine, name),
        Vendor::Amd => amd(raw, &spec.modifiers, sampling, machine, name),
        Vendor::Other => Vec::new(),
    };
    // READ/WRITE are asked for by default: keep only what the class has, so
    // a read-only class is not refused with EOPNOTSUPP. Capabilities the
    // spec really needs (edge, invert, threshold...) stay, and the kernel
    // refuses them if the class lacks them.
    for e in &mut out {
        let rw = PMC_CAP_READ | PMC_CAP_WRITE;
        e.caps = (e.caps & !rw) | (e.caps & rw & machine.class_caps(e.class));
    }
    if out.is_empty() {
        return Err(no_pmu(spec));
    }
    Ok(out)
}

fn soft(
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
            "list the SOFT events with `pmcstat -L`",
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

fn tsc(spec: &EventSpec, machine: &Machine) -> Result<Vec<Encoding>, Error> {
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

fn raw_from_terms(spec: &EventSpec, terms: &[Term]) -> Result<Raw, Error> {
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
fn portable_raw(p: PortableEvent, v: Vendor) -> Option<Raw> {
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
        _ => None,
    }
}

/// Resolves an event spec to the encodings to try, in order of preference
/// (e.g. the IAF fixed counter, then a general IAP counter).
///
/// # Errors
/// [`ErrorKind::NoPmu`] for hardware events on a machine without PMCs,
/// [`ErrorKind::NoSuchEvent`] for unknown names,
/// [`ErrorKind::NotSupported`] for events or modifiers hwpmc lacks.
pub fn resolve(
    spec: &EventSpec,
    machine: &Machine,
    sampling: bool,
) -> Result<Vec<Encoding>, Error> {
    match &spec.source {
        EventSource::Portable(p) => match p {
            PortableEvent::PageFaults => soft(spec, machine, "PAGE_FAULT.ALL", sampling),
            PortableEvent::CpuClock | PortableEvent::TaskClock => {
                soft(spec, machine, "CLOCK.HARD", sampling)
            }
            PortableEvent::ContextSwitches | PortableEvent::CpuMigrations => Err(err(
                ErrorKind::NotSupported,
                spec,
                "hwpmc has no software event for this",
                "count it with the Linux backend, or use dtrace/sysctl on FreeBSD",
            )),
            hw => match portable_raw(*hw, machine.vendor()) {
                Some(raw) => hardware(spec, raw, sampling, machine, hw.name()),
                None if machine.vendor() == Vendor::Other => Err(no_pmu(spec)),
                None => Err(err(
                    ErrorKind::NotSupported,
                    spec,
                    "no encoding for this CPU",
                    "use a raw event=..",
                )),
            },
        },
        EventSource::Raw(config) => {
            let raw = Raw {
                event: (config & 0xFF) | ((config >> 24) & 0xF00),
                umask: (config >> 8) & 0xFF,
                cmask: (config >> 24) & 0xFF,
                edge: config & (1 << 18) != 0,
                inv: config & (1 << 23) != 0,
                any: false,
            };
            hardware(spec, raw, sampling, machine, &format!("r{config:x}"))
        }
        EventSource::HwpmcTerms(terms) => {
            if let Some(first) = terms
                .first()
                .filter(|t| t.value.is_none() && !is_qualifier(&t.key))
            {
                // `name,qualifiers`: a named event with raw qualifiers.
                let named: EventSpec = first.key.parse().map_err(Error::from)?;
                let base = match named
                    .as_portable()
                    .and_then(|p| portable_raw(p, machine.vendor()))
                {
                    Some(r) => r,
                    None => {
                        return Err(err(
                            ErrorKind::NoSuchEvent,
                            spec,
                            format!(
                                "`{}` with qualifiers is only supported for hardware events",
                                first.key
                            ),
                            "use event=0x..,umask=0x.. with qualifiers",
                        ))
                    }
                };
                let extra = raw_from_terms(
                    spec,
                    &[
                        &[Term {
                            key: "event".into(),
                            value: Some(base.event),
                        }],
                        &terms[1..],
                    ]
                    .concat(),
                )?;
                let raw = Raw {
                    umask: if extra.umask != 0 {
                        extra.umask
                    } else {
                        base.umask
                    },
                    ..extra
                };
                return hardware(spec, raw, sampling, machine, &first.key);
            }
            let raw = raw_from_terms(spec, terms)?;
            hardware(spec, raw, sampling, machine, &spec.to_string())
        }
        EventSource::Pmu { pmu, terms } if pmu == "cpu" => {
            let raw = raw_from_terms(spec, terms)?;
            hardware(spec, raw, sampling, machine, &spec.to_string())
        }
        EventSource::Hwpmc(name) => {
            let n = normalize(name);
            if n == "TSC" || n == "TSC_TSC" {
                return tsc(spec, machine);
            }
            let soft_name = n.strip_prefix("SOFT_").unwrap_or(&n);
            if machine
                .soft_events
                .iter()
                .any(|(s, _)| normalize(s) == soft_name)
            {
                return soft(spec, machine, soft_name, sampling);
            }
            Err(err(
                ErrorKind::NoSuchEvent,
                spec,
                format!("`{name}` is not a SOFT or TSC event here, and this backend carries no pmu-events table"),
                "use event=0x..,umask=0x.. for hardware events; `pmcstat -L` lists the names",
            ))
        }
        EventSource::Pmu { pmu, .. } => Err(err(
            ErrorKind::NoSuchEvent,
            spec,
            format!("FreeBSD has no PMU named `{pmu}`"),
            "use cpu/event=..,umask=../ or event=..,umask=..",
        )),
        EventSource::Generic(_) => Err(err(
            ErrorKind::NotSupported,
            spec,
            "this Linux generic event has no hwpmc equivalent",
            "use a portable name (cycles, instructions, page-faults...) or a raw event",
        )),
        EventSource::Tracepoint { .. } => Err(err(
            ErrorKind::NotSupported,
            spec,
            "tracepoints are a Linux feature",
            "use dtrace(1) on FreeBSD",
        )),
    }
}

fn is_qualifier(k: &str) -> bool {
    matches!(
        k.to_ascii_lowercase().as_str(),
        "edge" | "inv" | "any" | "anythread" | "usr" | "os"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(cputype: u32) -> Machine {
        let mut classes = vec![
            pmc_classinfo {
                pm_class: PMC_CLASS_SOFT,
                pm_caps: 0x67,
                pm_width: 64,
                pm_num: 16,
            },
            pmc_classinfo {
                pm_class: PMC_CLASS_TSC,
                pm_caps: PMC_CAP_READ,
                pm_width: 64,
                pm_num: 1,
            },
        ];
        match Vendor::of(cputype) {
            Vendor::Intel => {
                classes.push(pmc_classinfo {
                    pm_class: PMC_CLASS_IAP,
                    pm_caps: 0x3FF,
                    pm_width: 48,
                    pm_num: 4,
                });
                classes.push(pmc_classinfo {
                    pm_class: PMC_CLASS_IAF,
                    pm_caps: 0x67,
                    pm_width: 48,
                    pm_num: 3,
                });
            }
            Vendor::Amd => classes.push(pmc_classinfo {
                pm_class: PMC_CLASS_K8,
                pm_caps: 0x1FF,
                pm_width: 48,
                pm_num: 6,
            }),
            Vendor::Other => {}
        }
        Machine {
            cputype,
            version: PMC_VERSION,
            classes,
            soft_events: vec![
                ("CLOCK.HARD".into(), PMC_EV_SOFT_FIRST),
                ("PAGE_FAULT.ALL".into(), PMC_EV_SOFT_FIRST + 3),
                ("PAGE_FAULT.READ".into(), PMC_EV_SOFT_FIRST + 4),
            ],
        }
    }

    fn r(spec: &str, cpu: u32, sampling: bool) -> Result<Vec<Encoding>, Error> {
        resolve(&spec.parse().expect("spec parses"), &machine(cpu), sampling)
    }

    const SKL: u32 = PMC_CPU_INTEL_SKYLAKE;
    const ZEN: u32 = PMC_CPU_AMD_K8;
    const VM: u32 = PMC_CPU_GENERIC;

    #[test]
    fn intel_portable_events() {
        let e = r("instructions", SKL, false).unwrap();
        assert_eq!(e.len(), 2, "IAF fixed counter, then IAP");
        assert_eq!(e[0].class, PMC_CLASS_IAF);
        assert_eq!(e[0].ev, PMC_EV_IAF_INSTR_RETIRED_ANY);
        assert_eq!(e[0].flags, PMC_F_EV_PMU);
        assert_eq!(e[0].md.as_iap().pm_iap_config, 0xC0 | IAP_USR | IAP_OS);
        assert_eq!(e[1].class, PMC_CLASS_IAP);
        let c = r("cycles", SKL, false).unwrap();
        assert_eq!(c[0].ev, PMC_EV_IAF_CPU_CLK_UNHALTED_CORE);
        for (name, cfg) in [
            ("branches", 0xC4),
            ("branch-misses", 0xC5),
            ("cache-references", 0x4F2E),
            ("cache-misses", 0x412E),
        ] {
            let e = r(name, SKL, false).unwrap();
            assert_eq!(e.len(), 1, "{name}");
            assert_eq!(e[0].class, PMC_CLASS_IAP, "{name}");
            assert_eq!(
                e[0].md.as_iap().pm_iap_config,
                cfg | IAP_USR | IAP_OS,
                "{name}"
            );
        }
    }

    #[test]
    fn amd_portable_events_need_ev_pmu() {
        for (name, cfg) in [
            ("cycles", 0x76u64),
            ("instructions", 0xC0),
            ("branches", 0xC2),
            ("branch-misses", 0xC3),
            ("cache-references", 0xFF60),
            ("cache-misses", 0x0964),
        ] {
            let e = r(name, ZEN, false).unwrap();
            assert_eq!(e.len(), 1);
            assert_eq!(e[0].class, PMC_CLASS_K8, "{name}");
            assert_eq!(e[0].flags, PMC_F_EV_PMU, "{name}");
            assert_eq!(
                e[0].md.as_amd().pm_amd_config,
                cfg | AMD_PMC_USR | AMD_PMC_OS,
                "{name}"
            );
            assert_eq!(e[0].md.as_amd().pm_amd_sub_class, PMC_AMD_SUB_CLASS_CORE);
        }
    }

    #[test]
    fn software_events_everywhere() {
        for cpu in [SKL, ZEN, VM] {
            let e = r("page-faults", cpu, false).unwrap();
            assert_eq!(
                (e[0].class, e[0].ev),
                (PMC_CLASS_SOFT, PMC_EV_SOFT_FIRST + 3)
            );
            let e = r("task-clock", cpu, false).unwrap();
            assert_eq!(e[0].ev, PMC_EV_SOFT_FIRST);
            assert_eq!(
                r("SOFT-CLOCK.HARD", cpu, false).unwrap()[0].ev,
                PMC_EV_SOFT_FIRST
            );
            assert_eq!(
                r("PAGE_FAULT.READ", cpu, false).unwrap()[0].ev,
                PMC_EV_SOFT_FIRST + 4
            );
            assert_eq!(r("tsc-tsc", cpu, false).unwrap()[0].class, PMC_CLASS_TSC);
        }
        assert_eq!(
            r("context-switches", SKL, false).unwrap_err().kind(),
            ErrorKind::NotSupported
        );
        assert_eq!(
            r("page-faults:u", SKL, false).unwrap_err().kind(),
            ErrorKind::NotSupported
        );
        assert_eq!(
            r("SOFT-NOPE", SKL, false).unwrap_err().kind(),
            ErrorKind::NoSuchEvent
        );
        assert_eq!(
            r("k8-dc-misses", ZEN, false).unwrap_err().kind(),
            ErrorKind::NoSuchEvent
        );
    }

    #[test]
    fn vm_without_pmu() {
        let e = r("instructions", VM, false).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NoPmu);
        assert!(e.help().unwrap_or("").contains("page-faults"));
        assert_eq!(
            r("event=0xc0", VM, false).unwrap_err().kind(),
            ErrorKind::NoPmu
        );
    }

    #[test]
    fn qualifiers_and_raw_events() {
        let e = r("instructions,usr", SKL, false).unwrap();
        assert_eq!(e[0].md.as_iap().pm_iap_config, 0xC0 | IAP_USR);
        assert_eq!(e[0].caps & PMC_CAP_USER, PMC_CAP_USER);
        let e = r("event=0xc0,umask=0x1,cmask=2,edge,inv,os", SKL, false).unwrap();
        assert_eq!(e.len(), 1, "qualified: no fixed counter");
        assert_eq!(
            e[0].md.as_iap().pm_iap_config,
            0xC0 | 0x100 | (2 << 24) | IAP_EDGE | IAP_INV | IAP_OS
        );
        let e = r("event=0x1c0,umask=0x2,inv,usr", ZEN, true).unwrap();
        assert_eq!(
            e[0].md.as_amd().pm_amd_config,
            0xC0 | (1 << 32) | 0x200 | AMD_PMC_INVERT | AMD_PMC_USR | AMD_PMC_INT
        );
        assert_eq!(e[0].caps & PMC_CAP_INTERRUPT, PMC_CAP_INTERRUPT);
        let e = r("cpu/event=0x3c,umask=0x0/", SKL, false).unwrap();
        assert_eq!(e[0].class, PMC_CLASS_IAF);
        let e = r("r01c2", ZEN, false).unwrap();
        assert_eq!(e[0].md.as_amd().pm_amd_config & 0xFFFF, 0x01C2);
        let e = r("cycles:k", SKL, true).unwrap();
        assert_eq!(e[0].md.as_iap().pm_iap_config, 0x3C | IAP_OS | IAP_INT);
        assert_eq!(
            r("cycles:p", SKL, false).unwrap_err().kind(),
            ErrorKind::NotSupported
        );
        assert_eq!(
            r("event=0x1000", ZEN, false).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
        assert_eq!(
            r("sched:sched_switch", SKL, false).unwrap_err().kind(),
            ErrorKind::NotSupported
        );
    }

    #[test]
    fn default_caps_follow_the_class() {
        let mut m = machine(SKL);
        for c in &mut m.classes {
            if c.pm_class == PMC_CLASS_IAP {
                c.pm_caps &= !PMC_CAP_WRITE;
            }
        }
        let spec: EventSpec = "branches,edge".parse().unwrap();
        let e = resolve(&spec, &m, false).unwrap();
        assert_eq!(
            e[0].caps & PMC_CAP_WRITE,
            0,
            "not requested from a class without it"
        );
        assert_eq!(e[0].caps & PMC_CAP_READ, PMC_CAP_READ);
        assert_eq!(
            e[0].caps & PMC_CAP_EDGE,
            PMC_CAP_EDGE,
            "needed capabilities stay"
        );
    }

    #[test]
    fn vendor_of_cputypes() {
        assert_eq!(Vendor::of(PMC_CPU_INTEL_CORE), Vendor::Intel);
        assert_eq!(Vendor::of(PMC_CPU_INTEL_SAPPHIRE_RAPIDS), Vendor::Intel);
        assert_eq!(Vendor::of(PMC_CPU_AMD_K8), Vendor::Amd);
        assert_eq!(Vendor::of(PMC_CPU_ARMV8_CORTEX_A53), Vendor::Other);
        assert_eq!(normalize("soft-clock.hard"), normalize("SOFT_CLOCK HARD"));
    }

    proptest::proptest! {
        #[test]
        fn resolve_never_panics(s in "[a-zA-Z0-9_.:,=/ -]{0,40}") {
            if let Ok(spec) = s.parse::<EventSpec>() {
                for cpu in [SKL, ZEN, VM] {
                    for sampling in [false, true] {
                        if let Ok(encs) = resolve(&spec, &machine(cpu), sampling) {
                            proptest::prop_assert!(!encs.is_empty());
                        }
                    }
                }
            }
        }

        #[test]
        fn raw_terms_never_panic(ev in 0u64..0x2000, umask in 0u64..0x200, cmask in 0u64..0x200, edge: bool, inv: bool) {
            let mut s = format!("event={ev:#x},umask={umask:#x},cmask={cmask:#x}");
            if edge { s.push_str(",edge"); }
            if inv { s.push_str(",inv"); }
            let spec: EventSpec = s.parse().unwrap();
            for cpu in [SKL, ZEN] {
                match resolve(&spec, &machine(cpu), false) {
                    Ok(e) => proptest::prop_assert!(ev <= 0xFFF && umask <= 0xFF && cmask <= 0xFF && !e.is_empty()),
                    Err(e) => proptest::prop_assert!(e.kind() == ErrorKind::InvalidArgument || e.kind() == ErrorKind::NoPmu),
                }
            }
        }
    }
}
