/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness: the SSE splitter and the OpenAI chunk reader.  The
 * first two bytes choose two cut points; the events must not depend on
 * how the stream was split across reads.  The second byte's low bit
 * also hands the start of the input to oai_content_type.
 */
#include <stdint.h>
#include <stdio.h>
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
		if (data[1] & 1) {	/* the start doubles as a Content-Type */
			char ct[48];

			snprintf(ct, sizeof(ct), "%.*s", (int)(n < 47 ? n : 47),
			    p);
			oai_content_type(&st, ct);
		}
		oai_feed(&st, p, c1, 1.0);
		oai_feed(&st, p + c1, n - c1, 2.0);
		if (st.not_sse && (!st.bad || st.chunks != 0 || st.done))
			abort();	/* a non-SSE body is bad and unread */
	}
	oai_free(&st);
	return 0;
}
