#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sha-manifest: SHA-256 manifests of evidence trees, both formats.

bats_require_minimum_version 1.5.0
load helpers

setup() {
	T=$BATS_TEST_TMPDIR/tree
	mkdir -p "$T/runs/a" "$T/runs/b" "$T/logs"
	printf 'alpha\n' >"$T/runs/a/result.jsonl"
	printf 'beta\n' >"$T/runs/b/result.jsonl"
	printf '' >"$T/empty"
	head -c 3000000 /dev/urandom >"$T/logs/big.bin"
	printf 'log\n' >"$T/logs/server.log"
	ln -s runs/a/result.jsonl "$T/latest"
	ln -s /etc/passwd "$T/outside"
	W=()
}

teardown() {
	for p in "${W[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	chmod -R u+rwx "$BATS_TEST_TMPDIR" 2>/dev/null || true
}

@test "create lists every file sorted, relative to the root, with sha256 and size" {
	run --separate-stderr sha-manifest create --root "$T"
	assert_success
	assert_equal "$(printf '%s\n' "$output" | jq -r .path | tr '\n' ' ')" \
	    "empty latest logs/big.bin logs/server.log outside runs/a/result.jsonl runs/b/result.jsonl "
	assert_line '{"path":"runs/a/result.jsonl","sha256":"'"$(sha256sum <"$T/runs/a/result.jsonl" | cut -c1-64)"'","size_bytes":6}'
	assert_line '{"path":"empty","sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855","size_bytes":0}'
	assert_equal "$(printf '%s\n' "$output" | jq -r 'select(.path=="logs/big.bin").sha256')" \
	    "$(sha256sum <"$T/logs/big.bin" | cut -c1-64)"
	assert_equal "$stderr" ""
}

@test "symlinks are recorded with their target and never followed" {
	run --separate-stderr sha-manifest create --root "$T"
	assert_success
	assert_line '{"path":"latest","type":"symlink","target":"runs/a/result.jsonl"}'
	assert_line '{"path":"outside","type":"symlink","target":"/etc/passwd"}'
	refute_output --partial "$(sha256sum </etc/passwd | cut -c1-64)"
}

@test "output is identical whatever -j is" {
	for i in $(seq 40); do printf '%s' "$i" >"$T/runs/f$i"; done
	a=$(sha-manifest create --root "$T" -j 1)
	b=$(sha-manifest create --root "$T" -j 7)
	c=$(sha-manifest create --root "$T" --jobs 64)
	assert_equal "$a" "$b"
	assert_equal "$a" "$c"
}

@test "PATH arguments restrict the manifest; --exclude drops globs by name or by path" {
	run --separate-stderr sha-manifest create --root "$T" runs ./logs/server.log
	assert_success
	assert_equal "$(printf '%s\n' "$output" | jq -r .path | tr '\n' ' ')" \
	    "logs/server.log runs/a/result.jsonl runs/b/result.jsonl "
	run --separate-stderr sha-manifest create --root "$T" --exclude '*.bin' --exclude 'runs/b' --exclude outside
	assert_success
	assert_equal "$(printf '%s\n' "$output" | jq -r .path | tr '\n' ' ')" \
	    "empty latest logs/server.log runs/a/result.jsonl "
}

@test "a PATH outside the root is a usage error" {
	run --separate-stderr sha-manifest create --root "$T" ../x
	assert_failure 2
	[[ $stderr == *"'..' component refused"* ]]
	run --separate-stderr sha-manifest create --root "$T" /etc
	assert_failure 2
	run --separate-stderr sha-manifest create --root "$T" latest/x
	assert_failure 65
}

@test "--format sha256sum is accepted by sha256sum -c, escaped names included" {
	touch "$T/$(printf 'cr\rname')" "$T/$(printf 'nl\nname')" "$T/back\\slash" "$T/sp ace"
	run --separate-stderr sha-manifest create --root "$T" --format sha256sum
	assert_success
	printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/m.sum"
	assert_line '\e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  back\\slash'
	assert_line '\e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  nl\nname'
	assert_line '\e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  cr\rname'
	assert_line 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  sp ace'
	[[ $stderr == *"2 symlinks left out"* ]]
	cd "$T"
	run sha256sum -c --strict "$BATS_TEST_TMPDIR/m.sum"
	assert_success
	assert_equal "$(printf '%s\n' "$output" | grep -c ': OK$')" 9
	# and sha256sum's own escaped output is what we write
	assert_equal "$(sha-manifest create --format sha256sum back\\slash nl*)" \
	    "$(sha256sum back\\slash nl*)"
}

@test "verify passes an untouched tree in both formats" {
	sha-manifest create --root "$T" >"$BATS_TEST_TMPDIR/m.jsonl"
	run --separate-stderr sha-manifest verify "$BATS_TEST_TMPDIR/m.jsonl" --root "$T"
	assert_success
	assert_equal "${#lines[@]}" 8
	assert_equal "$(printf '%s\n' "$output" | jq -r 'select(.kind=="check").status' | sort -u)" ok
	s=$(printf '%s\n' "$output" | tail -1)
	assert_equal "$(jqv "$s" '[.kind,.format,.entries,.ok,.extra,.verified]|@csv')" '"summary","jsonl",7,7,0,true'
	sha-manifest create --root "$T" --format sha256sum >"$BATS_TEST_TMPDIR/m.sum" 2>/dev/null
	run --separate-stderr sha-manifest verify --root "$T" --ignore-extra "$BATS_TEST_TMPDIR/m.sum"
	assert_success
	assert_equal "$(jqv "${lines[-1]}" '[.format,.entries,.ok,.verified]|@csv')" '"sha256sum",5,5,true'
}

@test "verify reads files written by sha256sum: text, binary and --tag lines, escapes" {
	touch "$T/$(printf 'n\nl')" "$T/b\\s"
	cd "$T"
	{ sha256sum runs/a/result.jsonl "$(printf 'n\nl')" 'b\s'
	  sha256sum -b logs/server.log
	  sha256sum --tag empty logs/big.bin; } >"$BATS_TEST_TMPDIR/sums"
	run --separate-stderr sha-manifest verify --ignore-extra "$BATS_TEST_TMPDIR/sums"
	assert_success
	assert_equal "$(jqv "${lines[-1]}" '[.format,.entries,.ok]|@csv')" '"sha256sum",6,6'
	assert_line --partial '"path":"n\nl"'
	assert_line --partial '"path":"b\\s"'
}

@test "verify reports modified, size_changed, missing and extra, and exits 1" {
	sha-manifest create --root "$T" >"$BATS_TEST_TMPDIR/m.jsonl"
	printf 'ALPHA\n' >"$T/runs/a/result.jsonl"     # same size, other bytes
	printf 'beta, longer\n' >"$T/runs/b/result.jsonl"
	rm "$T/logs/server.log"
	ln -sf runs/b/result.jsonl "$T/latest"
	echo new >"$T/runs/new.txt"
	run --separate-stderr sha-manifest verify --root "$T" "$BATS_TEST_TMPDIR/m.jsonl"
	assert_failure 1
	st() { printf '%s\n' "$output" | jq -r "select(.path==\"$1\").status"; }
	assert_equal "$(st runs/a/result.jsonl)" modified
	assert_equal "$(st runs/b/result.jsonl)" size_changed
	assert_equal "$(st logs/server.log)" missing
	assert_equal "$(st latest)" modified
	assert_equal "$(st runs/new.txt)" extra
	assert_equal "$(st empty)" ok
	r=$(printf '%s\n' "$output" | jq -c 'select(.path=="runs/b/result.jsonl")')
	assert_equal "$(jqv "$r" '[.size_bytes,.expected_size_bytes]|@csv')" "13,5"
	r=$(printf '%s\n' "$output" | jq -c 'select(.path=="latest")')
	assert_equal "$(jqv "$r" '[.target,.expected_target]|@csv')" '"runs/b/result.jsonl","runs/a/result.jsonl"'
	assert_equal "$(jqv "${lines[-1]}" '[.ok,.modified,.size_changed,.missing,.extra,.verified]|@csv')" "3,2,1,1,1,false"
	run --separate-stderr sha-manifest verify --root "$T" --ignore-extra "$BATS_TEST_TMPDIR/m.jsonl"
	assert_failure 1
	refute_output --partial '"extra"}'
}

@test "a file replaced by a directory, a fifo or a symlink is modified, never followed" {
	sha-manifest create --root "$T" >"$BATS_TEST_TMPDIR/m.jsonl"
	rm "$T/empty" && mkfifo "$T/empty"
	rm "$T/logs/server.log" && ln -s /etc/passwd "$T/logs/server.log"
	rm -r "$T/runs/b" && ln -s /etc "$T/runs/b"
	run --separate-stderr timeout 20 sha-manifest verify --root "$T" --ignore-extra "$BATS_TEST_TMPDIR/m.jsonl"
	assert_failure 1
	st() { printf '%s\n' "$output" | jq -r "select(.path==\"$1\").status"; }
	assert_equal "$(st empty)" modified
	assert_equal "$(st logs/server.log)" modified
	[[ $(st runs/b/result.jsonl) == modified || $(st runs/b/result.jsonl) == unreadable ]]
	refute_output --partial "$(sha256sum </etc/passwd | cut -c1-64)"
}

@test "unsafe entries are rejected with 65 and never opened" {
	mkdir "$BATS_TEST_TMPDIR/secret" && echo s >"$BATS_TEST_TMPDIR/secret/key"
	h=$(sha256sum <"$BATS_TEST_TMPDIR/secret/key" | cut -c1-64)
	{ printf '{"path":"../secret/key","sha256":"%s"}\n' "$h"
	  printf '{"path":"%s/secret/key","sha256":"%s"}\n' "$BATS_TEST_TMPDIR" "$h"
	  printf '{"path":"runs/../../secret/key","sha256":"%s"}\n' "$h"
	  printf '{"path":"runs/a/result.jsonl\\u0000x","sha256":"%s"}\n' "$h"
	  printf '{"path":"empty","sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}\n'; } >"$BATS_TEST_TMPDIR/evil"
	run --separate-stderr sha-manifest verify --root "$T" --ignore-extra "$BATS_TEST_TMPDIR/evil"
	assert_failure 65
	assert_line --index 0 '{"kind":"error","line":1,"error":"path with a '"'..'"' component refused"}'
	assert_line --index 1 '{"kind":"error","line":2,"error":"absolute path refused"}'
	assert_line --index 2 '{"kind":"error","line":3,"error":"path with a '"'..'"' component refused"}'
	assert_line --index 3 '{"kind":"error","line":4,"error":"path holds a NUL byte"}'
	assert_equal "$(jqv "${lines[4]}" .status)" ok
	assert_equal "$(jqv "${lines[5]}" '[.entries,.bad_lines,.verified]|@csv')" "1,4,false"
	[[ $stderr == *"evil:1: path with a '..' component refused"* ]]
	[[ $stderr == *"evil:4: path holds a NUL byte"* ]]
	# the same in sha256sum format
	printf '%s  ../secret/key\n%s  /etc/passwd\n' "$h" "$h" >"$BATS_TEST_TMPDIR/evil.sum"
	run --separate-stderr sha-manifest verify --root "$T" --ignore-extra "$BATS_TEST_TMPDIR/evil.sum"
	assert_failure 65
	assert_equal "$(printf '%s\n' "$output" | grep -c '"kind":"error"')" 2
}

@test "no file outside the root is opened (strace)" {
	command -v strace >/dev/null || skip "strace not installed"
	case $KVGATE_BIN in *asan*) skip "LeakSanitizer does not run under ptrace" ;; esac
	ln -s "$BATS_TEST_TMPDIR" "$T/up"
	printf '{"path":"up/secret","sha256":"%064d"}\n{"path":"../x","sha256":"%064d"}\n' 0 0 >"$BATS_TEST_TMPDIR/m"
	echo s >"$BATS_TEST_TMPDIR/secret"
	run strace -f -e trace=open,openat,openat2 -o "$BATS_TEST_TMPDIR/trace" \
	    sha-manifest verify --root "$T" --ignore-extra "$BATS_TEST_TMPDIR/m"
	assert_failure 65
	grep -q 'up/secret' "$BATS_TEST_TMPDIR/trace"	# it was tried...
	! grep -E 'secret".* = [0-9]+$' "$BATS_TEST_TMPDIR/trace"	# ...never opened
	! grep -E '"\.\./x"' "$BATS_TEST_TMPDIR/trace"		# and ../x not even tried
}

@test "bad manifest lines: malformed JSON, wrong types, missing fields, huge values" {
	{ echo '{"path":"empty","sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855","size_bytes":0}'
	  echo '{"path":"empty",'
	  echo '{"path":7,"sha256":"x"}'
	  echo '{"sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}'
	  echo '{"path":"a"}'
	  echo '{"path":"a","sha256":"zz"}'
	  echo '{"path":"a","sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855","size_bytes":-1}'
	  echo '{"path":"a","sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855","size_bytes":1e400}'
	  echo '{"path":"a","sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855","size_bytes":"3"}'
	  echo '[1]'
	  echo '{"path":"l","type":"symlink"}'
	  echo '{"path":"l","type":"socket"}'
	  echo '{"path":"empty","sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}'
	  printf '{"path":"\xff","sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}\n'
	} >"$BATS_TEST_TMPDIR/bad"
	run --separate-stderr sha-manifest verify --root "$T" --ignore-extra "$BATS_TEST_TMPDIR/bad"
	assert_failure 65
	assert_equal "${#lines[@]}" 15
	assert_equal "$(jqv "${lines[0]}" .status)" ok
	for i in $(seq 1 13); do
		assert_equal "$(jqv "${lines[$i]}" .kind)" error
		assert_equal "$(jqv "${lines[$i]}" .line)" "$((i + 1))"
	done
	assert_equal "$(jqv "${lines[12]}" .error)" "duplicate entry for a path listed before"
	assert_equal "$(jqv "${lines[14]}" '[.entries,.bad_lines]|@csv')" "1,13"
	assert_equal "$(printf '%s\n' "$stderr" | grep -c 'bad:[0-9]*: ')" 13
}

@test "an empty manifest is bad input: error record, stderr line, 65" {
	: >"$BATS_TEST_TMPDIR/none"
	run --separate-stderr sha-manifest verify --root "$T" "$BATS_TEST_TMPDIR/none"
	assert_failure 65
	assert_line --index 0 '{"kind":"error","line":0,"error":"manifest has no entries"}'
	[[ $stderr == *"none:0: manifest has no entries"* ]]
	printf '\n  \n\r\n' | { run --separate-stderr sha-manifest verify --root "$T" -; assert_failure 65; }
}

@test "CRLF manifests and stdin are accepted" {
	sha-manifest create --root "$T" | sed 's/$/\r/' >"$BATS_TEST_TMPDIR/crlf"
	run --separate-stderr sha-manifest verify --root "$T" - <"$BATS_TEST_TMPDIR/crlf"
	assert_success
}

@test "the manifest file itself, inside the root, is neither listed nor extra" {
	cd "$T"
	sha-manifest create >MANIFEST
	! grep -q MANIFEST MANIFEST
	run --separate-stderr sha-manifest verify MANIFEST
	assert_success
}

@test "a file that changes while it is hashed is reported unstable, not hashed wrong" {
	head -c 64000000 /dev/zero >"$T/growing"
	( while :; do echo x >>"$T/growing"; done ) & W+=($!)
	run --separate-stderr sha-manifest create --root "$T"
	kill "${W[0]}"
	assert_failure 1
	[[ $stderr == *"growing: unstable: changed while it was hashed"* ]]
	refute_output --partial '"growing"'
	assert_line --partial '"path":"empty"'
	# verify reports it too
	sha-manifest create --root "$T" >"$BATS_TEST_TMPDIR/m"
	( while :; do echo x >>"$T/growing"; done ) & W+=($!)
	run --separate-stderr sha-manifest verify --root "$T" "$BATS_TEST_TMPDIR/m"
	assert_failure 1
	assert_equal "$(printf '%s\n' "$output" | jq -r 'select(.path=="growing").status')" unstable
}

@test "an unreadable file is reported unreadable" {
	command -v setpriv >/dev/null || skip "setpriv not installed"
	d=$(mktemp -d /tmp/kvg-shaman.XXXXXX)
	chmod 755 "$d"
	echo a >"$d/ok" && echo b >"$d/locked"
	sha-manifest create --root "$d" >"$d.m"
	chmod 644 "$d.m"
	chmod 000 "$d/locked"
	run --separate-stderr setpriv --reuid=65534 --regid=65534 --clear-groups \
	    "$KVGATE_BIN/sha-manifest" verify --root "$d" "$d.m"
	rm -rf "$d" "$d.m"
	assert_failure 1
	assert_line --partial '"path":"locked","status":"unreadable","reason":"Permission denied"'
}

@test "names that are not UTF-8 need the sha256sum format" {
	touch "$T/$(printf 'bad\xff')"
	run --separate-stderr sha-manifest create --root "$T"
	assert_failure 65
	[[ $stderr == *"1 names are not valid UTF-8"* ]]
	run --separate-stderr sha-manifest create --root "$T" --format sha256sum
	assert_success
	cd "$T" && printf '%s\n' "$output" | sha256sum -c --quiet -
	rm "$T/$(printf 'bad\xff')"
	ln -s "$(printf 'target\xff')" "$T/badlink"
	run --separate-stderr sha-manifest create --root "$T"
	assert_failure 65
	[[ $stderr == *"badlink: symlink target is not valid UTF-8; left out"* ]]
	assert_line --partial '"path":"empty"'
}

@test "verify checks a sha256sum manifest with a non-UTF-8 name as path_escaped" {
	rm -f "$T/outside" "$T/latest"
	printf 'hello' >"$T/$(printf 'a\xffb')"
	sha-manifest create --root "$T" --format sha256sum >"$BATS_TEST_TMPDIR/ours.sum"
	(cd "$T" && find . -type f -printf '%P\0' | xargs -0 sha256sum) >"$BATS_TEST_TMPDIR/gnu.sum"
	for m in ours gnu; do
		run --separate-stderr sha-manifest verify --root "$T" "$BATS_TEST_TMPDIR/$m.sum"
		assert_success
		assert_line '{"kind":"check","path":null,"path_escaped":"a\\xffb","sha256":"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824","size_bytes":5,"status":"ok"}'
		assert_equal "$(printf '%s\n' "$output" | jq -c 'select(.kind=="summary") | [.ok,.extra,.verified]')" '[6,0,true]'
		assert_equal "$stderr" ""
	done
	printf 'x' >"$T/$(printf 'c\xfe\\')"
	run --separate-stderr sha-manifest verify --root "$T" "$BATS_TEST_TMPDIR/gnu.sum"
	assert_failure 1
	assert_line '{"kind":"check","path":null,"path_escaped":"c\\xfe\\\\","status":"extra"}'
	printf 'bye' >"$T/$(printf 'a\xffb')"
	run --separate-stderr sha-manifest verify --root "$T" "$BATS_TEST_TMPDIR/ours.sum"
	assert_failure 1
	assert_line --partial '"path":null,"path_escaped":"a\\xffb","sha256":"'
	assert_line --partial '"status":"modified"'
}

@test "usage errors exit 2" {
	run --separate-stderr sha-manifest
	assert_failure 2
	run --separate-stderr sha-manifest frobnicate
	assert_failure 2
	[[ $stderr == *"expected 'create' or 'verify'"* ]]
	run --separate-stderr sha-manifest create -j 0
	assert_failure 2
	run --separate-stderr sha-manifest create -j many
	assert_failure 2
	run --separate-stderr sha-manifest create --format md5
	assert_failure 2
	run --separate-stderr sha-manifest create --ignore-extra
	assert_failure 2
	run --separate-stderr sha-manifest verify
	assert_failure 2
	run --separate-stderr sha-manifest verify a b
	assert_failure 2
	run --separate-stderr sha-manifest verify --format sha256sum m
	assert_failure 2
	run --separate-stderr sha-manifest create --root "$BATS_TEST_TMPDIR/none"
	assert_failure 69
	run --separate-stderr sha-manifest verify "$BATS_TEST_TMPDIR/none"
	assert_failure 69
}

@test "--help and --version" {
	run --separate-stderr sha-manifest --help
	assert_success
	[[ $output == "usage: sha-manifest create"* ]]
	run sha-manifest --version
	assert_output "sha-manifest (kvgate) $(cat "$KVGATE_ROOT/VERSION")"
	run sha-manifest create --help
	assert_success
}

@test "create and verify are valgrind-clean" {
	run_vg sha-manifest create --root "$T" -j 3
	assert_success
	printf '%s\n' "$output" | grep -v '^==' >"$BATS_TEST_TMPDIR/m"
	echo new >"$T/new"
	printf '{"path":"../x","sha256":"%064d"}\n' 0 >>"$BATS_TEST_TMPDIR/m"
	run_vg sha-manifest verify --root "$T" -j 3 "$BATS_TEST_TMPDIR/m"
	assert_failure 65
	assert_line --partial '"path":"new","status":"extra"'
}
