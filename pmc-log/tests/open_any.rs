//! `open_any`: either format by its magic. pmc-log is borrowed as it is, an hwpmc log
//! (with or without `pmc record`'s PMCL prefix) is converted, anything else is refused
//! with the bytes it starts with; none of it panics on short or hostile input.

use pmc_log::hwpmc::{Encoder, HwpmcError};
use pmc_log::record::{Header, Record, UserData};
use pmc_log::{detect, open_any, LogFormat, OpenError, Writer};
use std::borrow::Cow;

fn hwpmc_log(prefix: bool) -> Vec<u8> {
    let mut e = Encoder::new(Vec::new());
    if prefix {
        e.pmc_record_prefix(1, None).unwrap();
    }
    e.initialize(1, 0x0A00_0000, 0, 1_000_000_000, 0, 0, "GenuineIntel-6-85")
        .unwrap();
    e.userdata(2, 0xabcd).unwrap();
    e.closelog(3).unwrap();
    e.into_inner()
}

fn user_data(bytes: &[u8]) -> Vec<Vec<u8>> {
    let log = open_any(bytes).unwrap();
    let reader = log.reader().unwrap();
    let v = reader
        .records()
        .filter_map(|r| match r {
            Record::UserData(u) => Some(u.data.as_bytes().to_vec()),
            _ => None,
        })
        .collect();
    v
}

#[test]
fn pmc_log_is_borrowed_as_it_is() {
    let mut w = Writer::new(Vec::new(), &Header::default()).unwrap();
    w.write(&Record::UserData(UserData {
        time: 5,
        pid: 1,
        data: b"seven".to_vec().into(),
    }))
    .unwrap();
    let file = w.finish().unwrap();
    assert_eq!(detect(&file), Some(LogFormat::PmcLog));
    let log = open_any(&file).unwrap();
    assert_eq!(log.format, LogFormat::PmcLog);
    assert!(matches!(log.bytes, Cow::Borrowed(b) if b.as_ptr() == file.as_ptr()));
    assert!(log.import.is_none());
    assert_eq!(user_data(&file), [b"seven".to_vec()]);
}

#[test]
fn hwpmc_logs_are_converted() {
    for prefix in [false, true] {
        let raw = hwpmc_log(prefix);
        assert_eq!(detect(&raw), Some(LogFormat::Hwpmc), "prefix {prefix}");
        let log = open_any(&raw).unwrap();
        assert_eq!(log.format, LogFormat::Hwpmc);
        assert!(matches!(log.bytes, Cow::Owned(_)));
        let report = log.import.as_ref().expect("an import report");
        assert!(report.closed_cleanly);
        assert_eq!(report.pmc_record_prefix, prefix);
        assert_eq!(user_data(&raw), [0xabcd_u32.to_le_bytes().to_vec()]);
    }
}

#[test]
fn neither_magic_is_refused_with_its_first_bytes() {
    for input in [&b""[..], b"\xee", b"GIF89a..rest", b"\x89PMCLO"] {
        assert_eq!(detect(input), None, "{input:02x?}");
        match open_any(input) {
            Err(e @ OpenError::UnknownFormat { .. }) => {
                let OpenError::UnknownFormat { found, .. } = &e else {
                    unreachable!()
                };
                assert_eq!(found.as_slice(), &input[..input.len().min(8)]);
                assert!(e.to_string().contains("pmcstat -O"), "{e}");
            }
            other => panic!("{input:02x?}: {other:?}"),
        }
    }
}

#[test]
fn an_unsupported_hwpmc_version_is_an_hwpmc_error() {
    let mut e = Encoder::new(Vec::new());
    e.initialize(0, 0x0300_0000, 0, 0, 0, 0, "").unwrap();
    let raw = e.into_inner();
    assert_eq!(detect(&raw), Some(LogFormat::Hwpmc));
    let err = open_any(&raw).unwrap_err();
    assert!(
        matches!(
            err,
            OpenError::Hwpmc(HwpmcError::UnsupportedVersion {
                version: 0x0300_0000
            })
        ),
        "{err:?}"
    );
}

#[test]
fn damaged_hwpmc_input_does_not_panic() {
    let raw = hwpmc_log(true);
    // Every cut and every flipped byte natively; under Miri (53 s for all) every 5th,
    // which still meets every byte of a 4-byte field.
    let step = if cfg!(miri) { 5 } else { 1 };
    for cut in (0..raw.len()).step_by(step) {
        let _ = open_any(&raw[..cut]).map(|l| l.reader().map(|r| r.records().count()));
    }
    let mut flipped = raw.clone();
    for i in (0..flipped.len()).step_by(step) {
        flipped[i] ^= 0x5a;
        let _ = open_any(&flipped).map(|l| l.reader().map(|r| r.records().count()));
        flipped[i] ^= 0x5a;
    }
}
