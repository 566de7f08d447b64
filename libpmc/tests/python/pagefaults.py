"""Counts the page faults of touching N fresh pages through libpmc.so with
ctypes, as a Python program binds the C library as it is.

usage: python3 pagefaults.py LIBPMC_SO NPAGES  -> prints "page-faults COUNT"
"""
import ctypes
import mmap
import sys

PMC_MODE_TC = 3
PMC_CPU_ANY = -1

lib = ctypes.CDLL(sys.argv[1], use_errno=True)
lib.pmc_allocate.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_uint32,
                             ctypes.c_int, ctypes.POINTER(ctypes.c_uint32)]
lib.pmc_attach.argtypes = [ctypes.c_uint32, ctypes.c_int]
lib.pmc_start.argtypes = [ctypes.c_uint32]
lib.pmc_stop.argtypes = [ctypes.c_uint32]
lib.pmc_read.argtypes = [ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint64)]
lib.pmc_release.argtypes = [ctypes.c_uint32]
lib.pmc_strerror_last.restype = ctypes.c_char_p


def check(ret, what):
    if ret != 0:
        sys.exit("%s: errno %d: %s" % (what, ctypes.get_errno(),
                                        lib.pmc_strerror_last().decode()))


npages = int(sys.argv[2])
check(lib.pmc_init(), "pmc_init")
pmcid = ctypes.c_uint32()
check(lib.pmc_allocate(b"page-faults", PMC_MODE_TC, 0, PMC_CPU_ANY,
                       ctypes.byref(pmcid)), "pmc_allocate")
check(lib.pmc_attach(pmcid, 0), "pmc_attach")
page = mmap.PAGESIZE
buf = mmap.mmap(-1, npages * page)
if hasattr(buf, "madvise") and hasattr(mmap, "MADV_NOHUGEPAGE"):
    buf.madvise(mmap.MADV_NOHUGEPAGE)
check(lib.pmc_start(pmcid), "pmc_start")
for i in range(npages):
    buf[i * page] = 1
check(lib.pmc_stop(pmcid), "pmc_stop")
value = ctypes.c_uint64()
check(lib.pmc_read(pmcid, ctypes.byref(value)), "pmc_read")
check(lib.pmc_release(pmcid), "pmc_release")
print("page-faults %d" % value.value)
