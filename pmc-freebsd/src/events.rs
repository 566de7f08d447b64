//! Event names -> `pmc_op_pmcallocate` fields (class, `pm_ev`, flags, caps,
//! machine-dependent config), per CPU vendor. Pure; unit-tested.
//!
//! `resolve` turns a spec into `Encoding`s for a [`Machine`] ([`Vendor`], CPUID);
//! `table_listing` lists them; `freebsd_pmclog_name` is how FreeBSD's tools name our PMCs.
//! Below: the table of portable names, CPU event names, and the naming rules.
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
//! | `cpu-clock`, `task-clock` | SOFT `CLOCK.HARD` (ticks of `kern.hz`; the backend reads and writes them as ns, `1e9 / kern.hz` a tick) | same | same |
//! | `context-switches`, `cpu-migrations` | not provided by hwpmc | | |
//! | `SOFT-CLOCK.HARD`, `PAGE_FAULT.READ`, ... | SOFT, by the names `PMC_OP_GETDYNEVENTINFO` returns | | |
//! | `TSC`, `tsc-tsc` | TSC class (system counting only) | | |
//! | `event=0x..,umask=0x..[,cmask=N,edge,inv,usr,os]`, `cpu/event=..,umask=../`, `rNNNN` | IAP raw | K8 raw | error `NoPmu` |
//!
//! `usr`/`os` (`:u`/`:k`) set the USR/OS bits (both when neither is given)
//! and request `PMC_CAP_USER`/`PMC_CAP_SYSTEM`. Sampling adds the INT bit
//! and `PMC_CAP_INTERRUPT`, as libpmc does.
//!
//! CPU event names (`inst_retired.any`, `ls_not_halted_cyc`, Arm's
//! `INST_RETIRED`, with or without an `iap-`/`iaf-`/`k8-`/`armv8-` class
//! prefix, and libpmc's aliases such as `dc-misses` or `LLC_REFERENCE`)
//! come from the shared [`pmc_events`] table, selected by the CPU's CPUID
//! (or, failing that, by `pm_cputype`). `cycles` stays core cycles (the
//! portable event); libpmc's `cycles` (the TSC) is `tsc` here, and the
//! encoding's name says which was counted.
//!
//! Hardware encodings for IAP/IAF/K8 set `PMC_F_EV_PMU` only for ABI major
//! 0x0A and later: 0x09 kernels reject unknown flags with EINVAL (K20
//! `hwpmc_mod.c:3890-3892`), for AMD as for Intel.
//!
//! ## How FreeBSD's own tools name our PMCs (issue 23 item 2)
//!
//! The kernel copies `pm_ev` into the log's PMCALLOCATE record; naming it
//! is userland's. 15-CURRENT's `lib/libpmc/pmclog.c`
//! (`fel1x-developer/freebsd-src`@2d614aa2 `pmclog_get_event()`): "if
//! ((pl_flags & PMC_F_EV_PMU) != 0) pl_evname =
//! pmc_pmu_event_get_by_idx(ps->ps_cpuid, pl_event); else if (pl_event <=
//! PMC_EVENT_LAST) pl_evname = _pmc_name_of_event(pl_event, ps->ps_arch)",
//! and "unknown event" (the whole log fails to parse) when that is NULL.
//! `pmc_pmu_event_get_by_idx()` is entry `pl_event` of libpmc's pmu-events
//! table, which `jevents.c` generates at build time in `nftw()` (BSD:
//! `fts_open(..., NULL)`, directory) order with nothing filtered; pmc's
//! table is sorted and filtered. So, with FreeBSD's `pmcstat -R`, `-G`,
//! `-g` on a log pmc's FreeBSD backend wrote:
//!
//! | PMC | `pm_ev` | FreeBSD names it |
//! |---|---|---|
//! | K8 core cycles (0x76), retired instructions (0xC0), no unit mask/cmask/edge/inv | `PMC_EV_K8_BU_CPU_CLK_UNHALTED` / `..._FR_RETIRED_X86_INSTRUCTIONS`, no EV_PMU | right: `BU_CPU_CLK_UNHALTED` / `FR_RETIRED_X86_INSTRUCTIONS` (`_pmc_name_of_event`'s K8 table) |
//! | any other K8 event, every IAP and IAF event, on 0x0A | pmc's table index, EV_PMU | **wrong** unless FreeBSD's build table lists the same events in the same order (nothing in the source makes it so) |
//! | IAF on 0x09 | `PMC_EV_IAF_*` | by a 13-era reader (which looks every `pm_ev` up in its table first): an out-of-range table read; by 15-CURRENT's: "unknown event", the log does not parse (`_pmc_name_of_event` lost its IAF table in 2018) |
//! | IAP / other K8 on 0x09 | 0 | a 13-era reader: table entry 0's name, **wrong** |
//! | SOFT | the kernel's code | right: the kernel writes PMCALLOCATEDYN with the name |
//!
//! pmc's own readers of the pmc-log format (`configure_log`) name every
//! PMC right: the event spec travels in the log. Of an hwpmc-format log
//! (`configure_hwpmc_log`) pmc's importer names the codes it knows and
//! shows the others as numbers, never another event's name. The test `freebsd_reader_names_k8_cycles_and_instructions`
//! computes the names as 15-CURRENT's reader does. Without EV_PMU, ARMV8
//! uses `PMC_EV_ARMV8_FIRST + n`, which `_pmc_name_of_event` names.

use crate::sys::abi::*;
use pmc_core::event::Term;
use pmc_core::{Error, ErrorKind, EventSource, EventSpec, Modifiers, Op, PortableEvent};
use pmc_events::{CpuId, Event, Kind, Table, X86Vendor};

/// The CPU vendor, from `pm_cputype`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vendor {
    /// `PMC_CPU_INTEL_*`.
    Intel,
    /// `PMC_CPU_AMD_K8` (all modern AMD).
    Amd,
    /// `PMC_CPU_ARMV8_*` (class ARMV8).
    Arm,
    /// Anything else (including `PMC_CPU_GENERIC`: no hardware PMCs).
    Other,
}

impl Vendor {
    /// The vendor of a `pmc_cputype`.
    pub fn of(cputype: u32) -> Vendor {
        match cputype {
            PMC_CPU_AMD_K8 => Vendor::Amd,
            PMC_CPU_INTEL_CORE..=PMC_CPU_INTEL_SAPPHIRE_RAPIDS => Vendor::Intel,
            PMC_CPU_ARMV8_CORTEX_A53..=0x6FF => Vendor::Arm,
            _ => Vendor::Other,
        }
    }
}

/// The CPU to select a pmu-events table by: the machine's CPUID (`cpu`,
/// from `Sys::cpu_id`) when its vendor agrees with the kernel's
/// `pm_cputype` and pmc-events has a table for it, else `None` (then
/// [`Machine::table`] uses `kern.hwpmc.cpuid` or `pm_cputype`).
pub(crate) fn host_cpu_for(cputype: u32, cpu: Option<CpuId>) -> Option<CpuId> {
    let cpu = cpu?;
    let agrees = matches!(
        (cpu, Vendor::of(cputype)),
        (
            CpuId::X86 {
                vendor: X86Vendor::Intel,
                ..
            },
            Vendor::Intel
        ) | (
            CpuId::X86 {
                vendor: X86Vendor::Amd,
                ..
            },
            Vendor::Amd
        ) | (CpuId::Arm { .. }, Vendor::Arm)
    );
    // A CPU newer than pmc-events' tables (e.g. GenuineIntel-6-CF, Emerald Rapids) is matched
    // by the kernel's pm_cputype instead, as a CPU of another vendor is.
    (agrees && pmc_events::Table::for_cpu(&cpu).is_some()).then_some(cpu)
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
    /// The CPU's identity (CPUID / MIDR), if known: selects the pmu-events
    /// table. CPUID when its vendor agrees with `pm_cputype`, else the kernel's `kern.hwpmc.cpuid`.
    pub cpu: Option<CpuId>,
    /// `kern.hwpmc.cpuid` (the kernel's `pmc_cpuid`) if the driver could
    /// read it. `Some("")` on AMD: a 2020-era `hwpmc_amd.c` on a CPU family
    /// other than 0x17, whose `amd_allocate_pmc()` takes only `pm_ev` codes
    /// of its own K8 table (see [`Machine::amd_legacy_only`]).
    pub kernel_cpuid: Option<String>,
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
    /// The pmu-events table for this CPU: by CPUID/MIDR when known, else by
    /// `pm_cputype` (Intel and Arm types name their core; `PMC_CPU_AMD_K8`
    /// covers every AMD family, so AMD needs the CPUID).
    pub fn table(&self) -> Option<Table> {
        if let Some(c) = &self.cpu {
            return Table::for_cpu(c);
        }
        let name = match self.cputype {
            PMC_CPU_INTEL_SKYLAKE => "skylake",
            PMC_CPU_INTEL_ICELAKE => "icelake",
            PMC_CPU_INTEL_ALDERLAKE => "alderlake",
            PMC_CPU_INTEL_SAPPHIRE_RAPIDS => "sapphirerapids",
            PMC_CPU_ARMV8_CORTEX_A57 => "cortex-a57-a72",
            PMC_CPU_ARMV8_CORTEX_A76 => "cortex-a76",
            _ if self.vendor() == Vendor::Arm => "armv8-common",
            _ => return None,
        };
        Table::by_name(name)
    }
    fn table_kind(&self) -> Option<Kind> {
        match self.vendor() {
            Vendor::Intel => Some(Kind::IntelCore),
            Vendor::Amd => Some(Kind::AmdZen),
            Vendor::Arm => Some(Kind::ArmV8),
            Vendor::Other => None,
        }
    }
    /// Whether the kernel's `amd_allocate_pmc()` ignores `pm_amd_config` and
    /// programs the PMC from `pm_ev`'s row of its `amd_event_codes[]`:
    /// "if (strlen(pmc_cpuid) != 0) { ... = a->pm_md.pm_amd.pm_amd_config;
    /// return (0); } pe = a->pm_ev;" (`freebsd/freebsd-src`
    /// `sys/dev/hwpmc/hwpmc_amd.c`@eb5956fd, same in the 2020 tree), and
    /// the 2020 tree's `pmc_amd_initialize()` fills `pmc_cpuid` only "if
    /// (CPUID_TO_FAMILY(cpu_id) == 0x17)": so on Zen 3/4 (family 0x19) under
    /// a 0x09 kernel the string is empty.
    pub fn amd_legacy_only(&self) -> bool {
        self.vendor() == Vendor::Amd && self.kernel_cpuid.as_deref() == Some("")
    }
    /// Whether the kernel takes `PMC_F_EV_PMU` (ABI major 0x0A and later;
    /// 0x09 kernels reject unknown flags: K20 `hwpmc_mod.c:3890-3892`).
    pub fn takes_ev_pmu(&self) -> bool {
        self.version >> 24 >= 0x0A
    }
}

/// One way to program an event: the `pmc_op_pmcallocate` fields other than
/// mode, CPU and count.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Encoding {
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
pub(crate) fn normalize(name: &str) -> String {
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

impl Raw {
    fn of(e: &Event) -> Raw {
        // The table's fixed-only spellings (event 0, umask 1/2) as the
        // encodings the kernel's IAF allocator pins to rows 0 and 1 (0xC0,
        // 0x3C; hwpmc_core.c `iaf_allocate_pmc`); 0/3 is already its REF.
        let (event, umask) = match e.intel_fixed_counter() {
            Some(0) => (0xC0, 0),
            Some(1) => (0x3C, 0),
            _ => (e.code.into(), e.umask.into()),
        };
        Raw {
            event,
            umask,
            cmask: e.cmask.into(),
            edge: e.edge,
            inv: e.inv,
            any: e.any,
        }
    }
}

/// What FreeBSD's own reader prints for a PMCALLOCATE record, computed
/// as its source does, not from pmc's table (issue 23 item 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FreeBsdName {
    /// A name libpmc has whatever its build.
    Named(&'static str),
    /// Entry `n` of the pmu-events table FreeBSD generated at build
    /// time (`lib/libpmc/pmu-events/jevents.c` walks the JSON with
    /// `nftw()`, i.e. `fts_open(..., NULL)`: directory order, nothing
    /// filtered): not computable from source; pmc's index is into its
    /// own sorted, filtered table, so this is a misnaming unless the
    /// two orders coincide.
    BuildTableEntry(u32),
    /// `printf("unknown event\n"); goto error;`: the whole log fails
    /// to parse.
    ParseError,
}

/// 15-CURRENT's `lib/libpmc/pmclog.c` (`fel1x-developer/freebsd-src`
/// @2d614aa2) `pmclog_get_event()`, PMCLOG_TYPE_PMCALLOCATE: "if
/// ((ev->pl_u.pl_a.pl_flags & PMC_F_EV_PMU) != 0) ... =
/// pmc_pmu_event_get_by_idx(ps->ps_cpuid, ev->pl_u.pl_a.pl_event); else
/// if (ev->pl_u.pl_a.pl_event <= PMC_EVENT_LAST) ... =
/// _pmc_name_of_event(ev->pl_u.pl_a.pl_event, ps->ps_arch); else ... =
/// NULL; if (... == NULL) { printf("unknown event\n"); goto error; }".
/// `_pmc_name_of_event()` (`lib/libpmc/libpmc.c`, the post-2018 file)
/// searches the K8, ARMV7/8, ..., TSC and SOFT tables and has no IAF or
/// IAP range any more; its table entries are `__PMC_EV(C,N) { #N,
/// PMC_EV_ ## C ## _ ## N }`, so a K8 code's name is the enum's suffix.
pub(crate) fn freebsd_pmclog_name(ev: u32, flags: u32) -> FreeBsdName {
    if flags & PMC_F_EV_PMU != 0 {
        return FreeBsdName::BuildTableEntry(ev);
    }
    match ev {
        PMC_EV_K8_BU_CPU_CLK_UNHALTED => FreeBsdName::Named("BU_CPU_CLK_UNHALTED"),
        PMC_EV_K8_FR_RETIRED_X86_INSTRUCTIONS => FreeBsdName::Named("FR_RETIRED_X86_INSTRUCTIONS"),
        PMC_EV_TSC_TSC => FreeBsdName::Named("TSC"),
        _ => FreeBsdName::ParseError,
    }
}

impl FreeBsdName {
    /// What a user of FreeBSD's `pmcstat -R` on an hwpmc-format log will
    /// see for this PMC, in words (the `freebsd-name` field of
    /// `Pmc::native_config`).
    pub(crate) fn describe(self) -> String {
        match self {
            FreeBsdName::Named(n) => format!("FreeBSD's pmcstat -R names it {n}"),
            FreeBsdName::BuildTableEntry(i) => format!(
                "FreeBSD's pmcstat -R names it by entry {i} of its own build-time pmu-events table, likely another event"
            ),
            FreeBsdName::ParseError => {
                "FreeBSD 15's pmcstat -R stops at it (\"unknown event\")".to_owned()
            }
        }
    }
}

/// `pm_ev` for an EV_PMU allocation: the index of the table event with this
/// encoding (what libpmc's `pmc_pmu_pmcallocate` writes), else 0.
fn pmu_index(machine: &Machine, raw: &Raw, fixed: Option<u8>) -> u32 {
    let Some(t) = machine.table() else { return 0 };
    t.events()
        .find(|e| match fixed {
            Some(f) => e.intel_fixed_counter() == Some(f),
            None => e.msr.is_none() && e.intel_fixed_counter().is_none() && Raw::of(e) == *raw,
        })
        .map_or(0, |e| e.index as u32)
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

/// The legacy K8 event code (`PMC_EV_K8_*`) of an AMD encoding, where
/// pmc knows one: the event select of a row of the kernel's
/// `amd_event_codes[]` with unit mask 0x00 (`freebsd/freebsd-src`
/// `sys/dev/hwpmc/hwpmc_amd.c`@eb5956fd), with no unit mask, threshold,
/// edge or invert asked for. Only the two codes `abi-amd64.json` pins.
fn k8_legacy_code(raw: &Raw) -> Option<u32> {
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
fn amd(
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

/// ARMV8: `pm_ev = PMC_EV_ARMV8_FIRST + n` without EV_PMU, which every
/// ABI version takes and `_pmc_name_of_event` names; the event number must
/// fit the enum's 0x00-0xFF range. USR/OS go in as capabilities.
fn arm(
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

/// A named CPU event (table name, class-prefixed name or libpmc alias).
/// `Ok(None)`: not a table name at all.
fn table_event(
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
        return Err(no_pmu(spec));
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

/// This CPU's table events and how each resolves (for `pmcstat -L`).
pub(crate) fn table_listing(machine: &Machine) -> Vec<(Event, Result<Vec<Encoding>, Error>)> {
    let Some(t) = machine.table() else {
        return Vec::new();
    };
    t.events()
        .map(|e| {
            let r = e
                .name
                .parse::<EventSpec>()
                .map_err(Error::from)
                .and_then(|spec| resolve(&spec, machine, false));
            (e, r)
        })
        .collect()
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
        Vendor::Amd => amd(spec, raw, &spec.modifiers, sampling, machine, name)?,
        Vendor::Arm => arm(spec, raw, sampling, machine, name)?,
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

/// Resolves an event spec to the encodings to try, in order of preference
/// (e.g. the IAF fixed counter, then a general IAP counter).
///
/// # Errors
/// [`ErrorKind::NoPmu`] for hardware events on a machine without PMCs,
/// [`ErrorKind::NoSuchEvent`] for unknown names,
/// [`ErrorKind::NotSupported`] for events or modifiers hwpmc lacks.
pub(crate) fn resolve(
    spec: &EventSpec,
    machine: &Machine,
    sampling: bool,
) -> Result<Vec<Encoding>, Error> {
    match &spec.source {
        EventSource::Portable(p) => resolve_portable(spec, *p, machine, sampling),
        EventSource::Raw(config) => hardware(
            spec,
            raw_config(*config),
            sampling,
            machine,
            &format!("r{config:x}"),
        ),
        EventSource::HwpmcTerms(terms) => {
            if let Some(first) = terms
                .first()
                .filter(|t| t.value.is_none() && !is_qualifier(&t.key))
            {
                return resolve_named_with_qualifiers(spec, first, &terms[1..], machine, sampling);
            }
            let raw = raw_from_terms(spec, terms)?;
            hardware(spec, raw, sampling, machine, &spec.to_string())
        }
        EventSource::Pmu { pmu, terms } if pmu == "cpu" => {
            let raw = raw_from_terms(spec, terms)?;
            hardware(spec, raw, sampling, machine, &spec.to_string())
        }
        EventSource::Hwpmc(name) => resolve_hwpmc_name(spec, name, machine, sampling),
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

/// The encoding name of the portable `instructions` on Intel (issue 23):
/// pmc counts INST_RETIRED.ANY on fixed counter 0 first, INST_RETIRED.ANY_P
/// on a programmable counter only when the fixed one is taken. Both count
/// retired instructions; the fixed counter leaves the programmable ones
/// free, and FreeBSD's own counting-mode set uses it too
/// (`lib/libpmc/libpmc_pmu_util.c`@0024f1aa `stat_mode_cntrs[]`:
/// "inst_retired.any"). libpmc's alias table maps the name elsewhere:
/// `pmu_intel_alias_table[]`: `{"instructions", "inst-retired.any_p"}`, and
/// `pmu_event_get()` compares with "strcasecmp(pe->name, event_name) == 0",
/// so that target (a `-` where the table's name has `_`) matches no table
/// entry on libpmc's pmu path; what libpmc then falls back to is in
/// `libpmc.c`, not read here.
const INSTRUCTIONS_NOTE: &str = "instructions (INST_RETIRED.ANY on the fixed counter, else INST_RETIRED.ANY_P; libpmc's `instructions` alias names inst_retired.any_p: same count)";

/// A portable event: a SOFT event, or its raw encoding for this CPU's vendor.
fn resolve_portable(
    spec: &EventSpec,
    p: PortableEvent,
    machine: &Machine,
    sampling: bool,
) -> Result<Vec<Encoding>, Error> {
    match p {
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
        hw => match portable_raw(hw, machine.vendor()) {
            // Say which `cycles` this is: libpmc's means the TSC.
            Some(raw) if hw == PortableEvent::Cycles => hardware(
                spec,
                raw,
                sampling,
                machine,
                "cycles (core cycles; libpmc's `cycles` is the TSC, spelled `tsc`)",
            ),
            // Say which `instructions` this is on Intel: libpmc's alias
            // names the programmable event (see INSTRUCTIONS_NOTE).
            Some(raw) if hw == PortableEvent::Instructions && machine.vendor() == Vendor::Intel => {
                hardware(spec, raw, sampling, machine, INSTRUCTIONS_NOTE)
            }
            Some(raw) => hardware(spec, raw, sampling, machine, hw.name()),
            None if machine.vendor() == Vendor::Other => Err(no_pmu(spec)),
            None => Err(err(
                ErrorKind::NotSupported,
                spec,
                "no encoding for this CPU",
                "use a raw event=..",
            )),
        },
    }
}

/// A Linux-style raw config (`rNNNN`, the x86 PERFEVTSEL layout) as a [`Raw`].
fn raw_config(config: u64) -> Raw {
    Raw {
        event: (config & 0xFF) | ((config >> 24) & 0xF00),
        umask: (config >> 8) & 0xFF,
        cmask: (config >> 24) & 0xFF,
        edge: config & (1 << 18) != 0,
        inv: config & (1 << 23) != 0,
        any: false,
    }
}

/// `name,qualifiers`: a named event (portable or from the pmu-events table)
/// with raw qualifiers `rest` on top of its encoding.
fn resolve_named_with_qualifiers(
    spec: &EventSpec,
    first: &Term,
    rest: &[Term],
    machine: &Machine,
    sampling: bool,
) -> Result<Vec<Encoding>, Error> {
    let named: EventSpec = first.key.parse().map_err(Error::from)?;
    let from_table = match &named.source {
        EventSource::Hwpmc(n) => table_event(spec, n, machine)?,
        _ => None,
    };
    let base = match named
        .as_portable()
        .and_then(|p| portable_raw(p, machine.vendor()))
        .or(from_table.as_ref().map(|(e, _)| Raw::of(e)))
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
            rest,
        ]
        .concat(),
    )?;
    let raw = Raw {
        umask: if extra.umask != 0 {
            extra.umask
        } else {
            base.umask
        },
        cmask: if extra.cmask != 0 {
            extra.cmask
        } else {
            base.cmask
        },
        edge: extra.edge || base.edge,
        inv: extra.inv || base.inv,
        any: extra.any || base.any,
        ..extra
    };
    hardware(spec, raw, sampling, machine, &first.key)
}

/// A hwpmc event name: the TSC, a SOFT event, or a pmu-events table event.
fn resolve_hwpmc_name(
    spec: &EventSpec,
    name: &str,
    machine: &Machine,
    sampling: bool,
) -> Result<Vec<Encoding>, Error> {
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
    if let Some((e, shown)) = table_event(spec, name, machine)? {
        return hardware(spec, Raw::of(&e), sampling, machine, &shown);
    }
    Err(err(
        ErrorKind::NoSuchEvent,
        spec,
        format!("`{name}` is not a SOFT, TSC or pmu-events table event on this machine"),
        "`Backend::list_events` lists the names; event=0x..,umask=0x.. gives a raw encoding",
    ))
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
            // hwpmc_arm64.c: ARMV8 class (PMCR_EL0.N counters; caps as the
            // driver's ARMV8_PMC_CAPS: READ|WRITE|USER|SYSTEM|INTERRUPT|...).
            Vendor::Arm => classes.push(pmc_classinfo {
                pm_class: PMC_CLASS_ARMV8,
                pm_caps: 0x7F,
                pm_width: 64,
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
            cpu: None,
            kernel_cpuid: None,
        }
    }

    fn r(spec: &str, cpu: u32, sampling: bool) -> Result<Vec<Encoding>, Error> {
        resolve(&spec.parse().expect("spec parses"), &machine(cpu), sampling)
    }

    const SKL: u32 = PMC_CPU_INTEL_SKYLAKE;
    const ZEN: u32 = PMC_CPU_AMD_K8;
    const VM: u32 = PMC_CPU_GENERIC;

    /// Issue 23: which `instructions` is counted says so where a user sees
    /// it (`-v`'s event field and `-L`'s description are the encoding
    /// names). Before: plain "IAF instructions" / "IAP instructions".
    #[test]
    fn intel_instructions_says_which_and_why() {
        let e = r("instructions", SKL, false).unwrap();
        assert!(
            e[0].name.starts_with("IAF ")
                && e[0].name.contains("INST_RETIRED.ANY on the fixed counter"),
            "{}",
            e[0].name
        );
        assert!(
            e[1].name.contains("libpmc") && e[1].name.contains("inst_retired.any_p"),
            "{}",
            e[1].name
        );
        // AMD has no such alias: the plain name.
        let a = r("instructions", ZEN, false).unwrap();
        assert_eq!(a[0].name, "K8 instructions");
    }

    #[test]
    fn intel_portable_events() {
        let e = r("instructions", SKL, false).unwrap();
        assert_eq!(e.len(), 2, "IAF fixed counter, then IAP");
        assert_eq!(e[0].class, PMC_CLASS_IAF);
        // EV_PMU: pm_ev is the pmu-events index (see pm_ev_is_the_pmu_table_index).
        assert_eq!(pmclog_name(&machine(SKL), &e[0]), "INST_RETIRED.ANY");
        assert_eq!(e[0].flags, PMC_F_EV_PMU);
        assert_eq!(e[0].md.as_iap().pm_iap_config, 0xC0 | IAP_USR | IAP_OS);
        assert_eq!(e[1].class, PMC_CLASS_IAP);
        let c = r("cycles", SKL, false).unwrap();
        assert_eq!(pmclog_name(&machine(SKL), &c[0]), "CPU_CLK_UNHALTED.THREAD");
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
    fn amd_portable_events_encodings() {
        for (name, cfg) in [
            ("cycles", 0x76u64),
            ("instructions", 0xC0),
            ("branches", 0xC2),
            ("branch-misses", 0xC3),
            ("cache-references", 0xFF60),
            ("cache-misses", 0x0964),
        ] {
            let e = r(name, ZEN, false).unwrap();
            // Cycles and instructions take their legacy K8 code (issue 23
            // item 2), then (for a kernel that wants EV_PMU) the table
            // index with EV_PMU, as the rest.
            let legacy = matches!(name, "cycles" | "instructions");
            assert_eq!(e.len(), if legacy { 2 } else { 1 }, "{name}");
            assert_eq!(e[0].class, PMC_CLASS_K8, "{name}");
            let flags = if legacy { 0 } else { PMC_F_EV_PMU };
            assert_eq!(e[0].flags, flags, "{name}");
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
        // A libpmc alias on an AMD CPU whose family is unknown (no CPUID):
        // known, but not resolvable here.
        assert_eq!(
            r("k8-dc-misses", ZEN, false).unwrap_err().kind(),
            ErrorKind::NotSupported
        );
        assert_eq!(
            r("k8-no-such-event", ZEN, false).unwrap_err().kind(),
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

    fn on(cputype: u32, cpu: Option<CpuId>, version: u32) -> Machine {
        Machine {
            cpu,
            version,
            ..machine(cputype)
        }
    }

    fn amd(family: u32, model: u32) -> Option<CpuId> {
        Some(CpuId::X86 {
            vendor: X86Vendor::Amd,
            family,
            model,
            stepping: 0,
        })
    }

    fn ra(spec: &str, m: &Machine) -> Result<Vec<Encoding>, Error> {
        resolve(&spec.parse().expect("spec parses"), m, false)
    }

    /// The name FreeBSD's pmclog.c gives a PMCALLOCATE record:
    /// `pmc_pmu_event_get_by_idx(cpuid, pl_event)` = table[pm_ev].name.
    fn pmclog_name(m: &Machine, e: &Encoding) -> &'static str {
        m.table()
            .and_then(|t| t.events().nth(e.ev as usize))
            .map_or("<out of range>", |x| x.name)
    }

    #[test]
    fn table_names_on_intel_amd_arm() {
        // Skylake by pm_cputype (no CPUID): inst_retired.any is fixed-only.
        let skl = machine(SKL);
        let e = ra("inst_retired.any", &skl).unwrap();
        assert_eq!(e[0].class, PMC_CLASS_IAF);
        let e = ra("iaf-instr_retired.any", &skl).unwrap();
        assert_eq!(e[0].class, PMC_CLASS_IAF);
        let e = ra("IAF-CPU_CLK_UNHALTED.REF", &skl).unwrap();
        assert_eq!((e.len(), e[0].class), (1, PMC_CLASS_IAF));
        let e = ra("BR_MISP_RETIRED.ALL_BRANCHES,usr", &skl).unwrap();
        assert_eq!(e[0].class, PMC_CLASS_IAP);
        assert_eq!(e[0].md.as_iap().pm_iap_config, 0xC5 | IAP_USR);
        let e = ra("iap-arith.divider_active", &skl).unwrap();
        assert_eq!(
            e[0].md.as_iap().pm_iap_config,
            0x14 | 0x100 | (1 << 24) | IAP_USR | IAP_OS
        );
        // Table cmask overridden by a qualifier, edge/inv added.
        let e = ra("arith.divider_active,cmask=3,edge,inv", &skl).unwrap();
        assert_eq!(
            e[0].md.as_iap().pm_iap_config,
            0x14 | 0x100 | (3 << 24) | IAP_EDGE | IAP_INV | IAP_USR | IAP_OS
        );
        // libpmc aliases (libpmc_pmu_util.c pmu_intel_alias_table).
        for (alias, want) in [
            ("LLC_REFERENCE", 0x4F2E),
            ("llc-reference", 0x4F2E),
            ("RESOURCE_STALL", 0x01A2),
            ("BRANCH_INSTRUCTION_RETIRED", 0x00C4),
            ("BRANCH_MISSES_RETIRED", 0x00C5),
            ("unhalted-reference-cycles", 0x013C),
        ] {
            let e = ra(alias, &skl).unwrap_or_else(|e| panic!("{alias}: {e}"));
            let iap = e.iter().find(|x| x.class == PMC_CLASS_IAP).unwrap();
            assert_eq!(iap.md.as_iap().pm_iap_config & 0xFFFF, want, "{alias}");
        }
        // ic-misses needs MSR_PEBS_FRONTEND, which IAP cannot program.
        assert_eq!(
            ra("ic-misses", &skl).unwrap_err().kind(),
            ErrorKind::NotSupported
        );
        // AMD Zen 3 by CPUID (family 25, model 0x21).
        let zen3 = on(ZEN, amd(25, 0x21), PMC_VERSION);
        let e = ra("ls_not_halted_cyc:u", &zen3).unwrap();
        assert_eq!(e[0].md.as_amd().pm_amd_config, 0x76 | AMD_PMC_USR);
        let e = ra("K8-EX_RET_INSTR", &zen3).unwrap();
        assert_eq!(e[0].md.as_amd().pm_amd_config & 0xFFFF, 0xC0);
        let e = ra("UNHALTED_CORE_CYCLES", &zen3).unwrap();
        assert_eq!(e[0].md.as_amd().pm_amd_config & 0xFF, 0x76);
        // Intel name on AMD: known, not supported here, never "unknown".
        let err = ra("inst_retired.any", &zen3).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotSupported, "{err}");
        assert!(err.message().contains("amdzen3"), "{err}");
        // Zen 1 (family 23 model 1) has its table (amdzen1).
        let zen1 = on(ZEN, amd(23, 1), PMC_VERSION);
        let e = ra("ex_ret_instr", &zen1).unwrap();
        assert_eq!(e[0].md.as_amd().pm_amd_config & 0xFFFF, 0xC0);
        // Family 0x18 (Hygon): no table here, still not "unknown".
        let hygon = on(ZEN, amd(24, 0), PMC_VERSION);
        assert_eq!(
            ra("ex_ret_instr", &hygon).unwrap_err().kind(),
            ErrorKind::NotSupported
        );
        // Arm Neoverse N1 by MIDR 0x410fd0c0; QEMU -cpu max (MIDR 0x000f0510)
        // gets the architected events.
        let n1 = on(
            PMC_CPU_ARMV8_CORTEX_A76,
            Some(CpuId::from_midr(0x410f_d0c0)),
            PMC_VERSION,
        );
        assert_eq!(n1.table().unwrap().name(), "neoverse-n1");
        let e = ra("inst_retired", &n1).unwrap();
        assert_eq!(
            (e[0].class, e[0].ev, e[0].flags),
            (PMC_CLASS_ARMV8, PMC_EV_ARMV8_FIRST + 8, 0)
        );
        let qemu = on(
            PMC_CPU_ARMV8_CORTEX_A53,
            Some(CpuId::from_midr(0x000f_0510)),
            0x0903_0000,
        );
        assert_eq!(qemu.table().unwrap().name(), "armv8-common");
        let e = ra("CPU_CYCLES,usr", &qemu).unwrap();
        assert_eq!(e[0].ev, PMC_EV_ARMV8_FIRST + 0x11);
        assert_eq!(e[0].caps & (PMC_CAP_USER | PMC_CAP_SYSTEM), PMC_CAP_USER);
        assert_eq!(
            ra("armv8-l1d_cache_refill", &qemu).unwrap()[0].ev,
            PMC_EV_ARMV8_FIRST + 3
        );
        assert_eq!(
            ra("cycles", &qemu).unwrap()[0].ev,
            PMC_EV_ARMV8_FIRST + 0x11
        );
        // A table name on a machine without PMCs: NoPmu, not "unknown".
        assert_eq!(
            ra("inst_retired.any", &machine(VM)).unwrap_err().kind(),
            ErrorKind::NoPmu
        );
        // Lower-case SOFT names and bare tsc (libpmc compares case-insensitively).
        assert_eq!(ra("clock.hard", &skl).unwrap()[0].ev, PMC_EV_SOFT_FIRST);
        assert_eq!(
            ra("page_fault.all", &skl).unwrap()[0].ev,
            PMC_EV_SOFT_FIRST + 3
        );
        assert_eq!(ra("tsc", &skl).unwrap()[0].class, PMC_CLASS_TSC);
        assert_eq!(ra("TSC", &zen3).unwrap()[0].class, PMC_CLASS_TSC);
        // `cycles` is core cycles and says so.
        let c = ra("cycles", &skl).unwrap();
        assert_eq!(
            c[0].ev,
            pmu_index(
                &skl,
                &Raw {
                    event: 0x3C,
                    ..Raw::default()
                },
                Some(1)
            )
        );
        assert!(
            c[0].name.contains("core cycles") && c[0].name.contains("tsc"),
            "{}",
            c[0].name
        );
    }

    /// Issue 14 item 2: 0x09 kernels reject PMC_F_EV_PMU with EINVAL (K20
    /// `hwpmc_mod.c:3890-3892` checks pm_flags against the flags it knows);
    /// before this fix K8 allocations always carried it.
    #[test]
    fn no_ev_pmu_for_amd_on_0x09_kernels() {
        let old = on(ZEN, amd(23, 0x31), 0x0903_0000);
        for name in ["instructions", "ex_ret_instr", "event=0xc0", "r76"] {
            let e = ra(name, &old).unwrap();
            assert_eq!(e[0].flags & PMC_F_EV_PMU, 0, "{name}");
        }
        let new = on(ZEN, amd(23, 0x31), PMC_VERSION);
        assert_eq!(ra("branches", &new).unwrap()[0].flags, PMC_F_EV_PMU);
    }

    /// Issue 14 item 9: FreeBSD's pmclog.c names every PMCALLOCATE record by
    /// `pmc_pmu_event_get_by_idx(cpuid, pl_event)` (no bounds check), and
    /// libpmc's `pmc_pmu_pmcallocate` writes `pm->pm_ev = idx` of the event
    /// in the CPU's pmu-events table. Before: IAP/K8 carried 0 (table entry
    /// 0's name) and IAF 0x10000 (out of range).
    #[test]
    fn pm_ev_is_the_pmu_table_index() {
        let skl = machine(SKL);
        let i = ra("instructions", &skl).unwrap();
        assert_eq!(i[0].class, PMC_CLASS_IAF);
        assert_eq!(pmclog_name(&skl, &i[0]), "INST_RETIRED.ANY");
        assert_eq!(pmclog_name(&skl, &i[1]), "INST_RETIRED.ANY_P");
        let c = ra("cpu_clk_unhalted.thread", &skl).unwrap();
        assert_eq!(pmclog_name(&skl, &c[0]), "CPU_CLK_UNHALTED.THREAD");
        let b = ra("branches", &skl).unwrap();
        assert_eq!(pmclog_name(&skl, &b[0]), "BR_INST_RETIRED.ALL_BRANCHES");
        let zen3 = on(ZEN, amd(25, 0x21), PMC_VERSION);
        let e = ra("branches", &zen3).unwrap();
        assert_eq!(pmclog_name(&zen3, &e[0]), "ex_ret_brn");
        // Without EV_PMU (0x09), IAF keeps the PMC_EV_IAF_* code that
        // `_pmc_name_of_event` knows.
        let old = on(SKL, None, 0x0903_0000);
        assert_eq!(
            ra("instructions", &old).unwrap()[0].ev,
            PMC_EV_IAF_INSTR_RETIRED_ANY
        );
    }

    /// Issue 23 item 2: which PMCs FreeBSD's own `pmcstat -R` names right.
    /// Before: every K8 encoding carried EV_PMU and pmc's table index, so
    /// FreeBSD named even cycles and instructions by its build table's
    /// entry at that index.
    #[test]
    fn freebsd_reader_names_k8_cycles_and_instructions() {
        let zen3 = on(ZEN, amd(25, 0x21), PMC_VERSION);
        for (name, want) in [
            ("cycles", "BU_CPU_CLK_UNHALTED"),
            ("instructions", "FR_RETIRED_X86_INSTRUCTIONS"),
            ("ls_not_halted_cyc", "BU_CPU_CLK_UNHALTED"),
            ("event=0xc0,usr", "FR_RETIRED_X86_INSTRUCTIONS"),
        ] {
            for sampling in [false, true] {
                let spec = name.parse().unwrap();
                let e = resolve(&spec, &zen3, sampling).unwrap();
                assert_eq!(
                    freebsd_pmclog_name(e[0].ev, e[0].flags),
                    FreeBsdName::Named(want),
                    "{name}"
                );
            }
        }
        // What stays misnamed, and says so in the docs: every other K8
        // event and every IAP/IAF event on 0x0A (FreeBSD's build table);
        // a 0x09 IAF code is unknown to the post-2018 libpmc.
        let e = ra("branches", &zen3).unwrap();
        assert!(matches!(
            freebsd_pmclog_name(e[0].ev, e[0].flags),
            FreeBsdName::BuildTableEntry(_)
        ));
        let skl = machine(SKL);
        for name in ["instructions", "branches", "cpu_clk_unhalted.thread"] {
            for enc in ra(name, &skl).unwrap() {
                assert!(
                    matches!(
                        freebsd_pmclog_name(enc.ev, enc.flags),
                        FreeBsdName::BuildTableEntry(_)
                    ),
                    "{name}"
                );
            }
        }
        let old = on(SKL, None, 0x0903_0000);
        let i = ra("instructions", &old).unwrap();
        assert_eq!(
            freebsd_pmclog_name(i[0].ev, i[0].flags),
            FreeBsdName::ParseError
        );
    }

    /// Issue 23 item 5: a 2020-era kernel on Zen 3/4 has no `pmc_cpuid`
    /// (`kern.hwpmc.cpuid` is empty), so `amd_allocate_pmc()` reads
    /// `pm_ev` from its K8 table: cycles and instructions take their K8
    /// codes without EV_PMU, everything else is refused by name.
    #[test]
    fn amd_without_a_kernel_cpuid_takes_k8_codes() {
        let m = Machine {
            kernel_cpuid: Some(String::new()),
            ..on(ZEN, amd(25, 0x21), 0x0903_0000)
        };
        assert!(m.amd_legacy_only());
        let c = ra("cycles", &m).unwrap();
        assert_eq!((c[0].ev, c[0].flags), (PMC_EV_K8_BU_CPU_CLK_UNHALTED, 0));
        let i = resolve(&"instructions".parse().unwrap(), &m, true).unwrap();
        assert_eq!(i[0].ev, PMC_EV_K8_FR_RETIRED_X86_INSTRUCTIONS);
        let e = ra("branches", &m).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotSupported, "{e}");
        assert!(e.message().contains("kern.hwpmc.cpuid"), "{e}");
        // Family 0x17 under the same kernel has a cpuid: anything goes.
        let zen2 = Machine {
            kernel_cpuid: Some("AuthenticAMD-23-31".into()),
            ..on(ZEN, amd(23, 0x31), 0x0903_0000)
        };
        assert!(!zen2.amd_legacy_only());
        assert_eq!(ra("branches", &zen2).unwrap()[0].ev, 0);
    }

    #[test]
    fn vendor_of_cputypes() {
        assert_eq!(Vendor::of(PMC_CPU_INTEL_CORE), Vendor::Intel);
        assert_eq!(Vendor::of(PMC_CPU_INTEL_SAPPHIRE_RAPIDS), Vendor::Intel);
        assert_eq!(Vendor::of(PMC_CPU_AMD_K8), Vendor::Amd);
        assert_eq!(Vendor::of(PMC_CPU_ARMV8_CORTEX_A53), Vendor::Arm);
        assert_eq!(Vendor::of(PMC_CPU_GENERIC), Vendor::Other);
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
