/* The text report: a one-screen summary (the run, the platform, where the
 * time went, the top bottlenecks with their one-line fix), then who ran,
 * where host time went per API, kernels, memory, the file I/O and every
 * bottleneck with its evidence and advice. */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_output.h"
#include "util.h"
#include "wslshim/trace_format.h"

static const char *format_ns(char *buf, size_t size, uint64_t ns) { return wsl_format_ns(buf, size, ns); }

/* ANSI styles, written only when colour is on */
static bool use_color;
#define BOLD "\033[1m"
#define RED "\033[31m"
#define YELLOW "\033[33m"
#define CYAN "\033[36m"
#define DIM "\033[2m"
#define RESET "\033[0m"

static void style(FILE *out, const char *code)
{
    if (use_color)
        fputs(code, out);
}

static void heading(FILE *out, const char *text)
{
    style(out, BOLD);
    fputs(text, out);
    style(out, RESET);
    fputc('\n', out);
}

static const char *severity_style(enum wsl_severity s)
{
    return s == WSL_SEVERITY_HIGH ? RED BOLD : s == WSL_SEVERITY_MEDIUM ? YELLOW : DIM;
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

static double percent(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0;
}

static const char *mount_marker(enum wsl_fs_kind kind)
{
    switch (kind) {
    case WSL_FS_WINDOWS_DRIVE: return "  Windows drive";
    case WSL_FS_WINDOWS_SHARE: return "  Windows share";
    case WSL_FS_WSL_DRIVERS: return "  WSL drivers (Windows)";
    default: return "";
    }
}

/* File I/O on one screen: totals, filesystems, top folders, read sizes. */
static void write_io(FILE *out, const struct wsl_io *io)
{
    const struct wsl_io_summary *s = &io->total;
    const struct wsl_io_counts *d = &s->data, *sys = &s->system, *other = &s->unknown_fd, *code = &s->code;
    char a[32], b[32], c[32];
    fputc('\n', out);
    heading(out, io->wsl ? "File I/O (WSL: files on a Windows drive cross the VM boundary)" : "File I/O");
    if (wsl_io_calls(d) + wsl_io_calls(sys) + wsl_io_calls(other) + wsl_io_calls(code) == 0) {
        fputs("  (no file I/O recorded)\n", out);
        return;
    }
    fprintf(out, "  data files   %" PRIu64 " opened (%.1f/s), %" PRIu64 " reads, %s read, %" PRIu64 " stats, %" PRIu64
                 " errors\n",
            d->files_opened, wsl_io_files_per_s(io), d->reads, wsl_format_bytes(a, sizeof a, d->bytes_read), d->stats,
            d->errors);
    fprintf(out, "               time in reads %s, in open/stat/seek/close %s, in mmap %s\n",
            format_ns(a, sizeof a, d->read_time), format_ns(b, sizeof b, d->meta_time),
            format_ns(c, sizeof c, d->mmap_time));
    if (d->writes || d->syncs || d->dir_ops)
        fprintf(out, "  writes       %" PRIu64 " writes, %s written, %" PRIu64 " fsync/fdatasync, time %s; %" PRIu64
                     " folder calls (rename, unlink, mkdir, listdir)\n",
                d->writes, wsl_format_bytes(a, sizeof a, d->bytes_written), d->syncs,
                format_ns(b, sizeof b, d->write_time), d->dir_ops);
    if (io->timing_sample > 1)
        fprintf(out, "               (calls on local filesystems timed 1 in %u, times scaled up: estimates; "
                     "counts exact)\n", io->timing_sample);
    if (io->file_sizes.count)
        fprintf(out, "  small files  %" PRIu64 " under 1 MiB (%.0f%% of %" PRIu64 " files of known size, %.0f%% of "
                     "bytes read), median %s\n",
                s->small_files, percent(s->small_files, io->file_sizes.count), io->file_sizes.count,
                percent(s->small_file_bytes_read, s->named_bytes_read),
                wsl_format_bytes(a, sizeof a, wsl_hist_quantile(&io->file_sizes, 0.5)));
    fprintf(out, "  code         %" PRIu64 " calls on Python modules and shared libraries (not counted above): %" PRIu64
                 " files, %s, %s\n",
            wsl_io_calls(code), code->files_opened, wsl_format_bytes(a, sizeof a, code->bytes_read),
            format_ns(b, sizeof b, wsl_io_time(code)));
    fprintf(out, "  system       %" PRIu64 " calls on /proc, /sys, /dev (not counted above): %" PRIu64 " reads, %s, %s\n",
            wsl_io_calls(sys), sys->reads, wsl_format_bytes(a, sizeof a, sys->bytes_read),
            format_ns(b, sizeof b, wsl_io_time(sys)));
    if (wsl_io_calls(other)) {
        fprintf(out, "  other fds    %" PRIu64 " calls on fds not seen opened (stdin, pipes, sockets): %" PRIu64
                     " reads, %s, %s",
                wsl_io_calls(other), other->reads, wsl_format_bytes(a, sizeof a, other->bytes_read),
                format_ns(b, sizeof b, wsl_io_time(other)));
        if (other->writes)
            fprintf(out, "; %" PRIu64 " writes (stdout, stderr...), %s", other->writes,
                    wsl_format_bytes(c, sizeof c, other->bytes_written));
        fputc('\n', out);
    }

    fprintf(out, "  %-12s %9s %11s %8s %11s %11s  %s\n", "filesystem", "reads", "read", "files", "read time",
            "meta time", "mount points");
    for (size_t i = 0; i < io->fs_count; i++) {
        const struct wsl_io_fs *fs = &io->fs[i];
        char d1[32], d2[32], d3[32];
        fputs("  ", out);
        put_clean(out, fs->fstype);
        size_t len = strlen(fs->fstype);
        fprintf(out, "%*s %9" PRIu64 " %11s %8" PRIu64 " %11s %11s ", len < 12 ? (int)(12 - len) : 0, "",
                fs->all.reads, wsl_format_bytes(d1, sizeof d1, fs->all.bytes_read), fs->all.files_opened,
                format_ns(d2, sizeof d2, fs->all.read_time), format_ns(d3, sizeof d3, fs->all.meta_time));
        for (size_t k = 0; k < fs->mount_count && k < 4; k++) {
            const struct wsl_io_mount *m = &io->mounts[fs->mounts[k]];
            fputc(' ', out);
            put_clean(out, *m->mount_point ? m->mount_point : "(no mount known)");
            fputs(mount_marker(m->kind), out);
        }
        if (fs->mount_count > 4)
            fprintf(out, " (+%zu more)", fs->mount_count - 4);
        if (fs->system)
            fputs("  system", out);
        fputc('\n', out);
    }
    bool any_writes = false;
    for (size_t i = 0; i < io->fs_count; i++)
        any_writes |= io->fs[i].all.writes + io->fs[i].all.syncs + io->fs[i].all.dir_ops > 0;
    if (any_writes) { /* checkpoints on a Windows drive are a common WSL2 cost */
        fprintf(out, "  %-12s %9s %11s %8s %11s %11s\n", "filesystem", "writes", "written", "syncs", "write time",
                "folder ops");
        for (size_t i = 0; i < io->fs_count; i++) {
            const struct wsl_io_fs *fs = &io->fs[i];
            if (!(fs->all.writes + fs->all.syncs + fs->all.dir_ops))
                continue;
            char d1[32], d2[32];
            fputs("  ", out);
            put_clean(out, fs->fstype);
            size_t len = strlen(fs->fstype);
            fprintf(out, "%*s %9" PRIu64 " %11s %8" PRIu64 " %11s %11" PRIu64 "%s\n", len < 12 ? (int)(12 - len) : 0, "",
                    fs->all.writes, wsl_format_bytes(d1, sizeof d1, fs->all.bytes_written), fs->all.syncs,
                    format_ns(d2, sizeof d2, fs->all.write_time), fs->all.dir_ops,
                    fs->crosses_windows ? "  (a Windows drive: each call crosses the VM boundary)" : "");
        }
    }

    size_t shown = 0;
    for (size_t i = 0; i < io->dir_count && shown < 5; i++) {
        const struct wsl_io_dir *dir = &io->dirs[i];
        if (dir->time == 0 && dir->reads == 0 && dir->files == 0)
            continue;
        if (!shown++)
            fprintf(out, "  top folders by I/O time\n");
        fprintf(out, "    %10s %8" PRIu64 " files %9" PRIu64 " reads %11s  ", format_ns(a, sizeof a, dir->time),
                dir->files, dir->reads, wsl_format_bytes(b, sizeof b, dir->bytes_read));
        put_clean(out, dir->path);
        if (dir->mount < io->mount_count) {
            fputs(" (", out);
            put_clean(out, io->mounts[dir->mount].fstype);
            fputc(')', out);
        }
        fputc('\n', out);
    }

    const struct wsl_io_dir *rest = &io->untracked_dirs;
    if (rest->time || rest->files || rest->reads)
        fprintf(out, "    %10s %8" PRIu64 " files %9" PRIu64 " reads %11s  (folders beyond the first %u, together)\n",
                format_ns(a, sizeof a, rest->time), rest->files, rest->reads,
                wsl_format_bytes(b, sizeof b, rest->bytes_read), WSL_IO_MAX_DIRS);

    uint64_t bucketed = 0;
    for (unsigned k = 0; k < WSL_IO_SIZE_BUCKETS; k++)
        bucketed += s->size_hist[k];
    if (bucketed) {
        fputs("  read sizes  ", out);
        for (unsigned k = 0; k < WSL_IO_SIZE_BUCKETS; k++)
            if (s->size_hist[k])
                fprintf(out, " %s: %" PRIu64, wsl_io_size_bucket_name(k), s->size_hist[k]);
        fputc('\n', out);
    }
}

/* Memory: the device peak against the card, failures, pinned and managed memory. */
static void write_memory(FILE *out, const struct wsl_run *run)
{
    const struct wsl_mem_summary *m = &run->mem;
    char a[32], b[32], c[32];
    fputc('\n', out);
    heading(out, "Memory");
    if (!m->any) {
        fputs("  (no memory calls recorded)\n", out);
        return;
    }
    fprintf(out, "  device       peak %s", wsl_format_bytes(a, sizeof a, m->peak_bytes));
    if (m->device_total_bytes)
        fprintf(out, " of %s (%.1f%% of the card)", wsl_format_bytes(b, sizeof b, m->device_total_bytes),
                100.0 * wsl_mem_peak_share(m));
    if (run->proc_count > 1)
        fputs(" (the largest process)", out);
    fprintf(out, "; %" PRIu64 " allocations (%" PRIu64 " stream-ordered), %s, %" PRIu64 " frees, %s live at exit\n",
            m->allocations, m->async_allocations, wsl_format_bytes(c, sizeof c, m->allocated_bytes), m->frees,
            wsl_format_bytes(a, sizeof a, m->live_at_exit_bytes));
    if (m->failed_allocations)
        fprintf(out, "  failed       %" PRIu64 " allocations (%" PRIu64 " out of memory), largest request %s\n",
                m->failed_allocations, m->oom_failures, wsl_format_bytes(a, sizeof a, m->largest_failed_bytes));
    if (m->pinned.allocations || m->registered.allocations)
        fprintf(out, "  pinned host  peak %s (%" PRIu64 " allocations, %s); registered peak %s\n",
                wsl_format_bytes(a, sizeof a, m->pinned.peak_bytes), m->pinned.allocations,
                wsl_format_bytes(b, sizeof b, m->pinned.bytes), wsl_format_bytes(c, sizeof c, m->registered.peak_bytes));
    if (m->managed.allocations)
        fprintf(out, "  managed      %" PRIu64 " allocations, %s, peak %s\n", m->managed.allocations,
                wsl_format_bytes(a, sizeof a, m->managed.bytes), wsl_format_bytes(b, sizeof b, m->managed.peak_bytes));
}

/* s cleaned, cut to at most max bytes (whole UTF-8 characters) with "..." when longer. */
static void put_clean_cut(FILE *out, const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n <= max) {
        put_clean(out, s);
        return;
    }
    size_t cut = max - 3;
    while (cut > 0 && ((unsigned char)s[cut] & 0xc0) == 0x80)
        cut--;
    for (size_t i = 0; i < cut; i++)
        fputc((unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i], out);
    fputs("...", out);
}

static int by_est_gpu(const void *a, const void *b)
{
    const struct wsl_kernel *x = *(const struct wsl_kernel *const *)a, *y = *(const struct wsl_kernel *const *)b;
    return x->est_gpu_ns != y->est_gpu_ns ? (x->est_gpu_ns > y->est_gpu_ns ? -1 : 1) : strcmp(x->name, y->name);
}

static void put_ns(FILE *out, uint64_t ns)
{
    if (ns >= 1000000000u)
        fprintf(out, "%.2f s", (double)ns / 1e9);
    else if (ns >= 1000000u)
        fprintf(out, "%.2f ms", (double)ns / 1e6);
    else if (ns >= 1000u)
        fprintf(out, "%.1f us", (double)ns / 1e3);
    else
        fprintf(out, "%" PRIu64 " ns", ns);
}

/* GPU time from the sampled event pairs: totals, then kernels by estimated GPU time. */
static void write_gpu_time(FILE *out, const struct wsl_kernels *k)
{
    uint64_t timed = k->kernels_timed + k->graphs_timed;
    if (!timed) {
        fputs("  GPU time: no launch timed (WSLSHIM_GPU_TIMING=off, or no launch reached the sampling rate)\n", out);
        return;
    }
    fprintf(out, "\nGPU time (%" PRIu64 " launches timed with events", timed);
    if (k->graphs_timed)
        fprintf(out, ", %" PRIu64 " of them graphs", k->graphs_timed);
    fputs(")\n  estimated GPU time ", out);
    put_ns(out, k->est_gpu_ns);
    if (k->est_var_known && k->est_var_ns2 > 0) {
        fputs(" (standard error of the sampling ", out);
        put_ns(out, (uint64_t)(sqrt(k->est_var_ns2) + 0.5));
        fputc(')', out);
    }
    if (k->busy_estimate >= 0)
        fprintf(out, ", GPU busy %.0f%% of the GPU phase (first launch to last GPU work)", 100 * k->busy_estimate);
    fprintf(out, "\n  GPU idle at submit: %.0f%% of timed launches (the GPU had caught up and waited for the host)\n",
            100.0 * (double)k->idle_at_submit / (double)timed);
    if (k->kernel_ns.count) {
        fputs("  kernel time p50 ", out);
        put_ns(out, wsl_hist_quantile(&k->kernel_ns, 0.5));
        fputs(", p99 ", out);
        put_ns(out, wsl_hist_quantile(&k->kernel_ns, 0.99));
        fputc('\n', out);
    }
    if (k->launches > k->captured_launches) {
        uint64_t run = k->launches - k->captured_launches;
        fprintf(out, "  coverage: %.0f%% of launches are of kernels timed at least %u times", 100.0 *
                (double)k->covered_launches / (double)run, WSL_KERN_COVERED);
        if (k->estimated_launches)
            fprintf(out, "; %" PRIu64 " launches of kernels never timed take the process's mean (estimates)",
                    k->estimated_launches);
        fputc('\n', out);
    }
    if (k->pair_groups) {
        fputs("  queued timed launches measure ", out);
        put_ns(out, k->pair_overhead_ns);
        fprintf(out, " longer than idle ones of the same kernel and size (%" PRIu64 " sizes: the event pairs' own "
                "time, and what idle measures miss of kernels that start before their launch call returns; "
                "docs/gpu-timing.md)", k->pair_groups);
        if (wsl_kern_pairs == WSL_KERN_PAIRS_FIXED)
            fputs("; not used by the estimates (fixed parts, below)\n", out);
        else if (k->pair_corrected && wsl_kern_pairs == WSL_KERN_PAIRS_SPLIT)
            fprintf(out, "; half taken off the queued and half added to the idle ones (%" PRIu64
                         " timed launches)\n", k->pair_corrected);
        else if (k->pair_corrected)
            fprintf(out, "; taken off %" PRIu64 " queued timed launches\n", k->pair_corrected);
        else
            fputs("; not applied (--gpu-pair-correction=none)\n", out);
    }
    if (wsl_kern_pairs == WSL_KERN_PAIRS_FIXED && k->pair_corrected) {
        fputs("  timed launches adjusted for where the kernel ran: ", out);
        put_ns(out, (uint64_t)(wsl_kern_fixed_idle_ns + 0.5));
        fputs(" added to each idle one, ", out);
        put_ns(out, (uint64_t)(wsl_kern_fixed_queued_ns + 0.5));
        fprintf(out, " taken off each queued one (%" PRIu64 " launches; the parts measured on an H100 host, "
                     "docs/gpu-timing.md)\n", k->pair_corrected);
    }
    if (k->idle_start_ns.count) {
        fputs("  launch to kernel start when idle: p50 ", out);
        put_ns(out, wsl_hist_quantile(&k->idle_start_ns, 0.5));
        fputc('\n', out);
    }
    const struct wsl_kernel **v = xcalloc(k->count ? k->count : 1, sizeof *v);
    size_t n = 0;
    for (size_t i = 0; i < k->count; i++)
        if (k->items[i].est_gpu_ns)
            v[n++] = &k->items[i];
    qsort(v, n, sizeof *v, by_est_gpu);
    if (n)
        fputs("  Kernels by estimated GPU time (launches x the mean timed GPU time of their grid and block):\n", out);
    for (size_t i = 0; i < n && i < WSL_KERN_TOP_TEXT; i++) {
        fputs("    ", out);
        put_ns(out, v[i]->est_gpu_ns);
        fprintf(out, "  (%5.1f%%)  ", k->est_gpu_ns ? 100.0 * (double)v[i]->est_gpu_ns / (double)k->est_gpu_ns : 0.0);
        put_clean_cut(out, v[i]->name, 90);
        if (v[i]->gpu_ns.count) {
            fprintf(out, "  p50 ");
            put_ns(out, wsl_hist_quantile(&v[i]->gpu_ns, 0.5));
            fprintf(out, ", %" PRIu64 " timed", v[i]->gpu_ns.count);
        } else {
            fputs("  (estimate: never timed)", out);
        }
        fputc('\n', out);
    }
    free(v);
}

static void write_kernels(FILE *out, const struct wsl_run *run)
{
    const struct wsl_kernels *k = &run->kernels;
    if (!k->launches && !k->graph_launches)
        return;
    fprintf(out, "\nKernels by launches (%" PRIu64 " launches, %zu kernels", k->launches, k->count);
    if (k->unnamed_launches)
        fprintf(out, ", %" PRIu64 " launches unnamed", k->unnamed_launches);
    if (k->graph_launches)
        fprintf(out, ", %" PRIu64 " graph launches", k->graph_launches);
    fputs(")\n", out);
    for (size_t i = 0; i < k->count && i < WSL_KERN_TOP_TEXT; i++) {
        fprintf(out, "  %10" PRIu64 "  ", k->items[i].launches);
        put_clean_cut(out, k->items[i].name, 100);
        if (!k->items[i].mangled)
            fprintf(out, " (pid %" PRId32 ", unnamed)", k->items[i].pid);
        fputc('\n', out);
    }
    if (k->count > WSL_KERN_TOP_TEXT)
        fprintf(out, "  ... and %zu more\n", k->count - WSL_KERN_TOP_TEXT);
    write_gpu_time(out, k);
}

static void write_nvtx(FILE *out, const struct wsl_run *run)
{
    const struct wsl_nvtx *n = &run->nvtx;
    if (!n->range_count && !n->mark_count)
        return;
    fprintf(out, "\nNVTX ranges by total time (%zu names; launches, syncs, API calls and reads include nested ranges)\n",
            n->range_count);
    fprintf(out, "  %9s %11s %11s %11s %11s %9s %7s %9s %7s  %s\n", "count", "total", "mean", "p50", "p99", "launches",
            "syncs", "API calls", "reads", "range");
    for (size_t i = 0; i < n->range_count && i < WSL_NVTX_TOP_TEXT; i++) {
        const struct wsl_nvtx_range *r = &n->ranges[i];
        char total[32], mean[32], p50[32], p99[32];
        fprintf(out, "  %9" PRIu64 " %11s %11s %11s %11s %9" PRIu64 " %7" PRIu64 " %9" PRIu64 " %7" PRIu64 "  ", r->count,
                format_ns(total, sizeof total, r->ns.sum), format_ns(mean, sizeof mean, wsl_nvtx_mean_ns(r)),
                format_ns(p50, sizeof p50, wsl_hist_quantile(&r->ns, 0.50)),
                format_ns(p99, sizeof p99, wsl_hist_quantile(&r->ns, 0.99)), r->incl.launches, r->incl.syncs,
                r->incl.api_calls, r->incl.io_reads);
        if (r->domain) {
            put_clean_cut(out, r->domain, 40);
            fputs("::", out);
        }
        put_clean_cut(out, r->name, 80);
        if (r->kind == WSL_NVTX_START)
            fputs(" [start/end]", out);
        if (r->unclosed)
            fprintf(out, " (%" PRIu64 " still open at the end)", r->unclosed);
        fputc('\n', out);
    }
    if (n->range_count > WSL_NVTX_TOP_TEXT)
        fprintf(out, "  ... and %zu more\n", n->range_count - WSL_NVTX_TOP_TEXT);
    if (n->marks_total)
        fprintf(out, "  marks: %" PRIu64 " (%zu names)\n", n->marks_total, n->mark_count);
    if (n->unmatched_pops || n->unmatched_ends)
        fprintf(out, "  unmatched: %" PRIu64 " pops with no open range, %" PRIu64 " ends of no started range\n",
                n->unmatched_pops, n->unmatched_ends);
    if (n->step >= 0) {
        const struct wsl_nvtx_range *r = &n->ranges[n->step];
        double c = r->count ? (double)r->count : 1.0;
        char mean[32], p50[32], p99[32], api[32], io[32], bytes[32];
        fputs("\nPer step (range \"", out);
        put_clean_cut(out, r->name, 80);
        fprintf(out, "\", %" PRIu64 " steps)\n", r->count);
        fprintf(out, "  time per step        %s (p50 %s, p99 %s)\n", format_ns(mean, sizeof mean, wsl_nvtx_mean_ns(r)),
                format_ns(p50, sizeof p50, wsl_hist_quantile(&r->ns, 0.50)),
                format_ns(p99, sizeof p99, wsl_hist_quantile(&r->ns, 0.99)));
        fprintf(out, "  launches per step    %.1f\n", (double)r->incl.launches / c);
        fprintf(out, "  syncs per step       %.1f\n", (double)r->incl.syncs / c);
        fprintf(out, "  API calls per step   %.1f (%s of host time)\n", (double)r->incl.api_calls / c,
                format_ns(api, sizeof api, (uint64_t)((double)r->incl.api_ns / c + 0.5)));
        fprintf(out, "  file reads per step  %.1f (%s, %s)\n", (double)r->incl.io_reads / c,
                wsl_format_bytes(bytes, sizeof bytes, (uint64_t)((double)r->incl.io_bytes / c + 0.5)),
                format_ns(io, sizeof io, (uint64_t)((double)r->incl.io_ns / c + 0.5)));
        fputs("  (calls of the step's own thread, nested ranges included)\n", out);
        if (n->step_process_known && n->step_process_steps) {
            const struct wsl_nvtx_counts *p = &n->step_process;
            double k = (double)n->step_process_steps;
            fprintf(out, "  all threads of the process while a step was open, per step: %.1f launches, %.1f syncs, "
                         "%.1f API calls (%s), %.1f file reads (%s)\n",
                    (double)p->launches / k, (double)p->syncs / k, (double)p->api_calls / k,
                    format_ns(api, sizeof api, (uint64_t)((double)p->api_ns / k + 0.5)), (double)p->io_reads / k,
                    wsl_format_bytes(bytes, sizeof bytes, (uint64_t)((double)p->io_bytes / k + 0.5)));
            if (p->gpu_kernels)
                fprintf(out, "  timed kernels launched inside steps: %.2f per step, %s of GPU time per step\n",
                        (double)p->gpu_kernels / k, format_ns(io, sizeof io, (uint64_t)((double)p->gpu_ns / k + 0.5)));
        }
    }
}

/* Waits for the GPU (host_analysis.h): per kind, and per NVTX range innermost on the waiting
 * thread, as cuda_host in the JSON report. */
static void write_waits(FILE *out, const struct wsl_host_summary *h)
{
    uint64_t waits = 0;
    for (unsigned k = 0; k < WSL_BLOCK_KINDS; k++)
        waits += h->blocks[k];
    if (!waits)
        return;
    fputc('\n', out);
    heading(out, "Waits for the GPU");
    fputs("  (blocked: host time in the waits; lost: what removing them would save, at most the GPU idle time\n"
          "  they caused: docs/report.md)\n", out);
    fprintf(out, "  %-16s %10s %11s %11s\n", "kind", "count", "blocked", "lost");
    char blocked[32], lost[32];
    for (unsigned k = 0; k < WSL_BLOCK_KINDS; k++)
        if (h->blocks[k])
            fprintf(out, "  %-16s %10" PRIu64 " %11s %11s\n", wsl_block_kind_name((enum wsl_block_kind)k), h->blocks[k],
                    format_ns(blocked, sizeof blocked, h->blocked_ns[k]), format_ns(lost, sizeof lost, h->block_lost_ns[k]));
    if (h->unresolved_blocks)
        fprintf(out, "  %" PRIu64 " with no later submission on their thread (charged nothing)\n", h->unresolved_blocks);
    if (!h->range_count)
        return;
    fputs("  by NVTX range (the innermost open on the waiting thread):\n", out);
    fprintf(out, "  %10s %11s %11s  %s\n", "waits", "blocked", "lost", "range");
    for (size_t i = 0; i < h->range_count && i < WSL_NVTX_TOP_TEXT; i++) {
        const struct wsl_host_range *r = &h->ranges[i];
        fprintf(out, "  %10" PRIu64 " %11s %11s  ", r->blocks, format_ns(blocked, sizeof blocked, r->blocked_ns),
                format_ns(lost, sizeof lost, r->lost_ns));
        put_clean_cut(out, r->name, 80);
        fputc('\n', out);
    }
    if (h->range_count > WSL_NVTX_TOP_TEXT)
        fprintf(out, "  ... and %zu more\n", h->range_count - WSL_NVTX_TOP_TEXT);
}

/* The run's phases, per GPU process (phase_analysis.h). */
static void write_phases(FILE *out, const struct wsl_run *run)
{
    const struct wsl_run_phases *rp = &run->phases;
    if (!rp->known)
        return;
    fputc('\n', out);
    heading(out, "Phases (per process that used the GPU; the findings' severity follows the steady state)");
    char a[32], b[32], c[32], d[32], e[32];
    for (size_t i = 0; i < run->proc_count; i++) {
        const struct wsl_process *p = &run->procs[i];
        const struct wsl_phases *ph = &p->phases;
        if (ph->method == WSL_STEADY_NONE)
            continue;
        fprintf(out, "  pid %" PRId32 "%s: start-up %s | warm-up %s | steady state %s | teardown %s\n", p->pid,
                rp->main_pid == p->pid ? " (main)" : "", format_ns(a, sizeof a, ph->first_submit_ns - ph->start_ns),
                format_ns(b, sizeof b, ph->steady_start_ns - ph->first_submit_ns),
                format_ns(c, sizeof c, ph->steady_end_ns - ph->steady_start_ns),
                format_ns(d, sizeof d, ph->end_ns - ph->steady_end_ns));
        fputs("      steady state: ", out);
        if (ph->method == WSL_STEADY_NVTX)
            fprintf(out, "%" PRIu64 " NVTX steps of %s (median)", ph->steps, format_ns(e, sizeof e, ph->step_ns));
        else if (ph->method == WSL_STEADY_REPETITION)
            fprintf(out, "%" PRIu64 " repetitions of a %u-launch period of %s (median)", ph->steps,
                    ph->period_launches, format_ns(e, sizeof e, ph->step_ns));
        else if (ph->method == WSL_STEADY_AFTER_LOADS)
            fputs("no repeating launch pattern; taken from the last module load of the first half on", out);
        else
            fputs("no repeating launch pattern: the whole GPU phase", out);
        if (ph->warmup_steps)
            fprintf(out, "; %" PRIu64 " slow first step%s in warm-up (%s over the median)", ph->warmup_steps,
                    ph->warmup_steps == 1 ? "" : "s", format_ns(e, sizeof e, ph->warmup_excess_ns));
        fputc('\n', out);
        if (ph->module_loads)
            fprintf(out, "      module loads: %" PRIu64 " (%s), %" PRIu64 " of them in warm-up, %" PRIu64
                    " in the steady state\n", ph->module_loads, format_ns(e, sizeof e, ph->module_load_ns),
                    ph->warmup_module_loads, ph->steady_module_loads);
    }
    if (rp->compile_processes)
        fprintf(out, "  compilers run: %" PRIu64 " processes (ptxas, C compilers, compile workers), %s in all\n",
                rp->compile_processes, format_ns(a, sizeof a, rp->compile_process_ns));
}

static void write_findings(FILE *out, const struct wsl_run *run)
{
    fputc('\n', out);
    heading(out, "Bottlenecks, by time lost");
    if (!run->finding_count) {
        fputs("  (none found)\n", out);
        return;
    }
    for (size_t i = 0; i < run->finding_count; i++) {
        const struct wsl_finding *f = &run->findings[i];
        char lost[32];
        fputs("  ", out);
        style(out, severity_style(f->severity));
        fprintf(out, "[%s]", wsl_severity_name(f->severity));
        style(out, RESET);
        fputc(' ', out);
        style(out, BOLD);
        fputs(f->id, out);
        style(out, RESET);
        fprintf(out, ": %s lost (%.0f%% of wall time", format_ns(lost, sizeof lost, f->time_lost_ns),
                percent(f->time_lost_ns, run->wall_ns));
        if (f->steady_known && run->phases.steady_wall_ns) {
            char sl[32];
            if (f->steady_fired)
                fprintf(out, "; %s, %.0f%% of the steady state", format_ns(sl, sizeof sl, f->steady_lost_ns),
                        percent(f->steady_lost_ns, run->phases.steady_wall_ns));
            else
                fputs("; not in the steady state", out);
        }
        fprintf(out, "%s)\n", f->scaled_to_wall ? ", scaled with the other CUDA rules to fit the wall time" : "");
        fputs("      ", out);
        put_clean(out, f->summary);
        fputs("\n      advice: ", out);
        put_clean(out, f->advice);
        fputs("\n      how: ", out);
        style(out, DIM);
        put_clean(out, f->how_computed);
        style(out, RESET);
        fputc('\n', out);
    }
}

/* ---- the one-screen summary ------------------------------------------------------------------- */

#define SUMMARY_TOP 5
#define SUMMARY_CMD_MAX 100

static const struct wsl_process *first_with_driver(const struct wsl_run *run)
{
    for (size_t i = 0; i < run->proc_count; i++)
        if (run->procs[i].have_driver && run->procs[i].gpu_count)
            return &run->procs[i];
    for (size_t i = 0; i < run->proc_count; i++)
        if (run->procs[i].have_driver)
            return &run->procs[i];
    return NULL;
}

static void summary_label(FILE *out, const char *label)
{
    fputs("  ", out);
    style(out, CYAN);
    fprintf(out, "%-10s", label);
    style(out, RESET);
}

static void write_summary(FILE *out, const struct wsl_run *run)
{
    char a[32], b[32];
    if (!run->proc_count)
        return;
    /* the command the user ran: behind a wrapper script, the program it ran (wsl_run_program) */
    const struct wsl_process *root = wsl_run_program(run);

    summary_label(out, "run");
    char cmd[SUMMARY_CMD_MAX + 4];
    size_t n = 0;
    cmd[0] = 0;
    for (uint32_t i = 0; i < root->argc && n < SUMMARY_CMD_MAX; i++)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, "%s%s", i ? " " : "", root->argv[i]);
    if (n >= SUMMARY_CMD_MAX)
        memcpy(cmd + SUMMARY_CMD_MAX - 3, "...", 4);
    put_clean(out, root->argc ? cmd : root->exe);
    fprintf(out, "  (pid %" PRId32, root->pid);
    if (run->proc_count > 1) {
        fputs("; pids", out);
        for (size_t i = 1; i < run->proc_count && i < 8; i++)
            fprintf(out, " %" PRId32, run->procs[i].pid);
        if (run->proc_count > 8)
            fprintf(out, " and %zu more", run->proc_count - 8);
    }
    fputs(")\n", out);

    summary_label(out, "platform");
    fputs(root->flags & WSL_PROC_WSL2 ? "WSL2" : root->flags & WSL_PROC_WSL1 ? "WSL1" : "native Linux", out);
    fputs(" (", out);
    put_clean(out, root->kernel_release);
    fputs("), host ", out);
    put_clean(out, root->host);
    fputc('\n', out);

    const struct wsl_process *d = first_with_driver(run);
    summary_label(out, "GPU");
    if (d && d->gpu_count) {
        put_clean(out, d->gpus[0].name);
        fprintf(out, " (%.1f GiB)", (double)d->gpus[0].total_mem / (1024.0 * 1024 * 1024));
        if (d->gpu_count > 1)
            fprintf(out, " and %u more", d->gpu_count - 1);
        fputs("; ", out);
    } else if (!d) {
        fputs("no CUDA driver loaded", out);
    }
    if (d) {
        fprintf(out, "driver %d.%d (", d->driver_version / 1000, d->driver_version % 1000 / 10);
        put_clean(out, d->libcuda_path);
        fputc(')', out);
    }
    fputc('\n', out);

    uint64_t cuda_ns = 0;
    for (size_t i = 0; i < run->api_count; i++)
        if (!wsl_is_io_category(run->apis[i].category))
            cuda_ns += run->apis[i].ns.sum;
    summary_label(out, "wall");
    char c[32];
    fprintf(out, "%s; host time in CUDA calls %s, in data file I/O %s (all threads)\n",
            format_ns(a, sizeof a, run->wall_ns), format_ns(b, sizeof b, cuda_ns),
            format_ns(c, sizeof c, wsl_io_time(&run->io.total.data)));

    summary_label(out, "GPU busy");
    if (run->gpu_busy_known)
        fprintf(out, "%s (%.0f%% of the %s from the first launch to the last GPU work; %.0f%% of wall time)\n",
                format_ns(a, sizeof a, run->gpu_busy_ns), percent(run->gpu_busy_ns, run->kernels.busy_wall_ns),
                format_ns(b, sizeof b, run->kernels.busy_wall_ns), percent(run->gpu_busy_ns, run->wall_ns));
    else
        fputs("not measured (record with WSLSHIM_GPU_TIMING=N)\n", out);

    const struct wsl_run_phases *rp = &run->phases;
    if (rp->known) {
        const struct wsl_phases *ph = &rp->main;
        char st[32], wu[32], ss[32], td[32];
        summary_label(out, "phases");
        fprintf(out, "start-up %s, warm-up %s, steady state %s (%.0f%% of wall; %s), teardown %s\n",
                format_ns(st, sizeof st, ph->first_submit_ns - ph->start_ns),
                format_ns(wu, sizeof wu, ph->steady_start_ns - ph->first_submit_ns),
                format_ns(ss, sizeof ss, ph->steady_end_ns - ph->steady_start_ns),
                percent(ph->steady_end_ns - ph->steady_start_ns, run->wall_ns),
                ph->method == WSL_STEADY_NVTX ? "NVTX steps"
                : ph->method == WSL_STEADY_REPETITION ? "the launch stream's repetition"
                : ph->method == WSL_STEADY_AFTER_LOADS ? "after the module loads"
                : "no repetition found: the whole GPU phase",
                format_ns(td, sizeof td, ph->end_ns - ph->steady_end_ns));
    }
    fputs("  ", out);
    style(out, BOLD);
    fputs("top bottlenecks", out);
    style(out, RESET);
    if (!run->finding_count)
        fputs(": none found\n", out);
    else
        fputc('\n', out);
    for (size_t i = 0; i < run->finding_count && i < SUMMARY_TOP; i++) {
        const struct wsl_finding *f = &run->findings[i];
        fprintf(out, "    %zu. ", i + 1);
        style(out, severity_style(f->severity));
        fprintf(out, "%-8s", wsl_severity_name(f->severity));
        style(out, RESET);
        fprintf(out, " %-20s %10s %4.0f%%", f->id, format_ns(a, sizeof a, f->time_lost_ns),
                percent(f->time_lost_ns, run->wall_ns));
        if (f->steady_known && rp->steady_wall_ns)
            fprintf(out, " (%3.0f%% of steady)  ", percent(f->steady_lost_ns, rp->steady_wall_ns));
        else
            fputs("  ", out);
        fputs(f->fix ? f->fix : "", out);
        fputc('\n', out);
    }
    if (run->finding_count > SUMMARY_TOP)
        fprintf(out, "    ... and %zu more below\n", run->finding_count - SUMMARY_TOP);
    if (!run->gpu_busy_known) {
        fputs("  ", out);
        style(out, DIM);
        fputs("not evaluated without GPU timing:", out);
        for (size_t i = 0; i < wsl_rules_need_gpu_timing_count; i++)
            fprintf(out, " %s", wsl_rules_need_gpu_timing[i]);
        style(out, RESET);
        fputc('\n', out);
    }
}

void report_write_text(const struct wsl_run *run, FILE *out, bool color)
{
    use_color = color;
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
    fprintf(out, ", wall time %s\n", format_ns(buf, sizeof buf, run->wall_ns));
    size_t emulated = 0;
    const struct wsl_process *emu = wsl_run_emulated(run, &emulated);
    if (emu) { /* said first: these are not the platform's own costs */
        fprintf(out, "EMULATED RUN (%zu of %zu process%s): WSLSHIM_EMULATE=", emulated, run->proc_count,
                run->proc_count == 1 ? "" : "es");
        put_clean(out, emu->emu_spec);
        fprintf(out, "; the shim added per call:");
        for (unsigned f = 0; f < WSL_EMU_FAMILIES; f++)
            fprintf(out, " %s +%s", wsl_emu_family_name(f), format_ns(buf, sizeof buf, emu->emu_ns[f]));
        if (emu->emu_fs_meta_ns || emu->emu_fs_read_bps || emu->emu_fs_write_bps) {
            fprintf(out, "; files on its fs: paths as 9p: +%s per path call,",
                    format_ns(buf, sizeof buf, emu->emu_fs_meta_ns));
            fprintf(out, " reads at %.0f MB/s, writes at %.0f MB/s", (double)emu->emu_fs_read_bps / 1e6,
                    (double)emu->emu_fs_write_bps / 1e6);
        }
        fprintf(out, "\n");
    }
    write_summary(out, run);
    write_phases(out, run);

    fputc('\n', out);
    heading(out, "Processes");
    for (size_t i = 0; i < run->proc_count; i++)
        write_process(out, &run->procs[i]);

    fputc('\n', out);
    heading(out, "Host time per CUDA driver API, by total");
    fprintf(out, "  %-28s %10s %11s %11s %11s %11s %11s %8s\n", "API", "calls", "total", "mean", "p50", "p99",
            "max", "errors");
    size_t shown = 0;
    for (size_t i = 0; i < run->api_count; i++) {
        const struct wsl_api_stats *a = &run->apis[i];
        if (!a->ns.count || wsl_is_io_category(a->category))
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
    write_waits(out, &run->host_cuda);
    write_kernels(out, run);
    write_memory(out, run);
    write_io(out, &run->io);
    write_nvtx(out, run);
    report_text_distributed(out, run);
    write_findings(out, run);
    if (run->projection)
        wsl_projection_write_text(out, run->projection);
}
