/* SPDX-License-Identifier: MIT */
#include <stdlib.h>

#include "err.h"
#include "jsonl.h"
#include "unit.h"

static FILE *
mem(const char *s, size_t len)
{
	return fmemopen((void *)s, len, "r");
}

/* Run the reader over s and count OK and BAD lines. */
static void
scan(const char *s, size_t len, size_t max, int *ok, int *bad, size_t *last)
{
	struct jsonl_reader r;
	enum jsonl_status st;
	FILE *fp = mem(s, len);
	json_t *v;

	*ok = *bad = 0;
	jsonl_init(&r, fp, "stdin", max);
	while ((st = jsonl_next(&r, &v)) != JSONL_EOF) {
		if (st == JSONL_OK)
			(*ok)++;
		else
			(*bad)++;
		json_decref(v);
	}
	*last = r.lineno;
	jsonl_free(&r);
	fclose(fp);
}

static int
double_it(json_t *rec, void *ctx, char *err, size_t errlen)
{
	double x;

	(void)ctx;
	if (jf_num(rec, "x", &x, err, errlen) != JF_OK) {
		if (!err[0])
			snprintf(err, errlen, "missing field 'x'");
		return -1;
	}
	return jset_num(rec, "y", 2 * x);
}

int
main(void)
{
	static const char lines[] = "{\"a\":1}\r\n\n   \n{\"b\":2}\n{\"c\":3}";
	static const char bad[] = "{\"a\":1}\nnot json\n[1,2]\n\"\xff\xfe\"\n{\"s\":\"\xc3\x28\"}\n{\"z\":0}\n";
	char big[300];
	char outbuf[4096] = "";
	int ok, nbad, rc;
	size_t last, nrec;
	FILE *in, *out;
	struct jsonl_filter opt = { 0 };

	kv_progname = "test_jsonl";
	scan(lines, sizeof(lines) - 1, 0, &ok, &nbad, &last);
	CHECK(ok == 3 && nbad == 0 && last == 5);

	scan(bad, sizeof(bad) - 1, 0, &ok, &nbad, &last);
	CHECK(ok == 2 && nbad == 4 && last == 6);

	memset(big, 'x', sizeof(big));
	memcpy(big, "{\"k\":\"", 6);
	memcpy(big + 200, "\"}\n{\"after\":1}\n", 15);
	scan(big, 215, 100, &ok, &nbad, &last);
	CHECK(ok == 1 && nbad == 1 && last == 2);
	scan(big, 215, 0, &ok, &nbad, &last);
	CHECK(ok == 2 && nbad == 0);

	/* a NUL inside a line spoils that line only */
	scan("{\"a\":\"x\0y\"}\n{\"b\":1}\n", 20, 0, &ok, &nbad, &last);
	CHECK(ok == 1 && nbad == 1 && last == 2);

	scan("", 0, 0, &ok, &nbad, &last);
	CHECK(ok == 0 && nbad == 0 && last == 0);

	in = mem("{\"x\":2,\"m\":\"keep\"}\n{\"x\":\"no\"}\n{}\n", 33);
	out = fmemopen(outbuf, sizeof(outbuf), "w");
	rc = jsonl_filter(in, "stdin", out, double_it, NULL, &opt, &nrec);
	fclose(out);
	fclose(in);
	CHECK(rc == KV_DATAERR && nrec == 3);
	CHECK_STR(outbuf, "{\"x\":2,\"m\":\"keep\",\"y\":4}\n"
	    "{\"kind\":\"error\",\"line\":2,\"error\":\"field 'x' must be a number\"}\n"
	    "{\"kind\":\"error\",\"line\":3,\"error\":\"missing field 'x'\"}\n");

	opt.strict = true;
	in = mem("{\"x\":\"no\"}\n{\"x\":1}\n", 19);
	out = fmemopen(outbuf, sizeof(outbuf), "w");
	rc = jsonl_filter(in, "stdin", out, double_it, NULL, &opt, &nrec);
	fclose(out);
	fclose(in);
	CHECK(rc == KV_DATAERR && nrec == 1);

	{
		char cut[] = "dtype 'x\xc3\xa9\xc3";	/* cut inside the 2nd e-acute */
		char raw[] = "a\xff\xfe b \xe2\x82\xac";

		jsonl_clean_utf8(cut);
		CHECK_STR(cut, "dtype 'x\xc3\xa9?");
		jsonl_clean_utf8(raw);
		CHECK_STR(raw, "a?? b \xe2\x82\xac");
		out = fmemopen(outbuf, sizeof(outbuf), "w");
		CHECK(jsonl_error(out, "stdin", 7, "bad \xc3") == 0);
		fclose(out);
		CHECK_STR(outbuf, "{\"kind\":\"error\",\"line\":7,\"error\":\"bad ?\"}\n");
	}
	{
		json_t *o = json_object();
		uint64_t u;
		double d;
		char err[128];

		jset_num(o, "i", 3.0);
		jset_num(o, "r", 0.5);
		jset_num(o, "n", NAN);
		CHECK(json_is_integer(json_object_get(o, "i")));
		CHECK(json_is_real(json_object_get(o, "r")));
		CHECK(json_is_null(json_object_get(o, "n")));
		CHECK(jf_num(o, "n", &d, err, sizeof(err)) == JF_ABSENT);
		CHECK(jf_u64(o, "i", 10, &u, err, sizeof(err)) == JF_OK && u == 3);
		CHECK(jf_u64(o, "i", 2, &u, err, sizeof(err)) == JF_BAD);
		CHECK(jf_u64(o, "r", 10, &u, err, sizeof(err)) == JF_BAD);
		json_object_set_new(o, "neg", json_integer(-1));
		CHECK(jf_u64(o, "neg", 10, &u, err, sizeof(err)) == JF_BAD);
		json_decref(o);
	}
	return DONE("test_jsonl");
}
