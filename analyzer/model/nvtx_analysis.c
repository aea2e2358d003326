/*
 * NVTX ranges of a run, one trace's reading: see nvtx_analysis.h. Inside a trace everything is
 * kept in that trace's ticks and converted once at its end. This file: the per-trace state
 * (string names, ranges, marks, threads), the NVTX events (push/pop, start/end, marks) and the
 * GPU kernels put in the range open at their launch, the trace's close and its discard. The
 * trace's ranges merged into the run: nvtx_run.c; the step's figures: nvtx_step.c.
 */
#include "nvtx_internal.h"
#include "kernel_analysis.h"

#include <stdlib.h>
#include <string.h>

#include "u64_map.h"
#include "util.h"

/* ---- counts ------------------------------------------------------------------------- */

#define COUNT_FIELDS (sizeof(struct wsl_nvtx_counts) / sizeof(uint64_t))
_Static_assert(sizeof(struct wsl_nvtx_counts) % sizeof(uint64_t) == 0, "counts are u64 fields");

void wsl_nvtx_counts_add(struct wsl_nvtx_counts *dst, const struct wsl_nvtx_counts *src)
{
    uint64_t *d = (uint64_t *)dst;
    const uint64_t *s = (const uint64_t *)src;
    for (size_t i = 0; i < COUNT_FIELDS; i++)
        d[i] += s[i];
}

static uint64_t scale(uint64_t ticks, double ns_per_tick)
{
    double v = (double)ticks * ns_per_tick + 0.5;
    return v >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)v;
}

/* dst += src with src's times converted from ticks. */
void wsl_nvtx_counts_add_scaled(struct wsl_nvtx_counts *dst, const struct wsl_nvtx_counts *src, double ns_per_tick)
{
    struct wsl_nvtx_counts c = *src;
    c.api_ns = scale(c.api_ns, ns_per_tick);
    c.sync_ns = scale(c.sync_ns, ns_per_tick);
    c.io_ns = scale(c.io_ns, ns_per_tick);
    c.gpu_ns = scale(c.gpu_ns, ns_per_tick);
    wsl_nvtx_counts_add(dst, &c);
}

/* ---- per trace ---------------------------------------------------------------------- */

struct wsl_nvtx_trace *wsl_nvtx_trace_begin(void)
{
    struct wsl_nvtx_trace *t = xcalloc(1, sizeof *t);
    t->start_free = NONE;
    return t;
}

void wsl_nvtx_trace_paths(struct wsl_nvtx_trace *t, const struct wsl_item *item)
{
    size_t pos = 0;
    struct wsl_path_ref ref;
    while (wsl_paths_next(item, &pos, &ref)) {
        if (!ref.length || ref.bytes[0] != WSL_NVTX_NAME_MARK)
            continue;
        if (wsl_u64_map_find(&t->names, ref.id))
            continue; /* defined twice: the first definition stands */
        if (t->str_bytes + ref.length > WSL_NVTX_MAX_NAME_BYTES) {
            t->dropped++;
            continue;
        }
        t->strs = xrealloc(t->strs, (t->str_count + 1) * sizeof *t->strs);
        t->strs[t->str_count] = xstrndup(ref.bytes + 1, ref.length - 1);
        wsl_u64_map_insert(&t->names, ref.id, t->str_count++);
        t->str_bytes += ref.length;
    }
}

struct wsl_nvtx_thread *wsl_nvtx_thread(struct wsl_nvtx_trace *t, uint32_t tid, uint64_t dropped)
{
    struct wsl_u64_slot *s = wsl_u64_map_find(&t->thread_index, (uint64_t)tid + 1);
    if (s) {
        t->threads[s->value]->resync |= dropped > 0;
        return t->threads[s->value];
    }
    struct wsl_nvtx_thread *th = xcalloc(1, sizeof *th);
    th->head.innermost = NONE;
    th->seg = NONE;
    t->threads = xrealloc(t->threads, (t->thread_count + 1) * sizeof *t->threads);
    t->threads[t->thread_count] = th;
    wsl_u64_map_insert(&t->thread_index, (uint64_t)tid + 1, t->thread_count++);
    return th;
}

static uint64_t pair_key(uint64_t domain_id, uint64_t name_id)
{
    return ((domain_id & 0xffffffffu) << 32 | (name_id & 0xffffffffu)) + 1;
}

/* The trace's range for (kind, domain, name); NONE past the cap. */
static uint32_t range_get(struct wsl_nvtx_trace *t, unsigned kind, uint64_t domain_id, uint64_t name_id)
{
    uint64_t key = pair_key(domain_id, name_id);
    struct wsl_u64_slot *s = key ? wsl_u64_map_find(&t->range_index[kind], key) : NULL;
    if (s)
        return (uint32_t)s->value;
    if (!key || t->range_count >= WSL_NVTX_MAX_RANGES) {
        t->dropped++;
        return NONE;
    }
    t->ranges = xrealloc(t->ranges, (t->range_count + 1) * sizeof *t->ranges);
    struct local_range *r = &t->ranges[t->range_count];
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->domain_id = (uint32_t)domain_id;
    r->name_id = (uint32_t)name_id;
    wsl_u64_map_insert(&t->range_index[kind], key, t->range_count);
    return (uint32_t)t->range_count++;
}

static void mark_add(struct wsl_nvtx_trace *t, uint64_t domain_id, uint64_t name_id)
{
    uint64_t key = pair_key(domain_id, name_id);
    struct wsl_u64_slot *s = key ? wsl_u64_map_find(&t->mark_index, key) : NULL;
    if (s) {
        t->marks[s->value].count++;
        return;
    }
    if (!key || t->mark_count >= WSL_NVTX_MAX_RANGES) {
        t->dropped++;
        return;
    }
    t->marks = xrealloc(t->marks, (t->mark_count + 1) * sizeof *t->marks);
    t->marks[t->mark_count] = (struct local_mark){(uint32_t)domain_id, (uint32_t)name_id, 1};
    wsl_u64_map_insert(&t->mark_index, key, t->mark_count++);
}

/* After the thread's frames changed: its innermost range. */
static void innermost_update(struct wsl_nvtx_thread *th)
{
    th->head.innermost = th->frames ? th->frame[th->frames - 1].range : NONE;
    th->head.self = th->frames ? &th->frame[th->frames - 1].self : NULL;
}

static void history_note(struct wsl_nvtx_thread *th, uint64_t t)
{
    if (!th->history)
        th->history = xmalloc(WSL_NVTX_HISTORY * sizeof *th->history);
    if (th->history_count && t < th->history[(th->history_count - 1) % WSL_NVTX_HISTORY].t)
        th->history_descent = th->history_count;
    th->history[th->history_count % WSL_NVTX_HISTORY] = (struct history_entry){t, th->head.innermost};
    th->history_count++;
}

/* Entry k of the thread's history, found for a time in a history in time order: the times its
 * range stays innermost are kept for the next kernels (launched in the same range, most are). */
static uint32_t history_found(struct wsl_nvtx_thread *th, uint64_t k, uint64_t hi)
{
    const struct history_entry *h = th->history;
    th->history_hint = k;
    th->span_count = th->history_count;
    th->span_lo = h[k % WSL_NVTX_HISTORY].t;
    th->span_hi = k + 1 < hi ? h[(k + 1) % WSL_NVTX_HISTORY].t : UINT64_MAX;
    th->span_range = h[k % WSL_NVTX_HISTORY].range;
    return th->span_range;
}

/* The innermost range of the thread at time t, or NONE (none open, or older than the history). Its
 * last answer's span is tested by the caller (wsl_nvtx_trace_gpu). */
static __attribute__((noinline)) uint32_t history_at(struct wsl_nvtx_thread *th, uint64_t t)
{
    if (!th || !th->history_count)
        return NONE;
    const struct history_entry *h = th->history;
    uint64_t lo = th->history_count > WSL_NVTX_HISTORY ? th->history_count - WSL_NVTX_HISTORY : 0;
    uint64_t hi = th->history_count; /* find the last entry in [lo, hi) with .t <= t */
    if (h[lo % WSL_NVTX_HISTORY].t > t)
        return NONE;
    bool sorted = th->history_descent <= lo;
    uint64_t k = th->history_hint;
    if (sorted && k >= lo && k < hi && h[k % WSL_NVTX_HISTORY].t <= t) {
        /* [lo, hi) in time order (the usual case), and the GPU times of a thread's launches come in
         * order: the entry is the last one found or one a few on (a range closed and the next
         * opened between two launches: two on). Sorted, the search below finds the same entry. */
        uint64_t stop = k + 4 < hi ? k + 4 : hi - 1;
        while (k < stop && h[(k + 1) % WSL_NVTX_HISTORY].t <= t)
            k++;
        if (k + 1 == hi || h[(k + 1) % WSL_NVTX_HISTORY].t > t)
            return history_found(th, k, hi);
    }
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (h[mid % WSL_NVTX_HISTORY].t <= t)
            lo = mid;
        else
            hi = mid;
    }
    if (sorted)
        return history_found(th, lo, th->history_count);
    th->history_hint = lo;
    return h[lo % WSL_NVTX_HISTORY].range;
}

/* Closes frame k of the thread at t_end. */
static void close_frame(struct wsl_nvtx_trace *t, struct wsl_nvtx_thread *th, uint32_t k, uint64_t t_end,
                        bool unclosed)
{
    struct frame *f = &th->frame[k];
    struct local_range *r = &t->ranges[f->range];
    r->count++;
    r->unclosed += unclosed;
    wsl_hist_add(&r->ticks, t_end >= f->t0 ? t_end - f->t0 : 0);
    if (k == 0) {
        if (t->top_count < WSL_NVTX_MAX_WINDOWS) {
            if (t->top_count == t->top_cap) {
                t->top_cap = t->top_cap ? 2 * t->top_cap : 64;
                t->tops = xrealloc(t->tops, t->top_cap * sizeof *t->tops);
            }
            t->tops[t->top_count++] = (struct wsl_nvtx_window){f->t0, t_end, f->range};
        } else {
            t->tops_capped = true;
        }
    }
    wsl_nvtx_counts_add(&r->self, &f->self);
    wsl_nvtx_counts_add(&f->incl, &f->self);
    wsl_nvtx_counts_add(&r->incl, &f->incl);
    if (k > 0)
        wsl_nvtx_counts_add(&th->frame[k - 1].incl, &f->incl);
    if (k + 1 < th->frames) /* (most close the innermost: nothing to move, no call) */
        memmove(&th->frame[k], &th->frame[k + 1], (th->frames - k - 1) * sizeof *th->frame);
    th->frames--;
    th->head.open--;
    innermost_update(th);
}

static void on_push(struct wsl_nvtx_trace *t, struct wsl_nvtx_thread *th, const struct wsl_event *ev)
{
    t->pushes++;
    if (th->resync) {
        /* Events were lost before this one: ranges open here beyond the level the
         * shim counted lost their pop. They are discarded, not timed. */
        th->resync = false;
        while (th->head.open > ev->a[1]) {
            if (th->head.open > th->frames) {
                th->head.open--;
            } else {
                th->frames--;
                th->head.open--;
            }
            t->lost++;
        }
        innermost_update(th);
    }
    uint32_t r = range_get(t, WSL_NVTX_PUSH, ev->stream, ev->a[0]);
    if (r == NONE || th->frames >= WSL_NVTX_MAX_DEPTH || th->frames < th->head.open) {
        if (r != NONE)
            t->dropped++;
        th->head.open++; /* pushed past a cap: counted, its pop matched, not timed */
        return;
    }
    if (!th->frame)
        th->frame = xmalloc(WSL_NVTX_MAX_DEPTH * sizeof *th->frame);
    struct local_range *lr = &t->ranges[r];
    if (th->frames == 0)
        lr->top_level++;
    if (th->frames > lr->max_depth)
        lr->max_depth = th->frames;
    struct frame *f = &th->frame[th->frames++];
    memset(f, 0, sizeof *f);
    f->range = r;
    f->domain_id = (uint32_t)ev->stream;
    f->t0 = ev->t_start;
    th->head.open++;
    th->head.innermost = r;
    th->head.self = &f->self;
    history_note(th, ev->t_start);
}

static void on_pop(struct wsl_nvtx_trace *t, struct wsl_nvtx_thread *th, const struct wsl_event *ev)
{
    t->pops++;
    if (th->head.open > th->frames) { /* the innermost push was past a cap */
        th->head.open--;
        return;
    }
    uint32_t k = th->frames;
    while (k > 0 && th->frame[k - 1].domain_id != (uint32_t)ev->stream)
        k--;
    if (k == 0) {
        t->unmatched_pops++;
        return;
    }
    close_frame(t, th, k - 1, ev->t_start, false);
    history_note(th, ev->t_start);
}

static void on_start(struct wsl_nvtx_trace *t, const struct wsl_event *ev)
{
    t->starts_total++;
    uint32_t r = range_get(t, WSL_NVTX_START, ev->stream, ev->a[0]);
    uint64_t rid = ev->a[1];
    if (r == NONE || !rid)
        return;
    struct wsl_u64_slot *e = wsl_u64_map_find(&t->early_ends, rid);
    if (e) {
        struct local_range *lr = &t->ranges[r];
        lr->count++;
        wsl_hist_add(&lr->ticks, e->value >= ev->t_start ? e->value - ev->t_start : 0);
        wsl_u64_map_remove(&t->early_ends, e);
        return;
    }
    struct wsl_u64_slot *s = wsl_u64_map_find(&t->start_index, rid);
    if (s) { /* an id started again: the new start counts */
        t->starts[s->value].t0 = ev->t_start;
        t->starts[s->value].range = r;
        return;
    }
    uint32_t idx;
    if (t->start_free != NONE) {
        idx = t->start_free;
        t->start_free = t->starts[idx].next_free;
    } else if (t->start_count < WSL_NVTX_MAX_OPEN_STARTS) {
        t->starts = xrealloc(t->starts, (t->start_count + 1) * sizeof *t->starts);
        idx = (uint32_t)t->start_count++;
    } else {
        t->dropped++;
        return;
    }
    t->starts[idx] = (struct open_start){ev->t_start, r, NONE};
    t->start_used++;
    wsl_u64_map_insert(&t->start_index, rid, idx);
}

static void end_start(struct wsl_nvtx_trace *t, struct wsl_u64_slot *s, uint64_t t_end, bool unclosed)
{
    uint32_t idx = (uint32_t)s->value;
    struct open_start *o = &t->starts[idx];
    struct local_range *r = &t->ranges[o->range];
    r->count++;
    r->unclosed += unclosed;
    wsl_hist_add(&r->ticks, t_end >= o->t0 ? t_end - o->t0 : 0);
    o->next_free = t->start_free;
    t->start_free = idx;
    t->start_used--;
    wsl_u64_map_remove(&t->start_index, s);
}

static void on_end(struct wsl_nvtx_trace *t, const struct wsl_event *ev)
{
    t->ends++;
    struct wsl_u64_slot *s = ev->a[1] ? wsl_u64_map_find(&t->start_index, ev->a[1]) : NULL;
    if (!s) { /* its start may still come, in a chunk of another thread */
        if (!ev->a[1] || wsl_u64_map_find(&t->early_ends, ev->a[1]))
            t->unmatched_ends++;
        else if (t->early_ends.count >= WSL_NVTX_MAX_OPEN_STARTS)
            t->dropped++;
        else
            wsl_u64_map_insert(&t->early_ends, ev->a[1], ev->t_start);
        return;
    }
    end_start(t, s, ev->t_start, false);
}

/* The thread of tid (NULL: none yet): a GPU kernel launched by another thread than the last one. */
static __attribute__((noinline)) struct wsl_nvtx_thread *gpu_thread(struct wsl_nvtx_trace *t, uint32_t tid)
{
    struct wsl_u64_slot *s = wsl_u64_map_find(&t->thread_index, (uint64_t)tid + 1);
    struct wsl_nvtx_thread *th = s ? t->threads[s->value] : NULL;
    if (th) { /* a tid's thread, once made, stays */
        t->gpu_thread = th;
        t->gpu_tid = tid;
    }
    return th;
}

/* A timed kernel's entry not in the cache: found by its hash, or added; c takes it. */
static __attribute__((noinline)) void timed_count(struct wsl_nvtx_trace *t, struct timed_cache_entry *c, uint64_t key,
                                                  uint64_t handle, uint32_t r, uint32_t config, unsigned idle)
{
    uint64_t tag = ((uint64_t)r << 33) | ((uint64_t)config << 1) | idle;
    for (struct wsl_u64_slot *s = wsl_u64_map_find(&t->timed_index, key); s;
         s = wsl_u64_map_find_next(&t->timed_index, s)) {
        struct timed_kernels *q = &t->timed[s->value];
        if (q->handle == handle && q->range == r && q->config == config && q->idle == idle) {
            q->count++;
            *c = (struct timed_cache_entry){handle, tag, (uint32_t)s->value + 1};
            return;
        }
    }
    if (t->timed_count >= WSL_NVTX_MAX_TIMED) {
        t->ranges[r].timed_other[idle]++;
        return;
    }
    if (t->timed_count == t->timed_cap) {
        t->timed_cap = t->timed_cap ? 2 * t->timed_cap : 64;
        t->timed = xrealloc(t->timed, t->timed_cap * sizeof *t->timed);
    }
    t->timed[t->timed_count] = (struct timed_kernels){handle, r, config, idle, 1};
    *c = (struct timed_cache_entry){handle, tag, (uint32_t)t->timed_count + 1};
    wsl_u64_map_insert(&t->timed_index, key, t->timed_count++);
}

/* One GPU kernel's event to the range innermost on its launching thread at its launch. Returns the
 * kernel's entry among the timed ones, plus 1, where it went the usual way (a range found, not a
 * graph launch, counted in an entry); else 0. */
static inline __attribute__((always_inline)) uint32_t trace_gpu(struct wsl_nvtx_trace *t, const struct wsl_event *ev)
{
    uint32_t tid = (uint32_t)(ev->a[2] >> 32);
    struct wsl_nvtx_thread *th = t->gpu_thread;
    if (__builtin_expect(!th || t->gpu_tid != tid, 0))
        th = gpu_thread(t, tid);
    uint64_t launched = ev->a[1];
    uint32_t r;
    if (th && th->span_count == th->history_count && launched >= th->span_lo && launched < th->span_hi)
        r = th->span_range; /* the entry history_at found last, the history unchanged since */
    else
        r = history_at(th, launched);
    if (r == NONE) {
        t->gpu_unattributed++;
        return 0;
    }
    t->ranges[r].self.gpu_kernels++;
    t->ranges[r].self.gpu_ns += ev->t_end >= ev->t_start ? ev->t_end - ev->t_start : 0;
    if (ev->a[2] & WSL_GPU_GRAPH)
        return 0; /* a graph launch's measure is taken as it is */
    t->any_timed = true;
    uint64_t handle = ev->a[0];
    uint32_t config = (uint32_t)ev->result;
    unsigned idle = (ev->a[2] & WSL_GPU_IDLE_AT_SUBMIT) != 0;
    uint64_t tag = ((uint64_t)r << 33) | ((uint64_t)config << 1) | idle; /* (r < 2^31: WSL_NVTX_MAX_RANGES) */
    uint64_t key = handle ^ (tag * 0x9e3779b97f4a7c15ull); /* a hash */
    key = key ? key : 1;
    struct timed_cache_entry *c = &t->timed_cache[(key * 0x9e3779b97f4a7c15ull) >> (64 - NVTX_TIMED_CACHE_BITS)];
    if (c->index1 && c->handle == handle && c->tag == tag) {
        t->timed[c->index1 - 1].count++;
        return c->index1;
    }
    timed_count(t, c, key, handle, r, config, idle);
    return c->handle == handle && c->tag == tag ? c->index1 : 0; /* (past WSL_NVTX_MAX_TIMED: c unchanged) */
}

void wsl_nvtx_trace_gpu(struct wsl_nvtx_trace *t, const struct wsl_event *ev)
{
    trace_gpu(t, ev);
}

/* Each event as trace_gpu takes it. After one that went the usual way, the events that follow it
 * with the same handle, configuration, flags and thread (a[2]) whose launch lies in the span of
 * history that gave its range (the history does not change within the run: it holds no NVTX
 * event) go the same way to the same range and entry: they are counted in registers and added
 * once (integer sums: the same totals). */
void wsl_nvtx_trace_gpu_run(struct wsl_nvtx_trace *t, const struct wsl_event *ev, uint32_t n)
{
    uint32_t i = 0;
    while (i < n) {
        const uint32_t index1 = trace_gpu(t, &ev[i]);
        if (++i == n || ev[i].a[0] != ev[i - 1].a[0] || !index1) /* (a mix of kernels: the next one is another's) */
            continue;
        const struct wsl_nvtx_thread *th = t->gpu_thread;
        if (!th || th->span_count != th->history_count)
            continue;
        const uint32_t r = th->span_range;
        const uint64_t handle = ev[i - 1].a[0], a2 = ev[i - 1].a[2], lo = th->span_lo, hi = th->span_hi;
        const int32_t result = ev[i - 1].result;
        const uint64_t launched = ev[i - 1].a[1];
        if (launched < lo || launched >= hi || (uint32_t)(a2 >> 32) != t->gpu_tid) /* (r came otherwise) */
            continue;
        uint64_t count = 0, ns = 0;
        for (; i < n && ev[i].a[0] == handle && ev[i].a[2] == a2 && ev[i].result == result &&
                  ev[i].a[1] >= lo && ev[i].a[1] < hi;
             i++) {
            count++;
            ns += ev[i].t_end >= ev[i].t_start ? ev[i].t_end - ev[i].t_start : 0;
        }
        t->ranges[r].self.gpu_kernels += count;
        t->ranges[r].self.gpu_ns += ns;
        t->timed[index1 - 1].count += count;
    }
}

bool wsl_nvtx_trace_timed(const struct wsl_nvtx_trace *t) { return t->any_timed; }

static void range_adjust(struct wsl_nvtx_counts *c, int64_t per, uint64_t count)
{
    double v = (double)c->gpu_ns + (double)per * (double)count;
    c->gpu_ns = v <= 0 ? 0 : (uint64_t)v;
}

void wsl_nvtx_trace_adjust_pairs(struct wsl_nvtx_trace *t, const struct wsl_kern_estimate *e)
{
    if (!e->configs)
        return; /* an older trace: no overhead measured, the raw measures stand */
    for (size_t i = 0; i < t->timed_count; i++) {
        const struct timed_kernels *q = &t->timed[i];
        range_adjust(&t->ranges[q->range].self, wsl_kern_estimate_adjust_ticks(e, q->handle, q->config, q->idle),
                     q->count);
    }
    for (size_t r = 0; r < t->range_count; r++)
        for (unsigned idle = 0; idle < 2; idle++) {
            range_adjust(&t->ranges[r].self, wsl_kern_estimate_adjust_ticks(e, 0, 0, idle),
                         t->ranges[r].timed_other[idle]);
            t->ranges[r].timed_other[idle] = 0;
        }
    t->timed_count = 0; /* adjusted once */
    memset(t->timed_cache, 0, sizeof t->timed_cache);
}

void wsl_nvtx_trace_event(struct wsl_nvtx_trace *t, struct wsl_nvtx_thread *th, unsigned category,
                          const struct wsl_event *ev, uint64_t calls, uint64_t ticks)
{
    switch (category) {
    case WSL_CAT_NVTX_PUSH:
        on_push(t, th, ev);
        return;
    case WSL_CAT_NVTX_POP:
        on_pop(t, th, ev);
        return;
    case WSL_CAT_NVTX_START:
        on_start(t, ev);
        return;
    case WSL_CAT_NVTX_END:
        on_end(t, ev);
        return;
    case WSL_CAT_NVTX_MARK:
        t->marks_total++;
        mark_add(t, ev->stream, ev->a[0]);
        return;
    case WSL_CAT_NVTX_NAME_THREAD:
        return;
    case WSL_CAT_GPU_KERNEL:
        wsl_nvtx_trace_gpu(t, ev);
        return;
    default:
        if (th->frames)
            wsl_nvtx_attribute(&th->frame[th->frames - 1].self, category, ev, calls, ticks);
        return;
    }
}

const char *wsl_nvtx_trace_range_name(const void *ctx, uint32_t range)
{
    const struct wsl_nvtx_trace *t = ctx;
    if (range >= t->range_count)
        return "(unknown name)";
    uint32_t id = t->ranges[range].name_id;
    struct wsl_u64_slot *s = id ? wsl_u64_map_find(&t->names, id) : NULL;
    return !id ? "(unnamed)" : s ? t->strs[s->value] : "(unknown name)";
}

uint64_t wsl_nvtx_trace_close(struct wsl_nvtx_trace *t, uint64_t end_ticks)
{
    uint64_t unclosed = 0;
    for (size_t i = 0; i < t->thread_count; i++) {
        struct wsl_nvtx_thread *th = t->threads[i];
        while (th->frames) {
            close_frame(t, th, th->frames - 1, end_ticks, true);
            unclosed++;
        }
    }
    for (size_t i = 0; i < t->start_index.size; i++) {
        struct wsl_u64_slot *s = &t->start_index.slots[i];
        while (s->key) { /* removal shifts the next entry into this slot; the order adds nothing up differently */
            end_start(t, s, end_ticks, true);
            unclosed++;
        }
    }
    t->unmatched_ends += t->early_ends.count;
    wsl_nvtx_track_close(t);
    return unclosed;
}

void wsl_nvtx_trace_discard(struct wsl_nvtx_trace *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->str_count; i++)
        free(t->strs[i]);
    free(t->strs);
    wsl_u64_map_free(&t->names);
    for (unsigned k = 0; k < 2; k++)
        wsl_u64_map_free(&t->range_index[k]);
    for (size_t i = 0; i < t->range_count; i++)
        wsl_hist_free(&t->ranges[i].ticks);
    free(t->ranges);
    wsl_u64_map_free(&t->mark_index);
    free(t->marks);
    for (size_t i = 0; i < t->thread_count; i++) {
        free(t->threads[i]->frame);
        free(t->threads[i]->history);
        free(t->threads[i]);
    }
    free(t->threads);
    wsl_u64_map_free(&t->thread_index);
    wsl_u64_map_free(&t->start_index);
    wsl_u64_map_free(&t->early_ends);
    wsl_u64_map_free(&t->timed_index);
    free(t->timed);
    free(t->starts);
    free(t->tops);
    wsl_nvtx_track_release(t);
    free(t->guess);
    free(t);
}
