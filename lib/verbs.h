/* SPDX-License-Identifier: MIT */
#ifndef KV_VERBS_H
#define KV_VERBS_H

/*
 * rdma-probe's verbs side (rdma-core libibverbs): open a device by name,
 * query a port and GID, allocate and register memory (host, or GPU
 * memory through the CUDA driver API), create RC QPs, move them
 * INIT -> RTR -> RTS, and run RDMA WRITEs with many outstanding work
 * requests and selective signalling.  No socket code: the out-of-band
 * exchange lives in rdmahs.h.
 *
 * Functions return a kvgate exit status (KV_OK, KV_UNAVAILABLE when the
 * device or driver is missing, KV_FAIL when an operation failed) with
 * the reason in err.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "cuda.h"

#define VB_MAX_QPS 256

struct vb_dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	char name[IBV_SYSFS_NAME_MAX];
	int port, gid_index;
	struct ibv_port_attr attr;
	union ibv_gid gid;
	bool ethernet;		/* RoCE */
	bool grh;		/* address with a GRH: RoCE, or a GID index given */
	uint32_t mtu_bytes;	/* the port's active MTU */
};

/*
 * Open device name (NULL: the first one) and query port and GID.  No
 * device at all is KV_UNAVAILABLE with "no RDMA device found (is the
 * rdma_rxe or mlx5_ib module loaded? see ibv_devices)".
 */
int vb_open(const char *name, int port, int gid_index, struct vb_dev *d,
    char *err, size_t errlen);
/*
 * Teardown (vb_close, vb_mem_free, vb_qps_destroy): release everything,
 * even past a failure; 0, or -1 with the first failure in err (err may
 * be NULL).  The struct is emptied either way.
 */
int vb_close(struct vb_dev *d, char *err, size_t errlen);

/* Bytes of an ibv_mtu, and the ibv_mtu for bytes (0 if none). */
uint32_t vb_mtu_bytes(enum ibv_mtu m);
enum ibv_mtu vb_mtu_enum(uint32_t bytes);

enum vb_mem_kind { VB_MEM_HOST, VB_MEM_CUDA_DMABUF, VB_MEM_CUDA_PEERMEM };

struct vb_mem {
	enum vb_mem_kind kind;
	size_t len;
	void *host;
	struct kv_cuda *cu;
	int cuda_dev;
	CUcontext cuctx;
	CUdeviceptr dptr;
	int dmabuf_fd;
	struct ibv_mr *mr;
	uint64_t addr;		/* what the remote side writes to */
	const char *path;	/* the registration path, for messages */
};

/*
 * Allocate len bytes of the given kind filled with fill and register
 * them for local and remote write.  For CUDA kinds cu must be loaded.
 * On failure nothing stays allocated or registered.
 * A failed registration is KV_FAIL with the errno text and the path
 * taken ("cuMemAlloc + cuMemGetHandleForAddressRange +
 * ibv_reg_dmabuf_mr: Bad address").
 */
int vb_mem_alloc(struct vb_dev *d, struct vb_mem *m, enum vb_mem_kind kind,
    struct kv_cuda *cu, int cuda_dev, size_t len, uint8_t fill, char *err,
    size_t errlen);
int vb_mem_free(struct vb_mem *m, char *err, size_t errlen);

struct vb_qps {
	int n;
	unsigned tx_depth, signal_every;
	struct ibv_cq *cq;
	struct ibv_qp *qp[VB_MAX_QPS];
	uint32_t psn[VB_MAX_QPS];
};

/* The other side of a QP, as the handshake carried it. */
struct vb_remote {
	uint32_t qpn, psn;
	uint16_t lid;
	uint8_t gid[16];
};

/* One signalled write in this many: tx_depth/4, at most 64, 1 below 8. */
unsigned vb_signal_every(unsigned tx_depth);

/* Create n RC QPs on one CQ and move them to INIT. */
int vb_qps_create(struct vb_dev *d, struct vb_qps *q, int n,
    unsigned tx_depth, char *err, size_t errlen);
/* Move every QP to RTR against remote[i] at mtu bytes, then to RTS. */
int vb_qps_connect(struct vb_dev *d, struct vb_qps *q,
    const struct vb_remote *remote, uint32_t mtu, char *err, size_t errlen);
int vb_qps_destroy(struct vb_qps *q, char *err, size_t errlen);

/* Per-QP progress of a write run. */
struct vb_lane {
	uint64_t posted, done;
	unsigned outstanding, since_signal;
};

/*
 * The posting rule, pure so that it is tested without a device: how many
 * writes (at most max) lane l may post now, keeping at most tx_depth
 * outstanding and at most iters in all (0: no limit).  A write is
 * signalled when it closes a chunk of signal_every or is the last of
 * iters; retire[j] gets the number of writes write j's completion
 * retires (0: unsignalled).  stop (end of a duration run): post only to
 * close the current chunk, so that every posted write is retired by some
 * completion.  Updates l as if the writes were posted.
 */
unsigned vb_plan(struct vb_lane *l, unsigned tx_depth, unsigned signal_every,
    uint64_t iters, int stop, unsigned max, unsigned *retire);
/* Account a completion retiring count writes; -1 if impossible. */
int vb_retire(struct vb_lane *l, unsigned count);

/* Called at every interval with the bytes completed in it. */
typedef int (*vb_tick_fn)(void *ctx, double start_s, double end_s,
    uint64_t bytes, uint64_t msgs);

struct vb_write {
	size_t size;		/* bytes per RDMA WRITE */
	uint64_t iters;		/* writes per QP; 0: run for duration_s */
	double duration_s;
	double interval_s;	/* 0: no ticks */
	uint64_t remote_addr;	/* QP i writes at remote_addr + i * stride */
	uint64_t stride;
	uint32_t rkey;
	double stall_s;		/* most seconds without a completion while
				 * writes are outstanding; 0: VB_STALL_S */
};

#define VB_STALL_S 30.0

/*
 * Whether a run whose last completion (or start) was at last_s has
 * stalled at now_s: more than stall_s (<= 0: VB_STALL_S) seconds
 * without progress while writes are outstanding.
 */
bool vb_stalled(double now_s, double last_s, double stall_s,
    unsigned outstanding);

struct vb_result {
	uint64_t msgs, bytes;
	double seconds, peak_bytes_per_s;
};

/*
 * Post RDMA WRITEs of w->size bytes from m on every QP, keeping up to
 * tx_depth outstanding per QP and signalling one in signal_every.
 * Returns KV_OK, KV_FAIL on a completion error (its status text) or when
 * no completion arrives for w->stall_s seconds (vb_stalled: a peer that
 * vanished never hangs the caller), or the tick function's non-zero
 * return.
 */
int vb_write_run(struct vb_qps *q, const struct vb_mem *m,
    const struct vb_write *w, vb_tick_fn tick, void *ctx,
    struct vb_result *r, char *err, size_t errlen);

#endif
