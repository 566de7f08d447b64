//! `PAPI_set_opt` and `PAPI_get_opt`: the `PAPI_option_t` union read
//! and written member by member.

use std::ffi::{c_char, c_int, c_uint, c_ulong};

use super::init::PAPI_set_debug;
use super::machine::{
    hw_info, PAPI_get_component_info, PAPI_get_executable_info, PAPI_get_hardware_info,
    PAPI_get_shared_lib_info,
};
use super::{entry, null, ok, put};
use crate::abi::*;
use crate::error::{fail, PapiError, R};
use crate::{hwinfo, info, state};

/// `PAPI_set_domain`: the default domain of new event sets.
#[no_mangle]
pub extern "C" fn PAPI_set_domain(domain: c_int) -> c_int {
    entry(|| ok(state::set_default_domain(domain)))
}

/// `PAPI_set_cmp_domain`.
#[no_mangle]
pub extern "C" fn PAPI_set_cmp_domain(domain: c_int, cidx: c_int) -> c_int {
    entry(|| {
        state::check_cidx(cidx)?;
        ok(state::set_default_domain(domain))
    })
}

/// `PAPI_set_granularity`: the default granularity of new event sets.
#[no_mangle]
pub extern "C" fn PAPI_set_granularity(granularity: c_int) -> c_int {
    entry(|| ok(state::set_default_granularity(granularity)))
}

/// `PAPI_set_cmp_granularity`.
#[no_mangle]
pub extern "C" fn PAPI_set_cmp_granularity(granularity: c_int, cidx: c_int) -> c_int {
    entry(|| {
        state::check_cidx(cidx)?;
        ok(state::set_default_granularity(granularity))
    })
}

/// `PAPI_multiplex_init`.
#[no_mangle]
pub extern "C" fn PAPI_multiplex_init() -> c_int {
    entry(|| {
        state::with_lib(|lib| {
            lib.multiplex_inited = true;
            Ok(PAPI_OK)
        })
    })
}

/// `PAPI_set_multiplex`: the kernel multiplexes the set's events, their
/// counts scaled to the whole run.
#[no_mangle]
pub extern "C" fn PAPI_set_multiplex(EventSet: c_int) -> c_int {
    entry(|| ok(state::set_multiplex(EventSet)))
}

/// `PAPI_get_multiplex`: 1 when multiplexed.
#[no_mangle]
pub extern "C" fn PAPI_get_multiplex(EventSet: c_int) -> c_int {
    entry(|| state::get_multiplex(EventSet).map(c_int::from))
}

/// `PAPI_attach`: the set counts thread or process `tid` instead of the caller.
#[no_mangle]
pub extern "C" fn PAPI_attach(EventSet: c_int, tid: c_ulong) -> c_int {
    entry(|| {
        let t = u32::try_from(tid)
            .map_err(|_| PapiError::new(PAPI_EINVAL, format!("no thread {tid}")))?;
        ok(state::attach(EventSet, Some(t)))
    })
}

/// `PAPI_detach`.
#[no_mangle]
pub extern "C" fn PAPI_detach(EventSet: c_int) -> c_int {
    entry(|| ok(state::attach(EventSet, None)))
}

/// The leading words of a `PAPI_option_t`, which every member PAPI_set_opt
/// and PAPI_get_opt read begins with: three ints, and the unsigned long at
/// offset 8 (`attach.tid`).
#[derive(Debug, Clone, Copy)]
struct Words {
    i: [c_int; 3],
    ul8: c_ulong,
}

fn words(o: &PAPI_option_t) -> Words {
    let p = (o as *const PAPI_option_t).cast::<u8>();
    // SAFETY: the union is 264 bytes (its preload member), so bytes 0..16
    // are in bounds; they are read as integers, for which any bit pattern
    // is a value, and unaligned reads make no alignment assumption.
    unsafe {
        Words {
            i: [
                p.cast::<c_int>().read_unaligned(),
                p.add(4).cast::<c_int>().read_unaligned(),
                p.add(8).cast::<c_int>().read_unaligned(),
            ],
            ul8: p.add(8).cast::<c_ulong>().read_unaligned(),
        }
    }
}

/// `PAPI_set_opt`.
///
/// # Safety
/// `ptr_` is NULL or the `PAPI_option_t` the option documents.
#[no_mangle]
pub unsafe extern "C" fn PAPI_set_opt(option: c_int, ptr_: *mut PAPI_option_t) -> c_int {
    entry(|| {
        if ptr_.is_null() {
            return Err(null("ptr"));
        }
        // SAFETY: non-null, a PAPI_option_t by the contract.
        let w = words(unsafe { &*ptr_ });
        // The members' layouts: debug {level}; (def)domain and
        // (def)granularity {def_cidx, eventset, value}; multiplex {eventset,
        // ns, flags}; itimer {num, sig, ns, flags}; attach {eventset, tid};
        // cpu {eventset, cpu_num}; inherit {eventset, inherit}.
        let [w0, w1, w2] = w.i;
        match option {
            PAPI_DEBUG => PAPI_set_debug(w0).into_result(),
            PAPI_DEFDOM => ok(state::set_default_domain(w2)),
            PAPI_DOMAIN => ok(state::set_set_domain(w1, w2)),
            PAPI_DEFGRN => ok(state::set_default_granularity(w2)),
            PAPI_GRANUL => ok(state::set_set_granularity(w1, w2)),
            PAPI_MULTIPLEX => ok(state::set_multiplex(w0)),
            PAPI_DEF_MPX_NS | PAPI_DEF_ITIMER_NS => {
                let ns = if option == PAPI_DEF_MPX_NS { w1 } else { w2 };
                if ns <= 0 {
                    return fail(PAPI_EINVAL, "the interval must be positive");
                }
                state::with_lib(|lib| {
                    lib.mpx_ns = ns;
                    Ok(PAPI_OK)
                })
            }
            PAPI_DEF_ITIMER => state::with_lib(|_| Ok(PAPI_OK)),
            PAPI_ATTACH => {
                let t = u32::try_from(w.ul8)
                    .map_err(|_| PapiError::new(PAPI_EINVAL, format!("no thread {}", w.ul8)))?;
                ok(state::attach(w0, Some(t)))
            }
            PAPI_DETACH => ok(state::attach(w0, None)),
            PAPI_CPU_ATTACH => ok(state::cpu_attach(w0, w1 as u32)),
            PAPI_INHERIT => ok(state::set_inherit(w0, w1 != PAPI_INHERIT_NONE)),
            PAPI_DATA_ADDRESS | PAPI_INSTR_ADDRESS => fail(
                PAPI_ECMP,
                "address-range restriction needs Itanium-style hardware; the pmc component has none",
            ),
            PAPI_USER_EVENTS_FILE => fail(PAPI_ENOSUPP, "user-defined event files are not supported"),
            _ => fail(PAPI_EINVAL, format!("option {option} cannot be set")),
        }
    })
}

trait IntoResult {
    fn into_result(self) -> R<c_int>;
}

impl IntoResult for c_int {
    fn into_result(self) -> R<c_int> {
        if self < 0 {
            Err(PapiError::new(self, "failed"))
        } else {
            Ok(self)
        }
    }
}

/// `PAPI_get_opt`.
///
/// # Safety
/// `ptr_` is NULL or a writable `PAPI_option_t` (some options need one).
#[no_mangle]
pub unsafe extern "C" fn PAPI_get_opt(option: c_int, ptr_: *mut PAPI_option_t) -> c_int {
    entry(|| get_opt(option, ptr_))
}

/// `PAPI_get_cmp_opt`: `PAPI_get_opt` for component `cidx`.
///
/// # Safety
/// As `PAPI_get_opt`.
#[no_mangle]
pub unsafe extern "C" fn PAPI_get_cmp_opt(
    option: c_int,
    ptr_: *mut PAPI_option_t,
    cidx: c_int,
) -> c_int {
    entry(|| {
        state::check_cidx(cidx)?;
        get_opt(option, ptr_)
    })
}

fn get_opt(option: c_int, p: *mut PAPI_option_t) -> R<c_int> {
    // The event set a per-set option names (the caller's ptr->*.eventset:
    // every per-set member starts with it but domain and granularity,
    // whose def_cidx comes first).
    let need = |p: *mut PAPI_option_t| -> R<PAPI_option_t> {
        if p.is_null() {
            return Err(null("ptr"));
        }
        // SAFETY: non-null, a PAPI_option_t of the caller's by the contract.
        Ok(unsafe { p.read() })
    };
    let write = |p: *mut PAPI_option_t, o: PAPI_option_t| put(p, "ptr", o).map(|()| PAPI_OK);
    match option {
        PAPI_DEBUG => {
            let mut o = need(p)?;
            o.debug = PAPI_debug_option_t {
                level: state::debug(),
                handler: None,
            };
            write(p, o)
        }
        PAPI_CLOCKRATE => state::with_lib(|_| Ok(hw_info().cpu_max_mhz)),
        PAPI_MAX_CPUS => state::with_lib(|_| Ok(hwinfo::cpus_configured() as c_int)),
        PAPI_MAX_HWCTRS => state::with_lib(|lib| Ok(info::hardware_counters(lib))),
        PAPI_MAX_MPX_CTRS => state::with_lib(|_| Ok(state::max_events() as c_int)),
        PAPI_DEFDOM => state::with_lib(|lib| Ok(lib.def_domain)),
        PAPI_DEFGRN => state::with_lib(|lib| Ok(lib.def_granularity)),
        PAPI_LIB_VERSION => Ok(PAPI_VERSION),
        PAPI_DOMAIN | PAPI_GRANUL | PAPI_MULTIPLEX | PAPI_ATTACH | PAPI_CPU_ATTACH
        | PAPI_INHERIT => {
            let mut o = need(p)?;
            let [w0, w1, _] = words(&o).i;
            let set = match option {
                PAPI_DOMAIN | PAPI_GRANUL => w1,
                _ => w0,
            };
            let so = state::set_options(set)?;
            let r = match option {
                PAPI_DOMAIN => {
                    o.domain.domain = so.domain;
                    so.domain
                }
                PAPI_GRANUL => {
                    o.granularity.granularity = so.granularity;
                    so.granularity
                }
                PAPI_MULTIPLEX => {
                    o.multiplex.ns = state::with_lib(|lib| Ok(lib.mpx_ns))?;
                    o.multiplex.flags = 0;
                    c_int::from(so.multiplex)
                }
                PAPI_ATTACH => {
                    o.attach.tid = c_ulong::from(so.attach.unwrap_or(0));
                    c_int::from(so.attach.is_some())
                }
                PAPI_CPU_ATTACH => {
                    o.cpu.cpu_num = so.cpu.unwrap_or(0) as c_uint;
                    c_int::from(so.cpu.is_some())
                }
                _ => {
                    o.inherit.inherit = c_int::from(so.inherit);
                    c_int::from(so.inherit)
                }
            };
            write(p, o)?;
            Ok(r)
        }
        PAPI_DEF_MPX_NS | PAPI_DEF_ITIMER_NS | PAPI_DEF_ITIMER => {
            let mut o = need(p)?;
            let ns = state::with_lib(|lib| Ok(lib.mpx_ns))?;
            if option == PAPI_DEF_MPX_NS {
                o.multiplex.ns = ns;
            } else {
                o.itimer = PAPI_itimer_option_t {
                    itimer_num: 0,
                    itimer_sig: 0,
                    ns,
                    flags: 0,
                };
            }
            write(p, o)
        }
        PAPI_PRELOAD => {
            let mut o = need(p)?;
            let mut pre = PAPI_preload_info_t {
                lib_preload_env: [0; PAPI_MAX_STR_LEN],
                lib_preload_sep: b' ' as c_char,
                lib_dir_env: [0; PAPI_MAX_STR_LEN],
                lib_dir_sep: b':' as c_char,
            };
            set_str(&mut pre.lib_preload_env, "LD_PRELOAD");
            set_str(&mut pre.lib_dir_env, "LD_LIBRARY_PATH");
            o.preload = pre;
            write(p, o)
        }
        PAPI_HWINFO => {
            let mut o = need(p)?;
            o.hw_info = PAPI_get_hardware_info().cast_mut();
            write(p, o)
        }
        PAPI_EXEINFO => {
            let mut o = need(p)?;
            o.exe_info = PAPI_get_executable_info().cast_mut();
            write(p, o)
        }
        PAPI_SHLIBINFO => {
            let mut o = need(p)?;
            o.shlib_info = PAPI_get_shared_lib_info().cast_mut();
            write(p, o)
        }
        PAPI_COMPONENTINFO => {
            let mut o = need(p)?;
            o.cmp_info = PAPI_get_component_info(state::CIDX).cast_mut();
            write(p, o)
        }
        _ => fail(PAPI_EINVAL, format!("option {option} cannot be read")),
    }
}
