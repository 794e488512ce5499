/* SPDX-License-Identifier: MIT */
#ifndef KV_FIT_H
#define KV_FIT_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Least-squares fit of T(n) = a + b·n + c·n² (degree 2), a + b·n
 * (degree 1), or either without a (through the origin).  n is scaled by
 * its largest magnitude and the system solved by Householder QR, so
 * token counts up to millions keep full precision.  Pure computation.
 */
struct fit_opt {
	int degree;		/* 1 or 2 */
	bool through_origin;	/* a fixed at 0 */
};

struct fit_res {
	double a, b, c;		/* c is 0 for degree 1, a for through-origin */
	double r2;		/* 1 − SSE/SST (SST about the mean); NAN if SST is 0 */
	double rmse;		/* sqrt(SSE/n) */
	double xmin, xmax;
	size_t n;		/* points used */
	int params;		/* coefficients fitted */
};

/* Number of coefficients fitted for opt. */
int fit_params(const struct fit_opt *opt);

/*
 * Fit y against x (n points, all finite).  Returns 0, or -1 with the
 * reason in err (too few points or distinct x, out of memory).
 */
int fit_poly(const double *x, const double *y, size_t n,
    const struct fit_opt *opt, struct fit_res *res, char *err, size_t errlen);

/*
 * Replace the points by one per distinct x holding the median of its
 * y values; x ascending afterwards.  Returns the new count, or
 * (size_t)-1 when out of memory.
 */
size_t fit_median_by_x(double *x, double *y, size_t n);

#endif
