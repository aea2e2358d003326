/* report_json_internal.h: shared by the files of report_json.c's split (private to them). */
#ifndef REPORT_JSON_INTERNAL_H
#define REPORT_JSON_INTERNAL_H

#include "json_writer.h"
#include "report_output.h"
#include "util.h"
#include "wslshim/trace_format.h"

/* part / whole, 0 when whole is 0 */
static inline double report_share(uint64_t part, uint64_t whole)
{
    return whole ? (double)part / (double)whole : 0;
}

void report_json_write_io_counts(struct json_writer *w, const struct wsl_io_counts *c);
/* The counts as an object under key. */
void report_json_write_io_counts_object(struct json_writer *w, const char *key, const struct wsl_io_counts *c);
void report_json_write_api(struct json_writer *w, const struct wsl_api_stats *a);
void report_json_write_io(struct json_writer *w, const struct wsl_io *io);
void report_json_write_memory(struct json_writer *w, const struct wsl_run *run);
void report_json_write_gpu(struct json_writer *w, const struct wsl_run *run, const struct wsl_kernels *k);
void report_json_write_nvtx_range(struct json_writer *w, const struct wsl_nvtx_range *r);
void report_json_write_nvtx_summary(struct json_writer *w, const struct wsl_nvtx *n);

#endif
