#!/bin/busybox sh
# /init of the PMU lab's PAPI boot (ci/pmu-lab/papi.sh): PAPI's ctests and
# validation tests, built for aarch64 against Debian's papi.h, run on
# Debian's libpapi (found by the loader's default path) and on pmc's
# (LD_LIBRARY_PATH=/papi/pmc), then papi-tools on both. Lines the host
# parses: PAPILAB <lib> <suite/test> <verdict> [detail] and PAPITOOL <lib> ...
/bin/busybox mkdir -p /proc /sys /dev /tmp /bin /sbin /usr/bin /usr/sbin
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox mount -t devtmpfs devtmpfs /dev 2>/dev/null
/bin/busybox mount -t tmpfs tmpfs /tmp
/bin/busybox --install -s
export PATH=/usr/bin:/bin:/sbin:/usr/sbin HOME=/tmp TMPDIR=/tmp
echo "PAPILAB_BOOT nproc=$(nproc) kernel=$(uname -r)"
dmesg | grep -iE 'hw perfevents' | sed 's/^/PAPILAB_DMESG /'
# As Debian's default (2) lets PAPI's tests count user level only; the lab's
# other boots open everything (-1). PAPI's own tests ask for user level.
echo 2 > /proc/sys/kernel/perf_event_paranoid
echo 0 > /proc/sys/kernel/perf_cpu_time_max_percent

run() { # LIB ENTRY
  lib=$1 entry=$2
  dir=/papi/${entry%/*} t=${entry#*/}
  out=/tmp/out
  if [ "$lib" = pmc ]; then ld=/papi/pmc; else ld=; fi
  (cd "$dir" && LD_LIBRARY_PATH=$ld PATH="$dir:$PATH" PAPI_OUTPUT_DIRECTORY=/tmp/hl \
    timeout 600 "./$t" TESTS_QUIET) >$out 2>&1 </dev/null
  rc=$?
  v=$(grep -oE 'PASSED|SKIPPED|FAILED' $out | tail -n1)
  [ -n "$v" ] || v=FAILED
  d=
  [ "$v" = FAILED ] && d=$(grep -A2 FAILED $out | grep -m1 -E 'Error|Line' | tr '\t' ' ')
  [ -n "$d" ] || { [ "$v" = FAILED ] && d="exit $rc"; }
  echo "PAPILAB $lib $entry $v $d"
}

for lib in papi pmc; do
  while read -r entry; do
    [ -n "$entry" ] && run "$lib" "$entry"
  done < /papi/list
  if [ "$lib" = pmc ]; then export LD_LIBRARY_PATH=/papi/pmc; fi
  papi_component_avail 2>&1 | grep -E 'Name:|Native:|PMUs' | sed "s/^/PAPITOOL $lib component_avail /"
  papi_avail -a 2>&1 | grep -E '^PAPI_' | sed "s/^/PAPITOOL $lib avail /"
  papi_native_avail 2>&1 | grep -E 'Total events' | sed "s/^/PAPITOOL $lib native_avail /"
  papi_command_line PAPI_TOT_INS PAPI_TOT_CYC PAPI_BR_INS 2>&1 | grep -E ' : ' | sed "s/^/PAPITOOL $lib command_line /"
  unset LD_LIBRARY_PATH
done
echo PAPILAB_DONE
sync
poweroff -f
