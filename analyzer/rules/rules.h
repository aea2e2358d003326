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

struct wsl_run;

enum wsl_severity { WSL_SEVERITY_LOW, WSL_SEVERITY_MEDIUM, WSL_SEVERITY_HIGH };

#define WSL_SEVERITY_HIGH_SHARE 0.20    /* time lost >= 20% of wall time */
#define WSL_SEVERITY_MEDIUM_SHARE 0.05  /* >= 5% */
#define WSL_RULE_MIN_SHARE 0.01         /* the host-time rules stay silent below 1% of wall time */
#define WSL_RULE_MIN_GPU_SAMPLES 20     /* timed launches a GPU-time finding needs to rank above "low" */

enum wsl_evidence_type { WSL_EVIDENCE_U64, WSL_EVIDENCE_NUMBER, WSL_EVIDENCE_BOOL, WSL_EVIDENCE_STRING,
                         WSL_EVIDENCE_STRINGS };

struct wsl_evidence {           /* one key of a finding's "evidence" object */
    char *key;
    enum wsl_evidence_type type;
    uint64_t u64;
    double number;
    bool flag;
    char *string;
    char **strings;
    size_t string_count;
};

struct wsl_finding {
    const char *id;             /* the rule's id, e.g. "cross_os_reads" */
    enum wsl_severity severity;
    bool severity_fixed;        /* set by the rule (risk rules): the framework keeps it */
    uint64_t time_lost_ns;      /* at most the run's wall time */
    char *summary;              /* one sentence with the numbers */
    char *advice;               /* what to do, with commands where there are some */
    const char *how_computed;   /* the rule's method, one paragraph */
    const char *fix;            /* the one-line fix (the summary screen) */
    bool scaled_to_wall;        /* time lost was scaled down so that the CUDA host-time rules sum to <= wall */
    /* The same finding in the steady state alone (wsl_run_finish reads the traces again, restricted to
     * it): its time lost there; steady_fired false: the rule does not fire there (steady_lost_ns 0). */
    bool steady_known, steady_fired;
    uint64_t steady_lost_ns;
    struct wsl_evidence *evidence;
    size_t evidence_count;
};

struct wsl_rule {
    const char *id;             /* the contract's bottleneck id */
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

extern const struct wsl_rule wsl_rule_cross_os_reads;
extern const struct wsl_rule wsl_rule_small_file_reads;
extern const struct wsl_rule wsl_rule_vram_headroom;
extern const struct wsl_rule wsl_rule_pinned_memory;
extern const struct wsl_rule wsl_rule_managed_memory;
extern const struct wsl_rule wsl_rule_sync_heavy;
extern const struct wsl_rule wsl_rule_alloc_churn;
extern const struct wsl_rule wsl_rule_small_transfers;
extern const struct wsl_rule wsl_rule_pageable_transfers;
extern const struct wsl_rule wsl_rule_launch_bound;
extern const struct wsl_rule wsl_rule_gpu_idle;
extern const struct wsl_rule wsl_rule_dispatch_bound;
extern const struct wsl_rule wsl_rule_dataloader_wait;
extern const struct wsl_rule wsl_rule_startup;
extern const struct wsl_rule wsl_rule_compilation;
/* Rules that need GPU timing (GPU_KERNEL events): listed as not evaluated when a run has none. */
extern const char *const wsl_rules_need_gpu_timing[];
extern const size_t wsl_rules_need_gpu_timing_count;

/* Every rule, in no particular order. */
extern const struct wsl_rule *const wsl_rules[];
extern const size_t wsl_rule_count;

/* Runs every rule on a finished run; the findings go to run->findings, sorted. */
void wsl_rules_run(struct wsl_run *run);
void wsl_findings_free(struct wsl_finding *findings, size_t count);
void wsl_findings_free_one(struct wsl_finding *f); /* its strings and evidence, not f itself */
/* gpu_idle's split of its time by phase and its advice for where the idle time is (after the steady
 * state's reading). */
void wsl_rule_gpu_idle_by_phase(const struct wsl_run *run, struct wsl_finding *f);
/* Sorts run->findings by time lost, largest first. */
void wsl_rules_sort(struct wsl_run *run);

const char *wsl_severity_name(enum wsl_severity s);
enum wsl_severity wsl_severity_of(uint64_t time_lost_ns, uint64_t wall_ns);

/* Evidence, in the order added. */
void wsl_evidence_u64(struct wsl_finding *f, const char *key, uint64_t v);
void wsl_evidence_number(struct wsl_finding *f, const char *key, double v);
void wsl_evidence_bool(struct wsl_finding *f, const char *key, bool v);
void wsl_evidence_string(struct wsl_finding *f, const char *key, const char *s);
/* Appends s to the string list `key` (created on first use). */
void wsl_evidence_list_add(struct wsl_finding *f, const char *key, const char *s);

#endif /* WSLSHIM_RULES_H */
