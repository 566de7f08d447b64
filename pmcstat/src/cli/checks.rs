//! What clap cannot express: pmcstat(8)'s positional `-c` and `-d`, perf's
//! spellings (`-a`, `-g`, `-F`, `-I`, `-A`) told apart from pmcstat(8)'s,
//! and the rules between flags of different groups.

use std::ffi::OsString;
use std::path::PathBuf;

use super::values::csv_separator_refused;
use super::{Args, MAX_REPEAT};

/// pmcstat(8)'s `-e` (with `-g`), which this pmcstat's `-e` (perf's) is not.
pub(super) const PMCSTAT8_E: &str =
    "-e with -R is pmcstat(8)'s wide history counters for -g's gprof \
    files: not in this pmcstat, whose gmon files have GNU gprof's 16-bit counters (saturating \
    at 65535 samples per bucket; FreeBSD's wide counters need its own gprof); without -R, \
    -e SPEC is perf stat's event list";

impl Args {
    /// Parses a command line (the program's name first), with the options'
    /// positions for -c and -d.
    pub fn parse_args<I, T>(argv: I) -> Result<Args, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        use clap::{CommandFactory, FromArgMatches};
        let mut cmd = Args::command();
        let argv = perf_all_cpus(argv.into_iter().map(Into::into).collect(), &cmd);
        let m = cmd.try_get_matches_from_mut(argv)?;
        // Not the `_mut` form, which takes the values out of `m`: the indices are read after.
        let mut args = Args::from_arg_matches(&m).map_err(|e| e.format(&mut cmd))?;
        args.positional(&m)?;
        args.checked()
    }

    /// pmcstat(8)'s positional -c and -d: each PMC gets the -c (the CPUs, for
    /// system mode) and the -d parity (for process mode) in force where it
    /// stands on the command line. A -c or -d that no PMC of its mode
    /// follows applies to the PMCs of that mode that none precedes, so that
    /// `-s SPEC -c 0` keeps working.
    fn positional(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        let idx =
            |id: &str| -> Vec<usize> { m.indices_of(id).map(|i| i.collect()).unwrap_or_default() };
        let c_at = idx("cpus");
        let d_at = idx("descendants_toggles");
        let (s_at, ss_at) = (idx("system"), idx("system_sampling"));
        let (p_at, ps_at) = (idx("process"), idx("process_sampling"));

        // -c: the last one before the PMC, else a trailing one.
        let last_system = s_at.iter().chain(&ss_at).copied().max();
        let trailing_c = c_at
            .iter()
            .zip(&self.pmcs.cpus)
            .rfind(|(at, _)| last_system.is_some_and(|l| **at > l))
            .map(|(_, c)| c.clone());
        let cpus_at = |pmc: usize| -> Option<String> {
            c_at.iter()
                .zip(&self.pmcs.cpus)
                .rfind(|(at, _)| **at < pmc)
                .map(|(_, c)| c.clone())
                .or_else(|| trailing_c.clone())
        };
        self.pmcs.system_cpus = s_at.iter().map(|&i| cpus_at(i)).collect();
        self.pmcs.system_sampling_cpus = ss_at.iter().map(|&i| cpus_at(i)).collect();
        if let Some(c) = &trailing_c {
            if s_at
                .iter()
                .chain(&ss_at)
                .all(|&i| c_at.iter().any(|&at| at < i))
            {
                return Err(clap::Error::raw(
                    clap::error::ErrorKind::ArgumentConflict,
                    format!(
                        "-c {c} follows every system-mode PMC (-s, -S), and each has a -c \
                         before it: it applies to none (pmcstat(8)'s -c sets the CPUs of the \
                         system-mode PMCs after it)\n"
                    ),
                ));
            }
        }

        // -d: the parity of the toggles before the PMC, else of the trailing ones.
        let last_process = p_at.iter().chain(&ps_at).copied().max();
        let trailing_d = d_at
            .iter()
            .filter(|&&at| last_process.is_some_and(|l| at > l))
            .count();
        let descendants_at = |pmc: usize| -> bool {
            match d_at.iter().filter(|&&at| at < pmc).count() {
                0 => trailing_d % 2 == 1,
                n => n % 2 == 1,
            }
        };
        self.pmcs.process_descendants = p_at.iter().map(|&i| descendants_at(i)).collect();
        self.pmcs.process_sampling_descendants = ps_at.iter().map(|&i| descendants_at(i)).collect();
        Ok(())
    }

    /// Checks clap cannot express: `-F` without `-R` is most likely perf's
    /// `-F HZ` habit, so say where the frequency went.
    fn checked(mut self) -> Result<Args, clap::Error> {
        // perf's -I and -A where pmcstat(8) has them only for -R (its -I and
        // -A print symbol offsets and bare addresses): outside -R they are
        // perf's, with -R they are pmcstat(8)'s, which are not here.
        if self.read.read_log.is_some()
            && (self.measure.interval_ms.is_some() || self.counting.no_aggr)
        {
            let (o, what) = if self.counting.no_aggr {
                (
                    "-A",
                    "addresses only; --dump prints the log's raw addresses",
                )
            } else {
                (
                    "-I",
                    "symbol offsets; -a FILE resolves every callchain node to symbol and file:line",
                )
            };
            return Err(clap::Error::raw(
                clap::error::ErrorKind::ArgumentConflict,
                format!("{o} with -R is pmcstat(8)'s {what}: not in this pmcstat (without -R, {o} is perf stat's)\n"),
            ));
        }
        if let Some(why) = self.output.csv.as_deref().and_then(csv_separator_refused) {
            return Err(clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("-x: {why}; give a separator such as ',' ';' or a tab\n"),
            ));
        }
        if let Some(what) = self.measuring_with_read_log() {
            return Err(clap::Error::raw(
                clap::error::ErrorKind::ArgumentConflict,
                format!(
                    "{what} with -R: -R reads a log, it measures nothing (pmcstat(8) refuses -O \
                     with -R); record with -O FILE in one run, read it with -R FILE in the next\n"
                ),
            ));
        }
        if self.read.read_log.is_some() && !self.pmcs.events.is_empty() {
            return Err(clap::Error::raw(
                clap::error::ErrorKind::ArgumentConflict,
                format!("{PMCSTAT8_E}\n"),
            ));
        }
        self.all_cpus_checked()?;
        self.perf_g_checked()?;
        if let Some(v) = self.counting.r_arg.take() {
            if self.read.read_log.is_some() {
                self.read.fsroot = Some(PathBuf::from(v));
            } else {
                match v.trim().parse::<u32>() {
                    Ok(n) if (1..=MAX_REPEAT).contains(&n) => self.counting.repeat = Some(n),
                    _ => {
                        return Err(clap::Error::raw(
                            clap::error::ErrorKind::ValueValidation,
                            format!(
                                "-r {v}: the number of runs must be a whole number from 1 to \
                                 {MAX_REPEAT} (with -R, -r DIR is pmcstat(8)'s root directory \
                                 for object paths)\n"
                            ),
                        ))
                    }
                }
            }
        }
        if let Some(ms) = self.measure.interval_ms {
            self.measure.interval = Some(ms / 1000.0);
        }
        // Outside counting, --json-report is --json: those modes have one JSON form.
        if self.output.json_report
            && (self.read.read_log.is_some()
                || self.info.list
                || self.info.diagnose
                || self.info.selftest
                || self.info.describe.is_some())
        {
            self.output.json = true;
            self.output.json_report = false;
        }
        if self.counting.no_aggr {
            self.counting.per_cpu = true;
        }
        if self.read.calltree.is_some() && self.read.read_log.is_none() {
            return Err(clap::Error::raw(
                clap::error::ErrorKind::MissingRequiredArgument,
                "-F FILE writes a callgrind file from a log and needs -R LOG \
                 (pmcstat(8)'s -F); to sample at a frequency as perf's -F does, use --freq HZ\n",
            ));
        }
        Ok(self)
    }
}

impl Args {
    /// With `-R`, the first option that measures (which `-R` would otherwise ignore): `-O`,
    /// a PMC (`-p`/`-s`/`-P`/`-S`), `-t`, `-l` or a command.
    fn measuring_with_read_log(&self) -> Option<&'static str> {
        self.read.read_log.as_ref()?;
        [
            (self.sampling.log.is_some(), "-O (the log to record)"),
            (!self.pmcs.process.is_empty(), "-p (a counting PMC)"),
            (!self.pmcs.system.is_empty(), "-s (a counting PMC)"),
            (
                !self.pmcs.process_sampling.is_empty(),
                "-P (a sampling PMC)",
            ),
            (!self.pmcs.system_sampling.is_empty(), "-S (a sampling PMC)"),
            (self.measure.attach.is_some(), "-t (a process to measure)"),
            (self.measure.duration.is_some(), "-l (how long to measure)"),
            (!self.command.is_empty(), "a command (to measure)"),
        ]
        .into_iter()
        .find_map(|(given, what)| given.then_some(what))
    }

    /// `-g`: pmcstat(8)'s gprof files with -R; without it, with sampling PMCs, perf
    /// record's `-g` (`--call-graph fp`: callchains that keep the user callers of kernel
    /// samples). Anything else is a usage error saying both.
    fn perf_g_checked(&mut self) -> Result<(), clap::Error> {
        if !self.read.gprof || self.read.read_log.is_some() {
            return Ok(());
        }
        let refuse = |why: &str| {
            Err(clap::Error::raw(
                clap::error::ErrorKind::ArgumentConflict,
                format!(
                    "-g {why} (with -R LOG, -g is pmcstat(8)'s gprof files; with -P/-S, perf \
                     record's -g: call graphs with the user callers of kernel samples)\n"
                ),
            ))
        };
        if self.pmcs.process_sampling.is_empty() && self.pmcs.system_sampling.is_empty() {
            return refuse("needs -R LOG or a sampling PMC (-P, -S)");
        }
        if self.sampling.no_callchain {
            return refuse("asks for call graphs and -N turns them off: give one of them");
        }
        if self.read.samples_dir.is_some() {
            return refuse("without -R takes no -D DIR");
        }
        self.read.gprof = false;
        self.sampling
            .call_graph
            .get_or_insert(pmc::CallGraph::FramePointers);
        Ok(())
    }

    /// perf's `-a`/`--all-cpus`: not with -R, -p or -t; the -P PMCs become
    /// system-wide ones (on the CPUs of the last -c), as `perf record -a`.
    fn all_cpus_checked(&mut self) -> Result<(), clap::Error> {
        if !self.pmcs.all_cpus {
            return Ok(());
        }
        let refuse = |why: &str| {
            Err(clap::Error::raw(
                clap::error::ErrorKind::ArgumentConflict,
                format!("--all-cpus (perf's -a, every CPU) {why}\n"),
            ))
        };
        if self.read.read_log.is_some() {
            return refuse(
                "is for counting and sampling, not for reading a log; with -R, -a FILE is \
                 pmcstat(8)'s callchain listing",
            );
        }
        if self.measure.attach.is_some() {
            return refuse("counts every process: give it without -t PID|REGEX");
        }
        if !self.pmcs.process.is_empty() {
            return refuse(
                "counts every process, and -p counts one (pmcstat(8)'s process mode): use -e \
                 SPEC with -a, or -s SPEC beside -p",
            );
        }
        let cpus = self.pmcs.cpus.last().cloned();
        let sampled = std::mem::take(&mut self.pmcs.process_sampling);
        self.pmcs.process_sampling_descendants.clear();
        self.pmcs
            .system_sampling_cpus
            .extend(sampled.iter().map(|_| cpus.clone()));
        self.pmcs.system_sampling.extend(sampled);
        Ok(())
    }
}

/// perf's `-a` where pmcstat(8)'s `-a FILE` cannot be meant: without `-R` among
/// pmcstat's options, each `-a` (alone or in a cluster such as `-av`) becomes
/// `--all-cpus`. pmcstat(8)'s form is kept when `-R` is there, read with `-a`
/// taking a value (`-a FILE -R LOG`) and, if a command follows, also with `-a`
/// as a flag (so `-a grep -R x .` is perf's: `grep -R` is the command's).
fn perf_all_cpus(argv: Vec<OsString>, cmd: &clap::Command) -> Vec<OsString> {
    let valued = scan_options(&argv, cmd, true);
    let flag = scan_options(&argv, cmd, false);
    if valued.read_log && (flag.read_log || !valued.command) {
        return argv;
    }
    if flag.a_at.is_empty() {
        return argv;
    }
    let mut out = Vec::with_capacity(argv.len() + flag.a_at.len());
    for (i, arg) in argv.into_iter().enumerate() {
        if !flag.a_at.contains(&i) {
            out.push(arg);
            continue;
        }
        // A short cluster with `a` as a flag: the letters before it, --all-cpus, the rest.
        let s = arg.to_string_lossy().into_owned();
        let body = &s[1..];
        let at = body.find('a').unwrap_or(0);
        if at > 0 {
            out.push(OsString::from(format!("-{}", &body[..at])));
        }
        out.push(OsString::from("--all-cpus"));
        if at + 1 < body.len() {
            out.push(OsString::from(format!("-{}", &body[at + 1..])));
        }
    }
    out
}

/// What [`scan_options`] found before the command.
pub(super) struct Scanned {
    /// `-R` is among the options.
    pub(super) read_log: bool,
    /// A command follows the options.
    command: bool,
    /// The arguments (by index) holding a flag `-a`.
    a_at: Vec<usize>,
}

/// Walks the options as clap does (values of options that take one skipped; the first
/// argument that is not an option, or `--`, starts the command), `-a` taking a value or not.
pub(super) fn scan_options(argv: &[OsString], cmd: &clap::Command, a_valued: bool) -> Scanned {
    let takes_value = |short: Option<char>, long: Option<&str>| -> bool {
        if short == Some('a') {
            return a_valued;
        }
        cmd.get_arguments().any(|a| {
            (short.is_some() && a.get_short() == short || long.is_some() && a.get_long() == long)
                && a.get_action().takes_values()
        })
    };
    let is_value = |next: Option<&OsString>| {
        next.is_some_and(|n| n == "-" || !n.to_string_lossy().starts_with('-'))
    };
    let mut found = Scanned {
        read_log: false,
        command: false,
        a_at: Vec::new(),
    };
    let mut i = 1;
    while i < argv.len() {
        let s = argv[i].to_string_lossy();
        if s == "--" {
            found.command = i + 1 < argv.len();
            break;
        }
        if let Some(long) = s.strip_prefix("--") {
            if !long.contains('=') && takes_value(None, Some(long)) && is_value(argv.get(i + 1)) {
                i += 1;
            }
        } else if s.len() > 1 && s.starts_with('-') {
            for (at, c) in s.char_indices().skip(1) {
                if c == 'R' {
                    found.read_log = true;
                }
                if c == 'a' && !a_valued {
                    found.a_at.push(i);
                    // A second `a` in one cluster is rewritten with the first.
                    continue;
                }
                if takes_value(Some(c), None) {
                    if at + c.len_utf8() == s.len() && is_value(argv.get(i + 1)) {
                        i += 1;
                    }
                    break;
                }
            }
        } else {
            found.command = true;
            break;
        }
        i += 1;
    }
    found.a_at.dedup();
    found
}

impl Args {
    /// The clap command, for walking a command line's options.
    pub(super) fn command_for_scan() -> clap::Command {
        <Args as clap::CommandFactory>::command()
    }
}
