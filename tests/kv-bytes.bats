#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# kv-bytes: KV bytes per token/block/prompt, parameters and FLOPs from model configs.

bats_require_minimum_version 1.5.0
load helpers

# hostile FILE FIRST LAST: FIRST with a CRLF ending, a record with invalid
# UTF-8, a line one byte over the reader's 64 MiB limit, then LAST (CRLF).
hostile() {
	{ printf '%s\r\n' "$2"; printf '{"note":"\xff\xfe"}\n'
	  head -c $((64 * 1024 * 1024 + 1)) /dev/zero | tr '\0' x
	  printf '\n%s\r\n' "$3"; } >"$1"
}

kvb() { kv-bytes "$@"; }

@test "Pythia-14M is 3,072 bytes per token and 1,008 hit tokens are 3,096,576 bytes" {
	run kvb --config "$FIX/model-pythia-14m.json" <<<'{"tokens":1024,"hit_rate":1}'
	assert_success
	[ "$(jqv "$output" .kv_bytes_per_token)" = 3072 ]
	[ "$(jqv "$output" .kv_bytes_per_block)" = 49152 ]
	[ "$(jqv "$output" .hit_tokens)" = 1008 ]
	[ "$(jqv "$output" '.hit_tokens / 16')" = 63 ]
	[ "$(jqv "$output" .hit_bytes)" = 3096576 ]
	[ "$(jqv "$output" .kv_bytes)" = 3145728 ]
}

@test "reference bytes per token: Qwen2.5-7B 57,344, Llama-3.1-8B 131,072, DeepSeek-V3 70,272" {
	run kvb --config "$FIX/model-qwen2.5-7b.json" </dev/null
	assert_success
	[ "$(jqv "$output" .kv_bytes_per_token)" = 57344 ]
	run kvb --config "$FIX/model-llama-3.1-8b.json" </dev/null
	[ "$(jqv "$output" .kv_bytes_per_token)" = 131072 ]
	run kvb --config "$FIX/model-deepseek-v3.json" </dev/null
	[ "$(jqv "$output" .kv_bytes_per_token)" = 70272 ]
}

@test "with --config and empty input it prints exactly one record" {
	run kvb --config "$FIX/model-llama-3.1-8b.json" </dev/null
	assert_success
	[ "${#lines[@]}" -eq 1 ]
	[ "$(jqv "$output" 'keys | join(",")')" = "kv_bytes_per_block,kv_bytes_per_token,params_nonembed" ]
	[ "$(jqv "$output" .params_nonembed)" = 6979321856 ]
}

@test "--config applies to every record on stdin and keeps their fields" {
	run kvb --config "$FIX/model-qwen2.5-7b.json" <<-'EOF'
	{"run":"a","tokens":8192}
	{"run":"b","tokens":32768,"hit_tokens":16384}
	EOF
	assert_success
	[ "${#lines[@]}" -eq 2 ]
	[ "$(jqv "${lines[0]}" .run)" = a ]
	[ "$(jqv "${lines[0]}" .kv_bytes)" = $((57344 * 8192)) ]
	[ "$(jqv "${lines[1]}" .hit_bytes)" = $((57344 * 16384)) ]
}

@test "prefill and suffix FLOPs follow 2PN + 2L·d_attn·N² and 2P(N-H) + 2L·d_attn·(N²-H²)" {
	run kvb --config "$FIX/model-llama-3.1-8b.json" <<<'{"tokens":32768,"hit_tokens":16384}'
	assert_success
	P=$(jqv "$output" .params_nonembed)
	[ "$(jqv "$output" ".prefill_flops == 2*$P*32768 + 2*32*4096*32768*32768")" = true ]
	[ "$(jqv "$output" ".suffix_flops == 2*$P*16384 + 2*32*4096*(32768*32768-16384*16384)")" = true ]
}

@test "MLA (DeepSeek-V3): one latent of kv_lora_rank + qk_rope_head_dim per layer, MoE active params" {
	run kvb --config "$FIX/model-deepseek-v3.json" <<<'{"tokens":4096}'
	assert_success
	[ "$(jqv "$output" .kv_bytes)" = $((61 * 576 * 2 * 4096)) ]
	# about 37B activated with embeddings; 35.7B non-embedding
	[ "$(jqv "$output" '.params_nonembed > 35e9 and .params_nonembed < 36.5e9')" = true ]
	[ "$(jqv "$output" '.params_nonembed_total > 660e9')" = true ]
}

@test "Mistral-7B v0.1 caps cached tokens at its 4,096-token sliding window" {
	run kvb --config "$FIX/model-mistral-7b-v0.1.json" <<<'{"tokens":32768,"hit_tokens":2048}'
	assert_success
	[ "$(jqv "$output" .kv_bytes_per_token)" = 131072 ]
	[ "$(jqv "$output" .kv_bytes)" = $((131072 * 4096)) ]
	[ "$(jqv "$output" .hit_bytes)" = $((131072 * 2048)) ]
}

@test "Gemma-2-9B: only every other layer (0, 2, 4, ...) keeps its 4,096-token window: 6,341,787,648 bytes at 32K" {
	# google/gemma-2-9b-it's config.json: sliding_window 4096, no layer_types;
	# transformers' Gemma2 windows layer i when i % 2 == 0 (21 of 42 layers)
	run kvb --config "$FIX/model-gemma-2-9b.json" <<<'{"tokens":32768,"hit_tokens":16384}'
	assert_success
	[ "$(jqv "$output" .kv_bytes_per_token)" = $((42 * 8 * 256 * 2 * 2)) ]
	[ "$(jqv "$output" .kv_bytes)" = 6341787648 ]
	[ "$(jqv "$output" .kv_bytes)" = $((8192 * (21 * 32768 + 21 * 4096))) ]
	[ "$(jqv "$output" .hit_bytes)" = $((8192 * (21 * 16384 + 21 * 4096))) ]
	P=$(jqv "$output" .params_nonembed)
	# 21 full layers attend n^2, 21 windowed ones 2Wn - W^2
	[ "$(jqv "$output" ".prefill_flops == 2*$P*32768 + 2*4096*(21*32768*32768 + 21*(2*4096*32768 - 4096*4096))")" = true ]
	# within the window every layer holds every token
	run kvb --config "$FIX/model-gemma-2-9b.json" <<<'{"tokens":4096}'
	[ "$(jqv "$output" .kv_bytes)" = $((42 * 8192 * 4096)) ]
}

@test "Gemma-3: sliding_window_pattern P windows the layers with (i+1) % P != 0" {
	# Gemma-3-12B's text_config as published: 48 layers, pattern 6, window 1024
	jq -n '{model_type: "gemma3", torch_dtype: "bfloat16", text_config: {model_type: "gemma3_text",
	    head_dim: 256, hidden_size: 3840, intermediate_size: 15360, num_attention_heads: 16,
	    num_hidden_layers: 48, num_key_value_heads: 8, sliding_window: 1024, sliding_window_pattern: 6}}' \
	    >"$BATS_TEST_TMPDIR/g3.json"
	run kvb --config "$BATS_TEST_TMPDIR/g3.json" <<<'{"tokens":32768}'
	assert_success
	# 8 full layers (5, 11, ..., 47) and 40 windowed
	[ "$(jqv "$output" .kv_bytes)" = $((8192 * (8 * 32768 + 40 * 1024))) ]
	# the older private spelling _sliding_window_pattern means the same
	jq '.text_config |= (._sliding_window_pattern = .sliding_window_pattern | del(.sliding_window_pattern))' \
	    "$BATS_TEST_TMPDIR/g3.json" >"$BATS_TEST_TMPDIR/g3b.json"
	run kvb --config "$BATS_TEST_TMPDIR/g3b.json" <<<'{"tokens":32768}'
	[ "$(jqv "$output" .kv_bytes)" = $((8192 * (8 * 32768 + 40 * 1024))) ]
	# layer_types, when present, wins over the pattern
	jq '.text_config.layer_types = [range(48) | if . < 24 then "sliding_attention" else "full_attention" end]' \
	    "$BATS_TEST_TMPDIR/g3.json" >"$BATS_TEST_TMPDIR/g3c.json"
	run kvb --config "$BATS_TEST_TMPDIR/g3c.json" <<<'{"tokens":32768}'
	[ "$(jqv "$output" .kv_bytes)" = $((8192 * (24 * 32768 + 24 * 1024))) ]
}

@test "a model that mixes windowed and full layers without layer_types is an error record asking for them" {
	jq -c '.model_type = "cohere2"' "$FIX/model-llama-3.1-8b.json" |
	    jq -c '{config: (. + {sliding_window: 4096}), tokens: 100}' >"$BATS_TEST_TMPDIR/in"
	jq -c '{config: {model_type: "gemma3_text", num_hidden_layers: 4, num_attention_heads: 2,
	    hidden_size: 8, torch_dtype: "bf16", sliding_window: 16}, tokens: 100}' -n >>"$BATS_TEST_TMPDIR/in"
	echo '{"tokens":1,"layers":1,"kv_heads":1,"head_dim":1,"dtype":"bf16"}' >>"$BATS_TEST_TMPDIR/in"
	run --separate-stderr kvb <"$BATS_TEST_TMPDIR/in"
	[ "$status" -eq 65 ]
	[ "${#lines[@]}" -eq 3 ]
	[ "$(jqv "${lines[0]}" .kind)" = error ]
	[[ "$(jqv "${lines[0]}" .error)" == "missing field 'layer_types': model_type 'cohere2' mixes windowed and full layers"* ]]
	[[ "$(jqv "${lines[1]}" .error)" == *"'layer_types' (or 'sliding_window_pattern')"* ]]
	[ "$(jqv "${lines[2]}" .kv_bytes)" = 4 ]
	[[ "$stderr" == *"kv-bytes: stdin:1: "*"layer_types"* ]]
}

@test "explicit head_dim (Gemma-7B: 256, not 3072/16) is used" {
	run kvb --config "$FIX/model-gemma-7b.json" </dev/null
	[ "$(jqv "$output" .kv_bytes_per_token)" = $((28 * 16 * 256 * 2 * 2)) ]
}

@test "--kv-dtype fp8 halves a bf16 cache; fp32 doubles it" {
	run kvb --config "$FIX/model-llama-3.1-8b.json" --kv-dtype fp8 </dev/null
	[ "$(jqv "$output" .kv_bytes_per_token)" = 65536 ]
	run kvb --config "$FIX/model-llama-3.1-8b.json" --kv-dtype fp32 </dev/null
	[ "$(jqv "$output" .kv_bytes_per_token)" = 262144 ]
}

@test "explicit fields and a per-record config object work without --config" {
	run kvb <<-EOF
	{"layers":6,"kv_heads":4,"head_dim":32,"dtype":"fp16","tokens":100}
	{"config":$(jq -c . "$FIX/model-qwen2.5-7b.json"),"tokens":10}
	EOF
	assert_success
	[ "$(jqv "${lines[0]}" .kv_bytes)" = 307200 ]
	[ "$(jqv "${lines[1]}" .kv_bytes)" = 573440 ]
}

@test "--block sets the block size for per-block bytes and hit alignment" {
	run kvb --block 256 --config "$FIX/model-pythia-14m.json" <<<'{"tokens":1000,"hit_rate":0.9}'
	[ "$(jqv "$output" .kv_bytes_per_block)" = $((3072 * 256)) ]
	[ "$(jqv "$output" .hit_tokens)" = 768 ]
}

@test "a config lacking a field gets an error record naming it, status 65" {
	jq -c 'del(.num_hidden_layers)' "$FIX/model-llama-3.1-8b.json" >"$BATS_TEST_TMPDIR/c.json"
	msg="$BATS_TEST_TMPDIR/c.json: missing field 'num_hidden_layers' (or 'n_layer', 'num_layers', 'n_layers')"
	# no records: one error record (no input line to name) and the stderr line
	run --separate-stderr kvb --config "$BATS_TEST_TMPDIR/c.json" </dev/null
	[ "$status" -eq 65 ]
	[ "${#lines[@]}" -eq 1 ]
	[ "$(jq -c . <<<"$output")" = "$(jq -nc --arg m "$msg" '{kind: "error", error: $m}')" ]
	[ "$stderr" = "kv-bytes: $msg" ]
	# records: an error record in place of each, each with its stderr line
	run --separate-stderr kvb --config "$BATS_TEST_TMPDIR/c.json" <<<$'{"tokens":1}\n{"tokens":2}'
	[ "$status" -eq 65 ]
	[ "${#lines[@]}" -eq 2 ]
	[ "$(jq -c . <<<"${lines[1]}")" = "$(jq -nc --arg m "$msg" '{kind: "error", line: 2, error: $m}')" ]
	[ "$(jqv "${lines[0]}" .line)" = 1 ]
	[ "$stderr" = "kv-bytes: stdin:1: $msg"$'\n'"kv-bytes: stdin:2: $msg" ]
	# a file name that is not UTF-8 still gives a valid JSON error record
	n=$(printf '%s/c\377.json' "$BATS_TEST_TMPDIR")
	cp "$BATS_TEST_TMPDIR/c.json" "$n"
	run --separate-stderr kvb --config "$n" </dev/null
	[ "$status" -eq 65 ]
	[ "$(jqv "$output" .error)" = "the --config file is unusable (its name is not UTF-8; see standard error)" ]
	[[ "$stderr" == *"missing field 'num_hidden_layers'"* ]]
	# explicit fields lacking one: the same, per record
	run --separate-stderr kvb <<<'{"layers":6,"kv_heads":4,"head_dim":32,"tokens":1}'
	[ "$status" -eq 65 ]
	[ "$(jqv "$output" .error)" = "missing field 'dtype' (or give --kv-dtype)" ]
	[ "$stderr" = "kv-bytes: stdin:1: missing field 'dtype' (or give --kv-dtype)" ]
}

@test "bad records become error records in place; the good ones survive; status 65" {
	run --separate-stderr kvb --config "$FIX/model-pythia-14m.json" <<-'EOF'
	{"tokens":1}
	{"tokens":
	{"tokens":"many"}
	[1,2]
	{"tokens":-5}
	{"tokens":1e300}
	{"tokens":10,"hit_tokens":11}
	{"tokens":10,"hit_rate":1.5}

	{"tokens":2}
	EOF
	[ "$status" -eq 65 ]
	[ "${#lines[@]}" -eq 9 ]
	[ "$(jqv "${lines[0]}" .kv_bytes)" = 3072 ]
	for i in 1 2 3 4 5 6 7; do [ "$(jqv "${lines[$i]}" .kind)" = error ]; done
	[ "$(jqv "${lines[1]}" .line)" = 2 ]
	[ "$(jqv "${lines[2]}" .error)" = "field 'tokens' must be an integer" ]
	[ "$(jqv "${lines[8]}" .kv_bytes)" = 6144 ]
	[[ "$stderr" == *"kv-bytes: stdin:2: invalid JSON"* ]]
	[[ "$stderr" == *"stdin:7: hit_tokens must be < tokens: the last prompt token is always computed (hit_tokens 11, tokens 10)"* ]]
}

@test "hit_tokens equal to tokens is rejected: the last prompt token is always computed" {
	run --separate-stderr kvb --config "$FIX/model-pythia-14m.json" <<-'EOF'
	{"tokens":10,"hit_tokens":10}
	{"tokens":10,"hit_tokens":9}
	{"tokens":0,"hit_tokens":0}
	{"tokens":0,"hit_tokens":1}
	EOF
	[ "$status" -eq 65 ]
	[ "${#lines[@]}" -eq 4 ]
	[ "$(jqv "${lines[0]}" .error)" = "hit_tokens must be < tokens: the last prompt token is always computed (hit_tokens 10, tokens 10)" ]
	[ "$(jqv "${lines[1]}" .hit_bytes)" = $((9 * 3072)) ]
	[ "$(jqv "${lines[2]}" .hit_bytes)" = 0 ]
	[ "$(jqv "${lines[3]}" .kind)" = error ]
	[[ "$stderr" == "kv-bytes: stdin:1: hit_tokens must be < tokens: the last prompt token is always computed"* ]]
}

@test "CRLF lines are records; invalid UTF-8 and an over-long line are error records; the next record survives" {
	hostile "$BATS_TEST_TMPDIR/in" '{"tokens":1}' '{"tokens":3}'
	run --separate-stderr kvb --config "$FIX/model-pythia-14m.json" <"$BATS_TEST_TMPDIR/in"
	[ "$status" -eq 65 ]
	[ "${#lines[@]}" -eq 4 ]
	[ "$(jqv "${lines[0]}" .kv_bytes)" = 3072 ]
	[ "$(jq -c '[.kind, .line]' <<<"${lines[1]}")" = '["error",2]' ]
	[[ "$(jqv "${lines[1]}" .error)" == "invalid JSON: unable to decode byte 0xff"* ]]
	[ "$(jq -c . <<<"${lines[2]}")" = '{"kind":"error","line":3,"error":"line longer than 67108864 bytes"}' ]
	[ "$(jqv "${lines[3]}" .kv_bytes)" = 9216 ]
	[ "$(jqv "${lines[3]}" '.tokens')" = 3 ]
	[[ "$stderr" == *"kv-bytes: stdin:2: invalid JSON: unable to decode byte 0xff"* ]]
	[[ "$stderr" == *"kv-bytes: stdin:3: line longer than 67108864 bytes"* ]]
}

@test "--strict stops at the first bad record" {
	run --separate-stderr kvb --strict --config "$FIX/model-pythia-14m.json" <<<$'{"tokens":1}\nnope\n{"tokens":2}'
	[ "$status" -eq 65 ]
	[ "${#lines[@]}" -eq 2 ]
	[ "$(jqv "${lines[1]}" .kind)" = error ]
}

@test "a missing or unreadable config file is a set-up error; an invalid one gives error records" {
	run --separate-stderr kvb --config /nonexistent/config.json <<<'{"tokens":1}'
	[ "$status" -eq 2 ]
	[ "$output" = "" ]
	[[ "$stderr" == *"No such file"* ]]
	echo '{"num_hidden_layers":' >"$BATS_TEST_TMPDIR/bad.json"
	run --separate-stderr kvb --config "$BATS_TEST_TMPDIR/bad.json" </dev/null
	[ "$status" -eq 65 ]
	[ "$(jqv "$output" .kind)" = error ]
	[[ "$(jqv "$output" .error)" == "$BATS_TEST_TMPDIR/bad.json:"*"invalid JSON"* ]]
	[[ "$stderr" == *"invalid JSON"* ]]
}

@test "without --config, empty input gives empty output and success" {
	run kvb </dev/null
	assert_success
	assert_output ""
}

@test "usage errors exit 2: unknown option, bad --block, bad --kv-dtype, stray argument" {
	run kvb --frobnicate
	[ "$status" -eq 2 ]
	run kvb --block 0
	[ "$status" -eq 2 ]
	run kvb --block 12furlongs
	[ "$status" -eq 2 ]
	assert_output --partial furlongs
	run kvb --kv-dtype fp4
	[ "$status" -eq 2 ]
	assert_output --partial "fp4"
	run kvb extra
	[ "$status" -eq 2 ]
}

@test "--help prints the synopsis on stdout; --version names kvgate" {
	run --separate-stderr kvb --help
	assert_success
	[[ "$output" == usage:\ kv-bytes* ]]
	run kvb --version
	assert_success
	assert_output --regexp '^kv-bytes \(kvgate\) [0-9]'
}

@test "a closed stdout is an I/O error, not silence" {
	run bash -c "kv-bytes --config '$FIX/model-pythia-14m.json' </dev/null >/dev/full"
	[ "$status" -eq 74 ]
}

@test "valgrind: kv-bytes is clean on good and bad records" {
	run_vg kv-bytes --config "$FIX/model-deepseek-v3.json" <<<$'{"tokens":100,"hit_rate":0.5}\nbad\n{"tokens":"x"}'
	[ "$status" -eq 65 ]
}
