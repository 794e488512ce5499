/* SPDX-License-Identifier: MIT */
#ifndef KV_SUMMARY_H
#define KV_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/*
 * The pure parts of stats: the record evaluation on a parsed (jansson)
 * record, the bootstrap by order statistics and the exact concurrency
 * sweep.
 */

#define SM_MAXF 16	/* metrics, SLOs and group fields, each */

/* A service-level objective: field <= limit (or <, >=, >). */
struct sm_slo {
	const char *field;
	bool le;		/* <= or <; else >= or > */
	bool strict;		/* < or > */
	double limit;
};

/* What a summary reads from each record. */
struct sm_spec {
	const char *metric[SM_MAXF], *by[SM_MAXF];
	struct sm_slo slo[SM_MAXF];
	int nmetric, nslo, nby;
};

/*
 * Parse "FIELD<=LIMIT" (or <, >=, >) in place into *s; a limit on a
 * field ending in _s may carry a duration unit.  -1 with err.
 */
int sm_parse_slo(struct sm_slo *s, char *spec, char *err, size_t errlen);

/* One record, evaluated. */
struct sm_rec {
	bool input_error;	/* a {"kind":"error"} record: a failed request */
	bool ok;
	double metric[SM_MAXF];
	bool has_metric[SM_MAXF];	/* a number (not absent or null) */
	bool slo_met;		/* ok and every SLO field present and met */
	bool has_times;		/* sent_s and done_s, done_s >= sent_s */
	double sent, done;
	const char *error;	/* the "error" string (in rec), or NULL */
};

/*
 * Evaluate a record (a JSON object): a request needs a boolean "ok" (or
 * is a kind "error" record); metrics, SLO fields, sent_s and done_s must
 * be numbers, null or absent.  r->error points into rec.  0, or -1 with
 * err.
 */
int sm_eval(const struct sm_spec *sp, const json_t *rec, struct sm_rec *r,
    char *err, size_t errlen);

/* A growable array of doubles. */
struct sm_vec {
	double *v;
	size_t n, cap;
};
int sm_push(struct sm_vec *v, double x);
void sm_vec_free(struct sm_vec *v);

/*
 * Bootstrap percentile CI of the p-th percentile (type 7) of sorted
 * x[0..n): B resamples with replacement, computed exactly through order
 * statistics (the k-th smallest of n draws of the indices is
 * x[ceil(n*U)] with U ~ Beta(k, n-k+1)), so each replicate costs O(1).
 * The interval is the (1-level)/2 and (1+level)/2 type-7 quantiles of
 * the replicates.  Deterministic for (seed, stream).  0, -1 on ENOMEM.
 */
int sm_boot_ci(const double *x, size_t n, double p, unsigned B,
    double level, uint64_t seed, uint64_t stream, double *lo, double *hi);

/*
 * Concurrency over intervals [sent[i], done[i]): sorts both arrays in
 * place, returns the peak (a request ending at t is gone before one
 * starting at t) and the busy time sum(done - sent) in *busy.
 */
uint64_t sm_peak(double *sent, double *done, size_t n, double *busy);

#endif
