#!/usr/bin/env bash
# Miri where it finds what native runs cannot: the unsafe code and the code around it.
# pmc-linux's ring reader over the kernel's mapping protocol, its record parser, the mmap
# ring and rdpmc logic on simulated pages (with a producer thread playing the kernel, for the
# data-race and weak-memory checks), the log side's post-processors on hand-made records;
# pmc-core's event parser and readings; and pmc-log's writer and reader (its crc32c is unsafe
# SIMD) through its unit tests, the round trips and the counting allocator of write_failure.
# pmc-log's other suites (damage, corpora, hwpmc import, exports) are safe code that the
# native suite and the fuzz targets run in full: under Miri they took 7 minutes of a lane and
# could only find what a native run finds. Long randomized tests are
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

# Two lanes side by side (Miri interprets on one core; CI has two): pmc-log in one,
# pmc-linux's and pmc-core's (about 4 minutes) in the other, each with its own target
# directory (cargo holds a target directory's lock while its tests run). Each lane's output
# is printed whole when both are done, then the status of each.
# pmc-log's lane measured alone: unit tests 65 s (31 s of it building), round trips 210 s
# (the write/read proptest), write_failure 6 s; lane 2 took about 290 s before this change.
lane_pmc_log() {
  cargo +nightly miri test -p pmc-log --lib
  cargo +nightly miri test -p pmc-log --test main -- roundtrip::
  cargo +nightly miri test -p pmc-log --test write_failure
}
lane_linux_core() {
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/miri-lane-2"
  # pmc-linux's `linux` test binary: its ring and record modules (the others need a kernel).
  cargo +nightly miri test -p pmc-linux --test linux -- ring:: record::
  # The fake-kernel tests (counter::, sys::fake::) are left out: the fake keys its state by
  # real pipe fds checked against /proc/self/fd, which Miri's emulated descriptors do not
  # mirror; they run natively in `cargo test`.
  cargo +nightly miri test -p pmc-linux --lib -- ring record rdpmc sys::mmap switch_samples \
    log::proccsw log::procexit log::post log::hub --skip counter:: --skip sys::fake::
  cargo +nightly miri test -p pmc-core --lib -- event reading
}
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
# Each lane's output and its own end (status, seconds), so that the log shows how long each
# lane took and whether they are balanced.
run_lane() {
  local n=$1 start=$SECONDS rc=0
  shift
  "$@" >"$logs/$n" 2>&1 || rc=$?
  echo "$rc $((SECONDS - start))" >"$logs/$n.end"
}
run_lane 1 lane_pmc_log &
run_lane 2 lane_linux_core &
wait
read -r rc1 s1 <"$logs/1.end" || rc1=1
read -r rc2 s2 <"$logs/2.end" || rc2=1
echo "miri: lane 1 (pmc-log) took ${s1:-?} s, status $rc1"
echo "miri: lane 2 (pmc-linux, pmc-core) took ${s2:-?} s, status $rc2"
for n in 1 2; do
  printf '\n==> miri lane %s output\n' "$n"
  cat "$logs/$n"
done
[ "$rc1" = 0 ] && [ "$rc2" = 0 ] || { echo "miri: a lane failed (lane 1: $rc1, lane 2: $rc2)"; exit 1; }
