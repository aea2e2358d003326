/* Synthetic data-parallel runs (ddp_scenarios.h). Ticks are ns (monotonic clock). */
#include "ddp_scenarios.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_synth.h"

enum { FUNC, LAUNCH, SYNC, OPEN, READ, PUSH, POP, GPU, ROWS };
static const struct synth_row rows[ROWS] = {
    [FUNC] = {"cuModuleGetFunction", "cuModuleGetFunction", WSL_CAT_FUNC_NAME},
    [LAUNCH] = {"cuLaunchKernel", "cuLaunchKernel", WSL_CAT_LAUNCH},
    [SYNC] = {"cuStreamSynchronize", "cuStreamSynchronize", WSL_CAT_SYNC_STREAM},
    [OPEN] = {"open", "open", WSL_CAT_IO_OPEN},
    [READ] = {"read", "read", WSL_CAT_IO_READ},
    [PUSH] = {"nvtxRangePushA", "nvtxRangePush", WSL_CAT_NVTX_PUSH},
    [POP] = {"nvtxRangePop", "nvtxRangePop", WSL_CAT_NVTX_POP},
    [GPU] = {"wslshim_gpu_kernel", "wslshim_gpu_kernel", WSL_CAT_GPU_KERNEL},
};

#define START_NS 1000000000ull
#define LAUNCH_NS 5000u           /* host time of one launch call */
#define COMPUTE_HANDLE 0x1000u
#define NCCL_HANDLE 0x2000u
#define NAME_COMPUTE 1u
#define NAME_NCCL 2u
#define NAME_FILE 3u
#define NAME_STEP 4u
#define NAME_WARM 5u
#define WARM_HANDLE 0x3000u
#define DATA_FD 7u
#define BATCH 4096u

struct ddp_plan ddp_plan_default(void)
{
    struct ddp_plan p;
    memset(&p, 0, sizeof p);
    p.ranks = 4;
    p.steps = 50;
    p.kernels_per_step = 8;
    p.compute_ns = 20000000;
    p.comm_ns = 5000000;
    p.load_ns = 2000000;
    p.straggler = -1;
    p.timing_every = 1;
    p.seed = 1;
    p.warmup_rank = -1;
    return p;
}

struct thread_buf {
    uint32_t tid;
    struct wsl_event ev[BATCH];
    uint32_t n;
    uint64_t written;
};

static void flush(struct synth *s, struct thread_buf *b)
{
    if (b->n)
        synth_events(s, b->tid, 0, b->ev, b->n);
    b->written += b->n;
    b->n = 0;
}

static void put(struct synth *s, struct thread_buf *b, unsigned api, uint64_t t, uint64_t dur, uint64_t stream,
                uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3)
{
    if (b->n == BATCH)
        flush(s, b);
    struct wsl_event *e = &b->ev[b->n++];
    memset(e, 0, sizeof *e);
    e->t_start = t;
    e->t_end = t + dur;
    e->api = (uint16_t)api;
    e->stream = stream;
    e->a[0] = a0;
    e->a[1] = a1;
    e->a[2] = a2;
    e->a[3] = a3;
}

/* Rank r's load time in step k: deterministic from the seed. */
static uint64_t load_time(const struct ddp_plan *p, unsigned r, unsigned k)
{
    uint64_t x = p->seed * 0x9e3779b97f4a7c15ull + (uint64_t)r * 0xbf58476d1ce4e5b9ull + (uint64_t)k * 0x94d049bb133111ebull;
    x ^= x >> 31;
    x *= 0xd6e9f2b7a1c3e5f1ull;
    x ^= x >> 29;
    uint64_t t = p->load_ns + (p->jitter_ns ? x % (p->jitter_ns + 1) : 0);
    if ((int)r == p->straggler)
        t += p->delay_ns;
    return t;
}

void ddp_write_rank(const char *path, const struct ddp_plan *p, unsigned r)
{
    struct synth *s = synth_open(path, NULL);
    synth_file_header(s, NULL);
    struct wsl_process_info pi;
    memset(&pi, 0, sizeof pi);
    pi.pid = 5000 + (int32_t)r;
    pi.ppid = 4999;
    pi.clock_kind = WSL_CLOCK_MONOTONIC_NS;
    pi.start_ticks = pi.start_mono_ns = START_NS + r * 1000ull; /* started in rank order */
    pi.start_real_ns = 1700000000000000000ull;
    const char *argv[] = {"python3", "train_ddp.py"};
    synth_process(s, &pi, "node0", "/usr/bin/python3", "6.8.0-45-generic", 2, argv);
    synth_api_rows(s, rows, ROWS);
    unsigned gpu = r % 8;
    if (p->rank_env) {
        char env[512];
        int n = snprintf(env, sizeof env,
                         "RANK=%u%cLOCAL_RANK=%u%cWORLD_SIZE=%u%cMASTER_ADDR=127.0.0.1%cMASTER_PORT=29500%c"
                         "gpu.%u.pci_bus_id=0000:%02x:00.0%c",
                         r, 0, gpu, 0, p->ranks, 0, 0, 0, gpu, 0x19 + gpu, 0);
        synth_chunk(s, WSL_CHUNK_RANK, env, (size_t)n);
    }
    synth_clock(s, pi.start_ticks, pi.start_mono_ns, pi.start_real_ns);
    struct wsl_gpu_info gpus[8];
    memset(gpus, 0, sizeof gpus);
    for (unsigned i = 0; i < 8; i++) {
        snprintf(gpus[i].name, sizeof gpus[i].name, "NVIDIA H200");
        gpus[i].total_mem = 150ull << 30;
        gpus[i].cc_major = 9;
    }
    synth_driver(s, 13000, 0, "/usr/lib/x86_64-linux-gnu/libcuda.so.1", gpus, 8);
    struct wsl_gpu_memory gm = {pi.start_ticks, 140ull << 30, 150ull << 30, (int32_t)gpu, 0};
    synth_chunk(s, WSL_CHUNK_GPU_MEMORY, &gm, sizeof gm);
    char file[64], step[16];
    snprintf(file, sizeof file, "/data/train/shard-%03u.bin", r);
    snprintf(step, sizeof step, "%ctrain_step", WSL_NVTX_NAME_MARK);
    const uint32_t ids[] = {NAME_COMPUTE, NAME_NCCL, NAME_FILE, NAME_STEP, NAME_WARM};
    const char *const names[] = {"sgemm_128x64_nn", "_Z29ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE",
                                 file, step, "warmup_kernel"};
    bool warms = (int)r == p->warmup_rank && p->warmup_steps;
    synth_paths(s, ids, names, warms ? 5 : 4);

    struct thread_buf *host = calloc(1, sizeof *host), *gpub = calloc(1, sizeof *gpub);
    host->tid = (uint32_t)pi.pid;
    gpub->tid = (uint32_t)pi.pid + 1;
    uint64_t t = START_NS + 100000;
    put(s, host, FUNC, t, 2000, 0, COMPUTE_HANDLE, NAME_COMPUTE, 0xabc, 0);
    put(s, host, FUNC, t + 3000, 2000, 0, NCCL_HANDLE, NAME_NCCL, 0xdef, 0);
    put(s, host, OPEN, t + 6000, 3000, DATA_FD, NAME_FILE, 1, 0, 1ull << 30);
    if (warms)
        put(s, host, FUNC, t + 10000, 2000, 0, WARM_HANDLE, NAME_WARM, 0x123, 0);
    uint64_t step_start = START_NS + 1000000 + p->startup_ns, launch_no = 0, read_off = 0;
    uint64_t *gpu_end = calloc(p->ranks, sizeof *gpu_end);
    for (unsigned k = 0; k < p->steps; k++) {
        /* every rank's compute end this step: the all-reduce waits for the last one */
        uint64_t last = 0;
        for (unsigned q = 0; q < p->ranks; q++) {
            gpu_end[q] = step_start + load_time(p, q, k) + LAUNCH_NS + p->compute_ns;
            if (gpu_end[q] > last)
                last = gpu_end[q];
        }
        uint64_t ar_end = last + p->comm_ns, load = load_time(p, r, k);
        uint64_t h = step_start;
        if (p->nvtx)
            put(s, host, PUSH, h, 0, 0, NAME_STEP, 0, 0, 0);
        /* data: two reads share the load time; the straggler's delay is in them or off the record */
        uint64_t in_reads = (int)r == p->straggler && !p->delay_in_io ? load - p->delay_ns : load;
        for (int i = 0; i < 2; i++) {
            put(s, host, READ, h, in_reads / 2, DATA_FD, NAME_FILE, 1 << 20, 1 << 20, read_off);
            read_off += 1 << 20;
            h += in_reads / 2;
        }
        h = step_start + load;
        uint64_t g = h + LAUNCH_NS, per = p->compute_ns / p->kernels_per_step;
        for (unsigned i = 0; i < p->kernels_per_step; i++) {
            uint64_t dur = i + 1 < p->kernels_per_step ? per : p->compute_ns - per * (p->kernels_per_step - 1);
            uint64_t handle = warms && k < p->warmup_steps ? WARM_HANDLE : COMPUTE_HANDLE;
            put(s, host, LAUNCH, h, LAUNCH_NS, 1, handle, WSL_GRID(64, 1), WSL_BLOCK(1, 256, 1, 1), 0);
            if (launch_no++ % p->timing_every == 0)
                put(s, gpub, GPU, g, dur, 1, handle, h, WSL_GPU_MAPPED | (uint64_t)host->tid << 32, dur);
            h += LAUNCH_NS;
            g += dur;
        }
        /* the all-reduce starts on the GPU when this rank's compute is done, ends when all joined */
        put(s, host, LAUNCH, h, LAUNCH_NS, 2, NCCL_HANDLE, WSL_GRID(4, 1), WSL_BLOCK(1, 512, 1, 1), 0);
        if (launch_no++ % p->timing_every == 0)
            put(s, gpub, GPU, gpu_end[r], ar_end - gpu_end[r], 2, NCCL_HANDLE, h,
                WSL_GPU_MAPPED | (uint64_t)host->tid << 32, ar_end - gpu_end[r]);
        h += LAUNCH_NS;
        put(s, host, SYNC, h, ar_end > h ? ar_end - h : 0, 2, 0, 0, 0, 0);
        if (p->nvtx)
            put(s, host, POP, ar_end + 2000, 0, 0, 0, 0, 0, 0);
        step_start = ar_end + 10000;
    }
    flush(s, host);
    flush(s, gpub);
    synth_clock(s, step_start, step_start, pi.start_real_ns + (step_start - START_NS));
    synth_end(s, step_start, host->written + gpub->written, 0, 2);
    synth_close(s);
    free(gpu_end);
    free(host);
    free(gpub);
}
