//! The library's global state and the operations behind the low-level API,
//! in safe Rust: the backend `PAPI_library_init` opens, the event tables,
//! the event sets by id, the defaults, the threads. `sys/` converts the C
//! arguments and results around these.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{c_int, c_ulong};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Mutex, MutexGuard};

use pmc_facade::{Allocation, Backend, EventSpec, Native, Pmc, Target};

use crate::abi::*;
use crate::error::{fail, PapiError, R};
use crate::eventset::{self, Action, Entry, EventSet, Overflow, OverflowCall, Whom, MAX_EVENTS};
use crate::natives::{self, Natives};
use crate::presets::{self, Derived, Presets};

/// The one component's index.
pub(crate) const CIDX: c_int = 0;
/// Its name, as `papi_component_avail` prints it.
pub(crate) const COMPONENT_NAME: &str = "pmc";

/// `PAPI_is_initialized`'s bits, readable without the lock.
static INIT_LEVEL: AtomicI32 = AtomicI32::new(PAPI_NOT_INITED);

/// `PAPI_set_debug`'s level.
static DEBUG: AtomicI32 = AtomicI32::new(PAPI_QUIET);

/// Sets `PAPI_set_debug`'s level.
pub(crate) fn set_debug(level: c_int) {
    DEBUG.store(level, Ordering::SeqCst);
}

/// `PAPI_set_debug`'s level.
pub(crate) fn debug() -> c_int {
    DEBUG.load(Ordering::SeqCst)
}

/// `PAPI_disable_component(0)` was called (before `PAPI_library_init`).
static DISABLED: AtomicBool = AtomicBool::new(false);

/// `PAPI_disable_component`: only before `PAPI_library_init`, as PAPI's.
pub(crate) fn disable_component(cidx: c_int) -> R<()> {
    check_cidx(cidx)?;
    if init_level() != PAPI_NOT_INITED {
        return fail(
            PAPI_ENOINIT,
            "PAPI_disable_component works only before PAPI_library_init",
        );
    }
    DISABLED.store(true, Ordering::SeqCst);
    Ok(())
}

/// The library.
pub(crate) struct Lib<B: Backend = Native> {
    /// The backend, or why it could not be opened (the component is then
    /// disabled, as PAPI disables a component whose init fails).
    pub backend: Result<B, (c_int, String)>,
    /// The native events.
    pub natives: Natives,
    /// The presets' mappings, once the natives are listed.
    pub presets: Option<Presets>,
    /// Event sets by id (`None`: destroyed; ids are reused, as PAPI's are).
    sets: Vec<Option<EventSet<B>>>,
    /// Defaults for new sets.
    pub def_domain: c_int,
    pub def_granularity: c_int,
    /// `PAPI_multiplex_init` was called.
    pub multiplex_inited: bool,
    /// `PAPI_thread_init`'s function, as an address.
    pub thread_fn: Option<crate::sys::ThreadIdFn>,
    /// Threads PAPI knows (`PAPI_register_thread`, or implicitly).
    pub threads: BTreeSet<c_ulong>,
    /// Thread-specific data, by thread id and tag.
    pub thread_data: BTreeMap<c_ulong, [usize; PAPI_NUM_TLS as usize]>,
    /// The thread-granularity set running in each OS thread.
    running: BTreeMap<u64, c_int>,
    /// The multiplexing interval (ns), as set; the kernel rotates on its own tick.
    pub mpx_ns: c_int,
    /// Hardware counters, once measured (`info::hardware_counters`).
    pub counters: Option<c_int>,
}

static LIB: Mutex<Option<Lib<Native>>> = Mutex::new(None);

fn lock() -> MutexGuard<'static, Option<Lib<Native>>> {
    // A panic while holding the lock was caught at the boundary; each
    // operation leaves the state consistent before it can fail.
    LIB.lock().unwrap_or_else(|p| p.into_inner())
}

fn not_initialized() -> PapiError {
    PapiError::new(
        PAPI_ENOINIT,
        "PAPI is not initialized: call PAPI_library_init(PAPI_VER_CURRENT) first",
    )
}

/// Runs `f` on the initialized library.
pub(crate) fn with_lib<T>(f: impl FnOnce(&mut Lib<Native>) -> R<T>) -> R<T> {
    let mut g = lock();
    match g.as_mut() {
        Some(lib) => f(lib),
        None => Err(not_initialized()),
    }
}

/// Whether a backend counts processes only (FreeBSD's hwpmc), not threads.
fn counts_processes<B: Backend>(backend: &B) -> bool {
    backend.name().starts_with("freebsd")
}

/// The granularities this component counts (on this OS, before a backend is open).
pub(crate) fn available_granularities() -> c_int {
    granularities(cfg!(target_os = "freebsd"))
}

/// The default granularity (on this OS, before a backend is open).
pub(crate) fn default_granularity() -> c_int {
    default_granularity_of(cfg!(target_os = "freebsd"))
}

fn granularities(processes_only: bool) -> c_int {
    if processes_only {
        PAPI_GRN_PROC | PAPI_GRN_SYS | PAPI_GRN_SYS_CPU
    } else {
        PAPI_GRN_THR | PAPI_GRN_PROC | PAPI_GRN_SYS | PAPI_GRN_SYS_CPU
    }
}

fn default_granularity_of(processes_only: bool) -> c_int {
    if processes_only {
        PAPI_GRN_PROC
    } else {
        PAPI_GRN_THR
    }
}

/// The domains this component counts.
pub(crate) const AVAILABLE_DOMAINS: c_int = PAPI_DOM_USER | PAPI_DOM_KERNEL | PAPI_DOM_SUPERVISOR;

/// `PAPI_library_init`: whether this call initialized the library (the
/// caller returns `PAPI_VER_CURRENT` either way).
pub(crate) fn library_init(version: c_int) -> R<bool> {
    if version != PAPI_VER_CURRENT {
        return fail(
            PAPI_EINVAL,
            format!(
                "PAPI_library_init({version:#x}): this library is PAPI {}.{} \
                 (PAPI_VER_CURRENT {PAPI_VER_CURRENT:#x}); rebuild against its papi.h",
                PAPI_VERSION >> 24,
                (PAPI_VERSION >> 16) & 0xff
            ),
        );
    }
    let mut g = lock();
    if g.is_none() {
        let backend = if DISABLED.load(Ordering::SeqCst) {
            Err((
                PAPI_ECMP_DISABLED,
                "disabled by PAPI_disable_component before PAPI_library_init".to_owned(),
            ))
        } else {
            Native::open().map_err(|e| (PAPI_ECMP, e.to_string()))
        };
        *g = Some(Lib::new(backend));
        INIT_LEVEL.fetch_or(PAPI_LOW_LEVEL_INITED, Ordering::SeqCst);
        return Ok(true);
    }
    Ok(false)
}

/// `PAPI_is_initialized`.
pub(crate) fn init_level() -> c_int {
    INIT_LEVEL.load(Ordering::SeqCst)
}

/// Marks a level of initialization (the high-level API's).
pub(crate) fn add_init_level(bits: c_int) {
    INIT_LEVEL.fetch_or(bits, Ordering::SeqCst);
}

/// `PAPI_shutdown`: stops and frees every set, forgets the library.
pub(crate) fn shutdown() {
    let lib = lock().take();
    INIT_LEVEL.store(PAPI_NOT_INITED, Ordering::SeqCst);
    // Counters are released as the sets drop, outside the lock.
    drop(lib);
}

impl<B: Backend> Lib<B> {
    /// A library over `backend` (or disabled, with the code and reason).
    pub(crate) fn new(backend: Result<B, (c_int, String)>) -> Lib<B> {
        let processes_only = backend.as_ref().is_ok_and(counts_processes);
        Lib {
            backend,
            natives: Natives::default(),
            presets: None,
            sets: Vec::new(),
            def_domain: PAPI_DOM_USER,
            def_granularity: default_granularity_of(processes_only),
            multiplex_inited: false,
            thread_fn: None,
            threads: BTreeSet::new(),
            thread_data: BTreeMap::new(),
            running: BTreeMap::new(),
            mpx_ns: 10_000_000,
            counters: None,
        }
    }

    /// Whether the backend counts processes only (FreeBSD's hwpmc).
    fn processes_only(&self) -> bool {
        self.backend.as_ref().is_ok_and(counts_processes)
    }

    /// The granularities this library's backend counts.
    pub(crate) fn granularities(&self) -> c_int {
        granularities(self.processes_only())
    }

    /// Checks a granularity against what the backend counts.
    fn check_granularity(&self, g: c_int) -> R<()> {
        if g.count_ones() != 1 || g & self.granularities() == 0 {
            return fail(
                PAPI_EINVAL,
                format!(
                    "granularity {g:#x} is not one this component counts ({:#x})",
                    self.granularities()
                ),
            );
        }
        Ok(())
    }

    /// Whom a thread-granularity set counts: the calling thread, or the
    /// whole process where the backend counts processes only.
    pub(crate) fn thread_target(&self) -> Target {
        if self.processes_only() {
            Target::Current
        } else {
            Target::CurrentThread
        }
    }

    /// The backend, or `PAPI_ECMP` when the component is disabled.
    pub(crate) fn backend(&self) -> R<&B> {
        self.backend.as_ref().map_err(|(code, why)| {
            PapiError::new(*code, format!("the pmc component is disabled: {why}"))
        })
    }

    /// Lists the native events (once) and maps the presets.
    pub(crate) fn ensure_listed(&mut self) {
        if self.natives.is_listed() {
            return;
        }
        let listing = match &self.backend {
            Ok(b) => b.list_events(false),
            Err(_) => Vec::new(),
        };
        self.natives.fill(&listing);
        let Lib {
            natives, backend, ..
        } = self;
        let mut probe = |s: &EventSpec| backend.as_ref().is_ok_and(|b| probe(b, s));
        let presets = Presets::build(&mut |term| natives.resolve(term, &mut probe));
        self.presets = Some(presets);
    }

    /// The presets' mappings (listing the natives first).
    pub(crate) fn presets(&mut self) -> &Presets {
        self.ensure_listed();
        self.presets.get_or_insert_with(Presets::default)
    }

    /// An event set by id.
    pub(crate) fn set(&mut self, id: c_int) -> R<&mut EventSet<B>> {
        usize::try_from(id)
            .ok()
            .and_then(|i| self.sets.get_mut(i))
            .and_then(Option::as_mut)
            .ok_or_else(|| PapiError::new(PAPI_ENOEVST, format!("no event set {id}")))
    }

    /// The code of an event name: a preset, or a native event (listing the
    /// natives and probing pmc's own names as needed).
    pub(crate) fn name_to_code(&mut self, name: &str) -> R<u32> {
        self.ensure_listed();
        if name.len() > 5 && name[..5].eq_ignore_ascii_case("PAPI_") {
            if let Some(i) = presets::index(name) {
                return Ok(PAPI_PRESET_MASK | i as u32);
            }
        }
        let Lib {
            natives, backend, ..
        } = self;
        let mut probe = |s: &EventSpec| backend.as_ref().is_ok_and(|b| probe(b, s));
        natives.resolve(name, &mut probe).ok_or_else(|| {
            PapiError::new(
                PAPI_ENOEVNT,
                format!(
                    "no event {name:?} here: papi_native_avail lists the native events and \
                     papi_avail the presets"
                ),
            )
        })
    }

    /// The terms of an event code that can be counted here, as a set entry.
    pub(crate) fn entry(&mut self, code: u32) -> R<Entry> {
        self.ensure_listed();
        if code & PAPI_PRESET_MASK != 0 && code & PAPI_NATIVE_MASK == 0 {
            let i = (code & !PAPI_PRESET_MASK) as usize;
            if presets::def(i).is_none() {
                return fail(PAPI_ENOTPRESET, format!("{code:#x} is not a preset"));
            }
            return match self.presets().get(i) {
                Some(m) => Ok(Entry {
                    code,
                    terms: m.codes.clone(),
                    derived: m.derived,
                }),
                None => fail(
                    PAPI_ENOEVNT,
                    format!(
                        "preset {} cannot be counted here (papi_avail lists those that can)",
                        presets::def(i).map_or("?", |d| d.name)
                    ),
                ),
            };
        }
        if natives::index_of(code).is_some() {
            if self.natives.get(code).is_none() {
                return fail(PAPI_ENOEVNT, format!("no native event {code:#x}"));
            }
            return Ok(Entry {
                code,
                terms: vec![code],
                derived: Derived::Plain,
            });
        }
        fail(
            PAPI_EINVAL,
            format!("{code:#x} is neither a preset (0x8...) nor a native (0x4...) event code"),
        )
    }

    /// A slot's event with its privilege levels: the name's own
    /// modifiers, else the set's domain.
    fn slot_spec(&self, code: u32, set_modifiers: pmc_facade::Modifiers) -> R<EventSpec> {
        let n = self
            .natives
            .get(code)
            .ok_or_else(|| PapiError::new(PAPI_EBUG, format!("native {code:#x} vanished")))?;
        // The privilege levels: the name's own, else the set's domain; the
        // event's other modifiers (precision, pinning) as it was named.
        let mut spec = n.spec.clone();
        let levels = n.modifiers.unwrap_or(set_modifiers);
        spec.modifiers.user = levels.user;
        spec.modifiers.kernel = levels.kernel;
        spec.modifiers.hv = levels.hv;
        Ok(spec)
    }
}

/// Whether pmc can count `spec` here: allocated, attached to the calling
/// thread (process on FreeBSD) and released.
pub(crate) fn probe<B: Backend>(backend: &B, spec: &EventSpec) -> bool {
    let Ok(mut pmc) = backend.allocate(&Allocation::counting(spec.clone())) else {
        return false;
    };
    let target = if counts_processes(backend) {
        Target::Current
    } else {
        Target::CurrentThread
    };
    let ok = pmc.attach(target).is_ok();
    drop(pmc);
    ok
}

/// Whether a group of `specs` is scheduled together on the calling thread:
/// started and read at once, every member ran (a group larger than the
/// hardware's counters never does). Only asked of sets counting the
/// calling thread, where PAPI's perf_event component asks it too.
fn group_fits<B: Backend>(backend: &B, target: Target, specs: &[EventSpec]) -> R<bool> {
    use pmc_facade::Group;
    let allocs: Vec<Allocation> = specs.iter().cloned().map(Allocation::counting).collect();
    let mut g = backend.allocate_group(&allocs)?;
    g.attach(target)?;
    g.start()?;
    let r = g.read()?;
    let _ = g.stop();
    Ok(r.iter().all(|r| r.time_running > 0 || r.time_enabled == 0))
}

/// The kinds of events whose counters are not scarce: a kernel software
/// event or tracepoint never makes a group unschedulable.
fn is_software(spec: &EventSpec) -> bool {
    use pmc_facade::event::EventSource as S;
    match &spec.source {
        S::Portable(p) => !p.is_hardware(),
        S::Generic(g) => matches!(
            g.to_ascii_lowercase().as_str(),
            "minor-faults"
                | "major-faults"
                | "alignment-faults"
                | "emulation-faults"
                | "cgroup-switches"
                | "dummy"
                | "bpf-output"
        ),
        S::Tracepoint { .. } => true,
        _ => false,
    }
}

/// `PAPI_create_eventset`: a new set's id.
pub(crate) fn create_eventset() -> R<c_int> {
    with_lib(|lib| lib.create_eventset())
}

/// `PAPI_destroy_eventset`: frees an empty, stopped set.
pub(crate) fn destroy_eventset(id: c_int) -> R<()> {
    with_lib(|lib| lib.destroy_eventset(id))
}

/// `PAPI_assign_eventset_component`.
pub(crate) fn assign_component(id: c_int, cidx: c_int) -> R<()> {
    with_lib(|lib| lib.assign_component(id, cidx))
}

/// Checks a component index: only 0, pmc's.
pub(crate) fn check_cidx(cidx: c_int) -> R<()> {
    if cidx != CIDX {
        return fail(
            PAPI_ENOCMP,
            format!("no component {cidx}: this library has one, 0 ({COMPONENT_NAME})"),
        );
    }
    Ok(())
}

/// `PAPI_add_event`.
pub(crate) fn add_event(id: c_int, code: u32) -> R<()> {
    with_lib(|lib| lib.add_event(id, code))
}

/// `PAPI_remove_event`.
pub(crate) fn remove_event(id: c_int, code: u32) -> R<()> {
    with_lib(|lib| lib.remove_event(id, code))
}

/// `PAPI_cleanup_eventset`.
pub(crate) fn cleanup_eventset(id: c_int) -> R<()> {
    with_lib(|lib| lib.cleanup_eventset(id))
}

/// `PAPI_list_events`: the codes, in order.
pub(crate) fn list_events(id: c_int) -> R<Vec<u32>> {
    with_lib(|lib| lib.list_events(id))
}

/// `PAPI_state`.
pub(crate) fn state(id: c_int) -> R<c_int> {
    with_lib(|lib| lib.state(id))
}

/// `PAPI_start`.
pub(crate) fn start(id: c_int) -> R<()> {
    start_impl(id, true)
}

/// Starts a set of the library's own (the high-level API's, the rates'):
/// it does not take the thread's one running set.
pub(crate) fn start_internal(id: c_int) -> R<()> {
    start_impl(id, false)
}

fn start_impl(id: c_int, exclusive: bool) -> R<()> {
    with_lib(|lib| lib.start_impl(id, exclusive))
}

/// `PAPI_stop`: the final counts, and the overflow calls still to make.
pub(crate) fn stop(id: c_int) -> R<(Vec<i64>, Vec<OverflowCall>)> {
    with_lib(|lib| lib.stop(id))
}

/// `PAPI_read`.
pub(crate) fn read(id: c_int) -> R<Vec<i64>> {
    with_lib(|lib| lib.read(id))
}

/// `PAPI_accum`: adds the counts to `values`, then zeroes them.
pub(crate) fn accum(id: c_int, values: &mut [i64]) -> R<()> {
    with_lib(|lib| lib.accum(id, values))
}

/// `PAPI_reset`.
pub(crate) fn reset(id: c_int) -> R<()> {
    with_lib(|lib| lib.reset(id))
}

/// `PAPI_write`.
pub(crate) fn write(id: c_int, values: &[i64]) -> R<()> {
    with_lib(|lib| lib.write(id, values))
}

/// How many events a set has.
pub(crate) fn num_events(id: c_int) -> R<usize> {
    with_lib(|lib| lib.num_events(id))
}

/// `PAPI_set_multiplex`.
pub(crate) fn set_multiplex(id: c_int) -> R<()> {
    with_lib(|lib| lib.set_multiplex(id))
}

/// `PAPI_get_multiplex`.
pub(crate) fn get_multiplex(id: c_int) -> R<bool> {
    with_lib(|lib| lib.get_multiplex(id))
}

/// `PAPI_attach` (`Some(tid)`) and `PAPI_detach` (`None`).
pub(crate) fn attach(id: c_int, tid: Option<u32>) -> R<()> {
    with_lib(|lib| lib.attach(id, tid))
}

/// `PAPI_CPU_ATTACH`.
pub(crate) fn cpu_attach(id: c_int, cpu: u32) -> R<()> {
    with_lib(|lib| lib.cpu_attach(id, cpu))
}

/// `PAPI_set_opt(PAPI_DOMAIN)`.
pub(crate) fn set_set_domain(id: c_int, domain: c_int) -> R<()> {
    with_lib(|lib| lib.set_set_domain(id, domain))
}

/// `PAPI_set_opt(PAPI_GRANUL)`.
pub(crate) fn set_set_granularity(id: c_int, g: c_int) -> R<()> {
    with_lib(|lib| lib.set_set_granularity(id, g))
}

/// `PAPI_set_domain` / `PAPI_DEFDOM`.
pub(crate) fn set_default_domain(domain: c_int) -> R<()> {
    with_lib(|lib| lib.set_default_domain(domain))
}

/// `PAPI_set_granularity` / `PAPI_DEFGRN`.
pub(crate) fn set_default_granularity(g: c_int) -> R<()> {
    with_lib(|lib| lib.set_default_granularity(g))
}

/// `PAPI_set_opt(PAPI_INHERIT)`.
pub(crate) fn set_inherit(id: c_int, inherit: bool) -> R<()> {
    with_lib(|lib| lib.set_inherit(id, inherit))
}

/// A set's options, as `PAPI_get_opt` reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SetOptions {
    pub domain: c_int,
    pub granularity: c_int,
    pub attach: Option<u32>,
    pub cpu: Option<u32>,
    pub inherit: bool,
    pub multiplex: bool,
}

/// A set's options.
pub(crate) fn set_options(id: c_int) -> R<SetOptions> {
    with_lib(|lib| lib.set_options(id))
}

/// `PAPI_overflow`.
pub(crate) fn overflow(
    id: c_int,
    code: u32,
    threshold: c_int,
    handler: Option<eventset::Handler>,
) -> R<()> {
    with_lib(|lib| lib.overflow(id, code, threshold, handler))
}

/// `PAPI_sprofil` (and `PAPI_profil`, one region): a histogram of the
/// addresses where `code` overflows every `threshold` counts (0: off).
pub(crate) fn profile(
    id: c_int,
    code: u32,
    threshold: c_int,
    regions: Vec<eventset::ProfRegion>,
    flags: c_int,
) -> R<()> {
    with_lib(|lib| lib.profile(id, code, threshold, regions, flags))
}

/// `PAPI_get_overflow_event_index`: the positions of the events whose bits are set.
pub(crate) fn overflow_indices(id: c_int, vector: i64) -> R<Vec<c_int>> {
    with_lib(|lib| lib.overflow_indices(id, vector))
}

/// The overflow calls pending on every running set (the poller's round);
/// `None` when no set samples any more.
pub(crate) fn pending_overflows() -> Option<Vec<OverflowCall>> {
    let mut g = lock();
    let lib = g.as_mut()?;
    let mut calls = Vec::new();
    let mut any = false;
    for (id, s) in lib.sets.iter_mut().enumerate() {
        if let Some(s) = s.as_mut() {
            if s.sampling() {
                any = true;
                calls.extend(s.drain_overflows(id as c_int));
            }
        }
    }
    any.then_some(calls)
}

/// The number of events a set may hold, and of hardware counters.
pub(crate) fn max_events() -> usize {
    MAX_EVENTS
}

/// Registers the calling thread under `id`.
pub(crate) fn register_thread(id: c_ulong) -> R<()> {
    with_lib(|lib| lib.register_thread(id))
}

/// Forgets the calling thread.
pub(crate) fn unregister_thread(id: c_ulong) -> R<()> {
    with_lib(|lib| lib.unregister_thread(id))
}

impl<B: Backend> Lib<B> {
    /// `PAPI_create_eventset`: a new set's id.
    pub(crate) fn create_eventset(&mut self) -> R<c_int> {
        let lib = self;
        {
            let set = EventSet::new(lib.def_domain, lib.def_granularity);
            let id = match lib.sets.iter().position(Option::is_none) {
                Some(i) => {
                    lib.sets[i] = Some(set);
                    i
                }
                None => {
                    lib.sets.push(Some(set));
                    lib.sets.len() - 1
                }
            };
            c_int::try_from(id).map_err(|_| PapiError::new(PAPI_ENOMEM, "too many event sets"))
        }
    }

    /// `PAPI_destroy_eventset`: frees an empty, stopped set.
    pub(crate) fn destroy_eventset(&mut self, id: c_int) -> R<()> {
        let lib = self;
        {
            let set = lib.set(id)?;
            set.not_running("PAPI_destroy_eventset")?;
            if !set.entries.is_empty() {
                return fail(
                    PAPI_EINVAL,
                    "the event set still has events: call PAPI_cleanup_eventset first",
                );
            }
            lib.sets[id as usize] = None;
            Ok(())
        }
    }

    /// `PAPI_assign_eventset_component`.
    pub(crate) fn assign_component(&mut self, id: c_int, cidx: c_int) -> R<()> {
        let lib = self;
        {
            check_cidx(cidx)?;
            let set = lib.set(id)?;
            set.not_running("PAPI_assign_eventset_component")?;
            if !set.entries.is_empty() {
                return fail(
                    PAPI_EINVAL,
                    "the event set already has events (and so its component): assign it first",
                );
            }
            set.cidx = Some(cidx);
            Ok(())
        }
    }

    /// `PAPI_add_event`.
    pub(crate) fn add_event(&mut self, id: c_int, code: u32) -> R<()> {
        let lib = self;
        {
            lib.set(id)?.not_running("PAPI_add_event")?;
            let entry = lib.entry(code)?;
            lib.backend()?;
            // A set counting the calling thread checks, as PAPI's perf_event
            // component does, that its hardware events are scheduled together.
            let set = lib.set(id)?;
            let check = !set.multiplex
                && set.attach.is_none()
                && set.cpu.is_none()
                && set.granularity == PAPI_GRN_THR;
            if check {
                let modifiers = set.modifiers();
                let mut codes = set.slots().0;
                for t in &entry.terms {
                    if !codes.contains(t) {
                        codes.push(*t);
                    }
                }
                let specs: Vec<EventSpec> = codes
                    .iter()
                    .map(|&c| lib.slot_spec(c, modifiers))
                    .collect::<R<_>>()?;
                if specs.len() > 1 && !specs.iter().all(is_software) {
                    let target = lib.thread_target();
                    let fits = group_fits(lib.backend()?, target, &specs)?;
                    if !fits {
                        return fail(
                            PAPI_ECNFLCT,
                            "the event set's hardware events do not fit on the counters together: \
                             use PAPI_set_multiplex, or fewer events",
                        );
                    }
                }
            }
            let set = lib.set(id)?;
            set.cidx.get_or_insert(CIDX);
            set.add(entry)
        }
    }

    /// `PAPI_remove_event`.
    pub(crate) fn remove_event(&mut self, id: c_int, code: u32) -> R<()> {
        let lib = self;
        lib.set(id)?.remove(code)
    }

    /// `PAPI_cleanup_eventset`.
    pub(crate) fn cleanup_eventset(&mut self, id: c_int) -> R<()> {
        let lib = self;
        lib.set(id)?.cleanup()
    }

    /// `PAPI_list_events`: the codes, in order.
    pub(crate) fn list_events(&mut self, id: c_int) -> R<Vec<u32>> {
        let lib = self;
        Ok(lib.set(id)?.entries.iter().map(|e| e.code).collect())
    }

    /// `PAPI_state`.
    pub(crate) fn state(&mut self, id: c_int) -> R<c_int> {
        let lib = self;
        Ok(lib.set(id)?.state())
    }

    /// `PAPI_stop`: the final counts, and the overflow calls still to make.
    pub(crate) fn stop(&mut self, id: c_int) -> R<(Vec<i64>, Vec<OverflowCall>)> {
        let lib = self;
        {
            let set = lib.set(id)?;
            let thread = set.run.as_ref().and_then(|r| r.thread);
            let out = set.stop(id)?;
            if let Some(t) = thread {
                if lib.running.get(&t) == Some(&id) {
                    lib.running.remove(&t);
                }
            }
            Ok(out)
        }
    }

    /// `PAPI_read`.
    pub(crate) fn read(&mut self, id: c_int) -> R<Vec<i64>> {
        let lib = self;
        lib.set(id)?.read()
    }

    /// `PAPI_accum`: adds the counts to `values`, then zeroes them.
    pub(crate) fn accum(&mut self, id: c_int, values: &mut [i64]) -> R<()> {
        let lib = self;
        {
            let set = lib.set(id)?;
            let now = set.read()?;
            for (v, n) in values.iter_mut().zip(&now) {
                *v = v.wrapping_add(*n);
            }
            set.reset()
        }
    }

    /// `PAPI_reset`.
    pub(crate) fn reset(&mut self, id: c_int) -> R<()> {
        let lib = self;
        lib.set(id)?.reset()
    }

    /// `PAPI_write`.
    pub(crate) fn write(&mut self, id: c_int, values: &[i64]) -> R<()> {
        let lib = self;
        lib.set(id)?.write(values)
    }

    /// How many events a set has.
    pub(crate) fn num_events(&mut self, id: c_int) -> R<usize> {
        let lib = self;
        Ok(lib.set(id)?.entries.len())
    }

    /// `PAPI_set_multiplex`.
    pub(crate) fn set_multiplex(&mut self, id: c_int) -> R<()> {
        let lib = self;
        {
            let set = lib.set(id)?;
            set.not_running("PAPI_set_multiplex")?;
            if set.multiplex {
                return fail(PAPI_EINVAL, "the event set is already multiplexed");
            }
            if set.cidx.is_none() {
                return fail(
                    PAPI_ENOCMP,
                    "the event set has no component yet: add an event or call \
                     PAPI_assign_eventset_component first",
                );
            }
            if !set.overflow.is_empty() {
                return fail(
                    PAPI_ECOMBO,
                    "an overflowing event set cannot be multiplexed",
                );
            }
            set.multiplex = true;
            Ok(())
        }
    }

    /// `PAPI_get_multiplex`.
    pub(crate) fn get_multiplex(&mut self, id: c_int) -> R<bool> {
        let lib = self;
        Ok(lib.set(id)?.multiplex)
    }

    /// `PAPI_attach` (`Some(tid)`) and `PAPI_detach` (`None`).
    pub(crate) fn attach(&mut self, id: c_int, tid: Option<u32>) -> R<()> {
        let lib = self;
        {
            let set = lib.set(id)?;
            set.not_running(if tid.is_some() {
                "PAPI_attach"
            } else {
                "PAPI_detach"
            })?;
            match tid {
                Some(0) => fail(PAPI_EINVAL, "PAPI_attach: 0 is not a thread or process id"),
                Some(t) => {
                    if set.cpu.is_some() {
                        return fail(PAPI_ECOMBO, "the event set is attached to a CPU");
                    }
                    set.cidx.get_or_insert(CIDX);
                    set.attach = Some(t);
                    Ok(())
                }
                None => {
                    if set.attach.take().is_none() {
                        return fail(PAPI_EINVAL, "PAPI_detach: the event set is not attached");
                    }
                    Ok(())
                }
            }
        }
    }

    /// `PAPI_CPU_ATTACH`.
    pub(crate) fn cpu_attach(&mut self, id: c_int, cpu: u32) -> R<()> {
        let lib = self;
        {
            let set = lib.set(id)?;
            set.not_running("PAPI_set_opt(PAPI_CPU_ATTACH)")?;
            if set.attach.is_some() {
                return fail(PAPI_ECOMBO, "the event set is attached to a thread");
            }
            let n = crate::hwinfo::cpus_configured();
            if cpu >= n {
                return fail(PAPI_EINVAL, format!("no CPU {cpu}: this machine has {n}"));
            }
            set.cidx.get_or_insert(CIDX);
            set.cpu = Some(cpu);
            Ok(())
        }
    }

    /// `PAPI_set_opt(PAPI_DOMAIN)`.
    pub(crate) fn set_set_domain(&mut self, id: c_int, domain: c_int) -> R<()> {
        let lib = self;
        let d = eventset::check_domain(domain)?;
        {
            let set = lib.set(id)?;
            set.not_running("PAPI_set_opt(PAPI_DOMAIN)")?;
            set.domain = d;
            Ok(())
        }
    }

    /// `PAPI_set_opt(PAPI_GRANUL)`.
    pub(crate) fn set_set_granularity(&mut self, id: c_int, g: c_int) -> R<()> {
        let lib = self;
        lib.check_granularity(g)?;
        {
            let set = lib.set(id)?;
            set.not_running("PAPI_set_opt(PAPI_GRANUL)")?;
            set.granularity = g;
            Ok(())
        }
    }

    /// `PAPI_set_domain` / `PAPI_DEFDOM`.
    pub(crate) fn set_default_domain(&mut self, domain: c_int) -> R<()> {
        let lib = self;
        let d = eventset::check_domain(domain)?;
        {
            lib.def_domain = d;
            Ok(())
        }
    }

    /// `PAPI_set_granularity` / `PAPI_DEFGRN`.
    pub(crate) fn set_default_granularity(&mut self, g: c_int) -> R<()> {
        let lib = self;
        lib.check_granularity(g)?;
        {
            lib.def_granularity = g;
            Ok(())
        }
    }

    /// `PAPI_set_opt(PAPI_INHERIT)`.
    pub(crate) fn set_inherit(&mut self, id: c_int, inherit: bool) -> R<()> {
        let lib = self;
        {
            let set = lib.set(id)?;
            set.not_running("PAPI_set_opt(PAPI_INHERIT)")?;
            set.inherit = inherit;
            Ok(())
        }
    }

    /// A set's options.
    pub(crate) fn set_options(&mut self, id: c_int) -> R<SetOptions> {
        let lib = self;
        {
            let s = lib.set(id)?;
            Ok(SetOptions {
                domain: s.domain,
                granularity: s.granularity,
                attach: s.attach,
                cpu: s.cpu,
                inherit: s.inherit,
                multiplex: s.multiplex,
            })
        }
    }

    /// `PAPI_overflow`.
    pub(crate) fn overflow(
        &mut self,
        id: c_int,
        code: u32,
        threshold: c_int,
        handler: Option<eventset::Handler>,
    ) -> R<()> {
        let lib = self;
        {
            let set = lib.set(id)?;
            set.not_running("PAPI_overflow")?;
            let Some(entry) = set.position(code) else {
                return fail(
                    PAPI_ENOEVNT,
                    format!("event {code:#x} is not in the event set: add it first"),
                );
            };
            if threshold < 0 {
                return fail(PAPI_EINVAL, "PAPI_overflow: the threshold is negative");
            }
            if threshold == 0 {
                set.overflow.retain(|o| o.entry != entry);
                return Ok(());
            }
            let Some(handler) = handler else {
                return fail(PAPI_EINVAL, "PAPI_overflow: a threshold needs a handler");
            };
            if set.multiplex {
                return fail(PAPI_ECOMBO, "a multiplexed event set cannot overflow");
            }
            if set.entries[entry].derived != Derived::Plain {
                return fail(
                    PAPI_EINVAL,
                    "a derived preset cannot overflow: choose a preset of one native event",
                );
            }
            set.overflow.retain(|o| o.entry != entry);
            set.overflow.push(Overflow {
                entry,
                threshold: threshold as u64,
                action: Action::Handler(handler),
            });
            Ok(())
        }
    }

    /// `PAPI_sprofil` (and `PAPI_profil`, one region): a histogram of the
    /// addresses where `code` overflows every `threshold` counts (0: off).
    pub(crate) fn profile(
        &mut self,
        id: c_int,
        code: u32,
        threshold: c_int,
        regions: Vec<eventset::ProfRegion>,
        flags: c_int,
    ) -> R<()> {
        let lib = self;
        let known = PAPI_PROFIL_RANDOM
            | PAPI_PROFIL_WEIGHTED
            | PAPI_PROFIL_COMPRESS
            | PAPI_PROFIL_BUCKET_16
            | PAPI_PROFIL_BUCKET_32
            | PAPI_PROFIL_BUCKET_64
            | PAPI_PROFIL_FORCE_SW
            | PAPI_PROFIL_DATA_EAR
            | PAPI_PROFIL_INST_EAR;
        {
            let set = lib.set(id)?;
            set.not_running("PAPI_profil")?;
            let Some(entry) = set.position(code) else {
                return fail(
                    PAPI_ENOEVNT,
                    format!("event {code:#x} is not in the event set: add it first"),
                );
            };
            if threshold < 0 || flags & !known != 0 {
                return fail(
                    PAPI_EINVAL,
                    "PAPI_profil: negative threshold or unknown flags",
                );
            }
            if threshold == 0 {
                set.overflow.retain(|o| o.entry != entry);
                return Ok(());
            }
            let buckets =
                flags & (PAPI_PROFIL_BUCKET_16 | PAPI_PROFIL_BUCKET_32 | PAPI_PROFIL_BUCKET_64);
            if buckets.count_ones() > 1 {
                return fail(PAPI_EINVAL, "PAPI_profil: give one bucket size");
            }
            if flags & (PAPI_PROFIL_DATA_EAR | PAPI_PROFIL_INST_EAR) != 0 {
                return fail(
                    PAPI_ENOSUPP,
                    "event address registers (Itanium's EARs) are not available; profile by PC",
                );
            }
            if regions.is_empty() || regions.iter().any(|r| r.base == 0 && r.size > 0) {
                return fail(PAPI_EINVAL, "PAPI_profil: a profile buffer is NULL");
            }
            if set.multiplex {
                return fail(PAPI_ECOMBO, "a multiplexed event set cannot be profiled");
            }
            if set.entries[entry].derived != Derived::Plain {
                return fail(PAPI_EINVAL, "a derived preset cannot be profiled");
            }
            set.overflow.retain(|o| o.entry != entry);
            set.overflow.push(Overflow {
                entry,
                threshold: threshold as u64,
                action: Action::Profile(std::sync::Arc::new(eventset::Profile { regions, flags })),
            });
            Ok(())
        }
    }

    /// `PAPI_get_overflow_event_index`: the positions of the events whose bits are set.
    pub(crate) fn overflow_indices(&mut self, id: c_int, vector: i64) -> R<Vec<c_int>> {
        let lib = self;
        {
            let set = lib.set(id)?;
            if set.overflow.is_empty() {
                return fail(
                    PAPI_EINVAL,
                    "the event set does not overflow (PAPI_overflow)",
                );
            }
            if vector == 0 {
                return fail(PAPI_EINVAL, "the overflow vector is empty");
            }
            let mut out: Vec<c_int> = set
                .overflow
                .iter()
                .filter(|o| matches!(o.action, Action::Handler(_)))
                .filter(|o| o.entry < 64 && vector & (1i64 << o.entry) != 0)
                .map(|o| o.entry as c_int)
                .collect();
            out.sort_unstable();
            Ok(out)
        }
    }

    /// Registers the calling thread under `id`.
    pub(crate) fn register_thread(&mut self, id: c_ulong) -> R<()> {
        let lib = self;
        {
            lib.threads.insert(id);
            Ok(())
        }
    }

    /// Forgets the calling thread.
    pub(crate) fn unregister_thread(&mut self, id: c_ulong) -> R<()> {
        let lib = self;
        {
            lib.threads.remove(&id);
            lib.thread_data.remove(&id);
            Ok(())
        }
    }

    pub(crate) fn start_impl(&mut self, id: c_int, exclusive: bool) -> R<()> {
        let lib = self;
        {
            let set = lib.set(id)?;
            if set.running() {
                return fail(PAPI_EISRUN, "the event set is already counting");
            }
            if set.entries.is_empty() {
                if set.cidx.is_none() {
                    return fail(PAPI_ENOCMP, "the event set has no events and no component");
                }
                return fail(PAPI_EINVAL, "the event set has no events; add some first");
            }
            let target = lib.thread_target();
            let set = lib.set(id)?;
            let whom: Whom = set.whom(target);
            // PAPI's rule: one running set per thread (sets attached elsewhere aside).
            let thread = (exclusive && set.attach.is_none() && whom.target.is_some())
                .then(crate::sys::os::thread_id);
            if let Some(t) = thread {
                if let Some(&other) = lib.running.get(&t) {
                    if other != id {
                        return fail(
                            PAPI_EISRUN,
                            format!(
                                "event set {other} already counts this thread: stop it first \
                                 (one running event set per thread)"
                            ),
                        );
                    }
                }
            }
            let set = lib.set(id)?;
            let modifiers = set.modifiers();
            let (slots, _) = set.slots();
            let specs: Vec<EventSpec> = slots
                .iter()
                .map(|&c| lib.slot_spec(c, modifiers))
                .collect::<R<_>>()?;
            let Lib {
                backend,
                sets,
                running,
                ..
            } = lib;
            let backend = backend.as_ref().map_err(|(code, why)| {
                PapiError::new(*code, format!("the pmc component is disabled: {why}"))
            })?;
            let set = sets[id as usize]
                .as_mut()
                .ok_or_else(|| PapiError::new(PAPI_ENOEVST, format!("no event set {id}")))?;
            set.start(backend, &specs, &whom, thread)?;
            if let Some(t) = thread {
                running.insert(t, id);
            }
            if set.sampling() {
                crate::overflow::ensure_poller();
            }
            Ok(())
        }
    }
}
