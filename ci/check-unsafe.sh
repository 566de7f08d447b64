#!/usr/bin/env bash
# Fails if `unsafe` appears in library source outside the `sys` seams.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=$(grep -rnE '\bunsafe\b' --include='*.rs' pmc-events/src pmc-core/src pmc-process/src pmc-linux/src pmc-freebsd/src pmc-unsupported/src pmc-log/src pmc/src pmc-selftest/src pmcstat/src pmc-analyze/src pmc-unwind/src pmc-filemap/src libpmc/src libpapi/src \
  | grep -v '/src/sys/' | grep -vE '^\S+:\s*//|unsafe_code|unsafe_op_in_unsafe_fn|undocumented_unsafe_blocks|//.*unsafe' || true)
if [ -n "$bad" ]; then
  echo "unsafe outside */src/sys/:"; echo "$bad"; exit 1
fi
echo "ok: unsafe only in */src/sys/"
