//! The user-space read check on Linux: pmc-linux's `FastReader` (`rdpmc` on
//! x86_64, `mrs` on aarch64) against `read(2)` of the same counter.

use crate::selftest::{user_read_row, workload, Options, Row};
use crate::{Allocation, Backend, Error, ErrorKind, Op, Pmc};

/// The check for [`Options::user_reads`]: counts the loop on the calling
/// thread, reads it from user space, then with `read(2)`.
pub(crate) fn probe(options: &Options) -> Row {
    user_read_row(measure(options.iterations.max(1)))
}

/// `(fast, read(2), why user reads are unavailable, counted event)`.
fn measure(n: u64) -> Result<(u64, u64, Option<String>, String), Error> {
    let backend = pmc_linux::Backend::open()?;
    let spec = "instructions:u".parse().map_err(|e: crate::ParseError| {
        Error::new(ErrorKind::Parse, Op::Allocate, e.to_string())
    })?;
    let mut pmc = backend.allocate(&Allocation::counting(spec))?;
    pmc.start()?;
    let event = pmc.counted_event().to_string();
    let fast = match pmc_linux::FastReader::new(&pmc) {
        Ok(f) => f,
        Err(e) => return Ok((0, 0, Some(e.to_string()), event)),
    };
    if let Some(why) = fast.unavailable() {
        return Ok((0, 0, Some(why.to_string()), event));
    }
    workload::insns(n);
    let (r, path) = fast.read_traced(true)?;
    let slow = pmc.read()?;
    if let pmc_linux::ReadPath::Syscall(why) = path {
        return Ok((0, 0, Some(why.to_string()), event));
    }
    Ok((r.value, slow.value, None, event))
}
