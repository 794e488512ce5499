/* SPDX-License-Identifier: MIT */
/*
 * gpu-preflight: fail-closed check that GPU memory can be registered for
 * RDMA by the path the operator chose (dmabuf or peermem), per GPU.
 */
#include <dlfcn.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "cuda.h"
#include "err.h"
#include "jsonl.h"
#include "preflight.h"

#define SYNOPSIS "usage: gpu-preflight --registration dmabuf|peermem " \
	"[--emit-env] [--gpus LIST]\n                     [--sysfs-root DIR]\n"

struct opts {
	enum pf_path path;
	const char *gpus;	/* --gpus, or NULL */
	const char *sysfs_root;
	int emit_env;
};

/* What the driver says about one physical GPU. */
struct gpu_info {
	struct pf_dev dev;
	char name[128];
	json_t *selected;	/* the list entries that chose it */
};

static struct pf_facts facts;
static struct gpu_info gpus[PF_MAX_GPUS];

/* Set o[key] = v, taking v; a failure (out of memory) is fatal. */
static void
put(json_t *o, const char *key, json_t *v)
{
	if (json_object_set_new(o, key, v) != 0)
		kv_die(KV_SOFTWARE, "out of memory building the record (%s)",
		    key);
}

/* Append v to a, taking v; a failure (out of memory) is fatal. */
static void
push(json_t *a, json_t *v)
{
	if (json_array_append_new(a, v) != 0)
		kv_die(KV_SOFTWARE, "out of memory building the record");
}

static json_t *
str_or_null(const char *s)
{
	return s && *s ? json_string(s) : json_null();
}

/* A comma-separated list as a JSON array of strings. */
static json_t *
csv_array(const char *s)
{
	json_t *a = json_array();
	const char *p = s;
	size_t n;

	while (*p) {
		n = strcspn(p, ",");
		push(a, json_stringn(p, n));
		p += n + (p[n] == ',');
	}
	return a;
}

static json_t *
host_facts(const struct pf_sysfs *s, int driver_version)
{
	json_t *h = json_object();

	put(h, "cuda_driver_version", driver_version > 0 ?
	    json_integer(driver_version) : json_null());
	put(h, "nvidia_driver_version", str_or_null(s->nvidia_version));
	put(h, "peermem_module", str_or_null(s->module));
	put(h, "peermem_refcnt", s->refcnt >= 0 ?
	    json_integer(s->refcnt) : json_null());
	put(h, "peermem_version", str_or_null(s->module_version));
	put(h, "peermem_on_disk", str_or_null(s->on_disk));
	put(h, "memory_peers", csv_array(s->memory_peers));
	put(h, "rdma_devices", csv_array(s->rdma_devices));
	put(h, "ibv_reg_dmabuf_mr", json_boolean(facts.ibv_dmabuf));
	put(h, "cu_mem_get_handle_for_address_range",
	    driver_version > 0 ? json_boolean(facts.cu_dmabuf_handle) :
	    json_null());
	return h;
}

static json_t *
reasons_array(const struct pf_verdict *v)
{
	json_t *a = json_array();
	int i;

	for (i = 0; i < v->nreasons; i++)
		push(a, json_string(v->reasons[i]));
	return a;
}

static json_t *
path_obj(const struct pf_verdict *v)
{
	json_t *o = json_object();

	put(o, "ready", json_boolean(v->ready));
	put(o, "reasons", reasons_array(v));
	return o;
}

/* Build the verdict record; why (no driver) overrides the decision. */
static json_t *
verdict(const struct opts *o, const struct pf_sysfs *s, int drv,
    const char *why, int *ready)
{
	struct pf_verdict v[2];
	json_t *rec = json_object(), *paths = json_object(), *env = json_object();
	json_t *reasons;

	pf_decide(&facts, PF_DMABUF, &v[0]);
	pf_decide(&facts, PF_PEERMEM, &v[1]);
	*ready = why == NULL && v[o->path].ready;
	if (why) {
		reasons = json_array();
		push(reasons, json_string(why));
	} else {
		reasons = reasons_array(&v[o->path]);
	}
	put(rec, "kind", json_string("verdict"));
	put(rec, "registration", json_string(pf_path_name(o->path)));
	put(rec, "ready", json_boolean(*ready));
	put(rec, "reasons", reasons);
	put(rec, "gpus", json_integer(facts.ngpus));
	put(env, "with_nvidia_peermem", json_integer(o->path == PF_PEERMEM));
	put(rec, "env", env);
	if (why == NULL) {
		put(paths, "dmabuf", path_obj(&v[0]));
		put(paths, "peermem", path_obj(&v[1]));
		put(rec, "paths", paths);
	} else {
		json_decref(paths);
	}
	put(rec, "host", host_facts(s, drv));
	return rec;
}

static int
attr(const struct kv_cuda *cu, int which, CUdevice dev)
{
	int v = -1;

	if (cu->DeviceGetAttribute(&v, which, dev) != CUDA_SUCCESS)
		return -1;
	return v != 0;
}

/* Enumerate the driver's devices into dev; returns the count or -1. */
static int
enumerate(const struct kv_cuda *cu, struct pf_dev *dev, char *name_of[],
    char *err, size_t errlen)
{
	int n, i;
	CUdevice d;
	CUuuid u;
	CUresult rc;
	char why[160];

	if ((rc = cu->DeviceGetCount(&n)) != CUDA_SUCCESS) {
		snprintf(err, errlen, "cuDeviceGetCount: %s",
		    kv_cuda_strerror(cu, rc, why, sizeof(why)));
		return -1;
	}
	for (i = 0; i < n && i < PF_MAX_GPUS; i++) {
		memset(&dev[i], 0, sizeof(dev[i]));
		dev[i].ordinal = i;
		if ((rc = cu->DeviceGet(&d, i)) != CUDA_SUCCESS ||
		    (rc = cu->DeviceGetUuid(&u, d)) != CUDA_SUCCESS ||
		    (rc = cu->DeviceGetPCIBusId(dev[i].pci_bus_id,
		    sizeof(dev[i].pci_bus_id), d)) != CUDA_SUCCESS) {
			snprintf(err, errlen, "GPU %d: %s", i,
			    kv_cuda_strerror(cu, rc, why, sizeof(why)));
			return -1;
		}
		kv_cuda_uuid_str(&u, "GPU-", dev[i].uuid, sizeof(dev[i].uuid));
		snprintf(dev[i].parent_uuid, sizeof(dev[i].parent_uuid), "%s",
		    dev[i].uuid);
		if (cu->DeviceGetUuidV1 && cu->DeviceGetUuidV1(&u, d) ==
		    CUDA_SUCCESS)
			kv_cuda_uuid_str(&u, "GPU-", dev[i].parent_uuid,
			    sizeof(dev[i].parent_uuid));
		if (strcmp(dev[i].uuid, dev[i].parent_uuid) != 0)
			memcpy(dev[i].uuid, "MIG-", 4);
		if (!cu->DeviceGetName || cu->DeviceGetName(name_of[i], 128, d))
			snprintf(name_of[i], 128, "unknown");
	}
	return i;
}

/* Select GPUs, fill facts and gpus[]; returns 0 or an exit status. */
static int
select_gpus(const struct opts *o, const struct kv_cuda *cu)
{
	static struct pf_dev dev[PF_MAX_GPUS];
	struct pf_sel sel[PF_MAX_GPUS];
	char *names[PF_MAX_GPUS], namebuf[PF_MAX_GPUS][128], err[256];
	int ord[PF_MAX_GPUS], ndev, nsel = 0, i, j;
	CUdevice d;

	for (i = 0; i < PF_MAX_GPUS; i++)
		names[i] = namebuf[i];
	if ((ndev = enumerate(cu, dev, names, err, sizeof(err))) < 0)
		kv_die(KV_UNAVAILABLE, "%s", err);
	if (o->gpus) {
		nsel = pf_parse_gpus(o->gpus, sel, PF_MAX_GPUS, err, sizeof(err));
		if (nsel < 0 || pf_resolve(sel, nsel, dev, ndev, ord, err,
		    sizeof(err)) < 0)
			kv_die(nsel < 0 ? KV_USAGE : KV_UNAVAILABLE, "--gpus: %s",
			    err);
	} else {
		const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
		int ncvd = cvd ? pf_parse_gpus(cvd, sel, PF_MAX_GPUS, err,
		    sizeof(err)) : -1;

		/* The driver applies CUDA_VISIBLE_DEVICES itself, silently
		 * dropping everything after an entry that matches no GPU. */
		if (ncvd >= 0 && ncvd != ndev)
			kv_die(KV_UNAVAILABLE, "CUDA_VISIBLE_DEVICES lists %d "
			    "GPU%s, the driver shows %d (an entry matches no "
			    "GPU)", ncvd, ncvd == 1 ? "" : "s", ndev);
		for (nsel = 0; nsel < ndev; nsel++) {
			ord[nsel] = nsel;
			if (ncvd < 0)
				snprintf(sel[nsel].id, sizeof(sel[nsel].id), "%d",
				    nsel);
		}
	}
	for (i = 0; i < nsel; i++) {
		const struct pf_dev *pd = &dev[ord[i]];

		for (j = 0; j < facts.ngpus; j++)
			if (strcmp(gpus[j].dev.pci_bus_id, pd->pci_bus_id) == 0)
				break;
		if (j == facts.ngpus) {
			gpus[j].dev = *pd;
			snprintf(gpus[j].dev.uuid, sizeof(gpus[j].dev.uuid), "%s",
			    pd->parent_uuid);
			snprintf(gpus[j].name, sizeof(gpus[j].name), "%s",
			    names[ord[i]]);
			if ((gpus[j].selected = json_array()) == NULL)
				kv_die(KV_SOFTWARE, "out of memory");
			facts.gpu[j].ordinal = pd->ordinal;
			if (cu->DeviceGet(&d, pd->ordinal) == CUDA_SUCCESS) {
				facts.gpu[j].attr_rdma = attr(cu,
				    CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED, d);
				facts.gpu[j].attr_dmabuf = attr(cu,
				    CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, d);
			} else {
				facts.gpu[j].attr_rdma = facts.gpu[j].attr_dmabuf = -1;
			}
			facts.ngpus++;
		}
		push(gpus[j].selected, json_string(strcmp(pd->uuid,
		    pd->parent_uuid) ? pd->uuid : sel[i].id));
	}
	return 0;
}

static json_t *
attr_json(int a)
{
	return a < 0 ? json_null() : json_integer(a);
}

/* One gpu record per physical GPU; returns an exit status. */
static int
print_gpus(int drv)
{
	json_t *r;
	int i, rc = KV_OK;

	for (i = 0; i < facts.ngpus && rc == KV_OK; i++) {
		r = json_pack("{s:s, s:i, s:s, s:s, s:s, s:O, s:o, s:o, s:i}",
		    "kind", "gpu", "cuda_ordinal", gpus[i].dev.ordinal,
		    "uuid", gpus[i].dev.uuid, "pci_bus_id", gpus[i].dev.pci_bus_id,
		    "name", gpus[i].name, "selected", gpus[i].selected,
		    "gpu_direct_rdma_supported", attr_json(facts.gpu[i].attr_rdma),
		    "dma_buf_supported", attr_json(facts.gpu[i].attr_dmabuf),
		    "cuda_driver_version", drv);
		if (r == NULL)
			kv_die(KV_SOFTWARE, "out of memory building the gpu "
			    "record");
		rc = jsonl_write(stdout, r, true) ? KV_IOERR : KV_OK;
		json_decref(r);
	}
	return rc;
}

static int
ibv_has_dmabuf(void)
{
	void *h = dlopen("libibverbs.so.1", RTLD_LAZY | RTLD_LOCAL);
	int ok;

	if (h == NULL)
		return 0;
	ok = dlsym(h, "ibv_reg_dmabuf_mr") != NULL;
	dlclose(h);
	return ok;
}

/* Emit the records (or the export lines); returns the exit status. */
static int
report(const struct opts *o, const struct pf_sysfs *s, int drv,
    const char *why)
{
	json_t *v, *r;
	int ready, rc, i;

	v = verdict(o, s, drv, why, &ready);
	if (o->emit_env) {
		rc = 0;
		if (ready)
			rc = printf("export KVGATE_GPU_REGISTRATION=%s\n"
			    "export WITH_NVIDIA_PEERMEM=%d\n", pf_path_name(o->path),
			    o->path == PF_PEERMEM) < 0 || fflush(stdout) != 0;
	} else {
		rc = print_gpus(drv) != KV_OK || jsonl_write(stdout, v, true);
	}
	r = json_object_get(v, "reasons");
	for (i = 0; !ready && why == NULL && i < (int)json_array_size(r); i++)
		kv_warn("not ready for %s: %s", pf_path_name(o->path),
		    json_string_value(json_array_get(r, (size_t)i)));
	json_decref(v);
	for (i = 0; i < facts.ngpus; i++)
		json_decref(gpus[i].selected);
	if (rc)
		return KV_IOERR;
	return why ? KV_UNAVAILABLE : ready ? KV_OK : KV_FAIL;
}

static void
usage(void)
{
	fputs(SYNOPSIS, stderr);
	exit(KV_USAGE);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "emit-env", no_argument, NULL, 'e' },
		{ "gpus", required_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ "registration", required_argument, NULL, 'r' },
		{ "sysfs-root", required_argument, NULL, 's' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	struct opts o = { .sysfs_root = "/" };
	struct pf_sel sel[PF_MAX_GPUS];
	struct pf_sysfs s;
	struct kv_cuda cu;
	struct utsname un;
	const char *reg = getenv("KVGATE_GPU_REGISTRATION"), *cvd;
	char err[512], why[600];
	int c, drv = 0, status;
	CUresult rc;

	kv_setprogname(argv[0]);
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'e': o.emit_env = 1; break;
		case 'g': o.gpus = optarg; break;
		case 'h': fputs(SYNOPSIS, stdout); return kv_fshut(KV_OK);
		case 'r': reg = optarg; break;
		case 's': o.sysfs_root = optarg; break;
		case 'V': kv_version();
		default: usage();
		}
	}
	if (optind != argc)
		kv_die(KV_USAGE, "unexpected argument: %s", argv[optind]);
	if (reg == NULL || *reg == '\0')
		kv_die(KV_USAGE, "no registration path chosen: give "
		    "--registration dmabuf or --registration peermem (or set "
		    "KVGATE_GPU_REGISTRATION); there is no default");
	if (pf_parse_path(reg, &o.path) != 0)
		kv_die(KV_USAGE, "registration \"%s\": must be dmabuf or peermem",
		    reg);
	if (o.gpus && pf_parse_gpus(o.gpus, sel, PF_MAX_GPUS, err,
	    sizeof(err)) < 0)
		kv_die(KV_USAGE, "--gpus: %s", err);
	if (!o.gpus && (cvd = getenv("CUDA_VISIBLE_DEVICES")) != NULL &&
	    pf_parse_gpus(cvd, sel, PF_MAX_GPUS, err, sizeof(err)) < 0)
		kv_die(KV_USAGE, "CUDA_VISIBLE_DEVICES: %s", err);

	pf_read_sysfs(o.sysfs_root, uname(&un) == 0 ? un.release : NULL, &s);
	facts.rdma_devices = s.nrdma > 0;
	facts.peermem_loaded = s.module[0] != '\0';
	facts.peermem_on_disk = s.on_disk[0] != '\0';
	facts.peermem_vers = strcmp(s.module, "nvidia_peermem") == 0 ?
	    pf_compare_versions(s.module_version, s.nvidia_version) :
	    PF_VERS_UNKNOWN;
	facts.ibv_dmabuf = ibv_has_dmabuf();

	if (kv_cuda_load(&cu, err, sizeof(err)) != 0) {
		snprintf(why, sizeof(why), "no CUDA driver: %s (is the NVIDIA "
		    "driver installed? gpu-preflight needs libcuda.so.1)", err);
		kv_warn("%s", why);
		return kv_fshut(report(&o, &s, 0, why));
	}
	facts.cu_dmabuf_handle = cu.MemGetHandleForAddressRange != NULL;
	if ((rc = cu.DriverGetVersion(&drv)) != CUDA_SUCCESS) {
		snprintf(why, sizeof(why), "cuDriverGetVersion: %s (is the "
		    "NVIDIA driver installed and its kernel module loaded?)",
		    kv_cuda_strerror(&cu, rc, err, sizeof(err)));
		kv_warn("%s", why);
		status = report(&o, &s, 0, why);
	} else if ((status = select_gpus(&o, &cu)) == KV_OK) {
		status = report(&o, &s, drv, NULL);
	}
	kv_cuda_unload(&cu);
	return kv_fshut(status);
}
