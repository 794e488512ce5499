/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness: the SSE splitter and the OpenAI chunk reader.  The
 * first two bytes choose two cut points; the events must not depend on
 * how the stream was split across reads.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "oai.h"
#include "sse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct acc {
	uint64_t h;
	size_t n;
};

static int
fold(void *ctx, const char *d, size_t len)
{
	struct acc *a = ctx;
	size_t i;

	for (i = 0; i < len; i++)
		a->h = (a->h ^ (uint8_t)d[i]) * 0x100000001b3ULL;
	a->h = (a->h ^ 0xff) * 0x100000001b3ULL;
	a->n++;
	return 0;
}

static struct acc
run(const char *p, size_t n, size_t c1, size_t c2)
{
	struct acc a = { 0xcbf29ce484222325ULL, 0 };
	struct sse s;

	sse_init(&s, 1 << 16);
	if (sse_feed(&s, p, c1, fold, &a) == SSE_OK &&
	    sse_feed(&s, p + c1, c2 - c1, fold, &a) == SSE_OK)
		sse_feed(&s, p + c2, n - c2, fold, &a);
	sse_free(&s);
	return a;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct oai_stream st;
	struct acc whole, parts;
	size_t c1, c2, n;
	const char *p;

	if (size < 2)
		return 0;
	p = (const char *)data + 2;
	n = size - 2;
	c1 = n ? data[0] % (n + 1) : 0;
	c2 = c1 + (n - c1 ? data[1] % (n - c1 + 1) : 0);
	whole = run(p, n, n, n);
	parts = run(p, n, c1, c2);
	if (whole.n != parts.n || whole.h != parts.h)
		abort();
	if (oai_init(&st, data[0] & 1) == 0) {
		oai_feed(&st, p, c1, 1.0);
		oai_feed(&st, p + c1, n - c1, 2.0);
	}
	oai_free(&st);
	return 0;
}
