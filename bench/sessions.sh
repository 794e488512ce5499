#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/sessions.sh: start+stop cycles per second of session-run and
# session-stop against Debian's start-stop-daemon doing the same job: start
# a service that has a child, in the background with a PID file and a log,
# then stop it (TERM, KILL after 10 s).  Counts the processes each leaves
# behind.  Knobs: KVGATE_BENCH_CYCLES (default 100) for kvgate,
# KVGATE_BENCH_SSD_CYCLES (default 20) for start-stop-daemon, whose --retry
# waits until the PID is gone: where PID 1 reaps orphans late (containers),
# that is seconds per cycle.  The ratio is of rates, so the counts may differ.
# KVGATE_BENCH_PIDNS=1 (root) runs it all in a new PID namespace whose init,
# this script's shell, reaps orphans at once: the fair comparison there.
set -eu
if [ "${KVGATE_BENCH_PIDNS:-0}" = 1 ] && [ "$$" != 1 ]; then
	exec unshare --pid --fork --mount-proc sh "$0" "$@"
fi
BIN=${KVGATE_BIN:-$(cd "$(dirname "$0")/.." && pwd)/build/bin}
N=${KVGATE_BENCH_CYCLES:-100}
NS=${KVGATE_BENCH_SSD_CYCLES:-20}
SSD=$(command -v start-stop-daemon || echo /usr/sbin/start-stop-daemon)
[ -x "$SSD" ] || { echo "sessions.sh: start-stop-daemon not found (apt-get install dpkg)" >&2; exit 69; }
d=$(mktemp -d /tmp/kvgate-sessions-bench.XXXXXX)
leftover=$d/leftover
: >"$leftover"
# Only processes this script started are ever killed, by PID.
cleanup() {
	for p in $(cat "$leftover"); do kill -9 "$p" 2>/dev/null || true; done
	rm -rf "$d"
}
trap cleanup EXIT INT TERM

SERVICE='sleep 300 & exec sleep 300'	# a service with one child
now() { date +%s.%N; }
# live (non-zombie) processes of session $1, one PID a line (the session
# is read before the stop: start-stop-daemon's service is not its leader)
members() { ps -e -o pid=,sid=,stat= | awk -v s="$1" '$2 == s && $3 !~ /^Z/ { print $1 }'; }

# kvgate: session-run / session-stop
leaks_kv=0
t0=$(now)
i=0
while [ "$i" -lt "$N" ]; do
	out=$("$BIN/session-run" --slot-dir "$d" --name bench --log "$d/kv.log" \
	    -- sh -c "$SERVICE")
	pid=$(printf '%s\n' "$out" | sed -n 's/.*"pid":\([0-9]*\).*/\1/p')
	sleep 0.01	# let the service fork its child before it is stopped
	sid=$(ps -o sid= -p "$pid" | tr -d ' ')
	"$BIN/session-stop" --slot-dir "$d" --name bench --timeout 10s >/dev/null || true
	left=$(members "$sid")
	if [ -n "$left" ]; then
		leaks_kv=$((leaks_kv + $(printf '%s\n' "$left" | wc -l)))
		printf '%s\n' "$left" >>"$leftover"
	fi
	i=$((i + 1))
done
t_kv=$(awk -v a="$t0" -v z="$(now)" 'BEGIN { print z - a }')

# start-stop-daemon: --background --make-pidfile / --stop --retry
leaks_ssd=0
t0=$(now)
i=0
while [ "$i" -lt "$NS" ]; do
	"$SSD" --start --quiet --background --make-pidfile --pidfile "$d/ssd.pid" \
	    --chdir "$d" --output "$d/ssd.log" --startas /bin/sh -- -c "$SERVICE"
	# --background returns before the service has written its pid file
	until [ -s "$d/ssd.pid" ]; do sleep 0.001; done
	pid=$(cat "$d/ssd.pid")
	sleep 0.01	# let the service fork its child before it is stopped
	sid=$(ps -o sid= -p "$pid" | tr -d ' ')
	"$SSD" --stop --quiet --pidfile "$d/ssd.pid" --remove-pidfile \
	    --retry TERM/10/KILL/5 || true
	left=$(members "$sid")
	if [ -n "$left" ]; then
		leaks_ssd=$((leaks_ssd + $(printf '%s\n' "$left" | wc -l)))
		printf '%s\n' "$left" >>"$leftover"
	fi
	i=$((i + 1))
done
t_ssd=$(awk -v a="$t0" -v z="$(now)" 'BEGIN { print z - a }')

awk -v n="$N" -v ns="$NS" -v k="$t_kv" -v s="$t_ssd" -v lk="$leaks_kv" \
    -v ls="$leaks_ssd" 'BEGIN {
	printf "start+stop cycles of a service with one child:\n"
	printf "  session-run/session-stop  %4d cycles %7.3f s %7.1f cycles/s  leaked %d\n", n, k, n / k, lk
	printf "  start-stop-daemon         %4d cycles %7.3f s %7.1f cycles/s  leaked %d\n", ns, s, ns / s, ls
	printf "ratio kvgate/start-stop-daemon (cycles/s): %.2fx\n", (n / k) / (ns / s)
	printf "leaked processes: kvgate %d in %d cycles, start-stop-daemon %d in %d cycles\n", lk, n, ls, ns
}'
