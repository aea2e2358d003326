/*
 * The HTML report (wslshim-report --html FILE): one self-contained page,
 * inline CSS and SVG, nothing loaded from anywhere (no script, no font, no
 * image file; the timeline's whole-run view opens with a <details> element). docs/html-report.md describes the page.
 *
 * Two steps:
 *   1. wsl_html_series_build: a second streaming pass over the traces of a
 *      finished run (the run model keeps totals, not time), into a fixed
 *      number of time buckets, once over the whole run and once over its
 *      steady state: kernel submissions, estimated GPU busy time (from the
 *      sampled GPU_KERNEL events), bytes read, device memory in use. Memory
 *      is bounded whatever the trace holds: the bucket arrays, the reader's
 *      buffers and at most WSL_MEM_MAX_LIVE live allocations per process.
 *   2. wsl_html_write: the page, from the run model and its series.
 *
 * wsl_html_write takes a list of runs: one run gives the single-run page;
 * two or more put every section's runs side by side in columns, in the order
 * given (for --compare: the baseline first), each headed by its label. A
 * comparison section of its own (deltas) can be passed as extra_section, a
 * callback that writes HTML between the summary and the bottlenecks.
 *
 * Every string from a trace (paths, kernel and API names, command lines,
 * host names, rule text quoting them) is escaped; bytes that are not UTF-8
 * and control characters are written as U+FFFD.
 */
#ifndef WSLSHIM_REPORT_HTML_H
#define WSLSHIM_REPORT_HTML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis.h"
#include "progress.h"

#define WSL_HTML_BUCKETS 200u   /* time buckets of the timeline, whatever the run's length */

/* One view of the run in WSL_HTML_BUCKETS buckets of time. */
struct wsl_html_view {
    uint64_t from_ns;           /* its start, ns from the run's start */
    uint64_t bucket_ns;         /* width of one bucket (the span / WSL_HTML_BUCKETS, rounded up) */
    unsigned buckets;           /* WSL_HTML_BUCKETS (0: the view is not there) */
    /* per bucket, by the start of the call: */
    uint64_t launches[WSL_HTML_BUCKETS];   /* successful kernel and graph launch calls */
    uint64_t io_bytes[WSL_HTML_BUCKETS];   /* bytes returned by successful reads */
    uint64_t mem_bytes[WSL_HTML_BUCKETS];  /* device memory in use (allocations less frees), the most in the
                                              bucket, summed over processes; carried over empty buckets */
    /* per bucket, by overlap: timed GPU work (GPU_KERNEL), each process's
     * share scaled by its launches / timed launches (1 in N sampled) and
     * capped at bucket_ns per stream that process ran timed work on */
    double gpu_busy_ns[WSL_HTML_BUCKETS];
    uint64_t launch_total, io_bytes_total;
    uint64_t gpu_samples;       /* GPU_KERNEL events in the view */
};

struct wsl_html_series {
    uint64_t start_ns;          /* the run's start, CLOCK_MONOTONIC */
    struct wsl_html_view whole; /* the whole run */
    struct wsl_html_view steady;/* the steady state (run->phases), when known: what the page opens on */
    uint64_t mem_peak_bytes;    /* the largest mem_bytes of the whole view */
};

/* Reads every process's trace of the finished run once more. Returns 0, or
 * -1 with one line in err (a trace unreadable or changed since). progress
 * may be NULL. */
int wsl_html_series_build(const struct wsl_run *run, struct wsl_html_series *series,
                          struct wsl_progress *progress, char *err, size_t errlen);

struct wsl_html_run {
    const char *label;          /* column heading when there are several runs (e.g. "A: native"); may be NULL */
    const struct wsl_run *run;  /* finished (wsl_run_finish) */
    const struct wsl_html_series *series; /* may be NULL: the timeline is left out */
};

struct wsl_html_options {
    const char *title;          /* NULL: "wslshim report" */
    /* Optional: writes a section of its own (well-formed HTML, strings
     * escaped with wsl_html_escape) after the summary. */
    void (*extra_section)(FILE *out, const struct wsl_html_run *runs, size_t count, void *arg);
    void *extra_arg;
};

/* Writes the page. opt may be NULL. */
void wsl_html_write(FILE *out, const struct wsl_html_run *runs, size_t count, const struct wsl_html_options *opt);

/* s as HTML text or attribute value: & < > " ' escaped, invalid UTF-8 and
 * control characters (but tab and newline) as U+FFFD. */
void wsl_html_escape(FILE *out, const char *s);

#endif /* WSLSHIM_REPORT_HTML_H */
