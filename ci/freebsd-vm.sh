#!/bin/sh
# The FreeBSD VM job (.github/workflows/ci.yml `freebsd`), for anyone with a
# FreeBSD machine: run it as root from the checkout (`sh ci/freebsd-vm.sh`).
# It needs rust (`pkg install -y rust`) and loads hwpmc itself.
#
#  1. the whole test suite, every workspace member (pmc-bench included);
#  2. freebsd-audit-3's findings A and B on the real kernel, by name, with
#     PMC_NO_SKIP=1 (a skip is a failure here):
#     - a second logging Backend after the first is dropped (the throwaway
#       SOFT PMC that removes the shut-down owner must ask for a capability);
#     - a refused re-attach is never sent and the PMC keeps counting;
#     - another profiler's attach refused on the same counter row (EBUSY)
#       leaves the first profiler's target measured (P_HWPMC given back);
#  3. every other test against the real driver (`#[ignore]`d elsewhere);
#  4. the C programs against FreeBSD's libpmc and this one, judged alike;
#  5. the self-test on the real driver (no row may FAIL; SKIPs say what the
#     machine lacks).
set -eu
cd "$(dirname "$0")/.."

kldload hwpmc 2>/dev/null || true
if ! kldstat | grep -q hwpmc; then
  echo "hwpmc not loadable: the real-driver tests below will fail" >&2
fi

cargo test --workspace

PMC_NO_SKIP=1 cargo test -p pmc-freebsd --test main -- --include-ignored --exact \
  real_hwpmc::freebsd::a_second_logging_backend_after_the_first_is_dropped \
  real_hwpmc::freebsd::busy_and_already_attached_errors \
  real_hwpmc::freebsd::another_profilers_busy_row_leaves_the_target_measured

PMC_NO_SKIP=1 PMC_FREEBSD_REAL=1 cargo test -p pmc-freebsd -- --include-ignored

sh ci/freebsd-capi.sh

if kldstat | grep -q hwpmc; then
  cargo run -q -p pmcstat -- --selftest
else
  echo "hwpmc not loaded: pmcstat --selftest not run" >&2
  exit 1
fi
