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
# crate is built once and a lane's tests start as soon as its build is done.
#
# The work is a queue of jobs, longest first; each lane takes the next job nobody has taken
# (an atomic rename claims it) when it is free, so the lanes even out whatever the machine's
# load does to each job's time. A job's failure fails the step, whichever job it is (the
# lanes before this only reported each lane's last command's status).
#
# What each costs (issue 35; `-- -Zunstable-options --report-time --test-threads=1`, on the
# shared 2-core machine under load, so about twice a quiet run's times): with fixed lanes,
# each building its own copy, pmc-log 382 s beside pmc-linux + pmc-core 641 s; with the shared
# build (25 s) and fewer Miri iterations in the slowest ring and round-trip tests, 298 and 338
# s, then 333 and 271 s with the record tests moved (the same tests, the load differing); from
# this queue, 216 and 211 s (build cached, a lighter load). The jobs, in three runs:
# pmc-linux's unit tests 143-222 s (the spool's full-disk test most of it: its name says
# `record`), pmc-core's event and reading tests 166-236 s (the event parser's proptests: 4
# cases each, most of their time spent making the cases), pmc-log's round trips 40-68 s,
# pmc-linux's ring tests 18-40 s and record tests 29-35 s, pmc-log's unit tests 16-23 s,
# write_failure 3-8 s.
# Longest first (the times of the last rehearsal, a fresh clone on the loaded machine):
# pmc-core 113 s, pmc-log's round trips 44 s, pmc-linux's record tests 36 s and ring tests
# 28 s, pmc-linux's unit tests 18 s (133 s with the spool's test), pmc-log's unit tests 20 s,
# write_failure 4 s.
job_1() { cargo +nightly miri test -p pmc-core --lib -- event reading; }
job_2() { cargo +nightly miri test -p pmc-log --test main -- roundtrip::; }
# pmc-linux's `linux` test binary: its ring and record modules (the others need a kernel).
job_3() { cargo +nightly miri test -p pmc-linux --test linux -- record::; }
job_4() { cargo +nightly miri test -p pmc-linux --test linux -- ring::; }
job_5() {
  # pmc-linux's unit tests but the fake-kernel ones (counter::, sys::fake::): the fake keys its
  # state by real pipe fds checked against /proc/self/fd, which Miri's emulated descriptors do
  # not mirror; they run natively in `cargo test`. Nor the spool's (log::spool::): its filter
  # term `record` matched the full-disk test, most of this job's 133-222 s, and the spool is a
  # mutex, a condvar and a thread over pmc-log's block parser, with no unsafe code of its own
  # (pmc-log's jobs run that parser); it runs natively in `cargo test`.
  cargo +nightly miri test -p pmc-linux --lib -- ring record rdpmc sys::mmap switch_samples \
    log::proccsw log::procexit log::post log::hub --skip counter:: --skip sys::fake:: \
    --skip log::spool::
}
job_6() { cargo +nightly miri test -p pmc-log --lib; }
job_7() { cargo +nightly miri test -p pmc-log --test write_failure; }
jobs=7
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
mkdir "$logs/queue"
for j in $(seq 1 $jobs); do : >"$logs/queue/$j"; done
# A lane: takes jobs until none is left; its output, then its end (failed jobs, seconds), so
# that the log shows how long each lane took and whether they are balanced.
run_lane() {
  local n=$1 start=$SECONDS j t failed=''
  for j in $(seq 1 $jobs); do
    mv "$logs/queue/$j" "$logs/took-$j" 2>/dev/null || continue
    t=$SECONDS
    echo "--- miri job $j (lane $n): $(declare -f "job_$j" | grep -o 'cargo .*' | head -n 1)"
    "job_$j" || failed="$failed $j"
    echo "--- miri job $j took $((SECONDS - t)) s"
  done >"$logs/$n" 2>&1
  echo "$((SECONDS - start)) ${failed:-none}" >"$logs/$n.end"
}
run_lane 1 &
run_lane 2 &
wait
failed=''
for n in 1 2; do
  read -r s f <"$logs/$n.end" || { s='?' f="lane $n did not finish"; }
  echo "miri: lane $n took $s s; failed jobs: $f ($(grep -o '^--- miri job [0-9]* took [0-9]* s' "$logs/$n" | sed 's/^--- miri //' | paste -sd, -))"
  [ "$f" = none ] || failed="$failed $f"
done
for n in 1 2; do
  printf '\n==> miri lane %s output\n' "$n"
  cat "$logs/$n"
done
[ -z "$failed" ] || { echo "miri: failed:$failed"; exit 1; }
