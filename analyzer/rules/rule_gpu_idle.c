/*
 * gpu_idle: the GPU sat idle for much of the run and the other rules do not
 * explain it: the host was busy with something else (Python, data
 * preparation, waiting on other processes). Evaluated last: its time lost is
 * the GPU's idle time less what the findings before it already claimed, so
 * the findings never add up to more than the GPU's idle time.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "rules.h"
#include "util.h"

#define MAX_BUSY 0.5            /* GPU busy share of the wall time */
#define MIN_SHARE 0.10          /* unexplained idle time, share of the wall time */
#define MIN_LAUNCHES 100

static bool evaluate(const struct wsl_run *run, struct wsl_finding *f)
{
    /* needs: GPU busy estimate, kernel launches, the findings of the rules evaluated before it */
    const struct wsl_kernels *k = &run->kernels;
    if (!run->gpu_busy_known || !run->wall_ns || k->launches + k->graph_launches < MIN_LAUNCHES)
        return false;
    uint64_t phase = run->kernels.busy_wall_ns; /* start-up before the first launch is not counted */
    if (!phase)
        return false;
    double busy = (double)run->gpu_busy_ns / (double)phase;
    if (busy > MAX_BUSY)
        return false;
    uint64_t idle = phase > run->gpu_busy_ns ? phase - run->gpu_busy_ns : 0;
    uint64_t explained = 0;
    for (size_t i = 0; i < run->finding_count; i++)
        if (strcmp(run->findings[i].id, "startup") != 0) /* before the GPU phase */
            explained += run->findings[i].time_lost_ns;
    uint64_t rest = idle > explained ? idle - explained : 0;
    if ((double)rest < MIN_SHARE * (double)phase)
        return false;
    f->time_lost_ns = rest;

    /* where the host time went, as far as the trace tells */
    uint64_t cuda_ns = 0, io_ns = 0;
    for (size_t i = 0; i < run->api_count; i++) {
        if (run->apis[i].category == WSL_CAT_IO_WAIT)
            continue; /* a poll is a wait (dataloader_wait's when on a worker's pipe), not file I/O */
        if (wsl_is_io_category(run->apis[i].category))
            io_ns += run->apis[i].ns.sum;
        else
            cuda_ns += run->apis[i].ns.sum;
    }
    wsl_evidence_number(f, "gpu_busy_share", busy);
    wsl_evidence_u64(f, "gpu_idle_ns", idle);
    wsl_evidence_u64(f, "explained_by_other_findings_ns", explained);
    wsl_evidence_u64(f, "host_cuda_call_ns", cuda_ns);
    wsl_evidence_u64(f, "host_file_io_ns", io_ns);
    wsl_evidence_u64(f, "kernel_launches", k->launches);
    wsl_evidence_u64(f, "graph_launches", k->graph_launches);

    char a[32], b[32];
    f->summary = xasprintf("The GPU was busy only %.0f%% of the %s from the first launch on; %s of its idle time "
                           "is not explained by "
                           "launches, syncs, copies or file I/O: the host was doing other work (Python, data "
                           "preparation, start-up) while the GPU waited",
                           busy * 100, wsl_format_ns(a, sizeof a, phase),
                           wsl_format_ns(b, sizeof b, rest));
    f->advice = xstrdup(
        "Find what the host does between GPU work: profile the CPU side (py-spy, perf) around the training loop. "
        "Overlap data preparation with GPU work (DataLoader num_workers, pin_memory=True, prefetch_factor), move "
        "preprocessing onto the GPU, and keep evaluation and checkpointing out of the training loop.");
    return true;
}

const struct wsl_rule wsl_rule_gpu_idle = {
    .id = "gpu_idle",
    .order = 1000, /* last: it claims only the idle time the findings above leave */
    .gpu_time = true,
    .needs = "the GPU busy estimate (sampled GPU timing) and the time lost of the findings evaluated before it",
    .how_computed = "Evaluated after every other rule. GPU idle time = the GPU phase (from the first launch to the last "
                    "GPU work, per process) - the estimated GPU busy time. Time "
                    "lost = that idle time less the time lost of every finding before it (so the findings sum to no "
                    "more than the idle time). Fires when the GPU was busy at most half of the wall time, at least "
                    "100 kernel or graph launches were made, and the unexplained idle time is at least 10% of the "
                    "GPU phase.",
    .fix = "overlap the host's own work with the GPU's: more DataLoader workers, prefetch, GPU-side preprocessing",
    .evaluate = evaluate,
};

/* After the steady state's reading (analysis_read.c): where the idle time was, and advice for that phase.
 * Idle time outside the steady state is start-up's end, warm-up (compilation, lazy loading, the first
 * steps) and teardown (evaluation, checkpoints, shutdown): more DataLoader workers do nothing there. */
void wsl_rule_gpu_idle_by_phase(const struct wsl_run *run, struct wsl_finding *f)
{
    if (!f->steady_known)
        return;
    uint64_t in = f->steady_lost_ns < f->time_lost_ns ? f->steady_lost_ns : f->time_lost_ns;
    uint64_t out = f->time_lost_ns - in;
    wsl_evidence_u64(f, "idle_in_steady_state_ns", in);
    wsl_evidence_u64(f, "idle_outside_steady_state_ns", out);
    const struct wsl_phases *ph = &run->phases.main;
    if (out <= in || !run->phases.known)
        return;
    char a[32], w[32], t[32];
    uint64_t warm = ph->steady_start_ns - ph->first_submit_ns, tear = ph->end_ns - ph->steady_end_ns;
    free(f->advice);
    f->advice = xasprintf(
        "Most of this idle time (%s) is outside the steady state: warm-up %s (lazy loading of libraries "
        "and kernels, compilation, the first steps), teardown %s (evaluation, checkpointing, shutdown). "
        "The training loop itself is not what waits: shorten warm-up (compile caches, warm-up on a "
        "smaller batch, fewer distinct shapes), keep evaluation and checkpoints short or asynchronous, "
        "and judge the loop by its steady-state figures.",
        wsl_format_ns(a, sizeof a, out), wsl_format_ns(w, sizeof w, warm), wsl_format_ns(t, sizeof t, tear));
}
