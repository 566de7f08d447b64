//! The operations behind the C entry points, one function each: most take
//! the library's lock and call the [`Lib`](super::Lib) method of the same
//! name.

use super::{lock, with_lib, CIDX, COMPONENT_NAME};
use crate::abi::*;
use crate::error::{fail, R};
use crate::eventset::{self, OverflowCall, MAX_EVENTS};
use std::ffi::{c_int, c_ulong};

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

pub(super) fn start_impl(id: c_int, exclusive: bool) -> R<()> {
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
