/*
 * pmcstat(8)'s counting mode, `pmcstat -d -w INTERVAL -p EVENT -- COMMAND`,
 * written from its manual page: a process-mode counting PMC with
 * PMC_F_DESCENDANTS, the command forked and held until the PMC is attached
 * to it, started, read every interval while the command runs and once at its
 * end. The command is this program run again as "work NPAGES": it touches
 * NPAGES fresh pages in four steps 20 ms apart. Prints "interval COUNT" per
 * interval, "total COUNT", and the kernel's own count of the child's page
 * faults, "rusage MINFLT MAJFLT" (getrusage(RUSAGE_CHILDREN)).
 *
 * usage: pmcstat_count NPAGES
 */
#include <sys/types.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <err.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include <pmc.h>

#include "portable.h"

static int
work(long npages)
{
	long pagesize = sysconf(_SC_PAGESIZE), i;
	volatile char *m;

	m = (volatile char *)mmap(NULL, npages * pagesize,
	    PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANON, -1, 0);
	if (m == MAP_FAILED)
		return (1);
#ifdef MADV_NOHUGEPAGE
	(void)madvise((void *)m, npages * pagesize, MADV_NOHUGEPAGE);
#endif
	for (i = 0; i < npages; i++) {
		m[i * pagesize] = 1;
		if (i % (npages / 4 + 1) == npages / 4)
			usleep(20000);
	}
	return (0);
}

int
main(int argc, char **argv)
{
	pmc_id_t id;
	pmc_value_t v, last = 0;
	struct rusage ru;
	int p[2], status;
	pid_t kid;
	char c = 0;

	if (argc > 2 && strcmp(argv[1], "work") == 0)
		return (work(atol(argv[2])));
	if (argc < 2)
		errx(EX_USAGE, "usage: pmcstat_count NPAGES");
	if (pmc_init() < 0)
		err(2, "pmc_init");
	if (pmc_allocate(PMC_PAGE_FAULTS, PMC_MODE_TC, PMC_F_DESCENDANTS,
	    PMC_CPU_ANY, &id, 0) < 0)
		errx(EX_SOFTWARE, "pmc_allocate: %s", PMC_MESSAGE());
	if (pipe(p) < 0)
		err(EX_OSERR, "pipe");
	if ((kid = fork()) < 0)
		err(EX_OSERR, "fork");
	if (kid == 0) {
		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			_exit(1);
		execl(argv[0], argv[0], "work", argv[1], (char *)NULL);
		_exit(127);
	}
	close(p[0]);
	if (pmc_attach(id, kid) < 0)
		errx(EX_SOFTWARE, "pmc_attach: %s", PMC_MESSAGE());
	if (pmc_start(id) < 0)
		errx(EX_SOFTWARE, "pmc_start: %s", PMC_MESSAGE());
	if (write(p[1], &c, 1) != 1)
		err(EX_OSERR, "write");
	for (;;) {
		pid_t r = waitpid(kid, &status, WNOHANG);

		if (pmc_read(id, &v) < 0)
			errx(EX_SOFTWARE, "pmc_read: %s", PMC_MESSAGE());
		if (v != last)
			printf("interval %" PRIu64 "\n", (uint64_t)(v - last));
		last = v;
		if (r == kid)
			break;
		usleep(10000);
	}
	if (pmc_stop(id) < 0 || pmc_read(id, &v) < 0)
		errx(EX_SOFTWARE, "pmc_stop: %s", PMC_MESSAGE());
	printf("total %" PRIu64 "\n", (uint64_t)v);
	if (getrusage(RUSAGE_CHILDREN, &ru) < 0)
		err(EX_OSERR, "getrusage");
	printf("rusage %ld %ld\n", ru.ru_minflt, ru.ru_majflt);
	(void)pmc_release(id);
	return (WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1);
}
