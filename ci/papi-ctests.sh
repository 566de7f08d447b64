#!/usr/bin/env bash
# PAPI's own test suite (Debian's papi-examples: ctests/, validation_tests/,
# testlib/) built and run against a libpapi, one line per test:
#   NAME<TAB>PASSED|SKIPPED|FAILED|NOTBUILT<TAB>detail
#
# usage: ci/papi-ctests.sh --include DIR --lib FILE --out DIR [--jobs N] [--timeout S]
#                           [--no-build] [TEST...]
#   --include DIR  the papi.h the tests compile against (Debian's: /usr/include)
#   --lib FILE     the libpapi.so they link (its soname, libpapi.so.7.0, is
#                  looked up at run time in FILE's directory first)
#   --out DIR      where the copies of the sources and the programs go
#   --jobs N       builds at once (default 2; PAPI_CTESTS_RUN_JOBS: runs, 4)
#   --no-build     runs the programs an earlier run built in DIR (with the
#                  caller's LD_LIBRARY_PATH, which their RUNPATH yields to:
#                  how a program built against one libpapi runs on another)
#   --build-only   builds, runs nothing (a cross build: the PMU lab's guest runs them)
# PAPI_CC: the C compiler (default cc; the PMU lab's: zig cc -target aarch64-linux-gnu);
# PAPI_LDFLAGS: more link flags (a cross build's -Wl,-rpath-link to the target's libraries);
# PAPI_AR: the archiver (default ar).
#   TEST...        only these tests (default: every test PAPI's Makefiles build,
#                  less those PAPI's run_tests_exclude.txt excludes)
# The sources are compiled by PAPI's own Makefiles (ctests/Makefile,
# validation_tests/Makefile) with only the paths overridden. Exit status 0
# even when tests fail: the caller compares the two columns.
set -euo pipefail

examples=${PAPI_EXAMPLES:-/usr/share/doc/papi-examples/examples}
# A test's time limit: clockres_pthreads takes 8 s of CPU and 21 s alone on a
# loaded 2-vCPU VM, and timed out at 60 s beside the other suite's runs.
include='' lib='' out='' jobs=2 timeout=${PAPI_CTESTS_TIMEOUT:-300} build=1
# Test runs at once: most of their time is the timer tests' sleeps
# (realtime, virttime and clockres_pthreads sleep 35 s between them).
run_jobs=${PAPI_CTESTS_RUN_JOBS:-4}
CC=${PAPI_CC:-cc} AR=${PAPI_AR:-ar}
run=1
only=()
while [ $# -gt 0 ]; do
  case $1 in
    --include) include=$2; shift 2 ;;
    --lib) lib=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --build-only) run=0; shift ;;
    -*) echo "papi-ctests.sh: unknown option $1" >&2; exit 2 ;;
    *) only+=("$1"); shift ;;
  esac
done
[ -n "$out" ] && { [ "$build" = 0 ] || { [ -n "$include" ] && [ -n "$lib" ]; }; } || { sed -n '2,20p' "$0" >&2; exit 2; }
[ -d "$examples/ctests" ] || { echo "papi-ctests.sh: no $examples/ctests (apt-get install papi-examples)" >&2; exit 3; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
V=$out/validation_tests T=$out/testlib
if [ "$build" = 1 ]; then
include=$(cd "$include" && pwd) lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
rm -rf "$out/testlib" "$out/ctests" "$out/validation_tests"
cp -r "$examples/testlib" "$examples/ctests" "$examples/validation_tests" "$out/"

# The run-time library directory: the soname beside the library given.
mkdir -p "$out/lib"
ln -sf "$lib" "$out/lib/libpapi.so.7.0"

# testlib: PAPI's libtestlib.a (test_utils with the loops and the clock core,
# which the ctests' rules then need not name), and test_utils alone for the
# validation tests (their own flops_testcode.c defines do_flops again).
(
  cd "$out/testlib"
  for f in test_utils do_loops clockcore; do
    $CC -O1 -g -I. -I"$include" -c "$f.c" -o "$f.o"
  done
  $AR rcs libtestlib.a test_utils.o do_loops.o clockcore.o
  $AR rcs libtestutils.a test_utils.o
)
inc="-I. -I$include -I$T -I$V"
(
  cd "$V"
  for f in display_error cache_helper branches_testcode busy_work cache_testcode flops_testcode instructions_testcode matrix_multiply; do
    $CC -g -O2 -Wall $inc -c "$f.c"
  done
)
fi

# Every target of a Makefile's ALL, by make itself.
targets() { make -s -C "$1" -f Makefile --eval 'print-all: ; @echo $(ALL)' print-all 2>/dev/null; }
excluded() { grep -qx "$1" <(sed 's/[[:space:]]*$//' "$examples/run_tests_exclude.txt"); }

build() { # DIR TESTLIB TARGETS...
  local dir=$1 tl=$2; shift 2
  make -k -j"$jobs" -C "$dir" CC="$CC" CC_R="$CC -pthread" INCLUDE="$inc" TESTLIB="$tl" PAPILIB="$lib" \
    DOLOOPS= CLOCKCORE= testlibdir="$T" validationlibdir="$V" \
    TESTINS="$V/instructions_testcode.o" TESTFLOPS="$V/flops_testcode.o" \
    TESTCYCLES="$V/busy_work.o" DISPLAYERROR="$V/display_error.o" \
    LDFLAGS="-Wl,-z,now -Wl,--enable-new-dtags -Wl,-rpath,$out/lib ${PAPI_LDFLAGS:-}" "$@" >"$dir/build.log" 2>&1 || true
}

# The tests, each once (a test is in several of the Makefile's groups).
ctests=$(targets "$out/ctests" | tr ' ' '\n' | awk 'NF && !seen[$0]++')
vtests=$(targets "$out/validation_tests" | tr ' ' '\n' | awk 'NF && !seen[$0]++')
want() { [ ${#only[@]} -eq 0 ] && return 0; local t; for t in "${only[@]}"; do [ "$t" = "$1" ] && return 0; done; return 1; }
cbuild=() vbuild=()
for t in $ctests; do want "$t" && cbuild+=("$t"); done
for t in $vtests; do want "$t" && vbuild+=("$t"); done
if [ "$build" = 1 ]; then
  # attach_target is exec'd by the attach tests (by PATH).
  [ ${#cbuild[@]} -gt 0 ] && build "$out/ctests" "$T/libtestlib.a" attach_target "${cbuild[@]}"
  [ ${#vbuild[@]} -gt 0 ] && build "$out/validation_tests" "$T/libtestutils.a" "${vbuild[@]}"
fi

[ "$run" = 1 ] || exit 0

# Runs one test (its verdict into DIR/TEST.verdict): the last PASSED,
# SKIPPED or FAILED line test_utils.c printed, or FAILED for a crash or a
# timeout.
run() { # SUITE DIR TEST
  local suite=$1 dir=$2 t=$3 log status detail rc
  if [ ! -x "$dir/$t" ]; then
    printf '%s/%s\tNOTBUILT\tsee %s/build.log\n' "$suite" "$t" "$dir" >"$dir/$t.verdict"
    return
  fi
  log=$dir/$t.out
  rc=0
  (cd "$dir" && PATH="$dir:$PATH" PAPI_OUTPUT_DIRECTORY="$dir/hl-$t" \
    timeout -k 5 "$timeout" "./$t" TESTS_QUIET) >"$log" 2>&1 </dev/null || rc=$?
  status=$(grep -aoE 'PASSED with WARNING|PASSED|SKIPPED|FAILED' "$log" | tail -n1 || true)
  detail=''
  case $status in
    'PASSED with WARNING') status=PASSED detail='with warning' ;;
    PASSED|SKIPPED) ;;
    FAILED) detail=$(grep -aA2 'FAILED' "$log" | grep -a -m1 -E 'Error|Line' | tr '\t' ' ' || true) ;;
    *) status=FAILED
       if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then detail="timed out after ${timeout}s"; else detail="exit $rc, no verdict"; fi ;;
  esac
  [ "$status" = PASSED ] && [ "$rc" != 0 ] && { status=FAILED detail="PASSED printed, but exit $rc"; }
  printf '%s/%s\t%s\t%s\n' "$suite" "$t" "$status" "$detail" >"$dir/$t.verdict"
}
export -f run
export timeout
list=()
for t in "${cbuild[@]}"; do excluded "ctests/$t" || list+=("ctests $out/ctests $t"); done
for t in "${vbuild[@]}"; do excluded "validation_tests/$t" || list+=("validation_tests $out/validation_tests $t"); done
printf '%s\n' "${list[@]}" | xargs -P "$run_jobs" -L 1 bash -c 'run "$@"' _
for l in "${list[@]}"; do
  set -- $l
  cat "$2/$3.verdict"
done
