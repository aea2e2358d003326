/* The text report: who ran, for how long, and where host time went per API. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "report_output.h"
#include "wslshim/trace_format.h"

/* A duration in a unit that keeps 3-4 significant digits: "812 ns", "4.26 us". */
static const char *format_ns(char *buf, size_t size, uint64_t ns)
{
    if (ns < 1000)
        snprintf(buf, size, "%" PRIu64 " ns", ns);
    else if (ns < 1000000)
        snprintf(buf, size, "%.2f us", (double)ns / 1e3);
    else if (ns < 1000000000)
        snprintf(buf, size, "%.2f ms", (double)ns / 1e6);
    else
        snprintf(buf, size, "%.3f s", (double)ns / 1e9);
    return buf;
}

/* Strings from a trace may hold anything: keep terminal control bytes out. */
static void put_clean(FILE *out, const char *s)
{
    for (; *s; s++)
        fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, out);
}

static void write_process(FILE *out, const struct wsl_process *p)
{
    char buf[32];
    fprintf(out, "  pid %-7" PRId32 " ppid %-7" PRId32 " ", p->pid, p->ppid);
    if (p->argc == 0)
        put_clean(out, p->exe);
    for (uint32_t i = 0; i < p->argc; i++) {
        if (i)
            fputc(' ', out);
        put_clean(out, p->argv[i]);
    }
    fputc('\n', out);

    fputs("      host ", out);
    put_clean(out, p->host);
    const char *platform = p->flags & WSL_PROC_WSL2 ? "WSL2" : p->flags & WSL_PROC_WSL1 ? "WSL1" : "native Linux";
    fprintf(out, ", %s (", platform);
    put_clean(out, p->kernel_release);
    fputs(")", out);
    if (p->flags & WSL_PROC_FORKED)
        fputs(", forked", out);
    if (p->flags & WSL_PROC_EXECED)
        fputs(", exec'd", out);
    fputc('\n', out);

    if (p->have_driver) {
        fprintf(out, "      driver %d.%d (%d)", p->driver_version / 1000, p->driver_version % 1000 / 10,
                p->driver_version);
        if (p->init_result != 0)
            fprintf(out, ", cuInit failed (%d)", p->init_result);
        fputc('\n', out);
        for (uint32_t i = 0; i < p->gpu_count; i++) {
            fprintf(out, "      GPU %u: ", i);
            put_clean(out, p->gpus[i].name);
            fprintf(out, ", %.1f GiB, compute %d.%d\n", (double)p->gpus[i].total_mem / (1024.0 * 1024 * 1024),
                    p->gpus[i].cc_major, p->gpus[i].cc_minor);
        }
    }
    fprintf(out, "      %" PRIu64 " events, %" PRIu64 " dropped, %s", p->events, p->dropped,
            format_ns(buf, sizeof buf, p->end_ns - p->start_ns));
    if (p->truncated)
        fputs(", TRUNCATED (trace cut short)", out);
    fputc('\n', out);
}

void report_write_text(const struct wsl_run *run, FILE *out)
{
    char buf[32];
    uint64_t events = 0, dropped = 0;
    for (size_t i = 0; i < run->proc_count; i++) {
        events += run->procs[i].events;
        dropped += run->procs[i].dropped;
    }
    fprintf(out, "wslshim report: %zu process%s, %" PRIu64 " events", run->proc_count,
            run->proc_count == 1 ? "" : "es", events);
    if (dropped)
        fprintf(out, " (%" PRIu64 " dropped)", dropped);
    fprintf(out, ", wall time %s\n\n", format_ns(buf, sizeof buf, run->wall_ns));

    fputs("Processes\n", out);
    for (size_t i = 0; i < run->proc_count; i++)
        write_process(out, &run->procs[i]);

    fputs("\nHost time per CUDA driver API, by total\n", out);
    fprintf(out, "  %-28s %10s %11s %11s %11s %11s %11s %8s\n", "API", "calls", "total", "mean", "p50", "p99",
            "max", "errors");
    size_t shown = 0;
    for (size_t i = 0; i < run->api_count; i++) {
        const struct wsl_api_stats *a = &run->apis[i];
        if (!a->ns.count)
            continue;
        char total[32], mean[32], p50[32], p99[32], max[32];
        fputs("  ", out);
        put_clean(out, a->name);
        size_t len = strlen(a->name);
        fprintf(out, "%*s %10" PRIu64 " %11s %11s %11s %11s %11s %8" PRIu64 "\n", len < 28 ? (int)(28 - len) : 0, "",
                a->ns.count, format_ns(total, sizeof total, a->ns.sum),
                format_ns(mean, sizeof mean, wsl_api_mean_ns(a)),
                format_ns(p50, sizeof p50, wsl_hist_quantile(&a->ns, 0.50)),
                format_ns(p99, sizeof p99, wsl_hist_quantile(&a->ns, 0.99)), format_ns(max, sizeof max, a->ns.max),
                a->errors);
        shown++;
    }
    if (!shown)
        fputs("  (no CUDA driver calls recorded)\n", out);
}
