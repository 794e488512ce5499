/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

#ifndef KVGATE_VERSION
#define KVGATE_VERSION "0.0.0"
#endif

const char *kv_progname = "kvgate";

void
kv_setprogname(const char *argv0)
{
	const char *slash;

	if (argv0 == NULL || *argv0 == '\0')
		return;
	slash = strrchr(argv0, '/');
	kv_progname = slash ? slash + 1 : argv0;
}

static void
vwarn(const char *fmt, va_list ap)
{
	int saved = errno;
	size_t len = strlen(fmt);

	fprintf(stderr, "%s: ", kv_progname);
	vfprintf(stderr, fmt, ap);
	if (len > 0 && fmt[len - 1] == ':')
		fprintf(stderr, " %s", strerror(saved));
	fputc('\n', stderr);
}

void
kv_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarn(fmt, ap);
	va_end(ap);
}

void
kv_die(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarn(fmt, ap);
	va_end(ap);
	exit(status);
}

void
kv_version(void)
{
	printf("%s (kvgate) %s\n", kv_progname, KVGATE_VERSION);
	exit(kv_fshut(KV_OK));
}

int
kv_fshut(int status)
{
	int bad = fflush(stdout) != 0 || ferror(stdout);

	if (fclose(stdout) != 0)
		bad = 1;
	if (bad) {
		kv_warn("write error on stdout:");
		return KV_IOERR;
	}
	return status;
}
