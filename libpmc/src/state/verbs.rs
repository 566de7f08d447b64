//! The verbs on one PMC: attach, detach, start, stop, release, read,
//! write, set, and what its id tells (capabilities, width, MSR).

use pmc_facade::{Pmc, Status, Target};

use crate::abi::*;
use crate::host::{self, EDOOFUS};

use super::machine::class_caps;
use super::{with_lib, CError, R};

/// The pid a pmc_attach/pmc_detach argument names (0: the caller), or
/// pmc_attach(3)'s EINVAL for "an illegal process id".
fn pid_arg(pid: libc::pid_t) -> R<u32> {
    match pid {
        0 => Ok(std::process::id()),
        p if p > 0 => Ok(p.unsigned_abs()),
        p => Err(CError::new(
            libc::EINVAL,
            format!("pid {p} is not a process id (0 is this process)"),
        )),
    }
}

fn target_of(pid: u32) -> Target {
    if pid == std::process::id() {
        Target::Current
    } else {
        Target::Pid(pid)
    }
}

/// ESRCH for a process that does not exist ("the process specified ... did
/// not exist").
fn check_exists(pid: u32) -> R<()> {
    if pmc_facade::process::exists(pid) {
        Ok(())
    } else {
        Err(CError::new(
            libc::ESRCH,
            format!("no process with pid {pid}"),
        ))
    }
}

/// `pmc_attach(id, pid)`; pid 0 is the caller.
pub(crate) fn attach(id: pmc_id_t, pid: libc::pid_t) -> R<()> {
    with_lib(|lib| {
        let pid = pid_arg(pid)?;
        lib.owns_pmcs("pmc_attach")?;
        let slot = lib.slot(id)?;
        if is_system_mode(slot.mode) {
            return Err(CError::new(
                libc::EINVAL,
                format!("PMC {id:#x} has system scope: only process-mode PMCs attach to processes"),
            ));
        }
        if slot.running {
            return Err(CError::new(
                libc::EBUSY,
                format!("PMC {id:#x} is running: pmc_stop it before pmc_attach"),
            ));
        }
        check_exists(pid)?;
        if slot.targets.contains(&pid) {
            return Err(CError::new(
                libc::EEXIST,
                format!("PMC {id:#x} is already attached to pid {pid}"),
            ));
        }
        slot.pmc.attach(target_of(pid))?;
        slot.targets.push(pid);
        Ok(())
    })
}

/// `pmc_detach(id, pid)`; pid 0 is the caller.
pub(crate) fn detach(id: pmc_id_t, pid: libc::pid_t) -> R<()> {
    with_lib(|lib| {
        let pid = pid_arg(pid)?;
        lib.owns_pmcs("pmc_detach")?;
        let monitored = lib.pmcs.values().any(|s| s.targets.contains(&pid));
        let slot = lib.slot(id)?;
        if is_system_mode(slot.mode) {
            return Err(CError::new(
                libc::EINVAL,
                format!("PMC {id:#x} has system scope: it has no processes to detach"),
            ));
        }
        check_exists(pid)?;
        if !slot.targets.contains(&pid) {
            return Err(if monitored {
                CError::new(
                    libc::EINVAL,
                    format!("PMC {id:#x} is not attached to pid {pid} (another PMC is)"),
                )
            } else {
                CError::new(
                    libc::ESRCH,
                    format!("pid {pid} is not monitored by any PMC of this process"),
                )
            });
        }
        slot.pmc.detach(target_of(pid))?;
        slot.targets.retain(|p| *p != pid);
        Ok(())
    })
}

/// `pmc_start(id)`: a process-mode PMC with no target is attached to the
/// caller (pmc_start(3)).
pub(crate) fn start(id: pmc_id_t) -> R<()> {
    with_lib(|lib| {
        let slot = lib.slot(id)?;
        if is_system_mode(slot.mode) && !host::cpu_online(slot.cpu) {
            return Err(CError::new(
                libc::ENXIO,
                format!("PMC {id:#x} counts CPU {}, which is offline", slot.cpu),
            ));
        }
        slot.pmc.start().map_err(|e| {
            let mut c = CError::from(e);
            if c.errno == EDOOFUS {
                c.message = format!(
                    "{}; pmc_configure_logfile first (pmc_start(3): EDOOFUS)",
                    c.message
                );
            }
            c
        })?;
        slot.started = true;
        slot.running = true;
        if !is_system_mode(slot.mode) && slot.targets.is_empty() {
            slot.targets.push(std::process::id());
        }
        Ok(())
    })
}

/// `pmc_stop(id)`: EINVAL for a PMC never started (pmc_start(3)).
pub(crate) fn stop(id: pmc_id_t) -> R<()> {
    with_lib(|lib| {
        let slot = lib.slot(id)?;
        if !slot.started {
            return Err(CError::new(
                libc::EINVAL,
                format!("PMC {id:#x} was never started (pmc_start it first)"),
            ));
        }
        slot.pmc.stop()?;
        slot.running = false;
        Ok(())
    })
}

/// `pmc_release(id)`.
pub(crate) fn release(id: pmc_id_t) -> R<()> {
    with_lib(|lib| {
        lib.owns_pmcs("pmc_release")?;
        lib.slot(id)?;
        match lib.pmcs.remove(&id) {
            Some(slot) => Ok(slot.pmc.release()?),
            None => Err(CError::new(libc::EINVAL, "PMC vanished")),
        }
    })
}

/// `pmc_read(id)`: the count, scaled when the kernel multiplexed it.
pub(crate) fn read(id: pmc_id_t) -> R<pmc_value_t> {
    with_lib(|lib| {
        let r = lib.slot(id)?.pmc.read()?;
        match r.status() {
            Status::NotSupported => Err(CError::new(
                libc::EOPNOTSUPP,
                "the kernel cannot count this event on this machine (perf: <not supported>)",
            )),
            // Never scheduled (or never started): the raw value, which holds
            // what pmc_write/pmc_set put there.
            _ => Ok(r.scaled().unwrap_or(r.value)),
        }
    })
}

/// `pmc_rw(id, new)`: writes `new`, returns the value before; EBUSY while
/// running (pmc_read(3)).
pub(crate) fn write(id: pmc_id_t, value: pmc_value_t) -> R<pmc_value_t> {
    with_lib(|lib| {
        let slot = lib.slot(id)?;
        if slot.running {
            return Err(CError::new(
                libc::EBUSY,
                format!("PMC {id:#x} is running: pmc_stop it before writing its count"),
            ));
        }
        Ok(slot.pmc.write(value)?)
    })
}

/// `pmc_set(id, value)`: the reload count of a sampling PMC, the start
/// value of a counting one; EBUSY while running (pmc_set(3)).
pub(crate) fn set(id: pmc_id_t, value: pmc_value_t) -> R<()> {
    with_lib(|lib| {
        let slot = lib.slot(id)?;
        if slot.running {
            return Err(CError::new(
                libc::EBUSY,
                format!("PMC {id:#x} is running: pmc_stop it before pmc_set"),
            ));
        }
        slot.pmc.set_count(value)?;
        if is_sampling_mode(slot.mode) {
            slot.reload = value;
        }
        Ok(())
    })
}

/// `pmc_capabilities(id)`.
pub(crate) fn capabilities(id: pmc_id_t) -> R<u32> {
    with_lib(|lib| Ok(class_caps(lib.slot(id)?.class)))
}

/// `pmc_width(id)`: perf keeps 64-bit counts for every event.
pub(crate) fn width(id: pmc_id_t) -> R<u32> {
    with_lib(|lib| lib.slot(id).map(|_| 64))
}

/// `pmc_get_msr(id)`: pmc_get_msr(3)'s EINVAL cases, then ENOSYS ("the
/// underlying hardware does not support an RDPMC instruction" for a
/// register of its own): perf moves a counter between registers as it
/// schedules it, and a register holds the count less an offset.
pub(crate) fn get_msr(id: pmc_id_t) -> R<u32> {
    with_lib(|lib| {
        let slot = lib.slot(id)?;
        let own = std::process::id();
        let why = if slot.mode != PMC_MODE_TC {
            Some("it is not a process-mode counting PMC (PMC_MODE_TC)")
        } else if slot.flags & PMC_F_DESCENDANTS != 0 {
            Some("it was allocated with PMC_F_DESCENDANTS")
        } else if slot.targets.iter().any(|p| *p != own) {
            Some("it is attached to processes other than its owner")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(CError::new(
                libc::EINVAL,
                format!("pmc_get_msr({id:#x}): {why}"),
            ));
        }
        Err(CError::new(
            libc::ENOSYS,
            "pmc_get_msr: no register holds this PMC's count on Linux: perf moves a counter \
             between registers as it schedules it, and a register holds the count less an \
             offset kept in the event's page; use pmc_read",
        ))
    })
}
