//! `-R file`: reading a log (ours or FreeBSD hwpmc's) and reporting on it:
//! the record listing (pmcstat(8)'s lines, or `--dump`/`--json`), `-G` call
//! graph, `-g` gmon files, `-F` callgrind file, `--folded`, `--flamegraph`,
//! `--pprof`, and a top-N summary (text, `--json` or `-x` CSV).

use crate::cli::{Args, CallgraphOrder};
use crate::count::Failure;
use pmc::{Error, ErrorKind, Op};
use pmc_analyze::annotate::{write_listing, Listing};
use pmc_analyze::callgraph::{write_callgraph, CallGraphOptions, Order};
use pmc_analyze::callgrind::{write_callgrind, CallgrindOptions};
use pmc_analyze::flame::{write_flamegraph, write_folded, FlameGraphOptions, FoldedOptions};
use pmc_analyze::gmon::{write_gmon, GmonOptions};
use pmc_analyze::top::{TopOptions, TopReport};
use pmc_analyze::{AnalyzeOptions, Profile};
use std::io::Write;
use std::path::Path;

fn fail(what: String) -> Failure {
    Failure::Setup(Error::new(ErrorKind::Os, Op::Log, what))
}

/// Which log format a file holds, by its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogKind {
    /// pmc-log.
    Pmc,
    /// FreeBSD hwpmc's kernel stream (or a `pmc record` file with the
    /// `PMCL` prefix).
    Hwpmc,
}

/// `pmc record`'s file prefix, as the first native-endian (amd64: little
/// endian) word: the bytes `LCMP`.
const PMCL_WORD: u32 = 0x504d_434c;

/// Detects the format by magic: pmc-log's preamble, hwpmc's `PMCL` file
/// prefix, or a first hwpmc record header (magic 0xEE in the top byte of a
/// little-endian word).
pub fn detect(data: &[u8]) -> Option<LogKind> {
    if data.starts_with(&pmc_log::format::MAGIC) {
        return Some(LogKind::Pmc);
    }
    let word = u32::from_le_bytes(data.get(..4)?.try_into().ok()?);
    (word == PMCL_WORD || word >> 24 == 0xEE).then_some(LogKind::Hwpmc)
}

/// Reads `path` and returns it as pmc-log bytes (converting a hwpmc log).
pub fn load(path: &Path) -> Result<Vec<u8>, Failure> {
    let data =
        std::fs::read(path).map_err(|e| fail(format!("cannot read {}: {e}", path.display())))?;
    match detect(&data) {
        Some(LogKind::Pmc) => Ok(data),
        Some(LogKind::Hwpmc) => {
            let (out, report) = pmc_log::hwpmc::convert(&data, Vec::new())
                .map_err(|e| fail(format!("{}: not a readable hwpmc log: {e}", path.display())))?;
            eprintln!(
                "pmcstat: {}: FreeBSD hwpmc log converted ({report:?})",
                path.display()
            );
            Ok(out)
        }
        None => Err(fail(format!(
            "{}: not a pmc log (neither pmc-log's magic nor a hwpmc log header)",
            path.display()
        ))),
    }
}

fn create(path: &Path) -> Result<Box<dyn Write>, Failure> {
    if path == Path::new("-") {
        return Ok(Box::new(std::io::stdout()));
    }
    let f = std::fs::File::create(path)
        .map_err(|e| fail(format!("cannot write {}: {e}", path.display())))?;
    Ok(Box::new(std::io::BufWriter::new(f)))
}

/// Runs `-R`.
pub fn run(args: &Args) -> Result<u8, Failure> {
    let Some(path) = args.read_log.as_deref() else {
        return Err(Failure::Usage("-R needs a file".into()));
    };
    let log = load(path)?;
    let listings = [
        (&args.annotate_pcs, Listing::SampledPcs, "-m"),
        (&args.annotate_callchains, Listing::Callchains, "-a"),
    ];
    for (file, kind, flag) in listings {
        let Some(file) = file else { continue };
        let mut out = create(file)?;
        let r = write_listing(&log, kind, AnalyzeOptions::default().symbolize, &mut out)
            .and_then(|s| out.flush().map(|()| s).map_err(pmc_analyze::Error::Write));
        let stats = match r {
            // `pmcstat -R log -m - | head`: the reader went away; stop quietly.
            Err(pmc_analyze::Error::Write(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                return Ok(0)
            }
            r => r.map_err(|e| fail(format!("{flag}: writing {}: {e}", file.display())))?,
        };
        if stats.unresolved > 0 {
            let what = match kind {
                Listing::SampledPcs => "samples have no symbol and are not listed",
                Listing::Callchains => "callchain nodes have no symbol (listed as <unknown>)",
            };
            eprintln!(
                "pmcstat: {flag}: {} of {} {what}",
                stats.unresolved,
                if kind == Listing::SampledPcs {
                    stats.samples
                } else {
                    stats.lines
                }
            );
        }
    }
    let reports = args.callgraph.is_some()
        || args.annotate_pcs.is_some()
        || args.annotate_callchains.is_some()
        || args.gprof
        || args.calltree.is_some()
        || args.folded.is_some()
        || args.flamegraph.is_some()
        || args.pprof.is_some()
        || args.summary;
    if !reports {
        // As pmcstat -R alone: one line per record.
        let mut out = match &args.output {
            Some(p) => create(p)?,
            None => Box::new(std::io::stdout()),
        };
        let reader =
            pmc_log::Reader::new(&log).map_err(|e| fail(format!("{}: {e}", path.display())))?;
        let mut it = reader.records();
        let r = if args.json {
            pmc_log::export::json::write_all(&mut it, &mut out)
        } else if args.dump {
            pmc_log::export::text::write_all(&mut it, &mut out)
        } else {
            pmc_analyze::printlog::write_all(&mut it, &mut out)
        };
        match r {
            // `pmcstat -R log | head`: the reader went away; stop quietly.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(0),
            r => r.map_err(|e| fail(format!("writing the dump: {e}")))?,
        };
        match out.flush() {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(0),
            r => r.map_err(|e| fail(format!("writing the dump: {e}")))?,
        }
        let report = it.into_report();
        if !report.is_clean() {
            eprintln!("pmcstat: {}: {report:?}", path.display());
        }
        return Ok(0);
    }
    if let Some(p) = &args.pprof {
        let only = args.callgraph.is_none()
            && args.folded.is_none()
            && args.flamegraph.is_none()
            && args.calltree.is_none()
            && !args.gprof
            && !args.summary;
        write_pprof(&log, path, p, only)?;
        if only {
            return Ok(0);
        }
    }
    let opts = AnalyzeOptions {
        keep_pcs: args.gprof,
        ..AnalyzeOptions::default()
    };
    let profile =
        Profile::from_log(&log, opts).map_err(|e| fail(format!("{}: {e}", path.display())))?;
    for w in &profile.warnings {
        eprintln!("pmcstat: warning: {w}");
    }
    if let Some(g) = &args.callgraph {
        let opts = CallGraphOptions {
            max_depth: args.depth.unwrap_or(16),
            order: match args.callgraph_order {
                CallgraphOrder::Callee => Order::Callees,
                CallgraphOrder::Caller => Order::Callers,
            },
            ..Default::default()
        };
        let mut out = create(g)?;
        write_callgraph(&profile, &opts, &mut out)
            .and_then(|()| out.flush())
            .map_err(|e| fail(format!("writing the call graph to {}: {e}", g.display())))?;
    }
    if args.gprof {
        let opts = GmonOptions {
            dir: args
                .samples_dir
                .clone()
                .unwrap_or_else(|| std::path::PathBuf::from(".")),
            max_depth: args.depth.unwrap_or(16),
        };
        let report = write_gmon(&profile, &opts)
            .map_err(|e| fail(format!("writing the gmon files: {e}")))?;
        for f in &report.files {
            eprintln!(
                "pmcstat: {}: {} samples of {} in {}{}",
                f.path.display(),
                f.samples,
                f.pmc,
                f.object,
                if f.overflowed {
                    " (some counters saturated at 65535)"
                } else {
                    ""
                }
            );
        }
        if report.files.is_empty() {
            eprintln!("pmcstat: -g: no samples in any object file; no gmon file written");
        }
        if report.unattributed > 0 {
            eprintln!(
                "pmcstat: -g: {} samples outside any object file (kernel through kallsyms, [vdso], \
                 unmapped) are in no gmon file",
                report.unattributed
            );
        }
        for (object, why) in &report.skipped {
            eprintln!("pmcstat: -g: {object}: {why}");
        }
    }
    if let Some(c) = &args.calltree {
        let opts = CallgrindOptions {
            command: (!profile.comms.is_empty()).then(|| profile.comms.join(" ")),
            ..Default::default()
        };
        let mut out = create(c)?;
        write_callgrind(&profile, &opts, &mut out)
            .and_then(|()| out.flush())
            .map_err(|e| fail(format!("writing the callgrind file {}: {e}", c.display())))?;
    }
    if let Some(f) = &args.folded {
        let mut out = create(f)?;
        write_folded(&profile, &FoldedOptions::default(), &mut out)
            .map_err(|e| fail(format!("writing folded stacks: {e}")))?;
        let _ = out.flush();
    }
    if let Some(svg) = &args.flamegraph {
        let mut out = create(svg)?;
        write_flamegraph(&profile, &FlameGraphOptions::default(), &mut out)
            .map_err(|e| fail(format!("writing the flame graph: {e}")))?;
        let _ = out.flush();
    }
    if args.summary {
        let top = TopReport::build(
            &profile,
            &TopOptions {
                limit: args.top,
                ..Default::default()
            },
        );
        let mut out = match &args.output {
            Some(p) => create(p)?,
            None => Box::new(std::io::stdout()),
        };
        let r = if args.json {
            top.write_json(&mut out).map_err(|e| e.to_string())
        } else if args.csv.is_some() {
            top.write_csv(&mut out).map_err(|e| e.to_string())
        } else {
            top.write_text(&mut out).map_err(|e| e.to_string())
        };
        r.map_err(|e| fail(format!("writing the summary: {e}")))?;
        let _ = out.flush();
    }
    Ok(0)
}

/// `--pprof FILE`: the log as a gzipped pprof profile. Its warnings are
/// printed when no other report (which prints the same ones) is asked for.
fn write_pprof(log: &[u8], path: &Path, to: &Path, warn: bool) -> Result<(), Failure> {
    let export = pmc_analyze::pprof::export_log(log, AnalyzeOptions::default())
        .map_err(|e| fail(format!("{}: {e}", path.display())))?;
    if warn {
        for w in &export.warnings {
            eprintln!("pmcstat: warning: {w}");
        }
    }
    let mut out = create(to)?;
    export
        .write_gzip(&mut out)
        .map_err(|e| fail(format!("writing the pprof profile {}: {e}", to.display())))?;
    out.flush()
        .map_err(|e| fail(format!("writing the pprof profile {}: {e}", to.display())))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_by_magic() {
        assert_eq!(detect(&pmc_log::format::MAGIC), Some(LogKind::Pmc));
        assert_eq!(detect(b"LCMP\0\0\0\0"), Some(LogKind::Hwpmc));
        assert_eq!(detect(&[0x10, 0x00, 0x01, 0xEE]), Some(LogKind::Hwpmc));
        assert_eq!(detect(b"hello"), None);
        assert_eq!(detect(b""), None);
    }
}
