/*
 * Memory replay. Each memory event goes into a bounded min-heap on
 * (t_start, arrival order); once the heap holds the window's worth, the
 * earliest event leaves it and is applied to the live tables. Chunks of one
 * thread are in order and the shim flushes every thread at least about once a
 * second, so with the window far larger than the memory calls of a second the
 * replay is in exact time order; an event arriving after the window moved past
 * it is still applied (in arrival order) and counted in late_events.
 *
 * Live tables: u64_map.h (open addressing, deletion by backward shift), key 0
 * = empty slot (pointer 0 is never tracked).
 */
#include "memory_analysis.h"
#include "u64_map.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "wslshim/trace_format.h"

static size_t window_events = WSL_MEM_WINDOW;

void wsl_mem_set_window(size_t events) { window_events = events ? events : WSL_MEM_WINDOW; }

enum wsl_mem_op wsl_mem_op_of(unsigned category, const char *base)
{
    switch (category) {
    case WSL_CAT_ALLOC:
        return strcmp(base, "cuMemAllocAsync") == 0 || strcmp(base, "cuMemAllocFromPoolAsync") == 0
                   ? WSL_MEM_ALLOC_ASYNC : WSL_MEM_ALLOC;
    case WSL_CAT_ALLOC_MANAGED: return WSL_MEM_ALLOC_MANAGED;
    case WSL_CAT_FREE: return strcmp(base, "cuMemFreeAsync") == 0 ? WSL_MEM_FREE_ASYNC : WSL_MEM_FREE;
    case WSL_CAT_HOST_ALLOC: return WSL_MEM_HOST_ALLOC;
    case WSL_CAT_HOST_FREE: return WSL_MEM_HOST_FREE;
    case WSL_CAT_HOST_REGISTER: return WSL_MEM_HOST_REGISTER;
    case WSL_CAT_HOST_UNREGISTER: return WSL_MEM_HOST_UNREGISTER;
    default: return WSL_MEM_NONE;
    }
}

/* ---- size buckets ---------------------------------------------------------------------- */

unsigned wsl_mem_size_bucket(uint64_t bytes)
{
    if (bytes < 2048)
        return 0;
    unsigned log2 = 63u - (unsigned)__builtin_clzll(bytes);   /* >= 11 */
    unsigned b = log2 - 10;
    return b < WSL_MEM_SIZE_BUCKETS ? b : WSL_MEM_SIZE_BUCKETS - 1;
}

uint64_t wsl_mem_bucket_min(unsigned bucket)
{
    return bucket == 0 || bucket >= WSL_MEM_SIZE_BUCKETS ? 0 : 1024ull << bucket;
}

const char *wsl_mem_bucket_name(unsigned bucket)
{
    static const char *const names[WSL_MEM_SIZE_BUCKETS] = {
        "<2K",      "2K-4K",     "4K-8K",     "8K-16K",  "16K-32K", "32K-64K", "64K-128K",
        "128K-256K", "256K-512K", "512K-1M",  "1M-2M",   "2M-4M",   "4M-8M",   "8M-16M",
        "16M-32M",  "32M-64M",   "64M-128M",  "128M-256M", "256M-512M", "512M-1G", "1G-2G",
        "2G-4G",    "4G-8G",     "8G-16G",    "16G+",
    };
    return bucket < WSL_MEM_SIZE_BUCKETS ? names[bucket] : "?";
}

/* ---- live tables: pointer -> bytes (u64_map) --------------------------------------------- */

/* Inserts ptr (not 0, not present); false when the table is full. */
static bool live_insert(struct wsl_u64_map *m, uint64_t ptr, uint64_t bytes)
{
    if (m->count >= WSL_MEM_MAX_LIVE)
        return false;
    wsl_u64_map_insert(m, ptr, bytes);
    return true;
}

/* ---- the window -------------------------------------------------------------------------- */

struct mem_ev {
    uint64_t t, dur;            /* ticks */
    uint64_t seq;               /* arrival order: ties keep it */
    uint64_t ptr, bytes;
    int32_t result;
    uint8_t op;
};

struct wsl_mem_trace {
    struct mem_ev *heap;
    size_t n, cap, window;
    uint64_t seq;
    bool released_any;
    uint64_t released_t;        /* latest start of the events applied */
    struct wsl_u64_map device, managed, pinned, registered;
    struct wsl_u64_map freed_count, freed_ticks;   /* churn: (size, kind) -> blocks freed and not asked for again */
    uint64_t churn_ticks;
    uint64_t live, peak, peak_ticks, failed_ticks;
    uint64_t page_locked_peak;
    struct wsl_mem_summary s;   /* counts; times filled at the end */
};

static bool ev_before(const struct mem_ev *a, const struct mem_ev *b)
{
    return a->t != b->t ? a->t < b->t : a->seq < b->seq;
}

static void heap_push(struct wsl_mem_trace *t, const struct mem_ev *e)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 256;
        if (t->cap > t->window + 1)
            t->cap = t->window + 1;
        t->heap = xrealloc(t->heap, t->cap * sizeof *t->heap);
    }
    size_t i = t->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!ev_before(e, &t->heap[parent]))
            break;
        t->heap[i] = t->heap[parent];
        i = parent;
    }
    t->heap[i] = *e;
}

static struct mem_ev heap_pop(struct wsl_mem_trace *t)
{
    struct mem_ev top = t->heap[0], last = t->heap[--t->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= t->n)
            break;
        if (c + 1 < t->n && ev_before(&t->heap[c + 1], &t->heap[c]))
            c++;
        if (!ev_before(&t->heap[c], &last))
            break;
        t->heap[i] = t->heap[c];
        i = c;
    }
    if (t->n)
        t->heap[i] = last;
    return top;
}

/* ---- replay ------------------------------------------------------------------------------ */

static void kind_alloc(struct wsl_mem_trace *t, struct wsl_u64_map *map, struct wsl_mem_kind *k, const struct mem_ev *e)
{
    if (e->result != 0) {
        k->failed++;
        return;
    }
    k->allocations++;
    k->bytes += e->bytes;
    struct wsl_u64_slot *old = e->ptr ? wsl_u64_map_find(map, e->ptr) : NULL;
    if (old) {
        t->s.reused_pointers++;
        k->live_bytes -= old->value;
        old->value = e->bytes;
    } else if (!e->ptr || !live_insert(map, e->ptr, e->bytes)) {
        t->s.untracked_allocations++;
        return;
    }
    k->live_bytes += e->bytes;
    if (k->live_bytes > k->peak_bytes)
        k->peak_bytes = k->live_bytes;
}

/* true when the pointer was live in map (and is now freed) */
static bool kind_free(struct wsl_u64_map *map, struct wsl_mem_kind *k, uint64_t ptr)
{
    struct wsl_u64_slot *slot = ptr ? wsl_u64_map_find(map, ptr) : NULL;
    if (!slot)
        return false;
    k->live_bytes -= slot->value;
    wsl_u64_map_remove(map, slot);
    return true;
}

/* ---- churn: freed sizes asked for again ---------------------------------------------------- */

static uint64_t freed_key(uint64_t bytes, bool host) { return bytes * 2 + host + 1; }

static void churn_free(struct wsl_mem_trace *t, uint64_t bytes, bool host, uint64_t dur)
{
    uint64_t key = freed_key(bytes, host);
    struct wsl_u64_slot *n = wsl_u64_map_find(&t->freed_count, key);
    if (n) {
        n->value++;
        wsl_u64_map_find(&t->freed_ticks, key)->value += dur;
    } else if (t->freed_count.count < WSL_MEM_MAX_FREED_SIZES) {
        wsl_u64_map_insert(&t->freed_count, key, 1);
        wsl_u64_map_insert(&t->freed_ticks, key, dur);
    }
}

static void churn_alloc(struct wsl_mem_trace *t, uint64_t bytes, bool host, uint64_t dur)
{
    uint64_t key = freed_key(bytes, host);
    struct wsl_u64_slot *n = wsl_u64_map_find(&t->freed_count, key);
    if (!n || n->value == 0)
        return;
    struct wsl_u64_slot *ticks = wsl_u64_map_find(&t->freed_ticks, key);
    uint64_t free_dur = ticks->value / n->value;    /* one of the frees it reuses, on average */
    n->value--;
    ticks->value -= free_dur;
    t->s.churn_reallocs++;
    t->churn_ticks += dur + free_dur;
}

static void page_locked_update(struct wsl_mem_trace *t)
{
    uint64_t locked = t->s.pinned.live_bytes + t->s.registered.live_bytes;
    if (locked > t->page_locked_peak)
        t->page_locked_peak = locked;
}

static void failed_alloc(struct wsl_mem_trace *t, const struct mem_ev *e)
{
    t->s.failed_allocations++;
    t->s.oom_failures += e->result == WSL_CUDA_ERROR_OUT_OF_MEMORY;
    if (e->bytes > t->s.largest_failed_bytes)
        t->s.largest_failed_bytes = e->bytes;
    t->failed_ticks += e->dur;
}

static void apply(struct wsl_mem_trace *t, const struct mem_ev *e)
{
    struct wsl_mem_summary *s = &t->s;
    switch ((enum wsl_mem_op)e->op) {
    case WSL_MEM_ALLOC:
    case WSL_MEM_ALLOC_ASYNC: {
        if (e->result != 0) {
            failed_alloc(t, e);
            break;
        }
        s->allocations++;
        s->allocated_bytes += e->bytes;
        s->size_hist[wsl_mem_size_bucket(e->bytes)]++;
        if (e->op == WSL_MEM_ALLOC_ASYNC) {
            s->async_allocations++;
            s->async_bytes += e->bytes;
        }
        struct wsl_u64_slot *old = e->ptr ? wsl_u64_map_find(&t->device, e->ptr) : NULL;
        if (old) {
            s->reused_pointers++;
            t->live -= old->value;
            old->value = e->bytes;
        } else if (!e->ptr || !live_insert(&t->device, e->ptr, e->bytes)) {
            s->untracked_allocations++;
            break;
        }
        t->live += e->bytes;
        if (e->op == WSL_MEM_ALLOC)
            churn_alloc(t, e->bytes, false, e->dur);
        if (t->live > t->peak) {
            t->peak = t->live;
            t->peak_ticks = e->t + e->dur;
        }
        break;
    }
    case WSL_MEM_ALLOC_MANAGED:
        if (e->result != 0)
            failed_alloc(t, e);
        kind_alloc(t, &t->managed, &s->managed, e);
        break;
    case WSL_MEM_FREE:
    case WSL_MEM_FREE_ASYNC: {
        if (e->result != 0) {
            s->failed_frees++;
            break;
        }
        if (kind_free(&t->managed, &s->managed, e->ptr)) {
            s->managed.frees++;
            break;
        }
        s->frees++;
        s->async_frees += e->op == WSL_MEM_FREE_ASYNC;
        struct wsl_u64_slot *slot = e->ptr ? wsl_u64_map_find(&t->device, e->ptr) : NULL;
        if (!slot) {
            s->unknown_frees++;
            break;
        }
        t->live -= slot->value;
        if (e->op == WSL_MEM_FREE)
            churn_free(t, slot->value, false, e->dur);
        wsl_u64_map_remove(&t->device, slot);
        break;
    }
    case WSL_MEM_HOST_ALLOC:
        kind_alloc(t, &t->pinned, &s->pinned, e);
        if (e->result == 0)
            churn_alloc(t, e->bytes, true, e->dur);
        page_locked_update(t);
        break;
    case WSL_MEM_HOST_REGISTER:
        kind_alloc(t, &t->registered, &s->registered, e);
        page_locked_update(t);
        break;
    case WSL_MEM_HOST_FREE:
    case WSL_MEM_HOST_UNREGISTER: {
        bool reg = e->op == WSL_MEM_HOST_UNREGISTER;
        struct wsl_mem_kind *k = reg ? &s->registered : &s->pinned;
        if (e->result != 0)
            break;
        k->frees++;
        struct wsl_u64_slot *held = !reg && e->ptr ? wsl_u64_map_find(&t->pinned, e->ptr) : NULL;
        if (held)
            churn_free(t, held->value, true, e->dur);
        if (!kind_free(reg ? &t->registered : &t->pinned, k, e->ptr))
            k->unknown_frees++;
        break;
    }
    case WSL_MEM_NONE:
        break;
    }
}

static void release_one(struct wsl_mem_trace *t)
{
    struct mem_ev e = heap_pop(t);
    t->released_any = true;
    if (e.t > t->released_t)
        t->released_t = e.t;
    apply(t, &e);
}

struct wsl_mem_trace *wsl_mem_trace_begin(void)
{
    struct wsl_mem_trace *t = xcalloc(1, sizeof *t);
    t->window = window_events;
    return t;
}

void wsl_mem_trace_event(struct wsl_mem_trace *t, enum wsl_mem_op op, const struct wsl_event *ev)
{
    struct mem_ev e = {
        .t = ev->t_start,
        .dur = ev->t_end >= ev->t_start ? ev->t_end - ev->t_start : 0,
        .seq = t->seq++,
        .ptr = ev->a[0],
        .bytes = ev->a[1],
        .result = ev->result,
        .op = (uint8_t)op,
    };
    t->s.any = true;
    if (t->released_any && e.t < t->released_t)
        t->s.late_events++;
    heap_push(t, &e);
    if (t->n > t->window)
        release_one(t);     /* the earliest of what the window holds, this event included */
}

static void free_map(struct wsl_u64_map *m) { wsl_u64_map_free(m); }

void wsl_mem_trace_discard(struct wsl_mem_trace *t)
{
    if (!t)
        return;
    free(t->heap);
    free_map(&t->device);
    free_map(&t->managed);
    free_map(&t->pinned);
    free_map(&t->registered);
    free_map(&t->freed_count);
    free_map(&t->freed_ticks);
    free(t);
}

void wsl_mem_trace_end(struct wsl_mem_trace *t, const struct wsl_clock_map *clock, struct wsl_mem_summary *out)
{
    while (t->n)
        release_one(t);
    struct wsl_mem_summary *s = &t->s;
    s->peak_bytes = t->peak;
    s->peak_at_ns = t->peak ? wsl_clock_to_ns(clock, t->peak_ticks) : 0;
    s->failed_ns = wsl_clock_duration_ns(clock, t->failed_ticks);
    s->live_at_exit_bytes = t->live;
    s->live_at_exit_allocations = t->device.count;
    s->page_locked_peak_bytes = t->page_locked_peak;
    s->churn_ns = wsl_clock_duration_ns(clock, t->churn_ticks);
    uint64_t device_total = out->device_total_bytes;
    *out = *s;
    out->device_total_bytes = device_total;
    wsl_mem_trace_discard(t);
}

static void add_kind(struct wsl_mem_kind *a, const struct wsl_mem_kind *b)
{
    a->allocations += b->allocations;
    a->bytes += b->bytes;
    a->frees += b->frees;
    a->unknown_frees += b->unknown_frees;
    a->failed += b->failed;
    a->live_bytes += b->live_bytes;
    if (b->peak_bytes > a->peak_bytes)
        a->peak_bytes = b->peak_bytes;
}

void wsl_mem_add(struct wsl_mem_summary *a, const struct wsl_mem_summary *b)
{
    a->any |= b->any;
    a->allocations += b->allocations;
    a->allocated_bytes += b->allocated_bytes;
    a->frees += b->frees;
    a->unknown_frees += b->unknown_frees;
    a->failed_frees += b->failed_frees;
    if (b->peak_bytes > a->peak_bytes || (b->peak_bytes == a->peak_bytes && !a->device_total_bytes)) {
        a->peak_bytes = b->peak_bytes;
        a->peak_at_ns = b->peak_at_ns;
        a->device_total_bytes = b->device_total_bytes;
    }
    a->live_at_exit_bytes += b->live_at_exit_bytes;
    a->live_at_exit_allocations += b->live_at_exit_allocations;
    a->failed_allocations += b->failed_allocations;
    a->oom_failures += b->oom_failures;
    if (b->largest_failed_bytes > a->largest_failed_bytes)
        a->largest_failed_bytes = b->largest_failed_bytes;
    a->failed_ns += b->failed_ns;
    a->async_allocations += b->async_allocations;
    a->async_bytes += b->async_bytes;
    a->async_frees += b->async_frees;
    for (unsigned i = 0; i < WSL_MEM_SIZE_BUCKETS; i++)
        a->size_hist[i] += b->size_hist[i];
    add_kind(&a->managed, &b->managed);
    add_kind(&a->pinned, &b->pinned);
    add_kind(&a->registered, &b->registered);
    if (b->page_locked_peak_bytes > a->page_locked_peak_bytes)
        a->page_locked_peak_bytes = b->page_locked_peak_bytes;
    a->late_events += b->late_events;
    a->untracked_allocations += b->untracked_allocations;
    a->reused_pointers += b->reused_pointers;
    a->churn_reallocs += b->churn_reallocs;
    a->churn_ns += b->churn_ns;
}
