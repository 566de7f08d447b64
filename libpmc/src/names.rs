//! The names `pmc_name_of_*` return: libpmc's tables (`libpmc.c`'s
//! `pmc_class_names`, `pmc_mode_names`... built from `<sys/pmc.h>`'s
//! `__PMC_*` lists, each the symbol's name without its prefix), here the
//! tables generated with the headers from `abi/headers.toml`; and the event
//! codes this library gives the events it counts.

use std::ffi::{CStr, CString};
use std::sync::Mutex;

use crate::abi::*;

fn find(table: &'static [(u32, &'static CStr)], v: u32) -> Option<&'static CStr> {
    table.iter().find(|(c, _)| *c == v).map(|(_, n)| *n)
}

/// `pmc_name_of_capability`: one capability bit's name.
pub(crate) fn capability(bit: u32) -> Option<&'static CStr> {
    if !bit.is_power_of_two() {
        return None;
    }
    find(NAMES_PMC_CAPS, bit)
}

/// `pmc_name_of_class` (the current name where an older tree's class shares
/// a value: 3 is IBS).
pub(crate) fn class(c: u32) -> Option<&'static CStr> {
    find(NAMES_PMC_CLASS, c)
}

/// `pmc_name_of_mode`.
pub(crate) fn mode(m: u32) -> Option<&'static CStr> {
    (m <= PMC_MODE_LAST)
        .then(|| find(NAMES_PMC_MODE, m))
        .flatten()
}

/// `pmc_name_of_state`: `PMC_STATE_FIRST` to `PMC_STATE_LAST` (not `MAX`).
pub(crate) fn state(s: u32) -> Option<&'static CStr> {
    (s <= PMC_STATE_LAST)
        .then(|| find(NAMES_PMC_STATE, s))
        .flatten()
}

/// `pmc_name_of_disposition`: `PMC_DISP_FIRST` to `PMC_DISP_LAST`, as
/// libpmc checks (its `LAST` is `THREAD`: `UNKNOWN` is a sentinel).
pub(crate) fn disposition(d: u32) -> Option<&'static CStr> {
    (d <= PMC_DISP_LAST)
        .then(|| find(NAMES_PMC_DISP, d))
        .flatten()
}

/// `pmc_name_of_cputype`.
pub(crate) fn cputype(t: u32) -> Option<&'static CStr> {
    find(NAMES_PMC_CPUTYPE, t)
}

/// The SOFT events of FreeBSD's kernel that Linux can count, in code order
/// from `PMC_EV_SOFT_FIRST` (the kernel hands SOFT codes out as it
/// registers them; these are this library's). Linux's other software events
/// (`context-switches`, `minor-faults`...) and tracepoints get codes from
/// `PMC_EV_LINUX_FIRST`.
pub(crate) const SOFT_EVENTS: [&CStr; 4] = [
    c"SOFT-PAGE_FAULT.ALL",
    c"SOFT-CLOCK.HARD",
    c"SOFT-CLOCK.STAT",
    c"SOFT-CLOCK.PROF",
];

/// The SOFT code of a FreeBSD SOFT name (`SOFT-PAGE_FAULT.ALL`,
/// `PAGE_FAULT.ALL`, any case), if it is one of [`SOFT_EVENTS`].
pub(crate) fn soft_code(spec: &str) -> Option<u32> {
    let up = spec.trim().to_ascii_uppercase().replace('_', "-");
    let bare = up.strip_prefix("SOFT-").unwrap_or(&up);
    SOFT_EVENTS
        .iter()
        .position(|n| {
            let n = n.to_str().unwrap_or("").replace('_', "-");
            n.strip_prefix("SOFT-") == Some(bare)
        })
        .and_then(|i| u32::try_from(i).ok())
        .map(|i| PMC_EV_SOFT_FIRST + i)
}

/// `pmc_name_of_event` for the fixed codes: `enum pmc_event`'s (each event
/// without its class, as libpmc's tables name them) and the SOFT ones.
pub(crate) fn fixed_event(e: u32) -> Option<&'static CStr> {
    if let Ok(i) = NAMES_PMC_EVENT.binary_search_by_key(&e, |(c, _)| *c) {
        return Some(NAMES_PMC_EVENT[i].1);
    }
    let i = e.checked_sub(PMC_EV_SOFT_FIRST)? as usize;
    SOFT_EVENTS.get(i).copied()
}

/// The names of the events with codes from `PMC_EV_LINUX_FIRST`, one per
/// distinct name, for the life of the process. Process-wide, not tied to
/// `pmc_init`: a log reader registers the names its logs declare.
static DYNAMIC: Mutex<Vec<CString>> = Mutex::new(Vec::new());

/// The most dynamic event names a process keeps (each new name of a log or
/// an allocation takes one; past this, events get no code).
const DYNAMIC_MAX: usize = 1 << 16;

/// The code of an event this library names with no fixed code: the same
/// code for the same name in this process, `PMC_EV_LINUX_FIRST` on. `None`
/// when the table is full.
pub(crate) fn dynamic_code(name: &str) -> Option<u32> {
    let name = CString::new(name.replace('\0', "")).ok()?;
    let mut t = DYNAMIC.lock().unwrap_or_else(|p| p.into_inner());
    let i = match t.iter().position(|n| *n == name) {
        Some(i) => i,
        None if t.len() < DYNAMIC_MAX => {
            t.push(name);
            t.len() - 1
        }
        None => return None,
    };
    PMC_EV_LINUX_FIRST.checked_add(u32::try_from(i).ok()?)
}

/// The code an event spec gets: a FreeBSD SOFT name's code, else a
/// dynamic one for its name (0 if the table is full).
pub(crate) fn event_code(spec: &str) -> u32 {
    soft_code(spec)
        .or_else(|| dynamic_code(spec.trim()))
        .unwrap_or(0)
}

/// `pmc_name_of_event`: fixed codes, then the dynamic ones. The pointer
/// stays valid for the process's life (a `CString`'s bytes do not move when
/// the table grows, and entries are never removed).
pub(crate) fn event(code: u32) -> Option<*const std::ffi::c_char> {
    if let Some(n) = fixed_event(code) {
        return Some(n.as_ptr());
    }
    let i = code.checked_sub(PMC_EV_LINUX_FIRST)? as usize;
    let t = DYNAMIC.lock().unwrap_or_else(|p| p.into_inner());
    t.get(i).map(|n| n.as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_libpmc_tables() {
        assert_eq!(capability(1 << 5), Some(c"READ"));
        assert_eq!(capability(3), None);
        assert_eq!(capability(0), None);
        assert_eq!(capability(1 << 13), Some(c"DOMWIDE"));
        assert_eq!(capability(1 << 14), None);
        assert_eq!(class(0x0F), Some(c"SOFT"));
        assert_eq!(class(0x03), Some(c"IBS"));
        assert_eq!(class(0x01), Some(c"K7"));
        assert_eq!(class(0x40), None);
        assert_eq!(mode(3), Some(c"TC"));
        assert_eq!(mode(4), None);
        assert_eq!(state(4), Some(c"RUNNING"));
        assert_eq!(state(PMC_STATE_MAX), None);
        assert_eq!(disposition(2), Some(c"THREAD"));
        assert_eq!(disposition(3), None);
        assert_eq!(cputype(0x400), Some(c"GENERIC"));
        assert_eq!(cputype(0x86), Some(c"INTEL_PIV"));
        assert_eq!(fixed_event(0x1000), Some(c"TSC"));
        assert_eq!(
            fixed_event(PMC_EV_K8_BU_CPU_CLK_UNHALTED),
            Some(c"BU_CPU_CLK_UNHALTED")
        );
        assert_eq!(PMC_EV_K8_BU_CPU_CLK_UNHALTED, 0x2098);
        assert_eq!(PMC_EV_K8_FR_RETIRED_X86_INSTRUCTIONS, 0x20A6);
        assert_eq!(PMC_EV_K8_LAST, 0x20CF);
        assert_eq!(fixed_event(0x20000), Some(c"SOFT-PAGE_FAULT.ALL"));
        assert_eq!(fixed_event(0x20000 + 4), None);
        assert_eq!(soft_code("page_fault.all"), Some(0x20000));
        assert_eq!(soft_code("SOFT-CLOCK.PROF"), Some(0x20003));
        assert_eq!(soft_code("page-faults"), None);
    }

    #[test]
    fn dynamic_codes_are_one_per_name() {
        let a = dynamic_code("sched:sched_switch").expect("a code");
        let b = dynamic_code("raw_syscalls:sys_enter").expect("a code");
        assert_ne!(a, b);
        assert_eq!(dynamic_code("sched:sched_switch"), Some(a));
        let t = DYNAMIC.lock().expect("table");
        let i = (a - PMC_EV_LINUX_FIRST) as usize;
        assert_eq!(t[i].as_c_str(), c"sched:sched_switch");
        drop(t);
        assert!(event(a).is_some() && event(b).is_some());
    }
}
