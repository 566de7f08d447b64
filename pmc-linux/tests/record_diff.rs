//! Differential test of the record parser rewrite (issue 12): the parser before it
//! (`record_old.rs`, a verbatim copy) and the current one must decode every input alike,
//! errors included. Inputs: well-formed headers of every known kind (and some unknown) with
//! random bodies and random configs, and plain random bytes.

#[allow(dead_code, missing_docs, clippy::all)]
#[path = "record_old.rs"]
mod old;

use pmc_linux::record::ParseConfig;
use proptest::prelude::*;

fn both(st: u64, rf: u64, all: bool, regs: u64, rec: &[u8]) {
    let new = ParseConfig::new(st, rf, all)
        .with_regs_user(regs)
        .parse(rec);
    let old = old::ParseConfig::new(st, rf, all)
        .with_regs_user(regs)
        .parse(rec);
    assert_eq!(
        format!("{new:?}"),
        format!("{old:?}"),
        "st {st:#x} rf {rf:#x} all {all}"
    );
}

fn record(kind: u32, misc: u16, body: &[u8], size_delta: i32) -> Vec<u8> {
    let size = (8 + body.len() as i32 + size_delta).clamp(0, u16::MAX as i32) as u16;
    let mut v = Vec::with_capacity(8 + body.len());
    v.extend_from_slice(&kind.to_ne_bytes());
    v.extend_from_slice(&misc.to_ne_bytes());
    v.extend_from_slice(&size.to_ne_bytes());
    v.extend_from_slice(body);
    v
}

proptest! {
    #![proptest_config(ProptestConfig { cases: if cfg!(miri) { 8 } else { 20_000 }, ..ProptestConfig::default() })]

    #[test]
    fn old_and_new_agree_on_framed_records(
        kind in prop_oneof![1u32..=15, 16u32..40, any::<u32>()],
        misc in prop_oneof![Just(0u16), Just(1 << 14), Just(1 << 13), any::<u16>()],
        st in prop_oneof![4 => 0u64..(1 << 17), 1 => any::<u64>()],
        rf in 0u64..32,
        all in any::<bool>(),
        regs in prop_oneof![Just(0u64), any::<u64>()],
        body in prop::collection::vec(prop_oneof![8 => Just(0u8), 1 => 1u8..9, 1 => any::<u8>()], 0..160),
        delta in prop_oneof![Just(0i32), -9i32..9],
    ) {
        both(st, rf, all, regs, &record(kind, misc, &body, delta));
    }

    #[test]
    fn old_and_new_agree_on_random_bytes(
        st in any::<u64>(), rf in 0u64..32, all in any::<bool>(), regs in any::<u64>(),
        bytes in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        both(st, rf, all, regs, &bytes);
    }
}
