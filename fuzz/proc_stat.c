/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: /proc/PID/stat lines and slot records. */
#include <stdint.h>
#include <stdlib.h>

#include "proc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proc_stat st;
	struct slot s;
	char err[256];
	json_error_t je;
	json_t *o;

	if (proc_stat_parse((const char *)data, size, &st, err,
	    sizeof(err)) == 0 && (st.pid <= 0 || st.session < 0))
		abort();
	o = json_loadb((const char *)data, size, 0, &je);
	if (o && slot_from_json(o, &s, err, sizeof(err)) == 0) {
		json_t *back = slot_to_json(&s);

		if (s.pid <= 0 || s.cwd[0] != '/' || !proc_slot_name_ok(s.name))
			abort();
		json_decref(back);
		slot_free(&s);
	}
	json_decref(o);
	return 0;
}
