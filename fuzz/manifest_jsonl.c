/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: JSON-lines manifests (one line, then a whole file). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Is p a safe relative path: not empty, not absolute, no ".." part? */
static int
safe(const char *p)
{
	size_t n = strlen(p);

	return n > 0 && p[0] != '/' && strcmp(p, "..") != 0 &&
	    strncmp(p, "../", 3) != 0 && strstr(p, "/../") == NULL &&
	    !(n >= 3 && strcmp(p + n - 3, "/..") == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mf_manifest m;
	struct mf_entry e;
	char err[256], *buf;

	if (mf_parse_json_line((const char *)data, size, &e, err,
	    sizeof(err)) == 0) {
		/* an accepted entry is always a safe relative path */
		if (!safe(e.path))
			abort();
		mf_entry_free(&e);
	}
	/* the same bytes as a manifest, forced to the JSON-lines reading */
	if ((buf = malloc(size + 1)) == NULL)
		return 0;
	buf[0] = '{';
	memcpy(buf + 1, data, size);
	if (mf_manifest_parse(buf, size + 1, &m) == 0) {
		if (!m.json)
			abort();
		for (size_t i = 0; i < m.n; i++)
			if (!safe(m.e[i].path))
				abort();
		mf_manifest_free(&m);
	}
	free(buf);
	return 0;
}
