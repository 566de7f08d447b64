//! Reading this machine's CPU identity with the `cpuid` instruction (x86_64
//! only; elsewhere `None`: Linux reads `/proc/cpuinfo` instead, FreeBSD
//! arm64 falls back to hwpmc's `pm_cputype`).

use crate::{CpuId, X86Vendor};

/// This CPU's vendor, display family, model and stepping from CPUID leaves
/// 0 and 1 (Intel SDM vol. 2A, CPUID; AMD APM vol. 3, "Family/Model").
#[cfg(target_arch = "x86_64")]
pub fn host() -> Option<CpuId> {
    use core::arch::x86_64::__cpuid;
    // SAFETY: CPUID exists on every x86_64 CPU and only reads identification
    // registers; leaves 0 and 1 are always valid. (`__cpuid` is a safe fn on
    // newer toolchains, hence the allow.)
    #[allow(unused_unsafe)]
    let (l0, l1) = unsafe { (__cpuid(0), __cpuid(1)) };
    let mut v = [0u8; 12];
    v[..4].copy_from_slice(&l0.ebx.to_le_bytes());
    v[4..8].copy_from_slice(&l0.edx.to_le_bytes());
    v[8..].copy_from_slice(&l0.ecx.to_le_bytes());
    let vendor = match &v {
        b"GenuineIntel" => X86Vendor::Intel,
        b"AuthenticAMD" | b"HygonGenuine" => X86Vendor::Amd,
        _ => X86Vendor::Other,
    };
    Some(decode_leaf1(vendor, l1.eax))
}

/// Not x86_64: no CPUID.
#[cfg(not(target_arch = "x86_64"))]
pub fn host() -> Option<CpuId> {
    None
}

/// Display family/model/stepping from CPUID.1:EAX.
pub fn decode_leaf1(vendor: X86Vendor, eax: u32) -> CpuId {
    let base_family = (eax >> 8) & 0xF;
    let family = if base_family == 0xF {
        base_family + ((eax >> 20) & 0xFF)
    } else {
        base_family
    };
    let mut model = (eax >> 4) & 0xF;
    if base_family == 0x6 || base_family == 0xF {
        model |= ((eax >> 16) & 0xF) << 4;
    }
    CpuId::X86 {
        vendor,
        family,
        model,
        stepping: eax & 0xF,
    }
}
