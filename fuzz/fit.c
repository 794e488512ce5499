/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness: the least-squares fit on arbitrary points.  The
 * input is read as (x, y) pairs of doubles; non-finite values and
 * negative x are dropped, as fit(1) rejects them.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "fit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAXPTS 512

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static double x[MAXPTS], y[MAXPTS];
	struct fit_res res;
	char err[256];
	size_t n = 0;

	for (size_t off = 0; off + 16 <= size && n < MAXPTS; off += 16) {
		double a, b;

		memcpy(&a, data + off, 8);
		memcpy(&b, data + off + 8, 8);
		if (!isfinite(a) || !isfinite(b) || a < 0 || a > 1e12 ||
		    fabs(b) > 1e12)
			continue;
		x[n] = a;
		y[n++] = b;
	}
	for (int deg = 1; deg <= 2; deg++)
		for (int o = 0; o <= 1; o++) {
			struct fit_opt opt = { .degree = deg,
				.through_origin = o };

			if (fit_poly(x, y, n, &opt, &res, err, sizeof(err)) ==
			    0 && !(res.rmse >= 0))
				__builtin_trap();
		}
	n = fit_median_by_x(x, y, n);
	if (n != (size_t)-1) {
		struct fit_opt opt = { .degree = 2 };

		(void)fit_poly(x, y, n, &opt, &res, err, sizeof(err));
	}
	return 0;
}
