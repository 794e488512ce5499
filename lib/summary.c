/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prng.h"
#include "units.h"
#include "stats.h"
#include "summary.h"

#define MAX_DEPTH 2048	/* as jansson */

int
sm_want(struct sm_keys *k, const char *name, int slot)
{
	if (k->n == SM_MAX_KEYS)
		return -1;
	k->name[k->n] = name;
	k->len[k->n] = strlen(name);
	k->slot[k->n++] = slot;
	if (slot >= k->nslots)
		k->nslots = slot + 1;
	return 0;
}

struct scan {
	const char *e;
	const char *why;
};

static const char *
ws(const char *p, const char *e)
{
	while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

/* Length of the UTF-8 sequence at p (valid, shortest form), or 0. */
static size_t
utf8(const unsigned char *p, const unsigned char *e)
{
	unsigned c = p[0], n, i, cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	if ((size_t)(e - p) < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return n;
}

static int
hex4(const char *p, const char *e, unsigned *out)
{
	unsigned v = 0;
	int i;

	if (e - p < 4)
		return -1;
	for (i = 0; i < 4; i++) {
		char c = p[i];
		v <<= 4;
		if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
		else return -1;
	}
	*out = v;
	return 0;
}

/* Bytes a string may hold as they are: printable ASCII but '"' and '\\'. */
static const unsigned char plain[256] = {
	['\x20'] = 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
};

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/*
 * True when none of the 8 bytes at p is < 0x20, '"', '\\' or >= 0x80.
 * With every byte below 0x80, (x - n per byte) sets the high bit of the
 * lowest byte below n: never a miss, at worst a false alarm above it,
 * which the byte loop then handles.
 */
static inline bool
all_plain8(const char *p)
{
	uint64_t w, q, b;

	memcpy(&w, p, 8);
	if (w & HIGHS)
		return false;
	q = w ^ (ONES * '"');
	b = w ^ (ONES * '\\');
	return (((w - ONES * 0x20) | (q - ONES) | (b - ONES)) & HIGHS) == 0;
}

/* p at '"': return the byte after the closing quote, or NULL. */
static const char *
str(const char *p, struct scan *s)
{
	const char *e = s->e;
	unsigned u, u2;
	size_t n;

	for (p++; p < e; ) {
		unsigned char c = (unsigned char)*p;
		if (e - p >= 8 && all_plain8(p)) {
			p += 8;
			continue;
		}
		if (plain[c]) {
			p++;
			continue;
		}
		if (c == '"')
			return p + 1;
		if (c < 0x20)
			return s->why = "control character in string", NULL;
		if (c == '\\') {
			if (++p == e)
				break;
			if (strchr("\"\\/bfnrt", *p) && *p) {
				p++;
				continue;
			}
			if (*p != 'u' || hex4(p + 1, e, &u) != 0)
				return s->why = "invalid escape", NULL;
			p += 5;
			if (u == 0)
				return s->why = "\\u0000 is not allowed", NULL;
			if (u >= 0xdc00 && u <= 0xdfff)
				return s->why = "invalid Unicode escape", NULL;
			if (u >= 0xd800 && u <= 0xdbff) {
				if (e - p < 6 || p[0] != '\\' || p[1] != 'u' ||
				    hex4(p + 2, e, &u2) != 0 || u2 < 0xdc00 ||
				    u2 > 0xdfff)
					return s->why = "invalid Unicode escape",
					    NULL;
				p += 6;
			}
			continue;
		}
		if ((n = utf8((const unsigned char *)p,
		    (const unsigned char *)e)) == 0)
			return s->why = "invalid UTF-8", NULL;
		p += n;
	}
	return s->why = "unterminated string", NULL;
}

static const char *
digits(const char *p, const char *e)
{
	const char *q = p;

	while (q < e && *q >= '0' && *q <= '9')
		q++;
	return q == p ? NULL : q;
}

static const char *
num(const char *p, struct scan *s)
{
	const char *e = s->e;

	if (p < e && *p == '-')
		p++;
	if (p < e && *p == '0')
		p++;
	else if ((p = digits(p, e)) == NULL)
		return s->why = "invalid number", NULL;
	if (p < e && *p == '.' && (p = digits(p + 1, e)) == NULL)
		return s->why = "invalid number", NULL;
	if (p < e && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < e && (*p == '+' || *p == '-'))
			p++;
		if ((p = digits(p, e)) == NULL)
			return s->why = "invalid number", NULL;
	}
	return p;
}

static const char *value(const char *p, struct scan *s, int depth);

/* p at '[' or '{'. */
static const char *
container(const char *p, struct scan *s, int depth)
{
	char close = *p == '[' ? ']' : '}';
	bool obj = close == '}';

	if (depth >= MAX_DEPTH)
		return s->why = "nesting too deep", NULL;
	p = ws(p + 1, s->e);
	if (p < s->e && *p == close)
		return p + 1;
	for (;;) {
		if (obj) {
			if (p >= s->e || *p != '"')
				return s->why = "expected a key", NULL;
			if ((p = str(p, s)) == NULL)
				return NULL;
			p = ws(p, s->e);
			if (p >= s->e || *p != ':')
				return s->why = "expected ':'", NULL;
			p = ws(p + 1, s->e);
		}
		if ((p = value(p, s, depth + 1)) == NULL)
			return NULL;
		p = ws(p, s->e);
		if (p < s->e && *p == ',') {
			p = ws(p + 1, s->e);
			continue;
		}
		if (p < s->e && *p == close)
			return p + 1;
		return s->why = obj ? "expected ',' or '}'" :
		    "expected ',' or ']'", NULL;
	}
}

static const char *
lit(const char *p, struct scan *s, const char *w)
{
	size_t n = strlen(w);

	if ((size_t)(s->e - p) < n || memcmp(p, w, n) != 0)
		return s->why = "invalid literal", NULL;
	return p + n;
}

static const char *
value(const char *p, struct scan *s, int depth)
{
	if (p >= s->e)
		return s->why = "expected a value", NULL;
	switch (*p) {
	case '{': case '[': return container(p, s, depth);
	case '"': return str(p, s);
	case 't': return lit(p, s, "true");
	case 'f': return lit(p, s, "false");
	case 'n': return lit(p, s, "null");
	default: return num(p, s);
	}
}

static void
match(const struct sm_keys *k, const char *key, size_t klen,
    const char *v, size_t vlen, struct sm_span *span)
{
	int i;

	for (i = 0; i < k->n; i++)
		if (k->len[i] == klen && memcmp(k->name[i], key, klen) == 0) {
			span[k->slot[i]].p = v;
			span[k->slot[i]].n = vlen;
		}
}

int
sm_scan(const char *line, size_t len, const struct sm_keys *k,
    struct sm_span *span, char *err, size_t errlen)
{
	struct scan s = { line + len, NULL };
	const char *p = ws(line, s.e), *key, *v;
	size_t klen;

	memset(span, 0, sizeof(*span) * (size_t)k->nslots);
	if (p >= s.e || *p != '{') {
		snprintf(err, errlen, p < s.e && strchr("[\"tfn-0123456789", *p)
		    ? "invalid record: not a JSON object" :
		    "invalid JSON: expected '{' (column %zu)",
		    (size_t)(p - line) + 1);
		return -1;
	}
	p = ws(p + 1, s.e);
	if (p < s.e && *p == '}') {
		p++;
		goto tail;
	}
	for (;;) {
		if (p >= s.e || *p != '"') {
			s.why = "expected a key";
			goto bad;
		}
		key = p + 1;
		if ((p = str(p, &s)) == NULL)
			goto bad;
		klen = (size_t)(p - 1 - key);
		p = ws(p, s.e);
		if (p >= s.e || *p != ':') {
			s.why = "expected ':'";
			goto bad;
		}
		v = p = ws(p + 1, s.e);
		if ((p = value(p, &s, 1)) == NULL)
			goto bad;
		match(k, key, klen, v, (size_t)(p - v), span);
		p = ws(p, s.e);
		if (p < s.e && *p == ',') {
			p = ws(p + 1, s.e);
			continue;
		}
		if (p < s.e && *p == '}') {
			p++;
			break;
		}
		s.why = "expected ',' or '}'";
		goto bad;
	}
tail:
	if (ws(p, s.e) == s.e)
		return 0;
	s.why = "text after the object";
bad:
	snprintf(err, errlen, "invalid JSON: %s (column %zu)", s.why,
	    (size_t)((p ? p : s.e) - line) + 1);
	return -1;
}

bool
sm_is(const struct sm_span *s, const char *lit_)
{
	size_t n = strlen(lit_);

	return s->p && s->n == n && memcmp(s->p, lit_, n) == 0;
}

int
sm_num(const struct sm_span *s, double *out)
{
	char buf[64], *end;

	if (s->p == NULL || sm_is(s, "null"))
		return 0;
	if (s->n == 0 || s->n >= sizeof(buf) || !(s->p[0] == '-' ||
	    (s->p[0] >= '0' && s->p[0] <= '9')))
		return -1;
	memcpy(buf, s->p, s->n);
	buf[s->n] = '\0';
	errno = 0;
	*out = strtod(buf, &end);
	if (*end != '\0' || !isfinite(*out))
		return -1;
	return 1;
}

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

int
sm_spec_keys(struct sm_spec *sp)
{
	static const char *fixed[] = { "kind", "ok", "error", "sent_s",
	    "done_s" };
	int i, rc = 0;

	memset(&sp->keys, 0, sizeof(sp->keys));
	for (i = 0; i < SM_FIRST; i++)
		rc |= sm_want(&sp->keys, fixed[i], i);
	sp->mslot = SM_FIRST;
	sp->sslot = sp->mslot + sp->nmetric;
	sp->bslot = sp->sslot + sp->nslo;
	for (i = 0; i < sp->nmetric; i++)
		rc |= sm_want(&sp->keys, sp->metric[i], sp->mslot + i);
	for (i = 0; i < sp->nslo; i++)
		rc |= sm_want(&sp->keys, sp->slo[i].field, sp->sslot + i);
	for (i = 0; i < sp->nby; i++)
		rc |= sm_want(&sp->keys, sp->by[i], sp->bslot + i);
	return rc ? -1 : 0;
}

static bool
meets(const struct sm_slo *s, double x)
{
	if (s->le)
		return s->strict ? x < s->limit : x <= s->limit;
	return s->strict ? x > s->limit : x >= s->limit;
}

int
sm_eval(const struct sm_spec *sp, const struct sm_span *span,
    struct sm_rec *r, char *err, size_t errlen)
{
	double x;
	int i, st, hs, hd;

	memset(r, 0, sizeof(*r));
	r->input_error = sm_is(&span[SM_KIND], "\"error\"");
	if (!r->input_error && !(r->ok = sm_is(&span[SM_OK], "true")) &&
	    !sm_is(&span[SM_OK], "false"))
		return snprintf(err, errlen, span[SM_OK].p ? "field 'ok' is "
		    "not a boolean" : "missing field 'ok'"), -1;
	for (i = 0; i < sp->nmetric; i++) {
		if ((st = sm_num(&span[sp->mslot + i], &r->metric[i])) < 0)
			return snprintf(err, errlen, "field '%s' is not a "
			    "number", sp->metric[i]), -1;
		r->has_metric[i] = st > 0;
	}
	r->slo_met = r->ok && sp->nslo > 0;
	for (i = 0; i < sp->nslo; i++) {
		if ((st = sm_num(&span[sp->sslot + i], &x)) < 0)
			return snprintf(err, errlen, "field '%s' is not a "
			    "number", sp->slo[i].field), -1;
		r->slo_met = r->slo_met && st > 0 && meets(&sp->slo[i], x);
	}
	if ((hs = sm_num(&span[SM_SENT], &r->sent)) < 0 ||
	    (hd = sm_num(&span[SM_DONE], &r->done)) < 0)
		return snprintf(err, errlen, "sent_s or done_s is not a "
		    "number"), -1;
	r->has_times = hs > 0 && hd > 0 && r->done >= r->sent;
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
