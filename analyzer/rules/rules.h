/*
 * Bottleneck rules: each looks at the finished run model and, when it finds
 * its problem, reports a finding: how much time it cost, what was seen
 * (evidence), and what to do about it. docs/io.md describes the I/O rules.
 *
 * Every rule is one unit of the same shape (a struct wsl_rule in its own
 * file rule_<id>.c, listed once in rules.c): what it needs from the run model,
 * when it fires, its evidence, its time-lost estimate and its advice. The
 * framework here grades severity by the share of wall time lost, caps time
 * lost at the wall time and sorts the findings, largest loss first.
 */
#ifndef WSLSHIM_RULES_H
#define WSLSHIM_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "findings.h"

struct wsl_run;

#define WSL_RULE_MIN_SHARE 0.01         /* the host-time rules stay silent below 1% of wall time */
#define WSL_RULE_MIN_GPU_SAMPLES 20     /* timed launches a GPU-time finding needs to rank above "low" */

struct wsl_rule {
    const char *id;             /* the contract's bottleneck id */
    /* Evaluation order, ascending; 0 (unset) runs after every ordered rule but gpu_idle (1000).
     * It matters to rules that read earlier findings, and to which CUDA host-time rule claims a
     * call first. */
    int order;
    const char *needs;          /* what of the run model it reads (documentation) */
    const char *how_computed;   /* copied into every finding */
    const char *fix;            /* one line, copied into every finding */
    /* true for rules whose time lost is host time of CUDA calls (each call charged to one rule
     * at most, see host_analysis.h): their sum is kept <= the wall time */
    bool cuda_host_time;
    /* true for rules that rest on the sampled GPU timing: each finding carries its sample count
     * (evidence gpu_samples) and, with fewer than WSL_RULE_MIN_GPU_SAMPLES, stays "low" */
    bool gpu_time;
    /* Decides whether the rule fires; when it does, fills f's time_lost_ns,
     * summary, advice and evidence (the framework does the rest). */
    bool (*evaluate)(const struct wsl_run *run, struct wsl_finding *f);
};

/* Rules that need GPU timing (GPU_KERNEL events): listed as not evaluated when a run has none. */
extern const char *const wsl_rules_need_gpu_timing[];
extern const size_t wsl_rules_need_gpu_timing_count;

/* Every rule, in no particular order. */
/* Every rule, in evaluation order: every rules/rule_<id>.c (found by the build,
 * rules_list.h) sorted by .order, then by id. */
extern const struct wsl_rule *wsl_rules[];
extern const size_t wsl_rule_count;

/* The analysis pipeline (pipeline.c): finishes the run model (wsl_run_model_finish), finds the
 * ranks of a distributed run, runs every rule and reads the steady state again for the findings'
 * time lost there. Call once after the last trace (wsl_run_add_trace). */
void wsl_run_finish(struct wsl_run *run);
/* true (the default): a rank of a distributed run whose steady state is the run's (within 2% of
 * its span) has its steady-state findings made on the run's reading of each trace, over the run's
 * window; false (tests): each rank reads its own. */
extern bool wsl_steady_riders;

/* Runs every rule on a finished run; the findings go to run->findings, sorted. */
void wsl_rules_run(struct wsl_run *run);
/* gpu_idle's split of its time by phase and its advice for where the idle time is (after the steady
 * state's reading). */
void wsl_rule_gpu_idle_by_phase(const struct wsl_run *run, struct wsl_finding *f);
/* Sorts run->findings by time lost, largest first. */
void wsl_rules_sort(struct wsl_run *run);

#endif /* WSLSHIM_RULES_H */
