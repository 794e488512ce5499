/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <limits.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "session.h"

int
session_lock(int dirfd, const char *name, double timeout_s)
{
	char path[128];
	double end = kv_mono() + timeout_s;
	int fd;

	snprintf(path, sizeof(path), ".%s.lock", name);
	fd = openat(dirfd, path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
	    0644);
	if (fd < 0)
		return -1;
	for (;;) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return fd;
		if (errno != EWOULDBLOCK || kv_mono() > end) {
			int e = errno == EWOULDBLOCK ? ETIMEDOUT : errno;

			close(fd);
			errno = e;
			return -1;
		}
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	}
}

char *
session_read_file(int dirfd, const char *path, size_t max, size_t *len,
    struct stat *st)
{
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	char *buf;
	size_t n = 0;
	ssize_t r;

	if (fd < 0)
		return NULL;
	if (st && fstat(fd, st) < 0) {
		close(fd);
		return NULL;
	}
	if ((buf = malloc(max + 1)) == NULL) {
		close(fd);
		return NULL;
	}
	while (n < max && (r = read(fd, buf + n, max - n)) != 0) {
		if (r < 0) {
			if (errno == EINTR)
				continue;
			free(buf);
			close(fd);
			return NULL;
		}
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

int
session_slot_read(int dirfd, const char *name, struct slot *s, json_t **raw,
    char *err, size_t errlen)
{
	char path[128], *buf;
	json_error_t je;
	struct stat st;
	json_t *o;
	size_t len;
	int rc;

	snprintf(path, sizeof(path), "%s.json", name);
	if ((buf = session_read_file(dirfd, path, 1 << 20, &len, &st)) ==
	    NULL) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "cannot read slot %s: %s", path,
		    strerror(errno));
		return -1;
	}
	/* a slot planted by another user must not steer our signals */
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		snprintf(err, errlen, "slot %s belongs to uid %d, not to us "
		    "(uid %d)", path, (int)st.st_uid, (int)geteuid());
		free(buf);
		return -1;
	}
	o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	free(buf);
	if (o == NULL) {
		snprintf(err, errlen, "slot %s is not JSON: %s", path, je.text);
		return -1;
	}
	rc = slot_from_json(o, s, err, errlen);
	if (rc == 0 && strcmp(s->name, name) != 0) {
		snprintf(err, errlen, "slot %s names another slot", path);
		slot_free(s);
		rc = -1;
	}
	if (rc == 0 && raw)
		*raw = o;
	else
		json_decref(o);
	return rc < 0 ? -1 : 1;
}

int
session_slot_write(int dirfd, const char *name, const json_t *rec)
{
	char tmp[160], path[128], *text;
	size_t len;
	int fd, rc = -1;

	snprintf(path, sizeof(path), "%s.json", name);
	snprintf(tmp, sizeof(tmp), ".%s.json.%d.tmp", name, (int)getpid());
	if ((text = json_dumps(rec, JSON_COMPACT)) == NULL)
		return errno = ENOMEM, -1;
	len = strlen(text);
	text[len] = '\n';	/* overwrite the NUL; written with its length */
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC |
	    O_NOFOLLOW, 0644);
	if (fd >= 0) {
		/* no fsync: after a crash the boot id makes the slot stale */
		if (write(fd, text, len + 1) == (ssize_t)(len + 1) &&
		    close(fd) == 0) {
			fd = -1;
			rc = renameat(dirfd, tmp, dirfd, path);
		}
		if (fd >= 0)
			close(fd);
		if (rc < 0) {
			int e = errno;

			unlinkat(dirfd, tmp, 0);
			errno = e;
		}
	}
	free(text);
	return rc;
}

int
session_slot_remove(int dirfd, const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "%s.json", name);
	if (unlinkat(dirfd, path, 0) < 0 && errno != ENOENT)
		return -1;
	return 0;
}

int
session_cgroup_root(char *buf, size_t len)
{
	FILE *fp = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	int rc = -1;

	if (fp == NULL)
		return -1;
	/* id parent maj:min root mountpoint opts ... - fstype source opts */
	while (rc < 0 && fgets(line, sizeof(line), fp)) {
		char *dash = strstr(line, " - "), mnt[1024], fstype[64];

		if (dash == NULL ||
		    sscanf(dash + 3, "%63s", fstype) != 1 ||
		    strcmp(fstype, "cgroup2") != 0 ||
		    sscanf(line, "%*s %*s %*s %*s %1023s", mnt) != 1)
			continue;
		if (access(mnt, W_OK) == 0 && strlen(mnt) < len) {
			snprintf(buf, len, "%s", mnt);
			rc = 0;
		}
	}
	fclose(fp);
	if (rc < 0)
		errno = ENOENT;
	return rc;
}

char *
session_cgroup_create(const char *name, char *err, size_t errlen)
{
	char root[1024], path[1200], *p;

	if (session_cgroup_root(root, sizeof(root)) < 0) {
		snprintf(err, errlen, "no writable cgroup v2 hierarchy (mount "
		    "one, e.g. at /sys/fs/cgroup, or drop --cgroup)");
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/kvgate-%s.%d", root, name,
	    (int)getpid());
	if (mkdir(path, 0755) < 0) {
		snprintf(err, errlen, "mkdir %s: %s", path, strerror(errno));
		return NULL;
	}
	if ((p = strdup(path)) == NULL) {
		rmdir(path);
		snprintf(err, errlen, "out of memory");
	}
	return p;
}

/* --- starting ----------------------------------------------------------- */

int
session_log_open(int dirfd, const char *name, char *err, size_t errlen)
{
	char path[128];
	struct stat st;
	int fd, fl;

	snprintf(path, sizeof(path), "%s.log", name);
	/* O_NONBLOCK: a FIFO planted there fails (ENXIO) instead of blocking */
	fd = openat(dirfd, path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC |
	    O_NOFOLLOW | O_NOCTTY | O_NONBLOCK, 0644);
	if (fd < 0) {
		snprintf(err, errlen, errno == ELOOP ? "%s is a symbolic link: "
		    "refusing to follow it (remove it, or give --log)" :
		    "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto bad;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s is not a regular file: refusing to "
		    "write to it (remove it, or give --log)", path);
		goto bad;
	}
	if (st.st_uid != geteuid()) {
		snprintf(err, errlen, "%s belongs to uid %d, not to us (uid %d): "
		    "refusing to write to it (remove it, or give --log)", path,
		    (int)st.st_uid, (int)geteuid());
		goto bad;
	}
	if ((fl = fcntl(fd, F_GETFL)) < 0 ||
	    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto bad;
	}
	return fd;
bad:
	close(fd);
	return -1;
}

/* In the child: become the session leader and exec; errno goes to ep. */
static noreturn void
child(const struct spawn *sp, int ep)
{
	char procs[1200];
	sigset_t none;
	int e, fd;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	if (setsid() < 0)
		goto fail;
	if (sp->cgroup) {
		snprintf(procs, sizeof(procs), "%s/cgroup.procs", sp->cgroup);
		if ((fd = open(procs, O_WRONLY | O_CLOEXEC)) < 0 ||
		    write(fd, "0", 1) != 1)
			goto fail;
		close(fd);
	}
	/* the log before chdir: a relative path is the caller's */
	fd = sp->log_fd >= 0 ? sp->log_fd :
	    open(sp->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
		goto fail;
	if (chdir(sp->cwd) < 0)
		goto fail;
	if ((fd = open("/dev/null", O_RDONLY)) < 0 || dup2(fd, 0) < 0)
		goto fail;
	execvp(sp->argv[0], sp->argv);
fail:
	e = errno;
	if (write(ep, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

int
session_spawn(const struct spawn *sp, struct slot *s)
{
	char buf[PATH_MAX];
	struct proc_stat st;
	int ep[2], e = 0, pidfd;
	pid_t pid;
	ssize_t n;

	if (pipe2(ep, O_CLOEXEC) < 0)
		return -1;
	fflush(NULL);
	if ((pid = fork()) < 0) {
		e = errno;
		close(ep[0]);
		close(ep[1]);
		return errno = e, -1;
	}
	if (pid == 0)
		child(sp, ep[1]);
	close(ep[1]);
	/* EOF: execve succeeded (the pipe is close-on-exec) */
	while ((n = read(ep[0], &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(ep[0]);
	if (n > 0) {
		waitpid(pid, NULL, 0);
		return errno = e, -1;
	}
	if ((pidfd = proc_pidfd_open(pid)) < 0 ||
	    proc_stat_read(pid, &st) < 0 || proc_boot_id(s->boot_id) < 0) {
		e = errno;
		if (pidfd >= 0)
			close(pidfd);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return errno = e, -1;
	}
	s->pid = pid;
	s->sid = st.session;
	s->pgid = st.pgrp;
	s->start_ticks = st.start_ticks;
	s->exe = proc_link(pid, "exe", buf, sizeof(buf)) == 0 ? strdup(buf) :
	    NULL;
	kv_rfc3339(kv_unix(), s->started_at);
	return pidfd;
}

/* --- stopping ----------------------------------------------------------- */

struct member {
	pid_t pid;
	int fd;
	bool signalled, killed, escaped;
};

struct stopper {
	const struct slot *s;
	struct member *m;
	size_t n, cap;
	char cgrel[1024];	/* the cgroup's path as /proc/PID/cgroup says it */
	bool has_cg;
};

static struct member *
find(struct stopper *t, pid_t pid)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->m[i].pid == pid)
			return &t->m[i];
	return NULL;
}

/* Is pid (already pinned by a pidfd) in the slot's cgroup? */
static bool
in_cgroup(struct stopper *t, pid_t pid)
{
	char path[64], *buf, *p;
	bool yes = false;

	if (!t->has_cg)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	buf = session_read_file(AT_FDCWD, path, 65536, NULL, NULL);
	if (buf == NULL)
		return false;
	for (p = strtok(buf, "\n"); p; p = strtok(NULL, "\n"))
		if (strncmp(p, "0::", 3) == 0 && strcmp(p + 3, t->cgrel) == 0)
			yes = true;
	free(buf);
	return yes;
}

/*
 * Track pid if it is (verified through its own pidfd) a live member of
 * the session, or of the slot's cgroup.  Returns the member or NULL.
 */
static struct member *
track(struct stopper *t, pid_t pid)
{
	struct proc_stat st;
	struct member *m;
	bool sess, cg;
	int fd;

	if ((m = find(t, pid)) != NULL)
		return m;
	if ((fd = proc_pidfd_open(pid)) < 0)
		return NULL;
	if (proc_stat_read(pid, &st) < 0 || st.state == 'Z' ||
	    st.start_ticks < t->s->start_ticks) {
		close(fd);
		return NULL;
	}
	sess = st.session == t->s->sid;
	cg = !sess && in_cgroup(t, pid);
	if ((!sess && !cg) || proc_pidfd_signal(fd, 0) < 0) {
		close(fd);
		return NULL;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 16;
		struct member *nm = realloc(t->m, cap * sizeof(*nm));

		if (nm == NULL) {
			close(fd);
			return NULL;
		}
		t->m = nm;
		t->cap = cap;
	}
	m = &t->m[t->n++];
	*m = (struct member){ .pid = pid, .fd = fd, .escaped = cg };
	return m;
}

/* pids listed in the slot's cgroup.procs; count or -1 */
static ssize_t
cgroup_members(const struct slot *s, pid_t **out)
{
	char path[1200], *buf, *p, *end;
	pid_t *v = NULL, *nv;
	size_t n = 0;

	*out = NULL;
	snprintf(path, sizeof(path), "%s/cgroup.procs", s->cgroup);
	buf = session_read_file(AT_FDCWD, path, 1 << 20, NULL, NULL);
	if (buf == NULL)
		return -1;
	for (p = buf; *p; p = end) {
		long pid = strtol(p, &end, 10);

		if (end == p)
			break;
		if (pid > 0 && (nv = realloc(v, (n + 1) * sizeof(*v)))) {
			v = nv;
			v[n++] = (pid_t)pid;
		}
	}
	free(buf);
	*out = v;
	return (ssize_t)n;
}

/* Scan the session (and cgroup) for members; track the new ones. */
static void
scan(struct stopper *t)
{
	pid_t *v;
	ssize_t n = proc_session_members(t->s->sid, &v);

	for (ssize_t i = 0; i < n; i++)
		track(t, v[i]);
	free(v);
	if (t->has_cg && (n = cgroup_members(t->s, &v)) > 0) {
		for (ssize_t i = 0; i < n; i++)
			track(t, v[i]);
		free(v);
	}
}

static bool
all_exited(struct stopper *t)
{
	for (size_t i = 0; i < t->n; i++)
		if (!proc_pidfd_exited(t->m[i].fd))
			return false;
	return true;
}

/* Sleep until one live member exits or ms pass. */
static void
wait_some(struct stopper *t, int ms)
{
	struct pollfd *p = calloc(t->n ? t->n : 1, sizeof(*p));
	nfds_t n = 0;

	if (p == NULL) {
		nanosleep(&(struct timespec){ 0, ms * 1000000L }, NULL);
		return;
	}
	for (size_t i = 0; i < t->n; i++)
		if (!proc_pidfd_exited(t->m[i].fd))
			p[n++] = (struct pollfd){ .fd = t->m[i].fd, .events = POLLIN };
	if (n > 0)
		poll(p, n, ms);
	free(p);
}

/*
 * Signal every live tracked member with sig until all exit or the end.
 * Done only when a scan made after every member exited finds no new one
 * (a member may fork just before it dies).
 */
static bool
phase(struct stopper *t, int sig, double seconds)
{
	double end = kv_mono() + seconds;

	for (;;) {
		size_t before = t->n;
		bool gone = all_exited(t);

		scan(t);
		if (gone && t->n == before)
			return true;
		for (size_t i = 0; i < t->n; i++) {
			struct member *m = &t->m[i];
			bool *done = sig == SIGKILL ? &m->killed : &m->signalled;

			if (*done || proc_pidfd_exited(m->fd))
				continue;
			if (proc_pidfd_signal(m->fd, sig) == 0) {
				*done = true;
				/* a stopped process acts on TERM only when
				 * continued (as systemd does) */
				if (sig != SIGKILL && sig != SIGCONT)
					proc_pidfd_signal(m->fd, SIGCONT);
			}
		}
		if (kv_mono() >= end)
			return false;
		/* woken by an exit; rescans also catch late forks every 20 ms */
		wait_some(t, (int)fmin(20.0, 1000.0 * (end - kv_mono()) + 1));
	}
}

static int
fail_check(json_t *rec, const char *check, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
fail_check(json_t *rec, const char *check, const char *fmt, ...)
{
	char msg[2600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_object_set_new(rec, "verified", json_false());
	json_object_set_new(rec, "failed_check", json_string(check));
	json_object_set_new(rec, "reason", json_string(msg));
	json_object_set_new(rec, "signalled", json_array());
	return KV_FAIL;
}

/*
 * The verification half of session_stop: the leader's pidfd, or -1 (rec
 * says why).  A leader that has exited (gone, or a zombie that is not
 * our child) on this boot leaves *exited true, -1 and "verified":true:
 * its session can still be stopped, since a sid cannot be reused while
 * any member holds it; a PID now held by another process is refused.
 */
static int
verify(const struct slot *s, bool own_child, json_t *rec, bool *exited)
{
	struct proc_stat st;
	char boot[37], cwd[2048];
	int fd;

	*exited = false;
	if (proc_boot_id(boot) < 0) {
		fail_check(rec, "boot_id", "cannot read the boot id");
		return -1;
	}
	if (strcmp(boot, s->boot_id) != 0) {
		fail_check(rec, "boot_id", "boot id is %s, slot says %s", boot,
		    s->boot_id);
		return -1;
	}
	if ((fd = proc_pidfd_open(s->pid)) < 0 && errno != ESRCH) {
		fail_check(rec, "alive", "pidfd_open %d: %s", (int)s->pid,
		    strerror(errno));
		return -1;
	}
	if (fd < 0 || proc_stat_read(s->pid, &st) < 0)
		goto exited;
	if (st.start_ticks != s->start_ticks) {
		fail_check(rec, "start_time", "pid %d started at tick %llu, slot "
		    "says %llu: another process", (int)s->pid,
		    (unsigned long long)st.start_ticks,
		    (unsigned long long)s->start_ticks);
		goto bad;
	}
	if (st.state == 'Z' && !own_child)
		goto exited;
	if (st.session != st.pid || st.session != s->sid) {
		fail_check(rec, "session", "pid %d is in session %d, slot says "
		    "leader of session %d", (int)s->pid, (int)st.session,
		    (int)s->sid);
		goto bad;
	}
	if (st.state == 'Z')
		goto done;	/* our own exited child: no cwd to read */
	if (proc_link(s->pid, "cwd", cwd, sizeof(cwd)) < 0) {
		fail_check(rec, "cwd", "cannot read the cwd of pid %d: %s",
		    (int)s->pid, strerror(errno));
		goto bad;
	}
	if (strcmp(cwd, s->cwd) != 0) {
		fail_check(rec, "cwd", "pid %d runs in %s, slot says %s",
		    (int)s->pid, cwd, s->cwd);
		goto bad;
	}
	if (proc_pidfd_signal(fd, 0) < 0) {
		fail_check(rec, "alive", "pid %d exited during the checks",
		    (int)s->pid);
		goto bad;
	}
done:
	json_object_set_new(rec, "verified", json_true());
	return fd;
exited:
	/* no leader to check: its session's members are found by scan() */
	if (fd >= 0)
		close(fd);
	*exited = true;
	json_object_set_new(rec, "verified", json_true());
	json_object_set_new(rec, "leader_exited", json_true());
	return -1;
bad:
	if (fd >= 0)
		close(fd);
	return -1;
}

static json_t *
pids(const struct stopper *t, int which)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < t->n; i++) {
		const struct member *m = &t->m[i];
		bool take = which == 0 ? m->signalled || m->killed :
		    which == 1 ? m->killed : which == 2 ? m->escaped :
		    !proc_pidfd_exited(m->fd);

		if (take)
			json_array_append_new(a, json_integer(m->pid));
	}
	return a;
}

int
session_stop(const struct slot *s, const struct stop_opts *o, json_t *rec)
{
	struct stopper t = { .s = s };
	double t0 = kv_mono();
	char root[1024];
	bool escalated = false;
	bool exited;
	json_t *leaked;
	int fd, status;

	if ((fd = verify(s, o->own_child, rec, &exited)) < 0 && !exited)
		return KV_FAIL;
	if (s->cgroup && session_cgroup_root(root, sizeof(root)) == 0 &&
	    strncmp(s->cgroup, root, strlen(root)) == 0) {
		snprintf(t.cgrel, sizeof(t.cgrel), "%s",
		    s->cgroup + strlen(root));
		t.has_cg = true;
	}
	t.m = calloc(16, sizeof(*t.m));
	t.cap = t.m ? 16 : 0;
	if (t.m && fd >= 0) {
		t.m[0] = (struct member){ .pid = s->pid, .fd = fd };
		t.n = 1;
	} else if (fd >= 0) {
		close(fd);
	}
	if (!phase(&t, o->sig, o->timeout_s)) {
		escalated = true;
		if (!phase(&t, SIGKILL, o->kill_after_s))
			scan(&t);
	}
	leaked = pids(&t, 3);
	json_object_set_new(rec, "signalled", pids(&t, 0));
	json_object_set_new(rec, "escalated", json_boolean(escalated));
	json_object_set_new(rec, "killed", pids(&t, 1));
	if (s->cgroup) {
		json_object_set_new(rec, "escaped", pids(&t, 2));
		if (json_array_size(leaked) == 0)
			json_object_set_new(rec, "cgroup_removed",
			    json_boolean(rmdir(s->cgroup) == 0 ||
			    errno == ENOENT));
	}
	status = json_array_size(leaked) ? KV_FAIL : KV_OK;
	json_object_set_new(rec, "leaked", leaked);
	json_object_set_new(rec, "elapsed_s", json_real(kv_mono() - t0));
	for (size_t i = 0; i < t.n; i++)
		close(t.m[i].fd);
	free(t.m);
	return status;
}
