//! `-L` (event listing) and `--diagnose`.

use crate::config::List;
use crate::error::Failure;
use crate::output::document::{self, csv_row, json_line, Document};
use pmc::info::{Availability, Check, EventInfo, Verdict};
use pmc::Backend;
use std::io::{self, Write};

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
    let written = if args.diagnose {
        let diagnosis = Diagnosis {
            backend: backend.name(),
            checks: backend.diagnose(),
        };
        document::write(&args.format, &diagnosis, &mut out)
    } else {
        let events = EventList(backend.list_events(args.tracepoints));
        document::write(&args.format, &events, &mut out)
    };
    // The writer's own error (ENOSPC, EPIPE) first: it is what the document's error wraps.
    let done = out
        .finish()
        .and(written)
        .and_then(|()| out.get_mut().commit());
    crate::dest::write_outcome(done, "the listing")?;
    Ok(0)
}

/// `-L`'s document: the events by source.
struct EventList(Vec<EventInfo>);

/// An event's availability: its word and, when not available, why.
fn availability(a: &Availability) -> (&'static str, &str) {
    match a {
        Availability::Available => ("available", ""),
        Availability::Unavailable(why) => ("unavailable", why),
        Availability::NotProbed(why) => ("not probed", why),
    }
}

/// An event's availability as `-L` and `-u` print it: `available`, or the word and why.
fn availability_text(a: &Availability) -> String {
    match availability(a) {
        (word, "") => word.to_owned(),
        (word, why) => format!("{word}: {why}"),
    }
}

impl Document for EventList {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        let mut last = None;
        for e in &self.0 {
            if last != Some(&e.source) {
                writeln!(o, "\n{}:", e.source)?;
                last = Some(&e.source);
            }
            writeln!(
                o,
                "  {:<40} [{}]",
                e.name,
                availability_text(&e.availability)
            )?;
        }
        Ok(())
    }
    fn json(&self, o: &mut dyn Write) -> io::Result<()> {
        json_line(o, &self.0)
    }
    /// name, source, availability, why not available, description.
    fn csv(&self, o: &mut dyn Write, sep: &str) -> io::Result<()> {
        for e in &self.0 {
            let (word, why) = availability(&e.availability);
            let source = e.source.to_string();
            csv_row(o, sep, &[&e.name, &source, word, why, &e.description])?;
        }
        Ok(())
    }
}

/// `--diagnose`'s document: the backend's checks.
struct Diagnosis {
    backend: &'static str,
    checks: Vec<Check>,
}

impl Document for Diagnosis {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        writeln!(o, "pmc diagnostics ({}):", self.backend)?;
        for c in &self.checks {
            let mark = match c.verdict {
                Verdict::Yes => "yes ",
                Verdict::No => "NO  ",
                Verdict::Info => "    ",
            };
            writeln!(o, "  {mark} {:<32} {}", c.name, c.detail)?;
            if let Some(fix) = &c.fix {
                writeln!(o, "       {:<32} fix: {fix}", "")?;
            }
        }
        Ok(())
    }
    fn json(&self, o: &mut dyn Write) -> io::Result<()> {
        json_line(o, &self.checks)
    }
    /// check, verdict (yes, no, info), detail, fix.
    fn csv(&self, o: &mut dyn Write, sep: &str) -> io::Result<()> {
        for c in &self.checks {
            let verdict = match c.verdict {
                Verdict::Yes => "yes",
                Verdict::No => "no",
                Verdict::Info => "info",
            };
            let fix = c.fix.as_deref().unwrap_or("");
            csv_row(o, sep, &[&c.name, verdict, &c.detail, fix])?;
        }
        Ok(())
    }
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
            let state = availability_text(&e.availability);
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
