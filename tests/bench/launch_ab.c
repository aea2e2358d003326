/*
 * launch_ab: what the shim adds to one kernel launch on the machine's own
 * driver, measured inside one process (docs/overhead.md, issue 26). Separate
 * runs with and without LD_PRELOAD differ by more than the shim's cost: a
 * launch of the real driver takes microseconds and moves by hundreds of
 * nanoseconds from one run to the next. Here both paths run in one process,
 * in alternating batches:
 *
 *   - "real": cuLaunchKernel as dlsym finds it in libcuda.so.1, loaded by this
 *     program before the shim (so no hook sees these launches);
 *   - "hooked": cuLaunchKernel as the shim's cuGetProcAddress_v2 hands it out
 *     (the shim dlopen'ed from SHIMLIB: its launch hook, its ring, its writer
 *     thread and its GPU timing as under LD_PRELOAD; the CUDA runtime reaches
 *     the driver the same way);
 *   - "real2": the real path again, so that the spread of two batches of the
 *     same path (the measurement's own resolution) is printed beside it.
 *
 * Each batch is N launches of an empty kernel timed as a block, then a stream
 * synchronize outside the timing, so that no batch waits for a full queue
 * (back-to-back launches of a real driver block once its queue is full, and
 * then measure the GPU, not the host). The order of the three batches rotates
 * every round. Printed: one JSON object with the medians per launch of each
 * path and the median over rounds of hooked - real and of real2 - real.
 *
 *   launch_ab SHIMLIB [--rounds R] [--per-batch N]
 *   launch_ab --calls [--rounds R]
 *
 * --calls times, without the shim, each driver call that a sampled launch
 * (WSLSHIM_GPU_TIMING) adds on the program's thread (shim/writer/gpu_timing.c's
 * sample_begin and wsl_gpu_sample_end), one at a time in batches of 20 with a
 * kernel queued before each batch (the stream busy, as when a program samples),
 * and prints the median ns per call of each.
 *
 * Set WSLSHIM_OUTPUT (and WSLSHIM_GPU_TIMING) as for any run under the shim.
 * Exit 0 on success, 1 when no usable driver or the shim cannot be loaded (the
 * reason on stderr), 2 on a usage error. Runs against tests/fake_cuda too
 * (bench.launch_ab_fake checks that every hooked launch is in the trace).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>

#include "../../cuda_probes/empty_kernel.h"
#include "median.h"

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void **, void **);
typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}


static void *need(void *lib, const char *sym)
{
    void *p = dlsym(lib, sym);
    if (!p) {
        fprintf(stderr, "launch_ab: the driver lacks %s\n", sym);
        exit(1);
    }
    return p;
}

static int usage(void)
{
    fprintf(stderr, "usage: launch_ab SHIMLIB [--rounds R] [--per-batch N]\n       launch_ab --calls [--rounds R]\n");
    return 2;
}

/* --calls: each of the sampled launch's driver calls, timed alone (ns per call, medians over rounds). */
enum { C_EXCHANGE, C_CTX_CURRENT, C_IS_CAPTURING, C_QUERY_BUSY, C_RECORD, C_LAUNCH, C_QUERY_IDLE, C_N };
static const char *const call_names[C_N] = {"cuThreadExchangeStreamCaptureMode", "cuCtxGetCurrent",
                                            "cuStreamIsCapturing", "cuStreamQuery_busy", "cuEventRecord",
                                            "cuLaunchKernel", "cuStreamQuery_idle"};

static int time_calls(void *lib, CUfunction fn, int rounds, CUresult (*stream_sync)(CUstream))
{
    CUresult (*exchange)(CUstreamCaptureMode *) = (CUresult(*)(CUstreamCaptureMode *))need(lib, "cuThreadExchangeStreamCaptureMode");
    CUresult (*current)(CUcontext *) = (CUresult(*)(CUcontext *))need(lib, "cuCtxGetCurrent");
    CUresult (*capturing)(CUstream, CUstreamCaptureStatus *) =
        (CUresult(*)(CUstream, CUstreamCaptureStatus *))need(lib, "cuStreamIsCapturing");
    CUresult (*query)(CUstream) = (CUresult(*)(CUstream))need(lib, "cuStreamQuery");
    CUresult (*ev_create)(CUevent *, unsigned) = (CUresult(*)(CUevent *, unsigned))need(lib, "cuEventCreate");
    CUresult (*record)(CUevent, CUstream) = (CUresult(*)(CUevent, CUstream))need(lib, "cuEventRecord");
    launch_fn launch = (launch_fn)need(lib, "cuLaunchKernel");
    enum { B = 20 };
    CUevent ev[B];
    for (int i = 0; i < B; i++)
        if (ev_create(&ev[i], CU_EVENT_DEFAULT) != CUDA_SUCCESS)
            return 1;
    double *v[C_N];
    for (int c = 0; c < C_N; c++)
        if (!(v[c] = calloc((size_t)rounds, sizeof(double))))
            return 1;
    for (int round = 0; round < rounds; round++) {
        for (int c = 0; c < C_N; c++) {
            if (c != C_QUERY_IDLE) /* a kernel queued: the stream busy, as at a program's sampled launch */
                launch(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
            else
                stream_sync(NULL);
            double t0 = now_ns();
            for (int i = 0; i < B; i++) {
                CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
                CUcontext cx;
                CUstreamCaptureStatus cs;
                switch (c) {
                case C_EXCHANGE: exchange(&m); break;
                case C_CTX_CURRENT: current(&cx); break;
                case C_IS_CAPTURING: capturing(NULL, &cs); break;
                case C_QUERY_BUSY: case C_QUERY_IDLE: query(NULL); break;
                case C_RECORD: record(ev[i], NULL); break;
                case C_LAUNCH: launch(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL); break;
                }
            }
            v[c][round] = (now_ns() - t0) / B;
            stream_sync(NULL);
        }
    }
    printf("{\"rounds\": %d", rounds);
    for (int c = 0; c < C_N; c++) {
        printf(", \"%s_ns\": %.1f", call_names[c], median(v[c], rounds));
        free(v[c]);
    }
    printf("}\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || (argv[1][0] == '-' && strcmp(argv[1], "--calls") != 0))
        return usage();
    const int calls = !strcmp(argv[1], "--calls");
    const char *shim_path = argv[1];
    int rounds = 1000, per = 200;
    for (int i = 2; i < argc; i++) {
        if (i + 1 < argc && !strcmp(argv[i], "--rounds"))
            rounds = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--per-batch"))
            per = atoi(argv[++i]);
        else
            return usage();
    }
    if (rounds < 3 || rounds > 1000000 || per < 1 || per > 100000)
        return usage();

    /* The real driver first, so that nothing of the shim is between this program and it. */
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "launch_ab: no CUDA driver: %s\n", dlerror());
        return 1;
    }
    CUresult (*init)(unsigned) = (CUresult(*)(unsigned))need(lib, "cuInit");
    CUresult (*device_get)(CUdevice *, int) = (CUresult(*)(CUdevice *, int))need(lib, "cuDeviceGet");
    CUresult (*retain)(CUcontext *, CUdevice) = (CUresult(*)(CUcontext *, CUdevice))need(lib, "cuDevicePrimaryCtxRetain");
    CUresult (*set_current)(CUcontext) = (CUresult(*)(CUcontext))need(lib, "cuCtxSetCurrent");
    CUresult (*load)(CUmodule *, const void *) = (CUresult(*)(CUmodule *, const void *))need(lib, "cuModuleLoadData");
    CUresult (*get_function)(CUfunction *, CUmodule, const char *) =
        (CUresult(*)(CUfunction *, CUmodule, const char *))need(lib, "cuModuleGetFunction");
    CUresult (*stream_sync)(CUstream) = (CUresult(*)(CUstream))need(lib, "cuStreamSynchronize");
    launch_fn real = (launch_fn)need(lib, "cuLaunchKernel");

    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn;
    CUresult r;
    if ((r = init(0)) != CUDA_SUCCESS || (r = device_get(&dev, 0)) != CUDA_SUCCESS ||
        (r = retain(&ctx, dev)) != CUDA_SUCCESS || (r = set_current(ctx)) != CUDA_SUCCESS ||
        (r = load(&mod, empty_kernel_ptx)) != CUDA_SUCCESS ||
        (r = get_function(&fn, mod, "wslshim_probe_empty")) != CUDA_SUCCESS) {
        fprintf(stderr, "launch_ab: setting up the driver failed (CUresult %d)\n", (int)r);
        return 1;
    }

    if (calls)
        return time_calls(lib, fn, rounds, stream_sync);

    /* The shim, and its launch as the CUDA runtime gets it. */
    void *shim = dlopen(shim_path, RTLD_NOW | RTLD_LOCAL);
    if (!shim) {
        fprintf(stderr, "launch_ab: cannot load the shim: %s\n", dlerror());
        return 1;
    }
    gpa_fn gpa = (gpa_fn)dlsym(shim, "cuGetProcAddress_v2");
    void *p = NULL;
    CUdriverProcAddressQueryResult st;
    if (!gpa || gpa("cuLaunchKernel", &p, 4000, 0, &st) != CUDA_SUCCESS || !p) {
        fprintf(stderr, "launch_ab: the shim's cuGetProcAddress_v2 gave no cuLaunchKernel\n");
        return 1;
    }
    if (p == (void *)real) {
        fprintf(stderr, "launch_ab: the shim handed out the driver's own cuLaunchKernel (not hooked)\n");
        return 1;
    }
    launch_fn hooked = (launch_fn)p;

    launch_fn paths[3] = {real, hooked, real};
    double *per_launch[3];
    for (int k = 0; k < 3; k++)
        if (!(per_launch[k] = calloc((size_t)rounds, sizeof(double))))
            return 1;
    double *diff = calloc((size_t)rounds, sizeof(double)), *aa = calloc((size_t)rounds, sizeof(double));
    if (!diff || !aa)
        return 1;
    long long hooked_launches = 0;
    /* Warm-up: both paths, the shim's first launches of the function (its slow path) included. */
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < 1000; i++)
            paths[k](fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
        stream_sync(NULL);
    }
    hooked_launches += 1000;
    for (int round = 0; round < rounds; round++) {
        for (int j = 0; j < 3; j++) {
            int k = (j + round) % 3;
            launch_fn f = paths[k];
            double t0 = now_ns();
            for (int i = 0; i < per; i++)
                if ((r = f(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL)) != CUDA_SUCCESS) {
                    fprintf(stderr, "launch_ab: cuLaunchKernel failed (CUresult %d)\n", (int)r);
                    return 1;
                }
            double t1 = now_ns();
            stream_sync(NULL);
            per_launch[k][round] = (t1 - t0) / per;
        }
        hooked_launches += per;
        diff[round] = per_launch[1][round] - per_launch[0][round];
        aa[round] = per_launch[2][round] - per_launch[0][round];
    }
    double m_diff = median(diff, rounds), m_aa = median(aa, rounds);
    /* the middle half of the differences: how far apart single rounds land */
    double d_lo = diff[rounds / 4], d_hi = diff[rounds - 1 - rounds / 4];
    double a_lo = aa[rounds / 4], a_hi = aa[rounds - 1 - rounds / 4];
    printf("{\"rounds\": %d, \"per_batch\": %d, \"real_ns\": %.1f, \"hooked_ns\": %.1f, \"real2_ns\": %.1f, "
           "\"added_ns\": %.1f, \"added_ns_iqr\": [%.1f, %.1f], \"real2_minus_real_ns\": %.1f, "
           "\"real2_minus_real_ns_iqr\": [%.1f, %.1f], \"hooked_launches\": %lld}\n",
           rounds, per, median(per_launch[0], rounds), median(per_launch[1], rounds), median(per_launch[2], rounds),
           m_diff, d_lo, d_hi, m_aa, a_lo, a_hi, hooked_launches);
    for (int k = 0; k < 3; k++)
        free(per_launch[k]);
    free(diff);
    free(aa);
    return 0;
}
