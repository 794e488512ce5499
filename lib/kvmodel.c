/* SPDX-License-Identifier: MIT */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "jsonl.h"
#include "kvmodel.h"

#define DIM_MAX 1e9	/* no real dimension, head or layer count is larger */

struct dtname {
	const char *name;
	double bytes;
};

static const struct dtname dtypes[] = {
	{ "fp32", 4 }, { "float32", 4 }, { "float", 4 },
	{ "bf16", 2 }, { "bfloat16", 2 },
	{ "fp16", 2 }, { "float16", 2 }, { "half", 2 },
	{ "fp8", 1 }, { "float8", 1 }, { "float8_e4m3fn", 1 },
	{ "float8_e4m3fnuz", 1 }, { "float8_e5m2", 1 }, { "fp8_e4m3", 1 },
	{ "fp8_e5m2", 1 }, { "int8", 1 }, { "uint8", 1 },
	{ NULL, 0 }
};

double
kvm_dtype_bytes(const char *name)
{
	if (name == NULL)
		return 0;
	if (strncmp(name, "torch.", 6) == 0)
		name += 6;
	for (const struct dtname *d = dtypes; d->name; d++)
		if (strcasecmp(d->name, name) == 0)
			return d->bytes;
	return 0;
}

/*
 * Find the first of names present (not null) in c.  Returns JF_ABSENT,
 * JF_OK with *v and *used, or JF_BAD when the value is not a
 * non-negative integer no larger than DIM_MAX.
 */
static enum jf_status
dim(const json_t *c, const char *const *names, double *v, char *err,
    size_t errlen)
{
	for (; *names; names++) {
		json_t *x = json_object_get(c, *names);
		double d;

		if (x == NULL || json_is_null(x))
			continue;
		d = json_is_number(x) ? json_number_value(x) : -1;
		if (!(d >= 0 && d <= DIM_MAX && d == floor(d))) {
			snprintf(err, errlen, "config field '%s' must be an "
			    "integer in 0..%.0f", *names, DIM_MAX);
			return JF_BAD;
		}
		*v = d;
		return JF_OK;
	}
	return JF_ABSENT;
}

/* Like dim(), but absence is an error naming the field (and aliases). */
static int
need(const json_t *c, const char *const *names, double *v, char *err,
    size_t errlen)
{
	enum jf_status st = dim(c, names, v, err, errlen);
	size_t off;

	if (st == JF_OK)
		return 0;
	if (st == JF_BAD)
		return -1;
	off = (size_t)snprintf(err, errlen, "missing field '%s'", names[0]);
	for (int i = 1; names[i] && off < errlen; i++)
		off += (size_t)snprintf(err + off, errlen - off, "%s'%s'",
		    i == 1 ? " (or " : ", ", names[i]);
	if (names[1] && off < errlen)
		snprintf(err + off, errlen - off, ")");
	return -1;
}

static const char *const F_LAYERS[] = { "num_hidden_layers", "n_layer",
	"num_layers", "n_layers", NULL };
static const char *const F_HEADS[] = { "num_attention_heads", "n_head",
	"num_heads", NULL };
static const char *const F_KVHEADS[] = { "num_key_value_heads", "n_head_kv",
	"num_kv_heads", NULL };
static const char *const F_HIDDEN[] = { "hidden_size", "n_embd", "d_model",
	NULL };
static const char *const F_HEADDIM[] = { "head_dim", NULL };
static const char *const F_FFN[] = { "intermediate_size", "n_inner",
	"ffn_dim", NULL };
static const char *const F_EXPERTS[] = { "n_routed_experts",
	"num_local_experts", "num_experts", NULL };
static const char *const F_TOPK[] = { "num_experts_per_tok", NULL };
static const char *const F_MOEFFN[] = { "moe_intermediate_size", NULL };
static const char *const F_NSHARED[] = { "n_shared_experts", NULL };
static const char *const F_SHAREDFFN[] = { "shared_expert_intermediate_size",
	NULL };
static const char *const F_DENSE[] = { "first_k_dense_replace", NULL };
static const char *const F_KVLORA[] = { "kv_lora_rank", NULL };
static const char *const F_QLORA[] = { "q_lora_rank", NULL };
static const char *const F_ROPE[] = { "qk_rope_head_dim", NULL };
static const char *const F_NOPE[] = { "qk_nope_head_dim", NULL };
static const char *const F_VDIM[] = { "v_head_dim", NULL };
static const char *const F_WINDOW[] = { "sliding_window", NULL };
static const char *const F_MAXWIN[] = { "max_window_layers", NULL };

/* MLPs with two matrices (up, down) instead of a gated three. */
static const char *const ungated[] = { "gpt_neox", "gpt2", "gptj",
	"gpt_bigcode", "opt", "bloom", "falcon", "phi", "starcoder2", NULL };

static bool
is_ungated(const json_t *c)
{
	const char *mt = json_string_value(json_object_get(c, "model_type"));

	for (int i = 0; mt && ungated[i]; i++)
		if (strcmp(mt, ungated[i]) == 0)
			return true;
	return false;
}

/* Set m->dtype_bytes from override, dtype or torch_dtype. */
static int
set_dtype(struct kv_model *m, const json_t *c, const json_t *outer,
    const char *override, char *err, size_t errlen)
{
	static const char *const keys[] = { "dtype", "torch_dtype" };
	const char *name = override, *key = "--kv-dtype";

	for (int pass = 0; name == NULL && pass < 2; pass++) {
		const json_t *o = pass == 0 ? c : outer;

		for (size_t i = 0; o && name == NULL && i < 2; i++) {
			json_t *v = json_object_get(o, keys[i]);

			if (v == NULL || json_is_null(v))
				continue;
			if (!json_is_string(v)) {
				snprintf(err, errlen, "config field '%s' must "
				    "be a string", keys[i]);
				return -1;
			}
			name = json_string_value(v);
			key = keys[i];
		}
	}
	if (name == NULL) {
		snprintf(err, errlen, "missing field 'torch_dtype' (or "
		    "'dtype', or give --kv-dtype)");
		return -1;
	}
	if ((m->dtype_bytes = kvm_dtype_bytes(name)) == 0) {
		snprintf(err, errlen, "%s '%s' unknown (use fp32, bf16, fp16, "
		    "fp8 or int8)", key, name);
		return -1;
	}
	return 0;
}

static const char *const F_PATTERN[] = { "sliding_window_pattern",
	"_sliding_window_pattern", NULL };

/*
 * Model types whose configs (before layer_types) mix windowed and full
 * layers by a rule of their own that this model does not guess.
 */
static const char *const mixed_types[] = { "cohere2", "exaone4", "gemma3n",
	"gpt_oss", "olmo3", NULL };

static bool
type_in(const char *mt, const char *const *list)
{
	for (int i = 0; mt && list[i]; i++)
		if (strcmp(mt, list[i]) == 0)
			return true;
	return false;
}

/* Count the layer_types entries "sliding_attention" into m->window_layers. */
static int
count_layer_types(struct kv_model *m, const json_t *types, char *err,
    size_t errlen)
{
	size_t i;
	json_t *t;

	if (!json_is_array(types) ||
	    (double)json_array_size(types) != m->layers) {
		snprintf(err, errlen, "config field 'layer_types' must be an "
		    "array of %.0f strings", m->layers);
		return -1;
	}
	json_array_foreach(types, i, t) {
		const char *s = json_string_value(t);

		if (s == NULL) {
			snprintf(err, errlen, "config field 'layer_types' must "
			    "hold strings");
			return -1;
		}
		if (strcmp(s, "sliding_attention") == 0)
			m->window_layers++;
	}
	return 0;
}

/*
 * Windowed layers of the Gemma family without layer_types, as
 * transformers builds them: Gemma-2 windows layer i when i % 2 == 0
 * (Gemma2Attention: is_sliding = not layer_idx % 2), so ceil(L/2) layers;
 * Gemma-3 windows layer i when (i + 1) % P != 0 for its
 * sliding_window_pattern P, so L − floor(L/P) layers.
 */
static int
gemma_window(struct kv_model *m, const json_t *c, const char *mt, double w,
    char *err, size_t errlen)
{
	enum jf_status st;
	double p = 0;

	m->window = w;
	if (strcmp(mt, "gemma2") == 0) {
		m->window_layers = ceil(m->layers / 2);
		return 0;
	}
	if ((st = dim(c, F_PATTERN, &p, err, errlen)) == JF_BAD)
		return -1;
	if (st == JF_ABSENT || p == 0) {
		snprintf(err, errlen, "missing field 'layer_types' (or "
		    "'sliding_window_pattern'): %s mixes windowed and full "
		    "layers", mt);
		return -1;
	}
	m->window_layers = m->layers - floor(m->layers / p);
	return 0;
}

/*
 * Sliding-window layers: per-layer layer_types ("sliding_attention");
 * else the Gemma rules above; else an error for a model type known to
 * mix windowed and full layers (or any config with a window pattern);
 * else sliding_window on all layers (Mistral) unless use_sliding_window
 * is false (Qwen2's default), where layers from max_window_layers on use
 * the window.
 */
static int
set_window(struct kv_model *m, const json_t *c, const char *mt, char *err,
    size_t errlen)
{
	static const char *const gemma[] = { "gemma2", "gemma3", "gemma3_text",
		NULL };
	const json_t *types = json_object_get(c, "layer_types");
	const json_t *use = json_object_get(c, "use_sliding_window");
	enum jf_status st;
	double w = 0, from = 0;

	if ((st = dim(c, F_WINDOW, &w, err, errlen)) == JF_BAD)
		return -1;
	if (types && !json_is_null(types)) {
		if (count_layer_types(m, types, err, errlen) != 0)
			return -1;
		if (m->window_layers > 0 && (st != JF_OK || w == 0)) {
			snprintf(err, errlen, "missing field 'sliding_window' "
			    "(layer_types has sliding_attention layers)");
			return -1;
		}
		m->window = m->window_layers > 0 ? w : 0;
		return 0;
	}
	if (st != JF_OK || w == 0)
		return 0;
	if (type_in(mt, gemma))
		return gemma_window(m, c, mt, w, err, errlen);
	if (type_in(mt, mixed_types) || dim(c, F_PATTERN, &from, err,
	    errlen) != JF_ABSENT) {
		snprintf(err, errlen, "missing field 'layer_types': model_type "
		    "'%s' mixes windowed and full layers; give layer_types "
		    "(\"sliding_attention\" or \"full_attention\" per layer)",
		    mt ? mt : "?");
		return -1;
	}
	if (use && !json_is_null(use) && !json_is_boolean(use)) {
		snprintf(err, errlen, "config field 'use_sliding_window' must "
		    "be true or false");
		return -1;
	}
	if (json_is_false(use) ||
	    ((use == NULL || json_is_null(use)) && mt && strncmp(mt, "qwen", 4) == 0))
		return 0;
	if (dim(c, F_MAXWIN, &from, err, errlen) == JF_BAD)
		return -1;
	m->window = w;
	m->window_layers = m->layers - fmin(from, m->layers);
	return 0;
}

/*
 * Non-embedding parameters (weights only; norms, biases and embeddings
 * left out): attention projections plus the MLP, MoE counted as the
 * routed experts a token uses (num_experts_per_tok), shared experts and
 * the router; params_total counts every expert.
 */
static int
set_params(struct kv_model *m, const json_t *c, double d, double attn,
    char *err, size_t errlen)
{
	double ffn = 0, experts = 0, topk = 0, moeffn = 0, nshared = 0;
	double sharedffn = 0, dense = 0, mlp, mats = is_ungated(c) ? 2 : 3;
	enum jf_status st;

	if ((st = dim(c, F_FFN, &ffn, err, errlen)) == JF_BAD)
		return -1;
	if (st == JF_ABSENT)
		ffn = 4 * d;
	if (dim(c, F_EXPERTS, &experts, err, errlen) == JF_BAD)
		return -1;
	mlp = mats * d * ffn;
	m->params = m->params_total = m->layers * (attn + mlp);
	if (experts == 0)
		return 0;
	m->moe = true;
	if (need(c, F_TOPK, &topk, err, errlen) != 0)
		return -1;
	if ((st = dim(c, F_MOEFFN, &moeffn, err, errlen)) == JF_BAD)
		return -1;
	if (st == JF_ABSENT)
		moeffn = ffn;
	if (dim(c, F_NSHARED, &nshared, err, errlen) == JF_BAD ||
	    dim(c, F_SHAREDFFN, &sharedffn, err, errlen) == JF_BAD ||
	    dim(c, F_DENSE, &dense, err, errlen) == JF_BAD)
		return -1;
	if (topk > experts) {
		snprintf(err, errlen, "config field 'num_experts_per_tok' "
		    "(%.0f) exceeds the expert count (%.0f)", topk, experts);
		return -1;
	}
	dense = fmin(dense, m->layers);
	{
		double shared = mats * d * (nshared * moeffn + sharedffn);
		double router = d * experts;
		double moe_l = m->layers - dense;

		m->params = dense * (attn + mlp) + moe_l * (attn + shared +
		    router + mats * d * moeffn * topk);
		m->params_total = dense * (attn + mlp) + moe_l * (attn +
		    shared + router + mats * d * moeffn * experts);
	}
	return 0;
}

/* MLA (kv_lora_rank present): the cache holds one latent per layer. */
static int
set_mla(struct kv_model *m, const json_t *c, double d, double heads,
    double *attn, char *err, size_t errlen)
{
	double rope, nope, vdim, qlora = 0, qk;

	if (need(c, F_KVLORA, &m->kv_lora_rank, err, errlen) != 0 ||
	    need(c, F_ROPE, &rope, err, errlen) != 0 ||
	    need(c, F_NOPE, &nope, err, errlen) != 0 ||
	    need(c, F_VDIM, &vdim, err, errlen) != 0 ||
	    dim(c, F_QLORA, &qlora, err, errlen) == JF_BAD)
		return -1;
	m->mla = true;
	m->qk_rope_head_dim = rope;
	m->kv_heads = 0;
	m->head_dim = 0;
	qk = nope + rope;
	/* QKᵀ uses qk = nope+rope per head, AV uses v_head_dim: the mean */
	m->d_attn = heads * (qk + vdim) / 2;
	*attn = (qlora > 0 ? d * qlora + qlora * heads * qk : d * heads * qk) +
	    d * (m->kv_lora_rank + rope) +
	    m->kv_lora_rank * heads * (nope + vdim) + heads * vdim * d;
	return 0;
}

int
kvm_from_config(struct kv_model *m, const json_t *cfg, const char *kv_dtype,
    char *err, size_t errlen)
{
	const json_t *c = cfg, *outer = NULL;
	const char *mt;
	double heads, d, attn;
	enum jf_status st;

	memset(m, 0, sizeof(*m));
	if (!json_is_object(cfg)) {
		snprintf(err, errlen, "config must be a JSON object");
		return -1;
	}
	/* multimodal configs keep the language model in text_config */
	if (json_object_get(c, "num_hidden_layers") == NULL &&
	    json_is_object(json_object_get(c, "text_config"))) {
		outer = c;
		c = json_object_get(c, "text_config");
	}
	if ((mt = json_string_value(json_object_get(c, "model_type"))) == NULL)
		mt = json_string_value(json_object_get(outer, "model_type"));
	if (need(c, F_LAYERS, &m->layers, err, errlen) != 0 ||
	    need(c, F_HEADS, &heads, err, errlen) != 0 ||
	    need(c, F_HIDDEN, &d, err, errlen) != 0 ||
	    set_dtype(m, c, outer, kv_dtype, err, errlen) != 0)
		return -1;
	if (m->layers == 0 || heads == 0 || d == 0) {
		snprintf(err, errlen, "config has zero layers, heads or "
		    "hidden_size");
		return -1;
	}
	if (json_object_get(c, "kv_lora_rank") &&
	    !json_is_null(json_object_get(c, "kv_lora_rank"))) {
		if (set_mla(m, c, d, heads, &attn, err, errlen) != 0)
			return -1;
	} else {
		if ((st = dim(c, F_KVHEADS, &m->kv_heads, err, errlen)) ==
		    JF_BAD)
			return -1;
		if (st == JF_ABSENT)	/* MHA, or Falcon's multi_query */
			m->kv_heads = json_is_true(json_object_get(c,
			    "multi_query")) ? 1 : heads;
		if ((st = dim(c, F_HEADDIM, &m->head_dim, err, errlen)) ==
		    JF_BAD)
			return -1;
		if (st == JF_ABSENT || m->head_dim == 0) {
			if (fmod(d, heads) != 0) {
				snprintf(err, errlen, "missing field 'head_dim' "
				    "(hidden_size %.0f is not a multiple of "
				    "num_attention_heads %.0f)", d, heads);
				return -1;
			}
			m->head_dim = d / heads;
		}
		m->d_attn = heads * m->head_dim;
		attn = 2 * d * m->d_attn + 2 * d * m->kv_heads * m->head_dim;
		if (set_window(m, c, mt, err, errlen) != 0)
			return -1;
	}
	return set_params(m, c, d, attn, err, errlen);
}

/* A required explicit field: a non-negative integer. */
static int
field(const json_t *rec, const char *key, bool required, double *v,
    char *err, size_t errlen)
{
	uint64_t u;
	enum jf_status st = jf_u64(rec, key, (uint64_t)DIM_MAX, &u, err,
	    errlen);

	if (st == JF_BAD)
		return -1;
	if (st == JF_ABSENT) {
		if (required) {
			snprintf(err, errlen, "missing field '%s'", key);
			return -1;
		}
		return 0;
	}
	*v = (double)u;
	return 0;
}

int
kvm_from_fields(struct kv_model *m, const json_t *rec, const char *kv_dtype,
    char *err, size_t errlen)
{
	const char *dt = kv_dtype;
	double heads = 0, p = 0;
	enum jf_status st;

	memset(m, 0, sizeof(*m));
	if (field(rec, "layers", true, &m->layers, err, errlen) != 0 ||
	    field(rec, "kv_heads", true, &m->kv_heads, err, errlen) != 0 ||
	    field(rec, "head_dim", true, &m->head_dim, err, errlen) != 0)
		return -1;
	if (dt == NULL) {
		if ((st = jf_str(rec, "dtype", &dt, err, errlen)) == JF_BAD)
			return -1;
		if (st == JF_ABSENT) {
			snprintf(err, errlen, "missing field 'dtype' (or give "
			    "--kv-dtype)");
			return -1;
		}
	}
	if ((m->dtype_bytes = kvm_dtype_bytes(dt)) == 0) {
		snprintf(err, errlen, "dtype '%s' unknown (use fp32, bf16, "
		    "fp16, fp8 or int8)", dt);
		return -1;
	}
	if (field(rec, "heads", false, &heads, err, errlen) != 0 ||
	    jf_num(rec, "params_nonembed", &p, err, errlen) == JF_BAD ||
	    field(rec, "sliding_window", false, &m->window, err, errlen) != 0)
		return -1;
	if (p < 0) {
		snprintf(err, errlen, "field 'params_nonembed' must not be "
		    "negative");
		return -1;
	}
	m->window_layers = m->window > 0 ? m->layers : 0;
	if (field(rec, "sliding_window_layers", false, &m->window_layers, err,
	    errlen) != 0)
		return -1;
	if (m->window_layers > m->layers) {
		snprintf(err, errlen, "field 'sliding_window_layers' exceeds "
		    "'layers'");
		return -1;
	}
	if (m->window == 0)
		m->window_layers = 0;
	m->d_attn = heads * m->head_dim;
	m->params = m->params_total = p;
	return 0;
}

/* Bytes one token adds to one layer. */
static double
layer_bytes(const struct kv_model *m)
{
	if (m->mla)
		return (m->kv_lora_rank + m->qk_rope_head_dim) * m->dtype_bytes;
	return 2 * m->kv_heads * m->head_dim * m->dtype_bytes;
}

double
kvm_bytes_per_token(const struct kv_model *m)
{
	return m->layers * layer_bytes(m);
}

double
kvm_bytes_for_tokens(const struct kv_model *m, double n)
{
	double full = m->layers - m->window_layers;

	return layer_bytes(m) * (full * n + m->window_layers *
	    fmin(n, m->window));
}

bool
kvm_has_flops(const struct kv_model *m)
{
	return m->params > 0 && m->d_attn > 0;
}

/* Attended (query, key) pairs ×2 of one layer: n², or 2Wn − W² past W. */
static double
pairs2(double n, double w)
{
	if (w <= 0 || n <= w)
		return n * n;
	return 2 * w * n - w * w;
}

double
kvm_prefill_flops(const struct kv_model *m, double n)
{
	double full = m->layers - m->window_layers;

	return 2 * m->params * n + 2 * m->d_attn * (full * n * n +
	    m->window_layers * pairs2(n, m->window));
}

double
kvm_suffix_flops(const struct kv_model *m, double n, double h)
{
	double full = m->layers - m->window_layers;

	return 2 * m->params * (n - h) + 2 * m->d_attn * (full * (n * n -
	    h * h) + m->window_layers * (pairs2(n, m->window) -
	    pairs2(h, m->window)));
}

uint64_t
kvm_hit_tokens(uint64_t n, double h, uint64_t blk)
{
	double x, blocks;
	uint64_t hb, cap;

	if (n == 0 || blk == 0 || !(h > 0))
		return 0;
	if (h > 1)
		h = 1;
	/*
	 * The largest b with b·blk <= h·n, h·n taken with a relative
	 * tolerance of 4 ulps for the rounding of h (0.7·160 lands on
	 * 111.99…, not 112); b·blk < 2^53 is exact.
	 */
	x = h * (double)n;
	blocks = floor(x / (double)blk);
	if ((blocks + 1) * (double)blk <= x * (1 + 4 * DBL_EPSILON))
		blocks++;
	cap = (n - 1) / blk;
	hb = blocks >= (double)cap ? cap : (uint64_t)blocks;
	return hb * blk;
}

const char *
bc_state_name(enum bc_state st)
{
	switch (st) {
	case BC_OK:
		return "ok";
	case BC_NO_HIT:
		return "no_hit";
	case BC_NO_PAYLOAD:
		return "no_payload";
	case BC_NEVER:
		return "never_profitable";
	case BC_OVERFLOW:
		return "overflow";
	}
	return "?";
}

/* S/den into *b when den > 0 and the quotient is finite; its state. */
static enum bc_state
crit(double s, double den, double *b)
{
	double q;

	if (!(den > 0))
		return BC_NEVER;
	if (!isfinite(q = s / den))
		return BC_OVERFLOW;
	*b = q;
	return BC_OK;
}

void
bc_eval(const struct bc_in *in, struct bc_out *out)
{
	double ds = in->t_full - (in->t_suffix + in->t_lookup);
	double dov = in->t_full - in->t_lookup;

	out->bcrit_serial = out->bcrit_overlap = NAN;
	if (!(in->hit_tokens > 0)) {
		out->st_serial = out->st_overlap = BC_NO_HIT;
		return;
	}
	if (!(in->hit_bytes > 0)) {
		out->st_serial = out->st_overlap = BC_NO_PAYLOAD;
		return;
	}
	out->st_serial = crit(in->hit_bytes, ds, &out->bcrit_serial);
	/* overlap is valid only when the suffix alone beats recompute */
	if (in->t_suffix + in->t_lookup < in->t_full)
		out->st_overlap = crit(in->hit_bytes, dov, &out->bcrit_overlap);
	else
		out->st_overlap = BC_NEVER;
}

void
bc_at(const struct bc_in *in, const struct bc_out *out, double bw,
    struct bc_link *lk)
{
	double load = in->hit_bytes > 0 ? in->hit_bytes / bw : 0;

	lk->t_serial = in->t_lookup + load + in->t_suffix;
	lk->t_overlap = in->t_lookup + fmax(load, in->t_suffix);
	lk->speedup_serial = lk->t_serial > 0 ? in->t_full / lk->t_serial : NAN;
	lk->speedup_overlap = lk->t_overlap > 0 ? in->t_full / lk->t_overlap :
	    NAN;
	lk->prof_serial = out->st_serial == BC_OK && bw > out->bcrit_serial;
	lk->prof_overlap = out->st_overlap == BC_OK &&
	    bw > out->bcrit_overlap;
}
