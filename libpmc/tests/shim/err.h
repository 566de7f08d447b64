/* Shim (Linux): the system's <err.h>, and FreeBSD's errc(3) and warnc(3). Not pmc's. */
#ifndef _SHIM_ERR_H_
#define _SHIM_ERR_H_
#include_next <err.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline void
shim_vwarnc(int code, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", program_invocation_short_name);
	if (fmt != NULL) {
		vfprintf(stderr, fmt, ap);
		fprintf(stderr, ": ");
	}
	fprintf(stderr, "%s\n", strerror(code));
}

static inline void
warnc(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	shim_vwarnc(code, fmt, ap);
	va_end(ap);
}

static inline void
errc(int eval, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	shim_vwarnc(code, fmt, ap);
	va_end(ap);
	exit(eval);
}
#endif
