/*
 * System-mode counting, one PMC per CPU (pmc(3): PMC_MODE_SC needs a CPU):
 * cpu-clock on every CPU while this process spins, each CPU read alone.
 * Prints "cpu N NS" per CPU, then "wall NS" (CLOCK_MONOTONIC around all the
 * starts and stops) and "self NS" (this process's CPU time in between,
 * getrusage).
 *
 * usage: system EVENT SPIN_MS
 */
#include <sys/types.h>
#include <sys/resource.h>
#include <sys/time.h>

#include <err.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pmc.h>

#include "portable.h"

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
}

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
	const char *event = argc > 1 ? argv[1] : "cpu-clock";
	uint64_t spin = (argc > 2 ? strtoull(argv[2], NULL, 10) : 200) * 1000000u;
	pmc_id_t *ids;
	pmc_value_t v;
	uint64_t t0, t1, s0, s1, until;
	int cpu, ncpu;
	volatile unsigned long x = 0;

	if (pmc_init() < 0)
		err(2, "pmc_init");
	if ((ncpu = pmc_ncpu()) < 0)
		err(2, "pmc_ncpu");
	if ((ids = (pmc_id_t *)calloc(ncpu, sizeof(*ids))) == NULL)
		err(2, "calloc");
	for (cpu = 0; cpu < ncpu; cpu++)
		if (pmc_allocate(event, PMC_MODE_SC, 0, cpu, &ids[cpu], 0) < 0)
			err(3, "pmc_allocate(%s, cpu %d): %s", event, cpu,
			    PMC_MESSAGE());
	t0 = now_ns();
	s0 = self_ns();
	for (cpu = 0; cpu < ncpu; cpu++)
		if (pmc_start(ids[cpu]) < 0)
			err(4, "pmc_start");
	until = now_ns() + spin;
	while (now_ns() < until)
		x++;
	for (cpu = 0; cpu < ncpu; cpu++)
		if (pmc_stop(ids[cpu]) < 0)
			err(5, "pmc_stop");
	s1 = self_ns();
	t1 = now_ns();
	for (cpu = 0; cpu < ncpu; cpu++) {
		if (pmc_read(ids[cpu], &v) < 0)
			err(6, "pmc_read");
		printf("cpu %d %" PRIu64 "\n", cpu, (uint64_t)v);
		pmc_release(ids[cpu]);
	}
	printf("wall %" PRIu64 "\nself %" PRIu64 "\n", t1 - t0, s1 - s0);
	return (0);
}
