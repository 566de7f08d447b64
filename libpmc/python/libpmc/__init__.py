"""FreeBSD libpmc's pmc(3) and pmclog(3) for Python, through ctypes, over the
pmc project's libpmc.so. The constants, structs and signatures are the C
headers' (libpmc/_abi.py is generated from the table they are generated from);
this module loads the library, sets every function's signature, and wraps the
calls so that a failure raises PmcError with errno and the library's message.
"""

import ctypes
import ctypes.util
import os

from . import _abi
from ._abi import *  # noqa: F401,F403 (the headers' constants and structs)

__all__ = [n for n in dir(_abi) if not n.startswith("_")] + [
    "Library",
    "PmcError",
    "load",
]


class PmcError(OSError):
    """A pmc(3) call failed: errno (as the manual pages' ERRORS say) and the
    library's message (pmc_strerror_last)."""


def load(path=None):
    """The C library, each function's restype and argtypes set from the
    headers' prototypes: `path`, else $LIBPMC, else libpmc.so as the dynamic
    linker finds it. Functions the library lacks (this library's extensions,
    on FreeBSD's own libpmc) are left out."""
    path = path or os.environ.get("LIBPMC") or ctypes.util.find_library("pmc") or "libpmc.so"
    lib = ctypes.CDLL(path, use_errno=True)
    for name, (restype, argtypes) in _abi.FUNCTIONS.items():
        f = getattr(lib, name, None)
        if f is not None:
            f.restype = restype
            f.argtypes = argtypes
    return lib


class Library:
    """pmc(3)'s calls, each raising PmcError on failure."""

    def __init__(self, path=None):
        self.lib = load(path)

    def _fail(self, call):
        err = ctypes.get_errno()
        msg = ""
        last = getattr(self.lib, "pmc_strerror_last", None)
        if last is not None:
            msg = (last() or b"").decode(errors="replace")
        raise PmcError(err, "%s: %s" % (call, msg or os.strerror(err)))

    def _call(self, name, *args):
        ctypes.set_errno(0)
        ret = getattr(self.lib, name)(*args)
        if ret < 0:
            self._fail(name)
        return ret

    def init(self):
        """pmc_init."""
        self._call("pmc_init")

    def allocate(self, spec, mode, flags=0, cpu=PMC_CPU_ANY, count=0):  # noqa: F405
        """pmc_allocate: the new PMC's id."""
        pmcid = pmc_id_t()  # noqa: F405
        self._call("pmc_allocate", spec.encode(), mode, flags, cpu, ctypes.byref(pmcid), count)
        return pmcid.value

    def attach(self, pmcid, pid=0):
        """pmc_attach (pid 0: this process)."""
        self._call("pmc_attach", pmcid, pid)

    def detach(self, pmcid, pid=0):
        """pmc_detach."""
        self._call("pmc_detach", pmcid, pid)

    def start(self, pmcid):
        """pmc_start."""
        self._call("pmc_start", pmcid)

    def stop(self, pmcid):
        """pmc_stop."""
        self._call("pmc_stop", pmcid)

    def read(self, pmcid):
        """pmc_read: the count."""
        v = pmc_value_t()  # noqa: F405
        self._call("pmc_read", pmcid, ctypes.byref(v))
        return v.value

    def write(self, pmcid, value):
        """pmc_write."""
        self._call("pmc_write", pmcid, value)

    def set(self, pmcid, value):
        """pmc_set: the reload count of a sampling PMC."""
        self._call("pmc_set", pmcid, value)

    def release(self, pmcid):
        """pmc_release."""
        self._call("pmc_release", pmcid)

    def ncpu(self):
        """pmc_ncpu."""
        return self._call("pmc_ncpu")

    def cpuinfo(self):
        """pmc_cpuinfo: the library's struct pmc_cpuinfo (a copy)."""
        p = ctypes.POINTER(pmc_cpuinfo)()  # noqa: F405
        self._call("pmc_cpuinfo", ctypes.byref(p))
        return pmc_cpuinfo.from_buffer_copy(p.contents)  # noqa: F405

    def configure_logfile(self, fd):
        """pmc_configure_logfile (-1 ends the log)."""
        self._call("pmc_configure_logfile", fd)

    def flush_logfile(self):
        """pmc_flush_logfile."""
        self._call("pmc_flush_logfile")

    def close_logfile(self):
        """pmc_close_logfile."""
        self._call("pmc_close_logfile")

    def writelog(self, userdata):
        """pmc_writelog."""
        self._call("pmc_writelog", userdata)

    def _name(self, fn, value):
        s = getattr(self.lib, fn)(value)
        if s is None:
            self._fail(fn)
        return s.decode(errors="replace")

    def name_of_event(self, event):
        """pmc_name_of_event."""
        return self._name("pmc_name_of_event", event)

    def name_of_class(self, cls):
        """pmc_name_of_class."""
        return self._name("pmc_name_of_class", cls)

    def name_of_mode(self, mode):
        """pmc_name_of_mode."""
        return self._name("pmc_name_of_mode", mode)

    def event_names_of_class(self, cls):
        """pmc_event_names_of_class: a list of names."""
        names = ctypes.POINTER(ctypes.c_char_p)()
        n = ctypes.c_int()
        self._call("pmc_event_names_of_class", cls, ctypes.byref(names), ctypes.byref(n))
        out = [names[i].decode(errors="replace") for i in range(n.value)]
        libc = ctypes.CDLL(None)
        libc.free(ctypes.cast(names, ctypes.c_void_p))
        return out

    def log(self, path):
        """pmclog(3): the events of the log at `path`, one pmclog_ev (a copy)
        at a time; PmcError if the log is damaged (PMCLOG_ERROR)."""
        fd = os.open(path, os.O_RDONLY)
        parser = self.lib.pmclog_open(fd)
        if not parser:
            os.close(fd)
            self._fail("pmclog_open")
        ev = pmclog_ev()  # noqa: F405
        try:
            while self.lib.pmclog_read(parser, ctypes.byref(ev)) == 0:
                yield pmclog_ev.from_buffer_copy(ev)  # noqa: F405
            if ev.pl_state == PMCLOG_ERROR:  # noqa: F405
                self._fail("pmclog_read")
        finally:
            self.lib.pmclog_close(parser)
            os.close(fd)
