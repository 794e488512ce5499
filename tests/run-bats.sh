#!/bin/sh
# SPDX-License-Identifier: MIT
# Run every bats file (tests/*.bats, tests/hw/*.bats) against $KVGATE_BIN,
# echo the TAP stream, and close with "LABEL: N passed, N failed, N skipped".
# Fails when bats fails, when any test fails, or when the number of results
# differs from the TAP plan (a crashed run).
label=${1:-bats}
dir=$(dirname "$0")
command -v bats >/dev/null || { echo "$label: bats not installed (make deps)"; exit 69; }
log=$(mktemp) || exit 74
trap 'rm -f "$log" "$log.rc"' EXIT
files=$(ls "$dir"/*.bats "$dir"/hw/*.bats 2>/dev/null)
[ -n "$files" ] || { echo "$label: no bats files"; exit 1; }
# shellcheck disable=SC2086
{ bats --tap $files; echo $? >"$log.rc"; } | tee "$log"
rc=$(cat "$log.rc")
plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\)$/\1/p' "$log" | head -n 1)
pass=$(grep -c '^ok ' "$log")
skip=$(grep -c '^ok .* # skip' "$log")
fail=$(grep -c '^not ok ' "$log")
echo "$label: $((pass - skip)) passed, $fail failed, $skip skipped"
if [ -z "$plan" ] || [ "$plan" -ne $((pass + fail)) ]; then
	echo "$label: bats planned ${plan:-no} tests but reported $((pass + fail))"
	exit 1
fi
[ "$fail" -eq 0 ] && [ "$rc" -eq 0 ]
