//! The mapping between hwpmc's `PMC_F_*` flags and pmc-log's `FLAG_*` bits,
//! an imported PMC's event code and flags, and the fixed-code event names.

use super::consts::*;
use crate::record::*;
use std::borrow::Cow;

pub(super) fn text(b: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(b)
}

/// pmc-log's `FLAG_*` bits and the hwpmc `PMC_F_*` flag each stands for:
/// the one mapping between them, read both ways ([`map_flags`],
/// [`pmc_f_flags`]). `FLAG_DWARF_CALLCHAIN` has no hwpmc flag (FreeBSD
/// unwinds by frame pointers only).
const FLAG_TO_PMC_F: [(u32, u32); 5] = [
    (FLAG_DESCENDANTS, PMC_F_DESCENDANTS),
    (FLAG_CALLCHAIN, PMC_F_CALLCHAIN),
    (FLAG_LOG_PROCEXIT, PMC_F_LOG_PROCEXIT),
    (FLAG_LOG_PROCCSW, PMC_F_LOG_PROCCSW),
    (FLAG_USERCALLCHAIN, PMC_F_USERCALLCHAIN),
];

/// hwpmc `PMC_F_*` flags to pmc-log `FLAG_*` bits (flags without a
/// pmc-log bit, as `PMC_F_EV_PMU`, are dropped).
pub fn map_flags(f: u32) -> u32 {
    FLAG_TO_PMC_F
        .iter()
        .filter(|&&(_, pmc_f)| f & pmc_f != 0)
        .fold(0, |out, &(bit, _)| out | bit)
}

/// pmc-log `FLAG_*` bits to hwpmc `PMC_F_*` flags, the inverse of
/// [`map_flags`] (bits without an hwpmc flag are dropped).
pub fn pmc_f_flags(log: u32) -> u32 {
    FLAG_TO_PMC_F
        .iter()
        .filter(|&&(bit, _)| log & bit != 0)
        .fold(0, |out, &(_, pmc_f)| out | pmc_f)
}

/// A `key=0x..` value of an imported PMC's native configuration.
fn native_hex(native: &str, key: &str) -> Option<u32> {
    native
        .split(',')
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix("=0x"))
        .and_then(|v| u32::from_str_radix(v, 16).ok())
}

/// The kernel's event code and `PMC_F_*` flags of a PMC imported from an
/// hwpmc log, as its PMCALLOCATE(DYN) record wrote them (kept in
/// [`PmcDescriptor::native_config`] as `event=0x..,flags=0x..`); `None`
/// for a PMC of pmc's own logs.
pub fn imported_allocation(p: &PmcDescriptor<'_>) -> Option<(u32, u32)> {
    let native = &*p.native_config;
    native_hex(native, "event").zip(native_hex(native, "flags"))
}

/// A PMC's `PMC_F_*` flags as hwpmc's `pl_flags` carries them: an imported
/// PMC's as its record wrote them, else its `FLAG_*` bits mapped
/// ([`pmc_f_flags`]). What `pmcstat -R` prints and libpmc's pmclog gives a
/// C client, for the same log.
pub fn pl_flags(p: &PmcDescriptor<'_>) -> u32 {
    imported_allocation(p).map_or_else(|| pmc_f_flags(p.flags), |(_, f)| f)
}

/// Names of the few fixed-code events the log can name without the
/// pmu-events table of the recording machine.
pub(super) fn event_name(event: u32) -> Option<&'static str> {
    Some(match event {
        0x1000 => "TSC",
        0x2000 => "ibs-fetch",
        0x2001 => "ibs-op",
        0x14800 => "MPERF",
        0x14801 => "APERF",
        _ => return None,
    })
}
