/*
 * client_dlsym: dlopen("libcuda.so.1") and dlsym() of exact variant names
 * (legacy, _v2, _ptds/_ptsz), as hand-written loaders do; also lookups in the
 * global scope (RTLD_DEFAULT) and of symbols the driver lacks.
 *
 *   client_dlsym [iterations=100]
 */
#include "client_common.h"

#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <stdint.h>

typedef CUresult (*legacy_alloc_fn)(unsigned int *dptr, unsigned int bytesize);
typedef CUresult (*legacy_free_fn)(unsigned int dptr);
typedef CUresult (*legacy_htod_fn)(unsigned int dst, const void *src, unsigned int n);
typedef CUresult (*legacy_dtoh_fn)(void *dst, unsigned int src, unsigned int n);
typedef CUresult (*legacy_pitch_fn)(unsigned int *dptr, unsigned int *pitch, unsigned int w,
                                    unsigned int h, unsigned int esz);

static void *lib;

static void *must_dlsym(void *handle, const char *name) {
  dlerror();
  void *p = dlsym(handle, name);
  CHECK(p != NULL, "dlsym(%s) failed: %s", name, dlerror());
  return p;
}

static void must_lack(void *handle, const char *name) {
  dlerror();
  void *p = dlsym(handle, name);
  const char *err = dlerror();
  CHECK(p == NULL && err != NULL, "dlsym(%s) = %p, error %s: the driver must not have it", name, p,
        err ? err : "(none)");
}

#define SYM(type, name) ((type)must_dlsym(lib, name))

enum { BYTES = 2048 };

int main(int argc, char **argv) {
  long iterations = arg_count(argc, argv, 1, 100);
  lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  CHECK(lib, "dlopen libcuda.so.1: %s", dlerror());

  PFN_cuInit_v2000 init = SYM(PFN_cuInit_v2000, "cuInit");
  PFN_cuModuleLoadData_v2000 moduleLoadData = SYM(PFN_cuModuleLoadData_v2000, "cuModuleLoadData");
  PFN_cuModuleGetFunction_v2000 moduleGetFunction = SYM(PFN_cuModuleGetFunction_v2000, "cuModuleGetFunction");
  PFN_cuDeviceGetDefaultMemPool_v11020 defaultPool =
      SYM(PFN_cuDeviceGetDefaultMemPool_v11020, "cuDeviceGetDefaultMemPool");
  legacy_alloc_fn alloc32 = SYM(legacy_alloc_fn, "cuMemAlloc");
  legacy_free_fn free32 = SYM(legacy_free_fn, "cuMemFree");
  legacy_htod_fn htod32 = SYM(legacy_htod_fn, "cuMemcpyHtoD");
  legacy_dtoh_fn dtoh32 = SYM(legacy_dtoh_fn, "cuMemcpyDtoH");
  legacy_pitch_fn pitch32 = SYM(legacy_pitch_fn, "cuMemAllocPitch");
  PFN_cuMemAlloc_v3020 alloc = SYM(PFN_cuMemAlloc_v3020, "cuMemAlloc_v2");
  PFN_cuMemFree_v3020 memFree = SYM(PFN_cuMemFree_v3020, "cuMemFree_v2");
  PFN_cuMemAllocPitch_v3020 pitch = SYM(PFN_cuMemAllocPitch_v3020, "cuMemAllocPitch_v2");
  PFN_cuMemAllocManaged_v6000 allocManaged = SYM(PFN_cuMemAllocManaged_v6000, "cuMemAllocManaged");
  PFN_cuMemAllocFromPoolAsync_v11020_ptsz allocFromPool =
      SYM(PFN_cuMemAllocFromPoolAsync_v11020_ptsz, "cuMemAllocFromPoolAsync_ptsz");
  PFN_cuMemFreeAsync_v11020_ptsz freeAsync = SYM(PFN_cuMemFreeAsync_v11020_ptsz, "cuMemFreeAsync_ptsz");
  PFN_cuMemcpyHtoD_v3020 htod = SYM(PFN_cuMemcpyHtoD_v3020, "cuMemcpyHtoD_v2");
  PFN_cuMemcpyDtoH_v7000_ptds dtoh_ptds = SYM(PFN_cuMemcpyDtoH_v7000_ptds, "cuMemcpyDtoH_v2_ptds");
  PFN_cuMemcpyDtoD_v3020 dtod = SYM(PFN_cuMemcpyDtoD_v3020, "cuMemcpyDtoD_v2");
  PFN_cuMemcpy_v4000 memcpyAny = SYM(PFN_cuMemcpy_v4000, "cuMemcpy");
  PFN_cuMemsetD8_v7000_ptds memset8_ptds = SYM(PFN_cuMemsetD8_v7000_ptds, "cuMemsetD8_v2_ptds");
  PFN_cuLaunchKernel_v7000_ptsz launch_ptsz = SYM(PFN_cuLaunchKernel_v7000_ptsz, "cuLaunchKernel_ptsz");
  PFN_cuLaunchCooperativeKernel_v9000 launchCoop =
      SYM(PFN_cuLaunchCooperativeKernel_v9000, "cuLaunchCooperativeKernel");
  PFN_cuStreamSynchronize_v7000_ptsz streamSync_ptsz =
      SYM(PFN_cuStreamSynchronize_v7000_ptsz, "cuStreamSynchronize_ptsz");
  PFN_cuStreamQuery_v7000_ptsz streamQuery_ptsz = SYM(PFN_cuStreamQuery_v7000_ptsz, "cuStreamQuery_ptsz");
  PFN_cuCtxSynchronize_v13000 ctxSync_v2 = SYM(PFN_cuCtxSynchronize_v13000, "cuCtxSynchronize_v2");
  PFN_cuMemHostRegister_v6050 hostRegister = SYM(PFN_cuMemHostRegister_v6050, "cuMemHostRegister");
  PFN_cuMemHostUnregister_v4000 hostUnregister = SYM(PFN_cuMemHostUnregister_v4000, "cuMemHostUnregister");
  /* Opened RTLD_GLOBAL: the global scope finds the driver's symbols too. */
  PFN_cuMemAllocHost_v3020 allocHost = (PFN_cuMemAllocHost_v3020)must_dlsym(RTLD_DEFAULT, "cuMemAllocHost_v2");
  PFN_cuMemFreeHost_v2000 freeHost = (PFN_cuMemFreeHost_v2000)must_dlsym(RTLD_DEFAULT, "cuMemFreeHost");

  /* What the driver lacks stays missing. */
  must_lack(lib, "cuEventRecordWithFlags");
  must_lack(lib, "cuEventRecordWithFlags_ptsz");
  must_lack(RTLD_DEFAULT, "cuEventRecordWithFlags");
  must_lack(lib, "cuNoSuchFunction");

  CALL("cuInit", init(0));
  CUmodule mod = NULL;
  CUfunction fn = NULL;
  CUmemoryPool pool = NULL;
  CALL("cuModuleLoadData", moduleLoadData(&mod, "fake cubin"));
  CALL("cuModuleGetFunction", moduleGetFunction(&fn, mod, "kernel"));
  CALL("cuDeviceGetDefaultMemPool", defaultPool(&pool, 0));

  unsigned char in[BYTES], out[BYTES];
  for (long i = 0; i < iterations; i++) {
    unsigned seed = (unsigned)i;
    CUdeviceptr d = 0, m = 0, pd = 0, ad = 0;
    unsigned int d32 = 0, pd32 = 0, pitch32_bytes = 0;
    size_t pitch_bytes = 0;
    CALL("cuMemAlloc", alloc32(&d32, BYTES));
    CALL("cuMemAlloc_v2", alloc(&d, BYTES));
    CALL("cuMemAllocManaged", allocManaged(&m, BYTES, CU_MEM_ATTACH_GLOBAL));
    CALL("cuMemAllocPitch", pitch32(&pd32, &pitch32_bytes, 100, 4, 4));
    CALL("cuMemAllocPitch_v2", pitch(&pd, &pitch_bytes, 1000, 4, 16));
    CHECK(pitch32_bytes >= 100 && pitch_bytes >= 1000 && pitch_bytes % 256 == 0, "bad pitches %u %zu",
          pitch32_bytes, pitch_bytes);
    CALL("cuMemAllocFromPoolAsync_ptsz", allocFromPool(&ad, 256, pool, CU_STREAM_PER_THREAD));
    CHECK(d32 && d && m && pd32 && pd && ad, "an allocation returned 0");

    /* 64-bit copies, a per-thread-stream copy back, a memset. */
    fill_pattern(in, BYTES, seed);
    memset(out, 0, sizeof out);
    CALL("cuMemcpyHtoD_v2", htod(d, in, BYTES));
    CALL("cuMemcpyDtoH_v2_ptds", dtoh_ptds(out, d, BYTES));
    CHECK(memcmp(in, out, BYTES) == 0, "HtoD_v2/DtoH_v2_ptds round trip lost data");
    CALL("cuMemsetD8_v2_ptds", memset8_ptds(d + 16, 0x7e, 16));
    CALL("cuMemcpyDtoH_v2_ptds", dtoh_ptds(out, d, BYTES));
    for (int k = 0; k < BYTES; k++)
      CHECK(out[k] == (k >= 16 && k < 32 ? 0x7e : in[k]), "memset byte %d is %02x", k, out[k]);
    /* Legacy 32-bit copies. */
    fill_pattern(in, BYTES, seed + 1);
    CALL("cuMemcpyHtoD", htod32(d32, in, BYTES));
    CALL("cuMemcpyDtoH", dtoh32(out, d32, BYTES));
    CHECK(check_pattern(out, BYTES, seed + 1), "legacy round trip lost data");
    /* Device to device, then unified addressing into managed memory, which
     * the host can read directly. */
    CALL("cuMemcpyDtoD_v2", dtod(d, (CUdeviceptr)d32, BYTES));
    CALL("cuMemcpy", memcpyAny(m, d, BYTES));
    CHECK(check_pattern((const unsigned char *)(uintptr_t)m, BYTES, seed + 1), "managed memory lost data");

    void *params[] = {&d};
    CALL("cuLaunchKernel_ptsz", launch_ptsz(fn, 2, 2, 1, 64, 2, 1, 1024, CU_STREAM_PER_THREAD, params, NULL));
    CALL("cuLaunchCooperativeKernel", launchCoop(fn, 1, 1, 1, 32, 1, 1, 0, NULL, params));
    CALL("cuStreamQuery_ptsz", streamQuery_ptsz(CU_STREAM_PER_THREAD));
    CALL("cuStreamSynchronize_ptsz", streamSync_ptsz(CU_STREAM_PER_THREAD));
    CALL("cuCtxSynchronize_v2", ctxSync_v2(NULL));

    CALL("cuMemFreeAsync_ptsz", freeAsync(ad, CU_STREAM_PER_THREAD));
    CALL("cuMemFree_v2", memFree(pd));
    CALL("cuMemFree", free32(pd32));
    CALL("cuMemFree_v2", memFree(m));
    CALL("cuMemFree_v2", memFree(d));
    CALL("cuMemFree", free32(d32));
  }

  void *pinned = NULL;
  static unsigned char pageable[8192];
  CALL("cuMemAllocHost_v2", allocHost(&pinned, 4096));
  CALL("cuMemHostRegister", hostRegister(pageable, sizeof pageable, CU_MEMHOSTREGISTER_PORTABLE));
  CALL("cuMemHostUnregister", hostUnregister(pageable));
  CALL("cuMemFreeHost", freeHost(pinned));
  /* Errors pass through. */
  CALL_RC("cuMemFreeHost", CUDA_ERROR_INVALID_VALUE, freeHost(pageable));
  CALL_RC("cuMemAllocPitch_v2", CUDA_ERROR_INVALID_VALUE, pitch(&(CUdeviceptr){0}, &(size_t){0}, 64, 4, 3));
  CALL_RC("cuMemsetD8_v2_ptds", CUDA_ERROR_INVALID_VALUE, memset8_ptds(0x1000, 0, 16));
  CALL_RC("cuMemAllocFromPoolAsync_ptsz", CUDA_ERROR_INVALID_VALUE,
          allocFromPool(&(CUdeviceptr){0}, 256, NULL, CU_STREAM_PER_THREAD));

  printf("client_dlsym: %ld iterations, all checks passed\n", iterations);
  expect_print();
  return 0;
}
