#!/usr/bin/env bash
# The full check, as CI runs it (called by .ci/run and by the GitHub workflow).
# Each step prints a header; any failure fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "toolchain setup"
bash ci/setup.sh

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (host)"
cargo clippy --workspace --all-targets -- -D warnings

step "cargo doc"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps

step "cross-check FreeBSD"
bash ci/cross-check.sh

step "check unsafe stays in sys seams"
bash ci/check-unsafe.sh

if [ "$(uname -s)" = Linux ] && [ "$(id -u)" = 0 ] && ! [ -d /sys/kernel/tracing/events ]; then
  step "mount tracefs (for tracepoint tests)"
  mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || echo "tracefs could not be mounted; tracepoint tests will skip with a reason"
fi

step "tests: cargo test --workspace"
cargo test --workspace
