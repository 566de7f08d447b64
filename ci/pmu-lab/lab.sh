#!/usr/bin/env bash
# The PMU lab: runs pmc's hardware paths on QEMU's emulated Armv8 PMUv3 (the
# kernel's real armv8_pmuv3 driver), and the tests whose paths differ on arm64.
# One command, idempotent: bash ci/pmu-lab/lab.sh (as root on Debian bookworm).
# What each step and flag is for, and what the emulator cannot show: README.md.
#
# Environment:
#   PMU_LAB_DIR      cache and output (default target/pmu-lab)
#   PMU_LAB_SETUP=0  skip the host set-up (apt, rustup)
#   PMU_LAB_BOOTS    which boots to run (default "exact sample control uefi smp"; add
#                    "user" for the pure-logic binaries under qemu-user on the host)
#   PMU_LAB_TIMEOUT  seconds per boot before QEMU is killed (default 1500)
#   PMU_LAB_SUITE    what the smp boot runs besides hw.rs's smp cases: "hardware" (default:
#                    the tests whose paths differ with a PMU or on arm64, guest_suite below)
#                    or "full" (every test binary of the workspace in the guest; ~20 min)
#   PMU_LAB_ONLY     test binaries (names, space-separated) the smp boot runs whole, and no
#                    other; their host-only tests run too (for looking into one in the guest:
#                    PMU_LAB_BOOTS=smp PMU_LAB_ONLY=counting)
#   PMU_LAB_KERNEL   the kernel package (default: what linux-image-cloud-arm64 depends on)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/ci/pmu-lab
LAB=${PMU_LAB_DIR:-$ROOT/target/pmu-lab}
TRIPLE=aarch64-unknown-linux-musl
BOOTS=${PMU_LAB_BOOTS:-exact sample control uefi smp}
TIMEOUT=${PMU_LAB_TIMEOUT:-1500}
SUITE=${PMU_LAB_SUITE:-hardware}
ONLY=${PMU_LAB_ONLY:-}
mkdir -p "$LAB/dl" "$LAB/out"
LAB=$(cd "$LAB" && pwd)

T0=$(date +%s.%N)
TPHASE=$T0
phase_done() {
  local now; now=$(date +%s.%N)
  awk -v a="$TPHASE" -v b="$now" -v n="$1" 'BEGIN {printf "pmu-lab: %-8s %6.1f s\n", n, b - a}' | tee -a "$LAB/out/times"
  TPHASE=$now
}
: > "$LAB/out/times"

# --- 1. host set-up ------------------------------------------------------------
if [ "${PMU_LAB_SETUP:-1}" = 1 ]; then
  bash "$HERE/setup.sh"
fi
phase_done setup

# --- 2. guest kernel and busybox (arm64 .debs, no root filesystem needed) ----
kpkg=${PMU_LAB_KERNEL:-}
# A kernel already fetched is reused (its package may since have left the mirror).
if [ -z "$kpkg" ] && [ -s "$LAB/dl/vmlinuz" ] && [ -x "$LAB/dl/busybox" ]; then
  kpkg=$(cat "$LAB/dl/kernel.pkg" 2>/dev/null || true)
fi
if [ -z "$kpkg" ]; then
  # The cloud flavour: 21 MB instead of 60 MB, PMU driver built in, boots as fast.
  kpkg=$(apt-cache depends linux-image-cloud-arm64:arm64 2>/dev/null |
    sed -n 's/^ *Depends: \(linux-image-[0-9][^:]*-cloud-arm64\).*/\1/p' | head -1)
  [ -n "$kpkg" ] || { echo "pmu-lab: cannot resolve linux-image-cloud-arm64:arm64 (apt-get update?)"; exit 1; }
  kpkg=${kpkg%-unsigned}-unsigned
fi
if [ "$(cat "$LAB/dl/kernel.pkg" 2>/dev/null)" != "$kpkg" ] || [ ! -s "$LAB/dl/vmlinuz" ] || [ ! -x "$LAB/dl/busybox" ]; then
  (
    cd "$LAB/dl"
    rm -rf kroot bbroot ./*.deb
    apt-get download "$kpkg:arm64" busybox-static:arm64
    dpkg-deb -x linux-image-*.deb kroot
    dpkg-deb -x busybox-static_*.deb bbroot
    cp kroot/boot/vmlinuz-* vmlinuz
    cp kroot/boot/config-* kernel.config
    cp bbroot/bin/busybox busybox
    rm -rf kroot bbroot ./*.deb
    echo "$kpkg" > kernel.pkg
  )
fi
# The PMU driver must be built in (the initramfs carries no modules):
# CONFIG_ARM_PMU (6.1) or CONFIG_ARM_PMUV3 (6.12+), and perf events at all.
grep -qx 'CONFIG_HW_PERF_EVENTS=y' "$LAB/dl/kernel.config" &&
  grep -qE '^CONFIG_ARM_PMU(V3)?=y' "$LAB/dl/kernel.config" ||
  { echo "pmu-lab: $kpkg does not build the Armv8 PMU driver in"; exit 1; }
echo "pmu-lab: kernel $kpkg"
phase_done fetch

# --- 3. cross-build: static aarch64 musl, linked by rust-lld ------------------
# Env vars only, so host builds and their cache are untouched (own target dir
# subtree target/$TRIPLE). Line tables only: symbols and lines for -G and the
# analyzer's tests, at a fraction of full debug info's size.
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER=rust-lld
export CARGO_PROFILE_DEV_DEBUG=line-tables-only
# zig cc (PyPI's ziglang, which ci/setup.sh installs) is the aarch64 C compiler:
# for ring's C and assembly (the exporter's TLS, through rustls) and for the C
# library's test programs below. cc-rs passes --target=<rust triple>, which zig
# does not parse: the wrapper drops it and names zig's own target. zig cc turns on
# UBSan in unoptimised builds, whose runtime rust-lld does not link: off.
zigpy=
for py in python3 "${XDG_CACHE_HOME:-$HOME/.cache}/pmc-ci/zig-venv/bin/python3"; do
  "$py" -m ziglang version >/dev/null 2>&1 && { zigpy=$py; break; }
done
[ -n "$zigpy" ] || { echo "pmu-lab: no zig to compile C for aarch64 (ring, libpmc's tests); run ci/setup.sh, which installs ziglang from PyPI"; exit 1; }
mkdir -p "$LAB/bin"
cat > "$LAB/bin/aarch64-cc" <<ZCC
#!/bin/sh
for a; do shift; case \$a in --target=*) ;; *) set -- "\$@" "\$a" ;; esac; done
exec "$zigpy" -m ziglang cc -target aarch64-linux-musl -fno-sanitize=all "\$@"
ZCC
printf '#!/bin/sh\nexec "%s" -m ziglang ar "$@"\n' "$zigpy" > "$LAB/bin/aarch64-ar"
chmod +x "$LAB/bin/aarch64-cc" "$LAB/bin/aarch64-ar"
export CC_aarch64_unknown_linux_musl=$LAB/bin/aarch64-cc AR_aarch64_unknown_linux_musl=$LAB/bin/aarch64-ar
cd "$ROOT"
# The smp boot's suite (PMU_LAB_SUITE=hardware): the tests whose paths differ with a PMU
# or on arm64, one line per test binary, "BINARY FILTER..." (libtest name filters, module
# prefixes). The rest of the workspace is arch-independent logic over software events, which
# the host suite runs (README.md, "What runs where").
guest_suite() {
  cat <<'SUITE'
counting
linux info:: ring_real::
cli cli_info:: cli_symbols:: cli_usercallchain::
e2e cli:: dwarf:: foundation:: selftest::
c_api
SUITE
}
# The pure-logic binaries qemu-user runs when PMU_LAB_BOOTS has "user" (parsers with their
# damage and fuzz corpora, the hwpmc simulator, symbolization, the event tables, unit tests).
user_suite() {
  cat <<'SUITE'
main
write_failure
table
named_events
analyze
facade selftest_
exporter hwpmc_sim::
pmc_core
pmc_events
pmc_log
pmc_freebsd
pmc_analyze
pmc_unwind
pmc_process
pmc_testkit
pmc_linux
SUITE
}
# What to build: the binaries above (and hw, truth_matrix, pmcstat, pmc-workload, libpmc.a),
# or every test binary for "full", "user" or PMU_LAB_ONLY.
case " $BOOTS " in *" user "*) full_build=1 ;; *) full_build= ;; esac
[ "$SUITE" != full ] && [ -z "$ONLY" ] || full_build=1
if [ -n "$full_build" ]; then
  build=(--workspace --exclude pmc-bench)
else
  build=(-p pmc-tests -p pmcstat -p pmc-linux -p pmc-capi --test hw --test truth_matrix)
  for b in $(guest_suite | cut -d' ' -f1); do build+=(--test "$b"); done
fi
cargo test "${build[@]}" --no-run --target "$TRIPLE" 2> "$LAB/out/build.log" ||
  { cat "$LAB/out/build.log"; exit 1; }
sed -n 's/^ *Executable .* (\(.*\))$/\1/p' "$LAB/out/build.log" | sort -u > "$LAB/out/tests.list"
TDIR=$ROOT/target/$TRIPLE/debug
for b in pmcstat pmc-workload; do
  [ -x "$TDIR/$b" ] || { echo "pmu-lab: $TDIR/$b was not built"; exit 1; }
done
HW=$ROOT/$(grep '/deps/hw-' "$LAB/out/tests.list" | head -1)
[ "$HW" != "$ROOT/" ] || { echo "pmu-lab: the hardware test binary (tests/tests/hw.rs) was not built"; exit 1; }
# The truth matrix (tests/tests/truth_matrix.rs): its hardware cells run in the exact boot.
MATRIX=$ROOT/$(grep '/deps/truth_matrix-' "$LAB/out/tests.list" | head -1)
[ "$MATRIX" != "$ROOT/" ] || { echo "pmu-lab: the truth matrix binary (tests/tests/truth_matrix.rs) was not built"; exit 1; }
phase_done build

# --- 3b. the C library's test programs, for aarch64 ---------------------------
# The guest has no C compiler: zig cc (PyPI's ziglang, which ci/setup.sh
# installs) builds each libpmc/tests/c program here, statically against the
# aarch64 libpmc.a and the libunwind that Rust's std needs. The c_api test
# binary runs them in the guest (PMC_CAPI_PREBUILT): the whole suite in the smp
# boot, the exact instruction loop in the exact boot.
CAPI=$LAB/out/capi
CAPI_TEST=$ROOT/$(grep '/deps/c_api-' "$LAB/out/tests.list" | head -1)
capi_why=
if [ "$CAPI_TEST" = "$ROOT/" ]; then
  capi_why="its test binary (libpmc/tests/c_api.rs) was not built"
else
  rm -rf "$CAPI"; mkdir -p "$CAPI"
  unwind=$(rustc --print sysroot)/lib/rustlib/$TRIPLE/lib/self-contained/libunwind.a
  for c in "$ROOT"/libpmc/tests/c/*.c; do
    # Stripped, unused sections dropped: 3 MB a program instead of 22 (the small
    # initramfs went from 35 to 100 MB with them unstripped).
    # tests/shim: the OS headers of FreeBSD programs that Linux lacks (as c_api.rs builds them).
    "$zigpy" -m ziglang cc -target aarch64-linux-musl -static -s -Wl,--gc-sections -O1 -Wall -Werror -std=c99 -D_DEFAULT_SOURCE -D_GNU_SOURCE \
      -I "$ROOT/libpmc/include" -I "$ROOT/libpmc/tests/c" -I "$ROOT/libpmc/tests/shim" -o "$CAPI/$(basename "$c" .c)" \
      "$c" "$TDIR/deps/libpmc.a" "$unwind" 2>> "$LAB/out/capi-build.log" ||
      { cat "$LAB/out/capi-build.log"; exit 1; }
  done
  echo "pmu-lab: C programs for aarch64: $(ls "$CAPI" | wc -l) (zig cc, static, libpmc.a)"
fi
phase_done capi

# --- 4. initramfs: busybox, /init, the plans, the binaries at their build paths
# Test binaries find pmcstat, pmc-workload and their fixtures through paths
# fixed at compile time (CARGO_BIN_EXE_*, CARGO_MANIFEST_DIR), so everything
# goes in at the same absolute path as on the host.
pack() { # pack NAME FILE...  -> $LAB/out/NAME.cpio.gz
  local name=$1; shift
  local r=$LAB/out/root-$name
  rm -rf "$r"; mkdir -p "$r/bin" "$r/lab"
  cp "$LAB/dl/busybox" "$r/bin/busybox"
  cp "$HERE/init.sh" "$r/init"; chmod +x "$r/init"
  cp "$LAB"/out/plan-* "$r/lab/"
  local f
  for f in "$@"; do
    mkdir -p "$r$(dirname "$f")"
    cp -a "$f" "$r$f"
  done
  (cd "$r" && find . | cpio -o -H newc --quiet | gzip -1 > "$LAB/out/$name.cpio.gz")
  rm -rf "$r"
}
hwflags="--test-threads=1 --show-output"
# Tests that cannot run in the guest, each with the reason, as "TEST REASON" (TEST: a test's
# full name in its binary, a module prefix `MOD::`, or `*`: the whole binary). Where the smp
# boot runs them (the binary whole, or a filter that is a prefix of TEST) they are left out
# with --skip, reported as skipped (never as passed), and run in the host suite.
host_only_tests() { # BINARY -> lines "FILTER REASON"
  [ -n "$ONLY" ] && return 0
  case $1 in
    c_api)
      [ -z "$capi_why" ] || echo "* $capi_why"
      echo "instructions_of_an_exact_loop asserts exact instruction counts, which only the exact boot's precise icount gives; it runs there"
      echo "process_sampling_into_the_log asserts cpu-clock's samples cover the program's CPU time: an emulated CPU's timer interrupts are late whenever the host is busy, and the expiries hrtimer_forward_now() skips carry no sample (89 of 363 ms in one run), so the count says nothing about pmc; the host suite runs it" ;;
    cli)
      echo "cli_top:: drives pmcstat -T inside tmux, which the guest does not have; the host suite runs it"
      echo "cli_pprof:: its oracle is 'go tool pprof', which the guest does not have; the host suite runs it"
      echo "cli_metrics:: its oracle perf stat -p is not in the guest; the host suite runs it"
      echo "cli_sampling::system_sampling_for_a_duration asserts a wall-clock sampling rate (cpu-clock at 500 Hz): an emulated CPU's timer interrupts are late whenever the host is busy, and late hrtimer periods are dropped, so the count says nothing about pmc; the host suite runs it" ;;
    e2e)
      echo "cli_top:: drives pmcstat -T inside tmux, which the guest does not have; the host suite runs it"
      echo "cgroup:: needs perf's cgroup mode on a cgroup2 mount, which the guest's busybox init does not mount; the host suite runs it against perf stat -a -G"
      echo "perf_export:: its oracle is perf, which the guest does not have; the host suite runs it" ;;
    faults_cli) echo "* its cases (late log readers, SIGSTOP over a run, FIFOs without readers, exports failing under RLIMIT_FSIZE, 1M-frame reports) take minutes each under emulation; the host suite runs it" ;;
    faults_memory) echo "* its cases (100,000 objects, fork storms) take minutes each under emulation; the host suite runs it" ;;
    exporter) echo "prometheus:: its judges are Debian's promtool, prometheus and prometheus-node-exporter, which the guest does not have; the host suite runs it" ;;
    sampling) echo "process_sampling_of_a_launched_program asserts cpu-clock's samples cover the child's CPU time (4 kHz): an emulated CPU's timer interrupts are late whenever the host is busy, and the expiries hrtimer_forward_now() skips carry no sample (0.571 s of periods for 0.98 s of CPU at a host load of 12), so the count says nothing about pmc; the host suite runs it" ;;
  esac
}
# Each built test binary of "NAME FILTER..." lines (stdin) as "NAME PATH FILTER..." (the
# path relative to the root; two crates' `main` are two lines), or "NAME -" if not built.
resolve() {
  local name filters t found
  while read -r name filters; do
    found=
    while read -r t; do
      [ -n "$t" ] || continue
      found=1
      echo "$name $t${filters:+ $filters}"
    done < <(grep "/deps/$name-[0-9a-f]*\$" "$LAB/out/tests.list")
    [ -n "$found" ] || echo "$name -"
  done
}
# The smp boot's binaries: "NAME PATH FILTER..." per line.
smp_suite() {
  local t
  if [ -n "$ONLY" ]; then
    for t in $ONLY; do echo "$t"; done | resolve
  elif [ "$SUITE" = full ]; then
    while read -r t; do
      t=$(basename "$t"); t=${t%-*}
      [ "$t" = hw ] || echo "$t"
    done < "$LAB/out/tests.list" | sort -u | resolve
  else
    guest_suite | resolve
  fi
}
{
  # Precise icount, 1 vCPU: instructions and cycles are exact. Event-counter
  # sampling is left to the 'sample' boot (QEMU bug, see README.md).
  echo "PMC_REQUIRE_HW=1 PMC_LAB_BOOT=exact -- $HW $hwflags --skip sample_boot_ --skip smp_boot_ --skip uefi_boot_"
  # The truth matrix's hardware cells (instructions:u exact, multiplexing,
  # an over-full group refused); its software cells run in the smp boot.
  echo "PMC_REQUIRE_HW=1 PMC_LAB_BOOT=exact -- $MATRIX $hwflags truth_matrix_hardware_cells"
  # The C API's exact loop: instructions:u and cycles:u through pmc(3) and a
  # pmc_measure group, in a C program (tests/c/instructions.c).
  if [ -z "$capi_why" ]; then
    echo "PMC_REQUIRE_HW=1 PMC_LAB_BOOT=exact PMC_CAPI_PREBUILT=$CAPI -- $CAPI_TEST $hwflags instructions_of_an_exact_loop"
  else
    echo "SKIPTEST c_api::instructions_of_an_exact_loop $capi_why"
  fi
} > "$LAB/out/plan-exact"
{
  # -icount shift=1: event-counter overflow works (README.md), deterministically.
  echo "PMC_REQUIRE_HW=1 PMC_LAB_BOOT=sample -- $HW $hwflags sample_boot_"
} > "$LAB/out/plan-sample"
{
  # Negative control: the same test under precise icount, where the
  # emulator's event-counter overflow bug is. It must fail there (results.awk
  # counts its failure as the pass), or it could not tell the bug from
  # working sampling.
  echo "PMC_REQUIRE_HW=1 PMC_LAB_BOOT=control -- $HW $hwflags sample_boot_"
} > "$LAB/out/plan-control"
{
  # UEFI firmware and ACPI: the PMU's ACPI name (armv8_pmuv3_0).
  echo "PMC_REQUIRE_HW=1 PMC_LAB_BOOT=uefi -- $HW $hwflags uefi_boot_"
} > "$LAB/out/plan-uefi"
{
  # 2 vCPUs, no icount: per-CPU and migration cases, then the suite (smp_suite).
  echo "PMC_REQUIRE_HW=1 PMC_LAB_BOOT=smp -- $HW $hwflags smp_boot_"
  smp_suite | while read -r name t filters; do
    if [ "$t" = - ]; then
      echo "SKIPBIN $name was not built"
      continue
    fi
    why=$(host_only_tests "$name" | sed -n 's/^\* //p')
    if [ -n "$why" ]; then
      echo "SKIPBIN $name $why"
      continue
    fi
    skips=
    while read -r test why; do
      [ -n "$test" ] || continue
      selected=${filters:+no}
      for f in $filters; do
        case $test in "$f"*) selected= ;; esac
      done
      [ -z "$selected" ] || continue
      echo "SKIPTEST $name::$test $why"
      skips="$skips --skip $test"
    done < <(host_only_tests "$name")
    echo "PMC_LAB_BOOT=smp PMC_CAPI_PREBUILT=$CAPI -- $ROOT/$t --show-output${filters:+ $filters}$skips"
  done
} > "$LAB/out/plan-smp"
guest_bins() { # the test binaries the smp boot runs, as absolute paths
  local name t
  smp_suite | while read -r name t _; do
    [ "$t" = - ] || echo "$ROOT/$t"
  done
}
srcs=$(git -C "$ROOT" ls-files | grep -vE '^(target|\.git)/' | sed "s|^|$ROOT/|")
# shellcheck disable=SC2086
# The exact boot runs only the C API's exact loop: its program alone goes in small.
capi_files= capi_exact=
[ -n "$capi_why" ] || { capi_files="$CAPI_TEST $(ls -d "$CAPI"/*)"; capi_exact="$CAPI_TEST $CAPI/instructions"; }
pack small "$HW" "$MATRIX" "$TDIR/pmcstat" "$TDIR/pmc-workload" $capi_exact
case " $BOOTS " in *" smp "*)
# shellcheck disable=SC2046,SC2086
pack full "$HW" "$TDIR/pmcstat" "$TDIR/pmc-workload" $(guest_bins) $capi_files $srcs ;;
esac
ls -l "$LAB"/out/*.cpio.gz | awk '{printf "pmu-lab: %s %.1f MB\n", $NF, $5/1e6}'
phase_done pack

# --- 5. boots -----------------------------------------------------------------
boot() { # boot NAME SMP ICOUNT INITRD [FIRMWARE]
  local name=$1 smp=$2 icount=$3 initrd=$4 fw=${5:-} rc=0
  local ic=() bios=() acpi=
  [ "$icount" = none ] || ic=(-icount "shift=$icount")
  # EDK2 loads the same -kernel/-initrd through fw_cfg; acpi=force makes
  # the kernel take the PMU from ACPI (MADT) instead of the device tree.
  [ -z "$fw" ] || { bios=(-bios "$fw"); acpi=" acpi=force"; }
  echo "pmu-lab: boot $name: -smp $smp ${ic[*]}"
  timeout "$TIMEOUT" qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on -smp "$smp" -m 2G "${ic[@]}" "${bios[@]}" \
    -nographic -no-reboot -nic none -kernel "$LAB/dl/vmlinuz" -initrd "$LAB/out/$initrd.cpio.gz" \
    -append "console=ttyAMA0 panic=-1 loglevel=3 pmulab.boot=$name$acpi" </dev/null |
    sed -u 's/\r$//' > "$LAB/out/console-$name.log" || rc=$?
  [ "$rc" = 0 ] || echo "PMULAB_QEMU_EXIT rc=$rc" >> "$LAB/out/console-$name.log"
  phase_done "$name"
}
# The pure-logic test binaries under qemu-user on the host (user_suite; only when
# PMU_LAB_BOOTS has "user"), one at a time on one core while the 1-vCPU boots use the other. Their
# randomized and fixed-iteration tests run a tenth of their iterations
# (PMC_TEST_DIVISOR, PROPTEST_CASES; the host suite runs them all), which the
# summary says. Same console format as the guest's /init, for results.awk.
USER_DIVISOR=10 USER_CASES=32
# qemu-user runs one test binary on one host core (--test-threads=1: its tests run one
# after another). PMU_LAB_USER_LANES lanes (default 2: CI's cores) take binaries from one
# queue side by side, each lane's console kept in its own file, binary by binary between
# PMULAB_BEGIN/END, and joined into console-user.log at the end. Two lanes fill the core the
# 1-vCPU boots leave free, then both cores once the boots are done (one lane ran alone for
# about 170 s there).
USER_LANES=${PMU_LAB_USER_LANES:-2}
[ "$USER_LANES" -ge 1 ] 2>/dev/null || USER_LANES=1
user_next() { # the next "NAME PATH FILTER..." line of the queue, or nothing when it is empty
  (
    flock 9
    local n
    n=$(cat "$LAB/out/user.next")
    echo $((n + 1)) > "$LAB/out/user.next"
    sed -n "$((n + 1))p" "$LAB/out/user.queue"
  ) 9>"$LAB/out/user.lock"
}
user_lane() {
  local line name filters t rc
  while line=$(user_next) && [ -n "$line" ]; do
    read -r name t filters <<<"$line"
    [ "$t" != - ] || { echo "PMULAB_SKIPBIN $name was not built"; continue; }
    echo "PMULAB_BEGIN $ROOT/$t"
    # A failing binary is reported by its rc, and the run goes on to the next
    # (under set -e a bare failure here ended the whole qemu-user run).
    rc=0
    # shellcheck disable=SC2086
    (cd "$ROOT" && PMC_TEST_DIVISOR=$USER_DIVISOR PROPTEST_CASES=$USER_CASES \
      timeout "$TIMEOUT" qemu-aarch64 "$ROOT/$t" --show-output --test-threads=1 $filters </dev/null 2>&1) || rc=$?
    echo "PMULAB_END $ROOT/$t rc=$rc"
  done
}
usermode() {
  local t0 lane
  t0=$(date +%s.%N)
  echo 0 > "$LAB/out/user.next"
  user_suite | resolve > "$LAB/out/user.queue"
  for lane in $(seq 1 "$USER_LANES"); do
    user_lane > "$LAB/out/console-user-$lane.log" 2>&1 &
  done
  wait
  for lane in $(seq 1 "$USER_LANES"); do
    cat "$LAB/out/console-user-$lane.log"
  done
  echo PMULAB_DONE
  awk -v a="$t0" -v b="$(date +%s.%N)" -v l="$USER_LANES" 'BEGIN {printf "pmu-lab: user      %6.1f s (qemu-user, %d lanes, alongside the boots)\n", b - a, l}' >> "$LAB/out/times"
}
upid=
wait_user() {
  [ -n "$upid" ] || return 0
  wait "$upid" || true
  upid=
  tail -1 "$LAB/out/times"
}
case " $BOOTS " in *" user "*)
  echo "pmu-lab: qemu-user: $(qemu-aarch64 --version | head -1); iterations of randomized tests divided by $USER_DIVISOR, PROPTEST_CASES=$USER_CASES"
  usermode > "$LAB/out/console-user.log" 2>&1 &
  upid=$! ;;
esac
for b in $BOOTS; do
  case $b in
    user) ;; # started above, alongside the boots
    exact) boot exact 1 0 small ;;
    sample) boot sample 1 1 small ;;
    control) boot control 1 0 small ;;
    uefi) boot uefi 1 0 small /usr/share/qemu-efi-aarch64/QEMU_EFI.fd ;;
    smp) wait_user; boot smp 2 none full ;;
    *) echo "pmu-lab: unknown boot $b"; exit 2 ;;
  esac
done
wait_user

# --- 6. results ---------------------------------------------------------------
for b in $BOOTS; do
  awk -v boot="$b" -f "$HERE/results.awk" "$LAB/out/console-$b.log"
done > "$LAB/out/results"
grep -v '^PMULAB_TOTAL' "$LAB/out/results"
# Fast-read and read(2) latencies measured in the guest (emulated: only the
# ratio is informative), for BENCHMARKS.md.
for b in $BOOTS; do cat "$LAB/out/console-$b.log"; done | grep -a '^PMULAB_BENCH ' | sed 's/^PMULAB_BENCH /pmu-lab: bench /' | tee "$LAB/out/bench"
awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN {printf "pmu-lab: total    %6.1f s\n", b - a}' | tee -a "$LAB/out/times"
echo "pmu-lab: consoles, results and times in $LAB/out"
# The failures again, just above the count: CI shows the tail of this output,
# and a FAIL line in the middle of 700 results can be cut from it.
if grep -q '^FAIL ' "$LAB/out/results"; then
  echo "pmu-lab: failed:"
  grep '^FAIL ' "$LAB/out/results" | cut -c1-600
fi
# The last line, counted by CI's test summary.
awk '/^PMULAB_TOTAL/ {p += $2; f += $3; s += $4} END {printf "%d passed, %d failed, %d skipped\n", p, f, s; exit (f > 0 || NR == 0)}' "$LAB/out/results"
