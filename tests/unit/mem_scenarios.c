#include "mem_scenarios.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mem_thread {
    struct wsl_event *ev;
    size_t n, cap;
};

struct mem_builder {
    struct synth *s;
    struct mem_thread th[MEM_MAX_THREADS];
    uint64_t last_ns;
};

struct mem_builder *mb_open(const char *path, int32_t pid, uint32_t flags, uint64_t gpu_total)
{
    struct mem_builder *b = calloc(1, sizeof *b);
    if (!b)
        abort();
    b->s = synth_open(path, NULL);
    synth_file_header(b->s, NULL);
    struct wsl_process_info pi;
    memset(&pi, 0, sizeof pi);
    pi.pid = pid;
    pi.ppid = 1;
    pi.flags = flags;
    pi.clock_kind = WSL_CLOCK_MONOTONIC_NS;
    pi.start_ticks = MEM_START_NS;
    pi.start_mono_ns = MEM_START_NS;
    pi.start_real_ns = 1700000000000000000u;
    const char *argv[] = {"python3", "train.py"};
    synth_process(b->s, &pi, "memhost", "/usr/bin/python3",
                  flags & WSL_PROC_WSL2 ? "6.6.87.2-microsoft-standard-WSL2" : "6.8.0-45-generic", 2, argv);
    synth_api_table(b->s);
    synth_clock(b->s, MEM_START_NS, MEM_START_NS, pi.start_real_ns);
    if (gpu_total) {
        struct wsl_gpu_info gpu;
        memset(&gpu, 0, sizeof gpu);
        snprintf(gpu.name, sizeof gpu.name, "NVIDIA A100-SXM4-80GB");
        gpu.total_mem = gpu_total;
        gpu.cc_major = 8;
        synth_driver(b->s, 12080, 0, "/usr/lib/wsl/lib/libcuda.so.1", &gpu, 1);
    }
    return b;
}

void mb_call(struct mem_builder *b, unsigned thread, uint64_t t_ns, uint64_t dur_ns, const char *symbol,
             int32_t result, uint64_t a0, uint64_t a1)
{
    mb_call_args(b, thread, t_ns, dur_ns, symbol, result, 0, a0, a1, 0, 0);
}

void mb_paths(struct mem_builder *b, const uint32_t *ids, const char *const *strings, uint32_t n)
{
    synth_paths(b->s, ids, strings, n);
}

void mb_call_args(struct mem_builder *b, unsigned thread, uint64_t t_ns, uint64_t dur_ns, const char *symbol,
                  int32_t result, uint64_t stream, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3)
{
    if (thread >= MEM_MAX_THREADS)
        abort();
    struct mem_thread *t = &b->th[thread];
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 64;
        t->ev = realloc(t->ev, t->cap * sizeof *t->ev);
        if (!t->ev)
            abort();
    }
    struct wsl_event *ev = &t->ev[t->n++];
    memset(ev, 0, sizeof *ev);
    ev->api = synth_api_id(symbol);
    ev->t_start = MEM_START_NS + t_ns;
    ev->t_end = ev->t_start + dur_ns;
    ev->result = result;
    ev->stream = stream;
    ev->a[0] = a0;
    ev->a[1] = a1;
    ev->a[2] = a2;
    ev->a[3] = a3;
    if (ev->t_end > b->last_ns)
        b->last_ns = ev->t_end;
}

void mb_close(struct mem_builder *b, const unsigned *order)
{
    uint64_t written = 0;
    unsigned threads = 0;
    for (unsigned i = 0; i < MEM_MAX_THREADS; i++) {
        unsigned k = order ? order[i] : i;
        struct mem_thread *t = &b->th[k % MEM_MAX_THREADS];
        if (!t->n)
            continue;
        synth_events(b->s, 300 + k, 0, t->ev, (uint32_t)t->n);
        written += t->n;
        threads++;
    }
    uint64_t end = b->last_ns > MEM_START_NS ? b->last_ns + 1000 : MEM_START_NS + 1000;
    synth_clock(b->s, end, end, 0);
    synth_end(b->s, end, written, 0, threads);
    synth_close(b->s);
    for (unsigned i = 0; i < MEM_MAX_THREADS; i++)
        free(b->th[i].ev);
    free(b);
}

/* mixed: WSL2, 80 GiB card. Thread 0: device allocations A 100 MiB, B 200 MiB,
 * free A, C 50 MiB, D 1 GiB (peak 1274 MiB at its end, t = 4000+100 ns), free D,
 * stream-ordered E 10 MiB and its cuMemFreeAsync, free B, free of an unknown
 * pointer; C stays live (50 MiB at exit). Thread 1: pinned 300 MiB twice (600 MiB
 * peak), one freed; 64 MiB registered and unregistered; managed 2 MiB; two
 * cuMemAlloc_v2 of 96 GiB failing with CUDA_ERROR_OUT_OF_MEMORY (2), 5 us each. */
static void write_mixed(const char *path)
{
    struct mem_builder *b = mb_open(path, 5151, WSL_PROC_WSL2, 80 * MEM_GIB);
    const uint64_t A = 0x7f0000000000u, B = 0x7f0010000000u, C = 0x7f0020000000u, D = 0x7f0030000000u,
                   E = 0x7f0070000000u;
    mb_call(b, 0, 1000, 100, "cuMemAlloc_v2", 0, A, 100 * MEM_MIB);
    mb_call(b, 0, 2000, 100, "cuMemAlloc_v2", 0, B, 200 * MEM_MIB);
    mb_call(b, 0, 2500, 100, "cuMemFree_v2", 0, A, 0);
    mb_call(b, 0, 3000, 100, "cuMemAllocPitch_v2", 0, C, 50 * MEM_MIB);
    mb_call(b, 0, 4000, 100, "cuMemAlloc_v2", 0, D, MEM_GIB);
    mb_call(b, 0, 5000, 100, "cuMemFree_v2", 0, D, 0);
    mb_call(b, 0, 6000, 100, "cuMemAllocAsync", 0, E, 10 * MEM_MIB);
    mb_call(b, 0, 6500, 100, "cuMemFreeAsync", 0, E, 0);
    mb_call(b, 0, 7000, 100, "cuMemFree_v2", 0, B, 0);
    mb_call(b, 0, 7500, 100, "cuMemFree_v2", 0, 0x7f00aa000000u, 0);
    const uint64_t P1 = 0x200000000u, P2 = 0x220000000u, R = 0x5500000000u, M = 0x7f00c0000000u;
    mb_call(b, 1, 1500, 100, "cuMemHostAlloc", 0, P1, 300 * MEM_MIB);
    mb_call(b, 1, 2200, 100, "cuMemAllocHost_v2", 0, P2, 300 * MEM_MIB);
    mb_call(b, 1, 2700, 100, "cuMemFreeHost", 0, P1, 0);
    mb_call(b, 1, 3500, 100, "cuMemHostRegister_v2", 0, R, 64 * MEM_MIB);
    mb_call(b, 1, 3600, 100, "cuMemHostUnregister", 0, R, 0);
    mb_call(b, 1, 4500, 100, "cuMemAllocManaged", 0, M, 2 * MEM_MIB);
    mb_call(b, 1, 8000, 5000, "cuMemAlloc_v2", 2, 0, 96 * MEM_GIB);
    mb_call(b, 1, 14000, 5000, "cuMemAlloc_v2", 2, 0, 96 * MEM_GIB);
    const unsigned order[] = {1, 0, 2, 3}; /* thread 1's chunk first */
    mb_close(b, order);
}

/* one device allocation of `share` of an 80 GiB card, on WSL2 */
static void write_peak(const char *path, double share, uint32_t flags)
{
    struct mem_builder *b = mb_open(path, 6161, flags, 80 * MEM_GIB);
    mb_call(b, 0, 1000, 100, "cuMemAlloc_v2", 0, 0x7f0000000000u, (uint64_t)(share * 80 * MEM_GIB));
    mb_call(b, 0, 2000, 100, "cuMemFree_v2", 0, 0x7f0000000000u, 0);
    mb_close(b, NULL);
}

/* mixed's pinned pattern, 600 MiB, on native Linux */
static void write_native_pinned(const char *path)
{
    struct mem_builder *b = mb_open(path, 7171, 0, 80 * MEM_GIB);
    mb_call(b, 0, 1500, 100, "cuMemHostAlloc", 0, 0x200000000u, 300 * MEM_MIB);
    mb_call(b, 0, 2200, 100, "cuMemHostAlloc", 0, 0x220000000u, 300 * MEM_MIB);
    mb_call(b, 0, 4500, 100, "cuMemAllocManaged", 0, 0x7f00c0000000u, 2 * MEM_MIB);
    mb_close(b, NULL);
}

bool mem_scenario_write(const char *path, const char *name)
{
    if (strcmp(name, "mixed") == 0)
        write_mixed(path);
    else if (strcmp(name, "peak90") == 0)
        write_peak(path, 0.90, WSL_PROC_WSL2);
    else if (strcmp(name, "peak97") == 0)
        write_peak(path, 0.97, WSL_PROC_WSL2);
    else if (strcmp(name, "peak50") == 0)
        write_peak(path, 0.50, WSL_PROC_WSL2);
    else if (strcmp(name, "native_pinned") == 0)
        write_native_pinned(path);
    else
        return false;
    return true;
}
