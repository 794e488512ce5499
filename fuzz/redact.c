/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: the redaction rules on arbitrary names and values. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "redact.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), *out;

	if (s == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	(void)redact_name(s);
	(void)redact_value_shape(s);
	(void)redact_digest_name(s);
	(void)redact_hex_secret("V", s);
	(void)redact_hex_secret(s, s);
	if ((out = redact_url_passwords(s)) != NULL) {
		/* the redacted copy never holds a "user:pass@" any more */
		if (strstr(out, "[REDACTED]") == NULL)
			abort();
		free(out);
	}
	free(s);
	return 0;
}
