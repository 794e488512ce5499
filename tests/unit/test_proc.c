/* SPDX-License-Identifier: MIT */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"
#include "unit.h"

static int
parse(const char *s, struct proc_stat *st)
{
	char err[128];

	return proc_stat_parse(s, strlen(s), st, err, sizeof(err));
}

static void
test_stat(void)
{
	struct proc_stat st;
	const char *line = "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 "
	    "100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10 18446744073709551615\n";

	CHECK(parse(line, &st) == 0);
	CHECK(st.pid == 4242 && st.state == 'S' && st.ppid == 1);
	CHECK(st.pgrp == 4242 && st.session == 4242);
	CHECK(st.start_ticks == 987654);
	CHECK(parse("12 (x) S 1 2 3", &st) < 0);
	CHECK(parse("x (x) S 1 2 3 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 1", &st) < 0);
	CHECK(parse("12 x) S 1 2 3 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 1", &st) < 0);
	CHECK(parse("12 (x) 7 1 2 3 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 1", &st) < 0);
	CHECK(parse("12 (x) S 1 2 -3 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 1", &st) < 0);
	CHECK(parse("", &st) < 0);
	/* the real thing */
	CHECK(proc_stat_read(getpid(), &st) == 0);
	CHECK(st.pid == getpid() && st.session == getsid(0));
}

static void
test_names(void)
{
	CHECK(proc_slot_name_ok("vllm-prefill.0"));
	CHECK(!proc_slot_name_ok(""));
	CHECK(!proc_slot_name_ok(".hidden"));
	CHECK(!proc_slot_name_ok("a/b"));
	CHECK(!proc_slot_name_ok("../x"));
	CHECK(!proc_slot_name_ok("sp ace"));
	CHECK(!proc_slot_name_ok("x1234567890123456789012345678901234567890"
	    "12345678901234567890123456"));
}

static void
test_slot_json(void)
{
	struct slot s;
	char err[256];
	json_t *o = json_pack("{s:s, s:i, s:i, s:i, s:I, s:s, s:s, s:[s], s:s}",
	    "name", "web", "pid", 10, "sid", 10, "pgid", 10, "start_time_ticks",
	    (json_int_t)5, "boot_id", "00000000-0000-0000-0000-000000000000",
	    "cwd", "/srv", "argv", "sleep", "started_at", "t");
	json_t *back;

	CHECK(slot_from_json(o, &s, err, sizeof(err)) == 0);
	CHECK(s.pid == 10 && s.start_ticks == 5);
	CHECK_STR(s.cwd, "/srv");
	back = slot_to_json(&s);
	CHECK(back && json_integer_value(json_object_get(back, "pid")) == 10);
	CHECK_STR(json_string_value(json_object_get(back, "kind")), "slot");
	json_decref(back);
	slot_free(&s);
	json_object_set_new(o, "cwd", json_string("rel"));
	CHECK(slot_from_json(o, &s, err, sizeof(err)) < 0);
	CHECK_STR(err, "slot field 'cwd' is not an absolute path");
	json_object_set_new(o, "cwd", json_string("/"));
	json_object_set_new(o, "pid", json_integer(0));
	CHECK(slot_from_json(o, &s, err, sizeof(err)) < 0);
	json_object_set_new(o, "pid", json_integer(1));
	json_object_set_new(o, "name", json_string("../x"));
	CHECK(slot_from_json(o, &s, err, sizeof(err)) < 0);
	json_decref(o);
}

static void
test_identify(void)
{
	struct slot s = { .pid = getpid() };
	struct proc_stat st;
	int fd = -1;

	proc_stat_read(getpid(), &st);
	proc_boot_id(s.boot_id);
	s.start_ticks = st.start_ticks;
	CHECK(slot_identify(&s, &fd) == SLOT_MATCH && fd >= 0);
	CHECK(!proc_pidfd_exited(fd));
	CHECK(proc_pidfd_signal(fd, 0) == 0);
	close(fd);
	s.start_ticks++;
	CHECK(slot_identify(&s, &fd) == SLOT_REUSED && fd == -1);
	s.start_ticks--;
	s.boot_id[0] = s.boot_id[0] == '0' ? '1' : '0';
	CHECK(slot_identify(&s, &fd) == SLOT_OTHER_BOOT);
}

int
main(void)
{
	test_stat();
	test_names();
	test_slot_json();
	/* valgrind does not know pidfd_open: skip what needs it there */
	int fd = proc_pidfd_open(getpid());
	if (fd >= 0) {
		close(fd);
		test_identify();
	}
	return DONE("test_proc");
}
