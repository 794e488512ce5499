#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# session-stop: verify a slot's identity, then stop its whole session.

bats_require_minimum_version 1.5.0
load helpers
load fixtures/session-lib

setup() { session_setup; }
teardown() { session_teardown; }

start() {	# start NAME COMMAND...: session-run, print the pid
	local name=$1
	shift
	session-run --slot-dir "$SLOTS" --name "$name" -- "$@" | jq -r .pid
}

@test "stops a service with children and grandchildren: all gone, slot removed" {
	pid=$(start tree sh -c 'sh -c "sleep 300 & sleep 300" & sleep 300 & wait')
	for _ in $(seq 50); do [ "$(session_pids "$pid" | wc -l)" -ge 5 ] && break; sleep 0.1; done
	members=$(session_pids "$pid" | sort -n)
	assert_equal "$(echo "$members" | wc -l)" 5
	run --separate-stderr session-stop --slot-dir "$SLOTS" --name tree
	assert_success
	assert_equal "$(jqv "$output" .kind)" stop
	assert_equal "$(jqv "$output" .verified)" true
	assert_equal "$(jqv "$output" .escalated)" false
	assert_equal "$(jqv "$output" '.signalled|sort|join(" ")')" "$(echo $members)"
	assert_equal "$(jqv "$output" '.leaked|length')" 0
	assert_equal "$(jqv "$output" .slot_removed)" true
	for p in $members; do ! alive "$p"; done
	[ -z "$(session_pids "$pid")" ]
	[ ! -e "$SLOTS/tree.json" ]
}

@test "a service that ignores TERM is escalated to KILL after --timeout" {
	pid=$(start stubborn sh -c 'trap "" TERM; sleep 300 & wait')
	for _ in $(seq 50); do [ "$(session_pids "$pid" | wc -l)" -ge 2 ] && break; sleep 0.1; done
	run --separate-stderr session-stop --slot-dir "$SLOTS" --name stubborn \
	    --timeout 300ms --kill-after 5s
	assert_success
	assert_equal "$(jqv "$output" .escalated)" true
	assert_equal "$(jqv "$output" '.killed|length')" 2
	assert_equal "$(jqv "$output" '.leaked|length')" 0
	! alive "$pid"
}

@test "a stopped (SIGSTOP) service is continued so that TERM ends it" {
	pid=$(start frozen sleep 300)
	kill -STOP "$pid"
	run --separate-stderr session-stop --slot-dir "$SLOTS" --name frozen --timeout 10s
	assert_success
	assert_equal "$(jqv "$output" .escalated)" false
	! alive "$pid"
}

@test "--signal chooses the first signal" {
	pid=$(start intr sh -c 'trap "exit 0" INT; trap "" TERM; while :; do sleep 0.1; done')
	run --separate-stderr session-stop --slot-dir "$SLOTS" --name intr --signal INT --timeout 5s
	assert_success
	assert_equal "$(jqv "$output" .escalated)" false
	! alive "$pid"
}

@test "a slot whose PID is an unrelated live process in another session is refused, untouched" {
	sleep 300 & other=$!
	OTHER_PIDS+=("$other")
	boot=$(cat /proc/sys/kernel/random/boot_id)
	# right start time, but it is no session leader (it is in ours)
	jq -cn --argjson p "$other" --arg b "$boot" --argjson t "$(start_ticks "$other")" \
	    '{kind:"slot",name:"x",pid:$p,sid:$p,pgid:$p,start_time_ticks:$t,
	      boot_id:$b,cwd:"/"}' >"$SLOTS/x.json"
	run --separate-stderr session-stop --slot-dir "$SLOTS" --name x
	assert_failure 1
	assert_equal "$(jqv "$output" .verified)" false
	assert_equal "$(jqv "$output" .failed_check)" session
	assert_equal "$(jqv "$output" '.signalled|length')" 0
	[[ $stderr == *"signalled nothing"* ]]
	alive "$other"
	[ -e "$SLOTS/x.json" ]
	# wrong start time: a PID reused by someone else
	jq -cn --argjson p "$other" --arg b "$boot" --argjson t "$(( $(start_ticks "$other") - 1 ))" \
	    '{kind:"slot",name:"x",pid:$p,sid:$p,pgid:$p,start_time_ticks:$t,
	      boot_id:$b,cwd:"/"}' >"$SLOTS/x.json"
	run --separate-stderr session-stop --slot-dir "$SLOTS" --name x
	assert_failure 1
	assert_equal "$(jqv "$output" .failed_check)" start_time
	alive "$other"
	# another boot
	jq -cn --argjson p "$other" --argjson t "$(start_ticks "$other")" \
	    '{kind:"slot",name:"x",pid:$p,sid:$p,pgid:$p,start_time_ticks:$t,
	      boot_id:"00000000-0000-0000-0000-000000000000",cwd:"/"}' >"$SLOTS/x.json"
	run --separate-stderr session-stop --slot-dir "$SLOTS" --name x
	assert_failure 1
	assert_equal "$(jqv "$output" .failed_check)" boot_id
	alive "$other"
	rm "$SLOTS/x.json"
}

@test "a session leader in another cwd than the slot's is refused, untouched" {
	pid=$(start cw sleep 300)
	jq -c '.cwd = "/elsewhere"' "$SLOTS/cw.json" >"$SLOTS/cw.tmp"
	mv "$SLOTS/cw.tmp" "$SLOTS/cw.json"
	run --separate-stderr session-stop --slot-dir "$SLOTS" --name cw
	assert_failure 1
	assert_equal "$(jqv "$output" .failed_check)" cwd
	[[ $(jqv "$output" .reason) == *"slot says /elsewhere"* ]]
	alive "$pid"
	# put it right and it stops
	jq -c --arg c "$(readlink /proc/"$pid"/cwd)" '.cwd = $c' "$SLOTS/cw.json" >"$SLOTS/cw.tmp"
	mv "$SLOTS/cw.tmp" "$SLOTS/cw.json"
	run --separate-stderr session-stop --slot-dir "$SLOTS" --name cw
	assert_success
	! alive "$pid"
}

@test "a slot whose service already exited with nothing left: leader_exited, slot removed" {
	pid=$(start gone sh -c 'sleep 0.3; exit 0')
	for _ in $(seq 50); do alive "$pid" || break; sleep 0.1; done
	! alive "$pid"
	run --separate-stderr session-stop --slot-dir "$SLOTS" --name gone
	assert_success
	assert_equal "$(jqv "$output" .verified)" true
	assert_equal "$(jqv "$output" .leader_exited)" true
	assert_equal "$(jqv "$output" '.signalled|length')" 0
	assert_equal "$(jqv "$output" '.leaked|length')" 0
	assert_equal "$(jqv "$output" .slot_removed)" true
	[ ! -e "$SLOTS/gone.json" ]
}

@test "a leader that exited leaving children: the children of its session are stopped" {
	pf=$BATS_TEST_TMPDIR/child.pid
	pid=$(start w sh -c "sleep 301 & echo \$! >$pf; sleep 0.5; exit 0")
	for _ in $(seq 50); do alive "$pid" || break; sleep 0.1; done
	! alive "$pid"
	child=$(cat "$pf")
	OTHER_PIDS+=("$child")
	alive "$child"
	run --separate-stderr session-stop --slot-dir "$SLOTS" --name w
	assert_success
	assert_equal "$(jqv "$output" .verified)" true
	assert_equal "$(jqv "$output" .leader_exited)" true
	assert_equal "$(jqv "$output" '.signalled|join(" ")')" "$child"
	assert_equal "$(jqv "$output" '.leaked|length')" 0
	assert_equal "$(jqv "$output" .slot_removed)" true
	[[ $stderr == *"leader $pid had already exited"* ]]
	! alive "$child"
	[ ! -e "$SLOTS/w.json" ]
}

@test "an exited leader's session: members older than the slot and other boots are untouched" {
	pf=$BATS_TEST_TMPDIR/child.pid
	pid=$(start old sh -c "sleep 301 & echo \$! >$pf; sleep 0.5; exit 0")
	for _ in $(seq 50); do alive "$pid" || break; sleep 0.1; done
	child=$(cat "$pf")
	OTHER_PIDS+=("$child")
	# another boot: refused, nothing signalled, the slot kept
	jq -c '.boot_id = "00000000-0000-0000-0000-000000000000"' "$SLOTS/old.json" >"$SLOTS/old.tmp"
	cp "$SLOTS/old.json" "$SLOTS/old.keep"
	mv "$SLOTS/old.tmp" "$SLOTS/old.json"
	run --separate-stderr session-stop --slot-dir "$SLOTS" --name old
	assert_failure 1
	assert_equal "$(jqv "$output" .failed_check)" boot_id
	assert_equal "$(jqv "$output" '.signalled|length')" 0
	alive "$child"
	[ -e "$SLOTS/old.json" ]
	# a member that started before the slot's recorded start is not its
	# (the slot names a leader PID that is gone: a reaped child of ours,
	# since the real one may linger as a zombie nobody reaps)
	sh -c 'exit 0' & dead=$!
	wait "$dead" || true
	jq -c --argjson t "$(( $(start_ticks "$child") + 1 ))" --argjson d "$dead" \
	    '.start_time_ticks = $t | .pid = $d' "$SLOTS/old.keep" >"$SLOTS/old.json"
	run --separate-stderr session-stop --slot-dir "$SLOTS" --name old
	assert_success
	assert_equal "$(jqv "$output" .leader_exited)" true
	assert_equal "$(jqv "$output" '.signalled|length')" 0
	alive "$child"
}

@test "a slot file owned by another user is refused, its process untouched" {
	[ "$(id -u)" -eq 0 ] || skip "needs root to chown"
	# a real session leader the slot could name: setsid execs in place
	# (a background job is no group leader), so $! is the leader
	setsid sleep 300 & leader=$!
	OTHER_PIDS+=("$leader")
	for _ in $(seq 50); do
		[ "$(ps -o sid= -p "$leader" | tr -d ' ')" = "$leader" ] && break
		sleep 0.1
	done
	jq -cn --argjson p "$leader" --arg b "$(cat /proc/sys/kernel/random/boot_id)" \
	    --argjson t "$(start_ticks "$leader")" --arg c "$(readlink /proc/"$leader"/cwd)" \
	    '{kind:"slot",name:"planted",pid:$p,sid:$p,pgid:$p,start_time_ticks:$t,
	      boot_id:$b,cwd:$c}' >"$SLOTS/planted.json"
	chown 65534 "$SLOTS/planted.json"
	run --separate-stderr session-stop --slot-dir "$SLOTS" --name planted
	assert_failure 65
	[[ $stderr == *"belongs to uid 65534, not to us"* ]]
	alive "$leader"
	rm "$SLOTS/planted.json"
}

@test "a missing slot is status 1, a corrupt one 65" {
	run --separate-stderr session-stop --slot-dir "$SLOTS" --name none
	assert_failure 1
	assert_equal "$(jqv "$output" .failed_check)" slot
	[[ $stderr == *"no slot none"* ]]
	echo '[1,2]' >"$SLOTS/c.json"
	run --separate-stderr session-stop --slot-dir "$SLOTS" --name c
	assert_failure 65
	assert_equal "$(jqv "$output" .verified)" false
	[[ $stderr == *"slot is not a JSON object"* ]]
	echo '{"kind":"slot","name":"c","pid":1,"sid":1,"pgid":1,"start_time_ticks":-4,"boot_id":"0","cwd":"/"}' >"$SLOTS/c.json"
	run --separate-stderr session-stop --slot-dir "$SLOTS" --name c
	assert_failure 65
	echo '{"kind":"slot","name":"c","pid":1,"sid":1,"pgid":1,"start_time_ticks":1,"boot_id":"00000000-0000-0000-0000-000000000000","cwd":"relative"}' >"$SLOTS/c.json"
	run --separate-stderr session-stop --slot-dir "$SLOTS" --name c
	assert_failure 65
	[[ $stderr == *"not an absolute path"* ]]
	head -c 2000000 /dev/zero | tr '\0' ' ' >"$SLOTS/c.json"
	run --separate-stderr session-stop --slot-dir "$SLOTS" --name c
	assert_failure 65
	rm "$SLOTS/c.json"
}

@test "--cgroup: stop also ends processes that escaped the session with setsid" {
	run --separate-stderr session-run --cgroup --slot-dir "$SLOTS" --name esc -- \
	    sh -c 'setsid sleep 300 & sleep 300'
	[ "$status" -ne 69 ] || skip "no writable cgroup v2 hierarchy here"
	assert_success
	cg=$(jqv "$output" .cgroup)
	for _ in $(seq 50); do [ "$(wc -l <"$cg/cgroup.procs")" -ge 3 ] && break; sleep 0.1; done
	procs=$(cat "$cg/cgroup.procs")
	run --separate-stderr session-stop --slot-dir "$SLOTS" --name esc
	assert_success
	assert_equal "$(jqv "$output" '.escaped|length')" 1
	assert_equal "$(jqv "$output" '.signalled|length')" 3
	assert_equal "$(jqv "$output" .cgroup_removed)" true
	for p in $procs; do ! alive "$p"; done
	[ ! -d "$cg" ]
}

@test "200 start/stop cycles leak no process" {
	# jq-free on purpose: 200 rounds must stay quick
	leaks=0 fails=0 pids=()
	for i in $(seq 200); do
		out=$(session-run --slot-dir "$SLOTS" --name cyc -- sh -c 'sleep 300 & exec sleep 300') ||
		    { fails=$((fails + 1)); continue; }
		[[ $out =~ \"pid\":([0-9]+) ]] && pids+=("${BASH_REMATCH[1]}")
		out=$(session-stop --slot-dir "$SLOTS" --name cyc --timeout 5s) ||
		    fails=$((fails + 1))
		[[ $out == *'"leaked":[]'* ]] || leaks=$((leaks + 1))
	done
	assert_equal "$fails" 0
	assert_equal "$leaks" 0
	assert_equal "${#pids[@]}" 200
	# no process of any of the 200 sessions is left
	left=$(ps -e -o sid=,stat= | awk -v l=" ${pids[*]} " \
	    '$2 !~ /^Z/ && index(l, " " $1 " ") { n++ } END { print n + 0 }')
	assert_equal "$left" 0
	[ ! -e "$SLOTS/cyc.json" ]
}

@test "usage errors exit 2" {
	run --separate-stderr session-stop --slot-dir "$SLOTS"
	assert_failure 2
	[[ $stderr == *"--slot-dir and --name are required"* ]]
	run --separate-stderr session-stop --slot-dir "$SLOTS" --name a/b
	assert_failure 2
	run --separate-stderr session-stop --slot-dir "$SLOTS" --name a --signal FOO
	assert_failure 2
	[[ $stderr == *"unknown signal 'FOO'"* ]]
	run --separate-stderr session-stop --slot-dir "$SLOTS" --name a --timeout -1s
	assert_failure 2
	run --separate-stderr session-stop --slot-dir "$SLOTS" --name a --kill-after 0
	assert_failure 2
	run --separate-stderr session-stop --slot-dir "$SLOTS" --name a extra
	assert_failure 2
	run --separate-stderr session-stop --slot-dir "$BATS_TEST_TMPDIR/none" --name a
	assert_failure 69
}

@test "--help and --version" {
	run --separate-stderr session-stop --help
	assert_success
	[[ $output == "usage: session-stop --slot-dir DIR --name NAME"* ]]
	run session-stop --version
	assert_output "session-stop (kvgate) $(cat "$KVGATE_ROOT/VERSION")"
}

@test "session-stop is valgrind-clean on the slot checks (valgrind lacks pidfd_open)" {
	run_vg session-stop --slot-dir "$SLOTS" --name none
	assert_failure 1
	echo '{"kind":"slot","name":"v","pid":1,"sid":1,"pgid":1,"start_time_ticks":1,"boot_id":"00000000-0000-0000-0000-000000000000","cwd":"/","argv":["a"]}' >"$SLOTS/v.json"
	run_vg session-stop --slot-dir "$SLOTS" --name v
	assert_failure 1
	[[ $output == *'"failed_check":"boot_id"'* ]]
	rm "$SLOTS/v.json"
}
