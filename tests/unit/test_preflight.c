/* SPDX-License-Identifier: MIT */
/*
 * gpu-preflight's pure parts: the decision for every combination of
 * facts (checked against an independent oracle), the two real cases the
 * tool exists for, the GPU list syntax and its resolution, and sysfs
 * reading from a directory tree built here.
 */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "preflight.h"
#include "unit.h"

static int
has_reason(const struct pf_verdict *v, const char *needle)
{
	int i;

	for (i = 0; i < v->nreasons; i++)
		if (strstr(v->reasons[i], needle))
			return 1;
	return 0;
}

/* The rule as the man page states it, written independently. */
static void
oracle(const struct pf_facts *f, enum pf_path p, int *ready, int *nreasons)
{
	int i, n = f->ngpus == 0;

	for (i = 0; i < f->ngpus; i++)
		n += (p == PF_DMABUF ? f->gpu[i].attr_dmabuf : f->gpu[i].attr_rdma)
		    != 1;
	n += !f->rdma_devices;
	if (p == PF_DMABUF)
		n += !f->ibv_dmabuf + !f->cu_dmabuf_handle;
	else
		n += !f->peermem_loaded || f->peermem_vers == PF_VERS_DIFFER;
	*ready = n == 0;
	*nreasons = n;
}

static void
test_every_combination(void)
{
	static const int av[] = { -1, 0, 1 };
	struct pf_facts f;
	struct pf_verdict v;
	int ng, a, b, c, d, bits, vers, p, ready, nr, bad = 0, nready = 0;
	long combos = 0;

	for (ng = 0; ng <= 2; ng++)
	for (a = 0; a < (ng ? 3 : 1); a++)
	for (b = 0; b < (ng ? 3 : 1); b++)
	for (c = 0; c < (ng > 1 ? 3 : 1); c++)
	for (d = 0; d < (ng > 1 ? 3 : 1); d++)
	for (bits = 0; bits < 32; bits++)
	for (vers = 0; vers < 3; vers++)
	for (p = 0; p < 2; p++) {
		memset(&f, 0, sizeof(f));
		f.ngpus = ng;
		f.gpu[0] = (struct pf_gpu){ 0, av[a], av[b] };
		f.gpu[1] = (struct pf_gpu){ 1, av[c], av[d] };
		f.rdma_devices = bits & 1;
		f.peermem_loaded = bits & 2;
		f.peermem_on_disk = bits & 4;
		f.ibv_dmabuf = bits & 8;
		f.cu_dmabuf_handle = bits & 16;
		f.peermem_vers = (enum pf_vers)vers;
		pf_decide(&f, (enum pf_path)p, &v);
		oracle(&f, (enum pf_path)p, &ready, &nr);
		combos++;
		nready += v.ready;
		if (v.ready != ready || v.nreasons != nr || (v.ready &&
		    v.nreasons != 0)) {
			if (bad++ < 5)
				fprintf(stderr, "combination ng=%d a=%d b=%d c=%d "
				    "d=%d bits=%d vers=%d path=%d: ready %d/%d, "
				    "reasons %d/%d\n", ng, a, b, c, d, bits, vers, p,
				    v.ready, ready, v.nreasons, nr);
		}
	}
	CHECK(bad == 0);
	CHECK(combos == 2 * 3 * 32 * (1 + 9 + 81));
	CHECK(nready > 0);
	printf("test_preflight: %ld combinations, %d ready\n", combos, nready);
}

/* The host the tool exists for: 116 = 1, 124 = 0, module on disk only. */
static void
real_host(struct pf_facts *f, int loaded)
{
	memset(f, 0, sizeof(*f));
	f->ngpus = 1;
	f->gpu[0] = (struct pf_gpu){ 0, 1, 0 };
	f->rdma_devices = true;
	f->peermem_on_disk = true;
	f->peermem_loaded = loaded;
	f->peermem_vers = loaded ? PF_VERS_MATCH : PF_VERS_UNKNOWN;
	f->ibv_dmabuf = true;
	f->cu_dmabuf_handle = true;
}

static void
test_real_cases(void)
{
	struct pf_facts f;
	struct pf_verdict v;

	/* Case 1: neither path is ready, each for its own reason. */
	real_host(&f, 0);
	pf_decide(&f, PF_DMABUF, &v);
	CHECK(!v.ready && v.nreasons == 1);
	CHECK_STR(v.reasons[0], "GPU 0: DMA-BUF not supported (attribute 124 "
	    "CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0)");
	pf_decide(&f, PF_PEERMEM, &v);
	CHECK(!v.ready && v.nreasons == 1);
	CHECK_STR(v.reasons[0], "nvidia_peermem is installed but not loaded "
	    "(run modprobe nvidia_peermem)");

	/* Case 2: the same host after modprobe nvidia_peermem. */
	real_host(&f, 1);
	pf_decide(&f, PF_PEERMEM, &v);
	CHECK(v.ready && v.nreasons == 0);
	pf_decide(&f, PF_DMABUF, &v);
	CHECK(!v.ready && has_reason(&v, "attribute 124"));

	/* Neighbours of the real cases, reason by reason. */
	real_host(&f, 0);
	f.peermem_on_disk = false;
	pf_decide(&f, PF_PEERMEM, &v);
	CHECK(has_reason(&v, "no peer-memory module is loaded or installed"));
	real_host(&f, 1);
	f.peermem_vers = PF_VERS_DIFFER;
	pf_decide(&f, PF_PEERMEM, &v);
	CHECK(!v.ready && has_reason(&v, "version differs"));
	real_host(&f, 1);
	f.gpu[0].attr_rdma = -1;
	pf_decide(&f, PF_PEERMEM, &v);
	CHECK(!v.ready && has_reason(&v, "116 CU_DEVICE_ATTRIBUTE_GPU_DIRECT_"
	    "RDMA_SUPPORTED is unreadable"));
	real_host(&f, 1);
	f.rdma_devices = false;
	pf_decide(&f, PF_PEERMEM, &v);
	CHECK(!v.ready && has_reason(&v, "no RDMA device"));
	real_host(&f, 1);
	f.gpu[0].attr_dmabuf = 1;
	f.ibv_dmabuf = false;
	pf_decide(&f, PF_DMABUF, &v);
	CHECK(!v.ready && v.nreasons == 1 && has_reason(&v,
	    "ibv_reg_dmabuf_mr"));
	f.ibv_dmabuf = true;
	pf_decide(&f, PF_DMABUF, &v);
	CHECK(v.ready);
	real_host(&f, 1);
	f.ngpus = 0;
	pf_decide(&f, PF_PEERMEM, &v);
	CHECK(!v.ready && has_reason(&v, "no GPU selected"));

	CHECK(pf_compare_versions("550.54.15", "550.54.15") == PF_VERS_MATCH);
	CHECK(pf_compare_versions("550.54.15", "550.90.07") == PF_VERS_DIFFER);
	CHECK(pf_compare_versions("", "550.90.07") == PF_VERS_UNKNOWN);
	CHECK(pf_compare_versions("550.54.15", NULL) == PF_VERS_UNKNOWN);
}

#define U1 "GPU-8f6a2c1e-0b3d-4e5f-9a8b-7c6d5e4f3a2b"
#define U2 "GPU-11111111-2222-3333-4444-555555555555"
#define M1 "MIG-0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d"
#define M2 "MIG-99999999-8888-7777-6666-555555555555"

static void
test_gpu_lists(void)
{
	struct pf_sel s[PF_MAX_GPUS];
	char err[256];

	CHECK(pf_parse_gpus("0,1, 3", s, PF_MAX_GPUS, err, sizeof(err)) == 3);
	CHECK(s[0].kind == PF_SEL_INDEX && s[2].index == 3);
	CHECK(pf_parse_gpus("", s, PF_MAX_GPUS, err, sizeof(err)) == 0);
	CHECK(pf_parse_gpus("  ", s, PF_MAX_GPUS, err, sizeof(err)) == 0);
	CHECK(pf_parse_gpus(U1, s, PF_MAX_GPUS, err, sizeof(err)) == 1);
	CHECK(s[0].kind == PF_SEL_UUID);
	CHECK_STR(s[0].id, U1);
	CHECK(pf_parse_gpus("GPU-8F6A2C1E", s, PF_MAX_GPUS, err,
	    sizeof(err)) == 1);
	CHECK_STR(s[0].id, "GPU-8f6a2c1e");
	CHECK(pf_parse_gpus(M1 "," U2, s, PF_MAX_GPUS, err, sizeof(err)) == 2);
	CHECK(s[0].kind == PF_SEL_MIG && s[1].kind == PF_SEL_UUID);
	CHECK(pf_parse_gpus("MIG-GPU-8f6a2c1e-0b3d-4e5f-9a8b-7c6d5e4f3a2b/1/0",
	    s, PF_MAX_GPUS, err, sizeof(err)) == 1);
	CHECK(s[0].kind == PF_SEL_MIG);
	CHECK_STR(s[0].id, "MIG-GPU-8f6a2c1e-0b3d-4e5f-9a8b-7c6d5e4f3a2b/1/0");

	CHECK(pf_parse_gpus("0,,1", s, PF_MAX_GPUS, err, sizeof(err)) == -1);
	CHECK(strstr(err, "empty entry") != NULL);
	CHECK(pf_parse_gpus("0,", s, PF_MAX_GPUS, err, sizeof(err)) == -1);
	CHECK(pf_parse_gpus("1,1", s, PF_MAX_GPUS, err, sizeof(err)) == -1);
	CHECK_STR(err, "GPU 1 listed twice");
	CHECK(pf_parse_gpus("-1", s, PF_MAX_GPUS, err, sizeof(err)) == -1);
	CHECK(pf_parse_gpus("12345", s, PF_MAX_GPUS, err, sizeof(err)) == -1);
	CHECK(pf_parse_gpus("GPU-xyz", s, PF_MAX_GPUS, err, sizeof(err)) == -1);
	CHECK(pf_parse_gpus("GPU-", s, PF_MAX_GPUS, err, sizeof(err)) == -1);
	CHECK(pf_parse_gpus("MIG-0a1b", s, PF_MAX_GPUS, err, sizeof(err)) == -1);
	CHECK(pf_parse_gpus("MIG-GPU-8f6a/1/0", s, PF_MAX_GPUS, err,
	    sizeof(err)) == -1);
	CHECK(pf_parse_gpus("MIG-GPU-8f6a2c1e-0b3d-4e5f-9a8b-7c6d5e4f3a2b/1",
	    s, PF_MAX_GPUS, err, sizeof(err)) == -1);
	CHECK(pf_parse_gpus("nvidia0", s, PF_MAX_GPUS, err, sizeof(err)) == -1);
	CHECK(strstr(err, "want an index, GPU-<uuid> or MIG-<uuid>") != NULL);
	CHECK(pf_parse_gpus("0,1,2", s, 2, err, sizeof(err)) == -1);
}

static void
test_resolve(void)
{
	static const struct pf_dev dev[] = {
		{ 0, U1, U1, "0000:3B:00.0" },
		{ 1, U2, U2, "0000:86:00.0" },
		{ 2, M1, "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", "0000:AF:00.0" },
		{ 3, M2, "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", "0000:AF:00.0" },
	};
	struct pf_sel s[PF_MAX_GPUS];
	char err[256];
	int out[PF_MAX_GPUS], n;

	n = pf_parse_gpus("1," U1 "," M2, s, PF_MAX_GPUS, err, sizeof(err));
	CHECK(pf_resolve(s, n, dev, 4, out, err, sizeof(err)) == 3);
	CHECK(out[0] == 1 && out[1] == 0 && out[2] == 3);
	n = pf_parse_gpus("GPU-1111", s, PF_MAX_GPUS, err, sizeof(err));
	CHECK(pf_resolve(s, n, dev, 4, out, err, sizeof(err)) == 1 &&
	    out[0] == 1);
	n = pf_parse_gpus("7", s, PF_MAX_GPUS, err, sizeof(err));
	CHECK(pf_resolve(s, n, dev, 4, out, err, sizeof(err)) == -1);
	CHECK_STR(err, "no GPU matches 7 (the driver lists 4 devices)");
	n = pf_parse_gpus("0," U1, s, PF_MAX_GPUS, err, sizeof(err));
	CHECK(pf_resolve(s, n, dev, 4, out, err, sizeof(err)) == -1);
	CHECK(strstr(err, "already selected") != NULL);
	n = pf_parse_gpus("MIG-GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee/1/0", s,
	    PF_MAX_GPUS, err, sizeof(err));
	CHECK(pf_resolve(s, n, dev, 4, out, err, sizeof(err)) == -1);
	CHECK(strstr(err, "ambiguous") != NULL);
	CHECK(pf_resolve(s, n, dev, 3, out, err, sizeof(err)) == 1 &&
	    out[0] == 2);
	n = pf_parse_gpus("GPU-", s, PF_MAX_GPUS, err, sizeof(err));
	CHECK(n == -1);
}

static void
put(const char *root, const char *rel, const char *text)
{
	char path[512], *slash;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (slash = path + strlen(root) + 1; (slash = strchr(slash, '/'));
	    slash++) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	if (text && (fp = fopen(path, "w")) != NULL) {
		fputs(text, fp);
		fclose(fp);
	} else if (!text) {
		mkdir(path, 0755);
	}
}

static void
test_sysfs(void)
{
	char root[] = "/tmp/kvgate-pf-XXXXXX", cmd[600];
	struct pf_sysfs s;

	if (mkdtemp(root) == NULL) {
		CHECK(0);
		return;
	}
	pf_read_sysfs(root, "6.1.0-test", &s);
	CHECK(s.module[0] == '\0' && s.nrdma == 0 && s.refcnt == -1);
	CHECK(s.on_disk[0] == '\0');

	put(root, "lib/modules/6.1.0-test/updates/dkms/nvidia-peermem.ko.zst",
	    "");
	put(root, "sys/class/infiniband/mlx5_0", NULL);
	put(root, "sys/class/infiniband/mlx5_1", NULL);
	put(root, "sys/module/nvidia/version", "550.54.15\n");
	pf_read_sysfs(root, "6.1.0-test", &s);
	CHECK(s.module[0] == '\0');
	CHECK(strstr(s.on_disk, "nvidia-peermem.ko.zst") != NULL);
	CHECK(s.nrdma == 2);
	CHECK_STR(s.rdma_devices, "mlx5_0,mlx5_1");
	CHECK_STR(s.nvidia_version, "550.54.15");
	pf_read_sysfs(root, "6.2.0-other", &s);
	CHECK(s.on_disk[0] == '\0');

	put(root, "sys/module/nvidia_peermem/refcnt", "0\n");
	put(root, "sys/module/nvidia_peermem/version", "550.54.15\n");
	put(root, "sys/kernel/mm/memory_peers/nv_mem/version", "1.0\n");
	pf_read_sysfs(root, "6.1.0-test", &s);
	CHECK_STR(s.module, "nvidia_peermem");
	CHECK(s.refcnt == 0);
	CHECK_STR(s.module_version, "550.54.15");
	CHECK_STR(s.memory_peers, "nv_mem");

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	CHECK(system(cmd) == 0);
}

int
main(void)
{
	test_every_combination();
	test_real_cases();
	test_gpu_lists();
	test_resolve();
	test_sysfs();
	return DONE("test_preflight");
}
