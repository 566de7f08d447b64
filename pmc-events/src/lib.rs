//! The CPU's own named performance events, for both pmc backends.
//!
//! A [`Table`] of [`Event`]s per CPU, chosen by [`CpuId`] (`sys` reads it); [`lookup`],
//! [`is_known`] and [`tables_with`] find names; [`libpmc_alias`] and its kin map libpmc's
//! names. Below: the 61 tables, how one is selected, an example.
//!
//! perf (Linux) and libpmc (FreeBSD) take their model-specific event names
//! (`inst_retired.any`, `ls_not_halted_cyc`, Arm's `inst_retired`) from the
//! same data: the Linux kernel's `tools/perf/pmu-events/arch` JSON. This
//! crate carries a compact, generated copy of a representative subset
//! (`src/generated.rs`, made by `gen/gen.py`; sources and licences in
//! `gen/SOURCES.md`), 61 tables, every one FreeBSD's own mapfile has where
//! the kernel's JSON has it:
//! - Intel client cores: Sandy Bridge, Ivy Bridge, Haswell, Broadwell,
//!   Skylake, Ice Lake, Tiger Lake, Rocket Lake, Alder Lake (P-cores) and
//!   Meteor Lake; Nehalem-EP, Westmere-EP;
//! - Intel Atom cores: Bonnell, Silvermont, Goldmont (Plus), Elkhart Lake,
//!   Snow Ridge, Alder Lake-N;
//! - Intel servers: Nehalem-EX, Westmere-EX, Jaketown, Ivytown, Haswell-X,
//!   Broadwell-X/DE, Knights Landing, Skylake-X, Cascade Lake-X, Ice Lake-X,
//!   Sapphire, Emerald and Granite Rapids;
//! - AMD Zen 1 to Zen 5 (Hygon family 24 takes Zen 1's, as FreeBSD maps it);
//! - Arm Cortex-A35/A53/A55/A57/A72/A73/A75/A76/A77/A78/A510/A710/X1/X2,
//!   A65/E1, Neoverse N1/V1/N2/V2, ThunderX2, A64FX, HiP08, eMAG, and Arm's
//!   architected PMUv3 events for any other Arm core.
//!
//! The table is selected by CPUID (x86 vendor, family, model, stepping), as
//! perf's `mapfile.csv` does, or by MIDR (Arm implementer and part number).
//! Names compare ASCII-case-insensitively, as libpmc's `strcasecmp` and
//! perf do. `no_std`, no dependencies, no parsing at run time: the table is
//! static arrays over one string blob.
//!
//! ```
//! use pmc_events::{CpuId, Table};
//! let zen3 = CpuId::X86 { vendor: pmc_events::X86Vendor::Amd, family: 25, model: 0x21, stepping: 0 };
//! let t = Table::for_cpu(&zen3).unwrap();
//! assert_eq!(t.name(), "amdzen3");
//! let e = t.find("EX_RET_INSTR").unwrap();
//! assert_eq!((e.code, e.umask), (0xc0, 0));
//! ```
#![warn(unreachable_pub, unnameable_types)]
#![no_std]

#[rustfmt::skip]
mod generated;
pub mod sys;

use generated::{ARM_PARTS, EVENTS, STRINGS, TABLES, X86_MODELS};

/// Which PMU programming model a table's encodings are for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Intel core PMU (`IA32_PERFEVTSELx`; FreeBSD classes IAP/IAF).
    IntelCore,
    /// AMD core PMU (`PERF_CTL`; FreeBSD class K8).
    AmdZen,
    /// Arm PMUv3 (`PMEVTYPER`; FreeBSD class ARMV8).
    ArmV8,
}

/// The bytes of one row of `generated::EVENTS` (gen.py's `EVENT_ROW`): a byte-string
/// literal, which rustc takes in a few milliseconds, where 7,247 struct expressions took about
/// a third of a second of every build of this crate. Public for the size test only.
#[doc(hidden)]
pub const EVENT_ROW: usize = 20;

/// One row of `generated::EVENTS`, decoded.
#[derive(Debug, Clone, Copy, Default)]
struct RawEvent {
    name: u32,
    name_len: u8,
    desc: u32,
    desc_len: u16,
    code: u16,
    umask: u8,
    cmask: u8,
    flags: u8,
    config1: u32,
}

impl RawEvent {
    /// Row `i` (little-endian fields, in gen.py's `struct.pack("<IBIHHBBBI")` order); `None`
    /// past the end.
    fn at(i: usize) -> Option<RawEvent> {
        let b = EVENTS.get(i.checked_mul(EVENT_ROW)?..)?.get(..EVENT_ROW)?;
        let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        Some(RawEvent {
            name: u32_at(0),
            name_len: b[4],
            desc: u32_at(5),
            desc_len: u16_at(9),
            code: u16_at(11),
            umask: b[13],
            cmask: b[14],
            flags: b[15],
            config1: u32_at(16),
        })
    }

    fn name(&self) -> &'static str {
        s(self.name, self.name_len.into())
    }
}

#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct RawTable {
    name: &'static str,
    source: &'static str,
    kind: Kind,
    start: u16,
    end: u16,
}

const FLAG_EDGE: u8 = 1;
const FLAG_INV: u8 = 2;
const FLAG_ANY: u8 = 4;
const FLAG_LDLAT: u8 = 8;
const FLAG_FRONTEND: u8 = 16;

/// An extra MSR an Intel event needs (perf puts its value in `config1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtraMsr {
    /// `MSR_PEBS_LD_LAT_THRESHOLD` (0x3F6): perf's `ldlat`.
    LoadLatency(u32),
    /// `MSR_PEBS_FRONTEND` (0x3F7): perf's `frontend`.
    Frontend(u32),
}

/// One named event of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// The name as the JSON spells it (`INST_RETIRED.ANY`, `ex_ret_instr`,
    /// `INST_RETIRED`).
    pub name: &'static str,
    /// A one-line description (empty where the licence of the source text
    /// did not allow copying it: AMD and Arm, see `gen/SOURCES.md`).
    pub desc: &'static str,
    /// Event select (Intel 8 bits, AMD 12 bits, Arm 16-bit event number).
    pub code: u16,
    /// Unit mask (x86).
    pub umask: u8,
    /// Counter mask / threshold (x86).
    pub cmask: u8,
    /// Edge detect (x86).
    pub edge: bool,
    /// Invert the counter-mask comparison (x86).
    pub inv: bool,
    /// AnyThread (Intel, pre-Ice Lake).
    pub any: bool,
    /// An extra MSR the event needs, if any.
    pub msr: Option<ExtraMsr>,
    /// Position in its table (stable for a given generated table).
    pub index: usize,
    /// The table's kind.
    pub kind: Kind,
}

impl Event {
    /// The x86 `PERFEVTSEL` bits perf's `cpu` PMU formats put in
    /// `attr.config` (`event:0-7,32-35`, `umask:8-15`, `edge:18`, `any:21`,
    /// `inv:23`, `cmask:24-31`), without USR/OS/INT/EN. For Arm, the event
    /// number (`event:0-15`).
    pub fn config(&self) -> u64 {
        match self.kind {
            Kind::ArmV8 => u64::from(self.code),
            Kind::IntelCore | Kind::AmdZen => {
                let ev = u64::from(self.code);
                (ev & 0xFF)
                    | ((ev & 0xF00) << 24)
                    | (u64::from(self.umask) << 8)
                    | (u64::from(self.edge) << 18)
                    | (u64::from(self.any) << 21)
                    | (u64::from(self.inv) << 23)
                    | (u64::from(self.cmask) << 24)
            }
        }
    }
    /// perf's `attr.config1` (the extra MSR's value), 0 if none.
    pub fn config1(&self) -> u64 {
        match self.msr {
            Some(ExtraMsr::LoadLatency(v) | ExtraMsr::Frontend(v)) => u64::from(v),
            None => 0,
        }
    }
    /// For Intel events only counted by a fixed counter (no event select:
    /// `INST_RETIRED.ANY` umask 1, `CPU_CLK_UNHALTED.THREAD` umask 2,
    /// `CPU_CLK_UNHALTED.REF_TSC` umask 3), the fixed counter's number.
    pub fn intel_fixed_counter(&self) -> Option<u8> {
        (self.kind == Kind::IntelCore && self.code == 0 && (1..=3).contains(&self.umask))
            .then(|| self.umask - 1)
    }
}

fn s(off: u32, len: usize) -> &'static str {
    let off = off as usize;
    STRINGS.get(off..off + len).unwrap_or("")
}

/// The order of the generated tables: by name with ASCII letters lowercased.
fn cmp_ignore_ascii_case(a: &str, b: &str) -> core::cmp::Ordering {
    a.bytes()
        .map(|c| c.to_ascii_lowercase())
        .cmp(b.bytes().map(|c| c.to_ascii_lowercase()))
}

fn event(i: usize, kind: Kind, start: usize) -> Event {
    let r = RawEvent::at(i).unwrap_or_default();
    Event {
        name: r.name(),
        desc: s(r.desc, r.desc_len.into()),
        code: r.code,
        umask: r.umask,
        cmask: r.cmask,
        edge: r.flags & FLAG_EDGE != 0,
        inv: r.flags & FLAG_INV != 0,
        any: r.flags & FLAG_ANY != 0,
        msr: if r.flags & FLAG_LDLAT != 0 {
            Some(ExtraMsr::LoadLatency(r.config1))
        } else if r.flags & FLAG_FRONTEND != 0 {
            Some(ExtraMsr::Frontend(r.config1))
        } else {
            None
        },
        index: i - start,
        kind,
    }
}

/// x86 CPU vendors with tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum X86Vendor {
    /// `GenuineIntel`.
    Intel,
    /// `AuthenticAMD` (and `HygonGenuine`, which libpmc treats as AMD).
    Amd,
    /// Any other vendor string.
    Other,
}

/// What identifies a CPU model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuId {
    /// x86: CPUID vendor and the display family/model/stepping (as
    /// `/proc/cpuinfo` and FreeBSD's `kern.hwpmc.cpuid` print them).
    X86 {
        /// Vendor.
        vendor: X86Vendor,
        /// Display family (`cpu family`, e.g. 6, 25).
        family: u32,
        /// Display model (`model`, e.g. 0x55).
        model: u32,
        /// Stepping.
        stepping: u32,
    },
    /// Arm: `MIDR_EL1` fields.
    Arm {
        /// Implementer (0x41 Arm, 0x00 "software use", e.g. QEMU `-cpu max`).
        implementer: u8,
        /// Primary part number (12 bits).
        part: u16,
    },
}

impl CpuId {
    /// From a `MIDR_EL1` value.
    pub fn from_midr(midr: u64) -> CpuId {
        CpuId::Arm {
            implementer: ((midr >> 24) & 0xFF) as u8,
            part: ((midr >> 4) & 0xFFF) as u16,
        }
    }

    /// From the first CPU's block of Linux `/proc/cpuinfo` (x86 `vendor_id`,
    /// `cpu family`, `model`, `stepping`; arm64 `CPU implementer`, `CPU
    /// part`). `None` if the text names neither. Reads at most 64 KiB.
    pub fn from_proc_cpuinfo(text: &str) -> Option<CpuId> {
        let text = text.get(..text.len().min(65536)).unwrap_or("");
        let (mut vendor, mut family, mut model, mut stepping) = (None, None, None, None);
        let (mut imp, mut part) = (None, None);
        for line in text.lines() {
            if line.trim().is_empty() && (vendor.is_some() || imp.is_some()) {
                break;
            }
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            let v = v.trim();
            match k.trim() {
                "vendor_id" => {
                    vendor = Some(match v {
                        "GenuineIntel" => X86Vendor::Intel,
                        "AuthenticAMD" | "HygonGenuine" => X86Vendor::Amd,
                        _ => X86Vendor::Other,
                    })
                }
                "cpu family" => family = parse_num(v),
                "model" => model = parse_num(v),
                "stepping" => stepping = parse_num(v),
                "CPU implementer" => imp = parse_num(v),
                "CPU part" => part = parse_num(v),
                _ => {}
            }
        }
        if let (Some(vendor), Some(family), Some(model)) = (vendor, family, model) {
            return Some(CpuId::X86 {
                vendor,
                family: family as u32,
                model: model as u32,
                stepping: stepping.unwrap_or(0) as u32,
            });
        }
        match (imp, part) {
            (Some(i), Some(p)) if i <= 0xFF && p <= 0xFFF => Some(CpuId::Arm {
                implementer: i as u8,
                part: p as u16,
            }),
            _ => None,
        }
    }

    /// From FreeBSD's `kern.hwpmc.cpuid` (`GenuineIntel-6-55-4`,
    /// `AuthenticAMD-25-21-0`; family decimal, model and stepping hex), or
    /// an arm64 MIDR printed as hex (`0x00000000410fd0c0`).
    pub fn from_hwpmc_cpuid(s: &str) -> Option<CpuId> {
        let s = s.trim_end_matches('\0').trim();
        if let Some(h) = s.strip_prefix("0x") {
            return u64::from_str_radix(h, 16).ok().map(CpuId::from_midr);
        }
        let mut it = s.split('-');
        let vendor = match it.next()? {
            "GenuineIntel" => X86Vendor::Intel,
            "AuthenticAMD" | "HygonGenuine" => X86Vendor::Amd,
            _ => X86Vendor::Other,
        };
        let family = it.next()?.parse().ok()?;
        let model = u32::from_str_radix(it.next()?, 16).ok()?;
        let stepping = it
            .next()
            .and_then(|x| u32::from_str_radix(x, 16).ok())
            .unwrap_or(0);
        Some(CpuId::X86 {
            vendor,
            family,
            model,
            stepping,
        })
    }

    /// Whether this is an Arm CPU.
    pub fn is_arm(&self) -> bool {
        matches!(self, CpuId::Arm { .. })
    }
}

impl core::fmt::Display for CpuId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            CpuId::X86 {
                vendor,
                family,
                model,
                stepping,
            } => {
                let v = match vendor {
                    X86Vendor::Intel => "GenuineIntel",
                    X86Vendor::Amd => "AuthenticAMD",
                    X86Vendor::Other => "other-x86",
                };
                write!(f, "{v}-{family}-{model:X}-{stepping:X}")
            }
            CpuId::Arm { implementer, part } => {
                write!(f, "MIDR implementer {implementer:#04x} part {part:#05x}")
            }
        }
    }
}

/// The hypervisor a CPUID hypervisor vendor signature names: the 12 bytes of
/// leaf `0x4000_0000`'s EBX, ECX and EDX, as hypervisors set them (the leaf
/// exists when CPUID.1:ECX bit 31, `hypervisor` in `/proc/cpuinfo`, is set).
/// `None` for a signature this table does not know.
///
/// ```
/// assert_eq!(pmc_events::hypervisor_name(b"KVMKVMKVM\0\0\0"), Some("KVM"));
/// assert_eq!(pmc_events::hypervisor_name(b"bhyve bhyve "), Some("bhyve"));
/// assert_eq!(pmc_events::hypervisor_name(b"NotAHypervsr"), None);
/// ```
pub fn hypervisor_name(signature: &[u8; 12]) -> Option<&'static str> {
    // Trailing NULs and spaces are padding (`KVMKVMKVM\0\0\0`, `bhyve bhyve `).
    let end = signature
        .iter()
        .rposition(|&b| b != 0 && b != b' ')
        .map_or(0, |i| i + 1);
    Some(match &signature[..end] {
        b"KVMKVMKVM" => "KVM",
        b"Linux KVM Hv" => "KVM (Hyper-V interface)",
        b"Microsoft Hv" => "Microsoft Hyper-V",
        b"VMwareVMware" => "VMware",
        b"XenVMMXenVMM" => "Xen",
        b"TCGTCGTCGTCG" => "QEMU TCG (emulated CPU)",
        b"bhyve bhyve" => "bhyve",
        b"VBoxVBoxVBox" => "VirtualBox",
        b" lrpepyh  vr" | b"prl hyperv" => "Parallels",
        b"ACRNACRNACRN" => "ACRN",
        b"QNXQVMBSQG" => "QNX hypervisor",
        b"Jailhouse" => "Jailhouse",
        b"HAXMHAXMHAXM" => "Intel HAXM",
        b"EVMMEVMMEVMM" => "Intel EVMM",
        b"SRESRESRESRE" => "Lockheed Martin SRE",
        b"UnisysSpar64" => "Unisys s-Par",
        b"Apple VZ" | b"VirtualApple" => "Apple Virtualization",
        _ => return None,
    })
}

fn parse_num(v: &str) -> Option<u64> {
    match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => v.parse().ok(),
    }
}

/// One model's event table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Table {
    idx: usize,
}

impl Table {
    /// The table for a CPU: x86 by perf's `mapfile.csv` (first matching
    /// row), Arm by MIDR part, and Arm's architected events for any other
    /// Arm core. `None` for x86 models without a table here.
    pub fn for_cpu(cpu: &CpuId) -> Option<Table> {
        match *cpu {
            CpuId::X86 {
                vendor,
                family,
                model,
                stepping,
            } => {
                let v = match vendor {
                    X86Vendor::Intel => 0,
                    X86Vendor::Amd => 1,
                    X86Vendor::Other => return None,
                };
                X86_MODELS
                    .iter()
                    .find(|&&(tv, f, lo, hi, steps, _)| {
                        tv == v
                            && u32::from(f) == family
                            && (u32::from(lo)..=u32::from(hi)).contains(&model)
                            && stepping < 16
                            && steps & (1 << stepping) != 0
                    })
                    .map(|&(.., t)| Table { idx: t.into() })
            }
            CpuId::Arm { implementer, part } => Some(
                ARM_PARTS
                    .iter()
                    .find(|&&(i, p, _)| i == implementer && p == part)
                    .map_or(Table::arm_common(), |&(.., t)| Table { idx: t.into() }),
            ),
        }
    }

    /// Arm's architected (PMUv3 common and microarchitectural) events.
    pub fn arm_common() -> Table {
        Table {
            idx: crate::generated::ARM_COMMON.into(),
        }
    }

    /// Every table, in generation order.
    pub fn all() -> impl Iterator<Item = Table> {
        (0..TABLES.len()).map(|idx| Table { idx })
    }

    /// A table by its name (`skylake`, `amdzen3`, `neoverse-n1`,
    /// `armv8-common`).
    pub fn by_name(name: &str) -> Option<Table> {
        Table::all().find(|t| t.name().eq_ignore_ascii_case(name))
    }

    fn raw(&self) -> &'static RawTable {
        &TABLES[self.idx]
    }

    /// The table's name (the kernel's directory name).
    pub fn name(&self) -> &'static str {
        self.raw().name
    }

    /// Where in `tools/perf/pmu-events/arch` it came from.
    pub fn source(&self) -> &'static str {
        self.raw().source
    }

    /// The PMU programming model.
    pub fn kind(&self) -> Kind {
        self.raw().kind
    }

    /// Number of events.
    pub fn len(&self) -> usize {
        usize::from(self.raw().end - self.raw().start)
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The events, sorted by name (case-insensitively).
    pub fn events(&self) -> impl Iterator<Item = Event> + 'static {
        let r = self.raw();
        let (start, kind) = (usize::from(r.start), r.kind);
        (start..usize::from(r.end)).map(move |i| event(i, kind, start))
    }

    /// The event with this name, ignoring ASCII case.
    ///
    /// A binary search: gen.py writes each table sorted by lowercased name,
    /// without duplicates (checked by a test over every table).
    pub fn find(&self, name: &str) -> Option<Event> {
        let r = self.raw();
        let start = usize::from(r.start);
        let (mut lo, mut hi) = (start, usize::from(r.end).min(EVENTS.len() / EVENT_ROW));
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match cmp_ignore_ascii_case(RawEvent::at(mid)?.name(), name) {
                core::cmp::Ordering::Less => lo = mid + 1,
                core::cmp::Ordering::Greater => hi = mid,
                core::cmp::Ordering::Equal => return Some(event(mid, r.kind, start)),
            }
        }
        None
    }
}

/// The tables whose events carry this name (ASCII case ignored), for
/// telling "a known event this CPU lacks" from "no such event".
pub fn tables_with(name: &str) -> impl Iterator<Item = (Table, Event)> + '_ {
    Table::all().filter_map(move |t| t.find(name).map(|e| (t, e)))
}

/// Whether any table has an event of this name.
pub fn is_known(name: &str) -> bool {
    tables_with(name).next().is_some()
}

const INTEL_ALIASES: &[(&str, &str)] = &[
    ("UNHALTED_CORE_CYCLES", "CPU_CLK_UNHALTED.THREAD_P_ANY"),
    ("UNHALTED-CORE-CYCLES", "CPU_CLK_UNHALTED.THREAD_P_ANY"),
    ("LLC_MISSES", "LONGEST_LAT_CACHE.MISS"),
    ("LLC-MISSES", "LONGEST_LAT_CACHE.MISS"),
    ("LLC_REFERENCE", "LONGEST_LAT_CACHE.REFERENCE"),
    ("LLC-REFERENCE", "LONGEST_LAT_CACHE.REFERENCE"),
    ("LLC_MISS_RHITM", "mem_load_l3_miss_retired.remote_hitm"),
    ("LLC-MISS-RHITM", "mem_load_l3_miss_retired.remote_hitm"),
    ("RESOURCE_STALL", "RESOURCE_STALLS.ANY"),
    ("RESOURCE_STALLS_ANY", "RESOURCE_STALLS.ANY"),
    ("BRANCH_INSTRUCTION_RETIRED", "BR_INST_RETIRED.ALL_BRANCHES"),
    ("BRANCH-INSTRUCTION-RETIRED", "BR_INST_RETIRED.ALL_BRANCHES"),
    ("BRANCH_MISSES_RETIRED", "BR_MISP_RETIRED.ALL_BRANCHES"),
    ("BRANCH-MISSES-RETIRED", "BR_MISP_RETIRED.ALL_BRANCHES"),
    ("interrupts", "hw_interrupts.received"),
    ("ic-misses", "frontend_retired.l1i_miss"),
    // Intel's architectural event names (libpmc's IAP class: 0x3C/0x01,
    // 0xC0/0x00); dc-misses has no libpmc Intel alias: pmc's choice.
    ("unhalted-reference-cycles", "CPU_CLK_UNHALTED.REF_XCLK"),
    // The same 0x3C/0x01 on Alder Lake and Sapphire Rapids.
    ("unhalted-reference-cycles", "CPU_CLK_UNHALTED.REF_TSC_P"),
    ("instruction-retired", "INST_RETIRED.ANY"),
    ("dc-misses", "L1D.REPLACEMENT"),
    // pmc_events.h IAF names (`iaf-instr_retired.any`, ...).
    ("instr_retired.any", "INST_RETIRED.ANY"),
    ("instr-retired-any", "INST_RETIRED.ANY"),
    ("cpu_clk_unhalted.core", "CPU_CLK_UNHALTED.THREAD"),
    ("cpu-clk-unhalted-core", "CPU_CLK_UNHALTED.THREAD"),
    ("cpu_clk_unhalted.ref", "CPU_CLK_UNHALTED.REF_TSC"),
    ("cpu-clk-unhalted-ref", "CPU_CLK_UNHALTED.REF_TSC"),
];
const AMD_ALIASES: &[(&str, &str)] = &[
    ("UNHALTED_CORE_CYCLES", "ls_not_halted_cyc"),
    ("UNHALTED-CORE-CYCLES", "ls_not_halted_cyc"),
    // libpmc.c k8_aliases (k8-dc-miss 0x41, k8-ic-miss 0x81,
    // k8-fr-taken-hardware-interrupts): the Zen events of the same codes.
    ("dc-misses", "ls_mab_alloc.loads"),
    ("dc-misses", "ls_mab_alloc.load_store_allocations"),
    ("ic-misses", "ic_fw32_miss"),
    ("ic-misses", "ic_tag_hit_miss.instruction_cache_miss"),
    ("interrupts", "ls_int_taken"),
    ("instruction-retired", "ex_ret_instr"),
    ("BRANCH_INSTRUCTION_RETIRED", "ex_ret_brn"),
    ("BRANCH_MISSES_RETIRED", "ex_ret_brn_misp"),
    // pmc.k8(3) events with no generic counterpart (those with one are in
    // LEGACY_GENERIC), without their `k8-` (the backends strip it): the Zen
    // events of the same event codes (0xC1, 0xC4, 0xC5, 0xC6, 0xC8, 0xC9).
    ("fr-retired-uops", "ex_ret_ops"),
    ("fr-retired-uops", "ex_ret_cops"), // Zen 2's name for 0xC1
    ("fr-retired-taken-branches", "ex_ret_brn_tkn"),
    (
        "fr-retired-taken-branches-mispredicted",
        "ex_ret_brn_tkn_misp",
    ),
    ("fr-retired-far-control-transfers", "ex_ret_brn_far"),
    ("fr-retired-near-returns", "ex_ret_near_ret"),
    (
        "fr-retired-near-returns-mispredicted",
        "ex_ret_near_ret_mispred",
    ),
    ("fr-taken-hardware-interrupts", "ls_int_taken"),
];
// libpmc has no Arm aliases; these are pmc's, by the Armv8 event meanings.
const ARM_ALIASES: &[(&str, &str)] = &[
    ("dc-misses", "L1D_CACHE_REFILL"),
    ("ic-misses", "L1I_CACHE_REFILL"),
    ("instruction-retired", "INST_RETIRED"),
    ("interrupts", "EXC_IRQ"),
    ("BRANCH_INSTRUCTION_RETIRED", "BR_RETIRED"),
    ("BRANCH_MISSES_RETIRED", "BR_MIS_PRED_RETIRED"),
];

/// libpmc's event-name aliases, resolved to a table event name: Intel's
/// from `lib/libpmc/libpmc_pmu_util.c` `pmu_intel_alias_table` plus Intel's
/// architectural event names (`unhalted-reference-cycles` 0x3C/0x01,
/// `instruction-retired` 0xC0); AMD's from `pmu_amd_alias_table` plus
/// `libpmc.c` `k8_aliases` (`dc-misses`, `ic-misses`, `interrupts`) mapped
/// to the Zen events with the same event codes; Arm's are pmc's own (libpmc
/// has none). Compared case-insensitively, as libpmc's `strcasecmp`.
///
/// Not here: `cycles` (libpmc: `tsc-tsc`; pmc: core cycles, see the
/// backends), `instructions`/`branches`/`branch-mispredicts`/
/// `unhalted-cycles`/`LLC-MISSES` (pmc's portable events).
pub fn libpmc_alias(vendor: Kind, name: &str) -> Option<&'static str> {
    libpmc_aliases(vendor, name).next()
}

/// Every target of a [`libpmc_alias`] name, in order of preference (an
/// alias can name different events on different generations).
pub fn libpmc_aliases(vendor: Kind, name: &str) -> impl Iterator<Item = &'static str> + '_ {
    let t = match vendor {
        Kind::IntelCore => INTEL_ALIASES,
        Kind::AmdZen => AMD_ALIASES,
        Kind::ArmV8 => ARM_ALIASES,
    };
    t.iter()
        .filter(move |(a, _)| a.eq_ignore_ascii_case(name))
        .map(|&(_, n)| n)
}

/// libpmc's legacy names whose event is one of perf's generic events, as
/// libpmc spells them (class prefix included): pmc.k8(3)'s AMD K8 events
/// (`k8-fr-retired-x86-instructions` is event 0xC0, retired instructions, in
/// pmcstat(8)'s own examples), pmc.iaf(3)'s fixed-function counters, and the
/// Intel architectural events of pmc.core(3)/pmc.iap(3) (their Core 2 names
/// too). The generic event is what the kernel itself programs for each CPU
/// (`PERF_COUNT_HW_*`, `PERF_TYPE_HW_CACHE`), so the name works on any CPU
/// with a PMU, K8 or not.
const LEGACY_GENERIC: &[(&str, &str)] = &[
    // pmc.k8(3): event 0x76, 0xC0, 0xC2, 0xC3, 0x40, 0x41, 0x80, 0x81.
    ("k8-bu-cpu-clk-unhalted", "cycles"),
    ("k8-fr-retired-x86-instructions", "instructions"),
    ("k8-fr-retired-branches", "branches"),
    ("k8-fr-retired-branches-mispredicted", "branch-misses"),
    ("k8-dc-access", "L1-dcache-loads"),
    ("k8-dc-miss", "L1-dcache-load-misses"),
    ("k8-ic-fetch", "L1-icache-loads"),
    ("k8-ic-miss", "L1-icache-load-misses"),
    // pmc.iaf(3): the fixed counters.
    ("iaf-instr-retired-any", "instructions"),
    ("iaf-instr_retired.any", "instructions"),
    ("iaf-cpu-clk-unhalted-core", "cycles"),
    ("iaf-cpu_clk_unhalted.core", "cycles"),
    ("iaf-cpu-clk-unhalted-ref", "ref-cycles"),
    ("iaf-cpu_clk_unhalted.ref", "ref-cycles"),
    ("instr-retired-any", "instructions"),
    ("instr_retired.any", "instructions"),
    ("cpu-clk-unhalted-core", "cycles"),
    ("cpu_clk_unhalted.core", "cycles"),
    ("cpu-clk-unhalted-ref", "ref-cycles"),
    ("cpu_clk_unhalted.ref", "ref-cycles"),
    // Intel's architectural events (0x3C/0x00, 0xC0/0x00, 0x3C/0x01,
    // 0x2E/0x4F, 0x2E/0x41, 0xC4/0x00, 0xC5/0x00), libpmc's spellings.
    ("unhalted-core-cycles", "cycles"),
    ("unhalted_core_cycles", "cycles"),
    ("instruction-retired", "instructions"),
    ("instruction_retired", "instructions"),
    ("unhalted-reference-cycles", "ref-cycles"),
    ("unhalted_reference_cycles", "ref-cycles"),
    ("llc-reference", "cache-references"),
    ("llc_reference", "cache-references"),
    ("llc-misses", "cache-misses"),
    ("llc_misses", "cache-misses"),
    ("branch-instruction-retired", "branches"),
    ("branch_instruction_retired", "branches"),
    ("branch-misses-retired", "branch-misses"),
    ("branch_misses_retired", "branch-misses"),
    // pmc.core2(3)'s names of the same events (IAP).
    ("iap-cpu_clk_unhalted.core_p", "cycles"),
    ("cpu_clk_unhalted.core_p", "cycles"),
    ("iap-inst_retired.any_p", "instructions"),
    ("inst_retired.any_p", "instructions"),
    ("iap-br_inst_retired.any", "branches"),
    ("br_inst_retired.any", "branches"),
    ("iap-br_inst_retired.mispred", "branch-misses"),
    ("br_inst_retired.mispred", "branch-misses"),
];

/// The perf generic event (`instructions`, `cycles`, `ref-cycles`,
/// `L1-dcache-load-misses`, ...) that a legacy libpmc name counts, for a
/// backend to use when this CPU's table has no event of that name: the K8
/// names of pmc.k8(3), the IAF names of pmc.iaf(3) and Intel's architectural
/// event names. Compared case-insensitively, as libpmc's `strcasecmp`.
///
/// ```
/// assert_eq!(pmc_events::libpmc_generic("k8-fr-retired-x86-instructions"), Some("instructions"));
/// assert_eq!(pmc_events::libpmc_generic("IAF-CPU-CLK-UNHALTED-REF"), Some("ref-cycles"));
/// assert_eq!(pmc_events::libpmc_generic("k8-fp-dispatched-fpu-ops"), None);
/// ```
pub fn libpmc_generic(name: &str) -> Option<&'static str> {
    LEGACY_GENERIC
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|&(_, g)| g)
}

/// Whether `name` is one of [`libpmc_alias`]'s names for some vendor.
pub fn is_libpmc_alias(name: &str) -> bool {
    [Kind::IntelCore, Kind::AmdZen, Kind::ArmV8]
        .iter()
        .any(|&k| libpmc_alias(k, name).is_some())
}

/// Looks a name up in a table: the event itself, else a libpmc alias of the
/// table's vendor. Returns the event and whether an alias was followed.
pub fn lookup(table: Table, name: &str) -> Option<(Event, bool)> {
    if let Some(e) = table.find(name) {
        return Some((e, false));
    }
    libpmc_aliases(table.kind(), name).find_map(|real| table.find(real).map(|e| (e, true)))
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::format;
    use std::string::ToString;
    use std::vec::Vec;

    /// `Table::find` searches by halves: every table must be sorted by
    /// lowercased name, without two names equal but for case.
    #[test]
    fn tables_are_sorted_for_binary_search() {
        for t in Table::all() {
            let names: Vec<&str> = t.events().map(|e| e.name).collect();
            for w in names.windows(2) {
                assert_eq!(
                    cmp_ignore_ascii_case(w[0], w[1]),
                    core::cmp::Ordering::Less,
                    "{}: {} then {}",
                    t.name(),
                    w[0],
                    w[1]
                );
            }
        }
    }

    /// The search finds what a scan finds, for every name in any case, and
    /// nothing for names between or around them. Under Miri, one table.
    #[test]
    fn find_agrees_with_a_scan() {
        let tables: Vec<Table> = if cfg!(miri) {
            Table::all().take(1).collect()
        } else {
            Table::all().collect()
        };
        for t in tables {
            for e in t.events() {
                for name in [
                    e.name.to_string(),
                    e.name.to_ascii_lowercase(),
                    e.name.to_ascii_uppercase(),
                ] {
                    let got = t.find(&name).map(|f| f.index);
                    assert_eq!(got, Some(e.index), "{} {name}", t.name());
                }
                for miss in [
                    format!("{}_", e.name),
                    format!("{}x", e.name),
                    e.name[1..].to_string(),
                ] {
                    let scan = t.events().find(|f| f.name.eq_ignore_ascii_case(&miss));
                    assert_eq!(
                        t.find(&miss).map(|f| f.index),
                        scan.map(|f| f.index),
                        "{miss}"
                    );
                }
            }
            assert!(t.find("").is_none() && t.find("\u{e9}").is_none());
        }
    }
}
