#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# session-run: services started as session leaders, recorded in PID slots.

bats_require_minimum_version 1.5.0
load helpers
load fixtures/session-lib

setup() { session_setup; }
teardown() { session_teardown; }

@test "starts the command as leader of its own session and writes the slot" {
	run --separate-stderr session-run --slot-dir "$SLOTS" --name web -- sleep 300
	assert_success
	pid=$(jqv "$output" .pid)
	assert_equal "$(jqv "$output" .kind)" slot
	assert_equal "$(jqv "$output" .sid)" "$pid"
	assert_equal "$(jqv "$output" .pgid)" "$pid"
	assert_equal "$(jqv "$output" .ready)" true
	assert_equal "$(jqv "$output" .start_time_ticks)" "$(start_ticks "$pid")"
	assert_equal "$(jqv "$output" .boot_id)" "$(cat /proc/sys/kernel/random/boot_id)"
	assert_equal "$(jqv "$output" .exe)" "$(readlink /proc/"$pid"/exe)"
	assert_equal "$(jqv "$output" '.argv|join(" ")')" "sleep 300"
	assert_equal "$(jqv "$output" .cwd)" "$(pwd -P)"
	[[ $(jqv "$output" .started_at) =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T.*Z$ ]]
	# the slot file holds the same identity (without "ready")
	assert_equal "$(slot_field web pid)" "$pid"
	assert_equal "$(slot_field web start_time_ticks)" "$(start_ticks "$pid")"
	alive "$pid"
	# its session id, read from the kernel, is its own pid
	assert_equal "$(awk '{ sub(/.*\) /, ""); print $4 }' /proc/"$pid"/stat)" "$pid"
}

@test "--cwd and --log place the service and collect its output" {
	mkdir "$BATS_TEST_TMPDIR/work"
	run --separate-stderr session-run --slot-dir "$SLOTS" --name w \
	    --cwd "$BATS_TEST_TMPDIR/work" --log "$BATS_TEST_TMPDIR/w.log" \
	    -- sh -c 'pwd; echo oops >&2; exec sleep 300'
	assert_success
	pid=$(jqv "$output" .pid)
	assert_equal "$(readlink /proc/"$pid"/cwd)" "$(cd "$BATS_TEST_TMPDIR/work" && pwd -P)"
	assert_equal "$(jqv "$output" .cwd)" "$(cd "$BATS_TEST_TMPDIR/work" && pwd -P)"
	for _ in $(seq 50); do grep -q oops "$BATS_TEST_TMPDIR/w.log" && break; sleep 0.1; done
	run cat "$BATS_TEST_TMPDIR/w.log"
	assert_line "$(cd "$BATS_TEST_TMPDIR/work" && pwd -P)"
	assert_line oops
}

@test "without --log the output goes to SLOTDIR/NAME.log" {
	run --separate-stderr session-run --slot-dir "$SLOTS" --name quiet -- sh -c 'echo hello; exec sleep 300'
	assert_success
	for _ in $(seq 50); do grep -q hello "$SLOTS/quiet.log" && break; sleep 0.1; done
	grep -qx hello "$SLOTS/quiet.log"
}

@test "a symlink planted at SLOTDIR/NAME.log is refused, its target untouched" {
	printf 'precious\n' >"$BATS_TEST_TMPDIR/target"
	ln -s "$BATS_TEST_TMPDIR/target" "$SLOTS/evil.log"
	run --separate-stderr session-run --slot-dir "$SLOTS" --name evil -- \
	    sh -c 'echo clobbered; exec sleep 300'
	assert_failure 69
	assert_equal "$(jqv "$output" .kind)" refused
	assert_equal "$(jqv "$output" .error)" "log unsafe"
	[[ $stderr == *"$SLOTS/evil.log is a symbolic link: refusing to follow it"* ]]
	[ ! -e "$SLOTS/evil.json" ]
	assert_equal "$(cat "$BATS_TEST_TMPDIR/target")" precious
	# nor a FIFO, nor a file of another user's
	rm "$SLOTS/evil.log"
	mkfifo "$SLOTS/evil.log"
	run --separate-stderr timeout 20 session-run --slot-dir "$SLOTS" --name evil -- sleep 300
	assert_failure 69
	[ ! -e "$SLOTS/evil.json" ]
	rm "$SLOTS/evil.log"
	if [ "$(id -u)" -eq 0 ]; then
		: >"$SLOTS/evil.log"
		chown 65534 "$SLOTS/evil.log"
		run --separate-stderr session-run --slot-dir "$SLOTS" --name evil -- sleep 300
		assert_failure 69
		[[ $stderr == *"evil.log belongs to uid 65534, not to us"* ]]
		[ ! -e "$SLOTS/evil.json" ]
	fi
}

@test "a slot held by a live matching process is refused and left alone" {
	session-run --slot-dir "$SLOTS" --name db -- sleep 300 >/dev/null
	pid=$(slot_field db pid)
	before=$(cat "$SLOTS/db.json")
	run --separate-stderr session-run --slot-dir "$SLOTS" --name db -- sleep 301
	assert_failure 1
	assert_equal "$(jqv "$output" .kind)" refused
	assert_equal "$(jqv "$output" .error)" "slot occupied"
	assert_equal "$(jqv "$output" .holder.pid)" "$pid"
	[[ $stderr == *"slot db is held by pid $pid"* ]]
	assert_equal "$(cat "$SLOTS/db.json")" "$before"
	alive "$pid"
}

@test "a stale slot with a dead PID is replaced with a warning record" {
	sleep 0 & dead=$!
	wait "$dead"
	! alive "$dead"
	jq -cn --argjson p "$dead" --arg b "$(cat /proc/sys/kernel/random/boot_id)" \
	    '{kind:"slot",name:"st",pid:$p,sid:$p,pgid:$p,start_time_ticks:1,
	      boot_id:$b,cwd:"/",argv:["x"],started_at:"2020-01-01T00:00:00.000Z"}' \
	    >"$SLOTS/st.json"
	run --separate-stderr session-run --slot-dir "$SLOTS" --name st -- sleep 300
	assert_success
	assert_equal "${#lines[@]}" 2
	assert_equal "$(jqv "${lines[0]}" .kind)" warning
	assert_equal "$(jqv "${lines[0]}" .warning)" "stale slot replaced"
	assert_equal "$(jqv "${lines[0]}" .reason)" "not running"
	assert_equal "$(jqv "${lines[0]}" .stale.pid)" "$dead"
	assert_equal "$(jqv "${lines[1]}" .kind)" slot
	assert_equal "$(slot_field st pid)" "$(jqv "${lines[1]}" .pid)"
}

@test "a stale slot whose PID now belongs to another process is replaced, that process untouched" {
	sleep 300 & other=$!
	OTHER_PIDS+=("$other")
	jq -cn --argjson p "$other" --arg b "$(cat /proc/sys/kernel/random/boot_id)" \
	    --argjson t "$(( $(start_ticks "$other") + 7 ))" \
	    '{kind:"slot",name:"re",pid:$p,sid:$p,pgid:$p,start_time_ticks:$t,
	      boot_id:$b,cwd:"/",argv:["x"]}' >"$SLOTS/re.json"
	run --separate-stderr session-run --slot-dir "$SLOTS" --name re -- sleep 300
	assert_success
	assert_equal "$(jqv "${lines[0]}" .kind)" warning
	[[ $(jqv "${lines[0]}" .reason) == "start time differs"* ]]
	alive "$other"
	[ "$(slot_field re pid)" != "$other" ]
}

@test "a slot written before a reboot is stale" {
	sleep 300 & other=$!
	OTHER_PIDS+=("$other")
	jq -cn --argjson p "$other" --argjson t "$(start_ticks "$other")" \
	    '{kind:"slot",name:"rb",pid:$p,sid:$p,pgid:$p,start_time_ticks:$t,
	      boot_id:"00000000-0000-0000-0000-000000000000",cwd:"/"}' >"$SLOTS/rb.json"
	run --separate-stderr session-run --slot-dir "$SLOTS" --name rb -- sleep 300
	assert_success
	[[ $(jqv "${lines[0]}" .reason) == "boot id differs"* ]]
	alive "$other"
}

@test "a corrupt slot file is refused with status 65, never replaced" {
	echo '{"name":"bad","pid":"12"}' >"$SLOTS/bad.json"
	run --separate-stderr session-run --slot-dir "$SLOTS" --name bad -- sleep 300
	assert_failure 65
	assert_equal "$(jqv "$output" .kind)" refused
	[[ $stderr == *"slot field 'pid' missing or not a PID"* ]]
	assert_equal "$(cat "$SLOTS/bad.json")" '{"name":"bad","pid":"12"}'
	printf 'not json' >"$SLOTS/bad.json"
	run --separate-stderr session-run --slot-dir "$SLOTS" --name bad -- sleep 300
	assert_failure 65
	[[ $stderr == *"is not JSON"* ]]
	: >"$SLOTS/bad.json"
	run --separate-stderr session-run --slot-dir "$SLOTS" --name bad -- sleep 300
	assert_failure 65
	printf '{"kind":"slot","name":"bad","pid":99999999999,"sid":1,"pgid":1,"start_time_ticks":1,"boot_id":"x","cwd":"/"}' >"$SLOTS/bad.json"
	run --separate-stderr session-run --slot-dir "$SLOTS" --name bad -- sleep 300
	assert_failure 65
	printf '{"kind":"slot","name":"other","pid":5,"sid":5,"pgid":5,"start_time_ticks":1,"boot_id":"%s","cwd":"/"}' \
	    "$(cat /proc/sys/kernel/random/boot_id)" >"$SLOTS/bad.json"
	run --separate-stderr session-run --slot-dir "$SLOTS" --name bad -- sleep 300
	assert_failure 65
	[[ $stderr == *"names another slot"* ]]
}

@test "two session-run racing for one slot: exactly one wins" {
	for i in 1 2 3 4; do
		session-run --slot-dir "$SLOTS" --name race -- sleep 300 \
		    >"$BATS_TEST_TMPDIR/r$i.out" 2>/dev/null &
	done
	wins=0 refused=0
	for i in 1 2 3 4; do
		wait -n && wins=$((wins + 1)) || refused=$((refused + 1))
	done
	assert_equal "$wins" 1
	assert_equal "$refused" 3
	winner=$(jq -r 'select(.kind=="slot") | .pid' "$BATS_TEST_TMPDIR"/r*.out)
	assert_equal "$(slot_field race pid)" "$winner"
	assert_equal "$(jq -r 'select(.kind=="refused") | .holder.pid' "$BATS_TEST_TMPDIR"/r*.out | sort -u)" "$winner"
}

@test "--ready-tcp waits until a real listener accepts" {
	port=$(free_port)
	run --separate-stderr session-run --slot-dir "$SLOTS" --name http \
	    --ready-tcp "127.0.0.1:$port" --ready-timeout 20s -- \
	    sh -c "sleep 0.3; exec python3 -m http.server $port --bind 127.0.0.1"
	assert_success
	assert_equal "$(jqv "$output" .ready)" true
	run python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).status)' "http://127.0.0.1:$port/"
	assert_output 200
}

@test "--ready-http waits for a 2xx answer" {
	port=$(free_port)
	run --separate-stderr session-run --slot-dir "$SLOTS" --name h2 \
	    --ready-http "http://127.0.0.1:$port/" --ready-timeout 20s -- \
	    python3 -m http.server "$port" --bind 127.0.0.1
	assert_success
	assert_equal "$(jqv "$output" .ready)" true
}

@test "--ready-cmd runs until the command succeeds" {
	flag=$BATS_TEST_TMPDIR/flag
	run --separate-stderr session-run --slot-dir "$SLOTS" --name rc \
	    --ready-cmd "test -e $flag" --ready-timeout 20s -- \
	    sh -c "sleep 0.3; touch $flag; exec sleep 300"
	assert_success
	[ -e "$flag" ]
}

@test "a readiness timeout stops the service the safe way and fails" {
	run --separate-stderr session-run --slot-dir "$SLOTS" --name never \
	    --ready-cmd false --ready-timeout 300ms -- \
	    sh -c 'sleep 300 & exec sleep 300'
	assert_failure 1
	assert_equal "$(jqv "$output" .kind)" not_ready
	assert_equal "$(jqv "$output" .reason)" "readiness timeout"
	assert_equal "$(jqv "$output" .verified)" true
	assert_equal "$(jqv "$output" '.signalled|length')" 2
	assert_equal "$(jqv "$output" '.leaked|length')" 0
	pid=$(jqv "$output" .pid)
	for p in $(jqv "$output" '.signalled[]'); do ! alive "$p"; done
	[ ! -e "$SLOTS/never.json" ]
	[[ $stderr == *"never not ready: readiness timeout; stopping it"* ]]
}

@test "a --ready-cmd that hangs is killed with its process group at --ready-timeout" {
	pf=$BATS_TEST_TMPDIR/probe.pid
	# the outer timeout only turns a hang into a failure (124)
	run --separate-stderr timeout 20 session-run --slot-dir "$SLOTS" --name hang \
	    --ready-cmd "sleep 60 & echo \$! >$pf; wait" --ready-timeout 1s -- \
	    sleep 100
	[ -s "$pf" ] && OTHER_PIDS+=("$(cat "$pf")")
	assert_failure 1
	assert_equal "$(jqv "$output" .kind)" not_ready
	assert_equal "$(jqv "$output" .reason)" "readiness timeout"
	assert_equal "$(jqv "$output" .verified)" true
	assert_equal "$(jqv "$output" '.leaked|length')" 0
	! alive "$(jqv "$output" .pid)"
	! alive "$(cat "$pf")"
	[ ! -e "$SLOTS/hang.json" ]
}

@test "a service that exits before it is ready fails at once" {
	port=$(free_port)	# nobody listens there
	run --separate-stderr session-run --slot-dir "$SLOTS" --name dies \
	    --ready-tcp "127.0.0.1:$port" --ready-timeout 30s -- sh -c 'exit 3'
	assert_failure 1
	assert_equal "$(jqv "$output" .reason)" "the service exited before it became ready"
	[ ! -e "$SLOTS/dies.json" ]
}

@test "a command that cannot be executed fails with 69 and leaves no slot" {
	run --separate-stderr session-run --slot-dir "$SLOTS" --name nx -- /no/such/binary
	assert_failure 69
	[[ $stderr == *"cannot start /no/such/binary: No such file or directory"* ]]
	[ ! -e "$SLOTS/nx.json" ]
}

@test "--cgroup puts the service in its own cgroup v2 (or says none is writable)" {
	run --separate-stderr session-run --cgroup --slot-dir "$SLOTS" --name cg -- sleep 300
	if [ "$status" -eq 69 ]; then
		[[ $stderr == *"no writable cgroup v2 hierarchy"* ]]
		skip "no writable cgroup v2 hierarchy here"
	fi
	assert_success
	cg=$(jqv "$output" .cgroup)
	pid=$(jqv "$output" .pid)
	grep -qx "$pid" "$cg/cgroup.procs"
}

@test "usage errors exit 2 with one message per rule" {
	run --separate-stderr session-run --name x -- true
	assert_failure 2
	[[ $stderr == *"--slot-dir and --name are required"* ]]
	run --separate-stderr session-run --slot-dir "$SLOTS" --name ../x -- true
	assert_failure 2
	[[ $stderr == *"is not 1-64 of"* ]]
	run --separate-stderr session-run --slot-dir "$SLOTS" --name x
	assert_failure 2
	[[ $stderr == *"no COMMAND"* ]]
	run --separate-stderr session-run --slot-dir "$SLOTS" --name x --ready-cmd true --ready-tcp h:1 -- true
	assert_failure 2
	[[ $stderr == *"exclude each other"* ]]
	run --separate-stderr session-run --slot-dir "$SLOTS" --name x --ready-tcp nohostport -- true
	assert_failure 2
	run --separate-stderr session-run --slot-dir "$SLOTS" --name x --ready-timeout 12furlongs -- true
	assert_failure 2
	[[ $stderr == *"--ready-timeout"* ]]
	run --separate-stderr session-run --slot-dir "$SLOTS" --name x --ready-timeout 0 -- true
	assert_failure 2
	run --separate-stderr session-run --bogus
	assert_failure 2
	[[ $stderr == *"usage: session-run"* ]]
	[ -z "$(ls "$SLOTS")" ]
}

@test "a missing slot directory is status 69" {
	run --separate-stderr session-run --slot-dir "$BATS_TEST_TMPDIR/nope" --name x -- true
	assert_failure 69
	[[ $stderr == *"slot dir"* ]]
}

@test "--help prints the synopsis on stdout, --version the version" {
	run --separate-stderr session-run --help
	assert_success
	[[ $output == "usage: session-run --slot-dir DIR --name NAME"* ]]
	run session-run --version
	assert_output "session-run (kvgate) $(cat "$KVGATE_ROOT/VERSION")"
}

@test "session-run is valgrind-clean on the slot checks (valgrind lacks pidfd_open)" {
	# valgrind 3.19 does not know pidfd_open(2), so the paths that start
	# a service cannot run under it; the slot parsing and refusal can.
	printf '{"kind":"slot","name":"vg","pid":1,"sid":1,"pgid":1,"start_time_ticks":1,"boot_id":"bad","cwd":"/"}' >"$SLOTS/vg.json"
	run_vg session-run --slot-dir "$SLOTS" --name vg --ready-cmd true -- sleep 300
	assert_failure 65
	run_vg session-run --slot-dir "$SLOTS" --name vg --ready-tcp x -- true
	assert_failure 2
}
