/* The comparison of two runs (--compare A B), as text and as the JSON report's "compare" object. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_writer.h"
#include "report_output.h"
#include "util.h"

/* "+1.25 s", "-812 ns" */
static const char *signed_ns(char *buf, size_t size, int64_t ns)
{
    buf[0] = ns < 0 ? '-' : '+';
    wsl_format_ns(buf + 1, size - 1, ns < 0 ? (uint64_t)(-(ns + 1)) + 1 : (uint64_t)ns);
    return buf;
}

static void put_name(FILE *out, const char *s, int width)
{
    int n = 0;
    for (; *s && n < width; s++, n++)
        fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, out);
    fprintf(out, "%*s", width - n, "");
}

static void write_labels(FILE *out, const char *const *labels, size_t count, const char *tag)
{
    fprintf(out, "  %s ", tag);
    for (size_t i = 0; i < count; i++) {
        if (i)
            fputs(", ", out);
        for (const char *s = labels[i]; *s; s++)
            fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, out);
    }
    fputc('\n', out);
}

static const char *platform(const struct wsl_run *r)
{
    if (!r->proc_count)
        return "-";
    uint32_t f = r->procs[0].flags;
    return f & WSL_PROC_WSL2 ? "WSL2" : f & WSL_PROC_WSL1 ? "WSL1" : "native Linux";
}

void report_write_compare_text(const struct wsl_compare *c, const struct report_compare_labels *labels, FILE *out)
{
    const struct wsl_run *a = c->a, *b = c->b;
    char x[32], y[32], z[32];
    fputs("wslshim comparison: A is the baseline, B the other run\n", out);
    write_labels(out, labels->a, labels->a_count, "A:");
    write_labels(out, labels->b, labels->b_count, "B:");
    fprintf(out, "  platform    A %s, B %s\n", platform(a), platform(b));
    /* an emulated side is said plainly: its costs are the shim's, not a platform's */
    for (int side = 0; side < 2; side++) {
        size_t emulated = 0;
        const struct wsl_process *e = wsl_run_emulated(side ? b : a, &emulated);
        if (!e)
            continue;
        fprintf(out, "  EMULATED    %c ran under WSLSHIM_EMULATE=", side ? 'B' : 'A');
        for (const char *s = e->emu_spec; s && *s; s++)
            fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, out);
        fprintf(out, " on this machine (%zu of %zu process%s): not a measured run of %s\n", emulated,
                (side ? b : a)->proc_count, (side ? b : a)->proc_count == 1 ? "" : "es",
                strstr(e->emu_spec ? e->emu_spec : "", "wsl2") ? "WSL2" : "another platform");
    }
    fprintf(out, "  wall        A %s, B %s: %s", wsl_format_ns(x, sizeof x, a->wall_ns),
            wsl_format_ns(y, sizeof y, b->wall_ns), signed_ns(z, sizeof z, c->wall_diff_ns));
    if (a->wall_ns)
        fprintf(out, " (%+.0f%%)", 100.0 * (double)c->wall_diff_ns / (double)a->wall_ns);
    fputc('\n', out);
    fputs("  GPU busy    ", out);
    if (a->gpu_busy_known && b->gpu_busy_known)
        fprintf(out, "A %s, B %s\n", wsl_format_ns(x, sizeof x, a->gpu_busy_ns), wsl_format_ns(y, sizeof y, b->gpu_busy_ns));
    else
        fputs("not measured in both runs\n", out);

    fprintf(out, "\nWhy B took %s %s (host time in recorded calls; never more than the difference)\n",
            wsl_format_ns(x, sizeof x, (uint64_t)(c->wall_diff_ns < 0 ? -c->wall_diff_ns : c->wall_diff_ns)),
            c->wall_diff_ns < 0 ? "less" : "longer");
    for (size_t i = 0; i < c->cause_count; i++) {
        const struct wsl_cause *k = &c->causes[i];
        fprintf(out, "  %10s  ", signed_ns(x, sizeof x, k->attributed_ns));
        for (const char *s = k->text; *s; s++)
            fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, out);
        if (k->attributed_ns != k->estimate_ns)
            fprintf(out, " (%s before scaling)", signed_ns(y, sizeof y, k->estimate_ns));
        fputc('\n', out);
    }
    fprintf(out, "  %10s  unexplained: not in recorded calls (GPU time, Python, overlap between threads)\n",
            signed_ns(x, sizeof x, c->unexplained_ns));

    fprintf(out, "\nHost time per CUDA driver API\n  %-28s %10s %10s %10s %10s %10s %10s %10s %10s\n", "API", "calls A",
            "calls B", "mean A", "mean B", "p50 A", "p50 B", "p99 A", "p99 B");
    for (size_t i = 0; i < c->api_count; i++) {
        const struct wsl_compare_api *p = &c->apis[i];
        if (wsl_is_io_category(p->category))
            continue;
        char m1[32], m2[32], p1[32], p2[32], q1[32], q2[32];
        fputs("  ", out);
        put_name(out, p->name, 28);
        fprintf(out, " %10" PRIu64 " %10" PRIu64 " %10s %10s %10s %10s %10s %10s\n", p->a ? p->a->ns.count : 0,
                p->b ? p->b->ns.count : 0, p->a ? wsl_format_ns(m1, sizeof m1, wsl_api_mean_ns(p->a)) : "-",
                p->b ? wsl_format_ns(m2, sizeof m2, wsl_api_mean_ns(p->b)) : "-",
                p->a ? wsl_format_ns(p1, sizeof p1, wsl_hist_quantile(&p->a->ns, 0.5)) : "-",
                p->b ? wsl_format_ns(p2, sizeof p2, wsl_hist_quantile(&p->b->ns, 0.5)) : "-",
                p->a ? wsl_format_ns(q1, sizeof q1, wsl_hist_quantile(&p->a->ns, 0.99)) : "-",
                p->b ? wsl_format_ns(q2, sizeof q2, wsl_hist_quantile(&p->b->ns, 0.99)) : "-");
    }

    fprintf(out, "\nFile I/O per filesystem\n  %-12s %11s %11s %9s %9s %11s %11s\n", "filesystem", "time A", "time B",
            "reads A", "reads B", "read A", "read B");
    if (!c->fs_count)
        fputs("  (no file I/O in either run)\n", out);
    for (size_t i = 0; i < c->fs_count; i++) {
        const struct wsl_compare_fs *f = &c->fs[i];
        char r1[32], r2[32];
        fputs("  ", out);
        put_name(out, f->fstype, 12);
        fprintf(out, " %11s %11s %9" PRIu64 " %9" PRIu64 " %11s %11s\n",
                wsl_format_ns(x, sizeof x, f->a ? wsl_io_time(&f->a->all) : 0),
                wsl_format_ns(y, sizeof y, f->b ? wsl_io_time(&f->b->all) : 0), f->a ? f->a->all.reads : 0,
                f->b ? f->b->all.reads : 0, wsl_format_bytes(r1, sizeof r1, f->a ? f->a->all.bytes_read : 0),
                wsl_format_bytes(r2, sizeof r2, f->b ? f->b->all.bytes_read : 0));
    }

    fprintf(out, "\nBottlenecks, time lost\n  %-20s %11s %11s\n", "id", "A", "B");
    if (!c->finding_count)
        fputs("  (none in either run)\n", out);
    for (size_t i = 0; i < c->finding_count; i++) {
        const struct wsl_compare_finding *f = &c->findings[i];
        fprintf(out, "  %-20s %11s %11s\n", f->id, f->a ? wsl_format_ns(x, sizeof x, f->a->time_lost_ns) : "-",
                f->b ? wsl_format_ns(y, sizeof y, f->b->time_lost_ns) : "-");
    }
}

static const char *cause_kind(enum wsl_cause_kind k)
{
    return k == WSL_CAUSE_API_CALLS ? "api_calls" : k == WSL_CAUSE_API_TIME ? "api_time" : "io";
}

void report_write_compare_json(struct json_writer *w, const struct wsl_compare *c,
                               const struct report_compare_labels *labels)
{
    const struct wsl_run *a = c->a, *b = c->b;
    json_begin_object(w);
    json_key(w, "traces_a");
    json_begin_array(w);
    for (size_t i = 0; i < labels->a_count; i++)
        json_string(w, labels->a[i]);
    json_end_array(w);
    json_key(w, "traces_b");
    json_begin_array(w);
    for (size_t i = 0; i < labels->b_count; i++)
        json_string(w, labels->b[i]);
    json_end_array(w);
    json_key_u64(w, "wall_ns_a", a->wall_ns);
    json_key_u64(w, "wall_ns_b", b->wall_ns);
    json_key_i64(w, "wall_diff_ns", c->wall_diff_ns);
    json_key_u64_or_null(w, "gpu_busy_ns_a", a->gpu_busy_known, a->gpu_busy_ns);
    json_key_u64_or_null(w, "gpu_busy_ns_b", b->gpu_busy_known, b->gpu_busy_ns);
    for (int side = 0; side < 2; side++) { /* a run that ran emulated: "emulation_a" / "emulation_b" */
        size_t emulated = 0;
        const struct wsl_process *e = wsl_run_emulated(side ? b : a, &emulated);
        if (e) {
            json_key(w, side ? "emulation_b" : "emulation_a");
            report_json_emulation(w, e, emulated);
        }
    }

    json_key(w, "api");
    json_begin_object(w);
    for (size_t i = 0; i < c->api_count; i++) {
        const struct wsl_compare_api *p = &c->apis[i];
        if (wsl_is_io_category(p->category))
            continue;
        json_key(w, p->name);
        json_begin_object(w);
        json_key_string(w, "category", wsl_category_name(p->category));
        json_key_string(w, "group", wsl_api_group(p->category));
        const struct wsl_api_stats *s[2] = {p->a, p->b};
        static const char *const keys[2][6] = {
            {"calls_a", "total_ns_a", "mean_ns_a", "p50_ns_a", "p99_ns_a", "errors_a"},
            {"calls_b", "total_ns_b", "mean_ns_b", "p50_ns_b", "p99_ns_b", "errors_b"}};
        for (int r = 0; r < 2; r++) {
            json_key_u64(w, keys[r][0], s[r] ? s[r]->ns.count : 0);
            json_key_u64(w, keys[r][1], s[r] ? s[r]->ns.sum : 0);
            json_key_u64(w, keys[r][2], s[r] ? wsl_api_mean_ns(s[r]) : 0);
            json_key_u64(w, keys[r][3], s[r] ? wsl_hist_quantile(&s[r]->ns, 0.5) : 0);
            json_key_u64(w, keys[r][4], s[r] ? wsl_hist_quantile(&s[r]->ns, 0.99) : 0);
            json_key_u64(w, keys[r][5], s[r] ? s[r]->errors : 0);
        }
        json_end_object(w);
    }
    json_end_object(w);

    json_key(w, "io");
    json_begin_object(w);
    json_key_u64(w, "time_ns_a", wsl_io_time(&a->io.total.data));
    json_key_u64(w, "time_ns_b", wsl_io_time(&b->io.total.data));
    json_key(w, "by_fs");
    json_begin_object(w);
    for (size_t i = 0; i < c->fs_count; i++) {
        const struct wsl_compare_fs *f = &c->fs[i];
        json_key(w, f->fstype);
        json_begin_object(w);
        const struct wsl_io_fs *s[2] = {f->a, f->b};
        static const char *const keys[2][5] = {{"time_ns_a", "reads_a", "bytes_read_a", "files_opened_a", "stats_a"},
                                               {"time_ns_b", "reads_b", "bytes_read_b", "files_opened_b", "stats_b"}};
        for (int r = 0; r < 2; r++) {
            json_key_u64(w, keys[r][0], s[r] ? wsl_io_time(&s[r]->all) : 0);
            json_key_u64(w, keys[r][1], s[r] ? s[r]->all.reads : 0);
            json_key_u64(w, keys[r][2], s[r] ? s[r]->all.bytes_read : 0);
            json_key_u64(w, keys[r][3], s[r] ? s[r]->all.files_opened : 0);
            json_key_u64(w, keys[r][4], s[r] ? s[r]->all.stats : 0);
        }
        json_key_bool(w, "crosses_windows", (f->a && f->a->crosses_windows) || (f->b && f->b->crosses_windows));
        json_end_object(w);
    }
    json_end_object(w);
    json_end_object(w);

    json_key(w, "bottlenecks");
    json_begin_array(w);
    for (size_t i = 0; i < c->finding_count; i++) {
        const struct wsl_compare_finding *f = &c->findings[i];
        json_begin_object(w);
        json_key_string(w, "id", f->id);
        json_key_u64(w, "time_lost_ns_a", f->a ? f->a->time_lost_ns : 0);
        json_key_u64(w, "time_lost_ns_b", f->b ? f->b->time_lost_ns : 0);
        json_key_string(w, "severity_a", f->a ? wsl_severity_name(f->a->severity) : NULL);
        json_key_string(w, "severity_b", f->b ? wsl_severity_name(f->b->severity) : NULL);
        json_end_object(w);
    }
    json_end_array(w);

    json_key(w, "causes");
    json_begin_array(w);
    for (size_t i = 0; i < c->cause_count; i++) {
        const struct wsl_cause *k = &c->causes[i];
        json_begin_object(w);
        json_key_string(w, "kind", cause_kind(k->kind));
        json_key_string(w, "name", k->name);
        json_key_i64(w, "estimate_ns", k->estimate_ns);
        json_key_i64(w, "attributed_ns", k->attributed_ns);
        json_key_string(w, "text", k->text);
        json_end_object(w);
    }
    json_end_array(w);
    json_key_double(w, "scale", c->scale);
    json_key_i64(w, "explained_ns", c->explained_ns);
    json_key_i64(w, "unexplained_ns", c->unexplained_ns);
    json_end_object(w);
}
