//! The `config1` bits that ask the kernel for user-space counter reads (aarch64's `rdpmc`
//! format bit), added to a counting event's attr at allocate time. A leaf: the attr side
//! (`counter/open.rs`) asks it, the read side ([`crate::rdpmc`], which reads through a
//! `LinuxPmc`) documents it, and it depends on neither.

use crate::sys::facts::read_trimmed;
use crate::sys::Sys;
use std::path::Path;

/// Parses a sysfs format field that must be exactly one `config1` bit
/// (`config1:1`, the arm64 PMU's `format/rdpmc`) into its mask.
pub(crate) fn config1_bit(format: &str) -> Option<u64> {
    let bit: u32 = format.trim().strip_prefix("config1:")?.parse().ok()?;
    (bit < 64).then(|| 1u64 << bit)
}

/// The `config1` bits to add to a counting event so the kernel lets this
/// thread read it from user space: on aarch64 the armv8 PMU driver grants
/// EL0 access (`PMUSERENR_EL0`, `cap_user_rdpmc`) only to events that ask
/// for it with the `rdpmc` format bit (`config1:1`), and refuses that bit on
/// CPU-bound events (EINVAL). x86 needs no such bit.
///
/// `arch` is the target architecture, `system` whether the allocation is
/// system scope, `sampling` whether it samples, `hardware` whether the event
/// goes to the CPU PMU (generic hardware, cache and raw types, or the type of
/// the PMU whose `format/rdpmc` is `rdpmc_format`), `config1` the bits the
/// event string already set, `long_bit` the PMU's `format/long` mask and
/// `perf_user_access` the sysctl's content. Returns 0 (add nothing) unless
/// user reads are on: an event that cannot use them is opened exactly as
/// asked. A `long` (64-bit) event keeps its config1 untouched, because the
/// kernel refuses user reads of chained counters (EOPNOTSUPP) on PMUs without
/// FEAT_PMUv3p5.
#[allow(clippy::too_many_arguments)]
pub(crate) fn user_read_bits(
    arch: &str,
    system: bool,
    sampling: bool,
    hardware: bool,
    config1: u64,
    rdpmc_format: Option<&str>,
    long_bit: Option<u64>,
    perf_user_access: Option<&str>,
) -> u64 {
    if arch != "aarch64" || system || sampling || !hardware {
        return 0;
    }
    if perf_user_access.map(str::trim) != Some("1") {
        return 0;
    }
    if long_bit.is_some_and(|l| config1 & l != 0) {
        return 0;
    }
    rdpmc_format.and_then(config1_bit).unwrap_or(0)
}

/// [`user_read_bits`] for this machine, for an event of perf type `type_`
/// (read from sysfs: the armv8 PMU directories and `perf_user_access`).
pub(crate) fn machine_user_read_bits(
    sys: &dyn Sys,
    type_: u32,
    config1: u64,
    system: bool,
    sampling: bool,
) -> u64 {
    use perf_event_open_sys::bindings as b;
    let arch = std::env::consts::ARCH;
    if arch != "aarch64" || system || sampling {
        return 0;
    }
    let read = |p: std::path::PathBuf| read_trimmed(sys, p);
    let dir = Path::new(crate::events::PMU_DIR);
    let Ok(names) = sys.read_dir(dir) else {
        return 0;
    };
    // The CPU PMU: an armv8 directory with an rdpmc format field.
    let Some(pmu) = names.iter().map(|n| dir.join(n)).find(|p| {
        p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("armv8"))
            && sys.metadata(&p.join("format/rdpmc")).is_ok()
    }) else {
        return 0;
    };
    let pmu_type = read(pmu.join("type")).and_then(|t| t.trim().parse::<u32>().ok());
    let hardware = matches!(
        type_,
        b::PERF_TYPE_HARDWARE | b::PERF_TYPE_HW_CACHE | b::PERF_TYPE_RAW
    ) || pmu_type == Some(type_);
    let fmt = read(pmu.join("format/rdpmc"));
    let long = read(pmu.join("format/long")).and_then(|f| config1_bit(&f));
    let access = read("/proc/sys/kernel/perf_user_access".into());
    user_read_bits(
        arch,
        system,
        sampling,
        hardware,
        config1,
        fmt.as_deref(),
        long,
        access.as_deref(),
    )
}

#[cfg(test)]
mod tests {
    use super::{config1_bit, user_read_bits};

    #[test]
    fn rdpmc_config1_bit_asks_for_user_reads_only_where_the_kernel_allows() {
        assert_eq!(config1_bit("config1:1\n"), Some(2));
        assert_eq!(config1_bit("config1:0"), Some(1));
        assert_eq!(config1_bit("config:1"), None);
        assert_eq!(config1_bit("config1:64"), None);
        assert_eq!(config1_bit("config1:1-2"), None);
        let on = Some("1\n");
        let f = Some("config1:1\n");
        // A counting, per-thread hardware event on aarch64 with access on.
        assert_eq!(
            user_read_bits("aarch64", false, false, true, 0, f, Some(1), on),
            2
        );
        // Access off or absent, another architecture, system scope (the
        // kernel's EINVAL), sampling, software events: nothing added.
        assert_eq!(
            user_read_bits("aarch64", false, false, true, 0, f, Some(1), Some("0")),
            0
        );
        assert_eq!(
            user_read_bits("aarch64", false, false, true, 0, f, Some(1), None),
            0
        );
        assert_eq!(
            user_read_bits("x86_64", false, false, true, 0, f, Some(1), on),
            0
        );
        assert_eq!(
            user_read_bits("aarch64", true, false, true, 0, f, Some(1), on),
            0
        );
        assert_eq!(
            user_read_bits("aarch64", false, true, true, 0, f, Some(1), on),
            0
        );
        assert_eq!(
            user_read_bits("aarch64", false, false, false, 0, f, Some(1), on),
            0
        );
        // A `long` event is left as asked; a PMU without the field gets nothing.
        assert_eq!(
            user_read_bits("aarch64", false, false, true, 1, f, Some(1), on),
            0
        );
        assert_eq!(
            user_read_bits("aarch64", false, false, true, 0, None, Some(1), on),
            0
        );
    }
}
