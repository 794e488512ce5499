#!/bin/sh
# SPDX-License-Identifier: MIT
# Before a GPU-memory RDMA run: check the registration path, then probe
# the link with the same memory.  Fail closed at the first step that
# cannot be satisfied, saying which and why.
#
#   sh examples/rdma-preflight.sh [SERVER_HOST]
#
# rdma-preflight.out is what it gives on a host with neither a GPU driver
# nor kernel RDMA support (where it was written): both steps exit 69.
PATH=${KVGATE_BIN:-$(dirname "$0")/../build/bin}:$PATH
host=${1:-127.0.0.1}
reg=${KVGATE_GPU_REGISTRATION:-peermem}

echo "== gpu-preflight --registration $reg"
gpu-preflight --registration "$reg" 2>&1 | jq -R -c '
    . as $l | (try fromjson catch null) as $r |
    if $r == null then {stderr: $l}
    elif $r.kind == "verdict" then $r | {kind, registration, ready, reasons, env}
    else $r | {kind, cuda_ordinal, uuid, pci_bus_id, gpu_direct_rdma_supported, dma_buf_supported}
    end'
echo "exit $(gpu-preflight --registration "$reg" >/dev/null 2>&1; echo $?)"

echo "== rdma-probe client $host --mem host"
rdma-probe client "$host" -q 2 --sizes 64KiB..1MiB --duration 2s 2>&1 |
    jq -R -c 'fromjson? // {stderr: .}'
echo "exit $(rdma-probe client "$host" --duration 2s >/dev/null 2>&1; echo $?)"
