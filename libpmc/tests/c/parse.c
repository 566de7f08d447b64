/*
 * pmclog(3)'s parser on the cases of FreeBSD's lib/libpmc record-parsing
 * tests, written here from <sys/pmclog.h> (the records built with its
 * structs and checked with its PMCLOG_HEADER_* and PMC_CALLCHAIN_*
 * macros): a callchain of a single PC, of full depth in the kernel, of no
 * PC; the same records fed one byte at a time (fragments); malformed
 * lengths (0, longer than union pmclog_entry, not a whole number of words)
 * and a bad magic, which are PMCLOG_ERROR with errno set, from memory and
 * from a file. Prints "ok CASE" or "FAIL CASE: ..."; exits 1 on a FAIL.
 *
 * usage: parse              the cases
 *        parse LOGFILE      reads LOGFILE: "events N", "end STATE ERRNO"
 */
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pmc.h>
#include <pmclog.h>

#include "portable.h"

static int failures;

static void
check(int ok, const char *name, const char *detail)
{
	if (ok) {
		printf("ok %s\n", name);
		return;
	}
	printf("FAIL %s: %s\n", name, detail);
	failures++;
}

static uint32_t
header(uint32_t type, uint32_t len)
{
	return ((PMCLOG_HEADER_MAGIC << 24) | (type << 16) | (len & 0xFFFF));
}

/* A CALLCHAIN record of `npc` PCs into `buf`: its length. */
static size_t
callchain(char *buf, uint32_t pid, uint32_t pmcid, uint32_t cpu, int user,
    int npc, uint64_t tsc)
{
	struct pmclog_callchain cc;
	size_t len = offsetof(struct pmclog_callchain, pl_pc) +
	    (size_t)npc * sizeof(cc.pl_pc[0]);
	int i;

	memset(&cc, 0, sizeof(cc));
	cc.pl_header = header(PMCLOG_TYPE_CALLCHAIN, (uint32_t)len);
	cc.pl_tsc = tsc;
	cc.pl_pid = pid;
	cc.pl_tid = pid + 1;
	cc.pl_pmcid = pmcid;
	cc.pl_cpuflags = PMC_CALLCHAIN_TO_CPUFLAGS(cpu,
	    user ? PMC_CC_F_USERSPACE : 0);
	for (i = 0; i < npc; i++)
		cc.pl_pc[i] = 0x400000 + (uintptr_t)i * 16;
	memcpy(buf, &cc, len);
	return (len);
}

/* Reads one event from a parser fed `len` bytes at once. */
static int
read_one(const char *buf, size_t len, struct pmclog_ev *ev)
{
	void *p = pmclog_open(PMCLOG_FD_NONE);
	int r;

	if (p == NULL || pmclog_feed(p, (char *)buf, (int)len) < 0)
		return (-2);
	errno = 0;
	r = pmclog_read(p, ev);
	pmclog_close(p);
	return (r);
}

static void
cases(void)
{
	static char buf[3 * sizeof(union pmclog_entry)];
	struct pmclog_ev ev;
	size_t n1, n2, n3, i, total;
	void *p;
	int r, events, requires;
	uint32_t h, bad[3] = { 0, sizeof(union pmclog_entry) + 4, 34 };
	char tmpl[] = "/tmp/pmc-parse-XXXXXX";
	int fd;

	check(sizeof(union pmclog_entry) == 4128 &&
	    sizeof(struct pmclog_callchain) == 4128, "sizeof: union pmclog_entry",
	    "not 4128 bytes");
	h = header(PMCLOG_TYPE_CALLCHAIN, 40);
	check(PMCLOG_HEADER_CHECK_MAGIC(h) && PMCLOG_HEADER_TO_TYPE(h) ==
	    PMCLOG_TYPE_CALLCHAIN && PMCLOG_HEADER_TO_LENGTH(h) == 40,
	    "macros: PMCLOG_HEADER_*", "a header word does not split back");

	/* A single PC, user mode, CPU 3. */
	n1 = callchain(buf, 42, 0xFFF20F00, 3, 1, 1, 1000);
	r = read_one(buf, n1, &ev);
	check(r == 0 && ev.pl_state == PMCLOG_OK &&
	    ev.pl_type == PMCLOG_TYPE_CALLCHAIN && ev.pl_u.pl_cc.pl_npc == 1 &&
	    ev.pl_u.pl_cc.pl_pc[0] == 0x400000 && ev.pl_u.pl_cc.pl_pid == 42 &&
	    ev.pl_u.pl_cc.pl_tid == 43 && ev.pl_u.pl_cc.pl_pmcid == 0xFFF20F00 &&
	    PMC_CALLCHAIN_CPUFLAGS_TO_CPU(ev.pl_u.pl_cc.pl_cpuflags) == 3 &&
	    PMC_CALLCHAIN_CPUFLAGS_TO_USERMODE(ev.pl_u.pl_cc.pl_cpuflags) &&
	    ev.pl_offset == (off_t)n1 && ev.pl_count == 1 &&
	    ev.pl_ts.tv_sec == 1000, "callchain: a single PC",
	    "fields differ");

	/* Full depth, kernel mode. */
	n2 = callchain(buf + n1, 7, 0xFFF20F00, 1, 0, PMC_CALLCHAIN_DEPTH_MAX,
	    1001);
	r = read_one(buf + n1, n2, &ev);
	check(r == 0 && n2 == sizeof(union pmclog_entry) &&
	    ev.pl_u.pl_cc.pl_npc == PMC_CALLCHAIN_DEPTH_MAX &&
	    ev.pl_u.pl_cc.pl_pc[PMC_CALLCHAIN_DEPTH_MAX - 1] ==
	    0x400000 + (PMC_CALLCHAIN_DEPTH_MAX - 1) * 16 &&
	    !PMC_CALLCHAIN_CPUFLAGS_TO_USERMODE(ev.pl_u.pl_cc.pl_cpuflags),
	    "callchain: kernel mode, full depth (512 PCs)", "fields differ");

	/* No PC. */
	n3 = callchain(buf + n1 + n2, 9, 0xFFF20F00, 0, 1, 0, 1002);
	r = read_one(buf + n1 + n2, n3, &ev);
	check(r == 0 && n3 == 32 && ev.pl_u.pl_cc.pl_npc == 0,
	    "callchain: no PC", "fields differ");

	/* The three, one byte at a time. */
	total = n1 + n2 + n3;
	p = pmclog_open(PMCLOG_FD_NONE);
	events = requires = 0;
	for (i = 0; i <= total; ) {
		r = pmclog_read(p, &ev);
		if (r == 0) {
			events++;
			if ((events == 1 && ev.pl_offset != (off_t)n1) ||
			    (events == 3 && ev.pl_offset != (off_t)total))
				break;
			continue;
		}
		if (ev.pl_state != PMCLOG_REQUIRE_DATA || i == total)
			break;
		requires++;
		if (pmclog_feed(p, buf + i, 1) < 0)
			break;
		i++;
	}
	check(events == 3 && requires == (int)total &&
	    ev.pl_state == PMCLOG_REQUIRE_DATA,
	    "fragments: three records fed one byte at a time",
	    "events or states differ");
	pmclog_close(p);

	/* Malformed lengths, from memory. */
	for (i = 0; i < 3; i++) {
		char name[96];

		h = header(PMCLOG_TYPE_CALLCHAIN, bad[i]);
		memset(buf, 0, 64);
		memcpy(buf, &h, sizeof(h));
		p = pmclog_open(PMCLOG_FD_NONE);
		(void)pmclog_feed(p, buf, 64);
		errno = 0;
		r = pmclog_read(p, &ev);
		snprintf(name, sizeof(name), "malformed: length %u is PMCLOG_ERROR",
		    (unsigned)bad[i]);
		check(r == -1 && ev.pl_state == PMCLOG_ERROR && errno == EINVAL &&
		    strlen(PMC_MESSAGE()) > 0, name, "not an error with errno");
		r = pmclog_read(p, &ev);
		snprintf(name, sizeof(name), "malformed: length %u stays an error",
		    (unsigned)bad[i]);
		check(r == -1 && ev.pl_state == PMCLOG_ERROR, name, "it recovered");
		pmclog_close(p);
	}

	/* A bad magic. */
	n1 = callchain(buf, 42, 0xFFF20F00, 3, 1, 1, 1000);
	buf[3] = 0x55;
	r = read_one(buf, n1, &ev);
	check(r == -1 && ev.pl_state == PMCLOG_ERROR && errno == EINVAL,
	    "malformed: a bad magic is PMCLOG_ERROR", "not an error");

	/* From a file: a good record, then one of length 0: an error, not EOF. */
	n1 = callchain(buf, 42, 0xFFF20F00, 3, 1, 2, 1000);
	h = header(PMCLOG_TYPE_CALLCHAIN, 0);
	memcpy(buf + n1, &h, sizeof(h));
	memset(buf + n1 + 4, 0, 60);
	fd = mkstemp(tmpl);
	if (fd < 0 || write(fd, buf, n1 + 64) != (ssize_t)(n1 + 64) ||
	    lseek(fd, 0, SEEK_SET) != 0) {
		check(0, "file: setup", "mkstemp/write");
		return;
	}
	unlink(tmpl);
	p = pmclog_open(fd);
	r = pmclog_read(p, &ev);
	check(r == 0 && ev.pl_u.pl_cc.pl_npc == 2, "file: the record before",
	    "not read");
	errno = 0;
	r = pmclog_read(p, &ev);
	check(r == -1 && ev.pl_state == PMCLOG_ERROR && errno == EINVAL,
	    "file: a length of 0 is PMCLOG_ERROR, not a silent EOF",
	    "not an error");
	pmclog_close(p);
	close(fd);
}

/* Reads LOGFILE through a descriptor. */
static void
file(const char *path)
{
	struct pmclog_ev ev;
	void *p;
	long events = 0;
	int fd;

	if ((fd = open(path, O_RDONLY)) < 0) {
		perror(path);
		exit(1);
	}
	p = pmclog_open(fd);
	errno = 0;
	while (pmclog_read(p, &ev) == 0) {
		events++;
		errno = 0;
	}
	printf("events %ld\n", events);
	printf("end %s %d\n", ev.pl_state == PMCLOG_EOF ? "EOF" :
	    ev.pl_state == PMCLOG_ERROR ? "ERROR" :
	    ev.pl_state == PMCLOG_REQUIRE_DATA ? "REQUIRE_DATA" : "OK", errno);
	if (ev.pl_state == PMCLOG_ERROR)
		printf("message %s\n", PMC_MESSAGE());
	pmclog_close(p);
	close(fd);
}

int
main(int argc, char **argv)
{
	if (argc > 1) {
		file(argv[1]);
		return (0);
	}
	cases();
	printf("%d failures\n", failures);
	return (failures != 0);
}
