#!/bin/sh
# SPDX-License-Identifier: MIT
#
# demo.sh: kvgate's main job on an embedded default (make demo).
#
#   1. the TCP link gate between two nodes: two network namespaces joined by
#      a veth pair when root, loopback otherwise (it says which);
#   2. the Qwen2.5-7B critical-bandwidth grid (8K/32K/128K x 10-80 % hits)
#      against the goodput the gate measured;
#   3. the RDMA and GPU stages, which need hardware: run, and reported as
#      UNKNOWN with the reason when the hardware is absent (never simulated);
#   4. the serving pipeline workload | req-stream | stats against the vLLM
#      TEST DOUBLE (tests/fixtures/fake-vllm.py): it shows the accounting,
#      not a real server's performance;
#   5. the whole output directory sealed with sha-manifest and verified.
#
# usage: demo.sh [OUTDIR]          (default ./demo-out; KVGATE_BIN: commands)
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${KVGATE_BIN:-$root/build/bin}
PATH=$bin:$PATH
export PATH KVGATE_BIN="$bin"
out=${1:-./demo-out}
rm -rf "$out" && mkdir -p "$out" || exit 74
out=$(cd "$out" && pwd)

say() { printf '\n== %s\n' "$*"; }

# --- 1. the link gate ---------------------------------------------------
say "1. TCP link gate (pipelines/link-gate.sh)"
sh "$root/pipelines/link-gate.sh" --duration 3s -P 4 --evidence "$out/link" \
    >"$out/link-gate.jsonl" 2>"$out/link-gate.err"
gate_rc=$?
verdict=$(tail -n 1 "$out/link-gate.jsonl")
if ! printf '%s\n' "$verdict" | jq -e '.kind == "verdict"' >/dev/null 2>&1; then
	echo "demo: the link gate gave no verdict (status $gate_rc):" >&2
	cat "$out/link-gate.err" >&2
	exit 70
fi
printf '%s\n' "$verdict" | jq -r '
  "mode: \(.mode)  (\(if .mode == "netns" then "two network namespaces joined by a veth pair"
                     else "loopback on this machine: not a real link" end))",
  "verified goodput: \(.goodput_bytes_per_s / 1e9 * 1000 | round / 1000) GB/s over \(.streams // "?") streams",
  "wire overhead ratio: \(.wire_overhead_ratio)",
  "passed: \(.passed)  evidence level: \(.evidence_level)"'
[ "$gate_rc" -eq 0 ] || echo "demo: the link gate did not pass (status $gate_rc); the grid below uses what it measured"
bw=$(printf '%s\n' "$verdict" | jq -r '.goodput_bytes_per_s | floor')
mode=$(printf '%s\n' "$verdict" | jq -r '.mode')

# --- 2. the model grid --------------------------------------------------
say "2. Qwen2.5-7B critical bandwidth against the measured TCP link (pipelines/model-grid.sh)"
sh "$root/pipelines/model-grid.sh" -o "$out/grid" -b "tcp=$bw" \
    -l "tcp measured by tcp-probe over $mode (link gate above)" || exit $?

# --- 3. hardware stages -------------------------------------------------
say "3. RDMA and GPU stages"
rdma-probe client 127.0.0.1 --iters 1 >"$out/rdma-probe.jsonl" 2>"$out/rdma-probe.err"
rc=$?
if [ "$rc" -eq 69 ]; then
	echo "rdma: UNKNOWN (not run: $(head -n 1 "$out/rdma-probe.err" | sed 's/^rdma-probe: //'))"
else
	echo "rdma: rdma-probe exited $rc; see $out/rdma-probe.jsonl (a real run needs 'pipelines' on two RDMA nodes)"
fi
gpu-preflight --registration dmabuf >"$out/gpu-preflight.jsonl" 2>"$out/gpu-preflight.err"
rc=$?
case $rc in
0) echo "gpu: dmabuf registration ready" ;;
1) echo "gpu: NOT READY: $(jq -r 'select(.kind == "verdict") | .reasons | join("; ")' "$out/gpu-preflight.jsonl")" ;;
69) echo "gpu: UNKNOWN (not run: $(head -n 1 "$out/gpu-preflight.err" | sed 's/^gpu-preflight: //'))" ;;
*) echo "gpu: gpu-preflight exited $rc" ;;
esac

# --- 4. the serving pipeline against the test double --------------------
say "4. workload | req-stream | stats against the vLLM TEST DOUBLE (not a real server)"
python3 "$root/tests/fixtures/fake-vllm.py" --port-file "$out/fake-vllm.port" \
    --cache-blocks 256 --ttft 0.02 --itl 0.002 --fail 500@7 \
    >"$out/fake-vllm.log" 2>&1 &
fake=$!
trap 'kill $fake 2>/dev/null' EXIT INT TERM
i=0
while [ ! -s "$out/fake-vllm.port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -s "$out/fake-vllm.port" ] || { echo "demo: the test double did not start" >&2; exit 69; }
url=http://127.0.0.1:$(cat "$out/fake-vllm.port")
counter-snap "prom:$url/metrics" >"$out/serving-counters-before.jsonl"
workload --requests 24 --tokens 2K --hit-rate 0.5 --prefixes 2 --rate 20/s \
    --output-tokens 16 --seed 7 >"$out/workload.jsonl"
req-stream --url "$url" --model fake-model --max-concurrency 8 \
    <"$out/workload.jsonl" >"$out/results.jsonl"
counter-snap "prom:$url/metrics" >"$out/serving-counters-after.jsonl"
kill $fake 2>/dev/null
wait $fake 2>/dev/null
trap - EXIT INT TERM
counter-snap --diff "$out/serving-counters-before.jsonl" \
    "$out/serving-counters-after.jsonl" >"$out/serving-counters-delta.jsonl"
stats --metrics ttft_s,e2e_s --percentiles 50,99 --bootstrap 500 --seed 1 \
    --slo 'ttft_s<=1' <"$out/results.jsonl" >"$out/stats.jsonl"
jq -r '"requests \(.n): ok \(.ok), failed \(.failed) \(.errors), error rate \(.error_rate)",
       "TTFT p50 \(.ttft_s.p50 * 1000 | round) ms, p99 \(.ttft_s.p99 * 1000 | round) ms; QPM \(.qpm | round)"' \
    "$out/stats.jsonl" 2>/dev/null || cat "$out/stats.jsonl"
jq -s -r '"cache hits: \(map(select(.ok)) | map(select(.cached_tokens == .expected_hit_tokens)) | length) of \(map(select(.ok)) | length) ok requests got exactly the hit tokens the workload expected"' \
    "$out/results.jsonl"
jq -r 'select(.name == "vllm:prefix_cache_hits_total") | "server counter vllm:prefix_cache_hits_total moved by \(.delta) tokens"' \
    "$out/serving-counters-delta.jsonl"

# --- 5. seal ------------------------------------------------------------
say "5. evidence sealed"
sha-manifest create --root "$out" --exclude MANIFEST.jsonl >"$out/MANIFEST.jsonl" || exit $?
sha-manifest verify "$out/MANIFEST.jsonl" --root "$out" --ignore-extra >"$out/verify.jsonl"
rc=$?
echo "$(grep -c '"path"' "$out/MANIFEST.jsonl") files in $out, MANIFEST.jsonl verified: $([ $rc -eq 0 ] && echo yes || echo NO)"
echo "check later: sha-manifest verify $out/MANIFEST.jsonl --root $out --ignore-extra"
exit "$gate_rc"
