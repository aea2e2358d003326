/*
 * launch_probe: a driver-API program with no runtime library. It loads
 * libcuda.so.1 at run time, builds an empty kernel from embedded PTX, and
 * launches it back to back, then with a sync after each launch, reporting the
 * median host cost per call. Used as the plain driver-API client in the GPU
 * tests and as the first of the platform probes.
 *
 *   launch_probe [--resolve dlsym|proc] [--launches N] [--repeats R]
 *
 * --resolve proc looks every entry point up through cuGetProcAddress_v2, as
 * the CUDA runtime does; dlsym (default) uses dlsym on the libcuda handle.
 * Prints one JSON object on stdout; exit 0 on success, 1 when no usable GPU
 * or driver is present (with the reason on stderr), 2 on a usage error.
 */
#define _GNU_SOURCE
#include "wslshim/cli.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>

#include "empty_kernel.h"

struct driver {
    CUresult (*Init)(unsigned);
    CUresult (*DriverGetVersion)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void **, void **);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*CtxSynchronize)(void);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
};

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int die(const char *what, CUresult r)
{
    fprintf(stderr, "launch_probe: %s failed (CUresult %d)\n", what, (int)r);
    return 1;
}

#ifndef WSLSHIM_VERSION
#define WSLSHIM_VERSION "unknown"
#endif

int main(int argc, char **argv)
{
    const char *resolve = "dlsym";
    int launches = 10000, repeats = 5;
    static const struct option longopts[] = {
        {"version", no_argument, NULL, 'V'}, {"help", no_argument, NULL, 'h'},
        {"resolve", required_argument, NULL, 'r'}, {"launches", required_argument, NULL, 'l'},
        {"repeats", required_argument, NULL, 'n'}, {NULL, 0, NULL, 0}};
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":Vh", longopts, NULL)) != -1) {
        switch (c) {
        case 'V':
            return cli_print_version("launch_probe");
        case 'h':
            printf("usage: launch_probe [--resolve dlsym|proc] [--launches N] [--repeats R]\n"
                   "  --resolve HOW  reach cuLaunchKernel by dlsym (default) or cuGetProcAddress (proc)\n"
                   "  --launches N   launches per repeat (default 10000)\n"
                   "  --repeats R    repeats, 1-1000 (default 5)\n"
                   "  -V, --version  the version\n  -h, --help     this help\n"
                   "Every option takes its value as --opt VALUE or --opt=VALUE.\n");
            return 0;
        case 'r':
            resolve = optarg;
            break;
        case 'l':
            launches = atoi(optarg);
            break;
        case 'n':
            repeats = atoi(optarg);
            break;
        default:
            cli_option_error("launch_probe", c, argv);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "usage: launch_probe [--resolve dlsym|proc] [--launches N] [--repeats R]\n");
        return 2;
    }
    if (launches < 1 || repeats < 1 || repeats > 1000 || (strcmp(resolve, "dlsym") && strcmp(resolve, "proc"))) {
        fprintf(stderr, "launch_probe: bad argument\n");
        return 2;
    }

    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "launch_probe: no CUDA driver: %s\n", dlerror());
        return 1;
    }
    CUresult (*gpa)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *) =
        (CUresult(*)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *))dlsym(
            lib, "cuGetProcAddress_v2");
    struct driver d;
    struct { const char *sym, *base; int version; void **slot; } table[] = {
        {"cuInit", "cuInit", 2000, (void **)&d.Init},
        {"cuDriverGetVersion", "cuDriverGetVersion", 2020, (void **)&d.DriverGetVersion},
        {"cuDeviceGet", "cuDeviceGet", 2000, (void **)&d.DeviceGet},
        {"cuDeviceGetName", "cuDeviceGetName", 2000, (void **)&d.DeviceGetName},
        {"cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain", 7000, (void **)&d.DevicePrimaryCtxRetain},
        {"cuCtxSetCurrent", "cuCtxSetCurrent", 4000, (void **)&d.CtxSetCurrent},
        {"cuModuleLoadData", "cuModuleLoadData", 2000, (void **)&d.ModuleLoadData},
        {"cuModuleGetFunction", "cuModuleGetFunction", 2000, (void **)&d.ModuleGetFunction},
        {"cuLaunchKernel", "cuLaunchKernel", 4000, (void **)&d.LaunchKernel},
        {"cuStreamSynchronize", "cuStreamSynchronize", 2000, (void **)&d.StreamSynchronize},
        {"cuCtxSynchronize", "cuCtxSynchronize", 2000, (void **)&d.CtxSynchronize},
        {"cuMemAlloc_v2", "cuMemAlloc", 3020, (void **)&d.MemAlloc},
        {"cuMemFree_v2", "cuMemFree", 3020, (void **)&d.MemFree},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        void *p = NULL;
        if (!strcmp(resolve, "proc")) {
            CUdriverProcAddressQueryResult st;
            if (!gpa || gpa(table[i].base, &p, table[i].version, 0, &st) != CUDA_SUCCESS)
                p = NULL;
        } else {
            p = dlsym(lib, table[i].sym);
        }
        if (!p) {
            fprintf(stderr, "launch_probe: the driver lacks %s\n", table[i].sym);
            return 1;
        }
        *table[i].slot = p;
    }

    CUresult r;
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn;
    char name[256] = "";
    int version = 0;
    if ((r = d.Init(0)) != CUDA_SUCCESS)
        return die("cuInit", r);
    d.DriverGetVersion(&version);
    if ((r = d.DeviceGet(&dev, 0)) != CUDA_SUCCESS)
        return die("cuDeviceGet", r);
    d.DeviceGetName(name, sizeof name, dev);
    if ((r = d.DevicePrimaryCtxRetain(&ctx, dev)) != CUDA_SUCCESS)
        return die("cuDevicePrimaryCtxRetain", r);
    if ((r = d.CtxSetCurrent(ctx)) != CUDA_SUCCESS)
        return die("cuCtxSetCurrent", r);
    if ((r = d.ModuleLoadData(&mod, empty_kernel_ptx)) != CUDA_SUCCESS)
        return die("cuModuleLoadData", r);
    if ((r = d.ModuleGetFunction(&fn, mod, "wslshim_probe_empty")) != CUDA_SUCCESS)
        return die("cuModuleGetFunction", r);

    double *async_ns = calloc((size_t)repeats, sizeof(double));
    double *sync_ns = calloc((size_t)repeats, sizeof(double));
    double *alloc_ns = calloc((size_t)repeats, sizeof(double));
    if (!async_ns || !sync_ns || !alloc_ns)
        return 1;
    /* Warm-up, then timed rounds. */
    for (int i = 0; i < 100; i++)
        d.LaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
    d.CtxSynchronize();
    long long kernels = 100, syncs = 0, allocs = 0;
    for (int rep = 0; rep < repeats; rep++) {
        double t0 = now_ns();
        for (int i = 0; i < launches; i++)
            if ((r = d.LaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL)) != CUDA_SUCCESS)
                return die("cuLaunchKernel", r);
        double t1 = now_ns();
        d.StreamSynchronize(NULL);
        async_ns[rep] = (t1 - t0) / launches;
        int n_sync = launches / 10 > 0 ? launches / 10 : 1;
        t0 = now_ns();
        for (int i = 0; i < n_sync; i++) {
            d.LaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
            d.StreamSynchronize(NULL);
        }
        sync_ns[rep] = (now_ns() - t0) / n_sync;
        int n_alloc = 100;
        t0 = now_ns();
        for (int i = 0; i < n_alloc; i++) {
            CUdeviceptr p;
            if ((r = d.MemAlloc(&p, 1 << 20)) != CUDA_SUCCESS)
                return die("cuMemAlloc", r);
            d.MemFree(p);
        }
        alloc_ns[rep] = (now_ns() - t0) / n_alloc;
        kernels += launches + n_sync;
        syncs += 1 + n_sync;
        allocs += n_alloc;
    }
    qsort(async_ns, (size_t)repeats, sizeof(double), cmp_double);
    qsort(sync_ns, (size_t)repeats, sizeof(double), cmp_double);
    qsort(alloc_ns, (size_t)repeats, sizeof(double), cmp_double);
    /* "expect": the calls this program made, by contract name, for checking a trace. */
    printf("{\"gpu\": \"%s\", \"driver_version\": %d, \"resolve\": \"%s\", "
           "\"expect\": {\"cuLaunchKernel\": %lld, \"cuStreamSynchronize\": %lld, \"cuCtxSynchronize\": 1, "
           "\"cuMemAlloc\": %lld, \"cuMemFree\": %lld, \"cuInit\": 1}, "
           "\"launch_async_ns_median\": %.0f, \"launch_sync_ns_median\": %.0f, "
           "\"alloc_free_1mib_ns_median\": %.0f}\n",
           name, version, resolve, kernels, syncs, allocs, allocs, async_ns[repeats / 2], sync_ns[repeats / 2],
           alloc_ns[repeats / 2]);
    free(async_ns);
    free(sync_ns);
    free(alloc_ns);
    return 0;
}
