//! One PAPI event set: its events, options and, while it runs, the pmc
//! counters behind it.
//!
//! Each PAPI event is a formula over native events (one term, or a
//! preset's sum or difference); the distinct native events of a set are
//! its *slots*, counted as one pmc group (all scheduled together, as
//! PAPI's perf_event component groups them) or, in a multiplexed set, as
//! separate PMCs the kernel rotates (their counts scaled by
//! `time_enabled / time_running`). A slot with an overflow threshold is a
//! sampling PMC of its own whose samples call the handler.
//!
//! Counts: a set's counters are allocated at `PAPI_start` (so it counts
//! from zero, as PAPI's does) and released at `PAPI_stop`, whose counts
//! the set keeps (`PAPI_read` of a stopped set returns them, as PAPI's
//! does); `PAPI_reset` and `PAPI_write` move a per-event offset.

use std::ffi::c_int;

use pmc_facade::{
    Allocation, Backend, Cpus, EventSpec, Flags, Group, Modifiers, Pmc, Rate, Reading, Scope,
    Target,
};

use crate::abi::*;
use crate::error::{fail, PapiError, R};
use crate::presets::Derived;

/// Most events one set holds (`PAPI_get_opt(PAPI_MAX_MPX_CTRS)`).
pub(crate) const MAX_EVENTS: usize = 64;

/// The C handler of `PAPI_overflow`.
pub(crate) type Handler = crate::sys::OverflowHandler;

/// One event of a set, as the user added it.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// The code the user added (preset or native).
    pub code: u32,
    /// Native codes of its terms.
    pub terms: Vec<u32>,
    /// How they combine.
    pub derived: Derived,
}

/// One region of a `PAPI_sprofil` profile: a histogram of the addresses
/// from `offset` on, `scale` being profil(2)'s (0x10000: one bucket per
/// two bytes of code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProfRegion {
    /// The buffer's address (the program's memory).
    pub base: usize,
    /// Its size in bytes.
    pub size: usize,
    /// The lowest address profiled.
    pub offset: u64,
    /// profil(2)'s scale.
    pub scale: u32,
}

/// A profile: regions and `PAPI_PROFIL_*` flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Profile {
    /// The regions, in the program's order.
    pub regions: Vec<ProfRegion>,
    /// `PAPI_PROFIL_*`.
    pub flags: c_int,
}

impl Profile {
    /// The bytes of one bucket.
    pub(crate) fn bucket_bytes(&self) -> usize {
        if self.flags & PAPI_PROFIL_BUCKET_64 != 0 {
            8
        } else if self.flags & PAPI_PROFIL_BUCKET_32 != 0 {
            4
        } else {
            2
        }
    }

    /// Where a sample at `address` counts: (region, bucket), as profil(2)
    /// and PAPI place it (`((address - offset) * scale) >> 17`); an address
    /// outside every region goes to a region of offset 0 and scale 2 (the
    /// overflow bin, bucket 0) when there is one.
    pub(crate) fn bucket(&self, address: u64) -> Option<(usize, usize)> {
        let per = self.bucket_bytes();
        for (i, r) in self.regions.iter().enumerate() {
            if r.offset == 0 && r.scale == 2 {
                continue;
            }
            if address < r.offset {
                continue;
            }
            let idx = (u128::from(address - r.offset) * u128::from(r.scale)) >> 17;
            if idx < (r.size / per) as u128 {
                return Some((i, idx as usize));
            }
        }
        self.regions
            .iter()
            .position(|r| r.offset == 0 && r.scale == 2 && r.size >= per)
            .map(|i| (i, 0))
    }
}

/// What an overflow does.
#[derive(Debug, Clone)]
pub(crate) enum Action {
    /// Calls the program's handler (`PAPI_overflow`).
    Handler(Handler),
    /// Counts the address in a histogram (`PAPI_profil`, `PAPI_sprofil`).
    Profile(std::sync::Arc<Profile>),
}

/// An overflow request on one event of the set.
#[derive(Debug, Clone)]
pub(crate) struct Overflow {
    /// The event's position in the set.
    pub entry: usize,
    /// Events between two calls of the handler.
    pub threshold: u64,
    /// What each overflow does.
    pub action: Action,
}

/// One overflow to act on, after the library's lock is released.
#[derive(Debug, Clone)]
pub(crate) struct OverflowCall {
    /// What to do.
    pub action: Action,
    /// The event set.
    pub set: c_int,
    /// The sampled instruction address.
    pub address: u64,
    /// Bit `i` set: the set's event `i` overflowed.
    pub vector: i64,
}

/// The counters of a running set.
pub(crate) struct Run<B: Backend> {
    group: Option<B::Group>,
    group_slots: Vec<usize>,
    singles: Vec<(usize, B::Pmc)>,
    samplers: Vec<Sampler<B>>,
    /// Raw slot values at the last reset.
    base: Vec<i64>,
    /// Whether counts are scaled for multiplexing.
    scale: bool,
    /// The thread the set counts (thread granularity), for the one-running-set rule.
    pub thread: Option<u64>,
}

struct Sampler<B: Backend> {
    slot: usize,
    pmc: B::Pmc,
    overflow: Overflow,
}

/// Whom a set counts: its scope, target and flags, from its options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Whom {
    /// Process or system scope.
    pub scope: Scope,
    /// The process target (process scope).
    pub target: Option<Target>,
    /// Inherited by children.
    pub inherit: bool,
}

/// An event set.
pub(crate) struct EventSet<B: Backend> {
    /// The component it is bound to (0, pmc), once set.
    pub cidx: Option<c_int>,
    /// Its events, in the order added.
    pub entries: Vec<Entry>,
    /// `PAPI_DOM_*`.
    pub domain: c_int,
    /// `PAPI_GRN_*`.
    pub granularity: c_int,
    /// `PAPI_set_multiplex` was called.
    pub multiplex: bool,
    /// `PAPI_INHERIT_ALL`.
    pub inherit: bool,
    /// `PAPI_attach`: the thread or process counted.
    pub attach: Option<u32>,
    /// `PAPI_CPU_ATTACH`: the CPU counted.
    pub cpu: Option<u32>,
    /// Overflow requests.
    pub overflow: Vec<Overflow>,
    /// The counters, while running.
    pub run: Option<Run<B>>,
    /// Per event: added to the computed count (`PAPI_write`).
    adjust: Vec<i64>,
    /// Per event: the counts kept while stopped.
    frozen: Vec<i64>,
}

impl<B: Backend> EventSet<B> {
    /// An empty set with the library's default domain and granularity.
    pub(crate) fn new(domain: c_int, granularity: c_int) -> EventSet<B> {
        EventSet {
            cidx: None,
            entries: Vec::new(),
            domain,
            granularity,
            multiplex: false,
            inherit: false,
            attach: None,
            cpu: None,
            overflow: Vec::new(),
            run: None,
            adjust: Vec::new(),
            frozen: Vec::new(),
        }
    }

    /// Whether it is counting.
    pub(crate) fn running(&self) -> bool {
        self.run.is_some()
    }

    /// `PAPI_state`'s bits.
    pub(crate) fn state(&self) -> c_int {
        let mut s = if self.running() {
            PAPI_RUNNING
        } else {
            PAPI_STOPPED
        };
        if self
            .overflow
            .iter()
            .any(|o| matches!(o.action, Action::Handler(_)))
        {
            s |= PAPI_OVERFLOWING;
        }
        if self
            .overflow
            .iter()
            .any(|o| matches!(o.action, Action::Profile(_)))
        {
            s |= PAPI_PROFILING;
        }
        if self.multiplex {
            s |= PAPI_MULTIPLEXING;
        }
        if self.attach.is_some() {
            s |= PAPI_ATTACHED;
        }
        if self.cpu.is_some() {
            s |= PAPI_CPU_ATTACHED;
        }
        s
    }

    /// Refuses changes while running.
    pub(crate) fn not_running(&self, what: &str) -> R<()> {
        if self.running() {
            return fail(
                PAPI_EISRUN,
                format!("{what}: the event set is counting; call PAPI_stop first"),
            );
        }
        Ok(())
    }

    /// The position of an event code in the set.
    pub(crate) fn position(&self, code: u32) -> Option<usize> {
        self.entries.iter().position(|e| e.code == code)
    }

    /// Adds an event (checked by the caller to exist).
    pub(crate) fn add(&mut self, entry: Entry) -> R<()> {
        self.not_running("PAPI_add_event")?;
        if self.position(entry.code).is_some() {
            return fail(
                PAPI_ECNFLCT,
                format!("event {:#x} is already in the event set", entry.code),
            );
        }
        if self.entries.len() >= MAX_EVENTS {
            return fail(
                PAPI_ECOUNT,
                format!("an event set holds at most {MAX_EVENTS} events"),
            );
        }
        self.entries.push(entry);
        self.adjust.push(0);
        self.frozen.push(0);
        Ok(())
    }

    /// Removes an event.
    pub(crate) fn remove(&mut self, code: u32) -> R<()> {
        self.not_running("PAPI_remove_event")?;
        let Some(i) = self.position(code) else {
            return fail(
                PAPI_EINVAL,
                format!("event {code:#x} is not in the event set"),
            );
        };
        self.entries.remove(i);
        self.adjust.remove(i);
        self.frozen.remove(i);
        // Overflow requests follow their event; the removed one's goes.
        self.overflow.retain(|o| o.entry != i);
        for o in &mut self.overflow {
            if o.entry > i {
                o.entry -= 1;
            }
        }
        Ok(())
    }

    /// Removes every event (`PAPI_cleanup_eventset`).
    pub(crate) fn cleanup(&mut self) -> R<()> {
        self.not_running("PAPI_cleanup_eventset")?;
        self.entries.clear();
        self.adjust.clear();
        self.frozen.clear();
        self.overflow.clear();
        self.multiplex = false;
        Ok(())
    }

    /// The distinct native codes of the set (its slots), and for each
    /// event the slots of its terms.
    pub(crate) fn slots(&self) -> (Vec<u32>, Vec<Vec<usize>>) {
        let mut slots: Vec<u32> = Vec::new();
        let mut terms = Vec::with_capacity(self.entries.len());
        for e in &self.entries {
            let mut t = Vec::with_capacity(e.terms.len());
            for &code in &e.terms {
                let s = match slots.iter().position(|&c| c == code) {
                    Some(s) => s,
                    None => {
                        slots.push(code);
                        slots.len() - 1
                    }
                };
                t.push(s);
            }
            terms.push(t);
        }
        (slots, terms)
    }

    /// The privilege levels of the set's domain.
    pub(crate) fn modifiers(&self) -> Modifiers {
        domain_modifiers(self.domain)
    }

    /// Whom the set counts.
    pub(crate) fn whom(&self, thread_target: Target) -> Whom {
        let system = |cpu: Cpus| Whom {
            scope: Scope::System { cpu },
            target: None,
            inherit: false,
        };
        if let Some(cpu) = self.cpu {
            return system(Cpus::One(cpu));
        }
        match self.granularity {
            PAPI_GRN_SYS => system(Cpus::One(crate::sys::os::current_cpu())),
            PAPI_GRN_SYS_CPU => system(Cpus::All),
            _ => Whom {
                scope: Scope::Process,
                target: Some(match self.attach {
                    Some(tid) => Target::Pid(tid),
                    None if self.granularity == PAPI_GRN_PROC || self.inherit => Target::Current,
                    None => thread_target,
                }),
                inherit: self.inherit,
            },
        }
    }

    /// Starts counting: allocates the set's counters (`specs`: each slot's
    /// event, its modifiers applied), attaches them to `whom`, starts them.
    pub(crate) fn start(
        &mut self,
        backend: &B,
        specs: &[EventSpec],
        whom: &Whom,
        thread: Option<u64>,
    ) -> R<()> {
        if self.entries.is_empty() {
            return fail(PAPI_EINVAL, "the event set has no events; add some first");
        }
        let alloc = |spec: &EventSpec, rate: Option<u64>| {
            let mut a = match rate {
                Some(p) => Allocation::sampling(spec.clone(), Rate::Period(p)).flags(Flags::NONE),
                None => Allocation::counting(spec.clone()),
            }
            .scope(whom.scope.clone());
            if whom.inherit {
                a = a.descendants();
            }
            a
        };
        let sampled: Vec<Option<Overflow>> = (0..specs.len())
            .map(|s| {
                self.overflow
                    .iter()
                    .find(|o| self.slot_of_entry(o.entry) == Some(s))
                    .cloned()
            })
            .collect();
        let mut run: Run<B> = Run {
            group: None,
            group_slots: Vec::new(),
            singles: Vec::new(),
            samplers: Vec::new(),
            base: vec![0; specs.len()],
            scale: self.multiplex,
            thread,
        };
        let counting: Vec<usize> = (0..specs.len()).filter(|&s| sampled[s].is_none()).collect();
        if self.multiplex || counting.len() == 1 {
            for &s in &counting {
                let pmc = backend.allocate(&alloc(&specs[s], None))?;
                run.singles.push((s, pmc));
            }
        } else if !counting.is_empty() {
            let allocs: Vec<Allocation> =
                counting.iter().map(|&s| alloc(&specs[s], None)).collect();
            run.group = Some(backend.allocate_group(&allocs)?);
            run.group_slots = counting;
        }
        for (s, o) in sampled.iter().enumerate() {
            if let Some(o) = o {
                let mut pmc = backend.allocate(&alloc(&specs[s], Some(o.threshold)))?;
                pmc.sample_in_process()?;
                run.samplers.push(Sampler {
                    slot: s,
                    pmc,
                    overflow: o.clone(),
                });
            }
        }
        if let Some(t) = whom.target {
            if let Some(g) = run.group.as_mut() {
                g.attach(t)?;
            }
            for (_, p) in &mut run.singles {
                p.attach(t)?;
            }
            for sm in &mut run.samplers {
                sm.pmc.attach(t)?;
            }
        }
        // Samplers first, counters last: the counted window is the innermost.
        for sm in &mut run.samplers {
            sm.pmc.start()?;
        }
        for (_, p) in &mut run.singles {
            p.start()?;
        }
        if let Some(g) = run.group.as_mut() {
            g.start()?;
        }
        self.adjust.iter_mut().for_each(|a| *a = 0);
        self.run = Some(run);
        Ok(())
    }

    fn slot_of_entry(&self, entry: usize) -> Option<usize> {
        let (_, terms) = self.slots();
        terms.get(entry).and_then(|t| t.first().copied())
    }

    /// The raw value of every slot now.
    fn raw(&self, run: &Run<B>) -> R<Vec<i64>> {
        let n = run.base.len();
        let mut out = vec![0i64; n];
        let value = |r: &Reading| -> i64 {
            let v = if run.scale {
                r.scaled().unwrap_or(0)
            } else if r.time_running == 0 && r.time_enabled > 0 {
                // Enabled but never on a counter: nothing counted.
                0
            } else {
                r.value
            };
            i64::try_from(v).unwrap_or(i64::MAX)
        };
        if let Some(g) = &run.group {
            let readings = g.read()?;
            for (i, &s) in run.group_slots.iter().enumerate() {
                if let Some(r) = readings.get(i) {
                    out[s] = value(r);
                }
            }
        }
        for (s, p) in &run.singles {
            out[*s] = value(&p.read()?);
        }
        for sm in &run.samplers {
            out[sm.slot] = value(&sm.pmc.read()?);
        }
        Ok(out)
    }

    /// Each event's count from slot values (before `adjust`).
    fn combine(&self, slot_values: &[i64]) -> Vec<i64> {
        let (_, terms) = self.slots();
        self.entries
            .iter()
            .zip(&terms)
            .map(|(e, t)| {
                t.iter().enumerate().fold(0i64, |acc, (i, &s)| {
                    acc.wrapping_add(e.derived.sign(i).wrapping_mul(slot_values[s]))
                })
            })
            .collect()
    }

    /// The counts now: running, from the counters; stopped, the kept ones.
    pub(crate) fn read(&self) -> R<Vec<i64>> {
        match &self.run {
            None => Ok(self.frozen.clone()),
            Some(run) => {
                let raw = self.raw(run)?;
                let since: Vec<i64> = raw
                    .iter()
                    .zip(&run.base)
                    .map(|(r, b)| r.wrapping_sub(*b))
                    .collect();
                Ok(self
                    .combine(&since)
                    .iter()
                    .zip(&self.adjust)
                    .map(|(v, a)| v.wrapping_add(*a))
                    .collect())
            }
        }
    }

    /// Zeroes the counts.
    pub(crate) fn reset(&mut self) -> R<()> {
        match self.run.take() {
            None => {
                self.frozen.iter_mut().for_each(|v| *v = 0);
                Ok(())
            }
            Some(mut run) => {
                let raw = self.raw(&run);
                if let Ok(raw) = &raw {
                    run.base = raw.clone();
                    self.adjust.iter_mut().for_each(|a| *a = 0);
                }
                self.run = Some(run);
                raw.map(|_| ())
            }
        }
    }

    /// Sets the counts to `values` (one per event).
    pub(crate) fn write(&mut self, values: &[i64]) -> R<()> {
        if values.len() != self.entries.len() {
            return fail(PAPI_EINVAL, "one value per event of the set");
        }
        if self.run.is_none() {
            self.frozen.copy_from_slice(values);
            return Ok(());
        }
        let now = self.read()?;
        for ((a, v), n) in self.adjust.iter_mut().zip(values).zip(&now) {
            *a = a.wrapping_add(v.wrapping_sub(*n));
        }
        Ok(())
    }

    /// Stops counting: the final counts are kept and returned, the
    /// counters released; overflow samples not yet delivered are returned
    /// as calls to make.
    pub(crate) fn stop(&mut self, set: c_int) -> R<(Vec<i64>, Vec<OverflowCall>)> {
        let Some(mut run) = self.run.take() else {
            return fail(PAPI_ENOTRUN, "the event set is not counting");
        };
        if let Some(g) = run.group.as_mut() {
            g.stop()?;
        }
        for (_, p) in &mut run.singles {
            p.stop()?;
        }
        for sm in &mut run.samplers {
            sm.pmc.stop()?;
        }
        let calls = drain(&mut run, set);
        self.run = Some(run);
        let values = self.read();
        self.run = None;
        let values = values?;
        self.frozen.clone_from(&values);
        Ok((values, calls))
    }

    /// The overflow samples delivered since the last drain, as handler calls.
    pub(crate) fn drain_overflows(&mut self, set: c_int) -> Vec<OverflowCall> {
        match self.run.as_mut() {
            Some(run) => drain(run, set),
            None => Vec::new(),
        }
    }

    /// Whether it has sampling counters (overflow) running.
    pub(crate) fn sampling(&self) -> bool {
        self.run.as_ref().is_some_and(|r| !r.samplers.is_empty())
    }
}

fn drain<B: Backend>(run: &mut Run<B>, set: c_int) -> Vec<OverflowCall> {
    let mut calls = Vec::new();
    for sm in &mut run.samplers {
        let Ok(samples) = sm.pmc.samples() else {
            continue;
        };
        let bit = 1i64.checked_shl(sm.overflow.entry as u32).unwrap_or(0);
        for s in samples {
            calls.push(OverflowCall {
                action: sm.overflow.action.clone(),
                set,
                address: s.ip,
                vector: bit,
            });
        }
    }
    calls
}

/// The privilege levels of a PAPI domain: every level (no restriction)
/// when user, kernel and supervisor are all counted.
pub(crate) fn domain_modifiers(domain: c_int) -> Modifiers {
    let user = domain & PAPI_DOM_USER != 0;
    let kernel = domain & PAPI_DOM_KERNEL != 0;
    let hv = domain & PAPI_DOM_SUPERVISOR != 0;
    if user && kernel && hv {
        Modifiers::default()
    } else {
        Modifiers {
            user,
            kernel,
            hv,
            ..Modifiers::default()
        }
    }
}

/// Checks a domain: some level PAPI can count (user, kernel, supervisor).
pub(crate) fn check_domain(domain: c_int) -> R<c_int> {
    let known = PAPI_DOM_USER | PAPI_DOM_KERNEL | PAPI_DOM_SUPERVISOR;
    if domain & !PAPI_DOM_ALL != 0 || domain & known == 0 {
        return Err(PapiError::new(
            PAPI_EINVAL,
            format!(
                "domain {domain:#x}: give PAPI_DOM_USER, PAPI_DOM_KERNEL, PAPI_DOM_SUPERVISOR \
                 or a combination (PAPI_DOM_ALL)"
            ),
        ));
    }
    // PAPI_DOM_OTHER has no meaning for these counters; PAPI's perf_event
    // component drops it the same way.
    Ok(domain & known)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(code: u32, terms: &[u32], derived: Derived) -> Entry {
        Entry {
            code,
            terms: terms.to_vec(),
            derived,
        }
    }

    #[test]
    fn events_share_slots_and_combine_by_their_derivation() {
        let mut s = EventSet::<pmc_facade::Native>::new(PAPI_DOM_USER, PAPI_GRN_THR);
        s.add(entry(0x4000_0001, &[0x4000_0001], Derived::Plain))
            .unwrap();
        s.add(entry(
            0x8000_0001,
            &[0x4000_0002, 0x4000_0001],
            Derived::Sub,
        ))
        .unwrap();
        s.add(entry(
            0x8000_0002,
            &[0x4000_0002, 0x4000_0003],
            Derived::Add,
        ))
        .unwrap();
        let (slots, terms) = s.slots();
        assert_eq!(slots, vec![0x4000_0001, 0x4000_0002, 0x4000_0003]);
        assert_eq!(terms, vec![vec![0], vec![1, 0], vec![1, 2]]);
        assert_eq!(s.combine(&[10, 100, 1000]), vec![10, 90, 1100]);
        assert_eq!(
            s.add(entry(0x4000_0001, &[0x4000_0001], Derived::Plain))
                .unwrap_err()
                .code,
            PAPI_ECNFLCT
        );
    }

    #[test]
    fn a_stopped_set_keeps_written_and_reset_counts() {
        let mut s = EventSet::<pmc_facade::Native>::new(PAPI_DOM_USER, PAPI_GRN_THR);
        s.add(entry(0x4000_0001, &[0x4000_0001], Derived::Plain))
            .unwrap();
        assert_eq!(s.read().unwrap(), vec![0]);
        s.write(&[42]).unwrap();
        assert_eq!(s.read().unwrap(), vec![42]);
        s.reset().unwrap();
        assert_eq!(s.read().unwrap(), vec![0]);
        assert_eq!(s.write(&[1, 2]).unwrap_err().code, PAPI_EINVAL);
        assert_eq!(s.stop(0).unwrap_err().code, PAPI_ENOTRUN);
        assert_eq!(s.state(), PAPI_STOPPED);
    }

    #[test]
    fn removing_an_event_moves_the_overflow_of_later_ones() {
        extern "C" fn h(_: c_int, _: *mut std::ffi::c_void, _: i64, _: *mut std::ffi::c_void) {}
        let mut s = EventSet::<pmc_facade::Native>::new(PAPI_DOM_USER, PAPI_GRN_THR);
        for c in 1..=3 {
            s.add(entry(0x4000_0000 | c, &[0x4000_0000 | c], Derived::Plain))
                .unwrap();
        }
        s.overflow.push(Overflow {
            entry: 2,
            threshold: 10,
            action: Action::Handler(h as Handler),
        });
        s.remove(0x4000_0001).unwrap();
        assert_eq!(s.overflow[0].entry, 1);
        assert_eq!(s.state(), PAPI_STOPPED | PAPI_OVERFLOWING);
        assert_eq!(s.remove(0x4000_0001).unwrap_err().code, PAPI_EINVAL);
    }

    #[test]
    fn profile_buckets_follow_profil() {
        let p = Profile {
            regions: vec![
                ProfRegion {
                    base: 0,
                    size: 100,
                    offset: 0x1000,
                    scale: 0x10000,
                },
                ProfRegion {
                    base: 0,
                    size: 2,
                    offset: 0,
                    scale: 2,
                },
            ],
            flags: PAPI_PROFIL_BUCKET_16,
        };
        // Full scale: one 16-bit bucket per two bytes of code.
        assert_eq!(p.bucket(0x1000), Some((0, 0)));
        assert_eq!(p.bucket(0x1003), Some((0, 1)));
        assert_eq!(p.bucket(0x1000 + 98), Some((0, 49)));
        // Past the buffer, or below it: the overflow bin.
        assert_eq!(p.bucket(0x1000 + 100), Some((1, 0)));
        assert_eq!(p.bucket(0x10), Some((1, 0)));
        let q = Profile {
            regions: vec![p.regions[0]],
            flags: PAPI_PROFIL_BUCKET_32,
        };
        assert_eq!(q.bucket_bytes(), 4);
        assert_eq!(q.bucket(0x1000 + 98), None, "25 buckets of 4 bytes");
        assert_eq!(q.bucket(0x1000 + 48), Some((0, 24)));
    }

    #[test]
    fn domains_become_privilege_modifiers() {
        assert_eq!(domain_modifiers(PAPI_DOM_ALL), Modifiers::default());
        let u = domain_modifiers(PAPI_DOM_USER);
        assert!(u.user && !u.kernel && !u.hv);
        assert_eq!(check_domain(PAPI_DOM_ALL).unwrap(), 0xb);
        assert_eq!(check_domain(PAPI_DOM_OTHER).unwrap_err().code, PAPI_EINVAL);
        assert_eq!(check_domain(0x100).unwrap_err().code, PAPI_EINVAL);
    }
}
