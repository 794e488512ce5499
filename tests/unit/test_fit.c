/* SPDX-License-Identifier: MIT */
/* Unit tests of lib/fit: exact recovery to 1M tokens, noise, degenerate input. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "fit.h"
#include "unit.h"

static uint64_t rng_state = 0x243F6A8885A308D3ULL;

static double
rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return ((double)((rng_state * 2685821657736338717ULL) >> 11) + 0.5) /
	    9007199254740992.0;
}

/* Standard normal by Box-Muller. */
static double
gauss(void)
{
	return sqrt(-2 * log(rnd())) * cos(2 * M_PI * rnd());
}

static void
test_exact(void)
{
	double x[64], y[64], a = 0.015, b = 2.5e-5, c = 3e-11;
	struct fit_opt o = { .degree = 2 };
	struct fit_res r;
	char err[128];
	size_t n = 0;

	for (double t = 1000; t <= 1048576; t *= 1.2)
		x[n++] = floor(t);
	x[n++] = 1048576;	/* n up to 1M tokens */
	for (size_t i = 0; i < n; i++)
		y[i] = a + b * x[i] + c * x[i] * x[i];
	CHECK(fit_poly(x, y, n, &o, &r, err, sizeof(err)) == 0);
	CHECK_NEAR(r.a, a, 1e-9);
	CHECK_NEAR(r.b / b, 1, 1e-10);
	CHECK_NEAR(r.c / c, 1, 1e-10);
	CHECK_NEAR(r.r2, 1, 1e-12);
	CHECK(r.rmse < 1e-12);
	CHECK(r.n == n && r.params == 3);
	CHECK(r.xmin == 1000 && r.xmax == 1048576);

	/* degree 1 and through the origin */
	for (size_t i = 0; i < n; i++)
		y[i] = a + b * x[i];
	o.degree = 1;
	CHECK(fit_poly(x, y, n, &o, &r, err, sizeof(err)) == 0);
	CHECK_NEAR(r.a, a, 1e-10);
	CHECK_NEAR(r.b / b, 1, 1e-12);
	CHECK(r.c == 0 && r.params == 2);
	for (size_t i = 0; i < n; i++)
		y[i] = b * x[i] + c * x[i] * x[i];
	o.degree = 2;
	o.through_origin = true;
	CHECK(fit_poly(x, y, n, &o, &r, err, sizeof(err)) == 0);
	CHECK(r.a == 0 && r.params == 2);
	CHECK_NEAR(r.b / b, 1, 1e-11);
	CHECK_NEAR(r.c / c, 1, 1e-11);
	o.degree = 1;
	for (size_t i = 0; i < n; i++)
		y[i] = b * x[i];
	CHECK(fit_poly(x, y, n, &o, &r, err, sizeof(err)) == 0);
	CHECK(r.params == 1);
	CHECK_NEAR(r.b / b, 1, 1e-13);
}

static void
test_noise(void)
{
	enum { N = 2000 };
	static double x[N], y[N];
	double a = 0.02, b = 3e-5, c = 4e-11;
	struct fit_opt o = { .degree = 2 };
	struct fit_res r;
	char err[128];

	for (int i = 0; i < N; i++) {
		x[i] = 1024 * (1 + i % 1000);	/* 1K .. 1M tokens */
		y[i] = (a + b * x[i] + c * x[i] * x[i]) * (1 + 0.01 * gauss());
	}
	CHECK(fit_poly(x, y, N, &o, &r, err, sizeof(err)) == 0);
	CHECK(fabs(r.c / c - 1) < 0.02);
	CHECK(fabs(r.b / b - 1) < 0.1);
	CHECK(r.r2 > 0.999 && r.r2 < 1);
	CHECK(r.rmse > 0 && r.rmse < 1);

	/* the median per n ignores a wild outlier */
	for (int i = 0; i < 30; i++) {
		x[i] = 1000 * (1 + i / 3);
		y[i] = a + b * x[i] + c * x[i] * x[i];
	}
	y[4] = 1e6;
	CHECK(fit_median_by_x(x, y, 30) == 10);
	for (int i = 0; i < 10; i++)
		CHECK(x[i] == 1000.0 * (i + 1));
	CHECK(fit_poly(x, y, 10, &o, &r, err, sizeof(err)) == 0);
	CHECK_NEAR(r.c / c, 1, 1e-8);
}

static void
test_degenerate(void)
{
	double x[] = { 1, 2, 3, 3, 3 }, y[] = { 1, 2, 3, 4, 5 };
	double yc[] = { 7, 7, 7 };
	struct fit_opt o = { .degree = 2 };
	struct fit_res r;
	char err[128];

	CHECK(fit_poly(x, y, 2, &o, &r, err, sizeof(err)) == -1);
	CHECK(strstr(err, "need at least 3") != NULL);
	CHECK(fit_poly(x + 2, y + 2, 3, &o, &r, err, sizeof(err)) == -1);
	CHECK(strstr(err, "distinct") != NULL);
	CHECK(fit_poly(x, y, 0, &o, &r, err, sizeof(err)) == -1);
	CHECK(fit_poly(x, yc, 3, &o, &r, err, sizeof(err)) == 0);
	CHECK(isnan(r.r2));	/* SST 0: R² undefined */
	CHECK_NEAR(r.a, 7, 1e-12);
	o.degree = 1;
	o.through_origin = true;
	CHECK(fit_poly(x, y, 1, &o, &r, err, sizeof(err)) == 0);
	CHECK(r.b == 1);
	CHECK(fit_median_by_x(x, y, 0) == 0);
	CHECK(fit_params(&o) == 1);
}

int
main(void)
{
	test_exact();
	test_noise();
	test_degenerate();
	return DONE("test_fit");
}
