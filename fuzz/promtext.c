/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness: the Prometheus text parser on arbitrary bytes, and
 * every sample it accepts turned into a counter record and serialised.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctrsnap.h"
#include "promtext.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
on_sample(const struct prom_sample *s, void *ctx)
{
	json_t *r = ctr_from_prom("prom:fuzz", s, 1.0);
	char *text;

	if (r == NULL)
		abort();
	if (s->name == NULL || s->type == NULL || s->family == NULL ||
	    strncmp(s->name, s->family, strlen(s->family)) != 0)
		abort();
	text = json_dumps(r, JSON_COMPACT);
	if (text == NULL)	/* every accepted string must be valid UTF-8 */
		abort();
	free(text);
	json_decref(r);
	(*(size_t *)ctx)++;
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	size_t line, n = 0;

	prom_parse((const char *)data, size, on_sample, &n, &line, err,
	    sizeof(err));
	return 0;
}
