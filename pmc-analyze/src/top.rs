//! Top-N summaries by function and by object, as text, JSON and CSV.
//!
//! "Self" is the weight of samples whose leaf (sampled) frame is in the
//! function or object; "total" (functions only) is the weight of samples
//! with the function anywhere on the stack, counted once per sample even
//! under recursion.

use std::collections::HashMap;
use std::io::Write;

use crate::callgraph::pct;
use crate::object::SourceLocation;
use crate::profile::{Profile, Weight};

/// Options of the top-N summary.
#[derive(Clone, Debug)]
pub struct TopOptions {
    /// Rows per table (0: all).
    pub limit: usize,
    /// Only this PMC (`None`: all).
    pub pmc: Option<u32>,
    /// Count samples or periods.
    pub weight: Weight,
}

impl Default for TopOptions {
    fn default() -> Self {
        TopOptions {
            limit: 20,
            pmc: None,
            weight: Weight::Samples,
        }
    }
}

/// One function row.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct FunctionRow {
    /// Function name.
    pub function: String,
    /// Object path, if known.
    pub object: Option<String>,
    /// Source location of the function, if debug info has it.
    pub source: Option<SourceLocation>,
    /// True for kernel code.
    pub kernel: bool,
    /// Self weight.
    #[serde(rename = "self")]
    pub self_weight: u64,
    /// Self weight in percent of the total.
    pub self_percent: f64,
    /// Inclusive weight.
    pub total: u64,
    /// Inclusive weight in percent of the total.
    pub total_percent: f64,
}

/// One object row.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ObjectRow {
    /// Object path (`[unknown]` for unmapped addresses).
    pub object: String,
    /// Self weight.
    #[serde(rename = "self")]
    pub self_weight: u64,
    /// Self weight in percent of the total.
    pub self_percent: f64,
}

/// A top-N summary.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TopReport {
    /// What was counted.
    pub weight: Weight,
    /// Total weight.
    pub total: u64,
    /// Functions by self weight, heaviest first: those sampled at least once
    /// (self weight above 0), each with its inclusive weight too. A function
    /// that only called the sampled ones has no row: the call graph
    /// ([`crate::callgraph`]) shows it.
    pub functions: Vec<FunctionRow>,
    /// Objects by self weight, heaviest first; none with weight 0.
    pub objects: Vec<ObjectRow>,
}

impl TopReport {
    /// Compute the summary.
    pub fn build(profile: &Profile, opts: &TopOptions) -> TopReport {
        let n = profile.functions.len();
        let mut self_w = vec![0u64; n];
        let mut total_w = vec![0u64; n];
        let mut stamp = vec![usize::MAX; n];
        let mut objects: HashMap<&str, u64> = HashMap::new();
        let mut total = 0u64;
        for (si, s) in profile.stacks_of(opts.pmc).enumerate() {
            let w = s.weight(opts.weight);
            if w == 0 {
                // A stack that gained nothing (a live view's delta): no row of its own.
                continue;
            }
            total = total.saturating_add(w);
            if let Some(&leaf) = s.frames.last() {
                if let Some(x) = self_w.get_mut(leaf as usize) {
                    *x = x.saturating_add(w);
                }
                let obj = profile
                    .function(leaf)
                    .and_then(|f| f.object.as_deref())
                    .unwrap_or("[unknown]");
                let e = objects.entry(obj).or_insert(0);
                *e = e.saturating_add(w);
            }
            for &f in s.frames.iter() {
                if let (Some(st), Some(t)) =
                    (stamp.get_mut(f as usize), total_w.get_mut(f as usize))
                {
                    if *st != si {
                        *st = si;
                        *t = t.saturating_add(w);
                    }
                }
            }
        }
        let mut functions: Vec<FunctionRow> = profile
            .functions
            .iter()
            .enumerate()
            // Rows are ranked by self weight: a function only on the way to
            // others (self 0) is no row of this table (the call graph, -G, has it).
            .filter(|(i, _)| self_w.get(*i).is_some_and(|&w| w > 0))
            .map(|(i, f)| {
                let sw = self_w.get(i).copied().unwrap_or(0);
                let tw = total_w.get(i).copied().unwrap_or(0);
                FunctionRow {
                    function: f.name.clone(),
                    object: f.object.as_deref().map(str::to_string),
                    source: f.source.clone(),
                    kernel: f.kernel,
                    self_weight: sw,
                    self_percent: pct(sw, total),
                    total: tw,
                    total_percent: pct(tw, total),
                }
            })
            .collect();
        functions.sort_by(|a, b| {
            b.self_weight
                .cmp(&a.self_weight)
                .then(b.total.cmp(&a.total))
                .then_with(|| a.function.cmp(&b.function))
        });
        let mut objects: Vec<ObjectRow> = objects
            .into_iter()
            .map(|(o, w)| ObjectRow {
                object: o.to_string(),
                self_weight: w,
                self_percent: pct(w, total),
            })
            .collect();
        objects.sort_by(|a, b| {
            b.self_weight
                .cmp(&a.self_weight)
                .then_with(|| a.object.cmp(&b.object))
        });
        if opts.limit > 0 {
            functions.truncate(opts.limit);
            objects.truncate(opts.limit);
        }
        TopReport {
            weight: opts.weight,
            total,
            functions,
            objects,
        }
    }

    /// Write as text tables.
    pub fn write_text<W: Write>(&self, out: &mut W) -> std::io::Result<()> {
        let unit = match self.weight {
            Weight::Samples => "samples",
            Weight::Period => "events",
        };
        writeln!(out, "Top functions ({} {unit}):", self.total)?;
        writeln!(
            out,
            "{:>7} {:>12} {:>7} {:>12}  {:<32} object",
            "self%", "self", "total%", "total", "function"
        )?;
        for r in &self.functions {
            let obj = r
                .object
                .as_deref()
                .map(crate::symbolize::basename)
                .unwrap_or("");
            let src = r
                .source
                .as_ref()
                .map(|s| format!("  {}:{}", s.file, s.line))
                .unwrap_or_default();
            // Names and paths come from the log and its objects: control characters escaped.
            writeln!(
                out,
                "{:>6.2}% {:>12} {:>6.2}% {:>12}  {:<32} {}{}",
                r.self_percent,
                r.self_weight,
                r.total_percent,
                r.total,
                esc(&r.function),
                esc(obj),
                esc(&src)
            )?;
        }
        writeln!(out)?;
        writeln!(out, "Top objects ({} {unit}):", self.total)?;
        writeln!(out, "{:>7} {:>12}  object", "self%", "self")?;
        for r in &self.objects {
            writeln!(
                out,
                "{:>6.2}% {:>12}  {}",
                r.self_percent,
                r.self_weight,
                esc(&r.object)
            )?;
        }
        Ok(())
    }

    /// Write as one JSON document.
    pub fn write_json<W: Write>(&self, out: &mut W) -> crate::Result<()> {
        // DEL and C1 in names escaped as well (serde_json escapes C0 only).
        let mut w = pmc_log::escape::JsonControls::new(&mut *out);
        serde_json::to_writer_pretty(&mut w, self)?;
        writeln!(w.into_inner()?)?;
        Ok(())
    }

    /// Write as CSV (RFC 4180): one table with a `table` column,
    /// `function` or `object`.
    pub fn write_csv<W: Write>(&self, out: &mut W) -> std::io::Result<()> {
        writeln!(
            out,
            "table,rank,name,object,source,self,self_percent,total,total_percent"
        )?;
        for (i, r) in self.functions.iter().enumerate() {
            let src = r
                .source
                .as_ref()
                .map(|s| format!("{}:{}", s.file, s.line))
                .unwrap_or_default();
            writeln!(
                out,
                "function,{},{},{},{},{},{:.4},{},{:.4}",
                i + 1,
                csv_field(&r.function),
                csv_field(r.object.as_deref().unwrap_or("")),
                csv_field(&src),
                r.self_weight,
                r.self_percent,
                r.total,
                r.total_percent
            )?;
        }
        for (i, r) in self.objects.iter().enumerate() {
            writeln!(
                out,
                "object,{},{},{},,{},{:.4},,",
                i + 1,
                csv_field(&r.object),
                csv_field(&r.object),
                r.self_weight,
                r.self_percent
            )?;
        }
        Ok(())
    }
}

fn esc(s: &str) -> std::borrow::Cow<'_, str> {
    pmc_log::escape::escape(s)
}

/// A CSV field: control characters escaped (pmc-log's escaper: a line break is `\n`, so a
/// row stays one line on a terminal), then quoted when it holds a comma or a quote.
pub fn csv_field(s: &str) -> std::borrow::Cow<'_, str> {
    let s = esc(s);
    if s.contains([',', '"']) {
        std::borrow::Cow::Owned(format!("\"{}\"", s.replace('"', "\"\"")))
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::csv_field;

    #[test]
    fn csv_quoting() {
        assert_eq!(csv_field("main"), "main");
        assert_eq!(csv_field("f<a, b>"), "\"f<a, b>\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
