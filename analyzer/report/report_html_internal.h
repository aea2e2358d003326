/* report_html_internal.h: shared by the files of report_html.c's split (private to them). */
#ifndef REPORT_HTML_INTERNAL_H
#define REPORT_HTML_INTERNAL_H

#include "report_html.h"
#include "io_analysis.h"
#include "memory_analysis.h"
#include "u64_map.h"
#include "kernel_analysis.h"
#include "rules.h"
#include "trace_reader.h"
#include "util.h"
#include "wslshim/trace_format.h"

enum value_kind { VALUE_COUNT, VALUE_BYTES, VALUE_PERCENT };

static inline void esc(FILE *out, const char *s) { wsl_html_escape(out, s ? s : ""); }

static inline void fmt_ns(FILE *out, uint64_t ns)
{
    char b[32];
    fputs(wsl_format_ns(b, sizeof b, ns), out);
}

static inline void fmt_bytes(FILE *out, uint64_t v)
{
    char b[32];
    fputs(wsl_format_bytes(b, sizeof b, v), out);
}

void html_card(FILE *out, const char *key, const char *value, const char *title);
uint64_t html_api_calls_total(const struct wsl_run *run, bool io, uint64_t *time);
void html_write_summary(FILE *out, const struct wsl_html_run *hr);
void html_write_findings(FILE *out, const struct wsl_html_run *hr);
void html_write_api_table(FILE *out, const struct wsl_html_run *hr);
void html_write_kernel_table(FILE *out, const struct wsl_html_run *hr);
void html_write_processes(FILE *out, const struct wsl_html_run *hr);
void html_write_warnings(FILE *out, const struct wsl_html_run *hr);
void html_write_phases(FILE *out, const struct wsl_html_run *hr);
void html_write_nvtx(FILE *out, const struct wsl_html_run *hr);
void html_write_memory(FILE *out, const struct wsl_html_run *hr);
void html_write_ranks(FILE *out, const struct wsl_html_run *hr);
void html_svg_open(FILE *out, double height, const char *label);
void html_timeline_panel(FILE *out, const struct wsl_html_view *s, double top, double height,
                         const double *raw, double scale, double floor_max, enum value_kind kind,
                         const char *chart, const char *cls, const char *title, const char *unit);
void html_phase_bands(FILE *out, const struct wsl_run *run, const struct wsl_html_view *v, double top, double bottom);
void html_write_timeline(FILE *out, const struct wsl_html_run *hr);
void html_write_kernel_hist(FILE *out, const struct wsl_html_run *hr);
void html_write_api_latency(FILE *out, const struct wsl_html_run *hr);
void html_write_io_fs(FILE *out, const struct wsl_html_run *hr);

#endif
