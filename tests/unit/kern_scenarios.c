#include "kern_scenarios.h"

#include <string.h>

#include "mem_scenarios.h"

#define MOD 0x5500aa000000u     /* a CUmodule */
#define LIB 0x5500bb000000u     /* a CUlibrary */

static void launches(struct mem_builder *b, unsigned thread, uint64_t *t, const char *symbol, int32_t result,
                     uint64_t function, unsigned n)
{
    for (unsigned i = 0; i < n; i++, *t += 1000)
        mb_call_args(b, thread, *t, 200, symbol, result, 0x77, function, 1 | 1ull << 32, 128u << 16, 0);
}

/* kernels (pid 8181). PATHS: 1 a file path, 2 "_Z6kernelPfi", 3 "vector_add",
 * 4 "_ZN2at6native13reduce_kernelEv", 5 "_Zfoo" (not a valid mangled name).
 * Thread 0 names: F1 0x1000 = id 2 (cuModuleGetFunction), K1 0x2000 = id 3
 * (cuLibraryGetKernel), F2 0x3000 = K1's function (cuKernelGetFunction),
 * K2 0x4000 = id 4, F3 0x5000 = id 5; a failed cuModuleGetFunction.
 * Thread 1 (its chunk first, its calls earlier): F1 x5 cuLaunchKernel + x2
 * cuLaunchKernel_ptsz, F2 x3 cuLaunchKernelEx, K1 x1 cuLaunchKernel (a kernel
 * as the function), K2 x2 cuLaunchCooperativeKernel, F3 x1, unknown 0x9000 x6,
 * one failed cuLaunchKernel of F1, three cuGraphLaunch.
 * Expected: 20 launches, 6 unnamed, 1 failed, 3 graph launches, 5 kernels:
 * kernel(float*, int) 7 {cuLaunchKernel 7}, function 0x9000 6, vector_add 4
 * {cuLaunchKernelEx 3, cuLaunchKernel 1}, at::native::reduce_kernel() 2
 * {cuLaunchCooperativeKernel 2}, _Zfoo 1. */
static void write_kernels(const char *path)
{
    struct mem_builder *b = mb_open(path, 8181, WSL_PROC_WSL2, 0);
    const uint32_t ids[] = {1, 2, 3, 4, 5};
    const char *const names[] = {"/home/u/model.bin", "_Z6kernelPfi", "vector_add", "_ZN2at6native13reduce_kernelEv",
                                 "_Zfoo"};
    mb_paths(b, ids, names, 5);
    mb_call_args(b, 0, 100000, 500, "cuModuleGetFunction", 0, 0, 0x1000, 2, MOD, 0);
    mb_call_args(b, 0, 101000, 500, "cuLibraryGetKernel", 0, 0, 0x2000, 3, LIB, 0);
    mb_call_args(b, 0, 102000, 500, "cuKernelGetFunction", 0, 0, 0x3000, 0, 0x2000, 0);
    mb_call_args(b, 0, 103000, 500, "cuModuleGetFunction", 500, 0, 0, 1, MOD, 0); /* CUDA_ERROR_NOT_FOUND */
    mb_call_args(b, 0, 104000, 500, "cuLibraryGetKernel", 0, 0, 0x4000, 4, LIB, 0);
    mb_call_args(b, 0, 105000, 500, "cuModuleGetFunction", 0, 0, 0x5000, 5, MOD, 0);
    uint64_t t = 1000;
    launches(b, 1, &t, "cuLaunchKernel", 0, 0x1000, 5);
    launches(b, 1, &t, "cuLaunchKernel_ptsz", 0, 0x1000, 2);
    launches(b, 1, &t, "cuLaunchKernelEx", 0, 0x3000, 3);
    launches(b, 1, &t, "cuLaunchKernel", 0, 0x2000, 1);
    launches(b, 1, &t, "cuLaunchCooperativeKernel", 0, 0x4000, 2);
    launches(b, 1, &t, "cuLaunchKernel", 0, 0x5000, 1);
    launches(b, 1, &t, "cuLaunchKernel", 0, 0x9000, 6);
    launches(b, 1, &t, "cuLaunchKernel", 1, 0x1000, 1);
    for (unsigned i = 0; i < 3; i++, t += 1000)
        mb_call_args(b, 1, t, 300, "cuGraphLaunch", 0, 0x77, 0xabc000, 0, 0, 0);
    const unsigned order[] = {1, 0, 2, 3}; /* the launches' chunk first */
    mb_close(b, order);
}

/* kernels_b (pid 8282): handle 0x1000 is "other_kernel" (PATHS id 2 here),
 * launched 4 times; 0x9000 (unnamed) once; "vector_add" as handle 0x7000
 * (cuModuleGetFunction), 10 launches. Names and launches in one thread. */
static void write_kernels_b(const char *path)
{
    struct mem_builder *b = mb_open(path, 8282, WSL_PROC_WSL2, 0);
    const uint32_t ids[] = {2, 3};
    const char *const names[] = {"other_kernel", "vector_add"};
    mb_paths(b, ids, names, 2);
    mb_call_args(b, 0, 100, 500, "cuModuleGetFunction", 0, 0, 0x1000, 2, MOD, 0);
    mb_call_args(b, 0, 700, 500, "cuModuleGetFunction", 0, 0, 0x7000, 3, MOD, 0);
    uint64_t t = 2000;
    launches(b, 0, &t, "cuLaunchKernel", 0, 0x1000, 4);
    launches(b, 0, &t, "cuLaunchKernel", 0, 0x9000, 1);
    launches(b, 0, &t, "cuLaunchKernel", 0, 0x7000, 10);
    mb_close(b, NULL);
}

bool kern_scenario_write(const char *path, const char *name)
{
    if (strcmp(name, "kernels") == 0)
        write_kernels(path);
    else if (strcmp(name, "kernels_b") == 0)
        write_kernels_b(path);
    else
        return false;
    return true;
}
