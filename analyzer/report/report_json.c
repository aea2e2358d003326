/* The JSON report: the keys docs/contract.md promises, and a few more. The sections on file
 * I/O, memory, the GPU and NVTX are report_json_sections.c (report_json_internal.h). */
#include <stdint.h>
#include <stdio.h>

#include "json_writer.h"
#include "report_output.h"
#include "util.h"
#include "wslshim/trace_format.h"
#include "report_json_internal.h"

/* "emulation": the SPEC a process ran under and the costs it added; processes, when not 0: how
 * many of the run's did. */
void report_json_emulation(struct json_writer *w, const struct wsl_process *p, size_t processes)
{
    json_begin_object(w);
    wsl_emulation_write_json(w, p->emu_spec, p->emu_ns);
    if (p->emu_fs_meta_ns || p->emu_fs_read_bps || p->emu_fs_write_bps) {
        json_key(w, "fs"); /* the paths are in the SPEC */
        json_begin_object(w);
        json_key_u64(w, "meta_ns", p->emu_fs_meta_ns);
        json_key_u64(w, "read_bytes_per_s", p->emu_fs_read_bps);
        json_key_u64(w, "write_bytes_per_s", p->emu_fs_write_bps);
        json_end_object(w);
    }
    if (processes)
        json_key_u64(w, "processes", processes);
    json_end_object(w);
}

#define USE(key, member) JSON_U64_FIELD(struct wsl_kern_gpu_use, key, member)
static const struct json_u64_field gpu_use_fields[] = {
    USE("kernels_timed", kernels_timed),
    USE("graphs_timed", graphs_timed),
    USE("idle_at_submit", idle_at_submit),
    USE("gpu_time_est_ns", est_gpu_ns),
    USE("gpu_phase_ns", gpu_phase_ns),
};
#undef USE

static void write_gpu_use(struct json_writer *w, const struct wsl_process *p)
{
    const struct wsl_kern_gpu_use *g = &p->gpu;
    double busy = report_share(g->est_gpu_ns, g->gpu_phase_ns);
    json_key(w, "gpu_use");
    json_begin_object(w);
    JSON_U64_FIELDS(w, g, gpu_use_fields);
    json_key_double_or_null(w, "busy_estimate",   /* of its GPU phase */
                            g->kernels_timed + g->graphs_timed && g->gpu_phase_ns, busy > 1 ? 1 : busy);
    /* cuMemGetInfo when the shim first sampled a launch */
    json_key_u64_or_null(w, "device_free_at_start", p->have_gpu_memory, p->gpu_free_at_start);
    json_key_u64_or_null(w, "device_total", p->have_gpu_memory, p->gpu_total);
    json_end_object(w);
}

static void write_process(struct json_writer *w, const struct wsl_run *run, const struct wsl_process *p)
{
    json_begin_object(w);
    json_key_i64(w, "pid", p->pid);
    json_key_i64(w, "ppid", p->ppid);
    json_key_string(w, "exe", p->exe);
    json_key_bool(w, "wsl", (p->flags & (WSL_PROC_WSL1 | WSL_PROC_WSL2)) != 0);
    json_key_u64(w, "wsl_version", p->flags & WSL_PROC_WSL2 ? 2 : p->flags & WSL_PROC_WSL1 ? 1 : 0);
    if (p->emulated) {
        json_key(w, "emulation");
        report_json_emulation(w, p, 0);
    }
    json_key_string(w, "host", p->host);
    json_key_string(w, "kernel_release", p->kernel_release);
    json_key(w, "argv");
    json_begin_array(w);
    for (uint32_t i = 0; i < p->argc; i++)
        json_string(w, p->argv[i]);
    json_end_array(w);
    json_key_string(w, "trace", p->trace_path);
    json_key_u64(w, "events", p->events);
    json_key_u64(w, "dropped", p->dropped);
    json_key_u64(w, "paths_dropped", p->paths_dropped);
    json_key_u64(w, "threads", p->threads);
    json_key_bool(w, "truncated", p->truncated);
    json_key_bool(w, "forked", (p->flags & WSL_PROC_FORKED) != 0);
    json_key_bool(w, "execed", (p->flags & WSL_PROC_EXECED) != 0);
    json_key_string(w, "clock", p->clock_kind == WSL_CLOCK_TSC ? "tsc" : "monotonic");
    json_key_u64(w, "start_ns", p->start_ns - run->start_ns);  /* from the run's start */
    json_key_u64(w, "end_ns", p->end_ns - run->start_ns);
    json_key_i64_or_null(w, "driver_version", p->have_driver, p->driver_version);
    json_key_string(w, "libcuda", p->have_driver ? p->libcuda_path : NULL);
    report_json_write_io_counts_object(w, "io", &p->io.data); /* data files, as the run's "io" */
    /* fds not seen opened: pipes, sockets, stdin (DataLoader workers' queues) */
    report_json_write_io_counts_object(w, "io_other_fds", &p->io.unknown_fd);
    write_gpu_use(w, p);
    json_key(w, "gpus");
    json_begin_array(w);
    for (uint32_t i = 0; i < p->gpu_count; i++) {
        char cc[32];
        snprintf(cc, sizeof cc, "%d.%d", p->gpus[i].cc_major, p->gpus[i].cc_minor);
        json_begin_object(w);
        json_key_string(w, "name", p->gpus[i].name);
        json_key_u64(w, "total_mem", p->gpus[i].total_mem);
        json_key_string(w, "cc", cc);
        json_end_object(w);
    }
    json_end_array(w);
    json_end_object(w);
}

static void write_span(struct json_writer *w, const char *name, uint64_t a, uint64_t b)
{
    json_begin_object(w);
    json_key_string(w, "name", name);
    json_key_u64(w, "start_ns", a);
    json_key_u64(w, "end_ns", b > a ? b : a);
    json_key_u64(w, "duration_ns", b > a ? b - a : 0);
    json_end_object(w);
}

#define PHASE(key, member) JSON_U64_FIELD(struct wsl_phases, key, member)
static const struct json_u64_field module_load_fields[] = {
    PHASE("module_loads", module_loads),
    PHASE("module_load_ns", module_load_ns),
    PHASE("warmup_module_loads", warmup_module_loads),
    PHASE("warmup_module_load_ns", warmup_module_load_ns),
    PHASE("steady_module_loads", steady_module_loads),
};
#undef PHASE

/* One process's phases (phase_analysis.h). */
static void write_phases(struct json_writer *w, const struct wsl_run *run, const struct wsl_process *p)
{
    const struct wsl_phases *ph = &p->phases;
    bool gpu = ph->method != WSL_STEADY_NONE;
    json_begin_object(w);
    json_key_i64(w, "pid", p->pid);
    /* the run's main GPU process (most launches) */
    json_key_bool(w, "main", run->phases.known && run->phases.main_pid == p->pid);
    json_key_bool(w, "gpu", gpu);               /* it submitted GPU work: the four phases hold */
    json_key_bool(w, "compiler", p->compiler);  /* a compiler or compile worker the run started */
    json_key_string(w, "steady_method", wsl_steady_method_name(ph->method));
    json_key(w, "phases");
    json_begin_array(w);
    if (gpu) {
        write_span(w, "start-up", ph->start_ns, ph->first_submit_ns);
        write_span(w, "warm-up", ph->first_submit_ns, ph->steady_start_ns);
        write_span(w, "steady state", ph->steady_start_ns, ph->steady_end_ns);
        write_span(w, "teardown", ph->steady_end_ns, ph->end_ns);
    }
    json_end_array(w);
    if (gpu) {
        /* in the steady state: NVTX steps, or periods of the launch stream */
        json_key_u64(w, "steps", ph->steps);
        json_key_u64(w, "step_ns", ph->step_ns); /* median */
        json_key_u64(w, "warmup_steps", ph->warmup_steps); /* leading steps slower than 1.5x the median: warm-up */
        json_key_u64(w, "warmup_excess_ns", ph->warmup_excess_ns);
        json_key_u64(w, "period_launches", ph->period_launches);
        json_key_u64(w, "launches", ph->launches);
    }
    JSON_U64_FIELDS(w, ph, module_load_fields);
    json_end_object(w);
}

static void write_steady_state(struct json_writer *w, const struct wsl_run *run)
{
    const struct wsl_run_phases *rp = &run->phases;
    json_begin_object(w);
    json_key_bool(w, "known", rp->known);
    if (rp->known) {
        uint64_t steady_ns = rp->steady_end_ns - rp->steady_start_ns;
        json_key_i64(w, "main_pid", rp->main_pid);
        json_key_u64(w, "start_ns", rp->steady_start_ns);
        json_key_u64(w, "end_ns", rp->steady_end_ns);
        json_key_u64(w, "duration_ns", steady_ns);
        json_key_double(w, "share_of_wall", report_share(steady_ns, run->wall_ns));
        json_key_string(w, "method", wsl_steady_method_name(rp->main.method));
        json_key_bool(w, "findings_reread", rp->steady_known); /* the findings' steady-state time lost was measured */
    }
    json_key_u64(w, "compile_processes", rp->compile_processes);
    json_key_u64(w, "compile_process_ns", rp->compile_process_ns);
    json_end_object(w);
}

static void write_evidence(struct json_writer *w, const struct wsl_evidence *e)
{
    json_key(w, e->key);
    switch (e->type) {
    case WSL_EVIDENCE_U64: json_u64(w, e->u64); break;
    case WSL_EVIDENCE_NUMBER: json_double(w, e->number); break;
    case WSL_EVIDENCE_BOOL: json_bool(w, e->flag); break;
    case WSL_EVIDENCE_STRING: json_string(w, e->string); break;
    case WSL_EVIDENCE_STRINGS:
        json_begin_array(w);
        for (size_t k = 0; k < e->string_count; k++)
            json_string(w, e->strings[k]);
        json_end_array(w);
        break;
    }
}

static void write_finding(struct json_writer *w, const struct wsl_run *run, const struct wsl_finding *f)
{
    json_begin_object(w);
    json_key_string(w, "id", f->id);
    json_key_string(w, "severity", wsl_severity_name(f->severity));
    json_key_u64(w, "time_lost_ns", f->time_lost_ns);
    json_key_double(w, "wall_share", report_share(f->time_lost_ns, run->wall_ns));
    if (f->steady_known) {  /* the same rule within the steady state alone */
        json_key_u64(w, "steady_lost_ns", f->steady_lost_ns);
        json_key_double(w, "steady_share", report_share(f->steady_lost_ns, run->phases.steady_wall_ns));
    }
    json_key_string(w, "summary", f->summary);
    json_key_string(w, "advice", f->advice);
    json_key(w, "evidence");
    json_begin_object(w);
    for (size_t i = 0; i < f->evidence_count; i++)
        write_evidence(w, &f->evidence[i]);
    json_end_object(w);
    json_key_string(w, "how_computed", f->how_computed);
    json_key_string(w, "fix", f->fix);
    json_key_bool(w, "scaled_to_wall", f->scaled_to_wall);
    json_end_object(w);
}

#define HOST(key, member) JSON_U64_FIELD(struct wsl_host_summary, key, member)
/* After the waits. */
static const struct json_u64_field submission_fields[] = {
    HOST("queries", polls),
    HOST("queries_not_ready", polls_not_ready),
    HOST("waits_without_later_submission", unresolved_blocks),
    HOST("submissions", submissions),
    HOST("submit_ns", submit_ns),
};
/* "copies": all of them, by direction, the small ones (then their threshold) */
static const struct json_u64_field copy_fields[] = {
    HOST("count", copies),
    HOST("bytes", copy_bytes),
    HOST("host_ns", copy_ns),
    HOST("htod", htod),
    HOST("dtoh", dtoh),
    HOST("dtod", dtod),
    HOST("unknown_direction", unknown_direction),
    HOST("unclassified", unclassified_copies),
    HOST("small", small_copies),
    HOST("small_bytes", small_bytes),
    HOST("small_host_ns", small_ns),
};
/* ... and by the host memory's kind */
static const struct json_u64_field copy_memory_fields[] = {
    HOST("pageable", pageable_copies),
    HOST("pageable_htod", pageable_htod),
    HOST("pageable_dtoh", pageable_dtoh),
    HOST("pageable_bytes", pageable_bytes),
    HOST("pageable_host_ns", pageable_ns),
    HOST("pinned", locked_copies),
    HOST("pinned_bytes", locked_bytes),
    HOST("pinned_host_ns", locked_ns),
};
#undef HOST

/* Waits for the GPU and copies (host_analysis.h; docs/report.md). */
static void write_cuda_host(struct json_writer *w, const struct wsl_host_summary *h)
{
    json_begin_object(w);
    json_key(w, "waits");
    json_begin_object(w);
    for (unsigned k = 0; k < WSL_BLOCK_KINDS; k++) {
        json_key(w, wsl_block_kind_name((enum wsl_block_kind)k));
        json_begin_object(w);
        json_key_u64(w, "count", h->blocks[k]);
        json_key_u64(w, "blocked_ns", h->blocked_ns[k]);
        json_key_u64(w, "lost_ns", h->block_lost_ns[k]);
        json_end_object(w);
    }
    json_end_object(w);
    JSON_U64_FIELDS(w, h, submission_fields);
    json_key(w, "copies");
    json_begin_object(w);
    JSON_U64_FIELDS(w, h, copy_fields);
    json_key_u64(w, "small_threshold_bytes", WSL_HOST_SMALL_COPY);
    JSON_U64_FIELDS(w, h, copy_memory_fields);
    json_end_object(w);
    json_key(w, "by_range");    /* NVTX ranges, when the traces have them */
    json_begin_array(w);
    for (size_t i = 0; i < h->range_count; i++) {
        json_begin_object(w);
        json_key_string(w, "name", h->ranges[i].name);
        json_key_u64(w, "waits", h->ranges[i].blocks);
        json_key_u64(w, "blocked_ns", h->ranges[i].blocked_ns);
        json_key_u64(w, "lost_ns", h->ranges[i].lost_ns);
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
    json_key_u64(&w, "schema", WSL_REPORT_SCHEMA);
    json_key_u64(&w, "wall_ns", run->wall_ns);
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
