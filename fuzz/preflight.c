/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness: gpu-preflight's GPU list parser and resolver on
 * arbitrary text, and the decision on arbitrary facts.  The decision must
 * be ready exactly when it gives no reason.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "preflight.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct pf_dev devs[] = {
	{ 0, "GPU-8f6a2c1e-0b3d-4e5f-9a8b-7c6d5e4f3a2b",
	    "GPU-8f6a2c1e-0b3d-4e5f-9a8b-7c6d5e4f3a2b", "0000:3B:00.0" },
	{ 1, "MIG-0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d",
	    "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", "0000:AF:00.0" },
};

static void
decide(const uint8_t *d, size_t n)
{
	struct pf_facts f;
	struct pf_verdict v;
	int i, p;

	memset(&f, 0, sizeof(f));
	f.ngpus = n > 0 ? d[0] % 5 : 0;
	for (i = 0; i < f.ngpus; i++) {
		uint8_t x = (size_t)(i + 2) < n ? d[i + 2] : 0;

		f.gpu[i] = (struct pf_gpu){ i, x % 3 - 1, x / 3 % 3 - 1 };
	}
	if (n > 1) {
		f.rdma_devices = d[1] & 1;
		f.peermem_loaded = d[1] & 2;
		f.peermem_on_disk = d[1] & 4;
		f.ibv_dmabuf = d[1] & 8;
		f.cu_dmabuf_handle = d[1] & 16;
		f.peermem_vers = (enum pf_vers)(d[1] >> 5 & 1 ? 2 : d[1] >> 6);
	}
	for (p = 0; p < 2; p++) {
		pf_decide(&f, (enum pf_path)p, &v);
		if (v.ready != (v.nreasons == 0) || v.nreasons > PF_MAX_REASONS)
			abort();
		for (i = 0; i < v.nreasons; i++)
			if (strnlen(v.reasons[i], PF_REASON_LEN) == PF_REASON_LEN)
				abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pf_sel sel[PF_MAX_GPUS];
	int out[PF_MAX_GPUS], n, i;
	char err[256], *s;

	decide(data, size);
	if ((s = malloc(size + 1)) == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	n = pf_parse_gpus(s, sel, PF_MAX_GPUS, err, sizeof(err));
	if (n > PF_MAX_GPUS)
		abort();
	if (n > 0 && (n = pf_resolve(sel, n, devs, 2, out, err,
	    sizeof(err))) > 0)
		for (i = 0; i < n; i++)
			if (out[i] < 0 || out[i] > 1)
				abort();
	free(s);
	return 0;
}
