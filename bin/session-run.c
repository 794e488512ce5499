/* SPDX-License-Identifier: MIT */
/* session-run: start a service in its own session, recorded in a PID slot. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "err.h"
#include "jsonl.h"
#include "proc.h"
#include "ready.h"
#include "session.h"
#include "units.h"

struct options {
	const char *slot_dir, *name, *cwd, *log;
	struct ready ready;
	bool cgroup;
	char **argv;
};

static noreturn void usage(int status);

static void
emit(json_t *rec)
{
	if (rec == NULL || jsonl_write(stdout, rec, true) < 0)
		kv_die(KV_IOERR, "write error on stdout:");
	json_decref(rec);
}

/* A record saying why the slot is occupied or was replaced. */
static json_t *
slot_note(const char *kind, const char *name, const char *what,
    const char *reason, json_t *old)
{
	json_t *r = json_pack("{s:s, s:s, s:s, s:s}", "kind", kind, "name", name,
	    kind[0] == 'w' ? "warning" : "error", what, "reason", reason);

	if (r && old) {
		json_object_del(old, "kind");
		json_object_set(r, kind[0] == 'w' ? "stale" : "holder", old);
	}
	return r;
}

/*
 * Under the lock: refuse a live slot, note a stale one.  Returns 0 to go
 * on, or the exit status.
 */
static int
check_slot(int dirfd, const char *name)
{
	struct slot old;
	char err[512];
	json_t *raw = NULL;
	int rc = session_slot_read(dirfd, name, &old, &raw, err, sizeof(err)),
	    fd;
	enum slot_check c;

	if (rc < 0) {
		kv_warn("%s (check it and remove it by hand)", err);
		emit(slot_note("refused", name, "slot unreadable", err, NULL));
		return KV_DATAERR;
	}
	if (rc == 0)
		return 0;
	c = slot_identify(&old, &fd);
	if (c == SLOT_ERROR)
		kv_die(KV_UNAVAILABLE, "slot %s: cannot check pid %d: "
		    "pidfd_open:", name, (int)old.pid);
	if (c == SLOT_MATCH) {
		close(fd);
		kv_warn("slot %s is held by pid %d", name, (int)old.pid);
		emit(slot_note("refused", name, "slot occupied",
		    "a live process matching the slot holds it", raw));
		slot_free(&old);
		json_decref(raw);
		return KV_FAIL;
	}
	emit(slot_note("warning", name, "stale slot replaced",
	    slot_check_name(c), raw));
	slot_free(&old);
	json_decref(raw);
	return 0;
}

/*
 * Stop our own service the safe way (session_stop, TERM then KILL) after
 * it failed; the record says why.  The slot goes unless a process leaked.
 */
static void
abandon(int dirfd, const char *name, const struct slot *s, const char *why)
{
	struct stop_opts so = { .sig = SIGTERM, .timeout_s = 10,
	    .kill_after_s = 5, .own_child = true };
	json_t *rec = json_pack("{s:s, s:s}", "kind", "not_ready", "name",
	    name);
	int lk = session_lock(dirfd, name, 60);

	if (rec == NULL)
		kv_die(KV_SOFTWARE, "out of memory");
	kv_warn("%s not ready: %s; stopping it", name, why);
	if (session_stop(s, &so, rec) == KV_OK)
		session_slot_remove(dirfd, name);
	json_object_set(rec, "stop_reason", json_object_get(rec, "reason"));
	json_object_set_new(rec, "reason", json_string(why));
	waitpid(s->pid, NULL, WNOHANG);	/* ours: reap it */
	emit(rec);
	if (lk >= 0)
		close(lk);
}

static int
run(const struct options *o, struct slot *s)
{
	struct spawn sp = { .argv = o->argv, .cwd = o->cwd, .log = o->log,
	    .log_fd = -1 };
	char err[512];
	const char *why;
	json_t *rec;
	int dirfd, lk, pidfd, rc;

	if ((dirfd = open(o->slot_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		kv_die(KV_UNAVAILABLE, "slot dir %s:", o->slot_dir);
	if ((lk = session_lock(dirfd, o->name, 60)) < 0)
		kv_die(KV_UNAVAILABLE, "lock for slot %s:", o->name);
	if ((rc = check_slot(dirfd, o->name)) != 0)
		return rc;
	if (o->log == NULL &&
	    (sp.log_fd = session_log_open(dirfd, o->name, err,
	    sizeof(err))) < 0) {
		kv_warn("%s/%s", o->slot_dir, err);
		emit(slot_note("refused", o->name, "log unsafe", err, NULL));
		return KV_UNAVAILABLE;
	}
	if (o->cgroup && (s->cgroup = session_cgroup_create(o->name, err,
	    sizeof(err))) == NULL)
		kv_die(KV_UNAVAILABLE, "--cgroup: %s", err);
	sp.cgroup = s->cgroup;
	pidfd = session_spawn(&sp, s);
	if (sp.log_fd >= 0)
		close(sp.log_fd);
	if (pidfd < 0) {
		kv_warn("cannot start %s:", o->argv[0]);
		if (s->cgroup)
			rmdir(s->cgroup);
		return KV_UNAVAILABLE;
	}
	rec = slot_to_json(s);
	if (rec == NULL || session_slot_write(dirfd, o->name, rec) < 0) {
		kv_warn("writing slot %s/%s.json:", o->slot_dir, o->name);
		close(lk);
		abandon(dirfd, o->name, s, "the slot could not be written");
		return KV_IOERR;
	}
	close(lk);
	if ((why = ready_wait(&o->ready, pidfd)) != NULL) {
		json_decref(rec);
		abandon(dirfd, o->name, s, why);
		return KV_FAIL;
	}
	json_object_set_new(rec, "ready", json_true());
	emit(rec);
	close(pidfd);
	close(dirfd);
	return KV_OK;
}

static noreturn void
usage(int status)
{
	fprintf(status ? stderr : stdout,
	    "usage: session-run --slot-dir DIR --name NAME [--cgroup] "
	    "[--cwd DIR] [--log FILE]\n"
	    "                   [--ready-cmd CMD | --ready-http URL | "
	    "--ready-tcp HOST:PORT]\n"
	    "                   [--ready-timeout DURATION] -- COMMAND "
	    "[ARG ...]\n");
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
		{ "cwd", required_argument, NULL, 'C' },
		{ "log", required_argument, NULL, 'l' },
		{ "ready-tcp", required_argument, NULL, 't' },
		{ "ready-http", required_argument, NULL, 'u' },
		{ "ready-cmd", required_argument, NULL, 'c' },
		{ "ready-timeout", required_argument, NULL, 'T' },
		{ "cgroup", no_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	char err[256], h[256], p[32];
	int c, nready;

	while ((c = getopt_long(argc, argv, "+", lo, NULL)) != -1) {
		switch (c) {
		case 's': o->slot_dir = optarg; break;
		case 'n': o->name = optarg; break;
		case 'C': o->cwd = optarg; break;
		case 'l': o->log = optarg; break;
		case 't': o->ready.tcp = optarg; break;
		case 'u': o->ready.http = optarg; break;
		case 'c': o->ready.cmd = optarg; break;
		case 'g': o->cgroup = true; break;
		case 'T':
			if (kv_parse_duration(optarg, &o->ready.timeout_s, err,
			    sizeof(err)) < 0)
				kv_die(KV_USAGE, "--ready-timeout: %s", err);
			break;
		case 'h': usage(0);
		case 'V': kv_version();
		default: usage(KV_USAGE);
		}
	}
	o->argv = argv + optind;
	if (o->slot_dir == NULL || o->name == NULL)
		kv_die(KV_USAGE, "--slot-dir and --name are required");
	if (!proc_slot_name_ok(o->name))
		kv_die(KV_USAGE, "--name: '%s' is not 1-64 of [A-Za-z0-9._-] "
		    "starting with no '.'", o->name);
	if (o->argv[0] == NULL)
		kv_die(KV_USAGE, "no COMMAND after --");
	nready = !!o->ready.tcp + !!o->ready.http + !!o->ready.cmd;
	if (nready > 1)
		kv_die(KV_USAGE, "--ready-tcp, --ready-http and --ready-cmd "
		    "exclude each other");
	if (o->ready.tcp && ready_split_hostport(o->ready.tcp, h, sizeof(h), p,
	    sizeof(p)) < 0)
		kv_die(KV_USAGE, "--ready-tcp: '%s' is not HOST:PORT",
		    o->ready.tcp);
	if (o->ready.timeout_s <= 0)
		kv_die(KV_USAGE, "--ready-timeout must be positive");
}

int
main(int argc, char **argv)
{
	struct options o = { .ready = { .timeout_s = 60 } };
	struct slot s = { 0 };
	char cwd[PATH_MAX], err[512];
	int rc;

	kv_setprogname(argv[0]);
	parse(argc, argv, &o);
	if (realpath(o.cwd ? o.cwd : ".", cwd) == NULL)
		kv_die(KV_UNAVAILABLE, "--cwd %s:", o.cwd ? o.cwd : ".");
	o.cwd = cwd;
	if (ready_init(&o.ready, err, sizeof(err)) < 0)
		kv_die(KV_UNAVAILABLE, "--ready-http: %s", err);
	snprintf(s.name, sizeof(s.name), "%s", o.name);
	s.cwd = strdup(cwd);
	s.argv = json_array();
	for (char **a = o.argv; *a; a++)
		if (json_array_append_new(s.argv, json_string(*a)) < 0)
			kv_die(KV_USAGE, "COMMAND argument is not valid UTF-8");
	rc = run(&o, &s);
	slot_free(&s);
	return kv_fshut(rc);
}
