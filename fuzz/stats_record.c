/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness: stats' record evaluation.  The scanner must accept
 * every object jansson accepts (NUL bytes aside), its spans must lie
 * inside the line, and an accepted record must evaluate without harm;
 * an evaluated request's SLO verdict must agree with its own fields.
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
	static struct sm_spec sp;
	static int ready;
	struct sm_span span[SM_MAX_KEYS];
	struct sm_rec r;
	char err[256], slo[] = "ttft_s<=2";
	json_error_t je;
	json_t *v;
	int rc, i;

	if (!ready) {
		sp.metric[0] = "ttft_s";
		sp.metric[1] = "e2e_s";
		sp.nmetric = 2;
		sp.by[0] = "model";
		sp.nby = 1;
		if (sm_parse_slo(&sp.slo[0], slo, err, sizeof(err)) != 0)
			abort();
		sp.slo[0].field = "ttft_s";	/* slo[] is on the stack */
		sp.nslo = 1;
		if (sm_spec_keys(&sp) != 0)
			abort();
		ready = 1;
	}
	rc = sm_scan((const char *)data, size, &sp.keys, span, err,
	    sizeof(err));
	v = json_loadb((const char *)data, size, 0, &je);
	/* jansson stops at a NUL byte; the scanner rejects one */
	if (json_is_object(v) && rc != 0 && !memchr(data, 0, size))
		abort();
	json_decref(v);
	if (rc != 0)
		return 0;
	for (i = 0; i < sp.keys.nslots; i++)
		if (span[i].p && (span[i].p < (const char *)data ||
		    span[i].p + span[i].n > (const char *)data + size))
			abort();
	if (sm_eval(&sp, span, &r, err, sizeof(err)) == 0 && r.slo_met &&
	    (!r.ok || !r.has_metric[0] || !(r.metric[0] <= 2)))
		abort();
	return 0;
}
