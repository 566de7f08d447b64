/*
 * libpmc from several threads at once: each thread allocates its own
 * process-mode page-fault PMC, attaches it to the process, counts its own
 * NPAGES fresh pages while the others count theirs, and releases it.
 * A PMC counts the whole process, so each count lies between NPAGES (its
 * thread's pages) and NTHREADS * NPAGES (everyone's), plus a little slack.
 * Prints "thread I ID COUNT" per thread.
 *
 * usage: threads NTHREADS NPAGES
 */
#include <sys/types.h>
#include <sys/mman.h>

#include <err.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <pmc.h>

#include "portable.h"

static long npages, pagesize;

struct result {
	pmc_id_t id;
	pmc_value_t count;
	int error;
};

static void *
worker(void *arg)
{
	struct result *r = (struct result *)arg;
	volatile char *p;
	long i;

	p = (volatile char *)mmap(NULL, npages * pagesize, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANON, -1, 0);
	if (p == MAP_FAILED) {
		r->error = 1;
		return (NULL);
	}
#ifdef MADV_NOHUGEPAGE
	(void)madvise((void *)p, npages * pagesize, MADV_NOHUGEPAGE);
#endif
	if (pmc_allocate(PMC_PAGE_FAULTS, PMC_MODE_TC, 0, PMC_CPU_ANY, &r->id, 0) < 0 ||
	    pmc_attach(r->id, 0) < 0 || pmc_start(r->id) < 0) {
		r->error = 2;
		return (NULL);
	}
	for (i = 0; i < npages; i++)
		p[i * pagesize] = 1;
	if (pmc_stop(r->id) < 0 || pmc_read(r->id, &r->count) < 0 ||
	    pmc_name_of_mode(PMC_MODE_TC) == NULL)
		r->error = 3;
	return (NULL);
}

int
main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4, i;
	pthread_t *t;
	struct result *r;

	npages = argc > 2 ? atol(argv[2]) : 1000;
	pagesize = sysconf(_SC_PAGESIZE);
	if (pmc_init() < 0)
		err(2, "pmc_init");
	t = (pthread_t *)calloc(n, sizeof(*t));
	r = (struct result *)calloc(n, sizeof(*r));
	if (t == NULL || r == NULL)
		err(1, "calloc");
	for (i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, worker, &r[i]) != 0)
			errx(1, "pthread_create");
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	for (i = 0; i < n; i++) {
		if (r[i].error)
			errx(1, "thread %d failed at step %d: %s", i, r[i].error,
			    PMC_MESSAGE());
		printf("thread %d %#x %" PRIu64 "\n", i, r[i].id,
		    (uint64_t)r[i].count);
		if (pmc_release(r[i].id) < 0)
			err(1, "pmc_release");
	}
	return (0);
}
