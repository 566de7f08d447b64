//! Building the small C programs that tests sample or count, with the
//! host's `cc`.
//!
//! A machine without a C compiler skips those tests visibly (see
//! [`skip!`](crate::skip)); it never passes them.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Writes `source` to `DIR/NAME.c` and compiles it with
/// `cc FLAGS -o DIR/NAME DIR/NAME.c`; the executable's path, or why not (the
/// compiler missing, or its diagnostics).
///
/// Panics when `DIR/NAME.c` cannot be written (`dir` must exist).
///
/// ```no_run
/// let dir = pmc_testkit::workdir("doc-cc");
/// match pmc_testkit::cc::compile(&dir, "ret", "int main(void) { return 0; }", &["-O1"]) {
///     Ok(exe) => assert!(exe.ends_with("ret")),
///     Err(why) => eprintln!("{why}"),
/// }
/// ```
pub fn compile(dir: &Path, name: &str, source: &str, flags: &[&str]) -> Result<PathBuf, String> {
    let src = dir.join(format!("{name}.c"));
    if let Err(e) = std::fs::write(&src, source) {
        panic!("cannot write {}: {e}", src.display());
    }
    let exe = dir.join(name);
    let out = Command::new("cc")
        .args(flags)
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .output()
        .map_err(|e| format!("cannot run cc: {e}"))?;
    if out.status.success() {
        Ok(exe)
    } else {
        Err(format!(
            "cc {} failed ({}): {}",
            flags.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// [`compile`], recording a visible skip of the calling test (with the
/// reason) when it fails; the caller then returns:
///
/// ```no_run
/// # fn a_test() {
/// let dir = pmc_testkit::workdir("doc-cc-build");
/// let Some(exe) = pmc_testkit::cc::build(&dir, "prog", "int main(void) { return 0; }", &["-O0"])
/// else {
///     return;
/// };
/// # let _ = exe;
/// # }
/// ```
pub fn build(dir: &Path, name: &str, source: &str, flags: &[&str]) -> Option<PathBuf> {
    match compile(dir, name, source, flags) {
        Ok(exe) => Some(exe),
        Err(why) => {
            crate::skip!("no C compiler (cc) to build the test program {name}: {why}");
            None
        }
    }
}
