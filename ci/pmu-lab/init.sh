#!/bin/busybox sh
# /init of the PMU lab's guest (busybox sh, PID 1). Runs the plan named on the
# kernel command line (pmulab.boot=NAME -> /lab/plan-NAME) and powers off.
# Each plan line is: ENV-ASSIGNMENTS... -- BINARY ARGS...  (see lab.sh).
# Markers the host parses: PMULAB_BEGIN <bin> / PMULAB_END <bin> rc=<rc>.
/bin/busybox mkdir -p /proc /sys /dev /tmp /root /bin /sbin /usr/bin /usr/sbin
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox mount -t devtmpfs devtmpfs /dev 2>/dev/null
# A tmpfs on /tmp, unless the packed tree lives there (a checkout under /tmp:
# the binaries' paths are compiled in, and a mount would hide them; the
# initramfs root is writable anyway).
[ -n "$(/bin/busybox ls -A /tmp)" ] || /bin/busybox mount -t tmpfs tmpfs /tmp
/bin/busybox --install -s
mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
mount -t debugfs nodev /sys/kernel/debug 2>/dev/null
# Users for the tests that drop privileges (nobody) or exec a non-executable
# file; a busybox initramfs has no /etc otherwise.
mkdir -p /etc
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' > /etc/passwd
printf 'root:x:0:\nnogroup:x:65534:\n' > /etc/group
export PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/root TMPDIR=/tmp RUST_BACKTRACE=1
# Loopback, for the test that sends a log over TCP (pmcstat -O host:port).
ifconfig lo 127.0.0.1 up 2>/dev/null
boot=$(sed -n 's/.*pmulab\.boot=\([a-z0-9_-]*\).*/\1/p' /proc/cmdline)
echo "PMULAB_BOOT $boot nproc=$(nproc) kernel=$(uname -r)"
dmesg | grep -iE 'hw perfevents|pmu' | sed 's/^/PMULAB_DMESG /'
for d in /sys/bus/event_source/devices/armv8*; do
  [ -d "$d" ] && echo "PMULAB_PMU $(basename "$d") type=$(cat "$d/type") cpus=$(cat "$d/cpus" 2>/dev/null)"
done
# The lab's settings, each a deliberate choice (README.md): the guest runs as
# root, and the hardware tests must find every feature they test.
echo -1 > /proc/sys/kernel/perf_event_paranoid
echo 1 > /proc/sys/kernel/perf_user_access
# Emulated time makes the PMU interrupt handler look slow (tens of us of
# virtual time under -icount shift=auto); the kernel would then lower
# perf_event_max_sample_rate and throttle samplers mid-test. Not a property
# of the code under test, so the limit is off here.
echo 0 > /proc/sys/kernel/perf_cpu_time_max_percent
ulimit -l unlimited 2>/dev/null
plan=/lab/plan-$boot
if [ ! -f "$plan" ]; then
  echo "PMULAB_ERROR no plan for boot '$boot'"
else
  while IFS= read -r line; do
    case "$line" in
      ''|'#'*) continue ;;
      'SKIPBIN '*|'SKIPTEST '*) echo "PMULAB_$line"; continue ;;
    esac
    bin=${line#*-- }; bin=${bin%% *}
    echo "PMULAB_BEGIN $bin"
    cd /tmp
    # shellcheck disable=SC2086
    env ${line%%--*} ${line#*-- } </dev/null 2>&1
    echo "PMULAB_END $bin rc=$?"
  done < "$plan"
fi
echo PMULAB_DONE
sync
poweroff -f
