/* The GPU time estimate per launch configuration: a function launched at two
 * grid sizes, each timed (GPU_KERNEL events whose result is the launch's
 * wsl_launch_config), is estimated per size; a size never timed takes the
 * function's mean, a function never timed the process's; a trace whose
 * GPU_KERNEL events carry no configuration (result 0, older shims) gives the
 * per-function estimate, exactly; past WSL_KERN_MAX_CONFIGS the rest is
 * estimated per function and counted. Ticks are ns. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "export_chrome.h"
#include "projection.h"
#include "rules.h"
#include "trace_synth.h"
#include "unit_test.h"

#define CHECK_EQ(got, want)                                                                                 \
    CHECKF((uint64_t)(got) == (uint64_t)(want), "%s = %llu, expected %llu", #got, (unsigned long long)(got), \
           (unsigned long long)(want))

enum { FUNC, LAUNCH, LAUNCH_EX, GPU, PUSH, POP, ROWS };
static const struct synth_row rows[ROWS] = {
    [FUNC] = {"cuModuleGetFunction", "cuModuleGetFunction", WSL_CAT_FUNC_NAME},
    [LAUNCH] = {"cuLaunchKernel", "cuLaunchKernel", WSL_CAT_LAUNCH},
    [LAUNCH_EX] = {"cuLaunchKernelEx", "cuLaunchKernelEx", WSL_CAT_LAUNCH},
    [GPU] = {"wslshim_gpu_kernel", "wslshim_gpu_kernel", WSL_CAT_GPU_KERNEL},
    [PUSH] = {"nvtxRangePushA", "nvtxRangePush", WSL_CAT_NVTX_PUSH},
    [POP] = {"nvtxRangePop", "nvtxRangePop", WSL_CAT_NVTX_POP},
};

#define START 1000000000ull
#define PID 5151
#define FN 0x1000u     /* "k_sizes": two grid sizes, a third never timed */
#define FN_UNTIMED 0x2000u

struct events {
    struct wsl_event *v;
    uint32_t n, cap;
};

static void put(struct events *e, unsigned api, uint64_t t, uint64_t dur, int32_t result, uint64_t a0, uint64_t a1,
                uint64_t a2, uint64_t a3)
{
    if (e->n == e->cap) {
        e->cap = e->cap ? 2 * e->cap : 4096;
        e->v = realloc(e->v, e->cap * sizeof *e->v);
    }
    struct wsl_event *ev = &e->v[e->n++];
    memset(ev, 0, sizeof *ev);
    ev->t_start = t;
    ev->t_end = t + dur;
    ev->api = (uint16_t)api;
    ev->result = result;
    ev->stream = 0x77;
    ev->a[0] = a0;
    ev->a[1] = a1;
    ev->a[2] = a2;
    ev->a[3] = a3;
}

/* A launch at `t` and, when dur_ns, its GPU_KERNEL event (with its configuration unless old). */
static void launch(struct events *host, struct events *gpu, unsigned api, uint64_t t, uint64_t fn, uint64_t grid,
                   uint64_t block, uint64_t dur_ns, bool old)
{
    put(host, api, t, 2000, 0, fn, grid, block, 0);
    if (dur_ns)
        put(gpu, GPU, t + 3000, dur_ns, old ? 0 : (int32_t)wsl_launch_config(grid, block), fn, t,
            WSL_GPU_MAPPED | (uint64_t)PID << 32, dur_ns);
}

static int write_trace(const char *path, struct events *host, struct events *gpu)
{
    struct synth *s = synth_open(path, NULL);
    synth_file_header(s, NULL);
    struct wsl_process_info pi;
    memset(&pi, 0, sizeof pi);
    pi.pid = PID;
    pi.ppid = 1;
    pi.clock_kind = WSL_CLOCK_MONOTONIC_NS;
    pi.start_ticks = pi.start_mono_ns = START;
    const char *argv[] = {"python3", "train.py"};
    synth_process(s, &pi, "host", "/usr/bin/python3", "6.8.0", 2, argv);
    synth_api_rows(s, rows, ROWS);
    synth_clock(s, START, START, 0);
    const uint32_t ids[] = {1, 2, 3};
    const char *const names[] = {"k_sizes", "k_untimed", "\001step"};
    synth_paths(s, ids, names, 3);
    struct wsl_event named[2];
    memset(named, 0, sizeof named);
    named[0].t_start = START + 100, named[0].t_end = START + 200, named[0].api = FUNC;
    named[0].a[0] = FN, named[0].a[1] = 1;
    named[1] = named[0];
    named[1].a[0] = FN_UNTIMED, named[1].a[1] = 2;
    synth_events(s, PID, 0, named, 2);
    for (uint32_t i = 0; i < host->n; i += 4096)
        synth_events(s, PID, 0, host->v + i, host->n - i < 4096 ? host->n - i : 4096);
    for (uint32_t i = 0; i < gpu->n; i += 4096)
        synth_events(s, PID + 1, 0, gpu->v + i, gpu->n - i < 4096 ? gpu->n - i : 4096);
    synth_end(s, host->v[host->n - 1].t_end + 1000000, host->n + gpu->n + 2, 0, 2);
    synth_close(s);
    free(host->v);
    free(gpu->v);
    return 0;
}

static int read_trace(struct wsl_run *run, const char *path)
{
    char err[256];
    wsl_run_init(run);
    CHECKF(wsl_run_add_trace(run, path, err, sizeof err) == 0, "%s", err);
    wsl_run_finish(run);
    return 0;
}

static const struct wsl_kernel *kernel(const struct wsl_run *run, const char *name)
{
    for (size_t i = 0; i < run->kernels.count; i++)
        if (strcmp(run->kernels.items[i].name, name) == 0)
            return &run->kernels.items[i];
    return NULL;
}

#define GRID_BIG WSL_GRID(40, 1)
#define GRID_SMALL WSL_GRID(4, 1)
#define GRID_MID WSL_GRID(8, 1)
#define BLOCK WSL_BLOCK(1, 256, 1, 1)

/* 100 steps of k_sizes: 1 launch of 40 blocks (80 us on the GPU, through cuLaunchKernelEx) and 9
 * of 4 blocks (8 us); only the first three launches timed (as the shim's coverage does: the big
 * one and two small ones); then 50 launches of 8 blocks, never timed, and 10 of k_untimed. */
static int write_sizes(const char *path, bool old)
{
    struct events host = {0}, gpu = {0};
    uint64_t t = START + 10000;
    unsigned n = 0;
    for (unsigned step = 0; step < 100; step++)
        for (unsigned k = 0; k < 10; k++, n++, t += 10000) {
            bool big = k == 0;
            launch(&host, &gpu, big ? LAUNCH_EX : LAUNCH, t, FN, big ? GRID_BIG : GRID_SMALL, BLOCK,
                   n < 3 ? (big ? 80000 : 8000) : 0, old);
        }
    for (unsigned i = 0; i < 50; i++, t += 10000)
        launch(&host, &gpu, LAUNCH, t, FN, GRID_MID, BLOCK, 0, old);
    for (unsigned i = 0; i < 10; i++, t += 10000)
        launch(&host, &gpu, LAUNCH, t, FN_UNTIMED, GRID_SMALL, BLOCK, 0, old);
    return write_trace(path, &host, &gpu);
}

int test_kern_config_estimate(void)
{
    wsl_kern_pairs = WSL_KERN_PAIRS_NONE; /* the synthetic measures are the kernels' own times */
    char path[512];
    test_path(path, sizeof path, "kern_configs.trace.zst");
    CHECK(write_sizes(path, false) == 0);
    struct wsl_run run;
    if (read_trace(&run, path))
        return 1;
    const struct wsl_kernel *k = kernel(&run, "k_sizes"), *u = kernel(&run, "k_untimed");
    CHECK(k && u);
    CHECK_EQ(k->launches, 1050);
    CHECK_EQ(k->gpu_ns.count, 3);
    /* per size: 100 x 80 us + 900 x 8 us; the 8-block size never timed: 50 x the function's
     * mean over its timed launches, (80 + 8 + 8) / 3 = 32 us */
    CHECK_EQ(k->est_gpu_ns, 100 * 80000ull + 900 * 8000ull + 50 * 32000ull);
    /* a function never timed: the process's mean timed kernel time */
    CHECK_EQ(u->est_gpu_ns, 10 * 32000ull);
    CHECK_EQ(run.kernels.est_gpu_ns, 16800000ull + 320000ull);
    CHECK_EQ(run.procs[0].gpu.est_gpu_ns, 16800000ull + 320000ull);
    CHECK_EQ(run.kernels.config_untracked, 0);
    CHECK_EQ(run.warning_count, 0);
    wsl_run_free(&run);
    return 0;
}

/* The same trace as an older shim wrote it (GPU_KERNEL's result 0): the per-function estimate. */
int test_kern_config_unknown(void)
{
    wsl_kern_pairs = WSL_KERN_PAIRS_NONE; /* the synthetic measures are the kernels' own times */
    char path[512];
    test_path(path, sizeof path, "kern_configs_old.trace.zst");
    CHECK(write_sizes(path, true) == 0);
    struct wsl_run run;
    if (read_trace(&run, path))
        return 1;
    const struct wsl_kernel *k = kernel(&run, "k_sizes"), *u = kernel(&run, "k_untimed");
    CHECK(k && u);
    CHECK_EQ(k->est_gpu_ns, 1050 * 32000ull);
    CHECK_EQ(u->est_gpu_ns, 10 * 32000ull);
    CHECK_EQ(run.kernels.est_gpu_ns, 1060 * 32000ull);
    CHECK_EQ(run.kernels.config_untracked, 0);
    wsl_run_free(&run);
    return 0;
}

/* More (function, configuration) pairs than WSL_KERN_MAX_CONFIGS. k_sizes launched 3 times at 1
 * block (the first timed: 1 us) and once at 2 blocks (timed: 3 us), a function 0x3000 once (timed: 10 us), as many other
 * functions once each as fill the pairs (never timed: the process's mean), then k_sizes at 5 more
 * sizes, past the cap: their launches take k_sizes' mean (2 us), not the process's, and are
 * counted, with a warning. (Each function has few sizes: 2^18 sizes of one function would share
 * hashes, wsl_launch_config being 32 bits.) */
int test_kern_configs_bounded(void)
{
    wsl_kern_pairs = WSL_KERN_PAIRS_NONE; /* the synthetic measures are the kernels' own times */
    char path[512];
    test_path(path, sizeof path, "kern_configs_many.trace.zst");
    struct events host = {0}, gpu = {0};
    uint64_t t = START + 10000;
    for (unsigned i = 0; i < 3; i++)
        launch(&host, &gpu, LAUNCH, t += 100, FN, WSL_GRID(1, 1), BLOCK, i ? 0 : 1000, false);
    launch(&host, &gpu, LAUNCH, t += 100, FN, WSL_GRID(2, 1), BLOCK, 3000, false);
    launch(&host, &gpu, LAUNCH, t += 100, 0x3000, WSL_GRID(1, 1), BLOCK, 10000, false);
    for (unsigned i = 0; i < WSL_KERN_MAX_CONFIGS - 3; i++)
        launch(&host, &gpu, LAUNCH, t += 100, 0x100000 + 16ull * i, WSL_GRID(1, 1), BLOCK, 0, false);
    for (unsigned i = 0; i < 5; i++)
        launch(&host, &gpu, LAUNCH, t += 100, FN, WSL_GRID(3 + i, 1), BLOCK, 0, false);
    CHECK(write_trace(path, &host, &gpu) == 0);
    struct wsl_run run;
    if (read_trace(&run, path))
        return 1;
    const struct wsl_kernel *k = kernel(&run, "k_sizes");
    CHECK(k);
    CHECK_EQ(k->launches, 9);
    CHECK_EQ(k->est_gpu_ns, 3 * 1000 + 3000 + 5 * 2000); /* per function: 9 x 2 us */
    CHECK_EQ(run.kernels.config_untracked, 5);
    CHECK_EQ(run.kernels.launches, WSL_KERN_MAX_CONFIGS + 7);
    bool warned = false;
    for (size_t i = 0; i < run.warning_count; i++)
        warned |= strstr(run.warnings[i], "launch configurations") != NULL;
    CHECK(warned);
    wsl_run_free(&run);
    return 0;
}

/* k_sizes at two sizes, each timed both idle at submit (the pair's measure is the kernel) and
 * queued (the pair adds its own time): 40 blocks 100 launches, 4 idle at 80 us and 4 queued at 83
 * us; 4 blocks 200 launches, 3 idle at 8 us, 3 queued at 10 us; k_untimed 10 launches never timed.
 * With both kinds measured the process's overhead is 3 us (the weighted median: 3 us weighs 4,
 * 2 us 3); each size takes its own off its queued launches, the means for what was never timed the
 * process's; with `queued_only` (every timed launch queued) nothing measures it and nothing comes off. */
static int write_pairs(const char *path, bool queued_only)
{
    struct events host = {0}, gpu = {0};
    uint64_t t = START + 10000;
    put(&host, PUSH, START + 5000, 0, 0, 3, 0, 0, 0); /* NVTX ranges "step" around the launches, two */
    for (unsigned i = 0; i < 300; i++, t += 100000) {
        if (i == 150) {
            put(&host, POP, t - 1000, 0, 0, 0, 0, 0, 0);
            put(&host, PUSH, t - 500, 0, 0, 3, 0, 0, 0);
        }
        bool big = i < 100;
        uint64_t grid = big ? GRID_BIG : GRID_SMALL, base = big ? 80000 : 8000;
        unsigned j = big ? i : i - 100, timed = big ? 8 : 6;
        put(&host, LAUNCH, t, 2000, 0, FN, grid, BLOCK, 0);
        if (j < timed) {
            bool idle = !queued_only && j < timed / 2;
            uint64_t dur = idle ? base : base + (big ? 3000 : 2000);
            put(&gpu, GPU, t + 3000, dur, (int32_t)wsl_launch_config(grid, BLOCK), FN, t,
                WSL_GPU_MAPPED | (idle ? WSL_GPU_IDLE_AT_SUBMIT : 0) | (uint64_t)PID << 32, dur);
        }
    }
    for (unsigned i = 0; i < 10; i++, t += 10000)
        put(&host, LAUNCH, t, 2000, 0, FN_UNTIMED, GRID_SMALL, BLOCK, 0);
    put(&host, POP, t, 0, 0, 0, 0, 0, 0);
    return write_trace(path, &host, &gpu);
}

int test_kern_pair_overhead(void)
{
    char path[512];
    test_path(path, sizeof path, "kern_pairs.trace.zst");
    CHECK(write_pairs(path, false) == 0);
    struct wsl_run run;
    /* --gpu-pair-correction=none: measured and reported, the measures as they are */
    wsl_kern_pairs = WSL_KERN_PAIRS_NONE;
    if (read_trace(&run, path))
        return 1;
    const struct wsl_kernel *k0 = kernel(&run, "k_sizes");
    CHECK(k0);
    CHECK_EQ(run.kernels.pair_overhead_ns, 3000);
    CHECK_EQ(run.kernels.pair_groups, 2);
    CHECK_EQ(run.kernels.pair_corrected, 0);
    CHECK_EQ(k0->est_gpu_ns, 100 * ((4 * 80000ull + 4 * 83000) / 8) + 200 * ((3 * 8000ull + 3 * 10000) / 6));
    wsl_run_free(&run);
    /* --gpu-pair-correction (=queued): each configuration's own D off its queued launches */
    wsl_kern_pairs = WSL_KERN_PAIRS_QUEUED;
    if (read_trace(&run, path))
        return 1;
    const struct wsl_kernel *k = kernel(&run, "k_sizes"), *u = kernel(&run, "k_untimed");
    CHECK(k && u);
    CHECK_EQ(run.kernels.pair_overhead_ns, 3000);
    CHECK_EQ(run.kernels.pair_groups, 2);
    CHECK_EQ(run.kernels.pair_weight, 7);
    CHECK_EQ(run.kernels.pair_corrected, 7);
    CHECK_EQ(k->est_gpu_ns, 100 * 80000ull + 200 * 8000ull);
    /* the process's mean, less its overhead on the 7 queued: (4 x 80 + 4 x 83 + 3 x 8 + 3 x 10 - 7 x 3) us / 14 */
    CHECK_EQ(u->est_gpu_ns, 10 * (685000ull / 14));
    CHECK_EQ(k->gpu_ns.count, 14); /* the measures themselves as they were */
    CHECK_EQ(k->gpu_ns.sum, 688000ull + 4 * 3000 + 3 * 2000);
    wsl_run_free(&run);
    /* the default, split: D/2 off each queued launch and onto each idle one, every timed launch
     * adjusted; the 40-block size 81.5 us (80 + 1.5, 83 - 1.5), the 4-block 9 us (8 + 1, 10 - 1);
     * the process's mean with its own D (3 us) split over 7 queued and 7 idle: 706 us / 14 */
    wsl_kern_pairs = WSL_KERN_PAIRS_SPLIT;
    if (read_trace(&run, path))
        return 1;
    k = kernel(&run, "k_sizes"), u = kernel(&run, "k_untimed");
    CHECK(k && u);
    CHECK_EQ(run.kernels.pair_overhead_ns, 3000);
    CHECK_EQ(run.kernels.pair_corrected, 14);
    CHECK_EQ(k->est_gpu_ns, 100 * 81500ull + 200 * 9000ull);
    CHECK_EQ(u->est_gpu_ns, 10 * (706000ull / 14));
    wsl_run_free(&run);
    /* the default, fixed: 0.8 us onto each idle measure, 2.6 us off each queued one, whatever D
     * is; the 40-block size (4 x 80.8 + 4 x 80.4) / 8 = 80.6 us, the 4-block (3 x 8.8 + 3 x 7.4) / 6
     * = 8.1 us; the process's mean (706 + 7 x 0.8 - 7 x 2.6) us / 14 */
    wsl_kern_pairs = WSL_KERN_PAIRS_FIXED;
    if (read_trace(&run, path))
        return 1;
    k = kernel(&run, "k_sizes"), u = kernel(&run, "k_untimed");
    CHECK(k && u);
    CHECK_EQ(run.kernels.pair_overhead_ns, 3000); /* still measured and reported */
    CHECK_EQ(run.kernels.pair_corrected, 14);
    CHECK_EQ(k->est_gpu_ns, 100 * 80600ull + 200 * 8100ull);
    CHECK_EQ(u->est_gpu_ns, 10 * (693400ull / 14));
    wsl_run_free(&run);
    /* fixed:1000,0 (the option's two parts): 1 us onto the idle ones only */
    wsl_kern_fixed_idle_ns = 1000, wsl_kern_fixed_queued_ns = 0;
    if (read_trace(&run, path))
        return 1;
    k = kernel(&run, "k_sizes");
    CHECK(k);
    CHECK_EQ(k->est_gpu_ns, 100 * 82000ull + 200 * 9500ull);
    wsl_run_free(&run);
    wsl_kern_fixed_idle_ns = WSL_KERN_FIXED_IDLE_NS, wsl_kern_fixed_queued_ns = WSL_KERN_FIXED_QUEUED_NS;
    wsl_kern_pairs = WSL_KERN_PAIRS_SPLIT;

    test_path(path, sizeof path, "kern_pairs_queued.trace.zst");
    CHECK(write_pairs(path, true) == 0);
    if (read_trace(&run, path))
        return 1;
    k = kernel(&run, "k_sizes");
    CHECK(k);
    CHECK_EQ(run.kernels.pair_groups, 0);
    CHECK_EQ(run.kernels.pair_overhead_ns, 0);
    CHECK_EQ(run.kernels.pair_corrected, 0);
    CHECK_EQ(k->est_gpu_ns, 100 * 83000ull + 200 * 10000ull);
    wsl_run_free(&run);
    /* fixed adjusts where no D is measured: every timed launch queued, 2.6 us off each */
    wsl_kern_pairs = WSL_KERN_PAIRS_FIXED;
    if (read_trace(&run, path))
        return 1;
    k = kernel(&run, "k_sizes");
    CHECK(k);
    CHECK_EQ(run.kernels.pair_corrected, 14);
    CHECK_EQ(k->est_gpu_ns, 100 * 80400ull + 200 * 7400ull);
    wsl_run_free(&run);
    return 0;
}

/* The estimate's sampling standard error (write_pairs' trace): with the measures as they are,
 * the 40-block size (4 x 80 us, 4 x 83 us timed of 100 launches) and the 4-block one (3 x 8 us,
 * 3 x 10 us of 200) add (1.5 us)^2 x 8/7 / 8 x 100^2 x 0.92 and (1 us)^2 x 6/5 / 6 x 200^2 x 0.97
 * (us^2): 103.52 us; split, every adjusted measure of a size is alike (81.5 and 9 us): 0. The
 * function never timed adds nothing. */
int test_kern_estimate_stderr(void)
{
    char path[512];
    test_path(path, sizeof path, "kern_stderr.trace.zst");
    CHECK(write_pairs(path, false) == 0);
    struct wsl_run run;
    wsl_kern_pairs = WSL_KERN_PAIRS_NONE;
    if (read_trace(&run, path))
        return 1;
    CHECK(run.kernels.est_var_known);
    CHECKF(fabs(sqrt(run.kernels.est_var_ns2) - 103523.6) < 1.0, "%.1f", sqrt(run.kernels.est_var_ns2));
    /* per kernel: all of it k_sizes', none the untimed function's */
    const struct wsl_kernel *ks = kernel(&run, "k_sizes"), *ku = kernel(&run, "k_untimed");
    CHECK(ks && ku);
    CHECKF(fabs(sqrt(ks->est_var_ns2) - 103523.6) < 1.0, "%.1f", sqrt(ks->est_var_ns2));
    CHECK(ku->est_var_ns2 == 0);
    wsl_run_free(&run);
    wsl_kern_pairs = WSL_KERN_PAIRS_SPLIT;
    if (read_trace(&run, path))
        return 1;
    CHECK(run.kernels.est_var_known);
    CHECKF(sqrt(run.kernels.est_var_ns2) < 1.0, "%.1f", sqrt(run.kernels.est_var_ns2));
    wsl_run_free(&run);
    return 0;
}

/* The sum of the "dur" of the timeline's slices of category `cat` ("kernel", "kernel_estimated"),
 * in ns; *n: how many. */
static uint64_t chrome_durations(const char *json, const char *cat, uint64_t *n)
{
    char needle[64];
    snprintf(needle, sizeof needle, "\"cat\":\"%s\"", cat);
    uint64_t sum = 0;
    *n = 0;
    for (const char *p = strstr(json, needle); p; p = strstr(p + 1, needle)) {
        const char *d = strstr(p, "\"dur\":");
        if (!d)
            break;
        sum += (uint64_t)llround(strtod(d + 6, NULL) * 1000.0);
        (*n)++;
    }
    return sum;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = 0;
    fclose(f);
    return s;
}

/* Every output that shows GPU time agrees with the report's estimate (write_pairs' trace: pair
 * overhead 3 us on the 40-block launches, 2 us on the 4-block ones, the process's 3 us):
 * - the timeline: timed queued slices drawn less the overhead, estimated slices lasting their
 *   configuration's corrected mean, so that all of them add up to gpu_time_est_ns;
 * - the projection: the simulated GPU runs for gpu_time_est_ns;
 * - the NVTX range around the launches: its timed kernels' GPU time less the overhead of the
 *   queued ones (8 x 80 us + 6 x 8 us), what the estimate counts for them. */
#define EST_NS (100 * 80000ull + 200 * 8000ull + 10 * (685000ull / 14))
/* the same, split (the default): 81.5 and 9 us per size, the process's mean 706 us / 14 */
#define EST_SPLIT_NS (100 * 81500ull + 200 * 9000ull + 10 * (706000ull / 14))

static int estimate_nvtx(enum wsl_kern_pairs mode, uint64_t est, uint64_t step_gpu_ns)
{
    wsl_kern_pairs = mode; /* the outputs adjust alike */
    char path[512];
    test_path(path, sizeof path, "kern_outputs_nvtx.trace.zst");
    CHECK(write_pairs(path, false) == 0);
    struct wsl_run run;
    if (read_trace(&run, path))
        return 1;
    CHECK_EQ(run.kernels.est_gpu_ns, est);
    const struct wsl_nvtx_range *step = NULL;
    for (size_t i = 0; i < run.nvtx.range_count; i++)
        if (!strcmp(run.nvtx.ranges[i].name, "step"))
            step = &run.nvtx.ranges[i];
    CHECK(step);
    CHECK_EQ(step->count, 2);
    CHECK_EQ(step->self.gpu_kernels, 14);
    CHECK_EQ(step->self.gpu_ns, step_gpu_ns);
    /* the step's process-wide figures (a second reading of the trace) alike */
    CHECK(run.nvtx.step >= 0 && &run.nvtx.ranges[run.nvtx.step] == step);
    CHECK(run.nvtx.step_process_known);
    CHECK_EQ(run.nvtx.step_process.gpu_kernels, 14);
    CHECK_EQ(run.nvtx.step_process.gpu_ns, step_gpu_ns);
    wsl_run_free(&run);
    return 0;
}

/* queued: 8 x 80 us + 6 x 8 us; split: 8 x 81.5 us + 6 x 9 us */
int test_kern_estimate_nvtx(void)
{
    return estimate_nvtx(WSL_KERN_PAIRS_QUEUED, EST_NS, 8 * 80000ull + 6 * 8000ull) ||
           estimate_nvtx(WSL_KERN_PAIRS_SPLIT, EST_SPLIT_NS, 8 * 81500ull + 6 * 9000ull);
}

static int estimate_chrome(enum wsl_kern_pairs mode, uint64_t est, uint64_t timed_ns, const char *const *args)
{
    wsl_kern_pairs = mode; /* the outputs adjust alike */
    char path[512], out[600], err[256];
    test_path(path, sizeof path, "kern_outputs_chrome.trace.zst");
    CHECK(write_pairs(path, false) == 0);
    snprintf(out, sizeof out, "%s.json", path);
    struct wsl_chrome_options copt = {.output = out};
    struct wsl_chrome_result cres;
    CHECKF(wsl_chrome_export((char *const[]){path}, 1, &copt, &cres, err, sizeof err) == 0, "%s", err);
    CHECK_EQ(cres.kernels, 14);
    CHECK_EQ(cres.kernels_estimated, 300 - 14 + 10);
    wsl_chrome_result_free(&cres);
    char *json = slurp(out);
    CHECK(json);
    uint64_t n_timed, n_est;
    uint64_t timed = chrome_durations(json, "kernel", &n_timed), estimated = chrome_durations(json, "kernel_estimated", &n_est);
    CHECK_EQ(n_timed, 14);
    CHECK_EQ(n_est, 296);
    CHECK_EQ(timed, timed_ns);
    CHECK_EQ(timed + estimated, est);
    for (; *args; args++)
        CHECKF(strstr(json, *args) != NULL, "no %s", *args);
    free(json);
    remove(out);
    return 0;
}

/* queued: the queued slices shorter by their size's D, the idle ones as measured; split: every
 * timed slice adjusted by half its size's D (an idle one starts earlier, a queued one ends
 * earlier) */
int test_kern_estimate_chrome(void)
{
    static const char *const queued[] = {"\"measured_ns\":83000,\"pair_adjust_ns\":-3000",
                                         "\"measured_ns\":10000,\"pair_adjust_ns\":-2000", NULL};
    static const char *const split[] = {"\"measured_ns\":83000,\"pair_adjust_ns\":-1500",
                                        "\"measured_ns\":80000,\"pair_adjust_ns\":1500",
                                        "\"measured_ns\":10000,\"pair_adjust_ns\":-1000",
                                        "\"measured_ns\":8000,\"pair_adjust_ns\":1000", NULL};
    return estimate_chrome(WSL_KERN_PAIRS_QUEUED, EST_NS, 8 * 80000ull + 6 * 8000ull, queued) ||
           estimate_chrome(WSL_KERN_PAIRS_SPLIT, EST_SPLIT_NS, 8 * 81500ull + 6 * 9000ull, split);
}

int test_kern_estimate_project(void)
{
    wsl_kern_pairs = WSL_KERN_PAIRS_QUEUED; /* --gpu-pair-correction: the outputs adjust alike */
    char path[512], err[256];
    test_path(path, sizeof path, "kern_outputs_project.trace.zst");
    CHECK(write_pairs(path, false) == 0);
    uint64_t est = EST_NS;
    struct wsl_projection_options popt = {.target = "native"};
    struct wsl_projection pr;
    CHECKF(wsl_project((const char *const[]){path}, 1, &popt, &pr, err, sizeof err) == 0, "%s", err);
    CHECK_EQ(pr.launches, 310);
    CHECK_EQ(pr.launches_kernel_mean, 300);
    CHECK_EQ(pr.launches_process_mean, 10);
    CHECK_EQ(pr.gpu_ns, est);
    CHECK(pr.gpu_estimate);
    wsl_projection_free(&pr);
    return 0;
}

/* write_sizes' trace (no pair overhead measured: every timed launch queued): a size never timed
 * takes its function's mean, a function never timed the process's, in the timeline's estimated
 * slices and the projection's GPU as in the report. */
int test_kern_estimate_fallbacks(void)
{
    wsl_kern_pairs = WSL_KERN_PAIRS_QUEUED; /* --gpu-pair-correction: the outputs adjust alike */
    char path[512], out[600], err[256];
    test_path(path, sizeof path, "kern_outputs_sizes.trace.zst");
    CHECK(write_sizes(path, false) == 0);
    uint64_t est = 100 * 80000ull + 900 * 8000ull + 50 * 32000ull + 10 * 32000ull;
    snprintf(out, sizeof out, "%s.json", path);
    struct wsl_chrome_options copt = {.output = out};
    struct wsl_chrome_result cres;
    CHECKF(wsl_chrome_export((char *const[]){path}, 1, &copt, &cres, err, sizeof err) == 0, "%s", err);
    wsl_chrome_result_free(&cres);
    char *json = slurp(out);
    CHECK(json);
    uint64_t n_timed, n_est;
    uint64_t timed = chrome_durations(json, "kernel", &n_timed), estimated = chrome_durations(json, "kernel_estimated", &n_est);
    CHECK_EQ(n_timed, 3);
    CHECK_EQ(n_est, 1060 - 3);
    CHECK_EQ(timed + estimated, est);
    CHECK(strstr(json, "\"basis\":\"mean of this kernel's timed launches, adjusted for the event pairs\"") != NULL);
    CHECK(strstr(json, "\"basis\":\"mean of the process's timed kernels, adjusted for the event pairs\"") != NULL);
    CHECK(strstr(json, "pair_adjust_ns") == NULL); /* none measured: the slices as measured */
    free(json);
    remove(out);

    struct wsl_projection_options popt = {.target = "native"};
    struct wsl_projection pr;
    CHECKF(wsl_project((const char *const[]){path}, 1, &popt, &pr, err, sizeof err) == 0, "%s", err);
    CHECK_EQ(pr.launches_kernel_mean, 1050);
    CHECK_EQ(pr.launches_process_mean, 10);
    CHECK_EQ(pr.gpu_ns, est);
    wsl_projection_free(&pr);
    return 0;
}
