//! The library's global state and the operations behind the low-level API,
//! in safe Rust: the backend `PAPI_library_init` opens, the event tables,
//! the event sets by id, the defaults, the threads. `sys/` converts the C
//! arguments and results around these.
//!
//! This file holds the state itself ([`Lib`], the lock, the defaults, event
//! names to codes); `state/calls.rs` the locked functions `sys/` calls,
//! `state/sets.rs` and `state/profiling.rs` `Lib`'s event-set and overflow
//! operations.

mod calls;
mod profiling;
mod sets;
pub(crate) use calls::{
    accum, add_event, assign_component, attach, check_cidx, cleanup_eventset, cpu_attach,
    create_eventset, destroy_eventset, get_multiplex, list_events, max_events, num_events,
    overflow, overflow_indices, pending_overflows, profile, read, register_thread, remove_event,
    reset, set_default_domain, set_default_granularity, set_inherit, set_multiplex, set_options,
    set_set_domain, set_set_granularity, start, start_internal, state, stop, unregister_thread,
    write,
};

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{c_int, c_ulong};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Mutex, MutexGuard};

use pmc_facade::{Allocation, Backend, EventSpec, Native, Pmc, Target};

use crate::abi::*;
use crate::error::{fail, PapiError, R};
use crate::eventset::{Entry, EventSet};
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
