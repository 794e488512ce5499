#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# fit: least-squares T(n) = a + b·n + c·n², grouping, medians, degenerate input.

bats_require_minimum_version 1.5.0
load helpers

# hostile FILE FIRST LAST: FIRST with a CRLF ending, a record with invalid
# UTF-8, a line one byte over the reader's 64 MiB limit, then LAST (CRLF).
hostile() {
	{ printf '%s\r\n' "$2"; printf '{"note":"\xff\xfe"}\n'
	  head -c $((64 * 1024 * 1024 + 1)) /dev/zero | tr '\0' x
	  printf '\n%s\r\n' "$3"; } >"$1"
}

# points of T(n) = 0.02 + 3e-5·n + 4e-11·n² at n = 1K .. 1M
points() {
	awk -v extra="$1" 'BEGIN { for (n = 1024; n <= 1048576; n *= 2)
		printf "{%s\"tokens\":%d,\"t_s\":%.17g}\n", extra, n, 0.02 + 3e-5*n + 4e-11*n*n }'
}

@test "recovers known coefficients exactly for n up to 1M tokens" {
	run fit < <(points)
	assert_success
	[ "${#lines[@]}" -eq 1 ]
	[ "$(jqv "$output" .kind)" = fit ]
	[ "$(jqv "$output" '(.prefill_a_s - 0.02 | fabs) < 1e-9')" = true ]
	[ "$(jqv "$output" '(.prefill_b_s_per_token / 3e-5 - 1 | fabs) < 1e-9')" = true ]
	[ "$(jqv "$output" '(.prefill_c_s_per_token2 / 4e-11 - 1 | fabs) < 1e-9')" = true ]
	[ "$(jqv "$output" '.r2 > 0.999999999')" = true ]
	[ "$(jqv "$output" '.rmse_s < 1e-9')" = true ]
	[ "$(jqv "$output" .n_points)" = 11 ]
	[ "$(jqv "$output" .tokens_min)" = 1024 ]
	[ "$(jqv "$output" .tokens_max)" = 1048576 ]
	[ "$(jqv "$output" .degree)" = 2 ]
}

@test "--degree 1 and --through-origin fit fewer coefficients" {
	run fit --degree 1 <<<$'{"tokens":1,"t_s":3}\n{"tokens":2,"t_s":5}\n{"tokens":4,"t_s":9}'
	assert_success
	[ "$(jqv "$output" '(.prefill_a_s - 1 | fabs) < 1e-12')" = true ]
	[ "$(jqv "$output" '(.prefill_b_s_per_token - 2 | fabs) < 1e-12')" = true ]
	[ "$(jqv "$output" .prefill_c_s_per_token2)" = 0 ]
	run fit --degree 1 --through-origin <<<$'{"tokens":1,"t_s":2}\n{"tokens":3,"t_s":6}'
	[ "$(jqv "$output" .prefill_a_s)" = 0 ]
	[ "$(jqv "$output" '(.prefill_b_s_per_token - 2 | fabs) < 1e-12')" = true ]
	[ "$(jqv "$output" .through_origin)" = true ]
}

@test "--by groups records and fits each group, in order of first appearance" {
	run fit --by model,gpu < <(points '"model":"b","gpu":"h200",'; points '"model":"a","gpu":"h200",')
	assert_success
	[ "${#lines[@]}" -eq 2 ]
	[ "$(jqv "${lines[0]}" .model)" = b ]
	[ "$(jqv "${lines[1]}" .model)" = a ]
	[ "$(jqv "${lines[1]}" .gpu)" = h200 ]
	[ "$(jqv "${lines[1]}" .n_points)" = 11 ]
}

@test "--median fits the median per token count, ignoring an outlier" {
	run fit --median < <(points; points; points | sed 's/"t_s":[^}]*/"t_s":1000/')
	assert_success
	[ "$(jqv "$output" .n_points)" = 11 ]
	[ "$(jqv "$output" .n_records)" = 33 ]
	[ "$(jqv "$output" '(.prefill_c_s_per_token2 / 4e-11 - 1 | fabs) < 1e-9')" = true ]
}

@test "--x and --y select the field names" {
	run fit --x n --y ttft_s <<<$'{"n":1,"ttft_s":1}\n{"n":2,"ttft_s":4}\n{"n":3,"ttft_s":9}'
	assert_success
	[ "$(jqv "$output" '(.prefill_c_s_per_token2 - 1 | fabs) < 1e-12')" = true ]
}

@test "fewer points than parameters is an error record with status 65" {
	run --separate-stderr fit <<<$'{"tokens":1,"t_s":1}\n{"tokens":2,"t_s":2}'
	[ "$status" -eq 65 ]
	[ "$(jqv "$output" .kind)" = error ]
	[ "$(jqv "$output" .error)" = "2 points, need at least 3 for this fit" ]
	[ "$(jqv "$output" .line)" = 2 ]
	[ "$stderr" = "fit: stdin:2: group {}: 2 points, need at least 3 for this fit" ]
	run fit --by g <<<$'{"g":1,"tokens":1,"t_s":1}\n{"g":1,"tokens":1,"t_s":2}\n{"g":1,"tokens":1,"t_s":3}'
	[ "$status" -eq 65 ]
	[[ "$output" == *"1 distinct token count"* ]]
}

@test "a group's error record names the line of the group's last point; --by values never replace kind, line or error" {
	run --separate-stderr fit --by g,line <<-'EOF'
	{"g":"a","line":"x","tokens":1,"t_s":1}
	{"g":"b","line":"x","tokens":1,"t_s":1}
	{"g":"a","line":"x","tokens":2,"t_s":2}

	{"g":"b","line":"x","tokens":5,"t_s":2}
	{"g":"b","line":"x","tokens":6,"t_s":2}
	EOF
	[ "$status" -eq 65 ]
	[ "${#lines[@]}" -eq 2 ]
	[ "$(jq -c '[.kind, .line, .g, .n_points]' <<<"${lines[0]}")" = '["error",3,"a",2]' ]
	[ "$(jq -c '[.kind, .g, .n_points]' <<<"${lines[1]}")" = '["fit","b",3]' ]
	[ "$stderr" = 'fit: stdin:3: group {"g":"a","line":"x"}: 2 points, need at least 3 for this fit' ]
	run --separate-stderr fit --by kind <<<'{"kind":"k","tokens":1,"t_s":1}'
	[ "$(jqv "$output" .kind)" = error ]
}

@test "one bad group does not hide the good ones" {
	run --separate-stderr fit --by g < <(points '"g":"ok",'; echo '{"g":"few","tokens":1,"t_s":1}')
	[ "$status" -eq 65 ]
	[ "$(jqv "${lines[0]}" .kind)" = fit ]
	[ "$(jqv "${lines[1]}" .kind)" = error ]
	[ "$(jqv "${lines[1]}" .g)" = few ]
}

@test "bad records: error records with line numbers, status 65, the rest still fitted" {
	run --separate-stderr fit < <(points; printf '%s\n' '{"tokens":1}' 'not json' '{"tokens":"x","t_s":1}' '{"tokens":-1,"t_s":1}' '{"tokens":1,"t_s":1e999}' '[]')
	[ "$status" -eq 65 ]
	[ "${#lines[@]}" -eq 7 ]
	[ "$(jqv "${lines[0]}" .error)" = "missing field 't_s'" ]
	[ "$(jqv "${lines[0]}" .line)" = 12 ]
	[ "$(jqv "${lines[2]}" .error)" = "field 'tokens' must be a number" ]
	[ "$(jqv "${lines[3]}" .error)" = "field 'tokens' must not be negative" ]
	[ "$(jqv "${lines[6]}" .kind)" = fit ]
	[ "$(jqv "${lines[6]}" .n_points)" = 11 ]
	[[ "$stderr" == *"fit: stdin:13: invalid JSON"* ]]
}

@test "CRLF lines are records; invalid UTF-8 and an over-long line are error records; the next record is still fitted" {
	hostile "$BATS_TEST_TMPDIR/in" '{"tokens":1,"t_s":1}' '{"tokens":3,"t_s":9}'
	printf '{"tokens":2,"t_s":4}\r\n' >>"$BATS_TEST_TMPDIR/in"
	run --separate-stderr fit <"$BATS_TEST_TMPDIR/in"
	[ "$status" -eq 65 ]
	[ "${#lines[@]}" -eq 3 ]
	[ "$(jq -c '[.kind, .line]' <<<"${lines[0]}")" = '["error",2]' ]
	[[ "$(jqv "${lines[0]}" .error)" == "invalid JSON: unable to decode byte 0xff"* ]]
	[ "$(jq -c . <<<"${lines[1]}")" = '{"kind":"error","line":3,"error":"line longer than 67108864 bytes"}' ]
	# the three CRLF points, y = n^2 exactly
	[ "$(jqv "${lines[2]}" .kind)" = fit ]
	[ "$(jqv "${lines[2]}" .n_points)" = 3 ]
	[ "$(jqv "${lines[2]}" '(.prefill_c_s_per_token2 - 1 | fabs) < 1e-12')" = true ]
	[[ "$stderr" == *"fit: stdin:2: invalid JSON: unable to decode byte 0xff"* ]]
	[[ "$stderr" == *"fit: stdin:3: line longer than 67108864 bytes"* ]]
}

@test "--strict stops at the first bad record and fits nothing" {
	run --separate-stderr fit --strict < <(points; echo nope; points)
	[ "$status" -eq 65 ]
	[ "${#lines[@]}" -eq 1 ]
	[ "$(jqv "$output" .kind)" = error ]
}

@test "empty input is an error record: no data points" {
	run --separate-stderr fit </dev/null
	[ "$status" -eq 65 ]
	[ "$(jqv "$output" .error)" = "no data points: records need 'tokens' and 't_s'" ]
}

@test "usage errors exit 2" {
	run fit --degree 3
	[ "$status" -eq 2 ]
	run fit --x tokens --y tokens
	[ "$status" -eq 2 ]
	run fit --by ,
	[ "$status" -eq 2 ]
	run fit --nope
	[ "$status" -eq 2 ]
	run fit stray
	[ "$status" -eq 2 ]
}

@test "--help prints the synopsis on stdout; --version names kvgate" {
	run --separate-stderr fit --help
	assert_success
	[[ "$output" == usage:\ fit* ]]
	run fit --version
	assert_output --regexp '^fit \(kvgate\) [0-9]'
}

@test "valgrind: fit is clean with groups, medians and bad records" {
	run_vg fit --median --by g < <(points '"g":1,'; points '"g":2,'; echo bad; echo '{"g":3,"tokens":1,"t_s":1}')
	[ "$status" -eq 65 ]
}
