//! Helpers shared by the pmc-tests test files that run pmcstat.

use std::path::PathBuf;

use pmc_tests::{pmcstat_path, skip};

/// The pmcstat binary next to this test's `deps/` directory, or a visible
/// skip of test `name` saying how to build it.
pub fn pmcstat_or_skip(name: &str) -> Option<PathBuf> {
    let p = pmcstat_path();
    if p.is_none() {
        skip!(
            name,
            "no pmcstat binary next to {} (run `cargo build -p pmcstat` or `cargo test --workspace`)",
            std::env::current_exe()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        );
    }
    p
}
