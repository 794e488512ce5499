#!/usr/bin/env bats
# SPDX-License-Identifier: MIT

setup() { load helpers; }

@test "workload --help prints the synopsis and exits 0" {
	run workload --help
	assert_success
	assert_output --partial "usage: workload --requests N --tokens N"
}

@test "workload --version names kvgate" {
	run workload --version
	assert_success
	assert_output --regexp "^workload \(kvgate\) [0-9]"
}

@test "workload rejects bad options with status 2, one rule at a time" {
	run workload --tokens 16
	assert_failure 2
	assert_output --partial "--requests or --ring is required"
	run workload --requests 0 --tokens 16
	assert_failure 2
	run workload --requests 2 --tokens 16 --hit-rate 1.5
	assert_failure 2
	assert_output --partial "--hit-rate"
	run workload --requests 2 --tokens 16 --arrival poisson
	assert_failure 2
	assert_output --partial "--arrival needs --rate"
	run workload --requests 2 --tokens 16 --rate 2/s --arrival weibull
	assert_failure 2
	assert_output --partial "unknown arrival process"
	run workload --requests 2 --tokens 16 --rate 2/fortnight
	assert_failure 2
	run workload --ring 3 --prefixes 2 --tokens 64 --hit-rate 0.5
	assert_failure 2
	assert_output --partial "exclude each other"
	run workload --ring 3 --requests 4 --tokens 64
	assert_failure 2
	run workload --requests 3 --tokens 64 --probe
	assert_failure 2
	assert_output --partial "--probe needs --ring"
	run workload --ring 3 --probe --tokens 64
	assert_failure 2
	assert_output --partial "--probe needs a shared prefix"
	run workload --requests 2 --tokens 16 --format yaml
	assert_failure 2
	run workload --requests 2 --tokens 16 --tokens12furlongs
	assert_failure 2
	run workload --requests 2 --tokens 16 extra
	assert_failure 2
	run workload --requests 2 --tokens 99G
	assert_failure 2
	assert_output --partial "must be 0 to"
}

@test "the same options give byte-identical output (pinned digests)" {
	run sh -c 'workload --requests 50 --tokens 256 --hit-rate 0.5 --prefixes 3 --rate 20/s --seed 42 | sha256sum'
	assert_output "0b38f889ca052a39d75a4c874b804012faf9f1bddc0603a12114c10a7b55f7e4  -"
	run sh -c 'workload --requests 50 --tokens 256 --hit-rate 0.5 --prefixes 3 --rate 20/s --arrival gamma:0.5 --seed 42 --format text | sha256sum'
	assert_output "9d51fd4939064d73c3659008069b876192498c60ebdd32155eed8be1257be46f  -"
	# the bytes as jansson writes them: compact, integers plain, reals to
	# 17 significant digits, a whole number as an integer
	run sh -c 'workload --requests 3 --tokens 2 --rate 20/s --arrival constant --seed 1 | cut -d, -f1-3'
	assert_output "$(printf '%s\n' '{"kind":"request","id":0,"arrival_s":0' \
	    '{"kind":"request","id":1,"arrival_s":0.050000000000000003' \
	    '{"kind":"request","id":2,"arrival_s":0.10000000000000001')"
	a=$(workload --requests 5 --tokens 64 --seed 1 | sha256sum)
	b=$(workload --requests 5 --tokens 64 --seed 2 | sha256sum)
	[ "$a" != "$b" ]
}

@test "hits are block-aligned and the first use of each prefix misses" {
	workload --requests 6 --tokens 8K --hit-rate 0.3 --block 16 --prefixes 2 >"$BATS_TEST_TMPDIR/w"
	run jq -c '[.id, .prefix_id, .expected_hit_tokens, .tokens, (.prompt|length), .max_tokens]' "$BATS_TEST_TMPDIR/w"
	assert_output "$(printf '%s\n' '[0,0,0,8192,8192,64]' '[1,1,0,8192,8192,64]' \
	    '[2,0,2448,8192,8192,64]' '[3,1,2448,8192,8192,64]' \
	    '[4,0,2448,8192,8192,64]' '[5,1,2448,8192,8192,64]')"
}

@test "requests share exactly their prefix and nothing after it" {
	workload --requests 3 --tokens 64 --hit-rate 0.5 --block 16 >"$BATS_TEST_TMPDIR/w"
	run jq -s -c '[.[0].prompt[0:32] == .[1].prompt[0:32], .[0].prompt[32:48] == .[1].prompt[32:48], .[1].prompt[32:48] == .[2].prompt[32:48]]' "$BATS_TEST_TMPDIR/w"
	assert_output "[true,false,false]"
}

@test "the hit never reaches the block holding the last prompt token" {
	run sh -c 'workload --requests 2 --tokens 32 --hit-rate 1 --block 16 | jq -c .expected_hit_tokens'
	assert_output "$(printf '0\n16')"
}

@test "an eviction ring uses each prefix once and the probes follow it" {
	workload --ring 4 --probe --tokens 48 --hit-rate 0.7 --block 16 >"$BATS_TEST_TMPDIR/w"
	run jq -c '[.id, .prefix_id, .expected_hit_tokens, .probe]' "$BATS_TEST_TMPDIR/w"
	assert_output "$(printf '%s\n' '[0,0,0,null]' '[1,1,0,null]' '[2,2,0,null]' \
	    '[3,3,0,null]' '[4,3,32,"resident"]' '[5,0,0,"evicted"]')"
	run jq -s -c '[.[5].prompt[0:32] == .[0].prompt[0:32], .[4].prompt[0:32] == .[3].prompt[0:32]]' "$BATS_TEST_TMPDIR/w"
	assert_output "[true,true]"
}

@test "constant arrivals are i/rate; Poisson arrivals are increasing" {
	run sh -c 'workload --requests 4 --tokens 4 --rate 4/s --arrival constant | jq -c .arrival_s'
	assert_output "$(printf '0\n0.25\n0.5\n0.75')"
	run sh -c 'workload --requests 200 --tokens 4 --rate 120/min | jq -s "[.[1:][] .arrival_s] as \$a | [.[:-1][] .arrival_s] as \$b | [range(0;199)] | all(\$a[.] >= \$b[.])"'
	assert_output "true"
	run sh -c 'workload --requests 3 --tokens 4 | jq -c .arrival_s'
	assert_output "$(printf '0\n0\n0')"
}

@test "--format text writes one word per token" {
	run sh -c 'workload --requests 1 --tokens 20 --vocab 50 --format text | jq -r ".prompt | split(\" \") | length"'
	assert_output "20"
	run sh -c 'workload --requests 1 --tokens 3 --vocab 50 --format text | jq -r .prompt'
	assert_output --regexp "^t[0-9]+ t[0-9]+ t[0-9]+$"
}

@test "a 128K-token prompt is about a megabyte and token ids stay in the vocabulary" {
	run sh -c 'workload --requests 1 --tokens 128K --vocab 1000 | jq -c "[(.prompt|length), (.prompt|max < 1000), (.prompt|min >= 0)]"'
	assert_output "[131072,true,true]"
}

@test "a write error on stdout exits 74" {
	run sh -c 'workload --requests 100 --tokens 1K > /dev/full'
	assert_failure 74
}

@test "workload is valgrind-clean" {
	run_vg workload --ring 3 --probe --tokens 40 --hit-rate 0.5 --rate 5/s --arrival gamma:2
	assert_success
	[ "${#lines[@]}" -eq 5 ]
}
