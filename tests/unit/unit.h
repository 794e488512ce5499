/* SPDX-License-Identifier: MIT */
/* A tiny unit-test harness: CHECK counts, DONE prints "N passed, N failed". */
#ifndef KV_UNIT_H
#define KV_UNIT_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int unit_pass, unit_fail;

#define CHECK(cond) do { \
	if (cond) unit_pass++; \
	else { unit_fail++; fprintf(stderr, "%s:%d: FAILED: %s\n", \
	    __FILE__, __LINE__, #cond); } \
} while (0)

/* |a-b| <= tol*max(1,|b|) */
#define CHECK_NEAR(a, b, tol) do { \
	double a_ = (a), b_ = (b); \
	if (fabs(a_ - b_) <= (tol) * fmax(1.0, fabs(b_))) unit_pass++; \
	else { unit_fail++; fprintf(stderr, "%s:%d: FAILED: %s = %.17g, want %.17g\n", \
	    __FILE__, __LINE__, #a, a_, b_); } \
} while (0)

#define CHECK_STR(a, b) do { \
	const char *a_ = (a), *b_ = (b); \
	if (a_ && b_ && strcmp(a_, b_) == 0) unit_pass++; \
	else { unit_fail++; fprintf(stderr, "%s:%d: FAILED: %s = \"%s\", want \"%s\"\n", \
	    __FILE__, __LINE__, #a, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); } \
} while (0)

#define DONE(name) (printf("%s: %d passed, %d failed\n", name, unit_pass, \
	unit_fail), unit_fail ? 1 : 0)

#endif
