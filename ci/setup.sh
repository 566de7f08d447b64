#!/usr/bin/env bash
# Installs the rustup components and targets the checks need. Idempotent.
set -euo pipefail
have_component() { rustup component list --installed 2>/dev/null | grep -q "^$1"; }
for c in rustfmt clippy; do
  have_component "$c" || rustup component add "$c"
done
rustup target list --installed | grep -qx x86_64-unknown-freebsd || rustup target add x86_64-unknown-freebsd
# aarch64 FreeBSD is a tier-3 target without a prebuilt std: checked only if present.
rustup target list --installed | grep -qx aarch64-unknown-freebsd || rustup target add aarch64-unknown-freebsd 2>/dev/null || true
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
# go tool pprof (Debian golang-go): the oracle of pmcstat/tests/cli_pprof.rs, which SKIPs without it.
command -v go >/dev/null 2>&1 || { [ "$(id -u)" = 0 ] && { apt-get install -y -qq golang-go >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go >/dev/null; }; }; } || echo "ci/setup.sh: golang-go not installed; the go tool pprof test will SKIP" >&2
# cargo-fuzz (ci/fuzz.sh) builds with -Zsanitizer: the nightly toolchain (no extra component).
# cargo-fuzz itself comes from crates.io, once: `cargo install` leaves it in ~/.cargo/bin.
if [ "${PMC_CI_FUZZ:-1}" != 0 ]; then
  rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
  command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
fi
