#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# env-snapshot: redacted environment snapshots that never write a secret.

bats_require_minimum_version 1.5.0
load helpers

# env0 FILE: the fixture's NAME=VALUE lines as NUL-ended entries (\n in a
# value is a newline).
env0() {
	while IFS= read -r l; do printf '%b\0' "$l"; done <"$1"
}

# secret_part LINE: what must never be written for a secret fixture line:
# the password of a URL, else the whole value (a PEM block's body line).
secret_part() {
	local v=${1#*=}
	if [[ $v =~ ://[^:/@]*:(.+)@ ]]; then
		printf '%s\n' "${BASH_REMATCH[1]}"
	elif [[ $v == *'-----BEGIN'* ]]; then
		printf '%b\n' "$v" | sed -n 2p
	else
		printf '%s\n' "$v"
	fi
}

# listed_shape VALUE: does the value have one of the shapes that must be
# redacted whatever the name: a token prefix (hf_ sk- ghp_ github_pat_
# AKIA xoxb- xoxp-), a JWT, a PEM block, a URL password, 32+ hex digits,
# or a run of 24+ token characters with upper, lower case and digits.
listed_shape() {
	local v=$1 run
	[[ $v =~ (^|[^[:alnum:]])(hf_|sk-|ghp_|github_pat_|AKIA|xox[bp]-)[[:alnum:]_-]{10,} ]] && return 0
	[[ $v =~ eyJ[[:alnum:]_-]+\.eyJ[[:alnum:]_-]+\. ]] && return 0
	[[ $v == *'-----BEGIN '* ]] && return 0
	[[ $v =~ ://[^:/@]*:[^@]+@ ]] && return 0
	[[ $v =~ (^|[^[:alnum:]])[0-9a-fA-F]{32,}([^[:alnum:]]|$) ]] && return 0
	while IFS= read -r run; do
		[[ $run =~ [A-Z] && $run =~ [a-z] && $run =~ [0-9] ]] && return 0
	done < <(printf '%s\n' "$v" | grep -oE '[A-Za-z0-9+/=_-]{24,}')
	return 1
}

@test "every secret-shaped value of the corpus is redacted under a neutral name" {
	run --separate-stderr env-snapshot -0 < <(i=0
	    while IFS= read -r l; do
		i=$((i + 1)); printf 'V%02d=%b\0' "$i" "${l#*=}"
	    done <"$FIX/env-secrets.txt")
	assert_success
	i=0 shaped=0
	while IFS= read -r l; do
		i=$((i + 1)); n=$(printf 'V%02d' "$i"); v=${l#*=}
		listed_shape "$v" || continue
		shaped=$((shaped + 1))
		jqv "$output" ".redacted|index(\"$n\")" | grep -qv null ||
		    { echo "not redacted: $n (${l%%=*})"; false; }
		s=$(secret_part "$l")
		[[ $output != *"$s"* ]] || { echo "leaked: $n (${l%%=*})"; false; }
	done <"$FIX/env-secrets.txt"
	[ "$shaped" -ge 35 ]
	# the hex keys among them, by the 32+ hex rule alone
	assert_equal "$(jqv "$output" '.redacted|map(select(. == "V47" or . == "V53"))|length')" 2
	# and under their own names the harmless corpus loses nothing
	run --separate-stderr env-snapshot -0 < <(env0 "$FIX/env-harmless.txt")
	assert_success
	assert_equal "$(jqv "$output" '.redacted|length')" 0
	assert_equal "$(jqv "$output" .vars.GIT_COMMIT)" 9fceb02d0ae598e95dc970b74767f19372d61af8
}

@test "32+ hex digits are redacted unless the name says SHA, COMMIT, DIGEST, HASH, REV or CHECKSUM" {
	h=0123456789abcdef0123456789abcdef
	run --separate-stderr env-snapshot -0 < <(printf '%s\0' "A=$h" "B=x 0x${h}ff y" \
	    "BUILD_SHA=$h" "GIT_COMMIT=$h" "imageDigest=sha256:$h" "FILE_HASH=$h" \
	    "REV=$h" "PKG_CHECKSUM=$h" "SHA256=$h" "SHAPE=$h" "REVIEWER=$h" \
	    "SHORT=${h:1}" "DIGITS=01234567890123456789012345678901" "UUID=4d1c0ffe-7b2a-4c9e-9f3d-aa01bb23cc45")
	assert_success
	assert_equal "$(jqv "$output" '.redacted|join(" ")')" "A B REVIEWER SHAPE"
	assert_equal "$(jqv "$output" .vars.GIT_COMMIT)" "$h"
	assert_equal "$(jqv "$output" .vars.imageDigest)" "sha256:$h"
	assert_equal "$(jqv "$output" .vars.SHORT)" "${h:1}"
}

@test "the corpus has at least 40 secrets and 40 harmless variables" {
	[ "$(grep -c = "$FIX/env-secrets.txt")" -ge 40 ]
	[ "$(grep -c = "$FIX/env-harmless.txt")" -ge 40 ]
}

@test "every secret in the corpus is redacted, by name" {
	run --separate-stderr env-snapshot -0 --role reader < <(env0 "$FIX/env-secrets.txt")
	assert_success
	assert_equal "$(jqv "$output" '.redacted|length')" "$(wc -l <"$FIX/env-secrets.txt")"
	while IFS= read -r l; do
		n=${l%%=*}
		jqv "$output" ".redacted|index(\"$n\")" | grep -qv null ||
		    { echo "not redacted: $n"; false; }
	done <"$FIX/env-secrets.txt"
}

@test "no secret value of the corpus is written anywhere, stderr included" {
	# stdout and stderr together, with bad entries that make it talk
	run env-snapshot -0 --role reader < <(env0 "$FIX/env-secrets.txt"
	    printf 'hf_LeakyLeakyLeakyLeaky12345\0=ghp_NoNameNoNameNoNameNoName123456789\0'
	    printf 'ghp_AsANameAsANameAsANameAsAName12345678=1\0')
	assert_failure 65
	while IFS= read -r l; do
		s=$(secret_part "$l")
		[ -n "$s" ]
		[[ $output != *"$s"* ]] || { echo "leaked: ${l%%=*}"; false; }
	done <"$FIX/env-secrets.txt"
	refute_output --partial LeakyLeaky
	refute_output --partial NoNameNoName
	refute_output --partial AsANameAsAName
	assert_output --partial "stdin:58: name looks like a secret; left out"
	assert_output --partial "stdin:56: entry without '='; left out"
	assert_output --partial "stdin:57: entry with an empty name; left out"
}

@test "URL passwords are cut out, the rest of the URL kept" {
	run --separate-stderr env-snapshot -0 < <(env0 "$FIX/env-secrets.txt")
	assert_equal "$(jqv "$output" .vars.DATABASE_URL)" "postgres://kvgate:[REDACTED]@db.internal:5432/kvgate"
	assert_equal "$(jqv "$output" .vars.REDIS_URL)" "redis://:[REDACTED]@redis.internal:6379/0"
	assert_equal "$(jqv "$output" .vars.UPSTREAM_PROXY)" "http://jdoe:[REDACTED]@proxy.corp.example:3128"
	assert_equal "$(jqv "$output" .vars.HF_TOKEN)" "[REDACTED]"
	assert_equal "$(jqv "$output" .vars.TLS_PRIVATE_KEY)" "[REDACTED]"
}

@test "no harmless variable of the corpus is lost or altered" {
	run --separate-stderr env-snapshot -0 < <(env0 "$FIX/env-harmless.txt")
	assert_success
	assert_equal "$(jqv "$output" '.redacted|length')" 0
	assert_equal "$(jqv "$output" '.vars|length')" "$(wc -l <"$FIX/env-harmless.txt")"
	while IFS= read -r l; do
		n=${l%%=*} v=${l#*=}
		[ "$(jqv "$output" ".vars[\"$n\"]")" = "$v" ] || { echo "lost: $n"; false; }
	done <"$FIX/env-harmless.txt"
}

@test "mixed corpus: the record has role, captured_at, host, vars sorted by name, redacted" {
	run --separate-stderr env-snapshot -0 --role prefill < <(env0 "$FIX/env-harmless.txt"; env0 "$FIX/env-secrets.txt")
	assert_success
	assert_equal "${#lines[@]}" 1
	assert_equal "$(jqv "$output" .role)" prefill
	assert_equal "$(jqv "$output" .host)" "$(hostname)"
	assert_equal "$(jqv "$output" .source)" stdin
	[[ $(jqv "$output" .captured_at) =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$ ]]
	assert_equal "$(jqv "$output" '.vars|keys_unsorted == (keys_unsorted|sort)')" true
	assert_equal "$(jqv "$output" '.vars|length')" 114
}

@test "--pid reads another process's environment" {
	mapfile -t envs < <(while IFS= read -r l; do printf '%b\n' "$l"; done <"$FIX/env-harmless.txt")
	env -i HF_TOKEN=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 "${envs[@]}" sleep 300 &
	pid=$!
	run --separate-stderr env-snapshot --pid "$pid" --role decode
	kill "$pid"
	assert_success
	assert_equal "$(jqv "$output" .pid)" "$pid"
	assert_equal "$(jqv "$output" .source)" pid
	assert_equal "$(jqv "$output" .vars.HF_TOKEN)" "[REDACTED]"
	assert_equal "$(jqv "$output" .vars.NCCL_IB_HCA)" mlx5_0,mlx5_1
	refute_output --partial QxTzLmVb
}

@test "without -0 or --pid it snapshots its own environment" {
	run --separate-stderr env -i GITHUB_TOKEN=ghp_1A2b3C4d5E6f7G8h9I0jK1lM2nO3pQ4rS5tU A=1 "$KVGATE_BIN/env-snapshot"
	assert_success
	assert_equal "$(jq -c .vars <<<"$output")" '{"A":"1","GITHUB_TOKEN":"[REDACTED]"}'
	assert_equal "$(jqv "$output" .role)" null
	assert_equal "$(jqv "$output" .source)" self
}

@test "--allow keeps only matching names; --deny redacts more; allow never unredacts" {
	run --separate-stderr env -i NCCL_DEBUG=INFO NCCL_SECRET=x HOME=/h MY_VAR=v "$KVGATE_BIN/env-snapshot" --allow '^NCCL_' --deny '^MY_'
	assert_success
	assert_equal "$(jq -c .vars <<<"$output")" '{"NCCL_DEBUG":"INFO","NCCL_SECRET":"[REDACTED]"}'
	assert_equal "$(jqv "$output" .omitted)" 2
	run --separate-stderr env -i HOME=/h MY_VAR=v "$KVGATE_BIN/env-snapshot" --deny '^MY_'
	assert_equal "$(jq -c .redacted <<<"$output")" '["MY_VAR"]'
	assert_equal "$(jq -c .vars.HOME <<<"$output")" '"/h"'
}

@test "bad entries: no '=', empty name, bad UTF-8 name (65, named by number, rest kept)" {
	run --separate-stderr env-snapshot -0 < <(printf 'A=1\0noequals\0=x\0\xff\xfe=y\0B=2\0')
	assert_failure 65
	assert_equal "$(jq -c .vars <<<"$output")" '{"A":"1","B":"2"}'
	[[ $stderr == *"stdin:2: entry without '='"* ]]
	[[ $stderr == *"stdin:3: entry with an empty name"* ]]
	[[ $stderr == *"stdin:4: name is not valid UTF-8"* ]]
}

@test "a value that is not UTF-8 is redacted, never written" {
	run --separate-stderr env-snapshot -0 < <(printf 'BIN=\xff\xfeabc\0')
	assert_success
	assert_equal "$(jq -c .redacted <<<"$output")" '["BIN"]'
}

@test "a name given twice keeps the first" {
	run --separate-stderr env-snapshot -0 < <(printf 'A=1\0A=2\0')
	assert_success
	assert_equal "$(jqv "$output" .vars.A)" 1
	[[ $stderr == *"A appears again"* ]]
}

@test "empty input is bad input, huge input is refused" {
	run --separate-stderr env-snapshot -0 </dev/null
	assert_failure 65
	assert_equal "$(jq -c .vars <<<"$output")" '{}'
	[[ $stderr == *"stdin: no entries"* ]]
	run --separate-stderr env-snapshot -0 < <(head -c 300000000 /dev/zero)
	assert_failure 65
	[[ $stderr == *"over 256 MiB"* ]]
}

@test "usage errors exit 2" {
	run --separate-stderr env-snapshot -0 --pid 1
	assert_failure 2
	[[ $stderr == *"exclude each other"* ]]
	run --separate-stderr env-snapshot --pid 0
	assert_failure 2
	run --separate-stderr env-snapshot --pid abc
	assert_failure 2
	run --separate-stderr env-snapshot --allow '('
	assert_failure 2
	[[ $stderr == *"--allow"* ]]
	run --separate-stderr env-snapshot extra
	assert_failure 2
	run --separate-stderr env-snapshot --pid 2147483647
	assert_failure 69
}

@test "--help and --version" {
	run --separate-stderr env-snapshot --help
	assert_success
	[[ $output == "usage: env-snapshot"* ]]
	run env-snapshot --version
	assert_output "env-snapshot (kvgate) $(cat "$KVGATE_ROOT/VERSION")"
}

@test "env-snapshot is valgrind-clean" {
	run_vg env-snapshot -0 --role vg --allow . --deny '^X' < <(env0 "$FIX/env-secrets.txt"; env0 "$FIX/env-harmless.txt")
	assert_success
}
