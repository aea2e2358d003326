/*
 * Kernel launches per name. Per trace three maps (u64_map.h, no deletions)
 * of key -> index into a dense array: name id -> name bytes (in one arena),
 * handle -> how it was named, handle -> launches per API. Names are looked up
 * once, at the end of the trace.
 */
#include "kernel_analysis.h"
#include "u64_map.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "wslshim/trace_format.h"

/* libstdc++'s demangler (the analyzer links libstdc++ for it). */
char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

enum wsl_kern_op wsl_kern_op_of(unsigned category, const char *base)
{
    if (category == WSL_CAT_OTHER && base) {
        if (!strcmp(base, "cuStreamBeginCapture") || !strcmp(base, "cuStreamBeginCaptureToGraph"))
            return WSL_KERN_CAPTURE_BEGIN;
        if (!strcmp(base, "cuStreamEndCapture"))
            return WSL_KERN_CAPTURE_END;
    }
    switch (category) {
    case WSL_CAT_FUNC_NAME: return WSL_KERN_FUNC_NAME;
    case WSL_CAT_LAUNCH: return WSL_KERN_LAUNCH;
    case WSL_CAT_GRAPH: return WSL_KERN_GRAPH;
    case WSL_CAT_GPU_KERNEL: return WSL_KERN_GPU_TIME;
    default: return WSL_KERN_NONE;
    }
}

char *wsl_kern_demangle(const char *mangled)
{
    if (mangled[0] == '_' && mangled[1] == 'Z') {
        int status = -1;
        char *d = __cxa_demangle(mangled, NULL, NULL, &status);
        if (d && status == 0) {
            char *copy = xstrdup(d);    /* xstrdup'd: callers free with the rest */
            free(d);
            return copy;
        }
        free(d);
    }
    return xstrdup(mangled);
}

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

struct handle_launches {
    uint64_t handle;
    uint64_t by_api[WSL_KERN_LAUNCH_APIS];
    uint64_t captured;
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
    struct wsl_u64_map launched;  /* handle -> launched_v */
    struct handle_launches *launched_v;
    size_t launched_cap;
    uint64_t launches, failed, graph, untracked, null_handle, dropped_names;
    struct wsl_u64_map timed;     /* handle -> timed_v */
    struct handle_timing *timed_v;
    size_t timed_cap;
    uint64_t timed_untracked, idle, mapped, graphs_timed, graph_idle;
    struct wsl_hist graph_ticks;
    struct wsl_hist start_ticks;  /* idle, mapped launches: GPU start - launch call start */
    struct wsl_hist before_ticks; /* of them, placed before the call began (mapping error): by how much */
    uint64_t first_launch, last_gpu; /* ticks: the GPU phase (first_launch 0: none yet) */
    uint64_t capturing[MAX_CAPTURING]; /* streams between capture begin and end */
    unsigned ncapturing;
    uint64_t captured;
    /* Recently used handles of `launched` and `timed`, by a few bits of the
     * handle: most events skip the hash lookup. Entries never go stale (the
     * maps only grow); handle 0 marks an empty entry. */
    struct handle_cache_entry {
        uint64_t handle;
        uint64_t index;
    } launched_cache[HANDLE_CACHE_SIZE], timed_cache[HANDLE_CACHE_SIZE];
};

/* Handles are pointers, their low bits often equal: a multiplicative hash
 * takes the slot from the top bits of the product. */
static inline unsigned handle_cache_slot(uint64_t handle)
{
    return (unsigned)((handle * 0x9e3779b97f4a7c15ull) >> (64 - HANDLE_CACHE_BITS));
}

/* The dense index of handle (not 0) in map, through cache; UINT64_MAX when
 * the map lacks it. */
static inline uint64_t cached_index(struct handle_cache_entry *cache, const struct wsl_u64_map *map, uint64_t handle)
{
    struct handle_cache_entry *c = &cache[handle_cache_slot(handle)];
    if (c->handle == handle)
        return c->index;
    const struct wsl_u64_slot *s = wsl_u64_map_find(map, handle);
    if (!s)
        return UINT64_MAX;
    c->handle = handle;
    c->index = s->value;
    return s->value;
}

struct wsl_kern_trace *wsl_kern_trace_begin(void) { return xcalloc(1, sizeof(struct wsl_kern_trace)); }

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
    uint64_t index = cached_index(t->launched_cache, &t->launched, handle);
    if (index == UINT64_MAX) {
        if (t->launched.count >= WSL_KERN_MAX_HANDLES) {
            t->untracked++;
            return;
        }
        GROW(t->launched_v, t->launched_cap, t->launched.count + 1);
        struct handle_launches *hl = &t->launched_v[t->launched.count];
        memset(hl, 0, sizeof *hl);
        hl->handle = handle;
        index = t->launched.count;
        wsl_u64_map_insert(&t->launched, handle, index);
    }
    t->launched_v[index].by_api[slot < WSL_KERN_LAUNCH_APIS ? slot : WSL_KERN_LAUNCH_APIS - 1]++;
    t->launched_v[index].captured += captured;
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

static void take_gpu_time(struct wsl_kern_trace *t, const struct wsl_event *ev)
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
    uint64_t index = handle ? cached_index(t->timed_cache, &t->timed, handle) : UINT64_MAX;
    if (index == UINT64_MAX) {
        if (!handle || t->timed.count >= WSL_KERN_MAX_TIMED) {
            t->timed_untracked++;
            return;
        }
        GROW(t->timed_v, t->timed_cap, t->timed.count + 1);
        struct handle_timing *ht = &t->timed_v[t->timed.count];
        memset(ht, 0, sizeof *ht);
        ht->handle = handle;
        index = t->timed.count;
        wsl_u64_map_insert(&t->timed, handle, index);
    }
    struct handle_timing *ht = &t->timed_v[index];
    ht->idle += idle;
    wsl_hist_add(&ht->ticks, dur);
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
}

void wsl_kern_trace_event(struct wsl_kern_trace *t, enum wsl_kern_op op, unsigned slot, const struct wsl_event *ev)
{
    /* Most events: a successful launch of a handle in the cache, outside any
     * capture, after the first launch. It does what kern_event_slow would do
     * for it (first_launch stays, no capture to count) without its calls. */
    uint64_t handle = ev->a[0];
    if (op == WSL_KERN_LAUNCH && ev->result == 0 && handle && !t->ncapturing && t->first_launch &&
        ev->t_start >= t->first_launch) {
        const struct handle_cache_entry *c = &t->launched_cache[handle_cache_slot(handle)];
        if (c->handle == handle) {
            if (ev->t_end > t->last_gpu)
                t->last_gpu = ev->t_end;
            t->launches++;
            t->launched_v[c->index].by_api[slot < WSL_KERN_LAUNCH_APIS ? slot : WSL_KERN_LAUNCH_APIS - 1]++;
            return;
        }
    }
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
    k->items = xrealloc(k->items, (k->count + 1) * sizeof *k->items);
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

/* Nanoseconds from a product with a trace's clock rate, which a damaged trace
 * can make anything: 0 for NaN or negative, UINT64_MAX past it. */
static uint64_t ns_saturated(double v)
{
    if (!(v > 0))
        return 0;
    return v >= 18446744073709549568.0 ? UINT64_MAX : (uint64_t)v;
}

void wsl_kern_trace_merge(const struct wsl_kern_trace *t, struct wsl_kernels *k, int32_t pid, double ns_per_tick,
                          struct wsl_kern_gpu_use *use)
{
    memset(use, 0, sizeof *use);
    /* Mean GPU time of every timed kernel of the process, in ns: the estimate
     * for handles that were launched but never timed. */
    struct wsl_hist all;
    memset(&all, 0, sizeof all);
    for (size_t i = 0; i < t->timed.count; i++)
        wsl_hist_merge_scaled(&all, &t->timed_v[i].ticks, ns_per_tick);
    uint64_t mean_all = mean_of(&all);
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
    for (size_t i = 0; i < t->launched.count; i++) {
        const struct handle_launches *hl = &t->launched_v[i];
        uint64_t n = 0;
        for (unsigned a = 0; a < WSL_KERN_LAUNCH_APIS; a++)
            n += hl->by_api[a];
        uint64_t run_n = n - hl->captured; /* captured ones run inside graph launches */
        const char *name = handle_name(t, hl->handle);
        struct wsl_kernel *kn;
        if (name) {
            kn = kernel_named(k, name);
        } else {
            k->unnamed_launches += n;
            kn = k->count < WSL_KERN_MAX_KERNELS ? kernel_add(k) : NULL;
            if (kn) {
                kn->pid = pid;
                kn->handle = hl->handle;
                kn->name = xasprintf("function 0x%llx", (unsigned long long)hl->handle);
            }
        }
        const struct wsl_u64_slot *ts = wsl_u64_map_find(&t->timed, hl->handle);
        const struct handle_timing *ht = ts ? &t->timed_v[ts->value] : NULL;
        uint64_t est = 0;
        if (ht && ht->ticks.count)
            est = ns_saturated((double)ht->ticks.sum / (double)ht->ticks.count * ns_per_tick) * run_n;
        else
            est = mean_all * run_n;
        use->est_gpu_ns += est;
        if (!kn) {
            k->untracked_launches += n;
            continue;
        }
        kn->launches += n;
        kn->captured += hl->captured;
        kn->est_gpu_ns += est;
        if (ht) {
            kn->idle_at_submit += ht->idle;
            wsl_hist_merge_scaled(&kn->gpu_ns, &ht->ticks, ns_per_tick);
        }
        for (unsigned a = 0; a < WSL_KERN_LAUNCH_APIS; a++)
            kn->by_api[a] += hl->by_api[a];
    }
    k->est_gpu_ns += use->est_gpu_ns;
    if (t->first_launch && t->last_gpu > t->first_launch)
        use->gpu_phase_ns = ns_saturated((double)(t->last_gpu - t->first_launch) * ns_per_tick);
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
    wsl_hist_free(&t->graph_ticks);
    wsl_hist_free(&t->start_ticks);
    wsl_hist_free(&t->before_ticks);
    free(t->names_v);
    free(t->arena);
    free(t->handles_v);
    free(t->launched_v);
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

const char *wsl_kern_framework(const struct wsl_kernels *k)
{
    uint64_t torch = 0, jax = 0, cupy = 0, triton = 0;
    for (size_t i = 0; i < k->count; i++) {
        const struct wsl_kernel *kn = &k->items[i];
        const char *n = kn->mangled ? kn->mangled : "";
        if (strstr(n, "at6native") || strstr(n, "at::native") || strstr(n, "at_cuda_detail") || strstr(n, "2at") ||
            strstr(n, "c10"))
            torch += kn->launches;
        else if (strstr(n, "cupy"))
            cupy += kn->launches;
        else if (strstr(n, "_fusion") || strstr(n, "fusion_") || !strncmp(n, "wrapped_", 8) || !strncmp(n, "loop_", 5) ||
                 !strncmp(n, "input_", 6) || strstr(n, "xla"))
            jax += kn->launches;
        else if (!strncmp(n, "triton_", 7) || strstr(n, "triton"))
            triton += kn->launches;
    }
    uint64_t best = torch;
    const char *name = torch ? "pytorch" : NULL;
    if (jax > best)
        best = jax, name = "jax";
    if (cupy > best)
        best = cupy, name = "cupy";
    if (triton > best && !torch)
        name = "triton";
    return name;
}

const char *wsl_kern_fewer_launches_advice(const char *fw)
{
    if (fw && !strcmp(fw, "jax"))
        return "Hand XLA whole computations, not single operations: jax.jit the training or update step (and the "
               "function around a Python loop), express loops with jax.lax.scan or jax.lax.fori_loop instead of "
               "Python for-loops, keep arrays on the device, and call block_until_ready() only where a result is "
               "needed.";
    if (fw && !strcmp(fw, "cupy"))
        return "Fuse array expressions into one kernel (cupy.fuse, cupy.ElementwiseKernel or a RawKernel), work on "
               "larger arrays per call, and replay a fixed sequence of kernels as a CUDA graph "
               "(cupy.cuda.Stream.begin_capture / end_capture, then graph.launch()).";
    if (fw && !strcmp(fw, "pytorch"))
        return "Cut the Python and framework work per operation: capture the step into a CUDA graph and replay it "
               "(torch.cuda.graphs, or torch.compile(model, mode=\"reduce-overhead\"), which does it for you); "
               "torch.compile(model) fuses operations into fewer kernels; fused optimizers (fused=True or "
               "foreach=True); a larger batch so each kernel does more.";
    return "Submit fewer, larger pieces of work: fuse operations into fewer kernels, replay a fixed sequence of "
           "kernels as a CUDA graph (cuStreamBeginCapture / cuGraphLaunch), and give each kernel more work.";
}
