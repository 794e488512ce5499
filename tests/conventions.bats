#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Conventions every command shares (kvgate(7)): --help, --version, usage
# errors, a man page that lints clean, and the error record format.

bats_require_minimum_version 1.5.0
load helpers

commands() {
	for f in "$KVGATE_ROOT"/bin/*.c; do basename "$f" .c; done
}

@test "every command prints its version as 'cmd (kvgate) VERSION'" {
	want=$(cat "$KVGATE_ROOT/VERSION")
	for c in $(commands); do
		run "$c" --version
		assert_success
		assert_output "$c (kvgate) $want"
	done
}

@test "every command's --help prints a usage line on stdout and exits 0" {
	for c in $(commands); do
		run --separate-stderr "$c" --help
		assert_success
		[[ "$output" == *"$c"* ]] || { echo "$c --help: $output"; false; }
	done
}

@test "every command rejects an unknown option with status 2" {
	for c in $(commands); do
		run "$c" --no-such-option-xyz
		[ "$status" -eq 2 ] || { echo "$c: status $status"; false; }
	done
}

@test "every command has a man page that mandoc lints clean" {
	command -v mandoc >/dev/null || skip "mandoc not installed"
	for c in $(commands); do
		[ -f "$KVGATE_ROOT/man/$c.1" ] || { echo "no man/$c.1"; false; }
		run mandoc -Tlint -Wwarning "$KVGATE_ROOT/man/$c.1"
		assert_success
		assert_output ""
	done
}

@test "every command has a bats file and is named in the README" {
	for c in $(commands); do
		ls "$KVGATE_ROOT"/tests/"$c"*.bats >/dev/null
		grep -q -- "$c" "$KVGATE_ROOT/README.md"
	done
}

@test "every man page documents the shared exit statuses" {
	for c in $(commands); do
		grep -q '^\.Sh EXIT STATUS' "$KVGATE_ROOT/man/$c.1"
	done
}

@test "make install puts commands and man pages under DESTDIR" {
	case $KVGATE_BIN in *asan*) skip "install is checked once, on the plain build" ;; esac
	d=$(mktemp -d)
	run make -C "$KVGATE_ROOT" --no-print-directory install DESTDIR="$d" PREFIX=/usr
	assert_success
	for c in $(commands); do
		[ -x "$d/usr/bin/$c" ]
		[ -f "$d/usr/share/man/man1/$c.1" ]
	done
	[ -f "$d/usr/share/man/man7/kvgate.7" ]
	rm -rf "$d"
}

@test "an error message cut inside a UTF-8 character still makes a valid error record and loses nothing" {
	long=$(printf 'é%.0s' $(seq 200))
	printf '{"layers":1,"kv_heads":1,"head_dim":1,"dtype":"x%s"}\n{"layers":1,"kv_heads":1,"head_dim":1,"dtype":"fp16"}\n' "$long" >"$BATS_TEST_TMPDIR/in"
	run --separate-stderr kv-bytes <"$BATS_TEST_TMPDIR/in"
	assert_failure 65
	[ "${#lines[@]}" -eq 2 ]
	first=${lines[0]} second=${lines[1]}
	run jqv "$first" '"\(.kind) \(.line)"'
	assert_output "error 1"
	run jqv "$second" '.kv_bytes_per_token'
	assert_output "4"
}

@test "the runner fails a bats run that crashes before its plan is complete" {
	d=$BATS_TEST_TMPDIR/fakebats
	mkdir -p "$d"
	printf '#!/bin/sh\necho 1..3; echo "ok 1 a"; exit 1\n' >"$d/bats"
	chmod +x "$d/bats"
	PATH=$d:$PATH run sh "$KVGATE_ROOT/tests/run-bats.sh" fake
	assert_failure
	assert_output --partial "planned 3 tests but reported 1"
}
