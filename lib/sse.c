/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "sse.h"

void
sse_init(struct sse *s, size_t max)
{
	memset(s, 0, sizeof(*s));
	s->max = max ? max : (16u << 20);
}

void
sse_free(struct sse *s)
{
	free(s->line);
	free(s->data);
	memset(s, 0, sizeof(*s));
}

static int
grow(char **buf, size_t *cap, size_t need, size_t max)
{
	size_t ncap;
	char *p;

	if (need + 1 <= *cap)
		return SSE_OK;
	if (need > max)
		return SSE_TOO_LONG;
	ncap = *cap ? *cap : 256;
	while (ncap < need + 1)
		ncap *= 2;
	if ((p = realloc(*buf, ncap)) == NULL)
		return SSE_NOMEM;
	*buf = p;
	*cap = ncap;
	return SSE_OK;
}

static int
append(char **buf, size_t *len, size_t *cap, const char *p, size_t n,
    size_t max)
{
	int rc = grow(buf, cap, *len + n, max);

	if (rc != SSE_OK)
		return rc;
	memcpy(*buf + *len, p, n);
	*len += n;
	(*buf)[*len] = '\0';
	return SSE_OK;
}

/* Act on one complete line (without its end). */
static int
line(struct sse *s, const char *p, size_t n, sse_fn fn, void *ctx)
{
	const char *colon;
	int rc;

	if (n == 0) {
		if (!s->has_data)
			return SSE_OK;
		s->has_data = false;
		s->events++;
		rc = fn(ctx, s->data ? s->data : "", s->dlen);
		s->dlen = 0;
		if (s->data)
			s->data[0] = '\0';
		return rc ? SSE_STOPPED : SSE_OK;
	}
	if (p[0] == ':')
		return SSE_OK;
	colon = memchr(p, ':', n);
	if ((colon ? (size_t)(colon - p) : n) != 4 || memcmp(p, "data", 4))
		return SSE_OK;
	if (colon == NULL) {	/* "data" alone: an empty data line */
		p = "";
		n = 0;
	} else {
		p += 5;
		n -= 5;
		if (n > 0 && p[0] == ' ')
			p++, n--;
	}
	if (s->has_data && (rc = append(&s->data, &s->dlen, &s->dcap, "\n",
	    1, s->max)) != SSE_OK)
		return rc;
	s->has_data = true;
	return append(&s->data, &s->dlen, &s->dcap, p, n, s->max);
}

int
sse_feed(struct sse *s, const char *p, size_t n, sse_fn fn, void *ctx)
{
	const char *end = p + n, *e;
	int rc;

	if (n == 0)
		return SSE_OK;
	if (s->last_cr && *p == '\n')
		p++;
	s->last_cr = false;
	while (p < end) {
		for (e = p; e < end && *e != '\n' && *e != '\r'; e++)
			;
		if (e == end)
			return append(&s->line, &s->llen, &s->lcap, p,
			    (size_t)(e - p), s->max);
		if (s->llen) {
			if ((rc = append(&s->line, &s->llen, &s->lcap, p,
			    (size_t)(e - p), s->max)) != SSE_OK)
				return rc;
			rc = line(s, s->line, s->llen, fn, ctx);
			s->llen = 0;
		} else {
			if ((size_t)(e - p) > s->max)
				return SSE_TOO_LONG;
			rc = line(s, p, (size_t)(e - p), fn, ctx);
		}
		if (rc != SSE_OK)
			return rc;
		if (*e == '\r') {
			if (e + 1 == end)
				s->last_cr = true;
			else if (e[1] == '\n')
				e++;
		}
		p = e + 1;
	}
	return SSE_OK;
}

bool
sse_pending(const struct sse *s)
{
	return s->llen > 0 || s->has_data;
}

const char *
sse_strerror(int rc)
{
	switch (rc) {
	case SSE_OK: return "no error";
	case SSE_TOO_LONG: return "event stream line or event too long";
	case SSE_NOMEM: return "out of memory";
	case SSE_STOPPED: return "stopped by the event handler";
	default: return "unknown event stream error";
	}
}
