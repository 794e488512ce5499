/* SPDX-License-Identifier: MIT */
#ifndef KV_SESSION_H
#define KV_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include <jansson.h>

#include "proc.h"

/*
 * Slot files: DIR/NAME.json holds one slot record; DIR/.NAME.lock is the
 * flock(2) that serialises session-run and session-stop on one slot.
 */

/* Take the slot's lock within timeout_s; the lock fd, or -1 with errno. */
int session_lock(int dirfd, const char *name, double timeout_s);

/*
 * Read DIR/NAME.json into s (and, if raw is not NULL, the record as
 * read).  Returns 1 when read, 0 when there is no slot file, -1 with the
 * reason in err when it cannot be read or is not a valid slot.
 */
int session_slot_read(int dirfd, const char *name, struct slot *s,
    json_t **raw, char *err, size_t errlen);

/* Write rec to DIR/NAME.json atomically (a temporary file, then rename;
 * the caller holds the lock).  0, or -1 with errno. */
int session_slot_write(int dirfd, const char *name, const json_t *rec);

/* Remove DIR/NAME.json; 0, or -1 with errno (ENOENT is not an error). */
int session_slot_remove(int dirfd, const char *name);

struct stop_opts {
	int sig;		/* the first signal (SIGTERM) */
	double timeout_s;	/* wait this long before escalating */
	double kill_after_s;	/* then wait this long after SIGKILL */
	bool own_child;		/* the leader is the caller's unreaped child:
				   its PID (and so its sid) cannot be reused,
				   so a leader that already exited still lets
				   its session be stopped */
};

/*
 * Verify that the slot's process is the one that was started (boot id,
 * alive, start time, session leader of the recorded sid, recorded cwd);
 * on any mismatch signal nothing.  A leader that has exited (gone, or a
 * zombie not ours) on the same boot skips the leader checks and sets
 * "leader_exited":true: the members of the recorded sid that started at
 * or after the recorded start time are stopped (a sid is not reused while
 * a member holds it).  Otherwise signal the leader and every
 * verified member of its session (and of its cgroup, if any), wait,
 * escalate to SIGKILL, and confirm the session is empty.  Fills rec with
 * verified, failed_check, reason, signalled, escalated, killed, escaped,
 * leaked, elapsed_s.  leader_pidfd, if >= 0, is a pidfd already verified
 * by the caller (session-run's own child).  Returns KV_OK when stopped
 * with nothing leaked, KV_FAIL otherwise.
 */
int session_stop(const struct slot *s, const struct stop_opts *o,
    json_t *rec);

/* The mount point of a writable cgroup v2 hierarchy, or -1 (errno). */
int session_cgroup_root(char *buf, size_t len);

/* Make the cgroup ROOT/kvgate-NAME.PID; its malloc'd path, or NULL with
 * the reason in err. */
char *session_cgroup_create(const char *name, char *err, size_t errlen);

/* What to start, and how. */
struct spawn {
	char *const *argv;	/* argv[0] is looked up in PATH */
	const char *cwd;	/* the service's working directory */
	const char *log;	/* its stdout and stderr, appended */
	int log_fd;		/* if >= 0, the log already open (log unused) */
	const char *cgroup;	/* a cgroup directory to join, or NULL */
};

/*
 * Open (create, append) the default log DIR/NAME.log for session_spawn's
 * log_fd: never through a symbolic link, and only a regular file owned by
 * the caller's effective uid.  The fd (close-on-exec), or -1 with the
 * reason in err.
 */
int session_log_open(int dirfd, const char *name, char *err, size_t errlen);

/*
 * Start sp->argv as the leader of a new session and process group, with
 * stdin from /dev/null, default signal handling and an empty signal mask,
 * and fill s's pid, sid, pgid, start_ticks, boot_id, exe and started_at.
 * Returns a pidfd for the service once execve(2) has succeeded, or -1
 * with errno: the errno of the failed step in the child (which is then
 * reaped), or of pidfd_open (the child is then killed and reaped: it is
 * ours, its PID cannot have been reused).
 */
int session_spawn(const struct spawn *sp, struct slot *s);

/* Read the whole of a small file (no symlink followed) into a NUL-ended
 * malloc'd buffer; st, if not NULL, gets its fstat. */
char *session_read_file(int dirfd, const char *path, size_t max,
    size_t *len, struct stat *st);

#endif
