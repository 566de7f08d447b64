#!/usr/bin/env bash
# Checks (and lints) the crates that must build for FreeBSD, from a Linux host.
set -euo pipefail
cd "$(dirname "$0")/.."
for target in x86_64-unknown-freebsd aarch64-unknown-freebsd; do
  if rustup target list --installed | grep -qx "$target"; then
    echo "--- $target"
    cargo check --target "$target" -p pmc-core -p pmc-log -p pmc-freebsd -p pmc -p pmcstat
    cargo clippy --target "$target" -p pmc-core -p pmc-log -p pmc-freebsd -p pmc -p pmcstat -- -D warnings
  else
    echo "--- $target: target not installed (no prebuilt std from rustup); skipped"
  fi
done
# An OS without a backend: the facade must still build (pmc::Native is pmc::Unsupported).
if rustup target list --installed | grep -qx x86_64-apple-darwin; then
  echo "--- x86_64-apple-darwin (no backend)"
  cargo clippy --target x86_64-apple-darwin -p pmc-core -p pmc -- -D warnings
else
  echo "--- x86_64-apple-darwin: target not installed; skipped"
fi
