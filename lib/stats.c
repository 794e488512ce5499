/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdlib.h>

#include "stats.h"

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void
kv_sort(double *x, size_t n)
{
	qsort(x, n, sizeof(*x), cmp);
}

double
kv_percentile(const double *sorted, size_t n, double p)
{
	double h, lo;
	size_t i;

	if (n == 0)
		return NAN;
	if (p <= 0)
		return sorted[0];
	if (p >= 100)
		return sorted[n - 1];
	h = (double)(n - 1) * p / 100.0;
	lo = floor(h);
	i = (size_t)lo;
	if (i + 1 >= n)
		return sorted[n - 1];
	return sorted[i] + (h - lo) * (sorted[i + 1] - sorted[i]);
}

double
kv_mean(const double *x, size_t n)
{
	double s = 0;

	if (n == 0)
		return NAN;
	for (size_t i = 0; i < n; i++)
		s += x[i];
	return s / (double)n;
}
