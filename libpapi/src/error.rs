//! PAPI's return codes: the failure type every operation returns, its
//! strings (`PAPI_strerror`), and how pmc's typed errors become codes.

use std::ffi::{c_int, CStr};

use pmc_facade::ErrorKind;

use crate::abi::*;

/// A failed call: PAPI's code, and what went wrong in words (what
/// `PAPI_perror` adds after PAPI's string).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PapiError {
    /// `PAPI_E*`.
    pub code: c_int,
    /// What happened and, when known, what to do.
    pub message: String,
}

impl PapiError {
    /// A failure with a code and a message.
    pub(crate) fn new(code: c_int, message: impl Into<String>) -> PapiError {
        PapiError {
            code,
            message: message.into(),
        }
    }
}

/// Shorthand for the operations' results.
pub(crate) type R<T> = Result<T, PapiError>;

/// Fails with `code` and `message`.
pub(crate) fn fail<T>(code: c_int, message: impl Into<String>) -> R<T> {
    Err(PapiError::new(code, message))
}

impl From<pmc_facade::Error> for PapiError {
    fn from(e: pmc_facade::Error) -> PapiError {
        let code = match e.kind() {
            ErrorKind::Permission => PAPI_EPERM,
            ErrorKind::NoPmu => PAPI_ENOCNTR,
            ErrorKind::NoSuchEvent | ErrorKind::Parse => PAPI_ENOEVNT,
            ErrorKind::NotSupported | ErrorKind::Unsupported => PAPI_ECMP,
            ErrorKind::Busy => PAPI_ECNFLCT,
            ErrorKind::InvalidArgument | ErrorKind::NoSuchCpu | ErrorKind::NoSuchCgroup => {
                PAPI_EINVAL
            }
            ErrorKind::NoSuchProcess => PAPI_ESYS,
            ErrorKind::InvalidState
            | ErrorKind::AlreadyAttached
            | ErrorKind::NotAttached
            | ErrorKind::LogRequired => PAPI_EINVAL,
            ErrorKind::TooManyOpenFiles | ErrorKind::MlockLimit => PAPI_ENOMEM,
            ErrorKind::DriverNotLoaded => PAPI_ECMP,
            _ => PAPI_ESYS,
        };
        let mut message = e.to_string();
        if let Some(h) = e.help() {
            message.push_str("; ");
            message.push_str(h);
        }
        PapiError::new(code, message)
    }
}

/// `PAPI_strerror`'s strings, by `-code` (PAPI 7's wording).
const STRINGS: [&CStr; PAPI_NUM_ERRORS as usize] = [
    c"No error",
    c"Invalid argument",
    c"Insufficient memory",
    c"A System/C library call failed",
    c"Not supported by component",
    c"Access to the counters was lost or interrupted",
    c"Internal error, please send mail to the developers",
    c"Event does not exist",
    c"Event exists, but cannot be counted due to hardware resource limits",
    c"EventSet is currently not running",
    c"EventSet is currently counting",
    c"No such EventSet available",
    c"Event in argument is not a valid preset",
    c"Hardware does not support performance counters",
    c"Unknown error code",
    c"Permission level does not permit operation",
    c"PAPI hasn't been initialized yet",
    c"Component Index isn't set",
    c"Not supported",
    c"Not implemented",
    c"Buffer size exceeded",
    c"EventSet domain is not supported for the operation",
    c"Invalid or missing event attributes",
    c"Too many events or attributes",
    c"Bad combination of features",
    c"Component containing event is disabled",
    c"Delayed initialization component",
    c"Event exists, but cannot be counted due to multiple passes required by hardware",
];

/// The string of a code, `None` outside `PAPI_OK..=PAPI_EMULPASS`.
pub(crate) fn strerror(code: c_int) -> Option<&'static CStr> {
    if code > 0 {
        return None;
    }
    let i = usize::try_from(code.checked_neg()?).ok()?;
    STRINGS.get(i).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_its_string() {
        assert_eq!(strerror(PAPI_OK), Some(c"No error"));
        assert_eq!(strerror(PAPI_ENOEVNT), Some(c"Event does not exist"));
        assert_eq!(
            strerror(PAPI_ENOINIT),
            Some(c"PAPI hasn't been initialized yet")
        );
        assert!(strerror(PAPI_EMULPASS)
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("Event exists, but"));
        assert_eq!(strerror(-28), None);
        assert_eq!(strerror(1), None);
        assert_eq!(strerror(c_int::MIN), None);
    }

    #[test]
    fn pmc_errors_become_papis_codes() {
        use pmc_facade::{Error, Op};
        let e = |k| PapiError::from(Error::new(k, Op::Allocate, "x")).code;
        assert_eq!(e(ErrorKind::Permission), PAPI_EPERM);
        assert_eq!(e(ErrorKind::NoSuchEvent), PAPI_ENOEVNT);
        assert_eq!(e(ErrorKind::NoPmu), PAPI_ENOCNTR);
        assert_eq!(e(ErrorKind::Unsupported), PAPI_ECMP);
    }
}
