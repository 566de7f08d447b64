//! `-m`, `-a` and `--script`: the per-sample listings.

use std::path::Path;

use pmc_analyze::annotate::{Listing, ListingWriter};

use crate::config::Analyze;
use crate::error::Failure;

use super::input::Whole;
use super::report::report_to;
use super::symbols::analyze_options;

/// `-m`, `-a` and `--script`: the listings of the log, each with a note on what had no
/// symbol.
pub(super) fn write_listings(
    args: &Analyze,
    log: &Option<Whole<'_>>,
    out_path: &Path,
) -> Result<(), Failure> {
    let script = args.script.then(|| out_path.to_path_buf());
    let listings = [
        (&args.annotate_pcs, Listing::SampledPcs, "-m"),
        (&args.annotate_callchains, Listing::Callchains, "-a"),
        (&script, Listing::Script, "--script"),
    ];
    for (file, kind, flag) in listings {
        let (Some(file), Some(log)) = (file, log.as_ref()) else {
            continue;
        };
        let mut stats = None;
        report_to(file, &format!("the {flag} listing"), |out| {
            let mut w = ListingWriter::new(kind, analyze_options(args).symbolize);
            log.each_record(&mut |r| w.add(r, &mut &mut *out))?;
            stats = Some(w.stats().clone());
            Ok(())
        })?;
        if let Some(stats) = stats.filter(|s| s.unresolved > 0) {
            let what = match kind {
                Listing::SampledPcs => "samples have no symbol and are not listed",
                Listing::Callchains => "callchain nodes have no symbol (listed as <unknown>)",
                Listing::Script => "frames have no symbol (printed as [unknown])",
            };
            let of = if kind == Listing::SampledPcs {
                stats.samples
            } else {
                stats.lines
            };
            note!("pmcstat: {flag}: {} of {of} {what}", stats.unresolved);
        }
    }
    Ok(())
}
