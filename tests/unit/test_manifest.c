/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "manifest.h"
#include "mftree.h"
#include "unit.h"

/* When set, fstat(2) fails with this errno (and fills in nothing). */
static int fstat_fails;

/* Interposed on libc's for the whole test binary, mftree.o included. */
int
fstat(int fd, struct stat *st)
{
	if (fstat_fails) {
		errno = fstat_fails;
		return -1;
	}
	return fstatat(fd, "", st, AT_EMPTY_PATH);
}

static const char *E0 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/* normalise p; return the result or "ERR: reason" in a static buffer */
static const char *
norm(const char *p, size_t len)
{
	static char out[256];
	char err[128], *s = mf_path_normalise(p, len, err, sizeof(err));

	snprintf(out, sizeof(out), "%s%s", s ? "" : "ERR: ", s ? s : err);
	free(s);
	return out;
}

static void
test_paths(void)
{
	CHECK_STR(norm("a/b", 3), "a/b");
	CHECK_STR(norm("./a//b/./c/", 11), "a/b/c");
	CHECK_STR(norm("...", 3), "...");
	CHECK_STR(norm("a/..b", 5), "a/..b");
	CHECK_STR(norm("/etc/passwd", 11), "ERR: absolute path refused");
	CHECK_STR(norm("a/../b", 6), "ERR: path with a '..' component refused");
	CHECK_STR(norm("..", 2), "ERR: path with a '..' component refused");
	CHECK_STR(norm("a/..", 4), "ERR: path with a '..' component refused");
	CHECK_STR(norm("a\0b", 3), "ERR: path holds a NUL byte");
	CHECK_STR(norm("", 0), "ERR: empty path");
	CHECK_STR(norm("./.", 3), "ERR: path names the root itself");
}

static void
test_escape(void)
{
	char *e = mf_escape("a\\b\nc\rd");

	CHECK_STR(e, "a\\\\b\\nc\\rd");
	free(e);
	CHECK(mf_needs_escape("x\ny"));
	CHECK(mf_needs_escape("x\\y"));
	CHECK(!mf_needs_escape("plain name"));
}

static int
sum(const char *line, struct mf_entry *e)
{
	char err[256];

	return mf_parse_sum_line(line, strlen(line), e, err, sizeof(err));
}

static void
test_sum_lines(void)
{
	struct mf_entry e;
	char line[512];

	snprintf(line, sizeof(line), "%s  dir/file name", E0);
	CHECK(sum(line, &e) == 0);
	CHECK_STR(e.path, "dir/file name");
	CHECK_STR(e.sha256, E0);
	CHECK(!e.has_size && e.type == MF_FILE);
	mf_entry_free(&e);
	snprintf(line, sizeof(line), "%s *bin", E0);	/* binary mode */
	CHECK(sum(line, &e) == 0);
	CHECK_STR(e.path, "bin");
	mf_entry_free(&e);
	snprintf(line, sizeof(line), "\\%s  a\\\\b\\nc\\rd", E0);
	CHECK(sum(line, &e) == 0);
	CHECK_STR(e.path, "a\\b\nc\rd");
	mf_entry_free(&e);
	snprintf(line, sizeof(line), "SHA256 (x) = y) = %s", E0);
	CHECK(sum(line, &e) == 0);
	CHECK_STR(e.path, "x) = y");
	mf_entry_free(&e);
	snprintf(line, sizeof(line), "%s  ./a", "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855");
	CHECK(sum(line, &e) == 0);
	CHECK_STR(e.sha256, E0);	/* lower-cased */
	CHECK_STR(e.path, "a");
	mf_entry_free(&e);
	snprintf(line, sizeof(line), "\\%s  a\\qb", E0);
	CHECK(sum(line, &e) < 0);	/* unknown escape */
	snprintf(line, sizeof(line), "%s  ../x", E0);
	CHECK(sum(line, &e) < 0);
	CHECK(sum("abc  name", &e) < 0);
	snprintf(line, sizeof(line), "%s", E0);
	CHECK(sum(line, &e) < 0);		/* no name */
	snprintf(line, sizeof(line), "%s-x", E0);
	CHECK(sum(line, &e) < 0);
}

static int
jl(const char *line, struct mf_entry *e, char *err)
{
	return mf_parse_json_line(line, strlen(line), e, err, 256);
}

static void
test_json_lines(void)
{
	struct mf_entry e;
	char err[256], line[512];

	snprintf(line, sizeof(line), "{\"path\":\"a/b\",\"sha256\":\"%s\","
	    "\"size_bytes\":12,\"run\":\"x\"}", E0);
	CHECK(jl(line, &e, err) == 0);
	CHECK_STR(e.path, "a/b");
	CHECK(e.has_size && e.size == 12);
	mf_entry_free(&e);
	CHECK(jl("{\"path\":\"l\",\"type\":\"symlink\",\"target\":\"../t\"}", &e,
	    err) == 0);
	CHECK(e.type == MF_SYMLINK);
	CHECK_STR(e.target, "../t");
	mf_entry_free(&e);
	CHECK(jl("{\"path\":\"a\"}", &e, err) < 0);
	CHECK_STR(err, "'sha256' is missing");
	CHECK(jl("{\"path\":1}", &e, err) < 0);
	CHECK_STR(err, "'path' is not a string");
	CHECK(jl("[]", &e, err) < 0);
	CHECK_STR(err, "not a JSON object");
	CHECK(jl("{\"path\":\"a\",\"path\":\"b\"}", &e, err) < 0);
	snprintf(line, sizeof(line), "{\"path\":\"a\",\"sha256\":\"%s\","
	    "\"size_bytes\":-1}", E0);
	CHECK(jl(line, &e, err) < 0);
	snprintf(line, sizeof(line), "{\"path\":\"a\",\"sha256\":\"%s\","
	    "\"type\":\"fifo\"}", E0);
	CHECK(jl(line, &e, err) < 0);
	CHECK(jl("{\"path\":\"a\\u0000b\",\"sha256\":\"x\"}", &e, err) < 0);
	CHECK_STR(err, "path holds a NUL byte");
}

static void
test_manifest(void)
{
	struct mf_manifest m;
	char buf[2048];

	snprintf(buf, sizeof(buf), "\n%s  b\r\n\n%s  a\nbad line\n%s  ./b\n"
	    "%s  c", E0, E0, E0, E0);
	CHECK(mf_manifest_parse(buf, strlen(buf), &m) == 0);
	CHECK(!m.json);
	CHECK(m.n == 3);
	CHECK_STR(m.e[0].path, "b");
	CHECK(m.line[0] == 2 && m.line[1] == 4 && m.line[2] == 7);
	CHECK(m.nbad == 2);
	CHECK(m.bad[0].line == 5 && m.bad[1].line == 6);
	CHECK_STR(m.bad[1].msg, "duplicate entry for a path listed before");
	mf_manifest_free(&m);

	snprintf(buf, sizeof(buf), "{\"path\":\"x\",\"sha256\":\"%s\"}\n%s  y\n",
	    E0, E0);
	CHECK(mf_manifest_parse(buf, strlen(buf), &m) == 0);
	CHECK(m.json && m.n == 1 && m.nbad == 1);	/* first line decides */
	mf_manifest_free(&m);

	CHECK(mf_manifest_parse(" \n\r\n", 4, &m) == 0);
	CHECK(m.n == 0 && m.nbad == 1 && m.bad[0].line == 0);
	mf_manifest_free(&m);
}

static void
test_globs(void)
{
	char *g[] = { "*.log", "runs/tmp", NULL };

	CHECK(mf_excluded(g, "a/b/server.log"));
	CHECK(mf_excluded(g, "runs/tmp"));
	CHECK(!mf_excluded(g, "x/runs/tmp"));
	CHECK(!mf_excluded(g, "a/.log"));	/* FNM_PERIOD */
	CHECK(!mf_excluded(NULL, "a"));
}

static const char *
status_of(const struct mf_entry *e, const struct mf_job *j, char *rec,
    size_t len)
{
	const char *st = NULL;
	json_t *r = mf_check_record(e, j, &st);
	char *t = r ? json_dumps(r, JSON_COMPACT) : NULL;

	snprintf(rec, len, "%s", t ? t : "");
	free(t);
	json_decref(r);
	return st;
}

static void
test_check(void)
{
	struct mf_entry e = { .path = "a", .type = MF_FILE, .has_size = true,
	    .size = 3 };
	struct mf_job j = { .path = "a", .st = MF_OK, .size = 3 };
	char rec[1024];

	snprintf(e.sha256, sizeof(e.sha256), "%s", E0);
	snprintf(j.sha256, sizeof(j.sha256), "%s", E0);
	CHECK_STR(status_of(&e, &j, rec, sizeof(rec)), "ok");
	CHECK_STR(rec, "{\"kind\":\"check\",\"path\":\"a\",\"sha256\":\""
	    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	    "\",\"size_bytes\":3,\"status\":\"ok\"}");
	j.sha256[0] = 'f';
	CHECK_STR(status_of(&e, &j, rec, sizeof(rec)), "modified");
	CHECK(strstr(rec, "\"expected_sha256\":\"e3b0") != NULL);
	j.size = 4;
	CHECK_STR(status_of(&e, &j, rec, sizeof(rec)), "size_changed");
	CHECK(strstr(rec, "\"expected_size_bytes\":3") != NULL);
	e.has_size = false;	/* a sha256sum entry: no size to compare */
	CHECK_STR(status_of(&e, &j, rec, sizeof(rec)), "modified");
	j.st = MF_MISSING;
	CHECK_STR(status_of(&e, &j, rec, sizeof(rec)), "missing");
	j.st = MF_UNREADABLE;
	j.err = 13;
	CHECK_STR(status_of(&e, &j, rec, sizeof(rec)), "unreadable");
	CHECK(strstr(rec, "\"reason\":\"Permission denied\"") != NULL);
	j.st = MF_UNSTABLE;
	CHECK_STR(status_of(&e, &j, rec, sizeof(rec)), "unstable");
	j.st = MF_NOT_REGULAR;
	CHECK_STR(status_of(&e, &j, rec, sizeof(rec)), "modified");
	CHECK(strstr(rec, "no longer a regular file") != NULL);
	e.type = MF_SYMLINK;
	e.target = "t";
	j.st = MF_OK;
	j.target = "t";
	CHECK_STR(status_of(&e, &j, rec, sizeof(rec)), "ok");
	j.target = "u";
	CHECK_STR(status_of(&e, &j, rec, sizeof(rec)), "modified");
	CHECK(strstr(rec, "\"expected_target\":\"t\"") != NULL);
	/* a name that is not UTF-8 (a sha256sum manifest) is escaped */
	e = (struct mf_entry){ .path = "d\xe9j\\\x01\xffok", .type = MF_FILE };
	j = (struct mf_job){ .path = e.path, .st = MF_MISSING };
	CHECK_STR(status_of(&e, &j, rec, sizeof(rec)), "missing");
	CHECK_STR(rec, "{\"kind\":\"check\",\"path\":null,\"path_escaped\":"
	    "\"d\\\\xe9j\\\\\\\\\\\\x01\\\\xffok\",\"status\":\"missing\"}");
}

/* A file whose fstat fails is unreadable, with that errno (the struct
 * stat it did not fill must never be read: valgrind checks it). */
static void
test_hash_fstat_fails(void)
{
	char dir[] = "/tmp/test_manifest.XXXXXX", path[64], hex[65], buf[4096];
	uint64_t size = 0;
	int rootfd, fd, err = 0;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/f", dir);
	CHECK((fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644)) >= 0);
	CHECK(write(fd, "abc", 3) == 3);
	close(fd);
	CHECK((rootfd = open(dir, O_RDONLY | O_DIRECTORY)) >= 0);
	CHECK(mf_hash_file(rootfd, "f", buf, sizeof(buf), hex, &size, &err) ==
	    MF_OK);
	CHECK(size == 3);
	fstat_fails = EIO;
	CHECK(mf_hash_file(rootfd, "f", buf, sizeof(buf), hex, &size, &err) ==
	    MF_UNREADABLE);
	fstat_fails = 0;
	CHECK(err == EIO);
	close(rootfd);
	unlink(path);
	rmdir(dir);
}

int
main(void)
{
	test_hash_fstat_fails();
	test_paths();
	test_escape();
	test_sum_lines();
	test_json_lines();
	test_manifest();
	test_globs();
	test_check();
	return DONE("test_manifest");
}
