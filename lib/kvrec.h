/* SPDX-License-Identifier: MIT */
#ifndef KV_KVREC_H
#define KV_KVREC_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "kvmodel.h"

/*
 * Record evaluation of kv-bytes and bcrit: each edits one record in
 * place (adding its fields) and returns 0, or -1 with the reason in err.
 * No I/O, so the commands, unit tests and fuzzers share them.
 */

#define KVREC_MAX_LINKS 16

struct kvrec_link {
	char name[64];
	double bw;		/* bytes/s, > 0 */
};

struct kvrec_opt {
	const struct kv_model *model;	/* from --config, or NULL */
	const char *kv_dtype;		/* --kv-dtype, or NULL */
	uint64_t block;			/* tokens per KV block (> 0) */
	/* bcrit only */
	double flops_per_s;		/* 0: not given */
	double mfu;			/* fraction of flops_per_s achieved */
	double t_lookup;		/* default T_lookup, seconds */
	bool have_fit;			/* --fit coefficients below */
	double fit_a, fit_b, fit_c;
	size_t nlinks;
	struct kvrec_link links[KVREC_MAX_LINKS];
};

/*
 * The model a record uses: opt->model when set, else the record's own
 * "config" object, else its explicit fields (layers, kv_heads, …).
 * Returns 1 with *m filled, 0 when the record names no model and
 * optional is true, or -1 on error.
 */
int kvrec_model(const json_t *rec, const struct kvrec_opt *opt, bool optional,
    struct kv_model *m, char *err, size_t errlen);

/* kv-bytes on one record. */
int kvrec_bytes(json_t *rec, const struct kvrec_opt *opt, char *err,
    size_t errlen);

/* bcrit on one record. */
int kvrec_bcrit(json_t *rec, const struct kvrec_opt *opt, char *err,
    size_t errlen);

/*
 * Parse "NAME=BANDWIDTH" (--bw) into lk.  NAME: 1..63 of [A-Za-z0-9_-].
 * Returns 0, or -1 with the reason in err.
 */
int kvrec_parse_link(const char *arg, struct kvrec_link *lk, char *err,
    size_t errlen);

#endif
