#!/usr/bin/env bash
# The PMU lab's PAPI boot: PAPI's own ctests and validation tests (Debian's
# papi-examples) on QEMU's emulated Cortex-A57, whose PMU Debian's arm64
# libpapi (libpfm4's arm_ac57) counts: the same aarch64 programs, built
# against Debian's papi.h, run on Debian's libpapi and on pmc's (by
# LD_LIBRARY_PATH), side by side; then papi-tools on both. Judged: pmc fails
# no test Debian's passes, and fails only where Debian's fails on the same
# line. One boot, -smp 1 with precise -icount (exact instruction counts).
#
# bash ci/pmu-lab/papi.sh (root, Debian bookworm; reuses ci/pmu-lab's set-up
# and its target/pmu-lab cache). Environment: PMU_LAB_DIR, PMU_LAB_SETUP=0,
# PMU_LAB_TIMEOUT (seconds, default 3000), PAPI_LAB_ONLY (test names, e.g.
# "ctests/zero validation_tests/papi_tot_ins").
#
# Two halves, for a caller that runs the boot beside other work (ci/check.sh:
# the boot takes one core for about 3 minutes, the builds both): --build
# does steps 1-6 (set-up, the builds, the initramfs) and stops; --boot does
# steps 7-8 (the boot and the judgement) on what --build left. Neither: both.
set -euo pipefail
phase=all
case ${1:-} in
  --build) phase=build ;;
  --boot) phase=boot ;;
  '') ;;
  *) echo "usage: ci/pmu-lab/papi.sh [--build | --boot]" >&2; exit 2 ;;
esac
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/ci/pmu-lab
LAB=${PMU_LAB_DIR:-$ROOT/target/pmu-lab}
P=$LAB/papi
TIMEOUT=${PMU_LAB_TIMEOUT:-3000}
EXAMPLES=/usr/share/doc/papi-examples/examples
mkdir -p "$LAB/dl" "$P"
say() { printf 'papi-lab: %s\n' "$*"; }

if [ "$phase" != boot ]; then
rm -f "$P/initrd.gz" # --boot boots only what this build made

# --- 1. host set-up: the lab's, aarch64 glibc's Rust target, zig, papi-examples --
if [ "${PMU_LAB_SETUP:-1}" = 1 ]; then
  bash "$HERE/setup.sh"
  rustup target list --installed | grep -qx aarch64-unknown-linux-gnu || rustup target add aarch64-unknown-linux-gnu
fi
zig_venv=${XDG_CACHE_HOME:-$HOME/.cache}/pmc-ci/zig-venv
[ -x "$zig_venv/bin/cargo-zigbuild" ] && export PATH="$zig_venv/bin:$PATH"
command -v cargo-zigbuild >/dev/null || { say "no cargo-zigbuild (ci/setup.sh installs it)"; exit 1; }
[ -d "$EXAMPLES/ctests" ] || { say "no $EXAMPLES (apt-get install papi-examples)"; exit 1; }
ZIG="python3 -m ziglang"

# --- 2. guest kernel and busybox, as ci/pmu-lab/lab.sh fetches them ----------
if [ ! -s "$LAB/dl/vmlinuz" ] || [ ! -x "$LAB/dl/busybox" ]; then
  kpkg=$(apt-cache depends linux-image-cloud-arm64:arm64 2>/dev/null |
    sed -n 's/^ *Depends: \(linux-image-[0-9][^:]*-cloud-arm64\).*/\1/p' | head -1)
  [ -n "$kpkg" ] || { say "cannot resolve linux-image-cloud-arm64:arm64"; exit 1; }
  (
    cd "$LAB/dl"
    rm -rf kroot bbroot ./*.deb
    apt-get download "${kpkg%-unsigned}-unsigned:arm64" busybox-static:arm64
    dpkg-deb -x linux-image-*.deb kroot
    dpkg-deb -x busybox-static_*.deb bbroot
    cp kroot/boot/vmlinuz-* vmlinuz
    cp kroot/boot/config-* kernel.config
    cp bbroot/bin/busybox busybox
    rm -rf kroot bbroot ./*.deb
    echo "${kpkg%-unsigned}-unsigned" > kernel.pkg
  )
fi

# --- 3. Debian's arm64 PAPI and what it runs on (glibc, libpfm4, papi-tools) ----
if [ ! -e "$P/deb/root/usr/lib/aarch64-linux-gnu/libpapi.so.7.0" ]; then
  rm -rf "$P/deb" && mkdir -p "$P/deb"
  (
    cd "$P/deb"
    apt-get download libc6:arm64 libgcc-s1:arm64 libpapi7.0:arm64 libpfm4:arm64 libsde1:arm64 papi-tools:arm64
    for d in ./*.deb; do dpkg-deb -x "$d" root; done
    rm -f ./*.deb
  )
fi
ARM_LIB=$P/deb/root/usr/lib/aarch64-linux-gnu

# --- 4. pmc's libpapi for aarch64 glibc (zig links; debug info stripped) -----
(
  cd "$ROOT"
  CARGO_PROFILE_DEV_STRIP=debuginfo cargo zigbuild -q -p pmc-papi --lib --target aarch64-unknown-linux-gnu.2.36
)
PMC_SO=$ROOT/target/aarch64-unknown-linux-gnu/debug/libpapi.so

# --- 5. PAPI's tests for aarch64, against Debian's papi.h and libpapi --------
mkdir -p "$P/inc"
cp /usr/include/papi.h /usr/include/papiStdEventDefs.h "$P/inc/"
PAPI_CC="$ZIG cc -target aarch64-linux-gnu.2.36" PAPI_AR="$ZIG ar" \
  PAPI_LDFLAGS="-Wl,-rpath-link,$ARM_LIB -Wl,-rpath-link,$P/deb/root/lib/aarch64-linux-gnu" \
  bash "$ROOT/ci/papi-ctests.sh" --build-only --include "$P/inc" --lib "$ARM_LIB/libpapi.so.7.0" --out "$P/build"

# --- 6. initramfs --------------------------------------------------------------
stage=$P/stage
rm -rf "$stage" && mkdir -p "$stage/bin" "$stage/papi/pmc" "$stage/usr/lib" "$stage/papi/ctests" "$stage/papi/validation_tests"
cp "$LAB/dl/busybox" "$stage/bin/busybox"
cp "$HERE/papi-init.sh" "$stage/init" && chmod +x "$stage/init"
cp -a "$P/deb/root/lib" "$stage/lib"
cp -a "$ARM_LIB" "$stage/usr/lib/" && rm -rf "$stage/usr/lib/aarch64-linux-gnu/gconv"
cp -a "$P/deb/root/usr/bin" "$stage/usr/bin.papi" && cp -a "$stage/usr/bin.papi/." "$stage/bin/" && rm -rf "$stage/usr/bin.papi"
cp "$PMC_SO" "$stage/papi/pmc/libpapi.so.7.0"
# The tests: each once, less PAPI's exclusions and the timer tests that sleep
# 35 s between them (realtime, virttime, clockres_pthreads: the host suite runs them).
: > "$stage/papi/list"
for suite in ctests validation_tests; do
  for f in "$P/build/$suite"/*; do
    t=$(basename "$f")
    [ -x "$f" ] && [ -f "$f" ] && file "$f" | grep -q 'ARM aarch64' || continue
    cp "$f" "$stage/papi/$suite/"
    case "$t" in realtime|virttime|clockres_pthreads|attach_target|burn) continue ;; esac
    grep -qx "$suite/$t" <(sed 's/[[:space:]]*$//' "$EXAMPLES/run_tests_exclude.txt") && continue
    if [ -n "${PAPI_LAB_ONLY:-}" ] && ! printf '%s\n' $PAPI_LAB_ONLY | grep -qx "$suite/$t"; then continue; fi
    echo "$suite/$t" >> "$stage/papi/list"
  done
done
# A boot of nothing would judge nothing and pass: every test asked for must be there.
[ -s "$stage/papi/list" ] || { say "no test to run (none built for aarch64? see $P/build)"; exit 1; }
for t in ${PAPI_LAB_ONLY:-}; do
  grep -qx "$t" "$stage/papi/list" || { say "$t was asked for (PAPI_LAB_ONLY) but not built or excluded"; exit 1; }
done
say "$(wc -l < "$stage/papi/list") tests, twice"
(cd "$stage" && find . | cpio -o -H newc 2>/dev/null | gzip -1) > "$P/initrd.gz"
fi
[ "$phase" != build ] || exit 0
[ -s "$P/initrd.gz" ] && [ -s "$LAB/dl/vmlinuz" ] || { say "nothing to boot: run ci/pmu-lab/papi.sh --build first"; exit 1; }

# --- 7. one boot: -smp 1, precise icount, Cortex-A57 (libpfm4's arm_ac57) ----
console=$P/console.log
say "booting (QEMU's Cortex-A57, -icount shift=0); the console goes to $console"
set +e
timeout "$TIMEOUT" qemu-system-aarch64 -M virt -cpu cortex-a57 -smp 1 -m 2G -icount shift=0 \
  -nographic -no-reboot -nic none -kernel "$LAB/dl/vmlinuz" -initrd "$P/initrd.gz" \
  -append 'console=ttyAMA0 panic=-1 loglevel=3' </dev/null >"$console" 2>&1
rc=$?
set -e
grep -q PAPILAB_DONE "$console" || { say "the boot did not finish (exit $rc); see $console"; exit 1; }

# --- 8. the table and the judgement ------------------------------------------
tr -d '\r' < "$console" | awk -v table="$P/table.md" '
  $1 == "PAPILAB" && ($2 == "papi" || $2 == "pmc") {
    key = $3; v[$2, key] = $4; d = ""; for (i = 5; i <= NF; i++) d = d (i > 5 ? " " : "") $i
    det[$2, key] = d; if (!(key in seen)) { seen[key] = 1; order[++n] = key }
  }
  $1 == "PAPITOOL" { print }
  END {
    print "| test | PAPI 7.0 (Debian, arm64) | pmc | note |" > table
    print "|---|---|---|---|" > table
    bad = 0
    for (i = 1; i <= n; i++) {
      k = order[i]; a = v["papi", k]; b = v["pmc", k]
      note = (b == "FAILED") ? det["pmc", k] : ""
      printf "| %s | %s | %s | %s |\n", k, a, b, note > table
      cnt["papi " a]++; cnt["pmc " b]++
      if (a == "PASSED" && b != "PASSED") { print "JUDGE FAIL " k ": PASSED on Debian libpapi, " b " on pmc (" det["pmc", k] ")"; bad++ }
      else if (b == "FAILED" && !(a == "FAILED" && det["papi", k] == det["pmc", k])) { print "JUDGE FAIL " k ": FAILED on pmc (" det["pmc", k] "); Debian libpapi: " a " " det["papi", k]; bad++ }
    }
    s = ""; for (c in cnt) s = s c " " cnt[c] ", "
    print "papi-lab: " n " tests: " s bad " judged wrong"
    exit bad > 0
  }'
