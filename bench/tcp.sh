#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/tcp.sh: tcp-probe against its peers on loopback, in one run.
#   1. tcp-probe --verify none  vs  iperf3, same stream count and duration
#      (goal: >= 0.9x iperf3's throughput)
#   2. tcp-probe --verify sha256  vs  the SHA-256 limit: openssl speed -evp
#      sha256 (1 MiB blocks) times the receiving threads that can run at
#      once, min(streams, cores) (goal: >= 0.8 of that limit or of iperf3,
#      whichever is lower)
# On loopback the sender, the receiver's copies and the hashing share the
# same cores, so the record also gives the bound where copy and hash costs
# add: 1 / (1/iperf3 + 1/limit).
# Knobs: BENCH_DURATION (default 5s), BENCH_STREAMS (default 2),
# BENCH_REPEAT (default 2: each measurement alternated and its best kept),
# KVGATE_BIN.  About 35 s at the defaults.
# Prints one JSON record per measurement, then a summary with the ratios.
set -eu
KVGATE_BIN=${KVGATE_BIN:-$(cd "$(dirname "$0")/.." && pwd)/build/bin}
PATH=$KVGATE_BIN:$PATH
dur=${BENCH_DURATION:-5s}
P=${BENCH_STREAMS:-2}
REPEAT=${BENCH_REPEAT:-2}
secs=$(printf '%s' "$dur" | sed 's/s$//')
case $secs in *[!0-9]*|'') echo "bench/tcp.sh: BENCH_DURATION must be whole seconds (5s)" >&2; exit 2 ;; esac
for c in tcp-probe iperf3 openssl jq; do
	command -v "$c" >/dev/null || { echo "bench/tcp.sh: $c not found" >&2; exit 69; }
done
tmp=$(mktemp -d)
srv=
cleanup() {
	[ -n "$srv" ] && kill "$srv" 2>/dev/null && wait "$srv" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# iperf3: a one-shot server on a free port per run
iperf_run() {
	port=$(free_port)
	iperf3 -s -1 -B 127.0.0.1 -p "$port" >/dev/null 2>&1 &
	srv=$!
	sleep 0.5
	timeout $((secs + 30)) iperf3 -c 127.0.0.1 -p "$port" -P "$P" -t "$secs" \
	    -J >"$tmp/iperf.json"
	wait "$srv" 2>/dev/null || true
	srv=''
	jq '.end.sum_received.bits_per_second / 8' "$tmp/iperf.json"
}

# tcp-probe server on an ephemeral port
start_probe_server() {
	tcp-probe server --bind 127.0.0.1 --port 0 >"$tmp/srv.out" \
	    2>"$tmp/srv.err" &
	srv=$!
	tport=''
	for _ in $(seq 100); do
		tport=$(jq -r 'select(.kind=="listening").port' "$tmp/srv.out" \
		    2>/dev/null | head -1)
		[ -n "$tport" ] && break
		sleep 0.05
	done
}
start_probe_server
probe() {
	tcp-probe client 127.0.0.1 --port "$tport" -P "$P" --duration "$dur" \
	    --interval 0 --verify "$1" | jq -c 'select(.kind=="summary")'
}
# Alternate the three runs REPEAT times and keep each one's best, so that
# a burst of load from elsewhere does not decide a ratio.
best() { jq -s -c 'max_by(.goodput_bytes_per_s? // .)'; }
: >"$tmp/i" ; : >"$tmp/n" ; : >"$tmp/s"
r=0
while [ "$r" -lt "$REPEAT" ]; do
	probe none >>"$tmp/n"
	probe sha256 >>"$tmp/s"
	kill "$srv" 2>/dev/null; wait "$srv" 2>/dev/null || true; srv=''
	iperf_run >>"$tmp/i"
	start_probe_server
	r=$((r + 1))
done
iperf=$(best <"$tmp/i")
none=$(best <"$tmp/n")
sha=$(best <"$tmp/s")

# the SHA-256 limit of one core, on the frame size tcp-probe uses
spd=$(openssl speed -evp sha256 -bytes 1048576 -seconds 2 2>/dev/null | tail -1 |
    awk '{ v = $NF; sub(/k$/, "", v); print v * 1000 }')
cores=$(nproc)
threads=$(( P < cores ? P : cores ))

jq -nc --argjson i "$iperf" --argjson n "$none" --argjson s "$sha" \
    --argjson spd "$spd" --argjson th "$threads" --arg dur "$dur" --argjson p "$P" \
    --argjson rep "$REPEAT" '
  ($n.goodput_bytes_per_s) as $gn | ($s.goodput_bytes_per_s) as $gs |
  ($spd * $th) as $lim | ([$lim, $i] | min) as $goal2 |
  {kind:"bench", bench:"tcp", duration:$dur, streams:$p, repeat:$rep,
   iperf3_bytes_per_s:$i,
   tcp_probe_none_bytes_per_s:$gn, tcp_probe_none_verified:$n.verified,
   tcp_probe_sha256_bytes_per_s:$gs, tcp_probe_sha256_verified:$s.verified,
   openssl_sha256_bytes_per_s_per_core:$spd, receiving_threads:$th,
   sha256_limit_bytes_per_s:$lim,
   ratio_none_vs_iperf3:($gn / $i),
   ratio_sha256_vs_limit:($gs / $lim),
   ratio_sha256_vs_iperf3:($gs / $i),
   ratio_sha256_vs_goal_base:($gs / $goal2),
   # on loopback the same cores copy (as iperf3 does) and hash: if the two
   # costs add, a byte costs 1/iperf3 + 1/limit seconds of the machine
   loopback_copy_and_hash_bound_bytes_per_s:(1 / (1 / $i + 1 / $lim)),
   ratio_sha256_vs_copy_and_hash_bound:($gs * (1 / $i + 1 / $lim)),
   goal_none_met:($gn >= 0.9 * $i),
   goal_sha256_met:($gs >= 0.8 * $goal2)}'
