/*
 * client_linked: a program linked with -lcuda that calls the driver's exported
 * symbols directly (no dlopen, no cuGetProcAddress).
 *
 *   client_linked [launches=100]
 *
 * Built twice: as is (cuda.h maps cuMemAlloc to cuMemAlloc_v2, cuMemcpyHtoD to
 * cuMemcpyHtoD_v2, ...) and with CUDA_API_PER_THREAD_DEFAULT_STREAM
 * (client_linked_ptds: cuLaunchKernel_ptsz, cuMemcpyHtoD_v2_ptds, ...). The
 * legacy 32-bit ABI is reached under its own symbol names through asm labels.
 */
#include "client_common.h"

#include <stdint.h>

#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
#define PTDS "_ptds"
#define PTSZ "_ptsz"
#else
#define PTDS ""
#define PTSZ ""
#endif

/* The pre-3.2 ABI (32-bit device pointers and sizes), as old binaries call it. */
extern CUresult legacy_cuMemAlloc(unsigned int *dptr, unsigned int bytesize) __asm__("cuMemAlloc");
extern CUresult legacy_cuMemFree(unsigned int dptr) __asm__("cuMemFree");
extern CUresult legacy_cuMemcpyHtoD(unsigned int dst, const void *src, unsigned int n) __asm__("cuMemcpyHtoD");
extern CUresult legacy_cuMemcpyDtoH(void *dst, unsigned int src, unsigned int n) __asm__("cuMemcpyDtoH");
extern CUresult legacy_cuMemAllocHost(void **pp, unsigned int bytesize) __asm__("cuMemAllocHost");

enum { BYTES = 4096, LEGACY_BYTES = 1024 };

int main(int argc, char **argv) {
  long launches = arg_count(argc, argv, 1, 100);
  int version = 0;
  CALL("cuDriverGetVersion", cuDriverGetVersion(&version));
  CHECK(version == 13000, "driver version %d, expected 13000", version);

  /* Before cuInit the driver refuses work. */
  CUdeviceptr d = 0;
  CALL_RC("cuMemAlloc_v2", CUDA_ERROR_NOT_INITIALIZED, cuMemAlloc(&d, BYTES));
  CALL("cuInit", cuInit(0));

  int count = 0;
  CUdevice dev = -1;
  char name[64] = "";
  size_t total = 0;
  int major = 0;
  CUcontext ctx = NULL;
  CALL("cuDeviceGetCount", cuDeviceGetCount(&count));
  CHECK(count == 1, "device count %d", count);
  CALL("cuDeviceGet", cuDeviceGet(&dev, 0));
  CALL("cuDeviceGetName", cuDeviceGetName(name, sizeof name, dev));
  CHECK(strcmp(name, "Fake GPU") == 0, "device name '%s'", name);
  CALL("cuDeviceTotalMem_v2", cuDeviceTotalMem(&total, dev));
  CHECK(total == (80ull << 30), "total memory %zu", total);
  CALL("cuDeviceGetAttribute",
       cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CHECK(major == 9, "compute capability major %d", major);
  CALL("cuCtxGetCurrent", cuCtxGetCurrent(&ctx));
  CHECK(ctx != NULL, "no current context");

  CUmodule mod = NULL;
  CUfunction fn = NULL;
  CUstream stream = NULL;
  CALL("cuModuleLoadData", cuModuleLoadData(&mod, "fake cubin"));
  CALL("cuModuleGetFunction", cuModuleGetFunction(&fn, mod, "kernel"));
  CALL("cuStreamCreate", cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

  /* CUDA 12 libraries: a kernel, and the function of it, both launchable. */
  CUlibrary lib = NULL;
  CUkernel kern = NULL;
  CUfunction kfn = NULL;
  CALL("cuLibraryLoadData", cuLibraryLoadData(&lib, "fake cubin", NULL, NULL, 0, NULL, NULL, 0));
  CALL("cuLibraryGetKernel", cuLibraryGetKernel(&kern, lib, "_Z11lib_kernelPfi"));
  CALL("cuKernelGetFunction", cuKernelGetFunction(&kfn, kern));
  CALL_RC("cuLibraryGetKernel", CUDA_ERROR_NOT_FOUND, cuLibraryGetKernel(&kern, lib, ""));
  CALL("cuLaunchKernel" PTSZ, cuLaunchKernel((CUfunction)kern, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
  CALL("cuLaunchKernel" PTSZ, cuLaunchKernel(kfn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));

  /* Device memory: 64-bit and legacy 32-bit allocations, distinct and aligned. */
  CUdeviceptr d2 = 0;
  unsigned int d32 = 0;
  CALL("cuMemAlloc_v2", cuMemAlloc(&d, BYTES));
  CALL("cuMemAlloc_v2", cuMemAlloc(&d2, BYTES));
  CALL("cuMemAlloc", legacy_cuMemAlloc(&d32, LEGACY_BYTES));
  CHECK(d && d2 && d != d2 && d % 256 == 0 && d2 % 256 == 0, "bad allocations %llx %llx",
        (unsigned long long)d, (unsigned long long)d2);
  CHECK(d32 && d32 % 256 == 0 && d32 != d && d32 != d2, "bad legacy allocation %x", d32);

  /* Data round trips through the fake device. */
  unsigned char in[BYTES], out[BYTES];
  fill_pattern(in, sizeof in, 1);
  memset(out, 0, sizeof out);
  CALL("cuMemcpyHtoD_v2" PTDS, cuMemcpyHtoD(d, in, BYTES));
  CALL("cuMemcpyDtoH_v2" PTDS, cuMemcpyDtoH(out, d, BYTES));
  CHECK(memcmp(in, out, BYTES) == 0, "HtoD/DtoH round trip lost data");
  fill_pattern(in, LEGACY_BYTES, 2);
  memset(out, 0, sizeof out);
  CALL("cuMemcpyHtoD", legacy_cuMemcpyHtoD(d32, in, LEGACY_BYTES));
  CALL("cuMemcpyDtoH", legacy_cuMemcpyDtoH(out, d32, LEGACY_BYTES));
  CHECK(check_pattern(out, LEGACY_BYTES, 2), "legacy round trip lost data");
  CALL("cuMemsetD32_v2" PTDS, cuMemsetD32(d, 0xabcdef01u, 16));
  CALL("cuMemcpyDtoH_v2" PTDS, cuMemcpyDtoH(out, d, BYTES));
  for (int i = 0; i < 16; i++) {
    uint32_t w;
    memcpy(&w, out + 4 * i, 4);
    CHECK(w == 0xabcdef01u, "memset word %d is %08x", i, w);
  }
  fill_pattern(in, BYTES, 1);
  CHECK(memcmp(out + 64, in + 64, BYTES - 64) == 0, "memset wrote past its range");

  /* Launches. */
  void *params[] = {&d, &d2};
  for (long i = 0; i < launches; i++)
    CALL("cuLaunchKernel" PTSZ, cuLaunchKernel(fn, 4, 1, 1, 128, 1, 1, 0, stream, params, NULL));
  CALL("cuStreamSynchronize" PTSZ, cuStreamSynchronize(stream));
  CALL("cuCtxSynchronize", cuCtxSynchronize());

  /* Host memory. */
  void *pinned = NULL, *pinned32 = NULL;
  CALL("cuMemAllocHost_v2", cuMemAllocHost(&pinned, 1 << 16));
  CALL("cuMemAllocHost", legacy_cuMemAllocHost(&pinned32, 1 << 12));
  CHECK(pinned && pinned32, "no pinned memory");
  memset(pinned, 0x5a, 1 << 16); /* real memory */
  CALL("cuMemFreeHost", cuMemFreeHost(pinned));
  CALL("cuMemFreeHost", cuMemFreeHost(pinned32));
  static unsigned char pageable[1 << 16];
  CALL("cuMemHostRegister_v2", cuMemHostRegister(pageable, sizeof pageable, 0));
  CALL_RC("cuMemHostRegister_v2", CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
          cuMemHostRegister(pageable, sizeof pageable, 0));
  CALL("cuMemHostUnregister", cuMemHostUnregister(pageable));
  CALL_RC("cuMemHostUnregister", CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, cuMemHostUnregister(pageable));

  /* Invalid calls: the driver's error codes must come back unchanged. */
  CALL_RC("cuMemAlloc_v2", CUDA_ERROR_INVALID_VALUE, cuMemAlloc(NULL, 16));
  CUdeviceptr none = 0;
  CALL_RC("cuMemAlloc_v2", CUDA_ERROR_INVALID_VALUE, cuMemAlloc(&none, 0));
  CHECK(none == 0, "failed allocation wrote %llx", (unsigned long long)none);
  CALL_RC("cuLaunchKernel" PTSZ, CUDA_ERROR_INVALID_VALUE,
          cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, stream, NULL, NULL));
  CALL_RC("cuLaunchKernel" PTSZ, CUDA_ERROR_INVALID_VALUE,
          cuLaunchKernel(fn, 0, 1, 1, 1, 1, 1, 0, stream, NULL, NULL));
  CALL_RC("cuMemcpyDtoH_v2" PTDS, CUDA_ERROR_INVALID_VALUE, cuMemcpyDtoH(out, d, 2 * BYTES));
  CALL_RC("cuStreamSynchronize" PTSZ, CUDA_ERROR_INVALID_HANDLE, cuStreamSynchronize((CUstream)0x1234));
  const char *ename = NULL;
  CALL("cuGetErrorName", cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &ename));
  CHECK(ename && strcmp(ename, "CUDA_ERROR_INVALID_VALUE") == 0, "error name %s", ename ? ename : "(null)");

  /* Frees, including a double free. */
  CALL("cuMemFree_v2", cuMemFree(d));
  CALL("cuMemFree_v2", cuMemFree(d2));
  CALL_RC("cuMemFree_v2", CUDA_ERROR_INVALID_VALUE, cuMemFree(d));
  CALL("cuMemFree", legacy_cuMemFree(d32));
  CALL("cuStreamDestroy_v2", cuStreamDestroy(stream));
  CALL("cuModuleUnload", cuModuleUnload(mod));
  CALL("cuLibraryUnload", cuLibraryUnload(lib));
  CALL_RC("cuLaunchKernel" PTSZ, CUDA_ERROR_INVALID_HANDLE,
          cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));

  printf("client_linked%s: %ld launches, all checks passed\n", PTDS, launches);
  expect_print();
  return 0;
}
