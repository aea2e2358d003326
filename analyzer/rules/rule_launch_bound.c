/*
 * launch_bound: the GPU waits for the host to submit work. Kernels are
 * shorter than it takes to launch them, so the GPU runs each one and then
 * idles until the next launch arrives. Under WSL2 every launch crosses to the
 * Windows host (facts.md), so this is where WSL2 loses most.
 *
 * Needs the sampled GPU timing (GPU_KERNEL events): launches that found the
 * GPU idle at submit, their kernels' GPU times and the GPU busy estimate, and
 * the host time of the launch calls.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "rules.h"
#include "util.h"

#define MIN_LAUNCHES 1000       /* kernel launches in the run */
#define MIN_TIMED 20            /* timed launches, for the shares below to mean something */
#define MIN_IDLE_SHARE 0.5      /* of timed launches, idle at submit */
#define MAX_BUSY 0.5            /* GPU busy share of the GPU phase */
#define MAX_INTERVAL_NS 50000   /* mean time between launches in the GPU phase: the host is busy launching */

static bool evaluate(const struct wsl_run *run, struct wsl_finding *f)
{
    /* needs: kernel launches (host time per call), timed launches, idle at submit, GPU busy */
    const struct wsl_kernels *k = &run->kernels;
    uint64_t timed = k->kernels_timed + k->graphs_timed;
    uint64_t launch_calls = 0, launch_host_ns = 0;
    for (size_t i = 0; i < run->api_count; i++)
        if (run->apis[i].category == WSL_CAT_LAUNCH) {
            launch_calls += run->apis[i].ns.count;
            launch_host_ns += run->apis[i].ns.sum;
        }
    if (!run->gpu_busy_known || k->launches < MIN_LAUNCHES || timed < MIN_TIMED || k->kernel_ns.count < MIN_TIMED ||
        !launch_calls || !run->wall_ns)
        return false;
    double idle_share = (double)k->idle_at_submit / (double)timed;
    uint64_t phase = run->kernels.busy_wall_ns;
    if (!phase)
        return false;
    double busy = (double)run->gpu_busy_ns / (double)phase;
    uint64_t launch_mean = launch_host_ns / launch_calls;
    uint64_t kernel_mean = k->kernel_ns.count ? k->kernel_ns.sum / k->kernel_ns.count : 0;
    uint64_t kernel_p50 = wsl_hist_quantile(&k->kernel_ns, 0.5);
    /* the host's time from one launch to the next while dispatching (gaps with no wait, I/O or allocation
     * of the launching thread's own in them, phase_analysis.h), else over the whole GPU phase */
    struct wsl_dispatch_gaps dg;
    wsl_run_dispatch_gaps(run, &dg);
    uint64_t gaps = dg.gaps, gap_ns = dg.gap_ns;
    uint64_t interval = gaps ? gap_ns / gaps : phase / (k->launches + k->graph_launches);

    /* fires: most timed launches found the GPU idle, the GPU was mostly idle,
     * the kernels take less GPU time than their launch takes host time, and
     * the host launched at a high rate (it was busy launching, not doing
     * something else between launches: that is gpu_idle) */
    if (idle_share < MIN_IDLE_SHARE || busy > MAX_BUSY || kernel_p50 >= launch_mean || interval > MAX_INTERVAL_NS)
        return false;
    /* time lost: per launch that found the GPU idle, the host time from one
     * launch to the next that the kernel did not cover: the framework's and
     * the driver's work per operation, which a CUDA graph replay does away with */
    uint64_t per_launch = interval > kernel_mean ? interval - kernel_mean : 0;
    double lost_ns = (double)(gaps ? gaps : k->launches) * idle_share * (double)per_launch;
    uint64_t idle_ns = phase > run->gpu_busy_ns ? phase - run->gpu_busy_ns : 0;
    /* at most the idle time, compared before the conversion (a damaged trace's
     * phase near 2^64 would round the product past a uint64) */
    f->time_lost_ns = lost_ns >= (double)idle_ns ? idle_ns : (uint64_t)lost_ns;
    if (!f->time_lost_ns)
        return false;

    double secs = (double)phase / 1e9;
    wsl_evidence_u64(f, "kernel_launches", k->launches);
    wsl_evidence_number(f, "launches_per_s", (double)k->launches / secs);
    wsl_evidence_u64(f, "launch_host_mean_ns", launch_mean);
    wsl_evidence_u64(f, "launch_interval_mean_ns", interval);
    wsl_evidence_u64(f, "kernel_gpu_p50_ns", kernel_p50);
    wsl_evidence_u64(f, "kernel_gpu_mean_ns", kernel_mean);
    wsl_evidence_u64(f, "timed_launches", timed);
    wsl_evidence_number(f, "idle_at_submit_share", idle_share);
    wsl_evidence_number(f, "gpu_busy_share", busy);
    wsl_evidence_u64(f, "graph_launches", k->graph_launches);

    char lost[32];
    f->summary = xasprintf("The GPU waits for the host: %" PRIu64 " kernel launches (%.0f/s, one every %.1f us), a "
                           "median kernel runs %.1f us on the GPU and its launch call alone takes %.1f us on the host; "
                           "%.0f%% of timed launches found "
                           "the GPU idle and it was busy %.1f%% of the time from the first launch on (%s of submission the GPU "
                           "waited for)",
                           k->launches, (double)k->launches / secs, (double)interval / 1e3, (double)kernel_p50 / 1e3,
                           (double)launch_mean / 1e3, idle_share * 100, busy * 100,
                           wsl_format_ns(lost, sizeof lost, f->time_lost_ns));
    const char *fw = wsl_kern_framework(k);
    wsl_evidence_string(f, "framework", fw ? fw : "unknown");
    f->advice = xasprintf("%s Each launch costs more under WSL2, where every submission crosses to the Windows "
                          "host: this pattern loses the most there.", wsl_kern_fewer_launches_advice(fw));
    return true;
}

const struct wsl_rule wsl_rule_launch_bound = {
    .id = "launch_bound",
    .order = 140,
    .gpu_time = true,
    .needs = "kernel launches and their host time; sampled GPU timing: kernel GPU times, idle at submit, GPU busy",
    .how_computed = "Fires with at least 1000 kernel launches and 20 timed ones when at least half of the timed "
                    "launches found the GPU idle at submit, the GPU was busy at most half of its GPU phase (first launch "
                    "to last GPU work) and the "
                    "median kernel's GPU time is below the mean host time of a launch call and the host launched at "
                    "least every 50 us on average while dispatching (gaps from one launch to the next with no wait, "
                    "file I/O or allocation of the launching thread's own). Time lost: those gaps x the "
                    "idle-at-submit share x (mean gap - mean kernel GPU time), at most the time the GPU was "
                    "idle: the host's work per operation (framework and driver) that a CUDA graph replay removes.",
    .fix = "capture the step in a CUDA graph (torch.compile mode=\"reduce-overhead\"), fuse kernels, larger batches",
    .evaluate = evaluate,
};
