/* SPDX-License-Identifier: MIT */
/* session-run: start a service in its own session, recorded in a PID slot. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "clock.h"
#include "err.h"
#include "jsonl.h"
#include "net.h"
#include "proc.h"
#include "session.h"
#include "units.h"

struct options {
	const char *slot_dir, *name, *cwd, *log;
	const char *ready_tcp, *ready_http, *ready_cmd;
	double ready_timeout_s;
	bool cgroup;
	char **argv;
};

static noreturn void usage(int status);

/*
 * libcurl, loaded only for --ready-http: linked in, its dependencies
 * would add some 8 ms to every start.
 */
static struct {
	CURLcode (*global_init)(long);
	CURL *(*init)(void);
	CURLcode (*setopt)(CURL *, CURLoption, ...);
	CURLcode (*perform)(CURL *);
	CURLcode (*getinfo)(CURL *, CURLINFO, ...);
	void (*cleanup)(CURL *);
} cu;

static void
load_curl(void)
{
	static const char *const names[] = { "curl_global_init",
	    "curl_easy_init", "curl_easy_setopt", "curl_easy_perform",
	    "curl_easy_getinfo", "curl_easy_cleanup" };
	void **slot[] = { (void **)&cu.global_init, (void **)&cu.init,
	    (void **)&cu.setopt, (void **)&cu.perform, (void **)&cu.getinfo,
	    (void **)&cu.cleanup };
	void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);

	if (h == NULL)
		kv_die(KV_UNAVAILABLE, "--ready-http: %s (is libcurl4 "
		    "installed?)", dlerror());
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if ((*slot[i] = dlsym(h, names[i])) == NULL)
			kv_die(KV_UNAVAILABLE, "--ready-http: %s", dlerror());
	if (cu.global_init(CURL_GLOBAL_DEFAULT) != 0)
		kv_die(KV_SOFTWARE, "curl_global_init failed");
}

static void
emit(json_t *rec)
{
	if (rec == NULL || jsonl_write(stdout, rec, true) < 0)
		kv_die(KV_IOERR, "write error on stdout:");
	json_decref(rec);
}

/* Split HOST:PORT (the last ':'; [v6]:port too). */
static int
split_hostport(const char *s, char *host, size_t hlen, char *port,
    size_t plen)
{
	const char *colon = strrchr(s, ':');
	size_t n;

	if (colon == NULL || colon == s || colon[1] == '\0')
		return -1;
	n = (size_t)(colon - s);
	if (s[0] == '[' && n >= 2 && s[n - 1] == ']')
		s++, n -= 2;
	if (n >= hlen || strlen(colon + 1) >= plen)
		return -1;
	memcpy(host, s, n);
	host[n] = '\0';
	strcpy(port, colon + 1);
	return 0;
}

static size_t
discard(char *p, size_t size, size_t n, void *ctx)
{
	return size * n;
}

/* One readiness probe; true when the service answers. */
static bool
probe(const struct options *o)
{
	char host[256], port[32], err[256];

	if (o->ready_tcp) {
		int fd;

		split_hostport(o->ready_tcp, host, sizeof(host), port,
		    sizeof(port));
		if ((fd = kv_connect(host, port, 0.5, err, sizeof(err))) < 0)
			return false;
		close(fd);
		return true;
	}
	if (o->ready_http) {
		CURL *c = cu.init();
		long code = 0;
		bool ok;

		if (c == NULL)
			return false;
		cu.setopt(c, CURLOPT_URL, o->ready_http);
		cu.setopt(c, CURLOPT_TIMEOUT_MS, 1000L);
		cu.setopt(c, CURLOPT_NOSIGNAL, 1L);
		cu.setopt(c, CURLOPT_WRITEFUNCTION, discard);
		ok = cu.perform(c) == CURLE_OK &&
		    cu.getinfo(c, CURLINFO_RESPONSE_CODE, &code) ==
		    CURLE_OK && code >= 200 && code < 300;
		cu.cleanup(c);
		return ok;
	}
	if (o->ready_cmd) {
		int st;
		pid_t p = fork();

		if (p == 0) {
			int nul = open("/dev/null", O_RDWR);

			dup2(nul, 0);
			dup2(nul, 1);
			execl("/bin/sh", "sh", "-c", o->ready_cmd, (char *)NULL);
			_exit(127);
		}
		if (p < 0 || waitpid(p, &st, 0) != p)
			return false;
		return WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	return true;
}

/* Wait for readiness; NULL when ready, else why not. */
static const char *
wait_ready(const struct options *o, int pidfd)
{
	double end = kv_mono() + o->ready_timeout_s;

	for (;;) {
		if (proc_pidfd_exited(pidfd))
			return "the service exited before it became ready";
		if (probe(o))
			return NULL;
		if (kv_mono() >= end)
			return "readiness timeout";
		poll(&(struct pollfd){ .fd = pidfd, .events = POLLIN }, 1, 100);
	}
}

/* In the child: become the session leader and exec; report errno on ep. */
static noreturn void
child(const struct options *o, const char *cgprocs, int ep)
{
	sigset_t none;
	int e, fd;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);
	if (setsid() < 0)
		goto fail;
	if (cgprocs) {
		if ((fd = open(cgprocs, O_WRONLY | O_CLOEXEC)) < 0 ||
		    write(fd, "0", 1) != 1)
			goto fail;
		close(fd);
	}
	/* the log first: a relative path is relative to our cwd */
	{
		fd = open(o->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
		    0644);
		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			goto fail;
	}
	if (chdir(o->cwd) < 0)
		goto fail;
	if ((fd = open("/dev/null", O_RDONLY)) < 0 || dup2(fd, 0) < 0)
		goto fail;
	execvp(o->argv[0], o->argv);
fail:
	e = errno;
	if (write(ep, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

/* Fork and exec the service; fill s.  Returns the child's pidfd or dies. */
static int
spawn(const struct options *o, struct slot *s, const char *cgdir)
{
	char cgprocs[1200], buf[PATH_MAX], boot[37];
	struct proc_stat st;
	int ep[2], e = 0, pidfd;
	pid_t pid;
	ssize_t n;

	if (cgdir)
		snprintf(cgprocs, sizeof(cgprocs), "%s/cgroup.procs", cgdir);
	if (pipe2(ep, O_CLOEXEC) < 0)
		kv_die(KV_SOFTWARE, "pipe:");
	fflush(NULL);
	if ((pid = fork()) < 0)
		kv_die(KV_UNAVAILABLE, "fork:");
	if (pid == 0)
		child(o, cgdir ? cgprocs : NULL, ep[1]);
	close(ep[1]);
	while ((n = read(ep[0], &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(ep[0]);
	if (n > 0) {
		waitpid(pid, NULL, 0);
		if (cgdir)
			rmdir(cgdir);
		errno = e;
		return -1;
	}
	if ((pidfd = proc_pidfd_open(pid)) < 0) {
		e = errno;
		kill(pid, SIGKILL);	/* our unreaped child: its PID is ours */
		waitpid(pid, NULL, 0);
		errno = e;
		kv_die(KV_UNAVAILABLE, "pidfd_open %d (Linux 5.3 or later "
		    "needed):", (int)pid);
	}
	if (proc_stat_read(pid, &st) < 0 || proc_boot_id(boot) < 0)
		kv_die(KV_SOFTWARE, "reading /proc/%d:", (int)pid);
	s->pid = pid;
	s->sid = st.session;
	s->pgid = st.pgrp;
	s->start_ticks = st.start_ticks;
	memcpy(s->boot_id, boot, sizeof(boot));
	s->exe = proc_link(pid, "exe", buf, sizeof(buf)) == 0 ? strdup(buf) :
	    NULL;
	kv_rfc3339(kv_unix(), s->started_at);
	return pidfd;
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

static char *
make_cgroup(const char *name)
{
	char root[1024], path[1200];

	if (session_cgroup_root(root, sizeof(root)) < 0)
		kv_die(KV_UNAVAILABLE, "--cgroup: no writable cgroup v2 hierarchy "
		    "(mount one, e.g. at /sys/fs/cgroup, or drop --cgroup)");
	snprintf(path, sizeof(path), "%s/kvgate-%s.%d", root, name,
	    (int)getpid());
	if (mkdir(path, 0755) < 0)
		kv_die(KV_UNAVAILABLE, "--cgroup: mkdir %s:", path);
	return strdup(path);
}

static int
run(const struct options *o, struct slot *s)
{
	struct stop_opts so = { SIGTERM, 10, 5, true };
	const char *why;
	json_t *rec;
	int dirfd, lk, pidfd, rc;

	if ((dirfd = open(o->slot_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		kv_die(KV_UNAVAILABLE, "slot dir %s:", o->slot_dir);
	if ((lk = session_lock(dirfd, o->name, 60)) < 0)
		kv_die(KV_UNAVAILABLE, "lock for slot %s:", o->name);
	if ((rc = check_slot(dirfd, o->name)) != 0)
		return rc;
	s->cgroup = o->cgroup ? make_cgroup(o->name) : NULL;
	if ((pidfd = spawn(o, s, s->cgroup)) < 0) {
		kv_warn("cannot start %s:", o->argv[0]);
		return KV_UNAVAILABLE;
	}
	rec = slot_to_json(s);
	if (rec == NULL || session_slot_write(dirfd, o->name, rec) < 0)
		kv_die(KV_IOERR, "writing slot %s/%s.json:", o->slot_dir,
		    o->name);
	close(lk);
	if ((why = wait_ready(o, pidfd)) == NULL) {
		json_object_set_new(rec, "ready", json_true());
		emit(rec);
		close(pidfd);
		return KV_OK;
	}
	json_decref(rec);
	kv_warn("%s not ready: %s; stopping it", o->name, why);
	rec = json_pack("{s:s, s:s, s:s}", "kind", "not_ready", "name",
	    o->name, "reason", why);
	lk = session_lock(dirfd, o->name, 60);
	rc = session_stop(s, &so, rec);
	json_object_set(rec, "stop_reason", json_object_get(rec, "reason"));
	json_object_set_new(rec, "reason", json_string(why));
	if (json_is_null(json_object_get(rec, "stop_reason")))
		json_object_del(rec, "stop_reason");
	if (rc == KV_OK || json_is_false(json_object_get(rec, "verified")))
		session_slot_remove(dirfd, o->name);
	waitpid(s->pid, NULL, WNOHANG);
	emit(rec);
	close(pidfd);
	close(lk);
	return KV_FAIL;
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
		case 't': o->ready_tcp = optarg; break;
		case 'u': o->ready_http = optarg; break;
		case 'c': o->ready_cmd = optarg; break;
		case 'g': o->cgroup = true; break;
		case 'T':
			if (kv_parse_duration(optarg, &o->ready_timeout_s, err,
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
	nready = !!o->ready_tcp + !!o->ready_http + !!o->ready_cmd;
	if (nready > 1)
		kv_die(KV_USAGE, "--ready-tcp, --ready-http and --ready-cmd "
		    "exclude each other");
	if (o->ready_tcp && split_hostport(o->ready_tcp, h, sizeof(h), p,
	    sizeof(p)) < 0)
		kv_die(KV_USAGE, "--ready-tcp: '%s' is not HOST:PORT",
		    o->ready_tcp);
	if (o->ready_timeout_s <= 0)
		kv_die(KV_USAGE, "--ready-timeout must be positive");
}

int
main(int argc, char **argv)
{
	struct options o = { .ready_timeout_s = 60 };
	struct slot s = { 0 };
	char cwd[PATH_MAX], logbuf[PATH_MAX];
	int rc;

	kv_setprogname(argv[0]);
	parse(argc, argv, &o);
	if (realpath(o.cwd ? o.cwd : ".", cwd) == NULL)
		kv_die(KV_UNAVAILABLE, "--cwd %s:", o.cwd ? o.cwd : ".");
	o.cwd = cwd;
	if (o.ready_http)
		load_curl();
	snprintf(s.name, sizeof(s.name), "%s", o.name);
	s.cwd = strdup(cwd);
	s.argv = json_array();
	for (char **a = o.argv; *a; a++)
		if (json_array_append_new(s.argv, json_string(*a)) < 0)
			kv_die(KV_USAGE, "COMMAND argument is not valid UTF-8");
	if (o.log == NULL) {
		snprintf(logbuf, sizeof(logbuf), "%s/%s.log", o.slot_dir, o.name);
		o.log = logbuf;
	}
	rc = run(&o, &s);
	slot_free(&s);
	return kv_fshut(rc);
}
