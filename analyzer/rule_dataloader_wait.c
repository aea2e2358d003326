/*
 * dataloader_wait: the program's main process waits for its data-loading
 * worker processes. A DataLoader with workers (or any pool of forked loaders)
 * hands batches over pipes or sockets: the main process's reads on them block
 * until a worker has a batch ready, and while they block the GPU gets no work.
 *
 * Needs: each process's reads on descriptors the shim did not see opened (pipes,
 * sockets: io_analysis.h "unknown_fd"), and the process tree.
 */
#include <inttypes.h>
#include <stdio.h>

#include "analysis.h"
#include "util.h"

/* The process that launched most kernels: the one the GPU waits on. */
static const struct wsl_process *main_gpu_process(const struct wsl_run *run)
{
    const struct wsl_process *m = NULL;
    for (size_t i = 0; i < run->proc_count; i++) {
        const struct wsl_process *p = &run->procs[i];
        if (p->phases.method != WSL_STEADY_NONE && (!m || p->phases.launches > m->phases.launches))
            m = p;
    }
    return m;
}

static bool evaluate(const struct wsl_run *run, struct wsl_finding *f)
{
    /* needs: the main GPU process, its children, its reads on pipes and sockets */
    const struct wsl_process *m = main_gpu_process(run);
    if (!m || !run->wall_ns)
        return false;
    uint64_t workers = 0, worker_reads = 0, worker_read_ns = 0;
    for (size_t i = 0; i < run->proc_count; i++) {
        const struct wsl_process *p = &run->procs[i];
        if (p->ppid == m->pid && p != m && !p->compiler) {
            workers++;
            worker_reads += p->io.data.reads;
            worker_read_ns += p->io.data.read_time + p->io.data.meta_time;
        }
    }
    const struct wsl_io_counts *q = &m->io.unknown_fd;
    /* fires: workers exist and the main process blocked on their pipes for >= 1% of the wall time */
    if (!workers || !q->reads || (double)q->read_time < WSL_RULE_MIN_SHARE * (double)run->wall_ns)
        return false;
    f->time_lost_ns = q->read_time;
    if (run->gpu_busy_known && run->kernels.busy_wall_ns) { /* no more than the GPU sat idle */
        uint64_t idle = run->kernels.busy_wall_ns > run->gpu_busy_ns ? run->kernels.busy_wall_ns - run->gpu_busy_ns : 0;
        if (f->time_lost_ns > idle)
            f->time_lost_ns = idle;
    }
    if (!f->time_lost_ns)
        return false;
    wsl_evidence_u64(f, "main_pid", (uint64_t)m->pid);
    wsl_evidence_u64(f, "workers", workers);
    wsl_evidence_u64(f, "pipe_reads", q->reads);
    wsl_evidence_u64(f, "pipe_bytes", q->bytes_read);
    wsl_evidence_u64(f, "pipe_read_ns", q->read_time);
    wsl_evidence_u64(f, "pipe_read_mean_ns", q->reads ? q->read_time / q->reads : 0);
    wsl_evidence_u64(f, "worker_file_reads", worker_reads);
    wsl_evidence_u64(f, "worker_file_io_ns", worker_read_ns);

    char a[32], b[32];
    f->summary = xasprintf("The main process (pid %" PRId32 ") waited %s for its %" PRIu64 " data-loading worker%s: "
                           "%" PRIu64 " reads on their pipes, %s each on average; the GPU gets no work while it "
                           "waits",
                           m->pid, wsl_format_ns(a, sizeof a, q->read_time), workers, workers == 1 ? "" : "s",
                           q->reads, wsl_format_ns(b, sizeof b, q->reads ? q->read_time / q->reads : 0));
    f->advice = xstrdup(
        "The workers do not keep up: raise DataLoader num_workers (up to the CPU cores you can spare), keep them "
        "alive across epochs (persistent_workers=True), let each prefetch more (prefetch_factor=4), and hand "
        "pinned batches over (pin_memory=True) so the copy to the GPU can overlap. Make each sample cheaper to "
        "produce: decode and augment on the GPU, cache decoded data, read from shards instead of many small "
        "files.");
    return true;
}

const struct wsl_rule wsl_rule_dataloader_wait = {
    .id = "dataloader_wait",
    .needs = "the process tree; the main GPU process's reads on pipes and sockets (fds not seen opened)",
    .how_computed = "The main process is the one that launched most kernels; its workers are its children that are "
                    "not compilers. Fires when it has workers and its reads on descriptors the shim did not see "
                    "opened (the workers' pipes and sockets) took at least 1% of the wall time. Time lost: those "
                    "reads' time, the main process blocked waiting for a batch, at most the GPU's idle time. A lower bound: a wait spent in "
                    "poll() or select() before the read is not recorded.",
    .fix = "more DataLoader workers, persistent_workers=True, prefetch_factor, pin_memory=True; cheaper samples",
    .evaluate = evaluate,
};
