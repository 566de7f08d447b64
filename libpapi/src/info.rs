//! What the library says about events and itself: event names and codes,
//! `PAPI_event_info_t`, enumeration, `PAPI_component_info_t`, and the
//! hardware counters the component has.

use std::ffi::c_int;

use pmc_facade::{Allocation, Backend, EventSpec, Group};

use crate::abi::*;
use crate::error::{fail, PapiError, R};
use crate::natives;
use crate::presets::{self, Derived};
use crate::state::{self, Lib, CIDX, COMPONENT_NAME};

/// Whether a code is a preset's (and not a user-defined event's).
fn is_preset(code: u32) -> bool {
    code & PAPI_PRESET_MASK != 0 && code & PAPI_NATIVE_MASK == 0
}

/// `PAPI_event_code_to_name`.
pub(crate) fn code_to_name<B: Backend>(lib: &mut Lib<B>, code: u32) -> R<String> {
    if is_preset(code) {
        return presets::def((code & !PAPI_PRESET_MASK) as usize)
            .map(|d| d.name.to_owned())
            .ok_or_else(|| PapiError::new(PAPI_ENOTPRESET, format!("{code:#x} is not a preset")));
    }
    if natives::index_of(code).is_some() {
        lib.ensure_listed();
        return lib
            .natives
            .get(code)
            .map(|n| n.name.clone())
            .ok_or_else(|| PapiError::new(PAPI_ENOEVNT, format!("no native event {code:#x}")));
    }
    fail(PAPI_ENOEVNT, format!("{code:#x} is not an event code"))
}

/// `PAPI_query_event`: whether the event can be counted here.
pub(crate) fn query<B: Backend>(lib: &mut Lib<B>, code: u32) -> R<()> {
    if is_preset(code) {
        let i = (code & !PAPI_PRESET_MASK) as usize;
        return match lib.presets().get(i) {
            Some(_) => Ok(()),
            None => fail(
                PAPI_ENOEVNT,
                format!("preset {code:#x} cannot be counted here"),
            ),
        };
    }
    if natives::index_of(code).is_some() {
        lib.ensure_listed();
        return match lib.natives.get(code) {
            Some(_) => Ok(()),
            None => fail(PAPI_ENOEVNT, format!("no native event {code:#x}")),
        };
    }
    fail(PAPI_ENOEVNT, format!("{code:#x} is not an event code"))
}

/// Fills `info` (zeroed by the caller) for an event code.
pub(crate) fn event_info<B: Backend>(
    lib: &mut Lib<B>,
    code: u32,
    info: &mut PAPI_event_info_t,
) -> R<()> {
    if is_preset(code) {
        let i = (code & !PAPI_PRESET_MASK) as usize;
        let Some(d) = presets::def(i) else {
            return fail(PAPI_ENOTPRESET, format!("{code:#x} is not a preset"));
        };
        info.event_code = code;
        set_str(&mut info.symbol, d.name);
        set_str(&mut info.short_descr, d.short);
        set_str(&mut info.long_descr, d.long);
        info.event_type = d.category;
        info.component_index = -1;
        match lib.presets().get(i).cloned() {
            Some(m) => {
                info.component_index = CIDX;
                info.count = m.codes.len() as u32;
                set_str(&mut info.derived, m.derived.name());
                if m.derived != Derived::Plain {
                    set_str(&mut info.postfix, &postfix(m.derived, m.codes.len()));
                }
                set_str(&mut info.note, m.note);
                for (k, c) in m.codes.iter().enumerate().take(PAPI_MAX_INFO_TERMS) {
                    info.code[k] = *c;
                    if let Some(n) = lib.natives.get(*c) {
                        set_str(&mut info.name[k], &n.name);
                    }
                }
            }
            None => set_str(&mut info.derived, Derived::Plain.name()),
        }
        return Ok(());
    }
    if natives::index_of(code).is_some() {
        lib.ensure_listed();
        let Some(n) = lib.natives.get(code) else {
            return fail(PAPI_ENOEVNT, format!("no native event {code:#x}"));
        };
        info.event_code = code;
        set_str(&mut info.symbol, &n.name);
        set_str(&mut info.long_descr, &n.description);
        info.component_index = CIDX;
        if n.spec.is_time() {
            set_str(&mut info.units, "nsec");
        }
        info.location = PAPI_LOCATION_CPU;
        info.data_type = PAPI_DATATYPE_INT64;
        info.value_type = PAPI_VALUETYPE_RUNNING_SUM;
        return Ok(());
    }
    fail(PAPI_ENOEVNT, format!("{code:#x} is not an event code"))
}

/// PAPI's postfix string of a sum or difference of `n` terms (`N0|N1|+|`).
pub(crate) fn postfix(d: Derived, n: usize) -> String {
    let op = if d == Derived::Sub { "-" } else { "+" };
    let mut s = "N0|".to_owned();
    for i in 1..n {
        s.push_str(&format!("N{i}|{op}|"));
    }
    s
}

/// `PAPI_enum_event` / `PAPI_enum_cmp_event`: the code after `code` that
/// `modifier` selects.
pub(crate) fn enumerate<B: Backend>(lib: &mut Lib<B>, code: u32, modifier: c_int) -> R<u32> {
    if is_preset(code) {
        let start = (code & !PAPI_PRESET_MASK) as usize;
        let n = crate::preset_table::PRESETS.len();
        let pick = |lib: &mut Lib<B>, i: usize| -> bool {
            match modifier {
                PAPI_ENUM_EVENTS => true,
                PAPI_PRESET_ENUM_AVAIL => lib.presets().get(i).is_some(),
                m @ PAPI_PRESET_ENUM_MSC..=PAPI_PRESET_ENUM_FP => {
                    presets::def(i).is_some_and(|d| d.category & (1 << m) != 0)
                }
                _ => false,
            }
        };
        if modifier == PAPI_ENUM_FIRST {
            return Ok(PAPI_PRESET_MASK);
        }
        if !(PAPI_ENUM_EVENTS..=PAPI_PRESET_ENUM_FP).contains(&modifier) {
            return fail(
                PAPI_EINVAL,
                format!("enumeration modifier {modifier} is not one for presets"),
            );
        }
        for i in start + 1..n {
            if pick(lib, i) {
                return Ok(PAPI_PRESET_MASK | i as u32);
            }
        }
        return fail(PAPI_ENOEVNT, "no more presets");
    }
    if natives::index_of(code).is_some() {
        lib.ensure_listed();
        match modifier {
            PAPI_ENUM_FIRST => lib.natives.listed_codes().next().ok_or_else(|| {
                PapiError::new(PAPI_ENOEVNT, "the component has no native events here")
            }),
            PAPI_ENUM_EVENTS => lib
                .natives
                .listed_codes()
                .find(|&c| c > code)
                .ok_or_else(|| PapiError::new(PAPI_ENOEVNT, "no more native events")),
            // Its events have no unit masks to enumerate (PAPI_NTV_ENUM_UMASKS):
            // modifiers are written :u, :k, :h after the name.
            PAPI_NTV_ENUM_UMASKS => fail(PAPI_ENOEVNT, "the event has no unit masks"),
            _ => fail(
                PAPI_EINVAL,
                format!("enumeration modifier {modifier} is not one for native events"),
            ),
        }
    } else {
        fail(
            PAPI_EINVAL,
            format!("{code:#x} is neither a preset nor a native code"),
        )
    }
}

/// Hardware counters of the component: how many `instructions` events the
/// PMU counts together on the calling thread (the group the kernel
/// schedules, with whatever counter the NMI watchdog holds taken away); 0
/// without a hardware PMU. Measured once.
pub(crate) fn hardware_counters<B: Backend>(lib: &mut Lib<B>) -> c_int {
    lib.ensure_listed();
    if let Some(n) = lib.counters {
        return n;
    }
    let target = lib.thread_target();
    let n = match (&lib.backend, lib.natives.pmc_available("instructions")) {
        (Ok(b), true) => {
            let spec: EventSpec = "instructions:u"
                .parse()
                .unwrap_or_else(|_| EventSpec::portable(pmc_facade::PortableEvent::Instructions));
            let mut fits = 0;
            for k in 1..=32usize {
                let allocs: Vec<Allocation> =
                    (0..k).map(|_| Allocation::counting(spec.clone())).collect();
                let ok = b.allocate_group(&allocs).and_then(|mut g| {
                    g.attach(target)?;
                    g.start()?;
                    let r = g.read()?;
                    Ok(r.iter().all(|r| r.time_running > 0))
                });
                if ok.unwrap_or(false) {
                    fits = k;
                } else {
                    break;
                }
            }
            fits as c_int
        }
        _ => 0,
    };
    lib.counters = Some(n);
    n
}

/// The component's description.
pub(crate) fn component_description() -> &'static str {
    if cfg!(target_os = "freebsd") {
        "pmc: FreeBSD hwpmc counters"
    } else {
        "pmc: Linux perf_event counters"
    }
}

/// The component's facts known without the library (before
/// `PAPI_library_init`, which `PAPI_disable_component` needs).
pub(crate) fn component_static(c: &mut PAPI_component_info_t) {
    set_str(&mut c.name, COMPONENT_NAME);
    set_str(&mut c.short_name, COMPONENT_NAME);
    set_str(&mut c.description, component_description());
    set_str(&mut c.version, env!("CARGO_PKG_VERSION"));
    set_str(&mut c.kernel_version, &crate::sys::os::kernel_release());
    c.CmpIdx = CIDX;
    c.num_mpx_cntrs = state::max_events() as c_int;
    c.default_domain = PAPI_DOM_USER;
    c.available_domains = state::AVAILABLE_DOMAINS;
    c.default_granularity = state::default_granularity();
    c.available_granularities = state::available_granularities();
    // attach_must_ptrace as PAPI's perf_event component says it: programs
    // that follow it (PAPI's attach tests) stop the target with ptrace
    // before attaching and resume it after; pmc needs no ptrace, and a
    // program that trusted a 0 would wait for a target it never resumed.
    c.flags = CMP_HARDWARE_INTR
        | CMP_KERNEL_PROFILE
        | CMP_KERNEL_MULTIPLEX
        | CMP_ATTACH
        | CMP_ATTACH_MUST_PTRACE
        | CMP_CPU
        | CMP_INHERIT
        | CMP_FAST_REAL_TIMER;
}

/// The CPU's clock in MHz, measured where the system does not say it
/// (arm64 without cpufreq, a VM's emulated CPU): cycles over task-clock
/// nanoseconds while the calling thread spins for 2 ms of CPU time. `None`
/// without a PMU that counts cycles.
pub(crate) fn measure_mhz() -> Option<i32> {
    use pmc_facade::Native;
    let b = Native::open().ok()?;
    let target = if b.name().starts_with("freebsd") {
        pmc_facade::Target::Current
    } else {
        pmc_facade::Target::CurrentThread
    };
    for cycles in ["cycles", "cycles:u"] {
        let allocs = [
            Allocation::counting(cycles.parse().ok()?),
            Allocation::counting(EventSpec::portable(pmc_facade::PortableEvent::TaskClock)),
        ];
        let Ok(mut g) = b.allocate_group(&allocs) else {
            continue;
        };
        if g.attach(target).and_then(|()| g.start()).is_err() {
            continue;
        }
        let t0 = crate::sys::os::virt_nsec();
        let mut x = 0u64;
        while crate::sys::os::virt_nsec() - t0 < 2_000_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        let r = g.read().ok()?;
        let _ = g.stop();
        let (c, ns) = (r.first()?.value, r.get(1)?.value);
        if c > 0 && ns > 0 {
            return i32::try_from((u128::from(c) * 1000 / u128::from(ns)) as u64).ok();
        }
    }
    None
}

/// Fills the component's information (zeroed by the caller; `pmu_names`
/// is the caller's).
pub(crate) fn component_info<B: Backend>(lib: &mut Lib<B>, c: &mut PAPI_component_info_t) {
    lib.ensure_listed();
    component_static(c);
    let backend_name = lib.backend.as_ref().map_or("none", |b| b.name());
    set_str(
        &mut c.support_version,
        &format!("pmc {} backend", backend_name),
    );
    if let Err((code, why)) = &lib.backend {
        c.disabled = *code;
        set_str(&mut c.disabled_reason, why);
    }
    c.initialized = 1;
    c.num_cntrs = hardware_counters(lib);
    c.num_preset_events = lib.presets().available() as c_int;
    c.num_native_events = lib.natives.listed_count() as c_int;
    c.default_domain = lib.def_domain;
    c.default_granularity = lib.def_granularity;
    c.available_granularities = lib.granularities();
}
