/* The event loop's runs (analysis_events.c: take_launch_run_ops, take_launch_run, take_gpu_run)
 * against the path they stand for, every event one by one through take_event
 * (wsl_take_events_one_by_one): the same trace read in runs with the reader's ops (the fused launch
 * loop, its BMI2 build where the CPU has one, and its generic build: wsl_reader_generic_only), in
 * runs without them (wsl_take_events_without_ops) and one by one, the JSON reports compared byte
 * for byte.
 * - event_runs_agree: synthetic traces whose runs break in every way the run paths handle: two
 *   launch APIs in turn (their slots), failed launches, handle 0, handles past the kernel table's
 *   cache, a function launched at several sizes in turn, a launch starting before the last one,
 *   waits between launches (the host's charges, the phases' breaks), one thread past
 *   WSL_PHASE_MAX_SEQ launches (kept, then counted only) with a period the phases find, GPU
 *   kernels in runs of one API (mapped, idle, graphs, many handles and configurations, none now
 *   and then, a kernel repeated: stretches of one handle, configuration and flags) on a thread
 *   of their own, the last after the END chunk's time, chunks of 1 to 700 events; in two of them
 *   NVTX ranges around the launches (the step tracking), another thread's late launch or GPU
 *   kernel read before the first push, and launches so long that their sum passes 2^64.
 * - event_runs_agree_demo: the demo's sample and pair/native traces, both ways. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "report_output.h"
#include "rules.h"
#include "trace_synth.h"
#include "unit_test.h"

enum { R_FUNC, R_LAUNCH, R_LAUNCH_EX, R_SYNC, R_COPY, R_PUSH, R_POP, R_GPU, R_CAPTURE, R_CAPTURE_END, R_ROWS };
static const struct synth_row run_rows[R_ROWS] = {
    [R_FUNC] = {"cuModuleGetFunction", "cuModuleGetFunction", WSL_CAT_FUNC_NAME},
    [R_LAUNCH] = {"cuLaunchKernel", "cuLaunchKernel", WSL_CAT_LAUNCH},
    [R_LAUNCH_EX] = {"cuLaunchKernelEx", "cuLaunchKernelEx", WSL_CAT_LAUNCH},
    [R_SYNC] = {"cuStreamSynchronize", "cuStreamSynchronize", WSL_CAT_SYNC_STREAM},
    [R_COPY] = {"cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync", WSL_CAT_COPY_HTOD_ASYNC},
    [R_PUSH] = {"nvtxRangePushA", "nvtxRangePush", WSL_CAT_NVTX_PUSH},
    [R_POP] = {"nvtxRangePop", "nvtxRangePop", WSL_CAT_NVTX_POP},
    [R_GPU] = {"wslshim_gpu_kernel", "wslshim_gpu_kernel", WSL_CAT_GPU_KERNEL},
    [R_CAPTURE] = {"cuStreamBeginCapture_v2", "cuStreamBeginCapture", WSL_CAT_OTHER},
    [R_CAPTURE_END] = {"cuStreamEndCapture", "cuStreamEndCapture", WSL_CAT_OTHER},
};

#define RUN_HANDLES 300          /* more than the kernel table's launch cache holds */
#define RUN_BUF 800

struct run_thread {
    uint32_t tid;
    struct wsl_event ev[RUN_BUF];
    uint32_t n, chunk;           /* the next chunk's size */
};

static uint64_t run_written;

static void run_flush(struct synth *s, struct run_thread *b)
{
    if (b->n)
        synth_events(s, b->tid, 0, b->ev, b->n);
    run_written += b->n;
    b->n = 0;
    b->chunk = 1 + (uint32_t)rng_below(700);
}

static struct wsl_event *run_put(struct synth *s, struct run_thread *b, unsigned api, uint64_t t, uint64_t dur)
{
    if (b->n >= b->chunk)
        run_flush(s, b);
    struct wsl_event *e = &b->ev[b->n++];
    memset(e, 0, sizeof *e);
    e->api = (uint16_t)api;
    e->t_start = t;
    e->t_end = t + dur;
    return e;
}

static uint64_t run_handle(unsigned h)
{
    return h == 0 ? 0 : 0x7f0000100000ull + 0x1000ull * h; /* aligned, like functions */
}

/* ranges: NVTX ranges around the launches (the phases then come from the steps, not the gaps) and
 * launches so long that their sums pass 2^64; with them, before the batch with the first push
 * another thread's batch is read that holds a launch after it (late_launch) or a GPU kernel launched
 * after it (else): the step tracking's figures of the events before it (either alone makes the
 * steps read again). */
static void write_run_trace(const char *path, uint64_t seed, bool ranges, bool late_launch)
{
    rng_seed(seed);
    run_written = 0;
    struct synth *s = synth_open(path, NULL);
    synth_file_header(s, NULL);
    struct wsl_process_info pi;
    memset(&pi, 0, sizeof pi);
    pi.pid = 4242;
    pi.ppid = 1;
    pi.clock_kind = WSL_CLOCK_MONOTONIC_NS;
    pi.start_ticks = pi.start_mono_ns = 1000000000ull;
    pi.start_real_ns = 1700000000000000000ull;
    const char *argv[] = {"python3", "train.py"};
    synth_process(s, &pi, "node0", "/usr/bin/python3", "6.8.0", 2, argv);
    synth_api_rows(s, run_rows, R_ROWS);
    synth_clock(s, pi.start_ticks, pi.start_mono_ns, pi.start_real_ns);
    char step[16];
    snprintf(step, sizeof step, "%ctrain_step", WSL_NVTX_NAME_MARK);
    const uint32_t ids[] = {1, 2};
    const char *const names[] = {step, "_Z6kernelPf"};
    synth_paths(s, ids, names, 2);

    struct run_thread *host = calloc(1, sizeof *host), *other = calloc(1, sizeof *other),
                      *gpu = calloc(1, sizeof *gpu);
    host->tid = 4242;
    other->tid = 4243;
    gpu->tid = 4244;
    host->chunk = other->chunk = gpu->chunk = 300;
    uint64_t t = pi.start_ticks + 100000;
    for (unsigned h = 1; h < 40; h++) { /* names for some handles */
        struct wsl_event *e = run_put(s, host, R_FUNC, t, 1000);
        e->a[0] = run_handle(h);
        e->a[1] = 2;
        t += 2000;
    }
    unsigned depth = 0, big = 0, host_launches = 0;
    bool pushed = false;
    uint64_t last_launch = t, g = t;
    for (uint32_t i = 0; i < 300000; i++) {
        uint64_t r = rng_below(1000);
        struct run_thread *b = i % 97 == 0 ? other : host; /* another thread now and then */
        if (r < 25) { /* a wait: the host's charge, the phases' break */
            struct wsl_event *e = run_put(s, b, R_SYNC, t, 20000 + rng_below(50000));
            e->stream = 7;
            t = e->t_end + 500;
            continue;
        }
        if (b == host && i % 20000 == 10000) { /* a stream capture of the host's launches for a while: they
                                                   take the kernel table's slow path (fast_after), ops whose
                                                   rows it knew included */
            struct wsl_event *e = run_put(s, b, i % 40000 == 10000 ? R_CAPTURE : R_CAPTURE_END, t, 1000);
            e->stream = 7;
            t = e->t_end + 200;
            continue;
        }
        if (b == other && i % 50000 == 97 * 300) { /* two launches of one function, the second before the
                                                      trace's first launch: the kernel table's slow path
                                                      (first_launch) for an op whose row it knows */
            for (int k = 0; k < 2; k++) {
                struct wsl_event *e = run_put(s, b, R_LAUNCH, k ? pi.start_ticks + 1000 + i : t, 3000);
                e->stream = 7;
                e->a[0] = run_handle(3);
                e->a[1] = WSL_GRID(64, 1);
                e->a[2] = WSL_BLOCK(1, 128, 1, 1);
            }
            t += 4000;
            continue;
        }
        if (r < 35) {
            struct wsl_event *e = run_put(s, b, R_COPY, t, 3000);
            e->stream = 7;
            e->a[0] = 0x7e0000000000ull;
            e->a[1] = 0x500000000000ull;
            e->a[2] = 4096;
            t = e->t_end + 300;
            continue;
        }
        if (r < 45 && b == host && ranges && i >= 5000) { /* (from a later batch on: the step tracking's
                                                                   first push comes after other events) */ /* NVTX ranges around launches, nested at most 3 deep */
            bool push = depth == 0 || (depth < 3 && rng_below(2));
            struct wsl_event *e = run_put(s, b, push ? R_PUSH : R_POP, t, 0);
            if (push)
                e->a[0] = 1;
            depth += push ? 1 : -1;
            t += 200;
            if (push && !pushed) { /* the step tracking's first push: other threads' batches read before
                                      the one that holds it, with a launch and a GPU kernel after it */
                pushed = true;
                if (late_launch) {
                    struct wsl_event *o = run_put(s, other, R_LAUNCH, t + 100, 3000);
                    o->stream = 7;
                    o->a[0] = run_handle(1);
                    o->a[1] = WSL_GRID(64, 1);
                    o->a[2] = WSL_BLOCK(1, 128, 1, 1);
                    run_flush(s, other);
                } else {
                    run_flush(s, gpu); /* (the kernels before it: in batches of their own) */
                    struct wsl_event *k = run_put(s, gpu, R_GPU, g > t ? g : t, 5000);
                    k->stream = 7;
                    k->a[0] = run_handle(1);
                    k->a[1] = t + 100;
                    k->a[2] = WSL_GPU_MAPPED | (uint64_t)other->tid << 32;
                    k->a[3] = 5000;
                    k->result = 0x100;
                    g = k->t_end;
                    run_flush(s, gpu);
                }
            }
            continue;
        }
        /* a launch: the host thread's repeat 24 functions in turn (a period the phases find), now and
         * then another (a handle past the cache) or a null one in the first part */
        bool noisy = i < 100000 || b != host;
        unsigned h = noisy && rng_below(50) == 0 ? (unsigned)rng_below(RUN_HANDLES) : (unsigned)(1 + host_launches % 24);
        if (noisy && rng_below(400) == 0)
            h = 0; /* a null handle */
        host_launches += b == host;
        unsigned size = rng_below(10) == 0 ? (unsigned)rng_below(3) : 0;
        uint64_t dur = 2000 + rng_below(6000);
        if (ranges && rng_below(20000) == 0 && big < 6) { /* sums past 2^64 */
            dur = 1ull << 62;
            big++;
        }
        uint64_t start = rng_below(300) == 0 ? last_launch - 1 - rng_below(3000) : t; /* before the last */
        struct wsl_event *e = run_put(s, b, rng_below(3) == 0 ? R_LAUNCH_EX : R_LAUNCH, start, dur);
        e->stream = 7;
        e->a[0] = run_handle(h);
        e->a[1] = WSL_GRID(64 + 64 * size, 1);
        e->a[2] = WSL_BLOCK(1, 128 << size, 1, 1);
        e->result = noisy && rng_below(60) == 0 ? 1 : 0;
        if (b == host)
            last_launch = start;
        t += dur < (1ull << 40) ? dur + 100 + rng_below(3000) : 5000;
        if (h && e->result == 0 && rng_below(3)) { /* its GPU kernel, in runs on the GPU thread */
            /* without ranges, short kernels that mostly find the GPU idle: dispatch_bound's evidence
             * (the phases' gaps) in the report */
            uint64_t flags = WSL_GPU_MAPPED | (rng_below(ranges ? 4 : 10) < (ranges ? 1u : 9u) ? WSL_GPU_IDLE_AT_SUBMIT : 0) |
                             (rng_below(200) == 0 ? WSL_GPU_GRAPH : 0);
            uint64_t gd = ranges ? 1000 + rng_below(100000) : 300 + rng_below(1000);
            uint64_t gs = rng_below(50) == 0 ? start - 100 : (g > start ? g : start + 500); /* (before: the mapping's error) */
            struct wsl_event *k = run_put(s, gpu, R_GPU, gs, gd);
            k->stream = 7;
            k->a[0] = run_handle(h);
            k->a[1] = start;
            k->a[2] = flags | (uint64_t)host->tid << 32;
            k->a[3] = gd;
            k->result = rng_below(30) == 0 ? 0 : (int32_t)(0x100 + size); /* (0: no configuration, older shims) */
            g = gs + gd;
            const struct wsl_event same = *k;
            while (rng_below(3) == 0) { /* the kernel again: a stretch of one handle, configuration and
                                           flags for the kernel table's and the NVTX analysis's runs */
                uint64_t d2 = rng_below(4) == 0 ? gd : 500 + rng_below(3000);
                k = run_put(s, gpu, R_GPU, g, d2);
                *k = same;
                k->t_start = g;
                k->t_end = g + d2;
                k->a[1] = same.a[1] + 1 + rng_below(200); /* (launched later: past a range's end, now and then) */
                g += d2;
            }
        }
    }
    if (!ranges) { /* the last work a GPU kernel, long after the END chunk's time: the process's end */
        struct wsl_event *k = run_put(s, gpu, R_GPU, g > t ? g : t, 10000000);
        k->stream = 7;
        k->a[0] = run_handle(2);
        k->a[1] = t - 1000;
        k->a[2] = WSL_GPU_MAPPED | (uint64_t)host->tid << 32;
        k->a[3] = 10000000;
        k->result = 0x100;
    }
    run_flush(s, host);
    run_flush(s, other);
    run_flush(s, gpu);
    synth_end(s, ranges ? t + 1000000 : t, run_written, 0, 3); /* (without ranges: before the last kernel's end) */
    synth_close(s);
    free(host);
    free(other);
    free(gpu);
}

enum read_way { RUNS_WITH_OPS, RUNS_WITH_OPS_GENERIC, RUNS_WITHOUT_OPS, ONE_BY_ONE };

/* The JSON report of path read one way; NULL (a failure reported) if it cannot be read. */
static char *report_json(const char *path, enum read_way way, size_t *size)
{
    wsl_take_events_one_by_one = way == ONE_BY_ONE;
    wsl_take_events_without_ops = way == RUNS_WITHOUT_OPS;
    wsl_reader_generic_only = way == RUNS_WITH_OPS_GENERIC;
    struct wsl_run run;
    wsl_run_init(&run);
    char err[WSL_READER_ERRLEN];
    int rc = wsl_run_add_trace(&run, path, err, sizeof err);
    wsl_take_events_one_by_one = false;
    wsl_take_events_without_ops = false;
    wsl_reader_generic_only = false;
    if (rc != 0) {
        fprintf(stderr, "  %s: %s\n", path, err);
        wsl_run_free(&run);
        return NULL;
    }
    wsl_run_finish(&run);
    char *out = NULL;
    FILE *f = open_memstream(&out, size);
    report_write_json(&run, NULL, NULL, f);
    /* and the launch stream's figures the report shows only in a finding's evidence (the gaps) */
    for (size_t i = 0; i < run.proc_count; i++) {
        const struct wsl_phases *ph = &run.procs[i].phases;
        fprintf(f, "\nphases %zu: launches %llu, submits %llu-%llu, dispatch gaps %llu (%llu ns), long %llu (%llu ns)",
                i, (unsigned long long)ph->launches, (unsigned long long)ph->first_submit_ns,
                (unsigned long long)ph->last_submit_ns, (unsigned long long)ph->dispatch_gaps,
                (unsigned long long)ph->dispatch_gap_ns, (unsigned long long)ph->long_gaps,
                (unsigned long long)ph->long_gap_ns);
    }
    fclose(f);
    wsl_run_free(&run);
    return out;
}

/* 0 when path's reports agree read in runs (with the reader's ops, the kernel table's rows by op,
 * and without them) and one by one; each must hold every string of `want`. */
static int runs_agree(const char *path, const char *const *want, size_t nwant)
{
    size_t na = 0, nb = 0, nc = 0, ng = 0;
    char *a = report_json(path, RUNS_WITH_OPS, &na), *b = report_json(path, ONE_BY_ONE, &nb);
    char *c = report_json(path, RUNS_WITHOUT_OPS, &nc), *g = report_json(path, RUNS_WITH_OPS_GENERIC, &ng);
    int fail = 0;
    if (a && b && c && (nc != nb || memcmp(c, b, nb) != 0)) {
        fprintf(stderr, "  %s: the runs without ops and one by one differ\n", path);
        fail = 1;
    }
    if (a && b && g && (ng != nb || memcmp(g, b, nb) != 0)) {
        fprintf(stderr, "  %s: the runs with ops (generic build) and one by one differ\n", path);
        fail = 1;
    }
    if (!c || !g)
        fail = 1;
    if (!a || !b) {
        fail = 1;
    } else if (na != nb || memcmp(a, b, na) != 0) {
        size_t i = 0;
        while (i < na && i < nb && a[i] == b[i])
            i++;
        size_t from = i > 120 ? i - 120 : 0;
        fprintf(stderr, "  %s: the reports differ at byte %zu\n  runs:        %.240s\n  one by one:  %.240s\n", path,
                i, a + from, b + from);
        fail = 1;
    }
    for (size_t k = 0; !fail && k < nwant; k++)
        if (!strstr(a, want[k])) {
            fprintf(stderr, "  %s: no %s in the report\n", path, want[k]);
            fail = 1;
        }
    free(a);
    free(b);
    free(c);
    free(g);
    return fail;
}

int test_event_runs_agree(void)
{
    char path[512];
    test_path(path, sizeof path, "runs.trace.zst");
    for (uint64_t seed = 1; seed <= 3; seed++) {
        write_run_trace(path, 0x72756e73 + seed, seed >= 2, seed == 2);
        const char *const want[] = {"\"cuLaunchKernelEx\"", "\"cuLaunchKernel\"", "_Z6kernelPf", seed >= 2 ? "train_step" : "\"launch_interval_mean_ns\""};
        CHECKF(runs_agree(path, want, sizeof want / sizeof *want) == 0, "seed %llu", (unsigned long long)seed);
    }
    return 0;
}

int test_event_runs_agree_demo(void)
{
    const char *const want[] = {"\"cuLaunchKernel\""};
    CHECK(runs_agree(WSLSHIM_SAMPLE_TRACE, want, 1) == 0);
    CHECK(runs_agree(WSLSHIM_PAIR_NATIVE_TRACE, want, 1) == 0);
    return 0;
}
