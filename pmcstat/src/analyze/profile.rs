//! The symbolized profile (of the `-i` thread) and the reports built from
//! it: `-G`, `-F`, `--folded`, `--flamegraph`, then `-g` and `--summary`.

use std::path::Path;

use pmc_analyze::callgraph::{write_callgraph, CallGraphOptions, Order};
use pmc_analyze::callgrind::{write_callgrind, CallgrindOptions};
use pmc_analyze::flame::{write_flamegraph, write_folded, FlameGraphOptions, FoldedOptions};
use pmc_analyze::{AnalyzeOptions, Profile};

use crate::cli::CallgraphOrder;
use crate::config::Analyze;
use crate::error::Failure;

use super::fail;
use super::filter::ThreadFilter;
use super::gprof::write_gprof;
use super::input::{Input, Stream};
use super::report::{io_error, print_warnings, report_to};
use super::summary::write_summary;
use super::symbols::analyze_options;

/// The symbolized profile of the log (of the `-i` thread), its warnings printed.
pub(super) fn build_profile(
    input: &Input,
    path: &Path,
    args: &Analyze,
    thread: Option<&mut ThreadFilter>,
) -> Result<Profile, Failure> {
    let mut opts = AnalyzeOptions {
        keep_pcs: args.gprof,
        ..analyze_options(args)
    };
    // The call graph and the stacks show inlined functions as frames of their own, marked
    // "(inlined)", as perf and samply show them; the other reports fold them into their
    // function (Profile::without_inlines), as perf report does without --inline.
    // `--no-inline` folds them everywhere.
    opts.symbolize.inlines = !args.no_inline
        && (args.callgraph.is_some() || args.folded.is_some() || args.flamegraph.is_some());
    let profile = match (input, thread) {
        (Input::Bytes(b), _) => Profile::from_log(b, opts),
        (Input::Stream(f), None) => Profile::from_stream(std::io::BufReader::new(f), opts),
        (Input::Stream(f), Some(filter)) => {
            let p = profile_of_thread(f, opts, filter);
            filter.report();
            p
        }
    }
    .map_err(|e| fail(format!("{}: {e}", path.display())))?;
    print_warnings(&profile.warnings);
    Ok(profile)
}

/// The reports built from the profile, in this order: `-G`, `-g`, `-F`, folded stacks,
/// the flame graph, the summary.
pub(super) fn write_profile_reports(
    profile: &Profile,
    args: &Analyze,
    out_path: &Path,
) -> Result<(), Failure> {
    if let Some(g) = &args.callgraph {
        let opts = CallGraphOptions {
            max_depth: args.depth.unwrap_or(16),
            order: match args.callgraph_order {
                CallgraphOrder::Callee => Order::Callees,
                CallgraphOrder::Caller => Order::Callers,
            },
            ..Default::default()
        };
        report_to(g, "the call graph", |out| {
            write_callgraph(profile, &opts, &mut &mut *out).map_err(io_error)
        })?;
    }
    // The reports of real functions: inlined frames folded into them.
    let folded = std::cell::OnceCell::new();
    let real = || folded.get_or_init(|| profile.without_inlines());
    if args.gprof {
        write_gprof(real(), args)?;
    }
    if let Some(c) = &args.calltree {
        let profile = real();
        let opts = CallgrindOptions {
            command: (!profile.comms.is_empty()).then(|| profile.comms.join(" ")),
            ..Default::default()
        };
        report_to(c, "the callgrind file", |out| {
            write_callgrind(profile, &opts, &mut &mut *out)
        })?;
    }
    if let Some(f) = &args.folded {
        report_to(f, "folded stacks", |out| {
            write_folded(profile, &FoldedOptions::default(), &mut &mut *out).map_err(io_error)
        })?;
    }
    if let Some(svg) = &args.flamegraph {
        report_to(svg, "the flame graph", |out| {
            write_flamegraph(profile, &FlameGraphOptions::default(), &mut &mut *out)
                .map_err(io_error)
        })?;
    }
    if args.summary {
        write_summary(real(), args, out_path)?;
    }
    Ok(())
}

/// `-i TID` on a streamed log: the profile of the thread's samples, with bounded memory.
pub(super) fn profile_of_thread(
    f: &Stream,
    opts: AnalyzeOptions,
    filter: &mut ThreadFilter,
) -> pmc_analyze::Result<Profile> {
    let mut b = pmc_analyze::ProfileBuilder::new(opts);
    let mut reader = pmc_log::StreamReader::new(std::io::BufReader::new(f))?.to_end();
    while let Some(r) = reader.next_record()? {
        if filter.keep(&r) {
            b.add(&r);
        }
    }
    b.set_read_report(&reader.finish());
    Ok(b.finish())
}
