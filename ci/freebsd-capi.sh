#!/bin/sh
# The C library's test programs (libpmc/tests/c) built twice in the FreeBSD VM
# job: against FreeBSD's own libpmc (/usr/include/pmc.h, -lpmc) and against this
# project's (libpmc/include, libpmc.a over pmc-freebsd), then run both ways on
# the same work and judged by the same truths as libpmc/tests/c_api.rs: N fresh
# pages are N page faults (plus a few of the program's own), a counted child's
# faults are its pages. The two libraries must agree on what each program
# prints. Every program builds against this library; all but those written for
# its extensions (measure.c, the README's examples) build against FreeBSD's
# too, the extensions left out where PMC_LIBPMC_EXTENSIONS is not defined
# (portable.h), each as C and as C++. api.c's and the other judges'
# expectations are Linux's (errno.c's na cases, parse.c's malformed records,
# which FreeBSD's own parser reads past): they run in c_api.rs on Linux, and
# only build here. The shims of libpmc/tests/shim are Linux's: FreeBSD builds
# use its own <sys/cpuset.h>, <sys/sysctl.h> and <err.h>.
#
# Run as root with hwpmc loaded (.github/workflows/ci.yml, job freebsd); it
# cannot run on Linux (no hwpmc, no FreeBSD libpmc) and says so.
set -eu
cd "$(dirname "$0")/.."
if [ "$(uname -s)" != FreeBSD ]; then
  echo "ci/freebsd-capi.sh: FreeBSD only (FreeBSD's libpmc and hwpmc); not run on $(uname -s)"
  exit 0
fi
if ! kldstat -q -m hwpmc 2>/dev/null && ! kldstat | grep -q hwpmc; then
  echo "ci/freebsd-capi.sh: FAIL: hwpmc is not loaded (kldload hwpmc)"
  exit 1
fi
# The static library, and the system libraries it needs as rustc names them.
native=$(cargo rustc -p pmc-capi --lib --crate-type staticlib -- --print native-static-libs 2>&1 |
  sed -n 's/.*native-static-libs: //p' | tail -n 1)
lib=target/debug/libpmc.a
[ -f "$lib" ] || { echo "ci/freebsd-capi.sh: FAIL: cargo did not build $lib"; exit 1; }
echo "ci/freebsd-capi.sh: $lib needs: $native"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
cflags="-O1 -Wall -Werror -std=gnu99 -Ilibpmc/tests/c"
cxxflags="-O1 -Wall -Werror -std=gnu++17 -Ilibpmc/tests/c"
for c in libpmc/tests/c/*.c; do
  n=$(basename "$c" .c)
  # This library: its header first, its static library (the system's libpmc.so
  # must not be picked up at run time).
  # shellcheck disable=SC2086
  cc $cflags -Ilibpmc/include -o "$out/$n.ours" "$c" "$lib" $native ||
    fail "build $n against this project's libpmc"
  # shellcheck disable=SC2086
  c++ -x c++ $cxxflags -Ilibpmc/include -o "$out/$n.ours-cxx" "$c" -x none "$lib" $native ||
    fail "build $n as C++ against this project's libpmc"
  case $n in
    readme_example | readme_measure | measure) continue ;; # this library's extensions
  esac
  # shellcheck disable=SC2086
  cc $cflags -o "$out/$n.freebsd" "$c" -lpmc -lpthread ||
    fail "build $n against FreeBSD's libpmc (the program is not FreeBSD libpmc code)"
  # shellcheck disable=SC2086
  c++ -x c++ $cxxflags -o "$out/$n.freebsd-cxx" "$c" -x none -lpmc -lpthread ||
    fail "build $n as C++ against FreeBSD's libpmc"
done

# in RANGE_LO RANGE_HI VALUE
in_range() { [ "$3" -ge "$1" ] && [ "$3" -le "$2" ]; }
# judge WHAT LO HI COUNT...: every count within [LO, HI]
judge() {
  what=$1 lo=$2 hi=$3
  shift 3
  for v in "$@"; do
    if in_range "$lo" "$hi" "$v"; then
      echo "ok $what: $v in [$lo, $hi]"
    else
      fail "$what: $v not in [$lo, $hi]"
    fi
  done
}
slack=16
for which in ours freebsd; do
  [ -x "$out/pagefaults.$which" ] || continue
  for n in 1000 5000; do
    v=$("$out/pagefaults.$which" PAGE_FAULT.ALL "$n" | awk '{print $NF}') ||
      { fail "pagefaults.$which PAGE_FAULT.ALL $n exited non-zero"; continue; }
    judge "pagefaults ($which libpmc) of $n fresh pages" "$n" $((n + slack)) "$v"
  done
  v=$("$out/child.$which" 3000 | awk '/^child/ {print $2}') || fail "child.$which exited non-zero"
  judge "child ($which libpmc), 3000 pages in a counted child" 3000 $((3000 + 4 * slack)) "${v:-0}"
  counts=$("$out/threads.$which" 4 1000 | awk '/^thread/ {print $NF}') || fail "threads.$which exited non-zero"
  [ "$(echo "$counts" | wc -w)" -eq 4 ] || fail "threads ($which libpmc): 4 rows wanted, got: $counts"
  # shellcheck disable=SC2086
  judge "threads ($which libpmc), 4 x 1000 pages" 1000 $((4 * 1000 + 16 * slack)) $counts
done
echo "ci/freebsd-capi.sh: $fails failure(s)"
[ "$fails" -eq 0 ]
