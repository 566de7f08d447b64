#include <err.h>
#include <stdio.h>
#include <pmc.h>

int main(void) {
	pmc_id_t id;
	pmc_value_t v;

	if (pmc_init() < 0)
		err(1, "pmc_init");
	/* libpmc's names (SOFT-PAGE_FAULT.ALL), perf's, or the portable ones */
	if (pmc_allocate("page-faults", PMC_MODE_TC, 0, PMC_CPU_ANY, &id, 0) < 0)
		err(1, "pmc_allocate: %s", pmc_strerror_last());
	pmc_attach(id, 0);		/* 0: this process */
	pmc_start(id);
	/* ... work ... */
	pmc_stop(id);
	pmc_read(id, &v);
	printf("%ju page faults\n", (uintmax_t)v);
	return pmc_release(id);
}
