/*
 * The HTML report's SVG charts (report_html.c has the page): the timelines with their phase
 * bands, the kernel duration histogram, the API latency boxes and the file I/O per filesystem.
 * Bars and boxes as SVG shapes, each with a <title> (the browser's own tooltip), colours from
 * CSS custom properties so the page reads on light and dark backgrounds and prints.
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

void html_svg_open(FILE *out, double height, const char *label)
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
void html_timeline_panel(FILE *out, const struct wsl_html_view *s, double top, double height,
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
void html_phase_bands(FILE *out, const struct wsl_run *run, const struct wsl_html_view *v, double top, double bottom)
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
    html_svg_open(out, height, "timeline: kernel submissions per second, estimated GPU busy, file bytes read per second, "
                          "device memory in use");
    if (bands)
        html_phase_bands(out, run, s, 4, top0 + 4 * panel + 3 * gap);
    html_timeline_panel(out, s, top0, panel, launches, 1 / bucket_s, 0, VALUE_COUNT, id[0], "s1",
                   "kernel and graph launches per second", " launches/s");
    html_timeline_panel(out, s, top0 + panel + gap, panel, busy, 100.0 / (double)s->bucket_ns, 100, VALUE_PERCENT, id[1],
                   "s3",
                   s->gpu_samples ? "GPU busy, % of the time (estimated from the timed launches)"
                                  : "GPU busy: no launch was timed on the GPU (WSLSHIM_GPU_TIMING)",
                   " busy");
    html_timeline_panel(out, s, top0 + 2 * (panel + gap), panel, io, 1 / bucket_s, 0, VALUE_BYTES, id[2], "s2",
                   "file bytes read per second", "/s");
    html_timeline_panel(out, s, top0 + 3 * (panel + gap), panel, mem, 1, 0, VALUE_BYTES, id[3], "s4",
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

void html_write_timeline(FILE *out, const struct wsl_html_run *hr)
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

void html_write_kernel_hist(FILE *out, const struct wsl_html_run *hr)
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
    html_svg_open(out, top + height + 40, "kernel duration histogram");
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

void html_write_api_latency(FILE *out, const struct wsl_html_run *hr)
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
    html_svg_open(out, height, "host time per call of each API: min, p50, p90, p99, max (log scale)");
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

void html_write_io_fs(FILE *out, const struct wsl_html_run *hr)
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
    html_svg_open(out, top + rows * row_h + 6, "file I/O per filesystem: bytes read and host time in I/O calls");
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

