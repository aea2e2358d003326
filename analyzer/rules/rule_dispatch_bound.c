/*
 * dispatch_bound: the host takes longer between launches than the GPU takes to
 * run them, and the time goes to the framework's own work per operation
 * (Python, tracing, argument handling), not to the launch call: eager PyTorch,
 * JAX dispatching one operation at a time, CuPy array expressions. The GPU
 * finishes each kernel and waits for the next. launch_bound is the same
 * starvation where the launch call itself is the cost; this rule takes the
 * rest, so the two never both fire.
 *
 * Needs the sampled GPU timing (kernel GPU times, idle at submit, GPU busy) and
 * the host time of the launch calls.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "rules.h"
#include "util.h"

#define MIN_LAUNCHES 500        /* kernel and graph launches */
#define MIN_TIMED 20
#define MIN_IDLE_SHARE 0.5      /* of timed launches, idle at submit */
#define MAX_BUSY 0.5            /* GPU busy share of the GPU phase */
#define MAX_INTERVAL_NS 200000  /* a mean dispatch gap longer than this: the host does more than dispatch */

static bool evaluate(const struct wsl_run *run, struct wsl_finding *f)
{
    /* needs: kernel launches and their host time, timed launches, idle at submit, GPU busy */
    const struct wsl_kernels *k = &run->kernels;
    for (size_t i = 0; i < run->finding_count; i++)
        if (!strcmp(run->findings[i].id, "launch_bound"))
            return false;       /* the launch call itself: launch_bound has it */
    uint64_t timed = k->kernels_timed + k->graphs_timed, launches = k->launches + k->graph_launches;
    uint64_t launch_calls = 0, launch_host_ns = 0;
    for (size_t i = 0; i < run->api_count; i++)
        if (run->apis[i].category == WSL_CAT_LAUNCH || run->apis[i].category == WSL_CAT_GRAPH) {
            launch_calls += run->apis[i].ns.count;
            launch_host_ns += run->apis[i].ns.sum;
        }
    uint64_t phase = k->busy_wall_ns;
    struct wsl_dispatch_gaps dg;
    wsl_run_dispatch_gaps(run, &dg);
    uint64_t gaps = dg.gaps, gap_ns = dg.gap_ns, long_ns = dg.long_gap_ns;
    if (!run->gpu_busy_known || launches < MIN_LAUNCHES || timed < MIN_TIMED || !launch_calls || !phase || !gaps)
        return false;
    double idle_share = (double)k->idle_at_submit / (double)timed;
    double busy = (double)run->gpu_busy_ns / (double)phase;
    uint64_t interval = gap_ns / gaps; /* the host's time from one launch to the next while dispatching */
    uint64_t launch_mean = launch_host_ns / launch_calls;
    uint64_t gpu_mean = k->est_gpu_ns / launches;
    /* fires: most timed launches found the GPU idle, the GPU was mostly idle, and while dispatching the host
     * took longer between launches than the GPU took for them */
    if (idle_share < MIN_IDLE_SHARE || busy > MAX_BUSY || interval > MAX_INTERVAL_NS || gpu_mean * 2 > interval)
        return false;
    /* time lost: per dispatch gap that found the GPU idle, the host's time the GPU did not cover, at most the
     * GPU's idle time; longer gaps (data, evaluation) are gpu_idle's or dataloader_wait's */
    double per_gap = (double)interval - (double)gpu_mean;
    double lost = (double)gaps * idle_share * per_gap;
    uint64_t idle = phase > run->gpu_busy_ns ? phase - run->gpu_busy_ns : 0;
    f->time_lost_ns = lost >= (double)idle ? idle : (uint64_t)lost;
    if ((double)f->time_lost_ns < WSL_RULE_MIN_SHARE * (double)run->wall_ns)
        return false;
    const char *fw = wsl_kern_framework(k);
    wsl_evidence_u64(f, "launches", launches);
    wsl_evidence_u64(f, "dispatch_gaps", gaps);
    wsl_evidence_u64(f, "launch_interval_mean_ns", interval);
    wsl_evidence_u64(f, "long_gap_ns", long_ns);
    wsl_evidence_u64(f, "launch_host_mean_ns", launch_mean);
    wsl_evidence_u64(f, "gpu_per_launch_mean_ns", gpu_mean);
    wsl_evidence_number(f, "idle_at_submit_share", idle_share);
    wsl_evidence_number(f, "gpu_busy_share", busy);
    wsl_evidence_string(f, "framework", fw ? fw : "unknown");

    char a[32], b[32], c[32];
    f->summary = xasprintf("The host dispatches one kernel every %s, and the GPU runs each in %s on average: the "
                           "GPU waits for the host %.0f%% of the time. The launch call itself takes %s; the rest "
                           "is %s's own work per operation%s",
                           wsl_format_ns(a, sizeof a, interval), wsl_format_ns(b, sizeof b, gpu_mean),
                           100 * (1 - busy), wsl_format_ns(c, sizeof c, launch_mean),
                           fw ? fw : "the program", fw ? "" : " (the framework could not be told from kernel names)");
    f->advice = xstrdup(wsl_kern_fewer_launches_advice(fw));
    return true;
}

const struct wsl_rule wsl_rule_dispatch_bound = {
    .id = "dispatch_bound",
    .order = 150, /* after launch_bound: it takes only what that one does not */
    .gpu_time = true,
    .needs = "kernel launches and their host time; sampled GPU timing: GPU time per launch, idle at submit, GPU busy",
    .how_computed = "Evaluated after launch_bound, and only when it did not fire. Fires with at least 500 launches "
                    "and 20 timed ones when at least half the timed launches found the GPU idle, the GPU was busy at "
                    "most half of its GPU phase, and while dispatching (gaps under 2 ms from one launch to the next on "
                    "the busiest launching thread; longer gaps are the host doing something else) the mean gap is "
                    "at most 200 us and at least twice the mean GPU time per launch. Time lost: dispatch gaps x the "
                    "idle-at-submit share x (mean dispatch gap - mean GPU time per launch), at most the GPU's idle "
                    "time. The advice follows the framework the kernel names show.",
    .fix = "fewer, larger operations: jit/compile the step, CUDA graphs, fused kernels, larger batches",
    .evaluate = evaluate,
};
