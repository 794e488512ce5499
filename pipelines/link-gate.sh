#!/bin/sh
# SPDX-License-Identifier: MIT
# link-gate.sh: the two-node TCP link gate.  Measures verified TCP goodput
# from role A (client) to role B (server), checks that the wire counters
# moved at least the verified bytes, seals the evidence with sha-manifest
# and prints one kind:verdict record as the last line of stdout.
#
# usage: link-gate.sh [--dry-run] [--mode auto|netns|exec|loopback]
#                     [--duration DUR] [-P STREAMS] [--frame SIZE]
#                     [--port PORT] [--server-addr ADDR]
#                     [--iface-a IFACE] [--iface-b IFACE]
#                     [--netns-a NAME] [--netns-b NAME] [--shape RATE]
#                     [--evidence DIR]
#
# Where each role runs (DESIGN.md): KVGATE_EXEC_A / KVGATE_EXEC_B prefix
# every command of that role (ssh node1, srun -w node1 --, ip netns exec
# kvg-a).  --mode auto picks: exec when either is set; netns when root
# (the gate makes namespaces kvg-a and kvg-b joined by a veth pair, and
# removes them); loopback otherwise (empty prefixes, 127.0.0.1, lo).
# KVGATE_BIN, when set, is put first in PATH.  Every file a role's
# command touches lives on that role's node: B's slot directory and server
# log are made through B's prefix, and the log is copied back through it;
# everything else a role makes is its stdout, captured here.
# pipelines/link-gate.md describes the evidence directory and every
# verdict field.
#
# Exit: 0 verdict passed, 1 failed, 2 usage, 69 a resource is missing.
set -u

KVGATE_ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ -n "${KVGATE_BIN:-}" ] && PATH=$KVGATE_BIN:$PATH && export PATH

mode=auto dry=0 duration=5s streams=4 frame=1MiB port='' addr=''
iface_a='' iface_b='' ns_a=kvg-a ns_b=kvg-b shape='' ev=''

usage() {
	sed -n 's/^# usage: /usage: /p; /^#  *\[/s/^#/ /p' "$0" | head -6 >&2
	exit 2
}

die() { echo "link-gate: $1" >&2; exit "${2:-69}"; }

while [ $# -gt 0 ]; do
	case $1 in
	--dry-run) dry=1 ;;
	--mode) mode=${2:?}; shift ;;
	--duration) duration=${2:?}; shift ;;
	-P|--parallel) streams=${2:?}; shift ;;
	--frame) frame=${2:?}; shift ;;
	--port) port=${2:?}; shift ;;
	--server-addr) addr=${2:?}; shift ;;
	--iface-a) iface_a=${2:?}; shift ;;
	--iface-b) iface_b=${2:?}; shift ;;
	--netns-a) ns_a=${2:?}; shift ;;
	--netns-b) ns_b=${2:?}; shift ;;
	--shape) shape=${2:?}; shift ;;
	--evidence) ev=${2:?}; shift ;;
	-h|--help) usage 2>&1 | sed 's/^/ /' ; exit 0 ;;
	*) echo "link-gate: unknown option $1" >&2; usage ;;
	esac
	shift
done

exec_a=${KVGATE_EXEC_A:-} exec_b=${KVGATE_EXEC_B:-}
. "$KVGATE_ROOT/tests/lib/netns.sh"
if [ "$mode" = auto ]; then
	if [ -n "$exec_a$exec_b" ]; then mode="exec"
	elif kvg_netns_usable; then mode=netns
	else mode=loopback
	fi
fi
case $mode in
exec)
	[ -n "$addr" ] || die "--mode exec needs --server-addr (B's address as A sees it)" 2
	if [ -z "$iface_a" ] || [ -z "$iface_b" ]; then
		die "--mode exec needs --iface-a and --iface-b for the wire counters" 2
	fi ;;
netns)
	[ -z "$exec_a$exec_b" ] || die "--mode netns makes its own prefixes; unset KVGATE_EXEC_A/B" 2
	kvg_netns_usable || [ "$dry" = 1 ] ||
		die "--mode netns needs root and iproute2 (ip netns)"
	exec_a="ip netns exec $ns_a" exec_b="ip netns exec $ns_b"
	addr=${addr:-10.199.0.2}
	iface_a=$(kvg_veth_name "$ns_a") iface_b=$(kvg_veth_name "$ns_b") ;;
loopback)
	exec_a='' exec_b='' addr=${addr:-127.0.0.1}
	iface_a=${iface_a:-lo} iface_b=${iface_b:-lo} ;;
*) echo "link-gate: --mode must be auto, netns, exec or loopback" >&2; usage ;;
esac
[ -n "$shape" ] && [ "$mode" != netns ] && die "--shape needs --mode netns" 2
# loopback shares one port space with everything else: let the kernel pick
[ -z "$port" ] && { [ "$mode" = loopback ] && port=0 || port=5201; }

for c in tcp-probe counter-snap session-run session-stop sha-manifest env-snapshot jq; do
	command -v "$c" >/dev/null 2>&1 || [ "$dry" = 1 ] ||
		die "$c not found (set KVGATE_BIN to the kvgate build/bin directory)"
done

# --- stages -------------------------------------------------------------
t0=$(date +%s.%N)
if [ "$dry" = 1 ]; then
	ev=${ev:-EVIDENCE}
else
	if [ -n "$ev" ]; then
		[ -e "$ev" ] && [ -n "$(ls -A "$ev" 2>/dev/null)" ] &&
			die "--evidence $ev exists and is not empty" 2
		mkdir -p "$ev" || die "cannot create $ev" 74
	else
		ev=$(mktemp -d "${TMPDIR:-/tmp}/kvgate-link-gate.XXXXXX") ||
			die "cannot create an evidence directory" 74
	fi
	ev=$(cd "$ev" && pwd)
fi
slots=''	# B's slot directory, on B

# role ROLE OUT CMD...: run CMD through the role's prefix, stdout to OUT
# (relative to the evidence dir), stderr to the role's log.  With
# --dry-run, print it instead.
role() {
	r=$1 out=$2
	shift 2
	case $r in A) pre=$exec_a ;; B) pre=$exec_b ;; *) pre= ;; esac
	if [ "$dry" = 1 ]; then
		printf '%s: %s%s > %s/%s\n' "$r" "${pre:+$pre }" "$*" "$ev" "$out"
		return 0
	fi
	# shellcheck disable=SC2086
	$pre "$@" >"$ev/$out" 2>>"$ev/stderr-$r.log"
}

# b_slots: make B's slot directory on B (through B's prefix) into $slots.
b_slots() {
	if [ "$dry" = 1 ]; then
		echo "B: ${exec_b:+$exec_b }mktemp -d -t kvgate-slots.XXXXXX"
		slots=SLOTS
		return 0
	fi
	# shellcheck disable=SC2086
	slots=$($exec_b mktemp -d -t kvgate-slots.XXXXXX 2>>"$ev/stderr-B.log")
	case $slots in /*) return 0 ;; esac
	slots=''
	return 1
}

# b_slots_rm: remove B's slot directory on B.
b_slots_rm() {
	[ -n "$slots" ] || return 0
	if [ "$dry" = 1 ]; then
		echo "B: ${exec_b:+$exec_b }rm -rf $slots"
	else
		# shellcheck disable=SC2086
		$exec_b rm -rf "$slots" 2>>"$ev/stderr-B.log"
	fi
	slots=''
}

stage() { eval "st_$1=\$2"; }
# each stage: passed, failed, unknown (did not run) or not_needed
st_netns=unknown st_env_a=unknown st_env_b=unknown st_server_start=unknown
st_counters_before=unknown st_client=unknown st_counters_after=unknown
st_deltas=unknown st_server_stop=unknown
# passed_if STAGE CMD...: run CMD; the stage passed or failed with it
passed_if() {
	_s=$1
	shift
	if "$@"; then stage "$_s" passed; else stage "$_s" failed; return 1; fi
}
[ "$mode" = netns ] || stage netns not_needed
server_up=0 ns_up=0

cleanup() {
	if [ "$server_up" = 1 ]; then
		passed_if server_stop role B session-stop.json session-stop \
		    --slot-dir "$slots" --name tcp-probe-server
		server_up=0
	fi
	# the server's log, from B, with its last lines: after the stop
	[ -n "$slots" ] && role B server.log cat "$slots/server.log"
	b_slots_rm
	[ "$ns_up" = 1 ] && kvg_netns_down && ns_up=0
}
trap 'cleanup; exit 70' INT TERM HUP
trap cleanup EXIT

# snap WHEN: counters of both sides' interfaces
snap() {
	role A "counters-a-$1.jsonl" counter-snap "netdev:$iface_a" &&
	    role B "counters-b-$1.jsonl" counter-snap "netdev:$iface_b"
}

diffs() {
	for side in a b; do
		role local "counters-$side-delta.jsonl" counter-snap --diff \
		    "$ev/counters-$side-before.jsonl" \
		    "$ev/counters-$side-after.jsonl" || return 1
	done
}

run_stages() {
	if [ "$mode" = netns ]; then
		if [ "$dry" = 1 ]; then
			echo "local: kvg_netns_up $ns_a $ns_b${shape:+ $shape}  # tests/lib/netns.sh"
		elif kvg_netns_up "$ns_a" "$ns_b" "$shape"; then
			ns_up=1
		else
			stage netns failed; return 1
		fi
		stage netns passed
	fi
	passed_if env_a role A env-a.json env-snapshot --role a
	passed_if env_b role B env-b.json env-snapshot --role b
	b_slots || { stage server_start failed; return 1; }
	# on B, like the slot directory it sits in
	blog=$slots/server.log
	if [ "$port" = 0 ]; then
		ready="--ready-cmd"
		readyarg="grep -q '\"kind\":\"listening\"' '$blog'"
	else
		ready="--ready-tcp" readyarg="$addr:$port"
	fi
	if role B session-run.json session-run --slot-dir "$slots" \
	    --name tcp-probe-server --log "$blog" "$ready" "$readyarg" \
	    --ready-timeout 15s -- tcp-probe server --bind "$addr" --port "$port"
	then
		server_up=1; stage server_start passed
	else
		stage server_start failed; return 1
	fi
	# shellcheck disable=SC2086
	[ "$dry" = 1 ] || [ "$port" != 0 ] || port=$($exec_b cat "$blog" |
	    jq -r 'select(.kind=="listening").port' | head -1)
	passed_if counters_before snap before
	passed_if client role A client.jsonl tcp-probe client "$addr" \
	    --port "$port" --duration "$duration" -P "$streams" \
	    --frame "$frame" --interval 1s
	passed_if counters_after snap after
	passed_if deltas diffs
	cleanup
}
run_stages
cleanup
if [ "$dry" = 1 ]; then	# nothing ran, so nothing passed
	for s in netns env_a env_b server_start counters_before client \
	    counters_after deltas server_stop; do
		eval "[ \"\$st_$s\" = not_needed ] || stage $s unknown"
	done
fi

# --- the verdict ----------------------------------------------------------
t1=$(date +%s.%N)
stages=$(jq -nc --arg a "$st_netns" --arg b "$st_env_a" --arg c "$st_env_b" \
    --arg d "$st_server_start" --arg e "$st_counters_before" \
    --arg f "$st_client" --arg g "$st_counters_after" --arg h "$st_deltas" \
    --arg i "$st_server_stop" \
    '{netns:$a, env_a:$b, env_b:$c, server_start:$d, counters_before:$e,
      client:$f, counters_after:$g, deltas:$h, server_stop:$i}')
params=$(jq -nc --arg mode "$mode" --arg ea "$exec_a" --arg eb "$exec_b" \
    --arg addr "$addr" --arg port "$port" --arg dur "$duration" \
    --arg p "$streams" --arg fr "$frame" --arg ia "$iface_a" \
    --arg ib "$iface_b" --arg shape "$shape" --arg ev "$ev" \
    --argjson el "$(awk "BEGIN { print $t1 - $t0 }")" \
    '{kind:"verdict", gate:"tcp-link", mode:$mode, exec_a:$ea, exec_b:$eb,
      server_addr:$addr, port:($port|tonumber? // null),
      iface_a:$ia, iface_b:$ib,
      options:{duration:$dur, streams:($p|tonumber? // $p), frame:$fr,
               shape:(if $shape == "" then null else $shape end)},
      evidence_dir:$ev, gate_elapsed_s:$el}')

if [ "$dry" = 1 ]; then
	echo "local: sha-manifest create --root $ev --exclude MANIFEST.jsonl > $ev/MANIFEST.jsonl"
	echo "local: sha-manifest verify $ev/MANIFEST.jsonl --root $ev --exclude MANIFEST.jsonl"
	jq -nc --argjson p "$params" --argjson s "$stages" '$p + {dry_run:true,
	    passed:false, evidence_level:"UNKNOWN", goodput_bytes_per_s:null,
	    stages:($s + {seal:"unknown"})}'
	exit 0
fi

# Read the evidence: the client's summary and both sides' byte deltas.
summary=$(jq -c 'select(.kind=="summary")' "$ev/client.jsonl" 2>/dev/null | tail -1)
[ -n "$summary" ] || summary='{}'
delta() {
	d=$(jq -s --arg n "$2" \
	    '[.[]|select(.kind=="delta" and .name==$n)][0].delta // null' \
	    "$ev/counters-$1-delta.jsonl" 2>/dev/null) || d=null
	printf '%s\n' "${d:-null}"
}
tx_a=$(delta a tx_bytes) rx_b=$(delta b rx_bytes)
verdict=$(jq -nc --argjson p "$params" --argjson s "$stages" \
    --argjson sum "$summary" --argjson tx "$tx_a" --argjson rx "$rx_b" '
  ($sum.verified_bytes // null) as $v |
  {client_verified: ($sum.verified == true),
   wire_tx_covers: ($v != null and $tx != null and $tx >= $v),
   wire_rx_covers: ($v != null and $rx != null and $rx >= $v),
   server_stopped: ($s.server_stop == "passed")} as $checks |
  $p + {dry_run:false,
   duration_s: ($sum.duration_s // null), streams: ($sum.streams // null),
   frame_bytes: ($sum.frame_bytes // null),
   goodput_bytes_per_s: ($sum.goodput_bytes_per_s // null),
   verified_bytes: $v, sent_bytes: ($sum.sent_bytes // null),
   frames_bad: ($sum.frames_bad // null), seq_gaps: ($sum.seq_gaps // null),
   rtt_p50_s: ($sum.rtt_p50_s // null), retransmits: ($sum.retransmits // null),
   wire_tx_bytes: $tx, wire_rx_bytes: $rx,
   wire_overhead_ratio: (if $v != null and $v > 0 and $rx != null
       then $rx / $v else null end),
   checks: $checks, stages: $s} |
  # the claim: everything but the seal, which cannot seal itself
  .passed = ([.checks[]] | all) |
  .evidence_level = (if .passed then "MEASURED_COMPATIBILITY"
      else "UNPROVEN" end) |
  .evidence_level_limit = "MEASURED_COMPATIBILITY"')
printf '%s\n' "$verdict" >"$ev/verdict.json" || die "cannot write $ev/verdict.json" 74

# Seal: every file in the evidence directory, the claim included, then
# check the seal.  The manifest is written beside the directory first, so
# it never lists itself half-written.
seal=failed
mtmp=$(mktemp "${TMPDIR:-/tmp}/kvgate-manifest.XXXXXX") || die "cannot create a temporary file" 74
if sha-manifest create --root "$ev" --exclude MANIFEST.jsonl >"$mtmp" &&
    mv "$mtmp" "$ev/MANIFEST.jsonl" &&
    sha-manifest verify "$ev/MANIFEST.jsonl" --root "$ev" \
    --exclude MANIFEST.jsonl >/dev/null; then
	seal=passed
fi
rm -f "$mtmp"
msha=$(sha256sum "$ev/MANIFEST.jsonl" 2>/dev/null | cut -d' ' -f1)
# stdout: the sealed claim, the seal's result, and the manifest's SHA-256
# that ties the two together
v=$(printf '%s\n' "$verdict" | jq -c --arg seal "$seal" \
    --arg m "$ev/MANIFEST.jsonl" --arg msha "$msha" '
  .stages.seal = $seal | .checks.sealed = ($seal == "passed") |
  .passed = (.passed and .checks.sealed) |
  .evidence_level = (if .passed then .evidence_level else "UNPROVEN" end) |
  .manifest = $m | .manifest_sha256 = (if $msha == "" then null else $msha end)') ||
    exit 70
printf '%s\n' "$v"
[ "$st_netns" = failed ] && exit 69
[ "$(printf '%s' "$v" | jq -r .passed)" = true ]
