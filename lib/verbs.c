/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "verbs.h"

#define NO_DEVICE "no RDMA device found (is the rdma_rxe or mlx5_ib module " \
	"loaded? see ibv_devices)"

/* Pick the device named name (or the first) from the list; err if none. */
static struct ibv_device *
pick(struct ibv_device **list, int n, const char *name, char *err,
    size_t errlen)
{
	char names[256] = "";
	size_t o = 0;
	int i;

	for (i = 0; i < n; i++) {
		if (name == NULL || strcmp(ibv_get_device_name(list[i]), name) == 0)
			return list[i];
		if (o + 40 < sizeof(names))
			o += (size_t)snprintf(names + o, sizeof(names) - o, "%s%s",
			    i ? ", " : "", ibv_get_device_name(list[i]));
	}
	snprintf(err, errlen, "no RDMA device named %s (found: %s; see "
	    "ibv_devices)", name, names);
	return NULL;
}

static int
query_port(struct vb_dev *d, char *err, size_t errlen)
{
	int rc;

	if ((rc = ibv_query_port(d->ctx, (uint8_t)d->port, &d->attr)) != 0) {
		snprintf(err, errlen, "%s: port %d: ibv_query_port: %s", d->name,
		    d->port, strerror(rc));
		return KV_UNAVAILABLE;
	}
	if (d->attr.state != IBV_PORT_ACTIVE) {
		snprintf(err, errlen, "%s: port %d is %s, not ACTIVE (check the "
		    "cable or link: ibv_devinfo -d %s)", d->name, d->port,
		    ibv_port_state_str(d->attr.state), d->name);
		return KV_UNAVAILABLE;
	}
	d->ethernet = d->attr.link_layer == IBV_LINK_LAYER_ETHERNET;
	d->mtu_bytes = vb_mtu_bytes(d->attr.active_mtu);
	d->grh = d->ethernet || d->gid_index >= 0;
	if (d->gid_index < 0)
		d->gid_index = 0;
	if (ibv_query_gid(d->ctx, (uint8_t)d->port, d->gid_index, &d->gid)) {
		snprintf(err, errlen, "%s: port %d: no GID at index %d (see "
		    "show_gids or ibv_devinfo -v)", d->name, d->port,
		    d->gid_index);
		return KV_UNAVAILABLE;
	}
	return KV_OK;
}

int
vb_open(const char *name, int port, int gid_index, struct vb_dev *d,
    char *err, size_t errlen)
{
	struct ibv_device **list, *dev;
	int n = 0, rc;

	memset(d, 0, sizeof(*d));
	d->port = port;
	d->gid_index = gid_index;
	errno = 0;
	if ((list = ibv_get_device_list(&n)) == NULL || n == 0) {
		if (errno == ENOSYS)
			snprintf(err, errlen, NO_DEVICE "; this kernel has no "
			    "RDMA support: ibv_get_device_list: %s",
			    strerror(errno));
		else
			snprintf(err, errlen, NO_DEVICE);
		if (list)
			ibv_free_device_list(list);
		return KV_UNAVAILABLE;
	}
	if ((dev = pick(list, n, name, err, errlen)) == NULL) {
		ibv_free_device_list(list);
		return KV_UNAVAILABLE;
	}
	snprintf(d->name, sizeof(d->name), "%s", ibv_get_device_name(dev));
	d->ctx = ibv_open_device(dev);
	ibv_free_device_list(list);
	if (d->ctx == NULL) {
		snprintf(err, errlen, "%s: ibv_open_device: %s (is "
		    "/dev/infiniband readable?)", d->name, strerror(errno));
		return KV_UNAVAILABLE;
	}
	if ((rc = query_port(d, err, errlen)) != KV_OK) {
		vb_close(d, NULL, 0);
		return rc;
	}
	if ((d->pd = ibv_alloc_pd(d->ctx)) == NULL) {
		snprintf(err, errlen, "%s: ibv_alloc_pd: %s", d->name,
		    strerror(errno));
		vb_close(d, NULL, 0);
		return KV_FAIL;
	}
	return KV_OK;
}

/* Keep the first teardown failure in err: what failed, and why. */
static int
first_fail(int rc, int why, const char *what, int *fails, char *err,
    size_t errlen)
{
	if (rc != 0 && (*fails)++ == 0 && err && errlen)
		snprintf(err, errlen, "%s: %s", what, strerror(why));
	return rc;
}

int
vb_close(struct vb_dev *d, char *err, size_t errlen)
{
	int fails = 0, rc;

	if (d->pd) {
		rc = ibv_dealloc_pd(d->pd);
		first_fail(rc, rc, "ibv_dealloc_pd", &fails, err, errlen);
	}
	if (d->ctx)
		first_fail(ibv_close_device(d->ctx), errno, "ibv_close_device",
		    &fails, err, errlen);
	d->pd = NULL;
	d->ctx = NULL;
	return fails ? -1 : 0;
}

uint32_t
vb_mtu_bytes(enum ibv_mtu m)
{
	switch (m) {
	case IBV_MTU_256: return 256;
	case IBV_MTU_512: return 512;
	case IBV_MTU_1024: return 1024;
	case IBV_MTU_2048: return 2048;
	case IBV_MTU_4096: return 4096;
	}
	return 0;
}

enum ibv_mtu
vb_mtu_enum(uint32_t bytes)
{
	switch (bytes) {
	case 256: return IBV_MTU_256;
	case 512: return IBV_MTU_512;
	case 1024: return IBV_MTU_1024;
	case 2048: return IBV_MTU_2048;
	case 4096: return IBV_MTU_4096;
	}
	return (enum ibv_mtu)0;
}

#define ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)
#define GPU_PAGE ((size_t)2 << 20)

static int
cu_fail(struct vb_mem *m, const char *call, CUresult rc, char *err,
    size_t errlen)
{
	char why[160];

	snprintf(err, errlen, "GPU %d: %s: %s", m->cuda_dev, call,
	    kv_cuda_strerror(m->cu, rc, why, sizeof(why)));
	return KV_FAIL;
}

/* Allocate and fill device memory on m->cuda_dev. */
static int
cuda_alloc(struct vb_mem *m, uint8_t fill, char *err, size_t errlen)
{
	struct kv_cuda *cu = m->cu;
	CUdevice dev;
	CUresult rc;
	int one = 1;

	if (!cu->DevicePrimaryCtxRetain || !cu->CtxSetCurrent ||
	    !cu->MemAlloc || !cu->MemFree || !cu->MemsetD8) {
		snprintf(err, errlen, "the CUDA driver lacks the memory API "
		    "(cuMemAlloc_v2, cuMemsetD8_v2, cuDevicePrimaryCtxRetain)");
		return KV_UNAVAILABLE;
	}
	if ((rc = cu->DeviceGet(&dev, m->cuda_dev)) != CUDA_SUCCESS)
		return cu_fail(m, "cuDeviceGet", rc, err, errlen);
	if ((rc = cu->DevicePrimaryCtxRetain(&m->cuctx, dev)) != CUDA_SUCCESS)
		return cu_fail(m, "cuDevicePrimaryCtxRetain", rc, err, errlen);
	if ((rc = cu->CtxSetCurrent(m->cuctx)) != CUDA_SUCCESS)
		return cu_fail(m, "cuCtxSetCurrent", rc, err, errlen);
	if ((rc = cu->MemAlloc(&m->dptr, m->len)) != CUDA_SUCCESS)
		return cu_fail(m, "cuMemAlloc", rc, err, errlen);
	if ((rc = cu->MemsetD8(m->dptr, fill, m->len)) != CUDA_SUCCESS)
		return cu_fail(m, "cuMemsetD8", rc, err, errlen);
	/* GPUDirect RDMA needs synchronous memory operations on the range. */
	if (cu->PointerSetAttribute && (rc = cu->PointerSetAttribute(&one,
	    CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, m->dptr)) != CUDA_SUCCESS)
		return cu_fail(m, "cuPointerSetAttribute(SYNC_MEMOPS)", rc, err,
		    errlen);
	m->addr = m->dptr;
	return KV_OK;
}

/* Register device memory through DMA-BUF. */
static int
reg_dmabuf(struct vb_dev *d, struct vb_mem *m, char *err, size_t errlen)
{
	CUresult rc;

	m->path = "cuMemAlloc + cuMemGetHandleForAddressRange + "
	    "ibv_reg_dmabuf_mr";
	if (!m->cu->MemGetHandleForAddressRange) {
		snprintf(err, errlen, "%s: the CUDA driver lacks "
		    "cuMemGetHandleForAddressRange (CUDA 11.7 or later)", m->path);
		return KV_FAIL;
	}
	rc = m->cu->MemGetHandleForAddressRange(&m->dmabuf_fd, m->dptr, m->len,
	    CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
	if (rc != CUDA_SUCCESS) {
		m->dmabuf_fd = -1;
		return cu_fail(m, "cuMemGetHandleForAddressRange (dmabuf path)",
		    rc, err, errlen);
	}
	m->mr = ibv_reg_dmabuf_mr(d->pd, 0, m->len, m->dptr, m->dmabuf_fd,
	    ACCESS);
	return KV_OK;
}

static int
mem_alloc(struct vb_dev *d, struct vb_mem *m, enum vb_mem_kind kind,
    struct kv_cuda *cu, int cuda_dev, size_t len, uint8_t fill, char *err,
    size_t errlen)
{
	int rc;

	memset(m, 0, sizeof(*m));
	m->kind = kind;
	m->len = len;
	m->cu = cu;
	m->cuda_dev = cuda_dev;
	m->dmabuf_fd = -1;
	if (kind == VB_MEM_HOST) {
		m->path = "host memory + ibv_reg_mr";
		if (posix_memalign(&m->host, 4096, len) != 0) {
			snprintf(err, errlen, "allocating %zu bytes of host "
			    "memory: %s", len, strerror(ENOMEM));
			return KV_FAIL;
		}
		memset(m->host, fill, len);
		m->addr = (uint64_t)(uintptr_t)m->host;
		m->mr = ibv_reg_mr(d->pd, m->host, len, ACCESS);
	} else {
		/* Whole 2 MiB GPU pages: DMA-BUF export wants page-aligned
		 * ranges, and peer memory pins whole pages anyway. */
		m->len = (len + GPU_PAGE - 1) & ~(size_t)(GPU_PAGE - 1);
		if ((rc = cuda_alloc(m, fill, err, errlen)) != KV_OK)
			return rc;
		if (kind == VB_MEM_CUDA_DMABUF) {
			if ((rc = reg_dmabuf(d, m, err, errlen)) != KV_OK)
				return rc;
		} else {
			m->path = "cuMemAlloc + ibv_reg_mr on the device pointer "
			    "(nvidia_peermem)";
			m->mr = ibv_reg_mr(d->pd, (void *)(uintptr_t)m->dptr,
			    m->len, ACCESS);
		}
	}
	if (m->mr == NULL) {
		snprintf(err, errlen, "registering %zu bytes (%s): %s%s", m->len,
		    m->path, strerror(errno), kind == VB_MEM_CUDA_PEERMEM &&
		    errno == EFAULT ? " (is nvidia_peermem loaded? see "
		    "gpu-preflight)" : "");
		return KV_FAIL;
	}
	return KV_OK;
}

int
vb_mem_alloc(struct vb_dev *d, struct vb_mem *m, enum vb_mem_kind kind,
    struct kv_cuda *cu, int cuda_dev, size_t len, uint8_t fill, char *err,
    size_t errlen)
{
	int rc;

	/* Nothing half-made survives a failure: err keeps its reason. */
	if ((rc = mem_alloc(d, m, kind, cu, cuda_dev, len, fill, err,
	    errlen)) != KV_OK)
		vb_mem_free(m, NULL, 0);
	return rc;
}

int
vb_mem_free(struct vb_mem *m, char *err, size_t errlen)
{
	int fails = 0, rc;
	CUdevice dev;

	if (m->mr) {
		rc = ibv_dereg_mr(m->mr);
		first_fail(rc, rc, "ibv_dereg_mr", &fails, err, errlen);
	}
	if (m->dmabuf_fd >= 0)
		first_fail(close(m->dmabuf_fd), errno, "closing the DMA-BUF fd",
		    &fails, err, errlen);
	if (m->dptr && m->cu && m->cu->MemFree &&
	    m->cu->MemFree(m->dptr) != CUDA_SUCCESS)
		first_fail(-1, EIO, "cuMemFree", &fails, err, errlen);
	if (m->cuctx && m->cu && m->cu->DevicePrimaryCtxRelease &&
	    (m->cu->DeviceGet(&dev, m->cuda_dev) != CUDA_SUCCESS ||
	    m->cu->DevicePrimaryCtxRelease(dev) != CUDA_SUCCESS))
		first_fail(-1, EIO, "cuDevicePrimaryCtxRelease", &fails, err,
		    errlen);
	free(m->host);
	memset(m, 0, sizeof(*m));
	m->dmabuf_fd = -1;
	return fails ? -1 : 0;
}

unsigned
vb_signal_every(unsigned tx_depth)
{
	if (tx_depth < 8)
		return 1;
	return tx_depth / 4 < 64 ? tx_depth / 4 : 64;
}

int
vb_qps_create(struct vb_dev *d, struct vb_qps *q, int n, unsigned tx_depth,
    char *err, size_t errlen)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	int i, cqe;

	memset(q, 0, sizeof(*q));
	q->tx_depth = tx_depth;
	q->signal_every = vb_signal_every(tx_depth);
	cqe = n * (int)(tx_depth / q->signal_every + 2) + 16;
	if ((q->cq = ibv_create_cq(d->ctx, cqe, NULL, NULL, 0)) == NULL) {
		snprintf(err, errlen, "%s: ibv_create_cq(%d): %s", d->name, cqe,
		    strerror(errno));
		return KV_FAIL;
	}
	for (i = 0; i < n; i++) {
		memset(&ia, 0, sizeof(ia));
		ia.send_cq = ia.recv_cq = q->cq;
		ia.qp_type = IBV_QPT_RC;
		ia.sq_sig_all = 0;
		ia.cap.max_send_wr = tx_depth;
		ia.cap.max_recv_wr = 1;
		ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
		if ((q->qp[i] = ibv_create_qp(d->pd, &ia)) == NULL) {
			snprintf(err, errlen, "%s: ibv_create_qp (QP %d of %d, "
			    "tx depth %u): %s", d->name, i + 1, n, tx_depth,
			    strerror(errno));
			vb_qps_destroy(q, NULL, 0);
			return KV_FAIL;
		}
		q->n = i + 1;
		q->psn[i] = (uint32_t)(lrand48() & 0xffffff);
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_INIT;
		a.pkey_index = 0;
		a.port_num = (uint8_t)d->port;
		a.qp_access_flags = ACCESS;
		if ((errno = ibv_modify_qp(q->qp[i], &a, IBV_QP_STATE |
		    IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))) {
			snprintf(err, errlen, "%s: QP %d to INIT: %s", d->name, i,
			    strerror(errno));
			vb_qps_destroy(q, NULL, 0);
			return KV_FAIL;
		}
	}
	return KV_OK;
}

/* RESET/INIT -> RTR -> RTS for one QP. */
static int
connect_one(struct vb_dev *d, struct ibv_qp *qp, uint32_t psn,
    const struct vb_remote *r, uint32_t mtu, char *err, size_t errlen)
{
	struct ibv_qp_attr a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = vb_mtu_enum(mtu);
	a.dest_qp_num = r->qpn;
	a.rq_psn = r->psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.dlid = r->lid;
	a.ah_attr.port_num = (uint8_t)d->port;
	if (d->grh) {
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, r->gid, 16);
		a.ah_attr.grh.sgid_index = (uint8_t)d->gid_index;
		a.ah_attr.grh.hop_limit = 64;
	}
	if ((rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
	    IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
	    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))) {
		snprintf(err, errlen, "%s: QP %u to RTR (remote QPN %u, LID %u, "
		    "MTU %u): %s", d->name, qp->qp_num, r->qpn, r->lid, mtu,
		    strerror(rc));
		return KV_FAIL;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = psn;
	a.max_rd_atomic = 1;
	if ((rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
	    IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
	    IBV_QP_MAX_QP_RD_ATOMIC))) {
		snprintf(err, errlen, "%s: QP %u to RTS: %s", d->name, qp->qp_num,
		    strerror(rc));
		return KV_FAIL;
	}
	return KV_OK;
}

int
vb_qps_connect(struct vb_dev *d, struct vb_qps *q,
    const struct vb_remote *remote, uint32_t mtu, char *err, size_t errlen)
{
	int i, rc;

	if (vb_mtu_enum(mtu) == 0) {
		snprintf(err, errlen, "MTU %u is not an InfiniBand MTU", mtu);
		return KV_FAIL;
	}
	for (i = 0; i < q->n; i++)
		if ((rc = connect_one(d, q->qp[i], q->psn[i], &remote[i], mtu,
		    err, errlen)) != KV_OK)
			return rc;
	return KV_OK;
}

int
vb_qps_destroy(struct vb_qps *q, char *err, size_t errlen)
{
	int i, rc, fails = 0;

	for (i = 0; i < q->n; i++)
		if (q->qp[i]) {
			rc = ibv_destroy_qp(q->qp[i]);
			first_fail(rc, rc, "ibv_destroy_qp", &fails, err, errlen);
		}
	if (q->cq) {
		rc = ibv_destroy_cq(q->cq);
		first_fail(rc, rc, "ibv_destroy_cq", &fails, err, errlen);
	}
	memset(q, 0, sizeof(*q));
	return fails ? -1 : 0;
}

unsigned
vb_plan(struct vb_lane *l, unsigned tx_depth, unsigned signal_every,
    uint64_t iters, int stop, unsigned max, unsigned *retire)
{
	unsigned k = 0;

	while (k < max && l->outstanding < tx_depth) {
		uint64_t nth = l->posted + 1;

		if (iters && nth > iters)
			break;
		if (stop && l->since_signal == 0)
			break;
		l->since_signal++;
		retire[k] = 0;
		if (l->since_signal == signal_every || (iters && nth == iters)) {
			retire[k] = l->since_signal;
			l->since_signal = 0;
		}
		l->posted++;
		l->outstanding++;
		k++;
	}
	return k;
}

int
vb_retire(struct vb_lane *l, unsigned count)
{
	if (count == 0 || count > l->outstanding)
		return -1;
	l->outstanding -= count;
	l->done += count;
	return 0;
}

#define BATCH 16

/* Post the writes vb_plan allows on QP i, chained in one call. */
static int
post_lane(struct vb_qps *q, int i, struct vb_lane *l, const struct vb_mem *m,
    const struct vb_write *w, int stop, char *err, size_t errlen)
{
	struct ibv_send_wr wr[BATCH], *bad;
	struct ibv_sge sge[BATCH];
	unsigned retire[BATCH], k, j;
	int rc;

	k = vb_plan(l, q->tx_depth, q->signal_every, w->iters, stop, BATCH,
	    retire);
	for (j = 0; j < k; j++) {
		memset(&wr[j], 0, sizeof(wr[j]));
		sge[j].addr = m->addr;
		sge[j].length = (uint32_t)w->size;
		sge[j].lkey = m->mr->lkey;
		wr[j].sg_list = &sge[j];
		wr[j].num_sge = 1;
		wr[j].opcode = IBV_WR_RDMA_WRITE;
		wr[j].wr.rdma.remote_addr = w->remote_addr +
		    (uint64_t)i * w->stride;
		wr[j].wr.rdma.rkey = w->rkey;
		if (retire[j]) {
			wr[j].send_flags = IBV_SEND_SIGNALED;
			wr[j].wr_id = (uint64_t)i << 32 | retire[j];
		}
		wr[j].next = j + 1 < k ? &wr[j + 1] : NULL;
	}
	if (k > 0 && (rc = ibv_post_send(q->qp[i], wr, &bad)) != 0) {
		snprintf(err, errlen, "ibv_post_send (QP %d): %s", i, strerror(rc));
		return KV_FAIL;
	}
	return KV_OK;
}

/* Reap completions; adds retired writes to *msgs. */
static int
reap(struct vb_qps *q, struct vb_lane *lanes, uint64_t *msgs, char *err,
    size_t errlen)
{
	struct ibv_wc wc[32];
	int n, j;

	if ((n = ibv_poll_cq(q->cq, 32, wc)) < 0) {
		snprintf(err, errlen, "ibv_poll_cq failed (%d): the completion "
		    "queue is in error", n);
		return KV_FAIL;
	}
	for (j = 0; j < n; j++) {
		unsigned qi = (unsigned)(wc[j].wr_id >> 32);
		unsigned cnt = (unsigned)(wc[j].wr_id & 0xffffffffu);

		if (wc[j].status != IBV_WC_SUCCESS) {
			snprintf(err, errlen, "RDMA WRITE completion on QP %u: %s "
			    "(vendor error 0x%x)", qi, ibv_wc_status_str(
			    wc[j].status), wc[j].vendor_err);
			return KV_FAIL;
		}
		if (qi >= (unsigned)q->n || vb_retire(&lanes[qi], cnt) != 0) {
			snprintf(err, errlen, "unexpected completion (wr_id "
			    "0x%llx)", (unsigned long long)wc[j].wr_id);
			return KV_SOFTWARE;
		}
		*msgs += cnt;
	}
	return KV_OK;
}

bool
vb_stalled(double now_s, double last_s, double stall_s, unsigned outstanding)
{
	if (stall_s <= 0)
		stall_s = VB_STALL_S;
	return outstanding > 0 && now_s - last_s > stall_s;
}

int
vb_write_run(struct vb_qps *q, const struct vb_mem *m,
    const struct vb_write *w, vb_tick_fn tick, void *ctx,
    struct vb_result *r, char *err, size_t errlen)
{
	struct vb_lane lanes[VB_MAX_QPS];
	double t0, now, tw, last, window = w->interval_s > 0 ? w->interval_s :
	    0.1;
	uint64_t msgs = 0, wmsgs = 0, before;
	unsigned outstanding;
	int i, rc, busy, stop = 0;

	memset(lanes, 0, sizeof(lanes));
	memset(r, 0, sizeof(*r));
	t0 = tw = last = now = kv_mono();
	do {
		if (!w->iters && now - t0 >= w->duration_s)
			stop = 1;
		busy = 0;
		outstanding = 0;
		for (i = 0; i < q->n; i++) {
			if ((rc = post_lane(q, i, &lanes[i], m, w, stop, err,
			    errlen)) != KV_OK)
				return rc;
			busy |= lanes[i].outstanding > 0 || (!stop && (!w->iters ||
			    lanes[i].posted < w->iters));
			outstanding += lanes[i].outstanding;
		}
		before = msgs;
		if ((rc = reap(q, lanes, &msgs, err, errlen)) != KV_OK)
			return rc;
		now = kv_mono();
		if (msgs != before || outstanding == 0)
			last = now;
		if (vb_stalled(now, last, w->stall_s, outstanding)) {
			snprintf(err, errlen, "no RDMA WRITE completion for %gs "
			    "with %u writes outstanding (is the peer gone? see "
			    "--timeout)", now - last, outstanding);
			return KV_FAIL;
		}
		if (now - tw >= window) {
			double bps = (double)(msgs - wmsgs) * (double)w->size /
			    (now - tw);

			if (bps > r->peak_bytes_per_s)
				r->peak_bytes_per_s = bps;
			if (tick && w->interval_s > 0 && (rc = tick(ctx, tw - t0,
			    now - t0, (msgs - wmsgs) * w->size, msgs - wmsgs)))
				return rc;
			tw = now;
			wmsgs = msgs;
		}
	} while (busy);
	r->msgs = msgs;
	r->bytes = msgs * w->size;
	r->seconds = now - t0;
	if (r->seconds > 0 && r->peak_bytes_per_s == 0)
		r->peak_bytes_per_s = (double)r->bytes / r->seconds;
	return KV_OK;
}
