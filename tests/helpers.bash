# SPDX-License-Identifier: MIT
# Loaded by every bats file: puts the commands under test first in PATH.
KVGATE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KVGATE_BIN=${KVGATE_BIN:-$KVGATE_ROOT/build/bin}
export KVGATE_ROOT KVGATE_BIN
PATH=$KVGATE_BIN:$PATH
FIX=$KVGATE_ROOT/tests/fixtures
load /usr/lib/bats/bats-support/load
load /usr/lib/bats/bats-assert/load

# run_vg CMD ARGS...: run under valgrind (plain builds only; skipped for
# sanitized ones).  Fails the test on any memory error or definite leak.
run_vg() {
	case $KVGATE_BIN in *asan*) skip "valgrind does not run sanitized builds" ;; esac
	command -v valgrind >/dev/null || skip "valgrind not installed"
	run valgrind -q --error-exitcode=99 --leak-check=full \
	    --errors-for-leak-kinds=definite "$@"
	[ "$status" -ne 99 ] || { echo "$output"; return 1; }
}

# jqv JSON FILTER: print jq -r FILTER of JSON (one value).
jqv() { printf '%s\n' "$1" | jq -r "$2"; }
