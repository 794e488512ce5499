/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prng.h"
#include "units.h"
#include "stats.h"
#include "summary.h"

int
sm_parse_slo(struct sm_slo *s, char *spec, char *err, size_t errlen)
{
	static const char *ops[] = { "<=", ">=", "<", ">" };
	static const char *ident = "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.";
	char *op = NULL;
	size_t n;
	int i;

	for (i = 0; i < 4 && op == NULL; i++)
		op = strstr(spec, ops[i]);
	if (op == NULL || op == spec || strspn(spec, ident) != (size_t)(op -
	    spec))
		return snprintf(err, errlen, "'%s' is not FIELD<=LIMIT (or "
		    "<, >=, >)", spec), -1;
	s->le = op[0] == '<';
	s->strict = op[1] != '=';
	*op = '\0';
	s->field = spec;
	op += s->strict ? 1 : 2;
	n = strlen(spec);
	if ((n > 2 && strcmp(spec + n - 2, "_s") == 0 ?
	    kv_parse_duration(op, &s->limit, err, errlen) :
	    kv_parse_real(op, -1e300, 1e300, &s->limit, err, errlen)) != 0)
		return -1;
	return 0;
}

static bool
meets(const struct sm_slo *s, double x)
{
	if (s->le)
		return s->strict ? x < s->limit : x <= s->limit;
	return s->strict ? x > s->limit : x >= s->limit;
}

/* A number field: 1 (*x set), 0 absent or null, -1 anything else. */
static int
num(const json_t *rec, const char *key, double *x)
{
	const json_t *v = json_object_get(rec, key);

	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_number(v))
		return -1;
	*x = json_number_value(v);
	return 1;
}

int
sm_eval(const struct sm_spec *sp, const json_t *rec, struct sm_rec *r,
    char *err, size_t errlen)
{
	const json_t *v;
	double x;
	int i, st, hs, hd;

	memset(r, 0, sizeof(*r));
	v = json_object_get(rec, "kind");
	r->input_error = json_is_string(v) &&
	    strcmp(json_string_value(v), "error") == 0;
	v = json_object_get(rec, "ok");
	if (!r->input_error && !json_is_boolean(v))
		return snprintf(err, errlen, v ? "field 'ok' is not a boolean" :
		    "missing field 'ok'"), -1;
	r->ok = !r->input_error && json_is_true(v);
	for (i = 0; i < sp->nmetric; i++) {
		if ((st = num(rec, sp->metric[i], &r->metric[i])) < 0)
			return snprintf(err, errlen, "field '%s' is not a "
			    "number", sp->metric[i]), -1;
		r->has_metric[i] = st > 0;
	}
	r->slo_met = r->ok && sp->nslo > 0;
	for (i = 0; i < sp->nslo; i++) {
		if ((st = num(rec, sp->slo[i].field, &x)) < 0)
			return snprintf(err, errlen, "field '%s' is not a "
			    "number", sp->slo[i].field), -1;
		r->slo_met = r->slo_met && st > 0 && meets(&sp->slo[i], x);
	}
	if ((hs = num(rec, "sent_s", &r->sent)) < 0 ||
	    (hd = num(rec, "done_s", &r->done)) < 0)
		return snprintf(err, errlen, "sent_s or done_s is not a "
		    "number"), -1;
	r->has_times = hs > 0 && hd > 0 && r->done >= r->sent;
	v = json_object_get(rec, "error");
	r->error = json_string_value(v);	/* NULL unless a string */
	return 0;
}

int
sm_push(struct sm_vec *v, double x)
{
	double *p;

	if (v->n == v->cap) {
		v->cap = v->cap ? v->cap * 2 : 256;
		if ((p = realloc(v->v, v->cap * sizeof(*p))) == NULL)
			return -1;
		v->v = p;
	}
	v->v[v->n++] = x;
	return 0;
}

void
sm_vec_free(struct sm_vec *v)
{
	free(v->v);
	memset(v, 0, sizeof(*v));
}

/* U_(k) of n uniforms (1-based k), and the next one U_(k+1) given it. */
static double
order_u(struct kv_prng *r, size_t k, size_t n)
{
	return kv_prng_beta(r, (double)k, (double)(n - k + 1));
}

static double
next_u(struct kv_prng *r, double u, size_t k, size_t n)
{
	/* the minimum of n-k uniforms on (u, 1) */
	return u + (1 - u) * (1 - pow(kv_prng_open(r), 1.0 / (double)(n - k)));
}

static double
at(const double *x, size_t n, double u)
{
	double j = ceil((double)n * u);

	if (j < 1)
		j = 1;
	if (j > (double)n)
		j = (double)n;
	return x[(size_t)j - 1];
}

int
sm_boot_ci(const double *x, size_t n, double p, unsigned B, double level,
    uint64_t seed, uint64_t stream, double *lo, double *hi)
{
	struct kv_prng r;
	double *rep, h, frac, u, u2, a, b;
	size_t k;
	unsigned i;

	*lo = *hi = NAN;
	if (n == 0 || B == 0)
		return 0;
	if ((rep = malloc(B * sizeof(*rep))) == NULL)
		return -1;
	kv_prng_seed(&r, seed, stream);
	h = (double)(n - 1) * p / 100.0;
	k = (size_t)floor(h) + 1;	/* 1-based lower order statistic */
	frac = h - floor(h);
	for (i = 0; i < B; i++) {
		u = order_u(&r, k, n);
		a = at(x, n, u);
		b = a;
		if (frac > 0 && k < n) {
			u2 = next_u(&r, u, k, n);
			b = at(x, n, u2);
		}
		rep[i] = a + frac * (b - a);
	}
	kv_sort(rep, B);
	*lo = kv_percentile(rep, B, 50.0 * (1 - level));
	*hi = kv_percentile(rep, B, 50.0 * (1 + level));
	free(rep);
	return 0;
}

uint64_t
sm_peak(double *sent, double *done, size_t n, double *busy)
{
	uint64_t cur = 0, peak = 0;
	size_t i = 0, j = 0;
	double sum = 0;

	for (i = 0; i < n; i++)
		sum += done[i] - sent[i];
	*busy = sum;
	kv_sort(sent, n);
	kv_sort(done, n);
	for (i = 0; i < n; ) {
		if (j < n && done[j] <= sent[i]) {
			cur -= cur > 0;
			j++;
			continue;
		}
		cur++;
		i++;
		if (cur > peak)
			peak = cur;
	}
	return peak;
}
