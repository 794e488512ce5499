#!/bin/sh
# SPDX-License-Identifier: MIT
# examples/env-redacted.sh: snapshot a made-up server environment; the
# token, the AWS key and the database password never reach the output.
# Output: examples/env-redacted.out (captured_at and host left out).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${KVGATE_BIN:-$root/build/bin}
env -i \
    HF_TOKEN=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 \
    HF_HOME=/data/hf \
    AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE \
    DATABASE_URL=postgres://kvgate:Xk9mP2vL7qR@db.internal:5432/kvgate \
    EXTRA_ARGS='--api-key sk-proj-4fG7hJ2kL9mN3pQ8rS1tU6vW0xY5zA2b --port 8000' \
    NCCL_SOCKET_IFNAME=eth0 \
    TOKENIZERS_PARALLELISM=false \
    "$bin/env-snapshot" --role prefill | jq -c 'del(.captured_at, .host)'
