/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "units.h"

struct suffix {
	const char *name;
	double mult;
};

static const struct suffix size_sfx[] = {
	{ "", 1 }, { "B", 1 },
	{ "K", 1024.0 }, { "KiB", 1024.0 }, { "KB", 1e3 }, { "k", 1024.0 },
	{ "M", 1048576.0 }, { "MiB", 1048576.0 }, { "MB", 1e6 },
	{ "G", 1073741824.0 }, { "GiB", 1073741824.0 }, { "GB", 1e9 },
	{ "T", 1099511627776.0 }, { "TiB", 1099511627776.0 }, { "TB", 1e12 },
	{ NULL, 0 }
};

static const struct suffix bw_sfx[] = {
	{ "", 1 }, { "B/s", 1 }, { "bit/s", 0.125 }, { "bps", 0.125 },
	{ "KB/s", 1e3 }, { "KiB/s", 1024.0 }, { "Kbit/s", 125.0 },
	{ "Kbps", 125.0 },
	{ "MB/s", 1e6 }, { "MiB/s", 1048576.0 }, { "Mbit/s", 125e3 },
	{ "Mbps", 125e3 },
	{ "GB/s", 1e9 }, { "GiB/s", 1073741824.0 }, { "Gbit/s", 125e6 },
	{ "Gbps", 125e6 },
	{ "TB/s", 1e12 }, { "TiB/s", 1099511627776.0 }, { "Tbit/s", 125e9 },
	{ "Tbps", 125e9 },
	{ NULL, 0 }
};

static const struct suffix count_sfx[] = {
	{ "", 1 }, { "K", 1024.0 }, { "k", 1024.0 }, { "M", 1048576.0 },
	{ "G", 1073741824.0 },
	{ NULL, 0 }
};

static const struct suffix dur_sfx[] = {
	{ "", 1 }, { "s", 1 }, { "ns", 1e-9 }, { "us", 1e-6 }, { "ms", 1e-3 },
	{ "m", 60 }, { "min", 60 }, { "h", 3600 },
	{ NULL, 0 }
};

/*
 * Parse "<number><suffix>" with a suffix from tab.  The number must be
 * finite and non-negative; the product must not exceed max.
 */
static int
parse_unit(const char *s, const struct suffix *tab, double max,
    const char *what, double *out, char *err, size_t errlen)
{
	const struct suffix *sf;
	char *end;
	double v;

	if (s == NULL || *s == '\0') {
		snprintf(err, errlen, "empty %s", what);
		return -1;
	}
	if (*s == '-') {
		snprintf(err, errlen, "negative %s '%s'", what, s);
		return -1;
	}
	errno = 0;
	v = strtod(s, &end);
	if (end == s || !isfinite(v) || isspace((unsigned char)*s)) {
		snprintf(err, errlen, "invalid %s '%s'", what, s);
		return -1;
	}
	if (errno == ERANGE && v != 0) {
		snprintf(err, errlen, "%s '%s' out of range", what, s);
		return -1;
	}
	if (end[0] == ' ')
		end++;
	for (sf = tab; sf->name; sf++)
		if (strcmp(end, sf->name) == 0)
			break;
	if (sf->name == NULL) {
		snprintf(err, errlen, "invalid %s '%s': unknown unit '%s'",
		    what, s, end);
		return -1;
	}
	v *= sf->mult;
	if (!isfinite(v) || v > max) {
		snprintf(err, errlen, "%s '%s' too large", what, s);
		return -1;
	}
	*out = v;
	return 0;
}

/* 2^63, the largest size or count accepted (exclusive). */
#define U63 9223372036854775808.0

static int
integral(const char *s, double v, const char *what, uint64_t *out,
    char *err, size_t errlen)
{
	if (v >= U63) {
		snprintf(err, errlen, "%s '%s' too large", what, s);
		return -1;
	}
	if (v != floor(v)) {
		snprintf(err, errlen, "%s '%s' is not a whole number", what, s);
		return -1;
	}
	*out = (uint64_t)v;
	return 0;
}

int
kv_parse_size(const char *s, uint64_t *out, char *err, size_t errlen)
{
	double v;

	if (parse_unit(s, size_sfx, U63, "size", &v, err, errlen) != 0)
		return -1;
	return integral(s, v, "size", out, err, errlen);
}

int
kv_parse_count(const char *s, uint64_t *out, char *err, size_t errlen)
{
	double v;

	if (parse_unit(s, count_sfx, U63, "count", &v, err, errlen) != 0)
		return -1;
	return integral(s, v, "count", out, err, errlen);
}

int
kv_parse_bw(const char *s, double *out, char *err, size_t errlen)
{
	return parse_unit(s, bw_sfx, 1e18, "bandwidth", out, err, errlen);
}

int
kv_parse_duration(const char *s, double *out, char *err, size_t errlen)
{
	/* about 31.7 years: longer is a typo, not a run */
	return parse_unit(s, dur_sfx, 1e9, "duration", out, err, errlen);
}

int
kv_parse_real(const char *s, double min, double max, double *out, char *err,
    size_t errlen)
{
	char *end;
	double v;

	errno = 0;
	v = s ? strtod(s, &end) : 0;
	if (s == NULL || *s == '\0' || end == s || *end != '\0' ||
	    !isfinite(v) || isspace((unsigned char)*s)) {
		snprintf(err, errlen, "invalid number '%s'", s ? s : "");
		return -1;
	}
	if (v < min || v > max || errno == ERANGE) {
		snprintf(err, errlen, "'%s' out of range %g..%g", s, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

int
kv_parse_int(const char *s, long long min, long long max, long long *out,
    char *err, size_t errlen)
{
	char *end;
	long long v;

	errno = 0;
	v = s ? strtoll(s, &end, 10) : 0;
	if (s == NULL || *s == '\0' || end == s || *end != '\0' ||
	    isspace((unsigned char)*s)) {
		snprintf(err, errlen, "invalid integer '%s'", s ? s : "");
		return -1;
	}
	if (errno == ERANGE || v < min || v > max) {
		snprintf(err, errlen, "'%s' out of range %lld..%lld", s, min,
		    max);
		return -1;
	}
	*out = v;
	return 0;
}
