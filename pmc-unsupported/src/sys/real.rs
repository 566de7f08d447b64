//! The real OS: no counter facility pmc can use, so every call answers
//! `ENOSYS`.

use super::Sys;
use crate::errno::Errno;

/// The running OS, as [`Sys`] sees it: it has no counter facility pmc
/// can use, so every call answers [`Errno::ENOSYS`].
#[derive(Debug, Clone, Copy, Default)]
pub struct RealSys;

impl Sys for RealSys {
    fn open_counters(&self) -> Result<(), Errno> {
        Err(Errno::ENOSYS)
    }
}
