/* The JSON report: the keys docs/contract.md promises, and a few more. */
#include <stdint.h>
#include <stdio.h>

#include "json_writer.h"
#include "report_output.h"
#include "wslshim/trace_format.h"

static void write_process(struct json_writer *w, const struct wsl_run *run, const struct wsl_process *p)
{
    json_begin_object(w);
    json_key(w, "pid");
    json_i64(w, p->pid);
    json_key(w, "ppid");
    json_i64(w, p->ppid);
    json_key(w, "exe");
    json_string(w, p->exe);
    json_key(w, "wsl");
    json_bool(w, (p->flags & (WSL_PROC_WSL1 | WSL_PROC_WSL2)) != 0);
    json_key(w, "wsl_version");
    json_u64(w, p->flags & WSL_PROC_WSL2 ? 2 : p->flags & WSL_PROC_WSL1 ? 1 : 0);
    json_key(w, "host");
    json_string(w, p->host);
    json_key(w, "kernel_release");
    json_string(w, p->kernel_release);
    json_key(w, "argv");
    json_begin_array(w);
    for (uint32_t i = 0; i < p->argc; i++)
        json_string(w, p->argv[i]);
    json_end_array(w);
    json_key(w, "trace");
    json_string(w, p->trace_path);
    json_key(w, "events");
    json_u64(w, p->events);
    json_key(w, "dropped");
    json_u64(w, p->dropped);
    json_key(w, "threads");
    json_u64(w, p->threads);
    json_key(w, "truncated");
    json_bool(w, p->truncated);
    json_key(w, "forked");
    json_bool(w, (p->flags & WSL_PROC_FORKED) != 0);
    json_key(w, "execed");
    json_bool(w, (p->flags & WSL_PROC_EXECED) != 0);
    json_key(w, "clock");
    json_string(w, p->clock_kind == WSL_CLOCK_TSC ? "tsc" : "monotonic");
    json_key(w, "start_ns");    /* from the run's start */
    json_u64(w, p->start_ns - run->start_ns);
    json_key(w, "end_ns");
    json_u64(w, p->end_ns - run->start_ns);
    json_key(w, "driver_version");
    if (p->have_driver)
        json_i64(w, p->driver_version);
    else
        json_null(w);
    json_key(w, "libcuda");
    json_string(w, p->have_driver ? p->libcuda_path : NULL);
    json_key(w, "gpus");
    json_begin_array(w);
    for (uint32_t i = 0; i < p->gpu_count; i++) {
        json_begin_object(w);
        json_key(w, "name");
        json_string(w, p->gpus[i].name);
        json_key(w, "total_mem");
        json_u64(w, p->gpus[i].total_mem);
        json_key(w, "cc");
        char cc[32];
        snprintf(cc, sizeof cc, "%d.%d", p->gpus[i].cc_major, p->gpus[i].cc_minor);
        json_string(w, cc);
        json_end_object(w);
    }
    json_end_array(w);
    json_end_object(w);
}

static void write_api(struct json_writer *w, const struct wsl_api_stats *a)
{
    json_key(w, a->name);
    json_begin_object(w);
    json_key(w, "calls");
    json_u64(w, a->ns.count);
    json_key(w, "total_ns");
    json_u64(w, a->ns.sum);
    json_key(w, "mean_ns");
    json_u64(w, wsl_api_mean_ns(a));
    json_key(w, "p50_ns");
    json_u64(w, wsl_hist_quantile(&a->ns, 0.50));
    json_key(w, "p99_ns");
    json_u64(w, wsl_hist_quantile(&a->ns, 0.99));
    json_key(w, "min_ns");
    json_u64(w, a->ns.min);
    json_key(w, "max_ns");
    json_u64(w, a->ns.max);
    json_key(w, "errors");
    json_u64(w, a->errors);
    json_key(w, "category");
    json_string(w, wsl_category_name(a->category));
    json_key(w, "variants");
    json_begin_object(w);
    for (size_t v = 0; v < a->variant_count; v++)
        if (a->variants[v].calls) {
            json_key(w, a->variants[v].symbol);
            json_u64(w, a->variants[v].calls);
        }
    json_end_object(w);
    json_end_object(w);
}

void report_write_json(const struct wsl_run *run, FILE *out)
{
    struct json_writer w;
    json_init(&w, out);
    json_begin_object(&w);
    json_key(&w, "schema");
    json_u64(&w, WSL_REPORT_SCHEMA);
    json_key(&w, "wall_ns");
    json_u64(&w, run->wall_ns);
    json_key(&w, "processes");
    json_begin_array(&w);
    for (size_t i = 0; i < run->proc_count; i++)
        write_process(&w, run, &run->procs[i]);
    json_end_array(&w);
    json_key(&w, "api");
    json_begin_object(&w);
    for (size_t i = 0; i < run->api_count; i++)
        if (run->apis[i].ns.count)
            write_api(&w, &run->apis[i]);
    json_end_object(&w);
    json_key(&w, "warnings");
    json_begin_array(&w);
    for (size_t i = 0; i < run->warning_count; i++)
        json_string(&w, run->warnings[i]);
    json_end_array(&w);
    json_end_object(&w);
    json_finish(&w);
}
