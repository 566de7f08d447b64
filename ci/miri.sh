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

# Two lanes side by side (Miri interprets on one core; CI has two), sharing one target
# directory: cargo holds its lock while it builds, not while the tests run (measured with
# nightly cargo: a second `cargo miri test` there ran while the first's tests did), so each
# crate is built once and a lane's tests start as soon as its build is done. Each lane's output
# is printed whole when both are done, then the status of each.
#
# What each costs (issue 35; `-- -Zunstable-options --report-time --test-threads=1`, on the
# shared 2-core machine under load, so about twice a quiet run's times): before this layout,
# lane 1 (pmc-log) 382 s and lane 2 (pmc-linux, pmc-core) 641 s, each building its own copy;
# this layout, with fewer Miri iterations in the slowest ring and round-trip tests, 298 and
# 338 s in the same conditions (the shared build 25 s), before pmc-linux's record tests
# (about 38 s) moved from lane 2 to lane 1 to even them. Lane 1: pmc-linux's unit tests 153 s
# (the spool's full-disk test most of it: its name says `record`), pmc-log's unit tests 23 s,
# its round trips 68 s, write_failure 8 s. Lane 2: pmc-linux's ring tests about 40 s (75 s
# with the record tests), pmc-core's event and reading tests about 200 s (the event parser's
# proptests: 4 cases each, most of their time spent making the cases).
lane_1() {
  # pmc-linux's unit tests but the fake-kernel ones (counter::, sys::fake::): the fake keys its
  # state by real pipe fds checked against /proc/self/fd, which Miri's emulated descriptors do
  # not mirror; they run natively in `cargo test`.
  cargo +nightly miri test -p pmc-linux --lib -- ring record rdpmc sys::mmap switch_samples \
    log::proccsw log::procexit log::post log::hub --skip counter:: --skip sys::fake::
  # pmc-linux's `linux` test binary: its record module here, its ring module in lane 2 (the
  # other modules need a kernel).
  cargo +nightly miri test -p pmc-linux --test linux -- record::
  cargo +nightly miri test -p pmc-log --lib
  cargo +nightly miri test -p pmc-log --test main -- roundtrip::
  cargo +nightly miri test -p pmc-log --test write_failure
}
lane_2() {
  cargo +nightly miri test -p pmc-linux --test linux -- ring::
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
run_lane 1 lane_1 &
run_lane 2 lane_2 &
wait
read -r rc1 s1 <"$logs/1.end" || rc1=1
read -r rc2 s2 <"$logs/2.end" || rc2=1
echo "miri: lane 1 (pmc-linux unit and record tests, pmc-log) took ${s1:-?} s, status $rc1"
echo "miri: lane 2 (pmc-linux ring tests, pmc-core) took ${s2:-?} s, status $rc2"
for n in 1 2; do
  printf '\n==> miri lane %s output\n' "$n"
  cat "$logs/$n"
done
[ "$rc1" = 0 ] && [ "$rc2" = 0 ] || { echo "miri: a lane failed (lane 1: $rc1, lane 2: $rc2)"; exit 1; }
