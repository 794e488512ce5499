#!/bin/sh
# SPDX-License-Identifier: MIT
# examples/counter-snap-diff.sh: snapshot an RDMA port and a network
# interface from a sysfs copy, let the counters move (one of them resets),
# and print the deltas.  Output: examples/counter-snap-diff.out (the
# timestamps, which differ per run, are left out).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
PATH=${KVGATE_BIN:-$root/build/bin}:$PATH
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$root/tests/fixtures/counter-snap-sysfs" "$tmp/sys"
counter-snap --sysfs-root "$tmp/sys" --label run=example ib:rxe0:1 netdev:veth-kvg >"$tmp/before"
stats=$tmp/sys/class/net/veth-kvg/statistics
echo 1123456 >"$stats/rx_bytes"		# +1,000,000 bytes
echo 21 >"$stats/tx_bytes"		# went down: the counter was reset
echo 52500 >"$tmp/sys/class/infiniband/rxe0/ports/1/counters/port_xmit_data"
counter-snap --sysfs-root "$tmp/sys" --label run=example ib:rxe0:1 netdev:veth-kvg >"$tmp/after"
counter-snap --diff "$tmp/before" "$tmp/after" |
    jq -c 'select(.delta != 0) | {source, name, before, after, delta, reset}'
