/*
 * small_transfers: many copies of a few bytes or kilobytes each. A copy's
 * host cost is mostly per call (a submission, often a wait), not per byte,
 * so a thousand 4 KiB copies cost about a thousand times one 4 MiB copy.
 * The time lost is what coalescing them into WSL_HOST_SMALL_COPY-byte copies
 * would save of their host time (after the sync and pageable charges).
 */
#include <inttypes.h>
#include <stdio.h>

#include "analysis.h"
#include "rules.h"
#include "util.h"

#define MIN_SMALL_COPIES 1000u

static bool evaluate(const struct wsl_run *run, struct wsl_finding *f)
{
    /* needs: the run's copies by size (host_analysis) */
    const struct wsl_host_summary *h = &run->host_cuda;
    if (h->small_copies < MIN_SMALL_COPIES)
        return false;
    uint64_t batches = (h->small_bytes + WSL_HOST_SMALL_COPY - 1) / WSL_HOST_SMALL_COPY;
    if (batches == 0)
        batches = 1;
    double keep = batches < h->small_copies ? (double)batches / (double)h->small_copies : 1.0;
    /* per copy, its whole cost to the program: the gap from one small copy to the next on its thread
     * (the call and the framework's work around it: a tensor made, a Python call), where they come in
     * runs; otherwise its host time. Less what sync_heavy and pageable_transfers charged of the calls. */
    double per_copy = (double)h->small_left_ns / (double)h->small_copies;
    if (h->small_gaps) {
        double charged = (double)(h->small_ns - h->small_left_ns) / (double)h->small_copies;
        double gap = (double)h->small_gap_ns / (double)h->small_gaps - charged;
        if (gap > per_copy)
            per_copy = gap;
    }
    uint64_t lost = (uint64_t)(per_copy * (double)h->small_copies * (1.0 - keep));
    /* fires: at least MIN_SMALL_COPIES small copies, time lost at least 1% of wall time */
    if ((double)lost < WSL_RULE_MIN_SHARE * (double)run->wall_ns)
        return false;
    f->time_lost_ns = lost;

    double seconds = (double)run->wall_ns / 1e9;
    double mean_bytes = (double)h->small_bytes / (double)h->small_copies;
    double mean_ns = (double)h->small_ns / (double)h->small_copies;
    double small_bw = h->small_ns ? (double)h->small_bytes / ((double)h->small_ns / 1e9) : 0;
    double large_bw = h->large_ns ? (double)h->large_bytes / ((double)h->large_ns / 1e9) : 0;
    wsl_evidence_u64(f, "threshold_bytes", WSL_HOST_SMALL_COPY);
    wsl_evidence_u64(f, "small_copies", h->small_copies);
    wsl_evidence_u64(f, "copies", h->copies);
    wsl_evidence_number(f, "small_per_s", seconds > 0 ? (double)h->small_copies / seconds : 0);
    wsl_evidence_u64(f, "small_bytes", h->small_bytes);
    wsl_evidence_u64(f, "small_ns", h->small_ns);
    wsl_evidence_number(f, "mean_bytes", mean_bytes);
    wsl_evidence_number(f, "mean_ns_per_copy", mean_ns);
    wsl_evidence_number(f, "small_bytes_per_s", small_bw);
    wsl_evidence_number(f, "large_bytes_per_s", large_bw);   /* copies of 1 MiB or more; 0 when none */
    wsl_evidence_u64(f, "coalesced_copies", batches);
    wsl_evidence_u64(f, "copies_in_runs", h->small_gaps);
    wsl_evidence_number(f, "gap_per_copy_ns", h->small_gaps ? (double)h->small_gap_ns / (double)h->small_gaps : 0);

    char b[32], t[32], m[32];
    f->summary = xasprintf("%" PRIu64 " copies below %u KiB (%" PRIu64 "%% of all copies), %s in all, %.0f bytes and "
                           "%s of host time each on average (%s in all): the cost is per call, not per byte",
                           h->small_copies, WSL_HOST_SMALL_COPY >> 10,
                           h->copies ? 100 * h->small_copies / h->copies : 0,
                           wsl_format_bytes(b, sizeof b, h->small_bytes), mean_bytes,
                           wsl_format_ns(m, sizeof m, (uint64_t)mean_ns), wsl_format_ns(t, sizeof t, h->small_ns));
    f->advice = xasprintf(
        "Move data in fewer, larger copies: stack small tensors into one (torch.stack/torch.cat on the host, then "
        "one .to('cuda', non_blocking=True) from pinned memory) and split on the GPU; batch per-sample transfers "
        "in the DataLoader's collate_fn instead of copying fields one by one; keep small constants and lookup "
        "tables on the GPU instead of copying them every step; in CUDA code pack the pieces into one pinned "
        "staging buffer and issue one cuMemcpyHtoDAsync.");
    return true;
}

const struct wsl_rule wsl_rule_small_transfers = {
    .id = "small_transfers",
    .order = 80,
    .needs = "host_cuda (copies by size, their host time left after the sync and pageable charges)",
    .how_computed =
        "Counts copies (cuMemcpy*, every direction, synchronous and asynchronous) below 64 KiB. Each costs the "
        "program the gap from it to the next small copy on its thread where they come in runs (under a few ms "
        "apart: the call and the framework's work around it), else its host time; less what sync_heavy and "
        "pageable_transfers already charged for the same calls, that cost is per call; "
        "coalesced into 64 KiB copies the same bytes would need ceil(bytes / 64 KiB) calls. Time lost = that "
        "cost x small copies x (1 - coalesced calls / small copies). Fires with at least 1000 small copies and time lost "
        "of at least 1% of wall time.",
    .fix = "coalesce small copies into one large pinned, non_blocking copy; keep small constants on the GPU",
    .cuda_host_time = true,
    .evaluate = evaluate,
};
