/*
 * bench_hook: what the shim adds to one hooked driver call.
 *
 *   bench_hook [CALLS] [mix]
 *
 * Resolves cuLaunchKernel the way the CUDA runtime does (dlopen libcuda.so.1,
 * cuGetProcAddress_v2, per-thread-stream flag) and calls it CALLS times
 * against the fake driver, whose launch does nothing. Run it with and without
 * LD_PRELOAD=libwslshim.so: the difference of the ns/call figures is the
 * shim's cost; under valgrind --tool=callgrind the difference of the total
 * instruction counts over CALLS is its instructions per call, the writer
 * thread included. Not a test: speed is measured, not asserted.
 *
 * With `mix`, a realistic launch stream for the trace's bytes per event: 64
 * kernels (distinct functions and grids) launched in a fixed step order, with
 * the program's own work between launches varying (a pseudo-random spin of 0
 * to about 2 us), so that launch times and gaps vary as in a training loop.
 *
 * It prints the wall time per call and the CPU time of its own thread per call
 * (the program's thread: the shim's writer thread is not in it).
 *
 * BENCH_PAUSE_EVERY=N: a 2 ms sleep after every N launches. Under valgrind,
 * which runs one thread at a time, the writer thread then gets its turn before
 * the ring fills (tests/bench/cg_threads.sh), so that no event waits or drops.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    /* Real functions of the fake driver's (a launch of an unknown handle fails there) */
    CUresult (*load)(CUmodule *, const void *) = NULL;
    CUresult (*get)(CUfunction *, CUmodule, const char *) = NULL;
    CUmodule mod = NULL;
    CUfunction fns[64] = {0};
    if (gpa("cuModuleLoadData", (void **)&load, 2000, 0, &st) || gpa("cuModuleGetFunction", (void **)&get, 2000, 0, &st) ||
        load(&mod, "fake cubin"))
        return 1;
    for (int k = 0; k < 64; k++) {
        char name[32];
        snprintf(name, sizeof name, "kernel_%d", k);
        if (get(&fns[k], mod, name))
            return 1;
    }
    CUfunction f = fns[0];
    int mix = argc > 2 && !strcmp(argv[2], "mix");
    const char *pe = getenv("BENCH_PAUSE_EVERY");
    long pause_every = pe ? atol(pe) : 0;
    struct timespec pause = {0, 2000000};
    struct timespec t0, t1, c0, c1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (mix) {
        uint32_t rng = 12345;
        volatile unsigned sink = 0;
        for (long i = 0; i < calls; i++) {
            unsigned k = (unsigned)(i % 64);
            rng ^= rng << 13, rng ^= rng >> 17, rng ^= rng << 5;
            for (unsigned s = rng % 1024u; s; s--) /* the program's own work: varies */
                sink += s;
            launch(fns[k], 64 + k * 8, 1 + k % 3, 1,
                   (k % 4 + 1) * 64, 1, 1, (k % 5) * 1024, NULL, NULL, NULL);
            if (pause_every && (i + 1) % pause_every == 0)
                nanosleep(&pause, NULL);
        }
    } else {
        for (long i = 0; i < calls; i++)
        {
            if (launch(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL))
                return 1;
            if (pause_every && (i + 1) % pause_every == 0)
                nanosleep(&pause, NULL);
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    double ns = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / (double)calls;
    double cpu = ((c1.tv_sec - c0.tv_sec) * 1e9 + (c1.tv_nsec - c0.tv_nsec)) / (double)calls;
    printf("{\"calls\": %ld, \"ns_per_call\": %.2f, \"thread_cpu_ns_per_call\": %.2f}\n", calls, ns, cpu);
    return 0;
}
