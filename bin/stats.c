/* SPDX-License-Identifier: MIT */
/* stats: summaries of request results, failures in every denominator. */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "jsonl.h"
#include "stats.h"
#include "summary.h"
#include "units.h"

#define MAXM SM_MAXF		/* percentiles, like metrics and fields */

struct opts {
	struct sm_spec sp;	/* metrics, SLOs, group fields */
	double pct[MAXM];
	int npct;
	unsigned boot;
	double ci, price, nodes;
	uint64_t seed;
	bool strict, cost;
	char *lists[4];		/* strdup'd option strings */
};

struct eclass {
	char *name;		/* the error string, "unknown" or "bad_input" */
	uint64_t count;
};

struct group {
	json_t *by[MAXM];	/* each group field's value (null if absent) */
	uint64_t n, ok, failed, slo_met;
	struct eclass *ec;
	size_t nec;
	struct sm_vec m[MAXM], sent, done;
};

struct acc {
	struct group *g;
	size_t ng, cap;
	json_t *index;		/* group key -> position */
	char *key;		/* the group key buffer, reused */
	size_t keycap;
};

static noreturn void
usage(int status)
{
	fprintf(status ? stderr : stdout,
	    "usage: stats [--by FIELD,...] [--metrics FIELD,...]\n"
	    "             [--percentiles P,...] [--bootstrap N] [--ci LEVEL]\n"
	    "             [--seed S] [--slo FIELD<=LIMIT,...]\n"
	    "             [--cost-per-hour PRICE [--nodes N]] [--strict]\n");
	exit(status);
}

/* Split s at commas into v (at most MAXM); returns the count. */
static int
split(char *s, char **v, const char *opt)
{
	int n = 0;
	char *t;

	for (t = strtok(s, ","); t; t = strtok(NULL, ",")) {
		if (n == MAXM)
			kv_die(KV_USAGE, "--%s: at most %d entries", opt, MAXM);
		v[n++] = t;
	}
	if (n == 0)
		kv_die(KV_USAGE, "--%s: empty list", opt);
	return n;
}

static void
parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{"bootstrap", required_argument, NULL, 'B'},
		{"by", required_argument, NULL, 'b'},
		{"ci", required_argument, NULL, 'c'},
		{"cost-per-hour", required_argument, NULL, 'C'},
		{"metrics", required_argument, NULL, 'm'},
		{"nodes", required_argument, NULL, 'N'},
		{"percentiles", required_argument, NULL, 'p'},
		{"seed", required_argument, NULL, 's'},
		{"slo", required_argument, NULL, 'S'},
		{"strict", no_argument, NULL, 'x'},
		{"help", no_argument, NULL, 'H'},
		{"version", no_argument, NULL, 'v'},
		{NULL, 0, NULL, 0}
	};
	char err[128], *pv[MAXM], *sv[MAXM], *mv[MAXM], *bv[MAXM];
	long long v;
	int c, i, nodes_set = 0;

	memset(o, 0, sizeof(*o));
	o->boot = 2000;
	o->ci = 0.95;
	o->seed = 1;
	o->nodes = 1;
	o->lists[0] = strdup("ttft_s,e2e_s");
	o->lists[1] = strdup("50,90,95,99");
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'B':
			if (kv_parse_int(optarg, 0, 1000000, &v, err,
			    sizeof(err)) != 0)
				kv_die(KV_USAGE, "--bootstrap: %s", err);
			o->boot = (unsigned)v;
			break;
		case 'b': free(o->lists[2]); o->lists[2] = strdup(optarg);
			break;
		case 'c':
			if (kv_parse_real(optarg, 0.5, 0.999999, &o->ci, err,
			    sizeof(err)) != 0)
				kv_die(KV_USAGE, "--ci: %s", err);
			break;
		case 'C':
			if (kv_parse_real(optarg, 0, 1e12, &o->price, err,
			    sizeof(err)) != 0)
				kv_die(KV_USAGE, "--cost-per-hour: %s", err);
			o->cost = true;
			break;
		case 'm': free(o->lists[0]); o->lists[0] = strdup(optarg);
			break;
		case 'N':
			if (kv_parse_int(optarg, 1, 1000000, &v, err,
			    sizeof(err)) != 0)
				kv_die(KV_USAGE, "--nodes: %s", err);
			o->nodes = (double)v;
			nodes_set = 1;
			break;
		case 'p': free(o->lists[1]); o->lists[1] = strdup(optarg);
			break;
		case 's':
			if (kv_parse_int(optarg, 0, INT64_MAX, &v, err,
			    sizeof(err)) != 0)
				kv_die(KV_USAGE, "--seed: %s", err);
			o->seed = (uint64_t)v;
			break;
		case 'S': free(o->lists[3]); o->lists[3] = strdup(optarg);
			break;
		case 'x': o->strict = true; break;
		case 'H': usage(0);
		case 'v': kv_version();
		default: usage(KV_USAGE);
		}
	}
	if (optind != argc)
		usage(KV_USAGE);
	if (nodes_set && !o->cost)
		kv_die(KV_USAGE, "--nodes needs --cost-per-hour");
	o->sp.nmetric = split(o->lists[0], mv, "metrics");
	o->npct = split(o->lists[1], pv, "percentiles");
	for (i = 0; i < o->npct; i++)
		if (kv_parse_real(pv[i], 0, 100, &o->pct[i], err,
		    sizeof(err)) != 0)
			kv_die(KV_USAGE, "--percentiles: %s", err);
	for (i = 0; i < o->sp.nmetric; i++)
		o->sp.metric[i] = mv[i];
	if (o->lists[2])
		o->sp.nby = split(o->lists[2], bv, "by");
	for (i = 0; i < o->sp.nby; i++)
		o->sp.by[i] = bv[i];
	if (o->lists[3])
		o->sp.nslo = split(o->lists[3], sv, "slo");
	for (i = 0; i < o->sp.nslo; i++)
		if (sm_parse_slo(&o->sp.slo[i], sv[i], err, sizeof(err)) != 0)
			kv_die(KV_USAGE, "--slo: %s", err);
}

/*
 * The group key of rec in a->key: the compact JSON text of each group
 * field (null when absent), keys sorted, each followed by 0x1f (which
 * the text escapes).
 */
static const char *
group_key(struct acc *a, const struct opts *o, const json_t *rec)
{
	const json_t *v;
	size_t len = 0, n;
	int i;

	if (a->keycap == 0 && (a->key = malloc(a->keycap = 256)) == NULL)
		kv_die(KV_SOFTWARE, "out of memory:");
	for (i = 0; i < o->sp.nby; i++) {
		if ((v = json_object_get(rec, o->sp.by[i])) == NULL)
			v = json_null();
		for (;;) {
			n = json_dumpb(v, a->key + len, a->keycap - len,
			    JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS);
			if (n == 0)
				kv_die(KV_SOFTWARE, "out of memory");
			if (n + 2 <= a->keycap - len)
				break;
			a->keycap = 2 * (len + n + 2);
			if ((a->key = realloc(a->key, a->keycap)) == NULL)
				kv_die(KV_SOFTWARE, "out of memory:");
		}
		len += n;
		a->key[len++] = '\x1f';
	}
	a->key[len] = '\0';
	return a->key;
}

/* The group a record belongs to (NULL: none), made on first sight. */
static struct group *
group_of(struct acc *a, const struct opts *o, const json_t *rec)
{
	const char *key;
	json_t *ix, *v;
	struct group *g;
	int i;

	if (o->sp.nby == 0 && a->ng == 1)	/* no grouping: one group */
		return &a->g[0];
	key = group_key(a, o, rec);
	if ((ix = json_object_get(a->index, key)) != NULL)
		return &a->g[json_integer_value(ix)];
	if (a->ng == a->cap) {
		a->cap = a->cap ? 2 * a->cap : 8;
		if ((a->g = realloc(a->g, a->cap * sizeof(*a->g))) == NULL)
			kv_die(KV_SOFTWARE, "out of memory:");
	}
	g = &a->g[a->ng];
	memset(g, 0, sizeof(*g));
	for (i = 0; i < o->sp.nby; i++) {
		v = json_object_get(rec, o->sp.by[i]);
		if ((g->by[i] = v ? json_deep_copy(v) : json_null()) == NULL)
			kv_die(KV_SOFTWARE, "out of memory");
	}
	if (json_object_set_new(a->index, key, json_integer((json_int_t)a->ng))
	    != 0)
		kv_die(KV_SOFTWARE, "out of memory");
	a->ng++;
	return g;
}

static void
count_error(struct group *g, const char *name)
{
	size_t i;

	for (i = 0; i < g->nec; i++)
		if (strcmp(g->ec[i].name, name) == 0) {
			g->ec[i].count++;
			return;
		}
	if ((g->ec = realloc(g->ec, (g->nec + 1) * sizeof(*g->ec))) == NULL ||
	    (g->ec[g->nec].name = strdup(name)) == NULL)
		kv_die(KV_SOFTWARE, "out of memory:");
	g->ec[g->nec++].count = 1;
}

/* Check one record and add it to its group; -1 with err. */
static int
add(struct acc *a, const struct opts *o, const json_t *rec, char *err,
    size_t errlen)
{
	struct sm_rec r;
	struct group *g;
	int i;

	if (sm_eval(&o->sp, rec, &r, err, errlen) != 0)
		return -1;
	g = group_of(a, o, rec);
	g->n++;
	if (r.ok)
		g->ok++;
	else {
		g->failed++;
		count_error(g, r.input_error ? "bad_input" : r.error ? r.error :
		    "unknown");
	}
	for (i = 0; r.ok && i < o->sp.nmetric; i++)
		if (r.has_metric[i] && sm_push(&g->m[i], r.metric[i]) != 0)
			kv_die(KV_SOFTWARE, "out of memory:");
	g->slo_met += r.slo_met;
	if (r.has_times && (sm_push(&g->sent, r.sent) ||
	    sm_push(&g->done, r.done)))
		kv_die(KV_SOFTWARE, "out of memory:");
	return 0;
}

/*
 * Count a line stats rejected as a failed request of class bad_input, as
 * an upstream kind "error" record is.  rec is the line's object, or NULL
 * when it was not one: then only an ungrouped summary can hold it.
 */
static void
reject(struct acc *a, const struct opts *o, const json_t *rec)
{
	struct group *g;

	if (rec == NULL && o->sp.nby > 0)
		return;
	g = group_of(a, o, rec);
	g->n++;
	g->failed++;
	count_error(g, "bad_input");
}

static int
set(json_t *o, const char *k, json_t *v)
{
	return v == NULL || json_object_set_new(o, k, v) != 0 ? -1 : 0;
}

static void
pct_name(char *buf, size_t n, const char *suffix, double p)
{
	char *d;

	snprintf(buf, n, "p%g%s", p, suffix);
	if ((d = strchr(buf, '.')) != NULL)
		*d = '_';
}

/* The summary of one metric's values (sorted here). */
static json_t *
metric_obj(const struct opts *o, struct sm_vec *v, size_t gi, int mi)
{
	json_t *m = json_object();
	char name[48];
	double lo, hi;
	int i, rc = 0;

	if (v->n > 0)
		kv_sort(v->v, v->n);
	rc |= jset_u64(m, "n", v->n);
	if (v->n == 0)
		rc |= jset_str(m, "state", "no_values");
	rc |= jset_num(m, "mean", kv_mean(v->v, v->n));
	rc |= jset_num(m, "min", v->n ? v->v[0] : NAN);
	rc |= jset_num(m, "max", v->n ? v->v[v->n - 1] : NAN);
	for (i = 0; i < o->npct; i++) {
		pct_name(name, sizeof(name), "", o->pct[i]);
		rc |= jset_num(m, name, kv_percentile(v->v, v->n, o->pct[i]));
		if (o->boot == 0)
			continue;
		if (sm_boot_ci(v->v, v->n, o->pct[i], o->boot, o->ci, o->seed,
		    (uint64_t)gi << 40 ^ (uint64_t)mi << 20 ^ (uint64_t)i,
		    &lo, &hi) != 0)
			kv_die(KV_SOFTWARE, "out of memory:");
		pct_name(name, sizeof(name), "_ci_low", o->pct[i]);
		rc |= jset_num(m, name, lo);
		pct_name(name, sizeof(name), "_ci_high", o->pct[i]);
		rc |= jset_num(m, name, hi);
	}
	if (rc != 0)
		kv_die(KV_SOFTWARE, "out of memory");
	return m;
}

/* Span, QPM, goodput, concurrency and cost of a group into r. */
static int
rates(json_t *r, const struct opts *o, struct group *g)
{
	double busy = 0, span = NAN, cost;
	uint64_t peak = 0;
	int rc = 0;

	if (g->sent.n > 0) {
		peak = sm_peak(g->sent.v, g->done.v, g->sent.n, &busy);
		span = g->done.v[g->done.n - 1] - g->sent.v[0];
	}
	if (!(span > 0))
		rc |= jset_str(r, "span_state", g->sent.n ? "zero_span" :
		    "no_times");
	if (!(span > 0))
		span = NAN;
	rc |= jset_num(r, "span_s", span);
	rc |= jset_num(r, "qpm", (double)g->ok / span * 60);
	if (o->sp.nslo)
		rc |= jset_u64(r, "slo_met", g->slo_met) |
		    jset_num(r, "goodput_qpm", (double)g->slo_met / span * 60);
	rc |= jset_num(r, "concurrency_mean", busy / span);
	rc |= jset_u64(r, "concurrency_peak", peak);
	if (o->cost) {
		cost = o->price * o->nodes * span / 3600;
		rc |= jset_num(r, "cost_per_1k_requests", g->ok ?
		    cost / (double)g->ok * 1000 : NAN);
		if (g->ok == 0 || isnan(span))
			rc |= jset_str(r, "cost_state", g->ok ? "no_times" :
			    "no_successes");
	}
	return rc;
}

static int
putbuf(const char *buf, size_t len, void *data)
{
	return fwrite(buf, 1, len, data) == len ? 0 : -1;
}

static int
emit(const struct opts *o, struct group *g, size_t gi)
{
	json_t *r = json_object(), *e = json_object();
	size_t i;
	int rc = 0;

	rc |= jset_str(r, "kind", "summary");
	for (i = 0; i < (size_t)o->sp.nby; i++)
		rc |= json_object_set(r, o->sp.by[i], g->by[i]);
	rc |= jset_u64(r, "n", g->n) | jset_u64(r, "ok", g->ok) |
	    jset_u64(r, "failed", g->failed);
	for (i = 0; i < g->nec; i++)
		rc |= jset_u64(e, g->ec[i].name, g->ec[i].count);
	rc |= set(r, "errors", e);
	rc |= jset_num(r, "error_rate", g->n ? (double)g->failed /
	    (double)g->n : NAN);
	if (g->n == 0)
		rc |= jset_str(r, "state", "no_requests");
	rc |= rates(r, o, g);
	for (i = 0; i < (size_t)o->sp.nmetric; i++)
		rc |= set(r, o->sp.metric[i], metric_obj(o, &g->m[i], gi, (int)i));
	if (rc != 0)
		kv_die(KV_SOFTWARE, "out of memory");
	rc = json_dump_callback(r, putbuf, stdout, JSON_COMPACT |
	    JSON_REAL_PRECISION(12)) != 0 || putchar('\n') == EOF;
	json_decref(r);
	return rc ? -1 : 0;
}

static void
group_free(struct group *g, const struct opts *o)
{
	size_t i;

	for (i = 0; i < (size_t)o->sp.nby; i++)
		json_decref(g->by[i]);
	for (i = 0; i < g->nec; i++)
		free(g->ec[i].name);
	free(g->ec);
	for (i = 0; i < (size_t)o->sp.nmetric; i++)
		sm_vec_free(&g->m[i]);
	sm_vec_free(&g->sent);
	sm_vec_free(&g->done);
}

/*
 * While a line is parsed, jansson allocates from a bump arena reset after
 * each record: a record's dozens of small allocations cost a pointer
 * bump each and its free nothing.  What does not fit, and everything
 * allocated outside parsing (group index, summaries), uses malloc.
 */
#define ARENA_BYTES (1u << 20)
static struct {
	char *p;
	size_t used;
	bool on;
} arena;

static void *
arena_malloc(size_t n)
{
	void *q;

	if (!arena.on || n > ARENA_BYTES - arena.used)
		return malloc(n);
	q = arena.p + arena.used;
	arena.used += (n + 15) & ~(size_t)15;	/* stays <= ARENA_BYTES */
	return q;
}

static void
arena_free(void *q)
{
	if ((uintptr_t)q - (uintptr_t)arena.p < ARENA_BYTES)
		return;
	free(q);
}

/* Read every record into a; returns the exit status so far. */
static int
read_all(struct acc *a, const struct opts *o)
{
	static char inbuf[1 << 20];
	struct jsonl_reader r;
	enum jsonl_status st;
	json_t *rec;
	char err[256];
	const char *msg;
	int status = KV_OK, rc;

	if (setvbuf(stdin, inbuf, _IOFBF, sizeof(inbuf)) != 0)
		kv_die(KV_SOFTWARE, "stdin: cannot set a buffer");
	jsonl_init(&r, stdin, "stdin", 0);
	for (;;) {
		arena.used = 0;		/* the last record is gone */
		arena.on = true;
		st = jsonl_next(&r, &rec);
		arena.on = false;
		if (st == JSONL_EOF)
			break;
		if (st == JSONL_BAD && ferror(stdin))
			kv_die(KV_IOERR, "stdin: %s", r.err);
		msg = r.err;
		if (st == JSONL_OK) {
			rc = add(a, o, rec, err, sizeof(err));
			if (rc != 0)
				reject(a, o, rec);
			json_decref(rec);
			if (rc == 0)
				continue;
			msg = err;
		} else
			reject(a, o, NULL);
		status = KV_DATAERR;
		if (jsonl_error(stdout, "stdin", r.lineno, msg) != 0)
			kv_die(KV_IOERR, "stdout:");
		if (o->strict)
			break;
	}
	jsonl_free(&r);
	return status;
}

int
main(int argc, char **argv)
{
	struct opts o;
	struct acc a = { 0 };
	int status, i;
	size_t gi;

	kv_setprogname(argv[0]);
	parse(argc, argv, &o);
	if ((arena.p = malloc(ARENA_BYTES)) == NULL)
		kv_die(KV_SOFTWARE, "out of memory:");
	json_set_alloc_funcs(arena_malloc, arena_free);
	if ((a.index = json_object()) == NULL)
		kv_die(KV_SOFTWARE, "out of memory");
	status = read_all(&a, &o);
	if (a.ng == 0 && o.sp.nby == 0)	/* no records: one empty summary */
		group_of(&a, &o, NULL);
	for (gi = 0; gi < a.ng; gi++) {
		if (emit(&o, &a.g[gi], gi) != 0) {
			status = KV_IOERR;
			break;
		}
	}
	for (gi = 0; gi < a.ng; gi++)
		group_free(&a.g[gi], &o);
	free(a.g);
	free(a.key);
	json_decref(a.index);
	free(arena.p);		/* no jansson object is left */
	for (i = 0; i < 4; i++)
		free(o.lists[i]);
	return kv_fshut(status);
}
