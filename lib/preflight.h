/* SPDX-License-Identifier: MIT */
#ifndef KV_PREFLIGHT_H
#define KV_PREFLIGHT_H

/*
 * gpu-preflight's logic: the GPU list syntax, the host facts read from
 * sysfs, and the decision, a pure function of the facts.
 */

#include <stdbool.h>
#include <stddef.h>

#define PF_MAX_GPUS	64
#define PF_MAX_REASONS	16
#define PF_REASON_LEN	200

enum pf_path { PF_DMABUF = 0, PF_PEERMEM = 1 };

/* Parse "dmabuf" or "peermem"; 0, or -1. */
int pf_parse_path(const char *s, enum pf_path *out);
const char *pf_path_name(enum pf_path p);

/* One entry of --gpus or CUDA_VISIBLE_DEVICES. */
enum pf_sel_kind { PF_SEL_INDEX, PF_SEL_UUID, PF_SEL_MIG };
struct pf_sel {
	enum pf_sel_kind kind;
	int index;		/* PF_SEL_INDEX */
	char id[128];		/* "GPU-…", "MIG-…" as given, lower-cased hex */
};

/*
 * Parse a comma-separated GPU list: indices ("0,1"), GPU UUIDs
 * ("GPU-8f6a…", a unique prefix allowed as CUDA allows), MIG ids
 * ("MIG-<uuid>", or the old "MIG-GPU-<uuid>/GI/CI").  Spaces around
 * entries are ignored; duplicates and empty entries are errors.  Returns
 * the count, or -1 with the reason in err.
 */
int pf_parse_gpus(const char *s, struct pf_sel *sel, int max, char *err,
    size_t errlen);

/* A device the driver enumerates, as gpu-preflight sees it. */
struct pf_dev {
	int ordinal;
	char uuid[48];		/* cuDeviceGetUuid_v2: "GPU-…" or "MIG-…" */
	char parent_uuid[48];	/* cuDeviceGetUuid: the physical GPU */
	char pci_bus_id[32];
};

/*
 * Resolve a selection against the driver's devices: out gets ordinals
 * in selection order.  Returns the count, or -1 with err naming the
 * entry no device matches (or that matches two).
 */
int pf_resolve(const struct pf_sel *sel, int nsel, const struct pf_dev *dev,
    int ndev, int *out, char *err, size_t errlen);

/* Per-GPU facts; attributes are 1, 0, or -1 when the query failed. */
struct pf_gpu {
	int ordinal;
	int attr_rdma;		/* 116 CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED */
	int attr_dmabuf;	/* 124 CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED */
};

/* Version agreement between the peer-memory module and the NVIDIA driver. */
enum pf_vers { PF_VERS_UNKNOWN = 0, PF_VERS_MATCH, PF_VERS_DIFFER };

/* Host facts.  Each is what was observed; nothing is assumed. */
struct pf_facts {
	int ngpus;
	struct pf_gpu gpu[PF_MAX_GPUS];
	bool rdma_devices;	/* /sys/class/infiniband has an entry */
	bool peermem_loaded;	/* /sys/module/nvidia_peermem or nv_peer_mem */
	bool peermem_on_disk;	/* nvidia-peermem.ko or nv_peer_mem.ko installed */
	enum pf_vers peermem_vers;
	bool ibv_dmabuf;	/* libibverbs exports ibv_reg_dmabuf_mr */
	bool cu_dmabuf_handle;	/* the driver exports cuMemGetHandleForAddressRange */
};

struct pf_verdict {
	bool ready;
	int nreasons;
	char reasons[PF_MAX_REASONS][PF_REASON_LEN];
};

/*
 * Decide whether registration path p is ready on a host with facts f.
 * Ready iff no reason is found; every failing condition adds one reason
 * (per GPU for the GPU attributes).  Pure: no I/O.
 */
void pf_decide(const struct pf_facts *f, enum pf_path p,
    struct pf_verdict *v);

/* What sysfs says about peer memory and RDMA devices (pf_read_sysfs). */
struct pf_sysfs {
	char module[32];	/* "nvidia_peermem", "nv_peer_mem" or "" */
	long refcnt;		/* -1 when unreadable */
	char module_version[64];
	char nvidia_version[64];	/* /sys/module/nvidia/version */
	char memory_peers[256];	/* entries of /sys/kernel/mm/memory_peers */
	char on_disk[256];	/* the module file found, or "" */
	char rdma_devices[256];	/* entries of /sys/class/infiniband, comma-separated */
	int nrdma;
};

/*
 * Read the peer-memory and RDMA facts under root ("" or "/" for the real
 * system; a directory tree shaped like / for tests): sys/module/…,
 * sys/kernel/mm/memory_peers/…, sys/class/infiniband/…, and
 * lib/modules/<release>/ for the module on disk.
 */
void pf_read_sysfs(const char *root, const char *release, struct pf_sysfs *s);

/* Compare module and driver versions ("550.54.15"); pure. */
enum pf_vers pf_compare_versions(const char *module, const char *driver);

#endif
