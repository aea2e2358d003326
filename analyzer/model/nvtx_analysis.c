/*
 * NVTX ranges of a run: see nvtx_analysis.h. Inside a trace everything is
 * kept in that trace's ticks and converted once at its end.
 */
#include "nvtx_analysis.h"
#include "io_analysis.h"
#include "kernel_analysis.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "u64_map.h"
#include "util.h"

#define NONE WSL_NVTX_NO_RANGE

struct local_range {            /* per trace: (kind, domain id, name id) */
    uint32_t kind, domain_id, name_id, max_depth;
    uint64_t count, unclosed, top_level;
    struct wsl_hist ticks;
    struct wsl_nvtx_counts self, incl;
    uint64_t queued_other;      /* queued timed kernels past WSL_NVTX_MAX_QUEUED: the process's overhead */
};

/* Queued timed kernels of one (range, handle, configuration) (wsl_nvtx_trace_less_overhead). */
struct queued_kernels {
    uint64_t handle;
    uint32_t range, config;
    uint64_t count;
};

struct local_mark {
    uint32_t domain_id, name_id;
    uint64_t count;
};

struct frame {
    uint32_t range;             /* index into the trace's ranges */
    uint32_t domain_id;
    uint64_t t0;
    struct wsl_nvtx_counts self, incl;
};

struct history_entry {          /* from t on, this range was innermost (NONE: no range) */
    uint64_t t;
    uint32_t range;
};

struct wsl_nvtx_thread {
    struct wsl_nvtx_thread_head head; /* first: read by wsl_nvtx_wants */
    uint32_t frames;            /* frames in use; head.open - frames were pushed past a cap */
    bool resync;                /* events of this thread were dropped: trust the next push's level */
    struct frame *frame;        /* WSL_NVTX_MAX_DEPTH, allocated on the first push */
    struct history_entry *history; /* ring of WSL_NVTX_HISTORY */
    uint64_t history_count;     /* entries ever appended */
    uint64_t history_descent;   /* the last entry appended earlier in time than the one before it (0: none) */
    uint64_t history_hint;      /* the entry history_at found last */
    uint32_t seg;               /* the thread's open segment (wsl_nvtx_track_batch), NONE: none */
};

struct open_start {
    uint64_t t0;
    uint32_t range;
    uint32_t next_free;
};

struct wsl_nvtx_trace {
    struct wsl_u64_map names;   /* string id -> index into strs */
    char **strs;
    size_t str_count, str_bytes;
    struct wsl_u64_map range_index[2]; /* per kind: key -> index into ranges */
    struct local_range *ranges;
    size_t range_count;
    struct wsl_u64_map mark_index;
    struct local_mark *marks;
    size_t mark_count;
    struct wsl_u64_map thread_index; /* tid + 1 -> index into threads */
    struct wsl_nvtx_thread *gpu_thread; /* the thread the last GPU kernel found (tid gpu_tid): a tid's */
    uint32_t gpu_tid;                   /* thread, once made, stays (on_gpu_kernel) */
    struct wsl_nvtx_thread **threads;
    size_t thread_count;
    struct wsl_nvtx_window *tops;   /* closed top-level push instances (range: local index) */
    size_t top_count, top_cap;
    bool tops_capped;
    struct wsl_u64_map start_index; /* range id -> index into starts */
    struct wsl_u64_map early_ends;  /* range id -> end ticks, for ends read before their start
                                       (another thread's chunk may come first) */
    struct open_start *starts;
    size_t start_count, start_used;
    uint32_t start_free;        /* free list head, NONE when empty */
    uint64_t pushes, pops, starts_total, ends, marks_total, unmatched_pops, unmatched_ends, gpu_unattributed,
        dropped, lost;
    struct wsl_u64_map queued_index; /* hash of (range, handle, configuration) -> queued (compare) */
    struct queued_kernels *queued;
    size_t queued_count;
    bool any_queued;
    /* The step's figures on this reading (wsl_nvtx_trace_track): a thread's calls between two of its
     * NVTX events make a segment (the range of their times and their counts); GPU kernels are kept
     * one by one (their launch time, their duration). Events before the trace's first push are not
     * kept: their latest time is. At the close, each candidate range's instances are merged into
     * windows as wsl_nvtx_finish merges them, and a segment wholly inside one window is counted,
     * one wholly outside all is not; one that straddles an edge leaves that range to a reading. */
    bool track, tracking, track_failed, track_entered;
    struct wsl_nvtx_track_pool *pool;
    bool untracked_calls, untracked_gpu;
    uint64_t untracked_call_max, untracked_gpu_max;
    struct track_seg *segs;
    size_t seg_count, seg_cap;
    struct track_gpu *gpus;
    size_t gpu_count, gpu_cap;
    struct wsl_nvtx_step_guess *guess; /* by local range id, after the close */
    size_t guess_count;
};

struct track_seg {
    uint64_t lo, hi;            /* the calls' start times, least and greatest */
    struct wsl_nvtx_counts c;
};

struct track_gpu {
    uint64_t launch, ns;        /* a[1] (the launch's time), the kernel's duration in ticks */
};

#define WSL_NVTX_MAX_SEGS (1u << 20)      /* segments kept per trace; past it, the trace is read again */
#define WSL_NVTX_MAX_TRACK_GPU (1u << 22) /* GPU kernels kept per trace; the same */
#define WSL_NVTX_MAX_GUESSES 4u           /* candidate ranges counted per trace (the most instances) */

/* ---- counts ------------------------------------------------------------------------- */

#define COUNT_FIELDS (sizeof(struct wsl_nvtx_counts) / sizeof(uint64_t))
_Static_assert(sizeof(struct wsl_nvtx_counts) % sizeof(uint64_t) == 0, "counts are u64 fields");

static void counts_add(struct wsl_nvtx_counts *dst, const struct wsl_nvtx_counts *src)
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
static void counts_add_scaled(struct wsl_nvtx_counts *dst, const struct wsl_nvtx_counts *src, double ns_per_tick)
{
    struct wsl_nvtx_counts c = *src;
    c.api_ns = scale(c.api_ns, ns_per_tick);
    c.sync_ns = scale(c.sync_ns, ns_per_tick);
    c.io_ns = scale(c.io_ns, ns_per_tick);
    c.gpu_ns = scale(c.gpu_ns, ns_per_tick);
    counts_add(dst, &c);
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

/* The innermost range of the thread at time t, or NONE (none open, or older than the history). */
static uint32_t history_at(struct wsl_nvtx_thread *th, uint64_t t)
{
    if (!th || !th->history_count)
        return NONE;
    const struct history_entry *h = th->history;
    uint64_t lo = th->history_count > WSL_NVTX_HISTORY ? th->history_count - WSL_NVTX_HISTORY : 0;
    uint64_t hi = th->history_count; /* find the last entry in [lo, hi) with .t <= t */
    if (h[lo % WSL_NVTX_HISTORY].t > t)
        return NONE;
    uint64_t k = th->history_hint;
    if (th->history_descent <= lo && k >= lo && k < hi) {
        /* [lo, hi) in time order (the usual case), and the GPU times of a thread's launches come in
         * order: the entry is the last one found, or the next. Sorted, the search below finds the
         * same entry. */
        if (h[k % WSL_NVTX_HISTORY].t <= t && (k + 1 == hi || h[(k + 1) % WSL_NVTX_HISTORY].t > t))
            return h[k % WSL_NVTX_HISTORY].range;
        if (k + 1 < hi && h[(k + 1) % WSL_NVTX_HISTORY].t <= t &&
            (k + 2 == hi || h[(k + 2) % WSL_NVTX_HISTORY].t > t)) {
            th->history_hint = k + 1;
            return h[(k + 1) % WSL_NVTX_HISTORY].range;
        }
    }
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (h[mid % WSL_NVTX_HISTORY].t <= t)
            lo = mid;
        else
            hi = mid;
    }
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
    counts_add(&r->self, &f->self);
    counts_add(&f->incl, &f->self);
    counts_add(&r->incl, &f->incl);
    if (k > 0)
        counts_add(&th->frame[k - 1].incl, &f->incl);
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

static void on_gpu_kernel(struct wsl_nvtx_trace *t, const struct wsl_event *ev)
{
    uint32_t tid = (uint32_t)(ev->a[2] >> 32);
    struct wsl_nvtx_thread *th = t->gpu_thread;
    if (!th || t->gpu_tid != tid) {
        struct wsl_u64_slot *s = wsl_u64_map_find(&t->thread_index, (uint64_t)tid + 1);
        th = s ? t->threads[s->value] : NULL;
        if (th) {
            t->gpu_thread = th;
            t->gpu_tid = tid;
        }
    }
    uint32_t r = history_at(th, ev->a[1]);
    if (r == NONE) {
        t->gpu_unattributed++;
        return;
    }
    t->ranges[r].self.gpu_kernels++;
    t->ranges[r].self.gpu_ns += ev->t_end >= ev->t_start ? ev->t_end - ev->t_start : 0;
    if (ev->a[2] & (WSL_GPU_IDLE_AT_SUBMIT | WSL_GPU_GRAPH))
        return; /* only a queued kernel's measure holds the pair's own time */
    t->any_queued = true;
    uint64_t handle = ev->a[0];
    uint32_t config = (uint32_t)ev->result;
    uint64_t key = handle ^ ((((uint64_t)r << 32) | config) * 0x9e3779b97f4a7c15ull); /* a hash: compare */
    key = key ? key : 1;
    for (struct wsl_u64_slot *s = wsl_u64_map_find(&t->queued_index, key); s;
         s = wsl_u64_map_find_next(&t->queued_index, s)) {
        struct queued_kernels *q = &t->queued[s->value];
        if (q->handle == handle && q->range == r && q->config == config) {
            q->count++;
            return;
        }
    }
    if (t->queued_count >= WSL_NVTX_MAX_QUEUED) {
        t->ranges[r].queued_other++;
        return;
    }
    t->queued = xrealloc(t->queued, (t->queued_count + 1) * sizeof *t->queued);
    t->queued[t->queued_count] = (struct queued_kernels){handle, r, config, 1};
    wsl_u64_map_insert(&t->queued_index, key, t->queued_count++);
}

bool wsl_nvtx_trace_queued(const struct wsl_nvtx_trace *t) { return t->any_queued; }

void wsl_nvtx_trace_less_overhead(struct wsl_nvtx_trace *t, const struct wsl_kern_estimate *e)
{
    if (!e->configs)
        return; /* an older trace: no overhead measured, the raw measures stand */
    for (size_t i = 0; i < t->queued_count; i++) {
        const struct queued_kernels *q = &t->queued[i];
        struct wsl_nvtx_counts *c = &t->ranges[q->range].self;
        uint64_t off = wsl_kern_estimate_overhead_ticks(e, q->handle, q->config) * q->count;
        c->gpu_ns = c->gpu_ns > off ? c->gpu_ns - off : 0;
    }
    for (size_t r = 0; r < t->range_count; r++) {
        struct wsl_nvtx_counts *c = &t->ranges[r].self;
        uint64_t off = e->pair_overhead_ticks * t->ranges[r].queued_other;
        c->gpu_ns = c->gpu_ns > off ? c->gpu_ns - off : 0;
    }
    t->queued_count = 0; /* taken off once */
    for (size_t r = 0; r < t->range_count; r++)
        t->ranges[r].queued_other = 0;
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
        on_gpu_kernel(t, ev);
        return;
    default:
        if (th->frames)
            wsl_nvtx_attribute(&th->frame[th->frames - 1].self, category, ev, calls, ticks);
        return;
    }
}

/* ---- the run ----------------------------------------------------------------------------- */

/* The index key of a range: its kind, whether it has a domain, and the texts with their 0. */
static uint64_t range_key(unsigned kind, const char *domain, const char *name)
{
    const unsigned char head[2] = {(unsigned char)kind, domain != NULL};
    uint64_t h = wsl_u64_map_hash_more(WSL_U64_MAP_HASH_START, head, sizeof head);
    if (domain)
        h = wsl_u64_map_hash_more(h, domain, strlen(domain) + 1);
    if (name)
        h = wsl_u64_map_hash_more(h, name, strlen(name) + 1);
    return wsl_u64_map_hash_key(h);
}

static bool same_text(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

static struct wsl_nvtx_range *run_range(struct wsl_nvtx *n, unsigned kind, const char *domain, const char *name)
{
    uint64_t key = range_key(kind, domain, name);
    for (const struct wsl_u64_slot *s = wsl_u64_map_find(&n->index, key); s; s = wsl_u64_map_find_next(&n->index, s)) {
        struct wsl_nvtx_range *r = &n->ranges[s->value];
        if (r->kind == kind && same_text(r->domain, domain) && same_text(r->name, name))
            return r;
    }
    if (n->range_count >= WSL_NVTX_MAX_RANGES)
        return NULL;
    n->ranges = xrealloc(n->ranges, (n->range_count + 1) * sizeof *n->ranges);
    struct wsl_nvtx_range *r = &n->ranges[n->range_count];
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->id = (uint32_t)n->range_count;
    r->name = xstrdup(name);
    r->domain = domain ? xstrdup(domain) : NULL;
    wsl_u64_map_insert(&n->index, key, n->range_count++);
    return r;
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

/* The text of a string id: "(unnamed)" for 0, NULL for a domain 0. */
static const char *name_of(const struct wsl_nvtx_trace *t, struct wsl_nvtx *n, uint32_t id, bool domain)
{
    if (!id)
        return domain ? NULL : "(unnamed)";
    struct wsl_u64_slot *s = wsl_u64_map_find(&t->names, id);
    if (s)
        return t->strs[s->value];
    n->unnamed_ids++;
    return domain ? "(unknown domain)" : "(unknown name)";
}

static void track_close(struct wsl_nvtx_trace *t);
static void track_release(struct wsl_nvtx_trace *t);

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
    track_close(t);
    return unclosed;
}

void wsl_nvtx_trace_merge(const struct wsl_nvtx_trace *t, struct wsl_nvtx *n, uint64_t unclosed, double ns_per_tick,
                          const char *path)
{
    uint32_t *run_id = xmalloc((t->range_count + 1) * sizeof *run_id);
    for (size_t i = 0; i < t->range_count; i++) {
        struct local_range *lr = &t->ranges[i];
        struct wsl_nvtx_range *r = run_range(n, lr->kind, name_of(t, n, lr->domain_id, true),
                                             name_of(t, n, lr->name_id, false));
        run_id[i] = r ? r->id : NONE;
        if (!r) {
            n->dropped++;
            continue;
        }
        r->count += lr->count;
        r->unclosed += lr->unclosed;
        r->top_level += lr->top_level;
        if (lr->max_depth > r->max_depth)
            r->max_depth = lr->max_depth;
        wsl_hist_merge_scaled(&r->ns, &lr->ticks, ns_per_tick);
        counts_add_scaled(&r->self, &lr->self, ns_per_tick);
        counts_add_scaled(&r->incl, &lr->incl, ns_per_tick);
    }
    bool capped = t->tops_capped;
    if (t->top_count && path) { /* the windows, by run-wide range id; only of ranges that may be the step */
        size_t kept = 0;
        for (size_t i = 0; i < t->top_count; i++)
            kept += run_id[t->tops[i].range] != NONE && t->ranges[t->tops[i].range].count >= 2;
        if (n->window_total + kept > WSL_NVTX_MAX_RUN_WINDOWS) {
            capped = true;
            kept = 0;
        }
        if (kept) {
            struct wsl_nvtx_window *w = xmalloc(kept * sizeof *w);
            size_t m = 0;
            for (size_t i = 0; i < t->top_count; i++)
                if (run_id[t->tops[i].range] != NONE && t->ranges[t->tops[i].range].count >= 2) {
                    w[m] = t->tops[i];
                    w[m++].range = run_id[t->tops[i].range];
                }
            n->window_total += kept;
            n->traces = xrealloc(n->traces, (n->trace_count + 1) * sizeof *n->traces);
            struct wsl_nvtx_trace_windows *tw = &n->traces[n->trace_count++];
            *tw = (struct wsl_nvtx_trace_windows){xstrdup(path), ns_per_tick, w, kept, NULL, 0};
            for (size_t g = 0; g < t->guess_count; g++) {
                uint32_t lr = t->guess[g].range, rid = run_id[lr];
                bool alone = rid != NONE; /* (two of the trace's ranges the run holds as one: their windows join) */
                for (size_t j = 0; j < t->range_count && alone; j++)
                    alone = j == lr || run_id[j] != rid;
                if (!alone)
                    continue;
                if (!tw->guess)
                    tw->guess = xmalloc(t->guess_count * sizeof *tw->guess);
                tw->guess[tw->guess_count].range = rid;
                tw->guess[tw->guess_count++].c = t->guess[g].c;
            }
        }
    }
    n->windows_capped |= capped;
    free(run_id);
    for (size_t i = 0; i < t->mark_count; i++) {
        const char *domain = name_of(t, n, t->marks[i].domain_id, true);
        const char *name = name_of(t, n, t->marks[i].name_id, false);
        size_t k = 0;
        while (k < n->mark_count && !(same_text(n->marks[k].domain, domain) && same_text(n->marks[k].name, name)))
            k++;
        if (k == n->mark_count) {
            if (n->mark_count >= WSL_NVTX_MAX_RANGES) {
                n->dropped++;
                continue;
            }
            n->marks = xrealloc(n->marks, (n->mark_count + 1) * sizeof *n->marks);
            n->marks[k] = (struct wsl_nvtx_mark){xstrdup(name), domain ? xstrdup(domain) : NULL, 0};
            n->mark_count++;
        }
        n->marks[k].count += t->marks[i].count;
    }
    n->pushes += t->pushes;
    n->pops += t->pops;
    n->starts += t->starts_total;
    n->ends += t->ends;
    n->marks_total += t->marks_total;
    n->unmatched_pops += t->unmatched_pops;
    n->unmatched_ends += t->unmatched_ends;
    n->unclosed += unclosed;
    n->gpu_unattributed += t->gpu_unattributed;
    n->dropped += t->dropped;
    n->lost += t->lost;
}

void wsl_nvtx_trace_end(struct wsl_nvtx_trace *t, struct wsl_nvtx *n, uint64_t end_ticks, double ns_per_tick,
                        const char *path)
{
    wsl_nvtx_trace_merge(t, n, wsl_nvtx_trace_close(t, end_ticks), ns_per_tick, path);
    wsl_nvtx_trace_discard(t);
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
    wsl_u64_map_free(&t->queued_index);
    free(t->queued);
    free(t->starts);
    free(t->tops);
    track_release(t);
    free(t->guess);
    free(t);
}

static int by_total(const void *a, const void *b)
{
    const struct wsl_nvtx_range *x = a, *y = b;
    if (x->ns.sum != y->ns.sum)
        return x->ns.sum > y->ns.sum ? -1 : 1;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int by_count(const void *a, const void *b)
{
    const struct wsl_nvtx_mark *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Names a training loop gives its iteration range. */
static bool named_like_step(const char *name)
{
    static const char *const names[] = {"step", "train_step", "training_step", "train step", "training step",
                                        "iteration", "iter", "train_iteration", "train_iter"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcasecmp(name, names[i]))
            return true;
    return false;
}

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
static void track_release(struct wsl_nvtx_trace *t)
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
    track_release(t);
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
            t->gpus[t->gpu_count++] = (struct track_gpu){e->a[1], e->t_end >= e->t_start ? e->t_end - e->t_start : 0};
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
        bool smp = sampled[e->api];
        wsl_nvtx_attribute(&sg->c, k, e, wsl_event_calls(k, smp, e), wsl_event_ticks(smp, weight, e));
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
static void track_close(struct wsl_nvtx_trace *t)
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
                        counts_add(&c, &sg->c);
                    else
                        ok = false;
                } else if (at < nw && sg->hi >= w[at].t0) {
                    ok = false;
                }
            }
            struct window_cursor cu;
            cursor_set(&cu, w, nw, 0);
            for (size_t i = 0; i < t->gpu_count && ok; i++)
                if (cursor_in(&cu, w, nw, t->gpus[i].launch)) {
                    c.gpu_kernels++;
                    c.gpu_ns += t->gpus[i].ns;
                }
            if (ok) {
                t->guess[t->guess_count].range = (uint32_t)best;
                t->guess[t->guess_count++].c = c;
            }
        }
        free(w);
        free(tops_of);
    }
    track_release(t);
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
                uint64_t over = wc->est ? wsl_kern_estimate_event_overhead(wc->est, ev) : 0; /* as the ranges' own */
                c->gpu_kernels++;
                c->gpu_ns += dur > over ? dur - over : 0;
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

static void free_pending(struct wsl_nvtx *n)
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
        counts_add_scaled(&n->step_process, &wc->c, wc->ns_per_tick);
    }
    free_pending(n);
}

/* The step's process-wide figures: every thread, inside the step's instances. */
/* count false: the windows are made (the step's phases are read from them below) but the traces
 * are not read for the figures (a nested run's, never reported: process_figures). The count waits
 * in n->pending for a later reading (step_count_later) or is made here, trace by trace. */
static void step_process_figures(struct wsl_nvtx *n, const struct wsl_trace_store *store, bool count)
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

void wsl_nvtx_finish(struct wsl_nvtx *n, const struct wsl_trace_store *store, bool process_figures)
{
    wsl_u64_map_free(&n->index);
    if (n->range_count)
        qsort(n->ranges, n->range_count, sizeof *n->ranges, by_total);
    if (n->mark_count)
        qsort(n->marks, n->mark_count, sizeof *n->marks, by_count);
    /* The step: a push range named like one, else the most frequent top-level push range. */
    n->step = -1;
    long by_name = -1, by_top = -1;
    for (size_t i = 0; i < n->range_count; i++) {
        const struct wsl_nvtx_range *r = &n->ranges[i];
        if (r->kind != WSL_NVTX_PUSH || r->count < 2)
            continue;
        if (named_like_step(r->name) && (by_name < 0 || r->count > n->ranges[by_name].count))
            by_name = (long)i;
        if (r->top_level >= 2 && (by_top < 0 || r->top_level > n->ranges[by_top].top_level))
            by_top = (long)i;
    }
    n->step = by_name >= 0 ? by_name : by_top;
    if (n->step >= 0 && n->ranges[n->step].kind == WSL_NVTX_PUSH)
        step_process_figures(n, store, process_figures);
    for (size_t i = 0; i < n->trace_count; i++) {
        struct wsl_nvtx_trace_windows *tw = &n->traces[i];
        size_t steps = 0;
        for (size_t k = 0; n->step >= 0 && k < tw->count; k++)
            steps += tw->w[k].range == n->ranges[n->step].id;
        if (steps && !n->windows_capped) { /* the step's instances of this trace, for the phases */
            n->step_traces = xrealloc(n->step_traces, (n->step_trace_count + 1) * sizeof *n->step_traces);
            struct wsl_nvtx_step_trace *st = &n->step_traces[n->step_trace_count++];
            st->path = tw->path;
            tw->path = NULL;
            st->t0 = xmalloc(steps * sizeof *st->t0);
            st->t1 = xmalloc(steps * sizeof *st->t1);
            st->count = 0;
            for (size_t k = 0; k < tw->count; k++)
                if (tw->w[k].range == n->ranges[n->step].id) {
                    st->t0[st->count] = tw->w[k].t0;
                    st->t1[st->count++] = tw->w[k].t1;
                }
        }
        free(tw->path);
        free(tw->w);
        free(tw->guess);
    }
    free(n->traces);
    n->traces = NULL;
    n->trace_count = 0;
}

void wsl_nvtx_free(struct wsl_nvtx *n)
{
    for (size_t i = 0; i < n->step_trace_count; i++) {
        free(n->step_traces[i].path);
        free(n->step_traces[i].t0);
        free(n->step_traces[i].t1);
    }
    free(n->step_traces);
    for (size_t i = 0; i < n->range_count; i++) {
        free(n->ranges[i].name);
        free(n->ranges[i].domain);
        wsl_hist_free(&n->ranges[i].ns);
    }
    free(n->ranges);
    for (size_t i = 0; i < n->mark_count; i++) {
        free(n->marks[i].name);
        free(n->marks[i].domain);
    }
    free(n->marks);
    wsl_u64_map_free(&n->index);
    for (size_t i = 0; i < n->trace_count; i++) {
        free(n->traces[i].path);
        free(n->traces[i].w);
        free(n->traces[i].guess);
    }
    free(n->traces);
    free_pending(n);
    free(n->track_pool.segs);
    free(n->track_pool.gpus);
    memset(n, 0, sizeof *n);
    n->step = -1;
}

uint64_t wsl_nvtx_mean_ns(const struct wsl_nvtx_range *r)
{
    if (!r->ns.count)
        return 0;
    uint64_t q = r->ns.sum / r->ns.count, rem = r->ns.sum % r->ns.count;
    return q + (rem >= r->ns.count - rem);
}
