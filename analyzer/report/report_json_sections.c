/*
 * The JSON report's sections of a run (report_json.c writes the report): call groups and
 * APIs, file I/O, memory, the GPU's kernels and NVTX ranges. A struct's plain counters are
 * written from a table of them (json_writer.h, JSON_U64_FIELD): adding one is adding a row.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "json_writer.h"
#include "report_output.h"
#include "util.h"
#include "wslshim/trace_format.h"
#include "report_json_internal.h"

/* The calls of one group: the same keys wherever counts appear. */
#define IO(key, member) JSON_U64_FIELD(struct wsl_io_counts, key, member)
static const struct json_u64_field io_count_fields[] = {
    IO("reads", reads),
    IO("bytes_read", bytes_read),
    IO("opens", opens),
    IO("files_opened", files_opened),
    IO("stats", stats),
    IO("seeks", seeks),
    IO("closes", closes),
    IO("mmaps", mmaps),
    IO("bytes_mapped", bytes_mapped),
    IO("errors", errors),
    IO("read_ns", read_time),
    IO("meta_ns", meta_time),
    IO("mmap_ns", mmap_time),
    IO("writes", writes),
    IO("bytes_written", bytes_written),
    IO("syncs", syncs),
    IO("dir_ops", dir_ops),
    IO("write_ns", write_time),
};
#undef IO

void report_json_write_io_counts(struct json_writer *w, const struct wsl_io_counts *c)
{
    JSON_U64_FIELDS(w, c, io_count_fields);
}

void report_json_write_io_counts_object(struct json_writer *w, const char *key, const struct wsl_io_counts *c)
{
    json_key(w, key);
    json_begin_object(w);
    report_json_write_io_counts(w, c);
    json_end_object(w);
}

/* One API's calls, under its name. */
void report_json_write_api(struct json_writer *w, const struct wsl_api_stats *a)
{
    json_key(w, a->name);
    json_begin_object(w);
    json_key_u64(w, "calls", a->ns.count);
    json_key_u64(w, "total_ns", a->ns.sum);
    json_key_u64(w, "mean_ns", wsl_api_mean_ns(a));
    json_key_u64(w, "p50_ns", wsl_hist_quantile(&a->ns, 0.50));
    json_key_u64(w, "p99_ns", wsl_hist_quantile(&a->ns, 0.99));
    json_key_u64(w, "min_ns", a->ns.min);
    json_key_u64(w, "max_ns", a->ns.max);
    json_key_u64(w, "errors", a->errors);
    json_key_string(w, "category", wsl_category_name(a->category));
    json_key(w, "variants");
    json_begin_object(w);
    for (size_t v = 0; v < a->variant_count; v++)
        if (a->variants[v].calls)
            json_key_u64(w, a->variants[v].symbol, a->variants[v].calls);
    json_end_object(w);
    json_end_object(w);
}

/* A folder's figures: the top folders and the untracked rest. */
#define FOLDER(key, member) JSON_U64_FIELD(struct wsl_io_dir, key, member)
static const struct json_u64_field dir_fields[] = {
    FOLDER("reads", reads),
    FOLDER("bytes_read", bytes_read),
    FOLDER("files", files),
    FOLDER("time_ns", time),
};
#undef FOLDER

static void write_dir(struct json_writer *w, const struct wsl_io *io, const struct wsl_io_dir *d)
{
    json_begin_object(w);
    json_key_string(w, "dir", d->path);
    const struct wsl_io_mount *m = d->mount < io->mount_count ? &io->mounts[d->mount] : NULL;
    json_key_string(w, "fstype", m ? m->fstype : "unknown");
    json_key_string(w, "mount_point", m ? m->mount_point : "");
    JSON_U64_FIELDS(w, d, dir_fields);
    json_end_object(w);
}

static void write_fs(struct json_writer *w, const struct wsl_io *io, const struct wsl_io_fs *fs)
{
    json_key(w, fs->fstype);
    json_begin_object(w);
    report_json_write_io_counts(w, &fs->all);
    json_key(w, "mount_points");
    json_begin_array(w);
    for (size_t k = 0; k < fs->mount_count; k++)
        if (*io->mounts[fs->mounts[k]].mount_point)
            json_string(w, io->mounts[fs->mounts[k]].mount_point);
    json_end_array(w);
    json_key_bool(w, "crosses_windows", fs->crosses_windows);
    json_key_bool(w, "system", fs->system);
    json_end_object(w);
}

static void write_mount(struct json_writer *w, const struct wsl_io_mount *m)
{
    json_begin_object(w);
    json_key_string(w, "mount_point", m->mount_point);
    json_key_string(w, "fstype", m->fstype);
    json_key_string(w, "source", m->source);
    json_key_string(w, "kind", wsl_fs_kind_name(m->kind));
    json_key_bool(w, "crosses_windows", wsl_fs_kind_crosses_windows(m->kind));
    report_json_write_io_counts(w, &m->all);
    report_json_write_io_counts_object(w, "data", &m->data);
    json_key_string(w, "data_root", m->data_root && *m->data_root ? m->data_root : NULL);
    json_end_object(w);
}

void report_json_write_io(struct json_writer *w, const struct wsl_io *io)
{
    const struct wsl_io_summary *s = &io->total;
    json_begin_object(w);
    json_key_bool(w, "wsl", io->wsl);
    report_json_write_io_counts(w, &s->data);   /* data files: not /proc, /sys, /dev, not fds the shim did not see opened */
    json_key_u64(w, "span_ns", s->have_span ? s->last - s->first : 0);
    json_key_double(w, "files_per_s", wsl_io_files_per_s(io));
    json_key_u64(w, "timing_sampled_1_in", io->timing_sample);

    json_key(w, "by_fs");
    json_begin_object(w);
    for (size_t i = 0; i < io->fs_count; i++)
        write_fs(w, io, &io->fs[i]);
    json_end_object(w);

    json_key(w, "mounts");
    json_begin_array(w);
    for (size_t i = 0; i < io->mount_count; i++)
        write_mount(w, &io->mounts[i]);
    json_end_array(w);

    json_key(w, "size_histogram");
    json_begin_array(w);
    for (unsigned b = 0; b < WSL_IO_SIZE_BUCKETS; b++) {
        json_begin_object(w);
        json_key_string(w, "bucket", wsl_io_size_bucket_name(b));
        json_key_u64(w, "reads", s->size_hist[b]);
        json_end_object(w);
    }
    json_end_array(w);

    json_key(w, "small_files");
    json_begin_object(w);
    json_key_u64(w, "files", s->small_files);
    json_key_u64(w, "sized_files", io->file_sizes.count);
    json_key_u64(w, "unknown_size", s->read_opens > io->file_sizes.count ? s->read_opens - io->file_sizes.count : 0);
    json_key_double(w, "share_files", report_share(s->small_files, io->file_sizes.count));
    json_key_double(w, "share_bytes", report_share(s->small_file_bytes_read, s->named_bytes_read));
    json_key_u64(w, "median_file_size", wsl_hist_quantile(&io->file_sizes, 0.5));
    json_end_object(w);

    json_key(w, "small_reads");
    json_begin_object(w);
    json_key_u64(w, "reads", s->small_reads);
    json_key_double(w, "share", report_share(s->small_reads, s->named_reads));
    json_key_u64(w, "bytes", s->small_read_bytes);
    json_key_u64(w, "time_ns", s->small_read_time);
    json_end_object(w);

    json_key(w, "top_dirs");
    json_begin_array(w);
    for (size_t i = 0, shown = 0; i < io->dir_count && shown < WSL_IO_TOP_DIRS; i++) {
        const struct wsl_io_dir *d = &io->dirs[i];
        if (d->time == 0 && d->reads == 0 && d->files == 0)
            continue;
        write_dir(w, io, d);
        shown++;
    }
    json_end_array(w);
    json_key_u64(w, "dirs", io->dir_count);
    json_key(w, "untracked_dirs");
    json_begin_object(w);
    JSON_U64_FIELDS(w, &io->untracked_dirs, dir_fields);
    json_end_object(w);

    report_json_write_io_counts_object(w, "system", &s->system);
    report_json_write_io_counts_object(w, "code", &s->code);
    report_json_write_io_counts_object(w, "unknown_fd", &s->unknown_fd);
    json_key_u64(w, "unnamed_path_events", io->unnamed_path_events);
    json_end_object(w);
}

#define KIND(key, member) JSON_U64_FIELD(struct wsl_mem_kind, key, member)
static const struct json_u64_field mem_kind_fields[] = {
    KIND("allocations", allocations),
    KIND("bytes", bytes),
    KIND("peak_bytes", peak_bytes),
    KIND("frees", frees),
    KIND("unknown_frees", unknown_frees),
    KIND("failed", failed),
    KIND("live_at_exit_bytes", live_bytes),
};
#undef KIND

static void write_mem_kind(struct json_writer *w, const char *name, const struct wsl_mem_kind *k)
{
    json_key(w, name);
    json_begin_object(w);
    JSON_U64_FIELDS(w, k, mem_kind_fields);
    json_end_object(w);
}

/* Device memory's counters, after its peak (keys in docs/memory.md). */
#define MEM(key, member) JSON_U64_FIELD(struct wsl_mem_summary, key, member)
static const struct json_u64_field mem_fields[] = {
    MEM("allocations", allocations),
    MEM("allocated_bytes", allocated_bytes),
    MEM("frees", frees),
    MEM("unknown_frees", unknown_frees),
    MEM("failed_frees", failed_frees),
    MEM("live_at_exit_bytes", live_at_exit_bytes),
    MEM("live_at_exit_allocations", live_at_exit_allocations),
    MEM("failed_allocations", failed_allocations),
    MEM("oom_failures", oom_failures),
    MEM("largest_failed_bytes", largest_failed_bytes),
    MEM("failed_ns", failed_ns),
    MEM("async_allocations", async_allocations),
    MEM("async_bytes", async_bytes),
    MEM("async_frees", async_frees),
    MEM("page_locked_peak_bytes", page_locked_peak_bytes),
};
/* After the kinds of memory other than device memory. */
static const struct json_u64_field mem_tail_fields[] = {
    MEM("untracked_allocations", untracked_allocations),
    MEM("reused_pointers", reused_pointers),
    MEM("late_events", late_events),
};
#undef MEM

/* The figures of one process or of the run (keys in docs/memory.md). */
static void write_mem_fields(struct json_writer *w, const struct wsl_run *run, const struct wsl_mem_summary *m)
{
    json_key_u64(w, "peak_device_bytes", m->peak_bytes);
    json_key_u64(w, "peak_at_ns",   /* from the run's start */
                 m->peak_bytes && m->peak_at_ns > run->start_ns ? m->peak_at_ns - run->start_ns : 0);
    json_key_u64_or_null(w, "device_total_bytes", m->device_total_bytes, m->device_total_bytes);
    json_key_double_or_null(w, "peak_share_of_device", m->device_total_bytes, wsl_mem_peak_share(m));
    JSON_U64_FIELDS(w, m, mem_fields);
    write_mem_kind(w, "pinned", &m->pinned);
    write_mem_kind(w, "registered", &m->registered);
    write_mem_kind(w, "managed", &m->managed);
    JSON_U64_FIELDS(w, m, mem_tail_fields);
}

void report_json_write_memory(struct json_writer *w, const struct wsl_run *run)
{
    const struct wsl_mem_summary *m = &run->mem;
    json_begin_object(w);
    write_mem_fields(w, run, m);
    uint64_t sum_peaks = 0;
    for (size_t i = 0; i < run->proc_count; i++)
        sum_peaks += run->procs[i].mem.peak_bytes;
    json_key_u64(w, "sum_of_process_peaks_bytes", sum_peaks);
    json_key(w, "size_histogram");
    json_begin_array(w);
    for (unsigned b = 0; b < WSL_MEM_SIZE_BUCKETS; b++) {
        json_begin_object(w);
        json_key_string(w, "bucket", wsl_mem_bucket_name(b));
        json_key_u64(w, "min_bytes", wsl_mem_bucket_min(b));
        json_key_u64(w, "count", m->size_hist[b]);
        json_end_object(w);
    }
    json_end_array(w);
    json_key(w, "per_process");
    json_begin_array(w);
    for (size_t i = 0; i < run->proc_count; i++) {
        const struct wsl_process *p = &run->procs[i];
        json_begin_object(w);
        json_key_i64(w, "pid", p->pid);
        write_mem_fields(w, run, &p->mem);
        json_end_object(w);
    }
    json_end_array(w);
    json_end_object(w);
}

/* count, total, mean, p50, p99, min, max of a histogram of ns. */
static void write_ns_summary(struct json_writer *w, const char *key, const struct wsl_hist *h)
{
    json_key(w, key);
    json_begin_object(w);
    json_key_u64(w, "count", h->count);
    json_key_u64(w, "total", h->sum);
    json_key_u64(w, "mean", h->count ? h->sum / h->count : 0);
    json_key_u64(w, "p50", wsl_hist_quantile(h, 0.5));
    json_key_u64(w, "p99", wsl_hist_quantile(h, 0.99));
    json_key_u64(w, "min", h->count ? h->min : 0);
    json_key_u64(w, "max", h->max);
    json_end_object(w);
}

/* The launches after the GPU figures. */
#define KERN(key, member) JSON_U64_FIELD(struct wsl_kernels, key, member)
static const struct json_u64_field launch_fields[] = {
    KERN("unnamed_launches", unnamed_launches),
    KERN("untracked_launches", untracked_launches),
    KERN("failed_launches", failed_launches),
    KERN("graph_launches", graph_launches),
    KERN("captured_launches", captured_launches),
    KERN("named_handles", named_handles),
};
#undef KERN

static void write_kernel(struct json_writer *w, const struct wsl_kernels *k, const struct wsl_kernel *kn)
{
    json_begin_object(w);
    json_key_string(w, "name", kn->name);
    json_key_string(w, "mangled", kn->mangled);
    if (!kn->mangled) {     /* an unnamed handle: whose it is */
        json_key_i64(w, "pid", kn->pid);
        json_key_u64(w, "handle", kn->handle);
    }
    json_key_u64(w, "count", kn->launches);
    json_key_u64(w, "captured", kn->captured);  /* launches into a stream being captured (graph nodes) */
    json_key_u64(w, "timed", kn->gpu_ns.count);
    write_ns_summary(w, "gpu_ns", &kn->gpu_ns);
    json_key_u64(w, "gpu_time_est_ns", kn->est_gpu_ns);
    /* its sampling's standard error (its sizes timed at least twice; null: the run's traces name no size) */
    json_key_u64_or_null(w, "gpu_time_est_stderr_ns", k->est_var_known, (uint64_t)(sqrt(kn->est_var_ns2) + 0.5));
    /* never timed: the process's mean timed kernel time x launches */
    json_key_bool(w, "gpu_time_estimated", kn->gpu_ns.count == 0);
    json_key_u64(w, "idle_at_submit", kn->idle_at_submit);
    json_key(w, "launch_apis");
    json_begin_object(w);
    for (unsigned a = 0; a < k->launch_api_count; a++)
        if (kn->by_api[a])
            json_key_u64(w, k->launch_apis[a], kn->by_api[a]);
    json_end_object(w);
    json_end_object(w);
}

void report_json_write_gpu(struct json_writer *w, const struct wsl_run *run, const struct wsl_kernels *k)
{
    uint64_t timed = k->kernels_timed + k->graphs_timed;
    json_begin_object(w);
    /* GPU timing: null when not measured */
    json_key_u64_or_null(w, "busy_ns", run->gpu_busy_known, run->gpu_busy_ns);
    json_key_double_or_null(w, "busy_share", run->gpu_busy_known && run->wall_ns,
                            report_share(run->gpu_busy_ns, run->wall_ns));
    json_key_u64(w, "kernels_timed", k->kernels_timed);  /* kernel launches timed on the GPU (WSLSHIM_GPU_TIMING) */
    json_key_u64(w, "graphs_timed", k->graphs_timed);
    write_ns_summary(w, "kernel_ns", &k->kernel_ns);    /* GPU time per timed kernel */
    write_ns_summary(w, "graph_ns", &k->graph_ns);
    /* timed launches that found their stream's GPU queue empty */
    json_key_u64(w, "idle_at_submit", k->idle_at_submit);
    json_key_double_or_null(w, "idle_at_submit_share", timed, report_share(k->idle_at_submit, timed));
    json_key_u64(w, "mapped", k->mapped);               /* timed launches placed on the host clock */
    /* idle at submit: launch call start -> kernel start on the GPU */
    write_ns_summary(w, "submit_latency_ns", &k->idle_start_ns);
    /* of them, placed before the call began: by how much */
    write_ns_summary(w, "submit_latency_mapping_error_ns", &k->idle_start_before_ns);
    json_key_u64(w, "gpu_time_est_ns", k->est_gpu_ns);  /* per kernel, launches x their configuration's mean */
    /* its sampling's standard error (configurations timed at least twice; null: no configuration timed) */
    json_key_u64_or_null(w, "gpu_time_est_stderr_ns", k->est_var_known, (uint64_t)(sqrt(k->est_var_ns2) + 0.5));
    /* D, queued minus idle measures, by which the estimates adjust the timed launches (wsl_kern_pairs);
     * null: not measured (no configuration timed both queued and idle), nothing adjusted */
    json_key_u64_or_null(w, "pair_overhead_ns", k->pair_groups > 0, k->pair_overhead_ns);
    json_key_u64(w, "pair_overhead_configs", k->pair_groups);
    json_key_u64(w, "pair_overhead_corrected", k->pair_corrected);
    /* how the timed launches were adjusted (--gpu-pair-correction), and fixed's two parts */
    static const char *const pair_modes[] = {"split", "queued", "none", "fixed"};
    json_key_string(w, "pair_correction", pair_modes[wsl_kern_pairs]);
    json_key_u64_or_null(w, "pair_fixed_idle_ns", wsl_kern_pairs == WSL_KERN_PAIRS_FIXED,
                         (uint64_t)(wsl_kern_fixed_idle_ns + 0.5));
    json_key_u64_or_null(w, "pair_fixed_queued_ns", wsl_kern_pairs == WSL_KERN_PAIRS_FIXED,
                         (uint64_t)(wsl_kern_fixed_queued_ns + 0.5));
    /* launches of kernels timed at least WSL_KERN_COVERED times */
    json_key_u64(w, "covered_launches", k->covered_launches);
    json_key_double_or_null(w, "covered_share", k->launches > k->captured_launches,
                            report_share(k->covered_launches, k->launches - k->captured_launches));
    /* launches of kernels never timed: their GPU time is an estimate */
    json_key_u64(w, "estimated_launches", k->estimated_launches);
    json_key_u64(w, "estimated_gpu_ns", k->estimated_gpu_ns);
    /* first launch to last GPU work, summed over processes with timed launches */
    json_key_u64(w, "gpu_phase_ns", k->busy_wall_ns);
    json_key_double_or_null(w, "busy_estimate", k->busy_estimate >= 0, k->busy_estimate); /* of that GPU phase */
    json_key_u64(w, "launches", k->launches);
    json_key_u64(w, "kernels_distinct", k->count);
    JSON_U64_FIELDS(w, k, launch_fields);
    json_key(w, "kernels");     /* the first WSL_KERN_TOP_JSON, most launches first */
    json_begin_array(w);
    for (size_t i = 0; i < k->count && i < WSL_KERN_TOP_JSON; i++)
        write_kernel(w, k, &k->items[i]);
    json_end_array(w);
    json_end_object(w);
}

/* What happened while a range was open (its own, or with the ranges nested in it). */
#define NVTX(key, member) JSON_U64_FIELD(struct wsl_nvtx_counts, key, member)
static const struct json_u64_field nvtx_count_fields[] = {
    NVTX("api_calls", api_calls),
    NVTX("api_ns", api_ns),
    NVTX("launches", launches),
    NVTX("syncs", syncs),
    NVTX("sync_ns", sync_ns),
    NVTX("io_calls", io_calls),
    NVTX("io_reads", io_reads),
    NVTX("io_bytes", io_bytes),
    NVTX("io_ns", io_ns),
};

/* The same counters per training step; the last two (the GPU's) only in the process-wide figures. */
static const struct json_u64_field per_step_fields[] = {
    NVTX("launches_per_step", launches),
    NVTX("syncs_per_step", syncs),
    NVTX("api_calls_per_step", api_calls),
    NVTX("api_ns_per_step", api_ns),
    NVTX("io_reads_per_step", io_reads),
    NVTX("io_bytes_per_step", io_bytes),
    NVTX("io_ns_per_step", io_ns),
    NVTX("gpu_kernels_per_step", gpu_kernels),   /* timed kernels launched inside a step */
    NVTX("gpu_ns_per_step", gpu_ns),
};
#undef NVTX
#define PER_STEP_GPU_FIELDS 2

static void write_per_step(struct json_writer *w, const struct wsl_nvtx_counts *c, double steps, bool with_gpu)
{
    size_t n = sizeof per_step_fields / sizeof per_step_fields[0] - (with_gpu ? 0 : PER_STEP_GPU_FIELDS);
    for (size_t i = 0; i < n; i++)
        json_key_double(w, per_step_fields[i].key, (double)json_u64_field_get(c, &per_step_fields[i]) / steps);
}

void report_json_write_nvtx_range(struct json_writer *w, const struct wsl_nvtx_range *r)
{
    json_begin_object(w);
    json_key_string(w, "name", r->name);
    json_key_string(w, "domain", r->domain);    /* null: the default domain */
    /* "push" (push/pop, nested per thread) or "start" (start/end) */
    json_key_string(w, "kind", r->kind == WSL_NVTX_PUSH ? "push" : "start");
    json_key_u64(w, "count", r->count);
    json_key_u64(w, "total_ns", r->ns.sum);
    json_key_u64(w, "mean_ns", wsl_nvtx_mean_ns(r));
    json_key_u64(w, "p50_ns", wsl_hist_quantile(&r->ns, 0.50));
    json_key_u64(w, "p99_ns", wsl_hist_quantile(&r->ns, 0.99));
    json_key_u64(w, "max_ns", r->ns.max);
    json_key_u64(w, "unclosed", r->unclosed);   /* still open at the end of their trace: closed there */
    json_key_u64(w, "top_level", r->top_level); /* opened with no other range open on their thread */
    json_key_u64(w, "max_depth", r->max_depth);
    /* What happened while this was the innermost open range of its thread. */
    JSON_U64_FIELDS(w, &r->self, nvtx_count_fields);
    json_key_u64(w, "gpu_kernels", r->self.gpu_kernels);
    json_key_u64(w, "gpu_ns", r->self.gpu_ns);
    json_key(w, "inclusive");   /* the same, plus the ranges nested in it */
    json_begin_object(w);
    JSON_U64_FIELDS(w, &r->incl, nvtx_count_fields);
    json_end_object(w);
    json_end_object(w);
}

static void write_nvtx_step(struct json_writer *w, const struct wsl_nvtx *n)
{
    if (n->step < 0) {
        json_null(w);
        return;
    }
    const struct wsl_nvtx_range *r = &n->ranges[n->step];
    json_begin_object(w);
    json_key_string(w, "name", r->name);
    json_key_string(w, "domain", r->domain);
    json_key_u64(w, "steps", r->count);
    json_key_u64(w, "mean_ns", wsl_nvtx_mean_ns(r));
    json_key_u64(w, "p50_ns", wsl_hist_quantile(&r->ns, 0.50));
    json_key_u64(w, "p99_ns", wsl_hist_quantile(&r->ns, 0.99));
    write_per_step(w, &r->incl, r->count ? (double)r->count : 1.0, false);
    /* Every thread of the step's process while a step was open (PyTorch's autograd thread too). */
    json_key(w, "process");
    if (!n->step_process_known || !n->step_process_steps) {
        json_null(w);
    } else {
        json_begin_object(w);
        json_key_u64(w, "steps", n->step_process_steps);
        write_per_step(w, &n->step_process, (double)n->step_process_steps, true);
        json_end_object(w);
    }
    json_end_object(w);
}

#define NVTX(key, member) JSON_U64_FIELD(struct wsl_nvtx, key, member)
static const struct json_u64_field nvtx_summary_fields[] = {
    NVTX("pushes", pushes),
    NVTX("pops", pops),
    NVTX("starts", starts),
    NVTX("ends", ends),
    NVTX("marks", marks_total),
    NVTX("unmatched_pops", unmatched_pops),
    NVTX("unmatched_ends", unmatched_ends),
    NVTX("unclosed", unclosed),
    NVTX("unnamed_ids", unnamed_ids),
    NVTX("gpu_unattributed", gpu_unattributed),
    NVTX("dropped", dropped),
    NVTX("lost", lost),     /* open ranges whose pop the shim dropped (full buffers): discarded */
};
#undef NVTX

void report_json_write_nvtx_summary(struct json_writer *w, const struct wsl_nvtx *n)
{
    json_begin_object(w);
    JSON_U64_FIELDS(w, n, nvtx_summary_fields);
    json_key(w, "step");        /* the training-step range and per-step figures, or null */
    write_nvtx_step(w, n);
    json_key(w, "marks_by_name");
    json_begin_array(w);
    for (size_t i = 0; i < n->mark_count; i++) {
        json_begin_object(w);
        json_key_string(w, "name", n->marks[i].name);
        json_key_string(w, "domain", n->marks[i].domain);
        json_key_u64(w, "count", n->marks[i].count);
        json_end_object(w);
    }
    json_end_array(w);
    json_end_object(w);
}
