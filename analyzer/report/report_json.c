/* The JSON report: the keys docs/contract.md promises, and a few more. */
#include <stdint.h>
#include <stdio.h>

#include "json_writer.h"
#include "report_output.h"
#include "util.h"
#include "wslshim/trace_format.h"

/* The calls of one group: the same keys wherever counts appear. */
static void write_io_counts(struct json_writer *w, const struct wsl_io_counts *c)
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
    write_io_counts(w, &p->io.data);
    json_end_object(w);
    json_key(w, "io_other_fds");  /* fds not seen opened: pipes, sockets, stdin (DataLoader workers' queues) */
    json_begin_object(w);
    write_io_counts(w, &p->io.unknown_fd);
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

static void write_io(struct json_writer *w, const struct wsl_io *io)
{
    const struct wsl_io_summary *s = &io->total;
    json_begin_object(w);
    json_key(w, "wsl");
    json_bool(w, io->wsl);
    write_io_counts(w, &s->data);   /* data files: not /proc, /sys, /dev, not fds the shim did not see opened */
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
        write_io_counts(w, &fs->all);
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
        write_io_counts(w, &m->all);
        json_key(w, "data");
        json_begin_object(w);
        write_io_counts(w, &m->data);
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
    write_io_counts(w, &s->system);
    json_end_object(w);
    json_key(w, "code");
    json_begin_object(w);
    write_io_counts(w, &s->code);
    json_end_object(w);
    json_key(w, "unknown_fd");
    json_begin_object(w);
    write_io_counts(w, &s->unknown_fd);
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

static void write_memory(struct json_writer *w, const struct wsl_run *run)
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

static void write_gpu(struct json_writer *w, const struct wsl_run *run, const struct wsl_kernels *k)
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

static void write_nvtx_range(struct json_writer *w, const struct wsl_nvtx_range *r)
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

static void write_nvtx_summary(struct json_writer *w, const struct wsl_nvtx *n)
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
            write_api(&w, &run->apis[i]);
    json_end_object(&w);
    json_key(&w, "gpu");
    write_gpu(&w, run, &run->kernels);
    json_key(&w, "memory");
    write_memory(&w, run);
    json_key(&w, "io");
    write_io(&w, &run->io);
    json_key(&w, "io_calls");   /* per libc function, as "api" is per driver function */
    json_begin_object(&w);
    for (size_t i = 0; i < run->api_count; i++)
        if (run->apis[i].ns.count && wsl_is_io_category(run->apis[i].category))
            write_api(&w, &run->apis[i]);
    json_end_object(&w);
    json_key(&w, "nvtx");        /* ranges by total time, largest first */
    json_begin_array(&w);
    for (size_t i = 0; i < run->nvtx.range_count; i++)
        write_nvtx_range(&w, &run->nvtx.ranges[i]);
    json_end_array(&w);
    json_key(&w, "nvtx_summary");
    write_nvtx_summary(&w, &run->nvtx);
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
