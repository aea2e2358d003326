/* launch_bound and gpu_idle on synthetic runs with sampled GPU timing:
 * each fires on the pattern made for it and stays silent on the others (a
 * compute-bound run and a CUDA-graph run are not launch-bound). Ticks are ns. */
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "kernel_analysis.h"
#include "rules.h"
#include "trace_synth.h"
#include "test_findings.h"
#include "unit_test.h"

enum { FUNC, LAUNCH, GRAPH, SYNC, GPU, ROWS };
static const struct synth_row rows[ROWS] = {
    [FUNC] = {"cuModuleGetFunction", "cuModuleGetFunction", WSL_CAT_FUNC_NAME},
    [LAUNCH] = {"cuLaunchKernel", "cuLaunchKernel", WSL_CAT_LAUNCH},
    [GRAPH] = {"cuGraphLaunch", "cuGraphLaunch", WSL_CAT_GRAPH},
    [SYNC] = {"cuStreamSynchronize", "cuStreamSynchronize", WSL_CAT_SYNC_STREAM},
    [GPU] = {"wslshim_gpu_kernel", "wslshim_gpu_kernel", WSL_CAT_GPU_KERNEL},
};

#define START 1000000000ull
#define FN 0x1000u
#define GRAPH_EXEC 0x2000u

/* A run of one thread: `launches` kernel launches (or graph launches) of
 * `launch_ns` host time, one every `period_ns`, each kernel taking `kernel_ns`
 * on the GPU; every `timed_every`th launch timed, flagged idle at submit when
 * the GPU had finished the previous one by then. */
struct plan {
    unsigned launches, timed_every;
    uint64_t launch_ns, period_ns, kernel_ns;
    bool graph;
};

static struct wsl_event *ev_buf;
static uint32_t ev_n;

static void put(unsigned api, uint64_t t, uint64_t dur, uint64_t stream, uint64_t a0, uint64_t a1, uint64_t a2,
                uint64_t a3)
{
    struct wsl_event *e = &ev_buf[ev_n++];
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

static int write_plan(const char *path, const struct plan *p)
{
    struct synth *s = synth_open(path, NULL);
    synth_file_header(s, NULL);
    struct wsl_process_info pi;
    memset(&pi, 0, sizeof pi);
    pi.pid = 4242;
    pi.ppid = 1;
    pi.clock_kind = WSL_CLOCK_MONOTONIC_NS;
    pi.start_ticks = pi.start_mono_ns = START;
    const char *argv[] = {"python3", "train.py"};
    synth_process(s, &pi, "host", "/usr/bin/python3", "6.8.0", 2, argv);
    synth_api_rows(s, rows, ROWS);
    synth_clock(s, START, START, 0);
    const uint32_t ids[] = {1};
    const char *const names[] = {"tiny_kernel"};
    synth_paths(s, ids, names, 1);
    ev_buf = calloc(2 * (size_t)p->launches + 16, sizeof *ev_buf);
    ev_n = 0;
    put(FUNC, START + 1000, 1000, 0, FN, 1, 0x77, 0);
    uint64_t t = START + 10000, gpu_free = 0;
    for (unsigned i = 0; i < p->launches; i++) {
        uint64_t t1 = t + p->launch_ns;
        put(p->graph ? GRAPH : LAUNCH, t, p->launch_ns, 0, p->graph ? GRAPH_EXEC : FN, 1, 32, 0);
        uint64_t start = gpu_free > t1 ? gpu_free : t1, end = start + p->kernel_ns;
        bool idle = gpu_free <= t;
        if ((i + 1) % p->timed_every == 0) {
            uint64_t flags = WSL_GPU_MAPPED | (idle ? WSL_GPU_IDLE_AT_SUBMIT : 0) | (p->graph ? WSL_GPU_GRAPH : 0);
            put(GPU, start, p->kernel_ns, 0, p->graph ? GRAPH_EXEC : FN, t, flags | 4242ull << 32, p->kernel_ns);
        }
        gpu_free = end;
        t += p->period_ns;
    }
    put(SYNC, t, gpu_free > t ? gpu_free - t + 1000 : 1000, 0, 0, 0, 0, 0);
    /* events in time order per thread: the GPU_KERNEL events carry the writer's tid */
    struct wsl_event *host = calloc(ev_n, sizeof *host), *gpu = calloc(ev_n, sizeof *gpu);
    uint32_t nh = 0, ng = 0;
    for (uint32_t i = 0; i < ev_n; i++) {
        if (ev_buf[i].api == GPU)
            gpu[ng++] = ev_buf[i];
        else
            host[nh++] = ev_buf[i];
    }
    for (uint32_t i = 0; i < nh; i += 4096)
        synth_events(s, 4242, 0, host + i, nh - i < 4096 ? nh - i : 4096);
    for (uint32_t i = 0; i < ng; i += 4096)
        synth_events(s, 4243, 0, gpu + i, ng - i < 4096 ? ng - i : 4096);
    synth_end(s, host[nh - 1].t_end + 1000, ev_n, 0, 2);
    synth_close(s);
    free(host);
    free(gpu);
    free(ev_buf);
    return 0;
}

static int read_plan(struct wsl_run *run, const struct plan *p, const char *tag)
{
    char path[512], err[256];
    test_path(path, sizeof path, tag);
    CHECK(write_plan(path, p) == 0);
    wsl_run_init(run);
    CHECKF(wsl_run_add_trace(run, path, err, sizeof err) == 0, "%s", err);
    wsl_run_finish(run);
    return 0;
}

static uint64_t sum_lost(const struct wsl_run *run)
{
    uint64_t s = 0;
    for (size_t i = 0; i < run->finding_count; i++)
        s += run->findings[i].time_lost_ns;
    return s;
}

/* 5000 launches of 8 us, one every 10 us, 2 us kernels: the GPU idles. */
int test_rule_launch_bound_fires(void)
{
    wsl_kern_pairs = WSL_KERN_PAIRS_NONE; /* the synthetic measures are the kernels' own times */
    struct plan p = {5000, 10, 8000, 10000, 2000, false};
    struct wsl_run run;
    if (read_plan(&run, &p, "launch_bound.trace.zst"))
        return 1;
    const struct wsl_finding *f = finding(&run, "launch_bound");
    CHECK(f != NULL);
    /* launches x idle share (1) x (10 us between launches - 2 us of kernel): 40 ms, the GPU's idle time */
    CHECKF(f->time_lost_ns >= 39000000 && f->time_lost_ns <= 40100000, "lost %llu", (unsigned long long)f->time_lost_ns);
    CHECK(run.kernels.idle_at_submit == run.kernels.kernels_timed);
    /* what launch_bound leaves of the idle time goes to gpu_idle, and no more */
    uint64_t idle = run.kernels.busy_wall_ns - run.gpu_busy_ns;
    CHECKF(sum_lost(&run) <= idle + 1000, "findings %llu, idle %llu", (unsigned long long)sum_lost(&run),
           (unsigned long long)idle);
    wsl_run_free(&run);
    return 0;
}

/* 300 launches of 2 ms kernels, queued back to back: compute-bound. */
int test_rule_launch_bound_silent_compute(void)
{
    struct plan p = {2000, 1, 8000, 10000, 2000000, false};
    struct wsl_run run;
    if (read_plan(&run, &p, "compute.trace.zst"))
        return 1;
    CHECK(finding(&run, "launch_bound") == NULL);
    CHECK(finding(&run, "gpu_idle") == NULL);
    CHECKF(run.gpu_busy_ns > run.kernels.busy_wall_ns * 9 / 10, "busy %llu of %llu", (unsigned long long)run.gpu_busy_ns,
           (unsigned long long)run.kernels.busy_wall_ns);
    wsl_run_free(&run);
    return 0;
}

/* The same step replayed as a CUDA graph: 2000 graph launches of 10 us, 150 us of GPU work each. */
int test_rule_launch_bound_silent_graph(void)
{
    struct plan p = {2000, 1, 10000, 100000, 150000, true};
    struct wsl_run run;
    if (read_plan(&run, &p, "graph.trace.zst"))
        return 1;
    CHECK(finding(&run, "launch_bound") == NULL);
    CHECK(finding(&run, "gpu_idle") == NULL);
    CHECK(run.kernels.graphs_timed == 2000);
    wsl_run_free(&run);
    return 0;
}

/* 200 launches of 100 us kernels, 10 ms apart: the host does something else (and launch_bound
 * stays silent with 2000 such launches too: one every 10 ms is not a host busy launching). */
int test_rule_gpu_idle_fires(void)
{
    struct plan p = {200, 1, 8000, 10000000, 100000, false};
    struct wsl_run run;
    if (read_plan(&run, &p, "idle.trace.zst"))
        return 1;
    CHECK(finding(&run, "launch_bound") == NULL); /* too few launches, kernels longer than launches */
    const struct wsl_finding *f = finding(&run, "gpu_idle");
    CHECK(f != NULL);
    uint64_t idle = run.kernels.busy_wall_ns - run.gpu_busy_ns;
    CHECKF(f->time_lost_ns + 1000 >= idle && f->time_lost_ns <= idle, "lost %llu, idle %llu",
           (unsigned long long)f->time_lost_ns, (unsigned long long)idle);
    CHECK(f->time_lost_ns > run.kernels.busy_wall_ns * 9 / 10);
    wsl_run_free(&run);
    struct plan q = {2000, 1, 8000, 1000000, 1000, false};
    if (read_plan(&run, &q, "idle_many.trace.zst"))
        return 1;
    CHECK(finding(&run, "launch_bound") == NULL);
    CHECK(finding(&run, "gpu_idle") != NULL);
    wsl_run_free(&run);
    return 0;
}
