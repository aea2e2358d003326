/*
 * pageable_transfers: copies between the GPU and pageable host memory (not
 * from cuMemHostAlloc/cuMemAllocHost, not registered with
 * cuMemHostRegister). The driver stages them through its own pinned buffer,
 * they cannot overlap with the host, and a copy to pageable memory waits
 * for the GPU. With pinned memory and non_blocking=True the host thread
 * only submits the copy. The time lost is the host time beyond that one
 * submission (after what sync_heavy charged for the same calls), for
 * copies to the GPU; copies from it are waits (sync_heavy).
 */
#include <inttypes.h>
#include <stdio.h>

#include "analysis.h"
#include "rules.h"
#include "util.h"

#define MIN_PAGEABLE_COPIES 50u

static bool evaluate(const struct wsl_run *run, struct wsl_finding *f)
{
    /* needs: the run's copies classified by host memory kind (host_analysis) */
    const struct wsl_host_summary *h = &run->host_cuda;
    /* fires: at least MIN_PAGEABLE_COPIES such copies, time lost at least 1% of wall time */
    if (h->pageable_copies < MIN_PAGEABLE_COPIES ||
        (double)h->pageable_lost_ns < WSL_RULE_MIN_SHARE * (double)run->wall_ns)
        return false;
    f->time_lost_ns = h->pageable_lost_ns;

    double pageable_bw = h->pageable_ns ? (double)h->pageable_bytes / ((double)h->pageable_ns / 1e9) : 0;
    double locked_bw = h->locked_ns ? (double)h->locked_bytes / ((double)h->locked_ns / 1e9) : 0;
    wsl_evidence_u64(f, "pageable_copies", h->pageable_copies);
    wsl_evidence_u64(f, "pageable_htod", h->pageable_htod);
    wsl_evidence_u64(f, "pageable_dtoh", h->pageable_dtoh);
    wsl_evidence_u64(f, "pageable_bytes", h->pageable_bytes);
    wsl_evidence_u64(f, "pageable_ns", h->pageable_ns);
    wsl_evidence_u64(f, "pinned_copies", h->locked_copies);
    wsl_evidence_number(f, "pageable_bytes_per_s", pageable_bw);
    wsl_evidence_number(f, "pinned_bytes_per_s", locked_bw);    /* host time basis; 0 when no pinned copy */
    wsl_evidence_u64(f, "submit_ns", h->submit_ns);
    wsl_evidence_u64(f, "unclassified_copies", h->unclassified_copies + h->unknown_direction);

    char b[32], t[32];
    f->summary = xasprintf("%" PRIu64 " copies between the GPU and pageable host memory (%" PRIu64 " to the GPU, %"
                           PRIu64 " from it), %s in %s of host time: staged through the driver's buffer, never "
                           "overlapped with the host",
                           h->pageable_copies, h->pageable_htod, h->pageable_dtoh,
                           wsl_format_bytes(b, sizeof b, h->pageable_bytes), wsl_format_ns(t, sizeof t, h->pageable_ns));
    f->advice = xasprintf(
        "Copy from pinned memory: DataLoader(pin_memory=True) and tensor.to('cuda', non_blocking=True); for "
        "buffers you reuse, allocate them pinned once (torch.empty(..., pin_memory=True), cudaHostAlloc) or "
        "register existing memory (cudaHostRegister / cuMemHostRegister). Then the copy is a submission and "
        "runs while the host prepares the next batch. Under WSL2 pinned memory is limited (0.5-1 GB reported): "
        "pin buffers you reuse, not whole datasets.");
    return true;
}

const struct wsl_rule wsl_rule_pageable_transfers = {
    .id = "pageable_transfers",
    .order = 90,
    .needs = "host_cuda (copies classified by direction and host memory kind)",
    .how_computed =
        "Replays each process's allocation calls in time order to know, at each copy, the live device, managed "
        "and page-locked ranges (cuMemHostAlloc, cuMemAllocHost, cuMemHostRegister). A copy to or from the GPU "
        "(cuMemcpyHtoD*, cuMemcpyDtoH*, and cuMemcpy/cuMemcpyAsync whose one side is device memory) whose host "
        "side lies in no page-locked range is pageable. For a pageable copy to the GPU, time lost = its host "
        "time, less what sync_heavy charged for the same call, less one submission (the median host time of "
        "the process's kernel launches): what pinned memory with non_blocking=True leaves on the host thread. "
        "Copies from the GPU to pageable memory are counted but add nothing: their host time is a wait for the "
        "GPU's earlier work, which sync_heavy charges. Fires with at least 50 pageable copies "
        "and time lost of at least 1% of wall time.",
    .fix = "pin the host side (pin_memory=True, cudaHostRegister) and copy with non_blocking=True",
    .cuda_host_time = true,
    .evaluate = evaluate,
};
