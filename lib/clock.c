/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdio.h>
#include <time.h>

#include "clock.h"

static double
now(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double
kv_mono(void)
{
	return now(CLOCK_MONOTONIC);
}

double
kv_unix(void)
{
	return now(CLOCK_REALTIME);
}

void
kv_rfc3339(double t, char buf[32])
{
	time_t sec = (time_t)floor(t);
	unsigned ms = (unsigned)((t - floor(t)) * 1000.0) % 1000;
	char date[24];
	struct tm tm;

	gmtime_r(&sec, &tm);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, 32, "%.19s.%03uZ", date, ms);
}
