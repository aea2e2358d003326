/*
 * The run model (analysis.h): the category names, a run's init, its finish once every trace was
 * read (processes and APIs sorted, totals, GPU busy, the NVTX step, the phases and the program's
 * compilers), the program the user ran, and freeing. A trace read into the run:
 * analysis_read.c and analysis_events.c.
 */
#include "analysis_internal.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

const char *wsl_category_name(unsigned category)
{
    static const char *const names[WSL_CAT_COUNT] = {
        [WSL_CAT_OTHER] = "other",
        [WSL_CAT_INIT] = "init",
        [WSL_CAT_LAUNCH] = "launch",
        [WSL_CAT_GRAPH] = "graph",
        [WSL_CAT_HOSTFN] = "host_fn",
        [WSL_CAT_ALLOC] = "alloc",
        [WSL_CAT_ALLOC_MANAGED] = "alloc_managed",
        [WSL_CAT_FREE] = "free",
        [WSL_CAT_HOST_ALLOC] = "host_alloc",
        [WSL_CAT_HOST_FREE] = "host_free",
        [WSL_CAT_HOST_REGISTER] = "host_register",
        [WSL_CAT_HOST_UNREGISTER] = "host_unregister",
        [WSL_CAT_SYNC_STREAM] = "sync_stream",
        [WSL_CAT_SYNC_CTX] = "sync_ctx",
        [WSL_CAT_SYNC_EVENT] = "sync_event",
        [WSL_CAT_STREAM_WAIT] = "stream_wait",
        [WSL_CAT_QUERY] = "query",
        [WSL_CAT_EVENT_RECORD] = "event_record",
        [WSL_CAT_COPY_ANY] = "copy",
        [WSL_CAT_COPY_ANY_ASYNC] = "copy_async",
        [WSL_CAT_COPY_HTOD] = "copy_htod",
        [WSL_CAT_COPY_HTOD_ASYNC] = "copy_htod_async",
        [WSL_CAT_COPY_DTOH] = "copy_dtoh",
        [WSL_CAT_COPY_DTOH_ASYNC] = "copy_dtoh_async",
        [WSL_CAT_COPY_DTOD] = "copy_dtod",
        [WSL_CAT_COPY_DTOD_ASYNC] = "copy_dtod_async",
        [WSL_CAT_MEMSET] = "memset",
        [WSL_CAT_MEMSET_ASYNC] = "memset_async",
        [WSL_CAT_IO_OPEN] = "io_open",
        [WSL_CAT_IO_READ] = "io_read",
        [WSL_CAT_IO_MMAP] = "io_mmap",
        [WSL_CAT_IO_STAT] = "io_stat",
        [WSL_CAT_IO_SEEK] = "io_seek",
        [WSL_CAT_IO_CLOSE] = "io_close",
        [WSL_CAT_FUNC_NAME] = "func_name",
        [WSL_CAT_GPU_KERNEL] = "gpu_kernel",
        [WSL_CAT_NVTX_PUSH] = "nvtx_push",
        [WSL_CAT_NVTX_POP] = "nvtx_pop",
        [WSL_CAT_NVTX_START] = "nvtx_start",
        [WSL_CAT_NVTX_END] = "nvtx_end",
        [WSL_CAT_NVTX_MARK] = "nvtx_mark",
        [WSL_CAT_NVTX_NAME_THREAD] = "nvtx_name_thread",
        [WSL_CAT_IO_FOLD] = "io_fold",
        [WSL_CAT_IO_WRITE] = "io_write",
        [WSL_CAT_IO_DIR] = "io_dir",
        [WSL_CAT_IO_WAIT] = "io_wait",
    };
    _Static_assert(WSL_CAT_IO_WAIT + 1 == WSL_CAT_COUNT, "a name for every category (above)");
    return category < WSL_CAT_COUNT && names[category] ? names[category] : "other";
}

void wsl_run_init(struct wsl_run *run)
{
    memset(run, 0, sizeof *run);
    wsl_io_init(&run->io);
    run->nvtx.step = -1;
}

void wsl_free_process(struct wsl_process *p)
{
    free(p->trace_path);
    free(p->host);
    free(p->exe);
    free(p->kernel_release);
    for (uint32_t i = 0; p->argv && i < p->argc; i++)
        free(p->argv[i]);
    free(p->argv);
    free(p->libcuda_path);
    for (uint32_t i = 0; i < p->gpu_count; i++)
        free(p->gpus[i].name);
    free(p->gpus);
    wsl_host_free(&p->host_cuda);
    free(p->rank_env);
    free(p->emu_spec);
    wsl_kern_estimate_free(&p->gpu_estimate);
    if (p->rank_solo) {
        wsl_run_free(p->rank_solo);
        free(p->rank_solo);
    }
}

const char *wsl_process_rank_var(const struct wsl_process *p, const char *key)
{
    size_t lk = strlen(key);
    for (uint32_t pos = 0; p->rank_env && pos < p->rank_env_size;) {
        const char *e = p->rank_env + pos;
        if (strncmp(e, key, lk) == 0 && e[lk] == '=')
            return e + lk + 1;
        pos += (uint32_t)strlen(e) + 1;
    }
    return NULL;
}

/* ---- the run ----------------------------------------------------------------------------- */

static int by_start(const void *a, const void *b)
{
    const struct wsl_process *x = a, *y = b;
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static int by_total_time(const void *a, const void *b)
{
    const struct wsl_api_stats *x = a, *y = b;
    if (x->ns.sum != y->ns.sum)
        return x->ns.sum > y->ns.sum ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int by_variant_calls(const void *a, const void *b)
{
    const struct wsl_variant *x = a, *y = b;
    if (x->calls != y->calls)
        return x->calls > y->calls ? -1 : 1;
    return strcmp(x->symbol, y->symbol);
}

/* ---- the program the user ran ------------------------------------------------------- */

static bool is_shell(const struct wsl_process *p)
{
    static const char *const shells[] = {"sh", "bash", "dash", "zsh", "ksh", "env"};
    const char *exe = p->exe ? p->exe : "";
    const char *base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
    for (size_t k = 0; k < sizeof shells / sizeof *shells; k++)
        if (!strcmp(base, shells[k]))
            return true;
    return false;
}

const struct wsl_process *wsl_run_program(const struct wsl_run *run)
{
    if (!run->proc_count)
        return NULL;
    /* the first process's last image: a wrapper script (a pyenv shim, a launcher) execs the real
     * program under its own pid */
    const struct wsl_process *root = &run->procs[0], *last = root;
    for (size_t i = 1; i < run->proc_count; i++)
        if (run->procs[i].pid == root->pid && run->procs[i].start_ns >= last->start_ns)
            last = &run->procs[i];
    if (!is_shell(last))
        return last;
    for (size_t i = 0; i < run->proc_count; i++) /* else the first that is not a shell */
        if (!is_shell(&run->procs[i]))
            return &run->procs[i];
    return root;
}

void wsl_run_dispatch_gaps(const struct wsl_run *run, struct wsl_dispatch_gaps *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < run->proc_count; i++) {
        out->gaps += run->procs[i].phases.dispatch_gaps;
        out->gap_ns += run->procs[i].phases.dispatch_gap_ns;
        out->long_gap_ns += run->procs[i].phases.long_gap_ns;
    }
}

/* ---- phases ------------------------------------------------------------------------- */

static const char *base_name(const char *path)
{
    const char *b = path ? strrchr(path, '/') : NULL;
    return b ? b + 1 : path ? path : "";
}

/* A compiler run by the program: CUDA's (ptxas, nvcc, cicc, nvlink, fatbinary), a C compiler
 * (Triton builds its launchers with one), or a compile worker (PyTorch Inductor's). */
static bool is_compiler(const struct wsl_process *p)
{
    static const char *const names[] = {"ptxas", "nvcc", "cicc", "nvlink", "fatbinary", "cc1", "cc1plus", "gcc",
                                        "g++", "cc", "c++", "clang", "clang++", "ld", "ld.bfd", "ld.gold",
                                        "collect2", "as"};
    const char *b = base_name(p->exe);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(b, names[i]) || (!strncmp(b, names[i], strlen(names[i])) && b[strlen(names[i])] == '-' &&
                                     b[strlen(names[i]) + 1] >= '0' && b[strlen(names[i]) + 1] <= '9'))
            return true;
    for (uint32_t i = 0; i < p->argc; i++)
        if (strstr(p->argv[i], "compile_worker") || strstr(p->argv[i], "_inductor/compile"))
            return true;
    return false;
}

static const struct wsl_nvtx_step_trace *steps_of(const struct wsl_run *run, const char *path)
{
    for (size_t i = 0; path && i < run->nvtx.step_trace_count; i++)
        if (run->nvtx.step_traces[i].path && !strcmp(run->nvtx.step_traces[i].path, path))
            return &run->nvtx.step_traces[i];
    return NULL;
}

static int by_first(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

static void phases_finish(struct wsl_run *run)
{
    struct wsl_run_phases *rp = &run->phases;
    memset(rp, 0, sizeof *rp);
    const struct wsl_process *main_p = NULL;
    for (size_t i = 0; i < run->proc_count; i++) {
        struct wsl_process *p = &run->procs[i];
        p->compiler = is_compiler(p);
        if (p->phases.method == WSL_STEADY_NONE)
            continue;
        const struct wsl_nvtx_step_trace *st = steps_of(run, p->trace_path);
        if (st && st->count >= 3) { /* the program's own steps: in ns, in time order */
            uint64_t (*w)[2] = xmalloc(st->count * sizeof *w);
            for (size_t k = 0; k < st->count; k++) {
                w[k][0] = wsl_clock_to_ns(&p->clock, st->t0[k]);
                w[k][1] = wsl_clock_to_ns(&p->clock, st->t1[k]);
            }
            size_t k0 = 1; /* strictly increasing already (the usual case): any sort leaves them so */
            while (k0 < st->count && w[k0 - 1][0] < w[k0][0])
                k0++;
            if (k0 < st->count)
                qsort(w, st->count, sizeof *w, by_first);
            uint64_t *t0 = xmalloc(st->count * sizeof *t0), *t1 = xmalloc(st->count * sizeof *t1);
            for (size_t k = 0; k < st->count; k++)
                t0[k] = w[k][0], t1[k] = w[k][1];
            wsl_phase_from_steps(&p->phases, t0, t1, st->count);
            free(w);
            free(t0);
            free(t1);
        }
        if (!main_p || p->phases.launches > main_p->phases.launches)
            main_p = p;
        if (!rp->known || p->phases.steady_start_ns < rp->steady_start_ns)
            rp->steady_start_ns = p->phases.steady_start_ns;
        if (!rp->known || p->phases.steady_end_ns > rp->steady_end_ns)
            rp->steady_end_ns = p->phases.steady_end_ns;
        rp->known = true;
    }
    if (!main_p)
        return;
    rp->main_pid = main_p->pid;
    rp->main = main_p->phases;
    for (size_t i = 0; i < run->proc_count; i++) {
        const struct wsl_process *p = &run->procs[i];
        if (!p->compiler)
            continue;
        rp->compile_processes++;
        rp->compile_process_ns += p->end_ns > p->start_ns ? p->end_ns - p->start_ns : 0;
        rp->compile_in_warmup += p->start_ns < rp->main.steady_start_ns;
    }
}

/* The estimate per launch of the process whose trace is path (wsl_nvtx.estimate_of). */
static const struct wsl_kern_estimate *process_estimate(void *ctx, const char *path)
{
    const struct wsl_run *run = ctx;
    for (size_t i = 0; i < run->proc_count; i++)
        if (run->procs[i].trace_path && !strcmp(run->procs[i].trace_path, path))
            return &run->procs[i].gpu_estimate;
    return NULL;
}

void wsl_run_model_finish(struct wsl_run *run)
{
    if (run->proc_count)
        qsort(run->procs, run->proc_count, sizeof *run->procs, by_start);
    /* The name index points into apis: it is not used after sorting. */
    if (run->api_count)
        qsort(run->apis, run->api_count, sizeof *run->apis, by_total_time);
    wsl_u64_map_free(&run->api_index);
    for (size_t i = 0; i < run->api_count; i++)
        if (run->apis[i].variant_count)
            qsort(run->apis[i].variants, run->apis[i].variant_count, sizeof *run->apis[i].variants,
                  by_variant_calls);
    for (size_t i = 0; i < run->proc_count; i++) {
        const struct wsl_process *p = &run->procs[i];
        if (i == 0 || p->start_ns < run->start_ns)
            run->start_ns = p->start_ns;
        if (i == 0 || p->end_ns > run->end_ns)
            run->end_ns = p->end_ns;
    }
    run->wall_ns = run->end_ns > run->start_ns ? run->end_ns - run->start_ns : 0;
    memset(&run->mem, 0, sizeof run->mem);
    for (size_t i = 0; i < run->proc_count; i++)
        wsl_mem_add(&run->mem, &run->procs[i].mem);
    wsl_host_free(&run->host_cuda);
    for (size_t i = 0; i < run->proc_count; i++)
        wsl_host_add(&run->host_cuda, &run->procs[i].host_cuda);
    wsl_io_finish(&run->io);
    wsl_kern_finish(&run->kernels);
    /* GPU busy: estimated GPU time over the GPU phase (first launch to last
     * GPU work) of the processes that had launches timed (each drives its own
     * GPU or shares one): start-up and teardown are not the GPU's idle time. */
    run->kernels.busy_wall_ns = 0;
    for (size_t i = 0; i < run->proc_count; i++) {
        const struct wsl_process *p = &run->procs[i];
        if (p->gpu.kernels_timed + p->gpu.graphs_timed)
            run->kernels.busy_wall_ns += p->gpu.gpu_phase_ns;
    }
    run->kernels.busy_estimate =
        run->kernels.busy_wall_ns ? (double)run->kernels.est_gpu_ns / (double)run->kernels.busy_wall_ns : -1;
    if (run->kernels.busy_estimate > 1)
        run->kernels.busy_estimate = 1; /* streams ran side by side */
    run->gpu_busy_known = run->kernels.busy_estimate >= 0;
    run->gpu_busy_ns = run->gpu_busy_known ? (uint64_t)(run->kernels.busy_estimate * (double)run->kernels.busy_wall_ns) : 0;
    run->nvtx.estimate_of = process_estimate;
    run->nvtx.estimate_ctx = run;
    wsl_nvtx_finish(&run->nvtx, run->store, !run->nested);
    if (!run->windowed)
        phases_finish(run);
}

void wsl_run_free(struct wsl_run *run)
{
    for (size_t i = 0; i < run->proc_count; i++)
        wsl_free_process(&run->procs[i]);
    free(run->procs);
    for (size_t i = 0; i < run->api_count; i++) {
        struct wsl_api_stats *a = &run->apis[i];
        free(a->name);
        wsl_hist_free(&a->ns);
        for (size_t v = 0; v < a->variant_count; v++)
            free(a->variants[v].symbol);
        free(a->variants);
    }
    free(run->apis);
    for (size_t i = 0; i < run->warning_count; i++)
        free(run->warnings[i]);
    free(run->warnings);
    wsl_u64_map_free(&run->api_index);
    wsl_io_free(&run->io);
    wsl_kern_free(&run->kernels);
    wsl_nvtx_free(&run->nvtx);
    wsl_host_free(&run->host_cuda);
    wsl_findings_free(run->findings, run->finding_count);
    wsl_dist_free(&run->dist);
    if (run->store_owned)
        wsl_store_free(run->store);
    memset(run, 0, sizeof *run);
}

const struct wsl_process *wsl_run_emulated(const struct wsl_run *run, size_t *count)
{
    const struct wsl_process *first = NULL;
    size_t n = 0;
    for (size_t i = 0; i < run->proc_count; i++)
        if (run->procs[i].emulated) {
            if (!first)
                first = &run->procs[i];
            n++;
        }
    if (count)
        *count = n;
    return first;
}
