/* SPDX-License-Identifier: MIT */
/* session-stop: stop a slot's service only after verifying its identity. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "jsonl.h"
#include "proc.h"
#include "session.h"
#include "units.h"

struct options {
	const char *slot_dir, *name;
	struct stop_opts stop;
};

static const struct {
	const char *name;
	int sig;
} signals[] = {
	{ "TERM", SIGTERM }, { "INT", SIGINT }, { "HUP", SIGHUP },
	{ "QUIT", SIGQUIT }, { "KILL", SIGKILL }, { "USR1", SIGUSR1 },
	{ "USR2", SIGUSR2 }
};

static int
parse_signal(const char *s)
{
	long long n;
	char err[64];

	if (strncasecmp(s, "SIG", 3) == 0)
		s += 3;
	for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
		if (strcasecmp(s, signals[i].name) == 0)
			return signals[i].sig;
	if (kv_parse_int(s, 1, SIGRTMAX, &n, err, sizeof(err)) == 0)
		return (int)n;
	return -1;
}

static int
stop(const struct options *o)
{
	struct slot s;
	char err[512];
	json_t *rec;
	int dirfd, lk, rc;

	if ((dirfd = open(o->slot_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		kv_die(KV_UNAVAILABLE, "slot dir %s:", o->slot_dir);
	if ((lk = session_lock(dirfd, o->name, 60)) < 0)
		kv_die(KV_UNAVAILABLE, "lock for slot %s:", o->name);
	rc = session_slot_read(dirfd, o->name, &s, NULL, err, sizeof(err));
	if (rc == 0) {
		kv_warn("no slot %s in %s", o->name, o->slot_dir);
		rec = json_pack("{s:s, s:s, s:b, s:s, s:s, s:[]}", "kind", "stop",
		    "name", o->name, "verified", 0, "failed_check", "slot",
		    "reason", "no such slot", "signalled");
		rc = KV_FAIL;
		goto out;
	}
	if (rc < 0) {
		kv_warn("%s", err);
		rec = json_pack("{s:s, s:s, s:b, s:s, s:s, s:[]}", "kind", "stop",
		    "name", o->name, "verified", 0, "failed_check", "slot",
		    "reason", err, "signalled");
		rc = KV_DATAERR;
		goto out;
	}
	rec = json_pack("{s:s, s:s, s:i}", "kind", "stop", "name", o->name,
	    "pid", (json_int_t)s.pid);
	if (rec == NULL)
		kv_die(KV_SOFTWARE, "out of memory");
	rc = session_stop(&s, &o->stop, rec);
	if (json_is_true(json_object_get(rec, "leader_exited")))
		kv_warn("%s: leader %d had already exited; stopped what was "
		    "left of its session", o->name, (int)s.pid);
	if (json_is_true(json_object_get(rec, "leader_exited")) &&
	    json_array_size(json_object_get(rec, "leaked"))) {
		/* the slot's sid and start time still name what is left */
		json_object_set_new(rec, "slot_removed", json_false());
	} else if (json_is_true(json_object_get(rec, "verified"))) {
		if (session_slot_remove(dirfd, o->name) < 0)
			kv_warn("removing slot %s:", o->name);
		json_object_set_new(rec, "slot_removed", json_true());
	} else {
		kv_warn("%s: %s: signalled nothing", o->name,
		    json_string_value(json_object_get(rec, "reason")));
	}
	if (json_array_size(json_object_get(rec, "leaked")))
		kv_warn("%s: %zu processes still running", o->name,
		    json_array_size(json_object_get(rec, "leaked")));
	slot_free(&s);
out:
	if (rec == NULL || jsonl_write(stdout, rec, true) < 0)
		rc = KV_IOERR;
	json_decref(rec);
	close(lk);
	close(dirfd);
	return rc;
}

static noreturn void
usage(int status)
{
	fprintf(status ? stderr : stdout,
	    "usage: session-stop --slot-dir DIR --name NAME "
	    "[--kill-after DURATION]\n"
	    "                    [--signal SIG] [--timeout DURATION]\n");
	if (status == 0)
		exit(kv_fshut(0));
	exit(status);
}

static void
parse(int argc, char **argv, struct options *o)
{
	static const struct option lo[] = {
		{ "slot-dir", required_argument, NULL, 's' },
		{ "name", required_argument, NULL, 'n' },
		{ "signal", required_argument, NULL, 'S' },
		{ "timeout", required_argument, NULL, 't' },
		{ "kill-after", required_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	char err[256];
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 's': o->slot_dir = optarg; break;
		case 'n': o->name = optarg; break;
		case 'S':
			if ((o->stop.sig = parse_signal(optarg)) < 0)
				kv_die(KV_USAGE, "--signal: unknown signal '%s'",
				    optarg);
			break;
		case 't':
			if (kv_parse_duration(optarg, &o->stop.timeout_s, err,
			    sizeof(err)) < 0)
				kv_die(KV_USAGE, "--timeout: %s", err);
			break;
		case 'k':
			if (kv_parse_duration(optarg, &o->stop.kill_after_s, err,
			    sizeof(err)) < 0)
				kv_die(KV_USAGE, "--kill-after: %s", err);
			break;
		case 'h': usage(0);
		case 'V': kv_version();
		default: usage(KV_USAGE);
		}
	}
	if (optind != argc)
		kv_die(KV_USAGE, "unexpected argument '%s'", argv[optind]);
	if (o->slot_dir == NULL || o->name == NULL)
		kv_die(KV_USAGE, "--slot-dir and --name are required");
	if (!proc_slot_name_ok(o->name))
		kv_die(KV_USAGE, "--name: '%s' is not 1-64 of [A-Za-z0-9._-] "
		    "starting with no '.'", o->name);
	if (o->stop.kill_after_s <= 0)
		kv_die(KV_USAGE, "--kill-after must be positive");
}

int
main(int argc, char **argv)
{
	struct options o = { .stop = { .sig = SIGTERM, .timeout_s = 10,
	    .kill_after_s = 5 } };

	kv_setprogname(argv[0]);
	parse(argc, argv, &o);
	return kv_fshut(stop(&o));
}
