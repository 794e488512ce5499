#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/stats.sh: RECORDS (default 1,000,000) req-stream-shaped result
# records through stats versus a jq + sort + awk pipeline computing the same
# percentiles (type 7) of ttft_s and e2e_s over the successful requests.
# Both sides parse every line in full (stats with jansson, jq with its own
# parser), so the ratio is mostly jansson's parse speed against jq's.
# Knobs: KVGATE_BIN, RECORDS.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
BIN=${KVGATE_BIN:-$root/build/bin}
PATH=$BIN:$PATH
RECORDS=${RECORDS:-1000000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
command -v jq >/dev/null || { echo "bench: jq not found" >&2; exit 69; }

awk -v n="$RECORDS" 'BEGIN {
	srand(1)
	for (i = 0; i < n; i++) {
		ok = rand() < 0.98
		t = 0.05 + rand() * rand() * 2; e = t + 1 + rand() * 3; s = i * 0.001
		printf "{\"kind\":\"result\",\"id\":%d,\"arrival_s\":%.6f,\"tokens\":8192,\"prefix_id\":%d,\"expected_hit_tokens\":2448,\"max_tokens\":64,\"ok\":%s,\"http_status\":%d,\"error\":%s,\"scheduled_s\":%.6f,\"sent_s\":%.6f,\"first_token_s\":%.6f,\"done_s\":%.6f,\"ttft_s\":%s,\"e2e_s\":%.9f,\"queue_s\":0,\"lag_s\":0.000041,\"itl_p50_s\":0.0121,\"itl_p99_s\":0.0301,\"itl_max_s\":0.0412,\"itl_count\":63,\"prompt_tokens\":8192,\"cached_tokens\":2448,\"output_tokens\":64,\"output_sha256\":\"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824\",\"finish_reason\":\"length\",\"concurrency_at_send\":%d}\n",
		    i, s, i % 8, ok ? "true" : "false", ok ? 200 : 500, ok ? "null" : "\"http_5xx\"", s, s, s + t, s + e,
		    ok ? sprintf("%.9f", t) : "null", e, 1 + i % 50
	}
}' >"$tmp/r"
echo "input: $RECORDS records, $(du -m "$tmp/r" | cut -f1) MB"

# timed COMMAND: wall and CPU (user + sys, children included) seconds
timed() {
	/usr/bin/time -f '%e %U %S' -o "$tmp/time" sh -c "$1"
	awk '{printf "%.2f %.2f", $1, $2 + $3}' "$tmp/time"
}
ours=$(timed "stats --metrics ttft_s,e2e_s --percentiles 50,90,99 --bootstrap 0 <'$tmp/r' >'$tmp/s'")
boot=$(timed "stats --metrics ttft_s,e2e_s --percentiles 50,90,99 --bootstrap 2000 <'$tmp/r' >'$tmp/sb'")
pct='{ v[NR] = $1 } END { split("50 90 99", p, " "); for (k = 1; k <= 3; k++) {
	h = (NR - 1) * p[k] / 100; lo = int(h); hi = lo + 2; if (hi > NR) hi = NR
	printf "%s%.9g", (k > 1 ? " " : ""), v[lo + 1] + (h - lo) * (v[hi] - v[lo + 1]) } print "" }'
echo "$pct" >"$tmp/pct.awk"
theirs=$(timed "jq -r 'select(.ok) | \"\\(.ttft_s) \\(.e2e_s)\"' <'$tmp/r' >'$tmp/cols' &&
	cut -d' ' -f1 '$tmp/cols' | sort -g | awk -f '$tmp/pct.awk' >'$tmp/jt' &&
	cut -d' ' -f2 '$tmp/cols' | sort -g | awk -f '$tmp/pct.awk' >'$tmp/je'")

ours_t=$(jq -r '[.ttft_s.p50, .ttft_s.p90, .ttft_s.p99] | map(. * 1e6 | round) | @tsv' "$tmp/s")
theirs_t=$(awk '{for (i = 1; i <= NF; i++) printf "%s%d", (i > 1 ? "\t" : ""), $i * 1e6 + 0.5; print ""}' "$tmp/jt")
echo "ttft_s p50/p90/p99 (us): stats $ours_t | jq+sort $theirs_t"
[ "$ours_t" = "$theirs_t" ] && echo "percentiles agree" || echo "PERCENTILES DIFFER"
set -- $ours $boot $theirs
awk -v sw="$1" -v sc="$2" -v bw="$3" -v bc="$4" -v jw="$5" -v jc="$6" -v n="$RECORDS" 'BEGIN {
	printf "stats (no bootstrap):    wall %6.2f s  cpu %6.2f s  (%.0f records/s wall)\n", sw, sc, n / sw
	printf "stats (2000-sample CIs): wall %6.2f s  cpu %6.2f s\n", bw, bc
	printf "jq + sort + awk:         wall %6.2f s  cpu %6.2f s  (%.0f records/s wall)\n", jw, jc, n / jw
	printf "ratio jq+sort / stats:   wall %.1fx  cpu %.1fx (goal >= 10x); with CIs wall %.1fx\n", jw / sw, jc / sc, jw / bw
}'
