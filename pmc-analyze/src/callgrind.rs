//! Callgrind ("calltree") profiles, read by `callgrind_annotate` and
//! KCachegrind: FreeBSD `pmcstat -F` (usr.sbin/pmcstat/pmcpl_calltree.c).
//!
//! [`write_callgrind`] writes a profile as [`CallgrindOptions`] say. Below: the file's layout
//! and what each cost means.
//!
//! The file follows the Callgrind format specification (valgrind's
//! docs/callgrind-format): a header (`version: 1`, `creator:`,
//! `positions: line`, `events:` with one column per PMC (at most
//! [`MAX_VALUE_COLUMNS`](crate::pprof::MAX_VALUE_COLUMNS); the PMCs past them share
//! `other_events`, so costs stay linear in the functions), `summary:` with
//! the totals), then for each function its object (`ob=`), source file
//! (`fl=`) and name (`fn=`), a cost line `<line> <self costs...>`, and for
//! each function it calls a `cfn=` block (with `cob=`/`cfi=` when the
//! callee's object or file differs) with `calls=<n> <line>` and the
//! inclusive cost of those calls.
//!
//! - Self cost: samples whose leaf is the function.
//! - Call cost: samples through the caller -> callee edge, each edge
//!   counted once per sample (so recursion does not count twice); `calls=`
//!   is that sample count too, as a sampling profiler knows no call counts.
//! - Line: the function's first line from debug info, 0 without it; the
//!   file is `???` without debug info, as valgrind writes it.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;

use crate::profile::{Profile, Weight};
use crate::symbolize::FuncId;

/// Options of [`write_callgrind`].
#[derive(Clone, Debug, Default)]
pub struct CallgrindOptions {
    /// Count samples or periods.
    pub weight: Weight,
    /// The `cmd:` line (the profiled command), if known.
    pub command: Option<String>,
}

/// One event name as callgrind wants it: no whitespace.
fn event_name(name: &str) -> String {
    let s: String = pmc_log::escape::escape(name)
        .chars()
        .map(|c| if c.is_whitespace() { '_' } else { c })
        .collect();
    if s.is_empty() {
        "samples".into()
    } else {
        s
    }
}

/// A header/name value on one line.
fn one_line(s: &str) -> String {
    // Control characters (a log's ESC sequences, newlines) escaped: one line, inert.
    pmc_log::escape::escape(s).into_owned()
}

/// Write the profile as a callgrind file (see the module documentation).
pub fn write_callgrind<W: Write>(
    profile: &Profile,
    opts: &CallgrindOptions,
    out: &mut W,
) -> std::io::Result<()> {
    // A cost per event on every line: past MAX_VALUE_COLUMNS PMCs, the rest share one
    // event, so that the costs stay linear in the functions (a log may declare 80,000).
    let cap = crate::pprof::MAX_VALUE_COLUMNS;
    let col_of: HashMap<u32, usize> = profile
        .pmcs
        .iter()
        .enumerate()
        .map(|(i, p)| (p.pmc_id, i.min(cap)))
        .collect();
    let width = profile.pmcs.len().clamp(1, cap + 1);
    let mut self_cost: BTreeMap<FuncId, Vec<u64>> = BTreeMap::new();
    let mut calls: BTreeMap<(FuncId, FuncId), Vec<u64>> = BTreeMap::new();
    let mut totals = vec![0u64; width];
    let mut seen = std::collections::HashSet::new();
    for s in &profile.stacks {
        let Some(&col) = col_of.get(&s.pmc_id) else {
            continue;
        };
        let w = s.weight(opts.weight);
        if let Some(t) = totals.get_mut(col) {
            *t = t.saturating_add(w);
        }
        let Some(&leaf) = s.frames.last() else {
            continue;
        };
        let e = self_cost.entry(leaf).or_insert_with(|| vec![0; width]);
        if let Some(c) = e.get_mut(col) {
            *c = c.saturating_add(w);
        }
        seen.clear();
        for pair in s.frames.windows(2) {
            let key = (pair[0], pair[1]);
            if !seen.insert(key) {
                continue;
            }
            let e = calls.entry(key).or_insert_with(|| vec![0; width]);
            if let Some(c) = e.get_mut(col) {
                *c = c.saturating_add(w);
            }
        }
    }

    writeln!(out, "# callgrind format")?;
    writeln!(out, "version: 1")?;
    writeln!(
        out,
        "creator: pmcstat (pmc-analyze {})",
        env!("CARGO_PKG_VERSION")
    )?;
    if let Some(cmd) = &opts.command {
        writeln!(out, "cmd: {}", one_line(cmd))?;
    }
    writeln!(out, "positions: line")?;
    let mut names: Vec<String> = if profile.pmcs.is_empty() {
        vec!["samples".into()]
    } else {
        profile
            .pmcs
            .iter()
            .take(cap)
            .map(|p| event_name(&p.name))
            .collect()
    };
    if profile.pmcs.len() > cap {
        names.push(crate::pprof::OTHER_EVENTS.into());
    }
    writeln!(out, "events: {}", names.join(" "))?;
    write!(out, "summary:")?;
    for t in &totals {
        write!(out, " {t}")?;
    }
    writeln!(out)?;

    // Every function that has self cost or calls something.
    let mut funcs: Vec<FuncId> = self_cost.keys().copied().collect();
    funcs.extend(calls.keys().map(|&(caller, _)| caller));
    funcs.sort_unstable();
    funcs.dedup();
    let zero = vec![0u64; width];
    for f in funcs {
        writeln!(out)?;
        let (ob, fl, name, line) = describe(profile, f);
        writeln!(out, "ob={ob}")?;
        writeln!(out, "fl={fl}")?;
        writeln!(out, "fn={name}")?;
        let own = self_cost.get(&f).unwrap_or(&zero);
        write_cost(out, line, own)?;
        for (&(caller, callee), cost) in calls.range((f, 0)..=(f, FuncId::MAX)) {
            debug_assert_eq!(caller, f);
            let (cob, cfl, cname, cline) = describe(profile, callee);
            // As valgrind writes them: `cob=`/`cfi=` only when they differ
            // from the caller's (callgrind_annotate then names the callee
            // exactly as its own `fl=` block does).
            if cob != ob {
                writeln!(out, "cob={cob}")?;
            }
            if cfl != fl {
                writeln!(out, "cfi={cfl}")?;
            }
            writeln!(out, "cfn={cname}")?;
            let n: u64 = cost.iter().sum();
            writeln!(out, "calls={n} {cline}")?;
            write_cost(out, line, cost)?;
        }
    }
    Ok(())
}

fn write_cost<W: Write>(out: &mut W, line: u32, cost: &[u64]) -> std::io::Result<()> {
    write!(out, "{line}")?;
    for c in cost {
        write!(out, " {c}")?;
    }
    writeln!(out)
}

/// (object, file, name, line) of a function.
fn describe(profile: &Profile, f: FuncId) -> (String, String, String, u32) {
    let Some(func) = profile.function(f) else {
        return ("???".into(), "???".into(), "[unknown]".into(), 0);
    };
    let ob = func
        .object
        .as_deref()
        .map_or_else(|| "???".into(), one_line);
    let (fl, line) = func
        .source
        .as_ref()
        .map_or_else(|| ("???".to_string(), 0), |s| (one_line(&s.file), s.line));
    (ob, fl, one_line(&func.name), line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_names_have_no_whitespace() {
        assert_eq!(event_name("cpu clock"), "cpu_clock");
        assert_eq!(event_name(""), "samples");
        assert_eq!(one_line("a\nb"), "a\\nb");
    }
}
