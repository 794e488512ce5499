#!/bin/sh
# SPDX-License-Identifier: MIT
# Run each C unit test binary in the given directories; the binaries print
# their own "N passed, N failed" lines.  Plain builds also run under valgrind.
rc=0
for d in "$@"; do
	for t in "$d"/*; do
		[ -x "$t" ] || continue
		echo "== $t"
		"$t" || rc=1
		case "$d" in
		*asan*) ;;
		*) if command -v valgrind >/dev/null; then
			valgrind -q --error-exitcode=99 --leak-check=full \
			    --errors-for-leak-kinds=definite "$t" >/dev/null || {
				echo "valgrind: $t not clean"; rc=1; }
		   fi ;;
		esac
	done
done
exit $rc
