/*
 * The library at the system's limits (issue 32, item 13), as a FreeBSD
 * program meets them: a log pipe whose reader is gone, and no file
 * descriptor left. Each call's outcome is printed, "call RET ERRNO"; the
 * program must live to print "survived".
 *
 * usage: limits epipe|emfile
 */
#include <sys/types.h>
#include <sys/resource.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pmc.h>

#include "portable.h"

static void
report(const char *call, int ret)
{
	printf("%s %d %d\n", call, ret, ret < 0 ? errno : 0);
	if (ret < 0)
		printf("message %s: %s\n", call, PMC_MESSAGE());
}

static void
spin(long usec)
{
	struct rusage ru;

	do {
		getrusage(RUSAGE_SELF, &ru);
	} while (ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec +
	    ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec < usec);
}

int
main(int argc, char **argv)
{
	pmc_id_t id;
	int p[2], n;

	if (argc < 2)
		return (1);
	if (pmc_init() < 0) {
		perror("pmc_init");
		return (2);
	}
	if (strcmp(argv[1], "epipe") == 0) {
		/* The default SIGPIPE disposition: a write to the pipe kills. */
		signal(SIGPIPE, SIG_DFL);
		if (pipe(p) < 0)
			return (1);
		report("pmc_configure_logfile", pmc_configure_logfile(p[1]));
		report("pmc_allocate", pmc_allocate("cpu-clock", PMC_MODE_TS, 0,
		    PMC_CPU_ANY, &id, 100000));
		report("pmc_start", pmc_start(id));
		/* The reader goes away while samples are being logged. */
		close(p[0]);
		spin(200000);
		report("pmc_stop", pmc_stop(id));
		report("pmc_writelog", pmc_writelog(1));
		report("pmc_flush_logfile", pmc_flush_logfile());
		report("pmc_close_logfile", pmc_close_logfile());
		report("pmc_release", pmc_release(id));
	} else {
		struct rlimit rl = { 64, 64 };

		pid_t kid;
		pmc_id_t id2;

		if (pipe(p) < 0 || (kid = fork()) < 0)
			return (1);
		if (kid == 0) {
			close(p[1]);
			(void)read(p[0], &n, 1);
			_exit(0);
		}
		close(p[0]);
		report("pmc_allocate", pmc_allocate(PMC_PAGE_FAULTS, PMC_MODE_TC,
		    0, PMC_CPU_ANY, &id, 0));
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			return (1);
		for (n = 0; open("/dev/null", O_RDONLY) >= 0; n++)
			;
		printf("opened %d\n", n);
		report("pmc_attach_child", pmc_attach(id, kid));
		report("pmc_attach_self", pmc_attach(id, 0));
		report("pmc_allocate_more", pmc_allocate(PMC_PAGE_FAULTS,
		    PMC_MODE_TC, 0, PMC_CPU_ANY, &id2, 0));
		close(p[1]);
	}
	printf("survived\n");
	return (0);
}
