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

/// The hypervisor's vendor signature, CPUID leaf `0x4000_0000`'s EBX, ECX and
/// EDX, when CPUID.1:ECX bit 31 says a hypervisor is there (`None` on bare
/// metal and off x86_64). KVM with Hyper-V enlightenments answers `Microsoft
/// Hv` there and its own `KVMKVMKVM` at `0x4000_0100`, which is preferred.
/// [`hypervisor_name`](crate::hypervisor_name) names it.
#[cfg(target_arch = "x86_64")]
pub fn hypervisor_signature() -> Option<[u8; 12]> {
    use core::arch::x86_64::__cpuid;
    // SAFETY: CPUID exists on every x86_64 CPU and only reads identification
    // registers. Leaf 1 is always valid; the hypervisor leaves 0x4000_0000
    // and 0x4000_0100 are read only when leaf 1 reports a hypervisor, and a
    // leaf a CPU lacks answers some other leaf's data, never a fault.
    #[allow(unused_unsafe)]
    let l1 = unsafe { __cpuid(1) };
    if l1.ecx & (1 << 31) == 0 {
        return None;
    }
    let sig = |leaf: u32| {
        // SAFETY: as above.
        #[allow(unused_unsafe)]
        let r = unsafe { __cpuid(leaf) };
        let mut v = [0u8; 12];
        v[..4].copy_from_slice(&r.ebx.to_le_bytes());
        v[4..8].copy_from_slice(&r.ecx.to_le_bytes());
        v[8..].copy_from_slice(&r.edx.to_le_bytes());
        v
    };
    let first = sig(0x4000_0000);
    // Leaf 0x4000_0000's EAX is Hyper-V's own highest leaf then, not KVM's: read the
    // KVM leaf and take it only if it holds KVM's signature.
    if &first == b"Microsoft Hv" {
        let kvm = sig(0x4000_0100);
        if &kvm == b"KVMKVMKVM\0\0\0" {
            return Some(kvm);
        }
    }
    Some(first)
}

/// Not x86_64: no CPUID.
#[cfg(not(target_arch = "x86_64"))]
pub fn hypervisor_signature() -> Option<[u8; 12]> {
    None
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
