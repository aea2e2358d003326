/* The report writers: each prints a finished struct wsl_run in one format. */
#ifndef WSLSHIM_REPORT_OUTPUT_H
#define WSLSHIM_REPORT_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

#include "analysis.h"
#include "compare.h"
#include "projection.h"
#include "rules.h"

#define WSL_REPORT_SCHEMA 1

struct json_writer;

/* What each side of a comparison was read from (the arguments given). */
struct report_compare_labels {
    const char *const *a, *const *b;
    size_t a_count, b_count;
};

/* color: ANSI colours and bold (the caller decides: --color, a terminal, NO_COLOR). */
void report_write_text(const struct wsl_run *run, FILE *out, bool color);
/* The JSON report of run; with cmp (NULL: none) it adds "compare". */
void report_write_json(const struct wsl_run *run, const struct wsl_compare *cmp,
                       const struct report_compare_labels *labels, FILE *out);

void report_write_compare_text(const struct wsl_compare *c, const struct report_compare_labels *labels, FILE *out);
void report_write_compare_json(struct json_writer *w, const struct wsl_compare *c,
                               const struct report_compare_labels *labels);

/* The distributed parts (report_distributed.c): "ranks" and "distributed" keys, the text section. */
struct json_writer;
void report_json_distributed(struct json_writer *w, const struct wsl_run *run);
/* "emulation" of a process (processes: the run's emulated processes, 0 to leave the count out) */
void report_json_emulation(struct json_writer *w, const struct wsl_process *p, size_t processes);
void report_text_distributed(FILE *out, const struct wsl_run *run);

#endif /* WSLSHIM_REPORT_OUTPUT_H */
