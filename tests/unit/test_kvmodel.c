/* SPDX-License-Identifier: MIT */
/* Unit tests of lib/kvmodel and lib/kvrec: reference values, states, boundaries. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "kvmodel.h"
#include "kvrec.h"
#include "unit.h"

static const char PYTHIA[] = "{\"model_type\":\"gpt_neox\",\"hidden_size\":128,"
    "\"intermediate_size\":512,\"num_attention_heads\":4,"
    "\"num_hidden_layers\":6,\"torch_dtype\":\"float16\",\"vocab_size\":50304}";
static const char QWEN[] = "{\"model_type\":\"qwen2\",\"hidden_size\":3584,"
    "\"intermediate_size\":18944,\"max_window_layers\":28,"
    "\"num_attention_heads\":28,\"num_hidden_layers\":28,"
    "\"num_key_value_heads\":4,\"sliding_window\":131072,"
    "\"torch_dtype\":\"bfloat16\",\"use_sliding_window\":false}";
static const char LLAMA[] = "{\"model_type\":\"llama\",\"hidden_size\":4096,"
    "\"intermediate_size\":14336,\"num_attention_heads\":32,"
    "\"num_hidden_layers\":32,\"num_key_value_heads\":8,"
    "\"torch_dtype\":\"bfloat16\"}";
static const char MISTRAL[] = "{\"model_type\":\"mistral\",\"hidden_size\":4096,"
    "\"intermediate_size\":14336,\"num_attention_heads\":32,"
    "\"num_hidden_layers\":32,\"num_key_value_heads\":8,"
    "\"sliding_window\":4096,\"torch_dtype\":\"bfloat16\"}";
static const char DSV3[] = "{\"model_type\":\"deepseek_v3\",\"hidden_size\":7168,"
    "\"intermediate_size\":18432,\"kv_lora_rank\":512,"
    "\"moe_intermediate_size\":2048,\"n_routed_experts\":256,"
    "\"n_shared_experts\":1,\"first_k_dense_replace\":3,"
    "\"num_attention_heads\":128,\"num_experts_per_tok\":8,"
    "\"num_hidden_layers\":61,\"num_key_value_heads\":128,"
    "\"q_lora_rank\":1536,\"qk_nope_head_dim\":128,\"qk_rope_head_dim\":64,"
    "\"torch_dtype\":\"bfloat16\",\"v_head_dim\":128}";
static const char GEMMA[] = "{\"model_type\":\"gemma\",\"head_dim\":256,"
    "\"hidden_size\":3072,\"intermediate_size\":24576,"
    "\"num_attention_heads\":16,\"num_hidden_layers\":28,"
    "\"num_key_value_heads\":16,\"torch_dtype\":\"bfloat16\"}";
static const char FALCON_MQA[] = "{\"model_type\":\"falcon\",\"hidden_size\":4544,"
    "\"num_attention_heads\":71,\"num_hidden_layers\":32,"
    "\"multi_query\":true,\"torch_dtype\":\"bfloat16\"}";

/* Describe the model of JSON text; 0 or -1 with err. */
static int
model(const char *text, const char *dt, struct kv_model *m, char *err,
    size_t errlen)
{
	json_t *c = json_loads(text, 0, NULL);
	int rc;

	if (c == NULL) {
		snprintf(err, errlen, "test JSON invalid");
		return -1;
	}
	rc = kvm_from_config(m, c, dt, err, errlen);
	json_decref(c);
	return rc;
}

/* The error text for a config edited by jq-like deletion of key. */
static const char *
err_without(const char *text, const char *key)
{
	static char err[256];
	struct kv_model m;
	json_t *c = json_loads(text, 0, NULL);

	err[0] = '\0';
	json_object_del(c, key);
	if (kvm_from_config(&m, c, NULL, err, sizeof(err)) == 0)
		snprintf(err, sizeof(err), "(accepted)");
	json_decref(c);
	return err;
}

static void
test_reference_values(void)
{
	struct kv_model m;
	char err[256];

	CHECK(model(PYTHIA, NULL, &m, err, sizeof(err)) == 0);
	CHECK(kvm_bytes_per_token(&m) == 3072);
	CHECK(kvm_hit_tokens(1024, 1.0, 16) == 1008);
	CHECK(kvm_bytes_for_tokens(&m, 1008) == 3096576);
	CHECK(kvm_bytes_for_tokens(&m, 63 * 16) == 3096576);
	CHECK(m.params == 6 * (4.0 * 128 * 128 + 2.0 * 128 * 512));

	CHECK(model(QWEN, NULL, &m, err, sizeof(err)) == 0);
	CHECK(kvm_bytes_per_token(&m) == 57344);
	CHECK(m.window_layers == 0);	/* use_sliding_window false */
	CHECK(kvm_bytes_for_tokens(&m, 131072) == 57344.0 * 131072);
	CHECK(m.params == 6525288448.0);

	CHECK(model(LLAMA, NULL, &m, err, sizeof(err)) == 0);
	CHECK(kvm_bytes_per_token(&m) == 131072);

	CHECK(model(DSV3, NULL, &m, err, sizeof(err)) == 0);
	CHECK(m.mla);
	CHECK(kvm_bytes_per_token(&m) == 70272);
	CHECK(kvm_bytes_for_tokens(&m, 1000) == 70272000);
	CHECK(m.d_attn == 128 * (192 + 128) / 2);
	CHECK(m.moe);
	/* 3 dense + 58 MoE layers of 8 routed + 1 shared expert and a router */
	{
		double attn = 7168.0 * 1536 + 1536.0 * 128 * 192 +
		    7168.0 * 576 + 512.0 * 128 * 256 + 128.0 * 128 * 7168;
		double dense = attn + 3 * 7168.0 * 18432;
		double moe = attn + 3 * 7168.0 * 2048 * 9 + 7168.0 * 256;

		CHECK(m.params == 3 * dense + 58 * moe);
		CHECK(m.params_total > 15 * m.params);
	}

	CHECK(model(GEMMA, NULL, &m, err, sizeof(err)) == 0);
	CHECK(m.head_dim == 256);	/* not 3072/16 = 192 */
	CHECK(kvm_bytes_per_token(&m) == 28 * 16 * 256 * 2 * 2);

	CHECK(model(FALCON_MQA, NULL, &m, err, sizeof(err)) == 0);
	CHECK(m.kv_heads == 1 && m.head_dim == 64);
	CHECK(kvm_bytes_per_token(&m) == 32 * 1 * 64 * 2 * 2);
}

static void
test_dtypes(void)
{
	struct kv_model m;
	char err[256];

	CHECK(kvm_dtype_bytes("fp32") == 4 && kvm_dtype_bytes("float32") == 4);
	CHECK(kvm_dtype_bytes("bf16") == 2 && kvm_dtype_bytes("torch.bfloat16") == 2);
	CHECK(kvm_dtype_bytes("fp16") == 2 && kvm_dtype_bytes("FP8") == 1);
	CHECK(kvm_dtype_bytes("int8") == 1 && kvm_dtype_bytes("float8_e4m3fn") == 1);
	CHECK(kvm_dtype_bytes("fp4") == 0 && kvm_dtype_bytes(NULL) == 0);
	CHECK(model(LLAMA, "fp8", &m, err, sizeof(err)) == 0);
	CHECK(kvm_bytes_per_token(&m) == 65536);
	CHECK(model(LLAMA, "fp32", &m, err, sizeof(err)) == 0);
	CHECK(kvm_bytes_per_token(&m) == 262144);
	CHECK(model("{\"num_hidden_layers\":2,\"num_attention_heads\":2,"
	    "\"hidden_size\":8,\"dtype\":\"float32\"}", NULL, &m, err,
	    sizeof(err)) == 0);
	CHECK(m.dtype_bytes == 4);
	CHECK(model("{\"num_hidden_layers\":2,\"num_attention_heads\":2,"
	    "\"hidden_size\":8,\"torch_dtype\":\"complex64\"}", NULL, &m, err,
	    sizeof(err)) == -1 && strstr(err, "complex64") != NULL);
	/* a multimodal wrapper: the language model in text_config */
	CHECK(model("{\"torch_dtype\":\"bfloat16\",\"text_config\":"
	    "{\"num_hidden_layers\":2,\"num_attention_heads\":2,"
	    "\"num_key_value_heads\":1,\"hidden_size\":8}}", NULL, &m, err,
	    sizeof(err)) == 0);
	CHECK(kvm_bytes_per_token(&m) == 2 * 1 * 4 * 2 * 2);
}

static void
test_missing_fields(void)
{
	CHECK(strstr(err_without(LLAMA, "num_hidden_layers"),
	    "'num_hidden_layers'") != NULL);
	CHECK(strstr(err_without(LLAMA, "num_attention_heads"),
	    "'num_attention_heads'") != NULL);
	CHECK(strstr(err_without(LLAMA, "hidden_size"), "'hidden_size'") != NULL);
	CHECK(strstr(err_without(LLAMA, "torch_dtype"), "'torch_dtype'") != NULL);
	CHECK(strstr(err_without(DSV3, "qk_rope_head_dim"),
	    "'qk_rope_head_dim'") != NULL);
	CHECK(strstr(err_without(DSV3, "v_head_dim"), "'v_head_dim'") != NULL);
	CHECK(strstr(err_without(DSV3, "num_experts_per_tok"),
	    "'num_experts_per_tok'") != NULL);
	/* MHA: no num_key_value_heads means one K/V head per query head */
	CHECK(strcmp(err_without(LLAMA, "num_key_value_heads"), "(accepted)") == 0);
	{
		struct kv_model m;
		char err[256];

		CHECK(model("{\"num_hidden_layers\":2,\"num_attention_heads\":3,"
		    "\"hidden_size\":8,\"torch_dtype\":\"bfloat16\"}", NULL,
		    &m, err, sizeof(err)) == -1 &&
		    strstr(err, "'head_dim'") != NULL);
		CHECK(model("{\"num_hidden_layers\":-2,\"num_attention_heads\":2,"
		    "\"hidden_size\":8,\"torch_dtype\":\"bfloat16\"}", NULL,
		    &m, err, sizeof(err)) == -1 &&
		    strstr(err, "num_hidden_layers") != NULL);
		CHECK(model("{\"num_hidden_layers\":\"2\",\"num_attention_heads\":2,"
		    "\"hidden_size\":8,\"torch_dtype\":\"bfloat16\"}", NULL,
		    &m, err, sizeof(err)) == -1);
		CHECK(model("[1]", NULL, &m, err, sizeof(err)) == -1);
	}
}

static void
test_windows(void)
{
	struct kv_model m;
	char err[256];
	json_t *c;

	/* Mistral v0.1: every layer keeps at most 4096 tokens */
	CHECK(model(MISTRAL, NULL, &m, err, sizeof(err)) == 0);
	CHECK(m.window == 4096 && m.window_layers == 32);
	CHECK(kvm_bytes_per_token(&m) == 131072);
	CHECK(kvm_bytes_for_tokens(&m, 1000) == 131072.0 * 1000);
	CHECK(kvm_bytes_for_tokens(&m, 32768) == 131072.0 * 4096);

	/* Qwen2 with the window on: layers from max_window_layers on */
	c = json_loads(QWEN, 0, NULL);
	json_object_set_new(c, "use_sliding_window", json_true());
	json_object_set_new(c, "sliding_window", json_integer(4096));
	json_object_set_new(c, "max_window_layers", json_integer(20));
	CHECK(kvm_from_config(&m, c, NULL, err, sizeof(err)) == 0);
	CHECK(m.window_layers == 8);
	CHECK(kvm_bytes_for_tokens(&m, 8192) ==
	    2048.0 * (20 * 8192 + 8 * 4096));
	/* Qwen2 without use_sliding_window: the default is off */
	json_object_del(c, "use_sliding_window");
	CHECK(kvm_from_config(&m, c, NULL, err, sizeof(err)) == 0);
	CHECK(m.window_layers == 0);
	json_decref(c);

	/* per-layer layer_types */
	CHECK(model("{\"num_hidden_layers\":4,\"num_attention_heads\":2,"
	    "\"hidden_size\":8,\"torch_dtype\":\"bfloat16\","
	    "\"sliding_window\":512,\"layer_types\":[\"sliding_attention\","
	    "\"full_attention\",\"sliding_attention\",\"full_attention\"]}",
	    NULL, &m, err, sizeof(err)) == 0);
	CHECK(m.window_layers == 2 && m.window == 512);
	CHECK(kvm_bytes_for_tokens(&m, 1000) == 32.0 * (2 * 1000 + 2 * 512));
	CHECK(model("{\"num_hidden_layers\":4,\"num_attention_heads\":2,"
	    "\"hidden_size\":8,\"torch_dtype\":\"bfloat16\","
	    "\"sliding_window\":512,\"layer_types\":[\"sliding_attention\"]}",
	    NULL, &m, err, sizeof(err)) == -1 &&
	    strstr(err, "layer_types") != NULL);
	CHECK(model("{\"num_hidden_layers\":1,\"num_attention_heads\":2,"
	    "\"hidden_size\":8,\"torch_dtype\":\"bfloat16\","
	    "\"layer_types\":[\"sliding_attention\"]}", NULL, &m, err,
	    sizeof(err)) == -1 && strstr(err, "'sliding_window'") != NULL);

	/* Gemma-2 without layer_types: layers 0, 2, 4, ... are windowed */
	CHECK(model("{\"model_type\":\"gemma2\",\"num_hidden_layers\":3,"
	    "\"num_attention_heads\":2,\"hidden_size\":8,\"torch_dtype\":"
	    "\"bfloat16\",\"sliding_window\":512}", NULL, &m, err,
	    sizeof(err)) == 0);
	CHECK(m.window == 512 && m.window_layers == 2);
	CHECK(kvm_bytes_for_tokens(&m, 1000) == 32.0 * (1 * 1000 + 2 * 512));
	/* Gemma-3: (i+1) % P != 0 windowed: P = 6, 13 layers: 11 windowed */
	CHECK(model("{\"model_type\":\"gemma3_text\",\"num_hidden_layers\":13,"
	    "\"num_attention_heads\":2,\"hidden_size\":8,\"torch_dtype\":"
	    "\"bfloat16\",\"sliding_window\":512,\"sliding_window_pattern\":6}",
	    NULL, &m, err, sizeof(err)) == 0);
	CHECK(m.window == 512 && m.window_layers == 11);
	/* P = 1: every layer full */
	CHECK(model("{\"model_type\":\"gemma3\",\"num_hidden_layers\":4,"
	    "\"num_attention_heads\":2,\"hidden_size\":8,\"torch_dtype\":"
	    "\"bfloat16\",\"sliding_window\":512,\"sliding_window_pattern\":1}",
	    NULL, &m, err, sizeof(err)) == 0);
	CHECK(m.window_layers == 0);
	/* Gemma-3 with neither layer_types nor a pattern: not guessed */
	CHECK(model("{\"model_type\":\"gemma3_text\",\"num_hidden_layers\":4,"
	    "\"num_attention_heads\":2,\"hidden_size\":8,\"torch_dtype\":"
	    "\"bfloat16\",\"sliding_window\":512}", NULL, &m, err,
	    sizeof(err)) == -1 && strstr(err, "'layer_types'") != NULL);
	/* cohere2, or any other config with a window pattern: not guessed */
	CHECK(model("{\"model_type\":\"cohere2\",\"num_hidden_layers\":4,"
	    "\"num_attention_heads\":2,\"hidden_size\":8,\"torch_dtype\":"
	    "\"bfloat16\",\"sliding_window\":512}", NULL, &m, err,
	    sizeof(err)) == -1 && strstr(err, "'layer_types'") != NULL &&
	    strstr(err, "cohere2") != NULL);
	CHECK(model("{\"model_type\":\"newmodel\",\"num_hidden_layers\":4,"
	    "\"num_attention_heads\":2,\"hidden_size\":8,\"torch_dtype\":"
	    "\"bfloat16\",\"sliding_window\":512,\"sliding_window_pattern\":"
	    "\"LLLG\"}", NULL, &m, err, sizeof(err)) == -1 &&
	    strstr(err, "'layer_types'") != NULL);
	/* cohere2 with layer_types is fine */
	CHECK(model("{\"model_type\":\"cohere2\",\"num_hidden_layers\":2,"
	    "\"num_attention_heads\":2,\"hidden_size\":8,\"torch_dtype\":"
	    "\"bfloat16\",\"sliding_window\":512,\"layer_types\":"
	    "[\"sliding_attention\",\"full_attention\"]}", NULL, &m, err,
	    sizeof(err)) == 0 && m.window_layers == 1);

	/* windowed attention FLOPs: 2Wn − W² pairs×2 past the window */
	CHECK(model(MISTRAL, NULL, &m, err, sizeof(err)) == 0);
	CHECK_NEAR(kvm_prefill_flops(&m, 8192), 2 * m.params * 8192 +
	    2 * m.d_attn * 32 * (2.0 * 4096 * 8192 - 4096.0 * 4096), 1e-15);
	CHECK_NEAR(kvm_prefill_flops(&m, 4096), 2 * m.params * 4096 +
	    2 * m.d_attn * 32 * 4096.0 * 4096, 1e-15);
}

static void
test_flops(void)
{
	struct kv_model m;
	char err[256];
	double P, L = 32, d = 4096, N = 32768, H = 16384;

	CHECK(model(LLAMA, NULL, &m, err, sizeof(err)) == 0);
	P = m.params;
	CHECK(P == 32 * (2 * 4096.0 * 4096 + 2 * 4096.0 * 1024 +
	    3 * 4096.0 * 14336));
	CHECK(kvm_has_flops(&m));
	CHECK_NEAR(kvm_prefill_flops(&m, N), 2 * P * N + 2 * L * d * N * N,
	    1e-15);
	CHECK_NEAR(kvm_suffix_flops(&m, N, H), 2 * P * (N - H) +
	    2 * L * d * (N * N - H * H), 1e-15);
	CHECK(kvm_suffix_flops(&m, N, 0) == kvm_prefill_flops(&m, N));
	CHECK(kvm_suffix_flops(&m, N, N) == 0);
}

static void
test_hit_tokens(void)
{
	CHECK(kvm_hit_tokens(1024, 1.0, 16) == 1008);	/* last block kept */
	CHECK(kvm_hit_tokens(1025, 1.0, 16) == 1024);
	CHECK(kvm_hit_tokens(1024, 0.5, 16) == 512);
	CHECK(kvm_hit_tokens(8192, 0.3, 16) == 2448);	/* floor(153.6)·16 */
	CHECK(kvm_hit_tokens(160, 0.7, 16) == 112);	/* 0.7·160 rounding */
	CHECK(kvm_hit_tokens(16, 1.0, 16) == 0);	/* one block: never hit */
	CHECK(kvm_hit_tokens(17, 1.0, 16) == 16);
	CHECK(kvm_hit_tokens(1024, 0.0, 16) == 0);
	CHECK(kvm_hit_tokens(0, 0.5, 16) == 0);
	CHECK(kvm_hit_tokens(1000, 0.01, 16) == 0);	/* under one block */
	/* no absolute fudge: 1e-12 under a boundary is under it */
	CHECK(kvm_hit_tokens(32, 0.5 - 1e-12, 16) == 0);
	CHECK(kvm_hit_tokens(3200, 0.5 - 1e-12, 16) == 1584);
	CHECK(kvm_hit_tokens(1 << 30, 0.5 - 1e-9, 16) == (1 << 29) - 16);
	/* exact boundaries, and h·n a rounding step short of one */
	CHECK(kvm_hit_tokens(32, 0.5, 16) == 16);
	CHECK(kvm_hit_tokens(33, 0.5, 16) == 16);
	CHECK(kvm_hit_tokens(64, 0.25, 16) == 16);
	CHECK(kvm_hit_tokens(32, nextafter(0.5, 0), 16) == 16);
	CHECK(kvm_hit_tokens(160, 0.3, 16) == 48);
	CHECK(kvm_hit_tokens(30, 0.1, 3) == 3);	/* blk not a power of 2 */
	CHECK(kvm_hit_tokens(300, 0.7, 3) == 210);
	/* against exact integer arithmetic for hit rates p/100 */
	{
		int wrong = 0;

		for (uint64_t n = 1; n < 5000; n += 13)
			for (uint64_t p = 0; p <= 100; p++)
				for (uint64_t blk = 1; blk <= 64; blk *= 4) {
					uint64_t b = p * n / (100 * blk);
					uint64_t cap = (n - 1) / blk;

					wrong += kvm_hit_tokens(n, (double)p / 100,
					    blk) != (b < cap ? b : cap) * blk;
				}
		CHECK(wrong == 0);
	}
	for (uint64_t n = 1; n < 3000; n += 7)
		for (double h = 0; h <= 1.0; h += 0.05) {
			uint64_t H = kvm_hit_tokens(n, h, 16);

			CHECK(H % 16 == 0 && H < n && H <= h * n + 1e-9);
		}
}

static void
test_states(void)
{
	struct bc_in in = { .hit_tokens = 50, .hit_bytes = 1000, .t_full = 2,
		.t_suffix = 1, .t_lookup = 0.5 };
	struct bc_out out;
	struct bc_link lk;

	bc_eval(&in, &out);
	CHECK(out.st_serial == BC_OK && out.st_overlap == BC_OK);
	CHECK(out.bcrit_serial == 2000);		/* 1000/(2-1-0.5) */
	CHECK(out.bcrit_overlap == 1000 / 1.5);
	/* strict: B == Bcrit is not profitable, a hair above is */
	bc_at(&in, &out, 2000, &lk);
	CHECK(!lk.prof_serial);
	CHECK(lk.t_serial == 2);			/* equal to T(N) */
	bc_at(&in, &out, nextafter(2000, INFINITY), &lk);
	CHECK(lk.prof_serial);
	bc_at(&in, &out, out.bcrit_overlap, &lk);
	CHECK(!lk.prof_overlap);
	bc_at(&in, &out, nextafter(out.bcrit_overlap, INFINITY), &lk);
	CHECK(lk.prof_overlap);
	CHECK_STR(bc_state_name(BC_OK), "ok");
	CHECK_STR(bc_state_name(BC_NEVER), "never_profitable");

	/* zero hits */
	in.hit_tokens = 0;
	bc_eval(&in, &out);
	CHECK(out.st_serial == BC_NO_HIT && out.st_overlap == BC_NO_HIT);
	CHECK(isnan(out.bcrit_serial) && isnan(out.bcrit_overlap));
	bc_at(&in, &out, 1e12, &lk);
	CHECK(!lk.prof_serial && !lk.prof_overlap);
	CHECK_STR(bc_state_name(BC_NO_HIT), "no_hit");

	/* zero payload */
	in.hit_tokens = 50;
	in.hit_bytes = 0;
	bc_eval(&in, &out);
	CHECK(out.st_serial == BC_NO_PAYLOAD &&
	    out.st_overlap == BC_NO_PAYLOAD);
	CHECK(isnan(out.bcrit_serial));
	bc_at(&in, &out, 1e12, &lk);
	CHECK(!lk.prof_serial && !lk.prof_overlap);
	CHECK_STR(bc_state_name(BC_NO_PAYLOAD), "no_payload");

	/* lookup larger than the saving T(N) − T_suffix */
	in.hit_bytes = 1000;
	in.t_lookup = 1.5;
	bc_eval(&in, &out);
	CHECK(out.st_serial == BC_NEVER && isnan(out.bcrit_serial));
	CHECK(out.st_overlap == BC_NEVER && isnan(out.bcrit_overlap));
	bc_at(&in, &out, 1e300, &lk);
	CHECK(!lk.prof_serial && !lk.prof_overlap);

	/* lookup exactly the saving: denominator 0, never profitable */
	in.t_lookup = 1;
	bc_eval(&in, &out);
	CHECK(out.st_serial == BC_NEVER && out.st_overlap == BC_NEVER);

	/* overlap valid only when T_suffix + T_lookup < T(N) */
	in.t_lookup = 0;
	in.t_suffix = 2;	/* the suffix alone is as slow as recompute */
	bc_eval(&in, &out);
	CHECK(out.st_serial == BC_NEVER && out.st_overlap == BC_NEVER);
	in.t_suffix = 1.75;
	in.t_lookup = 0.125;
	bc_eval(&in, &out);
	CHECK(out.st_serial == BC_OK && out.st_overlap == BC_OK);
	CHECK(out.bcrit_overlap == 1000 / 1.875);
	in.t_lookup = 0.25;	/* T_suffix + T_lookup == T(N) */
	bc_eval(&in, &out);
	CHECK(out.st_overlap == BC_NEVER && out.st_serial == BC_NEVER);

	/* S/denominator past the largest double: overflow, never ok+NAN */
	in.hit_bytes = 1e308;
	in.t_full = 2;
	in.t_suffix = 1.9999;
	in.t_lookup = 0;
	bc_eval(&in, &out);
	CHECK(out.st_serial == BC_OVERFLOW && isnan(out.bcrit_serial));
	CHECK(out.st_overlap == BC_OK && out.bcrit_overlap == 5e307);
	bc_at(&in, &out, DBL_MAX, &lk);
	CHECK(!lk.prof_serial);
	CHECK_STR(bc_state_name(BC_OVERFLOW), "overflow");
	in.t_lookup = 1.99990001;	/* overlap denominator tiny too */
	in.t_suffix = 0;
	bc_eval(&in, &out);
	CHECK(out.st_serial == BC_OVERFLOW && out.st_overlap == BC_OVERFLOW);
	CHECK(isnan(out.bcrit_overlap));
}

/* xorshift64*: deterministic, seedable. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;

static double
rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (double)((rng_state * 2685821657736338717ULL) >> 11) /
	    9007199254740992.0;
}

/* profitable agrees with comparing the predicted time against T(N) */
static void
test_property(void)
{
	int agree_s = 0, agree_o = 0, n = 20000, prof = 0, unprof = 0;

	for (int i = 0; i < n; i++) {
		struct bc_in in;
		struct bc_out out;
		struct bc_link lk;
		double bw = pow(10, 6 + 6 * rnd()), load, ts, to;

		in.t_full = pow(10, -3 + 4 * rnd());
		in.t_suffix = in.t_full * 1.2 * rnd();
		in.t_lookup = in.t_full * 0.3 * rnd();
		in.hit_tokens = 1 + floor(1e5 * rnd());
		in.hit_bytes = in.hit_tokens * pow(10, 3 + 3 * rnd());
		bc_eval(&in, &out);
		bc_at(&in, &out, bw, &lk);
		load = in.hit_bytes / bw;
		ts = in.t_lookup + load + in.t_suffix;
		to = in.t_lookup + fmax(load, in.t_suffix);
		agree_s += lk.prof_serial == (ts < in.t_full);
		agree_o += lk.prof_overlap == (to < in.t_full);
		prof += lk.prof_serial;
		unprof += !lk.prof_serial;
	}
	CHECK(agree_s == n);
	CHECK(agree_o == n);
	CHECK(prof > n / 20 && unprof > n / 20);	/* both sides exercised */
}

/* Run fn over the record text; returns the edited record or NULL. */
static json_t *
rec_eval(const char *text, const struct kvrec_opt *o, int bcrit, char *err,
    size_t errlen)
{
	json_t *r = json_loads(text, 0, NULL);

	if ((bcrit ? kvrec_bcrit(r, o, err, errlen) :
	    kvrec_bytes(r, o, err, errlen)) != 0) {
		json_decref(r);
		return NULL;
	}
	return r;
}

static double
num(const json_t *r, const char *k)
{
	return json_number_value(json_object_get(r, k));
}

static void
test_records(void)
{
	struct kvrec_opt o = { .block = 16, .mfu = 1 };
	struct kv_model m;
	char err[256];
	json_t *r;

	r = rec_eval("{\"layers\":6,\"kv_heads\":4,\"head_dim\":32,"
	    "\"dtype\":\"fp16\",\"tokens\":1024,\"hit_rate\":1,\"x\":\"kept\"}",
	    &o, 0, err, sizeof(err));
	CHECK(r != NULL);
	CHECK(num(r, "kv_bytes_per_token") == 3072);
	CHECK(num(r, "kv_bytes_per_block") == 49152);
	CHECK(num(r, "hit_tokens") == 1008 && num(r, "hit_bytes") == 3096576);
	CHECK(num(r, "kv_bytes") == 3072 * 1024);
	CHECK(json_object_get(r, "prefill_flops") == NULL);	/* no params */
	CHECK_STR(json_string_value(json_object_get(r, "x")), "kept");
	json_decref(r);
	CHECK(rec_eval("{\"layers\":6,\"kv_heads\":4,\"head_dim\":32}", &o, 0,
	    err, sizeof(err)) == NULL && strstr(err, "'dtype'") != NULL);
	CHECK(rec_eval("{\"layers\":6,\"head_dim\":32,\"dtype\":\"bf16\"}", &o,
	    0, err, sizeof(err)) == NULL && strstr(err, "'kv_heads'") != NULL);
	CHECK(rec_eval("{\"config\":{\"num_hidden_layers\":2}}", &o, 0, err,
	    sizeof(err)) == NULL && strstr(err, "num_attention_heads") != NULL);
	CHECK(rec_eval("{\"layers\":1,\"kv_heads\":1,\"head_dim\":1,"
	    "\"dtype\":\"bf16\",\"tokens\":10,\"hit_tokens\":11}", &o, 0, err,
	    sizeof(err)) == NULL && strstr(err, "hit_tokens must be < tokens") != NULL);
	CHECK(rec_eval("{\"layers\":1,\"kv_heads\":1,\"head_dim\":1,"
	    "\"dtype\":\"bf16\",\"tokens\":10,\"hit_tokens\":10}", &o, 0, err,
	    sizeof(err)) == NULL && strstr(err, "always computed") != NULL);
	CHECK(rec_eval("{\"tokens\":10,\"hit_tokens\":10,\"hit_bytes\":1,"
	    "\"t_full_s\":2,\"t_suffix_s\":1}", &o, 1, err, sizeof(err)) ==
	    NULL && strstr(err, "always computed") != NULL);
	CHECK(rec_eval("{\"layers\":1,\"kv_heads\":1,\"head_dim\":1,"
	    "\"dtype\":\"bf16\",\"hit_rate\":0.5}", &o, 0, err,
	    sizeof(err)) == NULL && strstr(err, "'tokens'") != NULL);

	/* bcrit: measured times and the boundary through the record path */
	r = rec_eval("{\"tokens\":100,\"hit_tokens\":50,\"hit_bytes\":1000,"
	    "\"t_full_s\":2,\"t_suffix_s\":1,\"t_lookup_s\":0.5,"
	    "\"bw_bytes_per_s\":2000}", &o, 1, err, sizeof(err));
	CHECK(r != NULL);
	CHECK(num(r, "bcrit_serial_bytes_per_s") == 2000);
	CHECK(json_is_false(json_object_get(r, "profitable_serial")));
	CHECK(json_is_true(json_object_get(r, "profitable_overlap")));
	CHECK_STR(json_string_value(json_object_get(r, "t_source")), "measured");
	json_decref(r);
	/* fit coefficients: T_suffix = T(N) − T(H) + a */
	r = rec_eval("{\"tokens\":1000,\"hit_tokens\":500,\"hit_bytes\":1e6,"
	    "\"prefill_a_s\":0.5,\"prefill_b_s_per_token\":0.001,"
	    "\"prefill_c_s_per_token2\":1e-6}", &o, 1, err, sizeof(err));
	CHECK(r != NULL);
	CHECK_NEAR(num(r, "t_full_s"), 0.5 + 1 + 1, 1e-12);
	CHECK_NEAR(num(r, "t_suffix_s"), 2.5 - (0.5 + 0.25), 1e-12);
	json_decref(r);
	CHECK(rec_eval("{\"tokens\":100,\"hit_tokens\":50,\"hit_bytes\":1,"
	    "\"t_full_s\":2}", &o, 1, err, sizeof(err)) == NULL &&
	    strstr(err, "'t_suffix_s'") != NULL);
	CHECK(rec_eval("{\"hit_tokens\":50}", &o, 1, err, sizeof(err)) ==
	    NULL && strstr(err, "'tokens'") != NULL);
	CHECK(rec_eval("{\"tokens\":100}", &o, 1, err, sizeof(err)) == NULL &&
	    strstr(err, "'hit_tokens'") != NULL);
	CHECK(rec_eval("{\"tokens\":100,\"hit_tokens\":50,\"t_full_s\":1,"
	    "\"t_suffix_s\":0.5}", &o, 1, err, sizeof(err)) == NULL &&
	    strstr(err, "'kv_bytes_per_token'") != NULL);
	/* FLOPs from the model, at flops_per_s·mfu */
	CHECK(model(LLAMA, NULL, &m, err, sizeof(err)) == 0);
	o.model = &m;
	o.flops_per_s = 1e15;
	o.mfu = 0.5;
	r = rec_eval("{\"tokens\":32768,\"hit_rate\":0.5}", &o, 1, err,
	    sizeof(err));
	CHECK(r != NULL);
	CHECK(num(r, "hit_tokens") == 16384);
	CHECK(num(r, "hit_bytes") == 131072.0 * 16384);
	CHECK_NEAR(num(r, "t_full_s"), kvm_prefill_flops(&m, 32768) / 5e14,
	    1e-15);
	CHECK_STR(json_string_value(json_object_get(r, "t_source")), "flops");
	json_decref(r);
}

static void
test_links(void)
{
	struct kvrec_link lk;
	char err[256];

	CHECK(kvrec_parse_link("rdma=23GB/s", &lk, err, sizeof(err)) == 0);
	CHECK_STR(lk.name, "rdma");
	CHECK(lk.bw == 23e9);
	CHECK(kvrec_parse_link("tcp=25Gbit/s", &lk, err, sizeof(err)) == 0 &&
	    lk.bw == 3.125e9);
	CHECK(kvrec_parse_link("23GB/s", &lk, err, sizeof(err)) == -1);
	CHECK(kvrec_parse_link("=1GB/s", &lk, err, sizeof(err)) == -1);
	CHECK(kvrec_parse_link("a b=1GB/s", &lk, err, sizeof(err)) == -1);
	CHECK(kvrec_parse_link("x=0", &lk, err, sizeof(err)) == -1);
	CHECK(kvrec_parse_link("x=12furlongs", &lk, err, sizeof(err)) == -1);
}

int
main(void)
{
	test_reference_values();
	test_dtypes();
	test_missing_fields();
	test_windows();
	test_flops();
	test_hit_tokens();
	test_states();
	test_property();
	test_records();
	test_links();
	return DONE("test_kvmodel");
}
