/* SPDX-License-Identifier: MIT */
#ifndef KV_ERR_H
#define KV_ERR_H

#include <stdnoreturn.h>

/* Exit statuses shared by every command (DESIGN.md, man/kvgate.7). */
enum {
	KV_OK = 0,		/* success; for a gate, the verdict passed */
	KV_FAIL = 1,		/* ran, but the verdict failed */
	KV_USAGE = 2,		/* usage error */
	KV_DATAERR = 65,	/* bad input data */
	KV_UNAVAILABLE = 69,	/* a required resource is unavailable */
	KV_SOFTWARE = 70,	/* internal error */
	KV_IOERR = 74		/* I/O error */
};

extern const char *kv_progname;

/* Set kv_progname from argv[0] (basename). */
void kv_setprogname(const char *argv0);

/*
 * Print "prog: message" on stderr.  A format ending in ':' appends
 * " " and strerror(errno), as sbase's eprintf does.
 */
void kv_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
noreturn void kv_die(int status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Print "prog (kvgate) VERSION" and exit 0. */
noreturn void kv_version(void);

/*
 * Flush and close stdout; on a write error (full disk, closed pipe)
 * report it and return KV_IOERR, else return status unchanged.
 */
int kv_fshut(int status);

#endif
