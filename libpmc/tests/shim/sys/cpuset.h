/* Shim (Linux): FreeBSD's <sys/cpuset.h> over sched_getaffinity(2). Not pmc's. */
#ifndef _SHIM_SYS_CPUSET_H_
#define _SHIM_SYS_CPUSET_H_
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/types.h>
#include <sched.h>

typedef cpu_set_t cpuset_t;

#define CPU_LEVEL_ROOT 1
#define CPU_LEVEL_CPUSET 2
#define CPU_LEVEL_WHICH 3
#define CPU_WHICH_TID 1
#define CPU_WHICH_PID 2

/* The first CPU in the set, counting from 1; 0 for none (FreeBSD's CPU_FFS). */
static inline int
shim_cpu_ffs(const cpuset_t *p)
{
	int i;

	for (i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, p))
			return (i + 1);
	return (0);
}
#define CPU_FFS(p) shim_cpu_ffs(p)

static inline int
cpuset_getaffinity(int level, int which, id_t id, size_t size, cpuset_t *mask)
{
	(void)level;
	(void)which;
	return (sched_getaffinity(id == (id_t)-1 ? 0 : (pid_t)id, size, mask));
}
#endif
