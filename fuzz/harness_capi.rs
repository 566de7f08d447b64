//! The fuzz harness for the C library's log reader, pmclog(3) (`pmc-capi`,
//! libpmc/): bytes fed through `pmclog_open(PMCLOG_FD_NONE)`, `pmclog_feed`
//! and `pmclog_read` as a C program would, in pieces. Shared by the cargo-fuzz
//! target `pmclog_c` and by the fixed-iteration run in
//! `libpmc/tests/robust.rs` (included there with `#[path]`).

use pmc::abi::{
    pmclog_ev, PMCLOG_ERROR, PMCLOG_OK, PMCLOG_REQUIRE_DATA, PMCLOG_TYPE_CALLCHAIN,
    PMC_CALLCHAIN_DEPTH_MAX,
};
use pmc::pmclog::Parser;
use pmc::sys::{pmclog_close, pmclog_feed, pmclog_open, pmclog_read};
use std::os::raw::c_char;

/// The first 8 bytes seed the piece sizes (as `hwpmc_stream`), the rest is
/// the log: a pmc-log file, a FreeBSD hwpmc log, or neither. Every read ends
/// (the calls are bounded by the input), no panic reaches C (a caught one
/// would set `EIO`), `pl_count` counts the events, and a callchain never
/// claims more frames than its array holds. Returns the events read.
pub fn pmclog_c(data: &[u8]) -> usize {
    let (seed, data) = match data.split_first_chunk::<8>() {
        Some((s, rest)) => (u64::from_le_bytes(*s) | 1, rest),
        None => (1, data),
    };
    let mut x = seed;
    let p = pmclog_open(-1);
    assert!(!p.is_null(), "pmclog_open(PMCLOG_FD_NONE)");
    let mut ev: pmclog_ev = Parser::empty_event();
    let mut fed = 0;
    let mut events = 0usize;
    // Each call either consumes input (a record or a feed) or ends the loop;
    // the bound only catches a reader that loops without doing either.
    for _ in 0..data.len() * 2 + 64 {
        nix::errno::Errno::clear();
        // SAFETY: a live cookie from pmclog_open and a writable event.
        let r = unsafe { pmclog_read(p, &mut ev) };
        assert_ne!(
            nix::errno::Errno::last_raw(),
            libc::EIO,
            "pmclog_read: a panic was caught"
        );
        if r == 0 {
            assert_eq!(ev.pl_state, PMCLOG_OK);
            events += 1;
            assert_eq!(ev.pl_count, events, "pl_count counts the events");
            if ev.pl_type == PMCLOG_TYPE_CALLCHAIN {
                // SAFETY: pl_u is pl_cc for a CALLCHAIN event.
                let npc = unsafe { ev.pl_u.pl_cc.pl_npc };
                assert!(npc <= PMC_CALLCHAIN_DEPTH_MAX, "{npc} frames");
            }
            continue;
        }
        if ev.pl_state == PMCLOG_ERROR {
            // Final, with errno and a message (never the EIO of a panic).
            assert_ne!(
                nix::errno::Errno::last_raw(),
                0,
                "PMCLOG_ERROR without errno"
            );
            break;
        }
        if ev.pl_state != PMCLOG_REQUIRE_DATA || fed == data.len() {
            break;
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let step = if x % 8 == 0 {
            (x >> 8) as usize % 70_000
        } else {
            (x >> 8) as usize % 40
        } + 1;
        let n = step.min(data.len() - fed);
        // SAFETY: `n` readable bytes of `data` from `fed`; the parser copies them.
        let r = unsafe { pmclog_feed(p, data[fed..].as_ptr() as *mut c_char, n as i32) };
        assert_eq!(r, 0, "pmclog_feed");
        fed += n;
    }
    // SAFETY: the cookie from pmclog_open, closed once.
    unsafe { pmclog_close(p) };
    events
}
