//! The fake OS the tests run the backend against: it answers what it is
//! told to, so every path above `sys/` is reached without the real OS.

use super::Sys;
use crate::errno::Errno;

/// A `Sys` whose counter facility opens (`None`) or fails with the errno
/// given.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FakeSys {
    pub(crate) open_error: Option<Errno>,
}

impl Sys for FakeSys {
    fn open_counters(&self) -> Result<(), Errno> {
        self.open_error.map_or(Ok(()), Err)
    }
}
