/* SPDX-License-Identifier: MIT */
/* fit: least-squares fit of prefill time T(n) = a + b·n + c·n², per group. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "fit.h"
#include "jsonl.h"
#include "units.h"

#define MAX_BY 16

struct options {
	const char *xkey, *ykey;
	const char *by[MAX_BY];
	size_t nby;
	char *bybuf[MAX_BY];
	struct fit_opt fo;
	bool median, strict;
};

struct group {
	json_t *keys;		/* object: the --by fields' values */
	double *x, *y;
	size_t n, cap;
	size_t last_line;	/* input line of the group's last point */
};

struct groups {
	json_t *index;		/* key text -> position */
	struct group *g;
	size_t n, cap;
};

static const struct option longopts[] = {
	{ "by", required_argument, NULL, 'b' },
	{ "degree", required_argument, NULL, 'd' },
	{ "help", no_argument, NULL, 'h' },
	{ "median", no_argument, NULL, 'm' },
	{ "strict", no_argument, NULL, 's' },
	{ "through-origin", no_argument, NULL, 'o' },
	{ "version", no_argument, NULL, 'V' },
	{ "x", required_argument, NULL, 'x' },
	{ "y", required_argument, NULL, 'y' },
	{ NULL, 0, NULL, 0 }
};

static void
synopsis(FILE *fp)
{
	fprintf(fp, "usage: %s [--median] [--strict] [--through-origin] "
	    "[--by FIELD[,FIELD...]]\n"
	    "           [--degree 1|2] [--x FIELD] [--y FIELD]\n"
	    "       %s --help | --version\n", kv_progname, kv_progname);
}

static noreturn void
usage(void)
{
	synopsis(stderr);
	exit(KV_USAGE);
}

/* The group of rec (created on first sight), or NULL when out of memory. */
static struct group *
group_of(struct groups *gs, const json_t *rec, const struct options *o)
{
	json_t *keys = json_object(), *pos;
	struct group *g;
	char *text;

	if (keys == NULL)
		return NULL;
	for (size_t i = 0; i < o->nby; i++) {
		json_t *v = json_object_get(rec, o->by[i]);

		if (json_object_set_new(keys, o->by[i], v ? json_deep_copy(v) :
		    json_null()) != 0) {
			json_decref(keys);
			return NULL;
		}
	}
	if ((text = json_dumps(keys, JSON_COMPACT | JSON_SORT_KEYS)) == NULL) {
		json_decref(keys);
		return NULL;
	}
	if ((pos = json_object_get(gs->index, text)) != NULL) {
		free(text);
		json_decref(keys);
		return &gs->g[json_integer_value(pos)];
	}
	if (gs->n == gs->cap) {
		size_t ncap = gs->cap ? 2 * gs->cap : 8;
		struct group *ng = realloc(gs->g, ncap * sizeof(*ng));

		if (ng == NULL) {
			free(text);
			json_decref(keys);
			return NULL;
		}
		gs->g = ng;
		gs->cap = ncap;
	}
	if (json_object_set_new(gs->index, text,
	    json_integer((json_int_t)gs->n)) != 0) {
		free(text);
		json_decref(keys);
		return NULL;
	}
	free(text);
	g = &gs->g[gs->n++];
	memset(g, 0, sizeof(*g));
	g->keys = keys;
	return g;
}

static int
add_point(struct group *g, double x, double y)
{
	if (g->n == g->cap) {
		size_t ncap = g->cap ? 2 * g->cap : 64;
		double *nx = realloc(g->x, ncap * sizeof(*nx)), *ny;

		if (nx == NULL)
			return -1;
		g->x = nx;
		if ((ny = realloc(g->y, ncap * sizeof(*ny))) == NULL)
			return -1;
		g->y = ny;
		g->cap = ncap;
	}
	g->x[g->n] = x;
	g->y[g->n++] = y;
	return 0;
}

/* Take the point of rec, read from line; 0, or -1 with the reason in err. */
static int
take(struct groups *gs, const json_t *rec, size_t line,
    const struct options *o, char *err, size_t errlen)
{
	enum jf_status sx, sy;
	struct group *g;
	double x, y;

	if ((sx = jf_num(rec, o->xkey, &x, err, errlen)) == JF_BAD ||
	    (sy = jf_num(rec, o->ykey, &y, err, errlen)) == JF_BAD)
		return -1;
	if (sx == JF_ABSENT || sy == JF_ABSENT) {
		snprintf(err, errlen, "missing field '%s'",
		    sx == JF_ABSENT ? o->xkey : o->ykey);
		return -1;
	}
	if (x < 0) {
		snprintf(err, errlen, "field '%s' must not be negative",
		    o->xkey);
		return -1;
	}
	if ((g = group_of(gs, rec, o)) == NULL || add_point(g, x, y) != 0)
		kv_die(KV_SOFTWARE, "out of memory");
	g->last_line = line;
	return 0;
}

/*
 * Fit one group and write its record: kind fit, or kind error with the
 * line of the group's last point (where the group ended up unfittable);
 * the --by values never replace those fields.  KV_OK, KV_DATAERR or
 * KV_IOERR.
 */
static int
emit(struct group *g, const struct options *o)
{
	struct fit_res r;
	char err[256];
	size_t nrec = g->n, n = g->n;
	json_t *out = json_object();
	int bad = 0, rc;

	if (out == NULL)
		kv_die(KV_SOFTWARE, "out of memory");
	if (o->median && (n = fit_median_by_x(g->x, g->y, g->n)) == (size_t)-1)
		kv_die(KV_SOFTWARE, "out of memory");
	if (fit_poly(g->x, g->y, n, &o->fo, &r, err, sizeof(err)) != 0) {
		char *k = json_dumps(g->keys, JSON_COMPACT);

		kv_warn("stdin:%zu: group %s: %s", g->last_line, k ? k : "?",
		    err);
		free(k);
		bad = 1;
	}
	if (jset_str(out, "kind", bad ? "error" : "fit") ||
	    (bad && (jset_u64(out, "line", g->last_line) ||
	    jset_str(out, "error", err))) ||
	    json_object_update_missing(out, g->keys) != 0 ||
	    (!bad && (jset_num(out, "prefill_a_s", r.a) ||
	    jset_num(out, "prefill_b_s_per_token", r.b) ||
	    jset_num(out, "prefill_c_s_per_token2", r.c) ||
	    jset_num(out, "r2", r.r2) || jset_num(out, "rmse_s", r.rmse) ||
	    jset_num(out, "tokens_min", r.xmin) ||
	    jset_num(out, "tokens_max", r.xmax))) ||
	    jset_u64(out, "n_points", n) || jset_u64(out, "n_records", nrec) ||
	    jset_num(out, "degree", o->fo.degree) ||
	    jset_bool(out, "through_origin", o->fo.through_origin) ||
	    jset_bool(out, "median", o->median))
		kv_die(KV_SOFTWARE, "out of memory");
	rc = jsonl_write(stdout, out, false);
	json_decref(out);
	return rc != 0 ? KV_IOERR : bad ? KV_DATAERR : KV_OK;
}

/* Split a --by list into o->by. */
static void
add_by(struct options *o, const char *arg)
{
	char *s, *tok, *save = NULL;
	size_t before = o->nby;

	if (o->nby == MAX_BY || (s = strdup(arg)) == NULL)
		kv_die(KV_USAGE, "--by: at most %d fields", MAX_BY);
	o->bybuf[o->nby] = s;
	for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",",
	    &save)) {
		if (o->nby == MAX_BY)
			kv_die(KV_USAGE, "--by: at most %d fields", MAX_BY);
		o->by[o->nby++] = tok;
	}
	if (o->nby == before)
		kv_die(KV_USAGE, "--by: empty field list");
}

static void
parse_args(int argc, char *argv[], struct options *o)
{
	char err[256];
	long long v;
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'b':
			add_by(o, optarg);
			break;
		case 'd':
			if (kv_parse_int(optarg, 1, 2, &v, err,
			    sizeof(err)) != 0)
				kv_die(KV_USAGE, "--degree: %s", err);
			o->fo.degree = (int)v;
			break;
		case 'm':
			o->median = true;
			break;
		case 'o':
			o->fo.through_origin = true;
			break;
		case 's':
			o->strict = true;
			break;
		case 'x':
		case 'y':
			if (*optarg == '\0')
				kv_die(KV_USAGE, "--%c: empty field name", c);
			*(c == 'x' ? &o->xkey : &o->ykey) = optarg;
			break;
		case 'h':
			synopsis(stdout);
			exit(kv_fshut(KV_OK));
		case 'V':
			kv_version();
		default:
			usage();
		}
	}
	if (optind != argc) {
		kv_warn("unexpected argument '%s'", argv[optind]);
		usage();
	}
	if (strcmp(o->xkey, o->ykey) == 0) {
		kv_warn("--x and --y name the same field '%s'", o->xkey);
		usage();
	}
}

int
main(int argc, char *argv[])
{
	struct options o = { .xkey = "tokens", .ykey = "t_s",
		.fo = { .degree = 2 } };
	struct groups gs = { 0 };
	struct jsonl_reader r;
	enum jsonl_status st;
	char err[512];
	json_t *rec;
	int status = KV_OK;

	kv_setprogname(argv[0]);
	parse_args(argc, argv, &o);
	if ((gs.index = json_object()) == NULL)
		kv_die(KV_SOFTWARE, "out of memory");
	jsonl_init(&r, stdin, "stdin", 0);
	while ((st = jsonl_next(&r, &rec)) != JSONL_EOF) {
		if (st == JSONL_BAD && ferror(stdin)) {
			kv_warn("stdin: %s", r.err);
			status = KV_IOERR;
			break;
		}
		if (st == JSONL_OK && take(&gs, rec, r.lineno, &o, r.err,
		    sizeof(r.err)) == 0) {
			json_decref(rec);
			continue;
		}
		json_decref(rec);
		status = KV_DATAERR;
		if (jsonl_error(stdout, "stdin", r.lineno, r.err) != 0) {
			status = KV_IOERR;
			break;
		}
		if (o.strict)
			break;
	}
	jsonl_free(&r);
	if (status != KV_IOERR && !(o.strict && status != KV_OK)) {
		if (gs.n == 0) {
			snprintf(err, sizeof(err), "no data points: records "
			    "need '%s' and '%s'", o.xkey, o.ykey);
			status = jsonl_error(stdout, "stdin", r.lineno, err) ?
			    KV_IOERR : KV_DATAERR;
		}
		for (size_t i = 0; i < gs.n && status != KV_IOERR; i++) {
			int rc = emit(&gs.g[i], &o);

			if (rc != KV_OK)
				status = rc;
		}
	}
	for (size_t i = 0; i < gs.n; i++) {
		json_decref(gs.g[i].keys);
		free(gs.g[i].x);
		free(gs.g[i].y);
	}
	free(gs.g);
	json_decref(gs.index);
	for (size_t i = 0; i < MAX_BY; i++)
		free(o.bybuf[i]);
	return kv_fshut(status);
}
