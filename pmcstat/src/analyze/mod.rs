//! `-R file`: reading a log (ours or FreeBSD hwpmc's) and reporting on it.
//! Here: `run` (the order of the outputs), `run_top` (`-R -T`). By concern:
//! `input.rs` (the log mapped or streamed, hwpmc's converted), `filter.rs`
//! (`-i`), `symbols.rs` (`-r`, `-k`, dwarf-raw unwinding), `report.rs` (a
//! report's file, its writes checked, the warnings); the writers:
//! `dump.rs` (the record listing: pmcstat(8)'s lines, `--dump`, `--json`),
//! `listings.rs` (`-m`, `-a`, `--script`), `perf_data.rs`, `pprof.rs`,
//! `profile.rs` (`-G`, `-F`, `--folded`, `--flamegraph`), `gprof.rs` (`-g`),
//! `summary.rs` (the top-N summary: text, `--json` or `-x` CSV).

mod dump;
mod filter;
mod gprof;
mod input;
mod listings;
mod perf_data;
mod pprof;
mod profile;
mod report;
mod summary;
mod symbols;

use std::path::{Path, PathBuf};

use crate::config::Analyze;
use crate::error::Failure;
use pmc::{Error, ErrorKind, Op};

use dump::dump_records;
use filter::{filter_thread, ThreadFilter};
use input::{load_with, nothing_but_damage, whole_log, Input};
use listings::write_listings;
use perf_data::write_perf_data;
use pprof::write_pprof;
use profile::{build_profile, write_profile_reports};
use symbols::{analyze_options, unwind_stacks, warn_kernel_dir};

fn fail(what: String) -> Failure {
    Failure::Setup(Error::new(ErrorKind::Os, Op::Log, what))
}

/// Runs `-R`.
pub fn run(args: &Analyze) -> Result<u8, Failure> {
    let r = run_reports(args);
    // A log truncated while mapped reads as zeros past the cut (pmc_analyze::file::Bytes):
    // the reports above end there, and say why.
    let cut = MAPPED_LOG
        .lock()
        .ok()
        .and_then(|m| m.as_ref().and_then(|b| b.cut()));
    if let (Some(cut), Some(path)) = (cut, args.read_log.as_deref()) {
        diag!(
            "pmcstat: warning: {}: the log was truncated while being read: from byte {cut} on \
             it read as zeros, so its records after that offset are missing from the reports",
            path.display()
        );
    }
    r
}

/// The mapped `-R` log, kept to ask it at the end whether it was truncated while read.
static MAPPED_LOG: std::sync::Mutex<Option<pmc_analyze::file::Bytes>> = std::sync::Mutex::new(None);

fn run_reports(args: &Analyze) -> Result<u8, Failure> {
    let Some(path) = args.read_log.as_deref() else {
        return Err(Failure::Usage("-R needs a file".into()));
    };
    // No output may replace the log being read (same device and inode, any name).
    crate::dest::protect(path);
    let (input, mut thread) = read_input(path, args)?;
    if let Input::Bytes(b) = &input {
        nothing_but_damage(b, path)?;
    }
    let r = run_input(&input, path, args, &mut thread);
    if let Input::Stream(s) = &input {
        s.report_import(path);
    }
    r
}

/// Runs `-R`'s reports over the log.
fn run_input(
    input: &Input,
    path: &Path,
    args: &Analyze,
    thread: &mut Option<ThreadFilter>,
) -> Result<u8, Failure> {
    let stdout = PathBuf::from("-");
    let out_path = args.output.as_deref().unwrap_or(&stdout);
    let log = whole_log(input, path, args)?;
    write_listings(args, &log, out_path)?;
    if !wants_reports(args) {
        // As pmcstat -R alone: one line per record.
        dump_records(input, path, args, thread.as_mut(), out_path)?;
        return Ok(0);
    }
    if let (Some(to), Some(log)) = (&args.perf_data, &log) {
        write_perf_data(log, path, to)?;
    }
    if (args.perf_data.is_some() || args.script) && no_listing_nor_profile(args) {
        return Ok(0);
    }
    if let (Some(p), Some(log)) = (&args.pprof, &log) {
        let only = args.callgraph.is_none()
            && args.folded.is_none()
            && args.flamegraph.is_none()
            && args.calltree.is_none()
            && !args.gprof
            && !args.summary;
        write_pprof(log, path, p, only, analyze_options(args))?;
        if only {
            return Ok(0);
        }
    }
    let profile = build_profile(input, path, args, thread.as_mut())?;
    write_profile_reports(&profile, args, out_path)?;
    Ok(0)
}

/// The `-R` log, its stacks unwound (`--call-graph dwarf-raw` logs) and, with `-i TID`,
/// its other threads' samples left out (a stream is filtered as it is read: the filter is
/// returned).
fn read_input(path: &Path, args: &Analyze) -> Result<(Input, Option<ThreadFilter>), Failure> {
    // An hwpmc log file is streamed through its conversion, in bounded memory: each output
    // that reads the log has a pass of its own over the file (issue 21, item 12).
    let mut input = load_with(path, true)?;
    if let Input::Bytes(b) = &input {
        if let Some(unwound) = unwind_stacks(b, args)? {
            input = Input::Bytes(unwound.into());
        }
    }
    warn_kernel_dir(args);
    let mut thread = args.thread.map(ThreadFilter::new);
    if let (Some(f), Input::Bytes(b)) = (thread.as_mut(), &input) {
        input = Input::Bytes(filter_thread(b, f)?.into());
        f.report();
    }
    Ok((input, thread))
}

/// Whether an output reads the log more than once (`-m`, `-a`, `--pprof`, `--perf-data`,
/// `--script`): it is then needed whole.
fn needs_bytes(args: &Analyze) -> bool {
    args.annotate_pcs.is_some()
        || args.annotate_callchains.is_some()
        || args.pprof.is_some()
        || args.perf_data.is_some()
        || args.script
}

/// Whether any output other than the record dump was asked for.
fn wants_reports(args: &Analyze) -> bool {
    args.callgraph.is_some()
        || args.script
        || args.annotate_pcs.is_some()
        || args.annotate_callchains.is_some()
        || args.gprof
        || args.calltree.is_some()
        || args.folded.is_some()
        || args.flamegraph.is_some()
        || args.pprof.is_some()
        || args.perf_data.is_some()
        || args.summary
}

/// Whether no profile is asked for: no listing (`-m`, `-a`) and no report built from
/// the profile (the conversions `--perf-data` and `--script` are then all there is).
fn no_listing_nor_profile(args: &Analyze) -> bool {
    let others = args.pprof.is_some()
        || args.callgraph.is_some()
        || args.folded.is_some()
        || args.flamegraph.is_some()
        || args.calltree.is_some()
        || args.gprof
        || args.summary;
    let no_listings = args.annotate_pcs.is_none() && args.annotate_callchains.is_none();
    no_listings && !others
}

/// `-R FILE -T`: the top view, replayed from the log.
pub fn run_top(args: &Analyze) -> Result<u8, Failure> {
    let path = args
        .read_log
        .as_deref()
        .unwrap_or(std::path::Path::new("-"));
    // An hwpmc file is converted as it is read, as a FIFO or standard input is read:
    // the replay reads the log once, front to back.
    let log = load_with(path, true)?;
    let refresh = args.interval.map_or(
        crate::top::DEFAULT_REFRESH,
        std::time::Duration::from_secs_f64,
    );
    warn_kernel_dir(args);
    let failed = |e: std::io::Error| {
        Failure::Setup(pmc::Error::new(
            pmc::ErrorKind::Os,
            pmc::Op::Log,
            format!("-T: {e}"),
        ))
    };
    let mut filter = args.thread.map(ThreadFilter::new);
    match log {
        Input::Bytes(mut log) => {
            if let Some(unwound) = unwind_stacks(&log, args)? {
                log = unwound.into();
            }
            if let Some(filter) = &mut filter {
                log = filter_thread(&log, filter)?.into();
                filter.report();
            }
            crate::top::replay(
                crate::top::ReplayInput::Bytes(&log),
                refresh,
                analyze_options(args),
                &mut |_| true,
            )
            .map_err(failed)?;
        }
        Input::Stream(s) => {
            // A streamed log is not unwound: its raw user stacks, if any, stay unread,
            // as in the other reports of a stream.
            let input = crate::top::ReplayInput::Stream(Box::new(std::io::BufReader::new(&s)));
            let r = match &mut filter {
                Some(f) => {
                    crate::top::replay(input, refresh, analyze_options(args), &mut |r| f.keep(r))
                }
                None => crate::top::replay(input, refresh, analyze_options(args), &mut |_| true),
            };
            r.map_err(failed)?;
            if let Some(f) = &filter {
                f.report();
            }
            s.report_import(path);
        }
    }
    Ok(0)
}
