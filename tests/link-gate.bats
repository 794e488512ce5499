#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# pipelines/link-gate.sh: the two-node TCP gate, for real, on loopback and
# between two network namespaces joined by a (shaped) veth pair.

load helpers
load lib/netns.sh

GATE=$BATS_TEST_DIRNAME/../pipelines/link-gate.sh

setup() {
	TMP=$(mktemp -d)
	NSA=kvg-a-$$-$BATS_TEST_NUMBER
	NSB=kvg-b-$$-$BATS_TEST_NUMBER
	KVG_NS_A= KVG_NS_B=
	unset KVGATE_EXEC_A KVGATE_EXEC_B
}

teardown() {
	kvg_netns_down
	KVG_NS_A=$NSA KVG_NS_B=$NSB kvg_netns_down
	rm -rf "$TMP"
}

need_netns() {
	kvg_netns_usable || skip "needs root and ip netns (run as root, as CI does)"
}

# verdict: the last line of $output
verdict() { printf '%s\n' "$output" | tail -1; }

@test "--dry-run prints every command per role and runs none" {
	run "$GATE" --dry-run --mode netns --netns-a "$NSA" --netns-b "$NSB" \
	    --evidence "$TMP/ev"
	assert_success
	assert_output --partial "A: ip netns exec $NSA tcp-probe client 10.199.0.2"
	assert_output --partial "B: ip netns exec $NSB session-run --slot-dir"
	assert_output --partial "B: ip netns exec $NSB session-stop"
	assert_output --partial "A: ip netns exec $NSA env-snapshot --role a"
	assert_output --partial "local: counter-snap --diff"
	assert_output --partial "local: sha-manifest create --root $TMP/ev"
	[ "$(printf '%s\n' "$output" | grep -c '^A: ')" -eq 4 ]
	[ "$(printf '%s\n' "$output" | grep -c '^B: ')" -eq 8 ]
	v=$(verdict)
	[ "$(jqv "$v" .dry_run)" = true ]
	[ "$(jqv "$v" .evidence_level)" = UNKNOWN ]
	[ "$(jqv "$v" '[.stages[]]|unique|join(",")')" = unknown ]
	[ ! -e "$TMP/ev" ]
	run ip netns list
	refute_output --partial "$NSA"
}

@test "--dry-run uses KVGATE_EXEC_A and KVGATE_EXEC_B as the role prefixes" {
	KVGATE_EXEC_A="ssh node1" KVGATE_EXEC_B="srun -w node2 --" run "$GATE" \
	    --dry-run --server-addr 192.0.2.2 --iface-a ib0 --iface-b ib1
	assert_success
	assert_output --partial "A: ssh node1 tcp-probe client 192.0.2.2 --port 5201"
	assert_output --partial "B: srun -w node2 -- counter-snap netdev:ib1"
	[ "$(jqv "$(verdict)" .mode)" = exec ]
}

@test "--dry-run: B's slot directory and server log are made, read and removed through B's prefix, never here" {
	KVGATE_EXEC_A="ssh node1" KVGATE_EXEC_B="ssh node2" run "$GATE" \
	    --dry-run --server-addr 192.0.2.2 --iface-a ib0 --iface-b ib1 \
	    --evidence "$TMP/ev"
	assert_success
	assert_output --partial "B: ssh node2 mktemp -d -t kvgate-slots.XXXXXX"
	assert_output --partial "B: ssh node2 session-run --slot-dir SLOTS --name tcp-probe-server --log SLOTS/server.log"
	assert_output --partial "B: ssh node2 session-stop --slot-dir SLOTS"
	assert_output --partial "B: ssh node2 cat SLOTS/server.log > $TMP/ev/server.log"
	assert_output --partial "B: ssh node2 rm -rf SLOTS"
	# no role command names a path in the local evidence directory
	refute_output --regexp "^[AB]: [^>]*$TMP/ev"
	# the log is copied back after the stop, the slots removed after that
	printf '%s\n' "$output" | grep -n '^B: ' >"$TMP/b"
	stop=$(grep -m1 session-stop "$TMP/b" | cut -d: -f1)
	copy=$(grep -m1 'cat SLOTS' "$TMP/b" | cut -d: -f1)
	rm=$(grep -m1 'rm -rf' "$TMP/b" | cut -d: -f1)
	[ "$stop" -lt "$copy" ] && [ "$copy" -lt "$rm" ]
	[ ! -e "$TMP/ev" ]
}

# node_b: an executable prefix that plays a second node: namespace $NSB,
# its own /tmp ($TMP/node-b-tmp bound over /tmp in a private mount
# namespace), working directory /, no TMPDIR.  Nothing the gate makes
# under its own TMPDIR or evidence directory is visible through it.  The
# kvgate commands stay reachable through a bind at /mnt/kvgate-bin, so
# the test works wherever the tree lives (CI may clone it under /tmp).
make_node_b() {
	mkdir -p "$TMP/node-b-tmp"
	cat >"$TMP/node-b" <<'EOS'
#!/bin/sh
ns=$1 tmp=$2
shift 2
bin=$(dirname "$(command -v session-run)")
exec ip netns exec "$ns" unshare -m --propagation private sh -c '
	bin=$1; shift
	mount -t tmpfs kvg-node-b /mnt && mkdir /mnt/kvgate-bin &&
	    mount --bind "$bin" /mnt/kvgate-bin && mount --bind "$0" /tmp &&
	    cd / && PATH=/mnt/kvgate-bin:$PATH exec env -u TMPDIR "$@"' \
    "$tmp" "$bin" "$@"
EOS
	chmod +x "$TMP/node-b"
}

@test "exec mode with a B that cannot see the gate's files: B's slots and log live on B, the log comes back, nothing is left on B" {
	need_netns
	command -v unshare >/dev/null || skip "unshare not installed"
	kvg_netns_up "$NSA" "$NSB" || skip "cannot make namespaces"
	make_node_b
	# B really has another /tmp
	run "$TMP/node-b" "$NSB" "$TMP/node-b-tmp" ls "$TMP"
	assert_failure
	mkdir "$TMP/gate-tmp"
	TMPDIR=$TMP/gate-tmp KVGATE_EXEC_A="ip netns exec $NSA" \
	    KVGATE_EXEC_B="$TMP/node-b $NSB $TMP/node-b-tmp" run "$GATE" \
	    --mode exec --server-addr 10.199.0.2 --iface-a "$KVG_VETH_A" \
	    --iface-b "$KVG_VETH_B" --duration 500ms -P 2 --evidence "$TMP/ev"
	assert_success
	v=$(verdict)
	[ "$(jqv "$v" .mode)" = exec ]
	[ "$(jqv "$v" .passed)" = true ]
	[ "$(jqv "$v" .stages.server_start)" = passed ]
	[ "$(jqv "$v" .checks.server_stopped)" = true ]
	# the server's log came back from B, whole (its records and messages)
	s=$(grep '^{' "$TMP/ev/server.log" | jq -c 'select(.kind=="session")')
	[ "$(jqv "$s" .state)" = ok ]
	[ "$(jqv "$s" .verified_bytes)" -eq "$(jqv "$v" .verified_bytes)" ]
	# the server ran in B's working directory and was stopped there
	[ "$(jq -r .cwd "$TMP/ev/session-run.json")" = / ]
	[ "$(jq -r .verified "$TMP/ev/session-stop.json")" = true ]
	# the slot directory was B's, and is gone; nothing was made here
	[ -z "$(ls -A "$TMP/node-b-tmp")" ]
	[ -z "$(ls -A "$TMP/gate-tmp")" ]
}

@test "usage errors exit 2" {
	run "$GATE" --bogus
	assert_failure 2
	KVGATE_EXEC_A="ssh x" run "$GATE" --dry-run
	assert_failure 2
	assert_output --partial "needs --server-addr"
	run "$GATE" --mode loopback --shape 1gbit
	assert_failure 2
	assert_output --partial "--shape needs --mode netns"
	run "$GATE" --mode carrier-pigeon
	assert_failure 2
}

@test "loopback: a verified run passes with MEASURED_COMPATIBILITY, says loopback, and the verdict is the last line" {
	run "$GATE" --mode loopback --duration 1s -P 2 --evidence "$TMP/ev"
	assert_success
	v=$(verdict)
	[ "$(jqv "$v" .kind)" = verdict ]
	[ "$(jqv "$v" .mode)" = loopback ]
	[ "$(jqv "$v" .passed)" = true ]
	[ "$(jqv "$v" .evidence_level)" = MEASURED_COMPATIBILITY ]
	[ "$(jqv "$v" '.goodput_bytes_per_s > 0')" = true ]
	[ "$(jqv "$v" '.wire_overhead_ratio >= 1')" = true ]
	[ "$(jqv "$v" '[.checks[]]|all')" = true ]
	[ "$(jqv "$v" .frames_bad)" -eq 0 ]
	for f in client.jsonl env-a.json env-b.json server.log session-run.json \
	    session-stop.json counters-a-before.jsonl counters-b-after.jsonl \
	    counters-a-delta.jsonl verdict.json MANIFEST.jsonl; do
		[ -s "$TMP/ev/$f" ] || { echo "missing $f"; false; }
	done
	[ "$(jqv "$v" .manifest_sha256)" = "$(sha256sum "$TMP/ev/MANIFEST.jsonl" | cut -d' ' -f1)" ]
	# the server was stopped the safe way, and nothing is left running
	[ "$(jq -r .verified "$TMP/ev/session-stop.json")" = true ]
	[ "$(jq -r '.leaked|length' "$TMP/ev/session-stop.json")" -eq 0 ]
	# gone, or a zombie waiting for whoever reaps orphans here
	pid=$(jq -r .pid "$TMP/ev/session-run.json")
	state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || echo gone)
	[ "$state" = gone ] || [ "$state" = Z ]
}

@test "the sealed verdict.json is the claim (passed, evidence level) and the stdout verdict ties it to the manifest's SHA-256" {
	run "$GATE" --mode loopback --duration 500ms -P 1 --evidence "$TMP/ev"
	assert_success
	v=$(verdict)
	c=$(cat "$TMP/ev/verdict.json")
	[ "$(jqv "$c" .passed)" = true ]
	[ "$(jqv "$c" .evidence_level)" = MEASURED_COMPATIBILITY ]
	[ "$(jqv "$c" .evidence_level_limit)" = MEASURED_COMPATIBILITY ]
	# stdout is the sealed claim plus the seal's own result, nothing else
	[ "$(jqv "$v" 'del(.stages.seal, .checks.sealed, .manifest, .manifest_sha256)|tojson')" = \
	    "$(jqv "$c" 'tojson')" ]
	[ "$(jqv "$v" .stages.seal)" = passed ]
	# the manifest seals this very claim, and stdout names that manifest
	h=$(sha256sum "$TMP/ev/verdict.json" | cut -d' ' -f1)
	grep -F verdict.json "$TMP/ev/MANIFEST.jsonl" | grep -qF "$h"
	[ "$(jqv "$v" .manifest_sha256)" = "$(sha256sum "$TMP/ev/MANIFEST.jsonl" | cut -d' ' -f1)" ]
	# a failed run's claim is sealed too
	run "$GATE" --mode loopback --iface-b no-such-if0 --duration 500ms -P 1 \
	    --evidence "$TMP/ev2"
	assert_failure 1
	[ "$(jq -r .passed "$TMP/ev2/verdict.json")" = false ]
	[ "$(jq -r .evidence_level "$TMP/ev2/verdict.json")" = UNPROVEN ]
}

@test "tampering with any file in the evidence directory makes sha-manifest verify fail" {
	run "$GATE" --mode loopback --duration 500ms -P 1 --evidence "$TMP/ev"
	assert_success
	run sha-manifest verify "$TMP/ev/MANIFEST.jsonl" --root "$TMP/ev" --exclude MANIFEST.jsonl
	assert_success
	n=0
	for f in $(cd "$TMP/ev" && ls | grep -v '^MANIFEST.jsonl$'); do
		rm -rf "$TMP/t"
		cp -a "$TMP/ev" "$TMP/t"
		printf 'x' >>"$TMP/t/$f"
		run sha-manifest verify "$TMP/t/MANIFEST.jsonl" --root "$TMP/t" --exclude MANIFEST.jsonl
		[ "$status" -eq 1 ] || { echo "tampered $f still verifies"; false; }
		n=$((n + 1))
	done
	[ "$n" -ge 12 ]
}

@test "two namespaces: the gate runs each role in its own namespace and removes them" {
	need_netns
	run "$GATE" --mode netns --netns-a "$NSA" --netns-b "$NSB" --duration 1s \
	    -P 2 --evidence "$TMP/ev"
	assert_success
	v=$(verdict)
	[ "$(jqv "$v" .mode)" = netns ]
	[ "$(jqv "$v" .exec_a)" = "ip netns exec $NSA" ]
	[ "$(jqv "$v" .server_addr)" = 10.199.0.2 ]
	[ "$(jqv "$v" .passed)" = true ]
	# on a private veth the wire carries the payload plus headers, nothing else
	[ "$(jqv "$v" '.wire_overhead_ratio >= 1 and .wire_overhead_ratio < 1.1')" = true ]
	[ "$(jq -r '.labels.iface' "$TMP/ev/counters-a-before.jsonl" | head -1)" = "$(kvg_veth_name "$NSA")" ]
	run ip netns list
	refute_output --partial "$NSA"
	refute_output --partial "$NSB"
}

@test "a link shaped to 1 Gbit/s: verified goodput lands within 85-100 % of it" {
	need_netns
	kvg_netns_up "$NSA" "$NSB" 1gbit
	KVGATE_EXEC_A=$KVG_EXEC_A KVGATE_EXEC_B=$KVG_EXEC_B run "$GATE" \
	    --server-addr "$KVG_ADDR_B" --iface-a "$KVG_VETH_A" \
	    --iface-b "$KVG_VETH_B" --duration 8s -P 4 --evidence "$TMP/ev"
	assert_success
	v=$(verdict)
	[ "$(jqv "$v" .mode)" = exec ]
	g=$(jqv "$v" .goodput_bytes_per_s)
	echo "goodput $g B/s = $(jqv "$v" '.goodput_bytes_per_s / 125000000') of 1 Gbit/s"
	[ "$(jqv "$v" '.goodput_bytes_per_s >= 0.85 * 125000000 and .goodput_bytes_per_s <= 125000000')" = true ]
}

@test "a Bcrit between two shaped rates flips from not profitable to profitable when the shaping changes" {
	need_netns
	command -v bcrit >/dev/null || skip "bcrit (issue 2) is not built in this tree"
	kvg_netns_up "$NSA" "$NSB" 200mbit
	export KVGATE_EXEC_A=$KVG_EXEC_A KVGATE_EXEC_B=$KVG_EXEC_B
	opts="--server-addr $KVG_ADDR_B --iface-a $KVG_VETH_A --iface-b $KVG_VETH_B --duration 3s -P 2"
	# shellcheck disable=SC2086
	run "$GATE" $opts --evidence "$TMP/slow"
	assert_success
	slow=$(jqv "$(verdict)" .goodput_bytes_per_s)
	kvg_netns_shape 1gbit
	# shellcheck disable=SC2086
	run "$GATE" $opts --evidence "$TMP/fast"
	assert_success
	fast=$(jqv "$(verdict)" .goodput_bytes_per_s)
	# S = 60 MB, T(N) = 2 s, T_suffix = 1 s: serial Bcrit = 60 MB/s, between 25 and 125 MB/s
	rec='{"tokens":1000,"hit_tokens":500,"hit_bytes":60000000,"t_full_s":2,"t_suffix_s":1}'
	run bcrit --bw "tcp=$slow" <<<"$rec"
	assert_success
	[ "$(jqv "$output" .bcrit_serial_bytes_per_s)" = 60000000 ]
	[ "$(jqv "$output" .links.tcp.profitable_serial)" = false ]
	run bcrit --bw "tcp=$fast" <<<"$rec"
	[ "$(jqv "$output" .links.tcp.profitable_serial)" = true ]
}

@test "not root and no prefixes: the gate falls back to loopback and says so" {
	if [ "$(id -u)" -ne 0 ]; then
		run "$GATE" --duration 500ms -P 1 --evidence "$TMP/ev"
	else
		command -v setpriv >/dev/null || skip "setpriv not installed"
		chmod 711 "$TMP"
		mkdir -m 777 "$TMP/nobody"
		run setpriv --reuid=65534 --regid=65534 --clear-groups env \
		    TMPDIR="$TMP/nobody" HOME="$TMP/nobody" KVGATE_BIN="$KVGATE_BIN" \
		    sh "$GATE" --duration 500ms -P 1
	fi
	assert_success
	v=$(verdict)
	[ "$(jqv "$v" .mode)" = loopback ]
	[ "$(jqv "$v" .exec_a)" = "" ]
	[ "$(jqv "$v" .server_addr)" = 127.0.0.1 ]
	[ "$(jqv "$v" .passed)" = true ]
}

@test "a stage that fails makes the verdict UNPROVEN, exit 1, and the server is still stopped" {
	run "$GATE" --mode loopback --iface-b no-such-if0 --duration 500ms -P 1 \
	    --evidence "$TMP/ev"
	assert_failure 1
	v=$(verdict)
	[ "$(jqv "$v" .passed)" = false ]
	[ "$(jqv "$v" .evidence_level)" = UNPROVEN ]
	[ "$(jqv "$v" .stages.counters_before)" = failed ]
	[ "$(jqv "$v" .checks.wire_rx_covers)" = false ]
	[ "$(jqv "$v" .checks.client_verified)" = true ]
	[ "$(jqv "$v" .checks.server_stopped)" = true ]
	[ "$(jqv "$v" .checks.sealed)" = true ]
}

@test "namespaces that cannot be made (the name is taken) are status 69, and the existing one is left alone" {
	need_netns
	ip netns add "$NSA"
	run "$GATE" --mode netns --netns-a "$NSA" --netns-b "$NSB" --duration 500ms \
	    --evidence "$TMP/ev"
	assert_failure 69
	[ "$(jqv "$(verdict)" .stages.netns)" = failed ]
	[ "$(jqv "$(verdict)" .evidence_level)" = UNPROVEN ]
	run ip netns list
	assert_output --partial "$NSA"
	refute_output --partial "$NSB"
	ip netns del "$NSA"
}
