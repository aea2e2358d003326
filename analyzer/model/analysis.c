/*
 * Builds the run model from traces. Per trace, durations are accumulated in
 * the trace's own ticks (a TSC trace's tick rate is only well known once its
 * last CLOCK chunk was read) and converted to ns once, at the end of the
 * trace, with the final clock fit.
 */
#include "analysis.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_reader.h"
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
        [WSL_CAT_NVTX_PUSH] = "nvtx_push",
        [WSL_CAT_NVTX_POP] = "nvtx_pop",
        [WSL_CAT_NVTX_START] = "nvtx_start",
        [WSL_CAT_NVTX_END] = "nvtx_end",
        [WSL_CAT_NVTX_MARK] = "nvtx_mark",
        [WSL_CAT_NVTX_NAME_THREAD] = "nvtx_name_thread",
    };
    return category < WSL_CAT_COUNT ? names[category] : "other";
}

void wsl_run_init(struct wsl_run *run)
{
    memset(run, 0, sizeof *run);
    wsl_io_init(&run->io);
    run->nvtx.step = -1;
}

static void add_warning(struct wsl_run *run, char *msg)
{
    run->warnings = xrealloc(run->warnings, (run->warning_count + 1) * sizeof *run->warnings);
    run->warnings[run->warning_count++] = msg;
}

/* ---- API names: base name -> index into run->apis ------------------------------- */

static uint32_t api_find_or_add(struct wsl_run *run, const char *name, uint16_t category)
{
    uint64_t key = wsl_u64_map_string_key(name, strlen(name));
    for (const struct wsl_u64_slot *s = wsl_u64_map_find(&run->api_index, key); s;
         s = wsl_u64_map_find_next(&run->api_index, s))
        if (strcmp(run->apis[s->value].name, name) == 0)
            return (uint32_t)s->value;
    run->apis = xrealloc(run->apis, (run->api_count + 1) * sizeof *run->apis);
    struct wsl_api_stats *a = &run->apis[run->api_count];
    memset(a, 0, sizeof *a);
    a->name = xstrdup(name);
    a->category = category;
    wsl_u64_map_insert(&run->api_index, key, run->api_count);
    return (uint32_t)run->api_count++;
}

static uint32_t variant_find_or_add(struct wsl_api_stats *a, const char *symbol)
{
    for (size_t i = 0; i < a->variant_count; i++)
        if (strcmp(a->variants[i].symbol, symbol) == 0)
            return (uint32_t)i;
    a->variants = xrealloc(a->variants, (a->variant_count + 1) * sizeof *a->variants);
    a->variants[a->variant_count].symbol = xstrdup(symbol);
    a->variants[a->variant_count].calls = 0;
    return (uint32_t)a->variant_count++;
}

/* ---- one trace ------------------------------------------------------------------------ */

struct trace_api {              /* one api id of the trace being read */
    uint32_t api;               /* index into run->apis */
    uint32_t variant;           /* index into that API's variants */
    uint16_t category;
    bool io;                    /* a file I/O call: its events also go to the I/O analysis */
    uint8_t mem;                /* enum wsl_mem_op: its events also go to the memory replay */
    uint8_t kern;               /* enum wsl_kern_op: its events also go to the kernel analysis */
    uint8_t launch_slot;        /* launches: the API's slot in run->kernels.launch_apis (the rank's own run,
                                   which reports no launch APIs, counts its launches in the same slots) */
    bool host;                  /* a CUDA call the host analysis reads (syncs, copies, submissions, allocations) */
    bool nvtx;                  /* the NVTX analysis reads all its events, not only those inside ranges */
    bool sampled;               /* a file call whose timing was sampled (WSL_API_IO_SAMPLED) */
    bool fold;                  /* folded file calls (WSL_CAT_IO_FOLD): taken as the calls it holds */
    bool shim_made;             /* an event the shim made, not a call of the program's (wslshim_kernel_name) */
    uint8_t phase;              /* enum wsl_phase_op: its events also go to the phase analysis */
    bool launch_route;          /* a kernel launch API read by the kernel, host and phase analyses and by no
                                   other (take_event's straight path) */
    uint32_t solo_api, solo_variant; /* the same in the rank's own run, while it is read (wsl_run_read_trace) */
    uint64_t errors;
    uint64_t events;            /* events, set at the end (ticks.count + untimed_events before expansion) */
    uint64_t untimed;           /* sampled: calls not timed */
    uint64_t untimed_events;    /* and the events that stand for them */
    struct wsl_hist ticks;      /* durations in this trace's ticks (sampled: of the timed calls) */
};

struct trace_state {
    struct trace_api *by_id[WSL_MAX_API_IDS];
    uint32_t io_weight;         /* calls a timed sampled file call stands for (PROCESS io_timing) */
    uint32_t close_id;          /* the sampled close's id (a fold event's close), 0: none */
    bool have_events;
    uint64_t max_event_end;     /* ticks */
    bool have_end;
    uint64_t end_ticks;
    uint64_t max_clock_ns;      /* latest CLOCK sample, monotonic ns */
    uint64_t dropped_in_chunks, dropped_at_end;
    bool windowed;              /* only events in [window_t0, window_t1] (ticks) are taken */
    uint64_t window_t0, window_t1;
    struct wsl_io_trace *io;    /* from the PROCESS chunk on */
    /* A rank's trace read into its own run as well (wsl_run_read_trace): every analysis's state
     * serves both runs; the file I/O state, which writes into the run's tables, through a handle
     * for the rank's run (wsl_io_trace_also). */
    struct wsl_run *solo;
    struct wsl_io_trace *io_solo;
    struct wsl_mem_trace *mem;
    struct wsl_kern_trace *kern;
    struct wsl_nvtx_trace *nvtx;
    struct wsl_host_trace *host;
    struct wsl_phase_trace *phase;
    /* The NVTX step's figures counted on this reading (wsl_nvtx_track_batch): set on a run that
     * reports them, from the API table that names NVTX pushes on (one after the first events: not). */
    bool track, tracking, track_push;
    struct wsl_nvtx_track_before seen; /* events so far (have_events), their latest start, GPU kernels' launch */
    uint16_t track_cat[WSL_MAX_API_IDS];
    bool track_sampled[WSL_MAX_API_IDS];
};

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

static void take_api_table(struct wsl_run *run, struct trace_state *t, const struct wsl_item *it)
{
    for (uint32_t i = 0; i < it->api_table.count; i++) {
        const struct wsl_api_entry *e = &it->api_table.entries[i];
        struct trace_api *ta = xcalloc(1, sizeof *ta);
        ta->api = api_find_or_add(run, e->base, e->category);
        ta->variant = variant_find_or_add(&run->apis[ta->api], e->symbol);
        if (t->solo) {
            ta->solo_api = api_find_or_add(t->solo, e->base, e->category);
            ta->solo_variant = variant_find_or_add(&t->solo->apis[ta->solo_api], e->symbol);
        }
        ta->category = e->category;
        ta->io = wsl_is_io_category(e->category);
        ta->mem = (uint8_t)wsl_mem_op_of(e->category, e->base);
        ta->kern = (uint8_t)wsl_kern_op_of(e->category, e->base);
        ta->host = !ta->io && e->category != WSL_CAT_OTHER && e->category != WSL_CAT_INIT &&
                   e->category != WSL_CAT_FUNC_NAME && e->category < WSL_CAT_GPU_KERNEL;
        ta->nvtx = wsl_nvtx_wants_always(e->category);
        ta->sampled = ta->io && (e->flags & WSL_API_IO_SAMPLED);
        ta->fold = e->category == WSL_CAT_IO_FOLD;
        ta->shim_made = !strcmp(e->base, "wslshim_kernel_name");
        ta->phase = (uint8_t)wsl_phase_op_of(e->category, e->base);
        if (ta->sampled && e->category == WSL_CAT_IO_CLOSE && !strcmp(e->symbol, "close"))
            t->close_id = e->id;
        ta->launch_route = e->category == WSL_CAT_LAUNCH && !ta->io && !ta->mem && ta->kern == WSL_KERN_LAUNCH &&
                           !ta->nvtx && ta->host && ta->phase == WSL_PHASE_LAUNCH && !ta->fold && !ta->sampled;
        if (ta->kern == WSL_KERN_LAUNCH) {
            ta->launch_slot = (uint8_t)wsl_kern_launch_slot(&run->kernels, e->base);
            if (t->solo) /* (its names; the counts go by the run's slot: the same where the launch APIs come
                            in the same order, and the rank's run reports none) */
                wsl_kern_launch_slot(&t->solo->kernels, e->base);
        }
        t->by_id[e->id] = ta;   /* the reader refuses an id defined twice */
        t->track_cat[e->id] = e->category;
        t->track_sampled[e->id] = ta->sampled;
        t->track_push |= e->category == WSL_CAT_NVTX_PUSH;
    }
    if (t->track && !t->tracking && t->track_push) {
        /* from the table that names NVTX pushes on (events before it were not seen by the tracking:
         * then the step's figures are read again, as before) */
        t->tracking = !t->have_events;
        t->track = false;
        if (t->tracking)
            wsl_nvtx_trace_track(t->nvtx, &run->nvtx.track_pool);
    }
}

/* One event (or one slot of a fold: `calls` untimed calls) to every analysis that reads it. */
static inline __attribute__((always_inline)) void take_event(struct trace_state *t, struct wsl_nvtx_thread *nth,
                                                             struct trace_api *ta, const struct wsl_event *ev,
                                                             uint64_t calls)
{
    uint64_t dur = ev->t_end - ev->t_start, ticks = dur;
    if (ta->launch_route) { /* most events: what the general path below does for them, its tests decided */
        wsl_hist_add(&ta->ticks, dur);
        ta->errors += ev->result != 0;
        wsl_kern_trace_event(t->kern, WSL_KERN_LAUNCH, ta->launch_slot, ev);
        wsl_nvtx_trace_other(nth, WSL_CAT_LAUNCH, ev, 1, dur);
        wsl_host_trace_event(t->host, WSL_CAT_LAUNCH, ev);
        wsl_phase_trace_event(t->phase, WSL_PHASE_LAUNCH, ev);
        return;
    }
    if (__builtin_expect(ta->sampled, 0)) {
        if (!calls)
            calls = wsl_event_calls(ta->category, true, ev);
        ticks = wsl_event_ticks(true, t->io_weight, ev);
        if (dur)
            wsl_hist_add(&ta->ticks, dur);
        else
            ta->untimed += calls, ta->untimed_events++;
        ta->errors += ev->result != 0 ? calls : 0;
    } else {
        calls = 1;
        wsl_hist_add(&ta->ticks, dur);
        ta->errors += ev->result != 0;
        if (__builtin_expect(ta->category == WSL_CAT_GPU_KERNEL, 0)) { /* (the NVTX step figures' tracking) */
            if (!t->seen.gpu || ev->a[1] > t->seen.gpu_launch_max)
                t->seen.gpu_launch_max = ev->a[1];
            t->seen.gpu = true;
        }
    }
    if (ta->io && t->io) {
        wsl_io_trace_event(t->io, ta->category, ev, calls, ticks);
        if (__builtin_expect(t->io_solo != NULL, 0))
            wsl_io_trace_event(t->io_solo, ta->category, ev, calls, ticks);
    } else if (ta->mem)
        wsl_mem_trace_event(t->mem, (enum wsl_mem_op)ta->mem, ev);
    else if (ta->kern)
        wsl_kern_trace_event(t->kern, (enum wsl_kern_op)ta->kern, ta->launch_slot, ev);
    if (ta->nvtx)
        wsl_nvtx_trace_event(t->nvtx, nth, ta->category, ev, calls, ticks);
    else
        wsl_nvtx_trace_other(nth, ta->category, ev, calls, ticks);
    if (ta->host)
        wsl_host_trace_event(t->host, ta->category, ev);
    if (ta->phase)
        wsl_phase_trace_event(t->phase, (enum wsl_phase_op)ta->phase, ev);
}

static unsigned fold_category(void *ctx, unsigned api)
{
    const struct trace_state *t = ctx;
    const struct trace_api *ta = api < WSL_MAX_API_IDS ? t->by_id[api] : NULL;
    /* only sampled file calls fold; anything else in a slot is not taken */
    return ta && ta->sampled ? ta->category : WSL_CAT_COUNT;
}

/* A fold event: the calls it holds, each slot as the untimed events it stands for. */
static __attribute__((noinline)) void take_fold(struct trace_state *t, struct wsl_nvtx_thread *nth,
                                                const struct wsl_event *ev)
{
    struct wsl_fold_call c[WSL_FOLD_SLOTS_PER_EVENT + 1];
    unsigned n = wsl_fold_calls(ev, t->close_id, fold_category, t, c);
    for (unsigned i = 0; i < n; i++)
        take_event(t, nth, t->by_id[c[i].ev.api], &c[i].ev, c[i].calls);
}

/* An event outside the window of a windowed reading: only what later events need to be read
 * right (memory the copies use, kernels' names, stream capture, NVTX ranges), not counted. */
static void take_state_event(struct trace_state *t, struct wsl_nvtx_thread *nth, struct trace_api *ta,
                             const struct wsl_event *ev)
{
    if (ta->fold || ta->io)
        return;
    if (ta->mem)
        wsl_mem_trace_event(t->mem, (enum wsl_mem_op)ta->mem, ev);
    else if (ta->kern == WSL_KERN_FUNC_NAME || ta->kern == WSL_KERN_CAPTURE_BEGIN || ta->kern == WSL_KERN_CAPTURE_END)
        wsl_kern_trace_event(t->kern, (enum wsl_kern_op)ta->kern, ta->launch_slot, ev);
    if (wsl_is_nvtx_category(ta->category))
        wsl_nvtx_trace_event(t->nvtx, nth, ta->category, ev, 1, ev->t_end - ev->t_start);
    switch (ta->category) { /* the host analysis's memory map: which copies are pinned */
    case WSL_CAT_ALLOC: case WSL_CAT_ALLOC_MANAGED: case WSL_CAT_FREE: case WSL_CAT_HOST_ALLOC:
    case WSL_CAT_HOST_FREE: case WSL_CAT_HOST_REGISTER: case WSL_CAT_HOST_UNREGISTER:
        wsl_host_trace_event(t->host, ta->category, ev);
        break;
    default:
        break;
    }
}

/* The hot loop: every event of the trace passes here. */
static void take_events(struct trace_state *t, uint32_t tid, uint64_t dropped, const struct wsl_event *ev, uint32_t n)
{
    uint64_t max_end = t->max_event_end;
    struct wsl_nvtx_thread *nth = wsl_nvtx_thread(t->nvtx, tid, dropped);
    wsl_host_trace_thread(t->host, tid, wsl_nvtx_innermost(nth)); /* waits go to the thread's innermost range */
    wsl_phase_trace_thread(t->phase, tid);
    if (__builtin_expect(t->windowed, 0)) { /* only the events of the window (a second, steady-state reading) */
        for (uint32_t i = 0; i < n; i++) {
            struct trace_api *ta = t->by_id[ev[i].api];
            if (ev[i].t_end < t->window_t0 || ev[i].t_start > t->window_t1) {
                take_state_event(t, nth, ta, &ev[i]);
                continue;
            }
            if (ta->fold)
                take_fold(t, nth, &ev[i]);
            else
                take_event(t, nth, ta, &ev[i], 0);
            if (ev[i].t_end > max_end)
                max_end = ev[i].t_end;
        }
        t->max_event_end = max_end;
        t->have_events |= n > 0;
        return;
    }
    struct wsl_nvtx_track_before before = t->seen;
    uint64_t max_start = t->seen.start_max;
    for (uint32_t i = 0; i < n; i++) {
        struct trace_api *ta = t->by_id[ev[i].api]; /* the reader checked the id is in the table */
        if (__builtin_expect(ta->fold, 0))
            take_fold(t, nth, &ev[i]);
        else
            take_event(t, nth, ta, &ev[i], 0);
        if (ev[i].t_end > max_end)
            max_end = ev[i].t_end;
        if (ev[i].t_start > max_start)
            max_start = ev[i].t_start;
    }
    t->seen.start_max = max_start;
    t->seen.events |= n > 0;
    if (t->tracking)
        wsl_nvtx_track_batch(t->nvtx, nth, ev, n, t->track_cat, t->track_sampled, t->io_weight, &before);
    t->max_event_end = max_end;
    t->have_events |= n > 0;
}

static void free_process(struct wsl_process *p)
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
    if (wsl_nvtx_trace_queued(t->nvtx))
        wsl_nvtx_trace_less_overhead(t->nvtx, &ps[0]->gpu_estimate);
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
    case WSL_CHUNK_END:
        pp->paths_dropped = it->end.paths_dropped;
        pp->threads = it->end.threads;
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
        if (!t->io)
            t->io = wsl_io_trace_begin(&run->io, wsl);
        if (t->solo && !t->io_solo) /* the rank's own run: its file I/O counted by t->io (wsl_io_trace_also) */
            t->io_solo = wsl_io_trace_also(t->io, &t->solo->io, wsl);
        break;
    }
    case WSL_CHUNK_API_TABLE:
        take_api_table(run, t, it);
        break;
    case WSL_CHUNK_CLOCK:
        if (it->clock.mono_ns > t->max_clock_ns)
            t->max_clock_ns = it->clock.mono_ns;
        break;
    case WSL_CHUNK_EVENTS:
        take_events(t, it->events.tid, it->events.dropped, it->events.events, it->events.count);
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
    run->procs = xrealloc(run->procs, (run->proc_count + 1) * sizeof *run->procs);
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
        free_process(&p);
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
    free_process(solo_p);
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

int wsl_run_read_trace(struct wsl_run *run, const char *path, bool *usable, char *err, size_t errlen)
{
    *usable = false;
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
    if (!run->solo && !run->windowed) {
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
        if (t->solo && it.type == WSL_CHUNK_EVENTS && !t->have_events && !may_be_rank(&solo_p))
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
    bool with_solo = solo && res != WSL_READ_ERROR && main_sink.have_process && rank_run_kept(t, &solo_p);
    if (solo && !with_solo) {
        drop_solo(t, &solo_p);
        solo = NULL;
    }
    int rc = sink_end(&main_sink, r, res, path, with_solo ? &solo_p : NULL, err, errlen);
    if (with_solo)
        run->procs[run->proc_count - 1].rank_solo = solo;
    wsl_reader_close(r);
    return rc;
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
        free_process(&run->procs[i]);
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
