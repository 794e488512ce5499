/* SPDX-License-Identifier: MIT */
#include <math.h>

#include "prng.h"

uint64_t
kv_splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void
kv_prng_seed(struct kv_prng *r, uint64_t seed, uint64_t stream)
{
	uint64_t x = seed ^ kv_splitmix64(&stream);
	int i;

	for (i = 0; i < 4; i++)
		r->s[i] = kv_splitmix64(&x);
}

static inline uint64_t
rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t
kv_prng_next(struct kv_prng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

uint64_t
kv_prng_below(struct kv_prng *r, uint64_t n)
{
	unsigned __int128 m = (unsigned __int128)kv_prng_next(r) * n;
	uint64_t lo = (uint64_t)m, t;

	if (lo < n) {
		t = -n % n;
		while (lo < t) {
			m = (unsigned __int128)kv_prng_next(r) * n;
			lo = (uint64_t)m;
		}
	}
	return (uint64_t)(m >> 64);
}

double
kv_prng_uniform(struct kv_prng *r)
{
	return (double)(kv_prng_next(r) >> 11) * 0x1.0p-53;
}

double
kv_prng_open(struct kv_prng *r)
{
	return ((double)(kv_prng_next(r) >> 12) + 0.5) * 0x1.0p-52;
}

double
kv_prng_exp(struct kv_prng *r)
{
	return -log(kv_prng_open(r));
}

double
kv_prng_normal(struct kv_prng *r)
{
	double u, v, s;

	do {
		u = 2.0 * kv_prng_uniform(r) - 1.0;
		v = 2.0 * kv_prng_uniform(r) - 1.0;
		s = u * u + v * v;
	} while (s >= 1.0 || s == 0.0);
	return u * sqrt(-2.0 * log(s) / s);
}

double
kv_prng_gamma(struct kv_prng *r, double shape)
{
	double d, c, x, v, u;

	if (shape < 1.0)	/* boost: G(a) = G(a+1) * U^(1/a) */
		return kv_prng_gamma(r, shape + 1.0) *
		    pow(kv_prng_open(r), 1.0 / shape);
	d = shape - 1.0 / 3.0;
	c = 1.0 / sqrt(9.0 * d);
	for (;;) {
		do {
			x = kv_prng_normal(r);
			v = 1.0 + c * x;
		} while (v <= 0.0);
		v = v * v * v;
		u = kv_prng_open(r);
		if (u < 1.0 - 0.0331 * (x * x) * (x * x))
			return d * v;
		if (log(u) < 0.5 * x * x + d * (1.0 - v + log(v)))
			return d * v;
	}
}

double
kv_prng_beta(struct kv_prng *r, double a, double b)
{
	double x = kv_prng_gamma(r, a), y = kv_prng_gamma(r, b);

	return x / (x + y);
}
