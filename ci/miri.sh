#!/usr/bin/env bash
# Miri on the pure parsing and ring-buffer code: pmc-log (reader, writer, hwpmc importer,
# exports), pmc-linux's ring reader, record parser, mmap ring and rdpmc logic on simulated
# pages, the log side's post-processors (log-proccsw, log-procexit, unwinding stage) on
# hand-made records, and pmc-core's event parser and readings. Long randomized tests are
# `#[cfg_attr(miri, ignore)]`; proptests run a few cases under Miri.
#
# Called by ci/check.sh (set PMC_CI_MIRI=0 to leave it out) and by the workflow's Miri job.
# Needs the nightly toolchain; installs miri and rust-src into it.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! rustup toolchain list | grep -q '^nightly'; then
  rustup toolchain install nightly --profile minimal
fi
rustup +nightly component add miri rust-src
cargo +nightly miri setup
# Isolation off: the tests read their fixtures from the source tree.
export MIRIFLAGS="${MIRIFLAGS:--Zmiri-strict-provenance -Zmiri-disable-isolation}"
cargo +nightly miri test -p pmc-log
cargo +nightly miri test -p pmc-linux --test ring --test record
# The fake-kernel tests (counter::, sys::fake::) are left out: the fake keys its state by
# real pipe fds checked against /proc/self/fd, which Miri's emulated descriptors do not
# mirror; they run natively in `cargo test`.
cargo +nightly miri test -p pmc-linux --lib -- ring record rdpmc sys::mmap switch_samples \
  log::proccsw log::procexit log::post log::hub --skip counter:: --skip sys::fake::
cargo +nightly miri test -p pmc-core --lib -- event reading
