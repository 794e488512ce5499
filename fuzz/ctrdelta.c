/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness: counter-snap --diff's record evaluation.  The input
 * is two JSON lines (before, after); each that parses goes through
 * ctr_key and every combination through ctr_delta, whose output must
 * serialise and never carry a negative delta for a counter.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctrsnap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(const json_t *b, const json_t *a)
{
	char err[256], *text;
	json_t *d = ctr_delta(b, a, err, sizeof(err)), *delta, *type;

	if (d == NULL)
		return;
	if ((text = json_dumps(d, JSON_COMPACT)) == NULL)
		abort();
	free(text);
	delta = json_object_get(d, "delta");
	type = json_object_get(d, "type");
	if (json_is_number(delta) && json_number_value(delta) < 0 &&
	    !(json_is_string(type) && (strcmp(json_string_value(type),
	    "gauge") == 0 || strcmp(json_string_value(type), "untyped") == 0)))
		abort();
	json_decref(d);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t n1 = nl ? (size_t)(nl - data) : size;
	json_t *b, *a;
	char err[256], *k;

	b = json_loadb((const char *)data, n1, 0, NULL);
	a = nl ? json_loadb((const char *)nl + 1, size - n1 - 1, 0, NULL) :
	    NULL;
	if (b && !json_is_object(b)) {
		json_decref(b);
		b = NULL;
	}
	if (a && !json_is_object(a)) {
		json_decref(a);
		a = NULL;
	}
	if (b && (k = ctr_key(b, err, sizeof(err))) != NULL)
		free(k);
	check(b, a);
	check(a, b);
	check(NULL, a);
	json_decref(a);
	json_decref(b);
	return 0;
}
