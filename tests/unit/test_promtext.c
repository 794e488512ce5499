/* SPDX-License-Identifier: MIT */
/* Unit tests: the Prometheus text parser, counter deltas, tcp-probe's wire format. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctrsnap.h"
#include "promtext.h"
#include "tcpproto.h"
#include "unit.h"

struct got {
	int n;
	char name[8][64], lab[8][128], type[8][16];
	double v[8];
	long long ts[8];
};

static int
keep(const struct prom_sample *s, void *ctx)
{
	struct got *g = ctx;
	size_t i;

	if (g->n == 8)
		return 0;
	snprintf(g->name[g->n], 64, "%s", s->name);
	snprintf(g->type[g->n], 16, "%s", s->type);
	g->lab[g->n][0] = '\0';
	for (i = 0; i < s->nlabels; i++) {
		strncat(g->lab[g->n], s->labels[i].name, 40);
		strcat(g->lab[g->n], "=");
		strncat(g->lab[g->n], s->labels[i].value, 40);
		strcat(g->lab[g->n], ";");
	}
	g->v[g->n] = s->value;
	g->ts[g->n] = s->has_ts ? s->ts_ms : -1;
	g->n++;
	return 0;
}

static int
parse(const char *text, struct got *g, char *err)
{
	size_t line;

	memset(g, 0, sizeof(*g));
	err[0] = '\0';
	return prom_parse(text, strlen(text), keep, g, &line, err, 200) == 0 ?
	    0 : (int)line;
}

static void
test_prom(void)
{
	struct got g;
	char err[200];

	CHECK(parse("# HELP a_total Docs \\\\ and \\n.\n# TYPE a_total counter\n"
	    "a_total{x=\"q\\\"\\\\\\n\",y=\"2\",} 5 -17\n", &g, err) == 0);
	CHECK(g.n == 1);
	CHECK_STR(g.lab[0], "x=q\"\\\n;y=2;");
	CHECK(g.ts[0] == -17);
	CHECK_STR(g.type[0], "counter");
	CHECK(parse("b NaN\nc +Inf\nd -Inf\ne 1e3\n  \n\tf\t 2 \r\n", &g, err) == 0);
	CHECK(g.n == 5 && isnan(g.v[0]) && isinf(g.v[1]) && g.v[2] < 0 &&
	    g.v[3] == 1000 && g.v[4] == 2);
	CHECK(parse("# TYPE h histogram\nh_bucket{le=\"+Inf\"} 3\nh_sum 2\n"
	    "h_count 3\nh_other 1\n", &g, err) == 0);
	CHECK_STR(g.type[0], "histogram");
	CHECK_STR(g.type[2], "histogram");
	CHECK_STR(g.type[3], "untyped");
	CHECK(parse("# TYPE s summary\ns_bucket 1\n", &g, err) == 0);
	CHECK_STR(g.type[0], "untyped");
	/* malformed lines, each with its line number */
	CHECK(parse("ok 1\nbad{x=\"\\q\"} 1\n", &g, err) == 2);
	CHECK(strstr(err, "invalid escape") != NULL);
	CHECK(parse("x{a=\"1\",a=\"2\"} 1\n", &g, err) == 1);
	CHECK(parse("x{a=\"1\" 1\n", &g, err) == 1);
	CHECK(parse("x{a=\"unterminated} 1\n", &g, err) == 1);
	CHECK(parse("x\n", &g, err) == 1);
	CHECK(parse("x 1 2 3\n", &g, err) == 1);
	CHECK(parse("x one\n", &g, err) == 1);
	CHECK(parse("x 1 1.5\n", &g, err) == 1);
	CHECK(parse("9x 1\n", &g, err) == 1);
	CHECK(parse("x-y 1\n", &g, err) == 1);
	CHECK(parse("# TYPE x counter\n# TYPE x gauge\n", &g, err) == 2);
	CHECK(parse("x 1\n# TYPE x counter\n", &g, err) == 2);
	CHECK(parse("# TYPE x countr\n", &g, err) == 1);
	CHECK(parse("# HELP x a\n# HELP x b\n", &g, err) == 2);
	CHECK(parse("# HELP\n", &g, err) == 1);
	CHECK(parse("x{l=\"\xff\"} 1\n", &g, err) == 1);
	CHECK(strstr(err, "UTF-8") != NULL);
	CHECK(parse("# just a comment\n#\n", &g, err) == 0 && g.n == 0);
	CHECK(prom_utf8_ok("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9));
	CHECK(!prom_utf8_ok("\xc0\xaf", 2));
	CHECK(!prom_utf8_ok("\xed\xa0\x80", 3));
	CHECK(!prom_utf8_ok("\xe2\x82", 2));
}

static json_t *
rec(const char *type, double v, double t)
{
	json_t *r = json_pack("{s:s,s:s,s:s,s:{s:s},s:f,s:f}", "kind", "counter",
	    "source", "netdev:x", "name", "rx_bytes", "labels", "iface", "x",
	    "value", v, "t_unix_s", t);

	json_object_set_new(r, "type", json_string(type));
	return r;
}

static void
test_delta(void)
{
	json_t *a = rec("counter", 100, 10), *b = rec("counter", 250, 12.5),
	    *c = rec("counter", 30, 13), *g1 = rec("gauge", 5, 1),
	    *g2 = rec("gauge", 2, 2), *d;
	char err[200], *k1, *k2;

	d = ctr_delta(a, b, err, sizeof(err));
	CHECK(json_real_value(json_object_get(d, "delta")) == 150 ||
	    json_integer_value(json_object_get(d, "delta")) == 150);
	CHECK_NEAR(json_number_value(json_object_get(d, "seconds")), 2.5, 1e-12);
	CHECK(json_is_false(json_object_get(d, "reset")));
	json_decref(d);
	d = ctr_delta(b, c, err, sizeof(err));
	CHECK(json_is_true(json_object_get(d, "reset")));
	CHECK(json_number_value(json_object_get(d, "delta")) == 30);
	json_decref(d);
	d = ctr_delta(g1, g2, err, sizeof(err));
	CHECK(json_is_false(json_object_get(d, "reset")));
	CHECK(json_number_value(json_object_get(d, "delta")) == -3);
	json_decref(d);
	{
		json_t *n1 = rec("counter", -3, 1), *n2 = rec("counter", -5, 2),
		    *u1 = rec("untyped", 4, 1), *u2 = rec("untyped", 1, 2);

		d = ctr_delta(n1, n2, err, sizeof(err));
		CHECK(json_is_null(json_object_get(d, "delta")));
		CHECK_STR(json_string_value(json_object_get(d, "state")),
		    "negative_counter");
		json_decref(d);
		d = ctr_delta(u1, u2, err, sizeof(err));
		CHECK(json_number_value(json_object_get(d, "delta")) == -3);
		CHECK(json_is_false(json_object_get(d, "reset")));
		json_decref(d);
		json_decref(n1);
		json_decref(n2);
		json_decref(u1);
		json_decref(u2);
	}
	d = ctr_delta(NULL, c, err, sizeof(err));
	CHECK_STR(json_string_value(json_object_get(d, "state")), "absent_before");
	json_decref(d);
	k1 = ctr_key(a, err, sizeof(err));
	k2 = ctr_key(c, err, sizeof(err));
	CHECK(k1 && k2 && strcmp(k1, k2) == 0);
	free(k1);
	free(k2);
	json_object_del(a, "name");
	CHECK(ctr_key(a, err, sizeof(err)) == NULL);
	json_object_set_new(b, "value", json_string("7"));
	CHECK(ctr_delta(b, c, err, sizeof(err)) == NULL);
	json_decref(a);
	json_decref(b);
	json_decref(c);
	json_decref(g1);
	json_decref(g2);
}

static void
test_wire(void)
{
	struct tp_hello h = { .streams = 128, .frame_bytes = 1 << 20,
	    .verify = 1 }, h2;
	struct tp_frame f = { .version = 1, .stream = 7, .seq = 1ull << 40,
	    .len = 4096 }, f2;
	struct tp_seq s = { 0 };
	uint8_t b[TP_FRAME_HDR], hb[TP_HELLO_LEN], type;
	uint32_t len;
	char err[160];

	memset(h.run_id, 0xab, sizeof(h.run_id));
	tp_hello_encode(hb, &h);
	CHECK(tp_hello_decode(hb, sizeof(hb), &h2, err, sizeof(err)) == 0);
	CHECK(h2.streams == 128 && h2.frame_bytes == 1u << 20 && h2.verify == 1);
	hb[19] = 129;
	CHECK(tp_hello_decode(hb, sizeof(hb), &h2, err, sizeof(err)) != 0);
	tp_frame_encode(b, &f);
	CHECK(memcmp(b, "KVGF", 4) == 0);
	CHECK(tp_frame_decode(b, 4096, &f2, err, sizeof(err)) == 0);
	CHECK(f2.seq == 1ull << 40 && f2.stream == 7 && f2.len == 4096);
	CHECK(tp_frame_decode(b, 4095, &f2, err, sizeof(err)) != 0);
	CHECK(strstr(err, "over the bound") != NULL);
	b[4] = 2;
	CHECK(tp_frame_decode(b, 4096, &f2, err, sizeof(err)) != 0);
	tp_ctl_header(b, TP_DONE, 20);
	CHECK(tp_ctl_parse(b, &type, &len, err, sizeof(err)) == 0 &&
	    type == TP_DONE && len == 20);
	tp_ctl_header(b, TP_DONE, TP_MAX_BODY + 1);
	CHECK(tp_ctl_parse(b, &type, &len, err, sizeof(err)) != 0);
	/* 0 ok, 1 bad, 2 ok (gap), 2 replayed (bad), 3 ok; 5 sent: tail gap */
	CHECK(tp_seq_feed(&s, 0, true, 10));
	CHECK(!tp_seq_feed(&s, 1, false, 10));
	CHECK(tp_seq_feed(&s, 2, true, 10));
	CHECK(!tp_seq_feed(&s, 2, true, 10));
	CHECK(tp_seq_feed(&s, 3, true, 10));
	tp_seq_finish(&s, 5);
	CHECK(s.r.frames_ok == 3 && s.r.frames_bad == 2 && s.r.seq_gaps == 2 &&
	    s.r.verified_bytes == 30);
}

int
main(void)
{
	test_prom();
	test_delta();
	test_wire();
	return DONE("test_promtext");
}
