/*
 * The HTML report's sections of cards and tables (report_html.c has the page): summary,
 * findings, the API and kernel tables, processes, warnings, phases, NVTX ranges, memory, ranks.
 */
#define _GNU_SOURCE
#include "report_html.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io_analysis.h"
#include "memory_analysis.h"
#include "u64_map.h"
#include "kernel_analysis.h"
#include "rules.h"
#include "trace_reader.h"
#include "util.h"
#include "wslshim/trace_format.h"

#include "report_html_internal.h"

void html_write_summary(FILE *out, const struct wsl_html_run *hr)
{
    const struct wsl_run *run = hr->run;
    char v[96], a[32], b[32];
    fputs("<div class=\"cards\">\n", out);
    html_card(out, "wall time", wsl_format_ns(v, sizeof v, run->wall_ns), "from the first process start to the last event");
    snprintf(v, sizeof v, "%zu", run->proc_count);
    html_card(out, run->proc_count == 1 ? "process" : "processes", v, NULL);
    uint64_t cuda_ns, io_ns;
    uint64_t cuda_calls = html_api_calls_total(run, false, &cuda_ns), io_calls = html_api_calls_total(run, true, &io_ns);
    snprintf(v, sizeof v, "%" PRIu64, cuda_calls);
    html_card(out, "CUDA driver calls", v, NULL);
    snprintf(v, sizeof v, "%s", wsl_format_ns(a, sizeof a, cuda_ns));
    html_card(out, "host time in CUDA calls", v, "summed over threads: may exceed the wall time");
    snprintf(v, sizeof v, "%" PRIu64, run->kernels.launches + run->kernels.graph_launches);
    html_card(out, "kernel + graph launches", v, NULL);
    if (run->kernels.kernels_timed + run->kernels.graphs_timed) {
        snprintf(v, sizeof v, "%" PRIu64, run->kernels.kernels_timed + run->kernels.graphs_timed);
        html_card(out, "launches timed on the GPU", v, NULL);
        if (run->kernels.busy_estimate >= 0) {
            snprintf(v, sizeof v, "%.0f%%", 100.0 * run->kernels.busy_estimate);
            html_card(out, "GPU busy (estimate)", v, "estimated GPU time of all launches / wall time of the processes");
        }
    }
    snprintf(v, sizeof v, "%" PRIu64, io_calls);
    html_card(out, "file I/O calls", v, NULL);
    snprintf(v, sizeof v, "%s in %s", wsl_format_bytes(a, sizeof a, run->io.total.data.bytes_read),
             wsl_format_ns(b, sizeof b, run->io.total.data.read_time));
    html_card(out, "data files read", v, "bytes read from the program's data files (not code, not /proc)");
    if (run->mem.any) {
        html_card(out, "peak device memory", wsl_format_bytes(v, sizeof v, run->mem.peak_bytes),
             "most device bytes allocated at once through the driver");
    }
    snprintf(v, sizeof v, "%zu", run->finding_count);
    html_card(out, run->finding_count == 1 ? "bottleneck" : "bottlenecks", v, NULL);
    fputs("</div>\n", out);
}

static void write_evidence(FILE *out, const struct wsl_finding *f)
{
    if (!f->evidence_count)
        return;
    fputs("<details><summary>evidence</summary><table class=\"ev\">\n", out);
    for (size_t i = 0; i < f->evidence_count; i++) {
        const struct wsl_evidence *e = &f->evidence[i];
        fputs("<tr><td class=\"mono\">", out);
        esc(out, e->key);
        fputs("</td><td class=\"name\">", out);
        switch (e->type) {
        case WSL_EVIDENCE_U64: fprintf(out, "%" PRIu64, e->u64); break;
        case WSL_EVIDENCE_NUMBER: fprintf(out, "%.6g", e->number); break;
        case WSL_EVIDENCE_BOOL: fputs(e->flag ? "true" : "false", out); break;
        case WSL_EVIDENCE_STRING: esc(out, e->string); break;
        case WSL_EVIDENCE_STRINGS:
            for (size_t k = 0; k < e->string_count; k++) {
                if (k)
                    fputs("<br>", out);
                esc(out, e->strings[k]);
            }
            break;
        }
        fputs("</td></tr>\n", out);
    }
    fputs("</table></details>\n", out);
}

void html_write_findings(FILE *out, const struct wsl_html_run *hr)
{
    const struct wsl_run *run = hr->run;
    if (!run->finding_count) {
        fputs("<p class=\"muted\">No bottleneck found.</p>\n", out);
        return;
    }
    for (size_t i = 0; i < run->finding_count; i++) {
        const struct wsl_finding *f = &run->findings[i];
        const char *sev = wsl_severity_name(f->severity);
        fputs("<div class=\"finding ", out);
        esc(out, sev);
        fputs("\" data-id=\"", out);
        esc(out, f->id);
        fputs("\"><h3><span class=\"sev ", out);
        esc(out, sev);
        fputs("\">", out);
        esc(out, sev);
        fputs("</span><code>", out);
        esc(out, f->id);
        fputs("</code> <span class=\"muted\">time lost ", out);
        fmt_ns(out, f->time_lost_ns);
        if (run->wall_ns)
            fprintf(out, " (%.1f%% of the wall time)", 100.0 * (double)f->time_lost_ns / (double)run->wall_ns);
        fputs("</span></h3>\n<p>", out);
        esc(out, f->summary);
        fputs("</p>\n<p class=\"advice\"><b>Advice:</b> ", out);
        esc(out, f->advice);
        fputs("</p>\n", out);
        write_evidence(out, f);
        if (f->how_computed) {
            fputs("<details><summary>how it is computed</summary><p class=\"note\">", out);
            esc(out, f->how_computed);
            fputs("</p></details>\n", out);
        }
        fputs("</div>\n", out);
    }
}

/* ---- tables ------------------------------------------------------------------------------------ */

#define API_ROWS 30
#define KERNEL_ROWS 15

void html_write_api_table(FILE *out, const struct wsl_html_run *hr)
{
    const struct wsl_run *run = hr->run;
    if (!run->api_count)
        return;
    fputs("<table><thead><tr><th class=\"l\">API</th><th>calls</th><th>total</th><th>mean</th><th>p50</th><th>p99</th>"
          "<th>errors</th></tr></thead><tbody>\n", out);
    size_t shown = 0;
    for (size_t i = 0; i < run->api_count && shown < API_ROWS; i++) {
        const struct wsl_api_stats *a = &run->apis[i];
        if (!a->ns.count)
            continue;
        shown++;
        fputs("<tr><td class=\"name mono\">", out);
        esc(out, a->name);
        fprintf(out, "</td><td>%" PRIu64 "</td><td>", a->ns.count);
        fmt_ns(out, a->ns.sum);
        fputs("</td><td>", out);
        fmt_ns(out, wsl_api_mean_ns(a));
        fputs("</td><td>", out);
        fmt_ns(out, wsl_hist_quantile(&a->ns, 0.5));
        fputs("</td><td>", out);
        fmt_ns(out, wsl_hist_quantile(&a->ns, 0.99));
        fprintf(out, "</td><td>%" PRIu64 "</td></tr>\n", a->errors);
    }
    fputs("</tbody></table>\n", out);
}

void html_write_kernel_table(FILE *out, const struct wsl_html_run *hr)
{
    const struct wsl_kernels *k = &hr->run->kernels;
    if (!k->count) {
        fputs("<p class=\"muted\">No kernel launch recorded.</p>\n", out);
        return;
    }
    fputs("<table><thead><tr><th class=\"l\">kernel</th><th>launches</th><th>timed</th><th>GPU p50</th><th>GPU p99</th>"
          "<th>est. GPU total</th></tr></thead><tbody>\n", out);
    for (size_t i = 0; i < k->count && i < KERNEL_ROWS; i++) {
        const struct wsl_kernel *kn = &k->items[i];
        fputs("<tr><td class=\"name mono\">", out);
        esc(out, kn->name);
        fprintf(out, "</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>", kn->launches, kn->gpu_ns.count);
        if (kn->gpu_ns.count) {
            fmt_ns(out, wsl_hist_quantile(&kn->gpu_ns, 0.5));
            fputs("</td><td>", out);
            fmt_ns(out, wsl_hist_quantile(&kn->gpu_ns, 0.99));
            fputs("</td><td>", out);
            fmt_ns(out, kn->est_gpu_ns);
        } else if (kn->est_gpu_ns) {
            /* never timed: the process's mean timed kernel time x launches */
            fputs("</td><td></td><td class=\"muted\" title=\"never timed: the process's mean timed kernel time x "
                  "launches\">~", out);
            fmt_ns(out, kn->est_gpu_ns);
            fputs(" (estimate)", out);
        } else {
            fputs("</td><td></td><td>", out);
        }
        fputs("</td></tr>\n", out);
    }
    fputs("</tbody></table>\n", out);
    if (k->count > KERNEL_ROWS)
        fprintf(out, "<p class=\"note\">%zu more kernels in the JSON report.</p>\n", k->count - KERNEL_ROWS);
}

void html_write_processes(FILE *out, const struct wsl_html_run *hr)
{
    const struct wsl_run *run = hr->run;
    fputs("<table><thead><tr><th>pid</th><th>ppid</th><th class=\"l\">command</th><th class=\"l\">platform</th><th class=\"l\">GPU</th>"
          "<th>events</th><th>dropped</th><th>time</th></tr></thead><tbody>\n", out);
    for (size_t i = 0; i < run->proc_count; i++) {
        const struct wsl_process *p = &run->procs[i];
        fprintf(out, "<tr><td>%" PRId32 "</td><td>%" PRId32 "</td><td class=\"name mono\">", p->pid, p->ppid);
        if (!p->argc)
            esc(out, p->exe);
        for (uint32_t k = 0; k < p->argc; k++) {
            if (k)
                fputc(' ', out);
            esc(out, p->argv[k]);
        }
        fputs("</td><td class=\"l\">", out);
        fputs(p->flags & WSL_PROC_WSL2 ? "WSL2" : p->flags & WSL_PROC_WSL1 ? "WSL1" : "Linux", out);
        fputs(" <span class=\"muted\">", out);
        esc(out, p->host);
        fputs("</span></td><td class=\"l\">", out);
        for (uint32_t g = 0; g < p->gpu_count; g++) {
            if (g)
                fputs("<br>", out);
            esc(out, p->gpus[g].name);
        }
        fprintf(out, "</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>", p->events, p->dropped);
        fmt_ns(out, p->end_ns > p->start_ns ? p->end_ns - p->start_ns : 0);
        if (p->truncated)
            fputs(" <span class=\"warn\">(cut short)</span>", out);
        fputs("</td></tr>\n", out);
    }
    fputs("</tbody></table>\n", out);
}

void html_write_warnings(FILE *out, const struct wsl_html_run *hr)
{
    const struct wsl_run *run = hr->run;
    if (!run->warning_count)
        return;
    fputs("<ul class=\"warn\">\n", out);
    for (size_t i = 0; i < run->warning_count; i++) {
        fputs("<li>", out);
        esc(out, run->warnings[i]);
        fputs("</li>\n", out);
    }
    fputs("</ul>\n", out);
}

/* ---- phases, NVTX, memory, ranks ---------------------------------------------------------------- */

void html_write_phases(FILE *out, const struct wsl_html_run *hr)
{
    const struct wsl_run *run = hr->run;
    bool any = false;
    for (size_t i = 0; i < run->proc_count; i++) {
        const struct wsl_process *p = &run->procs[i];
        const struct wsl_phases *ph = &p->phases;
        if (ph->method == WSL_STEADY_NONE || ph->end_ns <= ph->start_ns)
            continue;
        any = true;
        uint64_t d[4] = {ph->first_submit_ns - ph->start_ns, ph->steady_start_ns - ph->first_submit_ns,
                         ph->steady_end_ns - ph->steady_start_ns, ph->end_ns - ph->steady_end_ns};
        static const char *const names[4] = {"start-up", "warm-up", "steady state", "teardown"};
        double total = (double)(ph->end_ns - ph->start_ns);
        fprintf(out, "<p class=\"colhead\">pid %d", (int)p->pid);
        if (p->argc) {
            fputs(": ", out);
            const char *slash = strrchr(p->argv[0], '/');
            esc(out, slash ? slash + 1 : p->argv[0]);
            for (uint32_t k = 1; k < p->argc && k < 4; k++) {
                fputc(' ', out);
                esc(out, p->argv[k]);
            }
        }
        fputs("</p>\n<div class=\"bar4\" data-chart=\"phases\">", out);
        for (int k = 0; k < 4; k++) {
            fprintf(out, "<span class=\"p%d\" style=\"width:%.2f%%\" title=\"%s: ", k, 100.0 * (double)d[k] / total,
                    names[k]);
            fmt_ns(out, d[k]);
            fprintf(out, "\">%s</span>", names[k]);
        }
        fputs("</div>\n<table><tr><th class=\"l\">start-up</th><th>warm-up</th><th>steady state</th><th>teardown</th>"
              "<th>steps</th><th>step time (median)</th><th class=\"l\">found by</th></tr>\n<tr>", out);
        for (int k = 0; k < 4; k++) {
            fputs(k ? "<td>" : "<td class=\"l\">", out);
            fmt_ns(out, d[k]);
            fputs("</td>", out);
        }
        fprintf(out, "<td>%" PRIu64 "</td><td>", ph->steps);
        if (ph->step_ns)
            fmt_ns(out, ph->step_ns);
        else
            fputs("-", out);
        fprintf(out, "</td><td class=\"l\">%s</td></tr>\n</table>\n", wsl_steady_method_name(ph->method));
    }
    if (!any)
        fputs("<p class=\"muted\">No process submitted GPU work: no phases.</p>\n", out);
    else if (run->phases.steady_known)
        fprintf(out, "<p class=\"note\">Steady state of the run (every GPU process's together): %.4g s to %.4g s "
                     "after the start.</p>\n",
                (double)(run->phases.steady_start_ns - run->start_ns) / 1e9,
                (double)(run->phases.steady_end_ns - run->start_ns) / 1e9);
}

#define NVTX_ROWS 20

void html_write_nvtx(FILE *out, const struct wsl_html_run *hr)
{
    const struct wsl_nvtx *n = &hr->run->nvtx;
    if (!n->range_count) {
        fputs("<p class=\"muted\">No NVTX range was recorded (the program marks none; see docs/nvtx.md).</p>\n", out);
        return;
    }
    if (n->step >= 0) {
        const struct wsl_nvtx_range *st = &n->ranges[n->step];
        fputs("<p>Step: <b>", out);
        esc(out, st->name);
        fprintf(out, "</b>, %" PRIu64 " instances, mean ", st->count);
        fmt_ns(out, wsl_nvtx_mean_ns(st));
        fputs(", p50 ", out);
        fmt_ns(out, wsl_hist_quantile(&st->ns, 0.5));
        fputs(", p99 ", out);
        fmt_ns(out, wsl_hist_quantile(&st->ns, 0.99));
        if (n->step_process_known && n->step_process_steps)
            fprintf(out, "; per step, the process made %.1f launches and %.1f file reads",
                    (double)n->step_process.launches / (double)n->step_process_steps,
                    (double)n->step_process.io_reads / (double)n->step_process_steps);
        fputs(".</p>\n", out);
    }
    fputs("<table data-chart=\"nvtx\"><tr><th class=\"l\">range</th><th class=\"l\">domain</th><th>count</th>"
          "<th>total</th><th>mean</th><th>p99</th><th>launches (incl.)</th><th>file reads (incl.)</th></tr>\n", out);
    for (size_t i = 0; i < n->range_count && i < NVTX_ROWS; i++) {
        const struct wsl_nvtx_range *r = &n->ranges[i];
        fputs("<tr><td class=\"name\">", out);
        for (uint32_t d = 0; d < r->max_depth && d < 6; d++)
            fputs("&nbsp;&nbsp;", out);
        esc(out, r->name);
        if ((long)i == n->step)
            fputs(" <b>(step)</b>", out);
        if (r->kind == WSL_NVTX_START)
            fputs(" (start/end)", out);
        fputs("</td><td class=\"l\">", out);
        esc(out, r->domain ? r->domain : "(default)");
        fprintf(out, "</td><td>%" PRIu64 "</td><td>", r->count);
        fmt_ns(out, r->ns.sum);
        fputs("</td><td>", out);
        fmt_ns(out, wsl_nvtx_mean_ns(r));
        fputs("</td><td>", out);
        fmt_ns(out, wsl_hist_quantile(&r->ns, 0.99));
        fprintf(out, "</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td></tr>\n", r->incl.launches, r->incl.io_reads);
    }
    fputs("</table>\n", out);
    if (n->range_count > NVTX_ROWS)
        fprintf(out, "<p class=\"note\">%zu more ranges in the JSON report.</p>\n", n->range_count - NVTX_ROWS);
}

void html_write_memory(FILE *out, const struct wsl_html_run *hr)
{
    const struct wsl_html_series *s = hr->series;
    const struct wsl_mem_summary *m = &hr->run->mem;
    fputs("<p>Peak device memory in use: ", out);
    fmt_bytes(out, m->peak_bytes);
    fputs(" (the largest process's).</p>\n", out);
    if (!s || !s->mem_peak_bytes) {
        fputs("<p class=\"muted\">No device allocation was recorded over time.</p>\n", out);
        return;
    }
    double mem[WSL_HTML_BUCKETS];
    for (unsigned b = 0; b < s->whole.buckets; b++)
        mem[b] = (double)s->whole.mem_bytes[b];
    html_svg_open(out, 150, "device memory in use over the run");
    html_phase_bands(out, hr->run, &s->whole, 4, 128);
    html_timeline_panel(out, &s->whole, 30, 98, mem, 1, 0, VALUE_BYTES, "memory-over-time", "s4",
                   "device memory in use over the whole run (phases behind)", "");
    fputs("</svg>\n", out);
}

void html_write_ranks(FILE *out, const struct wsl_html_run *hr)
{
    const struct wsl_dist *d = &hr->run->dist;
    fputs("<table data-chart=\"ranks\"><tr><th class=\"l\">rank</th><th>pid</th><th class=\"l\">host</th><th>GPU</th>"
          "<th>wall</th><th>GPU time</th><th>collectives</th><th>waiting</th><th>steps</th><th>step mean</th></tr>\n",
          out);
    for (size_t i = 0; i < d->count; i++) {
        const struct wsl_rank *r = &d->ranks[i];
        fprintf(out, "<tr><td class=\"l\">%d</td><td>%d</td><td class=\"l\">", (int)r->rank, (int)r->pid);
        esc(out, r->host ? r->host : "?");
        fprintf(out, "</td><td>%d</td><td>", (int)r->gpu);
        fmt_ns(out, r->wall_ns);
        fputs("</td><td>", out);
        fmt_ns(out, r->gpu_ns);
        fputs("</td><td>", out);
        fmt_ns(out, r->collective_ns);
        fputs("</td><td>", out);
        fmt_ns(out, r->wait_ns);
        fprintf(out, "</td><td>%" PRIu64 "</td><td>", r->steps);
        if (r->have_step)
            fmt_ns(out, r->step_mean_ns);
        else
            fputs("-", out);
        fputs("</td></tr>\n", out);
    }
    fputs("</table>\n", out);
    if (d->imbalance > 0)
        fprintf(out, "<p class=\"note\">Compute imbalance (slowest / fastest rank): %.2fx.</p>\n", d->imbalance);
}

