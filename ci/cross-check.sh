#!/usr/bin/env bash
# FreeBSD from a Linux host: every workspace member, lint-clean and linked.
#
#  x86_64-unknown-freebsd (rustup's prebuilt std):
#    1. cargo clippy -D warnings (a superset of `cargo check`), all targets,
#       for the default features and --all-features, and the library crates
#       with --no-default-features;
#    2. every binary, example, bench and test binary linked against FreeBSD
#       14.0's libc with cargo-zigbuild (zig's FreeBSD libc stubs), so a
#       missing libc symbol or a Linux-only call fails here, not on a user's
#       machine; pmcstat is checked to be a FreeBSD ELF (ld-elf.so.1).
#  aarch64-unknown-freebsd (tier 3, no prebuilt std): type-checked with
#    nightly's -Zbuild-std, all targets, default and all features.
#
# Every member, pmc-bench included: its Linux suite and the perf-event
# crates are Linux-only dependencies; on FreeBSD it measures pmc-freebsd
# against the bare hwpmc system call.
#
# Everything lands in the run's target dir (target/<triple>/), so a second
# run is incremental. ci/setup.sh installs the toolchains; PMC_CI_FREEBSD_LINK=0
# or PMC_CI_FREEBSD_AARCH64=0 leaves a part out, loudly (a skip, not a pass).
set -euo pipefail
cd "$(dirname "$0")/.."

# Where ci/setup.sh put ziglang and cargo-zigbuild if pip could not install them globally.
zig_venv=${XDG_CACHE_HOME:-$HOME/.cache}/pmc-ci/zig-venv
[ -x "$zig_venv/bin/cargo-zigbuild" ] && export PATH="$zig_venv/bin:$PATH"

ws=(--workspace --all-targets)
t0=$SECONDS
lap() { echo "    ($1: $((SECONDS - t0)) s)"; t0=$SECONDS; }

x86=x86_64-unknown-freebsd
rustup target list --installed | grep -qx "$x86" ||
  { echo "cross-check: $x86 is not installed (run ci/setup.sh)" >&2; exit 1; }
for features in "" --all-features; do
  echo "--- $x86: cargo clippy ${features:-(default features)}"
  # shellcheck disable=SC2086 # $features is one flag or none
  cargo clippy --target "$x86" "${ws[@]}" $features -- -D warnings
  lap "clippy ${features:-default}"
done
# Without default features: per crate, as a user depends on it (across the
# workspace, feature unification would turn the defaults back on).
nodefault=(-p pmc -p pmc-core -p pmc-process -p pmc-log -p pmc-freebsd -p pmc-linux)
echo "--- $x86: cargo clippy --no-default-features ${nodefault[*]}"
cargo clippy --target "$x86" "${nodefault[@]}" --all-targets --no-default-features -- -D warnings
lap "clippy --no-default-features"

if [ "${PMC_CI_FREEBSD_LINK:-1}" = 0 ]; then
  echo "--- $x86: SKIPPED (not passed): the zig link step (PMC_CI_FREEBSD_LINK=0)"
elif ! command -v cargo-zigbuild >/dev/null; then
  echo "cross-check: cargo-zigbuild is not installed (ci/setup.sh installs it from PyPI)" >&2
  exit 1
else
  echo "--- $x86: link every binary and test binary (cargo zigbuild, FreeBSD 14.0 libc)"
  # Without debug info and rustc's incremental caches: this build is only linked and inspected,
  # never debugged, and every undefined symbol is still resolved at link time (a second run
  # still rebuilds only what changed). Issue 35: from scratch 217 -> 147 s wall, 272 -> 176 s
  # CPU, on the loaded 2-core machine.
  CARGO_INCREMENTAL=0 cargo zigbuild --target "$x86" "${ws[@]}" \
    --config profile.dev.debug=0 --config 'profile.dev.package."*".debug=0'
  lap "zigbuild link"
  pmcstat_elf=${CARGO_TARGET_DIR:-target}/$x86/debug/pmcstat
  desc=$(file -b "$pmcstat_elf")
  echo "    pmcstat: $desc"
  case "$desc" in
    *"ELF 64-bit"*x86-64*"interpreter /libexec/ld-elf.so.1"*"for FreeBSD"*) ;;
    *) echo "cross-check: $pmcstat_elf is not a FreeBSD x86-64 ELF" >&2; exit 1 ;;
  esac
fi

arm=aarch64-unknown-freebsd
if [ "${PMC_CI_FREEBSD_AARCH64:-1}" = 0 ]; then
  echo "--- $arm: SKIPPED (not passed): PMC_CI_FREEBSD_AARCH64=0"
elif ! rustup +nightly component list --installed 2>/dev/null | grep -q '^rust-src'; then
  echo "cross-check: $arm needs the nightly toolchain with rust-src (ci/setup.sh installs them)" >&2
  exit 1
else
  for features in "" --all-features; do
    echo "--- $arm: cargo +nightly check -Zbuild-std ${features:-(default features)}"
    # shellcheck disable=SC2086
    cargo +nightly check -Zbuild-std --target "$arm" "${ws[@]}" $features
    lap "aarch64 check ${features:-default}"
  done
fi

# An OS without a backend: every crate builds there, libraries and binaries (pmc::Native
# is pmc::Unsupported, pmc::launch answers Unsupported, pmc-linux type-checks with its
# fixed Linux values; pmcstat says "no backend for this OS" when asked to measure).
# Left out: pmc-tests, the cross-crate tests of Linux and FreeBSD, and pmc-capi (libpmc:
# FreeBSD's C API on Linux and FreeBSD; it uses EBADFD and sigtimedwait, which macOS has
# not). Through
# cargo-zigbuild: ring (pmc-exporter's TLS) compiles C for the target, which the host's
# cc cannot (zig ships macOS's headers).
if ! rustup target list --installed | grep -qx x86_64-apple-darwin; then
  echo "--- x86_64-apple-darwin: target not installed; skipped"
elif ! command -v cargo-zigbuild >/dev/null; then
  echo "--- x86_64-apple-darwin: SKIPPED (not passed): cargo-zigbuild is not installed (ci/setup.sh)"
else
  echo "--- x86_64-apple-darwin (no backend): cargo-zigbuild clippy, every crate but pmc-tests and pmc-capi"
  cargo-zigbuild clippy --target x86_64-apple-darwin --workspace --exclude pmc-tests --exclude pmc-capi -- -D warnings
  lap "darwin clippy"
fi
