/* SPDX-License-Identifier: MIT */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.h"

/* Resolve the first of names that the driver exports, or NULL. */
static void *
sym(void *h, const char *name, const char *fallback)
{
	void *p = dlsym(h, name);

	if (p == NULL && fallback)
		p = dlsym(h, fallback);
	return p;
}

#define RESOLVE(field, name, fallback) \
	(*(void **)&cu->field = sym(cu->handle, name, fallback))

int
kv_cuda_load(struct kv_cuda *cu, char *err, size_t errlen)
{
	const char *path = getenv("KVGATE_LIBCUDA");
	const char *miss = NULL;
	CUresult rc;
	char why[160];

	memset(cu, 0, sizeof(*cu));
	if (path == NULL || *path == '\0')
		path = "libcuda.so.1";
	if ((cu->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		snprintf(err, errlen, "%s", dlerror());
		return -1;
	}
	RESOLVE(Init, "cuInit", NULL);
	RESOLVE(DriverGetVersion, "cuDriverGetVersion", NULL);
	RESOLVE(DeviceGetCount, "cuDeviceGetCount", NULL);
	RESOLVE(DeviceGet, "cuDeviceGet", NULL);
	RESOLVE(DeviceGetName, "cuDeviceGetName", NULL);
	RESOLVE(DeviceGetUuid, "cuDeviceGetUuid_v2", "cuDeviceGetUuid");
	RESOLVE(DeviceGetUuidV1, "cuDeviceGetUuid", NULL);
	RESOLVE(DeviceGetPCIBusId, "cuDeviceGetPCIBusId", NULL);
	RESOLVE(DeviceGetAttribute, "cuDeviceGetAttribute", NULL);
	RESOLVE(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL);
	RESOLVE(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2",
	    "cuDevicePrimaryCtxRelease");
	RESOLVE(CtxSetCurrent, "cuCtxSetCurrent", NULL);
	RESOLVE(MemAlloc, "cuMemAlloc_v2", NULL);
	RESOLVE(MemFree, "cuMemFree_v2", NULL);
	RESOLVE(MemsetD8, "cuMemsetD8_v2", NULL);
	RESOLVE(PointerSetAttribute, "cuPointerSetAttribute", NULL);
	RESOLVE(MemGetHandleForAddressRange, "cuMemGetHandleForAddressRange",
	    NULL);
	RESOLVE(GetErrorName, "cuGetErrorName", NULL);
	RESOLVE(GetErrorString, "cuGetErrorString", NULL);

	if (!cu->Init) miss = "cuInit";
	else if (!cu->DriverGetVersion) miss = "cuDriverGetVersion";
	else if (!cu->DeviceGetCount) miss = "cuDeviceGetCount";
	else if (!cu->DeviceGet) miss = "cuDeviceGet";
	else if (!cu->DeviceGetUuid) miss = "cuDeviceGetUuid_v2";
	else if (!cu->DeviceGetPCIBusId) miss = "cuDeviceGetPCIBusId";
	else if (!cu->DeviceGetAttribute) miss = "cuDeviceGetAttribute";
	if (miss) {
		snprintf(err, errlen, "%s: the driver does not export %s", path,
		    miss);
		kv_cuda_unload(cu);
		return -1;
	}
	if ((rc = cu->Init(0)) != CUDA_SUCCESS) {
		snprintf(err, errlen, "cuInit: %s",
		    kv_cuda_strerror(cu, rc, why, sizeof(why)));
		kv_cuda_unload(cu);
		return -1;
	}
	return 0;
}

void
kv_cuda_unload(struct kv_cuda *cu)
{
	if (cu->handle)
		dlclose(cu->handle);
	memset(cu, 0, sizeof(*cu));
}

const char *
kv_cuda_strerror(const struct kv_cuda *cu, CUresult rc, char *buf,
    size_t cap)
{
	const char *name = NULL, *text = NULL;

	if (cu->GetErrorName)
		cu->GetErrorName(rc, &name);
	if (cu->GetErrorString)
		cu->GetErrorString(rc, &text);
	if (name && text)
		snprintf(buf, cap, "%s (%s)", name, text);
	else
		snprintf(buf, cap, "CUDA error %d", rc);
	return buf;
}

void
kv_cuda_uuid_str(const CUuuid *u, const char *prefix, char *out, size_t cap)
{
	const unsigned char *b = (const unsigned char *)u->bytes;

	snprintf(out, cap, "%s%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
	    "%02x%02x%02x%02x%02x%02x", prefix, b[0], b[1], b[2], b[3], b[4],
	    b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
	    b[15]);
}
