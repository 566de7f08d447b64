//! Folded stacks and SVG flame graphs.
//!
//! Folded stacks are one line per distinct stack, `comm;root;...;leaf
//! count`, the input of `flamegraph.pl` and inferno. Kernel frames carry the
//! `_[k]` suffix that flame-graph palettes colour as kernel code.

use std::collections::HashMap;
use std::io::Write;

use crate::profile::{Profile, Weight};

/// Options of the folded output.
#[derive(Clone, Debug)]
pub struct FoldedOptions {
    /// Only this PMC (`None`: all PMCs merged).
    pub pmc: Option<u32>,
    /// Count samples or periods.
    pub weight: Weight,
    /// Start each stack with the command name.
    pub include_comm: bool,
    /// Mark kernel frames with `_[k]`.
    pub kernel_suffix: bool,
}

impl Default for FoldedOptions {
    fn default() -> Self {
        FoldedOptions {
            pmc: None,
            weight: Weight::Samples,
            include_comm: true,
            kernel_suffix: true,
        }
    }
}

fn push_frame(line: &mut String, name: &str) {
    // ';' separates frames and a newline ends the record; the count is
    // found from the last space, so spaces inside names are fine.
    // Other control characters (ESC sequences from a log's paths) are escaped.
    for c in pmc_log::escape::escape(name).chars() {
        line.push(if c == ';' { ':' } else { c });
    }
}

/// The folded stacks, merged and sorted by stack text.
pub fn folded_lines(profile: &Profile, opts: &FoldedOptions) -> Vec<(String, u64)> {
    let mut merged: HashMap<String, u64> = HashMap::new();
    let mut line = String::new();
    for s in profile.stacks_of(opts.pmc) {
        let w = s.weight(opts.weight);
        if w == 0 {
            continue;
        }
        line.clear();
        if opts.include_comm {
            push_frame(&mut line, profile.comm(s.comm));
        }
        for &f in s.frames.iter() {
            if !line.is_empty() {
                line.push(';');
            }
            let func = profile.function(f);
            push_frame(&mut line, func.map_or("[unknown]", |f| f.name.as_str()));
            // An inlined function's frame, marked as perf marks it.
            if func.is_some_and(|f| f.inlined) {
                line.push_str(" (inlined)");
            }
            if opts.kernel_suffix && func.is_some_and(|f| f.kernel) {
                line.push_str("_[k]");
            }
        }
        if line.is_empty() {
            line.push_str("[no callchain]");
        }
        let e = merged.entry(line.clone()).or_insert(0);
        *e = e.saturating_add(w);
    }
    let mut v: Vec<(String, u64)> = merged.into_iter().collect();
    v.sort();
    v
}

/// Write folded stacks, one `stack count` line each.
pub fn write_folded<W: Write>(
    profile: &Profile,
    opts: &FoldedOptions,
    out: &mut W,
) -> std::io::Result<()> {
    for (stack, count) in folded_lines(profile, opts) {
        writeln!(out, "{stack} {count}")?;
    }
    Ok(())
}

/// Options of the SVG flame graph.
#[derive(Clone, Debug, Default)]
pub struct FlameGraphOptions {
    /// Which stacks and how they are counted.
    pub folded: FoldedOptions,
    /// Title; default "Flame Graph" (with the event name when one PMC).
    pub title: Option<String>,
    /// Image width in pixels (default 1200).
    pub width: Option<usize>,
    /// Draw an icicle graph (roots at the top).
    pub inverted: bool,
    /// Colour scheme as inferno names it: `hot` (default), `java` (which
    /// colours `_[k]` frames as kernel), `rust`, `mem`, `io`, ...
    pub palette: Option<String>,
}

/// Write an SVG flame graph through `inferno::flamegraph`.
///
/// An empty profile gives inferno's "no stack counts" SVG (inferno reports
/// it as an error; this function writes a minimal valid SVG instead).
pub fn write_flamegraph<W: Write>(
    profile: &Profile,
    opts: &FlameGraphOptions,
    out: &mut W,
) -> crate::Result<()> {
    use inferno::flamegraph::{self, color::Palette, Direction};
    let lines = folded_lines(profile, &opts.folded);
    let text: Vec<String> = lines.iter().map(|(s, c)| format!("{s} {c}")).collect();
    let mut fo = flamegraph::Options::default();
    fo.title = match (&opts.title, opts.folded.pmc) {
        (Some(t), _) => t.clone(),
        (None, Some(p)) => match profile.pmcs.iter().find(|x| x.pmc_id == p) {
            Some(info) => format!("Flame Graph: {}", info.name),
            None => "Flame Graph".into(),
        },
        (None, None) if profile.pmcs.len() == 1 => match profile.pmcs.first() {
            Some(info) => format!("Flame Graph: {}", info.name),
            None => "Flame Graph".into(),
        },
        (None, None) => "Flame Graph".into(),
    };
    fo.count_name = match opts.folded.weight {
        Weight::Samples => "samples".into(),
        Weight::Period => "events".into(),
    };
    fo.image_width = opts.width;
    fo.deterministic = true;
    if opts.inverted {
        fo.direction = Direction::Inverted;
    }
    if let Some(p) = &opts.palette {
        if let Ok(pal) = p.parse::<Palette>() {
            fo.colors = pal;
        }
    }
    if text.is_empty() {
        writeln!(
            out,
            "<?xml version=\"1.0\" standalone=\"no\"?>\n\
             <svg version=\"1.1\" width=\"1200\" height=\"60\" xmlns=\"http://www.w3.org/2000/svg\">\
             <text x=\"600\" y=\"30\" text-anchor=\"middle\">{}: no samples</text></svg>",
            xml_escape(&fo.title)
        )?;
        return Ok(());
    }
    flamegraph::from_lines(&mut fo, text.iter().map(String::as_str), out)?;
    Ok(())
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
