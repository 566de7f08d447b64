/*
 * Every pmc(3) call this library implements, with the return values and
 * errno its man pages give, written as a FreeBSD program would call them.
 * Prints one line per check, "ok NAME" or "FAIL NAME: detail"; exits 1 on
 * any FAIL. Linux's answers that differ from FreeBSD's (EOPNOTSUPP for what
 * perf cannot do) are marked so.
 *
 * usage: api HAVE_PMU(0|1)
 */
#include <sys/types.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pmc.h>

#include "portable.h"

static int failures;

static void
check(int ok, const char *name, const char *fmt, ...)
{
	if (ok) {
		printf("ok %s\n", name);
		return;
	}
	printf("FAIL %s: %s (errno %d, %s)\n", name, fmt, errno,
	    PMC_MESSAGE());
	failures++;
}

/* A call that must fail with -1 and errno E. */
#define FAILS(call, E, name) do {					\
	int _r;								\
	errno = 0;							\
	_r = (call);							\
	check(_r == -1 && errno == (E), name, "want -1 and " #E);	\
} while (0)

#define WORKS(call, name) do {						\
	errno = 0;							\
	check((call) == 0, name, "want 0");				\
} while (0)

int
main(int argc, char **argv)
{
	int have_pmu = argc > 1 && atoi(argv[1]) != 0;
	const struct pmc_cpuinfo *ci;
	struct pmc_pmcinfo *pi;
	const char **names;
	pmc_id_t id, sys;
	pmc_value_t v, old;
	uint32_t caps, width;
	int n, i, found;
	const char *s;

	/* Before pmc_init: ENXIO, as libpmc. */
	FAILS(pmc_ncpu(), ENXIO, "ncpu-before-init");
	FAILS(pmc_allocate("page-faults", PMC_MODE_TC, 0, PMC_CPU_ANY, &id, 0),
	    ENXIO, "allocate-before-init");
#ifdef PMC_LIBPMC_EXTENSIONS
	check(strlen(pmc_strerror_last()) > 0, "strerror-last-set", "empty");
#endif

	WORKS(pmc_init(), "init");
	WORKS(pmc_init(), "init-twice");

	/* Machine facts. */
	n = pmc_ncpu();
	check(n > 0 && n == sysconf(_SC_NPROCESSORS_CONF), "ncpu", "ncpu");
	check(pmc_npmc(0) > 0, "npmc", "npmc(0) <= 0");
	FAILS(pmc_npmc(-1), EINVAL, "npmc-bad-cpu");
	FAILS(pmc_npmc(n), EINVAL, "npmc-cpu-past-end");
	WORKS(pmc_cpuinfo(&ci), "cpuinfo");
	check(ci->pm_ncpu == (uint32_t)n && ci->pm_nclass >= 1 &&
	    ci->pm_nclass <= PMC_CLASS_MAX &&
	    ci->pm_classes[0].pm_class == PMC_CLASS_SOFT &&
	    (int)ci->pm_npmc == pmc_npmc(0), "cpuinfo-fields", "fields");
	check(pmc_name_of_cputype(ci->pm_cputype) != NULL, "cputype-name",
	    "NULL");

	/* Names. */
	check(strcmp(pmc_name_of_mode(PMC_MODE_TC), "TC") == 0 &&
	    strcmp(pmc_name_of_mode(PMC_MODE_SS), "SS") == 0, "name-of-mode",
	    "mode names");
	check(strcmp(pmc_name_of_class(PMC_CLASS_SOFT), "SOFT") == 0 &&
	    strcmp(pmc_name_of_class(PMC_CLASS_IAP), "IAP") == 0,
	    "name-of-class", "class names");
	check(strcmp(pmc_name_of_state(PMC_STATE_RUNNING), "RUNNING") == 0,
	    "name-of-state", "state names");
	check(strcmp(pmc_name_of_disposition(PMC_DISP_THREAD), "THREAD") == 0,
	    "name-of-disposition", "disposition names");
	check(strcmp(pmc_name_of_capability(PMC_CAP_READ), "READ") == 0,
	    "name-of-capability", "capability names");
	check(strcmp(pmc_name_of_cputype(PMC_CPU_GENERIC), "GENERIC") == 0,
	    "name-of-cputype", "cputype names");
	check(strcmp(pmc_name_of_event(PMC_EV_TSC_TSC), "TSC") == 0,
	    "name-of-event", "event names");
	errno = 0;
	s = pmc_name_of_class((enum pmc_class)99);
	check(s == NULL && errno == EINVAL, "name-of-bad-class", "want NULL");
	errno = 0;
	s = pmc_name_of_capability((enum pmc_caps)(PMC_CAP_READ | PMC_CAP_WRITE));
	check(s == NULL && errno == EINVAL, "name-of-two-caps", "want NULL");
	WORKS(pmc_event_names_of_class(PMC_CLASS_SOFT, &names, &n),
	    "event-names-of-soft");
	for (found = 0, i = 0; i < n; i++)
		found |= strcmp(names[i], "SOFT-PAGE_FAULT.ALL") == 0;
	check(found, "soft-names-list-page-faults", "missing");
	/* The array is the caller's, as FreeBSD's libpmc malloc(3)s it: each
	 * call gives a new one, freed here (pmcstat -L does so). */
	free(names);
	WORKS(pmc_event_names_of_class(PMC_CLASS_SOFT, &names, &n),
	    "event-names-of-soft-again");
	check(n > 0 && strcmp(names[0], "") != 0, "soft-names-again", "empty");
	free(names);
	FAILS(pmc_event_names_of_class((enum pmc_class)99, &names, &n), EINVAL,
	    "event-names-of-bad-class");
	/* The machine's hardware class, when it has one: its names open. */
	for (i = 0; i < (int)ci->pm_nclass; i++) {
		enum pmc_class cl = ci->pm_classes[i].pm_class;
		int j, opened = 0, tried = 0;

		if (cl == PMC_CLASS_SOFT)
			continue;
		WORKS(pmc_event_names_of_class(cl, &names, &n),
		    "event-names-of-hardware-class");
		check(n > 0, "hardware-class-has-names", "class %s: none",
		    pmc_name_of_class(cl));
		for (j = 0; j < n && j < 32; j++, tried++) {
			if (pmc_allocate(names[j], PMC_MODE_TC, 0, PMC_CPU_ANY,
			    &id, 0) == 0) {
				opened++;
				pmc_release(id);
			} else
				printf("note: %s: %s\n", names[j], PMC_MESSAGE());
		}
		printf("class %s: %d names, %d of the first %d open\n",
		    pmc_name_of_class(cl), n, opened, tried);
#ifdef __linux__
		/* Linux lists only what its probe found available. */
		check(opened == tried, "hardware-names-open", "%d of %d",
		    opened, tried);
#else
		check(opened > 0, "hardware-names-open", "none of %d", tried);
#endif
		if (n > 0)
			free(names);
	}
#ifdef __linux__
	/* A class this machine does not have: Linux lists nothing for it. */
	{
		enum pmc_class other = PMC_CLASS_IAP;

		for (i = 0; i < (int)ci->pm_nclass; i++)
			if (ci->pm_classes[i].pm_class == PMC_CLASS_IAP)
				other = PMC_CLASS_ARMV8;
		FAILS(pmc_event_names_of_class(other, &names, &n), EINVAL,
		    "event-names-of-absent-class");
	}
#endif

	/* Allocation errors. */
	FAILS(pmc_allocate("no-such-event-xyz", PMC_MODE_TC, 0, PMC_CPU_ANY,
	    &id, 0), EINVAL, "allocate-unknown-event");
	FAILS(pmc_allocate("page-faults", (enum pmc_mode)7, 0, PMC_CPU_ANY,
	    &id, 0), EINVAL, "allocate-bad-mode");
	FAILS(pmc_allocate("page-faults", PMC_MODE_TC, 0x40000000, PMC_CPU_ANY,
	    &id, 0), EINVAL, "allocate-bad-flags");
	FAILS(pmc_allocate("page-faults", PMC_MODE_SC, 0, PMC_CPU_ANY, &id, 0),
	    EINVAL, "allocate-system-any-cpu");
	FAILS(pmc_allocate("page-faults", PMC_MODE_SC, 0, 4096, &id, 0),
	    EINVAL, "allocate-system-no-such-cpu");
	FAILS(pmc_allocate(NULL, PMC_MODE_TC, 0, PMC_CPU_ANY, &id, 0), EFAULT,
	    "allocate-null-spec");
	if (!have_pmu)
		/* Linux: no PMU -> EOPNOTSUPP (FreeBSD's unsupported). */
		FAILS(pmc_allocate("instructions", PMC_MODE_TC, 0, PMC_CPU_ANY,
		    &id, 0), EOPNOTSUPP, "allocate-no-pmu-eopnotsupp");

	/* Not-allocated ids. */
	FAILS(pmc_start(0x12345), EINVAL, "start-unallocated");
	FAILS(pmc_read(0x12345, &v), EINVAL, "read-unallocated");
	/* pmc_allocate(3): release before any allocation is ESRCH. */
	FAILS(pmc_release(0x12345), ESRCH, "release-owning-none");

	/* A process counting PMC through its life. */
	WORKS(pmc_allocate("SOFT-PAGE_FAULT.ALL", PMC_MODE_TC, 0, PMC_CPU_ANY,
	    &id, 0), "allocate-soft-name");
	check(PMC_ID_TO_MODE(id) == PMC_MODE_TC &&
	    PMC_ID_TO_CLASS(id) == PMC_CLASS_SOFT, "id-fields", "id fields");
	WORKS(pmc_capabilities(id, &caps), "capabilities");
	check((caps & PMC_CAP_READ) && (caps & PMC_CAP_WRITE), "caps-read-write",
	    "caps");
	WORKS(pmc_width(id, &width), "width");
	check(width == 64, "width-64", "width");
	FAILS(pmc_read(id, NULL), EFAULT, "read-null");
	WORKS(pmc_attach(id, 0), "attach-self");
	FAILS(pmc_attach(id, 0), EEXIST, "attach-twice");
	FAILS(pmc_attach(id, 999999999), ESRCH, "attach-no-such-pid");
	WORKS(pmc_write(id, 100), "write-stopped");
	WORKS(pmc_rw(id, 200, &old), "rw");
	check(old == 100, "rw-returns-old", "old value");
	WORKS(pmc_read(id, &v), "read-stopped");
	if (v != 200)
		printf("# read after pmc_rw(200): %ju\n", (uintmax_t)v);
	check(v == 200, "read-after-write", "value");
	WORKS(pmc_start(id), "start");
	FAILS(pmc_write(id, 5), EBUSY, "write-running");
	WORKS(pmc_pmcinfo(0, &pi), "pmcinfo");
	for (found = 0, i = 0; i < pmc_npmc(0); i++)
		if (pi->pm_pmcs[i].pm_ownerpid == getpid() &&
		    pi->pm_pmcs[i].pm_mode == PMC_MODE_TC &&
		    pi->pm_pmcs[i].pm_rowdisp == PMC_DISP_THREAD &&
		    strcmp(pmc_name_of_event(pi->pm_pmcs[i].pm_event),
		    "SOFT-PAGE_FAULT.ALL") == 0)
			found++;
	check(found == 1 && pi->pm_cpu == 0, "pmcinfo-shows-pmc", "row");
	free(pi);
	WORKS(pmc_stop(id), "stop");
	WORKS(pmc_detach(id, 0), "detach-self");
	/* pmc_attach(3): a process no PMC monitors is ESRCH. */
	FAILS(pmc_detach(id, 0), ESRCH, "detach-not-monitored");
	WORKS(pmc_release(id), "release");
	FAILS(pmc_read(id, &v), EINVAL, "read-released");

	/* A system counting PMC on CPU 0. */
	WORKS(pmc_allocate("cpu-clock", PMC_MODE_SC, 0, 0, &sys, 0),
	    "allocate-system");
	check(PMC_ID_TO_CPU(sys) == 0 && PMC_ID_TO_MODE(sys) == PMC_MODE_SC,
	    "system-id-fields", "id fields");
	FAILS(pmc_attach(sys, 0), EINVAL, "attach-system-pmc");
	WORKS(pmc_release(sys), "release-system");

#ifdef PMC_LIBPMC_EXTENSIONS
	/* What Linux cannot do: pmc_get_msr(3)'s ENOSYS, with a message. */
	FAILS(pmc_get_msr(0, &caps), EINVAL, "get-msr-unallocated");
	WORKS(pmc_allocate("page-faults", PMC_MODE_TC, 0, PMC_CPU_ANY, &id, 0),
	    "allocate-for-msr");
	FAILS(pmc_get_msr(id, &caps), ENOSYS, "get-msr-enosys");
	check(strstr(pmc_strerror_last(), "Linux") != NULL, "message-says-why",
	    "message");
	WORKS(pmc_release(id), "release-for-msr");
	{
		struct pmc_driverstats ds;

		WORKS(pmc_get_driver_stats(&ds), "driver-stats");
		check(ds.pm_syscalls > 10 && ds.pm_syscall_errors > 5,
		    "driver-stats-count-calls", "%u calls, %u failed",
		    ds.pm_syscalls, ds.pm_syscall_errors);
	}
	if (geteuid() == 0) {
		FAILS(pmc_enable(0, 0), EOPNOTSUPP, "enable-eopnotsupp");
		FAILS(pmc_disable(0, 0), EOPNOTSUPP, "disable-eopnotsupp");
	}
#endif

	printf("%d failures\n", failures);
	return (failures != 0);
}
