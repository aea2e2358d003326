/*
 * bench_hook: what the shim adds to one hooked driver call.
 *
 *   bench_hook [CALLS]
 *
 * Resolves cuLaunchKernel the way the CUDA runtime does (dlopen libcuda.so.1,
 * cuGetProcAddress_v2, per-thread-stream flag) and calls it CALLS times
 * against the fake driver, whose launch does nothing. Run it with and without
 * LD_PRELOAD=libwslshim.so: the difference of the ns/call figures is the
 * shim's cost; under valgrind --tool=callgrind the difference of the total
 * instruction counts over CALLS is its instructions per call, the writer
 * thread included. Not a test: speed is measured, not asserted.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda.h>

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void **, void **);
typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

int main(int argc, char **argv)
{
    long calls = argc > 1 ? atol(argv[1]) : 10000000;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "bench_hook: %s\n", dlerror());
        return 1;
    }
    gpa_fn gpa = (gpa_fn)dlsym(lib, "cuGetProcAddress_v2");
    CUresult (*init)(unsigned) = NULL;
    launch_fn launch = NULL;
    CUdriverProcAddressQueryResult st;
    if (!gpa || gpa("cuInit", (void **)&init, 2000, 0, &st) || gpa("cuLaunchKernel", (void **)&launch, 7000,
                                                                    CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st)) {
        fprintf(stderr, "bench_hook: lookups failed\n");
        return 1;
    }
    init(0);
    CUfunction f = (CUfunction)(uintptr_t)0x1000; /* the fake driver accepts any non-null function */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < calls; i++)
        launch(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ns = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / (double)calls;
    printf("{\"calls\": %ld, \"ns_per_call\": %.2f}\n", calls, ns);
    return 0;
}
