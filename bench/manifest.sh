#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/manifest.sh: sha-manifest create against sha256sum on the same tree,
# and against openssl dgst -sha256 on its largest file.  Prints throughputs
# and ratios.  Knobs: KVGATE_BENCH_BYTES (tree size, default 1GiB),
# KVGATE_BENCH_REPS (best of N runs, default 3), KVGATE_BENCH_DIR (default
# /tmp); the tree is deleted at the end.
set -eu
BIN=${KVGATE_BIN:-$(cd "$(dirname "$0")/.." && pwd)/build/bin}
BYTES=${KVGATE_BENCH_BYTES:-1073741824}
REPS=${KVGATE_BENCH_REPS:-3}
base=$(mktemp -d "${KVGATE_BENCH_DIR:-/tmp}/kvgate-manifest-bench.XXXXXX")
trap 'rm -rf "$base"' EXIT INT TERM
tree=$base/tree
mkdir -p "$tree"

# The tree: 1/8 of the bytes in small files (1-63 KiB), 1/8 in 1 MiB files,
# the rest in four large files, the first of them the largest.
small=$((BYTES / 8)) medium=$((BYTES / 8))
large=$((BYTES - small - medium))
echo "building a $((BYTES >> 20)) MiB tree in $tree ..."
head -c "$((BYTES + 4194304))" /dev/urandom >"$base/pool"
off=0 n=0 dir=0
while [ "$off" -lt "$small" ]; do
	sz=$(( (n * 7919 % 63 + 1) * 1024 ))
	[ $((n % 256)) -eq 0 ] && dir=$((dir + 1)) && mkdir -p "$tree/small/d$dir"
	dd if="$base/pool" of="$tree/small/d$dir/f$n" bs=1024 skip=$((off / 1024)) \
	    count=$((sz / 1024)) status=none
	off=$((off + sz)) n=$((n + 1))
done
nsmall=$n
mkdir -p "$tree/medium"
dd if="$base/pool" of="$tree/medium/all" bs=1048576 count=$((medium >> 20)) \
    skip=$((off >> 20)) status=none
(cd "$tree/medium" && split -b 1048576 -a 4 all m. && rm all)
mkdir -p "$tree/large"
for i in 0 1 2 3; do
	sz=$(( i == 0 ? large * 2 / 5 : large / 5 ))
	dd if="$base/pool" of="$tree/large/part$i.bin" bs=1048576 \
	    count=$((sz >> 20)) skip=$((i * 7)) status=none
done
rm "$base/pool"
total=$(find "$tree" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
files=$(find "$tree" -type f | wc -l)
big=$tree/large/part0.bin
bigsz=$(stat -c %s "$big")
echo "tree: $files files ($nsmall small), $((total >> 20)) MiB; largest $((bigsz >> 20)) MiB"

now() { date +%s.%N; }
# best CMD...: the best wall time of REPS runs, in seconds
best() {
	b=
	i=0
	while [ "$i" -lt "$REPS" ]; do
		t0=$(now)
		"$@" >/dev/null
		t1=$(now)
		b=$(awk -v a="$t0" -v z="$t1" -v b="$b" \
		    'BEGIN { t = z - a; print (b == "" || t < b) ? t : b }')
		i=$((i + 1))
	done
	echo "$b"
}
sums() { cd "$tree" && find . -type f -print0 | xargs -0 sha256sum; }

# warm the page cache so that both sides hash from memory
cat "$tree"/large/* "$tree"/medium/* >/dev/null
find "$tree/small" -type f -exec cat {} + >/dev/null

# same answer first
(cd "$tree" && find . -type f -print0 | xargs -0 sha256sum | sed 's| \./| |' | sort) >"$base/a"
"$BIN/sha-manifest" create --root "$tree" --format sha256sum | sort >"$base/b"
cmp -s "$base/a" "$base/b" || { echo "manifest.sh: digests differ from sha256sum" >&2; exit 1; }

jobs=$(nproc)
t_sum=$(best sums)
t_man=$(best "$BIN/sha-manifest" create --root "$tree")
t_man1=$(best "$BIN/sha-manifest" create --root "$tree" -j 1)
t_ossl=$(best openssl dgst -sha256 "$big")
t_one=$(best "$BIN/sha-manifest" create --root "$tree/large" part0.bin)

awk -v T="$total" -v B="$bigsz" -v s="$t_sum" -v m="$t_man" -v m1="$t_man1" \
    -v o="$t_ossl" -v one="$t_one" -v j="$jobs" -v r="$REPS" 'BEGIN {
	mib = 1048576
	printf "tree (best of %d, warm cache, %d cores):\n", r, j
	printf "  sha256sum                  %7.3f s  %8.1f MiB/s\n", s, T / mib / s
	printf "  sha-manifest create -j %-3d %7.3f s  %8.1f MiB/s\n", j, m, T / mib / m
	printf "  sha-manifest create -j 1   %7.3f s  %8.1f MiB/s\n", m1, T / mib / m1
	printf "largest file (%d MiB):\n", B / mib
	printf "  openssl dgst -sha256       %7.3f s  %8.1f MiB/s\n", o, B / mib / o
	printf "  sha-manifest create        %7.3f s  %8.1f MiB/s\n", one, B / mib / one
	printf "ratio sha-manifest/sha256sum (default -j): %.2fx (goal >= 3x)\n", s / m
	printf "ratio sha-manifest/sha256sum (-j 1):       %.2fx\n", s / m1
	printf "ratio single file sha-manifest/openssl:    %.2fx (goal >= 0.9x)\n", o / one
}'
