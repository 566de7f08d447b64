//! [`Lib`](super::Lib)'s event-set operations: creating and destroying sets,
//! adding and removing events, starting, stopping, reading, the per-set
//! options (multiplex, attach, domain, granularity, inherit); the threads.

use super::calls::{check_cidx, SetOptions};
use super::{group_fits, is_software, Lib, CIDX};
use crate::abi::*;
use crate::error::{fail, PapiError, R};
use crate::eventset::{self, EventSet, OverflowCall, Whom};
use pmc_facade::{Backend, EventSpec};
use std::ffi::{c_int, c_ulong};

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
