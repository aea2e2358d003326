/*
 * NVTX ranges of a run, the step's process-wide figures: see nvtx_analysis.h. What every thread
 * of the process did inside the step's instances (merged into disjoint windows per trace): counted
 * on the first reading, where the trace's calls could be kept as segments between NVTX events
 * (the tracking), else on a reading of the trace of its own or on the steady state's. A trace's
 * reading: nvtx_analysis.c; the run: nvtx_run.c.
 */
#include "nvtx_internal.h"
#include "io_analysis.h"
#include "kernel_analysis.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

#define WSL_NVTX_MAX_SEGS (1u << 20)      /* segments kept per trace; past it, the trace is read again */
#define WSL_NVTX_MAX_TRACK_GPU (1u << 22) /* GPU kernels kept per trace; the same */
#define WSL_NVTX_MAX_GUESSES 4u           /* candidate ranges counted per trace (the most instances) */

static int by_start(const void *a, const void *b)
{
    const struct wsl_nvtx_window *x = a, *y = b;
    return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

/* Is t inside one of the disjoint sorted windows? *at: where the last answer was found (the first
 * window starting after its time), tried first with the next window: a thread's events come in
 * time order. The windows start in increasing order, so that index is the one the search finds. */
static bool in_windows(const struct wsl_nvtx_window *w, size_t n, uint64_t t, size_t *at)
{
    size_t k = *at;
    if ((k == 0 || w[k - 1].t0 <= t) && (k == n || w[k].t0 > t))
        return k > 0 && t <= w[k - 1].t1;
    if (k < n && w[k].t0 <= t && (k + 1 == n || w[k + 1].t0 > t)) {
        *at = k + 1;
        return t <= w[k].t1;
    }
    size_t lo = 0, hi = n; /* the first window starting after t */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (w[mid].t0 <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    *at = lo;
    return lo > 0 && t <= w[lo - 1].t1;
}

struct wsl_nvtx_window_count *wsl_nvtx_window_pending(struct wsl_nvtx *n, const char *path)
{
    for (size_t i = 0; i < n->pending_count; i++)
        if (!n->pending[i].counted && !n->pending[i].counting && !strcmp(n->pending[i].path, path))
            return &n->pending[i];
    return NULL;
}

void wsl_nvtx_window_begin(struct wsl_nvtx_window_count *wc)
{
    memset(&wc->c, 0, sizeof wc->c);
    wc->counting = true;
    wc->at_gpu = wc->at_call = 0;
    wc->weight = 1;
    wc->cat = xmalloc(WSL_MAX_API_IDS * sizeof *wc->cat);
    memset(wc->cat, 0xff, WSL_MAX_API_IDS * sizeof *wc->cat);
    wc->sampled = xcalloc(WSL_MAX_API_IDS, sizeof *wc->sampled);
}

/* in_windows with its last answer's bounds kept: a time in [lo, hi) has the answer it had (inside
 * the window before, up to end, if there is one); any other goes to in_windows. */
struct window_cursor {
    size_t at;
    uint64_t lo, hi, end;
    bool after_one;             /* at > 0: a window starts at or before lo */
};

static inline void cursor_set(struct window_cursor *cu, const struct wsl_nvtx_window *w, size_t n, size_t at)
{
    cu->at = at;
    cu->after_one = at > 0;
    cu->lo = at ? w[at - 1].t0 : 0;
    cu->end = at ? w[at - 1].t1 : 0;
    cu->hi = at < n ? w[at].t0 : UINT64_MAX;
}

static inline bool cursor_in(struct window_cursor *cu, const struct wsl_nvtx_window *w, size_t n, uint64_t t)
{
    if (__builtin_expect(t >= cu->lo && t < cu->hi, 1))
        return cu->after_one && t <= cu->end;
    size_t at = cu->at;
    bool in = in_windows(w, n, t, &at);
    cursor_set(cu, w, n, at);
    return in;
}

/* ---- the step's figures on the first reading ----------------------------------------- */

void wsl_nvtx_trace_track(struct wsl_nvtx_trace *t, struct wsl_nvtx_track_pool *pool)
{
    t->track = true;
    t->pool = pool; /* its arrays, lent until the close */
    t->segs = pool->segs;
    t->seg_cap = pool->seg_cap;
    t->gpus = pool->gpus;
    t->gpu_cap = pool->gpu_cap;
    pool->segs = pool->gpus = NULL;
    pool->seg_cap = pool->gpu_cap = 0;
}

/* The arrays back to the pool (freed where there is none). */
void wsl_nvtx_track_release(struct wsl_nvtx_trace *t)
{
    if (t->pool) {
        t->pool->segs = t->segs;
        t->pool->seg_cap = t->seg_cap;
        t->pool->gpus = t->gpus;
        t->pool->gpu_cap = t->gpu_cap;
        t->pool = NULL;
    } else {
        free(t->segs);
        free(t->gpus);
    }
    t->segs = NULL;
    t->gpus = NULL;
    t->seg_count = t->seg_cap = t->gpu_count = t->gpu_cap = 0;
}

static void track_fail(struct wsl_nvtx_trace *t)
{
    t->track_failed = true;
    wsl_nvtx_track_release(t);
}

void wsl_nvtx_track_batch(struct wsl_nvtx_trace *t, struct wsl_nvtx_thread *th, const struct wsl_event *ev,
                          uint32_t n, const uint16_t *cat, const bool *sampled, uint32_t weight,
                          const struct wsl_nvtx_track_before *before)
{
    if (!t->track_entered) {
        if (!t->pushes) /* (the batch was taken: a push in it is counted) */
            return;
        /* the batch with the trace's first push: what came before it is known by its latest times */
        t->track_entered = true;
        t->untracked_calls = before->events;
        t->untracked_call_max = before->start_max;
        t->untracked_gpu = before->gpu;
        t->untracked_gpu_max = before->gpu_launch_max;
    }
    for (uint32_t i = 0; i < n && !t->track_failed; i++) {
        const struct wsl_event *e = &ev[i];
        unsigned k = cat[e->api];
        if (k == 0xffff)
            continue;
        if (wsl_is_nvtx_category(k)) { /* a segment ends at each of the thread's NVTX events */
            t->tracking |= k == WSL_CAT_NVTX_PUSH;
            th->seg = NONE;
            continue;
        }
        if (k == WSL_CAT_GPU_KERNEL) {
            if (!t->tracking) {
                if (!t->untracked_gpu || e->a[1] > t->untracked_gpu_max)
                    t->untracked_gpu_max = e->a[1];
                t->untracked_gpu = true;
                continue;
            }
            if (t->gpu_count == t->gpu_cap) {
                if (t->gpu_cap >= WSL_NVTX_MAX_TRACK_GPU) {
                    track_fail(t);
                    break;
                }
                t->gpu_cap = t->gpu_cap ? 2 * t->gpu_cap : 1024;
                t->gpus = xrealloc(t->gpus, t->gpu_cap * sizeof *t->gpus);
            }
            /* this kernel and the GPU kernels after it, as far as the room goes (most batches of a
             * thread that writes GPU kernels hold nothing else): nothing but the kernels changes */
            struct track_gpu *g = &t->gpus[t->gpu_count];
            const struct track_gpu *g_end = t->gpus + t->gpu_cap;
            do {
                *g++ = (struct track_gpu){ev[i].a[1], ev[i].t_end >= ev[i].t_start ? ev[i].t_end - ev[i].t_start : 0};
            } while (++i < n && g < g_end && cat[ev[i].api] == WSL_CAT_GPU_KERNEL);
            t->gpu_count = (size_t)(g - t->gpus);
            i--; /* (the loop's i++) */
            continue;
        }
        uint64_t ts = e->t_start;
        if (!t->tracking) {
            if (!t->untracked_calls || ts > t->untracked_call_max)
                t->untracked_call_max = ts;
            t->untracked_calls = true;
            continue;
        }
        struct track_seg *sg;
        if (th->seg == NONE) {
            if (t->seg_count == t->seg_cap) {
                if (t->seg_cap >= WSL_NVTX_MAX_SEGS) {
                    track_fail(t);
                    break;
                }
                t->seg_cap = t->seg_cap ? 2 * t->seg_cap : 256;
                t->segs = xrealloc(t->segs, t->seg_cap * sizeof *t->segs);
            }
            th->seg = (uint32_t)t->seg_count++;
            sg = &t->segs[th->seg];
            memset(&sg->c, 0, sizeof sg->c);
            sg->lo = sg->hi = ts;
        } else {
            sg = &t->segs[th->seg];
            if (ts < sg->lo)
                sg->lo = ts;
            if (ts > sg->hi)
                sg->hi = ts;
        }
        if (__builtin_expect(!sampled[e->api], 1)) /* (one call, its duration) */
            wsl_nvtx_attribute(&sg->c, k, e, 1, e->t_end >= e->t_start ? e->t_end - e->t_start : 0);
        else
            wsl_nvtx_attribute(&sg->c, k, e, wsl_event_calls(k, true, e), wsl_event_ticks(true, weight, e));
        if (k == WSL_CAT_LAUNCH) {
            /* the launches after it go to the same segment (none is sampled: file calls alone are),
             * each as wsl_nvtx_attribute counts a launch; integer sums, added once */
            uint64_t lo = sg->lo, hi = sg->hi, calls = 0, ns = 0, ok = 0;
            while (i + 1 < n && cat[ev[i + 1].api] == WSL_CAT_LAUNCH) {
                const struct wsl_event *l = &ev[++i];
                lo = l->t_start < lo ? l->t_start : lo;
                hi = l->t_start > hi ? l->t_start : hi;
                calls++;
                ns += l->t_end >= l->t_start ? l->t_end - l->t_start : 0;
                ok += l->result == 0;
            }
            sg->lo = lo;
            sg->hi = hi;
            sg->c.api_calls += calls;
            sg->c.api_ns += ns;
            sg->c.launches += ok;
        }
    }
}

/* The instances of local range r merged into disjoint windows, as step_process_figures merges
 * them; returns how many (w: m entries allocated). */
static size_t track_windows(const struct wsl_nvtx_trace *t, uint32_t r, size_t m, struct wsl_nvtx_window *w)
{
    size_t k = 0;
    for (size_t i = 0; i < t->top_count; i++)
        if (t->tops[i].range == r)
            w[k++] = t->tops[i];
    size_t k0 = 1;
    while (k0 < m && w[k0 - 1].t0 < w[k0].t0)
        k0++;
    if (k0 < m)
        qsort(w, m, sizeof *w, by_start);
    size_t u = 0;
    for (size_t j = 1; j < m; j++) {
        if (w[j].t0 <= w[u].t1) {
            if (w[j].t1 > w[u].t1)
                w[u].t1 = w[j].t1;
        } else {
            w[++u] = w[j];
        }
    }
    return u + 1;
}

/* At the close: the counts inside each candidate range's windows (the ranges with the most
 * top-level instances, at least 2 in all), where no segment straddles a window's edge. */
void wsl_nvtx_track_close(struct wsl_nvtx_trace *t)
{
    bool usable = t->track && !t->track_failed && !t->tops_capped && t->top_count;
    if (usable) {
        size_t *tops_of = xcalloc(t->range_count + 1, sizeof *tops_of);
        for (size_t i = 0; i < t->top_count; i++)
            tops_of[t->tops[i].range]++;
        struct wsl_nvtx_window *w = xmalloc(t->top_count * sizeof *w);
        t->guess = xmalloc(WSL_NVTX_MAX_GUESSES * sizeof *t->guess);
        for (unsigned g = 0; g < WSL_NVTX_MAX_GUESSES; g++) {
            size_t best = t->range_count;
            for (size_t r = 0; r < t->range_count; r++)
                if (tops_of[r] && t->ranges[r].count >= 2 && (best == t->range_count || tops_of[r] > tops_of[best]))
                    best = r;
            if (best == t->range_count)
                break;
            size_t m = tops_of[best];
            tops_of[best] = 0;
            size_t nw = track_windows(t, (uint32_t)best, m, w);
            bool ok = !(t->untracked_calls && t->untracked_call_max >= w[0].t0) &&
                      !(t->untracked_gpu && t->untracked_gpu_max >= w[0].t0);
            struct wsl_nvtx_counts c;
            memset(&c, 0, sizeof c);
            size_t at = 0;
            for (size_t i = 0; i < t->seg_count && ok; i++) {
                const struct track_seg *sg = &t->segs[i];
                if (in_windows(w, nw, sg->lo, &at)) {
                    if (sg->hi <= w[at - 1].t1)
                        wsl_nvtx_counts_add(&c, &sg->c);
                    else
                        ok = false;
                } else if (at < nw && sg->hi >= w[at].t0) {
                    ok = false;
                }
            }
            struct window_cursor cu;
            cursor_set(&cu, w, nw, 0);
            uint64_t kernels = 0, kernel_ns = 0; /* (in registers: c's address is taken above) */
            for (size_t i = 0; i < t->gpu_count && ok; i++)
                if (cursor_in(&cu, w, nw, t->gpus[i].launch)) {
                    kernels++;
                    kernel_ns += t->gpus[i].ns;
                }
            c.gpu_kernels += kernels;
            c.gpu_ns += kernel_ns;
            if (ok) {
                t->guess[t->guess_count].range = (uint32_t)best;
                t->guess[t->guess_count++].c = c;
            }
        }
        free(w);
        free(tops_of);
    }
    wsl_nvtx_track_release(t);
}

/* One item of the trace: what its threads did inside the windows, in ticks. */
void wsl_nvtx_window_item(struct wsl_nvtx_window_count *wc, const struct wsl_item *it)
{
    if (it->type == WSL_CHUNK_PROCESS)
        wc->weight = wsl_io_weight(&it->process.info);
    if (it->type == WSL_CHUNK_API_TABLE) {
        for (uint32_t i = 0; i < it->api_table.count; i++) {
            const struct wsl_api_entry *e = &it->api_table.entries[i];
            wc->cat[e->id] = e->category;
            wc->sampled[e->id] = wsl_is_io_category(e->category) && (e->flags & WSL_API_IO_SAMPLED);
        }
        return;
    }
    if (it->type != WSL_CHUNK_EVENTS)
        return;
    const struct wsl_nvtx_window *w = wc->w;
    size_t n = wc->n;
    struct wsl_nvtx_counts *c = &wc->c;
    struct window_cursor gpu, call;
    cursor_set(&gpu, w, n, wc->at_gpu);
    cursor_set(&call, w, n, wc->at_call);
    for (uint32_t i = 0; i < it->events.count; i++) {
        const struct wsl_event *ev = &it->events.events[i];
        unsigned k = wc->cat[ev->api];
        if (k == 0xffff || wsl_is_nvtx_category(k))
            continue;
        if (k == WSL_CAT_GPU_KERNEL) {
            if (cursor_in(&gpu, w, n, ev->a[1])) {
                uint64_t dur = ev->t_end >= ev->t_start ? ev->t_end - ev->t_start : 0;
                int64_t adj = wc->est ? wsl_kern_estimate_event_adjust(wc->est, ev) : 0; /* as the ranges' own */
                c->gpu_kernels++;
                c->gpu_ns += wsl_kern_adjusted(dur, adj);
            }
        } else if (cursor_in(&call, w, n, ev->t_start)) {
            bool smp = wc->sampled[ev->api];
            wsl_nvtx_attribute(c, k, ev, wsl_event_calls(k, smp, ev), wsl_event_ticks(smp, wc->weight, ev));
        }
    }
    wc->at_gpu = gpu.at;
    wc->at_call = call.at;
}

void wsl_nvtx_window_end(struct wsl_nvtx_window_count *wc, bool ok)
{
    free(wc->cat);
    free(wc->sampled);
    wc->cat = NULL;
    wc->sampled = NULL;
    wc->counting = false;
    wc->counted = ok;
}

/* Reads the trace again for its windows' count. */
static bool count_in_windows(struct wsl_nvtx *n, const struct wsl_trace_store *store, struct wsl_nvtx_window_count *wc)
{
    char err[WSL_READER_ERRLEN];
    struct wsl_reader *r = wsl_store_open(store, wc->path, err, sizeof err);
    if (!r)
        return false;
    n->step_count_readings++;
    wsl_nvtx_window_begin(wc);
    struct wsl_item it;
    enum wsl_read_result res;
    while ((res = wsl_reader_next(r, &it)) == WSL_READ_ITEM)
        wsl_nvtx_window_item(wc, &it);
    wsl_nvtx_window_end(wc, res != WSL_READ_ERROR);
    wsl_reader_close(r);
    return wc->counted;
}

void wsl_nvtx_free_pending(struct wsl_nvtx *n)
{
    for (size_t i = 0; i < n->pending_count; i++) {
        free(n->pending[i].path);
        free(n->pending[i].w);
        free(n->pending[i].cat);
        free(n->pending[i].sampled);
    }
    free(n->pending);
    n->pending = NULL;
    n->pending_count = 0;
}

void wsl_nvtx_step_figures(struct wsl_nvtx *n, const struct wsl_trace_store *store)
{
    if (!n->pending_count)
        return;
    for (size_t i = 0; i < n->pending_count && n->step_process_known; i++) {
        struct wsl_nvtx_window_count *wc = &n->pending[i];
        if (!wc->counted && !count_in_windows(n, store, wc))
            n->step_process_known = false;
        wsl_nvtx_counts_add_scaled(&n->step_process, &wc->c, wc->ns_per_tick);
    }
    wsl_nvtx_free_pending(n);
}

/* The step's process-wide figures: every thread, inside the step's instances. */
/* count false: the windows are made (the step's phases are read from them below) but the traces
 * are not read for the figures (a nested run's, never reported: process_figures). The count waits
 * in n->pending for a later reading (step_count_later) or is made here, trace by trace. */
void wsl_nvtx_step_process_figures(struct wsl_nvtx *n, const struct wsl_trace_store *store, bool count)
{
    uint32_t step_id = n->ranges[n->step].id;
    n->step_process_known = !n->windows_capped;
    for (size_t i = 0; i < n->trace_count && n->step_process_known; i++) {
        struct wsl_nvtx_trace_windows *tw = &n->traces[i];
        size_t m = 0;
        for (size_t k = 0; k < tw->count; k++)
            if (tw->w[k].range == step_id)
                tw->w[m++] = tw->w[k];
        if (!m)
            continue;
        n->step_process_steps += m;
        size_t k0 = 1; /* (a trace's windows mostly come in time order: sorted, they are kept as they are) */
        while (k0 < m && tw->w[k0 - 1].t0 < tw->w[k0].t0)
            k0++;
        if (k0 < m)
            qsort(tw->w, m, sizeof *tw->w, by_start);
        size_t u = 0; /* merge overlapping instances (several threads' steps) into disjoint windows */
        for (size_t k = 1; k < m; k++) {
            if (tw->w[k].t0 <= tw->w[u].t1) {
                if (tw->w[k].t1 > tw->w[u].t1)
                    tw->w[u].t1 = tw->w[k].t1;
            } else {
                tw->w[++u] = tw->w[k];
            }
        }
        tw->count = u + 1; /* what is left are the step's windows: the phases take their list from them */
        if (!count)
            continue;
        n->pending = xrealloc(n->pending, (n->pending_count + 1) * sizeof *n->pending);
        struct wsl_nvtx_window_count *wc = &n->pending[n->pending_count++];
        memset(wc, 0, sizeof *wc);
        wc->path = xstrdup(tw->path);
        wc->ns_per_tick = tw->ns_per_tick;
        const struct wsl_kern_estimate *e = n->estimate_of ? n->estimate_of(n->estimate_ctx, tw->path) : NULL;
        wc->est = e && e->configs && e->pair_overhead_ticks ? e : NULL;
        wc->n = u + 1;
        wc->w = xmalloc(wc->n * sizeof *wc->w);
        memcpy(wc->w, tw->w, wc->n * sizeof *wc->w);
        wc->steps = m;
        for (size_t g = 0; g < tw->guess_count && !wc->counted; g++)
            if (tw->guess[g].range == step_id && !wc->est) { /* counted on the first reading (which
                                                               takes no pair overhead off: with one to take off, a reading) */
                wc->c = tw->guess[g].c;
                wc->counted = true;
                n->step_count_first++;
            }
        if (!wc->counted && !n->step_count_later && !count_in_windows(n, store, wc))
            n->step_process_known = false;
    }
    if (count && !n->step_count_later)
        wsl_nvtx_step_figures(n, store);
}
