/*
 * Kernel launches per name. Per trace three maps (u64_map.h, no deletions)
 * of key -> index into a dense array: name id -> name bytes (in one arena),
 * handle -> how it was named, handle -> launches, (handle, launch
 * configuration) -> launches and timed launches, handle -> timed launches.
 * Names are looked up once, at the end of the trace.
 */
#include "kernel_analysis.h"
#include "u64_map.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "util.h"
#include "wslshim/trace_format.h"

unsigned wsl_kern_launch_slot(struct wsl_kernels *k, const char *base)
{
    for (unsigned i = 0; i < k->launch_api_count; i++)
        if (strcmp(k->launch_apis[i], base) == 0)
            return i;
    if (k->launch_api_count < WSL_KERN_LAUNCH_APIS) {
        k->launch_apis[k->launch_api_count] = xstrdup(base);
        return k->launch_api_count++;
    }
    /* more launch APIs than slots: the last one counts the rest */
    if (strcmp(k->launch_apis[WSL_KERN_LAUNCH_APIS - 1], "other") != 0) {
        free(k->launch_apis[WSL_KERN_LAUNCH_APIS - 1]);
        k->launch_apis[WSL_KERN_LAUNCH_APIS - 1] = xstrdup("other");
    }
    return WSL_KERN_LAUNCH_APIS - 1;
}

/* ---- one trace --------------------------------------------------------------------------- */

struct name_ref {
    uint32_t offset, length;    /* in the arena */
};

struct handle_name {
    uint32_t name_id;           /* 0: named after its kernel */
    uint64_t kernel;            /* name_id 0: the CUkernel whose name it takes */
};

/* Launches of a handle with one configuration (wsl_launch_config; 0: the
 * handle's row, its launches of configurations past WSL_KERN_MAX_CONFIGS),
 * per API, and the configuration's timed launches with their GPU time. A
 * launch counts in one row; the handle's figures are the sum of its rows. */
struct launch_row {
    uint64_t handle;
    uint32_t config;
    uint32_t own;               /* the handle's own row exists (a configuration's row may come first
                                   from a GPU_KERNEL event) */
    uint64_t by_api[WSL_KERN_LAUNCH_APIS];
    uint64_t captured;
    uint64_t timed, timed_ticks;
    uint64_t timed_idle, idle_ticks; /* of them, those that found the GPU idle at submit */
    double timed_sq, idle_sq;   /* the sums of their squares (ticks^2): the sampling's variance */
};

#define MAX_CAPTURING 64 /* streams capturing at once, per process */
#define HANDLE_CACHE_BITS 8
#define HANDLE_CACHE_SIZE (1u << HANDLE_CACHE_BITS)

struct handle_timing {
    uint64_t handle;
    uint64_t idle;
    struct wsl_hist ticks;
};

struct wsl_kern_trace {
    struct wsl_u64_map names;     /* name id -> names_v */
    struct name_ref *names_v;
    size_t names_cap;
    char *arena;
    size_t arena_used, arena_cap;
    struct wsl_u64_map handles;   /* handle -> handles_v */
    struct handle_name *handles_v;
    size_t handles_cap;
    struct wsl_u64_map launched;  /* handle -> its own row (configuration 0) in rows */
    struct wsl_u64_map configs;   /* config_key(handle, configuration) -> rows (a hash: compare) */
    struct launch_row *rows;
    size_t rows_count, rows_cap;
    uint64_t launches, failed, graph, untracked, null_handle, dropped_names;
    struct wsl_u64_map timed;     /* handle -> timed_v */
    struct handle_timing *timed_v;
    size_t timed_cap;
    uint64_t config_timed_untracked; /* timed launches of configurations past WSL_KERN_MAX_CONFIGS */
    uint64_t timed_untracked, idle, mapped, graphs_timed, graph_idle;
    struct wsl_hist graph_ticks;
    struct wsl_hist start_ticks;  /* idle, mapped launches: GPU start - launch call start */
    struct wsl_hist before_ticks; /* of them, placed before the call began (mapping error): by how much */
    uint64_t first_launch, last_gpu; /* ticks: the GPU phase (first_launch 0: none yet) */
    uint64_t fast_after;          /* first_launch - 1 while no stream captures and first_launch is set, else
                                     UINT64_MAX: a launch starting after it may take the fast path */
    uint64_t capturing[MAX_CAPTURING]; /* streams between capture begin and end */
    unsigned ncapturing;
    uint64_t captured;
    /* Recently used handles of `timed` with their index, and launches' (handle, grid, block)
     * with their row, by a few bits of the handle: most events skip the hash
     * lookups (and a launch the configuration's hash). A function launched at
     * two sizes in turn takes the lookups at each launch (the slot mixed with
     * the grid spread the bench's 64 functions worse: 398 M instructions
     * against 368 M). Entries never go stale (the maps only grow, and rows are
     * never removed: a row found stays its pair's); handle 0 marks an empty
     * entry. A timed handle's entry also keeps the row of the configuration it
     * was last timed at (config 0: none kept): a GPU_KERNEL event of the same
     * (handle, configuration) skips config_row's hash. */
    struct timed_cache_entry {
        uint64_t handle;
        uint64_t index;
        uint64_t row;
        uint32_t config;
    } timed_cache[HANDLE_CACHE_SIZE];
    struct launch_cache_entry {
        uint64_t handle, grid, block;
        uint64_t row_offset;    /* its row's, in bytes from rows (cached_row): no multiply per launch */
    } launched_cache[HANDLE_CACHE_SIZE];
    /* By op of the current EVENTS chunk (wsl_kern_trace_launch_op): the byte offset from rows
     * of the counter its launches add to (its row's by_api[slot]), 0 while not known; op 0 (a
     * literal) stays 0. */
    uint64_t op_counter[256];
    unsigned op_max;            /* the highest op given a counter since the chunk began */
};

/* Handles are pointers, their low bits often equal: a multiplicative hash
 * takes the slot from the top bits of the product. */
static inline unsigned handle_cache_slot(uint64_t handle)
{
    return (unsigned)((handle * 0x9e3779b97f4a7c15ull) >> (64 - HANDLE_CACHE_BITS));
}

struct wsl_kern_trace *wsl_kern_trace_begin(void)
{
    struct wsl_kern_trace *t = xcalloc(1, sizeof(struct wsl_kern_trace));
    t->fast_after = UINT64_MAX;
    /* Handle 0 is never cached (take_launch counts it apart) and looks in slot 0, whose empty entry
     * would hold it: that entry holds 1 instead, a handle of another slot, so the fast path needs
     * no test of the handle. */
    _Static_assert((0x9e3779b97f4a7c15ull >> (64 - HANDLE_CACHE_BITS)) != 0, "handle 1 is not slot 0's");
    t->launched_cache[0].handle = 1;
    return t;
}

#define GROW(arr, cap, need)                                              \
    do {                                                                  \
        if ((need) > (cap)) {                                             \
            (cap) = (cap) ? 2 * (cap) : 64;                               \
            (arr) = xrealloc((arr), (cap) * sizeof *(arr));               \
        }                                                                 \
    } while (0)

void wsl_kern_trace_paths(struct wsl_kern_trace *t, const struct wsl_item *item)
{
    size_t pos = 0;
    struct wsl_path_ref ref;
    while (wsl_paths_next(item, &pos, &ref)) {
        /* File paths are absolute ("/...") or "<fd N>/...", NVTX names marked: not kernel names. */
        if (!ref.id || !ref.length || ref.bytes[0] == '/' || ref.bytes[0] == '<' || ref.bytes[0] == WSL_NVTX_NAME_MARK)
            continue;
        if (wsl_u64_map_find(&t->names, ref.id))
            continue;   /* defined twice: the first definition stands */
        if (t->names.count >= WSL_KERN_MAX_HANDLES || t->arena_used + ref.length + 1 > WSL_KERN_MAX_NAME_BYTES) {
            t->dropped_names++;
            continue;
        }
        while (t->arena_used + ref.length + 1 > t->arena_cap) {
            t->arena_cap = t->arena_cap ? 2 * t->arena_cap : 4096;
            t->arena = xrealloc(t->arena, t->arena_cap);
        }
        memcpy(t->arena + t->arena_used, ref.bytes, ref.length);
        t->arena[t->arena_used + ref.length] = 0;
        GROW(t->names_v, t->names_cap, t->names.count + 1);
        t->names_v[t->names.count] = (struct name_ref){(uint32_t)t->arena_used, ref.length};
        t->arena_used += ref.length + 1;
        wsl_u64_map_insert(&t->names, ref.id, (uint32_t)t->names.count);
    }
}

static void take_name(struct wsl_kern_trace *t, const struct wsl_event *ev)
{
    uint64_t handle = ev->a[0];
    if (ev->result != 0 || !handle)
        return;
    struct handle_name hn = {(uint32_t)ev->a[1], ev->a[1] ? 0 : ev->a[2]};
    if (!hn.name_id && !hn.kernel)
        return;
    const struct wsl_u64_slot *s = wsl_u64_map_find(&t->handles, handle);
    if (s) {
        t->handles_v[s->value] = hn;    /* named again (a reused handle): the last name stands */
        return;
    }
    if (t->handles.count >= WSL_KERN_MAX_HANDLES) {
        t->dropped_names++;
        return;
    }
    GROW(t->handles_v, t->handles_cap, t->handles.count + 1);
    t->handles_v[t->handles.count] = hn;
    wsl_u64_map_insert(&t->handles, handle, (uint32_t)t->handles.count);
}

/* The map key of a (handle, configuration) pair: a hash (pairs may share it). */
static inline uint64_t config_key(uint64_t handle, uint32_t config)
{
    uint64_t k = handle ^ ((uint64_t)config * 0x9e3779b97f4a7c15ull);
    return k ? k : 1;
}

static uint64_t row_add(struct wsl_kern_trace *t, uint64_t handle, uint32_t config)
{
    GROW(t->rows, t->rows_cap, t->rows_count + 1);
    struct launch_row *r = &t->rows[t->rows_count];
    memset(r, 0, sizeof *r);
    r->handle = handle;
    r->config = config;
    return t->rows_count++;
}

/* The row of (handle, config), added when new; UINT64_MAX past WSL_KERN_MAX_CONFIGS. */
static uint64_t config_row(struct wsl_kern_trace *t, uint64_t handle, uint32_t config)
{
    uint64_t key = config_key(handle, config);
    for (const struct wsl_u64_slot *s = wsl_u64_map_find(&t->configs, key); s; s = wsl_u64_map_find_next(&t->configs, s))
        if (t->rows[s->value].handle == handle && t->rows[s->value].config == config)
            return s->value;
    if (t->configs.count >= WSL_KERN_MAX_CONFIGS)
        return UINT64_MAX;
    uint64_t row = row_add(t, handle, config);
    wsl_u64_map_insert(&t->configs, key, row);
    return row;
}

/* A launch whose (handle, grid, block) is not its cache entry's: the entry takes them and their
 * row (the handle's own past the cap on configurations). False: the handle is past
 * WSL_KERN_MAX_HANDLES. */
static __attribute__((noinline)) bool launch_row_cached(struct wsl_kern_trace *t, struct launch_cache_entry *c,
                                                        const struct wsl_event *ev)
{
    uint64_t handle = ev->a[0];
    uint64_t row = config_row(t, handle, wsl_launch_config(ev->a[1], ev->a[2]));
    if (row == UINT64_MAX || !t->rows[row].own) { /* the handle's own row: found, or added */
        uint64_t own;
        const struct wsl_u64_slot *s = wsl_u64_map_find(&t->launched, handle);
        if (s) {
            own = s->value;
        } else {
            if (t->launched.count >= WSL_KERN_MAX_HANDLES)
                return false;
            own = row_add(t, handle, 0);
            t->rows[own].own = 1;
            wsl_u64_map_insert(&t->launched, handle, own);
        }
        if (row == UINT64_MAX)
            row = own;
        else
            t->rows[row].own = 1;
    }
    c->handle = handle;
    c->grid = ev->a[1];
    c->block = ev->a[2];
    c->row_offset = row * sizeof(struct launch_row);
    return true;
}

/* The fast path's launch of a handle in the cache, with another grid or block than its entry's
 * (a function launched at several sizes in turn): a tail call. */
/* The row of a launch cache entry. */
static inline struct launch_row *cached_row(const struct wsl_kern_trace *t, const struct launch_cache_entry *c)
{
    return (struct launch_row *)(void *)((char *)t->rows + c->row_offset);
}

static __attribute__((noinline)) void launch_config_changed(struct wsl_kern_trace *t, struct launch_cache_entry *c,
                                                            unsigned slot, const struct wsl_event *ev)
{
    launch_row_cached(t, c, ev); /* the handle has its own row: it was in the cache */
    cached_row(t, c)->by_api[slot]++;
}

static void take_launch(struct wsl_kern_trace *t, unsigned slot, const struct wsl_event *ev)
{
    if (ev->result != 0) {
        t->failed++;
        return;
    }
    t->launches++;
    int captured = 0;
    for (unsigned i = 0; i < t->ncapturing; i++)
        captured |= t->capturing[i] == ev->stream;
    t->captured += captured;
    uint64_t handle = ev->a[0];
    if (!handle) {
        t->null_handle++;
        return;
    }
    struct launch_cache_entry *c = &t->launched_cache[handle_cache_slot(handle)];
    if ((c->handle != handle || c->grid != ev->a[1] || c->block != ev->a[2]) && !launch_row_cached(t, c, ev)) {
        t->untracked++;
        return;
    }
    cached_row(t, c)->by_api[slot]++;
    cached_row(t, c)->captured += captured;
}

/* Streams are matched by handle: a capture on the per-thread default stream
 * (handle 0 of a _ptsz call) matches launches to stream 0 of any thread. */
static void take_capture(struct wsl_kern_trace *t, int begin, const struct wsl_event *ev)
{
    if (ev->result != 0)
        return;
    unsigned i;
    for (i = 0; i < t->ncapturing && t->capturing[i] != ev->stream; i++)
        ;
    if (begin && i == t->ncapturing && t->ncapturing < MAX_CAPTURING)
        t->capturing[t->ncapturing++] = ev->stream;
    else if (!begin && i < t->ncapturing)
        t->capturing[i] = t->capturing[--t->ncapturing];
}

/* A timed handle not in its cache entry: the entry takes it, found or added (its row none kept).
 * False: past WSL_KERN_MAX_TIMED. */
static __attribute__((noinline)) bool timed_cached(struct wsl_kern_trace *t, struct timed_cache_entry *c,
                                                   uint64_t handle)
{
    const struct wsl_u64_slot *s = wsl_u64_map_find(&t->timed, handle);
    uint64_t index;
    if (s) {
        index = s->value;
    } else {
        if (t->timed.count >= WSL_KERN_MAX_TIMED)
            return false;
        GROW(t->timed_v, t->timed_cap, t->timed.count + 1);
        struct handle_timing *ht = &t->timed_v[t->timed.count];
        memset(ht, 0, sizeof *ht);
        ht->handle = handle;
        index = t->timed.count;
        wsl_u64_map_insert(&t->timed, handle, index);
    }
    *c = (struct timed_cache_entry){handle, index, 0, 0};
    return true;
}

/* A timed configuration (not 0) of the entry's handle that is not the entry's: the entry takes it
 * and its row. False: past WSL_KERN_MAX_CONFIGS (the entry keeps what it had). */
static __attribute__((noinline)) bool timed_row_cached(struct wsl_kern_trace *t, struct timed_cache_entry *c,
                                                       uint64_t handle, uint32_t config)
{
    uint64_t row = config_row(t, handle, config);
    if (row == UINT64_MAX)
        return false;
    c->config = config;
    c->row = row;
    return true;
}

static inline __attribute__((always_inline)) void take_gpu_time(struct wsl_kern_trace *t, const struct wsl_event *ev)
{
    uint64_t flags = ev->a[2] & 0xffffffffu, dur = ev->t_end >= ev->t_start ? ev->t_end - ev->t_start : 0;
    int idle = (flags & WSL_GPU_IDLE_AT_SUBMIT) != 0;
    t->mapped += (flags & WSL_GPU_MAPPED) != 0;
    if (flags & WSL_GPU_GRAPH) {
        t->graphs_timed++;
        t->graph_idle += idle;
        wsl_hist_add(&t->graph_ticks, dur);
        return;
    }
    t->idle += idle;
    if (idle && (flags & WSL_GPU_MAPPED)) {
        if (ev->t_start >= ev->a[1]) {
            wsl_hist_add(&t->start_ticks, ev->t_start - ev->a[1]);
        } else {    /* the clock mapping's error: counted as 0, its size kept */
            wsl_hist_add(&t->start_ticks, 0);
            wsl_hist_add(&t->before_ticks, ev->a[1] - ev->t_start);
        }
    }
    uint64_t handle = ev->a[0];
    if (!handle) {
        t->timed_untracked++;
        return;
    }
    struct timed_cache_entry *c = &t->timed_cache[handle_cache_slot(handle)];
    if (__builtin_expect(c->handle != handle, 0) && !timed_cached(t, c, handle)) {
        t->timed_untracked++;
        return;
    }
    struct handle_timing *ht = &t->timed_v[c->index];
    ht->idle += idle;
    wsl_hist_add(&ht->ticks, dur);
    uint32_t config = (uint32_t)ev->result; /* 0: unknown (older shims): the handle's alone */
    if (config) {
        if (__builtin_expect(c->config != config, 0) && !timed_row_cached(t, c, handle, config)) {
            t->config_timed_untracked++;
            return;
        }
        uint64_t row = c->row;
        struct launch_row *lr = &t->rows[row];
        double sq = (double)dur * (double)dur;
        lr->timed++;
        lr->timed_ticks += dur;
        lr->timed_sq += sq;
        lr->timed_idle += idle;
        lr->idle_ticks += idle ? dur : 0;
        lr->idle_sq += idle ? sq : 0;
    }
}

void wsl_kern_trace_gpu(struct wsl_kern_trace *t, const struct wsl_event *ev)
{
    if (ev->t_end > t->last_gpu)
        t->last_gpu = ev->t_end;
    take_gpu_time(t, ev);
}

/* Each event as take_gpu_time takes it. After one that took the usual way (not a graph launch, its
 * handle in its cache entry, and its configuration's row where it has one), the events that follow
 * it with the same handle, configuration and flags take the same entry and row: their counts are
 * added once and their sums kept in registers, added in the same order (the doubles' sums too). */
void wsl_kern_trace_gpu_run(struct wsl_kern_trace *t, const struct wsl_event *ev, uint32_t n, uint64_t end_max)
{
    uint32_t i = 0;
    while (i < n) {
        take_gpu_time(t, &ev[i]);
        if (++i == n || ev[i].a[0] != ev[i - 1].a[0]) /* (a mix of kernels: the next one is another's) */
            continue;
        const uint64_t handle = ev[i - 1].a[0], flags = ev[i - 1].a[2] & 0xffffffffu;
        const int32_t result = ev[i - 1].result;
        const uint32_t config = (uint32_t)result;
        if ((flags & WSL_GPU_GRAPH) || !handle || ev[i].result != result || (uint32_t)ev[i].a[2] != (uint32_t)flags)
            continue;
        const struct timed_cache_entry *c = &t->timed_cache[handle_cache_slot(handle)];
        if (c->handle != handle || (config && c->config != config))
            continue;
        const bool idle = (flags & WSL_GPU_IDLE_AT_SUBMIT) != 0, started = idle && (flags & WSL_GPU_MAPPED);
        struct handle_timing *ht = &t->timed_v[c->index];
        struct launch_row *lr = config ? &t->rows[c->row] : NULL;
        uint64_t count = 0, ticks = 0, idle_ticks = 0;
        double sq = lr ? lr->timed_sq : 0, idle_sq = lr ? lr->idle_sq : 0;
        do {
            const uint64_t dur = ev[i].t_end >= ev[i].t_start ? ev[i].t_end - ev[i].t_start : 0;
            if (started) {
                if (ev[i].t_start >= ev[i].a[1]) {
                    wsl_hist_add(&t->start_ticks, ev[i].t_start - ev[i].a[1]);
                } else {
                    wsl_hist_add(&t->start_ticks, 0);
                    wsl_hist_add(&t->before_ticks, ev[i].a[1] - ev[i].t_start);
                }
            }
            wsl_hist_add(&ht->ticks, dur);
            count++;
            if (lr) {
                const double d2 = (double)dur * (double)dur;
                ticks += dur;
                sq += d2;
                if (idle) {
                    idle_ticks += dur;
                    idle_sq += d2;
                }
            }
        } while (++i < n && ev[i].a[0] == handle && ev[i].result == result && (uint32_t)ev[i].a[2] == (uint32_t)flags);
        t->mapped += (flags & WSL_GPU_MAPPED) ? count : 0;
        t->idle += idle ? count : 0;
        ht->idle += idle ? count : 0;
        if (lr) {
            lr->timed += count;
            lr->timed_ticks += ticks;
            lr->timed_sq = sq;
            lr->timed_idle += idle ? count : 0;
            lr->idle_ticks += idle_ticks;
            lr->idle_sq = idle_sq;
        }
    }
    if (end_max > t->last_gpu) /* (read at the end alone) */
        t->last_gpu = end_max;
}

static __attribute__((noinline)) void kern_event_slow(struct wsl_kern_trace *t, enum wsl_kern_op op, unsigned slot,
                                                      const struct wsl_event *ev)
{
    if ((op == WSL_KERN_LAUNCH || op == WSL_KERN_GRAPH) && ev->result == 0 &&
        (!t->first_launch || ev->t_start < t->first_launch))
        t->first_launch = ev->t_start;
    if ((op == WSL_KERN_LAUNCH || op == WSL_KERN_GRAPH || op == WSL_KERN_GPU_TIME) && ev->t_end > t->last_gpu)
        t->last_gpu = ev->t_end;
    switch (op) {
    case WSL_KERN_GPU_TIME:
        take_gpu_time(t, ev);
        break;
    case WSL_KERN_CAPTURE_BEGIN:
    case WSL_KERN_CAPTURE_END:
        take_capture(t, op == WSL_KERN_CAPTURE_BEGIN, ev);
        break;
    case WSL_KERN_FUNC_NAME:
        take_name(t, ev);
        break;
    case WSL_KERN_LAUNCH:
        take_launch(t, slot, ev);
        break;
    case WSL_KERN_GRAPH:
        t->graph += ev->result == 0;
        break;
    case WSL_KERN_NONE:
        break;
    }
    /* (first_launch and the captures change here alone) */
    t->fast_after = !t->ncapturing && t->first_launch ? t->first_launch - 1 : UINT64_MAX;
}

/* Most launches: a successful launch of a handle in the cache, outside any capture, after the first
 * launch. It does what kern_event_slow would do for it (first_launch stays, no capture to count)
 * without its calls; false: kern_event_slow's. ok: the caller tested the result (0). Handle 0 finds
 * no entry (wsl_kern_trace_begin). */
static inline __attribute__((always_inline)) bool launch_fast(struct wsl_kern_trace *t, unsigned slot,
                                                              const struct wsl_event *ev, bool ok)
{
    uint64_t handle = ev->a[0];
    if ((ok || ev->result == 0) && ev->t_start > t->fast_after) {
        struct launch_cache_entry *c = &t->launched_cache[handle_cache_slot(handle)];
        __asm__("" : "+r"(c)); /* one address for the entry's fields (gcc computed it three times) */
        if (c->handle == handle) {
            if (ev->t_end > t->last_gpu)
                t->last_gpu = ev->t_end;
            t->launches++;
            if (__builtin_expect(c->grid == ev->a[1] && c->block == ev->a[2], 1))
                cached_row(t, c)->by_api[slot]++;
            else
                launch_config_changed(t, c, slot, ev);
            return true;
        }
    }
    return false;
}

void wsl_kern_trace_launch(struct wsl_kern_trace *t, unsigned slot, const struct wsl_event *ev)
{
    if (!launch_fast(t, slot, ev, false))
        kern_event_slow(t, WSL_KERN_LAUNCH, slot, ev);
}

void wsl_kern_trace_launch_ok(struct wsl_kern_trace *t, unsigned slot, const struct wsl_event *ev)
{
    if (!launch_fast(t, slot, ev, true))
        kern_event_slow(t, WSL_KERN_LAUNCH, slot, ev);
}

void wsl_kern_trace_launch_run_ok(struct wsl_kern_trace *t, const uint8_t *slot, const struct wsl_event *ev,
                                  uint32_t n, uint64_t end_max)
{
    /* launch_fast's common case with its state in registers: the launches and last_gpu counted once
     * for the run (every launch of result 0 counts one, on any path; last_gpu is read at the end) */
    uint64_t fast_after = t->fast_after;
    uintptr_t rows = (uintptr_t)t->rows + offsetof(struct launch_row, by_api); /* + a row's offset + 8 slot */
    uint32_t other = 0;
    for (uint32_t i = 0; i < n; i++) {
        const struct wsl_event *e = &ev[i];
        const uint64_t handle = e->a[0];
        const struct launch_cache_entry *c = &t->launched_cache[handle_cache_slot(handle)];
        if (__builtin_expect(e->t_start > fast_after && c->handle == handle && c->grid == e->a[1] &&
                                 c->block == e->a[2], 1)) {
            ((uint64_t *)(rows + c->row_offset))[slot[i]]++;
            continue;
        }
        wsl_kern_trace_launch_ok(t, slot[i], e); /* (a configuration change, a miss, before the first launch) */
        other++;
        fast_after = t->fast_after;
        rows = (uintptr_t)t->rows + offsetof(struct launch_row, by_api); /* (they may have grown) */
    }
    t->launches += n - other;
    if (end_max > t->last_gpu)
        t->last_gpu = end_max;
}

void wsl_kern_trace_chunk(struct wsl_kern_trace *t)
{
    if (t->op_max) { /* (a chunk without ops, or whose launches all missed, costs nothing) */
        memset(t->op_counter, 0, (t->op_max + 1) * sizeof *t->op_counter);
        t->op_max = 0;
    }
}

_Static_assert(WSL_PACK_TABLE_MAX < 256, "an op is a byte");
_Static_assert(offsetof(struct launch_row, by_api) > 0, "a counter's offset is never 0");

struct wsl_kern_op_view wsl_kern_trace_op_view(const struct wsl_kern_trace *t)
{
    return (struct wsl_kern_op_view){(uintptr_t)t->rows, t->fast_after};
}

const uint64_t *wsl_kern_trace_op_counters(const struct wsl_kern_trace *t)
{
    return t->op_counter;
}

void wsl_kern_trace_launch_op(struct wsl_kern_trace *t, unsigned slot, unsigned op, const struct wsl_event *e)
{
    const uint64_t handle = e->a[0];
    const struct launch_cache_entry *c = &t->launched_cache[handle_cache_slot(handle)];
    if (e->t_start > t->fast_after && c->handle == handle && c->grid == e->a[1] && c->block == e->a[2]) {
        cached_row(t, c)->by_api[slot]++;
        t->launches++;
    } else {
        wsl_kern_trace_launch_ok(t, slot, e); /* (a configuration change, a miss, before the first launch) */
    }
    if (op && c->handle == handle && c->grid == e->a[1] && c->block == e->a[2]) { /* (handle 0: slot 0 holds 1) */
        t->op_counter[op] = c->row_offset + offsetof(struct launch_row, by_api) + sizeof(uint64_t) * slot;
        t->op_max = op > t->op_max ? op : t->op_max;
    }
}

void wsl_kern_trace_launches_counted(struct wsl_kern_trace *t, uint64_t n, uint64_t end_max)
{
    t->launches += n;
    if (end_max > t->last_gpu)
        t->last_gpu = end_max;
}

void wsl_kern_trace_event(struct wsl_kern_trace *t, enum wsl_kern_op op, unsigned slot, const struct wsl_event *ev)
{
    if (op == WSL_KERN_LAUNCH && launch_fast(t, slot, ev, false))
        return;
    kern_event_slow(t, op, slot, ev);
}

/* The name of handle, or NULL: its own, or its kernel's (a few levels at most). */
static const char *handle_name(const struct wsl_kern_trace *t, uint64_t handle)
{
    for (int depth = 0; depth < 4 && handle; depth++) {
        const struct wsl_u64_slot *s = wsl_u64_map_find(&t->handles, handle);
        if (!s)
            return NULL;
        const struct handle_name *hn = &t->handles_v[s->value];
        if (hn->name_id) {
            const struct wsl_u64_slot *n = wsl_u64_map_find(&t->names, hn->name_id);
            return n ? t->arena + t->names_v[n->value].offset : NULL;
        }
        handle = hn->kernel;
    }
    return NULL;
}

/* ---- the run ------------------------------------------------------------------------------ */

static struct wsl_kernel *kernel_add(struct wsl_kernels *k)
{
    GROW(k->items, k->cap, k->count + 1); /* geometrically: one realloc per kernel was quadratic under ASan */
    struct wsl_kernel *kn = &k->items[k->count++];
    memset(kn, 0, sizeof *kn);
    return kn;
}

/* The kernel named `mangled`, added when new; NULL past WSL_KERN_MAX_KERNELS. */
static struct wsl_kernel *kernel_named(struct wsl_kernels *k, const char *mangled)
{
    uint64_t key = wsl_u64_map_string_key(mangled, strlen(mangled));
    for (const struct wsl_u64_slot *s = wsl_u64_map_find(&k->index, key); s; s = wsl_u64_map_find_next(&k->index, s))
        if (strcmp(k->items[s->value].mangled, mangled) == 0)
            return &k->items[s->value];
    if (k->count >= WSL_KERN_MAX_KERNELS)
        return NULL;
    wsl_u64_map_insert(&k->index, key, k->count);
    struct wsl_kernel *kn = kernel_add(k);
    kn->mangled = xstrdup(mangled);
    kn->name = wsl_kern_demangle(mangled);
    return kn;
}

static uint64_t mean_of(const struct wsl_hist *h) { return h->count ? h->sum / h->count : 0; }

struct pair_measure {
    double diff;        /* queued mean - idle mean, ticks */
    uint64_t weight;    /* the fewer of the two counts */
};

static int by_diff(const void *a, const void *b)
{
    const struct pair_measure *x = a, *y = b;
    return x->diff < y->diff ? -1 : x->diff > y->diff;
}

/* D, in ticks (0: not measured): how much longer a configuration's queued timed launches measure
 * than its idle ones. A launch that found the GPU idle is measured from its launch call's return
 * to the end event, and the kernel may have started before that return (the short kernels of
 * GPT-2 on the H100 host came out about 2.4 us under CUPTI's time); one queued behind other
 * work is measured from the start event, which the GPU ran before it fetched and started the
 * kernel (2.2-3.7 us over CUPTI's there). One configuration of one kernel runs alike either way
 * (1-3%), so the difference of its queued and idle means measures the sum of the two; the
 * weighted median over the configurations timed both ways is the process's. */
static uint64_t pair_overhead_ticks(const struct wsl_kern_trace *t, struct wsl_kern_gpu_use *use)
{
    /* Measured always (reported); used as wsl_kern_pairs says. */
    struct pair_measure *m = xcalloc(t->rows_count ? t->rows_count : 1, sizeof *m);
    size_t n = 0;
    uint64_t weight = 0;
    for (size_t i = 0; i < t->rows_count; i++) {
        const struct launch_row *r = &t->rows[i];
        uint64_t q = r->timed - r->timed_idle;
        if (!r->config || r->timed_idle < WSL_KERN_PAIR_MIN || q < WSL_KERN_PAIR_MIN)
            continue;
        m[n].diff = (double)(r->timed_ticks - r->idle_ticks) / (double)q - (double)r->idle_ticks / (double)r->timed_idle;
        m[n].weight = q < r->timed_idle ? q : r->timed_idle;
        weight += m[n++].weight;
    }
    uint64_t ticks = 0;
    if (weight >= WSL_KERN_PAIR_MIN_WEIGHT) {
        qsort(m, n, sizeof *m, by_diff);
        uint64_t acc = 0;
        size_t k = 0;
        while (k < n && (acc += m[k].weight) * 2 < weight)
            k++;
        ticks = m[k].diff > 0 ? (uint64_t)m[k].diff : 0;
        use->pair_groups = n;
        use->pair_weight = weight;
    }
    free(m);
    return ticks;
}

enum wsl_kern_pairs wsl_kern_pairs = WSL_KERN_PAIRS_FIXED;
double wsl_kern_fixed_idle_ns = WSL_KERN_FIXED_IDLE_NS, wsl_kern_fixed_queued_ns = WSL_KERN_FIXED_QUEUED_NS;

/* The D the estimates adjust by in the split and queued modes: the measure, unless told to leave
 * the measures alone. D also holds what a configuration's queued launches really run longer than
 * its idle ones: a LLaMA loop timed at every launch measured D 6.7 us where the two parts it stands
 * for were 0.7 and 2.6 us launch by launch, and the split put its estimate 66% over CUPTI's; the
 * fixed parts (the default) 4.3%; over 21 H100 runs of six programs fixed was at worst 12.8% off,
 * split 66.3% (docs/gpu-timing.md). */
static uint64_t taken_off(uint64_t measured) { return wsl_kern_pairs == WSL_KERN_PAIRS_NONE ? 0 : measured; }

/* The D of a configuration: its own measure where it was timed often enough both ways (it
 * differs by kernel: 2.0-3.7 us on the H100 host), else the process's. */
static uint64_t row_overhead(const struct launch_row *r, uint64_t process)
{
    uint64_t q = r->timed - r->timed_idle;
    if (!process || r->timed_idle < WSL_KERN_PAIR_OWN || q < WSL_KERN_PAIR_OWN)
        return process;
    double d = (double)(r->timed_ticks - r->idle_ticks) / (double)q - (double)r->idle_ticks / (double)r->timed_idle;
    return d > 0 ? (uint64_t)d : 0;
}

/* What one timed launch's measure gets for D, queued or idle (ticks; FIXED: its two parts in ns, D
 * apart). */
static int64_t adjust_one(uint64_t d, bool idle, double ns_per_tick)
{
    if (wsl_kern_pairs == WSL_KERN_PAIRS_FIXED) {
        double v = (idle ? wsl_kern_fixed_idle_ns : -wsl_kern_fixed_queued_ns) / ns_per_tick;
        return v > -1e15 && v < 1e15 ? (int64_t)llround(v) : 0; /* NaN, or a damaged trace's rate */
    }
    if (!d)
        return 0;
    if (d > INT64_MAX)
        d = INT64_MAX;
    if (wsl_kern_pairs == WSL_KERN_PAIRS_SPLIT)
        return idle ? (int64_t)(d / 2) : -(int64_t)(d / 2);
    return idle ? 0 : -(int64_t)d;
}

/* Ticks of timed launches, `queued` and `idle` of them, each adjusted for D (never below 0). */
static uint64_t adjusted(uint64_t ticks, uint64_t queued, uint64_t idle, uint64_t d, double ns_per_tick)
{
    double v = (double)ticks + (double)adjust_one(d, true, ns_per_tick) * (double)idle +
               (double)adjust_one(d, false, ns_per_tick) * (double)queued;
    return v <= 0 ? 0 : v >= 18446744073709549568.0 ? UINT64_MAX : (uint64_t)v;
}

/* Nanoseconds from a product with a trace's clock rate, which a damaged trace
 * can make anything: 0 for NaN or negative, UINT64_MAX past it. */
static uint64_t ns_saturated(double v)
{
    if (!(v > 0))
        return 0;
    return v >= 18446744073709549568.0 ? UINT64_MAX : (uint64_t)v;
}

/* ---- the estimate per launch, for the other outputs ---------------------------------------- */

static struct wsl_kern_estimate_row *estimate_row_add(struct wsl_kern_estimate *e, uint64_t handle, uint32_t config)
{
    GROW(e->rows, e->row_cap, e->row_count + 1);
    struct wsl_kern_estimate_row *r = &e->rows[e->row_count];
    memset(r, 0, sizeof *r);
    r->handle = handle;
    r->config = config;
    wsl_u64_map_insert(&e->index, config_key(handle, config), e->row_count++);
    return r;
}

static const struct wsl_kern_estimate_row *estimate_row(const struct wsl_kern_estimate *e, uint64_t handle,
                                                        uint32_t config)
{
    uint64_t key = config_key(handle, config);
    for (const struct wsl_u64_slot *s = wsl_u64_map_find(&e->index, key); s; s = wsl_u64_map_find_next(&e->index, s))
        if (e->rows[s->value].handle == handle && e->rows[s->value].config == config)
            return &e->rows[s->value];
    return NULL;
}

/* The means per configuration, per function and per process; wsl_kern_trace_merge takes its
 * estimates from here. */
void wsl_kern_estimate_build(const struct wsl_kern_trace *t, double ns_per_tick, struct wsl_kern_estimate *e)
{
    memset(e, 0, sizeof *e);
    e->ns_per_tick = ns_per_tick;
    struct wsl_kern_gpu_use use;
    memset(&use, 0, sizeof use);
    uint64_t over = taken_off(pair_overhead_ticks(t, &use));
    e->pair_overhead_ticks = over;
    e->pair_overhead_ns = ns_saturated((double)over * ns_per_tick);
    uint64_t all_ticks = 0, all_count = 0;
    for (size_t i = 0; i < t->timed.count; i++) {
        const struct handle_timing *ht = &t->timed_v[i];
        uint64_t ticks = adjusted(ht->ticks.sum, ht->ticks.count - ht->idle, ht->idle, over, ns_per_tick);
        all_ticks += ticks;
        all_count += ht->ticks.count;
        if (!ht->ticks.count)
            continue;
        struct wsl_kern_estimate_row *r = estimate_row_add(e, ht->handle, 0);
        r->timed = ht->ticks.count;
        r->mean_ns = ns_saturated((double)ticks / (double)ht->ticks.count * ns_per_tick);
        r->overhead_ticks = over;
        r->overhead_ns = e->pair_overhead_ns;
    }
    e->kernels_timed = all_count;
    e->kernel_mean_ns = all_count ? ns_saturated((double)all_ticks / (double)all_count * ns_per_tick) : 0;
    if (t->graphs_timed) {
        struct wsl_hist g;
        memset(&g, 0, sizeof g);
        wsl_hist_merge_scaled(&g, &t->graph_ticks, ns_per_tick);
        e->graphs_timed = g.count;
        e->graph_mean_ns = mean_of(&g);
        wsl_hist_free(&g);
    }
    e->configs = t->config_timed_untracked > 0;
    for (size_t i = 0; i < t->rows_count; i++) {
        const struct launch_row *lr = &t->rows[i];
        if (!lr->config || !lr->timed)
            continue;
        e->configs = true;
        uint64_t ov = row_overhead(lr, over);
        struct wsl_kern_estimate_row *r = estimate_row_add(e, lr->handle, lr->config);
        r->timed = lr->timed;
        r->mean_ns = ns_saturated((double)adjusted(lr->timed_ticks, lr->timed - lr->timed_idle, lr->timed_idle, ov, ns_per_tick) /
                                  (double)lr->timed * ns_per_tick);
        r->overhead_ticks = ov;
        r->overhead_ns = ns_saturated((double)ov * ns_per_tick);
    }
}

/* The sampling variance (ticks^2) of a configuration's estimate over `run` launches: the variance
 * of its timed measures, each adjusted for D as the estimate adjusts it, over the timed ones,
 * times run^2 and the finite population's correction (1 - timed / run). 0 when timed fewer than
 * twice. */
static double row_variance(const struct launch_row *r, uint64_t d, uint64_t run, double ns_per_tick)
{
    uint64_t n = r->timed, ni = r->timed_idle, nq = n - ni;
    if (n < 2 || run <= n)
        return 0;
    double ai = (double)adjust_one(d, true, ns_per_tick), aq = (double)adjust_one(d, false, ns_per_tick);
    double si = (double)r->idle_ticks, sq = (double)(r->timed_ticks - r->idle_ticks);
    double qi = r->idle_sq, qq = r->timed_sq - r->idle_sq;
    double sum = si + (double)ni * ai + sq + (double)nq * aq;
    double sum2 = qi + 2 * ai * si + (double)ni * ai * ai + qq + 2 * aq * sq + (double)nq * aq * aq;
    double var = (sum2 - sum * sum / (double)n) / (double)(n - 1);
    if (!(var > 0))
        return 0;
    return var / (double)n * (double)run * (double)run * (1.0 - (double)n / (double)run);
}

void wsl_kern_trace_merge(const struct wsl_kern_trace *t, struct wsl_kernels *k, int32_t pid, double ns_per_tick,
                          struct wsl_kern_gpu_use *use)
{
    memset(use, 0, sizeof *use);
    uint64_t measured = pair_overhead_ticks(t, use), over = taken_off(measured);
    use->pair_overhead_ns = ns_saturated((double)measured * ns_per_tick);
    /* The means (the measures adjusted for D as wsl_kern_pairs says) are the
     * estimate's, which the other outputs use launch by launch: the process's mean is the
     * estimate for handles that were launched but never timed. */
    struct wsl_kern_estimate e;
    wsl_kern_estimate_build(t, ns_per_tick, &e);
    uint64_t mean_all = e.kernel_mean_ns;
    struct wsl_hist all;
    memset(&all, 0, sizeof all);
    for (size_t i = 0; i < t->timed.count; i++)
        wsl_hist_merge_scaled(&all, &t->timed_v[i].ticks, ns_per_tick);
    wsl_hist_merge_scaled(&k->kernel_ns, &all, 1.0);
    wsl_hist_free(&all);
    use->kernels_timed = 0;
    for (size_t i = 0; i < t->timed.count; i++)
        use->kernels_timed += t->timed_v[i].ticks.count;
    use->kernels_timed += t->timed_untracked;
    use->graphs_timed = t->graphs_timed;
    use->idle_at_submit = t->idle + t->graph_idle;
    use->mapped = t->mapped;
    if (t->graphs_timed) {
        struct wsl_hist g;
        memset(&g, 0, sizeof g);
        wsl_hist_merge_scaled(&g, &t->graph_ticks, ns_per_tick);
        use->est_gpu_ns += mean_of(&g) * t->graph;
        wsl_hist_merge_scaled(&k->graph_ns, &g, 1.0);
        wsl_hist_free(&g);
    }
    wsl_hist_merge_scaled(&k->idle_start_ns, &t->start_ticks, ns_per_tick);
    wsl_hist_merge_scaled(&k->idle_start_before_ns, &t->before_ticks, ns_per_tick);
    k->kernels_timed += use->kernels_timed;
    if (use->pair_groups && use->pair_weight > k->pair_weight) {
        k->pair_overhead_ns = use->pair_overhead_ns;
        k->pair_groups = use->pair_groups;
        k->pair_weight = use->pair_weight;
    }
    if (over || wsl_kern_pairs == WSL_KERN_PAIRS_FIXED)
        for (size_t i = 0; i < t->timed.count; i++)
            k->pair_corrected += t->timed_v[i].ticks.count - (wsl_kern_pairs == WSL_KERN_PAIRS_QUEUED ? t->timed_v[i].idle : 0);
    k->graphs_timed += use->graphs_timed;
    k->idle_at_submit += use->idle_at_submit;
    k->mapped += use->mapped;
    /* launches of a null handle or past the caps: the process's mean */
    use->est_gpu_ns += mean_all * (t->null_handle + t->untracked);
    k->launches += t->launches;
    k->failed_launches += t->failed;
    k->graph_launches += t->graph;
    k->captured_launches += t->captured;
    k->untracked_launches += t->untracked;
    k->unnamed_launches += t->null_handle;
    k->named_handles += t->handles.count;
    k->dropped_names += t->dropped_names;
    /* Each handle's rows summed into its own row's entry: its launches, and those of its
     * configurations that were timed (outside capture) with their estimated GPU time, each
     * such configuration's launches x its mean. The rest take the handle's mean. */
    struct handle_sum {
        uint64_t by_api[WSL_KERN_LAUNCH_APIS];
        uint64_t captured, by_config, by_config_est;
        double var;             /* of by_config_est, ticks^2 */
    } *sum = xcalloc(t->rows_count ? t->rows_count : 1, sizeof *sum);
    k->config_untracked += t->config_timed_untracked;
    for (size_t i = 0; i < t->rows_count; i++) {
        const struct launch_row *r = &t->rows[i];
        size_t own = i;
        if (r->config) {
            const struct wsl_u64_slot *ls = wsl_u64_map_find(&t->launched, r->handle);
            if (!ls)
                continue; /* timed, never launched (or its handle past the cap) */
            own = ls->value;
        }
        uint64_t n = 0;
        for (unsigned a = 0; a < WSL_KERN_LAUNCH_APIS; a++) {
            sum[own].by_api[a] += r->by_api[a];
            n += r->by_api[a];
        }
        sum[own].captured += r->captured;
        if (!r->config)
            k->config_untracked += n;
        else if (r->timed && n > r->captured) {
            uint64_t run = n - r->captured;
            sum[own].by_config += run;
            sum[own].by_config_est += estimate_row(&e, r->handle, r->config)->mean_ns * run;
            double var = row_variance(r, row_overhead(r, over), run, ns_per_tick);
            sum[own].var += var;
            use->est_var_ns2 += var * ns_per_tick * ns_per_tick;
            use->est_var_known = true;
        }
    }
    for (size_t i = 0; i < t->rows_count; i++) {
        if (t->rows[i].config)
            continue;
        const struct handle_sum *hs = &sum[i];
        uint64_t handle = t->rows[i].handle, n = 0;
        for (unsigned a = 0; a < WSL_KERN_LAUNCH_APIS; a++)
            n += hs->by_api[a];
        uint64_t run_n = n - hs->captured; /* captured ones run inside graph launches */
        const char *name = handle_name(t, handle);
        struct wsl_kernel *kn;
        if (name) {
            kn = kernel_named(k, name);
        } else {
            k->unnamed_launches += n;
            kn = k->count < WSL_KERN_MAX_KERNELS ? kernel_add(k) : NULL;
            if (kn) {
                kn->pid = pid;
                kn->handle = handle;
                kn->name = xasprintf("function 0x%llx", (unsigned long long)handle);
            }
        }
        const struct wsl_u64_slot *ts = wsl_u64_map_find(&t->timed, handle);
        const struct handle_timing *ht = ts ? &t->timed_v[ts->value] : NULL;
        const struct wsl_kern_estimate_row *er = ht && ht->ticks.count ? estimate_row(&e, handle, 0) : NULL;
        uint64_t mean = er ? er->mean_ns : mean_all;
        uint64_t est = hs->by_config_est + mean * (run_n - hs->by_config);
        use->est_gpu_ns += est;
        if (!kn) {
            k->untracked_launches += n;
            continue;
        }
        kn->launches += n;
        kn->captured += hs->captured;
        kn->est_gpu_ns += est;
        kn->est_var_ns2 += hs->var * ns_per_tick * ns_per_tick;
        if (ht) {
            kn->idle_at_submit += ht->idle;
            wsl_hist_merge_scaled(&kn->gpu_ns, &ht->ticks, ns_per_tick);
        }
        for (unsigned a = 0; a < WSL_KERN_LAUNCH_APIS; a++)
            kn->by_api[a] += hs->by_api[a];
    }
    free(sum);
    wsl_kern_estimate_free(&e);
    k->est_gpu_ns += use->est_gpu_ns;
    k->est_var_ns2 += use->est_var_ns2;
    k->est_var_known |= use->est_var_known;
    if (t->first_launch && t->last_gpu > t->first_launch)
        use->gpu_phase_ns = ns_saturated((double)(t->last_gpu - t->first_launch) * ns_per_tick);
}

void wsl_kern_estimate_free(struct wsl_kern_estimate *e)
{
    wsl_u64_map_free(&e->index);
    free(e->rows);
    memset(e, 0, sizeof *e);
}

enum wsl_kern_basis wsl_kern_estimate_launch(const struct wsl_kern_estimate *e, uint64_t handle, uint32_t config,
                                             uint64_t *ns, uint64_t *based_on)
{
    const struct wsl_kern_estimate_row *r = handle && config ? estimate_row(e, handle, config) : NULL;
    if (r) {
        *ns = r->mean_ns, *based_on = r->timed;
        return WSL_KERN_BASIS_CONFIG;
    }
    if (handle && (r = estimate_row(e, handle, 0)) != NULL) {
        *ns = r->mean_ns, *based_on = r->timed;
        return WSL_KERN_BASIS_HANDLE;
    }
    *ns = e->kernel_mean_ns, *based_on = e->kernels_timed;
    return e->kernels_timed ? WSL_KERN_BASIS_PROCESS : WSL_KERN_BASIS_NONE;
}

int64_t wsl_kern_estimate_adjust_ticks(const struct wsl_kern_estimate *e, uint64_t handle, uint32_t config, bool idle)
{
    const struct wsl_kern_estimate_row *r = handle && config ? estimate_row(e, handle, config) : NULL;
    uint64_t d = r ? r->overhead_ticks : e->pair_overhead_ticks;
    return adjust_one(d, idle, e->ns_per_tick);
}

int64_t wsl_kern_estimate_event_adjust(const struct wsl_kern_estimate *e, const struct wsl_event *ev)
{
    uint64_t flags = ev->a[2] & 0xffffffffu;
    if (flags & WSL_GPU_GRAPH)
        return 0;
    return wsl_kern_estimate_adjust_ticks(e, ev->a[0], (uint32_t)ev->result, (flags & WSL_GPU_IDLE_AT_SUBMIT) != 0);
}

void wsl_kern_trace_end(struct wsl_kern_trace *t, struct wsl_kernels *k, int32_t pid, double ns_per_tick,
                        struct wsl_kern_gpu_use *use)
{
    wsl_kern_trace_merge(t, k, pid, ns_per_tick, use);
    wsl_kern_trace_discard(t);
}

void wsl_kern_trace_discard(struct wsl_kern_trace *t)
{
    if (!t)
        return;
    wsl_u64_map_free(&t->names);
    wsl_u64_map_free(&t->handles);
    wsl_u64_map_free(&t->launched);
    for (size_t i = 0; i < t->timed.count; i++)
        wsl_hist_free(&t->timed_v[i].ticks);
    wsl_u64_map_free(&t->timed);
    free(t->timed_v);
    wsl_u64_map_free(&t->configs);
    wsl_hist_free(&t->graph_ticks);
    wsl_hist_free(&t->start_ticks);
    wsl_hist_free(&t->before_ticks);
    free(t->names_v);
    free(t->arena);
    free(t->handles_v);
    free(t->rows);
    free(t);
}

static int by_launches(const void *a, const void *b)
{
    const struct wsl_kernel *x = a, *y = b;
    if (x->launches != y->launches)
        return x->launches > y->launches ? -1 : 1;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    return x->pid < y->pid ? -1 : x->pid > y->pid;
}

void wsl_kern_finish(struct wsl_kernels *k)
{
    /* The name index points into items: it is not used after sorting. */
    wsl_u64_map_free(&k->index);
    if (k->count > 1)
        qsort(k->items, k->count, sizeof *k->items, by_launches);
    k->covered_launches = k->estimated_launches = k->estimated_gpu_ns = 0;
    for (size_t i = 0; i < k->count; i++) {
        const struct wsl_kernel *kn = &k->items[i];
        uint64_t run = kn->launches > kn->captured ? kn->launches - kn->captured : 0;
        if (kn->gpu_ns.count >= WSL_KERN_COVERED)
            k->covered_launches += run;
        else if (!kn->gpu_ns.count) {
            k->estimated_launches += run;
            k->estimated_gpu_ns += kn->est_gpu_ns;
        }
    }
}

void wsl_kern_free(struct wsl_kernels *k)
{
    for (size_t i = 0; i < k->count; i++) {
        free(k->items[i].mangled);
        free(k->items[i].name);
        wsl_hist_free(&k->items[i].gpu_ns);
    }
    wsl_hist_free(&k->kernel_ns);
    wsl_hist_free(&k->graph_ns);
    wsl_hist_free(&k->idle_start_ns);
    wsl_hist_free(&k->idle_start_before_ns);
    free(k->items);
    for (unsigned i = 0; i < k->launch_api_count; i++)
        free(k->launch_apis[i]);
    wsl_u64_map_free(&k->index);
    memset(k, 0, sizeof *k);
}
