//! The machine-dependent allocation unions (`pmc_md_op_pmcallocate`, amd64;
//! `arm64_pmc_md_op_pmcallocate`) and their members.

use pmc_log::bytes::ByteCursor;

/// `struct pmc_md_amd_op_pmcallocate` (amd64).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_md_amd_op_pmcallocate {
    /// `pm_amd_config`: the PERF_CTL value (event select, unit mask, USR/OS/...).
    pub pm_amd_config: u64,
    /// `pm_amd_sub_class`: `PMC_AMD_SUB_CLASS_*`.
    pub pm_amd_sub_class: u32,
}

/// `struct pmc_md_ibs_op_pmcallocate` (amd64).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_md_ibs_op_pmcallocate {
    /// `ibs_flag`.
    pub ibs_flag: u32,
    /// `ibs_type`: `IBS_PMC_FETCH` or `IBS_PMC_OP`.
    pub ibs_type: u32,
    /// `ibs_ctl`.
    pub ibs_ctl: u64,
    /// `ibs_ctl2`.
    pub ibs_ctl2: u64,
}

/// `struct pmc_md_iap_op_pmcallocate` (amd64; also used by IAF).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_md_iap_op_pmcallocate {
    /// `pm_iap_config`: the IA32_PERFEVTSELx value.
    pub pm_iap_config: u32,
    /// `pm_iap_rsp`: offcore response MSR value.
    pub pm_iap_rsp: u64,
}

/// `struct pmc_md_ucf_op_pmcallocate` (amd64).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_md_ucf_op_pmcallocate {
    /// `pm_ucf_flags`.
    pub pm_ucf_flags: u16,
}

/// `struct pmc_md_ucp_op_pmcallocate` (amd64).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_md_ucp_op_pmcallocate {
    /// `pm_ucp_config`.
    pub pm_ucp_config: u32,
}

/// `union pmc_md_op_pmcallocate` for amd64 (32 bytes, fixed by `__pad`).
///
/// The members are private so that every value is fully initialised: build
/// one with [`amd`](Self::amd), [`iap`](Self::iap), [`ibs`](Self::ibs),
/// [`ucf`](Self::ucf), [`ucp`](Self::ucp) or [`from_words`](Self::from_words)
/// and read it back with the accessors. The layout is exactly the C union.
#[repr(C)]
#[derive(Clone, Copy)]
pub union pmc_md_op_pmcallocate {
    pub(super) pm_amd: pmc_md_amd_op_pmcallocate,
    pub(super) pm_ibs: pmc_md_ibs_op_pmcallocate,
    pub(super) pm_iap: pmc_md_iap_op_pmcallocate,
    pub(super) pm_ucf: pmc_md_ucf_op_pmcallocate,
    pub(super) pm_ucp: pmc_md_ucp_op_pmcallocate,
    pub(super) __pad: [u64; 4],
}

impl Default for pmc_md_op_pmcallocate {
    fn default() -> Self {
        Self { __pad: [0; 4] }
    }
}

impl core::fmt::Debug for pmc_md_op_pmcallocate {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("pmc_md_op_pmcallocate")
            .field("__pad", &self.words())
            .finish()
    }
}

impl PartialEq for pmc_md_op_pmcallocate {
    fn eq(&self, other: &Self) -> bool {
        self.words() == other.words()
    }
}

pub(super) fn bytes_of_words(w: [u64; 4]) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (i, x) in w.iter().enumerate() {
        out[i * 8..i * 8 + 8].copy_from_slice(&x.to_ne_bytes());
    }
    out
}

pub(super) fn words_of_bytes(b: [u8; 32]) -> [u64; 4] {
    [0, 8, 16, 24].map(|off| u64_at(&b, off))
}

// The union's bytes at offsets below 32 (always present), read through
// pmc-log's bounded cursor: it cannot fail here, and would read 0 if it did.
pub(super) fn u16_at(b: &[u8; 32], off: usize) -> u16 {
    ByteCursor::ne(b).u16_at(off).unwrap_or_default()
}

pub(super) fn u32_at(b: &[u8; 32], off: usize) -> u32 {
    ByteCursor::ne(b).u32_at(off).unwrap_or_default()
}

pub(super) fn u64_at(b: &[u8; 32], off: usize) -> u64 {
    ByteCursor::ne(b).u64_at(off).unwrap_or_default()
}

impl pmc_md_op_pmcallocate {
    /// The union as its four native-endian words (`__pad`).
    pub fn words(&self) -> [u64; 4] {
        // SAFETY: the members are private and every constructor initialises
        // all 32 bytes through `__pad`, so `__pad` is always initialised; any
        // bit pattern is a valid `[u64; 4]`.
        unsafe { self.__pad }
    }

    /// The union's 32 bytes, native-endian.
    pub fn to_bytes(self) -> [u8; 32] {
        bytes_of_words(self.words())
    }

    /// Builds the union from its four words.
    pub fn from_words(words: [u64; 4]) -> Self {
        Self { __pad: words }
    }

    /// Builds the union from its 32 bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self::from_words(words_of_bytes(bytes))
    }

    /// A union holding `pm_amd` (`pm_amd_config`, `pm_amd_sub_class`).
    pub fn amd(config: u64, sub_class: u32) -> Self {
        let mut b = [0u8; 32];
        b[0..8].copy_from_slice(&config.to_ne_bytes());
        b[8..12].copy_from_slice(&sub_class.to_ne_bytes());
        Self::from_bytes(b)
    }

    /// A union holding `pm_iap` (`pm_iap_config`, `pm_iap_rsp`); IAF too.
    pub fn iap(config: u32, rsp: u64) -> Self {
        let mut b = [0u8; 32];
        b[0..4].copy_from_slice(&config.to_ne_bytes());
        b[8..16].copy_from_slice(&rsp.to_ne_bytes());
        Self::from_bytes(b)
    }

    /// A union holding `pm_ibs`.
    pub fn ibs(v: pmc_md_ibs_op_pmcallocate) -> Self {
        let mut b = [0u8; 32];
        b[0..4].copy_from_slice(&v.ibs_flag.to_ne_bytes());
        b[4..8].copy_from_slice(&v.ibs_type.to_ne_bytes());
        b[8..16].copy_from_slice(&v.ibs_ctl.to_ne_bytes());
        b[16..24].copy_from_slice(&v.ibs_ctl2.to_ne_bytes());
        Self::from_bytes(b)
    }

    /// A union holding `pm_ucf`.
    pub fn ucf(flags: u16) -> Self {
        let mut b = [0u8; 32];
        b[0..2].copy_from_slice(&flags.to_ne_bytes());
        Self::from_bytes(b)
    }

    /// A union holding `pm_ucp`.
    pub fn ucp(config: u32) -> Self {
        let mut b = [0u8; 32];
        b[0..4].copy_from_slice(&config.to_ne_bytes());
        Self::from_bytes(b)
    }

    /// `pm_amd` as read from the bytes.
    pub fn as_amd(&self) -> pmc_md_amd_op_pmcallocate {
        let b = self.to_bytes();
        pmc_md_amd_op_pmcallocate {
            pm_amd_config: u64_at(&b, 0),
            pm_amd_sub_class: u32_at(&b, 8),
        }
    }

    /// `pm_iap` as read from the bytes.
    pub fn as_iap(&self) -> pmc_md_iap_op_pmcallocate {
        let b = self.to_bytes();
        pmc_md_iap_op_pmcallocate {
            pm_iap_config: u32_at(&b, 0),
            pm_iap_rsp: u64_at(&b, 8),
        }
    }

    /// `pm_ibs` as read from the bytes.
    pub fn as_ibs(&self) -> pmc_md_ibs_op_pmcallocate {
        let b = self.to_bytes();
        pmc_md_ibs_op_pmcallocate {
            ibs_flag: u32_at(&b, 0),
            ibs_type: u32_at(&b, 4),
            ibs_ctl: u64_at(&b, 8),
            ibs_ctl2: u64_at(&b, 16),
        }
    }

    /// `pm_ucp` as read from the bytes.
    pub fn as_ucp(&self) -> pmc_md_ucp_op_pmcallocate {
        pmc_md_ucp_op_pmcallocate {
            pm_ucp_config: u32_at(&self.to_bytes(), 0),
        }
    }

    /// `pm_ucf` as read from the bytes.
    pub fn as_ucf(&self) -> pmc_md_ucf_op_pmcallocate {
        let b = self.to_bytes();
        pmc_md_ucf_op_pmcallocate {
            pm_ucf_flags: u16_at(&b, 0),
        }
    }
}

/// `struct pmc_md_cmn600_pmu_op_pmcallocate` (arm64).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_md_cmn600_pmu_op_pmcallocate {
    /// `pma_cmn600_nodeid`.
    pub pma_cmn600_nodeid: u64,
    /// `pma_cmn600_occupancy`.
    pub pma_cmn600_occupancy: u64,
    /// `pma_cmn600_config`.
    pub pma_cmn600_config: u32,
}

/// `struct pmc_md_dmc620_pmu_op_pmcallocate` (arm64).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_md_dmc620_pmu_op_pmcallocate {
    /// `pm_dmc620_match`.
    pub pm_dmc620_match: u64,
    /// `pm_dmc620_mask`.
    pub pm_dmc620_mask: u64,
    /// `pm_dmc620_config`.
    pub pm_dmc620_config: u32,
}

/// The anonymous `struct { uint32_t pm_md_config; }` member of the arm64 union.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct arm64_pmc_md_config {
    /// `pm_md_config`: raw ARMv8 event number when `PMC_F_EV_PMU` is set.
    pub pm_md_config: u32,
}

/// `union pmc_md_op_pmcallocate` for arm64 (32 bytes, fixed by `__pad`).
///
/// Members are private for the same reason as in [`pmc_md_op_pmcallocate`].
#[repr(C)]
#[derive(Clone, Copy)]
pub union arm64_pmc_md_op_pmcallocate {
    pub(super) pm_md: arm64_pmc_md_config,
    pub(super) pm_cmn600: pmc_md_cmn600_pmu_op_pmcallocate,
    pub(super) pm_dmc620: pmc_md_dmc620_pmu_op_pmcallocate,
    pub(super) __pad: [u64; 4],
}

impl Default for arm64_pmc_md_op_pmcallocate {
    fn default() -> Self {
        Self { __pad: [0; 4] }
    }
}

impl core::fmt::Debug for arm64_pmc_md_op_pmcallocate {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("arm64_pmc_md_op_pmcallocate")
            .field("__pad", &self.words())
            .finish()
    }
}

impl arm64_pmc_md_op_pmcallocate {
    /// The union as its four native-endian words (`__pad`).
    pub fn words(&self) -> [u64; 4] {
        // SAFETY: members are private and every constructor initialises all
        // 32 bytes through `__pad`; any bit pattern is a valid `[u64; 4]`.
        unsafe { self.__pad }
    }

    /// A union holding `pm_md_config` (raw ARMv8 event with `PMC_F_EV_PMU`).
    pub fn md_config(config: u32) -> Self {
        let mut b = [0u8; 32];
        b[0..4].copy_from_slice(&config.to_ne_bytes());
        Self {
            __pad: words_of_bytes(b),
        }
    }

    /// `pm_md_config` as read from the bytes.
    pub fn as_md_config(&self) -> u32 {
        u32_at(&bytes_of_words(self.words()), 0)
    }
}
