//! PAPI's own test suite: the ctests and validation tests of Debian's
//! papi-examples, built by `ci/papi-ctests.sh` with PAPI's Makefiles.
//!
//! Three runs on this machine: built against pmc's papi.h and library
//! (`pmc`), built against Debian's papi.h and libpapi (`papi`), and those
//! same Debian-built programs run on pmc's library by `LD_LIBRARY_PATH`
//! (`papi-built on pmc`). The verdict of a test is the PASSED / SKIPPED /
//! FAILED line PAPI's test library prints. Judged: on pmc no test fails
//! unless it fails with PAPI's own library on the same line (the machine
//! lacks what it needs, and the test fails rather than skips: e.g. no
//! preset exists without a PMU); every test PAPI passes, pmc passes; the
//! Debian-built programs give pmc's verdicts. The table is printed as rows
//! (`CTEST`) and written to `PMC_PAPI_CTESTS_TABLE` (Markdown) when set.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use pmc_testkit::{row, skip};

use super::common::*;
use super::header::ours;

const EXAMPLES: &str = "/usr/share/doc/papi-examples/examples";

type Verdicts = BTreeMap<String, (String, String)>;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../ci/papi-ctests.sh")
}

fn parse(out: &[u8]) -> Verdicts {
    String::from_utf8_lossy(out)
        .lines()
        .filter_map(|l| {
            let mut f = l.splitn(3, '\t');
            let name = f.next()?.to_owned();
            let verdict = f.next()?.to_owned();
            Some((name, (verdict, f.next().unwrap_or("").trim().to_owned())))
        })
        .collect()
}

fn suite(args: &[&str], env: &[(&str, &Path)]) -> Verdicts {
    let mut c = Command::new("bash");
    c.arg(script()).args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("run ci/papi-ctests.sh");
    assert!(
        out.status.success(),
        "ci/papi-ctests.sh {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    let v = parse(&out.stdout);
    assert!(
        v.len() > 100,
        "only {} tests ran: {}",
        v.len(),
        String::from_utf8_lossy(&out.stderr)
    );
    v
}

#[test]
fn papis_ctests_pass_on_pmc_where_this_machine_has_their_events() {
    if !Path::new(EXAMPLES).join("ctests").is_dir() {
        skip!("no {EXAMPLES} (Debian's papi-examples; ci/setup.sh installs it)");
        return;
    }
    if Command::new("make").arg("--version").output().is_err() {
        skip!("no make to build PAPI's tests with their Makefiles");
        return;
    }
    let (Some(lib), Some(libdir)) = (pmc_lib(), pmc_lib_dir()) else {
        return;
    };
    let work = pmc_testkit::workdir("pmc-papi-ctests");
    let mine_dir = work.join("pmc");
    let real_dir = work.join("papi");
    let deb = debian_lib();
    if deb.is_none() {
        skip!("no Debian libpapi (libpapi-dev) to run PAPI's tests on side by side");
    }
    // The two builds and runs side by side (the machine's two CPUs: each
    // build runs two compilers, each run four tests, most of them asleep).
    let (mine, theirs) = std::thread::scope(|s| {
        let theirs = deb.as_ref().map(|deb| {
            s.spawn(|| {
                suite(
                    &[
                        "--include",
                        "/usr/include",
                        "--lib",
                        deb.to_str().unwrap(),
                        "--out",
                        real_dir.to_str().unwrap(),
                    ],
                    &[],
                )
            })
        });
        let mine = suite(
            &[
                "--include",
                ours().to_str().unwrap(),
                "--lib",
                lib.to_str().unwrap(),
                "--out",
                mine_dir.to_str().unwrap(),
            ],
            &[],
        );
        (mine, theirs.map(|t| t.join().expect("the PAPI run")))
    });
    let cross = theirs.as_ref().map(|_| {
        suite(
            &["--no-build", "--out", real_dir.to_str().unwrap()],
            &[("LD_LIBRARY_PATH", &libdir)],
        )
    });

    // A test PAPI's library passes and pmc's does not runs once more, alone:
    // PAPI's timer tests (realtime's sleep(10) within 11 s, clockres'
    // million-call loops within the time limit) can fail on a loaded machine
    // for either library; a second failure stands.
    let mut mine = mine;
    if let Some(t) = &theirs {
        for (name, (m, _)) in mine.clone() {
            if t.get(&name).is_some_and(|x| x.0 == "PASSED") && m != "PASSED" {
                let bare = name.rsplit('/').next().unwrap_or(&name).to_owned();
                let again = suite(
                    &["--no-build", "--out", mine_dir.to_str().unwrap(), &bare],
                    &[],
                );
                if let Some(v) = again.get(&name) {
                    row!("CTEST {name}: {m} on pmc, run again alone: {}", v.0);
                    mine.insert(name.clone(), v.clone());
                }
            }
        }
    }
    // Likewise a Debian-built program whose verdict on pmc differs.
    let mut cross = cross;
    if let Some(c) = cross.as_mut() {
        for (name, (m, _)) in &mine {
            if c.get(name).is_some_and(|x| x.0 != *m) {
                let bare = name.rsplit('/').next().unwrap_or(name).to_owned();
                let again = suite(
                    &["--no-build", "--out", real_dir.to_str().unwrap(), &bare],
                    &[("LD_LIBRARY_PATH", &libdir)],
                );
                if let Some(v) = again.get(name) {
                    row!(
                        "CTEST {name}: Debian-built on pmc, run again alone: {}",
                        v.0
                    );
                    c.insert(name.clone(), v.clone());
                }
            }
        }
    }
    let none = (String::from("-"), String::new());
    let mut table = String::from(
        "| test | PAPI 7.0 (Debian) | pmc | PAPI-built on pmc | note |\n|---|---|---|---|---|\n",
    );
    let mut problems = Vec::new();
    let mut tally: BTreeMap<(&str, String), usize> = BTreeMap::new();
    for (name, (m, detail)) in &mine {
        let t = theirs.as_ref().and_then(|t| t.get(name)).unwrap_or(&none);
        let c = cross.as_ref().and_then(|c| c.get(name)).unwrap_or(&none);
        *tally.entry(("pmc", m.clone())).or_default() += 1;
        *tally.entry(("papi", t.0.clone())).or_default() += 1;
        *tally.entry(("papi-built on pmc", c.0.clone())).or_default() += 1;
        let note = if m == "FAILED" { detail.as_str() } else { "" };
        row!(
            "CTEST {name:<38} papi={:<8} pmc={m:<8} papi-built-on-pmc={:<8} {note}",
            t.0,
            c.0
        );
        table.push_str(&format!(
            "| {name} | {} | {m} | {} | {} |\n",
            t.0,
            c.0,
            note.replace('|', "/")
        ));
        if m == "FAILED" || m == "NOTBUILT" {
            let same = theirs.is_some() && t.0 == *m && t.1 == *detail;
            if !same {
                problems.push(format!(
                    "{name}: {m} on pmc ({detail}); PAPI's library: {} {}",
                    t.0, t.1
                ));
            }
        }
        if t.0 == "PASSED" && m != "PASSED" {
            problems.push(format!(
                "{name}: PASSED with PAPI's library, {m} on pmc ({detail})"
            ));
        }
        if cross.is_some() && c.0 != *m {
            problems.push(format!(
                "{name}: built against Debian's papi.h it is {} on pmc ({}), {m} built against pmc's",
                c.0, c.1
            ));
        }
    }
    let summary: Vec<String> = tally
        .iter()
        .map(|((who, v), n)| format!("{who} {v} {n}"))
        .collect();
    row!("CTEST summary: {}", summary.join(", "));
    if let Some(path) = std::env::var_os("PMC_PAPI_CTESTS_TABLE") {
        std::fs::write(&path, &table).expect("write PMC_PAPI_CTESTS_TABLE");
    }
    assert!(
        problems.is_empty(),
        "PAPI's tests on pmc:\n{}",
        problems.join("\n")
    );
}
