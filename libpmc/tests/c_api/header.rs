//! `include/pmc.h` is cbindgen's output for `src/` (regenerated here and
//! compared; `PMC_BLESS_HEADER=1` rewrites it), and its enums, constants and
//! struct layouts are FreeBSD's: a C program compiled against the header
//! prints them, and they are compared with `abi-amd64.json`, the ABI facts
//! pmc-freebsd's layout tests use.

use std::path::{Path, PathBuf};

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn generate() -> String {
    let dir = crate_dir();
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut out = Vec::new();
    cbindgen::Builder::new()
        .with_crate(&dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generates pmc.h")
        .write(&mut out);
    String::from_utf8(out).expect("UTF-8 header")
}

#[test]
fn header_is_cbindgen_output() {
    let path = crate_dir().join("include/pmc.h");
    let fresh = generate();
    if std::env::var("PMC_BLESS_HEADER").is_ok_and(|v| v == "1") {
        std::fs::write(&path, &fresh).expect("write include/pmc.h");
        return;
    }
    let kept = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        kept == fresh,
        "include/pmc.h is not cbindgen's output for src/: run \
         PMC_BLESS_HEADER=1 cargo test -p pmc-capi --test c_api header::, and commit it"
    );
}

fn abi_facts() -> serde_json::Value {
    let p = crate_dir().join("../pmc-freebsd/tests/data/abi-amd64.json");
    let text = std::fs::read_to_string(&p).expect("abi-amd64.json");
    serde_json::from_str(&text).expect("abi-amd64.json parses")
}

/// The constants of abi-amd64.json that pmc(3)'s header must define: every
/// enum of the API, the flags and the sizes. (The `PMC_OP_*` codes, the
/// machine-dependent `IAP_*`/`AMD_*` bits and `PMC_VERSION_*` parts are
/// the kernel interface's, not pmc(3)'s.)
fn api_constant(name: &str) -> bool {
    const PREFIXES: [&str; 8] = [
        "PMC_MODE_",
        "PMC_STATE_",
        "PMC_DISP_",
        "PMC_CAP_",
        "PMC_F_",
        "PMC_CLASS_",
        "PMC_CPU_",
        "PMC_EV_",
    ];
    (PREFIXES.iter().any(|p| name.starts_with(p))
        && !matches!(
            name,
            "PMC_STATE_MAX" | "PMC_CPU_ANY_u32" | "PMC_F_UNUSED1" | "PMC_EV_DYN_COUNT"
        ))
        || matches!(
            name,
            "PMC_VERSION" | "PMC_NAME_MAX" | "PMC_CLASS_MAX" | "PMC_CPUID_LEN" | "PMC_ID_INVALID"
        )
}

fn compile_and_run(dir: &Path, name: &str, src: &str) -> Option<String> {
    let inc = format!("-I{}", crate_dir().join("include").display());
    let exe = pmc_testkit::cc::build(dir, name, src, &[&inc, "-Wall", "-Werror"])?;
    let out = std::process::Command::new(&exe)
        .output()
        .expect("run the probe");
    assert!(
        out.status.success(),
        "{name} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).expect("UTF-8"))
}

#[test]
fn enums_and_constants_match_freebsd() {
    let facts = abi_facts();
    let consts = facts["constants"].as_object().expect("constants");
    let names: Vec<(&String, u64)> = consts
        .iter()
        .filter(|(k, _)| api_constant(k))
        .map(|(k, v)| (k, v.as_u64().expect("numeric constant")))
        .collect();
    assert!(
        names.len() > 100,
        "only {} API constants in the facts",
        names.len()
    );
    let mut src = String::from("#include <stdio.h>\n#include <pmc.h>\nint main(void) {\n");
    for (n, _) in &names {
        src += &format!("    printf(\"{n} %llu\\n\", (unsigned long long)(uint32_t)({n}));\n");
    }
    src += "    return 0;\n}\n";
    let dir = pmc_testkit::workdir("pmc-capi-header");
    let Some(out) = compile_and_run(&dir, "constants", &src) else {
        return;
    };
    let mut wrong = Vec::new();
    for ((n, want), line) in names.iter().zip(out.lines()) {
        let got: u64 = line
            .rsplit(' ')
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(u64::MAX);
        if got != *want & 0xFFFF_FFFF {
            wrong.push(format!("{n}: header {got}, FreeBSD {want}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "values differ from FreeBSD's:\n{}",
        wrong.join("\n")
    );
    println!("{} constants and enumerators equal FreeBSD's", names.len());
}

#[test]
fn structs_match_freebsd_layout() {
    let facts = abi_facts();
    let mut src = String::from(
        "#include <stdio.h>\n#include <stddef.h>\n#include <pmc.h>\nint main(void) {\n",
    );
    let mut want = Vec::new();
    // pmc(3)'s structs and the kernel structs they mirror.
    for (ours, theirs) in [
        ("struct pmc_classinfo", "struct pmc_classinfo"),
        ("struct pmc_info", "struct pmc_info"),
        ("struct pmc_driverstats", "struct pmc_op_getdriverstats"),
        ("struct pmc_cpuinfo", "struct pmc_op_getcpuinfo"),
    ] {
        let s = &facts["structs"][theirs];
        src += &format!("    printf(\"%zu\\n\", sizeof({ours}));\n");
        want.push((format!("sizeof({ours})"), s["size"].as_u64().expect("size")));
        for (field, f) in s["fields"].as_object().expect("fields") {
            src += &format!("    printf(\"%zu\\n\", offsetof({ours}, {field}));\n");
            want.push((
                format!("offsetof({ours}, {field})"),
                f["offset"].as_u64().expect("offset"),
            ));
        }
    }
    src += "    printf(\"%zu\\n\", offsetof(struct pmc_pmcinfo, pm_pmcs));\n    return 0;\n}\n";
    want.push(("offsetof(struct pmc_pmcinfo, pm_pmcs)".into(), 8));
    let dir = pmc_testkit::workdir("pmc-capi-header");
    let Some(out) = compile_and_run(&dir, "layout", &src) else {
        return;
    };
    let got: Vec<u64> = out.lines().map(|l| l.parse().expect("number")).collect();
    let wrong: Vec<String> = want
        .iter()
        .zip(&got)
        .filter(|((_, w), g)| w != *g)
        .map(|((n, w), g)| format!("{n}: header {g}, FreeBSD {w}"))
        .collect();
    assert_eq!(got.len(), want.len());
    assert!(wrong.is_empty(), "layouts differ:\n{}", wrong.join("\n"));
}
