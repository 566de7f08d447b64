//! `pmcstat`: count a command, a process or the whole system with portable
//! performance counters. Options follow FreeBSD pmcstat(8); output follows
//! `perf stat`.
#![forbid(unsafe_code)]

mod analyze;
mod cli;
mod count;
mod info;
mod live;
mod output;
mod run;
mod sample;
mod top;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args = match cli::Args::parse_from_env() {
        Ok(a) => a,
        Err(e) => {
            // clap prints help/version to stdout with success, errors with 2.
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let result = if args.read_log.is_some() && args.top_mode {
        top_replay(&args)
    } else if args.read_log.is_some() {
        analyze::run(&args)
    } else if args.list || args.diagnose {
        info::run(&args)
    } else if !args.process_sampling.is_empty() || !args.system_sampling.is_empty() {
        sample::run(&args)
    } else {
        count::run(&args)
    };
    match result {
        Ok(status) => ExitCode::from(status),
        Err(count::Failure::Usage(msg)) => {
            eprintln!("pmcstat: {msg}");
            eprintln!("Try 'pmcstat --help' for more information.");
            ExitCode::from(2)
        }
        Err(count::Failure::Setup(e)) => {
            eprintln!("pmcstat: {e}");
            ExitCode::from(1)
        }
    }
}

/// `-R FILE -T`: the top view, replayed from the log.
fn top_replay(args: &cli::Args) -> Result<u8, count::Failure> {
    let path = args
        .read_log
        .as_deref()
        .unwrap_or(std::path::Path::new("-"));
    let log = analyze::load(path)?;
    let refresh = args
        .interval
        .map_or(top::DEFAULT_REFRESH, std::time::Duration::from_secs_f64);
    top::replay(&log, refresh).map_err(|e| {
        count::Failure::Setup(pmc::Error::new(
            pmc::ErrorKind::Os,
            pmc::Op::Log,
            format!("-T: {e}"),
        ))
    })?;
    Ok(0)
}
