#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# tcp-probe: real sockets on loopback, real server and client processes.

load helpers

setup() {
	TMP=$(mktemp -d)
	SRV_PID=
	AUX_PID=
}

teardown() {
	for p in $SRV_PID $AUX_PID; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$TMP"
}

# start_server [ARGS...]: a server on an ephemeral loopback port; sets PORT.
start_server() {
	tcp-probe server --bind 127.0.0.1 --port 0 "$@" >"$TMP/srv.out" \
	    2>"$TMP/srv.err" &
	SRV_PID=$!
	for _ in $(seq 100); do
		PORT=$(jq -r 'select(.kind=="listening").port' "$TMP/srv.out" \
		    2>/dev/null | head -1)
		[ -n "$PORT" ] && return 0
		sleep 0.05
	done
	echo "server did not start"; cat "$TMP/srv.err"; return 1
}

# summary: the client's summary record from $output.
summary() { printf '%s\n' "$output" | jq -c 'select(.kind=="summary")'; }

@test "--help prints the synopsis and exits 0" {
	run tcp-probe --help
	assert_success
	assert_output --partial "tcp-probe client HOST"
}

@test "--version names the command and kvgate" {
	run tcp-probe --version
	assert_success
	assert_output --regexp '^tcp-probe \(kvgate\) [0-9]'
}

@test "usage errors exit 2 with one reason each" {
	run tcp-probe
	assert_failure 2
	run tcp-probe serve
	assert_failure 2
	assert_output --partial "unknown role 'serve'"
	run tcp-probe client
	assert_failure 2
	assert_output --partial "needs the server's HOST"
	run tcp-probe client 127.0.0.1 --duration 1s --bytes 1MiB
	assert_failure 2
	assert_output --partial "exclusive"
	run tcp-probe client 127.0.0.1 -P 129
	assert_failure 2
	assert_output --partial "--parallel"
	run tcp-probe client 127.0.0.1 --verify md5
	assert_failure 2
	assert_output --partial "sha256 or none"
	run tcp-probe client 127.0.0.1 --frame 12
	assert_failure 2
	run tcp-probe client 127.0.0.1 --bind 127.0.0.1
	assert_failure 2
	assert_output --partial "--bind is a server option"
	run tcp-probe server --rate 1Gbit/s
	assert_failure 2
	assert_output --partial "--rate is a client option"
	run tcp-probe client 127.0.0.1 --duration 12parsecs
	assert_failure 2
	run tcp-probe client 127.0.0.1 extra
	assert_failure 2
	assert_output --partial "unexpected argument"
}

@test "--bytes is accounted exactly: every byte sent is verified once" {
	start_server
	run tcp-probe client 127.0.0.1 --port "$PORT" --bytes 10000001 -P 3 \
	    --frame 64KiB --interval 0
	assert_success
	s=$(summary)
	[ "$(jqv "$s" .sent_bytes)" -eq 10000001 ]
	[ "$(jqv "$s" .verified_bytes)" -eq 10000001 ]
	[ "$(jqv "$s" '[.per_stream[].verified_bytes]|add')" -eq 10000001 ]
	[ "$(jqv "$s" '.per_stream|map(.sent_bytes)|join(",")')" = \
	    "3333334,3333334,3333333" ]
	# 51 frames per stream: 50 full ones and a short last one
	[ "$(jqv "$s" .frames_ok)" -eq 153 ]
	[ "$(jqv "$s" .sent_frames)" -eq 153 ]
	[ "$(jqv "$s" .frames_bad)" -eq 0 ]
	[ "$(jqv "$s" .seq_gaps)" -eq 0 ]
	[ "$(jqv "$s" .verified)" = true ]
	[ "$(jqv "$s" .state)" = ok ]
	[ "$(jqv "$s" .bytes)" -eq 10000001 ]
	[ "$(jqv "$s" .duration_s)" = null ]
	# the server's own record agrees
	run jq -s '[.[]|select(.kind=="session")][0].verified_bytes' "$TMP/srv.out"
	assert_output 10000001
}

@test "a timed run prints per-stream and summed interval records and a consistent summary" {
	start_server
	run tcp-probe client 127.0.0.1 --port "$PORT" --duration 1200ms \
	    --interval 500ms -P 2 --frame 256KiB --rtt-samples 20
	assert_success
	n=$(printf '%s\n' "$output" | jq -s '[.[]|select(.kind=="interval" and .scope=="sum")]|length')
	[ "$n" -ge 2 ]
	m=$(printf '%s\n' "$output" | jq -s '[.[]|select(.kind=="interval" and .scope=="stream")]|length')
	[ "$m" -eq $((2 * n)) ]
	# interval sums add up to what was sent
	sent=$(printf '%s\n' "$output" | jq -s '[.[]|select(.kind=="interval" and .scope=="sum").sent_bytes]|add')
	s=$(summary)
	[ "$sent" -eq "$(jqv "$s" .sent_bytes)" ]
	[ "$(jqv "$s" '.verified_bytes == .sent_bytes')" = true ]
	[ "$(jqv "$s" '(.goodput_bytes_per_s - .verified_bytes/.elapsed_s)|fabs < 1')" = true ]
	[ "$(jqv "$s" '.rtt_min_s <= .rtt_p50_s and .rtt_p50_s <= .rtt_p99_s')" = true ]
	[ "$(jqv "$s" .rtt_samples)" -eq 20 ]
	[ "$(jqv "$s" .duration_s)" = 1.2 ]
	run jq -s '[.[]|select(.kind=="interval")|has("retransmits","rtt_s","cwnd_bytes")]|all' <<<"$output"
	assert_output true
}

@test "the summary records every client option used, --timeout included" {
	start_server
	run tcp-probe client 127.0.0.1 --port "$PORT" --bytes 1MiB -P 2 \
	    --frame 128KiB --verify none --interval 250ms --rate 1Gbit/s \
	    --rtt-samples 5 --timeout 7s
	assert_success
	s=$(summary)
	[ "$(jqv "$s" .host)" = 127.0.0.1 ]
	[ "$(jqv "$s" .port)" -eq "$PORT" ]
	[ "$(jqv "$s" .streams)" -eq 2 ]
	[ "$(jqv "$s" .frame_bytes)" -eq 131072 ]
	[ "$(jqv "$s" .verify)" = none ]
	[ "$(jqv "$s" .bytes)" -eq 1048576 ]
	[ "$(jqv "$s" .duration_s)" = null ]
	[ "$(jqv "$s" .interval_s)" = 0.25 ]
	[ "$(jqv "$s" .rate_bytes_per_s)" -eq 125000000 ]
	[ "$(jqv "$s" .rtt_samples)" -eq 5 ]
	[ "$(jqv "$s" .timeout_s)" -eq 7 ]
	# and the defaults when none is given
	run tcp-probe client 127.0.0.1 --port "$PORT" --bytes 64KiB --interval 0
	assert_success
	s=$(summary)
	[ "$(jqv "$s" '.timeout_s > 0')" = true ]
	[ "$(jqv "$s" .rate_bytes_per_s)" = null ]
}

@test "--verify none still checks sequence and length and reports the mode" {
	start_server
	run tcp-probe client 127.0.0.1 --port "$PORT" --bytes 4MiB --verify none \
	    --interval 0 --rtt-samples 0
	assert_success
	s=$(summary)
	[ "$(jqv "$s" .verify)" = none ]
	[ "$(jqv "$s" .verified_bytes)" -eq 4194304 ]
	[ "$(jqv "$s" .rtt_p50_s)" = null ]
}

@test "128 streams each deliver their share, all verified" {
	start_server
	run tcp-probe client 127.0.0.1 --port "$PORT" -P 128 --bytes 32MiB \
	    --frame 64KiB --interval 0
	assert_success
	s=$(summary)
	[ "$(jqv "$s" '.per_stream|length')" -eq 128 ]
	[ "$(jqv "$s" '[.per_stream[]|select(.verified_bytes==262144)]|length')" -eq 128 ]
	[ "$(jqv "$s" .verified_bytes)" -eq 33554432 ]
	[ "$(jqv "$s" .streams)" -eq 128 ]
}

@test "a relay flipping one byte every N bytes makes frames bad, excluded from verified bytes, exit 1" {
	start_server
	coproc RELAY { exec python3 "$FIX/tcpprobe-flip-relay.py" "$PORT" 1000000; }
	AUX_PID=$RELAY_PID
	read -r -t 10 rport <&"${RELAY[0]}"
	run tcp-probe client 127.0.0.1 --port "$rport" --bytes 8MiB \
	    --frame 64KiB -P 2 --interval 0
	assert_failure 1
	s=$(summary)
	bad=$(jqv "$s" .frames_bad)
	[ "$bad" -ge 4 ]
	[ "$(jqv "$s" .sent_bytes)" -eq 8388608 ]
	[ "$(jqv "$s" '.verified_bytes == .frames_ok * 65536')" = true ]
	[ "$(jqv "$s" '.verified_bytes + .frames_bad * 65536 == .sent_bytes')" = true ]
	[ "$(jqv "$s" .verified)" = false ]
	[ "$(jqv "$s" .state)" = verification_failed ]
	# the server's own record says the same, with the same counts
	r=$(jq -c 'select(.kind=="session")' "$TMP/srv.out")
	[ "$(jqv "$r" .state)" = verification_failed ]
	[ "$(jqv "$r" .frames_bad)" -eq "$bad" ]
	[ "$(jqv "$r" .verified_bytes)" -eq "$(jqv "$s" .verified_bytes)" ]
}

@test "a server killed mid-run: the client prints what it had, an error record, status 69" {
	start_server
	tcp-probe client 127.0.0.1 --port "$PORT" --duration 20s --interval 200ms \
	    >"$TMP/cli.out" 2>"$TMP/cli.err" &
	AUX_PID=$!
	for _ in $(seq 100); do
		grep -q '"scope":"sum"' "$TMP/cli.out" 2>/dev/null && break
		sleep 0.05
	done
	kill -9 "$SRV_PID"
	wait "$SRV_PID" 2>/dev/null || true
	SRV_PID=
	rc=0
	wait "$AUX_PID" || rc=$?
	AUX_PID=
	[ "$rc" -eq 69 ]
	s=$(jq -c 'select(.kind=="summary")' "$TMP/cli.out")
	[ "$(jqv "$s" .state)" = server_lost ]
	[ "$(jqv "$s" .sent_bytes)" -gt 0 ]
	[ "$(jqv "$s" .goodput_bytes_per_s)" = null ]
	[ "$(jq -s '.[-1].kind' "$TMP/cli.out")" = '"error"' ]
	grep -q 'tcp-probe: server 127.0.0.1' "$TMP/cli.err"
}

@test "the server survives garbage, a wrong version, truncated and over-long frames and vanishing clients" {
	start_server
	for m in garbage version badhello truncated overlen vanish silent; do
		python3 "$FIX/tcpprobe-bad-client.py" "$PORT" "$m"
	done
	run tcp-probe client 127.0.0.1 --port "$PORT" --bytes 1MiB --interval 0
	assert_success
	run jq -r 'select(.kind=="error").error' "$TMP/srv.out"
	assert_output --partial "not a tcp-probe client (first bytes 47 45 54 20)"
	assert_output --partial "protocol version 9, expected 1"
	assert_output --partial "stream count 0 outside 1..128"
	assert_output --partial "truncated frame"
	assert_output --partial "frame length 1048576 over the bound of 65536"
	assert_output --partial "client closed the control connection"
	assert_output --partial "closed without a word"
	grep -q '^tcp-probe: client 127.0.0.1:[0-9]*: protocol version 9' "$TMP/srv.err"
	kill -0 "$SRV_PID"
}

@test "128 streams announcing 64 MiB frames do not make the server allocate a frame per stream" {
	# 128 x 64 MiB is 8 GiB; each stream's buffer must stay bounded, so
	# the server fits in 512 MiB of data segment.  A sanitized build's
	# shadow memory does not fit any data limit: there, no single
	# allocation may pass 16 MiB instead.
	case $KVGATE_BIN in
	*asan*) limit=:; export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1:max_allocation_size_mb=16 ;;
	*) limit="ulimit -d 524288" ;;
	esac
	(eval "$limit" && exec tcp-probe server --bind 127.0.0.1 --port 0 \
	    --once) >"$TMP/srv.out" 2>"$TMP/srv.err" &
	SRV_PID=$!
	for _ in $(seq 100); do
		PORT=$(jq -r 'select(.kind=="listening").port' "$TMP/srv.out" 2>/dev/null | head -1)
		[ -n "$PORT" ] && break
		sleep 0.05
	done
	run python3 "$FIX/tcpprobe-bad-client.py" "$PORT" bigframes
	assert_success
	assert_output --partial "welcome 0"
	assert_output --partial "attached 128"
	rc=0
	wait "$SRV_PID" || rc=$?
	SRV_PID=
	[ "$rc" -eq 1 ]
	run cat "$TMP/srv.out"
	refute_output --partial "out of memory"
	[ "$(jq -r 'select(.kind=="session").state' "$TMP/srv.out")" = aborted ]
}

@test "a wrong-version HELLO is answered with WELCOME status 2, bad parameters with 3" {
	start_server
	run python3 "$FIX/tcpprobe-bad-client.py" "$PORT" version
	assert_output "welcome 2"
	run python3 "$FIX/tcpprobe-bad-client.py" "$PORT" badhello
	assert_output "welcome 3"
}

@test "a client reaching something that is not a tcp-probe server says so, status 69" {
	coproc FAKE { exec python3 -c '
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(4); s.settimeout(20)
print(s.getsockname()[1], flush=True)
c, _ = s.accept(); c.sendall(b"SSH-2.0-OpenSSH_9.2\r\n"); c.recv(100); c.close()'; }
	AUX_PID=$FAKE_PID
	read -r -t 10 fport <&"${FAKE[0]}"
	run tcp-probe client 127.0.0.1 --port "$fport" --bytes 1MiB --timeout 2s
	assert_failure 69
	assert_output --partial "is not a tcp-probe server"
	assert_output --partial '"kind":"error"'
}

@test "a closed port is unavailable, status 69" {
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	run tcp-probe client 127.0.0.1 --port "$port" --bytes 1MiB
	assert_failure 69
	assert_output --partial "Connection refused"
}

@test "a second client during a run is refused as busy, the first one still verifies" {
	start_server
	tcp-probe client 127.0.0.1 --port "$PORT" --duration 1500ms --interval 0 \
	    --rate 200Mbit/s >"$TMP/first.out" &
	AUX_PID=$!
	sleep 0.5
	run tcp-probe client 127.0.0.1 --port "$PORT" --bytes 1MiB
	assert_failure 69
	assert_output --partial "busy"
	wait "$AUX_PID"
	AUX_PID=
	[ "$(jq -r 'select(.kind=="summary").state' "$TMP/first.out")" = ok ]
	s=$(jq -c 'select(.kind=="summary")' "$TMP/first.out")
	[ "$(jqv "$s" .rate_bytes_per_s)" = 25000000 ]
	# paced: never ahead of the rate by more than one frame per stream
	[ "$(jqv "$s" '.sent_bytes <= .rate_bytes_per_s * .client_elapsed_s + .streams * .frame_bytes')" = true ]
}

@test "server --once serves one client and exits with its verdict" {
	start_server --once
	run tcp-probe client 127.0.0.1 --port "$PORT" --bytes 2MiB --interval 0
	assert_success
	rc=0
	wait "$SRV_PID" || rc=$?
	SRV_PID=
	[ "$rc" -eq 0 ]
	[ "$(jq -r 'select(.kind=="session").state' "$TMP/srv.out")" = ok ]
}

@test "client and server run clean under valgrind" {
	command -v valgrind >/dev/null || skip "valgrind not installed"
	case $KVGATE_BIN in *asan*) skip "valgrind does not run sanitized builds" ;; esac
	valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
	    tcp-probe server --bind 127.0.0.1 --port 0 --once >"$TMP/srv.out" 2>"$TMP/srv.err" &
	SRV_PID=$!
	for _ in $(seq 200); do
		PORT=$(jq -r 'select(.kind=="listening").port' "$TMP/srv.out" 2>/dev/null | head -1)
		[ -n "$PORT" ] && break
		sleep 0.1
	done
	run_vg tcp-probe client 127.0.0.1 --port "$PORT" --bytes 2MiB -P 2 --interval 0
	assert_success
	rc=0
	wait "$SRV_PID" || rc=$?
	SRV_PID=
	[ "$rc" -eq 0 ] || { cat "$TMP/srv.err"; false; }
}
