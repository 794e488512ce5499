/* SPDX-License-Identifier: MIT */
#ifndef KV_UNITS_H
#define KV_UNITS_H

#include <stddef.h>
#include <stdint.h>

/*
 * Human units, as options take them (man/kvgate.7, UNITS).  Each parser
 * returns 0 and stores the value, or -1 with the reason in err.  All
 * reject negative, non-finite and overflowing values and unknown
 * suffixes ("12furlongs").
 *
 * sizes:      64KiB 2.5GB 1.5e9 8M (K/M/G/T alone are binary, like dd)
 * bandwidth:  25Gbit/s 2.5GB/s 23GiB/s 100Mbps 1e9 (bytes per second)
 * counts:     128K 32k 1M 1.5e6 (K/M alone are binary: 128K = 131072
 *             tokens, as context windows are named); 1000 plain
 * durations:  500ms 10s 1.5m 2h 250us 100ns 3 (seconds)
 */
int kv_parse_size(const char *s, uint64_t *out, char *err, size_t errlen);
int kv_parse_bw(const char *s, double *out, char *err, size_t errlen);
int kv_parse_count(const char *s, uint64_t *out, char *err, size_t errlen);
int kv_parse_duration(const char *s, double *out, char *err, size_t errlen);
/* A finite real number within [min, max]. */
int kv_parse_real(const char *s, double min, double max, double *out,
    char *err, size_t errlen);
/* An integer within [min, max], as OpenBSD's strtonum. */
int kv_parse_int(const char *s, long long min, long long max, long long *out,
    char *err, size_t errlen);

#endif
