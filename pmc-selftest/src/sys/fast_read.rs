//! The user-space read check on Linux: pmc-linux's `FastReader` (`rdpmc` on
//! x86_64, `mrs` on aarch64) against `read(2)` of the same counter.

use crate::{alloc_failed, Options, Relation, Row, Verdict};
use pmc::native::{FastReader, ReadPath};
use pmc::{Allocation, Backend, Error, ErrorKind, Op, Pmc};

/// The check for [`Options::user_reads`]: counts the loop on the calling
/// thread, reads it from user space, then with `read(2)`.
pub(crate) fn probe(options: &Options) -> Row {
    user_read_row(measure(options.iterations.max(1)))
}

/// `(fast, read(2), why user reads are unavailable, counted event)`.
fn measure(n: u64) -> Result<(u64, u64, Option<String>, String), Error> {
    let backend = pmc::Native::open()?;
    let spec = "instructions:u"
        .parse()
        .map_err(|e: pmc::ParseError| Error::new(ErrorKind::Parse, Op::Allocate, e.to_string()))?;
    let mut pmc = backend.allocate(&Allocation::counting(spec))?;
    // User-space reads need the calling thread alone (a process's events are inherited into
    // its new threads, and the kernel maps no inherited per-task event).
    pmc.attach(pmc::Target::CurrentThread)?;
    pmc.start()?;
    let event = pmc.counted_event().to_string();
    let fast = match FastReader::new(&pmc) {
        Ok(f) => f,
        Err(e) => return Ok((0, 0, Some(e.to_string()), event)),
    };
    if let Some(why) = fast.unavailable() {
        return Ok((0, 0, Some(why.to_string()), event));
    }
    super::insn_loop(n);
    let (r, path) = fast.read_traced(true)?;
    let slow = pmc.read()?;
    if let ReadPath::Syscall(why) = path {
        return Ok((0, 0, Some(why.to_string()), event));
    }
    Ok((r.value, slow.value, None, event))
}

/// The user-space read check with pmc-linux's `FastReader`, for
/// [`Options::user_reads`]: its row from [`measure`]'s result.
fn user_read_row(result: Result<(u64, u64, Option<String>, String), Error>) -> Row {
    let row = Row::new("user-space reads", "instructions:u", true);
    match result {
        Err(e) => alloc_failed(row, &e),
        Ok((_, _, Some(why), event)) => {
            let mut row = row.skip(format!("user-space reads unavailable here: {why}"));
            row.event = event;
            row
        }
        Ok((fast, read, None, event)) => {
            let mut row = row;
            row.event = event;
            // The read(2) comes after the fast read: it may count the few
            // instructions between them, never fewer.
            let (verdict, note) = if read >= fast && read - fast < 5_000 {
                (
                    Verdict::Pass,
                    format!("read(2) {} after the user-space read", read - fast),
                )
            } else {
                (
                    Verdict::Fail,
                    format!("the user-space read {fast} disagrees with read(2) {read}"),
                )
            };
            row.judged(fast, read, Relation::About, verdict, note)
        }
    }
}
