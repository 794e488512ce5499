/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ready.h"
#include "session.h"
#include "unit.h"

static void
test_hostport(void)
{
	char h[64], p[16];

	CHECK(ready_split_hostport("127.0.0.1:8000", h, sizeof(h), p,
	    sizeof(p)) == 0);
	CHECK_STR(h, "127.0.0.1");
	CHECK_STR(p, "8000");
	CHECK(ready_split_hostport("[::1]:80", h, sizeof(h), p, sizeof(p)) == 0);
	CHECK_STR(h, "::1");
	CHECK(ready_split_hostport("node-a:http", h, sizeof(h), p,
	    sizeof(p)) == 0);
	CHECK_STR(p, "http");
	CHECK(ready_split_hostport("nohost", h, sizeof(h), p, sizeof(p)) < 0);
	CHECK(ready_split_hostport(":80", h, sizeof(h), p, sizeof(p)) < 0);
	CHECK(ready_split_hostport("h:", h, sizeof(h), p, sizeof(p)) < 0);
	CHECK(ready_split_hostport("[]:80", h, sizeof(h), p, sizeof(p)) < 0);
	CHECK(ready_split_hostport("a-very-long-host-name-that-does-not-fit-"
	    "in-sixty-four-bytes-at-all.example:1", h, sizeof(h), p,
	    sizeof(p)) < 0);
}

static void
test_slot_files(void)
{
	char dir[] = "/tmp/kvg-test-session.XXXXXX", err[256];
	struct slot s = { .pid = 42, .sid = 42, .pgid = 42, .start_ticks = 7 }, r;
	json_t *rec, *raw = NULL;
	int dfd, lk, lk2;

	if (mkdtemp(dir) == NULL || (dfd = open(dir, O_RDONLY |
	    O_DIRECTORY)) < 0) {
		CHECK(!"temporary directory");
		return;
	}
	snprintf(s.name, sizeof(s.name), "svc");
	snprintf(s.boot_id, sizeof(s.boot_id),
	    "00000000-0000-0000-0000-000000000000");
	s.cwd = strdup("/srv");
	s.argv = json_pack("[s, s]", "sleep", "1");
	CHECK(session_slot_read(dfd, "svc", &r, NULL, err, sizeof(err)) == 0);
	rec = slot_to_json(&s);
	CHECK(session_slot_write(dfd, "svc", rec) == 0);
	CHECK(session_slot_read(dfd, "svc", &r, &raw, err, sizeof(err)) == 1);
	CHECK(r.pid == 42 && r.start_ticks == 7);
	CHECK_STR(r.cwd, "/srv");
	CHECK(json_equal(raw, rec));
	slot_free(&r);
	json_decref(raw);
	/* a slot read under another name is refused */
	CHECK(renameat(dfd, "svc.json", dfd, "other.json") == 0);
	CHECK(session_slot_read(dfd, "other", &r, NULL, err, sizeof(err)) < 0);
	CHECK_STR(err, "slot other.json names another slot");
	CHECK(session_slot_remove(dfd, "other") == 0);
	CHECK(session_slot_remove(dfd, "other") == 0);	/* ENOENT is fine */
	/* the lock is exclusive: a second taker times out */
	lk = session_lock(dfd, "svc", 1);
	CHECK(lk >= 0);
	lk2 = session_lock(dfd, "svc", 0.05);
	CHECK(lk2 < 0 && errno == ETIMEDOUT);
	close(lk);
	lk2 = session_lock(dfd, "svc", 0.05);
	CHECK(lk2 >= 0);
	close(lk2);
	json_decref(rec);
	slot_free(&s);
	unlinkat(dfd, ".svc.lock", 0);
	close(dfd);
	rmdir(dir);
}

/* The default log: created, reopened, never a symlink, FIFO or directory. */
static void
test_log_open(void)
{
	char dir[] = "/tmp/test_session_log.XXXXXX", err[256];
	int dfd, fd;

	CHECK(mkdtemp(dir) != NULL);
	CHECK((dfd = open(dir, O_RDONLY | O_DIRECTORY)) >= 0);
	CHECK((fd = session_log_open(dfd, "a", err, sizeof(err))) >= 0);
	CHECK(write(fd, "x", 1) == 1);
	CHECK((fcntl(fd, F_GETFL) & O_NONBLOCK) == 0);
	CHECK((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
	close(fd);
	CHECK((fd = session_log_open(dfd, "a", err, sizeof(err))) >= 0);
	close(fd);
	CHECK(symlinkat("a.log", dfd, "b.log") == 0);
	CHECK(session_log_open(dfd, "b", err, sizeof(err)) < 0);
	CHECK(strstr(err, "b.log is a symbolic link") != NULL);
	CHECK(mkfifoat(dfd, "c.log", 0600) == 0);
	CHECK(session_log_open(dfd, "c", err, sizeof(err)) < 0);
	CHECK(strstr(err, "c.log") != NULL);
	CHECK(mkdirat(dfd, "d.log", 0700) == 0);
	CHECK(session_log_open(dfd, "d", err, sizeof(err)) < 0);
	unlinkat(dfd, "a.log", 0);
	unlinkat(dfd, "b.log", 0);
	unlinkat(dfd, "c.log", 0);
	unlinkat(dfd, "d.log", AT_REMOVEDIR);
	close(dfd);
	rmdir(dir);
}

int
main(void)
{
	test_hostport();
	test_log_open();
	test_slot_files();
	return DONE("test_session");
}
