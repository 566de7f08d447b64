#ifndef _SYS_PMCLOG_H_
#define _SYS_PMCLOG_H_
/*
 * <sys/pmclog.h>: hwpmc(4)'s log records as the kernel writes them (FreeBSD
 * 14 and later), from the pmc project's libpmc. Generated from
 * libpmc/abi/headers.toml by libpmc/tests/header.rs; do not edit.
 */
#include <sys/pmc.h>
#include <time.h>

#ifndef __packed
#define __packed __attribute__((__packed__))
#endif
#ifndef MAXCOMLEN
#define MAXCOMLEN 19 /* FreeBSD's <sys/param.h> */
#endif
/*
 * The on-disk records hold paths of FreeBSD's PATH_MAX (1024), whatever the
 * reading system's PATH_MAX is (Linux: 4096).
 */
#ifdef __FreeBSD__
#define _PMCLOG_PATH_MAX PATH_MAX
#else
#define _PMCLOG_PATH_MAX 1024
#endif

enum pmclog_type {
	PMCLOG_TYPE_CLOSELOG = 1,
	PMCLOG_TYPE_DROPNOTIFY = 2,
	PMCLOG_TYPE_INITIALIZE = 3,
	PMCLOG_TYPE_PMCALLOCATE = 5,
	PMCLOG_TYPE_PMCATTACH = 6,
	PMCLOG_TYPE_PMCDETACH = 7,
	PMCLOG_TYPE_PROCCSW = 8,
	PMCLOG_TYPE_PROCEXEC = 9,
	PMCLOG_TYPE_PROCEXIT = 10,
	PMCLOG_TYPE_PROCFORK = 11,
	PMCLOG_TYPE_SYSEXIT = 12,
	PMCLOG_TYPE_USERDATA = 13,
	PMCLOG_TYPE_MAP_IN = 14,
	PMCLOG_TYPE_MAP_OUT = 15,
	PMCLOG_TYPE_CALLCHAIN = 16,
	PMCLOG_TYPE_PMCALLOCATEDYN = 17,
	PMCLOG_TYPE_THR_CREATE = 18,
	PMCLOG_TYPE_THR_EXIT = 19,
	PMCLOG_TYPE_PROC_CREATE = 20,
};

/*
 * A record: a 32-bit header word (PMCLOG_HEADER_MAGIC in bits 31-24, the
 * type in 23-16, the record's length in bytes in 15-0), a spare word, a
 * 64-bit timestamp, then the type's fields, in 4-byte words.
 */
#define PMCLOG_ENTRY_HEADER \
	uint32_t pl_header; \
	uint32_t pl_spare;  \
	uint64_t pl_tsc;

struct pmclog_header {
	PMCLOG_ENTRY_HEADER
};

struct pmclog_callchain {
	PMCLOG_ENTRY_HEADER
	uint32_t pl_pid;
	uint32_t pl_tid;
	uint32_t pl_pmcid;
	uint32_t pl_cpuflags;
	uintptr_t pl_pc[PMC_CALLCHAIN_DEPTH_MAX];
} __packed;

#define PMC_CALLCHAIN_CPUFLAGS_TO_CPU(CF) (((CF) >> 16) & 0xFFFF)
#define PMC_CALLCHAIN_CPUFLAGS_TO_USERMODE(CF) ((CF) & PMC_CC_F_USERSPACE)
#define PMC_CALLCHAIN_TO_CPUFLAGS(CPU, FLAGS) \
	(((CPU) << 16) | ((FLAGS) & 0xFFFF))

#define PMC_MULTIPART_HEADER_LENGTH 8
#define PMC_MULTIPART_HEADER_ENTRIES 4
#define PMC_CC_MULTIPART_NONE 0
#define PMC_CC_MULTIPART_CALLCHAIN 1
#define PMC_CC_MULTIPART_IBS_FETCH 2
#define PMC_CC_MULTIPART_IBS_OP 3

struct pmclog_closelog {
	PMCLOG_ENTRY_HEADER
};

struct pmclog_dropnotify {
	PMCLOG_ENTRY_HEADER
};

struct pmclog_initialize {
	PMCLOG_ENTRY_HEADER
	uint32_t pl_version;
	uint32_t pl_cpu;
	uint64_t pl_tsc_freq;
	struct timespec pl_ts;
	char pl_cpuid[PMC_CPUID_LEN];
} __packed;

struct pmclog_map_in {
	PMCLOG_ENTRY_HEADER
	uint32_t pl_pid;
	uint32_t pl_pad;
	uintfptr_t pl_start;
	char pl_pathname[_PMCLOG_PATH_MAX];
} __packed;

struct pmclog_map_out {
	PMCLOG_ENTRY_HEADER
	uint32_t pl_pid;
	uint32_t pl_pad;
	uintfptr_t pl_start;
	uintfptr_t pl_end;
} __packed;

struct pmclog_pmcallocate {
	PMCLOG_ENTRY_HEADER
	uint32_t pl_pmcid;
	uint32_t pl_event;
	uint32_t pl_flags;
	uint32_t pl_pad;
	uint64_t pl_rate;
} __packed;

struct pmclog_pmcattach {
	PMCLOG_ENTRY_HEADER
	uint32_t pl_pmcid;
	uint32_t pl_pid;
	char pl_pathname[_PMCLOG_PATH_MAX];
} __packed;

struct pmclog_pmcdetach {
	PMCLOG_ENTRY_HEADER
	uint32_t pl_pmcid;
	uint32_t pl_pid;
} __packed;

struct pmclog_proccsw {
	PMCLOG_ENTRY_HEADER
	uint64_t pl_value;
	uint32_t pl_pmcid;
	uint32_t pl_pid;
	uint32_t pl_tid;
	uint32_t pl_pad;
} __packed;

struct pmclog_proccreate {
	PMCLOG_ENTRY_HEADER
	uint32_t pl_pid;
	uint32_t pl_flags;
	char pl_pcomm[MAXCOMLEN + 1];
} __packed;

struct pmclog_procexec {
	PMCLOG_ENTRY_HEADER
	uint32_t pl_pid;
	uint32_t pl_pmcid;
	uintptr_t pl_base;
	uintptr_t pl_dyn;
	char pl_pathname[_PMCLOG_PATH_MAX];
} __packed;

struct pmclog_procexit {
	PMCLOG_ENTRY_HEADER
	uint32_t pl_pmcid;
	uint32_t pl_pid;
	uint64_t pl_value;
} __packed;

struct pmclog_procfork {
	PMCLOG_ENTRY_HEADER
	uint32_t pl_oldpid;
	uint32_t pl_newpid;
} __packed;

struct pmclog_sysexit {
	PMCLOG_ENTRY_HEADER
	uint32_t pl_pid;
	uint32_t pl_pad;
} __packed;

struct pmclog_threadcreate {
	PMCLOG_ENTRY_HEADER
	uint32_t pl_tid;
	uint32_t pl_pid;
	uint32_t pl_flags;
	uint32_t pl_pad;
	char pl_tdname[MAXCOMLEN + 1];
} __packed;

struct pmclog_threadexit {
	PMCLOG_ENTRY_HEADER
	uint32_t pl_tid;
	uint32_t pl_pad;
} __packed;

struct pmclog_userdata {
	PMCLOG_ENTRY_HEADER
	uint32_t pl_userdata;
	uint32_t pl_pad;
} __packed;

struct pmclog_pmcallocatedyn {
	PMCLOG_ENTRY_HEADER
	uint32_t pl_pmcid;
	uint32_t pl_event;
	uint32_t pl_flags;
	uint32_t pl_pad;
	char pl_evname[PMC_NAME_MAX];
} __packed;

union pmclog_entry {
	struct pmclog_callchain pl_cc;
	struct pmclog_closelog pl_cl;
	struct pmclog_dropnotify pl_dn;
	struct pmclog_initialize pl_i;
	struct pmclog_map_in pl_mi;
	struct pmclog_map_out pl_mo;
	struct pmclog_pmcallocate pl_a;
	struct pmclog_pmcallocatedyn pl_ad;
	struct pmclog_pmcattach pl_t;
	struct pmclog_pmcdetach pl_d;
	struct pmclog_proccsw pl_c;
	struct pmclog_proccreate pl_pc;
	struct pmclog_procexec pl_x;
	struct pmclog_procexit pl_e;
	struct pmclog_procfork pl_f;
	struct pmclog_sysexit pl_se;
	struct pmclog_threadcreate pl_tc;
	struct pmclog_threadexit pl_te;
	struct pmclog_userdata pl_u;
};

#define PMCLOG_HEADER_MAGIC 0xEEU

#define PMCLOG_HEADER_TO_LENGTH(H) ((H) & 0x0000FFFF)
#define PMCLOG_HEADER_TO_TYPE(H) (((H) & 0x00FF0000) >> 16)
#define PMCLOG_HEADER_TO_MAGIC(H) (((H) & 0xFF000000) >> 24)
#define PMCLOG_HEADER_CHECK_MAGIC(H) \
	(PMCLOG_HEADER_TO_MAGIC(H) == PMCLOG_HEADER_MAGIC)
#endif /* _SYS_PMCLOG_H_ */
