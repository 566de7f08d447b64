//! The extension's measurements (`pmc_measure_begin`, `_read`, `_end`): a
//! group counting the calling process, by handle.

use pmc_facade::{Allocation, Backend, EventSpec, Group, NativeGroup, Reading, Status, Target};

use crate::abi::*;

use super::{with_lib, CError, Lib, R};

/// The most events one measurement takes (the group read's bound).
pub(crate) const MEASURE_MAX_EVENTS: usize = 32;

/// `pmc_measure_begin`: the events, as one group counting the calling process and the
/// threads it creates later, started; its handle.
pub(crate) fn measure_begin(specs: &[&str]) -> R<pmc_measure_t> {
    if specs.is_empty() || specs.len() > MEASURE_MAX_EVENTS {
        return Err(CError::new(
            libc::EINVAL,
            format!(
                "pmc_measure_begin takes 1 to {MEASURE_MAX_EVENTS} events, not {}",
                specs.len()
            ),
        ));
    }
    let allocations = specs
        .iter()
        .map(|spec| {
            spec.trim()
                .parse::<EventSpec>()
                .map(Allocation::counting)
                .map_err(|e| {
                    CError::new(
                        libc::EINVAL,
                        format!(
                            "event specification {:?} does not parse: {e}",
                            super::shown_spec(spec)
                        ),
                    )
                })
        })
        .collect::<R<Vec<_>>>()?;
    with_lib(|lib| {
        let mut group = lib.backend.allocate_group(&allocations)?;
        group.attach(Target::Current)?;
        group.start()?;
        let handle = lib.next_measure;
        lib.next_measure = lib.next_measure.checked_add(1).ok_or_else(|| {
            CError::new(libc::ENOMEM, "no measurement handles left in this process")
        })?;
        lib.measures.insert(handle, group);
        Ok(handle)
    })
}

/// The scaled counts of a measurement's group, in event order.
fn measure_values(group: &NativeGroup) -> R<Vec<pmc_value_t>> {
    let readings: Vec<Reading> = group.read()?;
    readings
        .iter()
        .zip(group.allocations())
        .map(|(r, a)| match r.status() {
            Status::NotSupported => Err(CError::new(
                libc::EOPNOTSUPP,
                format!(
                    "the kernel cannot count {} on this machine (perf: <not supported>)",
                    a.event
                ),
            )),
            // Members of a group run together: one never ran if the group never got
            // the counters. A 0 would be a wrong number.
            _ => r.scaled().ok_or_else(|| {
                CError::new(
                    libc::EBUSY,
                    format!(
                        "the group never ran ({} ns enabled, 0 running): other PMCs hold the \
                         counters it needs; measure fewer events at once",
                        r.time_enabled
                    ),
                )
            }),
        })
        .collect()
}

fn unknown_measure(handle: pmc_measure_t) -> CError {
    CError::new(
        libc::EINVAL,
        format!(
            "measurement {handle} is not running (pmc_measure_begin returns the handles; \
             pmc_measure_end frees them)"
        ),
    )
}

fn measure_of(lib: &mut Lib, handle: pmc_measure_t) -> R<&mut NativeGroup> {
    lib.measures
        .get_mut(&handle)
        .ok_or_else(|| unknown_measure(handle))
}

/// Whether `capacity` values hold the group's counts (`None`: the caller wants none).
fn check_capacity(group: &NativeGroup, capacity: Option<usize>) -> R<()> {
    let n = group.allocations().len();
    match capacity {
        Some(c) if c < n => Err(CError::new(
            libc::EINVAL,
            format!("nvalues is {c}: the measurement has {n} events, one value each"),
        )),
        _ => Ok(()),
    }
}

/// `pmc_measure_read`: the group's counts now, without stopping it, into `capacity`
/// values.
pub(crate) fn measure_read(handle: pmc_measure_t, capacity: usize) -> R<Vec<pmc_value_t>> {
    with_lib(|lib| {
        let group = measure_of(lib, handle)?;
        check_capacity(group, Some(capacity))?;
        measure_values(group)
    })
}

/// `pmc_measure_end`: stops the group, its final counts (when `capacity` is some), and
/// frees the handle. A buffer too small is refused first, the measurement kept; once
/// stopping begins, the handle is freed whatever follows.
pub(crate) fn measure_end(handle: pmc_measure_t, capacity: Option<usize>) -> R<Vec<pmc_value_t>> {
    with_lib(|lib| {
        check_capacity(measure_of(lib, handle)?, capacity)?;
        let Some(mut group) = lib.measures.remove(&handle) else {
            return Err(CError::new(libc::EINVAL, "measurement vanished"));
        };
        group.stop()?;
        if capacity.is_none() {
            return Ok(Vec::new());
        }
        measure_values(&group)
    })
}
