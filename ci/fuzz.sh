#!/usr/bin/env bash
# The project's cargo-fuzz targets (fuzz/), each run for a bounded time, its corpus seeded
# from fuzz/seeds/. A crash fails the step and names the artifact that reproduces it
# (`cargo +nightly fuzz run <target> <artifact>`). The in-test harness (the same harnesses for
# a fixed number of deterministic mutations) runs in `cargo test`.
#
# Called by ci/check.sh (PMC_CI_FUZZ=0 leaves it out); PMC_FUZZ_SECONDS sets each target's
# time (default 20). Needs the nightly toolchain (-Zsanitizer); installs cargo-fuzz from
# crates.io when it is not on PATH (cached in ~/.cargo/bin afterwards).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${PMC_FUZZ_SECONDS:-20}
if ! rustup toolchain list | grep -q '^nightly'; then
  rustup toolchain install nightly --profile minimal
fi
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
work=${PMC_FUZZ_DIR:-$PWD/fuzz/target/ci}
mkdir -p "$work"
start=$(date +%s)
cargo +nightly fuzz build -O
echo "fuzz: build took $(($(date +%s) - start)) s"
# Each target runs one libFuzzer process on one core: PMC_FUZZ_JOBS of them side by side (default
# the number of CPUs, at most 4), each with its full time. A target's lines are printed when it ends.
jobs=${PMC_FUZZ_JOBS:-$(nproc)}
[ "$jobs" -ge 1 ] 2>/dev/null || jobs=1
[ "$jobs" -le 4 ] || jobs=4
run_target() {
  local t=$1 corpus="$work/corpus/$1" t0
  mkdir -p "$corpus" "$work/artifacts/$t"
  [ -d "fuzz/seeds/$t" ] && cp -n fuzz/seeds/"$t"/* "$corpus"/ 2>/dev/null || true
  if [ "$t" = elf_object ] && [ -z "$(ls -A "$corpus")" ]; then
    # No committed seed (fuzz/seeds/README.md): a small ELF of this system.
    cp "$(command -v true)" "$corpus/true" 2>/dev/null || true
  fi
  t0=$(date +%s)
  if cargo +nightly fuzz run -O "$t" "$corpus" -- -max_total_time="$secs" -rss_limit_mb=2048 \
      -artifact_prefix="$work/artifacts/$t/" -print_final_stats=1 >"$work/$t.log" 2>&1; then
    echo "fuzz $t: ok, $(grep -m1 -oE 'stat::number_of_executed_units: *[0-9]+' "$work/$t.log" | grep -oE '[0-9]+$') runs in $(($(date +%s) - t0)) s"
  else
    echo "fuzz $t: FAILED (crash, leak, timeout or out of memory); log $work/$t.log:"
    grep -E 'ERROR|panicked|SUMMARY|artifact|Test unit written' "$work/$t.log" | head -20
    for a in "$work/artifacts/$t"/*; do
      [ -e "$a" ] && echo "fuzz $t: artifact $a (reproduce: cargo +nightly fuzz run $t $a)"
    done
    return 1
  fi
}
targets=$(cargo +nightly fuzz list)
echo "fuzz: $(echo $targets | wc -w) targets, $secs s each, $jobs at a time"
# Each target's status goes to a file: `wait -n` may reap a job before `wait PID` asks for it.
rm -f "$work"/*.status
for t in $targets; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  { rc=0; run_target "$t" || rc=$?; echo "$rc" >"$work/$t.status"; } &
done
wait
failed=0
for t in $targets; do
  [ "$(cat "$work/$t.status" 2>/dev/null)" = 0 ] || { failed=1; echo "fuzz $t: did not pass"; }
done
echo "fuzz: $(($(date +%s) - start)) s in all"
exit "$failed"
