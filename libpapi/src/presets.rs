//! PAPI's presets on pmc: which native events count each preset on this
//! CPU, and how their counts combine (PAPI's `derived` types).
//!
//! A preset exists here when every native event of its definition does
//! (the component's table, probed). The definitions: PAPI's own for Arm
//! cores (its `papi_events.csv`, by the Armv8 architected events it names),
//! then what the kernel itself maps per CPU (Linux's generic hardware and
//! cache events, which perf_event translates for Intel, AMD and Arm cores
//! alike, and pmc's portable names, which FreeBSD maps to hwpmc's), then
//! more Armv8 architected events. The first definition whose events all
//! exist wins.

use crate::preset_table::{PresetDef, PRESETS};

/// How a preset's terms combine, as PAPI names it in `PAPI_event_info_t.derived`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Derived {
    /// One term, its count (PAPI's `NOT_DERIVED`).
    Plain,
    /// The sum of the terms.
    Add,
    /// The first term less the others.
    Sub,
}

impl Derived {
    /// PAPI's name for it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Derived::Plain => "NOT_DERIVED",
            Derived::Add => "DERIVED_ADD",
            Derived::Sub => "DERIVED_SUB",
        }
    }

    /// The sign of term `i`.
    pub(crate) fn sign(self, i: usize) -> i64 {
        match self {
            Derived::Sub if i > 0 => -1,
            _ => 1,
        }
    }
}

/// One candidate definition: the preset, pmc's names of its terms, how
/// they combine, and where the mapping comes from (`note`).
struct Def {
    preset: &'static str,
    terms: &'static [&'static str],
    derived: Derived,
    note: &'static str,
}

const GENERIC: &str = "Linux generic event, mapped by the kernel for this CPU";

/// Definitions over Linux's generic events (and pmc's portable names,
/// which FreeBSD maps to hwpmc's architectural events).
const GENERIC_DEFS: &[Def] = &[
    Def {
        preset: "PAPI_TOT_CYC",
        terms: &["cycles"],
        derived: Derived::Plain,
        note: GENERIC,
    },
    Def {
        preset: "PAPI_TOT_INS",
        terms: &["instructions"],
        derived: Derived::Plain,
        note: GENERIC,
    },
    Def {
        preset: "PAPI_BR_INS",
        terms: &["branches"],
        derived: Derived::Plain,
        note: GENERIC,
    },
    Def {
        preset: "PAPI_BR_MSP",
        terms: &["branch-misses"],
        derived: Derived::Plain,
        note: GENERIC,
    },
    Def {
        preset: "PAPI_REF_CYC",
        terms: &["ref-cycles"],
        derived: Derived::Plain,
        note: GENERIC,
    },
    Def {
        preset: "PAPI_L1_DCM",
        terms: &["L1-dcache-load-misses", "L1-dcache-store-misses"],
        derived: Derived::Add,
        note: GENERIC,
    },
    Def {
        preset: "PAPI_L1_DCM",
        terms: &["L1-dcache-load-misses"],
        derived: Derived::Plain,
        note: GENERIC,
    },
    Def {
        preset: "PAPI_L1_ICM",
        terms: &["L1-icache-load-misses"],
        derived: Derived::Plain,
        note: GENERIC,
    },
    Def {
        preset: "PAPI_L1_DCR",
        terms: &["L1-dcache-loads"],
        derived: Derived::Plain,
        note: GENERIC,
    },
    Def {
        preset: "PAPI_L1_DCW",
        terms: &["L1-dcache-stores"],
        derived: Derived::Plain,
        note: GENERIC,
    },
    Def {
        preset: "PAPI_L1_DCA",
        terms: &["L1-dcache-loads", "L1-dcache-stores"],
        derived: Derived::Add,
        note: GENERIC,
    },
    Def {
        preset: "PAPI_L1_ICA",
        terms: &["L1-icache-loads"],
        derived: Derived::Plain,
        note: GENERIC,
    },
    Def {
        preset: "PAPI_TLB_DM",
        terms: &["dTLB-load-misses", "dTLB-store-misses"],
        derived: Derived::Add,
        note: GENERIC,
    },
    Def {
        preset: "PAPI_TLB_IM",
        terms: &["iTLB-load-misses"],
        derived: Derived::Plain,
        note: GENERIC,
    },
    Def {
        preset: "PAPI_L3_TCA",
        terms: &["LLC-loads", "LLC-stores"],
        derived: Derived::Add,
        note: GENERIC,
    },
    Def {
        preset: "PAPI_L3_TCM",
        terms: &["LLC-load-misses", "LLC-store-misses"],
        derived: Derived::Add,
        note: GENERIC,
    },
    Def {
        preset: "PAPI_L3_LDM",
        terms: &["LLC-load-misses"],
        derived: Derived::Plain,
        note: GENERIC,
    },
    Def {
        preset: "PAPI_L3_STM",
        terms: &["LLC-store-misses"],
        derived: Derived::Plain,
        note: GENERIC,
    },
];

const ARMV8: &str = "Armv8 architected event (Arm ARM, D7.10)";

const ARM_PAPI: &str =
    "PAPI's Cortex-A57 definition (papi_events.csv arm_ac57), by architected event";

/// PAPI's own definitions for Arm cores (`papi_events.csv`, `CPU,arm_ac57`:
/// libpfm4's names there are the Armv8 architected events named here),
/// first, so that a preset counts what PAPI's counts on the same core.
const ARM_PAPI_DEFS: &[Def] = &[
    Def {
        preset: "PAPI_TOT_INS",
        terms: &["inst_retired"],
        derived: Derived::Plain,
        note: ARM_PAPI,
    },
    Def {
        preset: "PAPI_TOT_IIS",
        terms: &["inst_spec"],
        derived: Derived::Plain,
        note: ARM_PAPI,
    },
    Def {
        preset: "PAPI_TOT_CYC",
        terms: &["cpu_cycles"],
        derived: Derived::Plain,
        note: ARM_PAPI,
    },
    Def {
        preset: "PAPI_FP_INS",
        terms: &["vfp_spec"],
        derived: Derived::Plain,
        note: ARM_PAPI,
    },
    Def {
        preset: "PAPI_VEC_INS",
        terms: &["ase_spec"],
        derived: Derived::Plain,
        note: ARM_PAPI,
    },
    Def {
        preset: "PAPI_BR_INS",
        terms: &["pc_write_spec"],
        derived: Derived::Plain,
        note: ARM_PAPI,
    },
    Def {
        preset: "PAPI_BR_MSP",
        terms: &["br_mis_pred"],
        derived: Derived::Plain,
        note: ARM_PAPI,
    },
    Def {
        preset: "PAPI_LD_INS",
        terms: &["mem_access_rd"],
        derived: Derived::Plain,
        note: ARM_PAPI,
    },
    Def {
        preset: "PAPI_SR_INS",
        terms: &["mem_access_wr"],
        derived: Derived::Plain,
        note: ARM_PAPI,
    },
    Def {
        preset: "PAPI_L1_DCA",
        terms: &["l1d_cache_rd", "l1d_cache_wr"],
        derived: Derived::Add,
        note: ARM_PAPI,
    },
    Def {
        preset: "PAPI_L1_DCM",
        terms: &["l1d_cache_refill_rd", "l1d_cache_refill_wr"],
        derived: Derived::Add,
        note: ARM_PAPI,
    },
    Def {
        preset: "PAPI_L1_DCR",
        terms: &["l1d_cache_rd"],
        derived: Derived::Plain,
        note: ARM_PAPI,
    },
    Def {
        preset: "PAPI_L1_DCW",
        terms: &["l1d_cache_wr"],
        derived: Derived::Plain,
        note: ARM_PAPI,
    },
    Def {
        preset: "PAPI_L1_ICA",
        terms: &["l1i_cache"],
        derived: Derived::Plain,
        note: ARM_PAPI,
    },
    Def {
        preset: "PAPI_L1_ICM",
        terms: &["l1i_cache_refill"],
        derived: Derived::Plain,
        note: ARM_PAPI,
    },
    // PAPI's own choice: its "L2 data cache hits" are L2D_CACHE's accesses.
    Def {
        preset: "PAPI_L2_DCH",
        terms: &["l2d_cache"],
        derived: Derived::Plain,
        note: ARM_PAPI,
    },
    Def {
        preset: "PAPI_L2_DCM",
        terms: &["l2d_cache_refill"],
        derived: Derived::Plain,
        note: ARM_PAPI,
    },
    Def {
        preset: "PAPI_L2_DCR",
        terms: &["l2d_cache_rd"],
        derived: Derived::Plain,
        note: ARM_PAPI,
    },
    Def {
        preset: "PAPI_L2_DCW",
        terms: &["l2d_cache_wr"],
        derived: Derived::Plain,
        note: ARM_PAPI,
    },
    Def {
        preset: "PAPI_L2_LDM",
        terms: &["l2d_cache_refill_rd"],
        derived: Derived::Plain,
        note: ARM_PAPI,
    },
    Def {
        preset: "PAPI_L2_STM",
        terms: &["l2d_cache_refill_wr"],
        derived: Derived::Plain,
        note: ARM_PAPI,
    },
];

/// Armv8's architected common events, by pmc-events' names (the kernel's
/// lower-case sysfs spellings), for what Linux's generic events do not give.
const ARMV8_DEFS: &[Def] = &[
    Def {
        preset: "PAPI_TOT_CYC",
        terms: &["cpu_cycles"],
        derived: Derived::Plain,
        note: ARMV8,
    },
    Def {
        preset: "PAPI_TOT_INS",
        terms: &["inst_retired"],
        derived: Derived::Plain,
        note: ARMV8,
    },
    Def {
        preset: "PAPI_L1_DCM",
        terms: &["l1d_cache_refill"],
        derived: Derived::Plain,
        note: ARMV8,
    },
    Def {
        preset: "PAPI_L1_DCA",
        terms: &["l1d_cache"],
        derived: Derived::Plain,
        note: ARMV8,
    },
    Def {
        preset: "PAPI_L1_ICM",
        terms: &["l1i_cache_refill"],
        derived: Derived::Plain,
        note: ARMV8,
    },
    Def {
        preset: "PAPI_L1_ICA",
        terms: &["l1i_cache"],
        derived: Derived::Plain,
        note: ARMV8,
    },
    Def {
        preset: "PAPI_L2_DCM",
        terms: &["l2d_cache_refill"],
        derived: Derived::Plain,
        note: ARMV8,
    },
    Def {
        preset: "PAPI_L2_DCA",
        terms: &["l2d_cache"],
        derived: Derived::Plain,
        note: ARMV8,
    },
    Def {
        preset: "PAPI_TLB_DM",
        terms: &["l1d_tlb_refill"],
        derived: Derived::Plain,
        note: ARMV8,
    },
    Def {
        preset: "PAPI_TLB_IM",
        terms: &["l1i_tlb_refill"],
        derived: Derived::Plain,
        note: ARMV8,
    },
    Def {
        preset: "PAPI_BR_MSP",
        terms: &["br_mis_pred_retired"],
        derived: Derived::Plain,
        note: ARMV8,
    },
    Def {
        preset: "PAPI_BR_MSP",
        terms: &["br_mis_pred"],
        derived: Derived::Plain,
        note: ARMV8,
    },
    Def {
        preset: "PAPI_BR_INS",
        terms: &["br_retired"],
        derived: Derived::Plain,
        note: ARMV8,
    },
    Def {
        preset: "PAPI_BR_PRC",
        terms: &["br_retired", "br_mis_pred_retired"],
        derived: Derived::Sub,
        note: ARMV8,
    },
    Def {
        preset: "PAPI_LD_INS",
        terms: &["ld_retired"],
        derived: Derived::Plain,
        note: ARMV8,
    },
    Def {
        preset: "PAPI_SR_INS",
        terms: &["st_retired"],
        derived: Derived::Plain,
        note: ARMV8,
    },
    Def {
        preset: "PAPI_LST_INS",
        terms: &["ld_retired", "st_retired"],
        derived: Derived::Add,
        note: ARMV8,
    },
    Def {
        preset: "PAPI_HW_INT",
        terms: &["exc_irq"],
        derived: Derived::Plain,
        note: ARMV8,
    },
];

/// A preset's mapping on this machine.
#[derive(Debug, Clone)]
pub(crate) struct Mapping {
    /// The native codes of its terms.
    pub codes: Vec<u32>,
    /// How they combine.
    pub derived: Derived,
    /// Where the mapping comes from (`PAPI_event_info_t.note`).
    pub note: &'static str,
}

/// Every preset's mapping here (`None`: not available), by preset index.
#[derive(Debug, Default)]
pub(crate) struct Presets {
    map: Vec<Option<Mapping>>,
}

impl Presets {
    /// Maps every preset whose terms all resolve (`resolve` gives a term's
    /// native code when pmc can count it here).
    pub(crate) fn build(resolve: &mut dyn FnMut(&str) -> Option<u32>) -> Presets {
        let mut map: Vec<Option<Mapping>> = vec![None; PRESETS.len()];
        for def in ARM_PAPI_DEFS.iter().chain(GENERIC_DEFS).chain(ARMV8_DEFS) {
            let Some(i) = index(def.preset) else { continue };
            if map[i].is_some() {
                continue;
            }
            let codes: Option<Vec<u32>> = def.terms.iter().map(|t| resolve(t)).collect();
            if let Some(codes) = codes {
                map[i] = Some(Mapping {
                    codes,
                    derived: def.derived,
                    note: def.note,
                });
            }
        }
        Presets { map }
    }

    /// The mapping of preset index `i`, if it exists here.
    pub(crate) fn get(&self, i: usize) -> Option<&Mapping> {
        self.map.get(i).and_then(Option::as_ref)
    }

    /// How many presets exist here.
    pub(crate) fn available(&self) -> usize {
        self.map.iter().filter(|m| m.is_some()).count()
    }
}

/// The index of a preset by name (any case).
pub(crate) fn index(name: &str) -> Option<usize> {
    PRESETS
        .iter()
        .position(|p| p.name.eq_ignore_ascii_case(name))
}

/// The fixed facts of preset index `i`.
pub(crate) fn def(i: usize) -> Option<&'static PresetDef> {
    PRESETS.get(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_definition_names_a_preset() {
        for d in ARM_PAPI_DEFS.iter().chain(GENERIC_DEFS).chain(ARMV8_DEFS) {
            assert!(index(d.preset).is_some(), "{}", d.preset);
            assert_eq!(
                d.derived == Derived::Plain,
                d.terms.len() == 1,
                "{}",
                d.preset
            );
        }
        assert_eq!(PRESETS.len(), 108);
        assert_eq!(index("PAPI_TOT_INS"), Some(0x32));
        assert_eq!(index("papi_l1_dcm"), Some(0));
    }

    #[test]
    fn the_first_definition_whose_terms_exist_wins() {
        let have = [
            "cycles",
            "L1-dcache-load-misses",
            "l1d_cache",
            "br_retired",
            "br_mis_pred_retired",
        ];
        let mut resolve = |t: &str| {
            have.iter()
                .position(|h| *h == t)
                .map(|p| 0x4000_0000 | p as u32)
        };
        let p = Presets::build(&mut resolve);
        let cyc = p.get(index("PAPI_TOT_CYC").unwrap()).unwrap();
        assert_eq!(cyc.codes, vec![0x4000_0000]);
        let dcm = p.get(index("PAPI_L1_DCM").unwrap()).unwrap();
        assert_eq!((dcm.derived, dcm.codes.len()), (Derived::Plain, 1));
        assert!(p.get(index("PAPI_TOT_INS").unwrap()).is_none());
        let prc = p.get(index("PAPI_BR_PRC").unwrap()).unwrap();
        assert_eq!(prc.derived, Derived::Sub);
        assert_eq!((prc.derived.sign(0), prc.derived.sign(1)), (1, -1));
        assert_eq!(
            p.available(),
            6,
            "TOT_CYC L1_DCM L1_DCA BR_INS BR_MSP BR_PRC"
        );
    }
}
