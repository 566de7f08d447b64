//! The parser accepts the CPU's event names (pmc-events table), libpmc's
//! aliases, `tsc` and lower-case SOFT names (issue 14; libpmc compares names
//! with strcasecmp), as native named events for the backends to resolve.

use pmc_core::{EventSource, EventSpec, PortableEvent};

fn named(s: &str) -> (String, bool, bool) {
    let spec: EventSpec = s.parse().unwrap_or_else(|e| panic!("{s}: {e}"));
    match spec.source {
        EventSource::Hwpmc(n) => (n, spec.modifiers.user, spec.modifiers.kernel),
        EventSource::HwpmcTerms(t) => {
            (t[0].key.clone(), spec.modifiers.user, spec.modifiers.kernel)
        }
        other => panic!("{s}: parsed as {other:?}"),
    }
}

#[test]
fn table_names_and_aliases_parse() {
    for s in [
        "inst_retired.any",
        "INST_RETIRED.ANY",
        "cpu_clk_unhalted.thread_p",
        "ls_not_halted_cyc",
        "ex_ret_instr",
        "inst_retired",
        "L1D_CACHE_REFILL",
        "tsc",
        "TSC",
        "dc-misses",
        "ic-misses",
        "interrupts",
        "LLC_REFERENCE",
        "unhalted-reference-cycles",
        "instruction-retired",
        "BRANCH_INSTRUCTION_RETIRED",
        "BRANCH_MISSES_RETIRED",
        "RESOURCE_STALL",
        "clock.hard",
        "page_fault.all",
        "CLOCK.HARD",
        "iap-inst_retired.any",
        "IAP-INST_RETIRED.ANY",
        "iaf-instr_retired.any",
        "k8-dc-misses",
        "k8-ls_not_halted_cyc",
    ] {
        assert_eq!(named(s).0, s, "{s}");
    }
}

#[test]
fn qualifiers_work_on_table_names() {
    assert_eq!(
        named("inst_retired.any,usr"),
        ("inst_retired.any".into(), true, false)
    );
    assert_eq!(
        named("ex_ret_instr:k"),
        ("ex_ret_instr".into(), false, true)
    );
    assert_eq!(
        named("ls_not_halted_cyc,os"),
        ("ls_not_halted_cyc".into(), false, true)
    );
    let spec: EventSpec = "arith.divider_active,cmask=2,edge,inv,usr".parse().unwrap();
    let EventSource::HwpmcTerms(t) = &spec.source else {
        panic!("{spec:?}")
    };
    let keys: Vec<&str> = t.iter().map(|t| t.key.as_str()).collect();
    assert_eq!(keys, ["arith.divider_active", "cmask", "edge", "inv"]);
    assert!(spec.modifiers.user);
}

#[test]
fn portable_names_keep_precedence_and_typos_still_fail() {
    // `cycles` is the portable core-cycles event, never the TSC.
    assert_eq!(
        "cycles".parse::<EventSpec>().unwrap().source,
        EventSource::Portable(PortableEvent::Cycles)
    );
    assert_eq!(
        "LLC_MISSES".parse::<EventSpec>().unwrap().source,
        EventSource::Portable(PortableEvent::CacheMisses)
    );
    let e = "page-fualts".parse::<EventSpec>().unwrap_err();
    assert!(e.to_string().contains("did you mean `page-faults`"), "{e}");
    assert!("inst_retired_anyy".parse::<EventSpec>().is_err());
    assert!(
        "Clock.Hard".parse::<EventSpec>().is_err(),
        "mixed case is a typo, as before"
    );
}
