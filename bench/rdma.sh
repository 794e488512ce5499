#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/rdma.sh: rdma-probe against perftest's ib_write_bw, same device,
# message size, QP count and duration, in the same run, both over loopback
# to this host's first RDMA device.  Prints both bandwidths and the ratio
# rdma-probe / ib_write_bw (goal >= 0.98).  Where no RDMA device exists it
# says so and exits 0 without a figure.
#
# Knobs: RDMA_BENCH_DEV (first device), RDMA_BENCH_SIZE (65536 bytes),
# RDMA_BENCH_QPS (1), RDMA_BENCH_SECS (5), RDMA_BENCH_GID (0).
set -u
BIN=${KVGATE_BIN:-$(dirname "$0")/../build/bin}
SIZE=${RDMA_BENCH_SIZE:-65536}
QPS=${RDMA_BENCH_QPS:-1}
SECS=${RDMA_BENCH_SECS:-5}
GID=${RDMA_BENCH_GID:-0}

DEV=${RDMA_BENCH_DEV:-$(ibv_devices 2>/dev/null | awk 'NR > 2 && NF { print $1; exit }')}
if [ -z "$DEV" ]; then
	echo "bench/rdma.sh: no RDMA device on this host (ibv_devices: $(ibv_devices 2>&1 | head -1)); no figure"
	exit 0
fi
command -v ib_write_bw >/dev/null || { echo "bench/rdma.sh: ib_write_bw not found (Debian package perftest)"; exit 69; }
[ -x "$BIN/rdma-probe" ] || { echo "bench/rdma.sh: $BIN/rdma-probe not built"; exit 69; }

tmp=$(mktemp -d) || exit 74
spid=
cleanup() { [ -n "$spid" ] && kill "$spid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT INT TERM

freeport() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# --- perftest: server and client with the same parameters ---------------
port=$(freeport)
ib_write_bw -d "$DEV" -x "$GID" -p "$port" -s "$SIZE" -q "$QPS" -D "$SECS" \
    --report_gbits >"$tmp/pt-server" 2>&1 &
spid=$!
sleep 1
timeout $((SECS + 30)) ib_write_bw -d "$DEV" -x "$GID" -p "$port" -s "$SIZE" \
    -q "$QPS" -D "$SECS" --report_gbits 127.0.0.1 >"$tmp/pt-client" 2>&1
wait "$spid" 2>/dev/null; spid=
# The result line: "#bytes #iterations BW peak BW average MsgRate".
pt_gbit=$(awk -v s="$SIZE" '$1 == s && NF >= 5 { print $4 }' "$tmp/pt-client" | tail -1)
if [ -z "$pt_gbit" ]; then
	echo "bench/rdma.sh: ib_write_bw gave no result:"; cat "$tmp/pt-client"; exit 1
fi

# --- rdma-probe: the same --------------------------------------------------
"$BIN/rdma-probe" server --dev "$DEV" --gid-index "$GID" --oob-port 0 \
    >"$tmp/rp-server" 2>&1 &
spid=$!
port=
for _ in $(seq 100); do
	port=$(jq -r 'select(.kind=="listening") | .oob_port' "$tmp/rp-server" 2>/dev/null)
	[ -n "$port" ] && break
	sleep 0.1
done
[ -n "$port" ] || { echo "bench/rdma.sh: rdma-probe server did not start:"; cat "$tmp/rp-server"; exit 1; }
timeout $((SECS + 30)) "$BIN/rdma-probe" client 127.0.0.1 --dev "$DEV" \
    --gid-index "$GID" --oob-port "$port" -s "$SIZE" -q "$QPS" \
    --duration "${SECS}s" >"$tmp/rp-client" || {
	echo "bench/rdma.sh: rdma-probe client failed"; cat "$tmp/rp-client"; exit 1; }
wait "$spid" 2>/dev/null; spid=
rp_bps=$(jq -r 'select(.kind=="summary") | .avg_bytes_per_s' "$tmp/rp-client" | tail -1)

awk -v pt="$pt_gbit" -v rp="$rp_bps" -v dev="$DEV" -v s="$SIZE" -v q="$QPS" -v t="$SECS" 'BEGIN {
	ptb = pt * 1e9 / 8
	printf "device %s, %d-byte RDMA WRITEs, %d QP(s), %ds each\n", dev, s, q, t
	printf "ib_write_bw  %.3f Gbit/s (%.0f bytes/s)\n", pt, ptb
	printf "rdma-probe   %.3f Gbit/s (%.0f bytes/s)\n", rp * 8 / 1e9, rp
	printf "ratio rdma-probe/ib_write_bw %.3f (goal >= 0.98)\n", ptb > 0 ? rp / ptb : 0
}'
