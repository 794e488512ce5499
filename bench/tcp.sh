#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/tcp.sh: tcp-probe against its peers on loopback, in one run.
#   1. tcp-probe --verify none  vs  iperf3, same stream count and duration
#      (goal: >= 0.9x iperf3's throughput)
#   2. tcp-probe --verify sha256  vs  the SHA-256 limit: openssl speed -evp
#      sha256 (1 MiB blocks) times the receiving threads that can run at
#      once, min(streams, cores) (goal: >= 0.8 of that limit or of iperf3,
#      whichever is lower)
# Knobs: BENCH_DURATION (default 5s), BENCH_STREAMS (default 2), KVGATE_BIN.
# Prints one JSON record per measurement, then a summary with the ratios.
set -eu
KVGATE_BIN=${KVGATE_BIN:-$(cd "$(dirname "$0")/.." && pwd)/build/bin}
PATH=$KVGATE_BIN:$PATH
dur=${BENCH_DURATION:-5s}
P=${BENCH_STREAMS:-2}
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

# iperf3: one-shot server on a free port
port=$(free_port)
iperf3 -s -1 -B 127.0.0.1 -p "$port" >/dev/null 2>&1 &
srv=$!
sleep 0.5
timeout $((secs + 30)) iperf3 -c 127.0.0.1 -p "$port" -P "$P" -t "$secs" -J >"$tmp/iperf.json"
wait "$srv" 2>/dev/null || true
srv=
iperf=$(jq '.end.sum_received.bits_per_second / 8' "$tmp/iperf.json")

# tcp-probe server on an ephemeral port
tcp-probe server --bind 127.0.0.1 --port 0 >"$tmp/srv.out" 2>"$tmp/srv.err" &
srv=$!
for _ in $(seq 100); do
	tport=$(jq -r 'select(.kind=="listening").port' "$tmp/srv.out" 2>/dev/null | head -1)
	[ -n "$tport" ] && break
	sleep 0.05
done
probe() {
	tcp-probe client 127.0.0.1 --port "$tport" -P "$P" --duration "$dur" \
	    --interval 0 --verify "$1" | jq -c 'select(.kind=="summary")'
}
none=$(probe none)
sha=$(probe sha256)

# the SHA-256 limit of one core, on the frame size tcp-probe uses
spd=$(openssl speed -evp sha256 -bytes 1048576 -seconds 2 2>/dev/null | tail -1 |
    awk '{ v = $NF; sub(/k$/, "", v); print v * 1000 }')
cores=$(nproc)
threads=$(( P < cores ? P : cores ))

jq -nc --argjson i "$iperf" --argjson n "$none" --argjson s "$sha" \
    --argjson spd "$spd" --argjson th "$threads" --arg dur "$dur" --argjson p "$P" '
  ($n.goodput_bytes_per_s) as $gn | ($s.goodput_bytes_per_s) as $gs |
  ($spd * $th) as $lim | ([$lim, $i] | min) as $goal2 |
  {kind:"bench", bench:"tcp", duration:$dur, streams:$p,
   iperf3_bytes_per_s:$i,
   tcp_probe_none_bytes_per_s:$gn, tcp_probe_none_verified:$n.verified,
   tcp_probe_sha256_bytes_per_s:$gs, tcp_probe_sha256_verified:$s.verified,
   openssl_sha256_bytes_per_s_per_core:$spd, receiving_threads:$th,
   sha256_limit_bytes_per_s:$lim,
   ratio_none_vs_iperf3:($gn / $i),
   ratio_sha256_vs_limit:($gs / $lim),
   ratio_sha256_vs_iperf3:($gs / $i),
   ratio_sha256_vs_goal_base:($gs / $goal2),
   goal_none_met:($gn >= 0.9 * $i),
   goal_sha256_met:($gs >= 0.8 * $goal2)}'
