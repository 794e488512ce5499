/* SPDX-License-Identifier: MIT */
#ifndef KV_WORKLOAD_H
#define KV_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prng.h"

enum wl_arrival { WL_BURST, WL_CONSTANT, WL_POISSON, WL_GAMMA };

struct wl_opts {
	uint64_t requests;	/* 0 with ring: ring entries */
	uint64_t tokens;	/* prompt tokens N */
	uint64_t block;		/* cache block size in tokens */
	uint64_t vocab;
	uint64_t output_tokens;
	uint64_t prefixes;	/* distinct shared prefixes K */
	uint64_t ring;		/* single-use eviction ring entries R */
	uint64_t seed;
	double hit_rate;	/* h in [0, 1] */
	double rate;		/* requests per second; 0: all at once */
	enum wl_arrival arrival;
	double burstiness;	/* gamma shape */
	bool probe;
};

/* One generated request; tokens are written to the caller's buffer. */
struct wl_req {
	uint64_t id;
	double arrival_s;
	bool has_prefix;
	uint64_t prefix_id;
	uint64_t expected_hit_tokens;
	const char *probe;	/* NULL, "resident" or "evicted" */
};

struct wl_gen {
	struct wl_opts o;
	struct kv_prng arr;
	uint64_t next, total, hit;
	double t;
};

/*
 * Block-aligned hit tokens H = floor(h*N/blk)*blk, never reaching into
 * the block that holds the last prompt token (token N-1).
 */
uint64_t wl_hit_tokens(uint64_t n, double h, uint64_t blk);

/* Parse "poisson", "constant" or "gamma:B" into o; -1 with err. */
int wl_parse_arrival(const char *s, struct wl_opts *o, char *err,
    size_t errlen);

/* Check option combinations, one rule at a time; -1 with err. */
int wl_check(const struct wl_opts *o, char *err, size_t errlen);

void wl_init(struct wl_gen *g, const struct wl_opts *o);

/*
 * Produce the next request into *r and its N prompt tokens into tok.
 * Returns 1, or 0 when every request was produced.
 */
int wl_next(struct wl_gen *g, struct wl_req *r, uint32_t *tok);

#endif
