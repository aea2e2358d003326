/*
 * vram_headroom: the program's device memory came close to what the card
 * has, or allocations failed with CUDA_ERROR_OUT_OF_MEMORY. This rule is
 * about risk, not time: WSL2 leaves 0.3-1.3 GiB less usable VRAM than native
 * Linux (docs/facts.md), so a run that peaks near the card's size natively
 * may fail under WSL2. Its time lost is 0 unless allocations failed (then the
 * host time of the failed calls), and its severity is set here: high on OOM
 * failures, medium above 95% of the card, low above 85%.
 */
#include <inttypes.h>
#include <stdio.h>

#include "analysis.h"
#include "rules.h"
#include "util.h"

#define LOW_SHARE 0.85
#define MEDIUM_SHARE 0.95

static bool is_wsl(const struct wsl_process *p) { return (p->flags & (WSL_PROC_WSL1 | WSL_PROC_WSL2)) != 0; }

static bool evaluate(const struct wsl_run *run, struct wsl_finding *f)
{
    /* needs: per-process device peak and GPU 0's total memory, failed allocations */
    const struct wsl_process *worst = NULL, *oom_proc = NULL;
    double worst_share = 0;
    bool any_wsl = false;
    for (size_t i = 0; i < run->proc_count; i++) {
        const struct wsl_process *p = &run->procs[i];
        double share = wsl_mem_peak_share(&p->mem);
        if (share > worst_share) {
            worst_share = share;
            worst = p;
        }
        if (p->mem.oom_failures && (!oom_proc || p->mem.oom_failures > oom_proc->mem.oom_failures))
            oom_proc = p;
        any_wsl |= is_wsl(p);
    }
    const struct wsl_mem_summary *m = &run->mem;

    /* fires: OOM failures, or a peak above 85% of the card */
    if (!oom_proc && worst_share <= LOW_SHARE)
        return false;
    f->severity_fixed = true;
    f->severity = oom_proc ? WSL_SEVERITY_HIGH : worst_share > MEDIUM_SHARE ? WSL_SEVERITY_MEDIUM : WSL_SEVERITY_LOW;
    /* time lost: only failed calls cost time here; the rest is risk */
    f->time_lost_ns = oom_proc ? m->failed_ns : 0;
    const struct wsl_process *p = worst ? worst : oom_proc;

    /* evidence */
    wsl_evidence_u64(f, "pid", (uint64_t)(int64_t)p->pid);
    wsl_evidence_bool(f, "wsl", is_wsl(p));
    wsl_evidence_u64(f, "peak_device_bytes", p->mem.peak_bytes);
    wsl_evidence_u64(f, "device_total_bytes", p->mem.device_total_bytes);
    wsl_evidence_number(f, "peak_share_of_device", wsl_mem_peak_share(&p->mem));
    wsl_evidence_u64(f, "headroom_bytes", p->mem.device_total_bytes > p->mem.peak_bytes
                                              ? p->mem.device_total_bytes - p->mem.peak_bytes : 0);
    wsl_evidence_u64(f, "oom_failures", m->oom_failures);
    wsl_evidence_u64(f, "failed_allocations", m->failed_allocations);
    wsl_evidence_u64(f, "largest_failed_bytes", m->largest_failed_bytes);
    wsl_evidence_u64(f, "failed_ns", m->failed_ns);

    /* summary and advice */
    char peak[32], total[32], big[32];
    wsl_format_bytes(peak, sizeof peak, p->mem.peak_bytes);
    if (oom_proc)
        f->summary = xasprintf("%" PRIu64 " device allocations failed with CUDA_ERROR_OUT_OF_MEMORY (largest request "
                               "%s); device memory peaked at %s%s%s%s",
                               m->oom_failures, wsl_format_bytes(big, sizeof big, m->largest_failed_bytes), peak,
                               p->mem.device_total_bytes ? " of " : "",
                               p->mem.device_total_bytes ? wsl_format_bytes(total, sizeof total,
                                                                            p->mem.device_total_bytes) : "",
                               p->mem.device_total_bytes ? " on the card" : "");
    else
        f->summary = xasprintf("Device memory peaked at %s of %s (%.0f%% of the card) in pid %" PRId32
                               ": little headroom left",
                               peak, wsl_format_bytes(total, sizeof total, p->mem.device_total_bytes),
                               worst_share * 100, p->pid);
    f->advice = xasprintf(
        "%sLower the peak: reduce the batch size (or keep it with gradient accumulation), use activation "
        "checkpointing (torch.utils.checkpoint), train in mixed precision (torch.autocast with bf16/fp16), and "
        "let PyTorch's caching allocator grow segments instead of fragmenting "
        "(PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True). torch.cuda.empty_cache() returns cached blocks to "
        "the driver between phases (other processes on the GPU can then use them). The peak here is what the "
        "driver handed out, which matches torch.cuda.max_memory_reserved().",
        any_wsl ? "Under WSL2 the card has 0.3-1.3 GiB less usable memory than under native Linux (Windows keeps "
                  "some for its desktop and the WDDM driver), so a peak that fits natively can fail here. "
                : "WSL2 leaves 0.3-1.3 GiB less usable memory than native Linux: this run would have less room "
                  "there. ");
    return true;
}

const struct wsl_rule wsl_rule_vram_headroom = {
    .id = "vram_headroom",
    .order = 30,
    .needs = "procs[].mem (device peak, GPU 0's total_mem from DRIVER), mem (failed allocations)",
    .how_computed =
        "Replays each process's device allocations and frees (cuMemAlloc*, cuMemAllocPitch, cuMemAllocAsync, "
        "cuMemAllocFromPoolAsync, cuMemFree*) in time order and takes the largest live total; compares it with "
        "the total memory of the process's GPU 0 from the trace's DRIVER chunk. Fires when that share is above "
        "85% (low), above 95% (medium), or when any allocation failed with CUDA_ERROR_OUT_OF_MEMORY (high). "
        "Time lost is 0 (the rule is about risk: WSL2 leaves 0.3-1.3 GiB less usable VRAM than native) unless "
        "allocations failed; then it is the host time of the failed allocation calls.",
    .fix = "lower the peak: smaller batch, activation checkpointing, bf16 autocast, expandable_segments",
    .evaluate = evaluate,
};
