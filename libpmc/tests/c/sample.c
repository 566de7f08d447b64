/*
 * Process-mode sampling into a log, as pmc(3) and pmcstat do it:
 * pmc_configure_logfile, pmc_allocate(PMC_MODE_TS), pmc_set (the reload
 * count: for cpu-clock, nanoseconds of CPU time), pmc_attach to itself,
 * pmc_start, spin for SPIN_MS of CPU time, pmc_stop, pmc_writelog,
 * pmc_flush_logfile, pmc_close_logfile.
 * Prints "pid P", "period N" and "self NS" (the process's CPU time between
 * start and stop, getrusage).
 *
 * usage: sample LOGFILE SPIN_MS PERIOD
 */
#include <sys/types.h>
#include <sys/resource.h>
#include <sys/time.h>

#include <err.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <pmc.h>

#include "portable.h"

static uint64_t
self_ns(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ((uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000u +
	    (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u);
}

int
main(int argc, char **argv)
{
	uint64_t spin, period, s0, s1;
	volatile unsigned long x = 0;
	pmc_id_t id;
	int fd;

	if (argc != 4)
		errx(1, "usage: sample LOGFILE SPIN_MS PERIOD");
	spin = strtoull(argv[2], NULL, 10) * 1000000u;
	period = strtoull(argv[3], NULL, 10);
	if (pmc_init() < 0)
		err(2, "pmc_init");
	if ((fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0)
		err(3, "open %s", argv[1]);
	if (pmc_configure_logfile(fd) < 0)
		err(3, "pmc_configure_logfile: %s", PMC_MESSAGE());
	if (pmc_allocate("cpu-clock", PMC_MODE_TS, 0, PMC_CPU_ANY, &id, 0) < 0)
		err(4, "pmc_allocate: %s", PMC_MESSAGE());
	if (pmc_set(id, period) < 0)
		err(5, "pmc_set: %s", PMC_MESSAGE());
	if (pmc_attach(id, 0) < 0)
		err(6, "pmc_attach: %s", PMC_MESSAGE());
	s0 = self_ns();
	if (pmc_start(id) < 0)
		err(7, "pmc_start: %s", PMC_MESSAGE());
	while (self_ns() - s0 < spin)
		x++;
	if (pmc_stop(id) < 0)
		err(8, "pmc_stop: %s", PMC_MESSAGE());
	s1 = self_ns();
	if (pmc_writelog(0xC0FFEE) < 0)
		err(9, "pmc_writelog: %s", PMC_MESSAGE());
	if (pmc_flush_logfile() < 0)
		err(10, "pmc_flush_logfile: %s", PMC_MESSAGE());
	if (pmc_release(id) < 0)
		err(11, "pmc_release: %s", PMC_MESSAGE());
	if (pmc_close_logfile() < 0)
		err(12, "pmc_close_logfile: %s", PMC_MESSAGE());
	close(fd);
	printf("pid %d\nperiod %" PRIu64 "\nself %" PRIu64 "\n", (int)getpid(),
	    period, s1 - s0);
	return (0);
}
