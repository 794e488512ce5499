/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness: stats' record evaluation.  The scanner must accept
 * every object jansson accepts (NUL bytes aside), and its spans must
 * lie inside the line.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "summary.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *names[] = { "ok", "error", "kind", "ttft_s",
	    "sent_s", "done_s", "model" };
	struct sm_keys k = { .n = 0 };
	struct sm_span sp[SM_MAX_KEYS];
	char err[256];
	json_error_t je;
	json_t *v;
	double x;
	int rc, i;

	for (i = 0; i < 7; i++)
		sm_want(&k, names[i], i);
	rc = sm_scan((const char *)data, size, &k, sp, err, sizeof(err));
	v = json_loadb((const char *)data, size, 0, &je);
	/* jansson stops at a NUL byte; the scanner rejects one */
	if (json_is_object(v) && rc != 0 && !memchr(data, 0, size))
		abort();
	json_decref(v);
	for (i = 0; rc == 0 && i < k.nslots; i++) {
		if (sp[i].p && (sp[i].p < (const char *)data ||
		    sp[i].p + sp[i].n > (const char *)data + size))
			abort();
		sm_num(&sp[i], &x);
		sm_is(&sp[i], "true");
	}
	return 0;
}
