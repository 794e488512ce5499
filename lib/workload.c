/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "units.h"
#include "workload.h"

enum { STREAM_ARRIVAL = 1, STREAM_PREFIX = 2, STREAM_SUFFIX = 3 };
#define STREAM(kind, i) (((uint64_t)(kind) << 56) ^ (i))
#define MARKER_TOKENS 3

uint64_t
wl_hit_tokens(uint64_t n, double h, uint64_t blk)
{
	uint64_t hb, maxb;

	if (n == 0 || blk == 0 || !(h > 0))
		return 0;
	hb = (uint64_t)floor(h * (double)n / (double)blk);
	maxb = (n - 1) / blk;	/* full blocks before the last token's */
	return (hb < maxb ? hb : maxb) * blk;
}

int
wl_parse_arrival(const char *s, struct wl_opts *o, char *err, size_t errlen)
{
	if (strcmp(s, "poisson") == 0) {
		o->arrival = WL_POISSON;
		return 0;
	}
	if (strcmp(s, "constant") == 0) {
		o->arrival = WL_CONSTANT;
		return 0;
	}
	if (strncmp(s, "gamma:", 6) == 0) {
		if (kv_parse_real(s + 6, 1e-3, 1e3, &o->burstiness, err,
		    errlen) != 0)
			return -1;
		o->arrival = WL_GAMMA;
		return 0;
	}
	snprintf(err, errlen, "unknown arrival process '%s' (poisson, "
	    "constant or gamma:BURSTINESS)", s);
	return -1;
}

int
wl_check(const struct wl_opts *o, char *err, size_t errlen)
{
	if (o->tokens == 0)
		return snprintf(err, errlen, "--tokens must be at least 1"), -1;
	if (o->block == 0)
		return snprintf(err, errlen, "--block must be at least 1"), -1;
	if (o->vocab < 2)
		return snprintf(err, errlen, "--vocab must be at least 2"), -1;
	if (o->ring && o->prefixes > 1)
		return snprintf(err, errlen, "--ring and --prefixes exclude "
		    "each other (a ring entry is its own prefix)"), -1;
	if (o->ring && o->requests && o->requests != o->ring)
		return snprintf(err, errlen, "--ring %llu makes exactly %llu "
		    "requests: drop --requests or make it equal",
		    (unsigned long long)o->ring,
		    (unsigned long long)o->ring), -1;
	if (!o->ring && o->requests == 0)
		return snprintf(err, errlen, "--requests or --ring is "
		    "required"), -1;
	if (o->probe && !o->ring)
		return snprintf(err, errlen, "--probe needs --ring"), -1;
	if (o->probe && wl_hit_tokens(o->tokens, o->hit_rate, o->block) == 0)
		return snprintf(err, errlen, "--probe needs a shared prefix: "
		    "raise --hit-rate or --tokens (H = 0 here)"), -1;
	if (o->arrival != WL_BURST && !(o->rate > 0))
		return snprintf(err, errlen, "--arrival needs --rate"), -1;
	return 0;
}

void
wl_init(struct wl_gen *g, const struct wl_opts *o)
{
	memset(g, 0, sizeof(*g));
	g->o = *o;
	if (g->o.prefixes == 0)
		g->o.prefixes = 1;
	if (g->o.rate > 0 && g->o.arrival == WL_BURST)
		g->o.arrival = WL_POISSON;
	g->total = o->ring ? o->ring + (o->probe ? 2 : 0) : o->requests;
	g->hit = wl_hit_tokens(o->tokens, o->hit_rate, o->block);
	kv_prng_seed(&g->arr, o->seed, STREAM(STREAM_ARRIVAL, 0));
}

/* Marker tokens: x in base V, least significant digit first. */
static size_t
put_marker(uint32_t *tok, size_t room, uint64_t x, uint64_t vocab)
{
	size_t i;

	for (i = 0; i < room && i < MARKER_TOKENS; i++) {
		tok[i] = (uint32_t)(x % vocab);
		x /= vocab;
	}
	return i;
}

/* Fill tok[0..n) with a marker for x and then tokens from the stream. */
static void
fill(uint32_t *tok, size_t n, int kind, uint64_t x, const struct wl_opts *o)
{
	struct kv_prng r;
	size_t i = put_marker(tok, n, x, o->vocab);

	kv_prng_seed(&r, o->seed, STREAM(kind, x));
	for (; i < n; i++)
		tok[i] = (uint32_t)kv_prng_below(&r, o->vocab);
}

static double
gap(struct wl_gen *g)
{
	switch (g->o.arrival) {
	case WL_CONSTANT:
		return 1.0 / g->o.rate;
	case WL_POISSON:
		return kv_prng_exp(&g->arr) / g->o.rate;
	case WL_GAMMA:
		return kv_prng_gamma(&g->arr, g->o.burstiness) /
		    (g->o.burstiness * g->o.rate);
	default:
		return 0;
	}
}

int
wl_next(struct wl_gen *g, struct wl_req *r, uint32_t *tok)
{
	const struct wl_opts *o = &g->o;
	uint64_t i = g->next, p;

	if (i >= g->total)
		return 0;
	if (i > 0)
		g->t += gap(g);
	g->next++;
	memset(r, 0, sizeof(*r));
	r->id = i;
	r->arrival_s = g->t;
	if (o->ring) {
		p = i < o->ring ? i : i == o->ring ? o->ring - 1 : 0;
		r->probe = i < o->ring ? NULL :
		    i == o->ring ? "resident" : "evicted";
		r->expected_hit_tokens = i == o->ring ? g->hit : 0;
	} else {
		p = i % o->prefixes;
		r->expected_hit_tokens = i >= o->prefixes ? g->hit : 0;
	}
	r->has_prefix = g->hit > 0;
	r->prefix_id = p;
	if (g->hit > 0)
		fill(tok, g->hit, STREAM_PREFIX, p, o);
	fill(tok + g->hit, o->tokens - g->hit, STREAM_SUFFIX, i, o);
	return 1;
}
