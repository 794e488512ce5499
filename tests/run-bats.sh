#!/bin/sh
# SPDX-License-Identifier: MIT
# Run every bats file (tests/*.bats, tests/hw/*.bats) against $KVGATE_BIN,
# echo the TAP stream, and close with "LABEL: N passed, N failed, N skipped".
label=${1:-bats}
dir=$(dirname "$0")
log=$(mktemp) || exit 74
trap 'rm -f "$log"' EXIT
files=$(ls "$dir"/*.bats "$dir"/hw/*.bats 2>/dev/null)
[ -n "$files" ] || { echo "$label: no bats files"; exit 1; }
# shellcheck disable=SC2086
bats --tap $files | tee "$log"
rc=$?
pass=$(grep -c '^ok ' "$log")
skip=$(grep -c '^ok .* # skip' "$log")
fail=$(grep -c '^not ok ' "$log")
echo "$label: $((pass - skip)) passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ] && [ "$rc" -eq 0 ]
