/* SPDX-License-Identifier: MIT */
#ifndef KV_STATS_H
#define KV_STATS_H

#include <stddef.h>

/* Sort x[0..n) ascending in place (NaN-free input). */
void kv_sort(double *x, size_t n);

/*
 * The p-th percentile (0..100) of sorted x[0..n), linear interpolation
 * between closest ranks (Hyndman-Fan type 7, as numpy's default).
 * NaN when n is 0.
 */
double kv_percentile(const double *sorted, size_t n, double p);

/* Arithmetic mean, NaN when n is 0. */
double kv_mean(const double *x, size_t n);

#endif
