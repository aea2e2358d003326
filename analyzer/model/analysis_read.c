/*
 * One trace read into the run model (analysis.h), wsl_run_read_trace. Per trace, durations are
 * accumulated in the trace's own ticks (a TSC trace's tick rate is only well known once its last
 * CLOCK chunk was read) and converted to ns once, at the end of the trace, with the final clock
 * fit. A rank's trace is read into a run of its own in the same pass. Its API table and events:
 * analysis_events.c.
 */
#include "analysis_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* ---- one trace ------------------------------------------------------------------------ */

static void add_warning(struct wsl_run *run, char *msg)
{
    run->warnings = xrealloc(run->warnings, (run->warning_count + 1) * sizeof *run->warnings);
    run->warnings[run->warning_count++] = msg;
}

static char **copy_argv(const char *const *argv, uint32_t argc)
{
    char **v = xcalloc(argc + 1, sizeof *v);
    for (uint32_t i = 0; i < argc; i++)
        v[i] = xstrdup(argv[i]);
    return v;
}

static void take_process(struct wsl_process *p, const struct wsl_item *it)
{
    const struct wsl_process_info *pi = &it->process.info;
    p->pid = pi->pid;
    p->ppid = pi->ppid;
    p->flags = pi->flags;
    p->clock_kind = pi->clock_kind;
    p->start_ns = pi->start_mono_ns;
    p->host = xstrdup(it->process.host);
    p->exe = xstrdup(it->process.exe);
    p->kernel_release = xstrdup(it->process.kernel_release);
    p->argc = it->process.argc;
    p->argv = copy_argv(it->process.argv, it->process.argc);
}

static void take_driver(struct wsl_process *p, const struct wsl_item *it)
{
    for (uint32_t i = 0; i < p->gpu_count; i++)
        free(p->gpus[i].name);
    free(p->gpus);
    free(p->libcuda_path);
    const struct wsl_driver_info *di = &it->driver.info;
    p->have_driver = true;
    p->driver_version = di->driver_version;
    p->init_result = di->init_result;
    p->libcuda_path = xstrdup(di->libcuda_path);
    p->gpu_count = di->devices;
    p->gpus = xcalloc(di->devices, sizeof *p->gpus);
    for (uint32_t i = 0; i < di->devices; i++) {
        const struct wsl_gpu_info *g = &it->driver.gpus[i];
        p->gpus[i].name = xstrdup(g->name);
        p->gpus[i].total_mem = g->total_mem;
        p->gpus[i].cc_major = g->cc_major;
        p->gpus[i].cc_minor = g->cc_minor;
    }
}

static void free_trace_state(struct trace_state *t)
{
    wsl_io_trace_discard(t->io);
    wsl_io_trace_discard(t->io_solo);
    wsl_mem_trace_discard(t->mem);
    wsl_kern_trace_discard(t->kern);
    wsl_nvtx_trace_discard(t->nvtx);
    wsl_host_trace_discard(t->host);
    wsl_phase_trace_discard(t->phase);
    for (unsigned i = 0; i < WSL_MAX_API_IDS; i++)
        if (t->by_id[i]) {
            wsl_hist_free(&t->by_id[i]->ticks);
            free(t->by_id[i]);
        }
}

/* The cost of one GPU submission in this trace: the median host time of its most used launch API. */
static uint64_t submit_ticks(const struct trace_state *t)
{
    const struct trace_api *best = NULL;
    for (unsigned id = 0; id < WSL_MAX_API_IDS; id++) {
        const struct trace_api *ta = t->by_id[id];
        if (ta && ta->category == WSL_CAT_LAUNCH && (!best || ta->ticks.count > best->ticks.count))
            best = ta;
    }
    return best ? wsl_hist_quantile(&best->ticks, 0.5) : 0;
}

/* A copy of the host summary s (its own range names). */
static void host_summary_copy(struct wsl_host_summary *dst, const struct wsl_host_summary *s)
{
    *dst = *s;
    if (!s->range_count)
        return;
    dst->ranges = xmalloc(s->range_count * sizeof *dst->ranges);
    for (size_t i = 0; i < s->range_count; i++) {
        dst->ranges[i] = s->ranges[i];
        dst->ranges[i].name = s->ranges[i].name ? xstrdup(s->ranges[i].name) : NULL;
    }
}

/* Folds the trace's tick statistics into runs[0..n), converted with the final clock fit: the run
 * it was read for and (n == 2) the rank's own run, t->solo, with its process ps[1]. What is the
 * process's own (phases, memory, waits) is computed once and copied; what goes into a run (APIs,
 * kernels, NVTX ranges, file I/O, warnings) is merged into each, in the same order as a reading of
 * the trace into that run alone. */
static void merge_trace(struct wsl_run *const *runs, struct trace_state *t, struct wsl_process *const *ps, int n,
                        const struct wsl_clock_map *clock)
{
    for (unsigned id = 0; id < WSL_MAX_API_IDS; id++) {
        struct trace_api *ta = t->by_id[id];
        if (!ta)
            continue;
        ta->events = ta->ticks.count + ta->untimed_events;
        if (ta->sampled && ta->untimed) /* the timed calls stand for all of them */
            wsl_hist_expand(&ta->ticks, ta->ticks.count + ta->untimed, t->io_weight);
    }
    for (int k = 0; k < n; k++) {
        struct wsl_run *run = runs[k];
        struct wsl_process *p = ps[k];
        for (unsigned id = 0; id < WSL_MAX_API_IDS; id++) {
            struct trace_api *ta = t->by_id[id];
            if (!ta)
                continue;
            uint64_t events = ta->events;
            if (ta->sampled && events && t->io_weight > run->io.timing_sample)
                run->io.timing_sample = t->io_weight;
            if (ta->ticks.count == 0)
                continue;
            if (ta->category == WSL_CAT_GPU_KERNEL || wsl_is_nvtx_category(ta->category) || ta->shim_made) {
                /* GPU work the shim timed, NVTX calls ("nvtx"): not among the APIs */
                p->events += events;
                continue;
            }
            struct wsl_api_stats *a = &run->apis[k ? ta->solo_api : ta->api];
            wsl_hist_merge_scaled(&a->ns, &ta->ticks, clock->ns_per_tick);
            a->errors += ta->errors;
            a->variants[k ? ta->solo_variant : ta->variant].calls += ta->ticks.count;
            p->events += events;
        }
        uint64_t end = p->start_ns;
        if (t->have_events && wsl_clock_to_ns(clock, t->max_event_end) > end)
            end = wsl_clock_to_ns(clock, t->max_event_end);
        if (t->have_end && wsl_clock_to_ns(clock, t->end_ticks) > end)
            end = wsl_clock_to_ns(clock, t->end_ticks);
        if (t->max_clock_ns > end)
            end = t->max_clock_ns;
        if (run->windowed) { /* a steady-state reading: the process as the window shows it */
            if (p->start_ns < run->window_start_ns)
                p->start_ns = run->window_start_ns;
            if (end > run->window_end_ns)
                end = run->window_end_ns;
            if (end < p->start_ns)
                end = p->start_ns;
        }
        p->end_ns = end;
    }
    wsl_phase_trace_end(t->phase, clock, ps[0]->start_ns, ps[0]->end_ns, &ps[0]->phases);
    t->phase = NULL;
    for (int k = 1; k < n; k++)
        ps[k]->phases = ps[0]->phases;
    uint64_t end_ticks = t->have_events ? t->max_event_end : 0;
    if (t->have_end && t->end_ticks > end_ticks)
        end_ticks = t->end_ticks;
    wsl_host_trace_name_ranges(t->host, wsl_nvtx_trace_range_name, t->nvtx); /* before the names are freed */
    uint64_t unclosed = wsl_nvtx_trace_close(t->nvtx, end_ticks);
    /* The GPU time per launch as the report estimates it, for the ranges' GPU time and the outputs
     * that read the trace again (HTML) */
    wsl_kern_estimate_build(t->kern, clock->ns_per_tick, &ps[0]->gpu_estimate);
    for (int k = 1; k < n; k++)
        wsl_kern_estimate_build(t->kern, clock->ns_per_tick, &ps[k]->gpu_estimate);
    if (wsl_nvtx_trace_timed(t->nvtx))
        wsl_nvtx_trace_adjust_pairs(t->nvtx, &ps[0]->gpu_estimate);
    for (int k = 0; k < n; k++) {
        struct wsl_run *run = runs[k];
        struct wsl_process *p = ps[k];
        uint64_t nvtx_unclosed = run->nvtx.unclosed, nvtx_dropped = run->nvtx.dropped;
        wsl_nvtx_trace_merge(t->nvtx, &run->nvtx, unclosed, clock->ns_per_tick, p->trace_path);
        if (run->nvtx.unclosed > nvtx_unclosed)
            add_warning(run, xasprintf("%s: %llu NVTX ranges were still open at the end of the trace; they count "
                                       "as closed there", p->trace_path,
                                       (unsigned long long)(run->nvtx.unclosed - nvtx_unclosed)));
        if (run->nvtx.dropped > nvtx_dropped)
            add_warning(run, xasprintf("%s: %llu NVTX ranges or names were past a cap (nesting deeper than %u, "
                                       "more than %u range names or %u open start/end ranges) and are not timed",
                                       p->trace_path, (unsigned long long)(run->nvtx.dropped - nvtx_dropped),
                                       WSL_NVTX_MAX_DEPTH, WSL_NVTX_MAX_RANGES, WSL_NVTX_MAX_OPEN_STARTS));
        p->dropped = t->dropped_in_chunks > t->dropped_at_end ? t->dropped_in_chunks : t->dropped_at_end;
        p->clock_rate_known = clock->rate_known;
        p->clock = *clock;
        p->mem.device_total_bytes = p->gpu_count ? p->gpus[0].total_mem : 0;
    }
    wsl_nvtx_trace_discard(t->nvtx);
    t->nvtx = NULL;
    wsl_mem_trace_end(t->mem, clock, &ps[0]->mem);
    t->mem = NULL;
    wsl_host_trace_end(t->host, clock, submit_ticks(t), &ps[0]->host_cuda);
    t->host = NULL;
    for (int k = 1; k < n; k++) {
        ps[k]->mem = ps[0]->mem;
        host_summary_copy(&ps[k]->host_cuda, &ps[0]->host_cuda);
    }
    for (int k = 0; k < n; k++) {
        struct wsl_run *run = runs[k];
        struct wsl_process *p = ps[k];
        uint64_t dropped_names = run->kernels.dropped_names, untracked = run->kernels.untracked_launches,
                 config_untracked = run->kernels.config_untracked;
        wsl_kern_trace_merge(t->kern, &run->kernels, p->pid, clock->ns_per_tick, &p->gpu);
        if (run->kernels.dropped_names > dropped_names)
            add_warning(run, xasprintf("%s: more than %u kernel names or named handles (or %u MiB of names); %llu "
                                       "were not kept and their launches count as unnamed", p->trace_path,
                                       WSL_KERN_MAX_HANDLES, WSL_KERN_MAX_NAME_BYTES >> 20,
                                       (unsigned long long)(run->kernels.dropped_names - dropped_names)));
        if (run->kernels.untracked_launches > untracked)
            add_warning(run, xasprintf("%s: more than %u distinct launched functions; %llu launches of the others "
                                       "are in the totals only", p->trace_path, WSL_KERN_MAX_HANDLES,
                                       (unsigned long long)(run->kernels.untracked_launches - untracked)));
        if (run->kernels.config_untracked > config_untracked)
            add_warning(run, xasprintf("%s: more than %u (function, grid and block) launch configurations; %llu "
                                       "launches and timed launches of the others are estimated per function",
                                       p->trace_path, WSL_KERN_MAX_CONFIGS,
                                       (unsigned long long)(run->kernels.config_untracked - config_untracked)));
        if (p->mem.late_events)
            add_warning(run, xasprintf("%s: %llu memory calls came after later ones of other threads had left the "
                                       "%u-event replay window; they were applied late, so the memory peak may be "
                                       "off", p->trace_path, (unsigned long long)p->mem.late_events, WSL_MEM_WINDOW));
        struct wsl_io_trace **io = k ? &t->io_solo : &t->io;
        if (*io) {
            uint64_t unnamed = run->io.unnamed_path_events, untracked_paths = run->io.untracked_path_events;
            wsl_io_trace_end(*io, clock, &p->io);
            *io = NULL;
            if (run->io.unnamed_path_events > unnamed) {
                char why[96] = "";
                if (p->paths_dropped)
                    snprintf(why, sizeof why, " (the shim dropped %llu paths or names: its buffers were full)",
                             (unsigned long long)p->paths_dropped);
                p->paths_dropped_said = p->paths_dropped > 0;
                add_warning(run, xasprintf("%s: %llu file I/O calls name path ids that no PATHS entry defined "
                                           "before them%s; their files count as unnamed", p->trace_path,
                                           (unsigned long long)(run->io.unnamed_path_events - unnamed), why));
            }
            if (run->io.untracked_path_events > untracked_paths)
                add_warning(run, xasprintf("%s: more than %u distinct paths; %llu calls on the others count under "
                                           "\"unknown\"", p->trace_path, WSL_IO_MAX_PATHS_PER_TRACE,
                                           (unsigned long long)(run->io.untracked_path_events - untracked_paths)));
        }
    }
    wsl_kern_trace_discard(t->kern);
    t->kern = NULL;
}

/* One reading's target: a run, the state of the trace being read into it, and its process. */
struct trace_sink {
    struct wsl_run *run;
    struct trace_state *t;
    struct wsl_process p;
    bool have_process;
};

static void sink_begin(struct trace_sink *k, struct wsl_run *run)
{
    memset(k, 0, sizeof *k);
    k->run = run;
    struct trace_state *t = k->t = xcalloc(1, sizeof *t);
    t->mem = wsl_mem_trace_begin();
    t->kern = wsl_kern_trace_begin();
    t->nvtx = wsl_nvtx_trace_begin();
    t->host = wsl_host_trace_begin();
    t->phase = wsl_phase_trace_begin();
    t->windowed = run->windowed;
    t->window_t0 = run->window_t0;
    t->window_t1 = run->window_t1;
    t->track = !run->windowed && !run->nested && !run->nvtx_by_reading; /* (the NVTX step's figures are reported) */
    memset(t->track_cat, 0xff, sizeof t->track_cat);
    k->p.gpu_device = -1;
}

/* What a chunk says of the process itself (each run that reads the trace keeps its own copy). */
static void process_item(struct wsl_process *pp, bool *have_process, const struct wsl_item *it)
{
    switch (it->type) {
    case WSL_CHUNK_PROCESS:
        take_process(pp, it);
        *have_process = true;
        break;
    case WSL_CHUNK_DRIVER:
        take_driver(pp, it);
        break;
    case WSL_CHUNK_END: /* the largest count stands: END's, or a later PATHS_DROPPED's past END's u32 */
        if (it->end.paths_dropped > pp->paths_dropped)
            pp->paths_dropped = it->end.paths_dropped;
        pp->threads = it->end.threads;
        break;
    case WSL_CHUNK_PATHS_DROPPED: /* the count so far (1.12): a trace cut short (no END) says it too */
        if (it->paths_dropped.paths_dropped > pp->paths_dropped)
            pp->paths_dropped = it->paths_dropped.paths_dropped;
        break;
    case WSL_CHUNK_GPU_MEMORY:
        if (!pp->have_gpu_memory) { /* the first context's device */
            pp->have_gpu_memory = true;
            pp->gpu_free_at_start = it->gpu_memory.free_bytes;
            pp->gpu_total = it->gpu_memory.total_bytes;
            pp->gpu_device = it->gpu_memory.device;
        }
        break;
    case WSL_CHUNK_RANK: /* each one is complete: the last one stands */
        free(pp->rank_env);
        pp->rank_env = xmalloc(it->rank.size + 1);
        memcpy(pp->rank_env, it->rank.data, it->rank.size);
        pp->rank_env[it->rank.size] = 0;
        pp->rank_env_size = it->rank.size;
        break;
    case WSL_CHUNK_EMULATION:
        free(pp->emu_spec);
        pp->emu_spec = xstrdup(it->emulation.spec);
        pp->emulated = true;
        memcpy(pp->emu_ns, it->emulation.ns, sizeof pp->emu_ns);
        pp->emu_fs_meta_ns = it->emulation.fs_meta_ns;
        pp->emu_fs_read_bps = it->emulation.fs_read_bps;
        pp->emu_fs_write_bps = it->emulation.fs_write_bps;
        break;
    default:
        break;
    }
}

static void sink_item(struct trace_sink *k, const struct wsl_item *it)
{
    struct wsl_run *run = k->run;
    struct trace_state *t = k->t;
    struct wsl_process *pp = &k->p;
    process_item(pp, &k->have_process, it);
    switch (it->type) {
    case WSL_CHUNK_PROCESS: {
        bool wsl = (pp->flags & (WSL_PROC_WSL1 | WSL_PROC_WSL2)) != 0;
        t->io_weight = wsl_io_weight(&it->process.info);
        run->io.lazy_names = run->windowed; /* (only their figures are read: io_analysis.h) */
        if (t->solo)
            t->solo->io.lazy_names = t->solo->windowed;
        if (!t->io)
            t->io = wsl_io_trace_begin(&run->io, wsl);
        if (t->solo && !t->io_solo) /* the rank's own run: its file I/O counted by t->io (wsl_io_trace_also) */
            t->io_solo = wsl_io_trace_also(t->io, &t->solo->io, wsl);
        break;
    }
    case WSL_CHUNK_API_TABLE:
        wsl_take_api_table(run, t, it);
        break;
    case WSL_CHUNK_CLOCK:
        if (it->clock.mono_ns > t->max_clock_ns)
            t->max_clock_ns = it->clock.mono_ns;
        break;
    case WSL_CHUNK_EVENTS:
        wsl_take_events(t, it->events.tid, it->events.dropped, it->events.events, it->events.count, it->events.ops,
                        it->events.chunk_start);
        t->dropped_in_chunks += it->events.dropped;
        break;
    case WSL_CHUNK_END:
        t->have_end = true;
        t->end_ticks = it->end.end_ticks;
        t->dropped_at_end = it->end.events_dropped;
        break;
    case WSL_CHUNK_MOUNTS:
        if (t->io)
            wsl_io_trace_mounts(t->io, it->mounts.table);
        if (t->io_solo)
            wsl_io_trace_mounts(t->io_solo, it->mounts.table);
        break;
    case WSL_CHUNK_PATHS:
        if (t->io)
            wsl_io_trace_paths(t->io, it);
        if (t->io_solo)
            wsl_io_trace_paths(t->io_solo, it);
        wsl_kern_trace_paths(t->kern, it);
        wsl_nvtx_trace_paths(t->nvtx, it);
        break;
    default: /* DRIVER, GPU_MEMORY, RANK, EMULATION: the process's (above); STRING; EVENTS_PACKED and
                EVENTS_GAPS come as EVENTS batches */
        break;
    }
}

/* The process read, into its run: the warnings of its reading, then the process itself. */
static void add_process(struct wsl_run *run, struct wsl_reader *r, const char *path, struct wsl_process *p)
{
    if (p->truncated)
        add_warning(run, xasprintf("%s: %s", path, wsl_reader_message(r)));
    for (size_t i = 0; wsl_reader_warning(r, i); i++)
        add_warning(run, xasprintf("%s: %s", path, wsl_reader_warning(r, i)));
    if (p->dropped)
        add_warning(run, xasprintf("%s: %llu events dropped (the shim's buffers were full)", path,
                                   (unsigned long long)p->dropped));
    if (p->paths_dropped && !p->paths_dropped_said)
        add_warning(run, xasprintf("%s: %llu paths or names dropped (the shim's buffers were full): "
                                   "their calls are counted, without the path or name", path,
                                   (unsigned long long)p->paths_dropped));
    if (!p->clock_rate_known)
        add_warning(run, xasprintf("%s: too few clock samples to measure the tick rate; "
                                   "times assume 1 tick = 1 ns", path));
    /* room for 4, then doubled (a process is 2.4 KB: grown one at a time, 64 ranks' reallocs copied
     * 5 MB and faulted in a tenth of the run's pages); only this adds to procs */
    size_t n = run->proc_count;
    if (!n || (n >= 4 && !(n & (n - 1))))
        run->procs = xrealloc(run->procs, (n ? 2 * n : 4) * sizeof *run->procs);
    run->procs[run->proc_count++] = *p;
}

/* Ends the reading into k's run (and, solo_p not NULL, into the rank's own run t->solo with that
 * process): the process is added (0), or left out (-1, err says why). */
static int sink_end(struct trace_sink *k, struct wsl_reader *r, enum wsl_read_result res, const char *path,
                    struct wsl_process *solo_p, char *err, size_t errlen)
{
    struct wsl_run *run = k->run;
    struct trace_state *t = k->t;
    struct wsl_process p = k->p;
    int rc = 0;
    if (res == WSL_READ_ERROR) {
        snprintf(err, errlen, "%s", wsl_reader_message(r));
        rc = -1;
    } else if (!k->have_process) { /* the reader says ERROR for these: a clean END without PROCESS cannot be */
        snprintf(err, errlen, "not a usable trace: it has no process info");
        rc = -1;
    } else {
        p.trace_path = xstrdup(path);
        p.truncated = res == WSL_READ_TRUNCATED;
        struct wsl_run *runs[2] = {run, t->solo};
        struct wsl_process *ps[2] = {&p, solo_p};
        if (solo_p) {
            solo_p->trace_path = xstrdup(path);
            solo_p->truncated = p.truncated;
        }
        merge_trace(runs, t, ps, solo_p ? 2 : 1, wsl_reader_clock(r));
        add_process(run, r, path, &p);
        if (solo_p)
            add_process(t->solo, r, path, solo_p);
    }
    if (rc != 0)
        wsl_free_process(&p);
    free_trace_state(t);
    free(t);
    k->t = NULL;
    return rc;
}

/* The rank's own run of the trace being read is not made: it is not a rank's. */
static void drop_solo(struct trace_state *t, struct wsl_process *solo_p)
{
    wsl_io_trace_discard(t->io_solo);
    t->io_solo = NULL;
    wsl_run_free(t->solo);
    free(t->solo);
    t->solo = NULL;
    wsl_free_process(solo_p);
}

/* A process that may be a rank of a distributed run: a rank variable in its RANK chunk, no world
 * size of 1, and not forked from a traced process (a forked worker joins its rank's reading). */
static bool may_be_rank(const struct wsl_process *p)
{
    static const char *const rank_keys[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", NULL};
    static const char *const world_keys[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS",
                                             NULL};
    if (!p->rank_env || (p->flags & WSL_PROC_FORKED))
        return false;
    for (size_t i = 0; world_keys[i]; i++) {
        const char *w = wsl_process_rank_var(p, world_keys[i]);
        if (w && !strcmp(w, "1"))
            return false;
    }
    for (size_t i = 0; rank_keys[i]; i++) {
        const char *v = wsl_process_rank_var(p, rank_keys[i]);
        if (v && *v >= '0' && *v <= '9')
            return true;
    }
    return false;
}

/* The rank's own run of a trace read whole is kept: a rank's, and its file I/O derived from the run's
 * (else the distributed analysis reads the trace again). */
static __attribute__((noinline)) bool rank_run_kept(const struct trace_state *t, const struct wsl_process *p)
{
    return may_be_rank(p) && wsl_io_trace_also_exact(t->io_solo);
}

int wsl_run_add_trace(struct wsl_run *run, const char *path, char *err, size_t errlen)
{
    bool usable;
    return wsl_run_read_trace(run, path, &usable, err, errlen);
}

unsigned long wsl_trace_readings;

static struct wsl_rider *rider_of(const struct wsl_run *run, const char *path)
{
    for (size_t i = 0; i < run->rider_count; i++)
        if (!strcmp(run->riders[i].path, path))
            return &run->riders[i];
    return NULL;
}

int wsl_run_read_trace(struct wsl_run *run, const char *path, bool *usable, char *err, size_t errlen)
{
    *usable = false;
    wsl_trace_readings++;
    if (!run->store && run->record && !run->solo && !run->windowed) {
        run->store = wsl_store_new();
        run->store_owned = true;
    }
    struct wsl_reader *r = run->store_owned ? wsl_store_open_recording(run->store, path, err, errlen)
                                            : wsl_store_open(run->store, path, err, errlen);
    if (!r)
        return -1;
    /* A run that may compare ranks reads a rank's trace into a run of its own as well, in the same
     * pass (distributed.c takes it instead of reading the trace again). Its events are analysed
     * once: the trace's state serves both runs (the file I/O analysis's through a handle for the
     * rank's run) and merge_trace adds it to each. Until the first events it is not known whether
     * the trace is a rank's; when it is not, the rank's run is dropped there. */
    struct trace_sink main_sink;
    sink_begin(&main_sink, run);
    struct trace_state *t = main_sink.t;
    struct wsl_process solo_p;
    bool solo_have_process = false;
    memset(&solo_p, 0, sizeof solo_p);
    solo_p.gpu_device = -1;
    struct wsl_rider *rider = run->rider_count ? rider_of(run, path) : NULL;
    if (rider) { /* a rank's own run reads along (the steady state's reading) */
        t->solo = rider->run;
        ++*rider->seen;
    } else if (!run->solo && !run->windowed) {
        struct wsl_run *solo = t->solo = xmalloc(sizeof *solo);
        wsl_run_init(solo);
        solo->solo = true;
        solo->nested = true;
        solo->store = run->store;
    }
    /* the parent run's NVTX step windows of this trace, counted on the way (the steady state's reading) */
    struct wsl_nvtx_window_count *wc = run->count_windows_of ? wsl_nvtx_window_pending(run->count_windows_of, path)
                                                             : NULL;
    if (wc)
        wsl_nvtx_window_begin(wc);
    struct wsl_item it;
    enum wsl_read_result res;
    while ((res = wsl_reader_next(r, &it)) == WSL_READ_ITEM) {
        wsl_progress_update(run->progress, wsl_reader_bytes_in(r));
        if (t->solo && !rider && it.type == WSL_CHUNK_EVENTS && !t->have_events && !may_be_rank(&solo_p))
            drop_solo(t, &solo_p);
        sink_item(&main_sink, &it);
        if (t->solo)
            process_item(&solo_p, &solo_have_process, &it);
        if (wc)
            wsl_nvtx_window_item(wc, &it);
    }
    if (wc)
        wsl_nvtx_window_end(wc, res != WSL_READ_ERROR);
    *usable = main_sink.have_process;
    struct wsl_run *solo = t->solo;
    bool with_solo = solo && res != WSL_READ_ERROR && main_sink.have_process &&
                     (rider ? wsl_io_trace_also_exact(t->io_solo) : rank_run_kept(t, &solo_p));
    if (solo && !with_solo) {
        if (rider) { /* the rider's run is not fed this trace: it reads its steady state itself */
            wsl_io_trace_discard(t->io_solo);
            t->io_solo = NULL;
            t->solo = NULL;
            wsl_free_process(&solo_p);
        } else {
            drop_solo(t, &solo_p);
        }
        solo = NULL;
    }
    int rc = sink_end(&main_sink, r, res, path, with_solo ? &solo_p : NULL, err, errlen);
    if (with_solo && rider)
        ++*rider->fed;
    else if (with_solo)
        run->procs[run->proc_count - 1].rank_solo = solo;
    wsl_reader_close(r);
    return rc;
}
