//! Event names to the OS's encodings, and the listing: this OS has no
//! counters, so no name resolves and the listing is empty.

use pmc_core::info::EventInfo;

/// The events this backend can count (`pmcstat -L`): none.
pub fn list(_tracepoints: bool) -> Vec<EventInfo> {
    Vec::new()
}
