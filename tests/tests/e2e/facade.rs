//! The `pmc` facade end to end: `pmc::Native::open()` and the README's
//! library example, compiled and run as written.

// Used by the Linux-only test below (this file also builds for FreeBSD).
#[cfg(target_os = "linux")]
use pmc::{Allocation, Backend as _, ErrorKind, Pmc as _, Status, Target};

/// The README's example, verbatim (checked below), as a module.
mod readme {
    include!("../../src/readme_example.rs");
    pub fn run() -> pmc::Result<()> {
        main()
    }
}

#[test]
fn readme_example_is_the_one_compiled_here() {
    let readme = include_str!("../../../README.md");
    let example = include_str!("../../src/readme_example.rs");
    let block = format!("```rust\n{example}```");
    assert!(
        readme.contains(&block),
        "README.md's ```rust example differs from tests/src/readme_example.rs; \
         copy the README block there so that the test compiles what users read"
    );
}

/// Process-scope PMCs attached to the calling process count every thread
/// of this test binary (pmc-linux attaches `Target::Current` to each thread
/// in /proc/self/task), so tests that count themselves take turns.
static SELF_COUNTING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn self_counting() -> std::sync::MutexGuard<'static, ()> {
    SELF_COUNTING.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn readme_example_runs() {
    let _turn = self_counting();
    readme::run().expect("the README example returns Ok");
}

#[test]
#[cfg(target_os = "linux")]
fn native_is_the_linux_backend_and_counts() {
    let _turn = self_counting();
    let backend = pmc::Native::open().expect("pmc::Native::open");
    assert_eq!(backend.name(), "linux-perf");
    let mut faults = backend
        .allocate(&Allocation::counting("page-faults".parse().unwrap()))
        .unwrap();
    // The calling thread alone: the process's other threads run other tests.
    faults.attach(Target::CurrentThread).unwrap();
    faults.start().unwrap();
    pmc_tests::touch_pages(1024);
    faults.stop().unwrap();
    let r = faults.read().unwrap();
    assert_eq!(r.status(), Status::Ok, "{r:?}");
    assert!(
        (1024..1024 + 256).contains(&r.value),
        "1024 touched pages, {} faults",
        r.value
    );
    assert_eq!(r.running_ratio(), Some(1.0), "{r:?}");

    // Errors come through the facade typed.
    let e = "no-such-event-xyz"
        .parse::<pmc::EventSpec>()
        .map_err(pmc::Error::from)
        .and_then(|s| backend.allocate(&Allocation::counting(s)).map(drop))
        .unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::NoSuchEvent | ErrorKind::Parse),
        "{e}"
    );
}

/// Library errors say what to do next in API terms, never in pmcstat's flags
/// (pmcstat translates them for its users: tests/tests/e2e/cli.rs).
#[test]
fn library_errors_name_api_calls_not_cli_flags() {
    use pmc::Backend;
    let e = pmc::Error::from("cycles:q".parse::<pmc::EventSpec>().unwrap_err());
    let help = e.help().unwrap_or("");
    assert!(help.contains("`Backend::list_events`"), "{help}");
    let Ok(b) = pmc::Native::open() else {
        pmc_testkit::skip!("no native backend here");
        return;
    };
    let mut unknown = 0;
    for event in [
        "no-such-event-anywhere",
        "cpu/no-such-term=1/",
        "nosuchsys:nosuchtp",
    ] {
        let Ok(spec) = event.parse::<pmc::EventSpec>() else {
            continue;
        };
        let e = match b.allocate(&pmc::Allocation::counting(spec)) {
            Ok(_) => panic!("{event} was allocated"),
            Err(e) => e,
        };
        let text = e.to_string();
        assert!(!text.contains("pmcstat -"), "{event}: {text}");
        if e.kind() == pmc::ErrorKind::NoSuchEvent {
            assert!(text.contains("Backend::list_events"), "{event}: {text}");
            unknown += 1;
        }
    }
    assert!(unknown >= 1, "no unknown-event error was seen");
}
