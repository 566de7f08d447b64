/*
 * pmclog.h: FreeBSD libpmc's pmclog(3) on Linux. Its declarations
 * (enum pmclog_state, enum pmclog_type, struct pmclog_ev, pmclog_open,
 * pmclog_read, pmclog_feed, pmclog_close) are in the generated pmc.h.
 */
#ifndef _PMCLOG_H_
#define _PMCLOG_H_
#include <pmc.h>
#endif
