/*
 * A trace's API table and events, for the run model (analysis.h): each API id of the trace found or
 * added among the run's APIs and marked with the analyses that read its events; each event (a
 * folded one as the calls it holds) handed to those analyses, in the trace's own ticks. The hot
 * loop of the analyzer. Called from analysis_read.c.
 */
#include "analysis_internal.h"

#include <string.h>

#include "util.h"

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

void wsl_take_api_table(struct wsl_run *run, struct trace_state *t, const struct wsl_item *it)
{
    t->bmi2 = wsl_reader_bmi2_path(); /* (before the trace's events, as the reader asks it) */
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
                   e->category != WSL_CAT_FUNC_NAME && e->category < WSL_CAT_GPU_KERNEL &&
                   e->category != WSL_CAT_STREAM_WAIT && e->category != WSL_CAT_EVENT_RECORD; /* it ignores both */
        ta->nvtx = wsl_nvtx_wants_always(e->category);
        ta->sampled = ta->io && (e->flags & WSL_API_IO_SAMPLED);
        ta->fold = e->category == WSL_CAT_IO_FOLD;
        ta->shim_made = !strcmp(e->base, "wslshim_kernel_name");
        ta->phase = (uint8_t)wsl_phase_op_of(e->category, e->base);
        if (ta->sampled && e->category == WSL_CAT_IO_CLOSE && !strcmp(e->symbol, "close"))
            t->close_id = e->id;
        ta->launch_route = e->category == WSL_CAT_LAUNCH && !ta->io && !ta->mem && ta->kern == WSL_KERN_LAUNCH &&
                           !ta->nvtx && ta->host && ta->phase == WSL_PHASE_LAUNCH && !ta->fold && !ta->sampled;
        ta->gpu_route = e->category == WSL_CAT_GPU_KERNEL && !ta->io && !ta->mem && ta->kern == WSL_KERN_GPU_TIME &&
                        ta->nvtx && !ta->host && ta->phase == WSL_PHASE_NONE && !ta->fold && !ta->sampled;
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
        if (__builtin_expect(ev->result == 0, 1)) { /* one test of the result for the analyses below */
            wsl_kern_trace_launch_ok(t->kern, ta->launch_slot, ev);
            wsl_nvtx_trace_other(nth, WSL_CAT_LAUNCH, ev, 1, dur);
            wsl_host_trace_launch_ok(t->host, ev);
            wsl_phase_trace_launch_ok(t->phase, ev);
        } else {
            ta->errors++;
            wsl_kern_trace_launch(t->kern, ta->launch_slot, ev);
            wsl_nvtx_trace_other(nth, WSL_CAT_LAUNCH, ev, 1, dur);
            wsl_host_trace_event_slow(t->host, WSL_CAT_LAUNCH, ev);
            wsl_phase_trace_event_slow(t->phase, WSL_PHASE_LAUNCH, ev);
        }
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
            if (ta->gpu_route) { /* what the steps below do for it (inside this branch: no test for others) */
                wsl_kern_trace_gpu(t->kern, ev);
                wsl_nvtx_trace_gpu(t->nvtx, ev);
                return;
            }
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

/* A run of launches without the reader's ops (EVENTS chunks; take_launch_run_ops with them): ev[0]
 * and the events after it, up to n and at most WSL_READER_BATCH, whose API takes the launch route
 * (launch_route) and whose result is 0; returns how many. Each analysis
 * that reads a launch takes the run in one call, as it would take them one by one (take_event's
 * launch route): the API's histogram here, event by event; the kernel table's and the phases'
 * common cases in their own loops with their state in registers; the NVTX and host counts added
 * once; the latest end found once for the three that keep it. */
static __attribute__((noinline)) uint32_t take_launch_run(struct trace_state *t, struct wsl_nvtx_thread *nth,
                                                          const struct wsl_event *ev, uint32_t n, uint64_t *max_end,
                                                          uint64_t *max_start)
{
    uint8_t slots[WSL_READER_BATCH]; /* each launch's slot among the launch APIs */
    uint64_t end = 0, start = *max_start, sum = 0;
    if (n > WSL_READER_BATCH)
        n = WSL_READER_BATCH;
    uint32_t m = 0;
    do {
        struct trace_api *ta = t->by_id[ev[m].api];
        if (!ta->launch_route || ev[m].result != 0)
            break;
        const uint64_t v = ev[m].t_end - ev[m].t_start;
        wsl_hist_add(&ta->ticks, v);
        slots[m] = ta->launch_slot;
        sum += v;
        end = ev[m].t_end > end ? ev[m].t_end : end;
        start = ev[m].t_start > start ? ev[m].t_start : start;
    } while (++m < n);
    if (end > *max_end)
        *max_end = end;
    *max_start = start;
    wsl_kern_trace_launch_run_ok(t->kern, slots, ev, m, end);
    wsl_nvtx_trace_launch_run_ok(nth, m, sum); /* (the durations' sum modulo 2^64, as added one by one) */
    wsl_host_trace_launch_run_ok(t->host, ev, m);
    wsl_phase_trace_launch_run_ok(t->phase, ev, m, end);
    return m;
}

/* What take_launch_run_ops sums over its launches. */
struct launch_sums {
    uint64_t end, start, sum; /* the latest end and start (start: from the one before), the durations' sum */
    uint64_t kern_slow;       /* launches the kernel table took by wsl_kern_trace_launch_op */
};

/* take_launch_run_ops' loop from ev[i] up to stop, while each launch's op has its counter and
 * histogram (op_counter, op_hist) and no start comes before the last launch's of the thread's phase
 * sequence q: each to the API's histogram (the durations' sum too where sums), the kernel table's
 * counter and q (as wsl_phase_trace_launch_ok takes it: kept where store, else counted only; the
 * caller bounds stop by q's room). q's last launch is past the kernel table's fast_after (the
 * caller's test), and the starts rise: each launch is. Returns where it stopped, at the first
 * launch it cannot take (or stop). No calls in the loop but the histogram's rare ones. */
static inline __attribute__((always_inline)) uint32_t launch_run_fused(struct trace_state *t,
                                                                       const struct wsl_event *ev,
                                                                       const uint8_t *ops, uint32_t i, uint32_t stop,
                                                                       struct wsl_phase_seq *q, const bool store,
                                                                       const bool sums, struct launch_sums *s)
{
    const uintptr_t rows = wsl_kern_trace_op_view(t->kern).rows;
    uint64_t last = q->last_ticks, end = s->end, sum = s->sum;
    uint64_t *id = NULL, *tick = NULL;
    if (store) {
        id = q->ids + q->n;
        tick = q->ticks + q->n;
    }
    const uint32_t from = i;
    const struct wsl_event *e = &ev[i], *const e_stop = &ev[stop];
    const uint8_t *op_p = &ops[i];
    for (; e < e_stop; e++, op_p++) {
        const unsigned op = *op_p;
        const uint64_t at = t->op_counter[op], ts = e->t_start, te = e->t_end;
        if (__builtin_expect(at == 0 || ts < last, 0))
            break;
        const uint64_t v = te - ts;
        wsl_hist_add(t->op_hist[op], v);
        if (sums)
            sum += v;
        end = te > end ? te : end;
        (*(uint64_t *)(rows + at))++;
        const uint64_t g = ts - last;
        const unsigned b = wsl_phase_gap_bucket(g);
        q->gap_n[b]++;
        q->gap_sum[b] += g;
        last = ts;
        if (store) {
            *id++ = e->a[0];
            *tick++ = ts;
        }
    }
    i = (uint32_t)(e - ev);
    if (i > from) {
        struct wsl_phase_trace_fast *f = (struct wsl_phase_trace_fast *)(void *)t->phase;
        q->last_ticks = last;
        if (store)
            q->n += i - from;
        q->total += i - from;
        f->launches += i - from;
        s->start = last > s->start ? last : s->start; /* (the stretch's latest start) */
        s->end = end;
        s->sum = sum;
    }
    return i;
}

/* take_launch_run with the reader's ops: its three loops in one (launch_run_fused), each launch's
 * times loaded once. A launch the loop cannot take (its op's first in the chunk, a literal, one
 * before the kernel table's fast_after, a break in the thread's launches, the sequence's room)
 * goes to each analysis alone, as take_event's launch route takes it (the kernel table by its
 * op's counter where it has one and the launch is past fast_after, as at the first launch after a
 * read or a wait, else by wsl_kern_trace_launch_op, which gives its op a counter; the phases by
 * wsl_phase_trace_launch_after_break there), then the loop goes on. Each analysis
 * sees the launches in order, as before, and their states are apart: the outputs are the same. */
static inline __attribute__((always_inline)) uint32_t launch_run_ops_body(struct trace_state *t,
                                                                          struct wsl_nvtx_thread *nth,
                                                                          const struct wsl_event *ev,
                                                                          const uint8_t *ops, uint32_t n,
                                                                          uint64_t *max_end, uint64_t *max_start)
{
    struct wsl_phase_trace_fast *f = (struct wsl_phase_trace_fast *)(void *)t->phase;
    struct launch_sums s = {0, *max_start, 0, 0};
    if (n > WSL_READER_BATCH)
        n = WSL_READER_BATCH;
    /* the durations' sum, for the NVTX counts of the thread's innermost range where one is open (no
     * range opens or closes in a run) */
    const bool sums = ((struct wsl_nvtx_thread_head *)(void *)nth)->self != NULL;
    uint32_t m = 0;
    for (;;) {
        struct wsl_phase_seq *q = f->cur;
        /* wsl_phase_trace_launch_ok's test, n < room, and its keeping, n < cap */
        const size_t lim = q->room < q->cap ? q->room : q->cap;
        if (q->last_ticks > wsl_kern_trace_op_view(t->kern).fast_after) {
            if (q->n < lim) {
                const uint32_t stop = lim - q->n < n - m ? m + (uint32_t)(lim - q->n) : n;
                m = sums ? launch_run_fused(t, ev, ops, m, stop, q, true, true, &s)
                         : launch_run_fused(t, ev, ops, m, stop, q, true, false, &s);
            } else if (q->room == SIZE_MAX) { /* (n at the cap WSL_PHASE_MAX_SEQ: counted only) */
                m = sums ? launch_run_fused(t, ev, ops, m, n, q, false, true, &s)
                         : launch_run_fused(t, ev, ops, m, n, q, false, false, &s);
            }
        }
        if (m >= n)
            break;
        const struct wsl_event *e = &ev[m];
        struct trace_api *ta = t->by_id[e->api];
        if (!ta->launch_route || e->result != 0)
            break;
        /* ev[m]: a launch the loop did not take */
        const uint64_t v = e->t_end - e->t_start;
        wsl_hist_add(&ta->ticks, v);
        s.sum += v;
        s.end = e->t_end > s.end ? e->t_end : s.end;
        s.start = e->t_start > s.start ? e->t_start : s.start;
        const unsigned op = ops[m];
        const uint64_t known = t->op_counter[op];
        struct wsl_kern_op_view kv;
        if (known && e->t_start > (kv = wsl_kern_trace_op_view(t->kern)).fast_after) {
            /* the loop stopped at it for the phases' sake (the first launch after a read or a
             * wait): the kernel table by its op's counter, as the loop adds (counted with the
             * loop's launches) */
            (*(uint64_t *)(kv.rows + known))++;
            wsl_phase_trace_launch_after_break(t->phase, e);
        } else {
            wsl_kern_trace_launch_op(t->kern, ta->launch_slot, op, e);
            s.kern_slow++;
            wsl_phase_trace_launch_ok(t->phase, e);
            const uint64_t at = wsl_kern_trace_op_counters(t->kern)[op];
            if (op && at && !t->op_counter[op]) {
                t->op_hist[op] = &ta->ticks;
                t->op_counter[op] = at;
                t->op_launch_max = op > t->op_launch_max ? op : t->op_launch_max;
            }
        }
        if (++m >= n)
            break;
    }
    if (s.end > f->last_submit_end) /* (as wsl_phase_trace_launch_run_ok: read at the end alone) */
        f->last_submit_end = s.end;
    wsl_kern_trace_launches_counted(t->kern, m - s.kern_slow, s.end);
    if (s.end > *max_end)
        *max_end = s.end;
    *max_start = s.start;
    wsl_nvtx_trace_launch_run_ok(nth, m, s.sum); /* (the durations' sum modulo 2^64, as added one by one) */
    wsl_host_trace_launch_run_ok(t->host, ev, m);
    return m;
}

static __attribute__((noinline)) uint32_t take_launch_run_ops_generic(struct trace_state *t,
                                                                      struct wsl_nvtx_thread *nth,
                                                                      const struct wsl_event *ev, const uint8_t *ops,
                                                                      uint32_t n, uint64_t *max_end,
                                                                      uint64_t *max_start)
{
    return launch_run_ops_body(t, nth, ev, ops, n, max_end, max_start);
}

/* The same code for CPUs with BMI1 and BMI2, as the reader's batch loop (wsl_reader_bmi2_path): the
 * histogram's and the gap bucket's shifts by a count in a register as shrx, no move to cl. Only
 * integer instructions differ: the same results. */
#if defined(__x86_64__) && defined(__GNUC__)
#define EVENTS_HAVE_BMI2_PATH 1
static __attribute__((noinline, target("bmi,bmi2"))) uint32_t take_launch_run_ops_bmi2(
    struct trace_state *t, struct wsl_nvtx_thread *nth, const struct wsl_event *ev, const uint8_t *ops, uint32_t n,
    uint64_t *max_end, uint64_t *max_start)
{
    return launch_run_ops_body(t, nth, ev, ops, n, max_end, max_start);
}
#endif

static inline uint32_t take_launch_run_ops(struct trace_state *t, struct wsl_nvtx_thread *nth,
                                           const struct wsl_event *ev, const uint8_t *ops, uint32_t n,
                                           uint64_t *max_end, uint64_t *max_start)
{
#ifdef EVENTS_HAVE_BMI2_PATH
    if (t->bmi2)
        return take_launch_run_ops_bmi2(t, nth, ev, ops, n, max_end, max_start);
#endif
    return take_launch_run_ops_generic(t, nth, ev, ops, n, max_end, max_start);
}

/* A run of GPU kernels' events: ev[0] (its API's gpu_route set) and those after it of the same API,
 * up to n; returns how many. What take_event does for each (gpu_route), by analysis: the API's
 * histogram and errors and the NVTX tracking's latest launch here, the kernel table's and the NVTX
 * analysis's in their own loops. */
static __attribute__((noinline)) uint32_t take_gpu_run(struct trace_state *t, struct trace_api *ta,
                                                       const struct wsl_event *ev, uint32_t n, uint64_t *max_end,
                                                       uint64_t *max_start)
{
    const uint16_t api = ev[0].api;
    uint64_t end = 0, start = *max_start, launched = ev[0].a[1], errors = 0;
    uint32_t m = 0;
    do {
        wsl_hist_add(&ta->ticks, ev[m].t_end - ev[m].t_start);
        errors += ev[m].result != 0;
        launched = ev[m].a[1] > launched ? ev[m].a[1] : launched;
        end = ev[m].t_end > end ? ev[m].t_end : end;
        start = ev[m].t_start > start ? ev[m].t_start : start;
    } while (++m < n && ev[m].api == api);
    ta->errors += errors;
    if (!t->seen.gpu || launched > t->seen.gpu_launch_max) /* (the NVTX step figures' tracking) */
        t->seen.gpu_launch_max = launched;
    t->seen.gpu = true;
    if (end > *max_end)
        *max_end = end;
    *max_start = start;
    wsl_kern_trace_gpu_run(t->kern, ev, m, end);
    wsl_nvtx_trace_gpu_run(t->nvtx, ev, m);
    return m;
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
    struct wsl_fold_call c[WSL_FOLD_EVENT_CALLS];
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

bool wsl_take_events_one_by_one;

/* The hot loop: every event of the trace passes here. */
bool wsl_take_events_without_ops;

void wsl_take_events(struct trace_state *t, uint32_t tid, uint64_t dropped, const struct wsl_event *ev, uint32_t n,
                     const uint8_t *ops, bool chunk_start)
{
    if (chunk_start) { /* (the ops of the chunk before name other entries) */
        wsl_kern_trace_chunk(t->kern);
        if (t->op_launch_max) {
            memset(t->op_counter, 0, (t->op_launch_max + 1) * sizeof *t->op_counter);
            t->op_launch_max = 0;
        }
    }
    if (wsl_take_events_without_ops)
        ops = NULL;
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
    const bool runs = !wsl_take_events_one_by_one;
    for (uint32_t i = 0; i < n;) {
        struct trace_api *ta = t->by_id[ev[i].api]; /* the reader checked the id is in the table */
        if (ta->launch_route && ev[i].result == 0 && runs) { /* most events: launches, in runs */
            i += ops ? take_launch_run_ops(t, nth, &ev[i], &ops[i], n - i, &max_end, &max_start)
                     : take_launch_run(t, nth, &ev[i], n - i, &max_end, &max_start);
            continue;
        }
        if (ta->gpu_route && runs) { /* and GPU kernels, in runs */
            i += take_gpu_run(t, ta, &ev[i], n - i, &max_end, &max_start);
            continue;
        }
        if (__builtin_expect(ta->fold, 0))
            take_fold(t, nth, &ev[i]);
        else
            take_event(t, nth, ta, &ev[i], 0);
        if (ev[i].t_end > max_end)
            max_end = ev[i].t_end;
        if (ev[i].t_start > max_start)
            max_start = ev[i].t_start;
        i++;
    }
    t->seen.start_max = max_start;
    t->seen.events |= n > 0;
    if (t->tracking)
        wsl_nvtx_track_batch(t->nvtx, nth, ev, n, t->track_cat, t->track_sampled, t->io_weight, &before);
    t->max_event_end = max_end;
    t->have_events |= n > 0;
}
