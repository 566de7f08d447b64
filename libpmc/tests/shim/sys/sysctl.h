/* Shim (Linux): FreeBSD's sysctlbyname(3) for hw.ncpu. Not pmc's. */
#ifndef _SHIM_SYS_SYSCTL_H_
#define _SHIM_SYS_SYSCTL_H_
#include <errno.h>
#include <string.h>
#include <unistd.h>

static inline int
sysctlbyname(const char *name, void *oldp, size_t *oldlenp, const void *newp,
    size_t newlen)
{
	(void)newp;
	(void)newlen;
	if (strcmp(name, "hw.ncpu") == 0 && oldp != NULL && oldlenp != NULL &&
	    *oldlenp >= sizeof(int)) {
		*(int *)oldp = (int)sysconf(_SC_NPROCESSORS_ONLN);
		*oldlenp = sizeof(int);
		return (0);
	}
	errno = ENOENT;
	return (-1);
}
#endif
