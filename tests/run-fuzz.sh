#!/bin/sh
# SPDX-License-Identifier: MIT
# run-fuzz.sh DIR SECONDS NAME...: run each libFuzzer harness for SECONDS,
# seeded from fuzz/corpus/NAME when it exists.
dir=$1 secs=$2
shift 2
rc=0
for f in "$@"; do
	corpus=fuzz/corpus/$f
	work=$(mktemp -d) || exit 74
	[ -d "$corpus" ] && cp -r "$corpus"/. "$work"/
	printf 'fuzz %s: ' "$f"
	if "$dir/$f" -max_total_time="$secs" -rss_limit_mb=2048 \
	    -print_final_stats=0 "$work" >"$work.log" 2>&1; then
		echo "ok ($(grep -o 'pulse.*\|DONE.*' "$work.log" | tail -1))"
	else
		echo "FAILED"; tail -40 "$work.log"; rc=1
	fi
	rm -rf "$work" "$work.log"
done
exit $rc
