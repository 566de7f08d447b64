//! The self-test's report: one [`Row`] per check, each with its [`Verdict`] and how its
//! measured value relates to the expected one ([`Relation`]); [`Report`]'s `Display` is the
//! human table.

/// The verdict of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "UPPERCASE"))]
pub enum Verdict {
    /// As expected.
    Pass,
    /// Counted, but off; usable with care (see the row's note).
    Warn,
    /// Wrong or missing counts.
    Fail,
    /// Could not be checked here (the note says why).
    Skip,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(match self {
            Verdict::Pass => "PASS",
            Verdict::Warn => "WARN",
            Verdict::Fail => "FAIL",
            Verdict::Skip => "SKIP",
        })
    }
}

/// How a row's measured value relates to its expected one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Relation {
    /// Exactly the expected value.
    Exact,
    /// At least the expected value.
    AtLeast,
    /// About the expected value (the note says how close).
    About,
    /// Another unit: the ratio is the figure (cycles per nanosecond: GHz).
    Rate,
}

/// One check's result.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Row {
    /// The check's name (`instructions`, `page faults`, ...).
    pub check: &'static str,
    /// The event as counted (`instructions:u`), or what was exercised.
    pub event: String,
    /// Whether the check needs a hardware PMU.
    pub hardware: bool,
    /// What was measured, if anything.
    pub measured: Option<u64>,
    /// What was expected, if known.
    pub expected: Option<u64>,
    /// How `measured` should relate to `expected`.
    pub relation: Relation,
    /// The verdict.
    pub verdict: Verdict,
    /// What was found; for a row that is not a PASS, why.
    pub note: String,
    /// For a WARN, FAIL or SKIP: the machine's likely causes (no vPMU,
    /// the NMI watchdog, `perf_event_paranoid`, the kernel version...).
    pub causes: Vec<String>,
}

impl Row {
    /// `measured / expected`, when both are known and `expected` is not 0.
    ///
    /// ```
    /// use pmc_selftest::{Relation, Row, Verdict};
    /// let row = Row {
    ///     check: "cycles", event: "cycles:u".into(), hardware: true,
    ///     measured: Some(3_000_000), expected: Some(1_000_000), relation: Relation::Rate,
    ///     verdict: Verdict::Pass, note: String::new(), causes: vec![],
    /// };
    /// assert_eq!(row.ratio(), Some(3.0)); // 3 GHz
    /// ```
    pub fn ratio(&self) -> Option<f64> {
        match (self.measured, self.expected) {
            (Some(m), Some(e)) if e > 0 => Some(m as f64 / e as f64),
            _ => None,
        }
    }

    pub(crate) fn new(check: &'static str, event: impl Into<String>, hardware: bool) -> Row {
        Row {
            check,
            event: event.into(),
            hardware,
            measured: None,
            expected: None,
            relation: Relation::Exact,
            verdict: Verdict::Skip,
            note: String::new(),
            causes: Vec::new(),
        }
    }

    pub(crate) fn skip(mut self, note: impl Into<String>) -> Row {
        self.verdict = Verdict::Skip;
        self.note = note.into();
        self
    }

    pub(crate) fn fail(mut self, note: impl Into<String>) -> Row {
        self.verdict = Verdict::Fail;
        self.note = note.into();
        self
    }

    pub(crate) fn judged(
        mut self,
        measured: u64,
        expected: u64,
        relation: Relation,
        verdict: Verdict,
        note: impl Into<String>,
    ) -> Row {
        self.measured = Some(measured);
        self.expected = Some(expected);
        self.relation = relation;
        self.verdict = verdict;
        self.note = note.into();
        self
    }
}

/// Every check's row, in order.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Report {
    /// The backend's name (`linux-perf`, `freebsd-hwpmc`).
    pub backend: String,
    /// One row per check.
    pub rows: Vec<Row>,
}

impl Report {
    /// Whether no row FAILed (SKIPs and WARNs are not failures).
    ///
    /// ```
    /// use pmc_selftest::Report;
    /// assert!(Report { backend: "none".into(), rows: vec![] }.passed());
    /// ```
    pub fn passed(&self) -> bool {
        self.rows.iter().all(|r| r.verdict != Verdict::Fail)
    }

    /// How many rows have `verdict`.
    pub fn count(&self, verdict: Verdict) -> usize {
        self.rows.iter().filter(|r| r.verdict == verdict).count()
    }

    /// The row of `check`, if it ran.
    pub fn row(&self, check: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.check == check)
    }
}

fn relation_sign(r: Relation) -> &'static str {
    match r {
        Relation::Exact => "=",
        Relation::AtLeast => ">=",
        Relation::About => "~",
        Relation::Rate => "ns",
    }
}

impl std::fmt::Display for Report {
    /// The human table: one line per check, then each non-PASS row's likely
    /// causes, then a summary line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "pmc self-test on the {} backend", self.backend)?;
        writeln!(
            f,
            "{:<17} {:<19} {:>13} {:>16} {:>8}  {:<7} NOTE",
            "CHECK", "EVENT", "MEASURED", "EXPECTED", "RATIO", "VERDICT"
        )?;
        // Each cause once: the rows of a machine without a PMU share theirs.
        let mut said = std::collections::BTreeSet::new();
        for r in &self.rows {
            let m = r.measured.map_or("-".to_owned(), |m| m.to_string());
            let e = r.expected.map_or("-".to_owned(), |e| {
                if r.relation == Relation::Rate {
                    format!("{e} ns")
                } else {
                    format!("{} {e}", relation_sign(r.relation))
                }
            });
            let ratio = r.ratio().map_or("-".to_owned(), |x| format!("{x:.4}"));
            writeln!(
                f,
                "{:<17} {:<19} {m:>13} {e:>16} {ratio:>8}  {:<7} {}",
                r.check, r.event, r.verdict, r.note
            )?;
            for c in &r.causes {
                if said.insert(c.as_str()) {
                    writeln!(f, "{:<17} likely cause: {c}", "")?;
                }
            }
        }
        writeln!(
            f,
            "{} passed, {} warned, {} failed, {} skipped: {}",
            self.count(Verdict::Pass),
            self.count(Verdict::Warn),
            self.count(Verdict::Fail),
            self.count(Verdict::Skip),
            if self.passed() {
                "the counters that are here count right"
            } else {
                "some counts are wrong here (see FAIL)"
            }
        )
    }
}
