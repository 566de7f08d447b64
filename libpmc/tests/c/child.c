/*
 * Counts another process, as pmc_attach(3) describes: a child forked
 * paused on a pipe, a page-faults PMC attached to its pid, started; the
 * child touches NPAGES fresh pages and exits; the parent stops and reads.
 * Prints "child COUNT".
 *
 * usage: child NPAGES
 */
#include <sys/types.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <err.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <pmc.h>

#include "portable.h"

int
main(int argc, char **argv)
{
	long npages = argc > 1 ? atol(argv[1]) : 1000, i;
	long pagesize = sysconf(_SC_PAGESIZE);
	int go[2], status;
	pmc_id_t id;
	pmc_value_t v;
	pid_t pid;
	char c;

	if (pmc_init() < 0)
		err(2, "pmc_init");
	if (pipe(go) < 0)
		err(1, "pipe");
	if ((pid = fork()) < 0)
		err(1, "fork");
	if (pid == 0) {
		volatile char *p;

		close(go[1]);
		p = (volatile char *)mmap(NULL, npages * pagesize, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANON, -1, 0);
		if (p == MAP_FAILED)
			_exit(1);
#ifdef MADV_NOHUGEPAGE
		(void)madvise((void *)p, npages * pagesize, MADV_NOHUGEPAGE);
#endif
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		for (i = 0; i < npages; i++)
			p[i * pagesize] = 1;
		_exit(0);
	}
	close(go[0]);
	if (pmc_allocate(PMC_PAGE_FAULTS, PMC_MODE_TC, 0, PMC_CPU_ANY, &id, 0) < 0)
		err(3, "pmc_allocate: %s", PMC_MESSAGE());
	if (pmc_attach(id, pid) < 0)
		err(4, "pmc_attach(%d): %s", (int)pid, PMC_MESSAGE());
	if (pmc_start(id) < 0)
		err(5, "pmc_start: %s", PMC_MESSAGE());
	if (write(go[1], "g", 1) != 1)
		err(1, "write");
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		errx(1, "the child failed");
	if (pmc_stop(id) < 0)
		err(6, "pmc_stop: %s", PMC_MESSAGE());
	if (pmc_read(id, &v) < 0)
		err(7, "pmc_read: %s", PMC_MESSAGE());
	printf("child %" PRIu64 "\n", (uint64_t)v);
	return (pmc_release(id) < 0);
}
