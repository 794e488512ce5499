/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "jsonl.h"
#include "kvrec.h"
#include "units.h"

int
kvrec_model(const json_t *rec, const struct kvrec_opt *opt, bool optional,
    struct kv_model *m, char *err, size_t errlen)
{
	const json_t *cfg;

	if (opt->model) {
		*m = *opt->model;
		return 1;
	}
	cfg = json_object_get(rec, "config");
	if (cfg && !json_is_null(cfg)) {
		if (!json_is_object(cfg)) {
			snprintf(err, errlen, "field 'config' must be an object");
			return -1;
		}
		return kvm_from_config(m, cfg, opt->kv_dtype, err, errlen) ? -1 : 1;
	}
	if (optional && json_object_get(rec, "layers") == NULL)
		return 0;
	return kvm_from_fields(m, rec, opt->kv_dtype, err, errlen) ? -1 : 1;
}

/* Prompt tokens: 1 with *n, 0 when absent, -1 on error. */
static int
get_tokens(const json_t *rec, uint64_t *n, char *err, size_t errlen)
{
	enum jf_status st = jf_u64(rec, "tokens", KVM_MAX_TOKENS, n, err,
	    errlen);

	return st == JF_BAD ? -1 : st == JF_OK;
}

/*
 * Hit tokens from hit_tokens, or from hit_rate block-aligned (then
 * *derived).  1 with *h, 0 when neither is given, -1 on error.
 */
static int
get_hit(const json_t *rec, const struct kvrec_opt *opt, int have_n, uint64_t n,
    uint64_t *h, bool *derived, char *err, size_t errlen)
{
	enum jf_status st;
	double rate;

	*derived = false;
	st = jf_u64(rec, "hit_tokens", KVM_MAX_TOKENS, h, err, errlen);
	if (st == JF_BAD)
		return -1;
	if (st == JF_OK) {
		if (have_n && *h > 0 && *h >= n) {
			snprintf(err, errlen, "hit_tokens must be < tokens: "
			    "the last prompt token is always computed "
			    "(hit_tokens %llu, tokens %llu)",
			    (unsigned long long)*h,
			    (unsigned long long)n);
			return -1;
		}
		return 1;
	}
	if ((st = jf_num(rec, "hit_rate", &rate, err, errlen)) != JF_OK)
		return st == JF_BAD ? -1 : 0;
	if (rate < 0 || rate > 1) {
		snprintf(err, errlen, "field 'hit_rate' must be in 0..1");
		return -1;
	}
	if (!have_n) {
		snprintf(err, errlen, "missing field 'tokens' (needed with "
		    "'hit_rate')");
		return -1;
	}
	*h = kvm_hit_tokens(n, rate, opt->block);
	*derived = true;
	return 1;
}

int
kvrec_bytes(json_t *rec, const struct kvrec_opt *opt, char *err,
    size_t errlen)
{
	struct kv_model m;
	uint64_t n = 0, h = 0;
	int have_n, have_h;
	bool derived;
	double bpt;

	if (kvrec_model(rec, opt, false, &m, err, errlen) < 0 ||
	    (have_n = get_tokens(rec, &n, err, errlen)) < 0 ||
	    (have_h = get_hit(rec, opt, have_n, n, &h, &derived, err,
	    errlen)) < 0)
		return -1;
	bpt = kvm_bytes_per_token(&m);
	if (jset_num(rec, "kv_bytes_per_token", bpt) ||
	    jset_num(rec, "kv_bytes_per_block", bpt * (double)opt->block) ||
	    (have_n && jset_num(rec, "kv_bytes",
	    kvm_bytes_for_tokens(&m, (double)n))) ||
	    (derived && jset_u64(rec, "hit_tokens", h)) ||
	    (have_h && jset_num(rec, "hit_bytes",
	    kvm_bytes_for_tokens(&m, (double)h))) ||
	    (m.params > 0 && jset_num(rec, "params_nonembed", m.params)) ||
	    (m.moe && jset_num(rec, "params_nonembed_total", m.params_total)))
		goto nomem;
	if (have_n && kvm_has_flops(&m)) {
		if (jset_num(rec, "prefill_flops",
		    kvm_prefill_flops(&m, (double)n)) ||
		    (have_h && jset_num(rec, "suffix_flops",
		    kvm_suffix_flops(&m, (double)n, (double)h))))
			goto nomem;
	}
	return 0;
nomem:
	snprintf(err, errlen, "out of memory");
	return -1;
}

/* S_hit: from the model, the record's hit_bytes, or kv_bytes_per_token. */
static int
hit_bytes(const json_t *rec, const struct kv_model *m, int have_m, uint64_t h,
    bool derived, double *s, char *err, size_t errlen)
{
	enum jf_status st;
	double bpt;

	if (have_m) {
		*s = kvm_bytes_for_tokens(m, (double)h);
		return 0;
	}
	if (!derived && (st = jf_num(rec, "hit_bytes", s, err, errlen)) !=
	    JF_ABSENT) {
		if (st == JF_OK && *s < 0)
			snprintf(err, errlen, "field 'hit_bytes' must not be "
			    "negative");
		return st == JF_OK && *s >= 0 ? 0 : -1;
	}
	if ((st = jf_num(rec, "kv_bytes_per_token", &bpt, err, errlen)) ==
	    JF_OK && bpt >= 0) {
		*s = bpt * (double)h;
		return 0;
	}
	if (st == JF_OK)
		snprintf(err, errlen, "field 'kv_bytes_per_token' must not be "
		    "negative");
	else if (st == JF_ABSENT)
		snprintf(err, errlen, "missing field 'kv_bytes_per_token' (or "
		    "'hit_bytes', a 'config', or --config)");
	return -1;
}

/* A non-negative time field: 1 with *t, 0 absent, -1 bad. */
static int
tfield(const json_t *rec, const char *key, double *t, char *err,
    size_t errlen)
{
	enum jf_status st = jf_num(rec, key, t, err, errlen);

	if (st == JF_OK && *t < 0) {
		snprintf(err, errlen, "field '%s' must not be negative", key);
		return -1;
	}
	return st == JF_BAD ? -1 : st == JF_OK;
}

/* T(N) and T_suffix from FLOPs at flops_per_s·mfu. */
static int
flops_times(const json_t *rec, const struct kvrec_opt *opt,
    const struct kv_model *m, int have_m, uint64_t n, uint64_t h,
    bool derived, struct bc_in *in, char *err, size_t errlen)
{
	double rate = opt->flops_per_s * opt->mfu, fn, fs;
	int r;

	if (have_m && kvm_has_flops(m)) {
		fn = kvm_prefill_flops(m, (double)n);
		fs = kvm_suffix_flops(m, (double)n, (double)h);
	} else {
		if ((r = tfield(rec, "prefill_flops", &fn, err, errlen)) <= 0) {
			if (r == 0)
				snprintf(err, errlen, "missing field "
				    "'prefill_flops' (or a model with "
				    "params_nonembed and heads)");
			return -1;
		}
		if (derived || (r = tfield(rec, "suffix_flops", &fs, err,
		    errlen)) == 0) {
			snprintf(err, errlen, "missing field 'suffix_flops' "
			    "for hit_tokens %llu", (unsigned long long)h);
			return -1;
		}
		if (r < 0)
			return -1;
	}
	in->t_full = fn / rate;
	in->t_suffix = fs / rate;
	return 0;
}

/*
 * Fit coefficients on the record into coef (a, b, c).  A record with any
 * of them must have prefill_b_s_per_token, and with fit's "degree" the
 * whole set for that degree; other absent ones are 0.  1 when present,
 * 0 when none is, -1 on error (naming what is missing).
 */
static int
record_fit(const json_t *rec, double coef[3], char *err, size_t errlen)
{
	static const char *const fk[] = { "prefill_a_s",
		"prefill_b_s_per_token", "prefill_c_s_per_token2" };
	enum jf_status st[3];
	double v[3] = { 0, 0, 0 };
	uint64_t deg = 0;
	int first = -1;

	for (int i = 0; i < 3; i++) {
		if ((st[i] = jf_num(rec, fk[i], &v[i], err, errlen)) == JF_BAD)
			return -1;
		if (st[i] == JF_OK && first < 0)
			first = i;
	}
	if (first < 0)
		return 0;
	if (jf_u64(rec, "degree", 2, &deg, err, errlen) == JF_BAD)
		return -1;
	for (int i = 0; i < 3; i++) {
		bool need = i == 1 || (deg > 0 && (i == 0 ||
		    (uint64_t)i <= deg));

		if (need && st[i] == JF_ABSENT) {
			snprintf(err, errlen, "missing field '%s' (fit fields "
			    "on the record need %s; found '%s')", fk[i], deg ?
			    (deg == 1 ? "prefill_a_s and prefill_b_s_per_token"
			    " for degree 1" : "all three for degree 2") :
			    "prefill_b_s_per_token", fk[first]);
			return -1;
		}
	}
	memcpy(coef, v, sizeof(v));
	return 1;
}

/*
 * Whether t_full_s/t_suffix_s on rec are measured: yes unless the record
 * says otherwise in t_source (bcrit's own output fed back in says "fit"
 * or "flops").  1 measured, 0 not (*prev gets the source), -1 bad.
 */
static int
measured_times(const json_t *rec, const char **prev, char *err,
    size_t errlen)
{
	enum jf_status st = jf_str(rec, "t_source", prev, err, errlen);

	if (st == JF_BAD)
		return -1;
	return st == JF_ABSENT || strcmp(*prev, "measured") == 0;
}

/*
 * Fill in->t_full and in->t_suffix: measured, else fit, else FLOPs, else
 * (times on the record that were not measured) those times under their
 * own source.  *src names the source.
 */
static int
times(const json_t *rec, const struct kvrec_opt *opt, const struct kv_model *m,
    int have_m, uint64_t n, uint64_t h, bool derived, struct bc_in *in,
    const char **src, char *err, size_t errlen)
{
	double coef[3] = { opt->fit_a, opt->fit_b, opt->fit_c };
	const char *prev = NULL;
	int rf, rs, rfit, meas;

	if ((meas = measured_times(rec, &prev, err, errlen)) < 0 ||
	    (rf = tfield(rec, "t_full_s", &in->t_full, err, errlen)) < 0 ||
	    (rs = tfield(rec, "t_suffix_s", &in->t_suffix, err, errlen)) < 0)
		return -1;
	if (rf != rs) {
		snprintf(err, errlen, "missing field '%s' (%s times need both)",
		    rf ? "t_suffix_s" : "t_full_s", meas ? "measured" : prev);
		return -1;
	}
	if (rf && meas) {
		*src = "measured";
		return 0;
	}
	if ((rfit = record_fit(rec, coef, err, errlen)) < 0)
		return -1;
	if (rfit || opt->have_fit) {
		double N = (double)n, H = (double)h;

		in->t_full = coef[0] + coef[1] * N + coef[2] * N * N;
		in->t_suffix = in->t_full - (coef[1] * H + coef[2] * H * H);
		*src = "fit";
		return 0;
	}
	if (opt->flops_per_s > 0) {
		*src = "flops";
		return flops_times(rec, opt, m, have_m, n, h, derived, in, err,
		    errlen);
	}
	if (rf) {	/* not measured, and no source here to recompute */
		*src = prev;
		return 0;
	}
	snprintf(err, errlen, "missing field 't_full_s' (no prefill time: "
	    "give t_full_s and t_suffix_s, fit coefficients or --fit, or "
	    "--flops-per-s)");
	return -1;
}

/* Verdict fields at one bandwidth into o. */
static int
set_link(json_t *o, const struct bc_in *in, const struct bc_out *out,
    double bw)
{
	struct bc_link lk;

	bc_at(in, out, bw, &lk);
	return jset_bool(o, "profitable_serial", lk.prof_serial) ||
	    jset_bool(o, "profitable_overlap", lk.prof_overlap) ||
	    jset_num(o, "t_serial_s", lk.t_serial) ||
	    jset_num(o, "t_overlap_s", lk.t_overlap) ||
	    jset_num(o, "speedup_serial", lk.speedup_serial) ||
	    jset_num(o, "speedup_overlap", lk.speedup_overlap);
}

/* Write bcrit's output fields. */
static int
set_bcrit(json_t *rec, const struct kvrec_opt *opt, const struct bc_in *in,
    const struct bc_out *out, const char *src, int have_bw, double bw)
{
	json_t *links;

	if (jset_num(rec, "hit_tokens", in->hit_tokens) ||
	    jset_num(rec, "hit_bytes", in->hit_bytes) ||
	    jset_num(rec, "t_full_s", in->t_full) ||
	    jset_num(rec, "t_suffix_s", in->t_suffix) ||
	    jset_num(rec, "t_lookup_s", in->t_lookup) ||
	    jset_str(rec, "t_source", src) ||
	    jset_num(rec, "bcrit_serial_bytes_per_s", out->bcrit_serial) ||
	    jset_num(rec, "bcrit_overlap_bytes_per_s", out->bcrit_overlap) ||
	    jset_str(rec, "state_serial", bc_state_name(out->st_serial)) ||
	    jset_str(rec, "state_overlap", bc_state_name(out->st_overlap)) ||
	    (have_bw && set_link(rec, in, out, bw)))
		return -1;
	if (opt->nlinks == 0)
		return 0;
	if ((links = json_object()) == NULL ||
	    json_object_set_new(rec, "links", links) != 0)
		return -1;
	for (size_t i = 0; i < opt->nlinks; i++) {
		json_t *o = json_object();

		if (o == NULL || json_object_set_new(links, opt->links[i].name,
		    o) != 0 ||
		    jset_num(o, "bw_bytes_per_s", opt->links[i].bw) ||
		    set_link(o, in, out, opt->links[i].bw))
			return -1;
	}
	return 0;
}

int
kvrec_bcrit(json_t *rec, const struct kvrec_opt *opt, char *err,
    size_t errlen)
{
	struct bc_in in = { 0 };
	struct bc_out out;
	struct kv_model m;
	uint64_t n, h;
	const char *src = "";
	int have_m, r, have_bw;
	bool derived;
	double bw = 0;

	if ((r = get_tokens(rec, &n, err, errlen)) <= 0) {
		if (r == 0)
			snprintf(err, errlen, "missing field 'tokens'");
		return -1;
	}
	if ((r = get_hit(rec, opt, 1, n, &h, &derived, err, errlen)) <= 0) {
		if (r == 0)
			snprintf(err, errlen, "missing field 'hit_tokens' (or "
			    "'hit_rate')");
		return -1;
	}
	if ((have_m = kvrec_model(rec, opt, true, &m, err, errlen)) < 0 ||
	    hit_bytes(rec, &m, have_m, h, derived, &in.hit_bytes, err,
	    errlen) != 0 ||
	    times(rec, opt, &m, have_m, n, h, derived, &in, &src, err,
	    errlen) != 0 ||
	    (r = tfield(rec, "t_lookup_s", &in.t_lookup, err, errlen)) < 0 ||
	    (have_bw = tfield(rec, "bw_bytes_per_s", &bw, err, errlen)) < 0)
		return -1;
	if (r == 0)
		in.t_lookup = opt->t_lookup;
	if (have_bw && bw <= 0) {
		snprintf(err, errlen, "field 'bw_bytes_per_s' must be positive");
		return -1;
	}
	if (!(in.t_full > 0) || !isfinite(in.t_full) || !(in.t_suffix >= 0) ||
	    !isfinite(in.t_suffix)) {
		snprintf(err, errlen, "prefill times out of range: T(N) %g s, "
		    "T_suffix %g s (need T(N) > 0, T_suffix >= 0)", in.t_full,
		    in.t_suffix);
		return -1;
	}
	in.hit_tokens = (double)h;
	bc_eval(&in, &out);
	if (set_bcrit(rec, opt, &in, &out, src, have_bw, bw) != 0) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

int
kvrec_parse_link(const char *arg, struct kvrec_link *lk, char *err,
    size_t errlen)
{
	const char *eq = strchr(arg, '=');
	size_t len = eq ? (size_t)(eq - arg) : 0;

	if (eq == NULL || len == 0 || len >= sizeof(lk->name)) {
		snprintf(err, errlen, "'%s': want NAME=BANDWIDTH, e.g. "
		    "rdma=23GB/s", arg);
		return -1;
	}
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)arg[i]) && arg[i] != '_' &&
		    arg[i] != '-') {
			snprintf(err, errlen, "'%.*s': link names use letters, "
			    "digits, '_' and '-'", (int)len, arg);
			return -1;
		}
	memcpy(lk->name, arg, len);
	lk->name[len] = '\0';
	if (kv_parse_bw(eq + 1, &lk->bw, err, errlen) != 0)
		return -1;
	if (!(lk->bw > 0)) {
		snprintf(err, errlen, "link '%s': bandwidth must be positive",
		    lk->name);
		return -1;
	}
	return 0;
}
