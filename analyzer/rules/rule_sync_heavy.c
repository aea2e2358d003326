/*
 * sync_heavy: the program waits for the GPU often: cuStreamSynchronize,
 * cuCtxSynchronize, cuEventSynchronize, cuStreamQuery polling, synchronous
 * copies and copies to host memory (what .item(), .cpu(), .tolist() and
 * printing a tensor do). Each wait drains the GPU's queue: until the thread
 * submits again, the GPU idles. The time lost is the smaller of the wait and
 * that refill gap, per group of waits (host_analysis.h).
 */
#include <inttypes.h>
#include <stdio.h>

#include "analysis.h"
#include "rules.h"
#include "util.h"

#define MIN_BLOCKS 50u                  /* waits before the rule can fire */
#define TOP_RANGES 5

static bool is_sync_api(unsigned c)
{
    return c == WSL_CAT_SYNC_STREAM || c == WSL_CAT_SYNC_CTX || c == WSL_CAT_SYNC_EVENT || c == WSL_CAT_QUERY ||
           c == WSL_CAT_COPY_ANY || c == WSL_CAT_COPY_ANY_ASYNC || c == WSL_CAT_COPY_HTOD || c == WSL_CAT_COPY_DTOH ||
           c == WSL_CAT_COPY_DTOH_ASYNC;
}

static bool evaluate(const struct wsl_run *run, struct wsl_finding *f)
{
    /* needs: the run's blocking points and their charges, the sync APIs' host time */
    const struct wsl_host_summary *h = &run->host_cuda;
    uint64_t blocks = wsl_host_blocks(h), blocked = wsl_host_blocked_ns(h), lost = wsl_host_block_lost_ns(h);
    /* fires: at least MIN_BLOCKS waits costing at least 1% of wall time */
    if (blocks < MIN_BLOCKS || (double)lost < WSL_RULE_MIN_SHARE * (double)run->wall_ns)
        return false;
    f->time_lost_ns = lost;

    double seconds = run->wall_ns ? (double)run->wall_ns / 1e9 : 0;
    double per_s = seconds > 0 ? (double)blocks / seconds : 0;
    wsl_evidence_u64(f, "waits", blocks);
    wsl_evidence_number(f, "waits_per_s", per_s);
    for (unsigned k = 0; k < WSL_BLOCK_KINDS; k++)
        wsl_evidence_u64(f, wsl_block_kind_name((enum wsl_block_kind)k), h->blocks[k]);
    wsl_evidence_u64(f, "blocked_ns", blocked);
    wsl_evidence_u64(f, "blocking_copy_ns", h->blocked_ns[WSL_BLOCK_COPY]);
    wsl_evidence_u64(f, "queries", h->polls);
    wsl_evidence_u64(f, "queries_not_ready", h->polls_not_ready);
    wsl_evidence_u64(f, "waits_without_later_submission", h->unresolved_blocks);
    char total[32], line[256];
    for (size_t i = 0; i < run->api_count; i++) {   /* the API mix, by host time */
        const struct wsl_api_stats *a = &run->apis[i];
        if (!a->ns.count || !is_sync_api(a->category))
            continue;
        snprintf(line, sizeof line, "%s: %" PRIu64 " calls, %s", a->name, a->ns.count,
                 wsl_format_ns(total, sizeof total, a->ns.sum));
        wsl_evidence_list_add(f, "apis", line);
    }
    /* the NVTX hook: waits per range, most time lost first */
    bool shown[WSL_HOST_MAX_RANGES] = {false};
    for (size_t n = 0; n < TOP_RANGES && n < h->range_count; n++) {
        size_t best = SIZE_MAX;
        for (size_t i = 0; i < h->range_count && i < WSL_HOST_MAX_RANGES; i++)
            if (!shown[i] && (best == SIZE_MAX || h->ranges[i].lost_ns > h->ranges[best].lost_ns))
                best = i;
        if (best == SIZE_MAX)
            break;
        shown[best] = true;
        char b[32], l[32];
        snprintf(line, sizeof line, "%s: %" PRIu64 " waits, %s blocked, %s lost", h->ranges[best].name,
                 h->ranges[best].blocks, wsl_format_ns(b, sizeof b, h->ranges[best].blocked_ns),
                 wsl_format_ns(l, sizeof l, h->ranges[best].lost_ns));
        wsl_evidence_list_add(f, "by_range", line);
    }

    char b[32], l[32];
    f->summary = xasprintf("The host waited for the GPU %" PRIu64 " times (%.0f/s): %" PRIu64 " stream, %" PRIu64
                           " context and %" PRIu64 " event synchronizations, %" PRIu64 " query polls, %" PRIu64
                           " blocking copies; %s blocked, and the GPU sat idle for up to %s after them before "
                           "the next submission",
                           blocks, per_s, h->blocks[WSL_BLOCK_STREAM_SYNC], h->blocks[WSL_BLOCK_CTX_SYNC],
                           h->blocks[WSL_BLOCK_EVENT_SYNC], h->blocks[WSL_BLOCK_POLL], h->blocks[WSL_BLOCK_COPY],
                           wsl_format_ns(b, sizeof b, blocked), wsl_format_ns(l, sizeof l, lost));
    f->advice = xasprintf(
        "Keep the training loop free of host reads of GPU values: no loss.item(), tensor.cpu(), .tolist(), "
        "print(tensor) or Python `if` on a CUDA tensor every step. Accumulate metrics on the GPU "
        "(running_loss += loss.detach()) and read them once every N steps; copy results with "
        ".to('cpu', non_blocking=True) into pinned memory and wait on a CUDA event (torch.cuda.Event.record(), "
        ".synchronize() later) instead of torch.cuda.synchronize(); drop per-step torch.cuda.synchronize() "
        "calls outside timing code. Each wait costs a round trip, more under WSL2 where synchronizations "
        "cross to the Windows host.");
    return true;
}

const struct wsl_rule wsl_rule_sync_heavy = {
    .id = "sync_heavy",
    .order = 60,
    .needs = "host_cuda (blocking points, their sync charge), apis (sync and copy APIs)",
    .how_computed =
        "Waits: cuStreamSynchronize, cuCtxSynchronize, cuEventSynchronize, a cuStreamQuery poll (from the first "
        "CUDA_ERROR_NOT_READY to the query that saw the work done), every synchronous cuMemcpy/cuMemcpyHtoD/"
        "cuMemcpyDtoH and every copy to host memory (cuMemcpyDtoHAsync, and cuMemcpyAsync unless its pointers "
        "show it went to the GPU). After a wait the GPU has "
        "no work from that thread until it submits again (a launch, graph launch, copy or memset). For each group "
        "of consecutive waits on a thread, time lost = min(host time of the waits, time from the end of the "
        "first one to the end of the thread's next submission); waits with no later submission count 0. Fires "
        "with at least 50 waits and time lost of at least 1% of wall time.",
    .fix = "read GPU values (loss.item(), .cpu(), print) once every N steps, not every step; wait on events",
    .cuda_host_time = true,
    .evaluate = evaluate,
};
