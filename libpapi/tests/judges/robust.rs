//! Bad input at every entry point, in this process (the library linked as
//! the rlib): NULL pointers, unknown sets, codes and options, odd strings,
//! calls out of order. Every answer is one of PAPI's error codes (never
//! `PAPI_EBUG`, which a caught panic gives) or NULL; nothing crashes.
//!
//! One test: the calls share the library's global state.

use std::ffi::{c_char, c_int, c_void, CString};
use std::ptr;

use papi::abi::*;
use papi::sys::*;

/// An error code that is PAPI's and not a caught panic.
fn refused(code: c_int, what: &str) {
    assert!(code < 0, "{what}: {code} is not an error");
    assert!(
        code > -(PAPI_NUM_ERRORS),
        "{what}: {code} is not one of PAPI's codes"
    );
    assert_ne!(code, PAPI_EBUG, "{what}: an internal error (a panic?)");
}

#[test]
fn every_entry_point_refuses_bad_input_with_papis_codes() {
    // SAFETY: every call below passes what its case names: NULL, or
    // pointers to locals of the right type and size.
    unsafe {
        // Before PAPI_library_init.
        let mut set = PAPI_NULL;
        refused(PAPI_create_eventset(&mut set), "create before init");
        refused(PAPI_start(0), "start before init");
        refused(PAPI_library_init(0), "a wrong version");
        refused(PAPI_library_init(-1), "a negative version");
        assert_eq!(PAPI_is_initialized(), PAPI_NOT_INITED);
        assert_eq!(PAPI_thread_id(), PAPI_EMISC as std::ffi::c_ulong);
        assert!(PAPI_get_hardware_info().is_null());
        assert!(
            !PAPI_get_component_info(0).is_null(),
            "component info works before init"
        );
        assert!(PAPI_get_component_info(1).is_null());
        assert!(PAPI_get_component_info(-1).is_null());
        refused(PAPI_set_debug(99), "debug level 99");

        assert_eq!(PAPI_library_init(PAPI_VER_CURRENT), PAPI_VER_CURRENT);
        assert_eq!(
            PAPI_library_init(PAPI_VER_CURRENT),
            PAPI_VER_CURRENT,
            "twice"
        );
        refused(PAPI_disable_component(0), "disable after init");

        // Event sets.
        refused(PAPI_create_eventset(ptr::null_mut()), "create NULL");
        let mut not_null = 5;
        refused(
            PAPI_create_eventset(&mut not_null),
            "create *EventSet != PAPI_NULL",
        );
        for id in [-1, 12345, c_int::MIN, c_int::MAX] {
            refused(PAPI_start(id), "start of no set");
            refused(PAPI_stop(id, ptr::null_mut()), "stop of no set");
            refused(PAPI_reset(id), "reset of no set");
            refused(
                PAPI_add_event(id, PAPI_PRESET_MASK as c_int),
                "add to no set",
            );
            refused(PAPI_num_events(id), "num_events of no set");
            refused(PAPI_cleanup_eventset(id), "cleanup of no set");
            refused(PAPI_set_multiplex(id), "multiplex of no set");
            refused(PAPI_attach(id, 1), "attach of no set");
            refused(PAPI_overflow(id, 0, 1, 0, None), "overflow of no set");
            let mut s = 0;
            refused(PAPI_state(id, &mut s), "state of no set");
        }
        refused(PAPI_destroy_eventset(ptr::null_mut()), "destroy NULL");
        let mut gone = 777;
        refused(PAPI_destroy_eventset(&mut gone), "destroy of no set");

        let mut set = PAPI_NULL;
        assert_eq!(PAPI_create_eventset(&mut set), PAPI_OK);
        refused(PAPI_start(set), "start an empty set");
        for code in [
            0,
            -1,
            0x7fff_ffff,
            0x4fff_ffff,
            0xc000_0001u32 as c_int,
            0x8000_7000u32 as c_int,
        ] {
            refused(PAPI_add_event(set, code), "add a bad code");
            refused(PAPI_remove_event(set, code), "remove a bad code");
            refused(PAPI_query_event(code), "query a bad code");
            let mut name = [0 as c_char; PAPI_MAX_STR_LEN];
            refused(
                PAPI_event_code_to_name(code, name.as_mut_ptr()),
                "name of a bad code",
            );
            let mut info: PAPI_event_info_t = std::mem::zeroed();
            refused(PAPI_get_event_info(code, &mut info), "info of a bad code");
        }
        refused(PAPI_add_named_event(set, ptr::null()), "add NULL name");
        let bad = CString::new(vec![0xffu8, 0xfe, b'x']).unwrap();
        refused(
            PAPI_add_named_event(set, bad.as_ptr()),
            "add a non-UTF-8 name",
        );
        let long = CString::new("x".repeat(100_000)).unwrap();
        refused(
            PAPI_add_named_event(set, long.as_ptr()),
            "add a 100 kB name",
        );
        let odd = CString::new("perf::PAGE-FAULTS:u=1:k=1:h=0:q").unwrap();
        refused(
            PAPI_add_named_event(set, odd.as_ptr()),
            "an unknown modifier",
        );
        let mut code = 0;
        refused(
            PAPI_event_name_to_code(ptr::null(), &mut code),
            "name_to_code NULL in",
        );
        let pf = CString::new("perf::PAGE-FAULTS").unwrap();
        refused(
            PAPI_event_name_to_code(pf.as_ptr(), ptr::null_mut()),
            "name_to_code NULL out",
        );
        refused(
            PAPI_event_code_to_name(0x4000_0000, ptr::null_mut()),
            "code_to_name NULL out",
        );
        refused(
            PAPI_get_event_info(PAPI_PRESET_MASK as c_int, ptr::null_mut()),
            "info NULL",
        );
        refused(
            PAPI_enum_event(ptr::null_mut(), PAPI_ENUM_FIRST),
            "enum NULL",
        );
        let mut e = PAPI_NATIVE_MASK as c_int;
        refused(
            PAPI_enum_cmp_event(&mut e, PAPI_ENUM_FIRST, 3),
            "enum another component",
        );
        refused(PAPI_enum_event(&mut e, 999), "enum modifier 999");

        assert_eq!(PAPI_add_named_event(set, pf.as_ptr()), PAPI_OK);
        refused(
            PAPI_add_named_event(set, pf.as_ptr()),
            "the same event twice",
        );
        refused(PAPI_add_events(set, ptr::null_mut(), 3), "add_events NULL");
        refused(PAPI_add_events(set, &mut code, -1), "add_events -1");
        refused(
            PAPI_remove_events(set, ptr::null_mut(), 2),
            "remove_events NULL",
        );
        let mut n = -1;
        refused(
            PAPI_list_events(set, ptr::null_mut(), &mut n),
            "list_events *number -1",
        );
        refused(
            PAPI_list_events(set, ptr::null_mut(), ptr::null_mut()),
            "list_events NULL number",
        );
        refused(PAPI_read(set, ptr::null_mut()), "read NULL");
        refused(PAPI_accum(set, ptr::null_mut()), "accum NULL");
        refused(PAPI_write(set, ptr::null_mut()), "write NULL");
        refused(
            PAPI_read_ts(set, ptr::null_mut(), ptr::null_mut()),
            "read_ts NULL",
        );
        refused(PAPI_state(set, ptr::null_mut()), "state NULL");
        refused(
            PAPI_overflow(set, 0x4000_0000, 10, 0, None),
            "overflow without handler",
        );
        refused(
            PAPI_overflow(set, 0x4000_0000, -5, 0, None),
            "overflow threshold -5",
        );
        refused(
            PAPI_overflow(set, 0x4000_0000, 10, 0x1234, None),
            "overflow bad flags",
        );
        refused(
            PAPI_get_overflow_event_index(set, 1, ptr::null_mut(), ptr::null_mut()),
            "index NULL",
        );
        let (mut arr, mut num) = ([0; 4], 4);
        refused(
            PAPI_get_overflow_event_index(set, 1, arr.as_mut_ptr(), &mut num),
            "not overflowing",
        );
        refused(
            PAPI_profil(
                ptr::null_mut(),
                100,
                ptr::null_mut(),
                0x10000,
                set,
                0x4000_0000,
                10,
                0,
            ),
            "profil of an event not in the set",
        );
        let mut code_pf = 0;
        assert_eq!(PAPI_event_name_to_code(pf.as_ptr(), &mut code_pf), PAPI_OK);
        refused(
            PAPI_profil(
                ptr::null_mut(),
                100,
                ptr::null_mut(),
                0x10000,
                set,
                code_pf,
                10,
                0,
            ),
            "profil into NULL",
        );
        refused(
            PAPI_profil(
                [0u16; 4].as_mut_ptr().cast::<c_void>(),
                8,
                ptr::null_mut(),
                0x10000,
                set,
                code_pf,
                10,
                PAPI_PROFIL_BUCKET_16 | PAPI_PROFIL_BUCKET_32,
            ),
            "two bucket sizes",
        );
        refused(
            PAPI_sprofil(ptr::null_mut(), 0, set, code_pf, 10, 0),
            "sprofil of none",
        );
        refused(PAPI_attach(set, 0), "attach to 0");
        refused(PAPI_detach(set), "detach of an unattached set");
        refused(PAPI_destroy_eventset(&mut set), "destroy a set with events");

        // Options.
        refused(PAPI_set_opt(PAPI_DOMAIN, ptr::null_mut()), "set_opt NULL");
        refused(
            PAPI_get_opt(PAPI_DEBUG, ptr::null_mut()),
            "get_opt debug NULL",
        );
        let mut opt: PAPI_option_t = std::mem::zeroed();
        for o in [-1, 0, 9, 10, 99, c_int::MAX] {
            refused(PAPI_set_opt(o, &mut opt), "set_opt unknown");
            refused(PAPI_get_opt(o, &mut opt), "get_opt unknown");
        }
        refused(
            PAPI_set_opt(PAPI_MAX_HWCTRS, &mut opt),
            "set a read-only option",
        );
        opt.domain = PAPI_domain_option_t {
            def_cidx: 0,
            eventset: set,
            domain: 0x100,
        };
        refused(PAPI_set_opt(PAPI_DOMAIN, &mut opt), "domain 0x100");
        opt.granularity = PAPI_granularity_option_t {
            def_cidx: 0,
            eventset: set,
            granularity: 3,
        };
        refused(PAPI_set_opt(PAPI_GRANUL, &mut opt), "two granularities");
        opt.cpu = PAPI_cpu_option_t {
            eventset: set,
            cpu_num: 100_000,
        };
        refused(PAPI_set_opt(PAPI_CPU_ATTACH, &mut opt), "CPU 100000");
        refused(PAPI_set_opt(PAPI_DATA_ADDRESS, &mut opt), "address ranges");
        refused(PAPI_set_domain(0), "domain 0");
        refused(PAPI_set_granularity(0), "granularity 0");
        refused(
            PAPI_set_cmp_domain(PAPI_DOM_USER, 4),
            "domain of component 4",
        );
        refused(PAPI_num_cmp_hwctrs(4), "counters of component 4");
        refused(PAPI_assign_eventset_component(set, 2), "component 2");
        refused(
            PAPI_get_component_index(ptr::null()),
            "component index NULL",
        );
        let nosuch = CString::new("nosuch").unwrap();
        refused(
            PAPI_get_component_index(nosuch.as_ptr()),
            "component nosuch",
        );

        // Threads, locks, memory, strings.
        refused(PAPI_lock(-1), "lock -1");
        refused(PAPI_lock(PAPI_NUM_LOCK), "lock 2");
        refused(PAPI_unlock(7), "unlock 7");
        refused(PAPI_set_thr_specific(9, ptr::null_mut()), "TLS tag 9");
        refused(PAPI_get_thr_specific(0, ptr::null_mut()), "TLS NULL");
        refused(
            PAPI_list_threads(ptr::null_mut(), ptr::null_mut()),
            "list_threads NULL",
        );
        refused(PAPI_get_dmem_info(ptr::null_mut()), "dmem NULL");
        refused(PAPI_enum_dev_type(0, ptr::null_mut()), "devices");
        refused(PAPI_rate_stop(), "rate_stop without a rate");
        for c in [1, -28, -100, c_int::MIN, c_int::MAX] {
            assert!(PAPI_strerror(c).is_null(), "strerror({c})");
        }
        PAPI_perror(ptr::null());
        PAPI_perror(bad.as_ptr());
        PAPI_hl_region_begin(ptr::null());
        refused(PAPI_hl_read(ptr::null()), "hl_read NULL");
        refused(
            PAPI_hl_region_end(nosuch.as_ptr()),
            "hl end of a region never begun",
        );

        assert_eq!(PAPI_cleanup_eventset(set), PAPI_OK);
        assert_eq!(PAPI_destroy_eventset(&mut set), PAPI_OK);
        assert_eq!(set, PAPI_NULL);
        PAPI_shutdown();
        PAPI_shutdown();
        assert_eq!(PAPI_is_initialized(), PAPI_NOT_INITED);
        refused(PAPI_num_events(0), "after shutdown");
    }
}
