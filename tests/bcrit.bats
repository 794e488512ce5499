#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# bcrit: critical bandwidth, states, the strict verdict, time sources, links.

bats_require_minimum_version 1.5.0
load helpers

# hostile FILE FIRST LAST: FIRST with a CRLF ending, a record with invalid
# UTF-8, a line one byte over the reader's 64 MiB limit, then LAST (CRLF).
hostile() {
	{ printf '%s\r\n' "$2"; printf '{"note":"\xff\xfe"}\n'
	  head -c $((64 * 1024 * 1024 + 1)) /dev/zero | tr '\0' x
	  printf '\n%s\r\n' "$3"; } >"$1"
}

# S = 1000 B, T(N) = 2 s, T_suffix = 1 s, T_lookup = 0.5 s: serial Bcrit = 2000 B/s exactly.
REC='{"tokens":100,"hit_tokens":50,"hit_bytes":1000,"t_full_s":2,"t_suffix_s":1,"t_lookup_s":0.5}'

rec_bw() { jq -c --argjson b "$1" '. + {bw_bytes_per_s: $b}' <<<"$REC"; }

@test "serial and overlap Bcrit follow DESIGN.md: S/(T(N)-T_suffix-T_lookup) and S/(T(N)-T_lookup)" {
	run bcrit <<<"$REC"
	assert_success
	[ "$(jqv "$output" .bcrit_serial_bytes_per_s)" = 2000 ]
	[ "$(jqv "$output" '.bcrit_overlap_bytes_per_s == 1000/1.5')" = true ]
	[ "$(jqv "$output" .state_serial)" = ok ]
	[ "$(jqv "$output" .state_overlap)" = ok ]
	[ "$(jqv "$output" .t_source)" = measured ]
	[ "$(jqv "$output" 'has("profitable_serial")')" = false ]
}

@test "B equal to Bcrit is not profitable" {
	run bcrit <<<"$(rec_bw 2000)"
	assert_success
	[ "$(jqv "$output" .profitable_serial)" = false ]
	[ "$(jqv "$output" .t_serial_s)" = 2 ]
	[ "$(jqv "$output" .speedup_serial)" = 1 ]
}

@test "a hair above Bcrit is profitable" {
	run bcrit <<<"$(rec_bw 2000.000001)"
	[ "$(jqv "$output" .profitable_serial)" = true ]
	[ "$(jqv "$output" '.t_serial_s < .t_full_s')" = true ]
	run bcrit <<<"$(rec_bw 1999.999999)"
	[ "$(jqv "$output" .profitable_serial)" = false ]
}

@test "overlap: load hidden under the suffix, t_overlap = T_lookup + max(S/B, T_suffix)" {
	run bcrit <<<"$(rec_bw 1000)"
	[ "$(jqv "$output" .profitable_overlap)" = true ]
	[ "$(jqv "$output" .t_overlap_s)" = 1.5 ]
	[ "$(jqv "$output" '.speedup_overlap == 2/1.5')" = true ]
	[ "$(jqv "$output" .t_serial_s)" = 2.5 ]
	[ "$(jqv "$output" .profitable_serial)" = false ]
}

@test "zero hits: state no_hit, Bcrit null, never profitable" {
	run bcrit <<<'{"tokens":100,"hit_rate":0,"kv_bytes_per_token":10,"t_full_s":2,"t_suffix_s":2,"bw_bytes_per_s":1e12}'
	assert_success
	[ "$(jqv "$output" .state_serial)" = no_hit ]
	[ "$(jqv "$output" .state_overlap)" = no_hit ]
	[ "$(jqv "$output" .bcrit_serial_bytes_per_s)" = null ]
	[ "$(jqv "$output" .bcrit_overlap_bytes_per_s)" = null ]
	[ "$(jqv "$output" .profitable_serial)" = false ]
}

@test "a hit smaller than one block rounds down to no_hit" {
	run bcrit <<<'{"tokens":100,"hit_rate":0.1,"kv_bytes_per_token":10,"t_full_s":2,"t_suffix_s":1}'
	[ "$(jqv "$output" .hit_tokens)" = 0 ]
	[ "$(jqv "$output" .state_serial)" = no_hit ]
}

@test "zero payload: state no_payload, Bcrit null" {
	run bcrit <<<'{"tokens":100,"hit_tokens":64,"kv_bytes_per_token":0,"t_full_s":2,"t_suffix_s":1,"bw_bytes_per_s":1}'
	assert_success
	[ "$(jqv "$output" .state_serial)" = no_payload ]
	[ "$(jqv "$output" .state_overlap)" = no_payload ]
	[ "$(jqv "$output" .bcrit_serial_bytes_per_s)" = null ]
	[ "$(jqv "$output" .profitable_overlap)" = false ]
}

@test "lookup latency larger than the saving: never_profitable at any bandwidth" {
	run bcrit <<<'{"tokens":100,"hit_tokens":50,"hit_bytes":1000,"t_full_s":2,"t_suffix_s":1,"t_lookup_s":1.5,"bw_bytes_per_s":1e300}'
	assert_success
	[ "$(jqv "$output" .state_serial)" = never_profitable ]
	[ "$(jqv "$output" .state_overlap)" = never_profitable ]
	[ "$(jqv "$output" .bcrit_serial_bytes_per_s)" = null ]
	[ "$(jqv "$output" .profitable_serial)" = false ]
	[ "$(jqv "$output" .profitable_overlap)" = false ]
}

@test "a Bcrit too large for a double is state overflow with Bcrit null, never ok with null" {
	run --separate-stderr bcrit --bw x=1000GB/s <<<'{"tokens":100,"hit_tokens":50,"hit_bytes":1e308,"t_full_s":2,"t_suffix_s":1.9999,"bw_bytes_per_s":1e300}'
	assert_success
	[ "$(jqv "$output" .state_serial)" = overflow ]
	[ "$(jqv "$output" .bcrit_serial_bytes_per_s)" = null ]
	[ "$(jqv "$output" .profitable_serial)" = false ]
	[ "$(jqv "$output" .links.x.profitable_serial)" = false ]
	# the overlap denominator T(N) - T_lookup = 2 is fine: 5e307
	[ "$(jqv "$output" .state_overlap)" = ok ]
	[ "$(jqv "$output" '.bcrit_overlap_bytes_per_s == 5e307')" = true ]
	run bcrit <<<'{"tokens":100,"hit_tokens":50,"hit_bytes":1e308,"t_full_s":1e-300,"t_suffix_s":0}'
	[ "$(jqv "$output" '[.state_serial, .state_overlap, .bcrit_serial_bytes_per_s, .bcrit_overlap_bytes_per_s]' | jq -c .)" = '["overflow","overflow",null,null]' ]
}

@test "overlap is valid only when T_suffix + T_lookup < T(N)" {
	run bcrit <<<'{"tokens":100,"hit_tokens":50,"hit_bytes":1000,"t_full_s":2,"t_suffix_s":1.75,"t_lookup_s":0.25}'
	[ "$(jqv "$output" .state_overlap)" = never_profitable ]
	[ "$(jqv "$output" .bcrit_overlap_bytes_per_s)" = null ]
	run bcrit <<<'{"tokens":100,"hit_tokens":50,"hit_bytes":1000,"t_full_s":2,"t_suffix_s":1.75,"t_lookup_s":0.125}'
	[ "$(jqv "$output" .state_overlap)" = ok ]
	[ "$(jqv "$output" '.bcrit_overlap_bytes_per_s == 1000/1.875')" = true ]
}

@test "profitable agrees with comparing predicted time to T(N) on 5,000 random records" {
	awk 'BEGIN { srand(7); for (i = 0; i < 5000; i++) {
		t = 10^(-3 + 4*rand()); printf "{\"tokens\":100000,\"hit_tokens\":%d,\"kv_bytes_per_token\":%.6f,\"t_full_s\":%.9g,\"t_suffix_s\":%.9g,\"t_lookup_s\":%.9g,\"bw_bytes_per_s\":%.9g}\n",
		    1 + int(99999*rand()), 10^(3+3*rand()), t, t*1.2*rand(), t*0.3*rand(), 10^(6+6*rand()) } }' |
	    bcrit >"$BATS_TEST_TMPDIR/out"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/out")" -eq 5000 ]
	run jq -s '[.[] | (.profitable_serial == (.t_serial_s < .t_full_s)) and
	    (.profitable_overlap == (.t_overlap_s < .t_full_s))] | all' "$BATS_TEST_TMPDIR/out"
	assert_output true
	run jq -s '[.[] | .profitable_serial] | (any and (all | not))' "$BATS_TEST_TMPDIR/out"
	assert_output true
}

@test "--bw NAME=VALUE gives one verdict per link under links.NAME" {
	run bcrit --bw tcp=1000B/s --bw rdma=25Gbit/s <<<"$REC"
	assert_success
	[ "$(jqv "$output" '.links | keys | join(",")')" = rdma,tcp ]
	[ "$(jqv "$output" .links.tcp.bw_bytes_per_s)" = 1000 ]
	[ "$(jqv "$output" .links.rdma.bw_bytes_per_s)" = 3125000000 ]
	[ "$(jqv "$output" .links.tcp.profitable_serial)" = false ]
	[ "$(jqv "$output" .links.tcp.profitable_overlap)" = true ]
	[ "$(jqv "$output" .links.rdma.profitable_serial)" = true ]
	[ "$(jqv "$output" .links.tcp.t_serial_s)" = 2.5 ]
	[ "$(jqv "$output" '.links.rdma.speedup_overlap == 2/1.5')" = true ]
}

@test "hit tokens from hit_rate are block-aligned and never include the last prompt token's block" {
	run bcrit --config "$FIX/model-pythia-14m.json" --flops-per-s 1e12 <<<'{"tokens":1024,"hit_rate":1}'
	assert_success
	[ "$(jqv "$output" .hit_tokens)" = 1008 ]
	[ "$(jqv "$output" .hit_bytes)" = 3096576 ]
	run bcrit --block 64 --config "$FIX/model-pythia-14m.json" --flops-per-s 1e12 <<<'{"tokens":1000,"hit_rate":0.5}'
	[ "$(jqv "$output" .hit_tokens)" = 448 ]
}

@test "bcrit --config gives the same answer as kv-bytes | bcrit" {
	in='{"tokens":32768,"hit_rate":0.5}'
	a=$(kv-bytes --config "$FIX/model-qwen2.5-7b.json" <<<"$in" |
	    bcrit --flops-per-s 989e12 --mfu 0.5 --bw rdma=23GB/s |
	    jq -c '{hit_tokens,hit_bytes,t_full_s,t_suffix_s,bcrit_serial_bytes_per_s,bcrit_overlap_bytes_per_s,links}')
	b=$(bcrit --config "$FIX/model-qwen2.5-7b.json" --flops-per-s 989e12 --mfu 0.5 --bw rdma=23GB/s <<<"$in" |
	    jq -c '{hit_tokens,hit_bytes,t_full_s,t_suffix_s,bcrit_serial_bytes_per_s,bcrit_overlap_bytes_per_s,links}')
	[ "$a" = "$b" ]
	[ "$(jqv "$a" .hit_bytes)" = $((57344 * 16384)) ]
}

@test "FLOPs time source: T(N) = prefill_flops / (flops_per_s * mfu)" {
	run bcrit --flops-per-s 1e15 --mfu 0.5 <<<'{"tokens":10,"hit_tokens":5,"hit_bytes":100,"prefill_flops":1e15,"suffix_flops":2.5e14}'
	assert_success
	[ "$(jqv "$output" .t_full_s)" = 2 ]
	[ "$(jqv "$output" .t_suffix_s)" = 0.5 ]
	[ "$(jqv "$output" .t_source)" = flops ]
	[ "$(jqv "$output" .bcrit_serial_bytes_per_s)" = 66.66666666666667 ]
}

@test "fit time source: --fit FILE and fit fields on the record; T_suffix = T(N) - T(H) + a" {
	printf '{"kind":"fit","prefill_a_s":0.5,"prefill_b_s_per_token":0.001,"prefill_c_s_per_token2":1e-06}\n' >"$BATS_TEST_TMPDIR/fit.jsonl"
	run bcrit --fit "$BATS_TEST_TMPDIR/fit.jsonl" <<<'{"tokens":1000,"hit_tokens":500,"hit_bytes":1e6}'
	assert_success
	[ "$(jqv "$output" .t_full_s)" = 2.5 ]
	[ "$(jqv "$output" .t_suffix_s)" = 1.75 ]
	[ "$(jqv "$output" .t_source)" = fit ]
	[ "$(jqv "$output" .bcrit_serial_bytes_per_s)" = 1333333.3333333333 ]
	# fields on the record win over --fit
	run bcrit --fit "$BATS_TEST_TMPDIR/fit.jsonl" <<<'{"tokens":1000,"hit_tokens":500,"hit_bytes":1e6,"prefill_b_s_per_token":0.002}'
	[ "$(jqv "$output" .t_full_s)" = 2 ]
}

@test "fit fields on a record are used only with prefill_b_s_per_token (and the full set for a stated degree)" {
	printf '{"kind":"fit","prefill_a_s":0.5,"prefill_b_s_per_token":0.001,"prefill_c_s_per_token2":1e-06}\n' >"$BATS_TEST_TMPDIR/fit.jsonl"
	run --separate-stderr bcrit --fit "$BATS_TEST_TMPDIR/fit.jsonl" <<-'EOF'
	{"tokens":1000,"hit_tokens":500,"hit_bytes":1e6,"prefill_a_s":1}
	{"tokens":1000,"hit_tokens":500,"hit_bytes":1e6,"prefill_c_s_per_token2":1e-6}
	{"tokens":1000,"hit_tokens":500,"hit_bytes":1e6,"prefill_a_s":0.1,"prefill_b_s_per_token":0.002,"degree":2}
	{"tokens":1000,"hit_tokens":500,"hit_bytes":1e6,"prefill_b_s_per_token":0.002,"prefill_c_s_per_token2":0,"degree":1}
	{"tokens":1000,"hit_tokens":500,"hit_bytes":1e6,"prefill_a_s":0.1,"prefill_b_s_per_token":0.002,"degree":1}
	{"tokens":1000,"hit_tokens":500,"hit_bytes":1e6,"prefill_a_s":0.1,"prefill_b_s_per_token":0.002,"prefill_c_s_per_token2":1e-7,"degree":2}
	{"tokens":1000,"hit_tokens":500,"hit_bytes":1e6}
	EOF
	[ "$status" -eq 65 ]
	[ "${#lines[@]}" -eq 7 ]
	[ "$(jqv "${lines[0]}" .error)" = "missing field 'prefill_b_s_per_token' (fit fields on the record need prefill_b_s_per_token; found 'prefill_a_s')" ]
	[ "$(jqv "${lines[1]}" .error)" = "missing field 'prefill_b_s_per_token' (fit fields on the record need prefill_b_s_per_token; found 'prefill_c_s_per_token2')" ]
	[ "$(jqv "${lines[2]}" .error)" = "missing field 'prefill_c_s_per_token2' (fit fields on the record need all three for degree 2; found 'prefill_a_s')" ]
	[[ "$(jqv "${lines[3]}" .error)" == "missing field 'prefill_a_s' "* ]]
	[ "$(jqv "${lines[4]}" .t_full_s)" = 2.1 ]
	[ "$(jqv "${lines[5]}" .t_full_s)" = 2.2 ]
	[ "$(jqv "${lines[6]}" .t_full_s)" = 2.5 ]
	[[ "$stderr" == "bcrit: stdin:1: missing field 'prefill_b_s_per_token'"* ]]
}

@test "fit output feeds bcrit --fit directly" {
	for n in 1000 2000 4000 8000; do
		echo "{\"tokens\":$n,\"t_s\":$(awk -v n=$n 'BEGIN{print 0.01 + 1e-5*n + 1e-9*n*n}')}"
	done | fit >"$BATS_TEST_TMPDIR/fit.jsonl"
	run bcrit --fit "$BATS_TEST_TMPDIR/fit.jsonl" <<<'{"tokens":8000,"hit_tokens":4000,"kv_bytes_per_token":1000}'
	assert_success
	[ "$(jqv "$output" '(.t_full_s - 0.154) | fabs < 1e-9')" = true ]
}

@test "measured times win over fit and FLOPs; t_lookup_s defaults to 0, --t-lookup sets it" {
	run bcrit --flops-per-s 1e12 <<<'{"tokens":100,"hit_tokens":50,"hit_bytes":1000,"t_full_s":2,"t_suffix_s":1,"prefill_flops":1,"suffix_flops":1}'
	[ "$(jqv "$output" .t_source)" = measured ]
	[ "$(jqv "$output" .t_lookup_s)" = 0 ]
	[ "$(jqv "$output" .bcrit_serial_bytes_per_s)" = 1000 ]
	run bcrit --t-lookup 500ms <<<'{"tokens":100,"hit_tokens":50,"hit_bytes":1000,"t_full_s":2,"t_suffix_s":1}'
	[ "$(jqv "$output" .t_lookup_s)" = 0.5 ]
	[ "$(jqv "$output" .bcrit_serial_bytes_per_s)" = 2000 ]
	run bcrit --t-lookup 500ms <<<"$REC"
	[ "$(jqv "$output" .t_lookup_s)" = 0.5 ]
}

@test "bcrit output fed back into bcrit is not taken for measured times: recomputed from the current source" {
	in='{"tokens":10,"hit_tokens":5,"hit_bytes":100,"prefill_flops":1e15,"suffix_flops":2.5e14}'
	bcrit --flops-per-s 1e15 <<<"$in" >"$BATS_TEST_TMPDIR/a"
	[ "$(jq -r .t_source "$BATS_TEST_TMPDIR/a")" = flops ]
	# a new FLOPs rate recomputes them
	run bcrit --flops-per-s 2e15 <"$BATS_TEST_TMPDIR/a"
	assert_success
	[ "$(jqv "$output" .t_source)" = flops ]
	[ "$(jqv "$output" .t_full_s)" = 0.5 ]
	[ "$(jqv "$output" .t_suffix_s)" = 0.125 ]
	# a fit replaces them, and t_source says so
	printf '{"prefill_a_s":0,"prefill_b_s_per_token":0.1,"prefill_c_s_per_token2":0}\n' >"$BATS_TEST_TMPDIR/fit"
	run bcrit --fit "$BATS_TEST_TMPDIR/fit" <"$BATS_TEST_TMPDIR/a"
	[ "$(jqv "$output" .t_source)" = fit ]
	[ "$(jqv "$output" .t_full_s)" = 1 ]
	[ "$(jqv "$output" .t_suffix_s)" = 0.5 ]
	# no source here: the times stay, still labelled flops, never measured
	run bcrit <"$BATS_TEST_TMPDIR/a"
	assert_success
	[ "$(jqv "$output" .t_source)" = flops ]
	[ "$(jqv "$output" .t_full_s)" = 1 ]
	[ "$(jqv "$output" .bcrit_serial_bytes_per_s)" = 133.33333333333334 ]
}

@test "t_source measured, or no t_source, keeps t_full_s/t_suffix_s as measured times" {
	run --separate-stderr bcrit --flops-per-s 1e15 <<-'EOF'
	{"tokens":10,"hit_tokens":5,"hit_bytes":100,"prefill_flops":1e15,"suffix_flops":2.5e14,"t_full_s":3,"t_suffix_s":1,"t_source":"measured"}
	{"tokens":10,"hit_tokens":5,"hit_bytes":100,"prefill_flops":1e15,"suffix_flops":2.5e14,"t_full_s":3,"t_suffix_s":1}
	{"tokens":10,"hit_tokens":5,"hit_bytes":100,"t_full_s":3,"t_suffix_s":1,"t_source":7}
	{"tokens":10,"hit_tokens":5,"hit_bytes":100,"t_full_s":3,"t_source":"fit"}
	EOF
	[ "$status" -eq 65 ]
	[ "$(jqv "${lines[0]}" '[.t_source, .t_full_s, .t_suffix_s] | map(tostring) | join(" ")')" = "measured 3 1" ]
	[ "$(jqv "${lines[1]}" '[.t_source, .t_full_s, .t_suffix_s] | map(tostring) | join(" ")')" = "measured 3 1" ]
	[ "$(jqv "${lines[2]}" .error)" = "field 't_source' must be a string" ]
	[ "$(jqv "${lines[3]}" .error)" = "missing field 't_suffix_s' (fit times need both)" ]
}

@test "bad records: error record in place, stderr line, status 65, good records kept" {
	run --separate-stderr bcrit <<-'EOF'
	{"tokens":100,"hit_tokens":50,"hit_bytes":1000,"t_full_s":2,"t_suffix_s":1}
	{"hit_tokens":50}
	{"tokens":100}
	{"tokens":100,"hit_tokens":50,"hit_bytes":1000,"t_full_s":2}
	{"tokens":100,"hit_tokens":50,"hit_bytes":1000}
	{"tokens":100,"hit_tokens":50,"t_full_s":2,"t_suffix_s":1}
	{"tokens":100,"hit_tokens":50,"hit_bytes":1000,"t_full_s":2,"t_suffix_s":1,"bw_bytes_per_s":0}
	{"tokens":100,"hit_tokens":50,"hit_bytes":1000,"t_full_s":-2,"t_suffix_s":1}
	{"tokens":100,"hit_tokens":50,"hit_bytes":1000,"t_full_s":"2","t_suffix_s":1}
	{"tokens":1e300,"hit_tokens":50}
	{"tokens":100,"hit_rate":2}
	{bad json
	"a string"
	{"tokens":100,"hit_tokens":50,"hit_bytes":1000,"t_full_s":0,"t_suffix_s":0}
	{"tokens":200,"hit_tokens":50,"hit_bytes":1000,"t_full_s":2,"t_suffix_s":1}
	EOF
	[ "$status" -eq 65 ]
	[ "${#lines[@]}" -eq 15 ]
	[ "$(jqv "${lines[0]}" .state_serial)" = ok ]
	[ "$(jqv "${lines[14]}" .tokens)" = 200 ]
	[ "$(printf '%s\n' "${lines[@]:1:13}" | jq -s '[.[].kind == "error"] | all')" = true ]
	[ "$(jqv "${lines[1]}" .error)" = "missing field 'tokens'" ]
	[ "$(jqv "${lines[2]}" .error)" = "missing field 'hit_tokens' (or 'hit_rate')" ]
	[ "$(jqv "${lines[3]}" .error)" = "missing field 't_suffix_s' (measured times need both)" ]
	[[ "$(jqv "${lines[4]}" .error)" == "missing field 't_full_s' (no prefill time"* ]]
	[[ "$(jqv "${lines[5]}" .error)" == "missing field 'kv_bytes_per_token'"* ]]
	[ "$(jqv "${lines[6]}" .error)" = "field 'bw_bytes_per_s' must be positive" ]
	[ "$(jqv "${lines[7]}" .error)" = "field 't_full_s' must not be negative" ]
	[ "$(jqv "${lines[8]}" .error)" = "field 't_full_s' must be a number" ]
	[[ "$(jqv "${lines[9]}" .error)" == "field 'tokens' out of range"* ]]
	[ "$(jqv "${lines[12]}" .line)" = 13 ]
	[[ "$stderr" == *"bcrit: stdin:12: invalid JSON"* ]]
	[[ "$stderr" == *"bcrit: stdin:14: prefill times out of range"* ]]
}

@test "hit_tokens not below tokens is an error record: the last prompt token is always computed" {
	run --separate-stderr bcrit <<-'EOF'
	{"tokens":100,"hit_tokens":100,"hit_bytes":1000,"t_full_s":2,"t_suffix_s":1}
	{"tokens":100,"hit_tokens":101,"hit_bytes":1000,"t_full_s":2,"t_suffix_s":1}
	{"tokens":100,"hit_tokens":99,"hit_bytes":1000,"t_full_s":2,"t_suffix_s":1}
	EOF
	[ "$status" -eq 65 ]
	[ "${#lines[@]}" -eq 3 ]
	[ "$(jqv "${lines[0]}" .error)" = "hit_tokens must be < tokens: the last prompt token is always computed (hit_tokens 100, tokens 100)" ]
	[ "$(jqv "${lines[1]}" .kind)" = error ]
	[ "$(jqv "${lines[2]}" .state_serial)" = ok ]
	[[ "$stderr" == "bcrit: stdin:1: hit_tokens must be < tokens"* ]]
}

@test "CRLF lines are records; invalid UTF-8 and an over-long line are error records; the next record survives" {
	hostile "$BATS_TEST_TMPDIR/in" "$REC" '{"tokens":200,"hit_tokens":50,"hit_bytes":1000,"t_full_s":2,"t_suffix_s":1}'
	run --separate-stderr bcrit <"$BATS_TEST_TMPDIR/in"
	[ "$status" -eq 65 ]
	[ "${#lines[@]}" -eq 4 ]
	[ "$(jqv "${lines[0]}" .bcrit_serial_bytes_per_s)" = 2000 ]
	[ "$(jq -c '[.kind, .line]' <<<"${lines[1]}")" = '["error",2]' ]
	[[ "$(jqv "${lines[1]}" .error)" == "invalid JSON: unable to decode byte 0xff"* ]]
	[ "$(jq -c . <<<"${lines[2]}")" = '{"kind":"error","line":3,"error":"line longer than 67108864 bytes"}' ]
	[ "$(jqv "${lines[3]}" .tokens)" = 200 ]
	[ "$(jqv "${lines[3]}" .bcrit_serial_bytes_per_s)" = 1000 ]
	[[ "$stderr" == *"bcrit: stdin:2: invalid JSON: unable to decode byte 0xff"* ]]
	[[ "$stderr" == *"bcrit: stdin:3: line longer than 67108864 bytes"* ]]
}

@test "empty input gives empty output and success; blank lines are skipped" {
	run bcrit </dev/null
	assert_success
	assert_output ""
	run bcrit <<<$'\n\r\n'
	assert_success
	assert_output ""
}

@test "--fit with a file of several fits or none is a data error; a missing file is a usage error" {
	printf '{"prefill_b_s_per_token":1}\n{"prefill_b_s_per_token":2}\n' >"$BATS_TEST_TMPDIR/two"
	run bcrit --fit "$BATS_TEST_TMPDIR/two" </dev/null
	[ "$status" -eq 65 ]
	assert_output --partial "holds 2 fit records"
	run bcrit --fit /nonexistent </dev/null
	[ "$status" -eq 2 ]
}

@test "usage errors exit 2, one rule at a time" {
	run bcrit --mfu 0.5
	[ "$status" -eq 2 ]
	assert_output --partial "--mfu needs --flops-per-s"
	run bcrit --fit x --flops-per-s 1e12
	[ "$status" -eq 2 ]
	assert_output --partial "choose one"
	run bcrit --bw 23GB/s
	[ "$status" -eq 2 ]
	assert_output --partial "NAME=BANDWIDTH"
	run bcrit --bw a=1GB/s --bw a=2GB/s
	[ "$status" -eq 2 ]
	assert_output --partial "given twice"
	run bcrit --bw a=12furlongs
	[ "$status" -eq 2 ]
	run bcrit --mfu 1.5 --flops-per-s 1
	[ "$status" -eq 2 ]
	run bcrit --t-lookup -1s
	[ "$status" -eq 2 ]
	run bcrit stray
	[ "$status" -eq 2 ]
}

@test "--help prints the synopsis on stdout; --version names kvgate" {
	run --separate-stderr bcrit --help
	assert_success
	[[ "$output" == usage:\ bcrit* ]]
	run bcrit --version
	assert_output --regexp '^bcrit \(kvgate\) [0-9]'
}

@test "valgrind: bcrit is clean with --config, links and bad records" {
	run_vg bcrit --config "$FIX/model-deepseek-v3.json" --flops-per-s 1e15 --bw tcp=1GB/s <<<$'{"tokens":4096,"hit_rate":0.5}\nbad\n{"tokens":1}'
	[ "$status" -eq 65 ]
}

@test "examples/model.sh prints exactly examples/model.out" {
	run sh "$KVGATE_ROOT/examples/model.sh"
	assert_success
	diff <(printf '%s\n' "$output") "$KVGATE_ROOT/examples/model.out"
}

@test "pipelines/model-grid.sh: 12 grid records, illustrative links and the FLOPs assumption labelled" {
	run sh "$KVGATE_ROOT/pipelines/model-grid.sh" -o "$BATS_TEST_TMPDIR/g"
	assert_success
	assert_output --partial "link bandwidths (illustrative): tcp=2.5GB/s rdma=23GB/s"
	assert_output --partial "ASSUMPTION: T(n) = prefill FLOPs / (989e12 FLOP/s x MFU 0.5)"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/g/grid.jsonl")" -eq 12 ]
	run jq -s -c '[.[] | select(.state_serial == "ok" and .bw_source == "illustrative"
	    and .mfu_assumed == 0.5 and (.links | has("tcp") and has("rdma")))] | length' "$BATS_TEST_TMPDIR/g/grid.jsonl"
	assert_output 12
	run jq -s -c 'map(.tokens) | unique' "$BATS_TEST_TMPDIR/g/grid.jsonl"
	assert_output "[8192,32768,131072]"
	[ -s "$BATS_TEST_TMPDIR/g/table.txt" ]
}

@test "pipelines/model-grid.sh: caller links and a fit replace the illustrative values" {
	printf '{"kind":"fit","prefill_a_s":0.02,"prefill_b_s_per_token":3e-5,"prefill_c_s_per_token2":4e-11}\n' >"$BATS_TEST_TMPDIR/fit.jsonl"
	run sh "$KVGATE_ROOT/pipelines/model-grid.sh" -o "$BATS_TEST_TMPDIR/g" -b tcp=1.1GB/s \
	    -l "measured by tcp-probe" -F "$BATS_TEST_TMPDIR/fit.jsonl" -t 8K -r 0.5
	assert_success
	assert_output --partial "link bandwidths (measured by tcp-probe): tcp=1.1GB/s"
	refute_output --partial ASSUMPTION
	run jq -c '[.t_source, .bw_source, .links.tcp.bw_bytes_per_s, has("mfu_assumed")]' "$BATS_TEST_TMPDIR/g/grid.jsonl"
	assert_output '["fit","measured by tcp-probe",1100000000,false]'
}

@test "pipelines/model-grid.sh: a failing kv-bytes stage fails the pipeline with its status and says why" {
	jq 'del(.num_hidden_layers)' "$FIX/model-qwen2.5-7b.json" >"$BATS_TEST_TMPDIR/c.json"
	run --separate-stderr sh "$KVGATE_ROOT/pipelines/model-grid.sh" -c "$BATS_TEST_TMPDIR/c.json" -o "$BATS_TEST_TMPDIR/g"
	[ "$status" -eq 65 ]
	[ "$output" = "" ]
	[[ "$stderr" == *"model-grid.sh: kv-bytes failed with status 65: $BATS_TEST_TMPDIR/c.json: missing field 'num_hidden_layers'"* ]]
	[ ! -s "$BATS_TEST_TMPDIR/g/table.txt" ]
}

@test "pipelines/model-grid.sh: a failing bcrit stage, or a grid with error records, is not success" {
	printf '{"prefill_b_s_per_token":1}\n{"prefill_b_s_per_token":2}\n' >"$BATS_TEST_TMPDIR/two"
	run --separate-stderr sh "$KVGATE_ROOT/pipelines/model-grid.sh" -o "$BATS_TEST_TMPDIR/g" -F "$BATS_TEST_TMPDIR/two"
	[ "$status" -eq 65 ]
	[[ "$stderr" == *"model-grid.sh: bcrit failed with status 65"* ]]
	# a zero-token prompt has no prefill time: error records from bcrit
	run --separate-stderr sh "$KVGATE_ROOT/pipelines/model-grid.sh" -o "$BATS_TEST_TMPDIR/g" -t 8K,0 -r 0.5
	[ "$status" -eq 65 ]
	[[ "$stderr" == *"model-grid.sh: bcrit failed with status 65: prefill times out of range"* ]]
	[ "$(jq -s 'map(select(.kind == "error")) | length' "$BATS_TEST_TMPDIR/g/grid.jsonl")" -eq 1 ]
}
