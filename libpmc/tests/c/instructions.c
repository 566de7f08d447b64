/*
 * Exact instruction counts through the C API, for the PMU lab (aarch64 under
 * precise icount, where instructions and cycles are exact): a loop of
 * exactly 2 user instructions per iteration, run N + 1 and 1 times, so the
 * two counts differ by exactly 2N. Through pmc(3) (pmc_allocate, pmc_attach,
 * pmc_start, pmc_stop, pmc_read, pmc_write), then through the extension's
 * group (instructions:u and cycles:u read together).
 *
 * usage: instructions N
 *   -> "pmc3 BASE COUNT" (instructions:u at 0 and N),
 *      "measure IBASE ICOUNT CBASE CCOUNT" (the group at 0 and N)
 * exits 3 when instructions:u cannot be allocated (no PMU here).
 */
#include <sys/types.h>

#include <err.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <pmc.h>

#include "portable.h"

/* n >= 1 iterations of exactly 2 instructions. */
static void
spin(uint64_t n)
{
#if defined(__aarch64__)
	__asm__ volatile("1: subs %0, %0, #1\n\tb.ne 1b" : "+r"(n) : : "cc");
#elif defined(__x86_64__)
	__asm__ volatile("1: dec %0\n\tjnz 1b" : "+r"(n) : : "cc");
#else
#error "a 2-instruction loop for this architecture"
#endif
}

static pmc_value_t
region(pmc_id_t id, uint64_t n)
{
	pmc_value_t v;

	if (pmc_write(id, 0) < 0)
		errx(4, "pmc_write: %s", PMC_MESSAGE());
	if (pmc_start(id) < 0)
		errx(5, "pmc_start: %s", PMC_MESSAGE());
	spin(n + 1);
	if (pmc_stop(id) < 0)
		errx(6, "pmc_stop: %s", PMC_MESSAGE());
	if (pmc_read(id, &v) < 0)
		errx(7, "pmc_read: %s", PMC_MESSAGE());
	return (v);
}

#ifdef PMC_LIBPMC_EXTENSIONS
static void
group(uint64_t n, pmc_value_t v[2])
{
	const char *events[] = { "instructions:u", "cycles:u" };
	pmc_measure_t m;

	if (pmc_measure_begin(events, 2, &m) < 0)
		errx(8, "pmc_measure_begin: %s", PMC_MESSAGE());
	spin(n + 1);
	if (pmc_measure_end(m, v, 2) != 2)
		errx(9, "pmc_measure_end: %s", PMC_MESSAGE());
}
#endif

int
main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
	pmc_value_t base, count;
	pmc_id_t id;

	if (pmc_init() < 0)
		err(2, "pmc_init");
	if (pmc_allocate("instructions:u", PMC_MODE_TC, 0, PMC_CPU_ANY,
	    &id, 0) < 0)
		errx(3, "pmc_allocate(instructions:u): %s", PMC_MESSAGE());
	if (pmc_attach(id, 0) < 0)
		errx(3, "pmc_attach: %s", PMC_MESSAGE());
	/* A first run warms up what the library does once (lazy set-up). */
	(void)region(id, 0);
	base = region(id, 0);
	count = region(id, n);
	printf("pmc3 %" PRIu64 " %" PRIu64 "\n", (uint64_t)base,
	    (uint64_t)count);
	if (pmc_release(id) < 0)
		errx(10, "pmc_release: %s", PMC_MESSAGE());
#ifdef PMC_LIBPMC_EXTENSIONS
	{
		pmc_value_t g0[2], g1[2];

		group(0, g0);	/* warm-up */
		group(0, g0);
		group(n, g1);
		printf("measure %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
		    "\n", (uint64_t)g0[0], (uint64_t)g1[0], (uint64_t)g0[1],
		    (uint64_t)g1[1]);
	}
#endif
	return (0);
}
