//! `-L` (event listing) and `--diagnose`.

use crate::cli::Args;
use crate::count::Failure;
use pmc::info::{Availability, Verdict};
use pmc::Backend;
use std::io::Write;

/// Runs -L or --diagnose; returns the exit status.
pub fn run(args: &Args) -> Result<u8, Failure> {
    let backend = pmc::Native::open()?;
    let out: Box<dyn Write> = match &args.output {
        Some(p) => Box::new(crate::output::create_file(p).map_err(|e| {
            Failure::Setup(pmc::Error::new(
                pmc::ErrorKind::Os,
                pmc::Op::Open,
                format!("cannot write {}: {e}", p.display()),
            ))
        })?),
        None => Box::new(std::io::stdout()),
    };
    let mut out = crate::output::Checked::new(out);
    if args.list {
        let events = backend.list_events(args.tracepoints);
        if args.json {
            let _ = writeln!(
                out,
                "{}",
                serde_json::to_string(&events).unwrap_or_default()
            );
        } else {
            let mut last = None;
            for e in &events {
                if last.as_ref() != Some(&e.source) {
                    let _ = writeln!(out, "\n{}:", e.source);
                    last = Some(e.source.clone());
                }
                let state = match &e.availability {
                    Availability::Available => "[available]".to_owned(),
                    Availability::Unavailable(why) => format!("[unavailable: {why}]"),
                    Availability::NotProbed(why) => format!("[not probed: {why}]"),
                };
                let _ = writeln!(out, "  {:<40} {state}", e.name);
            }
        }
    } else {
        let checks = backend.diagnose();
        if args.json {
            let _ = writeln!(
                out,
                "{}",
                serde_json::to_string(&checks).unwrap_or_default()
            );
        } else {
            let _ = writeln!(out, "pmc diagnostics ({}):", backend.name());
            for c in &checks {
                let mark = match c.verdict {
                    Verdict::Yes => "yes ",
                    Verdict::No => "NO  ",
                    Verdict::Info => "    ",
                };
                let _ = writeln!(out, "  {mark} {:<32} {}", c.name, c.detail);
                if let Some(fix) = &c.fix {
                    let _ = writeln!(out, "       {:<32} fix: {fix}", "");
                }
            }
        }
    }
    crate::output::write_outcome(out.finish(), "the listing")?;
    Ok(0)
}
