/* SPDX-License-Identifier: MIT */
/* Unit tests: lib/prng (reference vectors) and lib/workload. */
#include <math.h>
#include <stdlib.h>

#include "prng.h"
#include "unit.h"
#include "workload.h"

static void
test_prng(void)
{
	struct kv_prng r = { { 1, 2, 3, 4 } };
	uint64_t x = 0, hist[10] = { 0 };
	double sum = 0, g = 0;
	int i;

	/* reference outputs of splitmix64 (state 0) and xoshiro256** */
	CHECK(kv_splitmix64(&x) == 0xe220a8397b1dcdafULL);
	CHECK(kv_prng_next(&r) == 11520);
	CHECK(kv_prng_next(&r) == 0);
	CHECK(kv_prng_next(&r) == 1509978240);
	CHECK(kv_prng_next(&r) == 1215971899390074240ULL);
	kv_prng_seed(&r, 42, 0);
	for (i = 0; i < 100000; i++) {
		hist[kv_prng_below(&r, 10)]++;
		sum += kv_prng_exp(&r);
		g += kv_prng_gamma(&r, 0.5);
	}
	for (i = 0; i < 10; i++)
		CHECK(hist[i] > 9500 && hist[i] < 10500);
	CHECK_NEAR(sum / 100000, 1.0, 0.02);
	CHECK_NEAR(g / 100000, 0.5, 0.02);
	CHECK(kv_prng_open(&r) > 0);
}

static void
test_hits(void)
{
	/* DESIGN.md: 1,008 hit tokens = 63 blocks of 16 */
	CHECK(wl_hit_tokens(1024, 0.99, 16) == 1008);
	CHECK(wl_hit_tokens(1024, 1.0, 16) == 1008);	/* not the last block */
	CHECK(wl_hit_tokens(1025, 1.0, 16) == 1024);
	CHECK(wl_hit_tokens(8192, 0.3, 16) == 2448);	/* floor(2457.6/16)*16 */
	CHECK(wl_hit_tokens(100, 0.0, 16) == 0);
	CHECK(wl_hit_tokens(16, 1.0, 16) == 0);
	CHECK(wl_hit_tokens(17, 1.0, 16) == 16);
}

static void
test_gen(void)
{
	struct wl_opts o = { .requests = 6, .tokens = 64, .block = 16,
	    .vocab = 1000, .output_tokens = 8, .prefixes = 2, .seed = 7,
	    .hit_rate = 0.5, .rate = 10, .arrival = WL_CONSTANT };
	uint32_t a[64], b[64], c[64];
	struct wl_gen g, g2;
	struct wl_req r, r2;
	char err[128];

	CHECK(wl_check(&o, err, sizeof(err)) == 0);
	wl_init(&g, &o);
	wl_init(&g2, &o);
	CHECK(wl_next(&g, &r, a) && r.id == 0 && r.expected_hit_tokens == 0);
	CHECK(wl_next(&g2, &r2, b) && memcmp(a, b, sizeof(a)) == 0);
	CHECK(wl_next(&g, &r, b) && r.prefix_id == 1);
	CHECK(wl_next(&g, &r, c) && r.prefix_id == 0 &&
	    r.expected_hit_tokens == 32);
	CHECK_NEAR(r.arrival_s, 0.2, 1e-12);
	CHECK(memcmp(a, c, 32 * sizeof(*a)) == 0);	/* shared prefix */
	CHECK(memcmp(a + 32, c + 32, 16 * sizeof(*a)) != 0);	/* suffix */
	CHECK(memcmp(a, b, 16 * sizeof(*a)) != 0);	/* other prefix */
	CHECK(wl_next(&g, &r, c) && wl_next(&g, &r, c) && wl_next(&g, &r, c));
	CHECK(wl_next(&g, &r, c) == 0);

	o.ring = 3;
	o.requests = 0;
	o.prefixes = 0;
	o.probe = true;
	CHECK(wl_check(&o, err, sizeof(err)) == 0);
	wl_init(&g, &o);
	CHECK(wl_next(&g, &r, a) && r.expected_hit_tokens == 0 && !r.probe);
	CHECK(wl_next(&g, &r, c) && wl_next(&g, &r, c) && !r.probe);
	CHECK(wl_next(&g, &r, b) && strcmp(r.probe, "resident") == 0 &&
	    r.prefix_id == 2 && r.expected_hit_tokens == 32);
	CHECK(memcmp(b, c, 32 * sizeof(*b)) == 0);
	CHECK(wl_next(&g, &r, b) && strcmp(r.probe, "evicted") == 0 &&
	    r.prefix_id == 0 && r.expected_hit_tokens == 0);
	CHECK(memcmp(a, b, 32 * sizeof(*b)) == 0);
	CHECK(wl_next(&g, &r, b) == 0);

	o.prefixes = 2;
	CHECK(wl_check(&o, err, sizeof(err)) == -1);
	o.prefixes = 0;
	o.hit_rate = 0;
	CHECK(wl_check(&o, err, sizeof(err)) == -1);	/* probe needs H */
	CHECK(wl_parse_arrival("gamma:0.5", &o, err, sizeof(err)) == 0 &&
	    o.arrival == WL_GAMMA && o.burstiness == 0.5);
	CHECK(wl_parse_arrival("weibull", &o, err, sizeof(err)) == -1);
}

static void
test_gamma_rate(void)
{
	struct wl_opts o = { .requests = 20001, .tokens = 4, .block = 16,
	    .vocab = 100, .seed = 3, .rate = 50, .arrival = WL_GAMMA,
	    .burstiness = 0.25 };
	struct wl_gen g;
	struct wl_req r;
	uint32_t t[4];

	wl_init(&g, &o);
	while (wl_next(&g, &r, t))
		;
	CHECK_NEAR(r.arrival_s / 20000, 1.0 / 50, 0.05);
}

/* The coefficient of variation of n arrival gaps of process a. */
static double
gap_cv(enum wl_arrival a, double burstiness, uint64_t n)
{
	struct wl_opts o = { .requests = n + 1, .tokens = 4, .block = 16,
	    .vocab = 100, .seed = 7, .rate = 10, .arrival = a,
	    .burstiness = burstiness };
	struct wl_gen g;
	struct wl_req r;
	uint32_t t[4];
	double prev = 0, d, sum = 0, sq = 0, mean;

	wl_init(&g, &o);
	while (wl_next(&g, &r, t)) {
		d = r.arrival_s - prev;
		prev = r.arrival_s;
		if (r.id == 0)
			continue;
		sum += d;
		sq += d * d;
	}
	mean = sum / (double)n;
	return sqrt(fmax(0, sq / (double)n - mean * mean)) / mean;
}

/*
 * Gamma gaps with shape B have CV 1/sqrt(B); Poisson gaps CV 1.  With
 * 200,000 gaps the CV's standard error is under 1% even at B = 0.25
 * (excess kurtosis 24), so 5% holds for any seed, and this one is fixed.
 */
static void
test_arrival_cv(void)
{
	CHECK_NEAR(gap_cv(WL_GAMMA, 0.25, 200000) / 2.0, 1, 0.05);
	CHECK_NEAR(gap_cv(WL_GAMMA, 4, 200000) / 0.5, 1, 0.05);
	CHECK_NEAR(gap_cv(WL_POISSON, 0, 200000), 1, 0.05);
	CHECK(gap_cv(WL_CONSTANT, 0, 1000) < 1e-6);
}

int
main(void)
{
	test_prng();
	test_hits();
	test_gen();
	test_gamma_rate();
	test_arrival_cv();
	return DONE("test_workload");
}
