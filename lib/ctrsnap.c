/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctrsnap.h"
#include "jsonl.h"

static void
set_value(json_t *r, double v)
{
	if (isfinite(v)) {
		jset_num(r, "value", v);
		return;
	}
	jset_null(r, "value");
	jset_str(r, "value_state", isnan(v) ? "nan" : v > 0 ? "+inf" : "-inf");
}

json_t *
ctr_from_prom(const char *source, const struct prom_sample *s, double t)
{
	json_t *r = json_object(), *l = json_object();
	size_t i;

	if (r == NULL || l == NULL) {
		json_decref(r);
		json_decref(l);
		return NULL;
	}
	jset_str(r, "kind", "counter");
	jset_str(r, "source", source);
	jset_str(r, "name", s->name);
	for (i = 0; i < s->nlabels; i++)
		jset_str(l, s->labels[i].name, s->labels[i].value);
	json_object_set_new(r, "labels", l);
	set_value(r, s->value);
	jset_str(r, "type", s->type);
	if (strcmp(s->family, s->name) != 0)
		jset_str(r, "family", s->family);
	if (s->has_ts)
		json_object_set_new(r, "timestamp_ms", json_integer(s->ts_ms));
	jset_num(r, "t_unix_s", t);
	return r;
}

/* Read one unsigned decimal counter from a sysfs file. */
static int
read_u64(const char *path, uint64_t *v)
{
	FILE *fp = fopen(path, "r");
	char buf[64], *end;
	int ok;

	if (fp == NULL)
		return -1;
	ok = fgets(buf, sizeof(buf), fp) != NULL;
	fclose(fp);
	if (!ok)
		return -1;
	errno = 0;
	*v = strtoull(buf, &end, 10);
	if (end == buf || errno != 0 || (*end != '\n' && *end != '\0'))
		return -1;
	return 0;
}

static int
not_hidden(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

/*
 * Emit a record per counter file in dir (sorted by name).  labels is
 * copied into each record; words_to_bytes converts the 4-byte-word data
 * counters.  A missing dir is fine when optional.
 */
static int
read_dir(const char *dir, const char *source, const json_t *labels,
    bool words_to_bytes, bool optional, double t, ctr_emit emit, void *ctx,
    char *err, size_t errlen)
{
	struct dirent **ent;
	char path[4096], name[300];
	json_t *r;
	uint64_t v;
	int n, i, rc = 0;

	n = scandir(dir, &ent, not_hidden, alphasort);
	if (n < 0) {
		if (optional && errno == ENOENT)
			return 0;
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, ent[i]->d_name);
		if (rc == 0 && read_u64(path, &v) != 0) {
			snprintf(err, errlen, "%s: unreadable or not a counter",
			    path);
			rc = -1;
		}
		if (rc != 0) {
			free(ent[i]);
			continue;
		}
		r = json_object();
		jset_str(r, "kind", "counter");
		jset_str(r, "source", source);
		if (words_to_bytes && (strcmp(ent[i]->d_name, "port_xmit_data")
		    == 0 || strcmp(ent[i]->d_name, "port_rcv_data") == 0)) {
			snprintf(name, sizeof(name), "%s_bytes", ent[i]->d_name);
			jset_str(r, "name", name);
			json_object_set_new(r, "labels", json_deep_copy(labels));
			jset_u64(r, "value", v * 4);
			jset_str(r, "raw_name", ent[i]->d_name);
			jset_u64(r, "raw_value", v);
			jset_num(r, "scale", 4);
		} else {
			jset_str(r, "name", ent[i]->d_name);
			json_object_set_new(r, "labels", json_deep_copy(labels));
			jset_u64(r, "value", v);
		}
		jset_str(r, "type", "counter");
		jset_num(r, "t_unix_s", t);
		if (emit(r, ctx) != 0)
			rc = 1;
		free(ent[i]);
	}
	free(ent);
	return rc;
}

static bool
is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* One RDMA port's two counter directories. */
static int
ib_port(const char *root, const char *dev, const char *port, double t,
    ctr_emit emit, void *ctx, char *err, size_t errlen)
{
	char dir[4096], src[512];
	json_t *l = json_object();
	int rc;

	snprintf(src, sizeof(src), "ib:%s:%s", dev, port);
	jset_str(l, "device", dev);
	jset_str(l, "port", port);
	snprintf(dir, sizeof(dir), "%s/class/infiniband/%s/ports/%s/counters",
	    root, dev, port);
	jset_str(l, "group", "counters");
	rc = read_dir(dir, src, l, true, true, t, emit, ctx, err, errlen);
	snprintf(dir, sizeof(dir), "%s/class/infiniband/%s/ports/%s/"
	    "hw_counters", root, dev, port);
	jset_str(l, "group", "hw_counters");
	if (rc == 0)
		rc = read_dir(dir, src, l, false, true, t, emit, ctx, err,
		    errlen);
	json_decref(l);
	return rc;
}

/*
 * A name that is one directory entry of a sysfs class: not empty, no
 * '/', no leading '.' (so neither ".." nor a hidden entry).  Otherwise
 * false with err set, so "ib:../../x" cannot walk out of the class.
 */
static bool
entry_name_ok(const char *what, const char *name, char *err, size_t errlen)
{
	if (name[0] != '\0' && name[0] != '.' && strchr(name, '/') == NULL)
		return true;
	snprintf(err, errlen, "bad %s name '%s' (a name with no '/' and no "
	    "leading '.')", what, name);
	return false;
}

int
ctr_ib(const char *root, const char *dev, const char *port, double t,
    ctr_emit emit, void *ctx, bool *missing, char *err, size_t errlen)
{
	char dir[4096];
	struct dirent **ent;
	int n, i, rc = 0;

	*missing = false;
	if (!entry_name_ok("RDMA device", dev, err, errlen) || (port &&
	    !entry_name_ok("RDMA port", port, err, errlen))) {
		*missing = true;
		return -1;
	}
	snprintf(dir, sizeof(dir), "%s/class/infiniband/%s/ports%s%s", root,
	    dev, port ? "/" : "", port ? port : "");
	if (!is_dir(dir)) {
		*missing = true;
		snprintf(err, errlen, "no RDMA %s %s (%s; see ibv_devices)",
		    port ? "port" : "device", port ? port : dev, dir);
		return -1;
	}
	if (port)
		return ib_port(root, dev, port, t, emit, ctx, err, errlen);
	if ((n = scandir(dir, &ent, not_hidden, alphasort)) < 0) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (rc == 0)
			rc = ib_port(root, dev, ent[i]->d_name, t, emit, ctx,
			    err, errlen);
		free(ent[i]);
	}
	free(ent);
	return rc;
}

int
ctr_netdev(const char *root, const char *iface, double t, ctr_emit emit,
    void *ctx, bool *missing, char *err, size_t errlen)
{
	char dir[4096], src[300];
	json_t *l;
	int rc;

	*missing = false;
	if (!entry_name_ok("network interface", iface, err, errlen)) {
		*missing = true;
		return -1;
	}
	snprintf(dir, sizeof(dir), "%s/class/net/%s/statistics", root, iface);
	if (!is_dir(dir)) {
		*missing = true;
		snprintf(err, errlen, "no network interface %s (%s; see ip "
		    "link)", iface, dir);
		return -1;
	}
	snprintf(src, sizeof(src), "netdev:%s", iface);
	l = json_object();
	jset_str(l, "iface", iface);
	rc = read_dir(dir, src, l, false, false, t, emit, ctx, err, errlen);
	json_decref(l);
	return rc;
}

char *
ctr_key(const json_t *rec, char *err, size_t errlen)
{
	const char *src, *name;
	json_t *labels = json_object_get(rec, "labels");
	char *lab, *key;
	size_t n;

	if (jf_str(rec, "source", &src, err, errlen) != JF_OK ||
	    jf_str(rec, "name", &name, err, errlen) != JF_OK) {
		snprintf(err, errlen, "a counter record needs string fields "
		    "source and name");
		return NULL;
	}
	if (labels != NULL && !json_is_object(labels)) {
		snprintf(err, errlen, "labels must be an object");
		return NULL;
	}
	lab = labels ? json_dumps(labels, JSON_COMPACT | JSON_SORT_KEYS) :
	    strdup("{}");
	if (lab == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	n = strlen(src) + strlen(name) + strlen(lab) + 3;
	if ((key = malloc(n)) != NULL)
		snprintf(key, n, "%s\x1f%s\x1f%s", src, name, lab);
	free(lab);
	return key;
}

/* A record's value and time; *finite false for a null value. */
static int
value_of(const json_t *r, double *v, double *t, bool *finite, char *err,
    size_t errlen)
{
	enum jf_status st = jf_num(r, "value", v, err, errlen);

	if (st == JF_BAD)
		return -1;
	if (st == JF_ABSENT && !json_is_null(json_object_get(r, "value"))) {
		snprintf(err, errlen, "a counter record needs a numeric value");
		return -1;
	}
	*finite = st == JF_OK;
	if (jf_num(r, "t_unix_s", t, err, errlen) != JF_OK) {
		snprintf(err, errlen, "a counter record needs a numeric "
		    "t_unix_s");
		return -1;
	}
	return 0;
}

json_t *
ctr_delta(const json_t *before, const json_t *after, char *err, size_t errlen)
{
	const json_t *any = after ? after : before;
	double vb = 0, va = 0, tb = 0, ta = 0;
	bool fb = false, fa = false, gauge;
	const char *type = NULL;
	json_t *r;

	if ((before && value_of(before, &vb, &tb, &fb, err, errlen) != 0) ||
	    (after && value_of(after, &va, &ta, &fa, err, errlen) != 0))
		return NULL;
	jf_str(any, "type", &type, err, errlen);
	/* gauges and untyped samples may go down; the rest are counters */
	gauge = type && (strcmp(type, "gauge") == 0 ||
	    strcmp(type, "untyped") == 0);
	r = json_object();
	jset_str(r, "kind", "delta");
	json_object_set(r, "source", json_object_get(any, "source"));
	json_object_set(r, "name", json_object_get(any, "name"));
	json_object_set_new(r, "labels", json_object_get(any, "labels") ?
	    json_deep_copy(json_object_get(any, "labels")) : json_object());
	if (type)
		jset_str(r, "type", type);
	if (before == NULL || after == NULL) {
		jset_null(r, "before");
		jset_null(r, "after");
		if (before)
			jset_num(r, "before", fb ? vb : NAN);
		if (after)
			jset_num(r, "after", fa ? va : NAN);
		jset_null(r, "delta");
		jset_null(r, "seconds");
		jset_bool(r, "reset", false);
		jset_str(r, "state", before ? "absent_after" : "absent_before");
		return r;
	}
	jset_num(r, "before", fb ? vb : NAN);
	jset_num(r, "after", fa ? va : NAN);
	jset_num(r, "seconds", ta - tb);
	if (!fb || !fa) {
		jset_null(r, "delta");
		jset_bool(r, "reset", false);
		jset_str(r, "state", "not_finite");
	} else if (va < vb && !gauge) {
		jset_num(r, "delta", va >= 0 ? va : NAN);
		jset_bool(r, "reset", true);
		jset_str(r, "state", va >= 0 ? "ok" : "negative_counter");
	} else {
		jset_num(r, "delta", va - vb);
		jset_bool(r, "reset", false);
		jset_str(r, "state", "ok");
	}
	jset_num(r, "t_unix_s", ta);
	return r;
}
