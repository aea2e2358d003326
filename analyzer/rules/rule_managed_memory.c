/*
 * managed_memory: a process under WSL allocated managed (unified) memory.
 * WSL2 has no full UVM: no demand paging or oversubscription, and concurrent
 * CPU/GPU access is unsupported (CUDA on WSL guide, docs/facts.md), so managed
 * memory behaves unlike native Linux. About risk: time lost 0; severity low,
 * medium when the managed peak passes 1 GiB or managed allocations failed.
 */
#include <inttypes.h>
#include <stdio.h>

#include "analysis.h"
#include "rules.h"
#include "util.h"

#define MEDIUM_BYTES (1ull << 30)

static bool evaluate(const struct wsl_run *run, struct wsl_finding *f)
{
    /* needs: per-process managed allocations and the WSL flag */
    uint64_t allocations = 0, bytes = 0, peak = 0, failed = 0, procs = 0;
    for (size_t i = 0; i < run->proc_count; i++) {
        const struct wsl_process *p = &run->procs[i];
        const struct wsl_mem_kind *k = &p->mem.managed;
        if (!(p->flags & (WSL_PROC_WSL1 | WSL_PROC_WSL2)) || (k->allocations == 0 && k->failed == 0))
            continue;
        procs++;
        allocations += k->allocations;
        bytes += k->bytes;
        failed += k->failed;
        if (k->peak_bytes > peak)
            peak = k->peak_bytes;
    }
    if (!procs)
        return false;
    f->severity_fixed = true;
    f->severity = peak > MEDIUM_BYTES || failed ? WSL_SEVERITY_MEDIUM : WSL_SEVERITY_LOW;
    f->time_lost_ns = 0;

    wsl_evidence_u64(f, "processes", procs);
    wsl_evidence_u64(f, "managed_allocations", allocations);
    wsl_evidence_u64(f, "managed_bytes", bytes);
    wsl_evidence_u64(f, "managed_peak_bytes", peak);
    wsl_evidence_u64(f, "managed_failed", failed);

    char b[32], pk[32];
    f->summary = xasprintf("%" PRIu64 " managed allocations (cuMemAllocManaged, %s, peak %s live) under WSL, which "
                           "has no full unified memory",
                           allocations, wsl_format_bytes(b, sizeof b, bytes), wsl_format_bytes(pk, sizeof pk, peak));
    f->advice = xasprintf(
        "WSL2 does not support full UVM: no GPU page faulting or oversubscription, and the CPU must not touch "
        "managed memory while kernels run (concurrent access is unsupported). Use explicit device allocations "
        "(cudaMalloc / torch tensors on 'cuda') and explicit copies (cudaMemcpyAsync from pinned buffers); do "
        "not rely on managed memory to hold more than the card's memory.");
    return true;
}

const struct wsl_rule wsl_rule_managed_memory = {
    .id = "managed_memory",
    .order = 50,
    .needs = "procs[].mem.managed, procs[].flags (WSL)",
    .how_computed =
        "Counts cuMemAllocManaged calls of processes running under WSL and replays their frees for the peak. "
        "Fires, low, on any managed allocation there (WSL2 has no full UVM; concurrent CPU/GPU access is "
        "unsupported); medium when the managed peak is above 1 GiB or managed allocations failed. Time lost is "
        "0: the rule is about risk.",
    .fix = "use explicit device memory (cuMemAlloc/torch tensors on cuda) instead of managed memory under WSL",
    .evaluate = evaluate,
};
