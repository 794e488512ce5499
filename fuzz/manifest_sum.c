/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: sha256sum manifest lines, escaping round trip. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
round_trip(const struct mf_entry *e)
{
	struct mf_entry back;
	char *esc = mf_needs_escape(e->path) ? mf_escape(e->path) : NULL;
	char *line, err[256];
	int n;

	n = asprintf(&line, "%s%s  %s", esc ? "\\" : "", e->sha256,
	    esc ? esc : e->path);
	free(esc);
	if (n < 0)
		return;
	/* what we write for an entry reads back as the same entry */
	if (mf_parse_sum_line(line, (size_t)n, &back, err, sizeof(err)) != 0 ||
	    strcmp(back.path, e->path) != 0 || strcmp(back.sha256, e->sha256))
		abort();
	mf_entry_free(&back);
	free(line);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mf_manifest m;
	struct mf_entry e;
	char err[256];

	if (mf_parse_sum_line((const char *)data, size, &e, err,
	    sizeof(err)) == 0) {
		round_trip(&e);
		mf_entry_free(&e);
	}
	if (size > 0 && data[0] != '{' &&
	    mf_manifest_parse((const char *)data, size, &m) == 0) {
		for (size_t i = 0; i < m.n; i++)
			round_trip(&m.e[i]);
		mf_manifest_free(&m);
	}
	return 0;
}
