//! [`Lib`](super::Lib)'s overflow and profiling: `PAPI_overflow`'s and
//! `PAPI_profil`'s set-up, and the overflow vector's indices.

use super::Lib;
use crate::abi::*;
use crate::error::{fail, R};
use crate::eventset::{self, Action, Overflow};
use crate::presets::Derived;
use pmc_facade::Backend;
use std::ffi::c_int;

impl<B: Backend> Lib<B> {
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
}
