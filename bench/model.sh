#!/bin/sh
# SPDX-License-Identifier: MIT
#
# bench/model.sh: BENCH_RECORDS grid records (default 1,000,000, as the
# issue asks: a few minutes on 2 busy cores, nearly all of it jq's; set
# BENCH_RECORDS=100000 for a quick run) of
# Qwen2.5-7B through `kv-bytes | bcrit` versus the same formulas in jq, in
# one run: records per second for both, the ratio, a check that both give
# the same numbers, and the peak memory (max RSS) of each kvgate stage at a
# tenth of the records and at all of them, to show it does not grow.
#
#   KVGATE_BIN     directory of the commands (default build/bin)
#   BENCH_RECORDS  record count (default 1000000)
#   BENCH_JQ       0 to skip the jq run (default 1)
#
# Needs jq, awk and /usr/bin/time (Debian package "time") for the memory
# figures; without it memory is read from nothing and shown as "n/a".
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${KVGATE_BIN:-$root/build/bin}
n=${BENCH_RECORDS:-1000000}
runjq=${BENCH_JQ:-1}
cfg=$root/tests/fixtures/model-qwen2.5-7b.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

for c in kv-bytes bcrit; do
	[ -x "$bin/$c" ] || { echo "bench/model.sh: no $bin/$c (run make)" >&2; exit 69; }
done
command -v jq >/dev/null || { echo "bench/model.sh: jq not found" >&2; exit 69; }
tv=
[ -x /usr/bin/time ] && tv=/usr/bin/time

now() { date +%s.%N; }

# grid: prompt lengths 1K..128K x hit rates 0..0.95, cycling
awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++)
	printf "{\"id\":%d,\"tokens\":%d,\"hit_rate\":%.2f}\n", i, 1024 * (1 + i % 128), (i % 20) * 0.05 }' >"$tmp/in"
head -n $((n / 10)) "$tmp/in" >"$tmp/in10"

BW="--bw tcp=2.5GB/s --bw rdma=23GB/s"

# kvpipe INPUT OUTPUT: the kvgate pipeline; max RSS (KiB) of each stage
# into $tmp/rss.kvb and $tmp/rss.bc
kvpipe() {
	if [ -n "$tv" ]; then
		$tv -f %M -o "$tmp/rss.kvb" "$bin/kv-bytes" --config "$cfg" <"$1" |
		    $tv -f %M -o "$tmp/rss.bc" "$bin/bcrit" --flops-per-s 989e12 --mfu 0.5 $BW >"$2"
	else
		"$bin/kv-bytes" --config "$cfg" <"$1" |
		    "$bin/bcrit" --flops-per-s 989e12 --mfu 0.5 $BW >"$2"
		echo n/a >"$tmp/rss.kvb"; echo n/a >"$tmp/rss.bc"
	fi
}

# The model constants, computed once (as kvgate parses --config once):
# GQA without windows, which is what Qwen2.5-7B is.
model=$(jq -c '{L: .num_hidden_layers, bpt: (.num_hidden_layers * 2 *
    .num_key_value_heads * (.hidden_size / .num_attention_heads) * 2),
    dattn: .hidden_size,
    P: (.num_hidden_layers * (2 * .hidden_size * .hidden_size +
        2 * .hidden_size * .num_key_value_heads * (.hidden_size / .num_attention_heads) +
        3 * .hidden_size * .intermediate_size))}' "$cfg")

JQPROG='
def F(n): 2 * $m.P * n + 2 * $m.L * $m.dattn * n * n;
def link($b; $s; $tf; $ts; $tl; $st_s; $bs; $st_o; $bo):
  ($s / $b) as $load
  | ($tl + $load + $ts) as $tser | ($tl + ([$load, $ts] | max)) as $tov
  | {bw_bytes_per_s: $b,
     profitable_serial: ($st_s == "ok" and $b > $bs),
     profitable_overlap: ($st_o == "ok" and $b > $bo),
     t_serial_s: $tser, t_overlap_s: $tov,
     speedup_serial: ($tf / $tser), speedup_overlap: ($tf / $tov)};
. as $r | $r.tokens as $n
| ($r.hit_rate * $n) as $x | ($x / 16 | floor) as $b0
| (if ($b0 + 1) * 16 <= $x * (1 + 4 * 2.220446049250313e-16) then $b0 + 1 else $b0 end) as $b
| ([$b, (($n - 1) / 16 | floor)] | min * 16) as $h
| ($h * $m.bpt) as $s
| (F($n) / (989e12 * 0.5)) as $tf | ((F($n) - F($h)) / (989e12 * 0.5)) as $ts
| 0 as $tl
| ($tf - ($ts + $tl)) as $ds | ($tf - $tl) as $do
| (if $h == 0 then "no_hit" elif $s == 0 then "no_payload"
   elif $ds <= 0 then "never_profitable" elif ($s / $ds | isinfinite) then "overflow"
   else "ok" end) as $st_s
| (if $h == 0 then "no_hit" elif $s == 0 then "no_payload"
   elif $ts + $tl >= $tf or $do <= 0 then "never_profitable"
   elif ($s / $do | isinfinite) then "overflow" else "ok" end) as $st_o
| (if $st_s == "ok" then $s / $ds else null end) as $bs
| (if $st_o == "ok" then $s / $do else null end) as $bo
| $r + {kv_bytes_per_token: $m.bpt, kv_bytes_per_block: ($m.bpt * 16),
    kv_bytes: ($n * $m.bpt), hit_tokens: $h, hit_bytes: $s,
    params_nonembed: $m.P, prefill_flops: F($n), suffix_flops: (F($n) - F($h)),
    t_full_s: $tf, t_suffix_s: $ts, t_lookup_s: $tl, t_source: "flops",
    bcrit_serial_bytes_per_s: $bs, bcrit_overlap_bytes_per_s: $bo,
    state_serial: $st_s, state_overlap: $st_o,
    links: {tcp: link(2.5e9; $s; $tf; $ts; $tl; $st_s; $bs; $st_o; $bo),
            rdma: link(23e9; $s; $tf; $ts; $tl; $st_s; $bs; $st_o; $bo)}}'

echo "bench/model.sh: $n grid records of Qwen2.5-7B (1K..128K tokens x 0..95% hits), 2 links"

kvpipe "$tmp/in10" "$tmp/out10"
rss10_kvb=$(tail -n 1 "$tmp/rss.kvb"); rss10_bc=$(tail -n 1 "$tmp/rss.bc")

t0=$(now)
kvpipe "$tmp/in" "$tmp/out.kv"
t1=$(now)
rss_kvb=$(tail -n 1 "$tmp/rss.kvb"); rss_bc=$(tail -n 1 "$tmp/rss.bc")
kv_s=$(echo "$t0 $t1" | awk '{ printf "%.3f", $2 - $1 }')
kv_rate=$(echo "$n $kv_s" | awk '{ printf "%.0f", $1 / $2 }')
[ "$(wc -l <"$tmp/out.kv")" -eq "$n" ] || { echo "kvgate: wrong record count" >&2; exit 70; }

printf '  kvgate  kv-bytes | bcrit : %8.3f s  %10s records/s\n' "$kv_s" "$kv_rate"
if [ "$runjq" != 0 ]; then
	t0=$(now)
	jq -c --argjson m "$model" "$JQPROG" <"$tmp/in" >"$tmp/out.jq"
	t1=$(now)
	jq_s=$(echo "$t0 $t1" | awk '{ printf "%.3f", $2 - $1 }')
	jq_rate=$(echo "$n $jq_s" | awk '{ printf "%.0f", $1 / $2 }')
	printf '  jq     same formulas    : %8.3f s  %10s records/s\n' "$jq_s" "$jq_rate"
	printf '  ratio  kvgate / jq      : %8.1f x  (goal >= 10x)\n' \
	    "$(echo "$jq_s $kv_s" | awk '{ print $1 / $2 }')"
	# same numbers: compare every 97th record's key fields, relative 1e-9
	bad=$(paste -d '\t' "$tmp/out.kv" "$tmp/out.jq" | awk 'NR % 97 == 1' |
	    jq -R -s '[split("\n")[] | select(length > 0) | split("\t") | map(fromjson)
	      | . as [$a, $b]
	      | ["hit_tokens", "hit_bytes", "t_full_s", "t_suffix_s",
	         "bcrit_serial_bytes_per_s", "bcrit_overlap_bytes_per_s"]
	      | map(. as $k | if $a[$k] == null or $b[$k] == null then $a[$k] == $b[$k]
	             else (($a[$k] - $b[$k]) | fabs) <= 1e-9 * ([($b[$k] | fabs), 1] | max) end)
	      + [$a.state_serial == $b.state_serial, $a.state_overlap == $b.state_overlap,
	         $a.links.tcp.profitable_serial == $b.links.tcp.profitable_serial,
	         $a.links.rdma.profitable_overlap == $b.links.rdma.profitable_overlap]
	      | all | not] | map(select(.)) | length')
	echo "  agreement (every 97th record, 10 fields): $bad mismatching records"
	[ "$bad" -eq 0 ] || exit 1
fi
printf '  peak RSS, KiB            : %s records: kv-bytes %s, bcrit %s\n' \
    "$((n / 10))" "$rss10_kvb" "$rss10_bc"
printf '                             %s records: kv-bytes %s, bcrit %s\n' \
    "$n" "$rss_kvb" "$rss_bc"
