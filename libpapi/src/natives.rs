//! The pmc component's native events: their PAPI names, codes and the pmc
//! event each counts.
//!
//! PAPI's perf_event component names Linux's generic events as libpfm4 does
//! (`perf::PAGE-FAULTS`, `perf::PERF_COUNT_SW_PAGE_FAULTS`, `perf::CYCLES`)
//! and PMU events as `pmu::EVENT:UMASK`; this table gives those names to
//! what the pmc backend lists and can open here (`Backend::list_events`,
//! each entry probed), and takes pmc's own names too (`page-faults`,
//! `inst_retired.any`, `sched:sched_switch`, `cpu/event=0x3c/`), each given
//! a code the first time it is named. A code is `PAPI_NATIVE_MASK | index`
//! into the table, stable for the life of the process.
//!
//! Modifiers follow libpfm4's perf spelling: `:u`, `:k`, `:h` (with an
//! optional `=0`/`=1`) restrict the privilege levels counted.

use std::collections::HashMap;

use pmc_facade::info::{Availability, EventSource as ListedSource};
use pmc_facade::{EventSpec, Modifiers};

use crate::abi::PAPI_NATIVE_MASK;

/// Linux's generic events as libpfm4's perf PMU names them: the PAPI name
/// (after `perf::`), pmc's name, and the perf constant.
const PERF_NAMES: &[(&str, &str, &str)] = &[
    (
        "PERF_COUNT_HW_CPU_CYCLES",
        "cycles",
        "PERF_COUNT_HW_CPU_CYCLES",
    ),
    ("CYCLES", "cycles", "PERF_COUNT_HW_CPU_CYCLES"),
    ("CPU-CYCLES", "cycles", "PERF_COUNT_HW_CPU_CYCLES"),
    (
        "PERF_COUNT_HW_INSTRUCTIONS",
        "instructions",
        "PERF_COUNT_HW_INSTRUCTIONS",
    ),
    ("INSTRUCTIONS", "instructions", "PERF_COUNT_HW_INSTRUCTIONS"),
    (
        "PERF_COUNT_HW_CACHE_REFERENCES",
        "cache-references",
        "PERF_COUNT_HW_CACHE_REFERENCES",
    ),
    (
        "CACHE-REFERENCES",
        "cache-references",
        "PERF_COUNT_HW_CACHE_REFERENCES",
    ),
    (
        "PERF_COUNT_HW_CACHE_MISSES",
        "cache-misses",
        "PERF_COUNT_HW_CACHE_MISSES",
    ),
    ("CACHE-MISSES", "cache-misses", "PERF_COUNT_HW_CACHE_MISSES"),
    (
        "PERF_COUNT_HW_BRANCH_INSTRUCTIONS",
        "branches",
        "PERF_COUNT_HW_BRANCH_INSTRUCTIONS",
    ),
    (
        "BRANCH-INSTRUCTIONS",
        "branches",
        "PERF_COUNT_HW_BRANCH_INSTRUCTIONS",
    ),
    ("BRANCHES", "branches", "PERF_COUNT_HW_BRANCH_INSTRUCTIONS"),
    (
        "PERF_COUNT_HW_BRANCH_MISSES",
        "branch-misses",
        "PERF_COUNT_HW_BRANCH_MISSES",
    ),
    (
        "BRANCH-MISSES",
        "branch-misses",
        "PERF_COUNT_HW_BRANCH_MISSES",
    ),
    (
        "PERF_COUNT_HW_BUS_CYCLES",
        "bus-cycles",
        "PERF_COUNT_HW_BUS_CYCLES",
    ),
    ("BUS-CYCLES", "bus-cycles", "PERF_COUNT_HW_BUS_CYCLES"),
    (
        "PERF_COUNT_HW_STALLED_CYCLES_FRONTEND",
        "stalled-cycles-frontend",
        "PERF_COUNT_HW_STALLED_CYCLES_FRONTEND",
    ),
    (
        "STALLED-CYCLES-FRONTEND",
        "stalled-cycles-frontend",
        "PERF_COUNT_HW_STALLED_CYCLES_FRONTEND",
    ),
    (
        "IDLE-CYCLES-FRONTEND",
        "stalled-cycles-frontend",
        "PERF_COUNT_HW_STALLED_CYCLES_FRONTEND",
    ),
    (
        "PERF_COUNT_HW_STALLED_CYCLES_BACKEND",
        "stalled-cycles-backend",
        "PERF_COUNT_HW_STALLED_CYCLES_BACKEND",
    ),
    (
        "STALLED-CYCLES-BACKEND",
        "stalled-cycles-backend",
        "PERF_COUNT_HW_STALLED_CYCLES_BACKEND",
    ),
    (
        "IDLE-CYCLES-BACKEND",
        "stalled-cycles-backend",
        "PERF_COUNT_HW_STALLED_CYCLES_BACKEND",
    ),
    (
        "PERF_COUNT_HW_REF_CPU_CYCLES",
        "ref-cycles",
        "PERF_COUNT_HW_REF_CPU_CYCLES",
    ),
    ("REF-CYCLES", "ref-cycles", "PERF_COUNT_HW_REF_CPU_CYCLES"),
    (
        "PERF_COUNT_SW_CPU_CLOCK",
        "cpu-clock",
        "PERF_COUNT_SW_CPU_CLOCK",
    ),
    ("CPU-CLOCK", "cpu-clock", "PERF_COUNT_SW_CPU_CLOCK"),
    (
        "PERF_COUNT_SW_TASK_CLOCK",
        "task-clock",
        "PERF_COUNT_SW_TASK_CLOCK",
    ),
    ("TASK-CLOCK", "task-clock", "PERF_COUNT_SW_TASK_CLOCK"),
    (
        "PERF_COUNT_SW_PAGE_FAULTS",
        "page-faults",
        "PERF_COUNT_SW_PAGE_FAULTS",
    ),
    ("PAGE-FAULTS", "page-faults", "PERF_COUNT_SW_PAGE_FAULTS"),
    ("FAULTS", "page-faults", "PERF_COUNT_SW_PAGE_FAULTS"),
    (
        "PERF_COUNT_SW_CONTEXT_SWITCHES",
        "context-switches",
        "PERF_COUNT_SW_CONTEXT_SWITCHES",
    ),
    (
        "CONTEXT-SWITCHES",
        "context-switches",
        "PERF_COUNT_SW_CONTEXT_SWITCHES",
    ),
    ("CS", "context-switches", "PERF_COUNT_SW_CONTEXT_SWITCHES"),
    (
        "PERF_COUNT_SW_CPU_MIGRATIONS",
        "cpu-migrations",
        "PERF_COUNT_SW_CPU_MIGRATIONS",
    ),
    (
        "CPU-MIGRATIONS",
        "cpu-migrations",
        "PERF_COUNT_SW_CPU_MIGRATIONS",
    ),
    (
        "MIGRATIONS",
        "cpu-migrations",
        "PERF_COUNT_SW_CPU_MIGRATIONS",
    ),
    (
        "PERF_COUNT_SW_PAGE_FAULTS_MIN",
        "minor-faults",
        "PERF_COUNT_SW_PAGE_FAULTS_MIN",
    ),
    (
        "MINOR-FAULTS",
        "minor-faults",
        "PERF_COUNT_SW_PAGE_FAULTS_MIN",
    ),
    (
        "PERF_COUNT_SW_PAGE_FAULTS_MAJ",
        "major-faults",
        "PERF_COUNT_SW_PAGE_FAULTS_MAJ",
    ),
    (
        "MAJOR-FAULTS",
        "major-faults",
        "PERF_COUNT_SW_PAGE_FAULTS_MAJ",
    ),
    (
        "PERF_COUNT_SW_ALIGNMENT_FAULTS",
        "alignment-faults",
        "PERF_COUNT_SW_ALIGNMENT_FAULTS",
    ),
    (
        "ALIGNMENT-FAULTS",
        "alignment-faults",
        "PERF_COUNT_SW_ALIGNMENT_FAULTS",
    ),
    (
        "PERF_COUNT_SW_EMULATION_FAULTS",
        "emulation-faults",
        "PERF_COUNT_SW_EMULATION_FAULTS",
    ),
    (
        "EMULATION-FAULTS",
        "emulation-faults",
        "PERF_COUNT_SW_EMULATION_FAULTS",
    ),
    (
        "PERF_COUNT_SW_CGROUP_SWITCHES",
        "cgroup-switches",
        "PERF_COUNT_SW_CGROUP_SWITCHES",
    ),
    (
        "CGROUP-SWITCHES",
        "cgroup-switches",
        "PERF_COUNT_SW_CGROUP_SWITCHES",
    ),
];

/// The prefix of libpfm4's perf PMU, which PAPI's perf_event component uses.
pub(crate) const PERF_PMU: &str = "perf";

/// One native event of the component.
#[derive(Debug, Clone)]
pub(crate) struct Native {
    /// Its PAPI name (`perf::PAGE-FAULTS`, `page-faults:u`).
    pub name: String,
    /// What pmc counts for it, without privilege modifiers (those come
    /// from `modifiers` and the event set's domain).
    pub spec: EventSpec,
    /// Modifiers the name gave (`:u`), `None` when the domain decides.
    pub modifiers: Option<Modifiers>,
    /// `long_descr`.
    pub description: String,
    /// Listed by `PAPI_enum_cmp_event` (the table's own events, not names
    /// added by lookups).
    pub listed: bool,
    /// The PMU (`perf`, `cpu`, a pmu-events table) for the component's
    /// `pmu_names`.
    pub pmu: String,
}

/// The table: every native event named so far, by code index.
#[derive(Debug, Default)]
pub(crate) struct Natives {
    events: Vec<Native>,
    /// Lowercased name -> index.
    by_name: HashMap<String, usize>,
    /// pmc's name of a listed event (lowercased) -> its first PAPI name's index.
    by_spec: HashMap<String, usize>,
    /// pmc's names of what is available here (lowercased), from the listing.
    available: HashMap<String, String>,
    /// Whether the listing has been read.
    listed: bool,
}

/// How many native events the table holds at most (names added by lookups
/// included): codes stay below `PAPI_NATIVE_MASK | 0x00FF_FFFF`.
pub(crate) const MAX_NATIVES: usize = 1 << 20;

/// A native event code for table index `i`.
pub(crate) fn code_of(i: usize) -> u32 {
    PAPI_NATIVE_MASK | (i as u32 & 0x00ff_ffff)
}

/// The table index of a native code, if it is one (not checked against the table).
pub(crate) fn index_of(code: u32) -> Option<usize> {
    (code & 0xc000_0000 == PAPI_NATIVE_MASK).then_some((code & 0x00ff_ffff) as usize)
}

/// libpfm4-style privilege modifiers at the end of a name: the name without
/// them and the modifiers, or `None` when there are none.
fn split_modifiers(name: &str) -> Option<(&str, Modifiers)> {
    let mut rest = name;
    let mut set: Vec<(char, bool)> = Vec::new();
    while let Some(pos) = rest.rfind(':') {
        // `pmu::EVENT`: a double colon is not a modifier.
        if pos > 0 && rest.as_bytes()[pos - 1] == b':' {
            break;
        }
        let m = &rest[pos + 1..];
        let (flag, on) = match m.split_once('=') {
            Some((f, v)) => (f, matches!(v, "1" | "yes" | "true")),
            None => (m, true),
        };
        let c = match flag.to_ascii_lowercase().as_str() {
            "u" => 'u',
            "k" => 'k',
            "h" => 'h',
            _ => break,
        };
        set.push((c, on));
        rest = &rest[..pos];
    }
    if set.is_empty() || rest.is_empty() {
        return None;
    }
    // Levels given as 1 are counted; given as 0 alone, every other level is.
    let any_on = set.iter().any(|&(_, on)| on);
    let level = |c: char| match set.iter().find(|&&(x, _)| x == c) {
        Some(&(_, on)) => on,
        None => !any_on,
    };
    let m = Modifiers {
        user: level('u'),
        kernel: level('k'),
        hv: level('h'),
        ..Modifiers::default()
    };
    Some((rest, m))
}

impl Natives {
    /// Whether the listing has been read.
    pub(crate) fn is_listed(&self) -> bool {
        self.listed
    }

    /// Fills the table from the backend's probed listing: every available
    /// event under its PAPI names, in listing order.
    pub(crate) fn fill(&mut self, listing: &[pmc_facade::info::EventInfo]) {
        if self.listed {
            return;
        }
        self.listed = true;
        for e in listing {
            if e.availability != Availability::Available {
                continue;
            }
            let lower = e.name.to_ascii_lowercase();
            self.available.insert(lower.clone(), e.description.clone());
            match &e.source {
                ListedSource::Portable
                | ListedSource::Hardware
                | ListedSource::Software
                | ListedSource::Cache => {
                    for (papi, pmc, constant) in perf_aliases(&e.name) {
                        let description = format!("{constant}: {}", e.description);
                        self.add_listed(format!("{PERF_PMU}::{papi}"), &pmc, description, PERF_PMU);
                    }
                }
                ListedSource::Pmu(pmu) => {
                    let (pmu_name, event) = pmu_event_name(pmu, &e.name);
                    self.add_listed(
                        format!("{pmu_name}::{event}"),
                        &e.name,
                        e.description.clone(),
                        &pmu_name,
                    );
                }
                ListedSource::HwpmcClass(class) => {
                    // hwpmc's class-prefixed names (SOFT-CLOCK.HARD) under their class.
                    let pmu = class.to_ascii_lowercase();
                    let upper = e.name.to_ascii_uppercase();
                    let prefix = format!("{}-", class.to_ascii_uppercase());
                    let event = upper.strip_prefix(&prefix).unwrap_or(&upper);
                    self.add_listed(
                        format!("{pmu}::{event}"),
                        &e.name,
                        e.description.clone(),
                        &pmu,
                    );
                }
                ListedSource::Tracepoint => {}
            }
        }
    }

    fn add_listed(&mut self, name: String, pmc: &str, description: String, pmu: &str) {
        let key = name.to_ascii_lowercase();
        if self.by_name.contains_key(&key) {
            return;
        }
        let Ok(spec) = pmc.parse::<EventSpec>() else {
            return;
        };
        self.by_name.insert(key, self.events.len());
        self.by_spec
            .entry(pmc.to_ascii_lowercase())
            .or_insert(self.events.len());
        self.events.push(Native {
            name,
            spec,
            modifiers: None,
            description,
            listed: true,
            pmu: pmu.to_owned(),
        });
    }

    /// The native event of a code.
    pub(crate) fn get(&self, code: u32) -> Option<&Native> {
        index_of(code).and_then(|i| self.events.get(i))
    }

    /// Listed events, in code order: their codes.
    pub(crate) fn listed_codes(&self) -> impl Iterator<Item = u32> + '_ {
        self.events
            .iter()
            .enumerate()
            .filter(|(_, n)| n.listed)
            .map(|(i, _)| code_of(i))
    }

    /// How many events are listed.
    pub(crate) fn listed_count(&self) -> usize {
        self.events.iter().filter(|n| n.listed).count()
    }

    /// The PMUs of the listed events, in first-seen order.
    pub(crate) fn pmus(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for n in self.events.iter().filter(|n| n.listed) {
            if !out.contains(&n.pmu) {
                out.push(n.pmu.clone());
            }
        }
        out
    }

    /// The code of a name already in the table (any case), without adding.
    pub(crate) fn find(&self, name: &str) -> Option<u32> {
        self.by_name
            .get(&name.to_ascii_lowercase())
            .map(|&i| code_of(i))
    }

    /// Whether pmc's name (lowercased) is available here, per the listing.
    pub(crate) fn pmc_available(&self, pmc_name: &str) -> bool {
        self.available.contains_key(&pmc_name.to_ascii_lowercase())
    }

    /// The code of `name`: a table name, with modifiers, without the
    /// `perf::` prefix, with the component's `pmc:::` prefix, or pmc's own
    /// syntax. `probe` says whether pmc can count a spec here (for names
    /// the listing does not have); a name that resolves to nothing countable
    /// is `None`.
    pub(crate) fn resolve(
        &mut self,
        name: &str,
        probe: &mut dyn FnMut(&EventSpec) -> bool,
    ) -> Option<u32> {
        let name = name.trim();
        if name.is_empty() || name.len() > 1000 {
            return None;
        }
        if let Some(c) = self.find(name) {
            return Some(c);
        }
        let bare = name
            .strip_prefix("pmc:::")
            .or_else(|| name.strip_prefix("PMC:::"))
            .unwrap_or(name);
        if let Some(c) = self.find(bare) {
            return Some(c);
        }
        if let Some(c) = self.find(&format!("{PERF_PMU}::{bare}")) {
            return Some(c);
        }
        if let Some(&i) = self.by_spec.get(&bare.to_ascii_lowercase()) {
            return Some(code_of(i));
        }
        // A table name with modifiers: a new code for the combination.
        if let Some((base, m)) = split_modifiers(bare) {
            let base_code = self
                .find(base)
                .or_else(|| self.find(&format!("{PERF_PMU}::{base}")));
            if let Some(bc) = base_code {
                let b = self.get(bc)?.clone();
                return self.add_dynamic(name, b.spec, Some(m), b.description, &b.pmu);
            }
        }
        // pmc's own names: parsed, and counted here (the listing, or a probe).
        let spec: EventSpec = bare.parse().ok()?;
        // The privilege levels the name gives override the set's domain;
        // its other modifiers (precision, pinning) stay with the event.
        let mut plain = spec.clone();
        let modifiers = if spec.modifiers.is_restricted() {
            plain.modifiers.user = false;
            plain.modifiers.kernel = false;
            plain.modifiers.hv = false;
            Some(spec.modifiers)
        } else {
            None
        };
        let countable = self.pmc_available(&plain.to_string()) || probe(&spec);
        if !countable {
            return None;
        }
        let description = self
            .available
            .get(&plain.to_string().to_ascii_lowercase())
            .cloned()
            .unwrap_or_else(|| format!("pmc event {plain}"));
        self.add_dynamic(name, plain, modifiers, description, "pmc")
    }

    fn add_dynamic(
        &mut self,
        name: &str,
        spec: EventSpec,
        modifiers: Option<Modifiers>,
        description: String,
        pmu: &str,
    ) -> Option<u32> {
        if self.events.len() >= MAX_NATIVES {
            return None;
        }
        let i = self.events.len();
        self.by_name.insert(name.to_ascii_lowercase(), i);
        self.events.push(Native {
            name: name.to_owned(),
            spec,
            modifiers,
            description,
            listed: false,
            pmu: pmu.to_owned(),
        });
        Some(code_of(i))
    }
}

/// libpfm4's perf names of one of pmc's generic events: (PAPI name without
/// the PMU, pmc name, perf constant or cache group).
fn perf_aliases(pmc_name: &str) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = PERF_NAMES
        .iter()
        .filter(|(_, pmc, _)| pmc.eq_ignore_ascii_case(pmc_name))
        .map(|&(papi, pmc, c)| (papi.to_owned(), pmc.to_owned(), c.to_owned()))
        .collect();
    if out.is_empty()
        && pmc_facade::event::LINUX_CACHE_NAMES.iter().any(|c| {
            pmc_name
                .to_ascii_lowercase()
                .starts_with(&c.to_ascii_lowercase())
        })
    {
        // A generic cache event: libpfm4 spells it in capitals.
        let group = pmc_name
            .split('-')
            .next()
            .unwrap_or(pmc_name)
            .to_ascii_uppercase();
        out.push((
            pmc_name.to_ascii_uppercase(),
            pmc_name.to_owned(),
            format!("PERF_COUNT_HW_CACHE_{group}"),
        ));
    }
    out
}

/// A PMU event's PAPI name: (PMU, EVENT[:UMASK]). pmc lists sysfs aliases as
/// `pmu/alias/` and the CPU's table events (source `cpu (pmu-events
/// TABLE)`) by their dotted names, which PAPI writes `EVENT:UMASK`.
fn pmu_event_name(source: &str, name: &str) -> (String, String) {
    // Linux lists them from `cpu (pmu-events TABLE)`, FreeBSD from `pmu-events TABLE`.
    if let Some(table) = source
        .split_once("pmu-events ")
        .map(|(_, t)| t.trim_end_matches(')').trim())
    {
        let upper = name.to_ascii_uppercase();
        let event = match upper.split_once('.') {
            Some((e, u)) => format!("{e}:{}", u.replace('.', "_")),
            None => upper,
        };
        return (table.to_owned(), event);
    }
    let inner = name.trim_end_matches('/');
    match inner.split_once('/') {
        Some((pmu, alias)) => (pmu.to_owned(), alias.to_ascii_uppercase()),
        None => (source.to_owned(), inner.to_ascii_uppercase()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmc_facade::info::EventInfo;

    fn listing() -> Vec<EventInfo> {
        let e = |name: &str, source: ListedSource, ok: bool| EventInfo {
            name: name.into(),
            source,
            description: format!("{name} description"),
            availability: if ok {
                Availability::Available
            } else {
                Availability::Unavailable("no".into())
            },
        };
        vec![
            e("cycles", ListedSource::Portable, false),
            e("page-faults", ListedSource::Portable, true),
            e("task-clock", ListedSource::Portable, true),
            e("minor-faults", ListedSource::Software, true),
            e("L1-dcache-loads", ListedSource::Cache, true),
            e("msr/tsc/", ListedSource::Pmu("msr".into()), true),
            e(
                "inst_retired.any",
                ListedSource::Pmu("cpu (pmu-events skylake)".into()),
                true,
            ),
            e(
                "SOFT-CLOCK.HARD",
                ListedSource::HwpmcClass("SOFT".into()),
                true,
            ),
            e(
                "BR_INST_RETIRED.COND",
                ListedSource::Pmu("pmu-events skylake".into()),
                true,
            ),
        ]
    }

    #[test]
    fn perf_names_and_aliases_share_a_spec() {
        let mut n = Natives::default();
        n.fill(&listing());
        let pf = n.find("perf::PAGE-FAULTS").unwrap();
        let pf2 = n.find("perf::faults").unwrap();
        assert_ne!(pf, pf2);
        assert_eq!(n.get(pf).unwrap().spec, n.get(pf2).unwrap().spec);
        assert!(n
            .get(pf)
            .unwrap()
            .description
            .starts_with("PERF_COUNT_SW_PAGE_FAULTS"));
        assert!(
            n.find("perf::CYCLES").is_none(),
            "unavailable events are not listed"
        );
        assert!(n.find("perf::L1-DCACHE-LOADS").is_some());
        assert!(n.find("msr::TSC").is_some());
        assert!(n.find("skylake::INST_RETIRED:ANY").is_some());
        assert!(n.find("soft::CLOCK.HARD").is_some());
        assert!(n.find("skylake::BR_INST_RETIRED:COND").is_some());
        assert_eq!(n.pmus(), vec!["perf", "msr", "skylake", "soft"]);
    }

    #[test]
    fn names_resolve_with_prefixes_and_modifiers() {
        let mut n = Natives::default();
        n.fill(&listing());
        let mut no = |_: &EventSpec| false;
        let pf = n.find("perf::PAGE-FAULTS").unwrap();
        assert_eq!(n.resolve("PAGE-FAULTS", &mut no), Some(pf));
        assert_eq!(n.resolve("page-faults", &mut no), Some(pf));
        let u = n.resolve("perf::PAGE-FAULTS:u=1", &mut no).unwrap();
        assert_ne!(u, pf);
        let m = n.get(u).unwrap().modifiers.unwrap();
        assert!(m.user && !m.kernel && !m.hv);
        let k0 = n.resolve("perf::TASK-CLOCK:k=0", &mut no).unwrap();
        let m = n.get(k0).unwrap().modifiers.unwrap();
        assert!(m.user && !m.kernel && m.hv);
        assert_eq!(n.resolve("perf::PAGE-FAULTS:u=1", &mut no), Some(u));
        assert_eq!(n.resolve("perf::NOSUCH", &mut no), None);
        assert_eq!(n.resolve("", &mut no), None);
        // pmc's own syntax, probed.
        let mut yes = |_: &EventSpec| true;
        let tp = n.resolve("sched:sched_switch", &mut yes).unwrap();
        assert!(!n.get(tp).unwrap().listed);
        assert_eq!(
            n.resolve("pmc:::minor-faults", &mut no)
                .map(|c| n.get(c).unwrap().spec.to_string()),
            Some("minor-faults".into())
        );
        assert!(n.resolve("sched:nosuch", &mut no).is_none());
    }

    #[test]
    fn codes_round_trip() {
        assert_eq!(code_of(5), 0x4000_0005);
        assert_eq!(index_of(0x4000_0005), Some(5));
        assert_eq!(index_of(0x8000_0005), None);
        assert_eq!(index_of(0xc000_0005), None);
    }
}
