#ifndef _PMCLOG_H_
#define _PMCLOG_H_
/*
 * <pmclog.h>: FreeBSD libpmc's log reader, pmclog(3), as FreeBSD 14 declares
 * it, from the pmc project's libpmc. Generated from libpmc/abi/headers.toml
 * by libpmc/tests/header.rs; do not edit.
 */
#include <limits.h>
#if !defined(PATH_MAX) && defined(__linux__)
#include <linux/limits.h> /* PATH_MAX outside POSIX's namespace (-std=c11) */
#endif
#include <sys/pmclog.h>

#ifdef __cplusplus
extern "C" {
#endif

enum pmclog_state {
	PMCLOG_OK = 0,
	PMCLOG_EOF = 1,
	PMCLOG_REQUIRE_DATA = 2,
	PMCLOG_ERROR = 3,
};

struct pmclog_ev_callchain {
	uint32_t pl_pid;
	uint32_t pl_tid;
	uint32_t pl_pmcid;
	uint32_t pl_cpuflags;
	uint32_t pl_cpuflags2;
	uint32_t pl_npc;
	uintfptr_t pl_pc[PMC_CALLCHAIN_DEPTH_MAX];
};

struct pmclog_ev_dropnotify {
};

struct pmclog_ev_closelog {
};

struct pmclog_ev_initialize {
	uint32_t pl_version;
	uint32_t pl_arch;
	uint64_t pl_tsc_freq;
	struct timespec pl_ts;
	char pl_cpuid[PATH_MAX];
};

struct pmclog_ev_map_in {
	pid_t pl_pid;
	uintfptr_t pl_start;
	char pl_pathname[PATH_MAX];
};

struct pmclog_ev_map_out {
	pid_t pl_pid;
	uintfptr_t pl_start;
	uintfptr_t pl_end;
};

struct pmclog_ev_pcsample {
	uintfptr_t pl_pc;
	pid_t pl_pid;
	pid_t pl_tid;
	pmc_id_t pl_pmcid;
	uint32_t pl_flags;
	uint32_t pl_usermode;
};

struct pmclog_ev_pmcallocate {
	const char *pl_evname;
	uint64_t pl_rate;
	uint32_t pl_event;
	uint32_t pl_flags;
	pmc_id_t pl_pmcid;
};

struct pmclog_ev_pmcallocatedyn {
	char pl_evname[PMC_NAME_MAX];
	uint32_t pl_event;
	uint32_t pl_flags;
	pmc_id_t pl_pmcid;
};

struct pmclog_ev_pmcattach {
	pmc_id_t pl_pmcid;
	pid_t pl_pid;
	char pl_pathname[PATH_MAX];
};

struct pmclog_ev_pmcdetach {
	pmc_id_t pl_pmcid;
	pid_t pl_pid;
};

struct pmclog_ev_proccsw {
	pid_t pl_pid;
	pid_t pl_tid;
	pmc_id_t pl_pmcid;
	pmc_value_t pl_value;
};

struct pmclog_ev_proccreate {
	pid_t pl_pid;
	uint32_t pl_flags;
	char pl_pcomm[MAXCOMLEN + 1];
};

struct pmclog_ev_procexec {
	pid_t pl_pid;
	pmc_id_t pl_pmcid;
	uintptr_t pl_baseaddr;
	uintptr_t pl_dynaddr;
	char pl_pathname[PATH_MAX];
};

struct pmclog_ev_procexit {
	uint32_t pl_pid;
	pmc_id_t pl_pmcid;
	pmc_value_t pl_value;
};

struct pmclog_ev_procfork {
	pid_t pl_oldpid;
	pid_t pl_newpid;
};

struct pmclog_ev_sysexit {
	pid_t pl_pid;
};

struct pmclog_ev_threadcreate {
	pid_t pl_tid;
	pid_t pl_pid;
	uint32_t pl_flags;
	char pl_tdname[MAXCOMLEN + 1];
};

struct pmclog_ev_threadexit {
	pid_t pl_tid;
};

struct pmclog_ev_userdata {
	uint32_t pl_userdata;
};

struct pmclog_ev {
	enum pmclog_state pl_state;
	off_t pl_offset;
	size_t pl_count;
	struct timespec pl_ts;
	enum pmclog_type pl_type;
	void *pl_data;
	int pl_len;
	union {
		struct pmclog_ev_callchain pl_cc;
		struct pmclog_ev_closelog pl_cl;
		struct pmclog_ev_dropnotify pl_dn;
		struct pmclog_ev_initialize pl_i;
		struct pmclog_ev_map_in pl_mi;
		struct pmclog_ev_map_out pl_mo;
		struct pmclog_ev_pmcallocate pl_a;
		struct pmclog_ev_pmcallocatedyn pl_ad;
		struct pmclog_ev_pmcattach pl_t;
		struct pmclog_ev_pmcdetach pl_d;
		struct pmclog_ev_proccsw pl_c;
		struct pmclog_ev_proccreate pl_pc;
		struct pmclog_ev_procexec pl_x;
		struct pmclog_ev_procexit pl_e;
		struct pmclog_ev_procfork pl_f;
		struct pmclog_ev_sysexit pl_se;
		struct pmclog_ev_threadcreate pl_tc;
		struct pmclog_ev_threadexit pl_te;
		struct pmclog_ev_userdata pl_u;
	} pl_u;
};

enum pmclog_parser_state {
	PL_STATE_NEW_RECORD = 0,
	PL_STATE_EXPECTING_HEADER = 1,
	PL_STATE_PARTIAL_RECORD = 2,
	PL_STATE_ERROR = 3,
};

struct pmclog_parse_state {
	enum pmclog_parser_state ps_state;
	enum pmc_cputype ps_arch;
	uint32_t ps_version;
	int ps_initialized;
	int ps_count;
	off_t ps_offset;
	union pmclog_entry ps_saved;
	int ps_svcount;
	int ps_fd;
	char *ps_buffer;
	char *ps_data;
	char *ps_cpuid;
	size_t ps_len;
};

#define PMCLOG_FD_NONE (-1)

void *pmclog_open(int _fd);
int pmclog_feed(void *_cookie, char *_data, int _len);
int pmclog_read(void *_cookie, struct pmclog_ev *_ev);
void pmclog_close(void *_cookie);
#ifdef __cplusplus
}
#endif
#endif /* _PMCLOG_H_ */
