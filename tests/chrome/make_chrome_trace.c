/*
 * make_chrome_trace: writes a synthetic trace with GPU_KERNEL events (as the
 * shim's writer will write them once GPU timing exists) plus launches, file
 * reads and allocations, for chrome_check.py. Prints what it wrote as JSON.
 *
 *   make_chrome_trace OUT --pid N --start-ns NS [--launches N] [--timed-every N] [--tsc]
 *
 * --timed-every N: only launches (i + 1) % N == 0 have a GPU_KERNEL (the others are
 * left for the export to estimate).
 * --first-reaches-on: launch 0's GPU_KERNEL lasts 21000 instead of 3000, into launch 2's on the
 * same stream (as a pair measures on a stream that threads share: another thread's kernel
 * between its two events).
 *
 * Workload, times in ns after start: thread pid names function 0xf1
 * "_Z6kernelPfi" (cuModuleGetFunction, at +1000), then makes `launches`
 * cuLaunchKernel calls of 0xf1, launch i at +10000 + 10000 i lasting 4000,
 * on stream 0x5000 (even i) or 0x6000 (odd i); each ran on the GPU from its
 * launch's end + 2000 for 3000 (GPU_KERNEL, written by thread pid+2 in a later
 * chunk, launches i % 4 == 3 flagged idle-at-submit). Thread pid+1 opens
 * /data/x.bin and reads 4096 bytes at +1 ms, +51 ms, ..., 8 reads (50 ms
 * apart), allocates 1, 2 and 3 MiB (0xd000, 0xe000, 0xf000) at +2, +3, +4 ms
 * and frees 0xd000 at +5 ms.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_synth.h"

#define TICK_OFFSET 1000000000ull
#define TICKS_PER_NS 3ull
#define MIB (1ull << 20)

static int use_tsc;
static uint64_t ticks(uint64_t ns) { return use_tsc ? TICK_OFFSET + ns * TICKS_PER_NS : ns; }

struct list {
    struct wsl_event *ev;
    size_t n, cap;
};

static struct wsl_event *add(struct list *l, uint16_t api, uint64_t t0_ns, uint64_t dur_ns)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        l->ev = realloc(l->ev, l->cap * sizeof *l->ev);
        if (!l->ev)
            abort();
    }
    struct wsl_event *e = &l->ev[l->n++];
    memset(e, 0, sizeof *e);
    e->api = api;
    e->t_start = ticks(t0_ns);
    e->t_end = ticks(t0_ns + dur_ns);
    return e;
}

/* The shim's table plus one GPU_KERNEL entry (its id: synth_api_count). */
static void api_table(struct synth *s)
{
    size_t cap = 1 << 16, n = 4;
    uint8_t *buf = malloc(cap);
    uint32_t count = synth_api_count + 1;
    memcpy(buf, &count, 4);
    for (uint32_t i = 0; i < count; i++) {
        const char *sym = i < synth_api_count ? synth_apis[i].symbol : "gpu_kernel";
        const char *base = i < synth_api_count ? synth_apis[i].base : "gpu_kernel";
        uint16_t id = (uint16_t)i, cat = i < synth_api_count ? synth_apis[i].category : WSL_CAT_GPU_KERNEL;
        uint8_t pt = i < synth_api_count ? synth_apis[i].per_thread_stream : 0;
        size_t need = 8 + strlen(sym) + strlen(base) + 2;
        if (n + need > cap)
            abort();
        memcpy(buf + n, &id, 2);
        memcpy(buf + n + 2, &cat, 2);
        buf[n + 4] = pt;
        memset(buf + n + 5, 0, 3);
        n += 8;
        memcpy(buf + n, sym, strlen(sym) + 1);
        n += strlen(sym) + 1;
        memcpy(buf + n, base, strlen(base) + 1);
        n += strlen(base) + 1;
    }
    synth_chunk(s, WSL_CHUNK_API_TABLE, buf, n);
    free(buf);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: make_chrome_trace OUT --pid N --start-ns NS [--launches N] [--tsc]\n");
        return 2;
    }
    int32_t pid = 5000;
    uint64_t start = 7000000000ull;
    unsigned launches = 100, timed_every = 1, first_reaches_on = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--pid") && i + 1 < argc)
            pid = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--start-ns") && i + 1 < argc)
            start = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--launches") && i + 1 < argc)
            launches = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--timed-every") && i + 1 < argc && atoi(argv[i + 1]) > 0)
            timed_every = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--tsc"))
            use_tsc = 1;
        else if (!strcmp(argv[i], "--first-reaches-on"))
            first_reaches_on = 1;
        else
            return 2;
    }
    const uint16_t gpu_api = (uint16_t)synth_api_count;
    unsigned timed = 0;
    struct list main_thread = {0}, io_thread = {0}, gpu = {0};

    struct wsl_event *e = add(&main_thread, synth_api_id("cuModuleGetFunction"), start + 1000, 500);
    e->a[0] = 0xf1;
    e->a[1] = 7;
    e->a[2] = 0xabc;
    for (unsigned i = 0; i < launches; i++) {
        uint64_t t = start + 10000 + 10000ull * i;
        e = add(&main_thread, synth_api_id("cuLaunchKernel"), t, 4000);
        e->stream = i % 2 ? 0x6000 : 0x5000;
        e->a[0] = 0xf1;
        e->a[1] = WSL_GRID(64, 2);
        e->a[2] = WSL_BLOCK(1, 256, 1, 1);
        if ((i + 1) % timed_every)
            continue;
        timed++;
        struct wsl_event *k = add(&gpu, gpu_api, t + 4000 + 2000, i == 0 && first_reaches_on ? 21000 : 3000);
        k->stream = e->stream;
        k->a[0] = 0xf1;
        k->a[1] = e->t_start;
        k->a[2] = (uint64_t)(WSL_GPU_MAPPED | (i % 4 == 3 ? WSL_GPU_IDLE_AT_SUBMIT : 0)) | (uint64_t)(uint32_t)pid << 32;
        k->a[3] = 3000;
    }
    e = add(&io_thread, synth_api_id("open"), start + 500000, 2000);
    e->stream = 5;
    e->a[0] = 3;
    e->a[1] = WSL_DEV(8, 1);
    e->a[3] = 32768;
    for (unsigned i = 0; i < 8; i++) {
        e = add(&io_thread, synth_api_id("read"), start + 1000000 + 50000000ull * i, 20000);
        e->stream = 5;
        e->a[0] = 3;
        e->a[1] = 4096;
        e->a[2] = 4096;
        e->a[3] = ~0ull;
        if (i == 0) { /* the allocations sit between the first two reads, in time order */
            uint64_t ptr[3] = {0xd000, 0xe000, 0xf000};
            for (unsigned j = 0; j < 3; j++) {
                e = add(&io_thread, synth_api_id("cuMemAlloc_v2"), start + 2000000 + 1000000ull * j, 50000);
                e->a[0] = ptr[j];
                e->a[1] = (j + 1) * MIB;
            }
            e = add(&io_thread, synth_api_id("cuMemFree_v2"), start + 5000000, 20000);
            e->a[0] = 0xd000;
        }
    }
    uint64_t end = start + 1000000 + 50000000ull * 8;

    struct synth_options so = {.level = 1, .checksum = true};
    struct synth *s = synth_open(argv[1], &so);
    synth_file_header(s, NULL);
    struct wsl_process_info pi;
    memset(&pi, 0, sizeof pi);
    pi.pid = pid;
    pi.ppid = 1;
    pi.clock_kind = use_tsc ? WSL_CLOCK_TSC : WSL_CLOCK_MONOTONIC_NS;
    pi.start_ticks = ticks(start);
    pi.start_mono_ns = start;
    pi.start_real_ns = 1700000000000000000ull;
    const char *args[] = {"/usr/bin/python3", "train.py"};
    synth_process(s, &pi, "testhost", "/usr/bin/python3", "6.8.0", 2, args);
    api_table(s);
    synth_clock(s, ticks(start), start, 0);
    uint32_t ids[2] = {7, 3};
    const char *names[2] = {"_Z6kernelPfi", "/data/x.bin"};
    synth_paths(s, ids, names, 2);
    synth_events(s, (uint32_t)pid, 0, main_thread.ev, (uint32_t)main_thread.n);
    synth_events(s, (uint32_t)pid + 1, 0, io_thread.ev, (uint32_t)io_thread.n);
    synth_events(s, (uint32_t)pid + 2, 0, gpu.ev, (uint32_t)gpu.n);
    synth_clock(s, ticks(end), end, 0);
    synth_end(s, ticks(end), main_thread.n + io_thread.n + gpu.n, 0, 3);
    synth_close(s);
    printf("{\"pid\": %d, \"start_ns\": %llu, \"launches\": %u, \"kernels\": %u, \"reads\": 8, \"bytes_read\": %u, "
           "\"calls\": %zu, \"memory\": [%llu, %llu, %llu, %llu]}\n",
           pid, (unsigned long long)start, launches, timed, 8 * 4096, main_thread.n + io_thread.n,
           1 * MIB, 3 * MIB, 6 * MIB, 5 * MIB);
    free(main_thread.ev);
    free(io_thread.ev);
    free(gpu.ev);
    return 0;
}
