/* SPDX-License-Identifier: MIT */
/* Unit tests: lib/summary (SLOs, record evaluation, bootstrap, peak). */
#include <stdlib.h>

#include <jansson.h>

#include "prng.h"
#include "stats.h"
#include "summary.h"
#include "unit.h"

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

/*
 * Evaluate the record text js (a JSON object) against sp into r.  The
 * record lives until the next call (r->error points into it); NULL frees.
 */
static int
eval(const struct sm_spec *sp, const char *js, struct sm_rec *r, char *err,
    size_t errlen)
{
	static json_t *rec;

	json_decref(rec);
	if (js == NULL)
		return rec = NULL, 0;
	rec = json_loads(js, 0, NULL);	/* json_is_object is a macro */
	if (!json_is_object(rec))
		abort();
	return sm_eval(sp, rec, r, err, errlen);
}

static void
test_eval(void)
{
	struct sm_spec sp = { .nmetric = 1, .metric = { "ttft_s" } };
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
#define EVAL(js) eval(&sp, js, &r, err, sizeof(err))
	CHECK(EVAL("{\"ok\":true,\"ttft_s\":0.4,\"tokens\":10,\"sent_s\":1,"
	    "\"done_s\":2}") == 0);
	CHECK(r.ok && r.has_metric[0] && r.metric[0] == 0.4 && r.slo_met &&
	    r.has_times && r.sent == 1 && r.done == 2 && r.error == NULL);
	CHECK(EVAL("{\"ok\":true,\"ttft_s\":0.5,\"tokens\":10}") == 0);
	CHECK(!r.slo_met && !r.has_times);	/* 0.5 is not < 500ms */
	CHECK(EVAL("{\"ok\":true,\"ttft_s\":0.1}") == 0 && !r.slo_met);
	CHECK(EVAL("{\"ok\":false,\"ttft_s\":0.1,\"tokens\":99,"
	    "\"error\":\"timeout\"}") == 0 && !r.slo_met && !r.ok);
	CHECK(r.error && strcmp(r.error, "timeout") == 0);
	CHECK(EVAL("{\"ok\":false,\"error\":5}") == 0 && r.error == NULL);
	CHECK(EVAL("{\"ok\":true,\"ttft_s\":null,\"sent_s\":2,"
	    "\"done_s\":1}") == 0 && !r.has_metric[0] && !r.has_times);
	CHECK(EVAL("{\"kind\":\"error\",\"line\":3}") == 0 &&
	    r.input_error && !r.ok);
	CHECK(EVAL("{\"kind\":\"error\",\"ok\":true}") == 0 &&
	    r.input_error && !r.ok);
	/* keys and values are compared decoded: escapes do not matter */
	CHECK(EVAL("{\"\\u006fk\":true,\"ttft\\u005fs\":7}") == 0 &&
	    r.ok && r.has_metric[0] && r.metric[0] == 7);
	CHECK(EVAL("{\"kind\":\"\\u0065rror\"}") == 0 && r.input_error);
	/* nested fields are not top-level fields */
	CHECK(EVAL("{\"id\":{\"ok\":false},\"ok\":true}") == 0 && r.ok);
	CHECK(EVAL("{\"ok\":1,\"ok\":false}") == 0 && !r.ok);	/* last wins */
	CHECK(EVAL("{\"ttft_s\":1}") != 0);
	CHECK_STR(err, "missing field 'ok'");
	CHECK(EVAL("{\"ok\":1}") != 0);
	CHECK_STR(err, "field 'ok' is not a boolean");
	CHECK(EVAL("{\"ok\":null}") != 0);
	CHECK_STR(err, "field 'ok' is not a boolean");
	CHECK(EVAL("{\"ok\":true,\"ttft_s\":\"fast\"}") != 0);
	CHECK_STR(err, "field 'ttft_s' is not a number");
	CHECK(EVAL("{\"ok\":true,\"tokens\":\"many\"}") != 0);
	CHECK_STR(err, "field 'tokens' is not a number");
	CHECK(EVAL("{\"ok\":true,\"done_s\":[]}") != 0);
	CHECK_STR(err, "sent_s or done_s is not a number");
	EVAL(NULL);
#undef EVAL
}

int
main(void)
{
	test_boot();
	test_peak();
	test_eval();
	return DONE("test_summary");
}
