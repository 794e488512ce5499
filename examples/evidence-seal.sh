#!/bin/sh
# SPDX-License-Identifier: MIT
# examples/evidence-seal.sh: seal a run's evidence with sha-manifest, edit
# one file, lose another, add a third, and let verify find all three; then
# the same tree in sha256sum's format, checked by coreutils.  Output:
# examples/evidence-seal.out.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
PATH=${KVGATE_BIN:-$root/build/bin}:$PATH
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ev=$tmp/evidence
mkdir -p "$ev/runs/r1" "$ev/logs"
printf '{"ttft_s":0.112}\n{"ttft_s":0.098}\n' >"$ev/runs/r1/requests.jsonl"
printf '{"kind":"verdict","profitable":true}\n' >"$ev/runs/r1/verdict.jsonl"
printf 'server started\n' >"$ev/logs/server.log"
ln -s runs/r1 "$ev/latest"

echo "# create"
sha-manifest create --root "$ev" >"$tmp/evidence.manifest"
cat "$tmp/evidence.manifest"

echo "# verify, untouched"
sha-manifest verify --root "$ev" "$tmp/evidence.manifest" | tail -1

echo "# verify, after an edit, a loss and an addition"
printf '{"kind":"verdict","profitable":null}\n' >"$ev/runs/r1/verdict.jsonl"
printf '{"ttft_s":0.112}\n' >"$ev/runs/r1/requests.jsonl"
rm "$ev/logs/server.log"
printf 'late\n' >"$ev/logs/added.log"
sha-manifest verify --root "$ev" "$tmp/evidence.manifest" >"$tmp/verify" ||
    echo "exit status $?"
jq -c 'select(.kind == "check" and .status != "ok") | {path, status}' "$tmp/verify"
tail -1 "$tmp/verify" | jq -c '{ok, modified, size_changed, missing, extra, verified}'

echo "# sha256sum format, checked by sha256sum -c"
sha-manifest create --root "$ev" --format sha256sum 2>/dev/null >"$tmp/SHA256SUMS"
cat "$tmp/SHA256SUMS"
(cd "$ev" && sha256sum -c "$tmp/SHA256SUMS")
