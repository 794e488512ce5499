/* SPDX-License-Identifier: MIT */
#ifndef KV_SSE_H
#define KV_SSE_H

#include <stdbool.h>
#include <stddef.h>

/*
 * An incremental server-sent-events splitter (WHATWG "event stream"
 * parsing, the subset OpenAI-compatible servers use).  Bytes arrive in
 * any split; lines end in LF, CRLF or CR (a CR at the end of one read
 * and an LF at the start of the next are one line end).  "data:" lines
 * (one optional space after the colon) are joined with LF; a blank line
 * dispatches the event; ":" comments and other fields are ignored.  An
 * event left without its blank line at the end of the stream is not
 * dispatched (sse_pending says whether one is left).
 */
struct sse {
	char *line;		/* the current, incomplete line */
	size_t llen, lcap;
	char *data;		/* the current event's data */
	size_t dlen, dcap;
	bool has_data;
	bool last_cr;		/* the previous read ended in CR */
	size_t max;		/* longest line or event accepted */
	size_t events;		/* events dispatched so far */
};

/* Called once per event with its data (NUL-terminated); non-zero stops. */
typedef int (*sse_fn)(void *ctx, const char *data, size_t len);

enum { SSE_OK = 0, SSE_TOO_LONG = -1, SSE_NOMEM = -2, SSE_STOPPED = -3 };

/* max 0 means 16 MiB. */
void sse_init(struct sse *s, size_t max);
void sse_free(struct sse *s);
/* Feed n bytes; returns SSE_OK or a negative SSE_ status. */
int sse_feed(struct sse *s, const char *p, size_t n, sse_fn fn, void *ctx);
/* True when an incomplete line or undispatched data is buffered. */
bool sse_pending(const struct sse *s);
const char *sse_strerror(int rc);

#endif
