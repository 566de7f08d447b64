/*
 * Reads a log back with pmclog(3), as pmcstat -R does, and prints what it
 * found: "initialize", "allocate NAME RATE event CODE flags FLAGS id ID",
 * "allocatedyn NAME event CODE flags FLAGS id ID", "samples PID N",
 * "userdata 0xHEX", "end STATE". With "feed" it reads the file itself and
 * hands it to a PMCLOG_FD_NONE parser in 1000-byte pieces (pmclog_feed).
 *
 * usage: readlog LOGFILE PID [feed]
 */
#include <sys/types.h>

#include <err.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pmc.h>
#include <pmclog.h>

int
main(int argc, char **argv)
{
	struct pmclog_ev ev;
	void *parser;
	char buf[1000];
	uint32_t pid;
	long samples = 0, user = 0, kernel = 0;
	int fd, feed, n, first = 1;

	if (argc < 3)
		errx(1, "usage: readlog LOGFILE PID [feed]");
	pid = (uint32_t)strtoul(argv[2], NULL, 10);
	feed = argc > 3 && strcmp(argv[3], "feed") == 0;
	if ((fd = open(argv[1], O_RDONLY)) < 0)
		err(1, "open %s", argv[1]);
	if ((parser = pmclog_open(feed ? PMCLOG_FD_NONE : fd)) == NULL)
		err(1, "pmclog_open");
	for (;;) {
		if (pmclog_read(parser, &ev) < 0) {
			if (ev.pl_state == PMCLOG_REQUIRE_DATA && feed &&
			    (n = read(fd, buf, sizeof(buf))) > 0) {
				if (pmclog_feed(parser, buf, n) < 0)
					err(1, "pmclog_feed");
				continue;
			}
			break;
		}
		if (first && ev.pl_type != PMCLOG_TYPE_INITIALIZE)
			errx(1, "first event is type %d, not INITIALIZE",
			    ev.pl_type);
		first = 0;
		switch (ev.pl_type) {
		case PMCLOG_TYPE_INITIALIZE:
			printf("initialize version %#x\n", ev.pl_u.pl_i.pl_version);
			break;
		case PMCLOG_TYPE_PMCALLOCATE:
			printf("allocate %s %" PRIu64 " event %#x flags %#x id %#x\n",
			    ev.pl_u.pl_a.pl_evname, (uint64_t)ev.pl_u.pl_a.pl_rate,
			    ev.pl_u.pl_a.pl_event, ev.pl_u.pl_a.pl_flags,
			    ev.pl_u.pl_a.pl_pmcid);
			break;
		case PMCLOG_TYPE_PMCALLOCATEDYN:
			printf("allocatedyn %s event %#x flags %#x id %#x\n",
			    ev.pl_u.pl_ad.pl_evname, ev.pl_u.pl_ad.pl_event,
			    ev.pl_u.pl_ad.pl_flags, ev.pl_u.pl_ad.pl_pmcid);
			break;
		case PMCLOG_TYPE_CALLCHAIN:
			if (ev.pl_u.pl_cc.pl_pid != pid)
				break;
			samples++;
			if (ev.pl_u.pl_cc.pl_cpuflags & PMC_CC_F_USERSPACE)
				user++;
			else
				kernel++;
			break;
		case PMCLOG_TYPE_USERDATA:
			printf("userdata %#x\n", ev.pl_u.pl_u.pl_userdata);
			break;
		default:
			break;
		}
	}
	printf("samples %u %ld\n", pid, samples);
	printf("user %ld kernel %ld\n", user, kernel);
	printf("end %s\n", ev.pl_state == PMCLOG_EOF ? "EOF" :
	    ev.pl_state == PMCLOG_ERROR ? "ERROR" :
	    ev.pl_state == PMCLOG_REQUIRE_DATA ? "REQUIRE_DATA" : "OK");
	pmclog_close(parser);
	close(fd);
	return (0);
}
