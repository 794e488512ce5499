/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "oai.h"

int
oai_init(struct oai_stream *s, bool chat)
{
	memset(s, 0, sizeof(*s));
	s->chat = chat;
	s->prompt_tokens = s->completion_tokens = s->cached_tokens = -1;
	s->first_s = s->last_s = -1;
	sse_init(&s->sse, 0);
	return kv_sha256_init(&s->sha);
}

void
oai_free(struct oai_stream *s)
{
	sse_free(&s->sse);
	kv_sha256_free(&s->sha);
	free(s->itl);
	s->itl = NULL;
}

static void
problem(struct oai_stream *s, const char *fmt, const char *arg)
{
	if (!s->bad)
		snprintf(s->detail, sizeof(s->detail), fmt, arg);
	s->bad = true;
}

static void
token_event(struct oai_stream *s)
{
	double *p;

	if (s->chunks++ == 0) {
		s->first_s = s->last_s = s->now;
		return;
	}
	if (s->nitl == s->citl) {
		s->citl = s->citl ? 2 * s->citl : 64;
		if ((p = realloc(s->itl, s->citl * sizeof(*p))) == NULL) {
			problem(s, "%s", "out of memory");
			return;
		}
		s->itl = p;
	}
	s->itl[s->nitl++] = s->now - s->last_s;
	s->last_s = s->now;
}

static long long
getint(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_integer(v) && json_integer_value(v) >= 0 ?
	    (long long)json_integer_value(v) : -1;
}

static void
usage_obj(struct oai_stream *s, const json_t *u)
{
	json_t *d;

	if (!json_is_object(u))
		return;
	s->prompt_tokens = getint(u, "prompt_tokens");
	s->completion_tokens = getint(u, "completion_tokens");
	d = json_object_get(u, "prompt_tokens_details");
	if (json_is_object(d))
		s->cached_tokens = getint(d, "cached_tokens");
}

static void
choice(struct oai_stream *s, const json_t *c)
{
	const json_t *t, *fr;

	if (!json_is_object(c)) {
		problem(s, "%s", "a choice is not an object");
		return;
	}
	t = s->chat ? json_object_get(json_object_get(c, "delta"), "content")
	    : json_object_get(c, "text");
	if (json_is_string(t) && json_string_length(t) > 0) {
		if (kv_sha256_update(&s->sha, json_string_value(t),
		    json_string_length(t)) != 0)
			problem(s, "%s", "SHA-256 failed");
		token_event(s);
	} else if (t != NULL && !json_is_string(t) && !json_is_null(t))
		problem(s, "%s", "generated text is not a string");
	fr = json_object_get(c, "finish_reason");
	if (json_is_string(fr))
		snprintf(s->finish_reason, sizeof(s->finish_reason), "%s",
		    json_string_value(fr));
}

void
oai_event(struct oai_stream *s, const char *data, size_t len)
{
	json_error_t je;
	json_t *v, *e, *ch, *m;
	size_t i;

	if (len == 6 && memcmp(data, "[DONE]", 6) == 0) {
		s->done = true;
		return;
	}
	if ((v = json_loadb(data, len, JSON_ALLOW_NUL, &je)) == NULL) {
		problem(s, "malformed chunk: %.100s", je.text);
		return;
	}
	if (!json_is_object(v)) {
		problem(s, "%s", "malformed chunk: not a JSON object");
	} else if ((e = json_object_get(v, "error")) != NULL &&
	    !json_is_null(e)) {
		m = json_is_object(e) ? json_object_get(e, "message") : e;
		problem(s, "server error in stream: %.120s", json_is_string(m) ?
		    json_string_value(m) : "(no message)");
		s->server_error = true;
	} else {
		ch = json_object_get(v, "choices");
		if (ch != NULL && !json_is_array(ch))
			problem(s, "%s", "malformed chunk: choices is not an "
			    "array");
		json_array_foreach(ch, i, e)
			choice(s, e);
		usage_obj(s, json_object_get(v, "usage"));
	}
	json_decref(v);
}

static int
on_event(void *ctx, const char *data, size_t len)
{
	oai_event(ctx, data, len);
	return 0;
}

void
oai_content_type(struct oai_stream *s, const char *ctype)
{
	static const char want[] = "text/event-stream";
	size_t n = sizeof(want) - 1;

	if (ctype && strncasecmp(ctype, want, n) == 0 && (ctype[n] == '\0' ||
	    ctype[n] == ';' || ctype[n] == ' ' || ctype[n] == '\t'))
		return;
	s->not_sse = true;
	problem(s, "Content-Type %.100s, not text/event-stream", ctype ?
	    ctype : "missing");
}

void
oai_feed(struct oai_stream *s, const char *p, size_t n, double now)
{
	int rc;

	if (s->not_sse)
		return;
	s->now = now;
	if ((rc = sse_feed(&s->sse, p, n, on_event, s)) != SSE_OK)
		problem(s, "%s", sse_strerror(rc));
}

int
oai_digest(struct oai_stream *s, char hex[KV_SHA256_HEX])
{
	uint8_t md[KV_SHA256_LEN];

	if (kv_sha256_final(&s->sha, md) != 0)
		return -1;
	kv_hex(md, sizeof(md), hex);
	return 0;
}

const char *
oai_classify(const struct oai_stream *s, enum oai_end end, long status,
    const char *why, const char *errbody, char *detail, size_t dlen)
{
	snprintf(detail, dlen, "%s", why ? why : "");
	if (end == OAI_END_NOCONNECT)
		return "connect";
	if (status >= 400) {
		snprintf(detail, dlen, "HTTP %ld: %.160s", status,
		    errbody ? errbody : "");
		return status >= 500 ? "http_5xx" : "http_4xx";
	}
	if (end == OAI_END_TIMEOUT)
		return "timeout";
	if (end != OAI_END_OK)
		return "stream_cut";
	if (status < 200 || status >= 300) {
		snprintf(detail, dlen, "HTTP %ld", status);
		return "bad_stream";
	}
	if (s->bad) {
		snprintf(detail, dlen, "%s", s->detail);
		return "bad_stream";
	}
	if (!s->done) {
		snprintf(detail, dlen, "stream ended without data: [DONE]%s",
		    sse_pending(&s->sse) ? " inside an event" : "");
		return "stream_cut";
	}
	return NULL;
}

/* Check the prompt: a string, or an array of non-negative integers. */
static int
check_prompt(const json_t *p, bool chat, char *err, size_t errlen)
{
	const json_t *t;
	size_t i;

	if (json_is_string(p))
		return 0;
	if (chat)
		return snprintf(err, errlen, "--chat needs a string prompt "
		    "(use workload --format text)"), -1;
	if (!json_is_array(p) || json_array_size(p) == 0)
		return snprintf(err, errlen, "prompt must be a string or a "
		    "non-empty array of token ids"), -1;
	json_array_foreach(p, i, t)
		if (!json_is_integer(t) || json_integer_value(t) < 0)
			return snprintf(err, errlen, "prompt[%zu] is not a "
			    "token id", i), -1;
	return 0;
}

char *
oai_body(const json_t *rec, const char *model, bool chat, char *err,
    size_t errlen)
{
	const json_t *p = json_object_get(rec, "prompt");
	const json_t *mt = json_object_get(rec, "max_tokens");
	json_t *b;
	char *s;

	if (p == NULL)
		return snprintf(err, errlen, "missing field 'prompt'"), NULL;
	if (check_prompt(p, chat, err, errlen) != 0)
		return NULL;
	if (mt != NULL && !json_is_null(mt) && (!json_is_integer(mt) ||
	    json_integer_value(mt) < 1))
		return snprintf(err, errlen, "max_tokens must be a positive "
		    "integer"), NULL;
	b = json_pack("{s:s}", "model", model);
	if (b == NULL)
		return snprintf(err, errlen, "out of memory"), NULL;
	if (chat ? json_object_set_new(b, "messages", json_pack("[{s:s,s:O}]",
	    "role", "user", "content", p)) : json_object_set(b, "prompt",
	    (json_t *)p))
		goto oom;
	if (json_object_set_new(b, "stream", json_true()) != 0 ||
	    json_object_set_new(b, "stream_options", json_pack("{s:b}",
	    "include_usage", 1)) != 0)
		goto oom;
	if (json_is_integer(mt) && json_object_set(b, "max_tokens",
	    (json_t *)mt) != 0)
		goto oom;
	if ((s = json_dumps(b, JSON_COMPACT)) == NULL)
		goto oom;
	json_decref(b);
	return s;
oom:
	json_decref(b);
	snprintf(err, errlen, "out of memory");
	return NULL;
}
