/* The report writers: each prints a finished struct wsl_run in one format. */
#ifndef WSLSHIM_REPORT_OUTPUT_H
#define WSLSHIM_REPORT_OUTPUT_H

#include <stdio.h>

#include "analysis.h"

#define WSL_REPORT_SCHEMA 1

void report_write_text(const struct wsl_run *run, FILE *out);
void report_write_json(const struct wsl_run *run, FILE *out);

/* The distributed parts (report_distributed.c): "ranks" and "distributed" keys, the text section. */
struct json_writer;
void report_json_distributed(struct json_writer *w, const struct wsl_run *run);
void report_text_distributed(FILE *out, const struct wsl_run *run);

#endif /* WSLSHIM_REPORT_OUTPUT_H */
