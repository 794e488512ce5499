/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "err.h"
#include "jsonl.h"
#include "kvcfg.h"

int
kvcfg_load(const char *path, const char *kv_dtype, struct kv_model *m,
    char *err, size_t errlen)
{
	json_error_t je;
	json_t *cfg;
	FILE *fp;
	char why[400];
	int rc;

	if ((fp = fopen(path, "r")) == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return KV_USAGE;
	}
	cfg = json_loadf(fp, 0, &je);
	fclose(fp);
	if (cfg == NULL) {
		snprintf(err, errlen, "%s:%d: invalid JSON: %s", path, je.line,
		    je.text);
		return KV_DATAERR;
	}
	rc = kvm_from_config(m, cfg, kv_dtype, why, sizeof(why));
	json_decref(cfg);
	if (rc != 0) {
		snprintf(err, errlen, "%s: %s", path, why);
		return KV_DATAERR;
	}
	return 0;
}

int
kvcfg_load_fit(const char *path, double *a, double *b, double *c, char *err,
    size_t errlen)
{
	struct jsonl_reader r;
	enum jsonl_status st;
	json_t *rec;
	FILE *fp;
	char why[256];
	int nfit = 0, rc = 0;

	if ((fp = fopen(path, "r")) == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return KV_USAGE;
	}
	jsonl_init(&r, fp, path, 0);
	while (rc == 0 && (st = jsonl_next(&r, &rec)) != JSONL_EOF) {
		if (st == JSONL_BAD) {
			snprintf(err, errlen, "%s:%zu: %s", path, r.lineno,
			    r.err);
			rc = KV_DATAERR;
			break;
		}
		if (json_object_get(rec, "prefill_b_s_per_token")) {
			double v[3] = { 0, 0, 0 };
			static const char *const k[] = { "prefill_a_s",
				"prefill_b_s_per_token",
				"prefill_c_s_per_token2" };

			for (int i = 0; i < 3 && rc == 0; i++)
				if (jf_num(rec, k[i], &v[i], why,
				    sizeof(why)) == JF_BAD) {
					snprintf(err, errlen, "%s:%zu: %s",
					    path, r.lineno, why);
					rc = KV_DATAERR;
				}
			*a = v[0];
			*b = v[1];
			*c = v[2];
			nfit++;
		}
		json_decref(rec);
	}
	jsonl_free(&r);
	fclose(fp);
	if (rc == 0 && nfit != 1) {
		snprintf(err, errlen, "%s: holds %d fit records, want exactly "
		    "one (select one with jq)", path, nfit);
		rc = KV_DATAERR;
	}
	return rc;
}
