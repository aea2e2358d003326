/*
 * client_project: driver-API loops whose time goes mostly to one kind of
 * call, for the --project tests (run against the fake driver, whose
 * FAKE_CUDA_*_NS knobs set each call's host cost and FAKE_CUDA_KERNEL_NS the
 * simulated GPU time of a kernel of gridDimX 1).
 *
 *   client_project launch N   N launches of a 1-block kernel, a cuStreamSynchronize every 50
 *   client_project sync N     N x (launch, cuStreamSynchronize)
 *   client_project alloc N    N x (cuMemAlloc of 4 MiB (no host bytes behind it in the fake), cuMemFree), a launch every 10
 *   client_project mixed N    N x (cuMemAlloc of 4 MiB, 3 launches, cuEventRecord, cuEventSynchronize, cuMemFree)
 */
#include "client_common.h"

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  long n = arg_count(argc, argv, 2, 1000);
  CALL("cuInit", cuInit(0));
  CUdevice dev;
  CALL("cuDeviceGet", cuDeviceGet(&dev, 0));
  CUcontext ctx = NULL;
  CALL("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&ctx, dev));
  CALL("cuCtxSetCurrent", cuCtxSetCurrent(ctx));
  CUmodule mod = NULL;
  CALL("cuModuleLoadData", cuModuleLoadData(&mod, "fake cubin"));
  CUfunction k = NULL;
  CALL("cuModuleGetFunction", cuModuleGetFunction(&k, mod, "k_project"));
#define LAUNCH() CALL("cuLaunchKernel", cuLaunchKernel(k, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL))
  if (!strcmp(mode, "launch")) {
    for (long i = 0; i < n; i++) {
      LAUNCH();
      if (i % 50 == 49)
        CALL("cuStreamSynchronize", cuStreamSynchronize(NULL));
    }
  } else if (!strcmp(mode, "sync")) {
    for (long i = 0; i < n; i++) {
      LAUNCH();
      CALL("cuStreamSynchronize", cuStreamSynchronize(NULL));
    }
  } else if (!strcmp(mode, "alloc")) {
    for (long i = 0; i < n; i++) {
      CUdeviceptr p = 0;
      CALL("cuMemAlloc_v2", cuMemAlloc(&p, 4u << 20));
      if (i % 10 == 0)
        LAUNCH();
      CALL("cuMemFree_v2", cuMemFree(p));
    }
  } else if (!strcmp(mode, "mixed")) {
    CUevent ev = NULL;
    CALL("cuEventCreate", cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    for (long i = 0; i < n; i++) {
      CUdeviceptr p = 0;
      CALL("cuMemAlloc_v2", cuMemAlloc(&p, 4u << 20));
      LAUNCH();
      LAUNCH();
      LAUNCH();
      CALL("cuEventRecord", cuEventRecord(ev, NULL));
      CALL("cuEventSynchronize", cuEventSynchronize(ev));
      CALL("cuMemFree_v2", cuMemFree(p));
    }
    CALL("cuEventDestroy_v2", cuEventDestroy(ev));
  } else {
    client_fail("usage: client_project launch|sync|alloc|mixed N");
  }
  CALL("cuCtxSynchronize", cuCtxSynchronize());
  expect_print();
  return 0;
}
