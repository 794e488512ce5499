/* SPDX-License-Identifier: MIT */
#include <inttypes.h>

#include "err.h"
#include "opt.h"
#include "units.h"

long long
kv_opt_int(const char *opt, const char *s, long long min, long long max)
{
	char err[160];
	long long v;

	if (kv_parse_int(s, min, max, &v, err, sizeof(err)) != 0)
		kv_die(KV_USAGE, "%s: %s", opt, err);
	return v;
}

uint64_t
kv_opt_size(const char *opt, const char *s, uint64_t min, uint64_t max)
{
	char err[160];
	uint64_t v;

	if (kv_parse_size(s, &v, err, sizeof(err)) != 0)
		kv_die(KV_USAGE, "%s: %s", opt, err);
	if (v < min || v > max)
		kv_die(KV_USAGE, "%s: %s: must be %" PRIu64 " to %" PRIu64
		    " bytes", opt, s, min, max);
	return v;
}

uint64_t
kv_opt_count(const char *opt, const char *s, uint64_t min, uint64_t max)
{
	char err[160];
	uint64_t v;

	if (kv_parse_count(s, &v, err, sizeof(err)) != 0)
		kv_die(KV_USAGE, "%s: %s", opt, err);
	if (v < min || v > max)
		kv_die(KV_USAGE, "%s: %s: must be %" PRIu64 " to %" PRIu64, opt,
		    s, min, max);
	return v;
}

double
kv_opt_duration(const char *opt, const char *s, double min, double max)
{
	char err[160];
	double v;

	if (kv_parse_duration(s, &v, err, sizeof(err)) != 0)
		kv_die(KV_USAGE, "%s: %s", opt, err);
	if (!(v >= min) || v > max)
		kv_die(KV_USAGE, "%s: %s: must be %gs to %gs", opt, s, min, max);
	return v;
}
