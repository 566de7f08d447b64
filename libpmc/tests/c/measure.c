/*
 * The extension's measurement calls (pmc.h: pmc_measure_begin, _read, _end):
 * counts page faults and task-clock as one group around touching N fresh
 * pages, half in the main thread and half in a thread created after
 * pmc_measure_begin (a measurement counts the process's later threads too),
 * with a group read in the middle. Then the error paths.
 *
 * usage: measure NPAGES
 *   -> "mid FAULTS", "end FAULTS TASKCLOCK_NS", then one "ok NAME" or
 *      "FAIL NAME: detail" line per error-path check; exits 1 on any FAIL.
 */
#include <sys/types.h>
#include <sys/mman.h>

#include <err.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pmc.h>

static long pagesize;

struct span {
	volatile char *p;
	long npages;
};

static void *
touch(void *arg)
{
	struct span *s = (struct span *)arg;
	long i;

	for (i = 0; i < s->npages; i++)
		s->p[i * pagesize] = 1;
	return (NULL);
}

static volatile char *
fresh(long npages)
{
	volatile char *p;

	p = (volatile char *)mmap(NULL, npages * pagesize, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANON, -1, 0);
	if (p == MAP_FAILED)
		err(5, "mmap");
#ifdef MADV_NOHUGEPAGE
	(void)madvise((void *)p, npages * pagesize, MADV_NOHUGEPAGE);
#endif
	return (p);
}

static int failures;

static void
check(int ok, const char *name, const char *detail)
{
	if (ok) {
		printf("ok %s\n", name);
		return;
	}
	printf("FAIL %s: %s (errno %d, %s)\n", name, detail, errno,
	    pmc_strerror_last());
	failures++;
}

int
main(int argc, char **argv)
{
	const char *events[] = { "page-faults", "task-clock" };
	const char *bad[] = { "page-faults", "no-such-event-xyz" };
	const char *holes[] = { "page-faults", NULL };
	const char *latin1[] = { "page-faults", "caf\xe9" };
	long npages = argc > 1 ? atol(argv[1]) : 1000;
	struct span a, b;
	pthread_t t;
	pmc_measure_t m, m2;
	pmc_value_t v[2], one[1];
	int r;

	pagesize = sysconf(_SC_PAGESIZE);
	a.npages = b.npages = npages / 2;
	a.p = fresh(a.npages);
	b.p = fresh(b.npages);

	if (pmc_init() < 0)
		err(2, "pmc_init");
	if (pmc_measure_begin(events, 2, &m) < 0)
		errx(3, "pmc_measure_begin: %s", pmc_strerror_last());
	touch(&a);
	if ((r = pmc_measure_read(m, v, 2)) != 2)
		errx(4, "pmc_measure_read: %d: %s", r, pmc_strerror_last());
	printf("mid %" PRIu64 "\n", (uint64_t)v[0]);
	if (pthread_create(&t, NULL, touch, &b) != 0)
		errx(5, "pthread_create");
	pthread_join(t, NULL);
	if ((r = pmc_measure_end(m, v, 2)) != 2)
		errx(6, "pmc_measure_end: %d: %s", r, pmc_strerror_last());
	printf("end %" PRIu64 " %" PRIu64 "\n", (uint64_t)v[0], (uint64_t)v[1]);

	/* The error paths. */
	errno = 0;
	check(pmc_measure_read(m, v, 2) == -1 && errno == EINVAL,
	    "read-after-end", "want -1 and EINVAL");
	errno = 0;
	check(pmc_measure_end(m, v, 2) == -1 && errno == EINVAL,
	    "end-twice", "want -1 and EINVAL");
	errno = 0;
	check(pmc_measure_begin(events, 0, &m2) == -1 && errno == EINVAL,
	    "begin-no-events", "want -1 and EINVAL");
	errno = 0;
	check(pmc_measure_begin(events, 33, &m2) == -1 && errno == EINVAL,
	    "begin-too-many-events", "want -1 and EINVAL");
	errno = 0;
	check(pmc_measure_begin(NULL, 1, &m2) == -1 && errno == EFAULT,
	    "begin-null-events", "want -1 and EFAULT");
	errno = 0;
	check(pmc_measure_begin(events, 2, NULL) == -1 && errno == EFAULT,
	    "begin-null-handle", "want -1 and EFAULT");
	errno = 0;
	check(pmc_measure_begin(holes, 2, &m2) == -1 && errno == EFAULT &&
	    strstr(pmc_strerror_last(), "events[1]") != NULL,
	    "begin-null-event-name", "want -1, EFAULT and events[1]");
	errno = 0;
	check(pmc_measure_begin(latin1, 2, &m2) == -1 && errno == EINVAL &&
	    strstr(pmc_strerror_last(), "events[1] is not UTF-8") != NULL,
	    "begin-non-utf8-event-name", "want -1, EINVAL and events[1]");
	errno = 0;
	check(pmc_measure_begin(bad, 2, &m2) == -1 && errno == EINVAL &&
	    strstr(pmc_strerror_last(), "no-such-event-xyz") != NULL,
	    "begin-unknown-event-named", "want -1, EINVAL and its name");

	/* A buffer too small is refused and the measurement kept. */
	check(pmc_measure_begin(events, 2, &m2) == 0, "begin-again", "want 0");
	errno = 0;
	check(pmc_measure_read(m2, one, 1) == -1 && errno == EINVAL,
	    "read-small-buffer", "want -1 and EINVAL");
	errno = 0;
	check(pmc_measure_read(m2, NULL, 2) == -1 && errno == EFAULT,
	    "read-null-values", "want -1 and EFAULT");
	errno = 0;
	check(pmc_measure_end(m2, one, 1) == -1 && errno == EINVAL,
	    "end-small-buffer-kept", "want -1 and EINVAL");
	check(pmc_measure_read(m2, v, 2) == 2, "read-after-refused-end",
	    "want 2");
	/* Ending without values frees it too. */
	check(pmc_measure_end(m2, NULL, 0) == 0, "end-without-values",
	    "want 0");
	errno = 0;
	check(pmc_measure_end(m2, NULL, 0) == -1 && errno == EINVAL,
	    "end-freed", "want -1 and EINVAL");
	errno = 0;
	check(pmc_measure_read(0, v, 2) == -1 && errno == EINVAL,
	    "read-handle-0", "want -1 and EINVAL");
	return (failures ? 1 : 0);
}
