//! `-L` (event listing) and `--diagnose`.

use crate::config::{Format, List};
use crate::error::Failure;
use pmc::info::{Availability, Verdict};
use pmc::Backend;
use std::io::Write;

/// Runs -L or --diagnose; returns the exit status.
pub fn run(args: &List) -> Result<u8, Failure> {
    let backend = pmc::Native::open()?;
    let out = match &args.output {
        Some(p) => crate::dest::create_file(p).map_err(|e| {
            Failure::Setup(pmc::Error::new(
                pmc::ErrorKind::Os,
                pmc::Op::Open,
                format!("cannot write {}: {e}", p.display()),
            ))
        })?,
        None => crate::dest::Dest::Stream(crate::dest::stdout_stream()),
    };
    let mut out = crate::dest::Checked::new(out);
    if !args.diagnose {
        let events = backend.list_events(args.tracepoints);
        if args.format == Format::Json {
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
        if args.format == Format::Json {
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
    let done = out.finish().and_then(|()| out.get_mut().commit());
    crate::dest::write_outcome(done, "the listing")?;
    Ok(0)
}

/// `-u SPEC` (pmcstat(8)'s event description): the event's entry in the `-L` list (source,
/// description, availability), then what opening it gives here: the native encoding, or why
/// it cannot be opened. A spec that does not parse is a usage error.
pub fn describe(spec_text: &str, tracepoints: bool) -> Result<u8, Failure> {
    use pmc::Pmc as _;
    let spec: pmc::EventSpec = spec_text
        .parse()
        .map_err(|e: pmc::ParseError| Failure::Usage(e.to_string()))?;
    let backend = pmc::Native::open()?;
    let mut out = crate::dest::Checked::new(crate::dest::stdout_stream());
    let canonical = spec.to_string();
    let name = spec_text.split(':').next().unwrap_or(spec_text);
    let events = backend.list_events(false);
    let entry = events
        .iter()
        .find(|e| e.name.eq_ignore_ascii_case(name) || e.name.eq_ignore_ascii_case(&canonical));
    let _ = writeln!(out, "{spec_text}:");
    if canonical != spec_text {
        let _ = writeln!(out, "  {:<14} {canonical}", "parsed as");
    }
    match entry {
        Some(e) => {
            let _ = writeln!(out, "  {:<14} {}", "source", e.source);
            if !e.description.is_empty() {
                let _ = writeln!(out, "  {:<14} {}", "description", e.description);
            }
            let state = match &e.availability {
                Availability::Available => "available".to_owned(),
                Availability::Unavailable(why) => format!("unavailable: {why}"),
                Availability::NotProbed(why) => format!("not probed: {why}"),
            };
            let _ = writeln!(out, "  {:<14} {state}", "listed as");
        }
        None => {
            let _ = writeln!(
                out,
                "  {:<14} not in the event list (-L{}); described by how it opens",
                "listed as",
                if tracepoints {
                    ""
                } else {
                    " --tracepoints lists tracepoints"
                }
            );
        }
    }
    match backend.allocate(&pmc::Allocation::counting(spec)) {
        Ok(pmc) => {
            let fields: Vec<String> = pmc
                .native_config()
                .into_iter()
                .map(|f| format!("{}={}", f.name, f.value))
                .collect();
            let _ = writeln!(out, "  {:<14} yes, as {}", "opens here", fields.join(" "));
        }
        Err(e) => {
            let _ = writeln!(out, "  {:<14} no: {e}", "opens here");
        }
    }
    crate::dest::write_outcome(out.finish(), "the description")?;
    Ok(0)
}
