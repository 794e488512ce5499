/* SPDX-License-Identifier: MIT */
#ifndef KV_OPT_H
#define KV_OPT_H

#include <stdint.h>

/*
 * Option values for getopt loops: parse s with lib/units.h, check it lies
 * in [min, max], and return it; otherwise print "prog: OPT: reason" and
 * exit KV_USAGE.  opt is the option as the user wrote it ("--qps").
 */
long long kv_opt_int(const char *opt, const char *s, long long min,
    long long max);
uint64_t kv_opt_size(const char *opt, const char *s, uint64_t min,
    uint64_t max);
uint64_t kv_opt_count(const char *opt, const char *s, uint64_t min,
    uint64_t max);
double kv_opt_duration(const char *opt, const char *s, double min,
    double max);

#endif
