#!/bin/sh
# SPDX-License-Identifier: MIT
#
# model-grid.sh: for one model, at which bandwidth does loading the KV cache
# beat recomputing the prefill?  kv-bytes -> a grid of prompt lengths x hit
# rates -> bcrit against named links, kept as JSON lines and printed as a table.
#
# usage: model-grid.sh [-c CONFIG] [-o DIR] [-b NAME=BW]... [-l LABEL]
#                      [-f FLOPS_PER_S] [-m MFU] [-F FITFILE]
#                      [-t TOKENS,...] [-r RATES,...] [-k BLOCK]
#
#   -c CONFIG  Hugging Face config.json    (default tests/fixtures/model-qwen2.5-7b.json)
#   -o DIR     where grid.jsonl and table.txt go   (default ./model-grid.out)
#   -b NAME=BW a link, repeatable          (default tcp=2.5GB/s rdma=23GB/s)
#   -l LABEL   where the bandwidths came from, e.g. "measured by tcp-probe"
#              (default "illustrative" for the default links, "caller-supplied"
#              for -b links)
#   -f RATE    peak FLOP/s assumed for T(n)        (default 989e12: H200/H100-class
#              dense bf16 peak)
#   -m MFU     model FLOPs utilisation assumed     (default 0.5)
#   -F FILE    a fit(1) record of measured prefill times: replaces the FLOPs
#              assumption (then -f and -m are not used)
#   -t LIST    prompt lengths                      (default 8K,32K,128K)
#   -r LIST    hit rates                           (default 0.1,0.3,0.5,0.8)
#   -k BLOCK   tokens per KV block                 (default 16)
#
# The same settings can come from the environment: MODEL_GRID_CONFIG,
# MODEL_GRID_OUT, MODEL_GRID_BW (space-separated NAME=BW), MODEL_GRID_BW_LABEL,
# MODEL_GRID_FLOPS, MODEL_GRID_MFU, MODEL_GRID_FIT.  KVGATE_BIN names the
# directory of the kvgate commands (default: build/bin beside this script).
#
# Unless -F gives measured times, T(n) is an ASSUMPTION (FLOPs at RATE x MFU)
# and the table says so; unless -b/MODEL_GRID_BW gives bandwidths, they are
# illustrative and the table says so.  Needs jq and awk.
#
# Exit status: 0 only when grid.jsonl holds one record per prompt length x
# hit rate and none is an error record; otherwise the failing stage's own
# status (65 for a config lacking a field or a bad record, 2 for a usage
# error), 65 for error records, 70 for a short grid, with a message naming
# the stage and its first error.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${KVGATE_BIN:-$root/build/bin}
config=${MODEL_GRID_CONFIG:-$root/tests/fixtures/model-qwen2.5-7b.json}
out=${MODEL_GRID_OUT:-./model-grid.out}
bws=${MODEL_GRID_BW:-}
label=${MODEL_GRID_BW_LABEL:-}
flops=${MODEL_GRID_FLOPS:-989e12}
mfu=${MODEL_GRID_MFU:-0.5}
fitfile=${MODEL_GRID_FIT:-}
tokens=8K,32K,128K
rates=0.1,0.3,0.5,0.8
block=16

usage() {
	sed -n 's/^# \{0,1\}//; /^usage:/,/^$/p' "$0" >&2
	exit 2
}

while getopts c:o:b:l:f:m:F:t:r:k:h opt; do
	case $opt in
	c) config=$OPTARG ;;
	o) out=$OPTARG ;;
	b) bws="$bws $OPTARG" ;;
	l) label=$OPTARG ;;
	f) flops=$OPTARG ;;
	m) mfu=$OPTARG ;;
	F) fitfile=$OPTARG ;;
	t) tokens=$OPTARG ;;
	r) rates=$OPTARG ;;
	k) block=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || usage

for c in kv-bytes bcrit; do
	[ -x "$bin/$c" ] || { echo "model-grid.sh: $bin/$c not found (build with make, or set KVGATE_BIN)" >&2; exit 69; }
done
command -v jq >/dev/null || { echo "model-grid.sh: jq not found" >&2; exit 69; }
[ -r "$config" ] || { echo "model-grid.sh: cannot read $config" >&2; exit 2; }

if [ -z "$bws" ]; then
	bws="tcp=2.5GB/s rdma=23GB/s"
	label=${label:-illustrative}
else
	label=${label:-caller-supplied}
fi
set --
for b in $bws; do set -- "$@" --bw "$b"; done

if [ -n "$fitfile" ]; then
	set -- "$@" --fit "$fitfile"
	tsrc="measured: fit of prefill times in $fitfile"
	assumed=
else
	set -- "$@" --flops-per-s "$flops" --mfu "$mfu"
	tsrc="ASSUMPTION: T(n) = prefill FLOPs / ($flops FLOP/s x MFU $mfu)"
	assumed=$(jq -cn --arg f "$flops" --arg m "$mfu" \
	    '{flops_per_s_assumed: ($f | tonumber), mfu_assumed: ($m | tonumber)}')
fi

model=$(basename "$config" .json)
model=${model#model-}
mkdir -p "$out"

# Prompt lengths through kv-bytes' own unit parser would need a record per
# value; "K" here is 1024 tokens, as context windows are named.
grid() {
	echo "$tokens" | tr ',' '\n' | while read -r t; do
		case $t in
		*K|*k) t=$(( ${t%?} * 1024 )) ;;
		*M) t=$(( ${t%?} * 1048576 )) ;;
		esac
		echo "$rates" | tr ',' '\n' | while read -r r; do
			jq -cn --arg m "$model" --argjson t "$t" --argjson r "$r" \
			    --arg l "$label" --argjson a "${assumed:-{\}}" \
			    '{model: $m, tokens: $t, hit_rate: $r, bw_source: $l} + $a'
		done
	done
}

# sh has no pipefail: each stage writes a file and its status is checked,
# so a failing kv-bytes or bcrit fails the pipeline with that status.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
failed() {
	echo "model-grid.sh: $1 failed with status $2${3:+: $3}" >&2
	exit "$2"
}
firsterr() { jq -r 'select(.kind == "error") | .error' "$1" 2>/dev/null | head -n 1; }

grid >"$tmp/grid.in" || failed "the grid" $?
"$bin/kv-bytes" --config "$config" --block "$block" <"$tmp/grid.in" \
    >"$tmp/kv.jsonl" || failed kv-bytes $? "$(firsterr "$tmp/kv.jsonl")"
"$bin/bcrit" --block "$block" "$@" <"$tmp/kv.jsonl" >"$out/grid.jsonl" ||
    failed bcrit $? "$(firsterr "$out/grid.jsonl")"

# every cell of the grid present, none of them an error
want=$(( $(echo "$tokens" | tr ',' '\n' | grep -c .) * $(echo "$rates" | tr ',' '\n' | grep -c .) ))
got=$(wc -l <"$out/grid.jsonl")
nerr=$(jq -s 'map(select(.kind == "error")) | length' "$out/grid.jsonl") ||
    failed "reading $out/grid.jsonl" 65
[ "$nerr" -eq 0 ] || failed "the grid" 65 "$nerr error records in $out/grid.jsonl: $(firsterr "$out/grid.jsonl")"
[ "$got" -eq "$want" ] || failed "the grid" 70 "$got records in $out/grid.jsonl, want $want (tokens x rates)"

{
	echo "model $model ($config), KV block $block tokens"
	echo "KV bytes per token: $(head -n 1 "$out/grid.jsonl" | jq -r .kv_bytes_per_token)"
	echo "prefill time: $tsrc"
	echo "link bandwidths ($label):$(for b in $bws; do printf ' %s' "$b"; done)"
	echo "profitable = B > Bcrit (strict); S/O = serial/overlap; y = loading wins"
	echo
	jq -r '
	    def gbs: if . == null then "never" else (. / 1e9 * 100 | round / 100 | tostring) end;
	    def yn: if . then "y" else "n" end;
	    [ .tokens, (.hit_rate * 100 | round | tostring) + "%", .hit_tokens,
	      (.hit_bytes / 1e9 * 1000 | round / 1000), (.t_full_s * 1000 | round / 1000),
	      (.t_suffix_s * 1000 | round / 1000),
	      (.bcrit_serial_bytes_per_s | gbs), (.bcrit_overlap_bytes_per_s | gbs),
	      (.links // {} | to_entries | map("\(.key):\(.value.profitable_serial | yn)/\(.value.profitable_overlap | yn)") | join(" ")) ]
	    | @tsv' "$out/grid.jsonl" |
	awk -F '\t' 'BEGIN {
		printf "%8s %5s %8s %9s %8s %8s %10s %10s  %s\n", "tokens", "hit", "hit_tok",
		    "hit_GB", "T(N)_s", "T_suf_s", "Bc_ser", "Bc_ovl", "links S/O"
		printf "%8s %5s %8s %9s %8s %8s %10s %10s\n", "", "", "", "", "", "", "GB/s", "GB/s"
	} { printf "%8s %5s %8s %9s %8s %8s %10s %10s  %s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9 }'
	echo
	echo "records: $out/grid.jsonl"
} | tee "$out/table.txt"
