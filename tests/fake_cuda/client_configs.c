/*
 * client_configs: one function launched at two grid sizes, for the GPU time
 * estimate per launch configuration (run with FAKE_CUDA_KERNEL_NS=K: a kernel
 * of gridDimX g takes g*K ns on the fake GPU).
 *
 *   client_configs [steps=100] [big=40] [small=4] [small_per_step=9]
 *
 * Each step launches k_sizes once with `big` blocks (through cuLaunchKernelEx,
 * its configuration in a CUlaunchConfig) and then `small_per_step` times with
 * `small` blocks (cuLaunchKernel), back to back: the shape of PyTorch's Adam
 * kernels, launched per step at two sizes. One cuCtxSynchronize at the end.
 * Prints EXPECT (driver calls the client made) and a line
 *   PLAN {"steps": n, "big": g, "small": g, "small_per_step": n}.
 */
#include "client_common.h"

int main(int argc, char **argv) {
  long steps = arg_count(argc, argv, 1, 100);
  long big = arg_count(argc, argv, 2, 40);
  long small = arg_count(argc, argv, 3, 4);
  long per_step = arg_count(argc, argv, 4, 9);
  CALL("cuInit", cuInit(0));
  CUmodule mod = NULL;
  CALL("cuModuleLoadData", cuModuleLoadData(&mod, "fake cubin"));
  CUfunction f = NULL;
  CALL("cuModuleGetFunction", cuModuleGetFunction(&f, mod, "k_sizes"));
  CUlaunchConfig cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.gridDimX = (unsigned)big, cfg.gridDimY = 1, cfg.gridDimZ = 1;
  cfg.blockDimX = 256, cfg.blockDimY = 1, cfg.blockDimZ = 1;
  for (long i = 0; i < steps; i++) {
    CALL("cuLaunchKernelEx", cuLaunchKernelEx(&cfg, f, NULL, NULL));
    for (long j = 0; j < per_step; j++)
      CALL("cuLaunchKernel", cuLaunchKernel(f, (unsigned)small, 1, 1, 256, 1, 1, 0, NULL, NULL, NULL));
  }
  CALL("cuCtxSynchronize", cuCtxSynchronize());
  printf("PLAN {\"steps\": %ld, \"big\": %ld, \"small\": %ld, \"small_per_step\": %ld}\n", steps, big, small,
         per_step);
  expect_print();
  return 0;
}
