#!/bin/sh
# SPDX-License-Identifier: MIT
# examples/serving.sh: workload | req-stream | stats against the vLLM test
# double (tests/fixtures/fake-vllm.py) on a free loopback port, with prefix
# hits, the eviction probes and two injected failures.  Prints only the
# figures that do not depend on timing; examples/serving.expected holds them.
# Run from the source tree: sh examples/serving.sh
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
PATH=${KVGATE_BIN:-$root/build/bin}:$PATH
tmp=$(mktemp -d)
python3 "$root/tests/fixtures/fake-vllm.py" --port-file "$tmp/port" \
    --cache-blocks 64 --fail 500@3,cut@7 >/dev/null 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
i=0
while [ ! -s "$tmp/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
url=http://127.0.0.1:$(cat "$tmp/port")

# 8 requests over 2 shared prefixes, then a 10-entry ring with its probes
{
	workload --requests 8 --tokens 256 --hit-rate 0.5 --prefixes 2 --rate 50/s --seed 1
	workload --ring 10 --probe --tokens 128 --hit-rate 0.5 --seed 2 |
	    jq -c '.id += 100 | .arrival_s += 0.2'
} | req-stream --url "$url" --model fake-model --max-concurrency 1 >"$tmp/results"

echo "# per request: id, ok, error, expected and reported cached tokens"
jq -s -c 'sort_by(.id)[] | [.id, .ok, .error, .expected_hit_tokens, .cached_tokens, .probe]' "$tmp/results"
echo "# summary"
stats --slo 'ttft_s<=10' <"$tmp/results" |
    jq -c '{n, ok, failed, errors, error_rate, slo_met}'
echo "# server: prefix cache counters"
curl -s "$url/metrics" | grep -E '^(vllm:prefix_cache|fake_vllm_prefix_cache_evicted)'
