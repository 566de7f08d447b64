//! PAPI's rate calls (`PAPI_flips_rate`, `PAPI_flops_rate`, `PAPI_ipc`,
//! `PAPI_epc`, `PAPI_rate_stop`): per thread, one event set of the
//! library's own, started by the first call (which answers zeros) and read
//! by each later one, which answers the counts and rate since the call
//! before. A call of another kind, or `PAPI_rate_stop`, ends the set.

use std::collections::BTreeMap;
use std::ffi::c_int;
use std::sync::Mutex;

use crate::abi::*;
use crate::error::{fail, R};
use crate::presets;
use crate::state;

/// Which rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Instructions of a floating-point preset.
    Flips(u32),
    /// Operations of a floating-point preset.
    Flops(u32),
    /// Instructions per cycle.
    Ipc,
    /// Events (a preset; 0 for instructions) per cycle, with reference cycles.
    Epc(u32),
}

/// One call's answer.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(crate) struct Rate {
    pub real_s: f32,
    pub proc_s: f32,
    pub count: i64,
    pub cycles: i64,
    pub reference: i64,
    pub rate: f32,
}

struct Running {
    kind: Kind,
    set: c_int,
    real_ns: i64,
    virt_ns: i64,
}

static RUNNING: Mutex<BTreeMap<u64, Running>> = Mutex::new(BTreeMap::new());

fn preset(name: &str) -> u32 {
    PAPI_PRESET_MASK | presets::index(name).unwrap_or(0) as u32
}

/// The events of a kind: the counted event first, then cycles (and
/// reference cycles for `Epc`, when they exist).
fn events(kind: Kind) -> R<Vec<u32>> {
    let allowed = |e: u32, names: &[&str]| names.iter().any(|n| preset(n) == e);
    Ok(match kind {
        Kind::Flips(e) if allowed(e, &["PAPI_FP_INS", "PAPI_VEC_SP", "PAPI_VEC_DP"]) => {
            vec![e, preset("PAPI_TOT_CYC")]
        }
        Kind::Flops(e) if allowed(e, &["PAPI_FP_OPS", "PAPI_SP_OPS", "PAPI_DP_OPS"]) => {
            vec![e, preset("PAPI_TOT_CYC")]
        }
        Kind::Flips(_) | Kind::Flops(_) => {
            return fail(
                PAPI_ENOEVNT,
                "not one of the floating-point presets this rate takes",
            )
        }
        Kind::Ipc => vec![preset("PAPI_TOT_INS"), preset("PAPI_TOT_CYC")],
        Kind::Epc(e) => {
            let e = if e == 0 { preset("PAPI_TOT_INS") } else { e };
            vec![e, preset("PAPI_TOT_CYC"), preset("PAPI_REF_CYC")]
        }
    })
}

fn start(kind: Kind) -> R<Running> {
    crate::sys::library_init()?;
    let set = state::create_eventset()?;
    let wanted = events(kind)?;
    let mut added = 0;
    for (i, e) in wanted.iter().enumerate() {
        match state::add_event(set, *e) {
            Ok(()) => added += 1,
            // Reference cycles are optional.
            Err(_) if i == 2 => {}
            Err(err) => {
                let _ = state::cleanup_eventset(set);
                let _ = state::destroy_eventset(set);
                return Err(err);
            }
        }
    }
    debug_assert!(added >= 2);
    state::start_internal(set)?;
    Ok(Running {
        kind,
        set,
        real_ns: crate::sys::os::real_nsec(),
        virt_ns: crate::sys::os::virt_nsec(),
    })
}

fn end(r: Running) {
    let _ = state::stop(r.set);
    let _ = state::cleanup_eventset(r.set);
    let _ = state::destroy_eventset(r.set);
}

/// One rate call of the calling thread.
pub(crate) fn rate(kind: Kind) -> R<Rate> {
    let tid = crate::sys::os::thread_id();
    let mut g = RUNNING.lock().unwrap_or_else(|p| p.into_inner());
    match g.remove(&tid) {
        Some(r) if r.kind == kind => {
            let v = state::read(r.set)?;
            state::reset(r.set)?;
            let real = crate::sys::os::real_nsec();
            let virt = crate::sys::os::virt_nsec();
            let count = v.first().copied().unwrap_or(0);
            let cycles = v.get(1).copied().unwrap_or(0);
            let real_s = (real - r.real_ns) as f32 / 1e9;
            let rate = match kind {
                Kind::Flips(_) | Kind::Flops(_) => {
                    if real > r.real_ns {
                        count as f32 / ((real - r.real_ns) as f32 / 1e3)
                    } else {
                        0.0
                    }
                }
                Kind::Ipc | Kind::Epc(_) => {
                    if cycles > 0 {
                        count as f32 / cycles as f32
                    } else {
                        0.0
                    }
                }
            };
            let out = Rate {
                real_s,
                proc_s: (virt - r.virt_ns) as f32 / 1e9,
                count,
                cycles,
                reference: v.get(2).copied().unwrap_or(0),
                rate,
            };
            g.insert(
                tid,
                Running {
                    real_ns: real,
                    virt_ns: virt,
                    ..r
                },
            );
            Ok(out)
        }
        other => {
            if let Some(r) = other {
                end(r);
            }
            let r = start(kind)?;
            g.insert(tid, r);
            Ok(Rate::default())
        }
    }
}

/// `PAPI_rate_stop`.
pub(crate) fn stop() -> R<()> {
    let tid = crate::sys::os::thread_id();
    let r = RUNNING
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&tid);
    match r {
        Some(r) => {
            end(r);
            Ok(())
        }
        None => fail(PAPI_ENOTRUN, "no rate is being counted in this thread"),
    }
}
