#!/usr/bin/env bash
# A counting-only library user's cold build, side by side with perf-event2's.
#
#   bash bench/cold-build.sh            # one build of each
#   COLD_BUILD_ROUNDS=3 bash bench/cold-build.sh
#
# Two scratch projects outside the repository, each with its own fresh target
# directory: one depends on pmc with `default-features = false` (a path
# dependency on this checkout), the other on perf-event2 from crates.io; each
# counts its own page faults. Both take the repository's Cargo.lock, so the
# crates' versions are the ones the workspace tests (perf-event2 is pmc-bench's
# dependency), and `cargo fetch` runs first, so no download is timed. Each round
# builds both, one after the other (the order alternates), with `cargo build`
# (the debug profile a newcomer's first build uses).
#
# Both are built as a user of published crates builds them: without incremental
# compilation. Cargo compiles registry and git dependencies non-incrementally,
# but path dependencies (pmc here) incrementally, which costs a cold build more
# (measured 5.3 s of CPU against 7.0-9.1 s for the same pmc units), while
# perf-event2, a registry crate, never paid it. COLD_BUILD_INCREMENTAL=1 builds
# pmc as a path dependency is built by default, for comparison.
#
# It prints, per build, the compiler's CPU time (user + sys of cargo and every
# rustc it ran, from /usr/bin/time) and the wall time, and the units cargo
# compiled; then the median ratios pmc / perf-event2 and "met" or "MISSED"
# against the goal (issue 35): at most 1.5x. The verdict is on CPU time, which a
# loaded machine does not change much; the wall ratio is printed beside it (on
# an idle machine it follows the CPU ratio, less what the second core overlaps).
# Not a test: its numbers depend on the machine, so it never fails on them.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${COLD_BUILD_ROUNDS:-1}
INCREMENTAL=${COLD_BUILD_INCREMENTAL:-0}
GOAL=1.5
TMP=$(mktemp -d "${TMPDIR:-/tmp}/pmc-cold-build.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

scratch() { # scratch NAME DEPENDENCY-LINE MAIN.RS
  mkdir -p "$TMP/$1/src"
  cat >"$TMP/$1/Cargo.toml" <<EOF
[package]
name = "$1"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
$2

[workspace]
EOF
  printf '%s\n' "$3" >"$TMP/$1/src/main.rs"
  cp "$ROOT/Cargo.lock" "$TMP/$1/Cargo.lock"
  (cd "$TMP/$1" && cargo fetch -q)
}

scratch count-pmc "pmc = { path = \"$ROOT/pmc\", default-features = false }" '
use pmc::{Allocation, Backend, Pmc};

fn main() -> pmc::Result<()> {
    let backend = pmc::Native::open()?;
    let mut faults = backend.allocate(&Allocation::counting("page-faults".parse()?))?;
    faults.start()?;
    let buf = vec![7u8; 1 << 22];
    faults.stop()?;
    println!("{} page faults for {} bytes", faults.read()?.value, buf.len());
    Ok(())
}'

scratch count-pe2 'perf-event2 = "0.7"' '
use perf_event::events::Software;
use perf_event::Builder;

fn main() -> std::io::Result<()> {
    let mut faults = Builder::new(Software::PAGE_FAULTS).build()?;
    faults.enable()?;
    let buf = vec![7u8; 1 << 22];
    faults.disable()?;
    println!("{} page faults for {} bytes", faults.read()?, buf.len());
    Ok(())
}'

build() { # build NAME -> "CPU WALL UNITS"
  local dir=$TMP/$1
  rm -rf "$dir/target"
  /usr/bin/time -f '%U %S %e' -o "$dir/time" \
    env CARGO_TARGET_DIR="$dir/target" CARGO_INCREMENTAL="$INCREMENTAL" cargo build -q --offline --manifest-path "$dir/Cargo.toml" \
    2>"$dir/build.log" || { cat "$dir/build.log"; exit 1; }
  local units
  units=$(find "$dir/target/debug/.fingerprint" -mindepth 1 -maxdepth 1 -type d | wc -l)
  awk -v u="$units" '{printf "%.2f %.2f %d\n", $1 + $2, $3, u}' "$dir/time"
}

echo "cold debug builds (CARGO_INCREMENTAL=$INCREMENTAL), $ROUNDS round(s); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %-12s %9s %9s %6s\n' round build "cpu (s)" "wall (s)" units
for r in $(seq 1 "$ROUNDS"); do
  order="count-pmc count-pe2"
  [ $((r % 2)) = 1 ] || order="count-pe2 count-pmc"
  for p in $order; do
    read -r cpu wall units < <(build "$p")
    printf '%-6s %-12s %9s %9s %6s\n' "$r" "$p" "$cpu" "$wall" "$units"
    echo "$cpu $wall" >>"$TMP/$p.times"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
pc=$(cut -d' ' -f1 "$TMP/count-pmc.times" | median)
ec=$(cut -d' ' -f1 "$TMP/count-pe2.times" | median)
pw=$(cut -d' ' -f2 "$TMP/count-pmc.times" | median)
ew=$(cut -d' ' -f2 "$TMP/count-pe2.times" | median)
awk -v pc="$pc" -v ec="$ec" -v pw="$pw" -v ew="$ew" -v g="$GOAL" 'BEGIN {
  rc = pc / ec; rw = pw / ew
  printf "pmc (default-features = false) / perf-event2: cpu %.1f / %.1f s = %.2fx, wall %.1f / %.1f s = %.2fx\n", pc, ec, rc, pw, ew, rw
  printf "goal: cpu ratio <= %.1fx: %s\n", g, (rc <= g ? "met" : "MISSED")
}'
