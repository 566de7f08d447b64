//! Event names -> `pmc_op_pmcallocate` fields (class, `pm_ev`, flags, caps,
//! machine-dependent config), per CPU vendor. Pure; unit-tested.
//!
//! Map: `mod.rs` ([`Machine`], [`Vendor`], `Encoding`, `resolve` and its
//! dispatch (the table of portable names and the naming rules in its
//! documentation), `FreeBsdName` and `freebsd_pmclog_name` (how FreeBSD's
//! own tools name our PMCs), `table_listing`, shared helpers); `table.rs`
//! (names and fields to a `Raw`: pmu-events table, portable events, raw
//! terms); `intel.rs` (IAF/IAP), `amd.rs` (K8, legacy codes), `arm.rs`
//! (ARMV8): a `Raw` to encodings; `soft.rs` (SOFT events, the TSC);
//! `tests.rs` (unit tests).

use crate::sys::abi::*;
use pmc_core::event::Term;
use pmc_core::{Error, ErrorKind, EventSource, EventSpec, Modifiers, Op, PortableEvent};
use pmc_events::{CpuId, Event, Kind, Table, X86Vendor};

mod amd;
mod arm;
mod intel;
mod soft;
mod table;

use amd::amd;
use arm::arm;
use intel::intel;
use soft::{soft, tsc};
use table::{portable_raw, raw_config, raw_from_terms, table_event};

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
            PMC_CPU_INTEL_ATOM => "bonnell",
            PMC_CPU_INTEL_SANDYBRIDGE => "sandybridge",
            PMC_CPU_INTEL_IVYBRIDGE => "ivybridge",
            PMC_CPU_INTEL_SANDYBRIDGE_XEON => "jaketown",
            PMC_CPU_INTEL_IVYBRIDGE_XEON => "ivytown",
            PMC_CPU_INTEL_HASWELL => "haswell",
            PMC_CPU_INTEL_ATOM_SILVERMONT => "silvermont",
            PMC_CPU_INTEL_NEHALEM_EX => "nehalemex",
            PMC_CPU_INTEL_WESTMERE_EX => "westmereex",
            PMC_CPU_INTEL_HASWELL_XEON => "haswellx",
            PMC_CPU_INTEL_BROADWELL => "broadwell",
            PMC_CPU_INTEL_BROADWELL_XEON => "broadwellx",
            PMC_CPU_INTEL_SKYLAKE => "skylake",
            PMC_CPU_INTEL_SKYLAKE_XEON => "skylakex",
            PMC_CPU_INTEL_ATOM_GOLDMONT => "goldmont",
            PMC_CPU_INTEL_ICELAKE => "icelake",
            PMC_CPU_INTEL_ICELAKE_XEON => "icelakex",
            PMC_CPU_INTEL_ALDERLAKE => "alderlake",
            PMC_CPU_INTEL_ATOM_GOLDMONT_P => "goldmontplus",
            PMC_CPU_INTEL_EMERALD_RAPIDS => "emeraldrapids",
            PMC_CPU_INTEL_ALDERLAKEN => "alderlaken",
            PMC_CPU_INTEL_GRANITE_RAPIDS => "graniterapids",
            PMC_CPU_INTEL_METEOR_LAKE => "meteorlake",
            PMC_CPU_INTEL_SAPPHIRE_RAPIDS => "sapphirerapids",
            PMC_CPU_ARMV8_CORTEX_A53 => "cortex-a53",
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
    /// The CPU, if hwpmc runs without hardware counters because its
    /// `pmc_intel_initialize()` does not know the model (freebsd-audit-3
    /// finding I): `pm_cputype` is `PMC_CPU_GENERIC` (SOFT and TSC only)
    /// while `kern.hwpmc.cpuid` names an Intel CPU, which the kernel writes
    /// before it looks the model up (`zdleaf/freebsd-morello`
    /// `hwpmc_intel.c`@5909242b and `fel1x-developer/freebsd-src`
    /// `hwpmc_intel.c`@2d614aa2: "snprintf(pmc_cpuid, ...,
    /// \"GenuineIntel-%d-%02X-%X\", family, model, stepping);" first, then
    /// "if ((int)cputype == -1) { printf(\"pmc: Unknown Intel CPU.\\n\");
    /// return (NULL); }", and hwpmc falls back to the generic CPU).
    pub fn unknown_cpu(&self) -> Option<UnknownCpu> {
        if self.cputype != PMC_CPU_GENERIC {
            return None;
        }
        let cpuid = self.kernel_cpuid.as_deref()?;
        match CpuId::from_hwpmc_cpuid(cpuid)? {
            CpuId::X86 {
                vendor: X86Vendor::Intel,
                family: 6,
                model,
                ..
            } => Some(UnknownCpu {
                cpuid: cpuid.trim_end_matches('\0').to_owned(),
                model,
                name: intel_model_name(model),
                version: self.version,
            }),
            _ => None,
        }
    }

    /// Whether the kernel takes `PMC_F_EV_PMU` (ABI major 0x0A and later;
    /// 0x09 kernels reject unknown flags: K20 `hwpmc_mod.c:3890-3892`).
    pub fn takes_ev_pmu(&self) -> bool {
        self.version >> 24 >= 0x0A
    }
}

/// An Intel CPU hwpmc runs without hardware counters on
/// ([`Machine::unknown_cpu`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownCpu {
    /// `kern.hwpmc.cpuid` (`GenuineIntel-6-8F-8`).
    pub cpuid: String,
    /// The model number.
    pub model: u32,
    /// Its name, for the models FreeBSD 14-era kernels are known to lack.
    pub name: Option<&'static str>,
    /// `PMC_VERSION` of the kernel.
    pub version: u32,
}

/// Intel family-6 models that `pmc_intel_initialize()` of the 2019-2021
/// trees and of 15-CURRENT (`fel1x-developer/freebsd-src`
/// `hwpmc_intel.c`@2d614aa2, whose newest cases are "case 0x97: case 0x9A:
/// cputype = PMC_CPU_INTEL_ALDERLAKE;" and the Tremont/Ice Lake ones) has no
/// case for, though pmc-events has their tables.
const MODELS_FREEBSD_14_LACKS: &[(u32, &str)] = &[
    (0x8F, "Sapphire Rapids"),
    (0xCF, "Emerald Rapids"),
    (0xAD, "Granite Rapids"),
    (0xAE, "Granite Rapids-D"),
    (0xAA, "Meteor Lake"),
    (0xAC, "Meteor Lake"),
    (0xB7, "Raptor Lake"),
    (0xBA, "Raptor Lake"),
    (0xBF, "Raptor Lake"),
];

fn intel_model_name(model: u32) -> Option<&'static str> {
    MODELS_FREEBSD_14_LACKS
        .iter()
        .find(|(m, _)| *m == model)
        .map(|(_, n)| *n)
}

impl UnknownCpu {
    /// What to tell the user, by kernel version.
    pub fn explain(&self) -> String {
        let what = match self.name {
            Some(n) => format!("Intel model {:#04X} ({n})", self.model),
            None => format!("Intel model {:#04X}", self.model),
        };
        let era = if self.version < 0x0A03_0000 {
            "as in FreeBSD 14 and 15-CURRENT (hwpmc_intel.c has no case for it)"
        } else {
            "this kernel's hwpmc_intel.c has no case for it"
        };
        format!(
            "hwpmc (PMC_VERSION {:#010x}) does not know this CPU, {what} ({}): {era}, so it runs with the SOFT class only (hwpmc's generic CPU) and no hardware event can be counted",
            self.version, self.cpuid
        )
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

fn no_pmu(spec: &EventSpec, machine: &Machine) -> Error {
    match machine.unknown_cpu() {
        Some(u) => err(
            ErrorKind::NoPmu,
            spec,
            u.explain(),
            "use software events (page-faults, cpu-clock, SOFT-CLOCK.HARD), or a FreeBSD kernel whose hwpmc knows this CPU",
        ),
        None => err(
            ErrorKind::NoPmu,
            spec,
            "this machine has no hardware PMCs hwpmc can use (a VM without a virtual PMU, or an unsupported CPU)",
            "use software events (page-faults, cpu-clock, SOFT-CLOCK.HARD) or run on hardware with PMCs",
        ),
    }
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
///
/// The kernel copies `pm_ev` into the log's PMCALLOCATE record; naming it
/// is userland's. 15-CURRENT's `lib/libpmc/pmclog.c`
/// (`fel1x-developer/freebsd-src`@2d614aa2 `pmclog_get_event()`): "if
/// ((pl_flags & PMC_F_EV_PMU) != 0) pl_evname =
/// pmc_pmu_event_get_by_idx(ps->ps_cpuid, pl_event); else if (pl_event <=
/// PMC_EVENT_LAST) pl_evname = _pmc_name_of_event(pl_event, ps->ps_arch)",
/// and "unknown event" (the whole log fails to parse) when that is NULL.
/// `pmc_pmu_event_get_by_idx()` is entry `pl_event` of libpmc's pmu-events
/// table, which `jevents.c` generates at build time in `nftw()` (BSD:
/// `fts_open(..., NULL)`, directory) order with nothing filtered; pmc's
/// table is sorted and filtered. So, with FreeBSD's `pmcstat -R`, `-G`,
/// `-g` on a log pmc's FreeBSD backend wrote:
///
/// | PMC | `pm_ev` | FreeBSD names it |
/// |---|---|---|
/// | K8 core cycles (0x76), retired instructions (0xC0), no unit mask/cmask/edge/inv | `PMC_EV_K8_BU_CPU_CLK_UNHALTED` / `..._FR_RETIRED_X86_INSTRUCTIONS`, no EV_PMU | right: `BU_CPU_CLK_UNHALTED` / `FR_RETIRED_X86_INSTRUCTIONS` (`_pmc_name_of_event`'s K8 table) |
/// | any other K8 event, every IAP and IAF event, on 0x0A | pmc's table index, EV_PMU | **wrong** unless FreeBSD's build table lists the same events in the same order (nothing in the source makes it so) |
/// | IAF on 0x09 | `PMC_EV_IAF_*` | by a 13-era reader (which looks every `pm_ev` up in its table first): an out-of-range table read; by 15-CURRENT's: "unknown event", the log does not parse (`_pmc_name_of_event` lost its IAF table in 2018) |
/// | IAP / other K8 on 0x09 | 0 | a 13-era reader: table entry 0's name, **wrong** |
/// | SOFT | the kernel's code | right: the kernel writes PMCALLOCATEDYN with the name |
///
/// pmc's own readers of the pmc-log format (`configure_log`) name every
/// PMC right: the event spec travels in the log. Of an hwpmc-format log
/// (`configure_hwpmc_log`) pmc's importer names the codes it knows and
/// shows the others as numbers, never another event's name. The test `freebsd_reader_names_k8_cycles_and_instructions`
/// computes the names as 15-CURRENT's reader does. Without EV_PMU, ARMV8
/// uses `PMC_EV_ARMV8_FIRST + n`, which `_pmc_name_of_event` names.
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

fn priv_bits(m: &Modifiers) -> (bool, bool) {
    // Neither or both requested: count both (libpmc).
    (m.counts_user(), m.counts_kernel())
}

/// What perf's grammar has and hwpmc does not: its modifiers beyond `u`/`k`/`h`/`p`
/// (`PMC_OP_PMCALLOCATE` takes privilege flags only: `PMC_F_*`, `pm_caps`' USER/SYSTEM)
/// and its `duration_time` tool event.
fn refuse_perf_only(spec: &EventSpec) -> Result<(), Error> {
    if spec.is_duration_time() {
        return Err(err(
            ErrorKind::NotSupported,
            spec,
            "duration_time is perf stat's tool event, the run's wall-clock time: no PMC counts it",
            "time the work with std::time::Instant (pmcstat -e duration_time does)",
        ));
    }
    let m = &spec.modifiers;
    let extras: Vec<&str> = [
        (m.max_precise, ":P (highest precision)"),
        (m.guest, ":G (guest only)"),
        (m.host, ":H (host only)"),
        (m.exclude_idle, ":I (not while idle)"),
        (m.pinned, ":D (pinned)"),
        (m.exclusive, ":e (exclusive)"),
        (m.sample_read, ":S (counts with each sample)"),
        (m.weak_group, ":W (weak group)"),
    ]
    .iter()
    .filter(|(on, _)| *on)
    .map(|(_, what)| *what)
    .collect();
    if extras.is_empty() {
        return Ok(());
    }
    Err(err(
        ErrorKind::NotSupported,
        spec,
        format!(
            "hwpmc has no {}: its PMCs take user and kernel mode (:u/:k, usr/os) only",
            extras.join(", ")
        ),
        "drop the modifier (perf's modifiers beyond u, k, h and p are Linux's)",
    ))
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
        return Err(no_pmu(spec, machine));
    }
    Ok(out)
}

/// Resolves an event spec to the encodings to try, in order of preference
/// (e.g. the IAF fixed counter, then a general IAP counter).
///
/// | spec | Intel (IAF/IAP) | AMD (K8, `PMC_F_EV_PMU`) | no PMU |
/// |---|---|---|---|
/// | `cycles` | IAF fixed 1 (`0x3c`), else IAP `0x3c` | `0x76` | error `NoPmu` |
/// | `instructions` | IAF fixed 0 (`0xc0`), else IAP `0xc0` | `0xc0` | error `NoPmu` |
/// | `branches` | IAP `0xc4` | `0xc2` | error `NoPmu` |
/// | `branch-misses` | IAP `0xc5` | `0xc3` | error `NoPmu` |
/// | `cache-references` | IAP `0x2e`/`0x4f` | `0x60`/`0xff` | error `NoPmu` |
/// | `cache-misses` | IAP `0x2e`/`0x41` | `0x64`/`0x09` | error `NoPmu` |
/// | `page-faults` | SOFT `PAGE_FAULT.ALL` | same | same |
/// | `cpu-clock`, `task-clock` | SOFT `CLOCK.HARD` (ticks of `kern.hz`; the backend reads and writes them as ns, `1e9 / kern.hz` a tick) | same | same |
/// | `context-switches`, `cpu-migrations` | not provided by hwpmc | | |
/// | `SOFT-CLOCK.HARD`, `PAGE_FAULT.READ`, ... | SOFT, by the names `PMC_OP_GETDYNEVENTINFO` returns | | |
/// | `TSC`, `tsc-tsc` | TSC class (system counting only) | | |
/// | `event=0x..,umask=0x..[,cmask=N,edge,inv,usr,os]`, `cpu/event=..,umask=../`, `rNNNN` | IAP raw | K8 raw | error `NoPmu` |
///
/// `usr`/`os` (`:u`/`:k`) set the USR/OS bits (both when neither is given)
/// and request `PMC_CAP_USER`/`PMC_CAP_SYSTEM`. Sampling adds the INT bit
/// and `PMC_CAP_INTERRUPT`, as libpmc does.
///
/// CPU event names (`inst_retired.any`, `ls_not_halted_cyc`, Arm's
/// `INST_RETIRED`, with or without an `iap-`/`iaf-`/`k8-`/`armv8-` class
/// prefix, and libpmc's aliases such as `dc-misses` or `LLC_REFERENCE`)
/// come from the shared [`pmc_events`] table, selected by the CPU's CPUID
/// (or, failing that, by `pm_cputype`). `cycles` stays core cycles (the
/// portable event); libpmc's `cycles` (the TSC) is `tsc` here, and the
/// encoding's name says which was counted.
///
/// Hardware encodings for IAP/IAF/K8 set `PMC_F_EV_PMU` only for ABI major
/// 0x0A and later: 0x09 kernels reject unknown flags with EINVAL (K20
/// `hwpmc_mod.c:3890-3892`), for AMD as for Intel.
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
    refuse_perf_only(spec)?;
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
            None if machine.vendor() == Vendor::Other => Err(no_pmu(spec, machine)),
            None => Err(err(
                ErrorKind::NotSupported,
                spec,
                "no encoding for this CPU",
                "use a raw event=..",
            )),
        },
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
mod tests;
