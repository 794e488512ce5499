/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fit.h"
#include "stats.h"

int
fit_params(const struct fit_opt *opt)
{
	return (opt->degree == 1 ? 2 : 3) - (opt->through_origin ? 1 : 0);
}

struct pt {
	double x, y;
};

static int
cmp_pt(const void *pa, const void *pb)
{
	const struct pt *a = pa, *b = pb;

	if (a->x != b->x)
		return a->x < b->x ? -1 : 1;
	return (a->y > b->y) - (a->y < b->y);
}

/* Distinct values of x[0..n). */
static size_t
distinct(const double *x, size_t n)
{
	double *s = malloc(n * sizeof(*s));
	size_t k = 0;

	if (s == NULL)
		return (size_t)-1;
	memcpy(s, x, n * sizeof(*s));
	kv_sort(s, n);
	for (size_t i = 0; i < n; i++)
		if (i == 0 || s[i] != s[i - 1])
			k++;
	free(s);
	return k;
}

/*
 * Solve min |A·t − b| for A (n×p, column-major, overwritten) by
 * Householder QR.  Returns 0, or -1 when A is rank deficient.
 */
static int
lsq(double *A, double *b, size_t n, int p, double *t)
{
	double rdiag[3];

	for (int k = 0; k < p; k++) {
		double *v = A + (size_t)k * n, norm = 0, alpha, vv;

		for (size_t i = k; i < n; i++)
			norm = hypot(norm, v[i]);
		if (norm == 0)
			return -1;
		alpha = v[k] > 0 ? -norm : norm;
		v[k] -= alpha;
		vv = 0;
		for (size_t i = k; i < n; i++)
			vv += v[i] * v[i];
		for (int j = k + 1; j <= p; j++) {
			double *col = j < p ? A + (size_t)j * n : b, dot = 0;

			for (size_t i = k; i < n; i++)
				dot += v[i] * col[i];
			dot = 2 * dot / vv;
			for (size_t i = k; i < n; i++)
				col[i] -= dot * v[i];
		}
		rdiag[k] = alpha;
	}
	for (int k = 0; k < p; k++)
		if (fabs(rdiag[k]) <= 1e-12 * fabs(rdiag[0]))
			return -1;
	for (int k = p - 1; k >= 0; k--) {
		double s = b[k];

		for (int j = k + 1; j < p; j++)
			s -= A[(size_t)j * n + k] * t[j];
		t[k] = s / rdiag[k];
	}
	return 0;
}

/* Fill res's goodness of fit; t are the coefficients of powers of u = x/s. */
static void
goodness(const double *x, const double *y, size_t n, double s,
    const int *pw, int p, const double *t, struct fit_res *res)
{
	double mean = kv_mean(y, n), sse = 0, sst = 0;

	for (size_t i = 0; i < n; i++) {
		double u = x[i] / s, pred = 0, e;

		for (int k = 0; k < p; k++)
			pred += t[k] * (pw[k] == 0 ? 1 : pw[k] == 1 ? u : u * u);
		e = y[i] - pred;
		sse += e * e;
		sst += (y[i] - mean) * (y[i] - mean);
	}
	res->rmse = sqrt(sse / (double)n);
	res->r2 = sst > 0 ? 1 - sse / sst : NAN;
}

int
fit_poly(const double *x, const double *y, size_t n,
    const struct fit_opt *opt, struct fit_res *res, char *err, size_t errlen)
{
	int p = fit_params(opt), pw[3], np = 0;
	double s = 0, t[3] = { 0, 0, 0 }, *A, *b;
	size_t nd;

	memset(res, 0, sizeof(*res));
	res->params = p;
	res->n = n;
	if (n < (size_t)p) {
		snprintf(err, errlen, "%zu point%s, need at least %d for this "
		    "fit", n, n == 1 ? "" : "s", p);
		return -1;
	}
	if ((nd = distinct(x, n)) == (size_t)-1) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (nd < (size_t)p) {
		snprintf(err, errlen, "%zu distinct token count%s, need at "
		    "least %d for this fit", nd, nd == 1 ? "" : "s", p);
		return -1;
	}
	res->xmin = res->xmax = x[0];
	for (size_t i = 0; i < n; i++) {
		s = fmax(s, fabs(x[i]));
		res->xmin = fmin(res->xmin, x[i]);
		res->xmax = fmax(res->xmax, x[i]);
	}
	if (s == 0)
		s = 1;
	for (int k = opt->through_origin ? 1 : 0; k <= opt->degree; k++)
		pw[np++] = k;
	A = malloc((size_t)p * n * sizeof(*A));
	b = malloc(n * sizeof(*b));
	if (A == NULL || b == NULL) {
		free(A);
		free(b);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		double u = x[i] / s;

		for (int k = 0; k < p; k++)
			A[(size_t)k * n + i] = pw[k] == 0 ? 1 : pw[k] == 1 ? u :
			    u * u;
		b[i] = y[i];
	}
	if (lsq(A, b, n, p, t) != 0) {
		free(A);
		free(b);
		snprintf(err, errlen, "the points do not determine the fit "
		    "(token counts too close together)");
		return -1;
	}
	free(A);
	free(b);
	for (int k = 0; k < p; k++) {
		if (pw[k] == 0)
			res->a = t[k];
		else if (pw[k] == 1)
			res->b = t[k] / s;
		else
			res->c = t[k] / (s * s);
	}
	goodness(x, y, n, s, pw, p, t, res);
	return 0;
}

size_t
fit_median_by_x(double *x, double *y, size_t n)
{
	struct pt *p;
	double *ys;
	size_t out = 0;

	if (n == 0)
		return 0;
	p = malloc(n * sizeof(*p));
	ys = malloc(n * sizeof(*ys));
	if (p == NULL || ys == NULL) {
		free(p);
		free(ys);
		return (size_t)-1;
	}
	for (size_t i = 0; i < n; i++)
		p[i] = (struct pt){ x[i], y[i] };
	qsort(p, n, sizeof(*p), cmp_pt);
	for (size_t i = 0, j; i < n; i = j) {
		size_t k = 0;

		for (j = i; j < n && p[j].x == p[i].x; j++)
			ys[k++] = p[j].y;
		x[out] = p[i].x;
		y[out++] = kv_percentile(ys, k, 50);
	}
	free(p);
	free(ys);
	return out;
}
