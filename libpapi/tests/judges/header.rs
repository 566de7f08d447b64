//! `include/papi.h` against the papi.h of Debian's libpapi-dev (PAPI 7.0),
//! when it is installed (visible skip otherwise): every integer macro and
//! enum constant PAPI's header defines has the same value in ours (a
//! translation unit of `_Static_assert`s built against our header, with
//! PAPI's values), every structure has PAPI's size, field offsets and
//! bit-field positions (one C program, built against either header, prints
//! them; the two listings are compared), and every function PAPI's header
//! declares is declared compatibly (PAPI's prototypes, redeclared after
//! ours in one translation unit: a mismatch does not compile).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use pmc_testkit::skip;

const PAPI_H: &str = "/usr/include/papi.h";

pub(crate) fn ours() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("include")
}

/// `cc ARGS`, its stdout; panics with its stderr on failure.
fn cc(args: &[&str]) -> String {
    let out = Command::new("cc").args(args).output().expect("run cc");
    assert!(
        out.status.success(),
        "cc {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

fn usable() -> bool {
    if !Path::new(PAPI_H).exists() {
        skip!("no {PAPI_H} (Debian's libpapi-dev; ci/setup.sh installs it) to compare papi.h with");
        return false;
    }
    if Command::new("cc").arg("--version").output().is_err() {
        skip!("no C compiler (cc)");
        return false;
    }
    true
}

/// PAPI's integer macros (object-like), by name.
fn macro_names() -> Vec<String> {
    let defs = cc(&["-dM", "-E", "-x", "c", "-include", PAPI_H, "/dev/null"]);
    let mut names: Vec<String> = defs
        .lines()
        .filter_map(|l| l.strip_prefix("#define "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| !n.contains('('))
        .filter(|n| {
            ["PAPI_", "PAPIF_", "USER_EVENT"]
                .iter()
                .any(|p| n.starts_with(p))
        })
        .map(str::to_owned)
        .collect();
    names.sort();
    names
}

/// The text of papi.h itself (and papiStdEventDefs.h) after preprocessing,
/// without the system headers it includes.
fn own_text(include: &Path) -> String {
    let pre = cc(&[
        "-E",
        "-x",
        "c",
        "-I",
        include.to_str().unwrap(),
        "-include",
        include.join("papi.h").to_str().unwrap(),
        "/dev/null",
    ]);
    let mut keep = false;
    let mut out = String::new();
    for l in pre.lines() {
        if let Some(rest) = l.strip_prefix("# ") {
            keep = rest.contains("papi.h\"") || rest.contains("papiStdEventDefs.h\"");
            continue;
        }
        if keep {
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

/// Enum constants of a header's text.
fn enum_names(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("enum") {
        rest = &rest[i + 4..];
        let (Some(open), Some(close)) = (rest.find('{'), rest.find('}')) else {
            break;
        };
        if open > close {
            continue;
        }
        for item in rest[open + 1..close].split(',') {
            let name = item.split('=').next().unwrap_or("").trim();
            if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                out.push(name.to_owned());
            }
        }
        rest = &rest[close..];
    }
    out
}

/// PAPI's function declarations.
fn prototypes(text: &str) -> Vec<String> {
    let flat = text.replace('\n', " ");
    flat.split(';')
        .map(str::trim)
        .filter(|s| !s.contains("typedef") && !s.contains('{') && !s.contains('}'))
        .filter(|s| {
            s.split('(').next().is_some_and(|head| {
                head.split_whitespace()
                    .last()
                    .is_some_and(|w| w.trim_start_matches('*').starts_with("PAPI_"))
            })
        })
        .map(|s| format!("{s};"))
        .collect()
}

/// The structures and their fields whose offsets are compared; bit-fields
/// are compared by the bit each sets.
const STRUCTS: &[(&str, &[&str])] = &[
    ("PAPI_all_thr_spec_t", &["num", "id", "data"]),
    (
        "PAPI_sprofil_t",
        &["pr_base", "pr_size", "pr_off", "pr_scale"],
    ),
    (
        "PAPI_itimer_option_t",
        &["itimer_num", "itimer_sig", "ns", "flags"],
    ),
    ("PAPI_inherit_option_t", &["eventset", "inherit"]),
    ("PAPI_domain_option_t", &["def_cidx", "eventset", "domain"]),
    (
        "PAPI_granularity_option_t",
        &["def_cidx", "eventset", "granularity"],
    ),
    (
        "PAPI_preload_info_t",
        &[
            "lib_preload_env",
            "lib_preload_sep",
            "lib_dir_env",
            "lib_dir_sep",
        ],
    ),
    (
        "PAPI_component_info_t",
        &[
            "name",
            "short_name",
            "description",
            "version",
            "support_version",
            "kernel_version",
            "disabled_reason",
            "disabled",
            "initialized",
            "CmpIdx",
            "num_cntrs",
            "num_mpx_cntrs",
            "num_preset_events",
            "num_native_events",
            "default_domain",
            "available_domains",
            "default_granularity",
            "available_granularities",
            "hardware_intr_sig",
            "component_type",
            "pmu_names",
            "reserved",
        ],
    ),
    ("PAPI_mpx_info_t", &["timer_sig", "timer_num", "timer_us"]),
    ("PAPI_debug_option_t", &["level", "handler"]),
    (
        "PAPI_address_map_t",
        &[
            "name",
            "text_start",
            "text_end",
            "data_start",
            "data_end",
            "bss_start",
            "bss_end",
        ],
    ),
    ("PAPI_exe_info_t", &["fullname", "address_info"]),
    ("PAPI_shlib_info_t", &["map", "count"]),
    (
        "PAPI_mh_tlb_info_t",
        &["type", "num_entries", "page_size", "associativity"],
    ),
    (
        "PAPI_mh_cache_info_t",
        &["type", "size", "line_size", "num_lines", "associativity"],
    ),
    ("PAPI_mh_level_t", &["tlb", "cache"]),
    ("PAPI_mh_info_t", &["levels", "level"]),
    (
        "PAPI_hw_info_t",
        &[
            "ncpu",
            "threads",
            "cores",
            "sockets",
            "nnodes",
            "totalcpus",
            "vendor",
            "vendor_string",
            "model",
            "model_string",
            "revision",
            "cpuid_family",
            "cpuid_model",
            "cpuid_stepping",
            "cpu_max_mhz",
            "cpu_min_mhz",
            "mem_hierarchy",
            "virtualized",
            "virtual_vendor_string",
            "virtual_vendor_version",
            "mhz",
            "clock_mhz",
            "reserved",
        ],
    ),
    ("PAPI_attach_option_t", &["eventset", "tid"]),
    ("PAPI_cpu_option_t", &["eventset", "cpu_num"]),
    ("PAPI_multiplex_option_t", &["eventset", "ns", "flags"]),
    (
        "PAPI_addr_range_option_t",
        &["eventset", "start", "end", "start_off", "end_off"],
    ),
    (
        "PAPI_option_t",
        &[
            "preload",
            "debug",
            "inherit",
            "granularity",
            "defgranularity",
            "domain",
            "defdomain",
            "attach",
            "cpu",
            "multiplex",
            "itimer",
            "hw_info",
            "shlib_info",
            "exe_info",
            "cmp_info",
            "addr",
            "events_file",
        ],
    ),
    (
        "PAPI_dmem_info_t",
        &[
            "peak",
            "size",
            "resident",
            "high_water_mark",
            "shared",
            "text",
            "library",
            "heap",
            "locked",
            "stack",
            "pagesize",
            "pte",
        ],
    ),
    (
        "PAPI_event_info_t",
        &[
            "event_code",
            "symbol",
            "short_descr",
            "long_descr",
            "component_index",
            "units",
            "location",
            "data_type",
            "value_type",
            "timescope",
            "update_type",
            "update_freq",
            "count",
            "event_type",
            "derived",
            "postfix",
            "code",
            "name",
            "note",
        ],
    ),
];

const BITFIELDS: &[&str] = &[
    "hardware_intr",
    "precise_intr",
    "posix1b_timers",
    "kernel_profile",
    "kernel_multiplex",
    "fast_counter_read",
    "fast_real_timer",
    "fast_virtual_timer",
    "attach",
    "attach_must_ptrace",
    "cntr_umasks",
    "cpu",
    "inherit",
];

/// A program printing every structure's size and offsets, and where each
/// bit-field of `PAPI_component_info_t` lives.
fn layout_program() -> String {
    let mut s = String::from(
        "#include <stdio.h>\n#include <stddef.h>\n#include <string.h>\n#include <papi.h>\nint main(void) {\n",
    );
    for (t, fields) in STRUCTS {
        let _ = writeln!(s, "  printf(\"sizeof {t} %zu\\n\", sizeof({t}));");
        for f in *fields {
            let _ = writeln!(
                s,
                "  printf(\"offsetof {t}.{f} %zu\\n\", offsetof({t}, {f}));"
            );
        }
    }
    for b in BITFIELDS {
        let _ = writeln!(
            s,
            "  {{ PAPI_component_info_t c; unsigned char *p = (unsigned char *)&c; memset(&c, 0, sizeof c); c.{b} = 1;\n    \
             for (size_t i = 0; i < sizeof c; i++) if (p[i]) printf(\"bit {b} byte %zu value %u\\n\", i, p[i]); }}"
        );
    }
    s.push_str("  return 0;\n}\n");
    s
}

fn build_and_run(dir: &Path, name: &str, source: &str, include: &Path) -> String {
    let exe = pmc_testkit::cc::compile(dir, name, source, &["-I", include.to_str().unwrap()])
        .unwrap_or_else(|e| panic!("{e}"));
    let out = Command::new(&exe).output().expect("run the program");
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn values_layouts_and_prototypes_are_papis() {
    if !usable() {
        return;
    }
    let dir = pmc_testkit::workdir("pmc-papi-header");
    let theirs_inc = Path::new("/usr/include");
    let theirs_text = own_text(theirs_inc);

    // Values: PAPI's, printed by a program built with PAPI's header.
    let mut names = macro_names();
    names.extend(enum_names(&theirs_text));
    names.sort();
    names.dedup();
    let mut prog = String::from("#include <stdio.h>\n#include <papi.h>\nint main(void) {\n");
    for n in &names {
        let _ = writeln!(prog, "  printf(\"{n} %lld\\n\", (long long)({n}));");
    }
    prog.push_str("  return 0;\n}\n");
    let values: BTreeMap<String, i64> = build_and_run(&dir, "values", &prog, theirs_inc)
        .lines()
        .filter_map(|l| {
            let (n, v) = l.split_once(' ')?;
            Some((n.to_owned(), v.parse().ok()?))
        })
        .collect();
    assert!(
        values.len() > 400,
        "PAPI's header gave {} values",
        values.len()
    );
    assert_eq!(values["PAPI_TOT_INS"], i64::from(0x8000_0032u32 as i32));

    // Layouts: one program, built against either header.
    let layout = layout_program();
    let theirs = build_and_run(&dir, "layout-papi", &layout, theirs_inc);
    let mine = build_and_run(&dir, "layout-pmc", &layout, &ours());
    let diff: Vec<String> = theirs
        .lines()
        .zip(mine.lines())
        .filter(|(a, b)| a != b)
        .map(|(a, b)| format!("PAPI: {a} / pmc: {b}"))
        .collect();
    assert!(diff.is_empty(), "layouts differ:\n{}", diff.join("\n"));
    assert_eq!(theirs.lines().count(), mine.lines().count());

    // One translation unit against our header: PAPI's values as static
    // assertions, PAPI's layout as static assertions, PAPI's prototypes.
    let mut check = String::from("#include <stddef.h>\n#include <papi.h>\n");
    for (n, v) in &values {
        let _ = writeln!(check, "_Static_assert((long long)({n}) == {v}LL, \"{n}\");");
    }
    for l in theirs.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        match w.as_slice() {
            ["sizeof", t, v] => {
                let _ = writeln!(check, "_Static_assert(sizeof({t}) == {v}, \"sizeof {t}\");");
            }
            ["offsetof", tf, v] => {
                let (t, f) = tf.split_once('.').unwrap();
                let _ = writeln!(
                    check,
                    "_Static_assert(offsetof({t}, {f}) == {v}, \"{tf}\");"
                );
            }
            _ => {}
        }
    }
    let protos = prototypes(&theirs_text);
    assert!(protos.len() > 80, "found {} PAPI prototypes", protos.len());
    for p in &protos {
        check.push_str(p);
        check.push('\n');
    }
    std::fs::write(dir.join("check.c"), &check).unwrap();
    let out = Command::new("cc")
        .args(["-fsyntax-only", "-std=c11", "-Wall", "-Werror", "-I"])
        .arg(ours())
        .arg(dir.join("check.c"))
        .output()
        .expect("run cc");
    assert!(
        out.status.success(),
        "papi.h differs from PAPI's ({} values, {} prototypes checked):\n{}",
        values.len(),
        protos.len(),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_header_compiles_as_c89_c11_and_cpp() {
    if Command::new("cc").arg("--version").output().is_err() {
        skip!("no C compiler (cc)");
        return;
    }
    let dir = pmc_testkit::workdir("pmc-papi-header-std");
    let src = dir.join("inc.c");
    std::fs::write(
        &src,
        "#include <papi.h>\nint main(void) { return PAPI_VER_CURRENT == 0; }\n",
    )
    .unwrap();
    for std in ["-std=gnu89", "-std=c11"] {
        let out = Command::new("cc")
            .args([std, "-Wall", "-Werror", "-fsyntax-only", "-I"])
            .arg(ours())
            .arg(&src)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{std}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    if Command::new("c++").arg("--version").output().is_ok() {
        let cpp = dir.join("inc.cpp");
        std::fs::copy(&src, &cpp).unwrap();
        let out = Command::new("c++")
            .args(["-Wall", "-Werror", "-fsyntax-only", "-I"])
            .arg(ours())
            .arg(&cpp)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "C++: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
