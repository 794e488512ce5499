#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Every test runs against tests/fixtures/fake-vllm.py, a test double of
# vLLM's OpenAI-compatible server, over real loopback sockets.

bats_require_minimum_version 1.5.0

setup() {
	load helpers
	DPID=
}

teardown() {
	if [ -n "$DPID" ]; then
		kill "$DPID" 2>/dev/null || true
		wait "$DPID" 2>/dev/null || true
	fi
}

# start_double ARGS...: start the test double on a free port; sets URL.
start_double() {
	local pf=$BATS_TEST_TMPDIR/port i
	rm -f "$pf"
	python3 "$FIX/fake-vllm.py" --port-file "$pf" "$@" >/dev/null 2>&1 3>&- &
	DPID=$!
	for i in $(seq 200); do [ -s "$pf" ] && break; sleep 0.05; done
	[ -s "$pf" ] || { echo "the test double did not start"; return 1; }
	URL=http://127.0.0.1:$(cat "$pf")
}

metric() { curl -s "$URL/metrics" | awk -v m="$1" '$1 ~ "^"m {print $2}'; }

@test "req-stream --help prints the synopsis and exits 0" {
	run req-stream --help
	assert_success
	assert_output --partial "usage: req-stream --url URL --model NAME"
}

@test "req-stream --version names kvgate" {
	run req-stream --version
	assert_success
	assert_output --regexp "^req-stream \(kvgate\) [0-9]"
}

@test "req-stream rejects bad options with status 2" {
	run req-stream --model m
	assert_failure 2
	assert_output --partial "--url is required"
	run req-stream --url http://127.0.0.1:1
	assert_failure 2
	assert_output --partial "--model is required"
	run req-stream --url ftp://x --model m
	assert_failure 2
	run req-stream --url http://127.0.0.1:1 --model m --timeout 0
	assert_failure 2
	run req-stream --url http://127.0.0.1:1 --model m --timeout 1s --connect-timeout 2s
	assert_failure 2
	assert_output --partial "must not exceed"
	run req-stream --url http://127.0.0.1:1 --model m --max-concurrency 0
	assert_failure 2
	run env -u KVG_NO_SUCH_KEY req-stream --url http://127.0.0.1:1 --model m --api-key-env KVG_NO_SUCH_KEY
	assert_failure 2
	assert_output --partial "KVG_NO_SUCH_KEY is not set"
	run req-stream --url http://127.0.0.1:1 --model m stray
	assert_failure 2
}

@test "every injected failure gets its class and count in equals count out" {
	start_double --fail 500@2,cut@3,stall@4,malformed@5,error@6 --stall 30
	workload --requests 8 --tokens 48 --hit-rate 0.5 --output-tokens 5 --vocab 500 >"$BATS_TEST_TMPDIR/w"
	run sh -c "req-stream --url $URL --model fake-model --max-concurrency 1 --timeout 1s <'$BATS_TEST_TMPDIR/w' >'$BATS_TEST_TMPDIR/r'"
	assert_success
	run jq -c '[.kind, .id, .ok, .error, .http_status]' "$BATS_TEST_TMPDIR/r"
	assert_output "$(printf '%s\n' '["result",0,true,null,200]' '["result",1,false,"http_5xx",500]' \
	    '["result",2,false,"stream_cut",200]' '["result",3,false,"timeout",200]' \
	    '["result",4,false,"bad_stream",200]' '["result",5,false,"bad_stream",200]' \
	    '["result",6,true,null,200]' '["result",7,true,null,200]')"
	run jq -r 'select(.ok) | [.output_tokens, .finish_reason, .itl_count, (.ttft_s >= 0), (.e2e_s >= .ttft_s)] | @tsv' "$BATS_TEST_TMPDIR/r"
	assert_output "$(printf '5\tlength\t4\ttrue\ttrue\n%.0s' 1 2 3)"
	run jq -r 'select(.id == 4 or .id == 5) | .error_detail' "$BATS_TEST_TMPDIR/r"
	assert_line --index 0 --partial "malformed chunk"
	assert_line --index 1 "server error in stream: injected error in stream"
	run --separate-stderr sh -c "req-stream --url $URL --model fake-model --timeout 1s --fail-on-error <'$BATS_TEST_TMPDIR/w' | wc -l"
	assert_output 8
}

@test "a server that stalls before any response on a reused connection is a timeout, not connect" {
	start_double --fail stallhead@2 --stall 30
	workload --requests 2 --tokens 16 --output-tokens 2 >"$BATS_TEST_TMPDIR/w"
	run --separate-stderr sh -c "req-stream --url $URL --model fake-model --max-concurrency 1 --timeout 1s <'$BATS_TEST_TMPDIR/w' | jq -c '[.id, .ok, .error, .http_status, .concurrency_at_send]'"
	assert_success
	assert_output "$(printf '%s\n' '[0,true,null,200,1]' '[1,false,"timeout",null,1]')"
}

@test "a 200 response that is not an event stream is bad_stream, not stream_cut" {
	start_double --fail plain@1
	echo '{"id":"p","prompt":[1,2,3],"max_tokens":3}' >"$BATS_TEST_TMPDIR/w"
	run --separate-stderr sh -c "req-stream --url $URL --model fake-model <'$BATS_TEST_TMPDIR/w' | jq -c '[.ok, .error, .http_status, .error_detail]'"
	assert_success
	assert_output '[false,"bad_stream",200,"Content-Type application/json, not text/event-stream"]'
}

@test "the output digest is deterministic per prompt and the same for chat and completions" {
	start_double
	workload --requests 2 --tokens 40 --vocab 300 --output-tokens 6 >"$BATS_TEST_TMPDIR/ids"
	workload --requests 2 --tokens 40 --vocab 300 --output-tokens 6 --format text >"$BATS_TEST_TMPDIR/text"
	a=$(req-stream --url "$URL" --model fake-model <"$BATS_TEST_TMPDIR/ids" | jq -r '"\(.id) \(.output_sha256)"' | sort)
	b=$(req-stream --url "$URL/v1" --model fake-model --chat <"$BATS_TEST_TMPDIR/text" | jq -r '"\(.id) \(.output_sha256)"' | sort)
	[ "$a" = "$b" ]
	[ "$(echo "$a" | awk '{print $2}' | sort -u | wc -l)" -eq 2 ]
}

@test "output_sha256 is the SHA-256 of the streamed text" {
	start_double
	echo '{"prompt":[1,2,3],"max_tokens":3}' >"$BATS_TEST_TMPDIR/w"
	sha=$(req-stream --url "$URL" --model fake-model <"$BATS_TEST_TMPDIR/w" | jq -r .output_sha256)
	text=$(curl -sN "$URL/v1/completions" -d '{"model":"fake-model","prompt":[1,2,3],"max_tokens":3,"stream":true}' |
	    sed -n 's/^data: //p' | grep -v DONE | jq -j '.choices[0].text // empty')
	[ "$sha" = "$(printf '%s' "$text" | sha256sum | cut -d' ' -f1)" ]
}

@test "expected hit tokens equal the cached tokens the server reports" {
	start_double --cache-blocks 1000
	workload --requests 9 --tokens 100 --hit-rate 0.6 --prefixes 3 --rate 200/s --arrival constant >"$BATS_TEST_TMPDIR/w"
	req-stream --url "$URL" --model fake-model --max-concurrency 1 <"$BATS_TEST_TMPDIR/w" >"$BATS_TEST_TMPDIR/r"
	run jq -s -c '[length, all(.[]; .ok and .cached_tokens == .expected_hit_tokens), (map(.cached_tokens) | add), (map(select(.cached_tokens == 0)) | length)]' "$BATS_TEST_TMPDIR/r"
	assert_output "[9,true,288,3]"
	[ "$(metric vllm:prefix_cache_hits_total)" = 288 ]
	[ "$(metric vllm:prefix_cache_queries_total)" = 900 ]
}

@test "the eviction probe proves eviction: the resident entry hits, the evicted one misses" {
	start_double --cache-blocks 12
	workload --ring 5 --probe --tokens 64 --hit-rate 0.5 >"$BATS_TEST_TMPDIR/w"
	req-stream --url "$URL" --model fake-model --max-concurrency 1 <"$BATS_TEST_TMPDIR/w" >"$BATS_TEST_TMPDIR/r"
	run jq -c '[.id, .probe, .expected_hit_tokens, .cached_tokens]' "$BATS_TEST_TMPDIR/r"
	assert_line --index 5 '[5,"resident",32,32]'
	assert_line --index 6 '[6,"evicted",0,0]'
	[ "$(metric fake_vllm_prefix_cache_evicted_blocks_total)" -gt 0 ]
}

@test "a refused connection is a result with error connect; --fail-on-error exits 1" {
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	workload --requests 3 --tokens 8 >"$BATS_TEST_TMPDIR/w"
	run --separate-stderr sh -c "req-stream --url http://127.0.0.1:$port --model m <'$BATS_TEST_TMPDIR/w' | jq -c '[.ok, .error, .http_status]'"
	assert_success
	assert_output "$(printf '[false,"connect",null]\n%.0s' 1 2 3)"
	run sh -c "req-stream --url http://127.0.0.1:$port --model m --fail-on-error <'$BATS_TEST_TMPDIR/w' >/dev/null"
	assert_failure 1
}

@test "a warm-up against a dead server exits 69" {
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	run sh -c "echo '{\"prompt\":[1]}' | req-stream --url http://127.0.0.1:$port --model m --warmup 1"
	assert_failure 69
	assert_output --partial "warm-up request"
}

@test "an unknown model is an http_4xx result" {
	start_double
	run sh -c "echo '{\"prompt\":[1,2],\"max_tokens\":2}' | req-stream --url $URL --model nope --warmup 0 | jq -c '[.ok, .error, .http_status]'"
	assert_output '[false,"http_4xx",404]'
}

@test "the API key is sent but never printed" {
	start_double --api-key s3cr3t-KVG-key
	echo '{"prompt":[1,2],"max_tokens":2}' >"$BATS_TEST_TMPDIR/w"
	run env KVG_TEST_KEY=s3cr3t-KVG-key req-stream --url "$URL" --model fake-model --api-key-env KVG_TEST_KEY --warmup 1 <"$BATS_TEST_TMPDIR/w"
	assert_success
	assert_output --partial '"ok":true'
	refute_output --partial "s3cr3t"
	run env KVG_TEST_KEY=wrong-KVG-key req-stream --url "$URL" --model fake-model --api-key-env KVG_TEST_KEY <"$BATS_TEST_TMPDIR/w"
	assert_output --partial '"http_status":401'
	refute_output --partial "wrong-KVG-key"
}

@test "bad input lines become error records in place and exit 65; the rest still run" {
	start_double
	printf '%s\n' '{"id":"a","prompt":[1,2],"max_tokens":2}' 'not json' '[1]' '{"id":"b"}' \
	    '{"id":"c","prompt":{"x":1}}' '{"id":"d","prompt":[1],"arrival_s":-1}' \
	    '{"id":"e","prompt":[1],"arrival_s":"soon"}' '{"id":"f","prompt":[1],"max_tokens":0}' \
	    '{"id":"g","prompt":"hi","max_tokens":2}' '{"id":"h","prompt":[1],"arrival_s":1e30}' \
	    '{"id":"i","prompt":[1],"arrival_s":1e12}' '{"id":"j","prompt":[1],"arrival_s":10000000.5}' \
	    '{"id":"k","prompt":[1,2],"max_tokens":2,"arrival_s":0.01}' >"$BATS_TEST_TMPDIR/w"
	# results come in completion order, error records as soon as read
	run --separate-stderr sh -c "req-stream --url $URL --model fake-model <'$BATS_TEST_TMPDIR/w' | jq -s -c 'sort_by(.kind, .line, .id) | .[] | [.kind, .line, .id, .ok]'"
	assert_output "$(printf '%s\n' '["error",2,null,null]' '["error",3,null,null]' \
	    '["error",4,null,null]' '["error",5,null,null]' '["error",6,null,null]' \
	    '["error",7,null,null]' '["error",8,null,null]' '["error",10,null,null]' \
	    '["error",11,null,null]' '["error",12,null,null]' '["result",null,"a",true]' \
	    '["result",null,"g",true]' '["result",null,"k",true]')"
	run sh -c "req-stream --url $URL --model fake-model <'$BATS_TEST_TMPDIR/w' >/dev/null"
	assert_failure 65
	assert_output --partial "req-stream: stdin:4: missing field 'prompt'"
	assert_output --partial "req-stream: stdin:10: arrival_s out of range (0 to 1e7 s)"
}

@test "empty input gives no records and exits 0" {
	run req-stream --url http://127.0.0.1:1 --model m </dev/null
	assert_success
	assert_output ""
}

@test "--max-concurrency queues requests and records the wait as queue_s" {
	start_double --ttft 0.02
	workload --requests 4 --tokens 8 --output-tokens 2 >"$BATS_TEST_TMPDIR/w"
	run sh -c "req-stream --url $URL --model fake-model --max-concurrency 1 <'$BATS_TEST_TMPDIR/w' | jq -s -c '[(map(.concurrency_at_send) | max), (map(select(.queue_s > 0)) | length), all(.[]; .sent_s >= .scheduled_s and .lag_s >= 0)]'"
	assert_output "[1,3,true]"
}

@test "input fields pass through; the prompt is dropped unless --keep-prompt" {
	start_double
	echo '{"id":"x","run":"r1","prompt":[5,6],"max_tokens":2,"arrival_s":0.01}' >"$BATS_TEST_TMPDIR/w"
	run sh -c "req-stream --url $URL --model fake-model <'$BATS_TEST_TMPDIR/w' | jq -c '[.kind, .id, .run, .prompt, .scheduled_s, .prompt_tokens]'"
	assert_output '["result","x","r1",null,0.01,2]'
	run sh -c "req-stream --url $URL --model fake-model --keep-prompt <'$BATS_TEST_TMPDIR/w' | jq -c .prompt"
	assert_output '[5,6]'
}

@test "done when: workload | req-stream | stats accounts for hits, misses, the probe and every failure" {
	start_double --cache-blocks 40 --fail 500@2,cut@3,stall@4,malformed@5,error@6 --stall 30
	{
		workload --requests 10 --tokens 64 --hit-rate 0.5 --prefixes 2 --rate 500/s --arrival constant
		workload --ring 6 --probe --tokens 128 --hit-rate 0.5 --seed 9 | jq -c '.id += 100 | .arrival_s += 0.05'
	} >"$BATS_TEST_TMPDIR/w"
	req-stream --url "$URL" --model fake-model --max-concurrency 1 --timeout 1s <"$BATS_TEST_TMPDIR/w" >"$BATS_TEST_TMPDIR/r"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/w")" -eq 18 ]
	[ "$(wc -l <"$BATS_TEST_TMPDIR/r")" -eq 18 ]
	run jq -s -c '[(map(select(.ok and .cached_tokens != .expected_hit_tokens)) | length), (map(select(.ok and .cached_tokens > 0)) | length), (map(select(.ok and .cached_tokens == 0)) | length)]' "$BATS_TEST_TMPDIR/r"
	assert_output "[0,5,8]"
	run jq -c 'select(.probe) | [.probe, .ok, .cached_tokens]' "$BATS_TEST_TMPDIR/r"
	assert_output "$(printf '%s\n' '["resident",true,64]' '["evicted",true,0]')"
	run sh -c "stats --slo 'ttft_s<=30' <'$BATS_TEST_TMPDIR/r' | jq -c '[.n, .ok, .failed, .errors, .error_rate, .slo_met]'"
	assert_output '[18,13,5,{"http_5xx":1,"stream_cut":1,"timeout":1,"bad_stream":2},0.277777777778,13]'
}

@test "req-stream is valgrind-clean" {
	start_double --fail 500@2
	workload --requests 3 --tokens 32 --output-tokens 3 --hit-rate 0.5 >"$BATS_TEST_TMPDIR/w"
	run_vg req-stream --url "$URL" --model fake-model <"$BATS_TEST_TMPDIR/w"
	assert_success
	assert_output --partial '"error":"http_5xx"'
}

@test "128K-token prompts (1 MB bodies) stream like short ones" {
	start_double --cache-blocks 20000
	workload --requests 2 --tokens 128K --hit-rate 0.5 --output-tokens 3 >"$BATS_TEST_TMPDIR/w"
	run sh -c "req-stream --url $URL --model fake-model --max-concurrency 1 <'$BATS_TEST_TMPDIR/w' | jq -c '[.ok, .prompt_tokens, .cached_tokens == .expected_hit_tokens, .output_tokens]'"
	assert_output "$(printf '[true,131072,true,3]\n[true,131072,true,3]')"
}

@test "a progress line appears only when stderr is a terminal" {
	command -v script >/dev/null || skip "script(1) not installed"
	start_double --itl 0.05
	workload --requests 3 --tokens 8 --output-tokens 20 >"$BATS_TEST_TMPDIR/w"
	run --separate-stderr sh -c "req-stream --url $URL --model fake-model <'$BATS_TEST_TMPDIR/w' >/dev/null"
	assert_success
	[ -z "$stderr" ]
	run script -qec "req-stream --url $URL --model fake-model <'$BATS_TEST_TMPDIR/w' >/dev/null" /dev/null
	assert_success
	assert_output --partial "req-stream: 3 sent, 3 done, 0 failed, 0 in flight"
}

@test "examples/serving.sh gives its expected output" {
	run sh "$KVGATE_ROOT/examples/serving.sh"
	assert_success
	assert_output "$(cat "$KVGATE_ROOT/examples/serving.expected")"
}
