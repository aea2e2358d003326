/* NVTX ranges on synthetic traces: time per range, nesting, self and
 * inclusive attribution, domains, start/end across threads whose chunks come
 * in any order, timed-kernel attribution by launching thread and time, and
 * the caps (depth, history, unknown names). The trace carries its own API
 * table, with a GPU_KERNEL row. Ticks are ns (monotonic clock). */
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "analysis_internal.h"
#include "rules.h"
#include "ddp_scenarios.h"
#include "trace_synth.h"
#include "unit_test.h"

#define CHECK_EQ(got, want)                                                                                 \
    CHECKF((uint64_t)(got) == (uint64_t)(want), "%s = %llu, expected %llu", #got, (unsigned long long)(got), \
           (unsigned long long)(want))

enum { LAUNCH, SYNC, READ, PUSH, POP, START, END, MARK, DPUSH, DPOP, GPU, ROWS };
static const struct synth_row rows[ROWS] = {
    [LAUNCH] = {"cuLaunchKernel", "cuLaunchKernel", WSL_CAT_LAUNCH},
    [SYNC] = {"cuStreamSynchronize", "cuStreamSynchronize", WSL_CAT_SYNC_STREAM},
    [READ] = {"read", "read", WSL_CAT_IO_READ},
    [PUSH] = {"nvtxRangePushA", "nvtxRangePush", WSL_CAT_NVTX_PUSH},
    [POP] = {"nvtxRangePop", "nvtxRangePop", WSL_CAT_NVTX_POP},
    [START] = {"nvtxRangeStartA", "nvtxRangeStart", WSL_CAT_NVTX_START},
    [END] = {"nvtxRangeEnd", "nvtxRangeEnd", WSL_CAT_NVTX_END},
    [MARK] = {"nvtxMarkA", "nvtxMark", WSL_CAT_NVTX_MARK},
    [DPUSH] = {"nvtxDomainRangePushEx", "nvtxDomainRangePushEx", WSL_CAT_NVTX_PUSH},
    [DPOP] = {"nvtxDomainRangePop", "nvtxDomainRangePop", WSL_CAT_NVTX_POP},
    [GPU] = {"gpu_kernel", "gpu_kernel", WSL_CAT_GPU_KERNEL},
};

#define START_NS 1000u

struct builder {
    struct synth *s;
    struct wsl_event ev[3][16384];
    uint32_t n[3];
};

static struct builder *open_trace(const char *path, const uint32_t *ids, const char *const *names, uint32_t count)
{
    struct builder *b = calloc(1, sizeof *b);
    b->s = synth_open(path, NULL);
    synth_file_header(b->s, NULL);
    struct wsl_process_info pi;
    memset(&pi, 0, sizeof pi);
    pi.pid = 9000;
    pi.ppid = 1;
    pi.clock_kind = WSL_CLOCK_MONOTONIC_NS;
    pi.start_ticks = pi.start_mono_ns = START_NS;
    pi.start_real_ns = 1700000000000000000u;
    const char *argv[] = {"python3", "train.py"};
    synth_process(b->s, &pi, "host", "/usr/bin/python3", "6.8.0", 2, argv);
    synth_api_rows(b->s, rows, ROWS);
    synth_clock(b->s, START_NS, START_NS, pi.start_real_ns);
    synth_paths(b->s, ids, names, count);
    return b;
}

/* An event on builder thread th (0..2). */
static void ev(struct builder *b, unsigned th, unsigned api, uint64_t t, uint64_t dur, int32_t result,
               uint64_t stream, uint64_t a0, uint64_t a1, uint64_t a2)
{
    struct wsl_event *e = &b->ev[th][b->n[th]++];
    memset(e, 0, sizeof *e);
    e->t_start = t;
    e->t_end = t + dur;
    e->api = (uint16_t)api;
    e->result = result;
    e->stream = stream;
    e->a[0] = a0;
    e->a[1] = a1;
    e->a[2] = a2;
}

/* Writes the threads' chunks in `order` (tids 100, 200, 300), then END. */
static void close_trace(struct builder *b, const unsigned *order, uint64_t end_ticks)
{
    static const uint32_t tids[3] = {100, 200, 300};
    for (unsigned k = 0; k < 3; k++) {
        unsigned th = order[k];
        for (uint32_t i = 0; i < b->n[th]; i += 4096) {
            uint32_t n = b->n[th] - i < 4096 ? b->n[th] - i : 4096;
            synth_events(b->s, tids[th], 0, &b->ev[th][i], n);
        }
    }
    synth_clock(b->s, end_ticks, end_ticks, 1700000000000000000u + end_ticks);
    synth_end(b->s, end_ticks, 0, 0, 3);
    synth_close(b->s);
    free(b);
}

static int analyze(struct wsl_run *run, const char *path)
{
    wsl_run_init(run);
    char err[WSL_READER_ERRLEN];
    CHECKF(wsl_run_add_trace(run, path, err, sizeof err) == 0, "%s: %s", path, err);
    wsl_run_finish(run);
    return 0;
}

static const struct wsl_nvtx_range *range(const struct wsl_run *run, const char *domain, const char *name)
{
    for (size_t i = 0; i < run->nvtx.range_count; i++) {
        const struct wsl_nvtx_range *r = &run->nvtx.ranges[i];
        if (!strcmp(r->name, name) && (domain ? r->domain && !strcmp(r->domain, domain) : !r->domain))
            return r;
    }
    return NULL;
}

enum { N_STEP = 1, N_FWD, N_BWD, N_DOM, N_DOMR, N_ASYNC, N_MARK, N_FILE, N_OUTER2, N_TAIL };

/* Three steps on thread 100 (step > forward, backward), a domain range popped
 * under a default-domain one, an unmatched pop, a start ended on thread 200
 * whose chunk comes first, marks, a range left open; timed kernels on thread
 * 300 attributed by launching thread and launch time. */
int test_nvtx_attribution(void)
{
    char path[512];
    test_path(path, sizeof path, "nvtx_attr");
    const uint32_t ids[] = {N_STEP, N_FWD, N_BWD, N_DOM, N_DOMR, N_ASYNC, N_MARK, N_FILE, N_OUTER2, N_TAIL};
    const char *const names[] = {"\001step", "\001forward", "\001backward", "\001dom", "\001dom_range",
                                 "\001async", "\001m", "/data/x.bin", "\001outer2", "\001tail"};
    struct builder *b = open_trace(path, ids, names, 10);
    for (uint64_t s = 0; s < 3; s++) {
        uint64_t base = 1000000 * (s + 1);
        ev(b, 0, PUSH, base, 0, 0, 0, N_STEP, 0, 0);
        ev(b, 0, LAUNCH, base + 100, 10, 0, 7, 0x1000, 1, 1);
        ev(b, 0, PUSH, base + 1000, 0, 0, 0, N_FWD, 0, 0);
        ev(b, 0, LAUNCH, base + 1100, 10, 0, 7, 0x1000, 1, 1);
        ev(b, 0, LAUNCH, base + 1200, 10, 0, 7, 0x1000, 1, 1);
        ev(b, 0, READ, base + 1300, 50, 0, 3, N_FILE, 4096, 4096);
        ev(b, 0, POP, base + 2000, 0, 0, 0, 0, 0, 0);
        ev(b, 0, PUSH, base + 3000, 0, 0, 0, N_BWD, 0, 0);
        ev(b, 0, SYNC, base + 3100, 200, 0, 7, 0, 0, 0);
        ev(b, 0, LAUNCH, base + 3400, 10, 1, 7, 0x1000, 1, 1); /* failed: a call, not a launch */
        ev(b, 0, POP, base + 4000, 0, 0, 0, 0, 0, 0);
        ev(b, 0, POP, base + 5000, 0, 0, 0, 0, 0, 0);
    }
    ev(b, 0, DPUSH, 10000000, 0, 0, N_DOM, N_DOMR, 0, 0);
    ev(b, 0, PUSH, 10000100, 0, 0, 0, N_OUTER2, 0, 0);
    ev(b, 0, DPOP, 10000200, 0, 0, N_DOM, 0, 0, 0); /* closes dom_range, below outer2 */
    ev(b, 0, POP, 10000300, 0, 0, 0, 0, 0, 0);
    ev(b, 0, POP, 10000400, 0, 0, 0, 0, 0, 0);     /* nothing open */
    ev(b, 0, START, 11000000, 0, 0, 0, N_ASYNC, 77, 0);
    ev(b, 0, MARK, 11000100, 0, 0, 0, N_MARK, 0, 0);
    ev(b, 0, MARK, 11000200, 0, 0, 0, N_MARK, 0, 0);
    ev(b, 0, PUSH, 12000000, 0, 0, 0, N_TAIL, 0, 0);
    /* thread 200: the end of range 77, and a launch outside any range */
    ev(b, 1, LAUNCH, 1000500, 10, 0, 7, 0x1000, 1, 1);
    ev(b, 1, END, 11500000, 0, 0, 0, 0, 77, 0);
    /* thread 300: timed kernels (a1 launch time, a2 launching tid << 32) */
    ev(b, 2, GPU, 1002000, 700, 0, 7, 0x1000, 1001100, 100ull << 32 | WSL_GPU_MAPPED); /* forward, step 0 */
    ev(b, 2, GPU, 2001000, 300, 0, 7, 0x1000, 2000100, 100ull << 32);                  /* step 1 itself */
    ev(b, 2, GPU, 2002000, 300, 0, 7, 0x1000, 1000500, 200ull << 32);                  /* thread 200: none */
    ev(b, 2, GPU, 2003000, 300, 0, 7, 0x1000, 500, 100ull << 32);                      /* before any range */
    const unsigned order[] = {1, 0, 2};
    close_trace(b, order, 13000000);

    struct wsl_run run;
    if (analyze(&run, path))
        return 1;
    const struct wsl_nvtx *n = &run.nvtx;
    const struct wsl_nvtx_range *step = range(&run, NULL, "step"), *fwd = range(&run, NULL, "forward"),
                                *bwd = range(&run, NULL, "backward"), *dom = range(&run, "dom", "dom_range"),
                                *outer2 = range(&run, NULL, "outer2"), *async = range(&run, NULL, "async"),
                                *tail = range(&run, NULL, "tail");
    CHECK(step && fwd && bwd && dom && outer2 && async && tail);
    CHECK_EQ(n->range_count, 7);
    CHECK_EQ(step->count, 3);
    CHECK_EQ(step->top_level, 3);
    CHECK_EQ(step->ns.sum, 15000);
    CHECK_EQ(step->self.launches, 3);
    CHECK_EQ(step->self.api_calls, 3);
    CHECK_EQ(step->incl.launches, 9);
    CHECK_EQ(step->incl.api_calls, 15);
    CHECK_EQ(step->incl.syncs, 3);
    CHECK_EQ(step->incl.io_reads, 3);
    CHECK_EQ(step->incl.io_bytes, 3 * 4096);
    CHECK_EQ(step->self.io_reads, 0);
    CHECK_EQ(step->self.gpu_kernels, 1);
    CHECK_EQ(step->self.gpu_ns, 300);
    CHECK_EQ(fwd->count, 3);
    CHECK_EQ(fwd->top_level, 0);
    CHECK_EQ(fwd->max_depth, 1);
    CHECK_EQ(fwd->ns.sum, 3000);
    CHECK_EQ(fwd->self.launches, 6);
    CHECK_EQ(fwd->self.io_reads, 3);
    CHECK_EQ(fwd->self.io_bytes, 3 * 4096);
    CHECK_EQ(fwd->self.io_ns, 150);
    CHECK_EQ(fwd->self.gpu_kernels, 1);
    CHECK_EQ(fwd->self.gpu_ns, 700);
    CHECK_EQ(bwd->self.syncs, 3);
    CHECK_EQ(bwd->self.sync_ns, 600);
    CHECK_EQ(bwd->self.api_calls, 6);
    CHECK_EQ(bwd->self.launches, 0);
    CHECK_EQ(dom->count, 1);
    CHECK_EQ(dom->ns.sum, 200);
    CHECK_EQ(outer2->count, 1);
    CHECK_EQ(outer2->ns.sum, 200);
    CHECK_EQ(outer2->max_depth, 1);
    CHECK_EQ(async->kind, WSL_NVTX_START);
    CHECK_EQ(async->count, 1);
    CHECK_EQ(async->ns.sum, 500000);
    CHECK_EQ(async->unclosed, 0);
    CHECK_EQ(tail->count, 1);
    CHECK_EQ(tail->unclosed, 1);
    CHECK_EQ(tail->ns.sum, 1000000);
    CHECK_EQ(n->pushes, 12);
    CHECK_EQ(n->pops, 12);
    CHECK_EQ(n->unmatched_pops, 1);
    CHECK_EQ(n->starts, 1);
    CHECK_EQ(n->ends, 1);
    CHECK_EQ(n->unmatched_ends, 0);
    CHECK_EQ(n->unclosed, 1);
    CHECK_EQ(n->gpu_unattributed, 2);
    CHECK_EQ(n->unnamed_ids, 0);
    CHECK_EQ(n->dropped, 0);
    CHECK_EQ(n->marks_total, 2);
    CHECK(n->mark_count == 1 && !strcmp(n->marks[0].name, "m") && n->marks[0].count == 2);
    CHECK(n->step >= 0 && &n->ranges[n->step] == step);
    /* Every thread inside the step windows: thread 200's launch, and timed
     * kernels by launch time whoever launched them. */
    CHECK(n->step_process_known);
    CHECK_EQ(n->step_process_steps, 3);
    CHECK_EQ(n->step_process.launches, 10);
    CHECK_EQ(n->step_process.api_calls, 16);
    CHECK_EQ(n->step_process.syncs, 3);
    CHECK_EQ(n->step_process.io_reads, 3);
    CHECK_EQ(n->step_process.gpu_kernels, 3);
    CHECK_EQ(n->step_process.gpu_ns, 1300);
    CHECK(n->ranges[0].ns.sum >= n->ranges[n->range_count - 1].ns.sum); /* by total time */
    for (size_t i = 0; i < run.api_count; i++)
        CHECKF(!run.apis[i].ns.count || strncmp(run.apis[i].name, "nvtx", 4) != 0, "%s among the APIs",
               run.apis[i].name);
    wsl_run_free(&run);
    return 0;
}

/* Nesting past the depth cap, a long history, unknown name ids, an end of no
 * start: counted, never a crash; the step is the most frequent top-level range. */
int test_nvtx_bounded(void)
{
    char path[512];
    test_path(path, sizeof path, "nvtx_bounded");
    const uint32_t ids[] = {1, 2};
    const char *const names[] = {"\001deep", "\001loop"};
    struct builder *b = open_trace(path, ids, names, 2);
    uint64_t t = 10000;
    unsigned deep = WSL_NVTX_MAX_DEPTH + 72;
    for (unsigned i = 0; i < deep; i++, t += 10)
        ev(b, 0, PUSH, t, 0, 0, 0, 1, 0, 0);
    ev(b, 0, LAUNCH, t, 10, 0, 7, 0x1000, 1, 1);
    for (unsigned i = 0; i < deep; i++, t += 10)
        ev(b, 0, POP, t, 0, 0, 0, 0, 0, 0);
    uint64_t first_loop = t;
    unsigned loops = 3000; /* 6000 innermost changes: past the per-thread history */
    for (unsigned i = 0; i < loops; i++, t += 100) {
        ev(b, 0, PUSH, t, 0, 0, 0, 2, 0, 0);
        ev(b, 0, POP, t + 50, 0, 0, 0, 0, 0, 0);
    }
    ev(b, 0, PUSH, t, 0, 0, 0, 999, 0, 0); /* a name id no PATHS entry defined */
    ev(b, 0, POP, t + 10, 0, 0, 0, 0, 0, 0);
    ev(b, 0, END, t + 20, 0, 0, 0, 0, 4242, 0);
    ev(b, 2, GPU, t + 100, 10, 0, 7, 0x1000, first_loop + 10, 100ull << 32);         /* too old */
    ev(b, 2, GPU, t + 200, 10, 0, 7, 0x1000, t - 100 + 10, 100ull << 32);            /* the last loop */
    const unsigned order[] = {0, 1, 2};
    close_trace(b, order, t + 1000);

    struct wsl_run run;
    if (analyze(&run, path))
        return 1;
    const struct wsl_nvtx *n = &run.nvtx;
    const struct wsl_nvtx_range *d = range(&run, NULL, "deep"), *l = range(&run, NULL, "loop"),
                                *u = range(&run, NULL, "(unknown name)");
    CHECK(d && l && u);
    CHECK_EQ(d->count, WSL_NVTX_MAX_DEPTH);
    CHECK_EQ(d->max_depth, WSL_NVTX_MAX_DEPTH - 1);
    CHECK_EQ(d->top_level, 1);
    CHECK_EQ(d->incl.launches, WSL_NVTX_MAX_DEPTH); /* every nested instance of a recursive name holds it */
    CHECK_EQ(d->self.launches, 1);
    CHECK_EQ(n->dropped, 72);
    CHECK_EQ(n->unmatched_pops, 0);
    CHECK_EQ(n->pushes, deep + loops + 1);
    CHECK_EQ(l->count, loops);
    CHECK_EQ(l->ns.sum, 50ull * loops);
    CHECK_EQ(l->self.gpu_kernels, 1);
    CHECK_EQ(n->gpu_unattributed, 1);
    CHECK_EQ(u->count, 1);
    CHECK_EQ(n->unnamed_ids, 1);
    CHECK_EQ(n->unmatched_ends, 1);
    CHECK(n->step >= 0 && &n->ranges[n->step] == l);
    wsl_run_free(&run);
    return 0;
}

/* Full buffers dropped a pop: the next chunk says events were lost, and the
 * level its first push carries closes the range whose pop is gone. */
int test_nvtx_dropped_resync(void)
{
    char path[512];
    test_path(path, sizeof path, "nvtx_dropped");
    const uint32_t ids[] = {1};
    const char *const names[] = {"\001step"};
    struct builder *b = open_trace(path, ids, names, 1);
    ev(b, 0, PUSH, 1000, 0, 0, 0, 1, 0, 0);
    ev(b, 0, POP, 2000, 0, 0, 0, 0, 0, 0);
    ev(b, 0, PUSH, 3000, 0, 0, 0, 1, 0, 0); /* its pop at 4000 was dropped */
    synth_events(b->s, 100, 0, b->ev[0], 3);
    ev(b, 1, PUSH, 5000, 0, 0, 0, 1, 0, 0); /* level 0: nothing is open */
    ev(b, 1, LAUNCH, 5500, 10, 0, 7, 0x1000, 1, 1);
    ev(b, 1, POP, 6000, 0, 0, 0, 0, 0, 0);
    synth_events(b->s, 100, 1, b->ev[1], 3);
    synth_end(b->s, 7000, 6, 1, 1);
    synth_close(b->s);
    free(b);

    struct wsl_run run;
    if (analyze(&run, path))
        return 1;
    const struct wsl_nvtx_range *step = range(&run, NULL, "step");
    CHECK(step);
    CHECK_EQ(step->count, 2);
    CHECK_EQ(step->max_depth, 0);
    CHECK_EQ(step->unclosed, 0);
    CHECK_EQ(step->ns.sum, 2000);
    CHECK_EQ(step->incl.launches, 1);
    CHECK_EQ(run.nvtx.lost, 1);
    CHECK_EQ(run.nvtx.unclosed, 0);
    wsl_run_free(&run);
    return 0;
}

/* The step's list for the phases when other top-level ranges sit between the
 * steps on one thread ("step", "eval", "step", ...): each step once, in time
 * order; the eval ranges are not steps. */
int test_nvtx_step_list_between_others(void)
{
    char path[512];
    test_path(path, sizeof path, "nvtx_step_list");
    const uint32_t ids[] = {1, 2};
    const char *const names[] = {"\001step", "\001eval"};
    struct builder *b = open_trace(path, ids, names, 2);
    for (unsigned k = 0; k < 5; k++) {
        uint64_t t = 10000 + k * 10000;
        ev(b, 0, PUSH, t, 0, 0, 0, 1, 0, 0);
        ev(b, 0, LAUNCH, t + 100, 10, 0, 7, 0x1000, 1, 1);
        ev(b, 0, POP, t + 4000, 0, 0, 0, 0, 0, 0);
        ev(b, 0, PUSH, t + 5000, 0, 0, 0, 2, 0, 0);
        ev(b, 0, POP, t + 6000, 0, 0, 0, 0, 0, 0);
    }
    static const unsigned order[3] = {0, 1, 2};
    close_trace(b, order, 70000);

    struct wsl_run run;
    if (analyze(&run, path))
        return 1;
    const struct wsl_nvtx *n = &run.nvtx;
    const struct wsl_nvtx_range *step = range(&run, NULL, "step");
    CHECK(step && n->step >= 0 && &n->ranges[n->step] == step);
    CHECK_EQ(step->count, 5);
    CHECK_EQ(n->step_process_steps, 5);
    CHECK_EQ(n->step_trace_count, 1);
    CHECK_EQ(n->step_traces[0].count, 5);
    for (size_t k = 0; k < n->step_traces[0].count && k < 5; k++) {
        CHECK_EQ(n->step_traces[0].t0[k], 10000 + k * 10000);
        CHECK_EQ(n->step_traces[0].t1[k], 14000 + k * 10000);
    }
    wsl_run_free(&run);
    return 0;
}

static const struct wsl_host_range *host_range(const struct wsl_host_summary *h, const char *name)
{
    for (size_t i = 0; i < h->range_count; i++)
        if (!strcmp(h->ranges[i].name, name))
            return &h->ranges[i];
    return NULL;
}

/* Waits credited to the innermost NVTX range of their thread (cuda_host.by_range): nested ranges,
 * two threads whose chunks come in reverse order, one name in two domains (one range), names
 * defined only after the events (a PATHS chunk late in the trace), and a steady-state reading
 * whose window opens inside ranges pushed before it. */
int test_nvtx_host_by_range(void)
{
    char path[512];
    test_path(path, sizeof path, "nvtx_host_by_range");
    enum { N_OUTER = 11, N_INNER, N_DOMAIN, N_DATA };
    const uint32_t data_id[] = {N_DATA};
    const char *const data_name[] = {"/data/x.bin"};
    struct builder *b = open_trace(path, data_id, data_name, 1);
    /* thread 100: outer > inner */
    ev(b, 0, PUSH, 1000, 0, 0, 0, N_OUTER, 0, 0);
    ev(b, 0, SYNC, 2000, 100, 0, 7, 0, 0, 0);           /* outer, before the window */
    ev(b, 0, LAUNCH, 2200, 10, 0, 7, 0x1000, 1, 1);
    ev(b, 0, PUSH, 3000, 0, 0, 0, N_INNER, 0, 0);
    ev(b, 0, SYNC, 10000, 300, 0, 7, 0, 0, 0);          /* inner */
    ev(b, 0, LAUNCH, 10400, 10, 0, 7, 0x1000, 1, 1);
    ev(b, 0, POP, 11000, 0, 0, 0, 0, 0, 0);
    ev(b, 0, SYNC, 12000, 100, 0, 7, 0, 0, 0);          /* outer again */
    ev(b, 0, LAUNCH, 12200, 10, 0, 7, 0x1000, 1, 1);
    ev(b, 0, POP, 13000, 0, 0, 0, 0, 0, 0);
    ev(b, 0, SYNC, 14000, 70, 0, 7, 0, 0, 0);           /* in no range */
    ev(b, 0, LAUNCH, 14200, 10, 0, 7, 0x1000, 1, 1);
    /* thread 200: "inner" of another domain, pushed before the window */
    ev(b, 1, DPUSH, 500, 0, 0, N_DOMAIN, N_INNER, 0, 0);
    ev(b, 1, SYNC, 11500, 500, 0, 7, 0, 0, 0);          /* inner */
    ev(b, 1, LAUNCH, 12100, 10, 0, 7, 0x1000, 1, 1);
    ev(b, 1, DPOP, 13000, 0, 0, N_DOMAIN, 0, 0, 0);
    synth_events(b->s, 200, 0, b->ev[1], b->n[1]);
    synth_events(b->s, 100, 0, b->ev[0], b->n[0]);
    const uint32_t ids[] = {N_OUTER, N_INNER, N_DOMAIN};
    const char *const names[] = {"\001outer", "\001inner", "\001dom"};
    synth_paths(b->s, ids, names, 3);
    synth_clock(b->s, 20000, 20000, 1700000000000000000u + 20000);
    synth_end(b->s, 20000, 0, 0, 2);
    synth_close(b->s);
    free(b);

    struct wsl_run run;
    if (analyze(&run, path))
        return 1;
    const struct wsl_host_summary *h = &run.host_cuda;
    CHECK_EQ(wsl_host_blocks(h), 5);
    CHECK_EQ(h->range_count, 2);
    const struct wsl_host_range *outer = host_range(h, "outer"), *inner = host_range(h, "inner");
    CHECK(outer && inner);
    CHECK_EQ(outer->blocks, 2);
    CHECK_EQ(outer->blocked_ns, 200);
    CHECK_EQ(outer->lost_ns, 200);                      /* min(wait, gap to the next launch's end) */
    CHECK_EQ(inner->blocks, 2);
    CHECK_EQ(inner->blocked_ns, 800);
    CHECK_EQ(inner->lost_ns, 220);                      /* two gaps of 110 */
    wsl_run_free(&run);

    /* the steady state's reading, [9000, 16000]: the pushes before it still count */
    struct wsl_run st;
    wsl_run_init(&st);
    st.windowed = st.solo = true;
    st.window_start_ns = st.window_t0 = 9000;
    st.window_end_ns = st.window_t1 = 16000;
    char err[WSL_READER_ERRLEN];
    CHECKF(wsl_run_add_trace(&st, path, err, sizeof err) == 0, "%s: %s", path, err);
    wsl_run_model_finish(&st);
    h = &st.host_cuda;
    CHECK_EQ(wsl_host_blocks(h), 4);
    outer = host_range(h, "outer");
    inner = host_range(h, "inner");
    CHECK(outer && inner && h->range_count == 2);
    CHECK_EQ(outer->blocks, 1);
    CHECK_EQ(inner->blocks, 2);
    CHECK_EQ(inner->blocked_ns, 800);
    wsl_run_free(&st);
    return 0;
}

/* One run of traces, finished three ways: wsl_run_finish, which counts the NVTX step's
 * process-wide figures on the first reading (readings: how many traces it still read for them);
 * the same without that count (by_reading), where the steady state's reading counts them
 * (fold_readings: the traces it left to a reading of their own); and wsl_run_model_finish alone
 * without it, which reads each trace for them. The figures are the same. */
static int step_figures_three_ways(const char *const *paths, size_t n, bool record, size_t readings,
                                   size_t fold_readings, size_t first)
{
    struct wsl_run a, f, b;
    char err[WSL_READER_ERRLEN];
    wsl_run_init(&a);
    wsl_run_init(&f);
    wsl_run_init(&b);
    a.record = f.record = b.record = record;
    a.solo = f.solo = b.solo = true;
    f.nvtx_by_reading = b.nvtx_by_reading = true;
    for (size_t i = 0; i < n; i++) {
        CHECKF(wsl_run_add_trace(&a, paths[i], err, sizeof err) == 0, "%s: %s", paths[i], err);
        CHECKF(wsl_run_add_trace(&f, paths[i], err, sizeof err) == 0, "%s: %s", paths[i], err);
        CHECKF(wsl_run_add_trace(&b, paths[i], err, sizeof err) == 0, "%s: %s", paths[i], err);
    }
    wsl_run_finish(&a);
    wsl_run_finish(&f);
    wsl_run_model_finish(&b);
    CHECK(f.phases.steady_known);
    bool steady_read = f.phases.steady_wall_ns < f.wall_ns; /* the steady state was read again */
    CHECK(steady_read == (fold_readings == 0));
    CHECK(b.nvtx.step >= 0 && b.nvtx.step_process_known && b.nvtx.step_process_steps > 0);
    CHECK(b.nvtx.step_process.launches > 0 && b.nvtx.step_process.api_calls > 0);
    const struct wsl_run *r[2] = {&a, &f};
    for (int k = 0; k < 2; k++) {
        CHECK(r[k]->nvtx.step_process_known && r[k]->nvtx.step_process_steps == b.nvtx.step_process_steps);
        CHECK(!memcmp(&r[k]->nvtx.step_process, &b.nvtx.step_process, sizeof b.nvtx.step_process));
        CHECK(!r[k]->nvtx.pending_count);
    }
    CHECK_EQ(b.nvtx.step_count_readings, n);
    CHECK_EQ(f.nvtx.step_count_readings, fold_readings);
    CHECK_EQ(a.nvtx.step_count_readings, readings);
    CHECK_EQ(a.nvtx.step_count_first, first);
    CHECK(!f.nvtx.step_count_first && !b.nvtx.step_count_first);
    wsl_run_free(&a);
    wsl_run_free(&f);
    wsl_run_free(&b);
    return 0;
}

/* The step's process-wide figures counted on the first reading, and on the steady state's reading,
 * equal those of a reading of their own: the demo's native trace (a steady state shorter than the
 * run; the first reading leaves it, some of its counts not falling wholly inside or outside the
 * steps, and the steady state's reading counts it), and three ranks of a synthetic data-parallel
 * run (counted on the first reading; the steady state is the run: no second reading), recorded
 * (replayed from the store) and read from their files. */
int test_nvtx_step_figures_three_ways(void)
{
    const char *native = WSLSHIM_PAIR_NATIVE_TRACE;
    CHECK(step_figures_three_ways(&native, 1, false, 0, 0, 0) == 0);
    struct ddp_plan p = ddp_plan_default();
    p.ranks = 3;
    p.steps = 300; /* (2,700 GPU kernels a rank: the step tracking's array grows past 1,024 within a batch) */
    p.nvtx = true;
    p.rank_env = true;
    p.straggler = 1;
    p.delay_ns = 3000000;
    p.jitter_ns = 200000;
    char path[3][512];
    const char *paths[3];
    for (unsigned r = 0; r < p.ranks; r++) {
        char name[64];
        snprintf(name, sizeof name, "stepfig-rank%u.trace.zst", r);
        test_path(path[r], sizeof path[r], name);
        ddp_write_rank(path[r], &p, r);
        paths[r] = path[r];
    }
    CHECK(step_figures_three_ways(paths, 3, true, 0, 3, 3) == 0);
    CHECK(step_figures_three_ways(paths, 3, false, 0, 3, 3) == 0);
    return 0;
}

/* Five steps of thread 0 (a push at 10,000 + 10,000 k, one launch, the pop 4,000 later) and 200
 * launches of thread 1 in one run, every 250 from `first` (20 ticks each), the threads' chunks in
 * `order`: the step's process-wide figures counted by the step tracking equal those of a reading of
 * their own (each step: its own launch and 16 of thread 1), read with the reader's ops
 * (take_launch_run_ops) and without (take_launch_run). */
static int step_tracking_agrees(const char *name, uint64_t first, const unsigned order[3])
{
    char path[512];
    test_path(path, sizeof path, name);
    const uint32_t ids[] = {1};
    const char *const names[] = {"\001step"};
    struct builder *b = open_trace(path, ids, names, 1);
    for (unsigned k = 0; k < 5; k++) {
        uint64_t t = 10000 + k * 10000;
        ev(b, 0, PUSH, t, 0, 0, 0, 1, 0, 0);
        ev(b, 0, LAUNCH, t + 100, 10, 0, 7, 0x1000, 1, 1);
        ev(b, 0, POP, t + 4000, 0, 0, 0, 0, 0, 0);
    }
    for (unsigned i = 0; i < 200; i++)
        ev(b, 1, LAUNCH, first + 250 * (uint64_t)i, 20, 0, 7, 0x2000, 1, 1);
    close_trace(b, order, 70000);
    for (int without_ops = 0; without_ops < 2; without_ops++) {
        wsl_take_events_without_ops = without_ops;
        struct wsl_run a, r;
        char err[WSL_READER_ERRLEN];
        wsl_run_init(&a);
        wsl_run_init(&r);
        r.nvtx_by_reading = true;
        int got = wsl_run_add_trace(&a, path, err, sizeof err) | wsl_run_add_trace(&r, path, err, sizeof err);
        if (got == 0) {
            wsl_run_finish(&a);
            wsl_run_model_finish(&r);
        }
        wsl_take_events_without_ops = false;
        CHECKF(got == 0, "%s: %s", path, err);
        fprintf(stderr, "%s, read %s the reader's ops: %llu and %llu launches in the steps\n", name,
                without_ops ? "without" : "with", (unsigned long long)a.nvtx.step_process.launches,
                (unsigned long long)r.nvtx.step_process.launches);
        CHECK(a.nvtx.step_process_known && r.nvtx.step_process_known);
        CHECK_EQ(r.nvtx.step_process_steps, 5);
        CHECK_EQ(r.nvtx.step_process.launches, 5 + 5 * 16);
        CHECK_EQ(a.nvtx.step_process_steps, 5);
        CHECK_EQ(a.nvtx.step_process.launches, r.nvtx.step_process.launches);
        CHECK(!memcmp(&a.nvtx.step_process, &r.nvtx.step_process, sizeof r.nvtx.step_process));
        wsl_run_free(&a);
        wsl_run_free(&r);
    }
    return 0;
}

/* The step tracking's segments (nvtx_step.c): a thread without ranges whose launches come in one
 * run (10,100 to 59,850) through the steps of another thread. Its segment, from its first launch to
 * its last, straddles the steps, so that the first reading's figures are not used (the segment's
 * span taken from the run's last launch, not its first alone, or every launch would count inside
 * the first step). */
int test_nvtx_step_tracking_launch_run(void)
{
    static const unsigned order[3] = {0, 1, 2};
    return step_tracking_agrees("nvtx_step_launch_run", 10100, order);
}

/* The step tracking's start (wsl_nvtx_track_batch): what came before the trace's first push is
 * known by its latest start. Here the other thread's run (5,100 to 54,850) is read before the first
 * push (its chunk comes first) and reaches into every step: the run's latest start, not its
 * stretch's first, must stand for it, or the tracking takes it all for calls before the steps and
 * counts none of it in a step. */
int test_nvtx_step_tracking_before_push(void)
{
    static const unsigned order[3] = {1, 0, 2};
    return step_tracking_agrees("nvtx_step_before_push", 5100, order);
}
