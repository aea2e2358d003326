/*
 * Two runs side by side (wslshim-report --compare A B): A is the baseline,
 * B the other run. Per API: counts and host time per call; per filesystem:
 * file I/O; per bottleneck: time lost in each; and the wall-time difference
 * split into causes:
 *
 *   per API group (launches, synchronizations, allocations, copies, ...):
 *     host time difference = (calls_b - calls_a) x mean_a      "more calls"
 *                          + (mean_b - mean_a) x calls_b       "slower calls"
 *     (exact: calls_b x mean_b - calls_a x mean_a)
 *   per filesystem: the difference of host time in file calls on it.
 *
 * Host time is summed over threads and processes, and part of it overlaps
 * (DataLoader workers read while the main thread computes), so the estimates
 * can add up to more than the wall-time difference. The causes in the
 * direction of the difference are scaled down together so that, with the
 * causes in the other direction taken whole, their sum never exceeds it; the
 * rest is "unexplained" (GPU time, Python, anything not in recorded calls).
 */
#ifndef WSLSHIM_COMPARE_H
#define WSLSHIM_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis.h"

#define WSL_COMPARE_MIN_CAUSE_NS 1000000    /* causes under 1 ms (either way) are left out */

enum wsl_cause_kind { WSL_CAUSE_API_CALLS, WSL_CAUSE_API_TIME, WSL_CAUSE_IO };

struct wsl_cause {
    enum wsl_cause_kind kind;
    const char *name;           /* the API group or the filesystem type */
    int64_t estimate_ns;        /* signed: > 0 when B spent more */
    int64_t attributed_ns;      /* after scaling: the part of the wall difference it explains */
    char *text;                 /* "1.20 M more launches in B x 34.0 us each" */
};

struct wsl_compare_api {        /* one API name, in A, B or both */
    const char *name;
    uint16_t category;
    const struct wsl_api_stats *a, *b;  /* NULL when the run did not call it */
};

struct wsl_compare_fs {
    const char *fstype;
    const struct wsl_io_fs *a, *b;      /* NULL when the run did no I/O there */
};

struct wsl_compare_finding {
    const char *id;
    const struct wsl_finding *a, *b;    /* NULL when the rule did not fire */
};

struct wsl_compare {
    const struct wsl_run *a, *b;
    int64_t wall_diff_ns;               /* wall_b - wall_a */
    struct wsl_compare_api *apis;       /* by the larger of the two total host times */
    size_t api_count;
    struct wsl_compare_fs *fs;
    size_t fs_count;
    struct wsl_compare_finding *findings;   /* by the larger time lost */
    size_t finding_count;
    struct wsl_cause *causes;           /* by |attributed_ns|, largest first */
    size_t cause_count;
    double scale;                       /* applied to the causes in the difference's direction (<= 1) */
    int64_t explained_ns, unexplained_ns;   /* explained + unexplained = wall_diff_ns */
};

/* The API group of a category: "launches", "synchronizations", "allocations", "copies",
 * "memsets", "events", "other"; NULL for file I/O categories. */
const char *wsl_api_group(unsigned category);

/* Builds the comparison; the runs must outlive it. */
void wsl_compare_build(struct wsl_compare *c, const struct wsl_run *a, const struct wsl_run *b);
void wsl_compare_free(struct wsl_compare *c);

#endif /* WSLSHIM_COMPARE_H */
