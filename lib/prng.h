/* SPDX-License-Identifier: MIT */
#ifndef KV_PRNG_H
#define KV_PRNG_H

#include <stdint.h>

/*
 * xoshiro256** 1.0 (Blackman & Vigna, 2018), seeded through splitmix64.
 * Integer output is byte-identical on every machine.  The real-valued
 * draws use only IEEE-754 arithmetic plus log() and sqrt(); sqrt is
 * exact everywhere, log is correctly rounded in glibc, so callers that
 * must be portable round what they print (workload prints microseconds).
 */
struct kv_prng {
	uint64_t s[4];
};

/* One step of splitmix64: advance *x and return the next output. */
uint64_t kv_splitmix64(uint64_t *x);

/* Seed from a 64-bit seed and a stream number (independent streams). */
void kv_prng_seed(struct kv_prng *r, uint64_t seed, uint64_t stream);

uint64_t kv_prng_next(struct kv_prng *r);
/* Uniform integer in [0, n), n > 0, without modulo bias (Lemire). */
uint64_t kv_prng_below(struct kv_prng *r, uint64_t n);
/* Uniform real in [0, 1) with 53 random bits. */
double kv_prng_uniform(struct kv_prng *r);
/* Uniform real in (0, 1): never 0, for logarithms. */
double kv_prng_open(struct kv_prng *r);
/* Exponential with mean 1. */
double kv_prng_exp(struct kv_prng *r);
/* Standard normal (Marsaglia's polar method). */
double kv_prng_normal(struct kv_prng *r);
/* Gamma with the given shape (> 0) and scale 1 (Marsaglia-Tsang). */
double kv_prng_gamma(struct kv_prng *r, double shape);
/* Beta(a, b), a, b > 0, as Ga/(Ga+Gb). */
double kv_prng_beta(struct kv_prng *r, double a, double b);

#endif
