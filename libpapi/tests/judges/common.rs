//! What the judges share: where the library cargo built is, its soname
//! directory, Debian's libpapi, building the C programs of `tests/c/`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pmc_testkit::skip;

/// `target/debug/deps`, where cargo put this test and the library built for it.
pub(crate) fn deps_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent().expect("deps directory").to_path_buf()
}

/// pmc's `libpapi.so` (this build's), or a visible skip.
pub(crate) fn pmc_lib() -> Option<PathBuf> {
    let so = deps_dir().join("libpapi.so");
    if so.exists() {
        Some(so)
    } else {
        skip!("no {} beside this test binary", so.display());
        None
    }
}

/// A directory holding `libpapi.so.7.0` -> pmc's library: what
/// `LD_LIBRARY_PATH` names to run a program built against any libpapi on
/// pmc's, and what pmc's programs link (made once per test process).
pub(crate) fn pmc_lib_dir() -> Option<PathBuf> {
    static DIR: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let so = pmc_lib()?;
        let dir = pmc_testkit::workdir("pmc-papi-lib");
        let link = dir.join("libpapi.so.7.0");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&so, &link).expect("symlink libpapi.so.7.0");
        Some(dir)
    })
    .clone()
}

/// Debian's libpapi (`libpapi.so`, the development link), if installed.
pub(crate) fn debian_lib() -> Option<PathBuf> {
    let out = Command::new("cc")
        .arg("-print-file-name=libpapi.so")
        .output()
        .ok()?;
    let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    (p.is_absolute() && p.exists() && !p.starts_with(deps_dir())).then_some(p)
}

/// `tests/c/NAME.c`.
pub(crate) fn source(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(format!("{name}.c"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Builds `tests/c/NAME.c` against `include` (a papi.h directory), linked
/// with `lib` (a `libpapi.so.7.0`, PAPI's soname) and its directory as
/// RUNPATH (which `LD_LIBRARY_PATH` overrides); `None` after a visible skip
/// without `cc`.
/// Each program is built once per test process (tests share them, and
/// run at once).
pub(crate) fn build(name: &str, tag: &str, include: &Path, lib: &Path) -> Option<PathBuf> {
    use std::collections::BTreeMap;
    use std::sync::Mutex;
    static BUILT: Mutex<BTreeMap<String, Option<PathBuf>>> = Mutex::new(BTreeMap::new());
    let mut built = BUILT.lock().unwrap_or_else(|p| p.into_inner());
    let key = format!("{name}-{tag}");
    if let Some(exe) = built.get(&key) {
        return exe.clone();
    }
    let exe = build_now(name, tag, include, lib);
    built.insert(key, exe.clone());
    exe
}

fn build_now(name: &str, tag: &str, include: &Path, lib: &Path) -> Option<PathBuf> {
    let dir = pmc_testkit::workdir("pmc-papi-c");
    let src = dir.join(format!("{name}-{tag}.c"));
    std::fs::write(&src, source(name)).expect("write the C source");
    let exe = dir.join(format!("{name}-{tag}"));
    let out = match Command::new("cc")
        .args(["-O1", "-Wall", "-Werror", "-std=gnu99", "-I"])
        .arg(include)
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .arg(lib)
        .arg("-Wl,--enable-new-dtags")
        .arg(format!("-Wl,-rpath,{}", lib.parent().unwrap().display()))
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            skip!("no C compiler (cc) to build {name}: {e}");
            return None;
        }
    };
    assert!(
        out.status.success(),
        "{name}.c does not build against {}: {}",
        include.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(exe)
}

/// Runs `exe ARGS` with `LD_LIBRARY_PATH` set to `libdir` (when given).
pub(crate) fn run(
    exe: &Path,
    args: &[&str],
    libdir: Option<&Path>,
    envs: &[(&str, &Path)],
) -> Output {
    let mut c = Command::new(exe);
    c.args(args);
    if let Some(d) = libdir {
        c.env("LD_LIBRARY_PATH", d);
    }
    for (k, v) in envs {
        c.env(k, v);
    }
    c.output()
        .unwrap_or_else(|e| panic!("run {}: {e}", exe.display()))
}

/// `key value` lines of a program's output.
pub(crate) fn values(out: &Output) -> std::collections::BTreeMap<String, i64> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_owned(), v.trim().parse().ok()?))
        })
        .collect()
}

/// Whether `perf stat` can count `event` here: its count, or `None`
/// (`<not supported>`, no perf).
pub(crate) fn perf_count(event: &str, cmd: &[&str]) -> Option<u64> {
    let out = Command::new("perf")
        .args(["stat", "-x", ",", "-e", event, "--"])
        .args(cmd)
        .output()
        .ok()?;
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err
        .lines()
        .find(|l| l.contains(',') && !l.starts_with('#'))?;
    // A count, or a time in ms for the clocks (`0.60,msec,task-clock,...`);
    // `<not supported>` and `<not counted>` are no count.
    let v: f64 = line.split(',').next()?.trim().parse().ok()?;
    Some(v.round() as u64)
}
