/*
 * A FreeBSD program written from pmc_configure_logfile(3), pmc_allocate(3),
 * pmc_attach(3) and pmclog(3)'s EXAMPLES: it logs two PMCs attached to a
 * child, a counting one with PMC_F_DESCENDANTS | PMC_F_LOG_PROCEXIT and a
 * sampling one with PMC_F_CALLCHAIN (every 1 ms of CPU time; also attached
 * to, and detached from, a second child that only waits), then reads the
 * log back and prints what it says about them, next to what the library
 * said when they were allocated:
 *
 *   ids CNT SAMP            the ids pmc_allocate returned
 *   pmcinfo MODE FLAGS EVENT  each row pmc_pmcinfo shows for them
 *   count N                 pmc_read of the counting PMC
 *   pids CHILD OTHER
 *   allocate ID EVENT FLAGS RATE NAME   each PMCALLOCATE record, NAME being
 *                           pmc_name_of_event(EVENT) (checked equal to
 *                           pl_evname: "FAIL" otherwise)
 *   attach ID PID / detach ID PID / procexit ID PID VALUE
 *   samples ID PID N        CALLCHAIN records
 *   userdata 0xHEX
 *   end STATE
 *
 * The child touches NPAGES fresh pages, then spins for 200 ms of CPU time.
 *
 * usage: logflow LOGFILE NPAGES
 */
#include <sys/types.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <err.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pmc.h>
#include <pmclog.h>

#include "portable.h"

#define MAXSEEN 64

static pid_t
paused_child(long npages, int *go)
{
	int p[2];
	pid_t pid;
	char c;

	if (pipe(p) < 0)
		err(1, "pipe");
	if ((pid = fork()) < 0)
		err(1, "fork");
	if (pid == 0) {
		long pagesize = sysconf(_SC_PAGESIZE), i;
		volatile char *m;
		struct rusage ru;

		/* Nothing of the parent's but the pipe (not another child's). */
		for (i = 3; i < 256; i++)
			if (i != p[0])
				close((int)i);
		if (read(p[0], &c, 1) < 0)
			_exit(1);
		if (npages > 0) {
			m = (volatile char *)mmap(NULL, npages * pagesize,
			    PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANON, -1, 0);
			if (m == MAP_FAILED)
				_exit(1);
#ifdef MADV_NOHUGEPAGE
			(void)madvise((void *)m, npages * pagesize,
			    MADV_NOHUGEPAGE);
#endif
			for (i = 0; i < npages; i++)
				m[i * pagesize] = 1;
			/* Spin: 200 ms of CPU time to sample. */
			do {
				getrusage(RUSAGE_SELF, &ru);
			} while (ru.ru_utime.tv_sec * 1000000 +
			    ru.ru_utime.tv_usec + ru.ru_stime.tv_sec * 1000000 +
			    ru.ru_stime.tv_usec < 200000);
		}
		_exit(0);
	}
	close(p[0]);
	*go = p[1];
	return (pid);
}

int
main(int argc, char **argv)
{
	pmc_id_t cnt, samp, seen_id[MAXSEEN];
	pid_t kid, other, seen_pid[MAXSEEN];
	long seen_n[MAXSEEN], npages;
	struct pmc_pmcinfo *pi;
	struct pmclog_ev ev;
	pmc_value_t v;
	int fd, go, go2, i, n, nseen = 0, failures = 0;
	void *parser;
	const char *name;

	if (argc < 3)
		errx(1, "usage: logflow LOGFILE NPAGES");
	npages = atol(argv[2]);
	if (pmc_init() < 0)
		err(2, "pmc_init");
	if ((fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0600)) < 0)
		err(1, "open %s", argv[1]);
	if (pmc_configure_logfile(fd) < 0)
		errx(3, "pmc_configure_logfile: %s", PMC_MESSAGE());
	if (pmc_allocate(PMC_PAGE_FAULTS, PMC_MODE_TC,
	    PMC_F_DESCENDANTS | PMC_F_LOG_PROCEXIT, PMC_CPU_ANY, &cnt, 0) < 0)
		errx(3, "pmc_allocate(TC): %s", PMC_MESSAGE());
	if (pmc_allocate("cpu-clock", PMC_MODE_TS, PMC_F_CALLCHAIN, PMC_CPU_ANY,
	    &samp, 1000000) < 0)
		errx(3, "pmc_allocate(TS): %s", PMC_MESSAGE());
	printf("ids %#x %#x\n", cnt, samp);

	kid = paused_child(npages, &go);
	other = paused_child(0, &go2);
	printf("pids %d %d\n", (int)kid, (int)other);
	if (pmc_attach(cnt, kid) < 0 || pmc_attach(samp, kid) < 0 ||
	    pmc_attach(samp, other) < 0)
		errx(4, "pmc_attach: %s", PMC_MESSAGE());
	if (pmc_start(cnt) < 0 || pmc_start(samp) < 0)
		errx(5, "pmc_start: %s", PMC_MESSAGE());
	if (pmc_pmcinfo(0, &pi) < 0)
		errx(6, "pmc_pmcinfo: %s", PMC_MESSAGE());
	for (i = 0; i < pmc_npmc(0); i++)
		if (pi->pm_pmcs[i].pm_ownerpid == getpid())
			printf("pmcinfo %d %#x %#x\n", (int)pi->pm_pmcs[i].pm_mode,
			    pi->pm_pmcs[i].pm_flags,
			    (unsigned)pi->pm_pmcs[i].pm_event);
	free(pi);
	close(go);
	if (waitpid(kid, NULL, 0) < 0)
		err(1, "waitpid");
	if (pmc_stop(samp) < 0 || pmc_stop(cnt) < 0)
		errx(7, "pmc_stop: %s", PMC_MESSAGE());
	if (pmc_detach(samp, other) < 0)
		errx(8, "pmc_detach: %s", PMC_MESSAGE());
	close(go2);
	(void)waitpid(other, NULL, 0);
	if (pmc_read(cnt, &v) < 0)
		errx(9, "pmc_read: %s", PMC_MESSAGE());
	printf("count %" PRIu64 "\n", (uint64_t)v);
	if (pmc_writelog(0xC0FFEE) < 0)
		errx(10, "pmc_writelog: %s", PMC_MESSAGE());
	if (pmc_close_logfile() < 0)
		errx(11, "pmc_close_logfile: %s", PMC_MESSAGE());
	close(fd);
	(void)pmc_release(samp);
	(void)pmc_release(cnt);

	/* pmclog(3) EXAMPLES. */
	if ((fd = open(argv[1], O_RDONLY)) < 0)
		err(1, "open %s", argv[1]);
	if ((parser = pmclog_open(fd)) == NULL)
		err(1, "pmclog_open");
	while (pmclog_read(parser, &ev) == 0) {
		switch (ev.pl_type) {
		case PMCLOG_TYPE_PMCALLOCATE:
			name = pmc_name_of_event((enum pmc_event)ev.pl_u.pl_a.pl_event);
			printf("allocate %#x %#x %#x %" PRIu64 " %s\n",
			    ev.pl_u.pl_a.pl_pmcid, ev.pl_u.pl_a.pl_event,
			    ev.pl_u.pl_a.pl_flags, (uint64_t)ev.pl_u.pl_a.pl_rate,
			    name != NULL ? name : "(null)");
			if (name == NULL || strcmp(name, ev.pl_u.pl_a.pl_evname) != 0) {
				printf("FAIL pmc_name_of_event(%#x) is %s, the record's name %s\n",
				    ev.pl_u.pl_a.pl_event, name ? name : "NULL",
				    ev.pl_u.pl_a.pl_evname);
				failures++;
			}
			break;
		case PMCLOG_TYPE_PMCATTACH:
			printf("attach %#x %d\n", ev.pl_u.pl_t.pl_pmcid,
			    (int)ev.pl_u.pl_t.pl_pid);
			break;
		case PMCLOG_TYPE_PMCDETACH:
			printf("detach %#x %d\n", ev.pl_u.pl_d.pl_pmcid,
			    (int)ev.pl_u.pl_d.pl_pid);
			break;
		case PMCLOG_TYPE_PROCEXIT:
			printf("procexit %#x %d %" PRIu64 "\n",
			    ev.pl_u.pl_e.pl_pmcid, (int)ev.pl_u.pl_e.pl_pid,
			    (uint64_t)ev.pl_u.pl_e.pl_value);
			break;
		case PMCLOG_TYPE_CALLCHAIN:
			for (n = 0; n < nseen; n++)
				if (seen_id[n] == ev.pl_u.pl_cc.pl_pmcid &&
				    seen_pid[n] == (pid_t)ev.pl_u.pl_cc.pl_pid)
					break;
			if (n == nseen && nseen < MAXSEEN) {
				seen_id[n] = ev.pl_u.pl_cc.pl_pmcid;
				seen_pid[n] = (pid_t)ev.pl_u.pl_cc.pl_pid;
				seen_n[n] = 0;
				nseen++;
			}
			if (n < nseen)
				seen_n[n]++;
			break;
		case PMCLOG_TYPE_USERDATA:
			printf("userdata %#x\n", ev.pl_u.pl_u.pl_userdata);
			break;
		default:
			break;
		}
	}
	for (n = 0; n < nseen; n++)
		printf("samples %#x %d %ld\n", seen_id[n], (int)seen_pid[n],
		    seen_n[n]);
	printf("end %s\n", ev.pl_state == PMCLOG_EOF ? "EOF" :
	    ev.pl_state == PMCLOG_ERROR ? "ERROR" :
	    ev.pl_state == PMCLOG_REQUIRE_DATA ? "REQUIRE_DATA" : "OK");
	pmclog_close(parser);
	close(fd);
	return (failures != 0);
}
