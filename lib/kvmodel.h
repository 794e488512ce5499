/* SPDX-License-Identifier: MIT */
#ifndef KV_KVMODEL_H
#define KV_KVMODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/*
 * The KV-cache model of a decoder-only transformer (DESIGN.md, "The
 * critical-bandwidth model"; man/kv-bytes.1 for the formulas).  Pure
 * computation: no I/O.  Every function that can fail returns 0, or -1
 * with the reason in err (naming the missing or bad field).
 */

#define KVM_MAX_TOKENS	(1ULL << 40)	/* largest token count accepted */

struct kv_model {
	double layers;		/* L */
	double kv_heads;	/* K/V heads (1 for MQA; 0 for MLA) */
	double head_dim;	/* K/V head dimension (non-MLA) */
	double dtype_bytes;	/* bytes per cached element */
	bool mla;		/* DeepSeek-V2/V3 multi-head latent attention */
	double kv_lora_rank, qk_rope_head_dim;	/* MLA latent and rope parts */
	double window;		/* sliding window in tokens; 0 = none */
	double window_layers;	/* layers that use the window */
	/* FLOPs: both 0 when the model does not say (explicit fields) */
	double d_attn;		/* per-layer attention width for 2·L·d_attn·n² */
	double params;		/* non-embedding parameters active per token */
	double params_total;	/* all non-embedding parameters (MoE: all experts) */
	bool moe;
};

/* Bytes per element of a dtype name (fp32, bf16, float16, fp8, int8, …); 0 if unknown. */
double kvm_dtype_bytes(const char *name);

/*
 * Describe the model of a Hugging Face config.json object.  kv_dtype, if
 * not NULL, overrides the config's dtype/torch_dtype.
 */
int kvm_from_config(struct kv_model *m, const json_t *cfg, const char *kv_dtype,
    char *err, size_t errlen);

/*
 * Describe the model from explicit record fields: layers, kv_heads,
 * head_dim, dtype (required; kv_dtype overrides dtype); heads and
 * params_nonembed (optional, for FLOPs); sliding_window and
 * sliding_window_layers (optional).
 */
int kvm_from_fields(struct kv_model *m, const json_t *rec, const char *kv_dtype,
    char *err, size_t errlen);

/* KV bytes one token adds across all layers (no window cap). */
double kvm_bytes_per_token(const struct kv_model *m);

/* KV bytes cached for n tokens: windowed layers hold at most window tokens. */
double kvm_bytes_for_tokens(const struct kv_model *m, double n);

/* Whether prefill FLOPs can be computed (params and d_attn known). */
bool kvm_has_flops(const struct kv_model *m);

/*
 * Prefill FLOPs of n tokens from scratch: 2·P·n + 2·d_attn·Σ_layers A(n),
 * A(n) = n² for a full-attention layer, and for a layer with window W
 * A(n) = n² when n ≤ W, else 2·W·n − W² (so L full layers give
 * 2·P·n + 2·L·d_attn·n²).
 */
double kvm_prefill_flops(const struct kv_model *m, double n);

/* FLOPs of tokens H..N with H cached: prefill(N) − prefill(H). */
double kvm_suffix_flops(const struct kv_model *m, double n, double h);

/*
 * Block-aligned hit tokens for hit rate h (0..1) of n prompt tokens:
 * floor(h·n/blk)·blk, never past floor((n−1)/blk)·blk so the block
 * holding the last prompt token is always computed.  0 when n is 0.
 * h·n within 4 ulps (relative) below a block boundary counts as on it.
 */
uint64_t kvm_hit_tokens(uint64_t n, double h, uint64_t blk);

/* --- the critical-bandwidth model -------------------------------------- */

enum bc_state { BC_OK = 0, BC_NO_HIT, BC_NO_PAYLOAD, BC_NEVER, BC_OVERFLOW };

struct bc_in {
	double hit_tokens;	/* H */
	double hit_bytes;	/* S_hit */
	double t_full;		/* T(N) */
	double t_suffix;	/* T_suffix */
	double t_lookup;	/* T_lookup */
};

struct bc_out {
	enum bc_state st_serial, st_overlap;
	double bcrit_serial, bcrit_overlap;	/* NAN where null */
};

/* Predictions at one bandwidth B (bytes/s, > 0). */
struct bc_link {
	bool prof_serial, prof_overlap;
	double t_serial, t_overlap;	/* T_lookup + S/B + T_suffix; T_lookup + max(S/B, T_suffix) */
	double speedup_serial, speedup_overlap;	/* T(N) / t */
};

/*
 * Critical bandwidths (DESIGN.md): serial Bcrit = S/(T(N) − T_suffix −
 * T_lookup); overlap Bcrit = S/(T(N) − T_lookup), valid only when
 * T_suffix + T_lookup < T(N).  States: no_hit (H = 0), no_payload
 * (S = 0), never_profitable (denominator ≤ 0, or overlap invalid),
 * overflow (denominator > 0 but S/denominator exceeds the largest
 * double: no representable bandwidth is above it), ok.  Bcrit is NAN
 * unless the state is ok.
 */
void bc_eval(const struct bc_in *in, struct bc_out *out);

/* Verdicts and times at bandwidth B: profitable = state ok && B > Bcrit. */
void bc_at(const struct bc_in *in, const struct bc_out *out, double bw,
    struct bc_link *lk);

const char *bc_state_name(enum bc_state st);

#endif
