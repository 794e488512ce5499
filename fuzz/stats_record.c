/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness: stats' record evaluation on jansson objects.  Any
 * object jansson parses must evaluate without harm, with a message when
 * it is rejected; an accepted record's verdicts must agree with its own
 * fields (SLO met only for an ok request whose ttft_s meets it, times
 * only when done_s >= sent_s, the error class only from a string).
 */
#include <math.h>
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
	static char slo[] = "ttft_s<=2";
	static int ready;
	struct sm_rec r;
	char err[256];
	json_t *rec, *e;
	int i;

	if (!ready) {
		sp.metric[0] = "ttft_s";
		sp.metric[1] = "e2e_s";
		sp.nmetric = 2;
		sp.by[0] = "model";
		sp.nby = 1;
		if (sm_parse_slo(&sp.slo[0], slo, err, sizeof(err)) != 0)
			abort();
		sp.nslo = 1;
		ready = 1;
	}
	rec = json_loadb((const char *)data, size, 0, NULL);
	if (!json_is_object(rec)) {
		json_decref(rec);
		return 0;
	}
	err[0] = '\0';
	if (sm_eval(&sp, rec, &r, err, sizeof(err)) != 0) {
		if (err[0] == '\0')
			abort();
		json_decref(rec);
		return 0;
	}
	if (r.slo_met && (!r.ok || !r.has_metric[0] || !(r.metric[0] <= 2)))
		abort();
	if (r.ok && r.input_error)
		abort();
	if (r.has_times && !(r.done >= r.sent))
		abort();
	for (i = 0; i < sp.nmetric; i++)
		if (r.has_metric[i] && !isfinite(r.metric[i]))
			abort();
	e = json_object_get(rec, "error");
	if (r.error != (json_is_string(e) ? json_string_value(e) : NULL))
		abort();
	json_decref(rec);
	return 0;
}
