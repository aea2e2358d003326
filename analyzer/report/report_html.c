/*
 * The HTML report (report_html.h): the time series pass and the page with
 * its SVG charts. Charts are drawn here in C: bars and boxes as SVG shapes,
 * each with a <title> (the browser's own tooltip), colours from CSS custom
 * properties so the page reads on light and dark backgrounds and prints.
 * Here, the series pass, escaping, the page's style and frame; the charts are
 * report_html_charts.c, the other sections report_html_sections.c
 * (report_html_internal.h between them).
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

/* ---- the series pass --------------------------------------------------------------------------- */

static void add_overlap(double *busy, const struct wsl_html_view *v, uint64_t from, uint64_t to)
{
    /* [from, to) in ns from the run's start, spread over the view's buckets it covers */
    from = from > v->from_ns ? from - v->from_ns : 0;
    to = to > v->from_ns ? to - v->from_ns : 0;
    if (to <= from)
        return;
    uint64_t b = from / v->bucket_ns;
    while (b < v->buckets && from < to) {
        uint64_t edge = (b + 1) * v->bucket_ns, until = to < edge ? to : edge;
        busy[b] += (double)(until - from);
        from = until;
        b++;
    }
}

/* The view's bucket of rel (ns from the run's start), or -1 outside it. */
static long view_bucket(const struct wsl_html_view *v, uint64_t rel)
{
    if (!v->buckets || rel < v->from_ns)
        return -1;
    uint64_t b = (rel - v->from_ns) / v->bucket_ns;
    if (b >= v->buckets) {
        if (b > v->buckets)
            return -1;
        b = v->buckets - 1; /* at the very end */
    }
    return (long)b;
}

#define STREAMS_MAX 256u /* distinct streams counted per process for the busy cap */

struct view_acc {
    double busy[WSL_HTML_BUCKETS];
    uint64_t timed, launches;
    uint64_t mem[WSL_HTML_BUCKETS];
    bool mem_seen[WSL_HTML_BUCKETS];
};

static void view_mem(struct wsl_html_view *v, struct view_acc *a, uint64_t rel, uint64_t live)
{
    long b = view_bucket(v, rel);
    if (b < 0)
        return;
    if (!a->mem_seen[b] || live > a->mem[b])
        a->mem[b] = live;
    a->mem_seen[b] = true;
}

static void view_finish(struct wsl_html_view *v, struct view_acc *a, unsigned stream_count, uint64_t live_before)
{
    if (!v->buckets)
        return;
    /* 1 in N launches timed: each timed kernel stands for launches / timed of them */
    double scale = a->timed && a->launches > a->timed ? (double)a->launches / (double)a->timed : 1.0;
    /* a sampled estimate can exceed what the streams could run in a bucket: capped there */
    double cap = (double)stream_count * (double)v->bucket_ns;
    uint64_t live = live_before;
    for (unsigned b = 0; b < v->buckets; b++) {
        v->gpu_busy_ns[b] += a->busy[b] * scale < cap ? a->busy[b] * scale : cap;
        if (a->mem_seen[b])
            live = a->mem[b];
        v->mem_bytes[b] += live;
    }
    v->launch_total += a->launches;
    v->gpu_samples += a->timed;
}

static int series_trace(const struct wsl_trace_store *store, const struct wsl_process *p, struct wsl_html_series *s,
                        struct wsl_progress *progress, char *err, size_t errlen)
{
    char why[WSL_READER_ERRLEN];
    struct wsl_reader *r = wsl_store_open(store, p->trace_path, why, sizeof why);
    if (!r) {
        snprintf(err, errlen, "%s: %s", p->trace_path, why);
        return -1;
    }
    uint16_t category[WSL_MAX_API_IDS];
    uint8_t mem_op[WSL_MAX_API_IDS];
    bool defined[WSL_MAX_API_IDS];
    memset(defined, 0, sizeof defined);
    struct wsl_html_view *views[2] = {&s->whole, &s->steady};
    struct view_acc *acc = xcalloc(2, sizeof *acc);
    uint64_t streams[STREAMS_MAX];  /* streams that ran timed work: a stream runs one thing at a time */
    unsigned stream_count = 0;
    struct wsl_u64_map live = {0};  /* device pointer -> bytes (the memory counter, as --chrome replays it) */
    uint64_t live_bytes = 0, live_before_steady = 0;
    struct wsl_item it;
    enum wsl_read_result rr;
    while ((rr = wsl_reader_next(r, &it)) == WSL_READ_ITEM) {
        wsl_progress_update(progress, wsl_reader_bytes_in(r));
        if (it.type == WSL_CHUNK_API_TABLE) {
            for (uint32_t i = 0; i < it.api_table.count; i++) {
                const struct wsl_api_entry *e = &it.api_table.entries[i];
                category[e->id] = e->category;
                mem_op[e->id] = (uint8_t)wsl_mem_op_of(e->category, e->base);
                defined[e->id] = true;
            }
            continue;
        }
        if (it.type != WSL_CHUNK_EVENTS)
            continue;
        for (uint32_t i = 0; i < it.events.count; i++) {
            const struct wsl_event *ev = &it.events.events[i];
            if (ev->api >= WSL_MAX_API_IDS || !defined[ev->api])
                continue;
            unsigned cat = category[ev->api];
            uint64_t t0 = wsl_clock_to_ns(&p->clock, ev->t_start);
            uint64_t rel = t0 > s->start_ns ? t0 - s->start_ns : 0;
            unsigned op = mem_op[ev->api];
            if (ev->result == 0 && (op == WSL_MEM_ALLOC || op == WSL_MEM_ALLOC_ASYNC || op == WSL_MEM_FREE ||
                                    op == WSL_MEM_FREE_ASYNC) && ev->a[0]) {
                struct wsl_u64_slot *sl = wsl_u64_map_find(&live, ev->a[0]);
                if (sl) { /* freed, or handed out again */
                    live_bytes -= sl->value;
                    wsl_u64_map_remove(&live, sl);
                }
                if ((op == WSL_MEM_ALLOC || op == WSL_MEM_ALLOC_ASYNC) && live.count < WSL_MEM_MAX_LIVE) {
                    wsl_u64_map_insert(&live, ev->a[0], ev->a[1]);
                    live_bytes += ev->a[1];
                }
                for (int k = 0; k < 2; k++)
                    view_mem(views[k], &acc[k], rel, live_bytes);
                if (s->steady.buckets && rel < s->steady.from_ns)
                    live_before_steady = live_bytes; /* threads' chunks interleave: nearly in time order */
            }
            for (int k = 0; k < 2; k++) {
                struct wsl_html_view *v = views[k];
                long b = view_bucket(v, rel);
                if ((cat == WSL_CAT_LAUNCH || cat == WSL_CAT_GRAPH) && ev->result == 0) {
                    if (b >= 0) {
                        v->launches[b]++;
                        acc[k].launches++;
                    }
                } else if (cat == WSL_CAT_IO_READ && ev->result == 0) {
                    if (b >= 0) {
                        v->io_bytes[b] += ev->a[2];
                        v->io_bytes_total += ev->a[2];
                    }
                } else if (cat == WSL_CAT_GPU_KERNEL && v->buckets) {
                    /* the measure adjusted for the pairs, as the report's estimate (and the timeline:
                     * a queued kernel ends earlier, an idle one starts earlier) */
                    int64_t adj = p->gpu_estimate.configs ? wsl_kern_estimate_event_adjust(&p->gpu_estimate, ev) : 0;
                    uint64_t dur = ev->t_end > ev->t_start ? ev->t_end - ev->t_start : 0;
                    uint64_t t1 = wsl_clock_to_ns(&p->clock, ev->t_end - (adj < 0 ? ((uint64_t)-adj < dur ? (uint64_t)-adj : dur) : 0));
                    uint64_t rel0 = rel;
                    if (adj > 0) {
                        uint64_t k0 = wsl_clock_to_ns(&p->clock, ev->t_start > (uint64_t)adj ? ev->t_start - (uint64_t)adj : 0);
                        rel0 = k0 > s->start_ns ? k0 - s->start_ns : 0;
                    }
                    uint64_t rel1 = t1 > s->start_ns ? t1 - s->start_ns : 0;
                    add_overlap(acc[k].busy, v, rel0, rel1);
                    if (b >= 0)
                        acc[k].timed++;
                    if (k == 0) {
                        unsigned j = 0;
                        while (j < stream_count && streams[j] != ev->stream)
                            j++;
                        if (j == stream_count && stream_count < STREAMS_MAX)
                            streams[stream_count++] = ev->stream;
                    }
                }
            }
        }
    }
    wsl_u64_map_free(&live);
    if (rr == WSL_READ_ERROR) {
        snprintf(err, errlen, "%s: %s", p->trace_path, wsl_reader_message(r));
        wsl_reader_close(r);
        free(acc);
        return -1;
    }
    wsl_reader_close(r);
    view_finish(&s->whole, &acc[0], stream_count, 0);
    view_finish(&s->steady, &acc[1], stream_count, live_before_steady);
    free(acc);
    return 0;
}

static void view_init(struct wsl_html_view *v, uint64_t from_ns, uint64_t span_ns)
{
    v->buckets = WSL_HTML_BUCKETS;
    v->from_ns = from_ns;
    uint64_t span = span_ns ? span_ns : 1;
    v->bucket_ns = (span + v->buckets - 1) / v->buckets;
    if (v->bucket_ns == 0)
        v->bucket_ns = 1;
}

int wsl_html_series_build(const struct wsl_run *run, struct wsl_html_series *s, struct wsl_progress *progress,
                          char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->start_ns = run->start_ns;
    view_init(&s->whole, 0, run->wall_ns);
    const struct wsl_run_phases *ph = &run->phases;
    if (ph->known && ph->steady_end_ns > ph->steady_start_ns && ph->steady_start_ns >= run->start_ns)
        view_init(&s->steady, ph->steady_start_ns - run->start_ns, ph->steady_end_ns - ph->steady_start_ns);
    for (size_t i = 0; i < run->proc_count; i++) {
        if (series_trace(run->store, &run->procs[i], s, progress, err, errlen) != 0)
            return -1;
        struct stat st;
        wsl_progress_next_file(progress, stat(run->procs[i].trace_path, &st) == 0 ? (uint64_t)st.st_size : 0);
    }
    for (unsigned b = 0; b < s->whole.buckets; b++)
        if (s->whole.mem_bytes[b] > s->mem_peak_bytes)
            s->mem_peak_bytes = s->whole.mem_bytes[b];
    return 0;
}

/* ---- escaping -------------------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (1-4), or 0 when it is not one. */
static size_t utf8_length(const unsigned char *s)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned min;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4, min = 0x10000;
    else
        return 0;
    unsigned v = c & (0x3f >> (n - 1));
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        v = v << 6 | (s[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    /* C1 controls and non-characters are no text either */
    if ((v >= 0x80 && v <= 0x9f) || (v >= 0xfdd0 && v <= 0xfdef) || (v & 0xfffe) == 0xfffe)
        return 0;
    return n;
}

void wsl_html_escape(FILE *out, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    while (*s) {
        unsigned c = *s;
        switch (c) {
        case '&': fputs("&amp;", out); s++; continue;
        case '<': fputs("&lt;", out); s++; continue;
        case '>': fputs("&gt;", out); s++; continue;
        case '"': fputs("&quot;", out); s++; continue;
        case '\'': fputs("&#39;", out); s++; continue;
        default: break;
        }
        if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f) {
            fputs("\xef\xbf\xbd", out);
            s++;
            continue;
        }
        size_t n = utf8_length(s);
        if (n == 0) {
            fputs("\xef\xbf\xbd", out);
            s++;
            continue;
        }
        fwrite(s, 1, n, out);
        s += n;
    }
}

/* ---- page pieces ------------------------------------------------------------------------------- */

static const char page_style[] =
    ":root{color-scheme:light dark;--bg:#ffffff;--fg:#1c2024;--muted:#5b6671;--grid:#d3d9df;--card:#f3f5f7;"
    "--c1:#2563c9;--c2:#c7661c;--c3:#1f8a5b;--c4:#7a4fc4;--high:#c22525;--medium:#a35f00;--low:#5b6671}\n"
    "@media (prefers-color-scheme:dark){:root{--bg:#15181c;--fg:#e3e7eb;--muted:#9aa6b2;--grid:#3a424b;"
    "--card:#1e2329;--c1:#6ea3ff;--c2:#f0a25a;--c3:#4cc28f;--c4:#b394f0;--high:#ff6b6b;--medium:#f2b14c;"
    "--low:#9aa6b2}}\n"
    "*{box-sizing:border-box}\n"
    "body{margin:0 auto;max-width:1280px;padding:1.2em 1.5em 3em;background:var(--bg);color:var(--fg);"
    "font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif}\n"
    "h1{font-size:1.6em;margin:.2em 0 .1em}h2{font-size:1.25em;margin:1.6em 0 .5em;padding-bottom:.2em;"
    "border-bottom:1px solid var(--grid)}h3{font-size:1.05em;margin:.2em 0}\n"
    ".muted,.note{color:var(--muted)}.note{font-size:.92em}\n"
    ".cols{display:grid;gap:1.2em;grid-template-columns:repeat(var(--n),minmax(0,1fr))}\n"
    ".colhead{font-weight:600;margin:0 0 .4em;color:var(--c1)}\n"
    ".cards{display:flex;flex-wrap:wrap;gap:.6em}\n"
    ".card{background:var(--card);border-radius:6px;padding:.5em .8em;min-width:10em}\n"
    ".card .v{font-size:1.3em;font-weight:600;font-variant-numeric:tabular-nums}.card .k{color:var(--muted);"
    "font-size:.85em}\n"
    ".finding{background:var(--card);border-left:5px solid var(--low);border-radius:4px;padding:.6em .9em;"
    "margin:.6em 0;break-inside:avoid}\n"
    ".finding.high{border-left-color:var(--high)}.finding.medium{border-left-color:var(--medium)}\n"
    ".sev{display:inline-block;font-size:.78em;font-weight:700;text-transform:uppercase;padding:0 .45em;"
    "border-radius:3px;color:var(--bg);background:var(--low);margin-right:.4em}\n"
    ".sev.high{background:var(--high)}.sev.medium{background:var(--medium)}\n"
    ".advice{white-space:pre-wrap}\n"
    "code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.92em}\n"
    "table{border-collapse:collapse;margin:.4em 0;font-variant-numeric:tabular-nums}\n"
    "th,td{padding:.15em .6em;border-bottom:1px solid var(--grid);text-align:right;vertical-align:top}\n"
    "th{font-weight:600}th:first-child,td:first-child,td.l,th.l{text-align:left}\n"
    "td.name{text-align:left;max-width:42em;overflow-wrap:anywhere}\n"
    "table.ev td{text-align:left}\n"
    "details{margin-top:.3em}summary{cursor:pointer;color:var(--muted)}\n"
    "svg.chart{display:block;width:100%;height:auto;max-width:1000px;margin:.3em 0}\n"
    "svg text{fill:var(--fg);font-size:11px;font-family:system-ui,sans-serif}\n"
    "svg .ax{stroke:var(--grid);stroke-width:1}svg .lbl{fill:var(--muted)}\n"
    "svg .s1{fill:var(--c1)}svg .s2{fill:var(--c2)}svg .s3{fill:var(--c3)}svg .s4{fill:var(--c4)}\n"
    "svg .wh{stroke:var(--muted);stroke-width:1.5}svg .med{stroke:var(--fg);stroke-width:2}\n"
    "svg .pt:hover{opacity:.7}\n"
    "svg .ph0,svg .ph3{fill:var(--grid);opacity:.35}svg .ph1{fill:var(--medium);opacity:.18}"
    "svg .ph2{fill:var(--c3);opacity:.16}svg .dot{fill:var(--c1);stroke:var(--fg);stroke-width:.5}\n"
    ".bar4{display:flex;height:1.4em;border-radius:3px;overflow:hidden;margin:.2em 0 .6em}"
    ".bar4 span{display:block;min-width:2px;font-size:.75em;line-height:1.9em;padding-left:.3em;white-space:nowrap;"
    "overflow:hidden;color:var(--fg)}.bar4 .p0,.bar4 .p3{background:var(--grid)}"
    ".bar4 .p1{background:color-mix(in srgb,var(--medium) 45%,transparent)}"
    ".bar4 .p2{background:color-mix(in srgb,var(--c3) 55%,transparent)}\n"
    ".warn{color:var(--medium)}\n"
    "footer{margin-top:3em;color:var(--muted);font-size:.85em}\n"
    "@media print{:root{--bg:#fff;--fg:#000;--muted:#444;--grid:#bbb;--card:#f4f4f4;--c1:#1f57b8;"
    "--c2:#b85a12;--c3:#17724a;--c4:#6a40b0;--high:#b00000;--medium:#8a5000;--low:#555}"
    "body{max-width:none;padding:0;font-size:11px}h2{break-after:avoid}section,figure{break-inside:avoid}"
    "details>*{display:block}}\n";

void html_card(FILE *out, const char *key, const char *value, const char *title)
{
    fputs("<div class=\"card\"", out);
    if (title) {
        fputs(" title=\"", out);
        esc(out, title);
        fputc('"', out);
    }
    fputs("><div class=\"v\">", out);
    esc(out, value);
    fputs("</div><div class=\"k\">", out);
    esc(out, key);
    fputs("</div></div>\n", out);
}

uint64_t html_api_calls_total(const struct wsl_run *run, bool io, uint64_t *time)
{
    uint64_t calls = 0;
    *time = 0;
    for (size_t i = 0; i < run->api_count; i++) {
        const struct wsl_api_stats *a = &run->apis[i];
        if (wsl_is_io_category(a->category) != io)
            continue;
        calls += a->ns.count;
        *time += a->ns.sum;
    }
    return calls;
}

/* ---- the page ---------------------------------------------------------------------------------- */

typedef void (*section_fn)(FILE *out, const struct wsl_html_run *hr);

/* One section: its heading, then every run's part in a column. */
static void section(FILE *out, const char *id, const char *heading, const char *intro, section_fn fn,
                    const struct wsl_html_run *runs, size_t count)
{
    fprintf(out, "<section id=\"%s\">\n<h2>", id);
    esc(out, heading);
    fputs("</h2>\n", out);
    if (intro) {
        fputs("<p class=\"note\">", out);
        esc(out, intro);
        fputs("</p>\n", out);
    }
    fprintf(out, "<div class=\"cols\" style=\"--n:%zu\">\n", count);
    for (size_t i = 0; i < count; i++) {
        fputs("<div class=\"col\">\n", out);
        if (count > 1) {
            fputs("<p class=\"colhead\">", out);
            if (runs[i].label)
                esc(out, runs[i].label);
            else
                fprintf(out, "run %zu", i + 1);
            fputs("</p>\n", out);
        }
        fn(out, &runs[i]);
        fputs("</div>\n", out);
    }
    fputs("</div>\n</section>\n", out);
}

void wsl_html_write(FILE *out, const struct wsl_html_run *runs, size_t count, const struct wsl_html_options *opt)
{
    const char *title = opt && opt->title ? opt->title : "wslshim report";
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>", out);
    esc(out, title);
    fputs("</title>\n<style>\n", out);
    fputs(page_style, out);
    fputs("</style>\n</head>\n<body>\n<header>\n<h1>", out);
    esc(out, title);
    fputs("</h1>\n<p class=\"muted\">", out);
    for (size_t i = 0; i < count; i++) {
        const struct wsl_run *run = runs[i].run;
        if (i)
            fputs("<br>", out);
        if (count > 1) {
            esc(out, runs[i].label ? runs[i].label : "run");
            fputs(": ", out);
        }
        if (run->proc_count) {
            const struct wsl_process *p = &run->procs[0];
            if (p->argc) {
                for (uint32_t k = 0; k < p->argc && k < 8; k++) {
                    if (k)
                        fputc(' ', out);
                    esc(out, p->argv[k]);
                }
                if (p->argc > 8)
                    fputs(" ...", out);
            } else {
                esc(out, p->exe);
            }
            fputs(" on ", out);
            esc(out, p->host);
            fputs(", ", out);
        }
        fprintf(out, "%zu process%s, ", run->proc_count, run->proc_count == 1 ? "" : "es");
        fmt_ns(out, run->wall_ns);
    }
    fputs("</p>\n</header>\n", out);

    section(out, "summary", "Summary", NULL, html_write_summary, runs, count);
    if (opt && opt->extra_section)
        opt->extra_section(out, runs, count, opt->extra_arg);
    section(out, "bottlenecks", "Bottlenecks", "Largest time lost first; each with what was seen and what to do.",
            html_write_findings, runs, count);
    section(out, "phases", "Phases", "Start-up, warm-up, steady state and teardown of each GPU process.",
            html_write_phases, runs, count);
    section(out, "timeline", "Timeline",
            "Kernel submissions, GPU busy, file reads and device memory: the steady state first, the whole run below.",
            html_write_timeline, runs, count);
    section(out, "nvtx", "NVTX ranges and steps", "The program's own ranges, the most total time first.", html_write_nvtx,
            runs, count);
    section(out, "memory", "Memory over time", NULL, html_write_memory, runs, count);
    bool ranks = false;
    for (size_t i = 0; i < count; i++)
        ranks |= runs[i].run->dist.count >= 2;
    if (ranks)
        section(out, "ranks", "Ranks", "The ranks of a distributed run.", html_write_ranks, runs, count);
    section(out, "kernels", "Kernel durations on the GPU", NULL, html_write_kernel_hist, runs, count);
    section(out, "kernel-table", "Kernels", "The most launched kernels.", html_write_kernel_table, runs, count);
    section(out, "api-latency", "API latency", "Host time per call of the APIs with the most total time.",
            html_write_api_latency, runs, count);
    section(out, "io", "File I/O per filesystem", NULL, html_write_io_fs, runs, count);
    section(out, "api-table", "Calls per API", NULL, html_write_api_table, runs, count);
    section(out, "processes", "Processes", NULL, html_write_processes, runs, count);
    bool warnings = false;
    for (size_t i = 0; i < count; i++)
        warnings |= runs[i].run->warning_count > 0;
    if (warnings)
        section(out, "warnings", "Warnings", NULL, html_write_warnings, runs, count);
    fputs("<footer>Written by wslshim-report. Every chart is inline SVG; hover a bar or a row for its numbers."
          "</footer>\n</body>\n</html>\n", out);
}
