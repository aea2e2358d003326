/*
 * dataloader_wait: the program's main process waits for its data-loading
 * worker processes. A DataLoader with workers (or any pool of forked loaders)
 * hands batches over pipes or sockets: the main process's reads on them block
 * until a worker has a batch ready, and while they block the GPU gets no work.
 *
 * Needs: the launching threads' reads and polls on descriptors the shim did not
 * see opened (pipes, sockets: phase_analysis.h pipe_reads), their waits on
 * semaphores where another thread takes the workers' data (pin_memory=True:
 * thread_waits), and the process tree.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "rules.h"
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

/* A worker forked from the program: the same executable and command line (exec'd helpers such as a
 * compiler, nvidia-smi or a shell are not data loaders). */
static bool same_program(const struct wsl_process *p, const struct wsl_process *m)
{
    if (!p->exe || !m->exe || strcmp(p->exe, m->exe) != 0 || p->argc != m->argc)
        return false;
    for (uint32_t i = 0; i < p->argc; i++)
        if (strcmp(p->argv[i], m->argv[i]) != 0)
            return false;
    return true;
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
        if (p->ppid == m->pid && p != m && !p->compiler && same_program(p, m)) {
            workers++;
            worker_reads += p->io.data.reads;
            worker_read_ns += p->io.data.read_time + p->io.data.meta_time;
        }
    }
    /* the reads and polls of the threads that submit the GPU's work (phase_analysis.c): a reader thread
     * of a process pool (a compile worker pool's) blocks on its pipes all the time without holding
     * anything up */
    const struct wsl_phases *ph = &m->phases;
    /* fires: workers exist and the launching threads blocked on pipes or sockets, or on the thread that
     * takes the workers' batches (pin_memory=True), for >= 1% of the wall time */
    uint64_t waits = ph->pipe_reads + ph->thread_waits, wait_ns = ph->pipe_read_ns + ph->thread_wait_ns;
    if (!workers || !waits || (double)wait_ns < WSL_RULE_MIN_SHARE * (double)run->wall_ns)
        return false;
    f->time_lost_ns = wait_ns;
    if (run->gpu_busy_known && run->kernels.busy_wall_ns) { /* no more than the GPU sat idle */
        uint64_t idle = run->kernels.busy_wall_ns > run->gpu_busy_ns ? run->kernels.busy_wall_ns - run->gpu_busy_ns : 0;
        if (f->time_lost_ns > idle)
            f->time_lost_ns = idle;
    }
    if (!f->time_lost_ns)
        return false;
    wsl_evidence_u64(f, "main_pid", (uint64_t)m->pid);
    wsl_evidence_u64(f, "workers", workers);
    wsl_evidence_u64(f, "pipe_reads", ph->pipe_reads);
    wsl_evidence_u64(f, "pipe_read_ns", ph->pipe_read_ns);
    wsl_evidence_u64(f, "pipe_read_mean_ns", ph->pipe_reads ? ph->pipe_read_ns / ph->pipe_reads : 0);
    wsl_evidence_u64(f, "thread_waits", ph->thread_waits);   /* on the pin-memory thread's queue */
    wsl_evidence_u64(f, "thread_wait_ns", ph->thread_wait_ns);
    wsl_evidence_u64(f, "process_pipe_reads", m->io.unknown_fd.reads); /* all its threads */
    wsl_evidence_u64(f, "worker_file_reads", worker_reads);
    wsl_evidence_u64(f, "worker_file_io_ns", worker_read_ns);

    char a[32], b[32];
    f->summary = xasprintf("The main process (pid %" PRId32 ") waited %s for its %" PRIu64 " data-loading worker%s: "
                           "%" PRIu64 " %s, %s each on average; the GPU gets no work while it waits",
                           m->pid, wsl_format_ns(a, sizeof a, wait_ns), workers, workers == 1 ? "" : "s", waits,
                           !ph->thread_waits ? "reads and polls on their pipes"
                           : !ph->pipe_reads ? "waits for the thread that takes their batches (pin_memory)"
                                             : "reads and polls on their pipes and waits for the thread that takes "
                                               "their batches (pin_memory)",
                           wsl_format_ns(b, sizeof b, wait_ns / waits));
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
    .order = 110,
    .needs = "the process tree; the main GPU process's reads on pipes and sockets (fds not seen opened) and "
             "waits on semaphores",
    .how_computed = "The main process is the one that launched most kernels; its workers are its children forked "
                    "from it (the same program and command line; not exec'd helpers or compilers). Fires when it "
                    "has workers and the reads and polls (poll, ppoll) of its threads that launched GPU work on "
                    "descriptors the shim did not see opened (the workers' pipes and sockets), and their waits on "
                    "semaphores (sem_wait, sem_timedwait, sem_clockwait: a Python queue's blocking get()) where another "
                    "thread of the process that launched nothing reads such descriptors, at least 32 times and once for "
                    "each of its polls (a DataLoader's pin_memory thread), took at "
                    "least 1% of the wall time. Time lost: those calls' time, the main process blocked waiting for a "
                    "batch, at most the GPU's idle time. A lower bound: a wait in select(), epoll_wait() or on a "
                    "condition variable is not recorded.",
    .fix = "more DataLoader workers, persistent_workers=True, prefetch_factor, pin_memory=True; cheaper samples",
    .evaluate = evaluate,
};
