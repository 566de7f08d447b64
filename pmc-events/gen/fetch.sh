#!/bin/sh
# Fetches the kernel's pmu-events JSON from Debian's linux-source package (apt
# only, no other network) and regenerates src/generated.rs.
# Usage: pmc-events/gen/fetch.sh [WORKDIR]   (needs apt-get, dpkg-deb, tar, xz, python3)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=${1:-$(mktemp -d)}
pkg=linux-source-6.12
cd "$work"
[ -f "$pkg"_*.deb ] 2>/dev/null || apt-get download "$pkg"
dpkg-deb --fsys-tarfile "$pkg"_*.deb | tar -x ./usr/src/"$pkg".tar.xz
tar -xJf usr/src/"$pkg".tar.xz --wildcards "$pkg/tools/perf/pmu-events/arch/x86/*" "$pkg/tools/perf/pmu-events/arch/arm64/*"
python3 "$here/gen.py" "$work/$pkg/tools/perf/pmu-events/arch" "$here/../src/generated.rs"
echo "PMC_EVENTS_ARCH=$work/$pkg/tools/perf/pmu-events/arch  (for the oracle test)"
