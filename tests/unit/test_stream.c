/* SPDX-License-Identifier: MIT */
/* Unit tests: lib/sse (event splitting) and lib/oai (chunks, bodies). */
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "oai.h"
#include "reqfeed.h"
#include "sse.h"
#include "unit.h"

struct got {
	char buf[4096];
	size_t len;
	int n;
};

static int
collect(void *ctx, const char *data, size_t len)
{
	struct got *g = ctx;

	g->len += (size_t)snprintf(g->buf + g->len, sizeof(g->buf) - g->len,
	    "[%.*s]", (int)len, data);
	g->n++;
	return 0;
}

/* Events of s fed whole, and fed split at every point, must agree. */
static void
same_any_split(const char *s, const char *want, int nwant)
{
	struct sse p;
	struct got g;
	size_t n = strlen(s), cut, bad = 0;

	for (cut = 0; cut <= n; cut++) {
		memset(&g, 0, sizeof(g));
		sse_init(&p, 0);
		sse_feed(&p, s, cut, collect, &g);
		sse_feed(&p, s + cut, n - cut, collect, &g);
		bad += strcmp(g.buf, want) != 0 || g.n != nwant;
		sse_free(&p);
	}
	CHECK(bad == 0);
	if (bad)
		fprintf(stderr, "  want %s\n", want);
}

static void
test_sse(void)
{
	struct sse p;
	struct got g = { .n = 0 };

	same_any_split("data: a\n\ndata: b\n\n", "[a][b]", 2);
	same_any_split("data: a\r\n\r\ndata:b\r\n\r\n", "[a][b]", 2);
	same_any_split("data: a\r\rdata: b\r\r", "[a][b]", 2);
	same_any_split(": keep-alive\n\ndata: x\n: c\ndata: y\n\n", "[x\ny]", 1);
	same_any_split("event: e\nid: 3\nretry: 5\ndata:  two\n\n", "[ two]", 1);
	same_any_split("data\n\ndata: [DONE]\n\n", "[][[DONE]]", 2);
	same_any_split("data: tail without blank line\n", "", 0);
	same_any_split("\n\n\ndatax: no\n\n", "", 0);
	sse_init(&p, 8);
	CHECK(sse_feed(&p, "data: 0123456789\n\n", 18, collect, &g) ==
	    SSE_TOO_LONG);
	sse_free(&p);
	sse_init(&p, 0);
	CHECK(sse_feed(&p, "data: x", 7, collect, &g) == SSE_OK);
	CHECK(sse_pending(&p));
	sse_free(&p);
	CHECK_STR(sse_strerror(SSE_TOO_LONG), "event stream line or event too long");
}

static void
ev(struct oai_stream *s, const char *data)
{
	oai_event(s, data, strlen(data));
}

static void
test_oai(void)
{
	struct oai_stream s;
	char hex[KV_SHA256_HEX];
	const char *stream =
	    "data: {\"choices\":[{\"index\":0,\"text\":\"he\",\"finish_reason\":null}]}\n\n"
	    "data: {\"choices\":[{\"index\":0,\"text\":\"llo\",\"finish_reason\":\"length\"}]}\n\n"
	    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":2,"
	    "\"prompt_tokens_details\":{\"cached_tokens\":32}}}\n\ndata: [DONE]\n\n";

	size_t cut = (size_t)(strstr(stream, "\n\n") - stream) + 2;

	CHECK(oai_init(&s, false) == 0);
	oai_feed(&s, stream, cut, 1.0);
	oai_feed(&s, stream + cut, strlen(stream) - cut, 1.5);
	CHECK(s.done && !s.bad && s.chunks == 2 && s.nitl == 1);
	CHECK_NEAR(s.itl[0], 0.5, 1e-12);
	CHECK(s.prompt_tokens == 40 && s.completion_tokens == 2 &&
	    s.cached_tokens == 32);
	CHECK_STR(s.finish_reason, "length");
	CHECK(oai_digest(&s, hex) == 0);
	/* printf hello | sha256sum */
	CHECK_STR(hex, "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
	oai_free(&s);

	CHECK(oai_init(&s, true) == 0);
	ev(&s, "{\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}");
	CHECK(s.chunks == 0 && !s.bad);
	ev(&s, "{\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}");
	CHECK(s.chunks == 1);
	ev(&s, "{\"error\":{\"message\":\"boom\"}}");
	CHECK(s.bad && s.server_error);
	CHECK_STR(s.detail, "server error in stream: boom");
	oai_free(&s);

	CHECK(oai_init(&s, false) == 0);
	ev(&s, "{\"choices\": [");
	CHECK(s.bad && strncmp(s.detail, "malformed chunk", 15) == 0);
	oai_free(&s);
}

static void
test_body(void)
{
	char err[128], *b;
	json_t *rec = json_loads("{\"prompt\":[1,2,3],\"max_tokens\":4,"
	    "\"id\":7}", 0, NULL);

	b = oai_body(rec, "m", false, err, sizeof(err));
	CHECK_STR(b, "{\"model\":\"m\",\"prompt\":[1,2,3],\"stream\":true,"
	    "\"stream_options\":{\"include_usage\":true},\"max_tokens\":4}");
	free(b);
	CHECK(oai_body(rec, "m", true, err, sizeof(err)) == NULL);
	CHECK_STR(err, "--chat needs a string prompt (use workload --format text)");
	json_object_set_new(rec, "prompt", json_string("hi"));
	b = oai_body(rec, "m", true, err, sizeof(err));
	CHECK_STR(b, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
	    "\"content\":\"hi\"}],\"stream\":true,\"stream_options\":"
	    "{\"include_usage\":true},\"max_tokens\":4}");
	free(b);
	json_object_set_new(rec, "prompt", json_pack("[i,s]", 1, "x"));
	CHECK(oai_body(rec, "m", false, err, sizeof(err)) == NULL);
	json_object_del(rec, "prompt");
	CHECK(oai_body(rec, "m", false, err, sizeof(err)) == NULL);
	CHECK_STR(err, "missing field 'prompt'");
	json_object_set_new(rec, "prompt", json_string("x"));
	json_object_set_new(rec, "max_tokens", json_integer(0));
	CHECK(oai_body(rec, "m", false, err, sizeof(err)) == NULL);
	json_decref(rec);
}

static void
test_classify(void)
{
	struct oai_stream s;
	char d[256];

	CHECK(oai_init(&s, false) == 0);
	CHECK_STR(oai_classify(&s, OAI_END_NOCONNECT, 0, "refused", NULL, d,
	    sizeof(d)), "connect");
	CHECK_STR(d, "refused");
	CHECK_STR(oai_classify(&s, OAI_END_OK, 503, "", "{\"x\":1}", d,
	    sizeof(d)), "http_5xx");
	CHECK_STR(d, "HTTP 503: {\"x\":1}");
	CHECK_STR(oai_classify(&s, OAI_END_OK, 429, "", "", d, sizeof(d)),
	    "http_4xx");
	CHECK_STR(oai_classify(&s, OAI_END_TIMEOUT, 200, "slow", NULL, d,
	    sizeof(d)), "timeout");
	CHECK_STR(oai_classify(&s, OAI_END_TRANSFER, 200, "cut", NULL, d,
	    sizeof(d)), "stream_cut");
	CHECK_STR(oai_classify(&s, OAI_END_OK, 302, "", NULL, d, sizeof(d)),
	    "bad_stream");
	CHECK_STR(oai_classify(&s, OAI_END_OK, 200, "", NULL, d, sizeof(d)),
	    "stream_cut");	/* no [DONE] */
	CHECK_STR(d, "stream ended without data: [DONE]");
	oai_feed(&s, "data: [DONE]\n\n", 14, 0);
	CHECK(oai_classify(&s, OAI_END_OK, 200, "", NULL, d, sizeof(d)) ==
	    NULL);
	ev(&s, "{\"choices\":7}");
	CHECK_STR(oai_classify(&s, OAI_END_OK, 200, "", NULL, d, sizeof(d)),
	    "bad_stream");
	CHECK_STR(d, "malformed chunk: choices is not an array");
	oai_free(&s);
}

/* A 2xx body that is not an event stream is bad_stream, not stream_cut. */
static void
test_content_type(void)
{
	struct oai_stream s;
	char d[256];

	CHECK(oai_init(&s, false) == 0);
	oai_content_type(&s, "Text/Event-Stream; charset=utf-8");
	CHECK(!s.bad && !s.not_sse);
	oai_content_type(&s, "text/event-stream");
	CHECK(!s.bad);
	oai_content_type(&s, "text/event-streamx");
	CHECK(s.bad && s.not_sse);
	oai_free(&s);
	CHECK(oai_init(&s, false) == 0);
	oai_content_type(&s, "application/json");
	oai_feed(&s, "data: [DONE]\n\n", 14, 0);	/* ignored */
	CHECK(!s.done);
	CHECK_STR(oai_classify(&s, OAI_END_OK, 200, "", NULL, d, sizeof(d)),
	    "bad_stream");
	CHECK_STR(d, "Content-Type application/json, not text/event-stream");
	oai_free(&s);
	CHECK(oai_init(&s, false) == 0);
	oai_content_type(&s, NULL);
	CHECK_STR(oai_classify(&s, OAI_END_OK, 200, "", NULL, d, sizeof(d)),
	    "bad_stream");
	CHECK_STR(d, "Content-Type missing, not text/event-stream");
	oai_free(&s);
}

/* The read-ahead queue is bounded in body bytes as well as in items. */
static void
test_feed_bytes(void)
{
	struct reqfeed *q = calloc(1, sizeof(*q));
	struct rf_item it = { 0 }, out;
	size_t i;

	CHECK(q != NULL);
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->notfull, NULL);
	q->fd = eventfd(0, EFD_NONBLOCK);
	q->max_bytes = 100;
	CHECK(rf_fits(q, 1000));	/* an empty queue takes anything */
	it.size = 40;
	rf_push(q, &it);
	rf_push(q, &it);
	CHECK(q->n == 2 && q->bytes == 80);
	CHECK(!rf_fits(q, 40));
	CHECK(rf_fits(q, 20));
	CHECK(!rf_fits(q, (size_t)-1));	/* no overflow */
	CHECK(rf_peek(q, &out) == 1 && out.size == 40);
	rf_pop(q);
	CHECK(q->n == 1 && q->bytes == 40);
	CHECK(rf_fits(q, 60) && !rf_fits(q, 61));
	rf_pop(q);
	CHECK(q->n == 0 && q->bytes == 0);
	it.size = 1000;
	rf_push(q, &it);	/* alone, a huge body still goes through */
	CHECK(q->bytes == 1000 && !rf_fits(q, 0));
	CHECK(!rf_fits(q, 1));
	rf_pop(q);
	q->max_bytes = RF_MAX_BYTES;	/* the count bound still holds */
	it.size = 0;
	for (i = 0; i < RF_CAP; i++)
		rf_push(q, &it);
	CHECK(!rf_fits(q, 0));
	close(q->fd);
	pthread_mutex_destroy(&q->mu);
	pthread_cond_destroy(&q->notfull);
	free(q);
}

int
main(void)
{
	test_sse();
	test_oai();
	test_body();
	test_classify();
	test_content_type();
	test_feed_bytes();
	return DONE("test_stream");
}
