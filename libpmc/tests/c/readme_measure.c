#include <err.h>
#include <stdio.h>
#include <pmc.h>

int main(void) {
	const char *events[] = { "task-clock", "page-faults" };
	pmc_measure_t m;
	pmc_value_t v[2];

	if (pmc_init() < 0 || pmc_measure_begin(events, 2, &m) < 0)
		err(1, "%s", pmc_strerror_last());
	/* ... work, in any thread ... */
	if (pmc_measure_end(m, v, 2) < 0)
		err(1, "%s", pmc_strerror_last());
	printf("%ju ns on CPU, %ju page faults\n", (uintmax_t)v[0], (uintmax_t)v[1]);
	return 0;
}
