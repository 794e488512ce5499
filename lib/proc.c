/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "proc.h"

int
proc_stat_parse(const char *buf, size_t len, struct proc_stat *st,
    char *err, size_t errlen)
{
	char tmp[1024], *p, *end, *field[24];
	const char *rp = NULL;
	int n = 0;
	long long pid;

	if (len == 0 || len >= sizeof(tmp)) {
		snprintf(err, errlen, "stat line empty or too long");
		return -1;
	}
	memcpy(tmp, buf, len);
	tmp[len] = '\0';
	if (strlen(tmp) != len) {
		snprintf(err, errlen, "stat line holds a NUL");
		return -1;
	}
	for (size_t i = 0; i < len; i++)
		if (tmp[i] == ')')
			rp = tmp + i;
	errno = 0;
	pid = strtoll(tmp, &end, 10);
	if (rp == NULL || end == tmp || errno || pid <= 0 || pid > INT32_MAX ||
	    strncmp(end, " (", 2) != 0 || end + 2 > rp) {
		snprintf(err, errlen, "stat line does not start 'PID (comm)'");
		return -1;
	}
	/* fields 3.. follow ") " */
	for (p = (char *)rp + 1; n < 20; ) {
		while (*p == ' ')
			p++;
		if (*p == '\0' || *p == '\n')
			break;
		field[n++] = p;
		while (*p && *p != ' ' && *p != '\n')
			p++;
		if (*p)
			*p++ = '\0';
	}
	if (n < 20) {
		snprintf(err, errlen, "stat line has %d fields after comm, need 20",
		    n);
		return -1;
	}
	if (strlen(field[0]) != 1 || !isalpha((unsigned char)field[0][0])) {
		snprintf(err, errlen, "bad state field");
		return -1;
	}
	long long v[4];
	int idx[4] = { 1, 2, 3, 19 };	/* ppid pgrp session starttime */
	for (int i = 0; i < 4; i++) {
		errno = 0;
		v[i] = strtoll(field[idx[i]], &end, 10);
		if (errno || *end || end == field[idx[i]] || v[i] < 0 ||
		    (i < 3 && v[i] > INT32_MAX)) {
			snprintf(err, errlen, "bad numeric field %d", idx[i] + 3);
			return -1;
		}
	}
	st->pid = (pid_t)pid;
	st->state = field[0][0];
	st->ppid = (pid_t)v[0];
	st->pgrp = (pid_t)v[1];
	st->session = (pid_t)v[2];
	st->start_ticks = (uint64_t)v[3];
	return 0;
}

int
proc_stat_read(pid_t pid, struct proc_stat *st)
{
	char path[64], buf[1024], err[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0) {
		errno = n == 0 ? ENOENT : errno;
		return -1;
	}
	if (proc_stat_parse(buf, (size_t)n, st, err, sizeof(err)) < 0) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

int
proc_boot_id(char id[37])
{
	char buf[64];
	ssize_t n;
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 36)
		return errno = EINVAL, -1;
	memcpy(id, buf, 36);
	id[36] = '\0';
	return 0;
}

int
proc_link(pid_t pid, const char *what, char *buf, size_t len)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
	if ((n = readlink(path, buf, len - 1)) < 0)
		return -1;
	if ((size_t)n >= len - 1)
		return errno = ENAMETOOLONG, -1;
	buf[n] = '\0';
	return 0;
}

int
proc_pidfd_open(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

int
proc_pidfd_signal(int pidfd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

bool
proc_pidfd_exited(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	return poll(&p, 1, 0) > 0;
}

ssize_t
proc_session_members(pid_t sid, pid_t **out)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	struct proc_stat st;
	pid_t *v = NULL, *nv;
	size_t n = 0, cap = 0;

	*out = NULL;
	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		char *end;
		long p = strtol(e->d_name, &end, 10);

		if (*end || p <= 0 || proc_stat_read((pid_t)p, &st) < 0)
			continue;
		if (st.session != sid || st.state == 'Z' || st.state == 'X')
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			if ((nv = realloc(v, cap * sizeof(*v))) == NULL) {
				free(v);
				closedir(d);
				return -1;
			}
			v = nv;
		}
		v[n++] = (pid_t)p;
	}
	closedir(d);
	*out = v;
	return (ssize_t)n;
}

bool
proc_slot_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 64 || name[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("._-", name[i]))
			return false;
	return true;
}

static int
get_pid(const json_t *o, const char *key, pid_t *out, char *err,
    size_t errlen)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_integer(v) || json_integer_value(v) <= 0 ||
	    json_integer_value(v) > INT32_MAX) {
		snprintf(err, errlen, "slot field '%s' missing or not a PID", key);
		return -1;
	}
	*out = (pid_t)json_integer_value(v);
	return 0;
}

static int
get_str(const json_t *o, const char *key, bool need, char **out, char *err,
    size_t errlen)
{
	json_t *v = json_object_get(o, key);

	*out = NULL;
	if (v == NULL && !need)
		return 0;
	if (!json_is_string(v) || json_string_length(v) == 0 ||
	    strlen(json_string_value(v)) != json_string_length(v)) {
		snprintf(err, errlen, "slot field '%s' missing or not a string",
		    key);
		return -1;
	}
	if ((*out = strdup(json_string_value(v))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

int
slot_from_json(const json_t *o, struct slot *s, char *err, size_t errlen)
{
	json_t *v;
	char *name = NULL, *boot = NULL, *at = NULL;
	int rc = -1;

	memset(s, 0, sizeof(*s));
	if (!json_is_object(o)) {
		snprintf(err, errlen, "slot is not a JSON object");
		return -1;
	}
	if (get_str(o, "name", true, &name, err, errlen) < 0 ||
	    get_pid(o, "pid", &s->pid, err, errlen) < 0 ||
	    get_pid(o, "sid", &s->sid, err, errlen) < 0 ||
	    get_pid(o, "pgid", &s->pgid, err, errlen) < 0 ||
	    get_str(o, "boot_id", true, &boot, err, errlen) < 0 ||
	    get_str(o, "cwd", true, &s->cwd, err, errlen) < 0 ||
	    get_str(o, "exe", false, &s->exe, err, errlen) < 0 ||
	    get_str(o, "cgroup", false, &s->cgroup, err, errlen) < 0 ||
	    get_str(o, "started_at", false, &at, err, errlen) < 0)
		goto out;
	if (!proc_slot_name_ok(name)) {
		snprintf(err, errlen, "slot field 'name' is not a valid name");
		goto out;
	}
	if (strlen(boot) != 36) {
		snprintf(err, errlen, "slot field 'boot_id' is not a boot id");
		goto out;
	}
	v = json_object_get(o, "start_time_ticks");
	if (!json_is_integer(v) || json_integer_value(v) < 0) {
		snprintf(err, errlen, "slot field 'start_time_ticks' missing or "
		    "not a non-negative integer");
		goto out;
	}
	s->start_ticks = (uint64_t)json_integer_value(v);
	if (s->cwd[0] != '/') {
		snprintf(err, errlen, "slot field 'cwd' is not an absolute path");
		goto out;
	}
	v = json_object_get(o, "argv");
	if (v != NULL && !json_is_array(v)) {
		snprintf(err, errlen, "slot field 'argv' is not an array");
		goto out;
	}
	s->argv = v ? json_incref(v) : json_array();
	snprintf(s->name, sizeof(s->name), "%s", name);
	snprintf(s->boot_id, sizeof(s->boot_id), "%s", boot);
	snprintf(s->started_at, sizeof(s->started_at), "%s", at ? at : "");
	rc = 0;
out:
	free(name);
	free(boot);
	free(at);
	if (rc < 0)
		slot_free(s);
	return rc;
}

json_t *
slot_to_json(const struct slot *s)
{
	json_t *o = json_object();

	if (o == NULL)
		return NULL;
	if (json_object_set_new(o, "kind", json_string("slot")) ||
	    json_object_set_new(o, "name", json_string(s->name)) ||
	    json_object_set_new(o, "pid", json_integer(s->pid)) ||
	    json_object_set_new(o, "sid", json_integer(s->sid)) ||
	    json_object_set_new(o, "pgid", json_integer(s->pgid)) ||
	    json_object_set_new(o, "start_time_ticks",
	    json_integer((json_int_t)s->start_ticks)) ||
	    json_object_set_new(o, "boot_id", json_string(s->boot_id)) ||
	    json_object_set_new(o, "cwd", json_string(s->cwd)) ||
	    (s->exe && json_object_set_new(o, "exe", json_string(s->exe))) ||
	    json_object_set(o, "argv", s->argv ? s->argv : json_null()) ||
	    (s->cgroup && json_object_set_new(o, "cgroup",
	    json_string(s->cgroup))) ||
	    (s->started_at[0] && json_object_set_new(o, "started_at",
	    json_string(s->started_at)))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

void
slot_free(struct slot *s)
{
	free(s->cwd);
	free(s->exe);
	free(s->cgroup);
	json_decref(s->argv);
	s->cwd = s->exe = s->cgroup = NULL;
	s->argv = NULL;
}

enum slot_check
slot_identify(const struct slot *s, int *pidfd)
{
	struct proc_stat st;
	char boot[37];
	int fd;

	*pidfd = -1;
	if (proc_boot_id(boot) == 0 && strcmp(boot, s->boot_id) != 0)
		return SLOT_OTHER_BOOT;
	if ((fd = proc_pidfd_open(s->pid)) < 0)
		return errno == ESRCH ? SLOT_DEAD : SLOT_ERROR;
	if (proc_stat_read(s->pid, &st) < 0 || st.state == 'Z' ||
	    proc_pidfd_signal(fd, 0) < 0) {
		close(fd);
		return SLOT_DEAD;
	}
	if (st.start_ticks != s->start_ticks) {
		close(fd);
		return SLOT_REUSED;
	}
	*pidfd = fd;
	return SLOT_MATCH;
}

const char *
slot_check_name(enum slot_check c)
{
	switch (c) {
	case SLOT_MATCH:
		return "match";
	case SLOT_DEAD:
		return "not running";
	case SLOT_OTHER_BOOT:
		return "boot id differs (slot written before a reboot)";
	case SLOT_REUSED:
		return "start time differs (PID reused by another process)";
	case SLOT_ERROR:
		return "cannot check the process (pidfd_open failed)";
	}
	return "?";
}
