#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# counter-snap: Prometheus text (fixtures checked by promtool, a real
# prometheus-node-exporter over HTTP), sysfs RDMA and netdev counters, --diff.

load helpers

SYS=$BATS_TEST_DIRNAME/fixtures/counter-snap-sysfs
PROM=$BATS_TEST_DIRNAME/fixtures/counter-snap-metrics.prom

setup() {
	TMP=$(mktemp -d)
	AUX_PID=
	SLOTS=
}

teardown() {
	if [ -n "$SLOTS" ] && [ -f "$SLOTS/node-exporter.json" ]; then
		session-stop --slot-dir "$SLOTS" --name node-exporter >/dev/null || true
	fi
	if [ -n "$AUX_PID" ]; then
		kill "$AUX_PID" 2>/dev/null || true
		wait "$AUX_PID" 2>/dev/null || true
	fi
	rm -rf "$TMP"
}

# free_port: a loopback port nobody listens on right now.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# a modifiable copy of the sysfs fixture tree
sys_copy() { cp -r "$SYS" "$TMP/sys"; }

@test "--help prints the synopsis and exits 0; --version names kvgate" {
	run counter-snap --help
	assert_success
	assert_output --partial "counter-snap --diff"
	run counter-snap --version
	assert_output --regexp '^counter-snap \(kvgate\) '
}

@test "usage errors exit 2, one reason each" {
	run counter-snap
	assert_failure 2
	assert_output --partial "no SOURCE given"
	run counter-snap ftp:thing
	assert_failure 2
	assert_output --partial "unknown source 'ftp:thing'"
	run counter-snap --diff onlyone
	assert_failure 2
	assert_output --partial "exactly two snapshots"
	run counter-snap --strict netdev:lo
	assert_failure 2
	run counter-snap --label novalue netdev:lo
	assert_failure 2
	assert_output --partial "KEY=VALUE"
	run counter-snap --timeout 5parsecs netdev:lo
	assert_failure 2
	run counter-snap --diff --label a=b x y
	assert_failure 2
}

@test "the Prometheus fixture passes promtool check metrics" {
	command -v promtool >/dev/null || skip "promtool (Debian prometheus) not installed"
	run promtool check metrics <"$PROM"
	assert_success
}

@test "every sample of the fixture becomes one record: escapes, NaN/Inf, timestamps, histogram and summary families" {
	run counter-snap "prom:file://$PROM"
	assert_success
	[ "$(printf '%s\n' "$output" | wc -l)" -eq "$(grep -c '^[a-z]' "$PROM")" ]
	r=$(printf '%s\n' "$output" | jq -c 'select(.name=="kv_label_escapes_total")')
	[ "$(jqv "$r" .labels.path)" = 'C:\dir\file' ]
	[ "$(jqv "$r" .labels.msg)" = 'say "hi"' ]
	[ "$(jqv "$r" '.labels.multi == "a\nb"')" = true ]
	r=$(printf '%s\n' "$output" | jq -c 'select(.labels.method=="get")')
	[ "$(jqv "$r" .value)" -eq 1027 ]
	[ "$(jqv "$r" .timestamp_ms)" -eq 1395066363000 ]
	[ "$(jqv "$r" .type)" = counter ]
	run jq -r 'select(.name=="kv_temperature_celsius") | "\(.labels.sensor) \(.value) \(.value_state)"' <<<"$output"
	assert_output "a null nan
b null +inf
c null -inf
d -1.25 null"
	run counter-snap "prom:file://$PROM"
	r=$(printf '%s\n' "$output" | jq -c 'select(.name=="kv_request_duration_seconds_bucket" and .labels.le=="+Inf")')
	[ "$(jqv "$r" .family)" = kv_request_duration_seconds ]
	[ "$(jqv "$r" .type)" = histogram ]
	[ "$(jqv "$r" .value)" -eq 144320 ]
	r=$(printf '%s\n' "$output" | jq -c 'select(.name=="kv_rpc_duration_seconds_count")')
	[ "$(jqv "$r" .type)" = summary ]
	r=$(printf '%s\n' "$output" | jq -c 'select(.name=="kv_untyped_thing")')
	[ "$(jqv "$r" .type)" = untyped ]
}

@test "--label adds the pair to every record's labels" {
	run counter-snap --label run=r7 --label node=b "prom:file://$PROM" "netdev:veth-kvg" --sysfs-root "$SYS"
	assert_success
	run jq -s '[.[] | .labels.run == "r7" and .labels.node == "b"] | all' <<<"$output"
	assert_output true
}

@test "a malformed exposition is an error record with its line number and status 65, like promtool" {
	printf '# TYPE x counter\nx 1\nx{a="\\q"} 2\n' >"$TMP/bad.prom"
	if command -v promtool >/dev/null; then
		run promtool check metrics <"$TMP/bad.prom"
		assert_failure
	fi
	run counter-snap "prom:file://$TMP/bad.prom"
	assert_failure 65
	assert_output --partial '"kind":"error"'
	assert_output --partial "line 3: invalid escape"
	assert_output --partial "counter-snap: prom:file://$TMP/bad.prom: line 3"
}

@test "a real prometheus-node-exporter started with session-run is scraped over HTTP, one record per sample" {
	command -v prometheus-node-exporter >/dev/null || skip "prometheus-node-exporter not installed"
	command -v session-run >/dev/null || skip "session-run (issue 3) not built"
	port=$(free_port)
	SLOTS=$TMP/slots
	mkdir -p "$SLOTS"
	run session-run --slot-dir "$SLOTS" --name node-exporter --log "$TMP/ne.log" \
	    --ready-http "http://127.0.0.1:$port/metrics" --ready-timeout 30s -- \
	    prometheus-node-exporter --web.listen-address="127.0.0.1:$port" \
	    --collector.disable-defaults --collector.netdev --collector.loadavg \
	    --collector.meminfo --collector.stat
	assert_success
	curl -sf "http://127.0.0.1:$port/metrics" >"$TMP/scrape.prom"
	run counter-snap --timeout 10s "prom:http://127.0.0.1:$port/metrics"
	assert_success
	printf '%s\n' "$output" >"$TMP/recs"
	# the scrape and ours are moments apart: compare series, not values
	n_want=$(grep -c '^[a-zA-Z_]' "$TMP/scrape.prom")
	n_got=$(wc -l <"$TMP/recs")
	[ "$n_got" -ge $((n_want - 5)) ] && [ "$n_got" -le $((n_want + 5)) ]
	# the same series names, in the same order
	grep '^[a-zA-Z_]' "$TMP/scrape.prom" | sed 's/[{ ].*//' | uniq >"$TMP/want"
	jq -r .name "$TMP/recs" | uniq >"$TMP/got"
	diff "$TMP/want" "$TMP/got"
	[ "$(jq -s '[.[]|select(.name=="node_network_receive_bytes_total")]|length' "$TMP/recs")" -ge 1 ]
	[ "$(jq -s '[.[]|select(.name=="node_load1")][0].type' "$TMP/recs")" = '"gauge"' ]
	[ "$(jq -s '[.[]|select(.type=="summary")]|length' "$TMP/recs")" -gt 0 ]
	[ "$(jq -s '[.[]|select(.source=="prom:http://127.0.0.1:'"$port"'/metrics")]|length' "$TMP/recs")" -eq "$n_got" ]
	if command -v promtool >/dev/null; then
		# promtool's parser accepts what the exporter served (lint aside)
		run promtool check metrics <"$TMP/scrape.prom"
		refute_output --partial "parsing error"
	fi
	run session-stop --slot-dir "$SLOTS" --name node-exporter
	assert_success
}

@test "a non-200 endpoint is an error record and status 69" {
	coproc WEB { exec python3 -c '
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(404); self.end_headers(); self.wfile.write(b"no")
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True); s.timeout = 20; s.handle_request()'; }
	AUX_PID=$WEB_PID
	read -r -t 10 wport <&"${WEB[0]}"
	run counter-snap "prom:http://127.0.0.1:$wport/metrics"
	assert_failure 69
	assert_output --partial '"kind":"error"'
	assert_output --partial "HTTP status 404"
}

@test "an unreachable endpoint is status 69; a silent one times out within --timeout" {
	run counter-snap "prom:http://127.0.0.1:$(free_port)/metrics"
	assert_failure 69
	coproc MUTE { exec python3 -c '
import socket, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(4)
print(s.getsockname()[1], flush=True); c, _ = s.accept(); time.sleep(20)'; }
	AUX_PID=$MUTE_PID
	read -r -t 10 mport <&"${MUTE[0]}"
	run counter-snap --timeout 300ms "prom:http://127.0.0.1:$mport/metrics"
	assert_failure 69
	assert_output --partial "timed out"
}

@test "RDMA port counters: data counters in 4-byte words are reported in bytes, with the raw words" {
	run counter-snap --sysfs-root "$SYS" ib:rxe0:1
	assert_success
	r=$(printf '%s\n' "$output" | jq -c 'select(.name=="port_xmit_data_bytes")')
	[ "$(jqv "$r" .value)" -eq 10000 ]
	[ "$(jqv "$r" .raw_value)" -eq 2500 ]
	[ "$(jqv "$r" .raw_name)" = port_xmit_data ]
	[ "$(jqv "$r" .scale)" -eq 4 ]
	[ "$(jqv "$r" .source)" = "ib:rxe0:1" ]
	[ "$(printf '%s\n' "$output" | jq -r 'select(.name=="port_rcv_data_bytes").value')" -eq 5000 ]
	[ "$(printf '%s\n' "$output" | jq -r 'select(.name=="retry_exceeded_err").labels.group')" = hw_counters ]
	[ "$(printf '%s\n' "$output" | wc -l)" -eq 6 ]
}

@test "ib:DEVICE without a port reads every port" {
	run counter-snap --sysfs-root "$SYS" ib:rxe0
	assert_success
	[ "$(printf '%s\n' "$output" | jq -s 'map(.labels.port)|unique|join(",")' -r)" = "1,2" ]
	[ "$(printf '%s\n' "$output" | jq -r 'select(.labels.port=="2").value')" -eq 32 ]
}

@test "netdev counters come from class/net/IFACE/statistics" {
	run counter-snap --sysfs-root "$SYS" netdev:veth-kvg
	assert_success
	[ "$(printf '%s\n' "$output" | jq -r 'select(.name=="tx_bytes").value')" -eq 654321 ]
	[ "$(printf '%s\n' "$output" | jq -r 'select(.name=="rx_bytes").labels.iface')" = veth-kvg ]
}

@test "a missing device or interface is an error record and status 69; other sources still print" {
	run counter-snap --sysfs-root "$SYS" ib:mlx5_9 netdev:veth-kvg netdev:nope ib:rxe0:7
	assert_failure 69
	assert_output --partial "no RDMA device mlx5_9"
	assert_output --partial "no network interface nope"
	assert_output --partial "no RDMA port 7"
	[ "$(printf '%s\n' "$output" | grep -c '"kind":"counter"')" -eq 4 ]
}

@test "a device, port or interface name with / or a leading . cannot walk out of the sysfs class directory: status 69" {
	sys_copy
	# a counters tree outside class/infiniband that ../ would reach
	mkdir -p "$TMP/sys/x/ports/1/counters" "$TMP/sys/class/infiniband/rxe0/ports/.h/counters"
	echo 7 >"$TMP/sys/x/ports/1/counters/symbol_error"
	echo 7 >"$TMP/sys/class/infiniband/rxe0/ports/.h/counters/symbol_error"
	mkdir -p "$TMP/sys/class/statistics" && echo 9 >"$TMP/sys/class/statistics/tx_bytes"
	for src in ib:../../x:1 ib:../../x ib:rxe0:../../../../x/ports/1 ib:rxe0:.h ib:.rxe0:1 ib:rxe0: netdev:.. netdev:../net/veth-kvg; do
		run counter-snap --sysfs-root "$TMP/sys" "$src"
		assert_failure 69
		[ "$(printf '%s\n' "$output" | grep -c '"kind":"counter"')" -eq 0 ]
		assert_output --partial "no '/' and no leading '.'"
	done
	run counter-snap --sysfs-root "$TMP/sys" ib:rxe0:1
	assert_success
}

@test "--diff: deltas and seconds, a counter that went backwards is a reset, a gauge may fall" {
	sys_copy
	counter-snap --sysfs-root "$TMP/sys" netdev:veth-kvg ib:rxe0:1 >"$TMP/before"
	echo 123956 >"$TMP/sys/class/net/veth-kvg/statistics/rx_bytes"
	echo 5 >"$TMP/sys/class/net/veth-kvg/statistics/tx_bytes"
	echo 2600 >"$TMP/sys/class/infiniband/rxe0/ports/1/counters/port_xmit_data"
	sleep 0.05
	counter-snap --sysfs-root "$TMP/sys" netdev:veth-kvg ib:rxe0:1 >"$TMP/after"
	run counter-snap --diff "$TMP/before" "$TMP/after"
	assert_success
	[ "$(printf '%s\n' "$output" | wc -l)" -eq 10 ]
	r=$(printf '%s\n' "$output" | jq -c 'select(.name=="rx_bytes")')
	[ "$(jqv "$r" .delta)" -eq 500 ]
	[ "$(jqv "$r" .reset)" = false ]
	[ "$(jqv "$r" '.seconds > 0')" = true ]
	[ "$(jqv "$r" .kind)" = delta ]
	r=$(printf '%s\n' "$output" | jq -c 'select(.name=="tx_bytes")')
	[ "$(jqv "$r" .reset)" = true ]
	[ "$(jqv "$r" .delta)" -eq 5 ]
	r=$(printf '%s\n' "$output" | jq -c 'select(.name=="port_xmit_data_bytes")')
	[ "$(jqv "$r" .delta)" -eq 400 ]
	# a gauge going down is a negative delta, not a reset
	printf '%s\n' '{"kind":"counter","source":"s","name":"g","labels":{},"value":5,"type":"gauge","t_unix_s":1}' >"$TMP/gb"
	printf '%s\n' '{"kind":"counter","source":"s","name":"g","labels":{},"value":2,"type":"gauge","t_unix_s":3}' >"$TMP/ga"
	run counter-snap --diff "$TMP/gb" "$TMP/ga"
	[ "$(jqv "$output" .delta)" -eq -3 ]
	[ "$(jqv "$output" .reset)" = false ]
	[ "$(jqv "$output" .seconds)" -eq 2 ]
}

@test "--diff matches by source, name and labels in any order and reports counters in one snapshot only" {
	printf '%s\n' '{"kind":"counter","source":"s","name":"a","labels":{"x":"1","y":"2"},"value":1,"t_unix_s":1}' \
	    '{"kind":"counter","source":"s","name":"gone","labels":{},"value":1,"t_unix_s":1}' \
	    '{"kind":"counter","source":"s","name":"nan","labels":{},"value":null,"value_state":"nan","t_unix_s":1}' >"$TMP/b"
	printf '%s\n' '{"kind":"counter","source":"s","name":"a","labels":{"y":"2","x":"1"},"value":4,"t_unix_s":2}' \
	    '{"kind":"counter","source":"s","name":"new","labels":{},"value":9,"t_unix_s":2}' \
	    '{"kind":"counter","source":"s","name":"nan","labels":{},"value":3,"t_unix_s":2}' >"$TMP/a"
	run counter-snap --diff "$TMP/b" "$TMP/a"
	assert_success
	run jq -r '"\(.name) \(.delta) \(.state)"' <<<"$output"
	assert_output "a 3 ok
new null absent_before
nan null not_finite
gone null absent_after"
}

@test "--diff reads - as stdin" {
	counter-snap --sysfs-root "$SYS" netdev:veth-kvg >"$TMP/s"
	run counter-snap --diff - "$TMP/s" <"$TMP/s"
	assert_success
	run jq -s 'map(.delta) | add' <<<"$output"
	assert_output 0
}

@test "--diff: malformed JSON, wrong types, missing fields, other kinds are error records with status 65; good lines still diffed" {
	counter-snap --sysfs-root "$SYS" netdev:veth-kvg >"$TMP/s"
	{ cat "$TMP/s"; echo '{"kind":"counter","source":"s",'
	  echo '{"kind":"counter","source":"s","name":"x","labels":{},"value":"7","t_unix_s":1}'
	  echo '{"kind":"counter","name":"x","value":1,"t_unix_s":1}'
	  echo '{"kind":"counter","source":"s","name":"y","labels":[],"value":1,"t_unix_s":1}'
	  echo '{"kind":"error","source":"prom:x","error":"HTTP status 500"}'
	  echo '[1,2]'
	  printf '{"kind":"counter","source":"s","name":"z","value":1e400,"t_unix_s":1}\n'
	} >"$TMP/a"
	run counter-snap --diff "$TMP/s" "$TMP/a"
	assert_failure 65
	[ "$(printf '%s\n' "$output" | grep -c '"kind":"delta"')" -ge 4 ]
	[ "$(printf '%s\n' "$output" | grep -c '"kind":"error"')" -ge 5 ]
	assert_output --partial "counter-snap: $TMP/a:6:"
	assert_output --partial "not a counter record (kind error)"
	assert_output --partial "labels must be an object"
	run counter-snap --diff --strict "$TMP/s" "$TMP/a"
	assert_failure 65
	[ "$(printf '%s\n' "$output" | grep -c '"kind":"error"')" -eq 1 ]
}

@test "--diff of an empty snapshot is an error record and status 65" {
	: >"$TMP/empty"
	counter-snap --sysfs-root "$SYS" netdev:veth-kvg >"$TMP/s"
	run counter-snap --diff "$TMP/empty" "$TMP/s"
	assert_failure 65
	assert_output --partial "empty snapshot"
	[ "$(printf '%s\n' "$output" | grep -c '"state":"absent_before"')" -eq 4 ]
}

@test "a missing snapshot file is an I/O error, status 74" {
	run counter-snap --diff "$TMP/nope" "$TMP/nope2"
	assert_failure 74
}

@test "a closed stdout is an I/O error, status 74" {
	run sh -c 'counter-snap --sysfs-root "$1" ib:rxe0 >&-' sh "$SYS"
	assert_failure 74
}

@test "snapshots and diffs run clean under valgrind" {
	run_vg counter-snap --sysfs-root "$SYS" ib:rxe0 netdev:veth-kvg "prom:file://$PROM" --label a=b
	assert_success
	counter-snap --sysfs-root "$SYS" ib:rxe0 >"$TMP/s"
	run_vg counter-snap --diff "$TMP/s" "$TMP/s"
	assert_success
}

@test "examples/counter-snap-diff.sh prints what examples/counter-snap-diff.out says" {
	run sh "$KVGATE_ROOT/examples/counter-snap-diff.sh"
	assert_success
	assert_output "$(cat "$KVGATE_ROOT/examples/counter-snap-diff.out")"
}
