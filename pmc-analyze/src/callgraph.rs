//! Call-graph reports: FreeBSD `pmcstat -G`'s layout and a top-down tree.
//!
//! [`CallTree::build`] merges a profile's stacks into a tree of [`Node`]s;
//! [`write_callgraph`] (text) and [`write_callgraph_json`] print it, as [`CallGraphOptions`]
//! and its [`Order`] say. Below: the layout of each order and its bounds.
//!
//! [`Order::Callees`] is `pmcstat -G` as FreeBSD writes it
//! (usr.sbin/pmcstat/pmcpl_callgraph.c, `pmcstat_cgnode_print`): each
//! sampled function at the top level, with its share of the PMC's samples,
//! then its callers indented below it, each with its share **of its
//! parent's** samples. One space of indent per level, before the percentage
//! and again before the name; a percentage is `%05.2f%%`, or `100.0%` when
//! a node has all of its parent's samples; the sample count `[n]` is padded
//! to 12 columns; ` @ object` follows a name when its object differs from the
//! previous line's (reset at each top-level entry); a blank line ends each
//! top-level entry.
//!
//! ```text
//! @ cpu-clock [1000 samples]
//!
//! 90.00%  [900]      hot_leaf @ /usr/bin/prog
//!  100.0%  [900]       outer
//!   100.0%  [900]        main
//!
//! 10.00%  [100]      outer @ /usr/bin/prog
//!  100.0%  [100]       main
//! ```
//!
//! Indentation stops growing at [`MAX_INDENT`] levels, and no callchain is
//! deeper than [`crate::MAX_STACK_DEPTH`] frames (deeper samples are cut under
//! `[truncated]`), so even `-z 0` prints at most one line of bounded width per
//! node of the tree, and a node stands for at least one 8-byte frame of the
//! log: the report is linear in its input, never quadratic in a sample's depth.
//!
//! [`Order::Callers`] is the top-down view (`pmcstat --callgraph-order
//! caller`): each function under its real callers, from the outermost
//! caller (`main`, a thread start routine) down to the sampled function;
//! every line shows its inclusive share of all samples, and a node's
//! children plus its `[self]` line add up to the node, so the top-level
//! lines add up to 100%.
//!
//! ```text
//! @ cpu-clock [1000 samples]
//!
//! 100.00%  [1000]  main @ prog
//!   100.00%  [1000]  outer @ prog
//!     90.00%  [900]  hot_leaf @ prog
//!     10.00%  [100]  [self]
//! ```

use std::collections::HashMap;
use std::io::Write;

use crate::profile::{Profile, Stack, Weight};
use crate::symbolize::FuncId;

/// Which way the tree grows.
///
/// The default is [`Callers`](Order::Callers), top-down; FreeBSD's
/// `pmcstat -G` (and this project's pmcstat without `--callgraph-order`)
/// prints [`Callees`](Order::Callees), the sampled functions first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Outermost callers at the top, each function under its callers
    /// (top-down, caller-based).
    #[default]
    Callers,
    /// Sampled functions at the top, each followed by its callers
    /// (bottom-up): FreeBSD `pmcstat -G`'s layout, percentages of the parent.
    Callees,
}

/// Options of the call-graph report.
///
/// `CallGraphOptions::default()` is the **top-down** tree
/// ([`Order::Callers`]: outermost callers first, each line its inclusive
/// share of all samples), to depth 16, counting samples, with objects.
/// `pmcstat -G` prints the other order by default, FreeBSD's callee-first
/// layout; ask for it with [`Order::Callees`]:
///
/// ```
/// use pmc_analyze::callgraph::{CallGraphOptions, Order};
///
/// assert_eq!(CallGraphOptions::default().order, Order::Callers); // top-down
/// let pmcstat_g = CallGraphOptions { order: Order::Callees, ..Default::default() };
/// # assert_eq!(pmcstat_g.max_depth, 16);
/// ```
#[derive(Clone, Debug)]
pub struct CallGraphOptions {
    /// Deepest level printed (1 = top-level only); `pmcstat -z`, default 16.
    /// 0 means no limit. Deeper nodes are still counted in their ancestors.
    pub max_depth: usize,
    /// Tree direction: [`Order::Callers`] (top-down) by default;
    /// `pmcstat -G`'s layout is [`Order::Callees`].
    pub order: Order,
    /// Hide nodes below this share of all samples, in percent (default 0).
    pub min_percent: f64,
    /// Count samples or periods.
    pub weight: Weight,
    /// Append ` @ object` to each function.
    pub show_object: bool,
    /// Append ` (file:line)` of the function when debug info has it.
    pub show_source: bool,
}

impl Default for CallGraphOptions {
    /// The top-down tree ([`Order::Callers`]), not `pmcstat -G`'s
    /// callee-first default: see [`CallGraphOptions`].
    fn default() -> Self {
        CallGraphOptions {
            max_depth: 16,
            order: Order::Callers,
            min_percent: 0.0,
            weight: Weight::Samples,
            show_object: true,
            show_source: false,
        }
    }
}

/// A node of a [`CallTree`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// The function, `None` for samples without a callchain.
    pub function: Option<FuncId>,
    /// Weight of all samples through this node (inclusive).
    pub total: u64,
    /// Weight of samples whose path ends here.
    pub self_weight: u64,
    /// Children (indices into [`CallTree::nodes`]), heaviest first.
    pub children: Vec<usize>,
}

/// A merged call tree of one PMC (or all).
#[derive(Clone, Debug)]
pub struct CallTree {
    /// All nodes.
    pub nodes: Vec<Node>,
    /// Top-level nodes, heaviest first.
    pub roots: Vec<usize>,
    /// Weight of all samples in the tree.
    pub total: u64,
    /// Direction.
    pub order: Order,
}

const NO_PARENT: usize = usize::MAX;

/// The deepest indentation, in levels: deeper lines are indented as this level (their
/// place in the tree is then read from their order). Bounds a line's width, so that the
/// report grows with the number of nodes, not with depth times nodes.
///
/// ```
/// assert_eq!(pmc_analyze::callgraph::MAX_INDENT, 64);
/// ```
pub const MAX_INDENT: usize = 64;

impl CallTree {
    /// Merge the stacks of `pmc` (`None`: all PMCs).
    pub fn build(profile: &Profile, pmc: Option<u32>, order: Order, weight: Weight) -> CallTree {
        CallTree::of_stacks(profile, profile.stacks_of(pmc), order, weight)
    }

    /// Merge `stacks` (of `profile`): for a report per PMC, with
    /// [`Profile::stacks_by_pmc`].
    pub fn of_stacks<'a>(
        profile: &Profile,
        stacks: impl IntoIterator<Item = &'a Stack>,
        order: Order,
        weight: Weight,
    ) -> CallTree {
        let mut nodes: Vec<Node> = Vec::new();
        let mut roots = Vec::new();
        let mut index: HashMap<(usize, Option<FuncId>), usize> = HashMap::new();
        let mut total = 0u64;
        let mut child = |parent: usize, f: Option<FuncId>, nodes: &mut Vec<Node>| -> usize {
            *index.entry((parent, f)).or_insert_with(|| {
                nodes.push(Node {
                    function: f,
                    total: 0,
                    self_weight: 0,
                    children: Vec::new(),
                });
                let id = nodes.len() - 1;
                if parent == NO_PARENT {
                    roots.push(id);
                } else if let Some(p) = nodes.get_mut(parent) {
                    p.children.push(id);
                }
                id
            })
        };
        for s in stacks {
            let w = s.weight(weight);
            if w == 0 {
                continue;
            }
            total = total.saturating_add(w);
            let mut at = NO_PARENT;
            let path: Box<dyn Iterator<Item = &FuncId>> = match order {
                Order::Callers => Box::new(s.frames.iter()),
                Order::Callees => Box::new(s.frames.iter().rev()),
            };
            let mut any = false;
            for &f in path {
                at = child(at, Some(f), &mut nodes);
                if let Some(n) = nodes.get_mut(at) {
                    n.total = n.total.saturating_add(w);
                }
                any = true;
            }
            if !any {
                at = child(NO_PARENT, None, &mut nodes);
                if let Some(n) = nodes.get_mut(at) {
                    n.total = n.total.saturating_add(w);
                }
            }
            if let Some(n) = nodes.get_mut(at) {
                n.self_weight = n.self_weight.saturating_add(w);
            }
        }
        let mut tree = CallTree {
            nodes,
            roots,
            total,
            order,
        };
        tree.sort(profile);
        tree
    }

    fn sort(&mut self, profile: &Profile) {
        let key = |n: &Node| {
            (
                std::cmp::Reverse(n.total),
                n.function.map(|f| profile.function_name(f).to_string()),
            )
        };
        let keys: Vec<_> = self.nodes.iter().map(key).collect();
        let by = |a: &usize, b: &usize| keys.get(*a).cmp(&keys.get(*b));
        self.roots.sort_by(by);
        for n in &mut self.nodes {
            n.children.sort_by(by);
        }
    }

    /// The node at `i`.
    pub fn node(&self, i: usize) -> Option<&Node> {
        self.nodes.get(i)
    }

    /// Find the first node reached by following function names from the
    /// top level (for tests and drill-down), e.g. `["main", "outer"]`.
    pub fn find_path(&self, profile: &Profile, names: &[&str]) -> Option<usize> {
        let mut level = &self.roots;
        let mut found = None;
        for name in names {
            let hit = level.iter().copied().find(|&i| {
                self.nodes
                    .get(i)
                    .and_then(|n| n.function)
                    .is_some_and(|f| profile.function_name(f) == *name)
            })?;
            found = Some(hit);
            level = &self.nodes.get(hit)?.children;
        }
        found
    }

    /// The tree as nested JSON (`name`, `object`, `total`, `self`,
    /// `percent`, `children`), depth-limited like the text (a `max_depth`
    /// of 0 is taken as 64, to bound the recursion).
    pub fn to_json(&self, profile: &Profile, max_depth: usize) -> serde_json::Value {
        let roots: Vec<_> = self
            .roots
            .iter()
            .filter_map(|&r| self.node_json(profile, r, 1, max_depth))
            .collect();
        serde_json::json!({
            "order": self.order,
            "total": self.total,
            "roots": roots,
        })
    }

    fn node_json(
        &self,
        profile: &Profile,
        i: usize,
        depth: usize,
        max_depth: usize,
    ) -> Option<serde_json::Value> {
        let n = self.nodes.get(i)?;
        let f = n.function.and_then(|f| profile.function(f));
        // Recursion is bounded: JSON output requires a depth limit (0 is
        // taken as 64 here).
        let limit = if max_depth == 0 { 64 } else { max_depth };
        let children: Vec<_> = if depth < limit {
            n.children
                .iter()
                .filter_map(|&c| self.node_json(profile, c, depth + 1, max_depth))
                .collect()
        } else {
            Vec::new()
        };
        Some(serde_json::json!({
            "name": f.map_or("[no callchain]", |f| f.name.as_str()),
            "object": f.and_then(|f| f.object.as_deref()),
            "total": n.total,
            "self": n.self_weight,
            "percent": pct(n.total, self.total),
            "children": children,
        }))
    }

    /// Write the tree as text (see the module documentation): FreeBSD's
    /// `pmcstat -G` layout for [`Order::Callees`], the indented top-down
    /// tree for [`Order::Callers`].
    pub fn write_text<W: Write>(
        &self,
        profile: &Profile,
        opts: &CallGraphOptions,
        out: &mut W,
    ) -> std::io::Result<()> {
        if self.order == Order::Callees {
            return self.write_pmcstat(profile, opts, out);
        }
        // Iterative depth-first walk: deep recursion in a profile must not
        // overflow our stack.
        enum Item {
            Node {
                i: usize,
                depth: usize,
                parent_total: u64,
            },
            SelfLine {
                depth: usize,
                weight: u64,
            },
        }
        let mut todo: Vec<Item> = self
            .roots
            .iter()
            .rev()
            .map(|&i| Item::Node {
                i,
                depth: 1,
                parent_total: self.total,
            })
            .collect();
        let mut line = String::new();
        while let Some(item) = todo.pop() {
            line.clear();
            let (i, depth, parent_total) = match item {
                Item::SelfLine { depth, weight } => {
                    let p = pct(weight, self.total);
                    let indent = "  ".repeat(depth.saturating_sub(1).min(MAX_INDENT));
                    writeln!(out, "{indent}{p:.2}%  [{weight}]  [self]")?;
                    continue;
                }
                Item::Node {
                    i,
                    depth,
                    parent_total,
                } => (i, depth, parent_total),
            };
            let Some(n) = self.nodes.get(i) else { continue };
            if pct(n.total, self.total) < opts.min_percent {
                continue;
            }
            let shown = match self.order {
                Order::Callees if depth > 1 => pct(n.total, parent_total),
                _ => pct(n.total, self.total),
            };
            self.format_line(profile, opts, n.function, depth, shown, n.total, &mut line);
            // Names and paths from the log: control characters escaped.
            writeln!(out, "{}", pmc_log::escape::escape(&line))?;
            if opts.max_depth != 0 && depth >= opts.max_depth {
                continue;
            }
            if self.order == Order::Callers
                && n.self_weight > 0
                && !n.children.is_empty()
                && pct(n.self_weight, self.total) >= opts.min_percent
            {
                // Pushed first so that it prints after the children.
                todo.push(Item::SelfLine {
                    depth: depth + 1,
                    weight: n.self_weight,
                });
            }
            for &c in n.children.iter().rev() {
                todo.push(Item::Node {
                    i: c,
                    depth: depth + 1,
                    parent_total: n.total,
                });
            }
        }
        Ok(())
    }

    /// FreeBSD's layout (pmcpl_callgraph.c: `pmcstat_cgnode_print`, and
    /// `pmcstat_callgraph_print_for_pmcid` for the blank line after each
    /// top-level node).
    fn write_pmcstat<W: Write>(
        &self,
        profile: &Profile,
        opts: &CallGraphOptions,
        out: &mut W,
    ) -> std::io::Result<()> {
        use std::fmt::Write as _;
        // (node, depth from 0, parent's count); iterative, so a deep
        // profile cannot overflow our stack.
        let mut todo: Vec<(usize, usize, u64)> = Vec::new();
        let mut line = String::new();
        for &root in &self.roots {
            let Some(r) = self.nodes.get(root) else {
                continue;
            };
            if pct(r.total, self.total) < opts.min_percent {
                continue;
            }
            // `pmcstat_previous_filename_printed = NULL` per top-level node.
            let mut previous: Option<Option<&str>> = None;
            todo.push((root, 0, self.total));
            while let Some((i, depth, parent)) = todo.pop() {
                let Some(n) = self.nodes.get(i) else { continue };
                line.clear();
                let indent = " ".repeat(depth.min(MAX_INDENT));
                line.push_str(&indent);
                if n.total == parent {
                    line.push_str("100.0% ");
                } else {
                    let _ = write!(line, "{:05.2}% ", pct(n.total, parent));
                }
                let count = format!(" [{}] ", n.total);
                line.push_str(&count);
                // "#samples is a 12 character wide field."
                line.push_str(&" ".repeat(12usize.saturating_sub(count.len())));
                line.push_str(&indent);
                let f = n.function.and_then(|f| profile.function(f));
                line.push_str(f.map_or("[no callchain]", |f| f.name.as_str()));
                if f.is_some_and(|f| f.inlined) {
                    line.push_str(" (inlined)");
                }
                if opts.show_source {
                    if let Some(s) = f.and_then(|f| f.source.as_ref()) {
                        let _ = write!(line, " ({}:{})", s.file, s.line);
                    }
                }
                let object = f.and_then(|f| f.object.as_deref());
                if opts.show_object && previous != Some(object) {
                    previous = Some(object);
                    if let Some(o) = object {
                        let _ = write!(line, " @ {o}");
                    }
                }
                // Names and paths from the log: control characters escaped.
                writeln!(out, "{}", pmc_log::escape::escape(&line))?;
                if opts.max_depth != 0 && depth + 1 >= opts.max_depth {
                    continue;
                }
                for &c in n.children.iter().rev() {
                    let keep = self
                        .nodes
                        .get(c)
                        .is_some_and(|k| pct(k.total, self.total) >= opts.min_percent);
                    if keep {
                        todo.push((c, depth + 1, n.total));
                    }
                }
            }
            writeln!(out)?;
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn format_line(
        &self,
        profile: &Profile,
        opts: &CallGraphOptions,
        function: Option<FuncId>,
        depth: usize,
        shown: f64,
        weight: u64,
        line: &mut String,
    ) {
        use std::fmt::Write as _;
        let indent = "  ".repeat(depth.saturating_sub(1).min(MAX_INDENT));
        let f = function.and_then(|f| profile.function(f));
        let name = f.map_or("[no callchain]", |f| f.name.as_str());
        let _ = write!(line, "{indent}{shown:.2}%  [{weight}]  {name}");
        if let Some(f) = f {
            if f.inlined {
                line.push_str(" (inlined)");
            }
            if opts.show_object {
                if let Some(o) = f.object_basename() {
                    if !name.starts_with('[') {
                        let _ = write!(line, " @ {o}");
                    }
                }
            }
            if opts.show_source {
                if let Some(s) = &f.source {
                    let _ = write!(line, " ({}:{})", s.file, s.line);
                }
            }
        }
    }
}

/// `part` as a percentage of `whole` (0 when `whole` is 0).
pub fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// Write the call-graph report of every PMC in the profile (one section per
/// PMC, headed `@ <event> [<n> samples]` as `pmcstat -G` does).
pub fn write_callgraph<W: Write>(
    profile: &Profile,
    opts: &CallGraphOptions,
    out: &mut W,
) -> std::io::Result<()> {
    let mut first = true;
    let by_pmc = profile.stacks_by_pmc();
    for p in &profile.pmcs {
        let stacks = by_pmc.get(&p.pmc_id).into_iter().flatten().copied();
        let tree = CallTree::of_stacks(profile, stacks, opts.order, opts.weight);
        if tree.total == 0 {
            continue;
        }
        if !first {
            writeln!(out)?;
        }
        first = false;
        let unit = match opts.weight {
            Weight::Samples => "samples",
            Weight::Period => "events",
        };
        writeln!(
            out,
            "@ {} [{} {unit}]",
            pmc_log::escape::escape(&p.name),
            tree.total
        )?;
        writeln!(out)?;
        tree.write_text(profile, opts, out)?;
    }
    Ok(())
}

/// Write the call graph of every PMC as one JSON document:
/// `{"pmcs": [{"pmc_id", "name", "unit", "tree": {"order", "total", "roots": [...]}}]}`
/// with the nodes of [`CallTree::to_json`].
pub fn write_callgraph_json<W: Write>(
    profile: &Profile,
    opts: &CallGraphOptions,
    out: &mut W,
) -> crate::Result<()> {
    let unit = match opts.weight {
        Weight::Samples => "samples",
        Weight::Period => "events",
    };
    let by_pmc = profile.stacks_by_pmc();
    let pmcs: Vec<serde_json::Value> = profile
        .pmcs
        .iter()
        .map(|p| {
            let stacks = by_pmc.get(&p.pmc_id).into_iter().flatten().copied();
            let tree = CallTree::of_stacks(profile, stacks, opts.order, opts.weight);
            serde_json::json!({
                "pmc_id": p.pmc_id,
                "name": p.name,
                "unit": unit,
                "tree": tree.to_json(profile, opts.max_depth),
            })
        })
        .collect();
    // DEL and C1 in names escaped as well (serde_json escapes C0 only).
    let mut w = pmc_log::escape::JsonControls::new(&mut *out);
    serde_json::to_writer(&mut w, &serde_json::json!({ "pmcs": pmcs }))?;
    let out = w.into_inner()?;
    writeln!(out)?;
    Ok(())
}
