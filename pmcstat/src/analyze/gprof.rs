//! `-g`: gmon files, one per PMC and object.

use std::path::PathBuf;

use pmc_analyze::gmon::{write_gmon, GmonOptions};
use pmc_analyze::Profile;

use crate::config::Analyze;
use crate::error::Failure;

/// `-g`: the gmon files, one per PMC and object, and what went into none.
pub(super) fn write_gprof(profile: &Profile, args: &Analyze) -> Result<(), Failure> {
    let opts = GmonOptions {
        dir: args
            .samples_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from(".")),
        max_depth: args.depth.unwrap_or(16),
        output: crate::dest::private_options(),
    };
    let report = write_gmon(profile, &opts)
        .map_err(|e| Failure::Output(format!("writing the gmon files: {e}")))?;
    for f in &report.files {
        note!(
            "pmcstat: {}: {} samples of {} in {}{}",
            pmc_log::escape::escape(&f.path.display().to_string()),
            f.samples,
            f.pmc,
            pmc_log::escape::escape(&f.object),
            if f.overflowed {
                " (some counters saturated at 65535)"
            } else {
                ""
            }
        );
    }
    if report.files.is_empty() {
        diag!("pmcstat: -g: no samples in any object file; no gmon file written");
    }
    if report.unattributed > 0 {
        note!(
            "pmcstat: -g: {} samples outside any object file (kernel through kallsyms, [vdso], \
             unmapped) are in no gmon file",
            report.unattributed
        );
    }
    for (object, why) in &report.skipped {
        diag!(
            "pmcstat: -g: {}: {}",
            pmc_log::escape::escape(object),
            pmc_log::escape::escape(why)
        );
    }
    Ok(())
}
