/*
 * wslshim-probe: measures what CUDA calls and file access cost on this
 * machine and writes a calibration file (docs/probes.md).
 *
 *   wslshim-probe [--quick] [--out FILE] [--dir PATH]... [--no-gpu] [--pinned-cap SIZE]
 *
 * Like launch_probe, it loads libcuda.so.1 at run time and builds its empty
 * kernel from embedded PTX: no CUDA runtime, no link against libcuda, so it
 * runs (file probes only) where no driver is installed.
 *
 * Every figure is a host-side cost read with CLOCK_MONOTONIC around the call
 * (or around a batch of calls, divided by the batch), after warm-up calls,
 * repeated; the file keeps the median, p10 and p90 of the repeats.
 *
 * Exit status: 0 the file was written with everything asked for; 1 the file
 * was written but the GPU could not be probed (no driver, no device, a failed
 * call: the reason is on stderr and in the file); 2 usage error or the output
 * could not be written.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#include "wslshim/cli.h"
#include "json_writer.h"
#include "mounts.h"
#include "wslshim/trace_format.h"

#ifndef WSLSHIM_VERSION
#define WSLSHIM_VERSION "0"
#endif

#include "empty_kernel.h"

#define MiB (1024ull * 1024)
#define GiB (1024ull * MiB)

/* ---- options ---- */

#define MAX_DIRS 8

static struct {
    bool quick, no_gpu;
    const char *out;
    const char *dirs[MAX_DIRS];
    int dir_count;
    uint64_t pinned_cap; /* 0: automatic */
} opt;

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: wslshim-probe [--quick] [--out FILE] [--dir PATH]... [--no-gpu] [--pinned-cap SIZE]\n"
            "Measures the host cost of CUDA calls and file access here; writes calibration JSON\n"
            "(stdout, or FILE) for wslshim-report --project FILE.\n"
            "  --quick           fewer repeats and smaller sizes (seconds instead of a minute)\n"
            "  --out FILE        write the JSON to FILE instead of stdout\n"
            "  --dir PATH        measure file costs in PATH (repeatable; default: the current directory);\n"
            "                    files are created in a temporary folder there and removed\n"
            "  --no-gpu          file probes only\n"
            "  --pinned-cap SIZE upper bound of the pinned-memory search (e.g. 8G, 512M; default: half of\n"
            "                    MemAvailable or of the cgroup limit, at most 64G, 4G with --quick)\n");
}

/* "512M", "8G", "1048576" -> bytes; 0 on error. */
static uint64_t parse_size(const char *s)
{
    char *end = NULL;
    errno = 0;
    if (!isdigit((unsigned char)*s))
        return 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return 0;
    uint64_t mul = 1;
    if (*end) {
        switch (toupper((unsigned char)*end)) {
        case 'K': mul = 1024; break;
        case 'M': mul = MiB; break;
        case 'G': mul = GiB; break;
        case 'T': mul = 1024 * GiB; break;
        default: return 0;
        }
        end++;
        if (*end == 'i' || *end == 'I')
            end++;
        if (*end == 'B' || *end == 'b')
            end++;
        if (*end)
            return 0;
    }
    if (v > UINT64_MAX / mul)
        return 0;
    return v * mul;
}

/* ---- statistics ---- */

struct samples {
    double *v;
    size_t n, cap;
};

static void sample_add(struct samples *s, double x)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        double *v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return; /* a sample fewer */
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = x;
}

struct stat_result {
    double median, p10, p90;
    size_t n;
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double quantile(const double *sorted, size_t n, double q)
{
    double pos = q * (double)(n - 1);
    size_t i = (size_t)pos;
    if (i + 1 >= n)
        return sorted[n - 1];
    return sorted[i] + (pos - (double)i) * (sorted[i + 1] - sorted[i]);
}

/* Summarises and empties s. */
static struct stat_result summarise(struct samples *s)
{
    struct stat_result r = {0, 0, 0, s->n};
    if (s->n) {
        qsort(s->v, s->n, sizeof *s->v, cmp_double);
        r.median = quantile(s->v, s->n, 0.5);
        r.p10 = quantile(s->v, s->n, 0.1);
        r.p90 = quantile(s->v, s->n, 0.9);
    }
    free(s->v);
    memset(s, 0, sizeof *s);
    return r;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ---- small file helpers ---- */

static char *read_small_file(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return NULL;
    size_t n = fread(buf, 1, size - 1, f);
    fclose(f);
    buf[n] = 0;
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        buf[--n] = 0;
    return buf;
}

/* A "Key:   value kB" line of /proc/meminfo, in bytes (0 unknown). */
static uint64_t meminfo_bytes(const char *key)
{
    FILE *f = fopen("/proc/meminfo", "re");
    if (!f)
        return 0;
    char line[256];
    uint64_t v = 0;
    size_t klen = strlen(key);
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, key, klen) && line[klen] == ':') {
            v = strtoull(line + klen + 1, NULL, 10) * 1024;
            break;
        }
    }
    fclose(f);
    return v;
}

/* ---- the machine ---- */

struct machine {
    char kernel_release[256];
    int wsl_version; /* 0 native, 1, 2 */
    char cpu[256];
    long cpus;
    uint64_t mem_total, mem_available;
    uint64_t cgroup_limit; /* this process's cgroup memory limit, 0 none */
    char hostname[256];
};

static void machine_identify(struct machine *m)
{
    memset(m, 0, sizeof *m);
    if (!read_small_file("/proc/sys/kernel/osrelease", m->kernel_release, sizeof m->kernel_release))
        snprintf(m->kernel_release, sizeof m->kernel_release, "unknown");
    char low[256];
    size_t i = 0;
    for (; m->kernel_release[i] && i < sizeof low - 1; i++)
        low[i] = (char)tolower((unsigned char)m->kernel_release[i]);
    low[i] = 0;
    if (strstr(low, "microsoft"))
        m->wsl_version = strstr(low, "wsl2") || strstr(low, "microsoft-standard") ? 2 : 1;
    FILE *f = fopen("/proc/cpuinfo", "re");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f)) {
            char *colon = strchr(line, ':');
            if (colon && !strncmp(line, "model name", 10)) {
                colon++;
                while (*colon == ' ' || *colon == '\t')
                    colon++;
                colon[strcspn(colon, "\n")] = 0;
                snprintf(m->cpu, sizeof m->cpu, "%s", colon);
                break;
            }
        }
        fclose(f);
    }
    m->cpus = sysconf(_SC_NPROCESSORS_ONLN);
    m->mem_total = meminfo_bytes("MemTotal");
    m->mem_available = meminfo_bytes("MemAvailable");
    char lim[64];
    if (read_small_file("/sys/fs/cgroup/memory.max", lim, sizeof lim) && isdigit((unsigned char)lim[0]))
        m->cgroup_limit = strtoull(lim, NULL, 10);
    else if (read_small_file("/sys/fs/cgroup/memory/memory.limit_in_bytes", lim, sizeof lim) &&
             isdigit((unsigned char)lim[0]) && strtoull(lim, NULL, 10) < (1ull << 60))
        m->cgroup_limit = strtoull(lim, NULL, 10);
    if (gethostname(m->hostname, sizeof m->hostname - 1) != 0)
        m->hostname[0] = 0;
}

static const char *platform_name(int wsl_version)
{
    return wsl_version == 2 ? "wsl2" : wsl_version == 1 ? "wsl1" : "native";
}

/* ---- the driver ---- */

struct driver {
    CUresult (*Init)(unsigned);
    CUresult (*DriverGetVersion)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DeviceTotalMem)(size_t *, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void **, void **);
    CUresult (*StreamCreate)(CUstream *, unsigned);
    CUresult (*StreamDestroy)(CUstream);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*EventCreate)(CUevent *, unsigned);
    CUresult (*EventDestroy)(CUevent);
    CUresult (*EventRecord)(CUevent, CUstream);
    CUresult (*EventQuery)(CUevent);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemGetInfo)(size_t *, size_t *);
    CUresult (*MemHostAlloc)(void **, size_t, unsigned);
    CUresult (*MemFreeHost)(void *);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    /* optional: older drivers lack them; their figures stay null */
    CUresult (*MemAllocAsync)(CUdeviceptr *, size_t, CUstream);
    CUresult (*MemFreeAsync)(CUdeviceptr, CUstream);
    CUresult (*StreamBeginCapture)(CUstream, CUstreamCaptureMode);
    CUresult (*StreamEndCapture)(CUstream, CUgraph *);
    CUresult (*GraphInstantiate)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*GraphLaunch)(CUgraphExec, CUstream);
    CUresult (*GraphExecDestroy)(CUgraphExec);
    CUresult (*GraphDestroy)(CUgraph);
    CUresult (*GetErrorName)(CUresult, const char **);
};

static struct driver drv;
static void *libcuda;

/* GPU state of the run. */
static struct {
    bool ok;                /* everything probed without an error */
    char error[512];        /* first reason something was not probed */
    char libcuda_path[PATH_MAX];
    char gpu[256];
    int driver_version;
    size_t total_mem, free_mem;
    CUcontext ctx;
    CUfunction fn;
    CUstream stream;        /* a created stream: capture and pool allocations */
} gpu;

static void gpu_note_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void gpu_note_error(const char *fmt, ...)
{
    if (gpu.error[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(gpu.error, sizeof gpu.error, fmt, ap);
    va_end(ap);
}

static const char *cu_name(CUresult r)
{
    const char *s = NULL;
    if (drv.GetErrorName && drv.GetErrorName(r, &s) == CUDA_SUCCESS && s)
        return s;
    static char buf[32];
    snprintf(buf, sizeof buf, "CUresult %d", (int)r);
    return buf;
}

/* Calls that must succeed inside a probe: on failure note it and leave the probe. */
#define CK(call)                                                                      \
    do {                                                                              \
        CUresult ck_r = (call);                                                       \
        if (ck_r != CUDA_SUCCESS) {                                                   \
            gpu_note_error("%s failed: %s", #call, cu_name(ck_r));                    \
            return -1;                                                                \
        }                                                                             \
    } while (0)

static int driver_open(void)
{
    libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!libcuda) {
        gpu_note_error("no CUDA driver: %s", dlerror());
        return -1;
    }
    struct link_map *lm = NULL;
    if (dlinfo(libcuda, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name) {
        char real[PATH_MAX];
        snprintf(gpu.libcuda_path, sizeof gpu.libcuda_path, "%s",
                 realpath(lm->l_name, real) ? real : lm->l_name);
    }
    struct {
        const char *sym;
        void **slot;
        bool optional;
    } table[] = {
        {"cuInit", (void **)&drv.Init, 0},
        {"cuDriverGetVersion", (void **)&drv.DriverGetVersion, 0},
        {"cuDeviceGet", (void **)&drv.DeviceGet, 0},
        {"cuDeviceGetName", (void **)&drv.DeviceGetName, 0},
        {"cuDeviceTotalMem_v2", (void **)&drv.DeviceTotalMem, 0},
        {"cuDevicePrimaryCtxRetain", (void **)&drv.DevicePrimaryCtxRetain, 0},
        {"cuDevicePrimaryCtxRelease_v2", (void **)&drv.DevicePrimaryCtxRelease, 1},
        {"cuCtxSetCurrent", (void **)&drv.CtxSetCurrent, 0},
        {"cuModuleLoadData", (void **)&drv.ModuleLoadData, 0},
        {"cuModuleGetFunction", (void **)&drv.ModuleGetFunction, 0},
        {"cuLaunchKernel", (void **)&drv.LaunchKernel, 0},
        {"cuStreamCreate", (void **)&drv.StreamCreate, 0},
        {"cuStreamDestroy_v2", (void **)&drv.StreamDestroy, 0},
        {"cuStreamSynchronize", (void **)&drv.StreamSynchronize, 0},
        {"cuEventCreate", (void **)&drv.EventCreate, 0},
        {"cuEventDestroy_v2", (void **)&drv.EventDestroy, 0},
        {"cuEventRecord", (void **)&drv.EventRecord, 0},
        {"cuEventQuery", (void **)&drv.EventQuery, 0},
        {"cuMemAlloc_v2", (void **)&drv.MemAlloc, 0},
        {"cuMemFree_v2", (void **)&drv.MemFree, 0},
        {"cuMemGetInfo_v2", (void **)&drv.MemGetInfo, 0},
        {"cuMemHostAlloc", (void **)&drv.MemHostAlloc, 0},
        {"cuMemFreeHost", (void **)&drv.MemFreeHost, 0},
        {"cuMemcpyHtoD_v2", (void **)&drv.MemcpyHtoD, 0},
        {"cuMemcpyDtoH_v2", (void **)&drv.MemcpyDtoH, 0},
        {"cuMemcpyHtoDAsync_v2", (void **)&drv.MemcpyHtoDAsync, 0},
        {"cuMemcpyDtoHAsync_v2", (void **)&drv.MemcpyDtoHAsync, 0},
        {"cuMemAllocAsync", (void **)&drv.MemAllocAsync, 1},
        {"cuMemFreeAsync", (void **)&drv.MemFreeAsync, 1},
        {"cuStreamBeginCapture_v2", (void **)&drv.StreamBeginCapture, 1},
        {"cuStreamEndCapture", (void **)&drv.StreamEndCapture, 1},
        {"cuGraphInstantiateWithFlags", (void **)&drv.GraphInstantiate, 1},
        {"cuGraphLaunch", (void **)&drv.GraphLaunch, 1},
        {"cuGraphExecDestroy", (void **)&drv.GraphExecDestroy, 1},
        {"cuGraphDestroy", (void **)&drv.GraphDestroy, 1},
        {"cuGetErrorName", (void **)&drv.GetErrorName, 1},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        *table[i].slot = dlsym(libcuda, table[i].sym);
        if (!*table[i].slot && !table[i].optional) {
            gpu_note_error("%s is not a usable CUDA driver: it lacks %s",
                           gpu.libcuda_path[0] ? gpu.libcuda_path : "libcuda.so.1", table[i].sym);
            return -1;
        }
    }
    return 0;
}

static int gpu_start(void)
{
    CUresult r = drv.Init(0);
    if (r != CUDA_SUCCESS) {
        gpu_note_error("cuInit failed: %s (no usable GPU, or the driver does not match the kernel module)",
                       cu_name(r));
        return -1;
    }
    drv.DriverGetVersion(&gpu.driver_version);
    CUdevice dev;
    CK(drv.DeviceGet(&dev, 0));
    if (drv.DeviceGetName(gpu.gpu, sizeof gpu.gpu, dev) != CUDA_SUCCESS)
        snprintf(gpu.gpu, sizeof gpu.gpu, "unknown");
    drv.DeviceTotalMem(&gpu.total_mem, dev);
    CK(drv.DevicePrimaryCtxRetain(&gpu.ctx, dev));
    CK(drv.CtxSetCurrent(gpu.ctx));
    CUmodule mod;
    CK(drv.ModuleLoadData(&mod, empty_kernel_ptx));
    CK(drv.ModuleGetFunction(&gpu.fn, mod, "wslshim_probe_empty"));
    CK(drv.StreamCreate(&gpu.stream, CU_STREAM_NON_BLOCKING));
    CK(drv.MemGetInfo(&gpu.free_mem, &gpu.total_mem));
    return 0;
}

/* ---- GPU figures ---- */

struct copy_result {
    const char *direction, *host;
    uint64_t bytes;
    struct stat_result sync, async;
};

struct bw_result {
    const char *direction, *host;
    uint64_t bytes;
    struct stat_result per_call;
};

struct alloc_result {
    uint64_t bytes;
    struct stat_result alloc, free;
};

#define MAX_COPIES 32
#define MAX_ALLOC_SIZES 12

static struct {
    int repeats;
    struct stat_result launch_async, launch_sync, sync_idle, event_record, event_query;
    struct alloc_result alloc[MAX_ALLOC_SIZES];
    int alloc_count;
    bool pool_done;
    struct stat_result pool_alloc, pool_free;
    bool pinned_done;
    struct stat_result pinned_alloc, pinned_free;
    uint64_t pinned_max, pinned_cap, pinned_step;
    const char *pinned_limited_by;
    int pinned_steps;
    struct copy_result copies[MAX_COPIES];
    int copy_count;
    struct bw_result bw[4];
    int bw_count;
    bool graph_done;
    int graph_kernels;
    struct stat_result graph_launch, graph_launch_sync;
} g;

static CUresult launch_empty(CUstream s)
{
    return drv.LaunchKernel(gpu.fn, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL);
}

static int probe_launch(void)
{
    int batch = opt.quick ? 200 : 1000, reps = g.repeats;
    struct samples s = {0};
    for (int i = 0; i < 200; i++)
        CK(launch_empty(NULL));
    CK(drv.StreamSynchronize(NULL));
    for (int r = 0; r < reps && !interrupted; r++) {
        double t0 = now_ns();
        for (int i = 0; i < batch; i++)
            CK(launch_empty(NULL));
        sample_add(&s, (now_ns() - t0) / batch);
        CK(drv.StreamSynchronize(NULL));
    }
    g.launch_async = summarise(&s);
    int pairs = batch / 10;
    for (int r = 0; r < reps && !interrupted; r++) {
        double t0 = now_ns();
        for (int i = 0; i < pairs; i++) {
            CK(launch_empty(NULL));
            CK(drv.StreamSynchronize(NULL));
        }
        sample_add(&s, (now_ns() - t0) / pairs);
    }
    g.launch_sync = summarise(&s);
    for (int r = 0; r < reps && !interrupted; r++) {
        double t0 = now_ns();
        for (int i = 0; i < batch; i++)
            CK(drv.StreamSynchronize(NULL));
        sample_add(&s, (now_ns() - t0) / batch);
    }
    g.sync_idle = summarise(&s);
    return 0;
}

static int probe_events(void)
{
    int batch = opt.quick ? 200 : 1000;
    CUevent ev;
    CK(drv.EventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    struct samples rec = {0}, query = {0};
    int rc = 0;
    for (int i = 0; i < 100 && rc == 0; i++)
        if (drv.EventRecord(ev, NULL) != CUDA_SUCCESS)
            rc = -1;
    for (int r = 0; r < g.repeats && rc == 0 && !interrupted; r++) {
        double t0 = now_ns();
        for (int i = 0; i < batch; i++)
            drv.EventRecord(ev, NULL);
        sample_add(&rec, (now_ns() - t0) / batch);
        drv.StreamSynchronize(NULL);
        t0 = now_ns();
        for (int i = 0; i < batch; i++)
            if (drv.EventQuery(ev) != CUDA_SUCCESS) /* recorded and done: CUDA_SUCCESS */
                rc = -1;
        sample_add(&query, (now_ns() - t0) / batch);
    }
    drv.EventDestroy(ev);
    if (rc)
        gpu_note_error("cuEventRecord/cuEventQuery did not succeed");
    g.event_record = summarise(&rec);
    g.event_query = summarise(&query);
    return rc;
}

static int probe_alloc(void)
{
    static const uint64_t full[] = {1 * MiB, 4 * MiB, 16 * MiB, 64 * MiB, 256 * MiB, 1 * GiB};
    static const uint64_t quick[] = {1 * MiB, 64 * MiB, 1 * GiB};
    const uint64_t *sizes = opt.quick ? quick : full;
    size_t n = opt.quick ? sizeof quick / sizeof quick[0] : sizeof full / sizeof full[0];
    for (int w = 0; w < 5; w++) { /* warm-up */
        CUdeviceptr p;
        CK(drv.MemAlloc(&p, MiB));
        CK(drv.MemFree(p));
    }
    for (size_t k = 0; k < n && !interrupted; k++) {
        /* Leave at least half of the free memory alone. */
        if (sizes[k] > gpu.free_mem / 2)
            break;
        struct samples a = {0}, f = {0};
        int reps = sizes[k] >= 256 * MiB ? (g.repeats + 1) / 2 : g.repeats;
        for (int r = 0; r < reps; r++) {
            CUdeviceptr p;
            double t0 = now_ns();
            CUresult res = drv.MemAlloc(&p, sizes[k]);
            double t1 = now_ns();
            if (res == CUDA_ERROR_OUT_OF_MEMORY)
                break;
            if (res != CUDA_SUCCESS) {
                free(a.v), free(f.v);
                gpu_note_error("cuMemAlloc(%llu) failed: %s", (unsigned long long)sizes[k], cu_name(res));
                return -1;
            }
            CK(drv.MemFree(p));
            sample_add(&a, t1 - t0);
            sample_add(&f, now_ns() - t1);
        }
        if (!a.n) {
            free(f.v);
            break;
        }
        g.alloc[g.alloc_count++] = (struct alloc_result){sizes[k], summarise(&a), summarise(&f)};
    }
    return 0;
}

static int probe_pool(void)
{
    if (!drv.MemAllocAsync || !drv.MemFreeAsync)
        return 0;
    int batch = opt.quick ? 50 : 200;
    struct samples a = {0}, f = {0};
    CUdeviceptr *ptrs = calloc((size_t)batch, sizeof *ptrs);
    if (!ptrs)
        return -1;
    int rc = 0;
    for (int r = -1; r < g.repeats && !interrupted; r++) { /* r = -1: warm-up, fills the pool */
        double t0 = now_ns();
        for (int i = 0; i < batch && rc == 0; i++)
            if (drv.MemAllocAsync(&ptrs[i], MiB, gpu.stream) != CUDA_SUCCESS)
                rc = -1;
        double t1 = now_ns();
        for (int i = 0; i < batch && rc == 0; i++)
            if (drv.MemFreeAsync(ptrs[i], gpu.stream) != CUDA_SUCCESS)
                rc = -1;
        double t2 = now_ns();
        if (drv.StreamSynchronize(gpu.stream) != CUDA_SUCCESS)
            rc = -1;
        if (rc)
            break;
        if (r >= 0) {
            sample_add(&a, (t1 - t0) / batch);
            sample_add(&f, (t2 - t1) / batch);
        }
    }
    free(ptrs);
    if (rc)
        gpu_note_error("cuMemAllocAsync/cuMemFreeAsync failed");
    g.pool_alloc = summarise(&a);
    g.pool_free = summarise(&f);
    g.pool_done = rc == 0;
    return rc;
}

/* Largest single pinned allocation: doubling from 256 MiB, then bisection
 * between the last success and the first failure, never above the cap;
 * each allocation is freed before the next. */
static int probe_pinned(const struct machine *m)
{
    struct samples a = {0}, f = {0};
    for (int r = -2; r < g.repeats; r++) {
        void *p;
        double t0 = now_ns();
        CK(drv.MemHostAlloc(&p, MiB, 0));
        double t1 = now_ns();
        CK(drv.MemFreeHost(p));
        if (r >= 0) {
            sample_add(&a, t1 - t0);
            sample_add(&f, now_ns() - t1);
        }
    }
    g.pinned_alloc = summarise(&a);
    g.pinned_free = summarise(&f);
    g.pinned_done = true;

    uint64_t cap = opt.pinned_cap;
    if (!cap) {
        uint64_t avail = m->mem_available ? m->mem_available : m->mem_total;
        if (m->cgroup_limit && m->cgroup_limit < avail)
            avail = m->cgroup_limit; /* a container: its limit, not the host's memory */
        cap = avail / 2;
        uint64_t ceiling = opt.quick ? 4 * GiB : 64 * GiB;
        if (!cap || cap > ceiling)
            cap = ceiling;
    }
    cap = cap / MiB * MiB;
    g.pinned_cap = cap;
    uint64_t lo = 0, hi = 0; /* lo: largest success; hi: smallest failure (0: none yet) */
    uint64_t size = cap < 256 * MiB ? cap : 256 * MiB;
    int steps = 0;
    while (size && !interrupted) {
        void *p = NULL;
        steps++;
        CUresult r = drv.MemHostAlloc(&p, size, 0);
        if (r == CUDA_SUCCESS) {
            drv.MemFreeHost(p);
            lo = size;
        } else {
            hi = size;
        }
        uint64_t next;
        if (!hi) {
            if (lo >= cap)
                break;
            next = lo * 2 > cap ? cap : lo * 2;
        } else {
            uint64_t step = lo / 16 > 64 * MiB ? lo / 16 : 64 * MiB;
            if (hi - lo <= step)
                break;
            next = (lo + (hi - lo) / 2) / MiB * MiB;
            if (next <= lo || next >= hi)
                break;
        }
        size = next;
    }
    g.pinned_max = lo;
    g.pinned_steps = steps;
    g.pinned_step = lo / 16 > 64 * MiB ? lo / 16 : 64 * MiB;
    g.pinned_limited_by = hi ? "driver" : "cap";
    return 0;
}

static int probe_copies(void)
{
    static const uint64_t sizes[] = {4, 64, 1024, 4096, 16384, 65536};
    const uint64_t large = 64 * MiB;
    int batch = opt.quick ? 50 : 200;
    void *pinned = NULL, *pageable = NULL;
    CUdeviceptr dev = 0;
    int rc = -1;
    CK(drv.MemHostAlloc(&pinned, large, 0));
    if (drv.MemAlloc(&dev, large) != CUDA_SUCCESS) {
        gpu_note_error("cuMemAlloc of 64 MiB for the copies failed");
        goto out;
    }
    pageable = malloc(large);
    if (!pageable)
        goto out;
    memset(pageable, 1, large);
    memset(pinned, 1, large);
    for (int host = 0; host < 2; host++) {
        void *buf = host ? pageable : pinned;
        const char *hname = host ? "pageable" : "pinned";
        for (int dir = 0; dir < 2; dir++) {
            for (size_t k = 0; k < sizeof sizes / sizeof sizes[0] && !interrupted; k++) {
                struct samples s = {0}, as = {0};
                uint64_t n = sizes[k];
                for (int w = 0; w < 10; w++)
                    if ((dir ? drv.MemcpyDtoH(buf, dev, n) : drv.MemcpyHtoD(dev, buf, n)) != CUDA_SUCCESS)
                        goto copy_failed;
                for (int r = 0; r < batch; r++) {
                    double t0 = now_ns();
                    CUresult res = dir ? drv.MemcpyDtoH(buf, dev, n) : drv.MemcpyHtoD(dev, buf, n);
                    sample_add(&s, now_ns() - t0);
                    if (res != CUDA_SUCCESS)
                        goto copy_failed;
                }
                /* Async submissions: batches of 10 back to back, then a sync. */
                for (int r = 0; r < batch / 10 + 1; r++) {
                    double t0 = now_ns();
                    for (int i = 0; i < 10; i++) {
                        CUresult res = dir ? drv.MemcpyDtoHAsync(buf, dev, n, NULL)
                                           : drv.MemcpyHtoDAsync(dev, buf, n, NULL);
                        if (res != CUDA_SUCCESS)
                            goto copy_failed;
                    }
                    double t1 = now_ns();
                    if (drv.StreamSynchronize(NULL) != CUDA_SUCCESS)
                        goto copy_failed;
                    if (r)
                        sample_add(&as, (t1 - t0) / 10);
                }
                if (g.copy_count < MAX_COPIES)
                    g.copies[g.copy_count++] =
                        (struct copy_result){dir ? "dtoh" : "htod", hname, n, summarise(&s), summarise(&as)};
                continue;
            copy_failed:
                free(s.v), free(as.v);
                gpu_note_error("a %s %s copy of %llu bytes failed", hname, dir ? "dtoh" : "htod",
                               (unsigned long long)n);
                goto out;
            }
            /* Bandwidth: the large copy, synchronous. */
            struct samples s = {0};
            int reps = opt.quick ? 3 : 10;
            for (int r = -1; r < reps && !interrupted; r++) {
                double t0 = now_ns();
                CUresult res = dir ? drv.MemcpyDtoH(buf, dev, large) : drv.MemcpyHtoD(dev, buf, large);
                double t = now_ns() - t0;
                if (res != CUDA_SUCCESS) {
                    free(s.v);
                    gpu_note_error("a %s %s copy of 64 MiB failed", hname, dir ? "dtoh" : "htod");
                    goto out;
                }
                if (r >= 0)
                    sample_add(&s, t);
            }
            g.bw[g.bw_count++] = (struct bw_result){dir ? "dtoh" : "htod", hname, large, summarise(&s)};
        }
    }
    rc = 0;
out:
    free(pageable);
    if (dev)
        drv.MemFree(dev);
    drv.MemFreeHost(pinned);
    return rc;
}

static int probe_graph(void)
{
    if (!drv.StreamBeginCapture || !drv.StreamEndCapture || !drv.GraphInstantiate || !drv.GraphLaunch)
        return 0;
    const int kernels = 100;
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    CK(drv.StreamBeginCapture(gpu.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CUresult r = CUDA_SUCCESS;
    for (int i = 0; i < kernels && r == CUDA_SUCCESS; i++)
        r = launch_empty(gpu.stream);
    CUresult end = drv.StreamEndCapture(gpu.stream, &graph);
    if (r != CUDA_SUCCESS || end != CUDA_SUCCESS) {
        gpu_note_error("capturing a graph failed: %s", cu_name(r != CUDA_SUCCESS ? r : end));
        return -1;
    }
    CK(drv.GraphInstantiate(&exec, graph, 0));
    struct samples launch = {0}, pair = {0};
    int batch = 10, rc = 0;
    for (int r = -1; r < g.repeats && !interrupted && rc == 0; r++) {
        double t0 = now_ns();
        for (int i = 0; i < batch; i++)
            if (drv.GraphLaunch(exec, gpu.stream) != CUDA_SUCCESS)
                rc = -1;
        double t1 = now_ns();
        if (drv.StreamSynchronize(gpu.stream) != CUDA_SUCCESS)
            rc = -1;
        double t2 = now_ns();
        if (drv.GraphLaunch(exec, gpu.stream) != CUDA_SUCCESS || drv.StreamSynchronize(gpu.stream) != CUDA_SUCCESS)
            rc = -1;
        double t3 = now_ns();
        if (r >= 0) {
            sample_add(&launch, (t1 - t0) / batch);
            sample_add(&pair, t3 - t2);
        }
    }
    if (drv.GraphExecDestroy)
        drv.GraphExecDestroy(exec);
    if (drv.GraphDestroy)
        drv.GraphDestroy(graph);
    if (rc)
        gpu_note_error("cuGraphLaunch failed");
    g.graph_kernels = kernels;
    g.graph_launch = summarise(&launch);
    g.graph_launch_sync = summarise(&pair);
    g.graph_done = rc == 0;
    return rc;
}

/* ---- file figures ---- */

struct file_result {
    char dir[PATH_MAX];
    char fstype[64], kind[32], mount_point[PATH_MAX], source[256];
    char error[512];
    int small_files;
    uint64_t small_bytes;
    struct stat_result open_read_close, stat_call;
    uint64_t seq_bytes;
    double cold_bps, warm_bps;      /* < 0: not measured */
    double resident_before;         /* fraction of the file in the page cache before the cold read, < 0 unknown */
    char note[256];
};

static struct file_result files[MAX_DIRS];
static struct wsl_mount_table *mounts;

static void file_note_error(struct file_result *fr, const char *what)
{
    if (!fr->error[0])
        snprintf(fr->error, sizeof fr->error, "%s: %s", what, strerror(errno));
}

static void mounts_load(void)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return;
    size_t cap = 1 << 16, n = 0;
    char *text = malloc(cap);
    while (text) {
        size_t r = fread(text + n, 1, cap - n, f);
        n += r;
        if (n < cap)
            break;
        char *t = realloc(text, cap * 2);
        if (!t) {
            free(text);
            text = NULL;
            break;
        }
        text = t;
        cap *= 2;
    }
    fclose(f);
    if (!text)
        return;
    char err[WSL_MOUNTS_ERRLEN];
    mounts = wsl_mounts_parse(text, n, err, sizeof err);
    free(text);
}

/* Fraction of [0, len) of fd resident in the page cache, or -1. */
static double resident_fraction(int fd, uint64_t len)
{
    long page = sysconf(_SC_PAGESIZE);
    void *map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED)
        return -1;
    size_t pages = (len + (uint64_t)page - 1) / (uint64_t)page;
    unsigned char *vec = malloc(pages);
    double frac = -1;
    if (vec && mincore(map, len, vec) == 0) {
        size_t in = 0;
        for (size_t i = 0; i < pages; i++)
            in += vec[i] & 1;
        frac = (double)in / (double)pages;
    }
    free(vec);
    munmap(map, len);
    return frac;
}

static double read_whole(int fd, char *buf, size_t bufsize, uint64_t *total)
{
    *total = 0;
    if (lseek(fd, 0, SEEK_SET) != 0)
        return -1;
    double t0 = now_ns();
    for (;;) {
        ssize_t r = read(fd, buf, bufsize);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        *total += (uint64_t)r;
    }
    return now_ns() - t0;
}

static void probe_dir(const char *dir, const struct machine *m, struct file_result *fr)
{
    memset(fr, 0, sizeof *fr);
    fr->cold_bps = fr->warm_bps = fr->resident_before = -1;
    char real[PATH_MAX];
    snprintf(fr->dir, sizeof fr->dir, "%s", realpath(dir, real) ? real : dir);
    struct stat st;
    if (stat(fr->dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        if (!errno)
            errno = ENOTDIR;
        file_note_error(fr, dir);
        snprintf(fr->fstype, sizeof fr->fstype, "unknown");
        return;
    }
    const struct wsl_mount *mt =
        mounts ? wsl_mounts_find(mounts, WSL_DEV(major(st.st_dev), minor(st.st_dev)), fr->dir,
                                 strlen(fr->dir))
               : NULL;
    snprintf(fr->fstype, sizeof fr->fstype, "%s", mt ? mt->fstype : "unknown");
    snprintf(fr->kind, sizeof fr->kind, "%s",
             mt ? wsl_fs_kind_name(wsl_mount_classify(mt, m->wsl_version != 0)) : "unknown");
    if (mt) {
        snprintf(fr->mount_point, sizeof fr->mount_point, "%s", mt->mount_point);
        snprintf(fr->source, sizeof fr->source, "%s", mt->source);
    }

    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s/.wslshim-probe-XXXXXX", fr->dir) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        file_note_error(fr, dir);
        return;
    }
    if (!mkdtemp(tmp)) {
        file_note_error(fr, "cannot create a temporary folder there");
        return;
    }
    int nfiles = opt.quick ? 50 : 200;
    const size_t small = 4096;
    char data[4096], path[PATH_MAX + 64];
    memset(data, 'w', sizeof data);
    int made = 0;
    for (; made < nfiles; made++) {
        snprintf(path, sizeof path, "%s/f%04d", tmp, made);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 || write(fd, data, small) != (ssize_t)small) {
            file_note_error(fr, "writing the small files");
            if (fd >= 0)
                close(fd);
            break;
        }
        close(fd);
    }
    fr->small_files = made;
    fr->small_bytes = small;
    struct samples orc = {0}, sc = {0};
    int rounds = opt.quick ? 3 : 5;
    for (int r = -1; r < rounds && made == nfiles && !interrupted; r++) { /* r = -1: warm-up */
        for (int i = 0; i < made; i++) {
            snprintf(path, sizeof path, "%s/f%04d", tmp, i);
            struct stat fst;
            double t0 = now_ns();
            int ok = stat(path, &fst) == 0;
            double t1 = now_ns();
            int fd = open(path, O_RDONLY | O_CLOEXEC);
            ssize_t got = fd >= 0 ? read(fd, data, sizeof data) : -1;
            if (fd >= 0)
                close(fd);
            double t2 = now_ns();
            if (!ok || got != (ssize_t)small) {
                file_note_error(fr, "reading the small files back");
                r = rounds;
                break;
            }
            if (r >= 0) {
                sample_add(&sc, t1 - t0);
                sample_add(&orc, t2 - t1);
            }
        }
    }
    fr->stat_call = summarise(&sc);
    fr->open_read_close = summarise(&orc);
    for (int i = 0; i < made; i++) {
        snprintf(path, sizeof path, "%s/f%04d", tmp, i);
        unlink(path);
    }

    /* The large file: written, flushed, its cache pages dropped where the
     * kernel lets an unprivileged process (POSIX_FADV_DONTNEED on its own
     * clean pages), then read cold and again warm. */
    uint64_t want = opt.quick ? 32 * MiB : 256 * MiB;
    struct statvfs vfs;
    if (statvfs(tmp, &vfs) == 0) {
        uint64_t space = (uint64_t)vfs.f_bavail * vfs.f_frsize;
        while (want > MiB && want > space / 4)
            want /= 2;
    }
    const size_t bufsize = MiB;
    char *buf = malloc(bufsize);
    snprintf(path, sizeof path, "%s/large", tmp);
    int fd = buf && !interrupted ? open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600) : -1;
    if (fd >= 0) {
        memset(buf, 'x', bufsize);
        uint64_t written = 0;
        while (written < want) {
            ssize_t w = write(fd, buf, bufsize);
            if (w <= 0)
                break;
            written += (uint64_t)w;
        }
        if (written < want || fsync(fd) != 0) {
            file_note_error(fr, "writing the large file");
        } else {
            fr->seq_bytes = written;
            posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
            fr->resident_before = resident_fraction(fd, written);
            uint64_t total;
            double t = read_whole(fd, buf, bufsize, &total);
            bool cold = fr->resident_before >= 0 && fr->resident_before < 0.05;
            if (t > 0 && total == written && cold)
                fr->cold_bps = (double)total / (t / 1e9);
            struct samples warm = {0};
            for (int r = 0; r < 3; r++) {
                t = read_whole(fd, buf, bufsize, &total);
                if (t > 0 && total == written)
                    sample_add(&warm, (double)total / (t / 1e9));
            }
            struct stat_result w = summarise(&warm);
            if (w.n)
                fr->warm_bps = w.median;
            if (!strcmp(fr->kind, "memory"))
                snprintf(fr->note, sizeof fr->note,
                         "the file lives in memory (%s): there is no cold read", fr->fstype);
            else if (cold)
                snprintf(fr->note, sizeof fr->note,
                         "cold read: the file's cached pages were dropped with posix_fadvise (%.0f%% resident "
                         "before the read)", 100 * fr->resident_before);
            else if (fr->resident_before >= 0)
                snprintf(fr->note, sizeof fr->note,
                         "cold read not measured: %.0f%% of the file stayed in the page cache after "
                         "posix_fadvise(DONTNEED); dropping all caches needs root",
                         100 * fr->resident_before);
            else
                snprintf(fr->note, sizeof fr->note,
                         "cold read not measured: the page cache residency of the file cannot be checked here "
                         "(mmap/mincore failed); dropping all caches needs root");
        }
        close(fd);
        unlink(path);
    } else if (buf && !interrupted) {
        file_note_error(fr, "creating the large file");
    }
    free(buf);
    if (rmdir(tmp) != 0)
        file_note_error(fr, "removing the temporary folder");
}

/* ---- output ---- */

static void write_stat(struct json_writer *w, const char *key, const struct stat_result *s)
{
    json_key(w, key);
    if (!s->n) {
        json_null(w);
        return;
    }
    json_begin_object(w);
    json_key(w, "median_ns");
    json_double(w, round(s->median * 10) / 10);
    json_key(w, "p10_ns");
    json_double(w, round(s->p10 * 10) / 10);
    json_key(w, "p90_ns");
    json_double(w, round(s->p90 * 10) / 10);
    json_key(w, "samples");
    json_u64(w, s->n);
    json_end_object(w);
}

static void write_median(struct json_writer *w, const char *key, const struct stat_result *s)
{
    json_key(w, key);
    if (s->n)
        json_double(w, round(s->median * 10) / 10);
    else
        json_null(w);
}

static void write_opt_double(struct json_writer *w, const char *key, double v)
{
    json_key(w, key);
    if (v >= 0)
        json_double(w, round(v));
    else
        json_null(w);
}

static const struct copy_result *find_copy(const char *dir, const char *host, uint64_t bytes)
{
    for (int i = 0; i < g.copy_count; i++)
        if (!strcmp(g.copies[i].direction, dir) && !strcmp(g.copies[i].host, host) && g.copies[i].bytes == bytes)
            return &g.copies[i];
    return NULL;
}

static void write_json(FILE *out, const struct machine *m, bool gpu_probed, double run_s)
{
    struct json_writer jw, *w = &jw;
    json_init(w, out);
    json_begin_object(w);
    json_key(w, "schema");
    json_u64(w, 1);
    json_key(w, "tool");
    json_string(w, "wslshim-probe " WSLSHIM_VERSION);
    json_key(w, "platform");
    json_string(w, platform_name(m->wsl_version));
    json_key(w, "quick");
    json_bool(w, opt.quick);
    json_key(w, "created_unix");
    json_u64(w, (uint64_t)time(NULL));
    json_key(w, "run_s");
    json_double(w, round(run_s * 100) / 100);

    json_key(w, "machine");
    json_begin_object(w);
    json_key(w, "host");
    json_string(w, m->hostname);
    json_key(w, "kernel_release");
    json_string(w, m->kernel_release);
    json_key(w, "wsl");
    json_bool(w, m->wsl_version != 0);
    json_key(w, "wsl_version");
    json_u64(w, (uint64_t)m->wsl_version);
    json_key(w, "cpu");
    json_string(w, m->cpu);
    json_key(w, "cpus");
    json_i64(w, m->cpus);
    json_key(w, "mem_total_bytes");
    json_u64(w, m->mem_total);
    json_key(w, "libcuda");
    if (gpu.libcuda_path[0])
        json_string(w, gpu.libcuda_path);
    else
        json_null(w);
    json_key(w, "driver_version");
    if (gpu.driver_version) {
        json_i64(w, gpu.driver_version);
        char text[32];
        snprintf(text, sizeof text, "%d.%d", gpu.driver_version / 1000, gpu.driver_version % 1000 / 10);
        json_key(w, "driver_version_text");
        json_string(w, text);
    } else {
        json_null(w);
    }
    json_key(w, "gpu");
    if (gpu.gpu[0])
        json_string(w, gpu.gpu);
    else
        json_null(w);
    json_key(w, "gpu_memory_bytes");
    json_u64(w, gpu.total_mem);
    json_end_object(w);

    json_key(w, "gpu_probed");
    json_bool(w, gpu_probed);
    json_key(w, "gpu_error");
    if (gpu.error[0])
        json_string(w, gpu.error);
    else
        json_null(w);

    /* The contract's five. */
    const struct copy_result *small_async = find_copy("htod", "pinned", 4096);
    write_median(w, "launch_ns", &g.launch_async);
    json_key(w, "memcpy_ns");
    if (small_async && small_async->async.n)
        json_double(w, round(small_async->async.median * 10) / 10);
    else
        json_null(w);
    write_median(w, "sync_ns", &g.sync_idle);
    const struct alloc_result *one = g.alloc_count && g.alloc[0].bytes == MiB ? &g.alloc[0] : NULL;
    static const struct stat_result none;
    write_median(w, "alloc_ns", one ? &one->alloc : &none);
    write_median(w, "free_ns", one ? &one->free : &none);

    json_key(w, "launch");
    json_begin_object(w);
    write_stat(w, "async", &g.launch_async);
    write_stat(w, "with_sync", &g.launch_sync);
    json_end_object(w);

    json_key(w, "sync");
    json_begin_object(w);
    write_stat(w, "idle_stream", &g.sync_idle);
    json_end_object(w);

    json_key(w, "event");
    json_begin_object(w);
    write_stat(w, "record", &g.event_record);
    write_stat(w, "query", &g.event_query);
    json_end_object(w);

    json_key(w, "alloc_by_size");
    json_begin_array(w);
    for (int i = 0; i < g.alloc_count; i++) {
        json_begin_object(w);
        json_key(w, "bytes");
        json_u64(w, g.alloc[i].bytes);
        write_stat(w, "alloc", &g.alloc[i].alloc);
        write_stat(w, "free", &g.alloc[i].free);
        json_end_object(w);
    }
    json_end_array(w);

    json_key(w, "pool_alloc");
    if (g.pool_done) {
        json_begin_object(w);
        json_key(w, "bytes");
        json_u64(w, MiB);
        write_stat(w, "alloc", &g.pool_alloc);
        write_stat(w, "free", &g.pool_free);
        json_end_object(w);
    } else {
        json_null(w);
    }

    json_key(w, "pinned");
    if (g.pinned_done) {
        json_begin_object(w);
        write_stat(w, "alloc_1mib", &g.pinned_alloc);
        write_stat(w, "free_1mib", &g.pinned_free);
        json_key(w, "max_bytes");
        json_u64(w, g.pinned_max);
        json_key(w, "limited_by");
        json_string(w, g.pinned_limited_by ? g.pinned_limited_by : "cap");
        json_key(w, "cap_bytes");
        json_u64(w, g.pinned_cap);
        json_key(w, "resolution_bytes");
        json_u64(w, g.pinned_step);
        json_key(w, "attempts");
        json_u64(w, (uint64_t)g.pinned_steps);
        json_end_object(w);
    } else {
        json_null(w);
    }

    json_key(w, "copies");
    json_begin_array(w);
    for (int i = 0; i < g.copy_count; i++) {
        const struct copy_result *c = &g.copies[i];
        json_begin_object(w);
        json_key(w, "direction");
        json_string(w, c->direction);
        json_key(w, "host");
        json_string(w, c->host);
        json_key(w, "bytes");
        json_u64(w, c->bytes);
        write_stat(w, "sync", &c->sync);
        write_stat(w, "async", &c->async);
        json_end_object(w);
    }
    json_end_array(w);

    json_key(w, "bandwidth");
    json_begin_array(w);
    for (int i = 0; i < g.bw_count; i++) {
        const struct bw_result *b = &g.bw[i];
        json_begin_object(w);
        json_key(w, "direction");
        json_string(w, b->direction);
        json_key(w, "host");
        json_string(w, b->host);
        json_key(w, "bytes");
        json_u64(w, b->bytes);
        json_key(w, "bytes_per_s");
        json_double(w, b->per_call.n && b->per_call.median > 0 ? round((double)b->bytes / (b->per_call.median / 1e9))
                                                                : NAN);
        write_stat(w, "per_call", &b->per_call);
        json_end_object(w);
    }
    json_end_array(w);

    json_key(w, "graph");
    if (g.graph_done) {
        json_begin_object(w);
        json_key(w, "kernels");
        json_u64(w, (uint64_t)g.graph_kernels);
        write_stat(w, "launch", &g.graph_launch);
        write_stat(w, "launch_sync", &g.graph_launch_sync);
        json_key(w, "per_kernel_ns");
        json_double(w, round(g.graph_launch_sync.median / g.graph_kernels * 10) / 10);
        json_end_object(w);
    } else {
        json_null(w);
    }

    json_key(w, "file");
    json_begin_object(w);
    json_key(w, "by_fs");
    json_begin_object(w);
    /* One entry per filesystem type: the first folder measured on it. */
    for (int i = 0; i < opt.dir_count; i++) {
        const struct file_result *fr = &files[i];
        bool dup = false;
        for (int k = 0; k < i; k++)
            dup |= !strcmp(files[k].fstype, fr->fstype);
        if (dup)
            continue;
        json_key(w, fr->fstype);
        json_begin_object(w);
        json_key(w, "kind");
        json_string(w, fr->kind);
        json_key(w, "dir");
        json_string(w, fr->dir);
        json_key(w, "mount_point");
        json_string(w, fr->mount_point);
        json_key(w, "source");
        json_string(w, fr->source);
        json_key(w, "error");
        if (fr->error[0])
            json_string(w, fr->error);
        else
            json_null(w);
        json_key(w, "small_files");
        json_u64(w, (uint64_t)fr->small_files);
        json_key(w, "small_file_bytes");
        json_u64(w, fr->small_bytes);
        write_stat(w, "open_read_close", &fr->open_read_close);
        write_stat(w, "stat", &fr->stat_call);
        json_key(w, "seq_read");
        json_begin_object(w);
        json_key(w, "bytes");
        json_u64(w, fr->seq_bytes);
        write_opt_double(w, "cold_bytes_per_s", fr->cold_bps);
        write_opt_double(w, "warm_bytes_per_s", fr->warm_bps);
        json_key(w, "resident_before_cold_read");
        if (fr->resident_before >= 0)
            json_double(w, round(fr->resident_before * 1000) / 1000);
        else
            json_null(w);
        json_key(w, "note");
        json_string(w, fr->note);
        json_end_object(w);
        json_end_object(w);
    }
    json_end_object(w);
    json_end_object(w);
    json_end_object(w);
    json_finish(w);
}

/* ---- main ---- */

static int bad_usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "wslshim-probe: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (try --help)\n");
    return 2;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"version", no_argument, NULL, 'V'}, {"help", no_argument, NULL, 'h'}, {"quick", no_argument, NULL, 'q'},
        {"no-gpu", no_argument, NULL, 'n'},  {"out", required_argument, NULL, 'o'},
        {"dir", required_argument, NULL, 'd'}, {"pinned-cap", required_argument, NULL, 'p'}, {NULL, 0, NULL, 0}};
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":Vh", longopts, NULL)) != -1) {
        switch (c) {
        case 'V':
            return cli_print_version("wslshim-probe");
        case 'h':
            usage(stdout);
            return 0;
        case 'q':
            opt.quick = true;
            break;
        case 'n':
            opt.no_gpu = true;
            break;
        case 'o': case 'd': case 'p':
            if (!optarg[0])
                return bad_usage("%s needs a value", c == 'o' ? "--out" : c == 'd' ? "--dir" : "--pinned-cap");
            if (c == 'o') {
                opt.out = optarg;
            } else if (c == 'd') {
                if (opt.dir_count == MAX_DIRS)
                    return bad_usage("at most 8 --dir options%s", "");
                opt.dirs[opt.dir_count++] = optarg;
            } else if (!(opt.pinned_cap = parse_size(optarg)) || opt.pinned_cap < MiB) {
                return bad_usage("--pinned-cap: '%s' is not a size of at least 1M (e.g. 512M, 8G)", optarg);
            }
            break;
        default:
            cli_option_error("wslshim-probe", c, argv);
        }
    }
    if (optind < argc)
        return bad_usage("unknown option '%s'", argv[optind]);
    if (!opt.dir_count)
        opt.dirs[opt.dir_count++] = ".";
    for (int i = 0; i < opt.dir_count; i++) {
        struct stat st;
        if (stat(opt.dirs[i], &st) != 0) {
            fprintf(stderr, "wslshim-probe: --dir %s: %s\n", opt.dirs[i], strerror(errno));
            return 2;
        }
        if (!S_ISDIR(st.st_mode)) {
            fprintf(stderr, "wslshim-probe: --dir %s: not a folder\n", opt.dirs[i]);
            return 2;
        }
    }
    /* Open the output first: a bad path fails before minutes of probing. */
    FILE *out = stdout;
    if (opt.out && !(out = fopen(opt.out, "we"))) {
        fprintf(stderr, "wslshim-probe: cannot write %s: %s\n", opt.out, strerror(errno));
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    double t_start = now_ns();
    struct machine m;
    machine_identify(&m);
    g.repeats = opt.quick ? 7 : 15;
    bool gpu_probed = false;
    if (!opt.no_gpu) {
        if (driver_open() == 0 && gpu_start() == 0) {
            fprintf(stderr, "wslshim-probe: %s, driver %d, %s\n", gpu.gpu, gpu.driver_version, gpu.libcuda_path);
            int failures = 0;
            failures += probe_launch() != 0;
            failures += probe_events() != 0;
            failures += probe_alloc() != 0;
            failures += probe_pool() != 0;
            failures += probe_pinned(&m) != 0;
            failures += probe_copies() != 0;
            failures += probe_graph() != 0;
            gpu_probed = true;
            gpu.ok = failures == 0;
            if (gpu.stream)
                drv.StreamDestroy(gpu.stream);
            if (drv.DevicePrimaryCtxRelease)
                drv.DevicePrimaryCtxRelease(0);
        }
        if (gpu.error[0])
            fprintf(stderr, "wslshim-probe: %s%s\n", gpu.error,
                    gpu_probed ? "" : "; GPU figures left null, file figures measured");
    }
    mounts_load();
    for (int i = 0; i < opt.dir_count && !interrupted; i++) {
        probe_dir(opt.dirs[i], &m, &files[i]);
        if (files[i].error[0])
            fprintf(stderr, "wslshim-probe: file probe in %s: %s\n", opt.dirs[i], files[i].error);
    }
    wsl_mounts_free(mounts);
    if (interrupted) {
        fprintf(stderr, "wslshim-probe: interrupted; nothing written\n");
        if (opt.out) {
            fclose(out);
            unlink(opt.out);
        }
        return 130;
    }
    write_json(out, &m, gpu_probed, (now_ns() - t_start) / 1e9);
    if (fflush(out) != 0 || ferror(out) || (opt.out && fclose(out) != 0)) {
        fprintf(stderr, "wslshim-probe: writing %s failed: %s\n", opt.out ? opt.out : "stdout", strerror(errno));
        return 2;
    }
    if (opt.out)
        fprintf(stderr, "wslshim-probe: wrote %s\n", opt.out);
    if (opt.no_gpu)
        return 0;
    return gpu_probed && gpu.ok ? 0 : 1;
}
