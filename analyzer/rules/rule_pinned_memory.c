/*
 * pinned_memory: a process under WSL kept more than 512 MiB of page-locked
 * host memory (cuMemHostAlloc/cuMemAllocHost plus cuMemHostRegister) live at
 * once. WSL2 has pinned-memory ceilings of 0.5-1 GB reported (docs/facts.md:
 * microsoft/WSL#14078, NVIDIA/nvidia-container-toolkit#226): beyond them
 * pinning fails or falls back. About risk: time lost 0; severity low, medium
 * when pinned allocations failed there.
 */
#include <inttypes.h>
#include <stdio.h>

#include "analysis.h"
#include "rules.h"
#include "util.h"

#define LIMIT_BYTES (512ull << 20)

static bool evaluate(const struct wsl_run *run, struct wsl_finding *f)
{
    /* needs: per-process page-locked peak and the process's WSL flag */
    const struct wsl_process *worst = NULL;
    uint64_t failed = 0;
    for (size_t i = 0; i < run->proc_count; i++) {
        const struct wsl_process *p = &run->procs[i];
        if (!(p->flags & (WSL_PROC_WSL1 | WSL_PROC_WSL2)))
            continue;
        failed += p->mem.pinned.failed;
        if (p->mem.page_locked_peak_bytes > LIMIT_BYTES &&
            (!worst || p->mem.page_locked_peak_bytes > worst->mem.page_locked_peak_bytes))
            worst = p;
    }
    /* fires: above 512 MiB on WSL */
    if (!worst)
        return false;
    f->severity_fixed = true;
    f->severity = failed ? WSL_SEVERITY_MEDIUM : WSL_SEVERITY_LOW;
    f->time_lost_ns = 0;

    const struct wsl_mem_summary *m = &worst->mem;
    wsl_evidence_u64(f, "pid", (uint64_t)(int64_t)worst->pid);
    wsl_evidence_u64(f, "page_locked_peak_bytes", m->page_locked_peak_bytes);
    wsl_evidence_u64(f, "pinned_peak_bytes", m->pinned.peak_bytes);
    wsl_evidence_u64(f, "registered_peak_bytes", m->registered.peak_bytes);
    wsl_evidence_u64(f, "pinned_allocations", m->pinned.allocations);
    wsl_evidence_u64(f, "threshold_bytes", LIMIT_BYTES);
    wsl_evidence_u64(f, "pinned_failed", failed);

    char peak[32];
    f->summary = xasprintf("pid %" PRId32 " kept %s of page-locked host memory live at once under WSL, where "
                           "pinned-memory ceilings of 0.5-1 GB are reported%s",
                           worst->pid, wsl_format_bytes(peak, sizeof peak, m->page_locked_peak_bytes),
                           failed ? "; pinned allocations failed" : "");
    f->advice = xasprintf(
        "Pin less at once: with PyTorch, each DataLoader worker with pin_memory=True keeps about "
        "num_workers * prefetch_factor pinned batches; lower num_workers or prefetch_factor, or the batch size, "
        "or set pin_memory=False for very large batches. Avoid pinning whole datasets (tensor.pin_memory() on "
        "big tensors). Pinning near the ceiling fails (cudaHostAlloc errors) or slows the whole "
        "system.");
    return true;
}

const struct wsl_rule wsl_rule_pinned_memory = {
    .id = "pinned_memory",
    .order = 40,
    .needs = "procs[].mem (page-locked peak: pinned + registered), procs[].flags (WSL)",
    .how_computed =
        "Replays each process's cuMemHostAlloc/cuMemAllocHost/cuMemFreeHost and cuMemHostRegister/Unregister in "
        "time order and takes the largest live total of page-locked bytes. Fires, low, when a process running "
        "under WSL exceeds 512 MiB (WSL2 pinned-memory ceilings of 0.5-1 GB are reported); medium when pinned "
        "allocations failed there. Time lost is 0: the rule is about risk.",
    .fix = "pin less at once: fewer DataLoader workers or a smaller prefetch_factor with pin_memory=True",
    .evaluate = evaluate,
};
