/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: the JSON-lines record reader on arbitrary bytes. */
#include <stdint.h>
#include <stdio.h>

#include "jsonl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jsonl_reader r;
	FILE *fp;
	json_t *v;

	if (size == 0 || (fp = fmemopen((void *)data, size, "r")) == NULL)
		return 0;
	jsonl_init(&r, fp, "fuzz", 4096);
	while (jsonl_next(&r, &v) != JSONL_EOF)
		json_decref(v);
	jsonl_free(&r);
	fclose(fp);
	return 0;
}
