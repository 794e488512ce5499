#!/bin/sh
# SPDX-License-Identifier: MIT
# examples/service-slot.sh: start an HTTP server in its own session with a
# PID slot, wait until it answers, refuse a second start, and stop it with
# its whole session.  Output: examples/service-slot.out (PIDs, times and
# the port, which differ per run, are left out).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
PATH=${KVGATE_BIN:-$root/build/bin}:$PATH
slots=$(mktemp -d)
trap 'session-stop --slot-dir "$slots" --name web >/dev/null 2>&1 || true; rm -rf "$slots"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

echo "# start, ready when it answers HTTP"
session-run --slot-dir "$slots" --name web --ready-http "http://127.0.0.1:$port/" \
    --ready-timeout 20s -- python3 -m http.server "$port" --bind 127.0.0.1 |
    jq -c '{kind, name, leader: (.pid == .sid and .pid == .pgid), argv: .argv[0:3], ready}'

echo "# a second start is refused while it runs"
session-run --slot-dir "$slots" --name web -- sleep 1 2>/dev/null |
    jq -c '{kind, error, holder: .holder.name}' || true

echo "# stop: verified first, then the whole session"
session-stop --slot-dir "$slots" --name web |
    jq -c '{kind, verified, signalled: (.signalled | length), escalated, leaked, slot_removed}'
