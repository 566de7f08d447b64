"""The libpmc module's test, run by libpmc/tests/c_api.rs with the module
installed by pip: N fresh pages touched from Python, counted with pmc(3)
(truth: N page faults, plus a few of the interpreter's own); errors raise
PmcError with the manual pages' errno; the ctypes structs' sizes (printed for
the Rust test to compare with the C compiler's).

usage: python3 pagefaults.py NPAGES   (the library from $LIBPMC)
"""
import ctypes
import errno
import mmap
import sys

import libpmc

npages = int(sys.argv[1])
pmc = libpmc.Library()
pmc.init()
pid = pmc.allocate("page-faults", libpmc.PMC_MODE_TC)
pmc.attach(pid, 0)
page = mmap.PAGESIZE
buf = mmap.mmap(-1, npages * page)
if hasattr(buf, "madvise") and hasattr(mmap, "MADV_NOHUGEPAGE"):
    buf.madvise(mmap.MADV_NOHUGEPAGE)
pmc.start(pid)
for i in range(npages):
    buf[i * page] = 1
pmc.stop(pid)
print("page-faults %d" % pmc.read(pid))
info = [r for r in [pmc.cpuinfo()]][0]
print("classes %s" % " ".join(pmc.name_of_class(info.pm_classes[i].pm_class)
                              for i in range(info.pm_nclass)))
pmc.release(pid)

# Errors: errno as the manual pages say, the library's message.
for call, args, want in [
    (pmc.allocate, ("page-faults", 7), errno.EINVAL),
    (pmc.allocate, ("page-faults", libpmc.PMC_MODE_TC, 0, 0), errno.EINVAL),
    (pmc.release, (0x12345,), errno.ESRCH),
]:
    try:
        call(*args)
        print("FAIL %s%r succeeded" % (call.__name__, args))
    except libpmc.PmcError as e:
        print("%s %s %d %s" % ("ok" if e.errno == want else "FAIL", call.__name__,
                               e.errno, e.strerror.splitlines()[0]))
print("event %s" % pmc.name_of_event(libpmc.PMC_EV_TSC_TSC))
for name in sorted(n for n in dir(libpmc._abi) if isinstance(getattr(libpmc._abi, n), type)
                   and issubclass(getattr(libpmc._abi, n), (ctypes.Structure, ctypes.Union))):
    print("sizeof %s %d" % (name, ctypes.sizeof(getattr(libpmc._abi, name))))
