/* SPDX-License-Identifier: MIT */
#ifndef KV_PROMTEXT_H
#define KV_PROMTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The Prometheus text exposition format (version 0.0.4), parsed in full:
 * "# HELP" and "# TYPE" lines, other comments, label values with \\, \"
 * and \n escapes, NaN and +Inf/-Inf values, optional millisecond
 * timestamps, histogram (_bucket/_sum/_count) and summary series tied to
 * their family's TYPE.  Pure: no I/O.
 */

struct prom_label {
	const char *name, *value;
};

struct prom_sample {
	const char *name;	/* the series name as written */
	const char *family;	/* the family it belongs to */
	const char *type;	/* counter gauge histogram summary untyped */
	const char *help;	/* NULL without a HELP line */
	const struct prom_label *labels;
	size_t nlabels;
	double value;		/* may be NaN or infinite */
	bool has_ts;
	int64_t ts_ms;
	size_t line;
};

/* Called once per sample; a non-zero return stops the parse with it. */
typedef int (*prom_fn)(const struct prom_sample *s, void *ctx);

/*
 * Parse buf[0..len) (not NUL-terminated), calling fn per sample in order.
 * Returns 0, fn's non-zero value, or -1 at the first malformed line with
 * its number in *line and the reason in err.
 */
int prom_parse(const char *buf, size_t len, prom_fn fn, void *ctx,
    size_t *line, char *err, size_t errlen);

/* True when s[0..len) is valid UTF-8 (no overlongs, no surrogates). */
bool prom_utf8_ok(const char *s, size_t len);

#endif
