/* The rule framework: run, grade, cap, sort. The rules live in rule_*.c. */
#include "rules.h"

#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "util.h"

/* The registry: every rules/rule_<id>.c, named by the build in rules_list.h. */
#define WSL_RULE(id) extern const struct wsl_rule wsl_rule_##id;
#include "rules_list.h"
#undef WSL_RULE
static const struct wsl_rule *const found_rules[] = {
#define WSL_RULE(id) &wsl_rule_##id,
#include "rules_list.h"
#undef WSL_RULE
};
const size_t wsl_rule_count = sizeof found_rules / sizeof found_rules[0];
const struct wsl_rule *wsl_rules[sizeof found_rules / sizeof found_rules[0]];

static int rule_rank(const struct wsl_rule *r) { return r->order ? r->order : 500; }

static int by_order(const void *a, const void *b)
{
    const struct wsl_rule *x = *(const struct wsl_rule *const *)a, *y = *(const struct wsl_rule *const *)b;
    if (rule_rank(x) != rule_rank(y))
        return rule_rank(x) < rule_rank(y) ? -1 : 1;
    return strcmp(x->id, y->id);
}

/* Sorted once, before main. */
__attribute__((constructor)) static void rules_in_order(void)
{
    memcpy(wsl_rules, found_rules, sizeof found_rules);
    qsort(wsl_rules, wsl_rule_count, sizeof wsl_rules[0], by_order);
}

const char *const wsl_rules_need_gpu_timing[] = {"launch_bound", "dispatch_bound", "gpu_idle"}; /* not evaluated without it */
const size_t wsl_rules_need_gpu_timing_count = sizeof wsl_rules_need_gpu_timing / sizeof wsl_rules_need_gpu_timing[0];

static int by_time_lost(const void *a, const void *b)
{
    const struct wsl_finding *x = a, *y = b;
    if (x->time_lost_ns != y->time_lost_ns)
        return x->time_lost_ns > y->time_lost_ns ? -1 : 1;
    return strcmp(x->id, y->id);
}

/* The CUDA host-time rules charge disjoint calls, but calls of parallel
 * threads and processes overlap in time: keep their sum within the wall time
 * by scaling them down together. */
static void cap_cuda_host_time(struct wsl_run *run, const bool *cuda_host)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < run->finding_count; i++)
        if (cuda_host[i])
            sum += run->findings[i].time_lost_ns;
    if (sum <= run->wall_ns)
        return;
    double scale = (double)run->wall_ns / (double)sum;
    for (size_t i = 0; i < run->finding_count; i++)
        if (cuda_host[i]) {
            struct wsl_finding *f = &run->findings[i];
            f->time_lost_ns = (uint64_t)((double)f->time_lost_ns * scale);
            f->scaled_to_wall = true;
            if (!f->severity_fixed)
                f->severity = wsl_severity_of(f->time_lost_ns, run->wall_ns);
        }
}

void wsl_rules_run(struct wsl_run *run)
{
    bool cuda_host[sizeof wsl_rules / sizeof wsl_rules[0]];
    for (size_t i = 0; i < wsl_rule_count; i++) {
        const struct wsl_rule *rule = wsl_rules[i];
        struct wsl_finding f;
        memset(&f, 0, sizeof f);
        f.id = rule->id;
        f.how_computed = rule->how_computed;
        f.fix = rule->fix;
        if (!rule->evaluate(run, &f)) {
            wsl_findings_free_one(&f);
            continue;
        }
        if (f.time_lost_ns > run->wall_ns)
            f.time_lost_ns = run->wall_ns;     /* parallel processes can lose more than the run lasted */
        if (!f.severity_fixed)
            f.severity = wsl_severity_of(f.time_lost_ns, run->wall_ns);
        if (rule->gpu_time) {
            uint64_t samples = run->kernels.kernels_timed + run->kernels.graphs_timed;
            wsl_evidence_u64(&f, "gpu_samples", samples);
            if (run->kernels.launches > run->kernels.captured_launches)
                wsl_evidence_number(&f, "gpu_covered_share",
                                    (double)run->kernels.covered_launches /
                                        (double)(run->kernels.launches - run->kernels.captured_launches));
            if (samples < WSL_RULE_MIN_GPU_SAMPLES) { /* too few GPU times to rank it */
                f.severity = WSL_SEVERITY_LOW;
                f.severity_fixed = true;
            }
        }
        run->findings = xrealloc(run->findings, (run->finding_count + 1) * sizeof *run->findings);
        cuda_host[run->finding_count] = rule->cuda_host_time;
        run->findings[run->finding_count++] = f;
    }
    cap_cuda_host_time(run, cuda_host);
    wsl_rules_sort(run);
}

void wsl_rules_sort(struct wsl_run *run)
{
    if (run->finding_count > 1)
        qsort(run->findings, run->finding_count, sizeof *run->findings, by_time_lost);
}
