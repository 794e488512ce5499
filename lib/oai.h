/* SPDX-License-Identifier: MIT */
#ifndef KV_OAI_H
#define KV_OAI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "sha.h"
#include "sse.h"

/*
 * One OpenAI-compatible streaming response (/v1/completions or
 * /v1/chat/completions with stream: true), read chunk by chunk.
 */
struct oai_stream {
	struct sse sse;
	struct kv_sha256 sha;	/* of the generated text as concatenated */
	bool chat;
	double now;		/* arrival time of the bytes being fed */
	bool done;		/* data: [DONE] seen */
	bool bad;		/* malformed chunk or an error object */
	bool server_error;	/* the stream carried an error object */
	bool not_sse;		/* the body is not text/event-stream: ignored */
	char detail[160];	/* why, for the first problem */
	uint64_t chunks;	/* chunks with generated text */
	double first_s, last_s;	/* arrival of the first and last of them */
	double *itl;		/* gaps between them */
	size_t nitl, citl;
	long long prompt_tokens, completion_tokens, cached_tokens; /* -1: none */
	char finish_reason[32];
};

/* 0, or -1 when OpenSSL failed. */
int oai_init(struct oai_stream *s, bool chat);
void oai_free(struct oai_stream *s);

/* Feed response bytes that arrived at time now (seconds). */
void oai_feed(struct oai_stream *s, const char *p, size_t n, double now);

/*
 * Check the Content-Type of a 2xx response (NULL when the server sent
 * none): anything but text/event-stream (a server that ignored stream:
 * true and answered plain JSON) makes the stream bad, and later bytes
 * are ignored.
 */
void oai_content_type(struct oai_stream *s, const char *ctype);

/* Interpret one event's data (also called by oai_feed). */
void oai_event(struct oai_stream *s, const char *data, size_t len);

/* Finish: write the digest's hex; 0 or -1. */
int oai_digest(struct oai_stream *s, char hex[KV_SHA256_HEX]);

/* How the transfer ended, as the HTTP client saw it. */
enum oai_end {
	OAI_END_OK,		/* the response was read to its end */
	OAI_END_NOCONNECT,	/* refused, unresolved, or connect timed out */
	OAI_END_TIMEOUT,	/* the request limit passed after connecting */
	OAI_END_TRANSFER	/* any other transfer failure */
};

/*
 * The error class of a finished request, or NULL when it succeeded, and
 * a short reason in detail.  The first that applies: "connect";
 * "http_4xx"/"http_5xx" for a status >= 400 (errbody, the start of the
 * response body, goes into detail); "timeout"; "stream_cut" for another
 * transfer failure; "bad_stream" for a status outside 2xx, a body that is
 * not an event stream (oai_content_type), a malformed
 * chunk or an error object; "stream_cut" when data: [DONE] never came.
 * why is the client's own message for the end.
 */
const char *oai_classify(const struct oai_stream *s, enum oai_end end,
    long status, const char *why, const char *errbody, char *detail,
    size_t dlen);

/*
 * The request body for rec: {"model":..,"prompt":..} (or "messages" with
 * one user message when chat), "max_tokens" from the record when it has
 * one, "stream":true and "stream_options":{"include_usage":true}.  The
 * caller frees the string.  NULL with err when the record is unusable.
 */
char *oai_body(const json_t *rec, const char *model, bool chat,
    char *err, size_t errlen);

#endif
