/* SPDX-License-Identifier: MIT */
#ifndef KV_SUMMARY_H
#define KV_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The pure parts of stats: a validating JSON-object scanner that picks
 * out the top-level fields a summary needs without building a tree,
 * the record evaluation, the bootstrap by order statistics and the
 * exact concurrency sweep.
 */

#define SM_MAX_KEYS 64

/* A field's raw JSON text inside the line (p NULL when absent). */
struct sm_span {
	const char *p;
	size_t n;
};

/* Top-level keys wanted, each filling span[slot]. */
struct sm_keys {
	const char *name[SM_MAX_KEYS];
	size_t len[SM_MAX_KEYS];
	int slot[SM_MAX_KEYS];
	int n;
	int nslots;
};

/* Add a wanted key filling slot; -1 when the table is full. */
int sm_want(struct sm_keys *k, const char *name, int slot);

/*
 * Check that line[0..len) is exactly one JSON object (RFC 8259, UTF-8,
 * no NUL escapes, nesting up to 2048 as jansson) and set span[slot] for each wanted
 * top-level key (the last occurrence wins).  0, or -1 with err.
 */
int sm_scan(const char *line, size_t len, const struct sm_keys *k,
    struct sm_span *span, char *err, size_t errlen);

/* Span interpretation. */
bool sm_is(const struct sm_span *s, const char *lit);
/* A number span as a double: 1, 0 absent/null, -1 not a number. */
int sm_num(const struct sm_span *s, double *out);

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
	struct sm_keys keys;	/* filled by sm_spec_keys */
	int mslot, sslot, bslot;
};

/* Slots every spec has. */
enum { SM_KIND, SM_OK, SM_ERROR, SM_SENT, SM_DONE, SM_FIRST };

/*
 * Parse "FIELD<=LIMIT" (or <, >=, >) in place into *s; a limit on a
 * field ending in _s may carry a duration unit.  -1 with err.
 */
int sm_parse_slo(struct sm_slo *s, char *spec, char *err, size_t errlen);

/* Build the key table of a spec whose lists are set; -1 when too many. */
int sm_spec_keys(struct sm_spec *sp);

/* One record, evaluated. */
struct sm_rec {
	bool input_error;	/* a {"kind":"error"} record: a failed request */
	bool ok;
	double metric[SM_MAXF];
	bool has_metric[SM_MAXF];	/* a number (not absent or null) */
	bool slo_met;		/* ok and every SLO field present and met */
	bool has_times;		/* sent_s and done_s, done_s >= sent_s */
	double sent, done;
};

/*
 * Evaluate a scanned record: a request needs a boolean "ok" (or is a
 * kind "error" record); metrics, SLO fields, sent_s and done_s must be
 * numbers, null or absent.  0, or -1 with err.
 */
int sm_eval(const struct sm_spec *sp, const struct sm_span *span,
    struct sm_rec *r, char *err, size_t errlen);

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
