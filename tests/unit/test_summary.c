/* SPDX-License-Identifier: MIT */
/* Unit tests: lib/summary (scanner, bootstrap by order statistics, peak). */
#include <stdlib.h>

#include "prng.h"
#include "stats.h"
#include "summary.h"
#include "unit.h"

static int
scan(const char *s, struct sm_keys *k, struct sm_span *sp)
{
	char err[128];

	return sm_scan(s, strlen(s), k, sp, err, sizeof(err));
}

static void
test_scan(void)
{
	struct sm_keys k = { .n = 0 };
	struct sm_span sp[4];
	double x = 0;
	static const char *bad[] = {
		"", "[]", "{", "{\"a\":}", "{\"a\":1,}", "{\"a\" 1}", "{a:1}",
		"{\"a\":01}", "{\"a\":1.}", "{\"a\":-}", "{\"a\":tru}",
		"{\"a\":\"\\x\"}", "{\"a\":\"\\u0000\"}", "{\"a\":\"\\udc00\"}",
		"{\"a\":\"\\ud800x\"}", "{\"a\":\"\xc3\"}", "{\"a\":\"\xed\xa0\x80\"}",
		"{\"a\":\"\x01\"}", "{\"a\":1} x", "{\"a\":[1,2}", "{\"a\":{\"b\"}}",
		"{\"a\":\"unterminated}",
	};
	size_t i;

	sm_want(&k, "ok", 0);
	sm_want(&k, "ttft_s", 1);
	sm_want(&k, "error", 2);
	sm_want(&k, "m", 3);
	CHECK(scan(" {\"id\":{\"ok\":false,\"x\":[1,{}]},\"ok\":true,"
	    "\"ttft_s\":1.5e-3,\"error\":null,\"s\":\"\\ud83d\\ude00 \xc3\xa9\","
	    "\"m\":\"a\"} ", &k, sp) == 0);
	CHECK(sm_is(&sp[0], "true"));	/* nested "ok" is not top level */
	CHECK(sm_num(&sp[1], &x) == 1 && x == 1.5e-3);
	CHECK(sm_num(&sp[2], &x) == 0 && sm_is(&sp[2], "null"));
	CHECK(sm_num(&sp[3], &x) == -1 && sm_is(&sp[3], "\"a\""));
	CHECK(scan("{}", &k, sp) == 0 && sp[0].p == NULL);
	CHECK(scan("{\"ok\":1,\"ok\":false}", &k, sp) == 0 &&
	    sm_is(&sp[0], "false"));
	for (i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		CHECK(scan(bad[i], &k, sp) == -1);
		if (scan(bad[i], &k, sp) != -1)
			fprintf(stderr, "  accepted %s\n", bad[i]);
	}
	CHECK(sm_num(&(struct sm_span){ "1e999", 5 }, &x) == -1);
}

/* Naive bootstrap of the median, for comparison. */
static double
naive_median(const double *x, size_t n, struct kv_prng *r, double *tmp)
{
	size_t i;

	for (i = 0; i < n; i++)
		tmp[i] = x[kv_prng_below(r, n)];
	kv_sort(tmp, n);
	return kv_percentile(tmp, n, 50);
}

static void
test_boot(void)
{
	double x[200], tmp[200], rep[2000], lo, hi, lo2, hi2;
	struct kv_prng r;
	size_t i;

	kv_prng_seed(&r, 5, 0);
	for (i = 0; i < 200; i++)
		x[i] = kv_prng_exp(&r);
	kv_sort(x, 200);
	CHECK(sm_boot_ci(x, 200, 50, 2000, 0.95, 1, 0, &lo, &hi) == 0);
	CHECK(lo < kv_percentile(x, 200, 50) && hi > kv_percentile(x, 200, 50));
	CHECK(sm_boot_ci(x, 200, 50, 2000, 0.95, 1, 0, &lo2, &hi2) == 0);
	CHECK(lo == lo2 && hi == hi2);	/* deterministic for a seed */
	for (i = 0; i < 2000; i++)
		rep[i] = naive_median(x, 200, &r, tmp);
	kv_sort(rep, 2000);
	/* the same distribution as resampling: the interval ends agree */
	CHECK_NEAR(lo, kv_percentile(rep, 2000, 2.5), 0.08);
	CHECK_NEAR(hi, kv_percentile(rep, 2000, 97.5), 0.08);
	CHECK(sm_boot_ci(x, 200, 100, 500, 0.9, 1, 1, &lo, &hi) == 0 &&
	    hi == x[199] && lo <= hi);
	CHECK(sm_boot_ci(x, 200, 0, 500, 0.9, 1, 1, &lo, &hi) == 0 &&
	    lo == x[0]);
	CHECK(sm_boot_ci(x, 1, 99, 100, 0.9, 1, 1, &lo, &hi) == 0 &&
	    lo == x[0] && hi == x[0]);
	CHECK(sm_boot_ci(x, 0, 99, 100, 0.9, 1, 1, &lo, &hi) == 0 &&
	    isnan(lo));
}

static void
test_peak(void)
{
	double s1[] = { 0, 1, 2 }, d1[] = { 1, 2, 3 }, busy;
	double s2[] = { 0, 0.5, 0.6, 5 }, d2[] = { 1, 2, 0.7, 6 };

	CHECK(sm_peak(s1, d1, 3, &busy) == 1 && busy == 3);	/* touching */
	CHECK(sm_peak(s2, d2, 4, &busy) == 3);
	CHECK_NEAR(busy, 1 + 1.5 + 0.1 + 1, 1e-12);
	CHECK(sm_peak(s2, d2, 0, &busy) == 0 && busy == 0);
}

static void
test_eval(void)
{
	struct sm_spec sp = { .nmetric = 1, .metric = { "ttft_s" } };
	struct sm_span span[SM_MAX_KEYS];
	struct sm_rec r;
	char err[128], s1[] = "ttft_s<500ms", s2[] = "tokens>=10",
	    s3[] = "x=<1", s4[] = "ttft_s<=soon";

	CHECK(sm_parse_slo(&sp.slo[0], s1, err, sizeof(err)) == 0);
	CHECK(sp.slo[0].le && sp.slo[0].strict && sp.slo[0].limit == 0.5);
	CHECK_STR(sp.slo[0].field, "ttft_s");
	CHECK(sm_parse_slo(&sp.slo[1], s2, err, sizeof(err)) == 0);
	CHECK(!sp.slo[1].le && !sp.slo[1].strict && sp.slo[1].limit == 10);
	CHECK(sm_parse_slo(&sp.slo[2], s3, err, sizeof(err)) == -1);
	CHECK(sm_parse_slo(&sp.slo[2], s4, err, sizeof(err)) == -1);
	sp.nslo = 2;
	CHECK(sm_spec_keys(&sp) == 0);
#define EVAL(js) (sm_scan(js, strlen(js), &sp.keys, span, err, sizeof(err)) \
	|| sm_eval(&sp, span, &r, err, sizeof(err)))
	CHECK(EVAL("{\"ok\":true,\"ttft_s\":0.4,\"tokens\":10,\"sent_s\":1,"
	    "\"done_s\":2}") == 0);
	CHECK(r.ok && r.has_metric[0] && r.metric[0] == 0.4 && r.slo_met &&
	    r.has_times && r.sent == 1 && r.done == 2);
	CHECK(EVAL("{\"ok\":true,\"ttft_s\":0.5,\"tokens\":10}") == 0);
	CHECK(!r.slo_met && !r.has_times);	/* 0.5 is not < 500ms */
	CHECK(EVAL("{\"ok\":true,\"ttft_s\":0.1}") == 0 && !r.slo_met);
	CHECK(EVAL("{\"ok\":false,\"ttft_s\":0.1,\"tokens\":99}") == 0 &&
	    !r.slo_met && !r.ok);
	CHECK(EVAL("{\"ok\":true,\"ttft_s\":null,\"sent_s\":2,"
	    "\"done_s\":1}") == 0 && !r.has_metric[0] && !r.has_times);
	CHECK(EVAL("{\"kind\":\"error\",\"line\":3}") == 0 &&
	    r.input_error && !r.ok);
	CHECK(EVAL("{\"ttft_s\":1}") != 0);
	CHECK_STR(err, "missing field 'ok'");
	CHECK(EVAL("{\"ok\":1}") != 0);
	CHECK_STR(err, "field 'ok' is not a boolean");
	CHECK(EVAL("{\"ok\":true,\"tokens\":\"many\"}") != 0);
	CHECK_STR(err, "field 'tokens' is not a number");
	CHECK(EVAL("{\"ok\":true,\"done_s\":[]}") != 0);
#undef EVAL
}

int
main(void)
{
	test_scan();
	test_boot();
	test_peak();
	test_eval();
	return DONE("test_summary");
}
