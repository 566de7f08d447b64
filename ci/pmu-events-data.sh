#!/usr/bin/env bash
# The outside judge for pmc-events' generated table: the kernel's own
# pmu-events JSON, from Debian's linux-source package (apt only). Extracts it
# once into a cache, checks that pmc-events/gen/gen.py regenerates exactly the
# committed src/generated.rs from it, and prints the PMC_EVENTS_ARCH value the
# table test (pmc-events/tests/table/table.rs) reads. Idempotent.
# Usage: eval "$(bash ci/pmu-events-data.sh)"   (prints only the export line on stdout)
set -euo pipefail
cd "$(dirname "$0")/.."
pkg=linux-source-6.12
cache=${PMC_EVENTS_CACHE:-/var/tmp/pmc-ci-pmu-events}
arch="$cache/$pkg/tools/perf/pmu-events/arch"
mkdir -p "$cache"
if ! [ -f "$arch/x86/mapfile.csv" ]; then
  (
    cd "$cache"
    ls "$pkg"_*.deb >/dev/null 2>&1 ||
      apt-get download "$pkg" >&2 ||
      { apt-get update >&2 && apt-get download "$pkg" >&2; }
    dpkg-deb --fsys-tarfile "$pkg"_*.deb | tar -x ./usr/src/"$pkg".tar.xz
    tar -xJf usr/src/"$pkg".tar.xz --wildcards "$pkg/tools/perf/pmu-events/arch/x86/*" \
      "$pkg/tools/perf/pmu-events/arch/arm64/*"
    rm -rf usr "$pkg"_*.deb
  )
fi
regen=$(mktemp)
trap 'rm -f "$regen"' EXIT
python3 pmc-events/gen/gen.py "$arch" "$regen" >&2
if ! cmp -s "$regen" pmc-events/src/generated.rs; then
  # Debian's security archive keeps only the newest linux-source-6.12, so the
  # JSON can move under us: say so loudly, and leave the table test to skip
  # (a stale table is a reason to regenerate, not a broken build).
  echo "NOTICE: pmc-events/src/generated.rs is not what gen.py makes of today's $pkg JSON;" \
    "regenerate with pmc-events/gen/fetch.sh. The table test will skip." >&2
  diff "$regen" pmc-events/src/generated.rs | head -20 >&2
  exit 1
fi
echo "pmu-events: generated.rs regenerates exactly from $pkg's JSON" >&2
echo "export PMC_EVENTS_ARCH=$arch"
