/* SPDX-License-Identifier: MIT */
#ifndef KV_CLOCK_H
#define KV_CLOCK_H

/* Seconds on CLOCK_MONOTONIC, for intervals. */
double kv_mono(void);
/* Seconds since the Unix epoch on CLOCK_REALTIME, for timestamps. */
double kv_unix(void);
/* RFC 3339 UTC time of t (seconds since the epoch) with milliseconds. */
void kv_rfc3339(double t, char buf[32]);

#endif
