//! Helpers shared by pmcstat's integration tests: the binary under test, run
//! through `pmc_testkit::cli`. Each test file uses some of them.
#![allow(dead_code)]

use std::process::Command;

/// The pmcstat binary of this build.
pub const PMCSTAT: &str = env!("CARGO_BIN_EXE_pmcstat");

/// A `Command` for the pmcstat binary of this build.
pub fn command() -> Command {
    Command::new(PMCSTAT)
}

/// Runs pmcstat with `args`: (exit code, stdout, stderr).
pub fn pmcstat<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> (i32, String, String) {
    pmc_testkit::cli::run(PMCSTAT, args).into_parts()
}
