/* The JSON report: the keys docs/contract.md promises, and a few more. The sections on file
 * I/O, memory, the GPU and NVTX are report_json_sections.c (report_json_internal.h). */
#include <stdint.h>
#include <stdio.h>

#include "json_writer.h"
#include "report_output.h"
#include "util.h"
#include "wslshim/trace_format.h"
#include "report_json_internal.h"

void report_json_emulation(struct json_writer *w, const struct wsl_process *p, size_t processes)
{
    json_begin_object(w);
    json_key(w, "spec");
    json_string(w, p->emu_spec);
    json_key(w, "added_ns");
    json_begin_object(w);
    for (unsigned f = 0; f < WSL_EMU_FAMILIES; f++) {
        json_key(w, wsl_emu_family_name(f));
        json_u64(w, p->emu_ns[f]);
    }
    json_end_object(w);
    if (p->emu_fs_meta_ns || p->emu_fs_read_bps || p->emu_fs_write_bps) {
        json_key(w, "fs"); /* the paths are in the SPEC */
        json_begin_object(w);
        json_key(w, "meta_ns");
        json_u64(w, p->emu_fs_meta_ns);
        json_key(w, "read_bytes_per_s");
        json_u64(w, p->emu_fs_read_bps);
        json_key(w, "write_bytes_per_s");
        json_u64(w, p->emu_fs_write_bps);
        json_end_object(w);
    }
    if (processes) {
        json_key(w, "processes");
        json_u64(w, processes);
    }
    json_end_object(w);
}

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
    if (p->emulated) {
        json_key(w, "emulation");
        report_json_emulation(w, p, 0);
    }
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
    json_key(w, "io");          /* data files, as the run's "io" */
    json_begin_object(w);
    report_json_write_io_counts(w, &p->io.data);
    json_end_object(w);
    json_key(w, "io_other_fds");  /* fds not seen opened: pipes, sockets, stdin (DataLoader workers' queues) */
    json_begin_object(w);
    report_json_write_io_counts(w, &p->io.unknown_fd);
    json_end_object(w);
    json_key(w, "gpu_use");
    json_begin_object(w);
    json_key(w, "kernels_timed");
    json_u64(w, p->gpu.kernels_timed);
    json_key(w, "graphs_timed");
    json_u64(w, p->gpu.graphs_timed);
    json_key(w, "idle_at_submit");
    json_u64(w, p->gpu.idle_at_submit);
    json_key(w, "gpu_time_est_ns");
    json_u64(w, p->gpu.est_gpu_ns);
    json_key(w, "gpu_phase_ns");
    json_u64(w, p->gpu.gpu_phase_ns);
    json_key(w, "busy_estimate");   /* of its GPU phase */
    if (p->gpu.kernels_timed + p->gpu.graphs_timed && p->gpu.gpu_phase_ns) {
        double b = (double)p->gpu.est_gpu_ns / (double)p->gpu.gpu_phase_ns;
        json_double(w, b > 1 ? 1 : b);
    } else {
        json_null(w);
    }
    json_key(w, "device_free_at_start");  /* cuMemGetInfo when the shim first sampled a launch */
    if (p->have_gpu_memory)
        json_u64(w, p->gpu_free_at_start);
    else
        json_null(w);
    json_key(w, "device_total");
    if (p->have_gpu_memory)
        json_u64(w, p->gpu_total);
    else
        json_null(w);
    json_end_object(w);
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

static void write_span(struct json_writer *w, const char *name, uint64_t a, uint64_t b)
{
    json_begin_object(w);
    json_key(w, "name");
    json_string(w, name);
    json_key(w, "start_ns");
    json_u64(w, a);
    json_key(w, "end_ns");
    json_u64(w, b > a ? b : a);
    json_key(w, "duration_ns");
    json_u64(w, b > a ? b - a : 0);
    json_end_object(w);
}

/* One process's phases (phase_analysis.h). */
static void write_phases(struct json_writer *w, const struct wsl_run *run, const struct wsl_process *p)
{
    const struct wsl_phases *ph = &p->phases;
    json_begin_object(w);
    json_key(w, "pid");
    json_i64(w, p->pid);
    json_key(w, "main");        /* the run's main GPU process (most launches) */
    json_bool(w, run->phases.known && run->phases.main_pid == p->pid);
    json_key(w, "gpu");         /* it submitted GPU work: the four phases hold */
    json_bool(w, ph->method != WSL_STEADY_NONE);
    json_key(w, "compiler");    /* a compiler or compile worker the run started */
    json_bool(w, p->compiler);
    json_key(w, "steady_method");
    json_string(w, wsl_steady_method_name(ph->method));
    json_key(w, "phases");
    json_begin_array(w);
    if (ph->method != WSL_STEADY_NONE) {
        write_span(w, "start-up", ph->start_ns, ph->first_submit_ns);
        write_span(w, "warm-up", ph->first_submit_ns, ph->steady_start_ns);
        write_span(w, "steady state", ph->steady_start_ns, ph->steady_end_ns);
        write_span(w, "teardown", ph->steady_end_ns, ph->end_ns);
    }
    json_end_array(w);
    if (ph->method != WSL_STEADY_NONE) {
        json_key(w, "steps");       /* in the steady state: NVTX steps, or periods of the launch stream */
        json_u64(w, ph->steps);
        json_key(w, "step_ns");     /* median */
        json_u64(w, ph->step_ns);
        json_key(w, "warmup_steps"); /* leading steps slower than 1.5x the median: warm-up */
        json_u64(w, ph->warmup_steps);
        json_key(w, "warmup_excess_ns");
        json_u64(w, ph->warmup_excess_ns);
        json_key(w, "period_launches");
        json_u64(w, ph->period_launches);
        json_key(w, "launches");
        json_u64(w, ph->launches);
    }
    json_key(w, "module_loads");
    json_u64(w, ph->module_loads);
    json_key(w, "module_load_ns");
    json_u64(w, ph->module_load_ns);
    json_key(w, "warmup_module_loads");
    json_u64(w, ph->warmup_module_loads);
    json_key(w, "warmup_module_load_ns");
    json_u64(w, ph->warmup_module_load_ns);
    json_key(w, "steady_module_loads");
    json_u64(w, ph->steady_module_loads);
    json_end_object(w);
}

static void write_steady_state(struct json_writer *w, const struct wsl_run *run)
{
    const struct wsl_run_phases *rp = &run->phases;
    json_begin_object(w);
    json_key(w, "known");
    json_bool(w, rp->known);
    if (rp->known) {
        json_key(w, "main_pid");
        json_i64(w, rp->main_pid);
        json_key(w, "start_ns");
        json_u64(w, rp->steady_start_ns);
        json_key(w, "end_ns");
        json_u64(w, rp->steady_end_ns);
        json_key(w, "duration_ns");
        json_u64(w, rp->steady_end_ns - rp->steady_start_ns);
        json_key(w, "share_of_wall");
        json_double(w, run->wall_ns ? (double)(rp->steady_end_ns - rp->steady_start_ns) / (double)run->wall_ns : 0);
        json_key(w, "method");
        json_string(w, wsl_steady_method_name(rp->main.method));
        json_key(w, "findings_reread"); /* the findings' steady-state time lost was measured */
        json_bool(w, rp->steady_known);
    }
    json_key(w, "compile_processes");
    json_u64(w, rp->compile_processes);
    json_key(w, "compile_process_ns");
    json_u64(w, rp->compile_process_ns);
    json_end_object(w);
}

static void write_finding(struct json_writer *w, const struct wsl_run *run, const struct wsl_finding *f)
{
    json_begin_object(w);
    json_key(w, "id");
    json_string(w, f->id);
    json_key(w, "severity");
    json_string(w, wsl_severity_name(f->severity));
    json_key(w, "time_lost_ns");
    json_u64(w, f->time_lost_ns);
    json_key(w, "wall_share");
    json_double(w, run->wall_ns ? (double)f->time_lost_ns / (double)run->wall_ns : 0);
    if (f->steady_known) {  /* the same rule within the steady state alone */
        json_key(w, "steady_lost_ns");
        json_u64(w, f->steady_lost_ns);
        json_key(w, "steady_share");
        json_double(w, run->phases.steady_wall_ns ? (double)f->steady_lost_ns / (double)run->phases.steady_wall_ns : 0);
    }
    json_key(w, "summary");
    json_string(w, f->summary);
    json_key(w, "advice");
    json_string(w, f->advice);
    json_key(w, "evidence");
    json_begin_object(w);
    for (size_t i = 0; i < f->evidence_count; i++) {
        const struct wsl_evidence *e = &f->evidence[i];
        json_key(w, e->key);
        switch (e->type) {
        case WSL_EVIDENCE_U64:
            json_u64(w, e->u64);
            break;
        case WSL_EVIDENCE_NUMBER:
            json_double(w, e->number);
            break;
        case WSL_EVIDENCE_BOOL:
            json_bool(w, e->flag);
            break;
        case WSL_EVIDENCE_STRING:
            json_string(w, e->string);
            break;
        case WSL_EVIDENCE_STRINGS:
            json_begin_array(w);
            for (size_t k = 0; k < e->string_count; k++)
                json_string(w, e->strings[k]);
            json_end_array(w);
            break;
        }
    }
    json_end_object(w);
    json_key(w, "how_computed");
    json_string(w, f->how_computed);
    json_key(w, "fix");
    json_string(w, f->fix);
    json_key(w, "scaled_to_wall");
    json_bool(w, f->scaled_to_wall);
    json_end_object(w);
}

/* Waits for the GPU and copies (host_analysis.h; docs/report.md). */
static void write_cuda_host(struct json_writer *w, const struct wsl_host_summary *h)
{
    json_begin_object(w);
    json_key(w, "waits");
    json_begin_object(w);
    for (unsigned k = 0; k < WSL_BLOCK_KINDS; k++) {
        json_key(w, wsl_block_kind_name((enum wsl_block_kind)k));
        json_begin_object(w);
        json_key(w, "count");
        json_u64(w, h->blocks[k]);
        json_key(w, "blocked_ns");
        json_u64(w, h->blocked_ns[k]);
        json_key(w, "lost_ns");
        json_u64(w, h->block_lost_ns[k]);
        json_end_object(w);
    }
    json_end_object(w);
    json_key(w, "queries");
    json_u64(w, h->polls);
    json_key(w, "queries_not_ready");
    json_u64(w, h->polls_not_ready);
    json_key(w, "waits_without_later_submission");
    json_u64(w, h->unresolved_blocks);
    json_key(w, "submissions");
    json_u64(w, h->submissions);
    json_key(w, "submit_ns");
    json_u64(w, h->submit_ns);
    json_key(w, "copies");
    json_begin_object(w);
#define FIELD(key, value) \
    json_key(w, key);     \
    json_u64(w, value)
    FIELD("count", h->copies);
    FIELD("bytes", h->copy_bytes);
    FIELD("host_ns", h->copy_ns);
    FIELD("htod", h->htod);
    FIELD("dtoh", h->dtoh);
    FIELD("dtod", h->dtod);
    FIELD("unknown_direction", h->unknown_direction);
    FIELD("unclassified", h->unclassified_copies);
    FIELD("small", h->small_copies);
    FIELD("small_bytes", h->small_bytes);
    FIELD("small_host_ns", h->small_ns);
    FIELD("small_threshold_bytes", WSL_HOST_SMALL_COPY);
    FIELD("pageable", h->pageable_copies);
    FIELD("pageable_htod", h->pageable_htod);
    FIELD("pageable_dtoh", h->pageable_dtoh);
    FIELD("pageable_bytes", h->pageable_bytes);
    FIELD("pageable_host_ns", h->pageable_ns);
    FIELD("pinned", h->locked_copies);
    FIELD("pinned_bytes", h->locked_bytes);
    FIELD("pinned_host_ns", h->locked_ns);
#undef FIELD
    json_end_object(w);
    json_key(w, "by_range");    /* NVTX ranges, when the traces have them */
    json_begin_array(w);
    for (size_t i = 0; i < h->range_count; i++) {
        json_begin_object(w);
        json_key(w, "name");
        json_string(w, h->ranges[i].name);
        json_key(w, "waits");
        json_u64(w, h->ranges[i].blocks);
        json_key(w, "blocked_ns");
        json_u64(w, h->ranges[i].blocked_ns);
        json_key(w, "lost_ns");
        json_u64(w, h->ranges[i].lost_ns);
        json_end_object(w);
    }
    json_end_array(w);
    json_end_object(w);
}

void report_write_json(const struct wsl_run *run, const struct wsl_compare *cmp,
                       const struct report_compare_labels *labels, FILE *out)
{
    struct json_writer w;
    json_init(&w, out);
    json_begin_object(&w);
    json_key(&w, "schema");
    json_u64(&w, WSL_REPORT_SCHEMA);
    json_key(&w, "wall_ns");
    json_u64(&w, run->wall_ns);
    size_t emulated = 0;
    const struct wsl_process *emu = wsl_run_emulated(run, &emulated);
    if (emu) { /* the run's emulation: its first emulated process's SPEC */
        json_key(&w, "emulation");
        report_json_emulation(&w, emu, emulated);
    }
    json_key(&w, "processes");
    json_begin_array(&w);
    for (size_t i = 0; i < run->proc_count; i++)
        write_process(&w, run, &run->procs[i]);
    json_end_array(&w);
    json_key(&w, "phases");     /* per process: start-up, warm-up, steady state, teardown */
    json_begin_array(&w);
    for (size_t i = 0; i < run->proc_count; i++)
        write_phases(&w, run, &run->procs[i]);
    json_end_array(&w);
    json_key(&w, "steady_state");
    write_steady_state(&w, run);
    json_key(&w, "api");
    json_begin_object(&w);
    for (size_t i = 0; i < run->api_count; i++)   /* the CUDA driver API only: file calls are in "io" */
        if (run->apis[i].ns.count && !wsl_is_io_category(run->apis[i].category))
            report_json_write_api(&w, &run->apis[i]);
    json_end_object(&w);
    json_key(&w, "gpu");
    report_json_write_gpu(&w, run, &run->kernels);
    json_key(&w, "memory");
    report_json_write_memory(&w, run);
    json_key(&w, "io");
    report_json_write_io(&w, &run->io);
    json_key(&w, "io_calls");   /* per libc function, as "api" is per driver function */
    json_begin_object(&w);
    for (size_t i = 0; i < run->api_count; i++)
        if (run->apis[i].ns.count && wsl_is_io_category(run->apis[i].category))
            report_json_write_api(&w, &run->apis[i]);
    json_end_object(&w);
    json_key(&w, "nvtx");        /* ranges by total time, largest first */
    json_begin_array(&w);
    for (size_t i = 0; i < run->nvtx.range_count; i++)
        report_json_write_nvtx_range(&w, &run->nvtx.ranges[i]);
    json_end_array(&w);
    json_key(&w, "nvtx_summary");
    report_json_write_nvtx_summary(&w, &run->nvtx);
    json_key(&w, "cuda_host");
    write_cuda_host(&w, &run->host_cuda);
    report_json_distributed(&w, run);
    json_key(&w, "bottlenecks");
    json_begin_array(&w);
    for (size_t i = 0; i < run->finding_count; i++)
        write_finding(&w, run, &run->findings[i]);
    json_end_array(&w);
    json_key(&w, "not_evaluated");  /* rules that need what the traces lack */
    json_begin_array(&w);
    if (!run->gpu_busy_known)
        for (size_t i = 0; i < wsl_rules_need_gpu_timing_count; i++)
            json_string(&w, wsl_rules_need_gpu_timing[i]);
    json_end_array(&w);
    if (run->projection) {
        json_key(&w, "projection");
        wsl_projection_write_json(&w, run->projection);
    }
    json_key(&w, "warnings");
    json_begin_array(&w);
    for (size_t i = 0; i < run->warning_count; i++)
        json_string(&w, run->warnings[i]);
    json_end_array(&w);
    if (cmp) {
        json_key(&w, "compare");
        report_write_compare_json(&w, cmp, labels);
    }
    json_end_object(&w);
    json_finish(&w);
}
