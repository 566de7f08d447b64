//! libpmc's headers, its Rust ABI module and its Python ABI module are the
//! output of one table, `abi/headers.toml` (regenerated here and compared;
//! `PMC_BLESS_HEADER=1` rewrites them), and what they say is FreeBSD's: the
//! headers' values and layouts are compared with `abi-amd64.json` (the ABI
//! facts pmc-freebsd's layout tests use, probed from FreeBSD's headers), the
//! Rust structs with what the C compiler lays out from the headers, the Rust
//! entry points (cbindgen's reading of `src/`) with the headers' prototypes,
//! and the PMC id macros with the kernel layout pmc-log decodes. The Rust
//! module also carries `owner_ties`: compile-time assertions that every
//! value and layout it shares with the Rust owners of hwpmc's ABI
//! (`pmc_freebsd::sys::abi`, `pmc_log::hwpmc`, read here for their names)
//! is theirs, built with the crate's unit tests.

mod gen;

use std::path::PathBuf;
use std::process::Command;

use pmc_testkit::skip;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn include_dir() -> PathBuf {
    crate_dir().join("include")
}

#[test]
fn generated_files_are_the_tables_output() {
    let table = std::fs::read_to_string(crate_dir().join("abi/headers.toml")).expect("table");
    let read = |p: &str| std::fs::read_to_string(crate_dir().join(p)).expect("an owner's source");
    // pmc-freebsd's ABI module is `abi.rs` and its files under `abi/`.
    let freebsd = ["abi.rs", "abi/consts.rs", "abi/md.rs", "abi/ops.rs"]
        .map(|f| read(&format!("../pmc-freebsd/src/sys/{f}")))
        .concat();
    let log = read("../pmc-log/src/hwpmc/consts.rs");
    let owners = [
        gen::Owner {
            path: "pmc_freebsd::sys::abi",
            source: &freebsd,
        },
        gen::Owner {
            path: "pmc_log::hwpmc",
            source: &log,
        },
    ];
    let out = gen::generate(&table, &owners).expect("the table generates");
    let bless = std::env::var("PMC_BLESS_HEADER").is_ok_and(|v| v == "1");
    let mut stale = Vec::new();
    for (path, text) in &out.files {
        let p = crate_dir().join(path);
        if bless {
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(&p, text).expect("write a generated file");
            continue;
        }
        if std::fs::read_to_string(&p).ok().as_deref() != Some(text.as_str()) {
            stale.push(path.clone());
        }
    }
    assert!(
        stale.is_empty(),
        "not the output of abi/headers.toml: {stale:?}; run PMC_BLESS_HEADER=1 cargo test -p \
         pmc-capi --test header, and commit them"
    );
}

fn abi_facts() -> serde_json::Value {
    let p = crate_dir().join("../pmc-freebsd/tests/data/abi-amd64.json");
    let text = std::fs::read_to_string(&p).expect("abi-amd64.json");
    serde_json::from_str(&text).expect("abi-amd64.json parses")
}

/// Compiles `src` (C, or C++ with `cxx`) against the headers with `-Wall
/// -Werror` and runs it: its stdout. `None` after a visible skip when there
/// is no compiler; a program that does not compile fails the test.
fn compile_and_run(name: &str, src: &str, cxx: bool) -> Option<String> {
    let dir = pmc_testkit::workdir("pmc-capi-header");
    let (compiler, ext) = if cxx { ("c++", "cc") } else { ("cc", "c") };
    let file = dir.join(format!("{name}.{ext}"));
    std::fs::write(&file, src).expect("write the probe");
    let exe = dir.join(name);
    let out = match Command::new(compiler)
        .arg(format!("-I{}", include_dir().display()))
        .args(["-Wall", "-Werror", "-o"])
        .arg(&exe)
        .arg(&file)
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            skip!("no {compiler}: {e}");
            return None;
        }
    };
    assert!(
        out.status.success(),
        "{name}.{ext} does not compile against include/: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe).output().expect("run the probe");
    assert!(run.status.success(), "{name} failed");
    Some(String::from_utf8(run.stdout).expect("UTF-8"))
}

const INCLUDES: &str =
    "#include <stdio.h>\n#include <stddef.h>\n#include <pmc.h>\n#include <pmclog.h>\n";

/// The constants of abi-amd64.json that the headers must define (all but the
/// kernel-private ones), and the pmclog record constants.
fn api_constant(name: &str) -> bool {
    !matches!(
        name,
        "PMC_CPU_ANY_u32" | "FBSD_PATH_MAX" | "FBSD_MAXCOMLEN" | "sizeof_union_pmclog_entry"
    )
}

#[test]
fn constants_match_freebsd() {
    let facts = abi_facts();
    let mut names: Vec<(String, u64)> = Vec::new();
    for section in [&facts["constants"], &facts["pmclog"]["constants"]] {
        for (k, v) in section.as_object().expect("constants") {
            if api_constant(k) {
                names.push((k.clone(), v.as_u64().expect("numeric constant")));
            }
        }
    }
    assert!(
        names.len() > 150,
        "only {} constants in the facts",
        names.len()
    );
    let mut src = format!("{INCLUDES}int main(void) {{\n");
    for (n, _) in &names {
        src += &format!("    printf(\"%llu\\n\", (unsigned long long)(uint32_t)({n}));\n");
    }
    src += "    printf(\"%zu\\n\", sizeof(union pmclog_entry));\n    return 0;\n}\n";
    let Some(out) = compile_and_run("constants", &src, false) else {
        return;
    };
    let got: Vec<u64> = out.lines().map(|l| l.parse().expect("number")).collect();
    let mut wrong: Vec<String> = names
        .iter()
        .zip(&got)
        .filter(|((_, want), got)| **got != *want & 0xFFFF_FFFF)
        .map(|((n, want), got)| format!("{n}: header {got}, FreeBSD {want}"))
        .collect();
    let entry = facts["pmclog"]["constants"]["sizeof_union_pmclog_entry"]
        .as_u64()
        .expect("size");
    if got.last() != Some(&entry) {
        wrong.push(format!(
            "sizeof(union pmclog_entry): {:?}, FreeBSD {entry}",
            got.last()
        ));
    }
    assert!(
        wrong.is_empty(),
        "values differ from FreeBSD's:\n{}",
        wrong.join("\n")
    );
    println!(
        "{} constants equal FreeBSD's, and sizeof(union pmclog_entry)",
        names.len()
    );
}

/// Prints `sizeof`/`offsetof` of every struct and field `facts` has, for
/// the C program; returns the expected values.
fn layout_probe(
    facts: &serde_json::Value,
    structs: &[(&str, &str)],
    src: &mut String,
) -> Vec<(String, u64)> {
    let mut want = Vec::new();
    for (ours, theirs) in structs {
        let s = facts
            .get(*theirs)
            .unwrap_or_else(|| panic!("{theirs} not in the facts"));
        *src += &format!("    printf(\"%zu\\n\", sizeof({ours}));\n");
        want.push((format!("sizeof({ours})"), s["size"].as_u64().expect("size")));
        for (field, f) in s["fields"].as_object().expect("fields") {
            *src += &format!("    printf(\"%zu\\n\", offsetof({ours}, {field}));\n");
            want.push((
                format!("offsetof({ours}, {field})"),
                f["offset"].as_u64().expect("offset"),
            ));
        }
    }
    want
}

#[test]
fn structs_match_freebsd_layout() {
    let facts = abi_facts();
    let mut src = format!("{INCLUDES}int main(void) {{\n");
    let mut want = layout_probe(
        &facts["structs"],
        &[
            ("struct pmc_classinfo", "struct pmc_classinfo"),
            ("struct pmc_info", "struct pmc_info"),
            ("struct pmc_driverstats", "struct pmc_op_getdriverstats"),
            (
                "struct pmc_op_getdriverstats",
                "struct pmc_op_getdriverstats",
            ),
            ("struct pmc_cpuinfo", "struct pmc_op_getcpuinfo"),
            ("struct pmc_op_getcpuinfo", "struct pmc_op_getcpuinfo"),
            ("struct pmc_op_pmcallocate", "struct pmc_op_pmcallocate"),
            ("union pmc_md_op_pmcallocate", "union pmc_md_op_pmcallocate"),
            (
                "struct pmc_md_amd_op_pmcallocate",
                "struct pmc_md_amd_op_pmcallocate",
            ),
            (
                "struct pmc_md_ibs_op_pmcallocate",
                "struct pmc_md_ibs_op_pmcallocate",
            ),
            (
                "struct pmc_md_iap_op_pmcallocate",
                "struct pmc_md_iap_op_pmcallocate",
            ),
            (
                "struct pmc_md_ucf_op_pmcallocate",
                "struct pmc_md_ucf_op_pmcallocate",
            ),
            (
                "struct pmc_md_ucp_op_pmcallocate",
                "struct pmc_md_ucp_op_pmcallocate",
            ),
            ("struct pmc_op_pmcadmin", "struct pmc_op_pmcadmin"),
            ("struct pmc_op_pmcattach", "struct pmc_op_pmcattach"),
            ("struct pmc_op_pmcsetcount", "struct pmc_op_pmcsetcount"),
            ("struct pmc_op_pmcrw", "struct pmc_op_pmcrw"),
            ("struct pmc_op_configurelog", "struct pmc_op_configurelog"),
            ("struct pmc_op_simple", "struct pmc_op_simple"),
            ("struct pmc_op_writelog", "struct pmc_op_writelog"),
            ("struct pmc_op_getmsr", "struct pmc_op_getmsr"),
            ("struct pmc_dyn_event_descr", "struct pmc_dyn_event_descr"),
            (
                "struct pmc_op_getdyneventinfo",
                "struct pmc_op_getdyneventinfo",
            ),
            ("struct pmc_op_caps", "struct pmc_op_caps"),
        ],
        &mut src,
    );
    let records: Vec<(String, String)> = facts["pmclog"]["records"]
        .as_object()
        .expect("records")
        .keys()
        .filter(|k| *k != "struct pmclog_procexec_legacy")
        .map(|k| (k.clone(), k.clone()))
        .collect();
    let records: Vec<(&str, &str)> = records
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    want.extend(layout_probe(
        &facts["pmclog"]["records"],
        &records,
        &mut src,
    ));
    src += "    printf(\"%zu\\n\", offsetof(struct pmc_pmcinfo, pm_pmcs));\n    return 0;\n}\n";
    want.push(("offsetof(struct pmc_pmcinfo, pm_pmcs)".into(), 8));
    let Some(out) = compile_and_run("layout", &src, false) else {
        return;
    };
    let got: Vec<u64> = out.lines().map(|l| l.parse().expect("number")).collect();
    assert_eq!(got.len(), want.len());
    let wrong: Vec<String> = want
        .iter()
        .zip(&got)
        .filter(|((_, w), g)| w != *g)
        .map(|((n, w), g)| format!("{n}: header {g}, FreeBSD {w}"))
        .collect();
    assert!(wrong.is_empty(), "layouts differ:\n{}", wrong.join("\n"));
    println!("{} sizes and offsets equal FreeBSD's", want.len());
}

/// The Rust structs (`src/abi/generated.rs`) have the layouts the C compiler
/// gives the headers' structs: every size and field offset.
#[test]
fn rust_layouts_match_the_headers() {
    let mut src = format!("{INCLUDES}int main(void) {{\n");
    let mut want = Vec::new();
    for (name, visible, size, fields) in pmc::abi::LAYOUTS {
        if !visible {
            continue;
        }
        src += &format!("    printf(\"%zu\\n\", sizeof({name}));\n");
        want.push((format!("sizeof({name})"), *size));
        for (f, off) in *fields {
            src += &format!("    printf(\"%zu\\n\", offsetof({name}, {f}));\n");
            want.push((format!("offsetof({name}, {f})"), *off));
        }
    }
    src += "    return 0;\n}\n";
    let Some(out) = compile_and_run("rust_layout", &src, false) else {
        return;
    };
    let got: Vec<usize> = out.lines().map(|l| l.parse().expect("number")).collect();
    assert_eq!(got.len(), want.len());
    let wrong: Vec<String> = want
        .iter()
        .zip(&got)
        .filter(|((_, w), g)| w != *g)
        .map(|((n, w), g)| format!("{n}: C {g}, Rust {w}"))
        .collect();
    assert!(
        wrong.is_empty(),
        "Rust and C layouts differ:\n{}",
        wrong.join("\n")
    );
    println!("{} Rust sizes and offsets equal C's", want.len());
}

/// cbindgen's declarations of the `extern "C"` entry points in `src/`
/// (`cbindgen.toml`: functions only), compiled after the headers: C refuses a
/// redeclaration whose type differs ("conflicting types"), so each Rust
/// signature is the header's, and every header function is defined.
#[test]
fn rust_entry_points_match_the_prototypes() {
    let dir = crate_dir();
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut out = Vec::new();
    cbindgen::Builder::new()
        .with_crate(&dir)
        .with_config(config)
        .generate()
        .expect("cbindgen reads src/")
        .write(&mut out);
    let decls = String::from_utf8(out).expect("UTF-8");
    let rust_fns: Vec<&str> = decls
        .lines()
        .filter_map(|l| l.split_once('(').map(|(d, _)| d))
        .filter_map(|d| d.rsplit([' ', '*']).next())
        .filter(|n| n.starts_with("pmc"))
        .collect();
    let header_fns: Vec<String> = ["pmc.h", "pmclog.h"]
        .iter()
        .flat_map(|h| {
            std::fs::read_to_string(include_dir().join(h))
                .unwrap_or_default()
                .lines()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter(|l| l.contains('(') && l.trim_end().ends_with(");") && !l.starts_with('#'))
        .filter_map(|l| {
            l.split_once('(')
                .map(|(d, _)| d.rsplit([' ', '*']).next().unwrap_or("").to_owned())
        })
        .collect();
    assert!(
        header_fns.len() >= 51,
        "{} prototypes in the headers",
        header_fns.len()
    );
    let missing: Vec<&String> = header_fns
        .iter()
        .filter(|f| !rust_fns.contains(&f.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "declared by the headers, not defined in src/: {missing:?}"
    );
    let extra: Vec<&&str> = rust_fns
        .iter()
        .filter(|f| !header_fns.iter().any(|h| h == **f))
        .collect();
    assert!(
        extra.is_empty(),
        "defined in src/, not declared by the headers: {extra:?}"
    );
    // C refuses a redeclaration of another type, but takes an enum for the
    // unsigned int it is compatible with; C++ refuses any other type for an
    // extern "C" function ("conflicting declaration of C function").
    let c = format!("{INCLUDES}\n{decls}\nint main(void) {{ return 0; }}\n");
    let cxx = format!("{INCLUDES}\nextern \"C\" {{\n{decls}\n}}\nint main(void) {{ return 0; }}\n");
    if compile_and_run("prototypes", &c, false).is_some()
        && compile_and_run("prototypes_cxx", &cxx, true).is_some()
    {
        println!(
            "{} entry points have the headers' types, in C and C++",
            rust_fns.len()
        );
    }
}

/// `PMC_ID_MAKE_ID` and `PMC_ID_TO_*` split an id as the kernel does (CPU 12
/// bits, mode 4, class 8, row 8: the layout pmc-log's hwpmc importer decodes
/// kernel logs with).
#[test]
fn pmc_id_macros_split_as_the_kernel() {
    use pmc_log::hwpmc::IdLayout;
    let cases = [
        (0u32, 1u32, 0x0Fu32, 3u32),
        (0xFFF, 3, 0x0F, 0),
        (5, 0, 0x07, 0xFF),
        (4095, 2, 0x1A, 17),
    ];
    let mut src = format!("{INCLUDES}int main(void) {{\n");
    for (cpu, mode, class, row) in cases {
        src += &format!(
            "    {{ pmc_id_t id = PMC_ID_MAKE_ID({cpu}u, {mode}u, {class}u, {row}u);\n      \
             printf(\"%u %u %u %u %u\\n\", (unsigned)id, (unsigned)PMC_ID_TO_CPU(id), \
             (unsigned)PMC_ID_TO_MODE(id), (unsigned)PMC_ID_TO_CLASS(id), \
             (unsigned)PMC_ID_TO_ROWINDEX(id)); }}\n"
        );
    }
    src += "    return 0;\n}\n";
    let Some(out) = compile_and_run("pmc_id", &src, false) else {
        return;
    };
    for ((cpu, mode, class, row), line) in cases.iter().zip(out.lines()) {
        let v: Vec<u32> = line
            .split(' ')
            .map(|x| x.parse().expect("number"))
            .collect();
        let id = IdLayout::New.make(*cpu, *mode, *class, *row);
        let f = IdLayout::New.split(v[0]);
        assert_eq!(v[0], id, "PMC_ID_MAKE_ID({cpu}, {mode}, {class}, {row})");
        assert_eq!((v[1], v[2], v[3], v[4]), (f.cpu, f.mode, f.class, f.row));
        assert_eq!((v[1], v[2], v[3], v[4]), (*cpu, *mode, *class, *row));
    }
}

/// Each header compiles alone, as C and as C++, with every warning an error.
#[test]
fn each_header_stands_alone_in_c_and_cxx() {
    for h in ["pmc.h", "pmclog.h", "sys/pmc.h", "sys/pmclog.h"] {
        for cxx in [false, true] {
            let name = format!(
                "alone_{}_{}",
                h.replace(['/', '.'], "_"),
                if cxx { "cxx" } else { "c" }
            );
            let src = format!("#include <{h}>\nint main(void) {{ return 0; }}\n");
            if compile_and_run(&name, &src, cxx).is_none() {
                return;
            }
        }
    }
}
