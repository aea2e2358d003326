/*
 * The HTML report (report_html.h): the time series pass and the page with
 * its SVG charts. Charts are drawn here in C: bars and boxes as SVG shapes,
 * each with a <title> (the browser's own tooltip), colours from CSS custom
 * properties so the page reads on light and dark backgrounds and prints.
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

static int series_trace(const struct wsl_process *p, struct wsl_html_series *s, struct wsl_progress *progress,
                        char *err, size_t errlen)
{
    char why[WSL_READER_ERRLEN];
    struct wsl_reader *r = wsl_reader_open(p->trace_path, why, sizeof why);
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
                    uint64_t t1 = wsl_clock_to_ns(&p->clock, ev->t_end);
                    uint64_t rel1 = t1 > s->start_ns ? t1 - s->start_ns : 0;
                    add_overlap(acc[k].busy, v, rel, rel1);
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
        if (series_trace(&run->procs[i], s, progress, err, errlen) != 0)
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

static void esc(FILE *out, const char *s) { wsl_html_escape(out, s ? s : ""); }

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

static void fmt_ns(FILE *out, uint64_t ns)
{
    char b[32];
    fputs(wsl_format_ns(b, sizeof b, ns), out);
}

static void fmt_bytes(FILE *out, uint64_t v)
{
    char b[32];
    fputs(wsl_format_bytes(b, sizeof b, v), out);
}

static void card(FILE *out, const char *key, const char *value, const char *title)
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

static uint64_t api_calls_total(const struct wsl_run *run, bool io, uint64_t *time)
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

static void write_summary(FILE *out, const struct wsl_html_run *hr)
{
    const struct wsl_run *run = hr->run;
    char v[96], a[32], b[32];
    fputs("<div class=\"cards\">\n", out);
    card(out, "wall time", wsl_format_ns(v, sizeof v, run->wall_ns), "from the first process start to the last event");
    snprintf(v, sizeof v, "%zu", run->proc_count);
    card(out, run->proc_count == 1 ? "process" : "processes", v, NULL);
    uint64_t cuda_ns, io_ns;
    uint64_t cuda_calls = api_calls_total(run, false, &cuda_ns), io_calls = api_calls_total(run, true, &io_ns);
    snprintf(v, sizeof v, "%" PRIu64, cuda_calls);
    card(out, "CUDA driver calls", v, NULL);
    snprintf(v, sizeof v, "%s", wsl_format_ns(a, sizeof a, cuda_ns));
    card(out, "host time in CUDA calls", v, "summed over threads: may exceed the wall time");
    snprintf(v, sizeof v, "%" PRIu64, run->kernels.launches + run->kernels.graph_launches);
    card(out, "kernel + graph launches", v, NULL);
    if (run->kernels.kernels_timed + run->kernels.graphs_timed) {
        snprintf(v, sizeof v, "%" PRIu64, run->kernels.kernels_timed + run->kernels.graphs_timed);
        card(out, "launches timed on the GPU", v, NULL);
        if (run->kernels.busy_estimate >= 0) {
            snprintf(v, sizeof v, "%.0f%%", 100.0 * run->kernels.busy_estimate);
            card(out, "GPU busy (estimate)", v, "estimated GPU time of all launches / wall time of the processes");
        }
    }
    snprintf(v, sizeof v, "%" PRIu64, io_calls);
    card(out, "file I/O calls", v, NULL);
    snprintf(v, sizeof v, "%s in %s", wsl_format_bytes(a, sizeof a, run->io.total.data.bytes_read),
             wsl_format_ns(b, sizeof b, run->io.total.data.read_time));
    card(out, "data files read", v, "bytes read from the program's data files (not code, not /proc)");
    if (run->mem.any) {
        card(out, "peak device memory", wsl_format_bytes(v, sizeof v, run->mem.peak_bytes),
             "most device bytes allocated at once through the driver");
    }
    snprintf(v, sizeof v, "%zu", run->finding_count);
    card(out, run->finding_count == 1 ? "bottleneck" : "bottlenecks", v, NULL);
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

static void write_findings(FILE *out, const struct wsl_html_run *hr)
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

/* ---- charts ------------------------------------------------------------------------------------ */

#define CW 960.0        /* chart width in SVG units (scaled to the column) */
#define PAD_L 70.0
#define PAD_R 16.0

/* A round step of about span/target: 1, 2 or 5 times a power of ten. */
static double nice_step(double span, int target)
{
    if (!(span > 0))
        return 1;
    double raw = span / target, p = pow(10, floor(log10(raw))), m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

static void svg_open(FILE *out, double height, const char *label)
{
    fprintf(out, "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
                 "aria-label=\"", CW, height);
    esc(out, label);
    fputs("\">\n", out);
}

static void svg_text(FILE *out, double x, double y, const char *anchor, const char *cls, const char *s)
{
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"%s%s%s>", x, y, anchor, cls ? " class=\"" : "",
            cls ? cls : "", cls ? "\"" : "");
    esc(out, s);
    fputs("</text>\n", out);
}

enum value_kind { VALUE_COUNT, VALUE_BYTES, VALUE_PERCENT };

static void format_value(char *buf, size_t size, enum value_kind kind, double v)
{
    switch (kind) {
    case VALUE_BYTES: wsl_format_bytes(buf, size, (uint64_t)(v + 0.5)); break;
    case VALUE_PERCENT: snprintf(buf, size, "%.0f%%", v); break;
    default:
        if (v >= 1e6)
            snprintf(buf, size, "%.3g M", v / 1e6);
        else if (v >= 1e4)
            snprintf(buf, size, "%.3g k", v / 1e3);
        else
            snprintf(buf, size, "%.4g", v);
        break;
    }
}

/* One panel of the timeline: a bar per non-empty bucket; raw[b] is the
 * bucket's own figure (data-v), shown as raw[b] * scale. */
static void timeline_panel(FILE *out, const struct wsl_html_view *s, double top, double height,
                           const double *raw, double scale, double floor_max, enum value_kind kind,
                           const char *chart, const char *cls, const char *title, const char *unit)
{
    double max = 0;
    for (unsigned b = 0; b < s->buckets; b++)
        if (raw[b] * scale > max)
            max = raw[b] * scale;
    double x0 = PAD_L, w = CW - PAD_L - PAD_R, bw = w / s->buckets;
    char a[48];
    svg_text(out, x0, top - 5, "start", NULL, title);
    if (!(max > 0)) {
        fprintf(out, "<line class=\"ax\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>\n", x0, x0 + w,
                top + height, top + height);
        svg_text(out, x0 + w / 2, top + height / 2, "middle", "lbl", "(none recorded)");
        return;
    }
    if (max < floor_max)
        max = floor_max;
    if (kind == VALUE_BYTES && max < 8)
        max = 8; /* no fractions of a byte on the axis */
    double step = nice_step(max, 2), ymax = ceil(max / step) * step;
    for (double v = 0; v <= ymax * 1.0001; v += step) {
        double y = top + height - height * v / ymax;
        fprintf(out, "<line class=\"ax\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>\n", x0, x0 + w, y, y);
        format_value(a, sizeof a, kind, v);
        svg_text(out, x0 - 6, y + 4, "end", "lbl", a);
    }
    fprintf(out, "<g data-chart=\"%s\" data-bucket-ns=\"%" PRIu64 "\">\n", chart, s->bucket_ns);
    for (unsigned b = 0; b < s->buckets; b++) {
        if (!(raw[b] > 0))
            continue;
        double v = raw[b] * scale;
        double h = height * (v > ymax ? ymax : v) / ymax;
        if (h < 0.7)
            h = 0.7;
        double t0 = (double)(s->from_ns + b * s->bucket_ns) / 1e9, t1 = (double)(s->from_ns + (b + 1) * s->bucket_ns) / 1e9;
        format_value(a, sizeof a, kind, v);
        fprintf(out, "<rect class=\"pt %s\" data-v=\"%.17g\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\">"
                     "<title>%.4g-%.4g s: %s%s</title></rect>\n",
                cls, raw[b], x0 + b * bw, top + height - h, bw > 1.2 ? bw - 0.4 : bw, h, t0, t1, a, unit);
    }
    fputs("</g>\n", out);
}

/* The main process's phases as bands behind a chart of view v, labelled at the top. */
static void phase_bands(FILE *out, const struct wsl_run *run, const struct wsl_html_view *v, double top, double bottom)
{
    const struct wsl_run_phases *rp = &run->phases;
    if (!rp->known)
        return;
    const struct wsl_phases *ph = &rp->main;
    static const char *const names[4] = {"start-up", "warm-up", "steady state", "teardown"};
    static const char *const cls[4] = {"ph0", "ph1", "ph2", "ph3"};
    uint64_t edge[5] = {ph->start_ns, ph->first_submit_ns, ph->steady_start_ns, ph->steady_end_ns, ph->end_ns};
    double x0 = PAD_L, w = CW - PAD_L - PAD_R, span = (double)v->bucket_ns * v->buckets;
    fputs("<g data-chart=\"phases-band\">\n", out);
    for (int i = 0; i < 4; i++) {
        double a = (double)(edge[i] > run->start_ns ? edge[i] - run->start_ns : 0) - (double)v->from_ns;
        double b = (double)(edge[i + 1] > run->start_ns ? edge[i + 1] - run->start_ns : 0) - (double)v->from_ns;
        if (a < 0)
            a = 0;
        if (b > span)
            b = span;
        if (!(b > a))
            continue;
        double xa = x0 + w * a / span, xb = x0 + w * b / span;
        fprintf(out, "<rect class=\"%s\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\"><title>%s</title></rect>\n",
                cls[i], xa, top, xb - xa > 0.5 ? xb - xa : 0.5, bottom - top, names[i]);
        if (xb - xa > 60)
            svg_text(out, (xa + xb) / 2, top + 11, "middle", "lbl", names[i]);
    }
    fputs("</g>\n", out);
}

static void timeline_chart(FILE *out, const struct wsl_run *run, const struct wsl_html_view *s, const char *suffix,
                           bool bands)
{
    double bucket_s = (double)s->bucket_ns / 1e9;
    double launches[WSL_HTML_BUCKETS], busy[WSL_HTML_BUCKETS], io[WSL_HTML_BUCKETS], mem[WSL_HTML_BUCKETS];
    for (unsigned b = 0; b < s->buckets; b++) {
        launches[b] = (double)s->launches[b];
        busy[b] = s->gpu_busy_ns[b];
        io[b] = (double)s->io_bytes[b];
        mem[b] = (double)s->mem_bytes[b];
    }
    const double panel = 90, gap = 34, top0 = 36;
    unsigned panels = 4;
    double height = top0 + panels * (panel + gap) + 8;
    char id[4][32];
    const char *base[4] = {"launches", "gpu-busy", "io-bytes", "memory"};
    for (int i = 0; i < 4; i++)
        snprintf(id[i], sizeof id[i], "%s%s", base[i], suffix);
    svg_open(out, height, "timeline: kernel submissions per second, estimated GPU busy, file bytes read per second, "
                          "device memory in use");
    if (bands)
        phase_bands(out, run, s, 4, top0 + 4 * panel + 3 * gap);
    timeline_panel(out, s, top0, panel, launches, 1 / bucket_s, 0, VALUE_COUNT, id[0], "s1",
                   "kernel and graph launches per second", " launches/s");
    timeline_panel(out, s, top0 + panel + gap, panel, busy, 100.0 / (double)s->bucket_ns, 100, VALUE_PERCENT, id[1],
                   "s3",
                   s->gpu_samples ? "GPU busy, % of the time (estimated from the timed launches)"
                                  : "GPU busy: no launch was timed on the GPU (WSLSHIM_GPU_TIMING)",
                   " busy");
    timeline_panel(out, s, top0 + 2 * (panel + gap), panel, io, 1 / bucket_s, 0, VALUE_BYTES, id[2], "s2",
                   "file bytes read per second", "/s");
    timeline_panel(out, s, top0 + 3 * (panel + gap), panel, mem, 1, 0, VALUE_BYTES, id[3], "s4",
                   "device memory in use (allocations less frees)", "");
    /* the time axis, under the last panel: seconds from the run's start */
    double x0 = PAD_L, w = CW - PAD_L - PAD_R, span = (double)s->bucket_ns * s->buckets / 1e9;
    double from = (double)s->from_ns / 1e9;
    double axis_y = top0 + 4 * panel + 3 * gap;
    double step = nice_step(span, 8);
    for (double t = ceil(from / step) * step; t <= from + span * 1.0001; t += step) {
        double x = x0 + w * (t - from) / span;
        char lab[32];
        snprintf(lab, sizeof lab, "%.4g s", t);
        fprintf(out, "<line class=\"ax\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>\n", x, x, axis_y,
                axis_y + 4);
        svg_text(out, x, axis_y + 16, "middle", "lbl", lab);
    }
    fputs("</svg>\n", out);
    fprintf(out, "<p class=\"note\">%u buckets of ", s->buckets);
    fmt_ns(out, s->bucket_ns);
    fprintf(out, "; %" PRIu64 " launches, %" PRIu64 " GPU samples, ", s->launch_total, s->gpu_samples);
    fmt_bytes(out, s->io_bytes_total);
    fputs(" read.</p>\n", out);
}

static void write_timeline(FILE *out, const struct wsl_html_run *hr)
{
    const struct wsl_html_series *s = hr->series;
    if (!s) {
        fputs("<p class=\"muted\">(no timeline)</p>\n", out);
        return;
    }
    const struct wsl_run *run = hr->run;
    if (s->steady.buckets) {
        fputs("<p class=\"note\"><b>Steady state</b>, ", out);
        fmt_ns(out, s->steady.from_ns);
        fputs(" to ", out);
        fmt_ns(out, s->steady.from_ns + (uint64_t)s->steady.bucket_ns * s->steady.buckets);
        fputs(" after the start (", out);
        if (run->phases.main.steps)
            fprintf(out, "%" PRIu64 " steps of ", run->phases.main.steps);
        fmt_ns(out, run->phases.main.step_ns);
        fprintf(out, "%s; %s).</p>\n", run->phases.main.steps ? "" : " per step",
                wsl_steady_method_name(run->phases.main.method));
        fputs("<div data-view=\"steady\">\n", out);
        timeline_chart(out, run, &s->steady, "", false);
        fputs("</div>\n<details data-view=\"whole\"><summary>The whole run, phases marked</summary>\n", out);
        timeline_chart(out, run, &s->whole, "-whole", true);
        fputs("</details>\n", out);
    } else {
        fputs("<div data-view=\"whole\">\n", out);
        timeline_chart(out, run, &s->whole, "", true);
        fputs("</div>\n", out);
    }
    fputs("<p class=\"note\">GPU busy scales each process's timed kernels by its launches per timed launch, "
          "at most 100% per stream that ran timed work: concurrent streams or several GPUs can exceed 100%. "
          "Memory: device allocations less frees, summed over processes, the most in each bucket.</p>\n", out);
}

/* Calls fn(lo, hi, count) for every non-empty bucket of h, in value order. */
static void hist_each(const struct wsl_hist *h, void (*fn)(uint64_t lo, uint64_t hi, uint64_t n, void *arg),
                      void *arg)
{
    for (unsigned g = 0; g < WSL_HIST_GROUPS; g++) {
        if (!h->groups[g])
            continue;
        for (unsigned i = 0; i < WSL_HIST_SUB; i++) {
            uint64_t n = h->groups[g][i];
            if (!n)
                continue;
            uint64_t lo, hi;
            if (g == 0) {
                lo = hi = i;
            } else {
                unsigned shift = g - 1;
                lo = (uint64_t)(WSL_HIST_SUB + i) << shift;
                hi = lo + ((1ull << shift) - 1);
            }
            fn(lo, hi, n, arg);
        }
    }
}

#define KBINS_PER_DECADE 5
#define KBINS_MAX (KBINS_PER_DECADE * 20)

struct kbins {
    int first_decade;           /* log10 of the lowest bin's start */
    uint64_t zeros;             /* values of 0 ns */
    unsigned count;
    uint64_t n[KBINS_MAX];
};

static void kbins_add(uint64_t lo, uint64_t hi, uint64_t n, void *arg)
{
    struct kbins *k = arg;
    if (hi == 0) { /* 0 ns (below the clock's resolution): a bar of its own, not the 1 ns bin */
        k->zeros += n;
        return;
    }
    double mid = ((double)lo + (double)hi) / 2;
    if (mid < 1)
        mid = 1;
    int bin = (int)floor((log10(mid) - k->first_decade) * KBINS_PER_DECADE);
    if (bin < 0)
        bin = 0;
    if (bin >= (int)k->count)
        bin = (int)k->count - 1;
    k->n[bin] += n;
}

static void write_kernel_hist(FILE *out, const struct wsl_html_run *hr)
{
    const struct wsl_kernels *k = &hr->run->kernels;
    const struct wsl_hist *h = &k->kernel_ns;
    if (!h->count) {
        fputs("<p class=\"muted\">No kernel was timed on the GPU. Run with <code>WSLSHIM_GPU_TIMING=N</code> "
              "(or <code>wslshim run --gpu-timing N</code>) to time every Nth launch.</p>\n", out);
        return;
    }
    struct kbins kb;
    memset(&kb, 0, sizeof kb);
    double lo = h->min ? (double)h->min : 1, hi = h->max ? (double)h->max : 1;
    kb.first_decade = (int)floor(log10(lo));
    if (!h->max)
        hi = 1; /* every value 0: one empty decade beside the 0 ns bar */
    int last = (int)floor(log10(hi)) + 1;
    if (last - kb.first_decade > 20)
        kb.first_decade = last - 20;
    kb.count = (unsigned)(last - kb.first_decade) * KBINS_PER_DECADE;
    hist_each(h, kbins_add, &kb);
    unsigned b0 = 0, b1 = kb.count; /* whole decades, from the shortest kernel's to the longest one's */
    uint64_t max = kb.zeros;
    for (unsigned b = b0; b < b1; b++)
        if (kb.n[b] > max)
            max = kb.n[b];
    const double top = 14, height = 170, w_all = CW - PAD_L - PAD_R;
    double zero_w = kb.zeros ? 60 : 0, x0 = PAD_L + zero_w, w = w_all - zero_w;
    svg_open(out, top + height + 40, "kernel duration histogram");
    double step = nice_step((double)max, 3), ymax = ceil((double)max / step) * step;
    char a[64], c[64];
    for (double v = 0; v <= ymax * 1.0001; v += step) {
        double y = top + height - height * v / ymax;
        fprintf(out, "<line class=\"ax\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>\n", PAD_L, PAD_L + w_all, y, y);
        format_value(a, sizeof a, VALUE_COUNT, v);
        svg_text(out, PAD_L - 6, y + 4, "end", "lbl", a);
    }
    unsigned nb = b1 - b0;
    double bw = w / (nb ? nb : 1);
    fputs("<g data-chart=\"kernel-hist\">\n", out);
    if (kb.zeros) {
        double bh = height * (double)kb.zeros / ymax;
        fprintf(out, "<rect class=\"pt s4\" data-v=\"%" PRIu64 "\" data-zero=\"1\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
                     "height=\"%.2f\"><title>0 ns (shorter than the clock resolves): %" PRIu64 " launch%s</title></rect>\n",
                kb.zeros, PAD_L + 8, top + height - (bh < 0.7 ? 0.7 : bh), zero_w - 20, bh < 0.7 ? 0.7 : bh, kb.zeros,
                kb.zeros == 1 ? "" : "es");
        svg_text(out, PAD_L + zero_w / 2 - 6, top + height + 16, "middle", "lbl", "0 ns");
        fprintf(out, "<line class=\"ax\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke-dasharray=\"3 3\"/>\n",
                x0 - 4, x0 - 4, top, top + height);
    }
    for (unsigned b = b0; b < b1; b++) {
        double from = pow(10, kb.first_decade + (double)b / KBINS_PER_DECADE);
        double to = pow(10, kb.first_decade + (double)(b + 1) / KBINS_PER_DECADE);
        double x = x0 + (b - b0) * bw;
        if (nb <= 8 || (b - b0) % KBINS_PER_DECADE == 0) {
            wsl_format_ns(a, sizeof a, (uint64_t)(from + 0.5));
            svg_text(out, x, top + height + 16, "start", "lbl", a);
        }
        if (!kb.n[b])
            continue;
        double bh = height * (double)kb.n[b] / ymax;
        if (bh < 0.7)
            bh = 0.7;
        wsl_format_ns(a, sizeof a, (uint64_t)(from + 0.5));
        wsl_format_ns(c, sizeof c, (uint64_t)(to + 0.5));
        fprintf(out, "<rect class=\"pt s4\" data-v=\"%" PRIu64 "\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
                     "height=\"%.2f\"><title>%s to %s: %" PRIu64 " launch%s</title></rect>\n",
                kb.n[b], x + 1, top + height - bh, bw > 3 ? bw - 2 : bw, bh, a, c, kb.n[b], kb.n[b] == 1 ? "" : "es");
    }
    fputs("</g>\n", out);
    svg_text(out, x0 + w / 2, top + height + 34, "middle", "lbl", "GPU time per kernel (log scale)");
    fputs("</svg>\n", out);
    fprintf(out, "<p class=\"note\">%" PRIu64 " timed kernel launches: p50 ", h->count);
    fmt_ns(out, wsl_hist_quantile(h, 0.5));
    fputs(", p99 ", out);
    fmt_ns(out, wsl_hist_quantile(h, 0.99));
    fputs(", max ", out);
    fmt_ns(out, h->max);
    if (k->kernels_timed)
        fprintf(out, "; %.0f%% of them found the GPU idle at submit", 100.0 * (double)k->idle_at_submit /
                                                                          (double)(k->kernels_timed + k->graphs_timed));
    fputs(".</p>\n", out);
}

#define LAT_ROWS 14

/* s in at most max bytes (and size - 1), cut at a UTF-8 boundary and ending in "..." when cut. */
static void cut_name(char *buf, size_t size, const char *s, size_t max)
{
    size_t n = strlen(s);
    if (max > size - 1)
        max = size - 1;
    if (n <= max) {
        memcpy(buf, s, n + 1);
        return;
    }
    size_t k = max > 3 ? max - 3 : 0;
    while (k > 0 && ((unsigned char)s[k] & 0xc0) == 0x80)
        k--; /* s[k] would start the cut-off part: not inside a sequence */
    memcpy(buf, s, k);
    memcpy(buf + k, "...", 4);
}

static double log_x(double v, double lmin, double lmax, double x0, double w)
{
    double l = log10(v < 1 ? 1 : v);
    return x0 + w * (l - lmin) / (lmax - lmin);
}

#define FEW_SAMPLES 10 /* fewer calls than this: points, not a box */

struct dots {
    FILE *out;
    double lmin, lmax, x0, w, y;
    unsigned k;
};

static void dot_each(uint64_t lo, uint64_t hi, uint64_t n, void *arg)
{
    struct dots *d = arg;
    double v = ((double)lo + (double)hi) / 2;
    for (uint64_t i = 0; i < n; i++, d->k++) /* n < FEW_SAMPLES: a point per call, staggered when equal */
        fprintf(d->out, "<circle class=\"dot\" data-dot=\"1\" cx=\"%.1f\" cy=\"%.1f\" r=\"3\"/>\n",
                log_x(v, d->lmin, d->lmax, d->x0, d->w), d->y + (double)((int)(d->k % 3) - 1) * 3.5);
}

static void write_api_latency(FILE *out, const struct wsl_html_run *hr)
{
    const struct wsl_run *run = hr->run;
    size_t rows = 0;
    const struct wsl_api_stats *pick[LAT_ROWS];
    for (size_t i = 0; i < run->api_count && rows < LAT_ROWS; i++) /* apis are sorted by total time */
        if (run->apis[i].ns.count)
            pick[rows++] = &run->apis[i];
    if (!rows) {
        fputs("<p class=\"muted\">No call recorded.</p>\n", out);
        return;
    }
    uint64_t vmin = UINT64_MAX, vmax = 0;
    for (size_t r = 0; r < rows; r++) {
        if (pick[r]->ns.min < vmin)
            vmin = pick[r]->ns.min;
        if (pick[r]->ns.max > vmax)
            vmax = pick[r]->ns.max;
    }
    double lmin = floor(log10(vmin < 1 ? 1.0 : (double)vmin)), lmax = ceil(log10(vmax < 10 ? 10.0 : (double)vmax));
    if (lmax <= lmin)
        lmax = lmin + 1;
    const double row_h = 24, top = 10, x0 = 190, right = 150, w = CW - x0 - right;
    double height = top + rows * row_h + 30;
    svg_open(out, height, "host time per call of each API: min, p50, p90, p99, max (log scale)");
    char a[32], b[32], c[32], d[32], e[32];
    for (double l = lmin; l <= lmax + 1e-9; l += 1) {
        double x = x0 + w * (l - lmin) / (lmax - lmin);
        fprintf(out, "<line class=\"ax\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>\n", x, x, top,
                top + rows * row_h);
        svg_text(out, x, top + rows * row_h + 14, "middle", "lbl", wsl_format_ns(a, sizeof a, (uint64_t)pow(10, l)));
    }
    for (size_t r = 0; r < rows; r++) {
        const struct wsl_api_stats *api = pick[r];
        const struct wsl_hist *h = &api->ns;
        double y = top + r * row_h + row_h / 2;
        uint64_t p50 = wsl_hist_quantile(h, 0.5), p90 = wsl_hist_quantile(h, 0.9), p99 = wsl_hist_quantile(h, 0.99);
        double xmin = log_x((double)h->min, lmin, lmax, x0, w), xmax = log_x((double)h->max, lmin, lmax, x0, w);
        double x50 = log_x((double)p50, lmin, lmax, x0, w), x90 = log_x((double)p90, lmin, lmax, x0, w);
        double x99 = log_x((double)p99, lmin, lmax, x0, w);
        fprintf(out, "<g class=\"pt\" data-chart=\"api-latency\" data-v=\"%" PRIu64 "\"><title>", h->count);
        esc(out, api->name);
        fprintf(out, ": %" PRIu64 " calls, min %s, p50 %s, p90 %s, p99 %s, max %s</title>\n", h->count,
                wsl_format_ns(a, sizeof a, h->min), wsl_format_ns(b, sizeof b, p50), wsl_format_ns(c, sizeof c, p90),
                wsl_format_ns(d, sizeof d, p99), wsl_format_ns(e, sizeof e, h->max));
        if (h->count < FEW_SAMPLES) { /* too few for a box: each call as a point */
            struct dots d = {out, lmin, lmax, x0, w, y, 0};
            hist_each(h, dot_each, &d);
            fprintf(out, "<rect x=\"0\" y=\"%.1f\" width=\"%.0f\" height=\"%.0f\" fill=\"transparent\"/>\n",
                    y - row_h / 2, CW, row_h);
            fputs("</g>\n", out);
            char name[40];
            cut_name(name, sizeof name, api->name, 28);
            svg_text(out, x0 - 8, y + 4, "end", NULL, name);
            snprintf(a, sizeof a, "%" PRIu64 " x ", h->count);
            size_t al = strlen(a);
            wsl_format_ns(a + al, sizeof a - al, wsl_api_mean_ns(api));
            svg_text(out, x0 + w + 8, y + 4, "start", "lbl", a);
            continue;
        }
        fprintf(out, "<line class=\"wh\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>\n", xmin, xmax, y, y);
        fprintf(out, "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" opacity=\"0.45\"/>\n",
                wsl_is_io_category(api->category) ? "s2" : "s1", x50, y - 7, x99 - x50 > 1 ? x99 - x50 : 1, 14.0);
        fprintf(out, "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>\n",
                wsl_is_io_category(api->category) ? "s2" : "s1", x50, y - 7, x90 - x50 > 1 ? x90 - x50 : 1, 14.0);
        fprintf(out, "<line class=\"med\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>\n", x50, x50, y - 9, y + 9);
        fprintf(out, "<rect x=\"0\" y=\"%.1f\" width=\"%.0f\" height=\"%.0f\" fill=\"transparent\"/>\n",
                y - row_h / 2, CW, row_h);
        fputs("</g>\n", out);
        char name[40];
        cut_name(name, sizeof name, api->name, 28);
        svg_text(out, x0 - 8, y + 4, "end", NULL, name);
        snprintf(a, sizeof a, "%" PRIu64 " x ", h->count);
        size_t al = strlen(a);
        wsl_format_ns(a + al, sizeof a - al, wsl_api_mean_ns(api));
        svg_text(out, x0 + w + 8, y + 4, "start", "lbl", a);
    }
    fputs("</svg>\n", out);
    fputs("<p class=\"note\">Per API (the most total host time first): line from min to max, box p50 to p90, "
          "light box to p99, tick at p50; an API with fewer than 10 calls shows each call as a point instead; "
          "right: calls x mean. Blue: CUDA driver, orange: file I/O.</p>\n", out);
}

static void write_io_fs(FILE *out, const struct wsl_html_run *hr)
{
    const struct wsl_io *io = &hr->run->io;
    size_t rows = 0;
    uint64_t max_bytes = 0, max_time = 0;
    for (size_t i = 0; i < io->fs_count; i++) {
        const struct wsl_io_fs *fs = &io->fs[i];
        if (!wsl_io_calls(&fs->all))
            continue;
        rows++;
        if (fs->all.bytes_read > max_bytes)
            max_bytes = fs->all.bytes_read;
        if (wsl_io_time(&fs->all) > max_time)
            max_time = wsl_io_time(&fs->all);
    }
    if (!rows) {
        fputs("<p class=\"muted\">No file I/O recorded.</p>\n", out);
        return;
    }
    if (rows > 16)
        rows = 16;
    const double row_h = 34, top = 22, x0 = 130, colw = (CW - x0 - 20) / 2;
    svg_open(out, top + rows * row_h + 6, "file I/O per filesystem: bytes read and host time in I/O calls");
    svg_text(out, x0, 12, "start", "lbl", "bytes read");
    svg_text(out, x0 + colw + 10, 12, "start", "lbl", "host time in I/O calls");
    size_t r = 0;
    char a[32], b[32];
    for (size_t i = 0; i < io->fs_count && r < rows; i++) {
        const struct wsl_io_fs *fs = &io->fs[i];
        if (!wsl_io_calls(&fs->all))
            continue;
        double y = top + r * row_h;
        uint64_t t = wsl_io_time(&fs->all);
        double wb = max_bytes ? (colw - 90) * (double)fs->all.bytes_read / (double)max_bytes : 0;
        double wt = max_time ? (colw - 90) * (double)t / (double)max_time : 0;
        fprintf(out, "<g class=\"pt\" data-chart=\"io-fs\" data-v=\"%" PRIu64 "\"><title>", fs->all.bytes_read);
        esc(out, fs->fstype);
        fprintf(out, "%s: %" PRIu64 " reads, %s read, %" PRIu64 " files opened, %s in I/O calls</title>\n",
                fs->crosses_windows ? " (served by Windows)" : "", fs->all.reads,
                wsl_format_bytes(a, sizeof a, fs->all.bytes_read), fs->all.files_opened,
                wsl_format_ns(b, sizeof b, t));
        fprintf(out, "<rect class=\"s2\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"20\"/>\n", x0, y,
                wb > 0.7 || !fs->all.bytes_read ? wb : 0.7);
        fprintf(out, "<rect class=\"s1\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"20\"/>\n", x0 + colw + 10, y,
                wt > 0.7 || !t ? wt : 0.7);
        fputs("</g>\n", out);
        char name[48];
        cut_name(name, 32, fs->fstype, 18);
        if (fs->crosses_windows)
            strcat(name, " (Windows)");
        svg_text(out, x0 - 8, y + 14, "end", NULL, name);
        svg_text(out, x0 + wb + 5, y + 14, "start", "lbl", a);
        svg_text(out, x0 + colw + 10 + wt + 5, y + 14, "start", "lbl", b);
        r++;
    }
    fputs("</svg>\n", out);
    if (!io->dir_count)
        return;
    fputs("<table><thead><tr><th class=\"l\">folder (data files)</th><th class=\"l\">filesystem</th><th>files</th><th>reads</th>"
          "<th>read</th><th>time</th></tr></thead><tbody>\n", out);
    for (size_t i = 0; i < io->dir_count && i < WSL_IO_TOP_DIRS; i++) {
        const struct wsl_io_dir *dir = &io->dirs[i];
        fputs("<tr><td class=\"name mono\">", out);
        esc(out, dir->path ? dir->path : "(other folders)");
        fputs("</td><td class=\"l\">", out);
        if (dir->mount != WSL_IO_NONE && dir->mount < io->mount_count)
            esc(out, io->mounts[dir->mount].fstype);
        fprintf(out, "</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>", dir->files, dir->reads);
        fmt_bytes(out, dir->bytes_read);
        fputs("</td><td>", out);
        fmt_ns(out, dir->time);
        fputs("</td></tr>\n", out);
    }
    fputs("</tbody></table>\n", out);
    if (io->dir_count > WSL_IO_TOP_DIRS)
        fprintf(out, "<p class=\"note\">%zu more folders in the JSON report.</p>\n", io->dir_count - WSL_IO_TOP_DIRS);
}

/* ---- tables ------------------------------------------------------------------------------------ */

#define API_ROWS 30
#define KERNEL_ROWS 15

static void write_api_table(FILE *out, const struct wsl_html_run *hr)
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

static void write_kernel_table(FILE *out, const struct wsl_html_run *hr)
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

static void write_processes(FILE *out, const struct wsl_html_run *hr)
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

static void write_warnings(FILE *out, const struct wsl_html_run *hr)
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

static void write_phases(FILE *out, const struct wsl_html_run *hr)
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

static void write_nvtx(FILE *out, const struct wsl_html_run *hr)
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

static void write_memory(FILE *out, const struct wsl_html_run *hr)
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
    svg_open(out, 150, "device memory in use over the run");
    phase_bands(out, hr->run, &s->whole, 4, 128);
    timeline_panel(out, &s->whole, 30, 98, mem, 1, 0, VALUE_BYTES, "memory-over-time", "s4",
                   "device memory in use over the whole run (phases behind)", "");
    fputs("</svg>\n", out);
}

static void write_ranks(FILE *out, const struct wsl_html_run *hr)
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

    section(out, "summary", "Summary", NULL, write_summary, runs, count);
    if (opt && opt->extra_section)
        opt->extra_section(out, runs, count, opt->extra_arg);
    section(out, "bottlenecks", "Bottlenecks", "Largest time lost first; each with what was seen and what to do.",
            write_findings, runs, count);
    section(out, "phases", "Phases", "Start-up, warm-up, steady state and teardown of each GPU process.",
            write_phases, runs, count);
    section(out, "timeline", "Timeline",
            "Kernel submissions, GPU busy, file reads and device memory: the steady state first, the whole run below.",
            write_timeline, runs, count);
    section(out, "nvtx", "NVTX ranges and steps", "The program's own ranges, the most total time first.", write_nvtx,
            runs, count);
    section(out, "memory", "Memory over time", NULL, write_memory, runs, count);
    bool ranks = false;
    for (size_t i = 0; i < count; i++)
        ranks |= runs[i].run->dist.count >= 2;
    if (ranks)
        section(out, "ranks", "Ranks", "The ranks of a distributed run.", write_ranks, runs, count);
    section(out, "kernels", "Kernel durations on the GPU", NULL, write_kernel_hist, runs, count);
    section(out, "kernel-table", "Kernels", "The most launched kernels.", write_kernel_table, runs, count);
    section(out, "api-latency", "API latency", "Host time per call of the APIs with the most total time.",
            write_api_latency, runs, count);
    section(out, "io", "File I/O per filesystem", NULL, write_io_fs, runs, count);
    section(out, "api-table", "Calls per API", NULL, write_api_table, runs, count);
    section(out, "processes", "Processes", NULL, write_processes, runs, count);
    bool warnings = false;
    for (size_t i = 0; i < count; i++)
        warnings |= runs[i].run->warning_count > 0;
    if (warnings)
        section(out, "warnings", "Warnings", NULL, write_warnings, runs, count);
    fputs("<footer>Written by wslshim-report. Every chart is inline SVG; hover a bar or a row for its numbers."
          "</footer>\n</body>\n</html>\n", out);
}
