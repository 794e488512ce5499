/* SPDX-License-Identifier: MIT */
#ifndef KV_KVCFG_H
#define KV_KVCFG_H

#include <stddef.h>

#include "kvmodel.h"

/*
 * Set-up helpers of kv-bytes and bcrit that read files.  Each returns
 * 0, or an exit status (KV_USAGE when the file cannot be read,
 * KV_DATAERR when its content is unusable) with the reason in err.
 */

/* Load a Hugging Face config.json and describe its model. */
int kvcfg_load(const char *path, const char *kv_dtype, struct kv_model *m,
    char *err, size_t errlen);

/*
 * Read the one fit record (prefill_a_s, prefill_b_s_per_token,
 * prefill_c_s_per_token2) of a file written by fit(1).
 */
int kvcfg_load_fit(const char *path, double *a, double *b, double *c,
    char *err, size_t errlen);

#endif
