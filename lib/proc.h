/* SPDX-License-Identifier: MIT */
#ifndef KV_PROC_H
#define KV_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

/* The fields of /proc/PID/stat that identify a process. */
struct proc_stat {
	pid_t pid;
	char state;		/* R S D Z T t X ... */
	pid_t ppid;
	pid_t pgrp;
	pid_t session;
	uint64_t start_ticks;	/* field 22: start time, clock ticks after boot */
};

/*
 * Parse the text of /proc/PID/stat (len bytes, need not be NUL-ended).
 * The command name may hold spaces and ')' (the last ')' ends it).
 * Returns 0, or -1 with the reason in err.  Pure: no I/O.
 */
int proc_stat_parse(const char *buf, size_t len, struct proc_stat *st,
    char *err, size_t errlen);

/* Read and parse /proc/PID/stat; 0, or -1 with errno (ENOENT: gone). */
int proc_stat_read(pid_t pid, struct proc_stat *st);

/* The kernel's boot id (36 characters and NUL); 0 or -1. */
int proc_boot_id(char id[37]);

/* readlink of /proc/PID/<what> ("cwd", "exe") into buf; 0 or -1. */
int proc_link(pid_t pid, const char *what, char *buf, size_t len);

/* pidfd_open(2) and pidfd_send_signal(2); -1 with errno on failure. */
int proc_pidfd_open(pid_t pid);
int proc_pidfd_signal(int pidfd, int sig);

/* True once the process behind pidfd has exited (it may be a zombie). */
bool proc_pidfd_exited(int pidfd);

/*
 * The live (not zombie) processes whose session id is sid, from a scan
 * of /proc.  *out is malloc'd (caller frees); returns the count or -1.
 */
ssize_t proc_session_members(pid_t sid, pid_t **out);

/* Is name a valid slot name: 1-64 of [A-Za-z0-9._-], not starting '.'. */
bool proc_slot_name_ok(const char *name);

/* What a slot file records about the service it started. */
struct slot {
	char name[65];
	pid_t pid, sid, pgid;
	uint64_t start_ticks;
	char boot_id[37];
	char *cwd, *exe, *cgroup;	/* malloc'd; cgroup may be NULL */
	json_t *argv;			/* array of strings (a reference) */
	char started_at[32];
};

/*
 * Check and load a slot record (as read from a slot file) into s; strings
 * are copied.  Returns 0, or -1 with the reason in err.  Pure: no I/O.
 */
int slot_from_json(const json_t *o, struct slot *s, char *err,
    size_t errlen);
/* The slot as a JSON object (new reference), kind "slot"; NULL on ENOMEM. */
json_t *slot_to_json(const struct slot *s);
void slot_free(struct slot *s);

/* Why a slot's process is or is not the one the slot recorded. */
enum slot_check {
	SLOT_MATCH = 0,		/* alive, same boot, same start time */
	SLOT_DEAD,		/* no such process (or a zombie) */
	SLOT_OTHER_BOOT,	/* the slot was written before a reboot */
	SLOT_REUSED,		/* the PID now belongs to another process */
	SLOT_ERROR		/* cannot tell: pidfd_open failed (errno) */
};

/*
 * Open a pidfd for s->pid and compare the process with the slot: boot id
 * and start time.  On SLOT_MATCH *pidfd holds an open pidfd (caller
 * closes), else -1.  The comparison is made after opening the pidfd and
 * confirmed alive after, so a PID reused meanwhile is never mistaken.
 */
enum slot_check slot_identify(const struct slot *s, int *pidfd);
const char *slot_check_name(enum slot_check c);

#endif
