#!/usr/bin/env bash
# Installs the rustup components and targets the checks need. Idempotent.
set -euo pipefail
have_component() { rustup component list --installed 2>/dev/null | grep -q "^$1"; }
for c in rustfmt clippy; do
  have_component "$c" || rustup component add "$c"
done
rustup target list --installed | grep -qx x86_64-unknown-freebsd || rustup target add x86_64-unknown-freebsd
# aarch64 FreeBSD is a tier-3 target without a prebuilt std: ci/cross-check.sh
# type-checks it with nightly's -Zbuild-std, which needs rust-src.
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
rustup +nightly component list --installed 2>/dev/null | grep -q '^rust-src' || rustup +nightly component add rust-src
# Linking for FreeBSD from Linux (ci/cross-check.sh): cargo-zigbuild drives zig
# as the linker, with zig's FreeBSD libc stubs (FreeBSD 14.0), both from PyPI.
# Into the current Python if pip may install there, else into a venv that
# ci/cross-check.sh puts on PATH (a Debian system Python refuses pip, PEP 668).
zig_venv=${XDG_CACHE_HOME:-$HOME/.cache}/pmc-ci/zig-venv
[ -x "$zig_venv/bin/cargo-zigbuild" ] && export PATH="$zig_venv/bin:$PATH"
zig_pkgs=('ziglang==0.17.*' 'cargo-zigbuild==0.24.*')
zig_ok() { command -v cargo-zigbuild >/dev/null && python3 -m ziglang version 2>/dev/null | grep -q '^0\.17\.'; }
if ! zig_ok; then
  python3 -m pip install --quiet --disable-pip-version-check "${zig_pkgs[@]}" ||
    { python3 -m venv "$zig_venv" && "$zig_venv/bin/pip" install --quiet --disable-pip-version-check "${zig_pkgs[@]}" &&
      export PATH="$zig_venv/bin:$PATH"; }
  command -v pyenv >/dev/null && pyenv rehash || true
fi
zig_ok || { echo "ci/setup.sh: ziglang 0.17 / cargo-zigbuild not usable after pip install" >&2; exit 1; }
# libpmc's Python module is installed by pip in its test (libpmc/tests/c_api.rs,
# --no-build-isolation: no network then): setuptools and wheel. Where pip may not
# install (PEP 668), the test skips visibly.
python3 -c 'import setuptools, wheel' 2>/dev/null ||
  python3 -m pip install --quiet --disable-pip-version-check setuptools wheel || true
# An OS with no backend: checks that the facade's Unsupported stand-in compiles.
rustup target list --installed | grep -qx x86_64-apple-darwin || rustup target add x86_64-apple-darwin 2>/dev/null || true
# Oracles of pmcstat's analysis outputs: GNU gprof and addr2line (binutils)
# for -g and -m/-a, callgrind_annotate (valgrind) for -F. Their tests print
# SKIP without them; installed here when apt-get is usable as root.
if { ! command -v gprof >/dev/null || ! command -v callgrind_annotate >/dev/null; } \
   && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  apt-get install -y --no-install-recommends binutils valgrind >/dev/null 2>&1 \
    || echo "ci/setup.sh: could not install binutils/valgrind; the gprof/callgrind oracle tests will SKIP" >&2
fi
# file(1): ci/cross-check.sh checks that the linked pmcstat is a FreeBSD ELF.
command -v file >/dev/null || { [ "$(id -u)" = 0 ] && apt-get install -y -qq file >/dev/null 2>&1; } ||
  echo "ci/setup.sh: file(1) not installed; ci/cross-check.sh will fail" >&2
# go tool pprof (Debian golang-go): the oracle of pmcstat/tests/cli_pprof.rs, which SKIPs without it.
command -v go >/dev/null 2>&1 || { [ "$(id -u)" = 0 ] && { apt-get install -y -qq golang-go >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go >/dev/null; }; }; } || echo "ci/setup.sh: golang-go not installed; the go tool pprof test will SKIP" >&2
# cargo-fuzz (ci/fuzz.sh) builds with -Zsanitizer: the nightly toolchain (no extra component).
# cargo-fuzz itself comes from crates.io, once: `cargo install` leaves it in ~/.cargo/bin.
if [ "${PMC_CI_FUZZ:-1}" != 0 ]; then
  rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
  command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
fi
# The judges of the Prometheus exporter (pmc-exporter/tests/prometheus.rs): Debian's prometheus
# (the server, and promtool for `promtool check metrics`) and prometheus-node-exporter (its perf
# collector side by side, and the same --web.config.file), with curl and openssl (the TLS and
# basic-auth judge in pmcstat/tests/cli_metrics.rs). The tests SKIP visibly without them;
# installed here as root.
if { ! command -v promtool >/dev/null || ! command -v prometheus-node-exporter >/dev/null \
     || ! command -v curl >/dev/null || ! command -v openssl >/dev/null; } \
   && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus prometheus-node-exporter curl openssl >/dev/null 2>&1 ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus prometheus-node-exporter curl openssl >/dev/null; }; } ||
    echo "ci/setup.sh: prometheus/prometheus-node-exporter not installed; the exporter's judge tests will SKIP" >&2
fi
# PAPI's own judges of libpapi (pmc-papi): Debian's libpapi-dev (its papi.h, to compare
# ours with), papi-tools (papi_avail & co., run on our library) and papi-examples (PAPI's
# ctests and validation tests, built by ci/papi-ctests.sh). The tests SKIP visibly without.
if { ! [ -f /usr/include/papi.h ] || ! command -v papi_avail >/dev/null || ! [ -d /usr/share/doc/papi-examples/examples/ctests ]; } \
   && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libpapi-dev papi-tools papi-examples >/dev/null 2>&1 ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libpapi-dev papi-tools papi-examples >/dev/null; }; } ||
    echo "ci/setup.sh: libpapi-dev/papi-tools/papi-examples not installed; pmc-papi's judge tests will SKIP" >&2
fi
