//! Components and the machine: component and hardware information,
//! the executable and its libraries, memory, default domain and
//! granularity, multiplexing and attaching; devices (none here).

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::{Mutex, OnceLock};

use super::{entry, leak, null, ok, ptr_entry, put, str_arg, zeroed_c, Leaked};
use crate::abi::*;
use crate::error::{fail, PapiError};
use crate::{hwinfo, info, state};

/// `PAPI_num_components`: 1, pmc's.
#[no_mangle]
pub extern "C" fn PAPI_num_components() -> c_int {
    1
}

/// `PAPI_get_component_index`: 0 for `pmc` (and `perf_event`, the
/// component whose events and role it takes), else `PAPI_ENOCMP`.
///
/// # Safety
/// `name` is NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn PAPI_get_component_index(name: *const c_char) -> c_int {
    entry(|| {
        // SAFETY: NULL or a C string by the contract, read within this call.
        let n = unsafe { str_arg(name, "name") }?;
        if n == state::COMPONENT_NAME || n == "perf_event" {
            Ok(state::CIDX)
        } else {
            fail(
                PAPI_ENOCMP,
                format!("no component {n:?}: this library has one, pmc"),
            )
        }
    })
}

/// `PAPI_disable_component`: before `PAPI_library_init` only.
#[no_mangle]
pub extern "C" fn PAPI_disable_component(cidx: c_int) -> c_int {
    entry(|| ok(state::disable_component(cidx)))
}

/// `PAPI_disable_component_by_name`.
///
/// # Safety
/// `name` is NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn PAPI_disable_component_by_name(name: *const c_char) -> c_int {
    // SAFETY: forwarded under the same contract.
    let cidx = unsafe { PAPI_get_component_index(name) };
    if cidx < 0 {
        return cidx;
    }
    PAPI_disable_component(cidx)
}

static COMPONENT: Mutex<Option<Leaked<PAPI_component_info_t>>> = Mutex::new(None);

/// `PAPI_get_component_info`: the pmc component's (index 0), NULL for others.
#[no_mangle]
pub extern "C" fn PAPI_get_component_info(cidx: c_int) -> *const PAPI_component_info_t {
    ptr_entry(|| {
        state::check_cidx(cidx)
            .map_err(|_| PapiError::new(PAPI_ENOCMP, format!("no component {cidx}")))?;
        let mut c: PAPI_component_info_t = zeroed_c();
        let pmus = match state::with_lib(|lib| {
            info::component_info(lib, &mut c);
            Ok(lib.natives.pmus())
        }) {
            Ok(p) => p,
            Err(_) => {
                info::component_static(&mut c);
                Vec::new()
            }
        };
        let mut g = COMPONENT.lock().unwrap_or_else(|p| p.into_inner());
        let slot = g.get_or_insert_with(|| Leaked(leak(zeroed_c::<PAPI_component_info_t>())));
        // The PMU names: leaked C strings, kept across calls.
        // SAFETY: `slot.0` is the leaked component info, written only here under the lock.
        let old = unsafe { &*slot.0 };
        for (k, name) in pmus.iter().take(PAPI_PMU_MAX).enumerate() {
            let same = !old.pmu_names[k].is_null()
                // SAFETY: a C string this function leaked earlier.
                && unsafe { CStr::from_ptr(old.pmu_names[k]) }.to_bytes() == name.as_bytes();
            c.pmu_names[k] = if same {
                old.pmu_names[k]
            } else {
                CString::new(name.replace('\0', "?"))
                    .unwrap_or_default()
                    .into_raw()
            };
        }
        // SAFETY: as above: the leaked pointee, under the lock.
        unsafe { slot.0.write(c) };
        Ok(slot.0 as *const PAPI_component_info_t)
    })
}

/// `PAPI_num_cmp_hwctrs`: the component's hardware counters.
#[no_mangle]
pub extern "C" fn PAPI_num_cmp_hwctrs(cidx: c_int) -> c_int {
    entry(|| {
        state::check_cidx(cidx).map_err(|e| PapiError::new(PAPI_ECMP, e.message))?;
        state::with_lib(|lib| Ok(info::hardware_counters(lib)))
    })
}

/// `PAPI_num_hwctrs`: `PAPI_num_cmp_hwctrs(0)`.
#[no_mangle]
pub extern "C" fn PAPI_num_hwctrs() -> c_int {
    PAPI_num_cmp_hwctrs(0)
}

static HW_INFO: OnceLock<Box<PAPI_hw_info_t>> = OnceLock::new();

pub(super) fn hw_info() -> &'static PAPI_hw_info_t {
    HW_INFO.get_or_init(|| {
        let mut h: PAPI_hw_info_t = zeroed_c();
        let mut f = hwinfo::facts();
        if f.max_mhz == 0 {
            if let Some(m) = info::measure_mhz() {
                f.max_mhz = m;
                f.min_mhz = m;
            }
        }
        hwinfo::fill_hw_info(&f, &mut h);
        Box::new(h)
    })
}

/// `PAPI_get_hardware_info`.
#[no_mangle]
pub extern "C" fn PAPI_get_hardware_info() -> *const PAPI_hw_info_t {
    ptr_entry(|| {
        state::with_lib(|_| Ok(()))?;
        Ok(hw_info() as *const PAPI_hw_info_t)
    })
}

/// CPU MHz for the cycle timers (1000 when unknown: then a cycle is a ns).
pub(super) fn mhz() -> i64 {
    match hw_info().cpu_max_mhz {
        m if m > 0 => i64::from(m),
        _ => 1000,
    }
}

static EXE_INFO: Mutex<Option<Leaked<PAPI_exe_info_t>>> = Mutex::new(None);

/// `PAPI_get_executable_info`: the program's path and its text, data and
/// bss ranges (`/proc/self/maps`).
#[no_mangle]
pub extern "C" fn PAPI_get_executable_info() -> *const PAPI_exe_info_t {
    ptr_entry(|| {
        state::with_lib(|_| Ok(()))?;
        let mut g = EXE_INFO.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(l) = g.as_ref() {
            return Ok(l.0 as *const PAPI_exe_info_t);
        }
        let path = hwinfo::exe_path();
        let mut e: PAPI_exe_info_t = zeroed_c();
        set_str(&mut e.fullname, &path);
        if let Some(o) = hwinfo::maps().iter().find(|o| o.path == path) {
            hwinfo::fill_map(o, true, &mut e.address_info);
        }
        let p = leak(e);
        *g = Some(Leaked(p));
        Ok(p as *const PAPI_exe_info_t)
    })
}

static SHLIB_INFO: Mutex<Option<(Vec<String>, Leaked<PAPI_shlib_info_t>)>> = Mutex::new(None);

/// `PAPI_get_shared_lib_info`: every mapped shared object but the program.
/// A call after the mappings changed (dlopen) returns a new structure;
/// earlier ones stay valid.
#[no_mangle]
pub extern "C" fn PAPI_get_shared_lib_info() -> *const PAPI_shlib_info_t {
    ptr_entry(|| {
        state::with_lib(|_| Ok(()))?;
        let exe = hwinfo::exe_path();
        let objs: Vec<hwinfo::ObjectMap> = hwinfo::maps()
            .into_iter()
            .filter(|o| o.path != exe && o.text != (0, 0))
            .collect();
        let names: Vec<String> = objs.iter().map(|o| o.path.clone()).collect();
        let mut g = SHLIB_INFO.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((n, l)) = g.as_ref() {
            if *n == names {
                return Ok(l.0 as *const PAPI_shlib_info_t);
            }
        }
        let maps: Vec<PAPI_address_map_t> = objs
            .iter()
            .map(|o| {
                let mut m: PAPI_address_map_t = zeroed_c();
                hwinfo::fill_map(o, false, &mut m);
                m
            })
            .collect();
        let count = maps.len() as c_int;
        let map = Box::leak(maps.into_boxed_slice()).as_mut_ptr();
        let p = leak(PAPI_shlib_info_t { map, count });
        *g = Some((names, Leaked(p)));
        Ok(p as *const PAPI_shlib_info_t)
    })
}

/// `PAPI_get_dmem_info`: the process's memory (`/proc/self/status`).
///
/// # Safety
/// `dest` is NULL or a writable `PAPI_dmem_info_t`.
#[no_mangle]
pub unsafe extern "C" fn PAPI_get_dmem_info(dest: *mut PAPI_dmem_info_t) -> c_int {
    entry(|| {
        if dest.is_null() {
            return Err(null("dest"));
        }
        state::with_lib(|_| Ok(()))?;
        let d = hwinfo::dmem_info()
            .ok_or_else(|| PapiError::new(PAPI_ECMP, "no /proc/self/status to read memory from"))?;
        ok(put(dest, "dest", d))
    })
}

/// `PAPI_enum_dev_type`: no device types (sysdetect is PAPI's component, not pmc's).
#[no_mangle]
pub extern "C" fn PAPI_enum_dev_type(_enum_modifier: c_int, _handle: *mut *mut c_void) -> c_int {
    entry(|| {
        fail(
            PAPI_ENOSUPP,
            "device enumeration is PAPI's sysdetect component's; pmc has none",
        )
    })
}

/// `PAPI_get_dev_type_attr`: `PAPI_ENOSUPP`, as `PAPI_enum_dev_type`.
#[no_mangle]
pub extern "C" fn PAPI_get_dev_type_attr(
    _handle: *mut c_void,
    _attr: c_int,
    _value: *mut c_void,
) -> c_int {
    entry(|| {
        fail(
            PAPI_ENOSUPP,
            "device attributes are PAPI's sysdetect component's",
        )
    })
}

/// `PAPI_get_dev_attr`: `PAPI_ENOSUPP`, as `PAPI_enum_dev_type`.
#[no_mangle]
pub extern "C" fn PAPI_get_dev_attr(
    _handle: *mut c_void,
    _id: c_int,
    _attr: c_int,
    _value: *mut c_void,
) -> c_int {
    entry(|| {
        fail(
            PAPI_ENOSUPP,
            "device attributes are PAPI's sysdetect component's",
        )
    })
}
