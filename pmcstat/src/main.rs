//! `pmcstat`: count a command, a process or the whole system with portable
//! performance counters. Options follow FreeBSD pmcstat(8); output follows
//! `perf stat`.
#![forbid(unsafe_code)]

#[macro_use]
mod diag;
mod analyze;
mod cli;
mod config;
mod count;
mod dest;
mod error;
mod exits;
mod info;
mod live;
mod logfile;
mod measure;
mod metrics;
mod output;
mod reference;
mod run;
mod sample;
mod selftest;
mod sys;
mod targets;
mod top;

use std::process::ExitCode;

fn main() -> ExitCode {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let args = match cli::Args::parse_args(&argv) {
        Ok(a) => a,
        Err(e) => {
            if let Some(msg) = cli::usage_message(&e, &argv) {
                diag!("pmcstat: {msg}");
                diag!("Try 'pmcstat --help' for more information.");
                return ExitCode::from(2);
            }
            // clap prints help/version to stdout with success, errors with 2. An error
            // echoes the argument it refused: shown as every message is (escaped, cut).
            if e.use_stderr() {
                let text = e.render().to_string();
                diag!("{}", text.trim_end());
                return ExitCode::from(2);
            }
            let _ = e.print();
            return ExitCode::from(0);
        }
    };
    // Every mode: a measurement stops cleanly on the first SIGINT/SIGTERM/SIGHUP; a report
    // or listing stops writing (its file is not put in place, the previous one is kept).
    let measuring = config::measures(&args);
    let config = match config::validate(args) {
        Ok(c) => c,
        Err(e) => return ExitCode::from(e.report(run::final_status(None))),
    };
    if let config::Mode::Generate(kind) = config.mode {
        let mut out = dest::Checked::new(dest::stdout_stream());
        let done = reference::write(kind, &mut out).and_then(|()| out.finish());
        return match dest::write_outcome(done, "the reference") {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => ExitCode::from(e.report(run::final_status(None))),
        };
    }
    diag::QUIET.store(config.quiet, std::sync::atomic::Ordering::Relaxed);
    dest::REPORTS_STOP_ON_SIGNAL.store(!measuring, std::sync::atomic::Ordering::Relaxed);
    if let Err(e) = run::arm_stop_signals() {
        diag!("pmcstat: cannot install the SIGINT/SIGTERM/SIGHUP handlers: {e}");
        return ExitCode::from(1);
    }
    use config::Mode;
    let result = match &config.mode {
        Mode::Generate(_) => Ok(0),
        Mode::TopReplay(args) => analyze::run_top(args),
        Mode::Analyze(args) => analyze::run(args),
        Mode::Describe(spec, tracepoints) => info::describe(spec, *tracepoints),
        Mode::Selftest(format) => selftest::run(format),
        Mode::NoBackend => Err(error::Failure::Setup(sys::no_backend())),
        Mode::Metrics(m) => metrics::run(m),
        Mode::List(l) => info::run(l),
        Mode::Sample(args) => sample::run(args),
        Mode::Count(args) => count::run(args),
    };
    let code = match result {
        Ok(status) => ExitCode::from(status),
        Err(e) => ExitCode::from(e.report(run::final_status(None))),
    };
    // The results' reader went away: killed by SIGPIPE, as perf.
    dest::die_if_reader_gone();
    code
}
