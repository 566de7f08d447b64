/*
 * Every ERRORS entry of FreeBSD's libpmc manual pages (pmc_allocate(3),
 * pmc_attach(3), pmc_start(3), pmc_read(3), pmc_set(3), pmc_capabilities(3),
 * pmc_configure_logfile(3), pmc_disable(3), pmc_event_names_of_class(3),
 * pmc_get_msr(3), pmc_name_of_capability(3), pmclog(3)), one check each,
 * written from the pages: "ok PAGE: CASE", "FAIL PAGE: CASE: ...", or "na
 * PAGE: CASE: why" for a case this system cannot produce. Exits 1 on a FAIL.
 *
 * usage: errno root|user   (user: run as an unprivileged user; the
 * privilege cases, EPERM, are checked there)
 */
#include <sys/types.h>
#ifndef __linux__
#include <sys/sysctl.h>
#endif
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pmc.h>
#include <pmclog.h>

#include "portable.h"

static int failures;

static void
expect(int ret, int want_errno, const char *page, const char *what)
{
	int e = errno;

	if (ret == -1 && e == want_errno) {
		printf("ok %s: %s\n", page, what);
		return;
	}
	printf("FAIL %s: %s: returned %d, errno %d (%s), want -1 and %d (%s): %s\n",
	    page, what, ret, e, strerror(e), want_errno, strerror(want_errno),
	    PMC_MESSAGE());
	failures++;
}

/* A call the setup needs: it must work. */
static void
must(int ret, const char *what)
{
	if (ret == 0)
		return;
	printf("FAIL setup: %s: errno %d (%s): %s\n", what, errno,
	    strerror(errno), PMC_MESSAGE());
	failures++;
}

static void
na(const char *page, const char *what, const char *why)
{
	printf("na %s: %s: %s\n", page, what, why);
}

#define CHECK(call, E, page, what) do {					\
	int _r;								\
	errno = 0;							\
	_r = (call);							\
	expect(_r, (E), (page), (what));				\
} while (0)

/* A name lookup that must fail with NULL and EINVAL. */
#define NAME_FAILS(call, what) do {					\
	const char *_s;							\
	errno = 0;							\
	_s = (call);							\
	expect(_s == NULL ? -1 : 0, EINVAL, "pmc_name_of_capability(3)",\
	    what);							\
} while (0)

/* A child that waits for its parent to close the pipe. */
static pid_t
child(int *wfd)
{
	int p[2];
	pid_t pid;
	char c;

	if (pipe(p) < 0)
		return (-1);
	if ((pid = fork()) == 0) {
		close(p[1]);
		(void)read(p[0], &c, 1);
		_exit(0);
	}
	close(p[0]);
	*wfd = p[1];
	return (pid);
}

static void
reap(pid_t pid, int wfd)
{
	close(wfd);
	(void)waitpid(pid, NULL, 0);
}

/*
 * Whether this system lets any user count system-wide: FreeBSD's
 * security.bsd.unprivileged_syspmcs=1, Linux's perf_event_paranoid <= 0
 * (the PMU lab's guest sets -1). Then a system scope PMC needs no privilege.
 */
static int
unprivileged_syspmcs(void)
{
	int v = 0;
#ifdef __linux__
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");

	if (f == NULL)
		return (0);
	if (fscanf(f, "%d", &v) != 1)
		v = 2;
	fclose(f);
	return (v <= 0);
#else
	size_t len = sizeof(v);

	if (sysctlbyname("security.bsd.unprivileged_syspmcs", &v, &len,
	    NULL, 0) != 0)
		return (0);
	return (v != 0);
#endif
}

/* Privileged or not: the EPERM cases (run as an unprivileged user). */
static void
unprivileged(void)
{
	pmc_id_t id;

	must(pmc_init(), "pmc_init");
	if (unprivileged_syspmcs())
		na("pmc_allocate(3)", "EPERM: a system scope PMC without privilege",
		    "this system lets any user count system-wide "
		    "(perf_event_paranoid <= 0, security.bsd.unprivileged_syspmcs=1)");
	else
		CHECK(pmc_allocate("cpu-clock", PMC_MODE_SC, 0, 0, &id, 0),
		    EPERM, "pmc_allocate(3)",
		    "EPERM: a system scope PMC without privilege");
	must(pmc_allocate(PMC_PAGE_FAULTS, PMC_MODE_TC, 0, PMC_CPU_ANY, &id, 0),
	    "allocate a process PMC");
	CHECK(pmc_attach(id, 1), EPERM, "pmc_attach(3)",
	    "EPERM: no privilege to attach to the target (pid 1)");
	CHECK(pmc_disable(0, 0), EPERM, "pmc_disable(3)",
	    "EPERM: pmc_disable without privilege");
	CHECK(pmc_enable(0, 0), EPERM, "pmc_disable(3)",
	    "EPERM: pmc_enable without privilege");
	must(pmc_release(id), "release");
}

static void
privileged(void)
{
	const struct pmc_cpuinfo *ci;
	struct pmc_pmcinfo *pi;
	const char **names;
	pmc_id_t id, id2, sys, samp, fresh, desc, bogus = 0x12345;
	pmc_value_t v;
	uint32_t u;
	int n, ncpu, npmc, wfd, wfd2, fd, dirfd;
	pid_t kid, kid2, dead;
	void *parser;
	struct pmclog_ev ev;
	char logname[] = "/tmp/pmc-errno-XXXXXX";

	/* pmc_capabilities(3): ENXIO before pmc_init. */
	CHECK(pmc_cpuinfo(&ci), ENXIO, "pmc_capabilities(3)",
	    "ENXIO: pmc_cpuinfo before pmc_init");
	CHECK(pmc_ncpu(), ENXIO, "pmc_capabilities(3)",
	    "ENXIO: pmc_ncpu before pmc_init");
	CHECK(pmc_npmc(0), ENXIO, "pmc_capabilities(3)",
	    "ENXIO: pmc_npmc before pmc_init");
	na("pmc_init(3)", "ENOENT: the hwpmc module was not found",
	    "perf_event is part of the kernel");
	na("pmc_init(3)", "EPROGMISMATCH: the library's version mismatched",
	    "perf_event has no version to mismatch");
	na("pmc_init(3)", "ENXIO: PMC hardware unsupported",
	    "this kernel has perf_event (a kernel without it gives ENXIO)");
	must(pmc_init(), "pmc_init");
	must(pmc_cpuinfo(&ci), "pmc_cpuinfo");
	ncpu = pmc_ncpu();
	npmc = pmc_npmc(0);

	/* Owning no PMCs yet. */
	CHECK(pmc_release(bogus), ESRCH, "pmc_allocate(3)",
	    "ESRCH: pmc_release without having allocated a PMC");
	CHECK(pmc_attach(bogus, 0), ESRCH, "pmc_attach(3)",
	    "ESRCH: pmc_attach by a process owning no PMCs");
	CHECK(pmc_detach(bogus, 0), ESRCH, "pmc_attach(3)",
	    "ESRCH: pmc_detach by a process owning no PMCs");

	/* pmc_allocate(3). */
	CHECK(pmc_allocate(PMC_PAGE_FAULTS, (enum pmc_mode)7, 0, PMC_CPU_ANY,
	    &id, 0), EINVAL, "pmc_allocate(3)", "EINVAL: an invalid mode");
	CHECK(pmc_allocate(PMC_PAGE_FAULTS, PMC_MODE_TC, 0, 0, &id, 0), EINVAL,
	    "pmc_allocate(3)", "EINVAL: a process mode PMC on cpu 0");
	CHECK(pmc_allocate(PMC_PAGE_FAULTS, PMC_MODE_SC, 0, PMC_CPU_ANY, &id, 0),
	    EINVAL, "pmc_allocate(3)", "EINVAL: a system mode PMC on PMC_CPU_ANY");
	CHECK(pmc_allocate(PMC_PAGE_FAULTS, PMC_MODE_SC, 0, ncpu, &id, 0),
	    EINVAL, "pmc_allocate(3)", "EINVAL: a CPU past pmc_ncpu()");
	CHECK(pmc_allocate(PMC_PAGE_FAULTS, PMC_MODE_TC, 0x40000000,
	    PMC_CPU_ANY, &id, 0), EINVAL, "pmc_allocate(3)",
	    "EINVAL: an unsupported flag");
	CHECK(pmc_allocate("cpu-clock", PMC_MODE_TS, PMC_F_USERCALLCHAIN,
	    PMC_CPU_ANY, &id, 0), EINVAL, "pmc_allocate(3)",
	    "EINVAL: PMC_F_USERCALLCHAIN without PMC_F_CALLCHAIN");
	CHECK(pmc_allocate(PMC_PAGE_FAULTS, PMC_MODE_TC,
	    PMC_F_CALLCHAIN | PMC_F_USERCALLCHAIN, PMC_CPU_ANY, &id, 0), EINVAL,
	    "pmc_allocate(3)", "EINVAL: callchain flags on a counting PMC");
	CHECK(pmc_allocate(PMC_PAGE_FAULTS, PMC_MODE_SC, PMC_F_DESCENDANTS, 0,
	    &id, 0), EINVAL, "pmc_allocate(3)",
	    "EINVAL: PMC_F_DESCENDANTS on a system mode PMC");
	CHECK(pmc_allocate("no-such-event-xyz", PMC_MODE_TC, 0, PMC_CPU_ANY,
	    &id, 0), EINVAL, "pmc_allocate(3)", "EINVAL: an unsupported event");
	CHECK(pmc_allocate(",,", PMC_MODE_TC, 0, PMC_CPU_ANY, &id, 0), EINVAL,
	    "pmc_allocate(3)", "EINVAL: an event specifier syntax error");
	if (ci->pm_nclass == 1)
		CHECK(pmc_allocate("instructions", PMC_MODE_TC, 0, PMC_CPU_ANY,
		    &id, 0), EOPNOTSUPP, "pmc_allocate(3)",
		    "EOPNOTSUPP: hardware lacking the capability (no PMU)");
	else
		na("pmc_allocate(3)", "EOPNOTSUPP: hardware lacking the capability",
		    "this machine has a PMU");
	if (sysconf(_SC_NPROCESSORS_CONF) == sysconf(_SC_NPROCESSORS_ONLN)) {
		na("pmc_allocate(3)", "ENXIO: an absent or disabled CPU",
		    "every CPU is online");
		na("pmc_start(3)", "ENXIO: a system scope PMC's CPU disabled",
		    "every CPU is online");
		na("pmc_capabilities(3)", "ENXIO: pmc_pmcinfo of a disabled CPU",
		    "every CPU is online");
	}
	na("pmc_allocate(3)", "EPERM: a system scope PMC without privilege",
	    "checked by the unprivileged run");

	must(pmc_allocate(PMC_PAGE_FAULTS, PMC_MODE_TC, 0, PMC_CPU_ANY, &id, 0),
	    "allocate id");
	must(pmc_allocate(PMC_PAGE_FAULTS, PMC_MODE_TC, 0, PMC_CPU_ANY, &id2, 0),
	    "allocate id2");
	must(pmc_allocate("cpu-clock", PMC_MODE_SC, 0, 0, &sys, 0),
	    "allocate sys");
	must(pmc_allocate("cpu-clock", PMC_MODE_TS, 0, PMC_CPU_ANY, &samp,
	    1000000), "allocate samp");
	must(pmc_allocate(PMC_PAGE_FAULTS, PMC_MODE_TC, 0, PMC_CPU_ANY, &fresh, 0),
	    "allocate fresh");
	must(pmc_allocate(PMC_PAGE_FAULTS, PMC_MODE_TC, PMC_F_DESCENDANTS,
	    PMC_CPU_ANY, &desc, 0), "allocate desc");
	CHECK(pmc_release(bogus), EINVAL, "pmc_allocate(3)",
	    "EINVAL: pmc_release of an id this process did not allocate");

	kid = child(&wfd);
	kid2 = child(&wfd2);
	dead = fork();
	if (dead == 0)
		_exit(0);
	(void)waitpid(dead, NULL, 0);

	/* pmc_attach(3). */
	CHECK(pmc_attach(id, -5), EINVAL, "pmc_attach(3)",
	    "EINVAL: pmc_attach to an illegal pid");
	CHECK(pmc_attach(bogus, 0), EINVAL, "pmc_attach(3)",
	    "EINVAL: pmc_attach of a handle this process does not own");
	CHECK(pmc_attach(sys, 0), EINVAL, "pmc_attach(3)",
	    "EINVAL: pmc_attach of a system scope PMC");
	CHECK(pmc_attach(id, dead), ESRCH, "pmc_attach(3)",
	    "ESRCH: pmc_attach to a process that does not exist");
	must(pmc_attach(id, 0), "attach id to self");
	CHECK(pmc_attach(id, 0), EEXIST, "pmc_attach(3)",
	    "EEXIST: the target already tracked by the PMC");
	must(pmc_start(id), "start id");
	CHECK(pmc_attach(id, kid), EBUSY, "pmc_attach(3)",
	    "EBUSY: pmc_attach of a running PMC");
	must(pmc_stop(id), "stop id");
	na("pmc_attach(3)", "EBUSY: the target tracked by another PMC on the same hardware",
	    "perf_event multiplexes: PMCs never contend for a row");
	na("pmc_attach(3)", "EPERM: no privilege for the target",
	    "checked by the unprivileged run");
	na("pmc_attach(3)", "EPERM: the PMC was set up for RDPMC (pmc_get_msr)",
	    "pmc_get_msr never succeeds here (ENOSYS)");

	/* pmc_detach (pmc_attach(3)). */
	must(pmc_attach(id2, kid), "attach id2 to the child");
	CHECK(pmc_detach(id, -5), EINVAL, "pmc_attach(3)",
	    "EINVAL: pmc_detach from an illegal pid");
	CHECK(pmc_detach(bogus, 0), EINVAL, "pmc_attach(3)",
	    "EINVAL: pmc_detach of a handle this process does not own");
	CHECK(pmc_detach(sys, 0), EINVAL, "pmc_attach(3)",
	    "EINVAL: pmc_detach of a system scope PMC");
	CHECK(pmc_detach(id, kid), EINVAL, "pmc_attach(3)",
	    "EINVAL: pmc_detach from a process the PMC is not attached to");
	CHECK(pmc_detach(id, kid2), ESRCH, "pmc_attach(3)",
	    "ESRCH: pmc_detach from a process no PMC monitors");
	CHECK(pmc_detach(id, dead), ESRCH, "pmc_attach(3)",
	    "ESRCH: pmc_detach from a process that does not exist");

	/* pmc_start(3). */
	CHECK(pmc_start(samp), EDOOFUS, "pmc_start(3)",
	    "EDOOFUS: a PMC requiring a log file, none configured");
	CHECK(pmc_stop(fresh), EINVAL, "pmc_start(3)",
	    "EINVAL: pmc_stop of a PMC never started");
	na("pmc_start(3)", "EINVAL: a PMC being deleted",
	    "pmc_release deletes at once: no PMC is ever being deleted");

	/* pmc_read(3), pmc_set(3). */
	CHECK(pmc_read(bogus, &v), EINVAL, "pmc_read(3)",
	    "EINVAL: pmc_read of a PMC not owned");
	CHECK(pmc_write(bogus, 1), EINVAL, "pmc_read(3)",
	    "EINVAL: pmc_write of a PMC not owned");
	CHECK(pmc_rw(bogus, 1, &v), EINVAL, "pmc_read(3)",
	    "EINVAL: pmc_rw of a PMC not owned");
	CHECK(pmc_set(bogus, 1000), EINVAL, "pmc_set(3)",
	    "EINVAL: pmc_set of a PMC not owned");
	must(pmc_start(id), "start id");
	CHECK(pmc_write(id, 1), EBUSY, "pmc_read(3)",
	    "EBUSY: pmc_write of a running PMC");
	CHECK(pmc_rw(id, 1, &v), EBUSY, "pmc_read(3)",
	    "EBUSY: pmc_rw of a running PMC");
	CHECK(pmc_set(id, 1000), EBUSY, "pmc_set(3)",
	    "EBUSY: pmc_set of a running PMC");
	must(pmc_stop(id), "stop id");
	na("pmc_read(3)", "EINVAL: a PMC not in a readable state",
	    "every allocated PMC can be read");

	/* pmc_capabilities(3). */
	CHECK(pmc_capabilities(bogus, &u), EINVAL, "pmc_capabilities(3)",
	    "EINVAL: pmc_capabilities of an invalid PMC");
	CHECK(pmc_width(bogus, &u), EINVAL, "pmc_capabilities(3)",
	    "EINVAL: pmc_width of an invalid PMC");
	CHECK(pmc_pmcinfo(-1, &pi), EINVAL, "pmc_capabilities(3)",
	    "EINVAL: pmc_pmcinfo of CPU -1");
	CHECK(pmc_pmcinfo(ncpu, &pi), EINVAL, "pmc_capabilities(3)",
	    "EINVAL: pmc_pmcinfo of a CPU past pmc_ncpu()");

	/* pmc_configure_logfile(3). */
	CHECK(pmc_configure_logfile(-1), EINVAL, "pmc_configure_logfile(3)",
	    "EINVAL: pmc_configure_logfile(-1) without a log");
	CHECK(pmc_flush_logfile(), EINVAL, "pmc_configure_logfile(3)",
	    "EINVAL: pmc_flush_logfile without a log");
	CHECK(pmc_writelog(7), EINVAL, "pmc_configure_logfile(3)",
	    "EINVAL: pmc_writelog without a log");
	fd = mkstemp(logname);
	must(fd < 0 ? -1 : 0, "mkstemp");
	must(pmc_configure_logfile(fd), "configure the log");
	CHECK(pmc_configure_logfile(fd), EBUSY, "pmc_configure_logfile(3)",
	    "EBUSY: a log file configured already");
	must(pmc_close_logfile(), "close the log");
	close(fd);
	unlink(logname);
	na("pmc_configure_logfile(3)", "EAGAIN: no helper process",
	    "the log needs no helper process");
	na("pmc_configure_logfile(3)", "ENOMEM: a memory shortage",
	    "not produced on demand");

	/* pmc_disable(3). */
	CHECK(pmc_disable(-1, 0), EINVAL, "pmc_disable(3)",
	    "EINVAL: an invalid CPU");
	CHECK(pmc_enable(0, npmc), EINVAL, "pmc_disable(3)",
	    "EINVAL: an invalid PMC row");
	CHECK(pmc_disable(0, 0), EBUSY, "pmc_disable(3)",
	    "EBUSY: pmc_disable of a row in use");
	na("pmc_disable(3)", "EPERM: without privilege",
	    "checked by the unprivileged run");

	/* pmc_event_names_of_class(3). */
	CHECK(pmc_event_names_of_class((enum pmc_class)99, &names, &n), EINVAL,
	    "pmc_event_names_of_class(3)", "EINVAL: an invalid class");

	/* pmc_get_msr(3). */
	must(pmc_attach(fresh, kid), "attach fresh to the child");
	CHECK(pmc_get_msr(bogus, &u), EINVAL, "pmc_get_msr(3)",
	    "EINVAL: an invalid PMC handle");
	CHECK(pmc_get_msr(sys, &u), EINVAL, "pmc_get_msr(3)",
	    "EINVAL: a PMC not of process scope");
	CHECK(pmc_get_msr(samp, &u), EINVAL, "pmc_get_msr(3)",
	    "EINVAL: a PMC not in counting mode");
	CHECK(pmc_get_msr(desc, &u), EINVAL, "pmc_get_msr(3)",
	    "EINVAL: a PMC allocated with PMC_F_DESCENDANTS");
	CHECK(pmc_get_msr(fresh, &u), EINVAL, "pmc_get_msr(3)",
	    "EINVAL: a PMC attached to processes other than its owner");
	CHECK(pmc_get_msr(id, &u), ENOSYS, "pmc_get_msr(3)",
	    "ENOSYS: no RDPMC of a PMC's own register");

	/* pmc_name_of_capability(3) and the other names. */
	NAME_FAILS(pmc_name_of_capability((enum pmc_caps)(PMC_CAP_READ |
	    PMC_CAP_WRITE)), "EINVAL: pmc_name_of_capability of two bits");
	NAME_FAILS(pmc_name_of_class((enum pmc_class)99),
	    "EINVAL: pmc_name_of_class");
	NAME_FAILS(pmc_name_of_cputype((enum pmc_cputype)0x7777),
	    "EINVAL: pmc_name_of_cputype");
	NAME_FAILS(pmc_name_of_disposition((enum pmc_disp)9),
	    "EINVAL: pmc_name_of_disposition");
	NAME_FAILS(pmc_name_of_event((enum pmc_event)0x7),
	    "EINVAL: pmc_name_of_event");
	NAME_FAILS(pmc_name_of_mode((enum pmc_mode)9),
	    "EINVAL: pmc_name_of_mode");
	NAME_FAILS(pmc_name_of_state((enum pmc_state)9),
	    "EINVAL: pmc_name_of_state");

	/* pmclog(3): a file parser fails with read(2)'s errors. */
	dirfd = open("/", O_RDONLY);
	parser = pmclog_open(dirfd);
	errno = 0;
	n = pmclog_read(parser, &ev);
	expect(n == -1 && ev.pl_state == PMCLOG_ERROR ? -1 : 0, EISDIR,
	    "pmclog(3)", "read(2)'s EISDIR: a parser reading a directory");
	pmclog_close(parser);
	close(dirfd);
	parser = pmclog_open(dirfd);
	errno = 0;
	n = pmclog_read(parser, &ev);
	expect(n == -1 && ev.pl_state == PMCLOG_ERROR ? -1 : 0, EBADF,
	    "pmclog(3)", "read(2)'s EBADF: a parser reading a closed descriptor");
	pmclog_close(parser);
	na("pmclog(3)", "malloc(3)'s errors from pmclog_open",
	    "not produced on demand");

	/* kid2 holds a copy of kid's pipe: it goes first. */
	reap(kid2, wfd2);
	reap(kid, wfd);
}

int
main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "user") == 0)
		unprivileged();
	else
		privileged();
	printf("%d failures\n", failures);
	return (failures != 0);
}
