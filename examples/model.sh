#!/bin/sh
# SPDX-License-Identifier: MIT
# The KV model in five steps: bytes per token of real models, the critical
# bandwidth of one prompt, the strict boundary, and a fit of prefill times
# feeding bcrit.  Output: examples/model.out.  KVGATE_BIN names the commands.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
PATH=${KVGATE_BIN:-$here/../build/bin}:$PATH
fix=$here/../tests/fixtures

echo "# 1. KV bytes per token (config.json as published)"
for m in pythia-14m qwen2.5-7b llama-3.1-8b mistral-7b-v0.1 deepseek-v3; do
	kv-bytes --config "$fix/model-$m.json" </dev/null |
	    jq -r --arg m "$m" '"\($m)\t\(.kv_bytes_per_token)"'
done

echo "# 2. Qwen2.5-7B, 32K-token prompt, 50% prefix hit; T(n) from FLOPs at an"
echo "#    ASSUMED 989e12 FLOP/s x 0.5 MFU; links illustrative"
echo '{"tokens":32768,"hit_rate":0.5}' |
    kv-bytes --config "$fix/model-qwen2.5-7b.json" |
    bcrit --flops-per-s 989e12 --mfu 0.5 --bw tcp=1GB/s --bw rdma=23GB/s |
    jq -c '{hit_tokens, hit_bytes, t_full_s, t_suffix_s,
        bcrit_serial_bytes_per_s, bcrit_overlap_bytes_per_s,
        tcp: .links.tcp | {profitable_serial, profitable_overlap, speedup_overlap},
        rdma: .links.rdma | {profitable_serial, speedup_serial}}'

echo "# 3. the verdict is strict: at B == Bcrit loading only ties"
for bw in 2000 2000.001; do
	echo "{\"tokens\":100,\"hit_tokens\":50,\"hit_bytes\":1000,\"t_full_s\":2,\"t_suffix_s\":1,\"t_lookup_s\":0.5,\"bw_bytes_per_s\":$bw}"
done | bcrit | jq -c '{bw_bytes_per_s, bcrit_serial_bytes_per_s, profitable_serial}'

echo "# 4. states: no hit, lookup costing more than the saving"
printf '%s\n' '{"tokens":16,"hit_rate":1,"kv_bytes_per_token":10,"t_full_s":1,"t_suffix_s":1}' \
    '{"tokens":100,"hit_tokens":50,"hit_bytes":1000,"t_full_s":2,"t_suffix_s":1,"t_lookup_s":1.5}' |
    bcrit | jq -c '{hit_tokens, state_serial, state_overlap, bcrit_serial_bytes_per_s}'

echo "# 5. fit T(n) = a + b·n + c·n² to prefill times, then bcrit --fit"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for n in 1024 4096 16384 65536 131072; do
	awk -v n=$n 'BEGIN { printf "{\"tokens\":%d,\"t_s\":%.6f}\n", n, 0.02 + 3e-5*n + 4e-11*n*n }'
done | fit | tee "$tmp/fit.jsonl" |
    jq -c '{a_s: (.prefill_a_s * 1e4 | round / 1e4),
        b_us_per_token: (.prefill_b_s_per_token * 1e9 | round / 1e3),
        c_ps_per_token2: (.prefill_c_s_per_token2 * 1e15 | round / 1e3),
        r2: (.r2 * 1e6 | round / 1e6), n_points}'
echo '{"tokens":131072,"hit_rate":0.8}' |
    bcrit --config "$fix/model-qwen2.5-7b.json" --fit "$tmp/fit.jsonl" |
    jq -c '{hit_tokens, t_full_s: (.t_full_s * 1000 | round / 1000),
        bcrit_serial_gb_per_s: (.bcrit_serial_bytes_per_s / 1e9 * 100 | round / 100),
        t_source}'
