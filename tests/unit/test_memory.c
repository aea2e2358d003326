/* Memory: the allocation replay (exact peaks on synthetic traces, threads
 * merged in time order, unknown frees, failures) and the three memory rules. */
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "rules.h"
#include "mem_scenarios.h"
#include "test_findings.h"
#include "unit_test.h"

static int analyze(struct wsl_run *run, const char *const *paths, size_t n)
{
    wsl_run_init(run);
    for (size_t i = 0; i < n; i++) {
        char err[WSL_READER_ERRLEN];
        CHECKF(wsl_run_add_trace(run, paths[i], err, sizeof err) == 0, "%s: %s", paths[i], err);
    }
    wsl_run_finish(run);
    return 0;
}

static int analyze_scenario(struct wsl_run *run, const char *scenario)
{
    char path[512];
    test_path(path, sizeof path, scenario);
    CHECK(mem_scenario_write(path, scenario));
    const char *paths[] = {path};
    return analyze(run, paths, 1);
}

#define CHECK_EQ(got, want)                                                                                 \
    CHECKF((uint64_t)(got) == (uint64_t)(want), "%s = %llu, expected %llu", #got, (unsigned long long)(got), \
           (unsigned long long)(want))

int test_mem_size_buckets(void)
{
    CHECK_EQ(wsl_mem_size_bucket(0), 0);
    CHECK_EQ(wsl_mem_size_bucket(1024), 0);
    CHECK_EQ(wsl_mem_size_bucket(2047), 0);
    CHECK_EQ(wsl_mem_size_bucket(2048), 1);
    CHECK_EQ(wsl_mem_size_bucket(4095), 1);
    CHECK_EQ(wsl_mem_size_bucket(MEM_MIB), 10);
    CHECK_EQ(wsl_mem_size_bucket(16 * MEM_GIB - 1), 23);
    CHECK_EQ(wsl_mem_size_bucket(16 * MEM_GIB), 24);
    CHECK_EQ(wsl_mem_size_bucket(UINT64_MAX), 24);
    for (unsigned b = 1; b < WSL_MEM_SIZE_BUCKETS; b++) {
        CHECK_EQ(wsl_mem_size_bucket(wsl_mem_bucket_min(b)), b);
        CHECK_EQ(wsl_mem_size_bucket(wsl_mem_bucket_min(b) - 1), b - 1);
    }
    CHECK(strcmp(wsl_mem_bucket_name(0), "<2K") == 0 && strcmp(wsl_mem_bucket_name(10), "1M-2M") == 0);
    CHECK(strcmp(wsl_mem_bucket_name(24), "16G+") == 0 && strcmp(wsl_mem_bucket_name(23), "8G-16G") == 0);
    CHECK(wsl_mem_op_of(WSL_CAT_ALLOC, "cuMemAllocFromPoolAsync") == WSL_MEM_ALLOC_ASYNC);
    CHECK(wsl_mem_op_of(WSL_CAT_ALLOC, "cuMemAlloc") == WSL_MEM_ALLOC);
    CHECK(wsl_mem_op_of(WSL_CAT_FREE, "cuMemFreeAsync") == WSL_MEM_FREE_ASYNC);
    CHECK(wsl_mem_op_of(WSL_CAT_LAUNCH, "cuLaunchKernel") == WSL_MEM_NONE);
    return 0;
}

/* Every figure of the mixed scenario (mem_scenarios.c), exact. Thread 1's chunk comes first. */
int test_mem_peak_exact(void)
{
    struct wsl_run run;
    if (analyze_scenario(&run, "mixed"))
        return 1;
    CHECK(run.proc_count == 1);
    const struct wsl_mem_summary *m = &run.procs[0].mem;
    CHECK(m->any);
    CHECK_EQ(m->peak_bytes, 1274 * MEM_MIB);
    CHECK_EQ(m->peak_at_ns, MEM_START_NS + 4100);
    CHECK_EQ(m->device_total_bytes, 80 * MEM_GIB);
    CHECK_EQ(m->allocations, 5);
    CHECK_EQ(m->allocated_bytes, 1384 * MEM_MIB);
    CHECK_EQ(m->frees, 5);
    CHECK_EQ(m->unknown_frees, 1);
    CHECK_EQ(m->failed_frees, 0);
    CHECK_EQ(m->live_at_exit_bytes, 50 * MEM_MIB);
    CHECK_EQ(m->live_at_exit_allocations, 1);
    CHECK_EQ(m->failed_allocations, 2);
    CHECK_EQ(m->oom_failures, 2);
    CHECK_EQ(m->largest_failed_bytes, 96 * MEM_GIB);
    CHECK_EQ(m->failed_ns, 10000);
    CHECK_EQ(m->async_allocations, 1);
    CHECK_EQ(m->async_bytes, 10 * MEM_MIB);
    CHECK_EQ(m->async_frees, 1);
    CHECK_EQ(m->size_hist[16], 1); /* 100 MiB */
    CHECK_EQ(m->size_hist[17], 1); /* 200 MiB */
    CHECK_EQ(m->size_hist[15], 1); /* 50 MiB */
    CHECK_EQ(m->size_hist[20], 1); /* 1 GiB */
    CHECK_EQ(m->size_hist[13], 1); /* 10 MiB */
    CHECK_EQ(m->pinned.allocations, 2);
    CHECK_EQ(m->pinned.bytes, 600 * MEM_MIB);
    CHECK_EQ(m->pinned.peak_bytes, 600 * MEM_MIB);
    CHECK_EQ(m->pinned.frees, 1);
    CHECK_EQ(m->pinned.live_bytes, 300 * MEM_MIB);
    CHECK_EQ(m->registered.allocations, 1);
    CHECK_EQ(m->registered.peak_bytes, 64 * MEM_MIB);
    CHECK_EQ(m->registered.live_bytes, 0);
    CHECK_EQ(m->page_locked_peak_bytes, 600 * MEM_MIB);
    CHECK_EQ(m->managed.allocations, 1);
    CHECK_EQ(m->managed.bytes, 2 * MEM_MIB);
    CHECK_EQ(m->managed.peak_bytes, 2 * MEM_MIB);
    CHECK_EQ(m->late_events + m->untracked_allocations + m->reused_pointers, 0);
    /* the run: one process */
    CHECK_EQ(run.mem.peak_bytes, 1274 * MEM_MIB);
    CHECK_EQ(run.mem.device_total_bytes, 80 * MEM_GIB);
    CHECK(run.warning_count == 0);
    /* vram_headroom: OOM -> high, time lost = the failed calls; pinned 600 MiB on WSL2; managed on WSL2 */
    const struct wsl_finding *v = finding(&run, "vram_headroom"), *p = finding(&run, "pinned_memory"),
                             *g = finding(&run, "managed_memory");
    CHECK(v && p && g && run.finding_count == 3);
    CHECK(v->severity == WSL_SEVERITY_HIGH && v->time_lost_ns == 10000);
    CHECK_EQ(evidence(v, "oom_failures")->u64, 2);
    CHECK_EQ(evidence(v, "largest_failed_bytes")->u64, 96 * MEM_GIB);
    CHECKF(strstr(v->summary, "CUDA_ERROR_OUT_OF_MEMORY"), "%s", v->summary);
    CHECK(strstr(v->advice, "expandable_segments:True") && strstr(v->advice, "0.3-1.3 GiB") &&
          strstr(v->advice, "empty_cache") && strstr(v->advice, "checkpoint") && strstr(v->advice, "mixed precision"));
    CHECK(p->severity == WSL_SEVERITY_LOW && p->time_lost_ns == 0);
    CHECK_EQ(evidence(p, "page_locked_peak_bytes")->u64, 600 * MEM_MIB);
    CHECK(strstr(p->advice, "num_workers") && strstr(p->advice, "prefetch_factor"));
    CHECK(g->severity == WSL_SEVERITY_LOW && g->time_lost_ns == 0);
    CHECK_EQ(evidence(g, "managed_allocations")->u64, 1);
    CHECK(run.findings[0].id == v->id); /* the one with time lost comes first */
    wsl_run_free(&run);
    return 0;
}

/* Thread 1's chunk (a reuse of X after thread 0 freed it) arrives before thread 0's:
 * the window puts them back in time order. With a window of 1 they are applied late. */
static void write_reuse(const char *path)
{
    const uint64_t X = 0x7f0000000000u, Y = 0x7f0100000000u;
    struct mem_builder *b = mb_open(path, 4321, WSL_PROC_WSL2, 80 * MEM_GIB);
    mb_call(b, 0, 100, 10, "cuMemAlloc_v2", 0, X, MEM_GIB);
    mb_call(b, 0, 200, 10, "cuMemFree_v2", 0, X, 0);
    mb_call(b, 1, 250, 10, "cuMemAlloc_v2", 0, X, 2 * MEM_GIB);
    mb_call(b, 1, 260, 10, "cuMemAlloc_v2", 0, Y, MEM_MIB);
    const unsigned order[] = {1, 0, 2, 3};
    mb_close(b, order);
}

int test_mem_threads_interleaved(void)
{
    char path[512];
    test_path(path, sizeof path, "reuse.trace.zst");
    write_reuse(path);
    const char *paths[] = {path};
    struct wsl_run run;
    if (analyze(&run, paths, 1))
        return 1;
    const struct wsl_mem_summary *m = &run.procs[0].mem;
    CHECK_EQ(m->peak_bytes, 2 * MEM_GIB + MEM_MIB);
    CHECK_EQ(m->peak_at_ns, MEM_START_NS + 270);
    CHECK_EQ(m->live_at_exit_bytes, 2 * MEM_GIB + MEM_MIB);
    CHECK_EQ(m->late_events + m->reused_pointers + m->unknown_frees, 0);
    CHECK(run.warning_count == 0);
    wsl_run_free(&run);

    wsl_mem_set_window(1);
    int rc = analyze(&run, paths, 1);
    wsl_mem_set_window(0);
    if (rc)
        return 1;
    m = &run.procs[0].mem;
    CHECK_EQ(m->late_events, 2);
    CHECK_EQ(m->reused_pointers, 1);
    CHECK_EQ(m->live_at_exit_bytes, MEM_MIB); /* arrival order: the free took the reused X */
    CHECK(run.warning_count == 1 && strstr(run.warnings[0], "replay window"));
    wsl_run_free(&run);
    return 0;
}

/* Frees of pointers never seen allocated are counted; failed frees leave the allocation live;
 * cuMemFree of a managed pointer frees the managed one. */
int test_mem_unknown_frees(void)
{
    char path[512];
    test_path(path, sizeof path, "unknown.trace.zst");
    struct mem_builder *b = mb_open(path, 99, 0, 0);
    mb_call(b, 0, 100, 10, "cuMemFree_v2", 0, 0x7f0000001000u, 0);
    mb_call(b, 0, 200, 10, "cuMemFreeAsync", 0, 0x7f0000002000u, 0);
    mb_call(b, 0, 300, 10, "cuMemAlloc_v2", 0, 0x7f0000003000u, 4096);
    mb_call(b, 0, 400, 10, "cuMemFree_v2", 1, 0x7f0000003000u, 0);   /* fails: still live */
    mb_call(b, 0, 500, 10, "cuMemAllocManaged", 0, 0x7f0000004000u, 8192);
    mb_call(b, 0, 600, 10, "cuMemFree_v2", 0, 0x7f0000004000u, 0);
    mb_call(b, 0, 700, 10, "cuMemFreeHost", 0, 0x1000u, 0);
    mb_call(b, 0, 800, 10, "cuMemHostUnregister", 0, 0x2000u, 0);
    mb_call(b, 0, 900, 10, "cuMemAlloc_v2", 1, 0, 1000);              /* fails, not OOM */
    mb_close(b, NULL);
    const char *paths[] = {path};
    struct wsl_run run;
    if (analyze(&run, paths, 1))
        return 1;
    const struct wsl_mem_summary *m = &run.procs[0].mem;
    CHECK_EQ(m->frees, 2);
    CHECK_EQ(m->unknown_frees, 2);
    CHECK_EQ(m->async_frees, 1);
    CHECK_EQ(m->failed_frees, 1);
    CHECK_EQ(m->peak_bytes, 4096);
    CHECK_EQ(m->live_at_exit_bytes, 4096);
    CHECK_EQ(m->managed.frees, 1);
    CHECK_EQ(m->managed.live_bytes, 0);
    CHECK_EQ(m->managed.peak_bytes, 8192);
    CHECK_EQ(m->pinned.unknown_frees, 1);
    CHECK_EQ(m->registered.unknown_frees, 1);
    CHECK_EQ(m->failed_allocations, 1);
    CHECK_EQ(m->oom_failures, 0);
    CHECK_EQ(m->device_total_bytes, 0);
    /* no DRIVER chunk, no OOM, native: no memory finding */
    CHECK(run.finding_count == 0);
    wsl_run_free(&run);
    return 0;
}

/* Random allocations and frees against a plain array model: the live table
 * (backward-shift deletion) and the peak stay exact through many collisions. */
int test_mem_live_table(void)
{
    enum { SLOTS = 3000, CALLS = 60000 };
    uint64_t *size = calloc(SLOTS, sizeof *size);
    CHECK(size);
    char path[512];
    test_path(path, sizeof path, "random.trace.zst");
    struct mem_builder *b = mb_open(path, 12, 0, 0);
    rng_seed(77);
    uint64_t live = 0, peak = 0, allocs = 0, frees = 0;
    for (uint64_t i = 0; i < CALLS; i++) {
        unsigned k = (unsigned)rng_below(SLOTS);
        uint64_t ptr = 0x7f0000000000u + (uint64_t)k * 0x200000u;
        if (size[k]) {
            mb_call(b, (unsigned)(i % 3), i * 100, 10, "cuMemFree_v2", 0, ptr, 0);
            live -= size[k];
            size[k] = 0;
            frees++;
        } else {
            uint64_t bytes = 1 + rng_below(64 * MEM_MIB);
            mb_call(b, (unsigned)(i % 3), i * 100, 10, "cuMemAlloc_v2", 0, ptr, bytes);
            size[k] = bytes;
            live += bytes;
            allocs++;
            if (live > peak)
                peak = live;
        }
    }
    mb_close(b, NULL);
    free(size);
    const char *paths[] = {path};
    struct wsl_run run;
    if (analyze(&run, paths, 1))
        return 1;
    const struct wsl_mem_summary *m = &run.procs[0].mem;
    CHECK_EQ(m->allocations, allocs);
    CHECK_EQ(m->frees, frees);
    CHECK_EQ(m->unknown_frees, 0);
    CHECK_EQ(m->reused_pointers, 0);
    CHECK_EQ(m->peak_bytes, peak);
    CHECK_EQ(m->live_at_exit_bytes, live);
    wsl_run_free(&run);
    return 0;
}

int test_rule_vram_headroom_low(void)
{
    struct wsl_run run;
    if (analyze_scenario(&run, "peak90"))
        return 1;
    const struct wsl_finding *f = finding(&run, "vram_headroom");
    CHECK(f && run.finding_count == 1);
    CHECK(f->severity == WSL_SEVERITY_LOW && f->time_lost_ns == 0);
    CHECK_EQ(evidence(f, "peak_device_bytes")->u64, (uint64_t)(0.90 * 80 * MEM_GIB));
    CHECK_EQ(evidence(f, "device_total_bytes")->u64, 80 * MEM_GIB);
    double share = evidence(f, "peak_share_of_device")->number;
    CHECKF(share > 0.8999 && share < 0.9001, "share %f", share);
    CHECKF(strstr(f->summary, "90%"), "%s", f->summary);
    wsl_run_free(&run);

    if (analyze_scenario(&run, "peak97"))
        return 1;
    f = finding(&run, "vram_headroom");
    CHECK(f && f->severity == WSL_SEVERITY_MEDIUM && f->time_lost_ns == 0);
    wsl_run_free(&run);
    return 0;
}

int test_rule_vram_headroom_silent(void)
{
    struct wsl_run run;
    if (analyze_scenario(&run, "peak50"))
        return 1;
    CHECKF(run.finding_count == 0, "%zu findings, first %s", run.finding_count,
           run.finding_count ? run.findings[0].id : "");
    CHECK_EQ(run.mem.peak_bytes, 40 * MEM_GIB);
    wsl_run_free(&run);
    return 0;
}

/* 600 MiB pinned on WSL2 fires (mixed); the same on native Linux does not, nor does managed memory. */
int test_rule_pinned_memory(void)
{
    struct wsl_run run;
    if (analyze_scenario(&run, "native_pinned"))
        return 1;
    CHECK_EQ(run.mem.pinned.peak_bytes, 600 * MEM_MIB);
    CHECK_EQ(run.mem.managed.allocations, 1);
    CHECKF(run.finding_count == 0, "%zu findings, first %s", run.finding_count,
           run.finding_count ? run.findings[0].id : "");
    wsl_run_free(&run);

    if (analyze_scenario(&run, "mixed"))
        return 1;
    const struct wsl_finding *f = finding(&run, "pinned_memory");
    CHECK(f && f->severity == WSL_SEVERITY_LOW);
    CHECK_EQ(evidence(f, "pid")->u64, 5151);
    CHECK_EQ(evidence(f, "threshold_bytes")->u64, 512 * MEM_MIB);
    CHECK(f->how_computed && *f->how_computed);
    wsl_run_free(&run);
    return 0;
}

/* Two processes: the run's peak is the larger one; counts add up. */
int test_mem_two_processes(void)
{
    char a[512], b[512];
    test_path(a, sizeof a, "two_a");
    test_path(b, sizeof b, "two_b");
    CHECK(mem_scenario_write(a, "peak50") && mem_scenario_write(b, "mixed"));
    const char *paths[] = {a, b};
    struct wsl_run run;
    if (analyze(&run, paths, 2))
        return 1;
    CHECK_EQ(run.mem.peak_bytes, 40 * MEM_GIB);
    CHECK_EQ(run.mem.allocations, 6);
    CHECK_EQ(run.mem.oom_failures, 2);
    CHECK_EQ(run.mem.pinned.peak_bytes, 600 * MEM_MIB);
    const struct wsl_finding *v = finding(&run, "vram_headroom");
    CHECK(v && v->severity == WSL_SEVERITY_HIGH);
    wsl_run_free(&run);
    return 0;
}
