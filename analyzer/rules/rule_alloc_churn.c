/*
 * alloc_churn: the program allocates and frees device (or pinned host)
 * memory through the driver over and over: each cuMemAlloc/cuMemFree is a
 * driver call of tens of microseconds or more (75-137 us for 1-64 MiB on an
 * H200, docs/facts.md), and cuMemFree waits for the device. The time lost is
 * what a caching allocator would have saved: allocations of a size that an
 * earlier free had given back, and those frees.
 */
#include <inttypes.h>
#include <stdio.h>

#include "analysis.h"
#include "rules.h"
#include "util.h"

#define MIN_REALLOCS 100u
#define TOP_SIZES 4

static bool is_alloc_api(unsigned c)
{
    return c == WSL_CAT_ALLOC || c == WSL_CAT_FREE || c == WSL_CAT_HOST_ALLOC || c == WSL_CAT_HOST_FREE;
}

static bool evaluate(const struct wsl_run *run, struct wsl_finding *f)
{
    /* needs: the memory replay's churn figures and size histogram, the allocation APIs' host time */
    const struct wsl_mem_summary *m = &run->mem;
    /* fires: at least MIN_REALLOCS re-allocations costing at least 1% of wall time */
    if (m->churn_reallocs < MIN_REALLOCS || (double)m->churn_ns < WSL_RULE_MIN_SHARE * (double)run->wall_ns)
        return false;
    f->time_lost_ns = m->churn_ns;

    uint64_t calls = 0, ns = 0, allocs = 0, frees = 0;
    char line[256], t[32];
    for (size_t i = 0; i < run->api_count; i++) {
        const struct wsl_api_stats *a = &run->apis[i];
        if (!a->ns.count || !is_alloc_api(a->category))
            continue;
        calls += a->ns.count;
        ns += a->ns.sum;
        if (a->category == WSL_CAT_ALLOC || a->category == WSL_CAT_HOST_ALLOC)
            allocs += a->ns.count;
        else
            frees += a->ns.count;
        char mean[32];
        snprintf(line, sizeof line, "%s: %" PRIu64 " calls, %s, mean %s", a->name, a->ns.count,
                 wsl_format_ns(t, sizeof t, a->ns.sum), wsl_format_ns(mean, sizeof mean, wsl_api_mean_ns(a)));
        wsl_evidence_list_add(f, "apis", line);
    }
    double seconds = (double)run->wall_ns / 1e9;
    double per_s = seconds > 0 ? (double)calls / seconds : 0;
    wsl_evidence_u64(f, "allocation_calls", allocs);
    wsl_evidence_u64(f, "free_calls", frees);
    wsl_evidence_number(f, "calls_per_s", per_s);
    wsl_evidence_u64(f, "host_ns", ns);
    wsl_evidence_u64(f, "reallocations", m->churn_reallocs);
    wsl_evidence_u64(f, "reallocation_ns", m->churn_ns);
    wsl_evidence_u64(f, "stream_ordered_allocations", m->async_allocations);
    bool shown[WSL_MEM_SIZE_BUCKETS] = {false};
    for (unsigned n = 0; n < TOP_SIZES; n++) {      /* the most common sizes */
        unsigned best = WSL_MEM_SIZE_BUCKETS;
        for (unsigned b = 0; b < WSL_MEM_SIZE_BUCKETS; b++)
            if (!shown[b] && m->size_hist[b] && (best == WSL_MEM_SIZE_BUCKETS || m->size_hist[b] > m->size_hist[best]))
                best = b;
        if (best == WSL_MEM_SIZE_BUCKETS)
            break;
        shown[best] = true;
        snprintf(line, sizeof line, "%s: %" PRIu64, wsl_mem_bucket_name(best), m->size_hist[best]);
        wsl_evidence_list_add(f, "sizes", line);
    }

    char a[32], b[32];
    f->summary = xasprintf("%" PRIu64 " allocation and free calls through the driver (%.0f/s, %s of host time); %"
                           PRIu64 " allocations asked again for a size freed before, which a caching allocator "
                           "serves without the driver: %s",
                           calls, per_s, wsl_format_ns(a, sizeof a, ns), m->churn_reallocs,
                           wsl_format_ns(b, sizeof b, m->churn_ns));
    f->advice = xasprintf(
        "Let memory be reused instead of returned: with PyTorch, unset PYTORCH_NO_CUDA_MEMORY_CACHING (the caching "
        "allocator keeps freed blocks) and do not call torch.cuda.empty_cache() inside the loop; CuPy's memory pool "
        "does the same (keep it on). In your own CUDA code allocate buffers once outside the loop, or use "
        "stream-ordered allocation (cuMemAllocAsync/cuMemFreeAsync, cudaMallocAsync) from a memory pool with a "
        "release threshold (cuMemPoolSetAttribute CU_MEMPOOL_ATTR_RELEASE_THRESHOLD). Pinned host buffers "
        "(cuMemHostAlloc) cost even more: allocate them once and reuse them.");
    return true;
}

const struct wsl_rule wsl_rule_alloc_churn = {
    .id = "alloc_churn",
    .order = 70,
    .needs = "mem (churn: re-allocations of freed sizes, size histogram), apis (allocation and free calls)",
    .how_computed =
        "Replays each process's cuMemAlloc/cuMemAllocPitch/cuMemFree and cuMemHostAlloc/cuMemAllocHost/"
        "cuMemFreeHost in time order, remembering the sizes freed. An allocation of a size (and kind) that an "
        "earlier free gave back and no allocation took again is a re-allocation: a caching allocator would have "
        "served it from its cache. Time lost = host time of the re-allocations plus that of the frees they "
        "reused (their mean per size). Stream-ordered allocations (cuMemAllocAsync) are not counted. Fires with "
        "at least 100 re-allocations and time lost of at least 1% of wall time.",
    .fix = "reuse memory: keep PyTorch's caching allocator on (unset PYTORCH_NO_CUDA_MEMORY_CACHING), or pools",
    .cuda_host_time = true,
    .evaluate = evaluate,
};
