/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness: workload's option checks and generator.  Options
 * come from the bytes (bounded sizes); every request that an accepted
 * option set produces must keep the block-alignment invariants.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wl_opts o;
	struct wl_gen g;
	struct wl_req r;
	uint32_t *tok;
	char err[256], arr[32];
	double last = 0;

	if (size < 12)
		return 0;
	memset(&o, 0, sizeof(o));
	o.requests = data[0] % 40;
	o.tokens = (size_t)data[1] * 8 + data[2] % 8;
	o.block = data[3] % 40;
	o.vocab = (uint64_t)data[4] * 300 + data[5];
	o.prefixes = data[6] % 5;
	o.ring = data[7] & 0x80 ? data[7] % 20 : 0;
	o.probe = data[8] & 1;
	o.hit_rate = (double)data[9] / 255.0;
	o.rate = data[10] & 1 ? (double)data[10] / 7.0 : 0;
	o.seed = data[11];
	memset(arr, 0, sizeof(arr));
	memcpy(arr, data + 12, size - 12 < sizeof(arr) - 1 ? size - 12 :
	    sizeof(arr) - 1);
	if (arr[0] && wl_parse_arrival(arr, &o, err, sizeof(err)) != 0)
		return 0;
	if (wl_check(&o, err, sizeof(err)) != 0)
		return 0;
	if ((tok = calloc(o.tokens, sizeof(*tok))) == NULL)
		return 0;
	wl_init(&g, &o);
	while (wl_next(&g, &r, tok)) {
		if (r.expected_hit_tokens % o.block != 0 ||
		    (r.expected_hit_tokens && r.expected_hit_tokens >= o.tokens) ||
		    r.arrival_s < last || tok[o.tokens - 1] >= o.vocab)
			abort();
		last = r.arrival_s;
	}
	free(tok);
	return 0;
}
