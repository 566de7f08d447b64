//! `--summary`: the top functions and objects (text, `--json`, CSV).

use std::io::Write;
use std::path::Path;

use pmc_analyze::top::{TopOptions, TopReport};
use pmc_analyze::Profile;

use crate::config::Analyze;
use crate::error::Failure;
use crate::output::document;

use super::report::{io_error, report_to};

/// `--summary`: the top functions and objects, as text, `--json` or `--csv`.
pub(super) fn write_summary(
    profile: &Profile,
    args: &Analyze,
    out_path: &Path,
) -> Result<(), Failure> {
    let top = TopReport::build(
        profile,
        &TopOptions {
            limit: args.top,
            ..Default::default()
        },
    );
    report_to(out_path, "the summary", |out| {
        document::write(&args.format, &Summary(&top), out)
    })
}

/// `--summary`'s document: the top tables.
pub(super) struct Summary<'a>(&'a TopReport);

impl document::Document for Summary<'_> {
    fn text(&self, mut o: &mut dyn Write) -> std::io::Result<()> {
        self.0.write_text(&mut o)
    }
    fn json(&self, mut o: &mut dyn Write) -> std::io::Result<()> {
        self.0.write_json(&mut o).map_err(io_error)
    }
    /// RFC 4180 rows with commas (pmc-analyze's `TopReport::write_csv`), whatever `-x` says.
    fn csv(&self, mut o: &mut dyn Write, _sep: &str) -> std::io::Result<()> {
        self.0.write_csv(&mut o)
    }
}
