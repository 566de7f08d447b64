//! A usage error's message: clap's, or, for pmcstat(8)'s options this
//! pmcstat does not have, what to use instead.

use std::ffi::OsString;

use super::checks::{scan_options, PMCSTAT8_E};
use super::Args;

/// pmcstat(8)'s options that this pmcstat does not have, each with what it
/// does there and what to use here instead.
const PMCSTAT8_MISSING: &[(&str, &str)] = &[
    ("-b", "PMU groups (AMD's fork of pmcstat(8)) are not in this pmcstat; -e with several events counts them, and the library's Backend::allocate_group schedules events together"),
    ("-M", "pmcstat(8)'s map file is not needed here: object paths are read from the log itself"),
    ("-f", "pmcstat(8)'s plugin options are not in this pmcstat; -z DEPTH limits the call graph's depth"),
];

/// pmcstat(8)'s `-I` (value-less, with `-R`), which this pmcstat's `-I MS` (perf's) is not.
const PMCSTAT8_I: &str = "-I with -R is pmcstat(8)'s symbol offsets: not in this pmcstat \
    (-a FILE resolves every callchain node to symbol and file:line); without -R, -I MS is \
    perf stat's interval in milliseconds";

/// pmcstat(8)'s `-a FILE` given without its FILE.
const PMCSTAT8_A: &str = "-a FILE with -R writes every callchain node resolved to its \
    function and file:line to FILE (pmcstat(8)'s -a; `-` for standard output): give the \
    FILE; perf's -a (every CPU) is -a without -R, or --all-cpus";

/// pmcstat's own message for clap's errors about pmcstat(8)'s letters: an
/// unknown option (clap's tip, "to pass '-T' as a value, use '-- -T'",
/// would run the option as the command), and pmcstat(8)'s value-less `-I`
/// and `-e` or `-a` without its FILE, which clap reports as a missing value
/// of this pmcstat's options. `argv` is the command line (for `-R`).
pub fn usage_message(e: &clap::Error, argv: &[OsString]) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let arg = match e.get(ContextKind::InvalidArg)? {
        ContextValue::String(s) => s.clone(),
        _ => return None,
    };
    if matches!(
        e.kind(),
        ErrorKind::InvalidValue | ErrorKind::NoEquals | ErrorKind::MissingRequiredArgument
    ) {
        let read_log = scan_options(argv, &Args::command_for_scan(), true).read_log;
        let name = arg.split([' ', '=']).next().unwrap_or(&arg);
        return match name {
            "-I" if read_log => Some(PMCSTAT8_I.into()),
            "--event" | "-e" if read_log => Some(PMCSTAT8_E.into()),
            "-a" if read_log => Some(PMCSTAT8_A.into()),
            _ => None,
        };
    }
    if e.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    // `-Ex` is clap's `-E` with `x` attached (or a cluster): judge the letter.
    let letter: String = arg.chars().take(2).collect();
    let known = if arg.starts_with("--") {
        None
    } else {
        PMCSTAT8_MISSING.iter().find(|(o, _)| *o == letter)
    };
    Some(match known {
        Some((o, what)) => format!("{o}: {what}"),
        None => format!("unknown option '{arg}'"),
    })
}
