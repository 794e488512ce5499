/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness: the model and the record evaluation of kv-bytes and
 * bcrit.  The first line is a config.json, each further line a record,
 * evaluated with and without that config and under several option sets.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "jsonl.h"
#include "kvmodel.h"
#include "kvrec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A finite Bcrit exactly when the state is ok (else null and a reason). */
static void
check_state(const json_t *rec, const char *skey, const char *bkey)
{
	const char *s = json_string_value(json_object_get(rec, skey));
	json_t *bc = json_object_get(rec, bkey);

	if (s == NULL || (strcmp(s, "ok") == 0) != json_is_number(bc))
		__builtin_trap();
}

/* Evaluate one record under opt with both filters, on copies. */
static void
eval(const json_t *rec, const struct kvrec_opt *opt)
{
	char err[512];
	json_t *a = json_deep_copy(rec), *b = json_deep_copy(rec);

	if (a && kvrec_bytes(a, opt, err, sizeof(err)) == 0 && b)
		(void)json_object_update(b, a);
	if (b && kvrec_bcrit(b, opt, err, sizeof(err)) == 0) {
		check_state(b, "state_serial", "bcrit_serial_bytes_per_s");
		check_state(b, "state_overlap", "bcrit_overlap_bytes_per_s");
	}
	json_decref(a);
	json_decref(b);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kvrec_opt opt = { .block = 16, .mfu = 1 };
	struct jsonl_reader r;
	struct kv_model m;
	json_t *cfg = NULL, *rec;
	char err[512];
	int have_m = 0, nrec = 0;
	FILE *fp;

	if (size == 0 || (fp = fmemopen((void *)data, size, "r")) == NULL)
		return 0;
	jsonl_init(&r, fp, "fuzz", 1 << 16);
	if (jsonl_next(&r, &cfg) == JSONL_OK)
		have_m = kvm_from_config(&m, cfg, NULL, err, sizeof(err)) == 0;
	if (have_m) {
		double n = 1 + fmod(fabs(kvm_bytes_per_token(&m)), 1e6);

		(void)kvm_bytes_for_tokens(&m, n);
		(void)kvm_prefill_flops(&m, n);
		(void)kvm_suffix_flops(&m, n, n / 2);
	}
	kvrec_parse_link("tcp=2.5GB/s", &opt.links[0], err, sizeof(err));
	while (nrec++ < 64 && jsonl_next(&r, &rec) != JSONL_EOF) {
		if (rec == NULL)
			continue;
		opt.model = NULL;
		opt.nlinks = 0;
		opt.flops_per_s = 0;
		eval(rec, &opt);
		opt.nlinks = 1;
		opt.flops_per_s = 1e15;
		opt.mfu = 0.5;
		eval(rec, &opt);
		if (have_m) {
			opt.model = &m;
			eval(rec, &opt);
		}
		opt.flops_per_s = 0;
		opt.have_fit = true;
		opt.fit_a = 0.01;
		opt.fit_b = 1e-5;
		opt.fit_c = 1e-10;
		eval(rec, &opt);
		opt.have_fit = false;
		json_decref(rec);
	}
	json_decref(cfg);
	jsonl_free(&r);
	fclose(fp);
	return 0;
}
