/* SPDX-License-Identifier: MIT */
/* sha-manifest: create and verify SHA-256 manifests of evidence trees. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "file.h"
#include "jsonl.h"
#include "manifest.h"
#include "mftree.h"
#include "units.h"

#define BUFLEN (1u << 15)	/* 32 KiB: stays in L2 (1 MiB was 30 % slower) */

struct options {
	const char *root;
	int jobs;
	bool sumfmt, ignore_extra;
	char **exclude;
	size_t nexclude;
};

static const char *const statuses[] = { "ok", "modified", "size_changed",
	"missing", "unreadable", "unstable" };
#define NSTATUS (sizeof(statuses) / sizeof(statuses[0]))

static noreturn void usage(int status);

static void
hash_all(const struct options *o, int rootfd, struct mf_job *jobs, size_t n)
{
	if (mf_hash_jobs(rootfd, jobs, n, o->jobs, BUFLEN) < 0)
		kv_die(KV_SOFTWARE, "cannot start hashing threads");
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
put(json_t *rec)
{
	if (rec == NULL || jsonl_write(stdout, rec, false) < 0)
		kv_die(KV_IOERR, "write error on stdout:");
	json_decref(rec);
}

static void
put_sum_line(const struct mf_job *j)
{
	char *esc = NULL;

	if (mf_needs_escape(j->path) && (esc = mf_escape(j->path)) == NULL)
		kv_die(KV_SOFTWARE, "out of memory");
	if (printf("%s%s  %s\n", esc ? "\\" : "", j->sha256,
	    esc ? esc : j->path) < 0)
		kv_die(KV_IOERR, "write error on stdout:");
	free(esc);
}

static const char *
why(const struct mf_job *j)
{
	switch (j->st) {
	case MF_MISSING: return "vanished while the manifest was made";
	case MF_UNSTABLE: return "unstable: changed while it was hashed";
	case MF_NOT_REGULAR: return "no longer a regular file";
	default: return strerror(j->err);
	}
}

static int
open_root(const char *root)
{
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		kv_die(KV_UNAVAILABLE, "--root %s:", root);
	return fd;
}

static int
create(const struct options *o, int argc, char **argv)
{
	struct mf_walk w = { .exclude = o->exclude, .need_utf8 = !o->sumfmt };
	struct stat out;
	struct mf_job *jobs;
	char err[PATH_MAX + 64];
	int rootfd = open_root(o->root), status = KV_OK;
	size_t links = 0;

	if (fstat(STDOUT_FILENO, &out) == 0 && S_ISREG(out.st_mode)) {
		w.skip = true;	/* never list the manifest being written */
		w.skip_dev = out.st_dev;
		w.skip_ino = out.st_ino;
	}
	for (int i = 0; i < argc || (i == 0 && argc == 0); i++) {
		char *p = argc ? mf_path_normalise(argv[i], strlen(argv[i]), err,
		    sizeof(err)) : strdup("");

		if (p == NULL)
			kv_die(KV_USAGE, "PATH '%s': %s", argv[i], err);
		if (mf_walk_add(&w, rootfd, p, err, sizeof(err)) < 0)
			kv_die(errno == ENOENT || errno == ELOOP ||
			    errno == ENOTDIR || errno == EXDEV ? KV_DATAERR :
			    KV_IOERR, "%s:", err);
		free(p);
	}
	mf_walk_sort(&w);
	if (w.bad_names)
		kv_warn("%zu names are not valid UTF-8 and are left out (use "
		    "--format sha256sum)", w.bad_names), status = KV_DATAERR;
	if ((jobs = calloc(w.n ? w.n : 1, sizeof(*jobs))) == NULL)
		kv_die(KV_SOFTWARE, "out of memory");
	for (size_t i = 0; i < w.n; i++)
		jobs[i] = (struct mf_job){ .path = w.v[i].path, .type = w.v[i].type,
		    .size = w.v[i].size };
	hash_all(o, rootfd, jobs, w.n);
	for (size_t i = 0; i < w.n; i++) {
		struct mf_job *j = &jobs[i];

		if (j->st != MF_OK) {
			kv_warn("%s: %s", j->path, why(j));
			if (status == KV_OK)
				status = KV_FAIL;
		} else if (j->type == MF_SYMLINK && o->sumfmt) {
			links++;
		} else if (o->sumfmt) {
			put_sum_line(j);
		} else if (j->type == MF_SYMLINK) {
			json_t *r = json_pack("{s:s, s:s, s:s}", "path", j->path,
			    "type", "symlink", "target", j->target);

			if (r == NULL) {
				kv_warn("%s: symlink target is not valid UTF-8; "
				    "left out", j->path);
				status = KV_DATAERR;
			} else {
				put(r);
			}
		} else {
			put(json_pack("{s:s, s:s, s:I}", "path", j->path, "sha256",
			    j->sha256, "size_bytes", (json_int_t)j->size));
		}
	}
	mf_jobs_free(jobs, w.n);
	if (links)
		kv_warn("%zu symlinks left out: sha256sum format cannot record "
		    "them", links);
	free(jobs);
	mf_walk_free(&w);
	close(rootfd);
	return status;
}


/* Read the whole manifest (a file, or stdin for "-"); st gets its fstat
 * with st_size set to the bytes read. */
static char *
slurp(const char *path, struct stat *st)
{
	int fd = strcmp(path, "-") == 0 ? 0 : open(path, O_RDONLY | O_CLOEXEC);
	size_t len;
	char *buf;

	if (fd < 0)
		kv_die(KV_UNAVAILABLE, "%s:", path);
	if (fstat(fd, st) < 0)
		kv_die(KV_IOERR, "%s:", path);
	if ((buf = kv_read_all(fd, (size_t)1 << 32, &len)) == NULL) {
		if (errno == ENOMEM || errno == EFBIG)
			kv_die(KV_SOFTWARE, "%s: manifest too large for memory",
			    path);
		kv_die(KV_IOERR, "reading %s:", path);
	}
	if (fd != 0)
		close(fd);
	st->st_size = (off_t)len;	/* now the byte count read */
	return buf;
}

/* Files under the root that the manifest does not list, as records. */
static size_t
extras(const struct options *o, int rootfd, const struct stat *mst,
    const struct mf_manifest *m)
{
	/* a sha256sum manifest can list any name: compare raw bytes */
	struct mf_walk w = { .exclude = o->exclude, .need_utf8 = m->json };
	char err[PATH_MAX + 64];
	char **listed = malloc((m->n ? m->n : 1) * sizeof(*listed));
	size_t n = 0;
	json_t *r;

	if (listed == NULL)
		kv_die(KV_SOFTWARE, "out of memory");
	if (S_ISREG(mst->st_mode)) {
		w.skip = true;
		w.skip_dev = mst->st_dev;
		w.skip_ino = mst->st_ino;
	}
	if (mf_walk_add(&w, rootfd, "", err, sizeof(err)) < 0)
		kv_die(KV_IOERR, "%s:", err);
	mf_walk_sort(&w);
	for (size_t i = 0; i < m->n; i++)
		listed[i] = m->e[i].path;
	qsort(listed, m->n, sizeof(*listed), cmp_str);
	for (size_t i = 0; i < w.n; i++) {
		const char *p = w.v[i].path;

		if (bsearch(&p, listed, m->n, sizeof(*listed), cmp_str))
			continue;
		r = json_pack("{s:s}", "kind", "check");
		if (r == NULL || mf_set_path(r, p) < 0 ||
		    json_object_set_new(r, "status", json_string("extra")) < 0)
			kv_die(KV_SOFTWARE, "out of memory");
		put(r);
		n++;
	}
	if (w.bad_names)
		kv_warn("%zu unlisted names are not valid UTF-8", w.bad_names);
	n += w.bad_names;
	free(listed);
	mf_walk_free(&w);
	return n;
}

/* The summary record. */
static json_t *
summary(const struct mf_manifest *m, const size_t *counts, size_t nextra,
    bool pass)
{
	json_t *r = json_pack("{s:s, s:s, s:I}", "kind", "summary", "format",
	    m->json ? "jsonl" : "sha256sum", "entries", (json_int_t)m->n);

	for (size_t k = 0; r && k < NSTATUS; k++)
		json_object_set_new(r, statuses[k],
		    json_integer((json_int_t)counts[k]));
	if (r && (json_object_set_new(r, "extra", json_integer(
	    (json_int_t)nextra)) || json_object_set_new(r, "bad_lines",
	    json_integer((json_int_t)m->nbad)) ||
	    json_object_set_new(r, "verified", json_boolean(pass)))) {
		json_decref(r);
		r = NULL;
	}
	return r;
}

static int
verify(const struct options *o, const char *path)
{
	const char *name = strcmp(path, "-") ? path : "stdin", *st;
	struct mf_manifest m;
	struct stat mst;
	struct mf_job *jobs;
	char *buf = slurp(path, &mst);
	size_t counts[NSTATUS] = { 0 }, b = 0, nextra = 0;
	int rootfd = open_root(o->root), rc;
	bool pass;
	json_t *r;

	if (mf_manifest_parse(buf, (size_t)mst.st_size, &m) < 0)
		kv_die(KV_SOFTWARE, "out of memory");
	free(buf);
	if ((jobs = calloc(m.n ? m.n : 1, sizeof(*jobs))) == NULL)
		kv_die(KV_SOFTWARE, "out of memory");
	for (size_t i = 0; i < m.n; i++)
		jobs[i] = (struct mf_job){ .path = m.e[i].path,
		    .type = m.e[i].type, .size = m.e[i].size };
	hash_all(o, rootfd, jobs, m.n);
	for (size_t i = 0; i <= m.n; i++) {
		/* the bad lines in their places among the entries */
		while (b < m.nbad && (i == m.n || m.bad[b].line < m.line[i])) {
			if (jsonl_error(stdout, name, m.bad[b].line,
			    m.bad[b].msg) < 0)
				kv_die(KV_IOERR, "write error on stdout:");
			b++;
		}
		if (i == m.n)
			break;
		if ((r = mf_check_record(&m.e[i], &jobs[i], &st)) == NULL)
			kv_die(KV_SOFTWARE, "out of memory");
		for (size_t k = 0; k < NSTATUS; k++)
			counts[k] += strcmp(st, statuses[k]) == 0;
		put(r);
	}
	if (!o->ignore_extra)
		nextra = extras(o, rootfd, &mst, &m);
	pass = m.nbad == 0 && counts[0] == m.n && nextra == 0;
	put(summary(&m, counts, nextra, pass));
	rc = m.nbad ? KV_DATAERR : pass ? KV_OK : KV_FAIL;
	mf_jobs_free(jobs, m.n);
	free(jobs);
	mf_manifest_free(&m);
	close(rootfd);
	return rc;
}

static noreturn void
usage(int status)
{
	fprintf(status ? stderr : stdout,
	    "usage: sha-manifest create [-j N] [--exclude GLOB] "
	    "[--format jsonl | sha256sum]\n"
	    "                           [--root DIR] [PATH ...]\n"
	    "       sha-manifest verify [-j N] [--exclude GLOB] "
	    "[--ignore-extra] [--root DIR]\n"
	    "                           MANIFEST\n");
	if (status == 0)
		exit(kv_fshut(0));
	exit(status);
}

static void
parse(int argc, char **argv, struct options *o, bool verifying)
{
	static const struct option lo[] = {
		{ "root", required_argument, NULL, 'r' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "exclude", required_argument, NULL, 'x' },
		{ "format", required_argument, NULL, 'f' },
		{ "ignore-extra", no_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	char err[256];
	long long n;
	int c;

	while ((c = getopt_long(argc, argv, "j:", lo, NULL)) != -1) {
		switch (c) {
		case 'r': o->root = optarg; break;
		case 'j':
			if (kv_parse_int(optarg, 1, 1024, &n, err, sizeof(err)) < 0)
				kv_die(KV_USAGE, "-j: %s", err);
			o->jobs = (int)n;
			break;
		case 'x':
			o->exclude = realloc(o->exclude, (o->nexclude + 2) *
			    sizeof(*o->exclude));
			if (o->exclude == NULL)
				kv_die(KV_SOFTWARE, "out of memory");
			o->exclude[o->nexclude++] = optarg;
			o->exclude[o->nexclude] = NULL;
			break;
		case 'f':
			if (strcmp(optarg, "sha256sum") == 0)
				o->sumfmt = true;
			else if (strcmp(optarg, "jsonl") != 0)
				kv_die(KV_USAGE, "--format: '%s' is not jsonl or "
				    "sha256sum", optarg);
			break;
		case 'i': o->ignore_extra = true; break;
		case 'h': usage(0);
		case 'V': kv_version();
		default: usage(KV_USAGE);
		}
	}
	if (verifying && o->sumfmt)
		kv_die(KV_USAGE, "--format is for create (verify detects it)");
	if (!verifying && o->ignore_extra)
		kv_die(KV_USAGE, "--ignore-extra is for verify");
}

int
main(int argc, char **argv)
{
	struct options o = { .root = ".", .jobs = 0 };
	bool verifying;
	int rc;

	kv_setprogname(argv[0]);
	if (argc > 1 && strcmp(argv[1], "--help") == 0)
		usage(0);
	if (argc > 1 && strcmp(argv[1], "--version") == 0)
		kv_version();
	if (argc < 2 || (strcmp(argv[1], "create") != 0 &&
	    strcmp(argv[1], "verify") != 0)) {
		kv_warn("expected 'create' or 'verify'");
		usage(KV_USAGE);
	}
	verifying = argv[1][0] == 'v';
	parse(argc - 1, argv + 1, &o, verifying);
	argc -= optind + 1;
	argv += optind + 1;
	if (o.jobs == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		o.jobs = n > 0 && n < 1024 ? (int)n : 1;
	}
	if (verifying && argc != 1)
		kv_die(KV_USAGE, "verify takes one MANIFEST ('-' for stdin)");
	rc = verifying ? verify(&o, argv[0]) : create(&o, argc, argv);
	free(o.exclude);
	return kv_fshut(rc);
}
