//! `RealSys` where hwpmc does not exist (every OS but FreeBSD): it cannot
//! be found, and every request fails with `ENOSYS`.

use super::{OpArg, Sys};
use crate::errno::Errno;

/// The real OS's hwpmc; on this OS there is none: [`RealSys::find`]
/// fails with `ENOSYS`, and so does every request.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealSys;

impl RealSys {
    /// Why this build cannot reach hwpmc, and what to do instead: `None`
    /// where it can (FreeBSD, LP64).
    pub(crate) const UNSUPPORTED: Option<(&'static str, &'static str)> = Some((
        "hwpmc exists only on FreeBSD",
        "use the pmc facade, which picks the native backend",
    ));

    /// hwpmc's syscall, found at run time; here, never found.
    ///
    /// # Errors
    /// Always `ENOSYS`.
    pub fn find() -> Result<RealSys, Errno> {
        Err(Errno::ENOSYS)
    }
}

impl Sys for RealSys {
    fn call(&self, _arg: OpArg<'_>) -> Result<(), Errno> {
        Err(Errno::ENOSYS)
    }

    fn current_pid(&self) -> i32 {
        std::process::id() as i32
    }
}
