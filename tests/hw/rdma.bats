#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# rdma-probe (and gpu-preflight) against a real RDMA device: an HCA, or
# Soft-RoCE (modprobe rdma_rxe; rdma link add rxe0 type rxe netdev IFACE).
# Skips, saying why, where ibv_devices lists no device.

bats_require_minimum_version 1.5.0
load ../helpers

setup() {
	DEV=$(ibv_devices 2>/dev/null | awk 'NR > 2 && NF { print $1; exit }')
	if [ -z "$DEV" ]; then
		why=$(ibv_devices 2>&1 | head -1)
		skip "no RDMA device: ibv_devices lists none (${why:-empty list}); see rdma-probe(1), Soft-RoCE"
	fi
	TMP=$(mktemp -d)
	SRV_PID=
}

teardown() {
	if [ -n "$SRV_PID" ] && kill -0 "$SRV_PID" 2>/dev/null; then
		kill "$SRV_PID" 2>/dev/null
		wait "$SRV_PID" 2>/dev/null || true
	fi
	[ -z "$TMP" ] || rm -rf "$TMP"
}

# start_server ARGS...: run a server on an ephemeral port; sets PORT.
start_server() {
	rdma-probe server --dev "$DEV" --oob-port 0 --timeout 20s "$@" \
	    >"$TMP/server.out" 2>"$TMP/server.err" &
	SRV_PID=$!
	for _ in $(seq 100); do
		PORT=$(jq -r 'select(.kind=="listening") | .oob_port' "$TMP/server.out" 2>/dev/null)
		[ -n "$PORT" ] && return 0
		kill -0 "$SRV_PID" 2>/dev/null || break
		sleep 0.1
	done
	cat "$TMP/server.err" >&2
	return 1
}

server_status() {
	local rc=0
	wait "$SRV_PID" || rc=$?
	SRV_PID=
	echo "$rc"
}

@test "host memory, 2 QPs, a 4KiB..64KiB sweep: one summary per size, all bytes counted and checked" {
	start_server
	run --separate-stderr rdma-probe client 127.0.0.1 --dev "$DEV" --oob-port "$PORT" \
	    -q 2 --sizes 4KiB..64KiB --iters 1000 --tx-depth 64
	echo "$stderr"
	assert_success
	sums=$(printf '%s\n' "$output" | jq -c 'select(.kind=="summary")')
	[ "$(printf '%s\n' "$sums" | wc -l)" -eq 5 ]
	[ "$(printf '%s\n' "$sums" | jq -s -c 'map(.size_bytes)')" = "[4096,8192,16384,32768,65536]" ]
	printf '%s\n' "$sums" | jq -e 'select(.iterations != 2000 or .bytes != 2000 * .size_bytes or .avg_bytes_per_s <= 0 or .memory != "host" or .qps != 2)' && false
	[ "$(printf '%s\n' "$output" | jq -r 'select(.kind=="check") | .ok')" = true ]
	[ "$(server_status)" -eq 0 ]
	[ "$(jq -r 'select(.kind=="session") | .regions_ok' "$TMP/server.out")" = 2 ]
}

@test "a duration run writes interval records and a peak at least the average" {
	start_server
	run --separate-stderr rdma-probe client 127.0.0.1 --dev "$DEV" --oob-port "$PORT" \
	    -s 64KiB --duration 1s --interval 200ms
	assert_success
	n=$(printf '%s\n' "$output" | jq -c 'select(.kind=="interval")' | wc -l)
	[ "$n" -ge 2 ]
	printf '%s\n' "$output" | jq -e 'select(.kind=="summary") | .peak_bytes_per_s >= .avg_bytes_per_s and .iterations > 0' >/dev/null
	[ "$(server_status)" -eq 0 ]
}

@test "a QP count that differs from the server's is refused naming --qps, on both sides" {
	start_server -q 2
	run --separate-stderr rdma-probe client 127.0.0.1 --dev "$DEV" --oob-port "$PORT" -q 4 --iters 10
	assert_failure 1
	[[ $stderr == *"server refused: --qps: client 4, server 2"* ]]
	[ "$(server_status)" -eq 1 ]
	grep -q -- "--qps: client 4, server 2" "$TMP/server.err"
}

@test "a size range that differs from the server's is refused naming --size/--sizes" {
	start_server -s 64KiB
	run --separate-stderr rdma-probe client 127.0.0.1 --dev "$DEV" --oob-port "$PORT" -s 4KiB --iters 10
	assert_failure 1
	[[ $stderr == *"--size/--sizes: client 4096..4096, server 65536..65536 bytes"* ]]
}

@test "a client asking for more than the server's --max-mem is refused naming --sizes/-q" {
	start_server --max-mem 1MiB
	run --separate-stderr rdma-probe client 127.0.0.1 --dev "$DEV" --oob-port "$PORT" -q 2 -s 1MiB --iters 10
	assert_failure 1
	[[ $stderr == *"server refused: --sizes/-q: client asks for 2 QPs x 1048576 bytes = 2097152 bytes of registered memory, server allows 1048576"* ]]
	[ "$(server_status)" -eq 1 ]
}

# wait_for FILE JQ-FILTER: up to 10 s for a record matching it.
wait_for() {
	for _ in $(seq 100); do
		jq -e "$2" "$1" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

@test "a client killed mid-run leaves the server with a session record ok:false, not a hang" {
	start_server
	rdma-probe client 127.0.0.1 --dev "$DEV" --oob-port "$PORT" -s 64KiB \
	    --duration 30s --interval 100ms >"$TMP/client.out" 2>/dev/null &
	cpid=$!
	wait_for "$TMP/client.out" 'select(.kind=="interval")'
	kill -9 "$cpid"
	wait "$cpid" || true
	for _ in $(seq 100); do kill -0 "$SRV_PID" 2>/dev/null || break; sleep 0.1; done
	[ "$(server_status)" -eq 69 ]
	[ "$(jq -r 'select(.kind=="session") | .ok' "$TMP/server.out")" = false ]
	[[ $(jq -r 'select(.kind=="session") | .error' "$TMP/server.out") == *"waited for its DONE"* ]]
}

@test "a server killed mid-run makes the client fail within its --timeout, not poll forever" {
	start_server
	rdma-probe client 127.0.0.1 --dev "$DEV" --oob-port "$PORT" -s 64KiB \
	    --duration 60s --interval 100ms --timeout 3s >"$TMP/client.out" 2>"$TMP/client.err" &
	cpid=$!
	wait_for "$TMP/client.out" 'select(.kind=="interval")'
	kill -9 "$SRV_PID"
	wait "$SRV_PID" 2>/dev/null || true
	SRV_PID=
	for _ in $(seq 300); do kill -0 "$cpid" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$cpid" 2>/dev/null; then
		kill -9 "$cpid"
		false	# still polling 30 s after its peer died
	fi
	rc=0
	wait "$cpid" || rc=$?
	[ "$rc" -eq 1 ]
	grep -Eq "RDMA WRITE completion|no RDMA WRITE completion for" "$TMP/client.err"
}

@test "a client that reaches something other than an rdma-probe server exits 69 saying so" {
	python3 - "$TMP/port" <<'PY' &
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
s.settimeout(20)
c, _ = s.accept(); c.recv(4096)
c.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n"); c.close()
PY
	SRV_PID=$!
	for _ in $(seq 50); do [ -s "$TMP/port" ] && break; sleep 0.1; done
	run --separate-stderr rdma-probe client 127.0.0.1 --dev "$DEV" --oob-port "$(cat "$TMP/port")" --iters 10
	assert_failure 69
	[[ $stderr == *"peer is not an rdma-probe (got \"HTTP/1.1 400"* ]]
}

@test "a client whose server is not listening exits 69 (unreachable)" {
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	run --separate-stderr rdma-probe client 127.0.0.1 --dev "$DEV" --oob-port "$port" --iters 10 --timeout 2s
	assert_failure 69
	[[ $stderr == *"cannot reach the rdma-probe server"* ]]
}

@test "GPU memory through the path gpu-preflight says is ready" {
	for reg in dmabuf peermem; do
		if gpu-preflight --registration "$reg" --gpus 0 >/dev/null 2>&1; then
			break
		fi
		reg=
	done
	[ -n "$reg" ] || skip "gpu-preflight finds no ready registration path for GPU 0 (no GPU, no driver, or not ready)"
	start_server
	run --separate-stderr rdma-probe client 127.0.0.1 --dev "$DEV" --oob-port "$PORT" \
	    --mem cuda:0 --registration "$reg" --sizes 64KiB..1MiB --iters 500
	echo "$stderr"
	assert_success
	[ "$(printf '%s\n' "$output" | jq -r 'select(.kind=="summary") | .memory' | sort -u)" = "cuda-$reg" ]
	[ "$(printf '%s\n' "$output" | jq -r 'select(.kind=="check") | .ok')" = true ]
}
