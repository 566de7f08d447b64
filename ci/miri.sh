#!/usr/bin/env bash
# Miri on the pure parsing and ring-buffer code (needs nightly with miri).
set -euo pipefail
cd "$(dirname "$0")/.."
rustup +nightly component add miri rust-src
cargo +nightly miri setup
MIRIFLAGS="${MIRIFLAGS:--Zmiri-strict-provenance}" cargo +nightly miri test -p pmc-log
MIRIFLAGS="${MIRIFLAGS:--Zmiri-strict-provenance}" cargo +nightly miri test -p pmc-linux --lib -- ring record
MIRIFLAGS="${MIRIFLAGS:--Zmiri-strict-provenance}" cargo +nightly miri test -p pmc-core --lib -- event reading
