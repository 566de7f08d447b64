//! `pmcstat`: count a command, a process or the whole system with portable
//! performance counters. Options follow FreeBSD pmcstat(8); output follows
//! `perf stat`.
#![forbid(unsafe_code)]

#[macro_use]
mod output;
mod analyze;
mod cli;
mod count;
mod info;
mod run;
mod sample;

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
    let measuring = args.read_log.is_none() && !args.list && !args.diagnose;
    if measuring {
        if let Err(e) = run::arm_stop_signals() {
            diag!("pmcstat: cannot install the SIGINT/SIGTERM/SIGHUP handlers: {e}");
            return ExitCode::from(1);
        }
    }
    let result = if args.read_log.is_some() {
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
            diag!("pmcstat: {msg}");
            diag!("Try 'pmcstat --help' for more information.");
            ExitCode::from(2)
        }
        Err(count::Failure::Setup(e)) => {
            diag!("pmcstat: {e}");
            ExitCode::from(1)
        }
        Err(count::Failure::Output(msg)) => {
            diag!("pmcstat: {msg}");
            ExitCode::from(1)
        }
    }
}
