/* SPDX-License-Identifier: MIT */
#ifndef KV_CUDA_H
#define KV_CUDA_H

/*
 * The CUDA driver API, loaded at run time with dlopen("libcuda.so.1") so
 * that kvgate builds and runs where no GPU exists.  No CUDA header is
 * used: the few types, enums and attribute numbers needed are declared
 * here, with the values of the CUDA 12 driver API.
 */

#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef unsigned long long CUdeviceptr;
typedef struct { char bytes[16]; } CUuuid;

#define CUDA_SUCCESS 0
/* CUdevice_attribute values used by gpu-preflight. */
#define CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED 116
#define CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED 124
/* CUmemRangeHandleType */
#define CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD 1
/* CUpointer_attribute: synchronous memory operations, for GPUDirect RDMA */
#define CU_POINTER_ATTRIBUTE_SYNC_MEMOPS 6

/*
 * The driver's entry points.  A member is NULL when the driver does not
 * export the symbol (cuMemGetHandleForAddressRange needs CUDA 11.7).
 */
struct kv_cuda {
	void *handle;
	CUresult (*Init)(unsigned);
	CUresult (*DriverGetVersion)(int *);
	CUresult (*DeviceGetCount)(int *);
	CUresult (*DeviceGet)(CUdevice *, int);
	CUresult (*DeviceGetName)(char *, int, CUdevice);
	CUresult (*DeviceGetUuid)(CUuuid *, CUdevice);	/* _v2 if present */
	CUresult (*DeviceGetUuidV1)(CUuuid *, CUdevice);	/* parent GPU of a MIG */
	CUresult (*DeviceGetPCIBusId)(char *, int, CUdevice);
	CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
	CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*DevicePrimaryCtxRelease)(CUdevice);	/* _v2 */
	CUresult (*CtxSetCurrent)(CUcontext);
	CUresult (*MemAlloc)(CUdeviceptr *, size_t);	/* _v2 */
	CUresult (*MemFree)(CUdeviceptr);		/* _v2 */
	CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);	/* _v2 */
	CUresult (*PointerSetAttribute)(const void *, int, CUdeviceptr);
	CUresult (*MemGetHandleForAddressRange)(void *, CUdeviceptr, size_t,
	    int, unsigned long long);
	CUresult (*GetErrorName)(CUresult, const char **);
	CUresult (*GetErrorString)(CUresult, const char **);
};

/*
 * Load libcuda.so.1 (or the path in KVGATE_LIBCUDA) and resolve the
 * table; cuInit(0) is called.  Returns 0, or -1 with the reason in err
 * (dlerror's text, a missing required symbol, or cuInit's error).
 */
int kv_cuda_load(struct kv_cuda *cu, char *err, size_t errlen);
void kv_cuda_unload(struct kv_cuda *cu);

/* "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)" for rc. */
const char *kv_cuda_strerror(const struct kv_cuda *cu, CUresult rc,
    char *buf, size_t cap);

/* Format a UUID as NVIDIA tools do: prefix "GPU-" or "MIG-" then 8-4-4-4-12 hex. */
void kv_cuda_uuid_str(const CUuuid *u, const char *prefix, char *out,
    size_t cap);

#endif
