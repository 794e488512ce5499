/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "preflight.h"

int
pf_parse_path(const char *s, enum pf_path *out)
{
	if (s && strcmp(s, "dmabuf") == 0)
		*out = PF_DMABUF;
	else if (s && strcmp(s, "peermem") == 0)
		*out = PF_PEERMEM;
	else
		return -1;
	return 0;
}

const char *
pf_path_name(enum pf_path p)
{
	return p == PF_DMABUF ? "dmabuf" : "peermem";
}

/* A UUID body: 32 hex digits with dashes anywhere; at least 1 digit when
 * a prefix is allowed.  Lower-cases into out. */
static int
uuid_body(const char *s, size_t n, char *out, size_t cap, size_t *digits)
{
	size_t i, o = 0;

	*digits = 0;
	for (i = 0; i < n; i++) {
		if (o + 1 >= cap)
			return -1;
		if (s[i] == '-') {
			out[o++] = '-';
			continue;
		}
		if (!isxdigit((unsigned char)s[i]))
			return -1;
		out[o++] = (char)tolower((unsigned char)s[i]);
		(*digits)++;
	}
	out[o] = '\0';
	return *digits > 0 && *digits <= 32 ? 0 : -1;
}

/* Parse one entry of n bytes at s into sel; 0 or -1 with err. */
static int
parse_one(const char *s, size_t n, struct pf_sel *sel, char *err,
    size_t errlen)
{
	char body[64];
	size_t digits, i;
	const char *slash;

	memset(sel, 0, sizeof(*sel));
	if (n >= sizeof(sel->id)) {
		snprintf(err, errlen, "GPU entry of %zu characters is too long",
		    n);
		return -1;
	}
	for (i = 0; i < n && isdigit((unsigned char)s[i]); i++)
		;
	if (i == n) {
		if (n > 4) {
			snprintf(err, errlen, "GPU index %.*s out of range "
			    "(0..9999)", (int)n, s);
			return -1;
		}
		sel->kind = PF_SEL_INDEX;
		sel->index = atoi(s);
		snprintf(sel->id, sizeof(sel->id), "%d", sel->index);
		return 0;
	}
	if (n > 8 && strncmp(s, "MIG-GPU-", 8) == 0 &&
	    (slash = memchr(s, '/', n)) != NULL) {
		/* MIG-GPU-<uuid>/GI/CI: the old MIG syntax. */
		int gi, ci, used = 0;
		char tail[32];

		snprintf(tail, sizeof(tail), "%.*s", (int)(n - (size_t)(slash - s)),
		    slash);
		if (uuid_body(s + 8, (size_t)(slash - s - 8), body, sizeof(body),
		    &digits) != 0 || digits != 32 ||
		    sscanf(tail, "/%d/%d%n", &gi, &ci, &used) != 2 ||
		    (size_t)used != strlen(tail) || gi < 0 || ci < 0) {
			snprintf(err, errlen, "bad MIG id \"%.*s\" (want "
			    "MIG-GPU-<uuid>/GI/CI or MIG-<uuid>)", (int)n, s);
			return -1;
		}
		sel->kind = PF_SEL_MIG;
		snprintf(sel->id, sizeof(sel->id), "MIG-GPU-%s%s", body, tail);
		return 0;
	}
	if (n > 4 && (strncmp(s, "GPU-", 4) == 0 || strncmp(s, "MIG-", 4) == 0)) {
		int mig = s[0] == 'M';

		if (uuid_body(s + 4, n - 4, body, sizeof(body), &digits) != 0 ||
		    (mig && digits != 32)) {
			snprintf(err, errlen, "bad %s \"%.*s\" (want %s<uuid>%s)",
			    mig ? "MIG id" : "GPU UUID", (int)n, s,
			    mig ? "MIG-" : "GPU-", mig ? "" : " or a prefix of it");
			return -1;
		}
		sel->kind = mig ? PF_SEL_MIG : PF_SEL_UUID;
		snprintf(sel->id, sizeof(sel->id), "%s%s", mig ? "MIG-" : "GPU-",
		    body);
		return 0;
	}
	snprintf(err, errlen, "bad GPU entry \"%.*s\" (want an index, "
	    "GPU-<uuid> or MIG-<uuid>)", (int)n, s);
	return -1;
}

int
pf_parse_gpus(const char *s, struct pf_sel *sel, int max, char *err,
    size_t errlen)
{
	int n = 0, i;
	const char *p = s, *end;
	size_t len;

	while (isspace((unsigned char)*p))
		p++;
	if (*p == '\0')
		return 0;
	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		end = p + strcspn(p, ",");
		len = (size_t)(end - p);
		while (len > 0 && isspace((unsigned char)p[len - 1]))
			len--;
		if (len == 0) {
			snprintf(err, errlen, "empty entry in GPU list \"%s\"", s);
			return -1;
		}
		if (n == max) {
			snprintf(err, errlen, "more than %d GPUs listed", max);
			return -1;
		}
		if (parse_one(p, len, &sel[n], err, errlen) != 0)
			return -1;
		for (i = 0; i < n; i++)
			if (strcmp(sel[i].id, sel[n].id) == 0) {
				snprintf(err, errlen, "GPU %s listed twice",
				    sel[n].id);
				return -1;
			}
		n++;
		if (*end == '\0')
			return n;
		p = end + 1;
	}
}

/* Does device d match selection s? */
static int
matches(const struct pf_sel *s, const struct pf_dev *d)
{
	char gpu[64];

	switch (s->kind) {
	case PF_SEL_INDEX:
		return d->ordinal == s->index;
	case PF_SEL_UUID:
		return strncasecmp(d->uuid, s->id, strlen(s->id)) == 0;
	case PF_SEL_MIG:
		if (strncmp(s->id, "MIG-GPU-", 8) != 0)
			return strcasecmp(d->uuid, s->id) == 0;
		snprintf(gpu, sizeof(gpu), "%.*s", (int)strcspn(s->id + 4, "/"),
		    s->id + 4);
		return strncasecmp(d->uuid, "MIG-", 4) == 0 &&
		    strcasecmp(d->parent_uuid, gpu) == 0;
	}
	return 0;
}

int
pf_resolve(const struct pf_sel *sel, int nsel, const struct pf_dev *dev,
    int ndev, int *out, char *err, size_t errlen)
{
	int i, j, k, hit;

	for (i = 0; i < nsel; i++) {
		hit = -1;
		for (j = 0; j < ndev; j++) {
			if (!matches(&sel[i], &dev[j]))
				continue;
			if (hit >= 0) {
				snprintf(err, errlen, "GPU %s is ambiguous: it "
				    "matches devices %d and %d", sel[i].id,
				    dev[hit].ordinal, dev[j].ordinal);
				return -1;
			}
			hit = j;
		}
		if (hit < 0) {
			snprintf(err, errlen, "no GPU matches %s (the driver "
			    "lists %d device%s)", sel[i].id, ndev,
			    ndev == 1 ? "" : "s");
			return -1;
		}
		for (k = 0; k < i; k++)
			if (out[k] == dev[hit].ordinal) {
				snprintf(err, errlen, "GPU %s is device %d, "
				    "already selected", sel[i].id,
				    dev[hit].ordinal);
				return -1;
			}
		out[i] = dev[hit].ordinal;
	}
	return nsel;
}

static void
reason(struct pf_verdict *v, const char *fmt, ...)
{
	va_list ap;

	v->ready = false;
	if (v->nreasons >= PF_MAX_REASONS)
		return;
	va_start(ap, fmt);
	vsnprintf(v->reasons[v->nreasons++], PF_REASON_LEN, fmt, ap);
	va_end(ap);
}

static const char *
attr_text(int a)
{
	return a == 0 ? "0" : "unreadable";
}

void
pf_decide(const struct pf_facts *f, enum pf_path p, struct pf_verdict *v)
{
	int i;

	memset(v, 0, sizeof(*v));
	v->ready = true;
	if (f->ngpus <= 0)
		reason(v, "no GPU selected");
	for (i = 0; i < f->ngpus && i < PF_MAX_GPUS; i++) {
		const struct pf_gpu *g = &f->gpu[i];

		if (p == PF_DMABUF && g->attr_dmabuf != 1)
			reason(v, "GPU %d: DMA-BUF not supported (attribute 124 "
			    "CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is %s)",
			    g->ordinal, attr_text(g->attr_dmabuf));
		if (p == PF_PEERMEM && g->attr_rdma != 1)
			reason(v, "GPU %d: GPUDirect RDMA not supported (attribute "
			    "116 CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED is %s)",
			    g->ordinal, attr_text(g->attr_rdma));
	}
	if (!f->rdma_devices)
		reason(v, "no RDMA device (/sys/class/infiniband is empty or "
		    "absent)");
	if (p == PF_DMABUF) {
		if (!f->ibv_dmabuf)
			reason(v, "libibverbs lacks ibv_reg_dmabuf_mr (rdma-core "
			    "34 or later needed)");
		if (!f->cu_dmabuf_handle)
			reason(v, "the CUDA driver lacks "
			    "cuMemGetHandleForAddressRange (CUDA 11.7 or later "
			    "needed)");
		return;
	}
	if (!f->peermem_loaded && f->peermem_on_disk)
		reason(v, "nvidia_peermem is installed but not loaded (run "
		    "modprobe nvidia_peermem)");
	else if (!f->peermem_loaded)
		reason(v, "no peer-memory module is loaded or installed "
		    "(nvidia_peermem ships with the NVIDIA driver)");
	else if (f->peermem_vers == PF_VERS_DIFFER)
		reason(v, "the peer-memory module's version differs from the "
		    "NVIDIA driver's (reload nvidia_peermem)");
}

enum pf_vers
pf_compare_versions(const char *module, const char *driver)
{
	if (module == NULL || driver == NULL || *module == '\0' ||
	    *driver == '\0')
		return PF_VERS_UNKNOWN;
	return strcmp(module, driver) == 0 ? PF_VERS_MATCH : PF_VERS_DIFFER;
}

/* Read the first line of root/rel into out ("" when unreadable). */
static void
read_line(const char *root, const char *rel, char *out, size_t cap)
{
	char path[4096];
	FILE *fp;

	out[0] = '\0';
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	if ((fp = fopen(path, "r")) == NULL)
		return;
	if (fgets(out, (int)cap, fp) == NULL)
		out[0] = '\0';
	out[strcspn(out, "\r\n")] = '\0';
	fclose(fp);
}

static int
is_dir(const char *root, const char *rel)
{
	char path[4096];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Entries of root/rel, sorted, comma-separated into out; the count. */
static int
list_dir(const char *root, const char *rel, char *out, size_t cap)
{
	char path[4096];
	struct dirent **ent;
	int n, i, count = 0;
	size_t o = 0;

	out[0] = '\0';
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	if ((n = scandir(path, &ent, NULL, alphasort)) < 0)
		return 0;
	for (i = 0; i < n; i++) {
		if (ent[i]->d_name[0] != '.' && o + strlen(ent[i]->d_name) + 2 < cap) {
			o += (size_t)snprintf(out + o, cap - o, "%s%s",
			    count ? "," : "", ent[i]->d_name);
			count++;
		}
		free(ent[i]);
	}
	free(ent);
	return count;
}

static int
module_name(const char *name)
{
	static const char *const names[] = {
		"nvidia-peermem.ko", "nvidia_peermem.ko", "nv_peer_mem.ko",
		"nv-peer-mem.ko"
	};
	size_t i, n;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		n = strlen(names[i]);
		if (strncmp(name, names[i], n) == 0 && (name[n] == '\0' ||
		    strcmp(name + n, ".xz") == 0 || strcmp(name + n, ".zst") == 0 ||
		    strcmp(name + n, ".gz") == 0))
			return 1;
	}
	return 0;
}

/* Search dir (depth-limited) for a peer-memory module file. */
static int
find_module(const char *dir, int depth, char *out, size_t cap)
{
	char sub[4096];
	DIR *d;
	struct dirent *e;
	int found = 0;

	if (depth > 8 || (d = opendir(dir)) == NULL)
		return 0;
	while (!found && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name);
		if (module_name(e->d_name)) {
			found = snprintf(out, cap, "%s", sub) > 0;
		} else if (e->d_type == DT_DIR || e->d_type == DT_UNKNOWN) {
			found = find_module(sub, depth + 1, out, cap);
		}
	}
	closedir(d);
	return found;
}

void
pf_read_sysfs(const char *root, const char *release, struct pf_sysfs *s)
{
	char buf[64], dir[4096];

	memset(s, 0, sizeof(*s));
	s->refcnt = -1;
	if (root == NULL || strcmp(root, "/") == 0)
		root = "";
	if (is_dir(root, "sys/module/nvidia_peermem"))
		snprintf(s->module, sizeof(s->module), "nvidia_peermem");
	else if (is_dir(root, "sys/module/nv_peer_mem"))
		snprintf(s->module, sizeof(s->module), "nv_peer_mem");
	if (s->module[0]) {
		char rel[128];

		snprintf(rel, sizeof(rel), "sys/module/%s/refcnt", s->module);
		read_line(root, rel, buf, sizeof(buf));
		if (buf[0] && isdigit((unsigned char)buf[0]))
			s->refcnt = strtol(buf, NULL, 10);
		snprintf(rel, sizeof(rel), "sys/module/%s/version", s->module);
		read_line(root, rel, s->module_version,
		    sizeof(s->module_version));
	}
	read_line(root, "sys/module/nvidia/version", s->nvidia_version,
	    sizeof(s->nvidia_version));
	list_dir(root, "sys/kernel/mm/memory_peers", s->memory_peers,
	    sizeof(s->memory_peers));
	s->nrdma = list_dir(root, "sys/class/infiniband", s->rdma_devices,
	    sizeof(s->rdma_devices));
	if (release && *release) {
		snprintf(dir, sizeof(dir), "%s/lib/modules/%s", root, release);
		find_module(dir, 0, s->on_disk, sizeof(s->on_disk));
	}
}
