/*
 * What the test programs need to build against FreeBSD's own libpmc as well
 * as this one (ci/freebsd-capi.sh builds them both ways in the FreeBSD VM
 * job): the message of the last failed call is this libpmc's
 * pmc_strerror_last(), and strerror(errno) with FreeBSD's.
 */
#ifndef PMC_TESTS_PORTABLE_H
#define PMC_TESTS_PORTABLE_H

#include <errno.h>
#include <string.h>

#include <pmc.h>

#ifdef PMC_LIBPMC_EXTENSIONS
#define PMC_MESSAGE() pmc_strerror_last()
#else
#define PMC_MESSAGE() strerror(errno)
#endif

/*
 * Page faults by a name each library takes: FreeBSD's kernel names its SOFT
 * event PAGE_FAULT.ALL (kern_pmc.c), which this library takes as well as
 * perf's page-faults.
 */
#ifdef PMC_LIBPMC_EXTENSIONS
#define PMC_PAGE_FAULTS "page-faults"
#else
#define PMC_PAGE_FAULTS "PAGE_FAULT.ALL"
#endif

#endif
