//! The only door to the OS: [`Sys`]. Every OS fact and call the crate
//! needs goes through it, so everything above runs against a fake
//! (`fake.rs`, in the tests). Types the trait's signatures use live here or
//! below; nothing here imports from the layers above.
//!
//! [`RealSys`] is the real OS (`real.rs`). A backend for a real system
//! puts its OS's body in one file (`sys/linux.rs`, `sys/freebsd.rs`) and
//! `ENOSYS` answers in `sys/unsupported.rs`, chosen here by one `cfg_if`;
//! this crate has no OS body, so `real.rs` is the `ENOSYS` answer
//! everywhere.

use crate::errno::Errno;

#[cfg(test)]
pub(crate) mod fake;
mod real;

pub use real::RealSys;

/// What the backend asks of the OS. A backend copied from this crate adds
/// one method per syscall, ioctl, `/proc`, sysfs or `/dev` access it makes.
///
/// ```
/// use pmc_unsupported::{Errno, RealSys, Sys};
/// assert_eq!(RealSys.open_counters(), Err(Errno::ENOSYS));
/// ```
pub trait Sys: Send + Sync + 'static {
    /// Opens the OS's counter facility (hwpmc's module and its version
    /// handshake, perf_event's `perf_event_open(2)`...): what
    /// `Backend::new` asks first, and every operation after it.
    ///
    /// # Errors
    ///
    /// The errno the OS answered; `ENOSYS` where there is no facility.
    fn open_counters(&self) -> Result<(), Errno>;
}
