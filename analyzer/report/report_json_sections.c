/*
 * The JSON report's sections of a run (report_json.c writes the report): call groups and
 * APIs, file I/O, memory, the GPU's kernels and NVTX ranges.
 */
#include <stdint.h>
#include <stdio.h>

#include "json_writer.h"
#include "report_output.h"
#include "util.h"
#include "wslshim/trace_format.h"
#include "report_json_internal.h"

/* The calls of one group: the same keys wherever counts appear. */
void report_json_write_io_counts(struct json_writer *w, const struct wsl_io_counts *c)
{
    json_key(w, "reads");
    json_u64(w, c->reads);
    json_key(w, "bytes_read");
    json_u64(w, c->bytes_read);
    json_key(w, "opens");
    json_u64(w, c->opens);
    json_key(w, "files_opened");
    json_u64(w, c->files_opened);
    json_key(w, "stats");
    json_u64(w, c->stats);
    json_key(w, "seeks");
    json_u64(w, c->seeks);
    json_key(w, "closes");
    json_u64(w, c->closes);
    json_key(w, "mmaps");
    json_u64(w, c->mmaps);
    json_key(w, "bytes_mapped");
    json_u64(w, c->bytes_mapped);
    json_key(w, "errors");
    json_u64(w, c->errors);
    json_key(w, "read_ns");
    json_u64(w, c->read_time);
    json_key(w, "meta_ns");
    json_u64(w, c->meta_time);
    json_key(w, "mmap_ns");
    json_u64(w, c->mmap_time);
    json_key(w, "writes");
    json_u64(w, c->writes);
    json_key(w, "bytes_written");
    json_u64(w, c->bytes_written);
    json_key(w, "syncs");
    json_u64(w, c->syncs);
    json_key(w, "dir_ops");
    json_u64(w, c->dir_ops);
    json_key(w, "write_ns");
    json_u64(w, c->write_time);
}

/* "emulation": the SPEC a process ran under and the costs it added. */
void report_json_write_api(struct json_writer *w, const struct wsl_api_stats *a)
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

static double share(uint64_t part, uint64_t whole)
{
    return whole ? (double)part / (double)whole : 0;
}

static void write_dir(struct json_writer *w, const struct wsl_io *io, const struct wsl_io_dir *d)
{
    json_begin_object(w);
    json_key(w, "dir");
    json_string(w, d->path);
    const struct wsl_io_mount *m = d->mount < io->mount_count ? &io->mounts[d->mount] : NULL;
    json_key(w, "fstype");
    json_string(w, m ? m->fstype : "unknown");
    json_key(w, "mount_point");
    json_string(w, m ? m->mount_point : "");
    json_key(w, "reads");
    json_u64(w, d->reads);
    json_key(w, "bytes_read");
    json_u64(w, d->bytes_read);
    json_key(w, "files");
    json_u64(w, d->files);
    json_key(w, "time_ns");
    json_u64(w, d->time);
    json_end_object(w);
}

void report_json_write_io(struct json_writer *w, const struct wsl_io *io)
{
    const struct wsl_io_summary *s = &io->total;
    json_begin_object(w);
    json_key(w, "wsl");
    json_bool(w, io->wsl);
    report_json_write_io_counts(w, &s->data);   /* data files: not /proc, /sys, /dev, not fds the shim did not see opened */
    json_key(w, "span_ns");
    json_u64(w, s->have_span ? s->last - s->first : 0);
    json_key(w, "files_per_s");
    json_double(w, wsl_io_files_per_s(io));
    json_key(w, "timing_sampled_1_in");
    json_u64(w, io->timing_sample);

    json_key(w, "by_fs");
    json_begin_object(w);
    for (size_t i = 0; i < io->fs_count; i++) {
        const struct wsl_io_fs *fs = &io->fs[i];
        json_key(w, fs->fstype);
        json_begin_object(w);
        report_json_write_io_counts(w, &fs->all);
        json_key(w, "mount_points");
        json_begin_array(w);
        for (size_t k = 0; k < fs->mount_count; k++)
            if (*io->mounts[fs->mounts[k]].mount_point)
                json_string(w, io->mounts[fs->mounts[k]].mount_point);
        json_end_array(w);
        json_key(w, "crosses_windows");
        json_bool(w, fs->crosses_windows);
        json_key(w, "system");
        json_bool(w, fs->system);
        json_end_object(w);
    }
    json_end_object(w);

    json_key(w, "mounts");
    json_begin_array(w);
    for (size_t i = 0; i < io->mount_count; i++) {
        const struct wsl_io_mount *m = &io->mounts[i];
        json_begin_object(w);
        json_key(w, "mount_point");
        json_string(w, m->mount_point);
        json_key(w, "fstype");
        json_string(w, m->fstype);
        json_key(w, "source");
        json_string(w, m->source);
        json_key(w, "kind");
        json_string(w, wsl_fs_kind_name(m->kind));
        json_key(w, "crosses_windows");
        json_bool(w, wsl_fs_kind_crosses_windows(m->kind));
        report_json_write_io_counts(w, &m->all);
        json_key(w, "data");
        json_begin_object(w);
        report_json_write_io_counts(w, &m->data);
        json_end_object(w);
        json_key(w, "data_root");
        json_string(w, m->data_root && *m->data_root ? m->data_root : NULL);
        json_end_object(w);
    }
    json_end_array(w);

    json_key(w, "size_histogram");
    json_begin_array(w);
    for (unsigned b = 0; b < WSL_IO_SIZE_BUCKETS; b++) {
        json_begin_object(w);
        json_key(w, "bucket");
        json_string(w, wsl_io_size_bucket_name(b));
        json_key(w, "reads");
        json_u64(w, s->size_hist[b]);
        json_end_object(w);
    }
    json_end_array(w);

    json_key(w, "small_files");
    json_begin_object(w);
    json_key(w, "files");
    json_u64(w, s->small_files);
    json_key(w, "sized_files");
    json_u64(w, io->file_sizes.count);
    json_key(w, "unknown_size");
    json_u64(w, s->read_opens > io->file_sizes.count ? s->read_opens - io->file_sizes.count : 0);
    json_key(w, "share_files");
    json_double(w, share(s->small_files, io->file_sizes.count));
    json_key(w, "share_bytes");
    json_double(w, share(s->small_file_bytes_read, s->named_bytes_read));
    json_key(w, "median_file_size");
    json_u64(w, wsl_hist_quantile(&io->file_sizes, 0.5));
    json_end_object(w);

    json_key(w, "small_reads");
    json_begin_object(w);
    json_key(w, "reads");
    json_u64(w, s->small_reads);
    json_key(w, "share");
    json_double(w, share(s->small_reads, s->named_reads));
    json_key(w, "bytes");
    json_u64(w, s->small_read_bytes);
    json_key(w, "time_ns");
    json_u64(w, s->small_read_time);
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
    json_key(w, "dirs");
    json_u64(w, io->dir_count);
    json_key(w, "untracked_dirs");
    json_begin_object(w);
    json_key(w, "reads");
    json_u64(w, io->untracked_dirs.reads);
    json_key(w, "bytes_read");
    json_u64(w, io->untracked_dirs.bytes_read);
    json_key(w, "files");
    json_u64(w, io->untracked_dirs.files);
    json_key(w, "time_ns");
    json_u64(w, io->untracked_dirs.time);
    json_end_object(w);

    json_key(w, "system");
    json_begin_object(w);
    report_json_write_io_counts(w, &s->system);
    json_end_object(w);
    json_key(w, "code");
    json_begin_object(w);
    report_json_write_io_counts(w, &s->code);
    json_end_object(w);
    json_key(w, "unknown_fd");
    json_begin_object(w);
    report_json_write_io_counts(w, &s->unknown_fd);
    json_end_object(w);
    json_key(w, "unnamed_path_events");
    json_u64(w, io->unnamed_path_events);
    json_end_object(w);
}

static void write_mem_kind(struct json_writer *w, const char *name, const struct wsl_mem_kind *k)
{
    json_key(w, name);
    json_begin_object(w);
    json_key(w, "allocations");
    json_u64(w, k->allocations);
    json_key(w, "bytes");
    json_u64(w, k->bytes);
    json_key(w, "peak_bytes");
    json_u64(w, k->peak_bytes);
    json_key(w, "frees");
    json_u64(w, k->frees);
    json_key(w, "unknown_frees");
    json_u64(w, k->unknown_frees);
    json_key(w, "failed");
    json_u64(w, k->failed);
    json_key(w, "live_at_exit_bytes");
    json_u64(w, k->live_bytes);
    json_end_object(w);
}

/* The figures of one process or of the run (keys in docs/memory.md). */
static void write_mem_fields(struct json_writer *w, const struct wsl_run *run, const struct wsl_mem_summary *m)
{
    json_key(w, "peak_device_bytes");
    json_u64(w, m->peak_bytes);
    json_key(w, "peak_at_ns");      /* from the run's start */
    json_u64(w, m->peak_bytes && m->peak_at_ns > run->start_ns ? m->peak_at_ns - run->start_ns : 0);
    json_key(w, "device_total_bytes");
    if (m->device_total_bytes)
        json_u64(w, m->device_total_bytes);
    else
        json_null(w);
    json_key(w, "peak_share_of_device");
    if (m->device_total_bytes)
        json_double(w, wsl_mem_peak_share(m));
    else
        json_null(w);
    json_key(w, "allocations");
    json_u64(w, m->allocations);
    json_key(w, "allocated_bytes");
    json_u64(w, m->allocated_bytes);
    json_key(w, "frees");
    json_u64(w, m->frees);
    json_key(w, "unknown_frees");
    json_u64(w, m->unknown_frees);
    json_key(w, "failed_frees");
    json_u64(w, m->failed_frees);
    json_key(w, "live_at_exit_bytes");
    json_u64(w, m->live_at_exit_bytes);
    json_key(w, "live_at_exit_allocations");
    json_u64(w, m->live_at_exit_allocations);
    json_key(w, "failed_allocations");
    json_u64(w, m->failed_allocations);
    json_key(w, "oom_failures");
    json_u64(w, m->oom_failures);
    json_key(w, "largest_failed_bytes");
    json_u64(w, m->largest_failed_bytes);
    json_key(w, "failed_ns");
    json_u64(w, m->failed_ns);
    json_key(w, "async_allocations");
    json_u64(w, m->async_allocations);
    json_key(w, "async_bytes");
    json_u64(w, m->async_bytes);
    json_key(w, "async_frees");
    json_u64(w, m->async_frees);
    json_key(w, "page_locked_peak_bytes");
    json_u64(w, m->page_locked_peak_bytes);
    write_mem_kind(w, "pinned", &m->pinned);
    write_mem_kind(w, "registered", &m->registered);
    write_mem_kind(w, "managed", &m->managed);
    json_key(w, "untracked_allocations");
    json_u64(w, m->untracked_allocations);
    json_key(w, "reused_pointers");
    json_u64(w, m->reused_pointers);
    json_key(w, "late_events");
    json_u64(w, m->late_events);
}

void report_json_write_memory(struct json_writer *w, const struct wsl_run *run)
{
    const struct wsl_mem_summary *m = &run->mem;
    json_begin_object(w);
    write_mem_fields(w, run, m);
    uint64_t sum_peaks = 0;
    for (size_t i = 0; i < run->proc_count; i++)
        sum_peaks += run->procs[i].mem.peak_bytes;
    json_key(w, "sum_of_process_peaks_bytes");
    json_u64(w, sum_peaks);
    json_key(w, "size_histogram");
    json_begin_array(w);
    for (unsigned b = 0; b < WSL_MEM_SIZE_BUCKETS; b++) {
        json_begin_object(w);
        json_key(w, "bucket");
        json_string(w, wsl_mem_bucket_name(b));
        json_key(w, "min_bytes");
        json_u64(w, wsl_mem_bucket_min(b));
        json_key(w, "count");
        json_u64(w, m->size_hist[b]);
        json_end_object(w);
    }
    json_end_array(w);
    json_key(w, "per_process");
    json_begin_array(w);
    for (size_t i = 0; i < run->proc_count; i++) {
        const struct wsl_process *p = &run->procs[i];
        json_begin_object(w);
        json_key(w, "pid");
        json_i64(w, p->pid);
        write_mem_fields(w, run, &p->mem);
        json_end_object(w);
    }
    json_end_array(w);
    json_end_object(w);
}

/* count, total, mean, p50, p99, min, max of a histogram of ns. */
static void write_ns_summary(struct json_writer *w, const struct wsl_hist *h)
{
    json_begin_object(w);
    json_key(w, "count");
    json_u64(w, h->count);
    json_key(w, "total");
    json_u64(w, h->sum);
    json_key(w, "mean");
    json_u64(w, h->count ? h->sum / h->count : 0);
    json_key(w, "p50");
    json_u64(w, wsl_hist_quantile(h, 0.5));
    json_key(w, "p99");
    json_u64(w, wsl_hist_quantile(h, 0.99));
    json_key(w, "min");
    json_u64(w, h->count ? h->min : 0);
    json_key(w, "max");
    json_u64(w, h->max);
    json_end_object(w);
}

void report_json_write_gpu(struct json_writer *w, const struct wsl_run *run, const struct wsl_kernels *k)
{
    json_begin_object(w);
    json_key(w, "busy_ns");     /* GPU timing: null when not measured */
    if (run->gpu_busy_known)
        json_u64(w, run->gpu_busy_ns);
    else
        json_null(w);
    json_key(w, "busy_share");
    if (run->gpu_busy_known && run->wall_ns)
        json_double(w, (double)run->gpu_busy_ns / (double)run->wall_ns);
    else
        json_null(w);
    json_key(w, "kernels_timed");   /* kernel launches timed on the GPU (WSLSHIM_GPU_TIMING) */
    json_u64(w, k->kernels_timed);
    json_key(w, "graphs_timed");
    json_u64(w, k->graphs_timed);
    json_key(w, "kernel_ns");       /* GPU time per timed kernel */
    write_ns_summary(w, &k->kernel_ns);
    json_key(w, "graph_ns");
    write_ns_summary(w, &k->graph_ns);
    json_key(w, "idle_at_submit");  /* timed launches that found their stream's GPU queue empty */
    json_u64(w, k->idle_at_submit);
    json_key(w, "idle_at_submit_share");
    if (k->kernels_timed + k->graphs_timed)
        json_double(w, (double)k->idle_at_submit / (double)(k->kernels_timed + k->graphs_timed));
    else
        json_null(w);
    json_key(w, "mapped");          /* timed launches placed on the host clock */
    json_u64(w, k->mapped);
    json_key(w, "submit_latency_ns"); /* idle at submit: launch call start -> kernel start on the GPU */
    write_ns_summary(w, &k->idle_start_ns);
    json_key(w, "submit_latency_mapping_error_ns"); /* of them, placed before the call began: by how much */
    write_ns_summary(w, &k->idle_start_before_ns);
    json_key(w, "gpu_time_est_ns"); /* mean timed GPU time x launches, per kernel */
    json_u64(w, k->est_gpu_ns);
    json_key(w, "covered_launches"); /* launches of kernels timed at least WSL_KERN_COVERED times */
    json_u64(w, k->covered_launches);
    json_key(w, "covered_share");
    if (k->launches > k->captured_launches)
        json_double(w, (double)k->covered_launches / (double)(k->launches - k->captured_launches));
    else
        json_null(w);
    json_key(w, "estimated_launches"); /* launches of kernels never timed: their GPU time is an estimate */
    json_u64(w, k->estimated_launches);
    json_key(w, "estimated_gpu_ns");
    json_u64(w, k->estimated_gpu_ns);
    json_key(w, "gpu_phase_ns");    /* first launch to last GPU work, summed over processes with timed launches */
    json_u64(w, k->busy_wall_ns);
    json_key(w, "busy_estimate");   /* of that GPU phase */
    if (k->busy_estimate >= 0)
        json_double(w, k->busy_estimate);
    else
        json_null(w);
    json_key(w, "launches");
    json_u64(w, k->launches);
    json_key(w, "kernels_distinct");
    json_u64(w, k->count);
    json_key(w, "unnamed_launches");
    json_u64(w, k->unnamed_launches);
    json_key(w, "untracked_launches");
    json_u64(w, k->untracked_launches);
    json_key(w, "failed_launches");
    json_u64(w, k->failed_launches);
    json_key(w, "graph_launches");
    json_u64(w, k->graph_launches);
    json_key(w, "captured_launches");
    json_u64(w, k->captured_launches);
    json_key(w, "named_handles");
    json_u64(w, k->named_handles);
    json_key(w, "kernels");     /* the first WSL_KERN_TOP_JSON, most launches first */
    json_begin_array(w);
    for (size_t i = 0; i < k->count && i < WSL_KERN_TOP_JSON; i++) {
        const struct wsl_kernel *kn = &k->items[i];
        json_begin_object(w);
        json_key(w, "name");
        json_string(w, kn->name);
        json_key(w, "mangled");
        if (kn->mangled)
            json_string(w, kn->mangled);
        else
            json_null(w);
        if (!kn->mangled) {     /* an unnamed handle: whose it is */
            json_key(w, "pid");
            json_i64(w, kn->pid);
            json_key(w, "handle");
            json_u64(w, kn->handle);
        }
        json_key(w, "count");
        json_u64(w, kn->launches);
        json_key(w, "captured");    /* launches into a stream being captured (graph nodes) */
        json_u64(w, kn->captured);
        json_key(w, "timed");
        json_u64(w, kn->gpu_ns.count);
        json_key(w, "gpu_ns");
        write_ns_summary(w, &kn->gpu_ns);
        json_key(w, "gpu_time_est_ns");
        json_u64(w, kn->est_gpu_ns);
        json_key(w, "gpu_time_estimated"); /* never timed: the process's mean timed kernel time x launches */
        json_bool(w, kn->gpu_ns.count == 0);
        json_key(w, "idle_at_submit");
        json_u64(w, kn->idle_at_submit);
        json_key(w, "launch_apis");
        json_begin_object(w);
        for (unsigned a = 0; a < k->launch_api_count; a++)
            if (kn->by_api[a]) {
                json_key(w, k->launch_apis[a]);
                json_u64(w, kn->by_api[a]);
            }
        json_end_object(w);
        json_end_object(w);
    }
    json_end_array(w);
    json_end_object(w);
}

static void write_nvtx_counts(struct json_writer *w, const struct wsl_nvtx_counts *c)
{
    json_key(w, "api_calls");
    json_u64(w, c->api_calls);
    json_key(w, "api_ns");
    json_u64(w, c->api_ns);
    json_key(w, "launches");
    json_u64(w, c->launches);
    json_key(w, "syncs");
    json_u64(w, c->syncs);
    json_key(w, "sync_ns");
    json_u64(w, c->sync_ns);
    json_key(w, "io_calls");
    json_u64(w, c->io_calls);
    json_key(w, "io_reads");
    json_u64(w, c->io_reads);
    json_key(w, "io_bytes");
    json_u64(w, c->io_bytes);
    json_key(w, "io_ns");
    json_u64(w, c->io_ns);
}

void report_json_write_nvtx_range(struct json_writer *w, const struct wsl_nvtx_range *r)
{
    json_begin_object(w);
    json_key(w, "name");
    json_string(w, r->name);
    json_key(w, "domain");      /* null: the default domain */
    if (r->domain)
        json_string(w, r->domain);
    else
        json_null(w);
    json_key(w, "kind");        /* "push" (push/pop, nested per thread) or "start" (start/end) */
    json_string(w, r->kind == WSL_NVTX_PUSH ? "push" : "start");
    json_key(w, "count");
    json_u64(w, r->count);
    json_key(w, "total_ns");
    json_u64(w, r->ns.sum);
    json_key(w, "mean_ns");
    json_u64(w, wsl_nvtx_mean_ns(r));
    json_key(w, "p50_ns");
    json_u64(w, wsl_hist_quantile(&r->ns, 0.50));
    json_key(w, "p99_ns");
    json_u64(w, wsl_hist_quantile(&r->ns, 0.99));
    json_key(w, "max_ns");
    json_u64(w, r->ns.max);
    json_key(w, "unclosed");    /* still open at the end of their trace: closed there */
    json_u64(w, r->unclosed);
    json_key(w, "top_level");   /* opened with no other range open on their thread */
    json_u64(w, r->top_level);
    json_key(w, "max_depth");
    json_u64(w, r->max_depth);
    /* What happened while this was the innermost open range of its thread. */
    write_nvtx_counts(w, &r->self);
    json_key(w, "gpu_kernels");
    json_u64(w, r->self.gpu_kernels);
    json_key(w, "gpu_ns");
    json_u64(w, r->self.gpu_ns);
    json_key(w, "inclusive");   /* the same, plus the ranges nested in it */
    json_begin_object(w);
    write_nvtx_counts(w, &r->incl);
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
    double c = r->count ? (double)r->count : 1.0;
    json_begin_object(w);
    json_key(w, "name");
    json_string(w, r->name);
    json_key(w, "domain");
    if (r->domain)
        json_string(w, r->domain);
    else
        json_null(w);
    json_key(w, "steps");
    json_u64(w, r->count);
    json_key(w, "mean_ns");
    json_u64(w, wsl_nvtx_mean_ns(r));
    json_key(w, "p50_ns");
    json_u64(w, wsl_hist_quantile(&r->ns, 0.50));
    json_key(w, "p99_ns");
    json_u64(w, wsl_hist_quantile(&r->ns, 0.99));
    json_key(w, "launches_per_step");
    json_double(w, (double)r->incl.launches / c);
    json_key(w, "syncs_per_step");
    json_double(w, (double)r->incl.syncs / c);
    json_key(w, "api_calls_per_step");
    json_double(w, (double)r->incl.api_calls / c);
    json_key(w, "api_ns_per_step");
    json_double(w, (double)r->incl.api_ns / c);
    json_key(w, "io_reads_per_step");
    json_double(w, (double)r->incl.io_reads / c);
    json_key(w, "io_bytes_per_step");
    json_double(w, (double)r->incl.io_bytes / c);
    json_key(w, "io_ns_per_step");
    json_double(w, (double)r->incl.io_ns / c);
    /* Every thread of the step's process while a step was open (PyTorch's autograd thread too). */
    json_key(w, "process");
    if (!n->step_process_known || !n->step_process_steps) {
        json_null(w);
    } else {
        const struct wsl_nvtx_counts *p = &n->step_process;
        double k = (double)n->step_process_steps;
        json_begin_object(w);
        json_key(w, "steps");
        json_u64(w, n->step_process_steps);
        json_key(w, "launches_per_step");
        json_double(w, (double)p->launches / k);
        json_key(w, "syncs_per_step");
        json_double(w, (double)p->syncs / k);
        json_key(w, "api_calls_per_step");
        json_double(w, (double)p->api_calls / k);
        json_key(w, "api_ns_per_step");
        json_double(w, (double)p->api_ns / k);
        json_key(w, "io_reads_per_step");
        json_double(w, (double)p->io_reads / k);
        json_key(w, "io_bytes_per_step");
        json_double(w, (double)p->io_bytes / k);
        json_key(w, "io_ns_per_step");
        json_double(w, (double)p->io_ns / k);
        json_key(w, "gpu_kernels_per_step");   /* timed kernels launched inside a step */
        json_double(w, (double)p->gpu_kernels / k);
        json_key(w, "gpu_ns_per_step");
        json_double(w, (double)p->gpu_ns / k);
        json_end_object(w);
    }
    json_end_object(w);
}

void report_json_write_nvtx_summary(struct json_writer *w, const struct wsl_nvtx *n)
{
    json_begin_object(w);
    json_key(w, "pushes");
    json_u64(w, n->pushes);
    json_key(w, "pops");
    json_u64(w, n->pops);
    json_key(w, "starts");
    json_u64(w, n->starts);
    json_key(w, "ends");
    json_u64(w, n->ends);
    json_key(w, "marks");
    json_u64(w, n->marks_total);
    json_key(w, "unmatched_pops");
    json_u64(w, n->unmatched_pops);
    json_key(w, "unmatched_ends");
    json_u64(w, n->unmatched_ends);
    json_key(w, "unclosed");
    json_u64(w, n->unclosed);
    json_key(w, "unnamed_ids");
    json_u64(w, n->unnamed_ids);
    json_key(w, "gpu_unattributed");
    json_u64(w, n->gpu_unattributed);
    json_key(w, "dropped");
    json_u64(w, n->dropped);
    json_key(w, "lost");        /* open ranges whose pop the shim dropped (full buffers): discarded */
    json_u64(w, n->lost);
    json_key(w, "step");        /* the training-step range and per-step figures, or null */
    write_nvtx_step(w, n);
    json_key(w, "marks_by_name");
    json_begin_array(w);
    for (size_t i = 0; i < n->mark_count; i++) {
        json_begin_object(w);
        json_key(w, "name");
        json_string(w, n->marks[i].name);
        json_key(w, "domain");
        if (n->marks[i].domain)
            json_string(w, n->marks[i].domain);
        else
            json_null(w);
        json_key(w, "count");
        json_u64(w, n->marks[i].count);
        json_end_object(w);
    }
    json_end_array(w);
    json_end_object(w);
}

