/*
 * Counts the page faults of touching N fresh pages with libpmc, as a
 * FreeBSD program does (pmc(3)): pmc_init, pmc_allocate in PMC_MODE_TC,
 * pmc_attach to itself, pmc_start, work, pmc_stop, pmc_read.
 *
 * usage: pagefaults EVENT NPAGES  -> prints "EVENT COUNT"
 */
#include <sys/types.h>
#include <sys/mman.h>

#include <err.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <pmc.h>

int
main(int argc, char **argv)
{
	const char *event = argc > 1 ? argv[1] : "page-faults";
	long npages = argc > 2 ? atol(argv[2]) : 1000;
	long pagesize = sysconf(_SC_PAGESIZE);
	pmc_id_t pmcid;
	pmc_value_t count;
	volatile char *p;
	long i;

	if (pmc_init() < 0)
		err(2, "pmc_init");
	if (pmc_allocate(event, PMC_MODE_TC, 0, PMC_CPU_ANY, &pmcid, 0) < 0)
		err(3, "pmc_allocate(%s)", event);
	if (pmc_attach(pmcid, 0) < 0)
		err(4, "pmc_attach");
	p = (volatile char *)mmap(NULL, npages * pagesize + 1, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANON, -1, 0);
	if (p == MAP_FAILED)
		err(5, "mmap");
#ifdef MADV_NOHUGEPAGE
	/* Linux: one fault per 4 KiB page, not per huge page. */
	(void)madvise((void *)p, npages * pagesize + 1, MADV_NOHUGEPAGE);
#endif
	if (pmc_start(pmcid) < 0)
		err(6, "pmc_start");
	for (i = 0; i < npages; i++)
		p[i * pagesize] = 1;
	if (pmc_stop(pmcid) < 0)
		err(7, "pmc_stop");
	if (pmc_read(pmcid, &count) < 0)
		err(8, "pmc_read");
	printf("%s %" PRIu64 "\n", event, (uint64_t)count);
	if (pmc_release(pmcid) < 0)
		err(9, "pmc_release");
	return (0);
}
