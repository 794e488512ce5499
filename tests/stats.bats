#!/usr/bin/env bats
# SPDX-License-Identifier: MIT

bats_require_minimum_version 1.5.0

setup() {
	load helpers
	R=$FIX/stats-results.jsonl
}

@test "stats --help prints the synopsis and exits 0" {
	run stats --help
	assert_success
	assert_output --partial "usage: stats [--by FIELD,...]"
}

@test "stats --version names kvgate" {
	run stats --version
	assert_success
	assert_output --regexp "^stats \(kvgate\) [0-9]"
}

@test "stats rejects bad options with status 2" {
	for a in "--percentiles 101" "--percentiles x" "--ci 1.5" "--bootstrap -1" \
	    "--slo ttft_s" "--slo ttft_s<=abc" "--nodes 2" "--metrics ," "--seed x" "extra"; do
		run stats $a </dev/null
		[ "$status" -eq 2 ] || { echo "accepted: $a"; return 1; }
	done
	run stats --slo "=<3" </dev/null
	assert_failure 2
	assert_output --partial "is not FIELD<=LIMIT"
}

@test "failures stay in the denominators and every figure matches a hand computation" {
	run sh -c "stats --slo 'ttft_s<=0.2' --cost-per-hour 3.6 --nodes 2 --percentiles 50,90 --bootstrap 0 <'$R' | jq -c '[.n, .ok, .failed, .errors, .error_rate, .span_s, .qpm, .slo_met, .goodput_qpm, .concurrency_mean, .concurrency_peak, .cost_per_1k_requests]'"
	assert_output '[5,3,2,{"timeout":1,"bad_input":1},0.4,6,30,2,20,1.83333333333,3,4]'
	run sh -c "stats --percentiles 50,90 --bootstrap 0 <'$R' | jq -c '[.ttft_s.n, .ttft_s.mean, .ttft_s.min, .ttft_s.max, .ttft_s.p50, .ttft_s.p90, .e2e_s.p90]'"
	assert_output '[3,0.2,0.1,0.3,0.2,0.28,2.8]'
}

@test "--by groups by field values in order of first appearance" {
	run sh -c "stats --by model --metrics ttft_s --percentiles 50 --bootstrap 0 <'$R' | jq -c '[.model, .n, .ok, .failed, .ttft_s.p50, .concurrency_peak, .span_state]'"
	assert_output "$(printf '%s\n' '["a",2,2,0,0.15,2,null]' '["b",2,1,1,0.3,2,null]' '[null,1,0,1,null,0,"no_times"]')"
}

@test "percentile names with decimals use an underscore" {
	run sh -c "stats --percentiles 99.9 --bootstrap 0 <'$R' | jq -c '.ttft_s | keys'"
	assert_output '["max","mean","min","n","p99_9"]'
}

@test "bootstrap intervals are deterministic for a seed and bracket the estimate" {
	seq 1 1000 | awk '{printf "{\"ok\":true,\"ttft_s\":%f,\"sent_s\":%d,\"done_s\":%d}\n", ($1*7919)%1000/1000, $1, $1+1}' >"$BATS_TEST_TMPDIR/r"
	a=$(stats --seed 7 <"$BATS_TEST_TMPDIR/r")
	b=$(stats --seed 7 <"$BATS_TEST_TMPDIR/r")
	c=$(stats --seed 8 <"$BATS_TEST_TMPDIR/r")
	[ "$a" = "$b" ]
	[ "$a" != "$c" ]
	run jqv "$a" '.ttft_s | [.p50_ci_low < .p50, .p50 < .p50_ci_high, .p99_ci_low <= .p99, .p99 <= .p99_ci_high] | all'
	assert_output true
	run jqv "$a" '.concurrency_peak'
	assert_output 1
}

@test "a run with no successes has null rates with a state, never infinity" {
	printf '%s\n' '{"ok":false,"error":"connect","sent_s":1,"done_s":1}' >"$BATS_TEST_TMPDIR/r"
	run sh -c "stats --cost-per-hour 1 <'$BATS_TEST_TMPDIR/r' | jq -c '[.error_rate, .span_s, .span_state, .qpm, .cost_per_1k_requests, .cost_state, .ttft_s.state]'"
	assert_output '[1,null,"zero_span",null,null,"no_successes","no_values"]'
}

@test "empty input gives one empty summary" {
	run sh -c "stats </dev/null | jq -c '[.n, .error_rate, .state]'"
	assert_success
	assert_output '[0,null,"no_requests"]'
}

@test "bad lines become error records with stderr lines and exit 65, and count as failed bad_input" {
	printf '%s\n' '{"ok":true,"ttft_s":1}' 'garbage' '{"ok":"yes"}' '{"ttft_s":1}' \
	    '{"ok":true,"ttft_s":"fast"}' '[1,2]' '{"ok":true,"ttft_s":1e999}' \
	    '{"ok":true,"sent_s":"x"}' '' '{"ok":false,"error":"timeout"}' >"$BATS_TEST_TMPDIR/r"
	run --separate-stderr stats <"$BATS_TEST_TMPDIR/r"
	assert_failure 65
	[ "${#lines[@]}" -eq 8 ]
	run sh -c "stats <'$BATS_TEST_TMPDIR/r' 2>/dev/null | jq -c 'select(.kind == \"error\") | .line'"
	assert_output "$(printf '%s\n' 2 3 4 5 6 7 8)"
	run sh -c "stats <'$BATS_TEST_TMPDIR/r' 2>/dev/null | jq -c 'select(.kind == \"summary\") | [.n, .ok, .failed, .errors, .error_rate]'"
	assert_output '[9,1,8,{"bad_input":7,"timeout":1},0.888888888889]'
	run sh -c "stats <'$BATS_TEST_TMPDIR/r' 2>&1 >/dev/null"
	assert_line --index 0 --partial "stats: stdin:2: invalid JSON"
	assert_line --index 1 "stats: stdin:3: field 'ok' is not a boolean"
	assert_line --index 2 "stats: stdin:4: missing field 'ok'"
	run stats --strict <"$BATS_TEST_TMPDIR/r"
	assert_failure 65
}

@test "CRLF line ends are accepted" {
	printf '{"ok":true,"ttft_s":2}\r\n{"ok":true,"ttft_s":4}\r\n' >"$BATS_TEST_TMPDIR/r"
	run sh -c "stats --bootstrap 0 <'$BATS_TEST_TMPDIR/r' | jq -c '.ttft_s.p50'"
	assert_output 3
}

@test "a write error on stdout exits 74" {
	run sh -c "stats <'$R' >/dev/full"
	assert_failure 74
}

@test "stats is valgrind-clean" {
	run_vg stats --by model --slo 'e2e_s<=2' --cost-per-hour 1 --bootstrap 200 <"$R"
	assert_success
	[ "${#lines[@]}" -eq 3 ]
}

@test "keys, kinds, group values and error classes are compared decoded, escapes aside" {
	printf '%s\n' '{"\u006fk":true,"model":"a","ttft_s":1}' '{"ok":true,"model":"\u0061","ttft\u005fs":3}' \
	    '{"ok":false,"model":"a","error":"time\u006fut"}' '{"ok":false,"model":"a","error":"timeout"}' \
	    '{"kind":"\u0065rror","model":"a"}' >"$BATS_TEST_TMPDIR/r"
	run sh -c "stats --by model --metrics ttft_s --percentiles 50 --bootstrap 0 <'$BATS_TEST_TMPDIR/r' | jq -c '[.model, .n, .ok, .errors, .ttft_s.p50]'"
	assert_success
	assert_output '["a",5,2,{"timeout":2,"bad_input":1},2]'
}

@test "group values that are objects group alike whatever their key order" {
	printf '%s\n' '{"ok":true,"m":{"x":1,"y":2}}' '{"ok":true,"m":{"y":2,"x":1}}' '{"ok":true,"m":{"x":1}}' >"$BATS_TEST_TMPDIR/r"
	run sh -c "stats --by m --bootstrap 0 <'$BATS_TEST_TMPDIR/r' | jq -c '[.m, .n]'"
	assert_output "$(printf '%s\n' '[{"x":1,"y":2},2]' '[{"x":1},1]')"
}

@test "a line jansson rejects is a bad line even in a field stats does not read" {
	printf '%s\n' '{"ok":true,"id":123456789012345678901234567890}' '{"ok":true}' >"$BATS_TEST_TMPDIR/r"
	run --separate-stderr stats --bootstrap 0 <"$BATS_TEST_TMPDIR/r"
	assert_failure 65
	assert_line --index 0 --regexp '^\{"kind":"error","line":1,"error":"invalid JSON: too big integer \(column [0-9]+\)"\}$'
	[[ "$stderr" =~ ^"stats: stdin:1: invalid JSON: too big integer (column "[0-9]+")"$ ]]
	run jqv "${lines[1]}" '"\(.n) \(.ok) \(.errors.bad_input)"'
	assert_output '2 1 1'
}

@test "a line holding a NUL byte is one bad line and the next line still counts" {
	printf '{"ok":true}\n{"ok":\0true}\n{"ok":true}\n' >"$BATS_TEST_TMPDIR/r"
	run sh -c "stats --bootstrap 0 <'$BATS_TEST_TMPDIR/r' 2>/dev/null | jq -c '[.line, .n]'"
	assert_output "$(printf '%s\n' '[2,null]' '[null,3]')"
}

@test "a rejected line counts in its group when its --by fields can be read, else in none" {
	printf '%s\n' '{"model":"a","ok":true}' '{"model":"a","ok":"yes"}' 'garbage' \
	    '{"model":"b","ok":false,"error":"timeout"}' '{"model":"b","ttft_s":1}' '[1]' >"$BATS_TEST_TMPDIR/r"
	run sh -c "stats --by model --bootstrap 0 <'$BATS_TEST_TMPDIR/r' 2>/dev/null | jq -c '[.kind, .line // .model, .n, .ok, .failed, .errors]'"
	assert_output "$(printf '%s\n' '["error",2,null,null,null,null]' '["error",3,null,null,null,null]' \
	    '["error",5,null,null,null,null]' '["error",6,null,null,null,null]' \
	    '["summary","a",2,1,1,{"bad_input":1}]' '["summary","b",2,0,2,{"timeout":1,"bad_input":1}]')"
	run sh -c "stats --by model <'$BATS_TEST_TMPDIR/r' >/dev/null 2>&1"
	assert_failure 65
}
