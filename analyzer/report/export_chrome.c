/*
 * Chrome trace event export (export_chrome.h). Per trace, two passes over
 * the file through the reader:
 *   scan   the process, the API table, the clock fit, kernel names (FUNC_NAME
 *          events and their PATHS strings), event counts and the last time;
 *   write  metadata, then every event as it is decoded, with the final clock
 *          fit of the scan; memory events go through a bounded min-heap that
 *          restores time order across threads for the memory counter.
 * A third, counting pass runs only when the run is over the limit and a
 * window was given (the window's count needs the final clock fit).
 */
#define _GNU_SOURCE
#include "export_chrome.h"
#include "output_file.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "analysis.h"
#include "rules.h"
#include "io_analysis.h"
#include "json_writer.h"
#include "kernel_analysis.h"
#include "memory_analysis.h"
#include "trace_reader.h"
#include "u64_map.h"
#include "util.h"

#define NAME_BYTES_MAX (256u << 20)     /* kernel names, and paths, kept per trace */
#define MEM_WINDOW 65536u               /* memory events held to restore time order */
#define GPU_TID_BASE 1000000000u        /* stream tracks: tids no Linux thread has */
#define GPU_SORT_BASE 1000000           /* stream tracks after the threads */
#define IO_BINS_MAX (10u << 20)         /* 100 ms bins: about 12 days */
#define LABEL_MAX 120                   /* bytes of command line in a process name */
#define EST_TID_BASE 1500000000u        /* estimated-kernel tracks, one per stream */
#define EST_SORT_BASE 2000000           /* after the measured stream tracks */
#define PHASE_TID 999999999u            /* the phases track of a process */
#define TIMED_LAUNCHES_MAX (1u << 21)   /* timed launches remembered per trace (a map of 64 MiB at most) */
#define KERNEL_STATS_MAX 65536u         /* functions with their own mean GPU time, per trace */
#define NVTX_DEPTH_MAX 128u             /* open push ranges shown per thread */
#define NVTX_STARTS_MAX (1u << 20)      /* start/end ranges open at once, per trace */

/* ---- id -> string tables (kernel names, paths) --------------------------------------------- */

struct name_table {
    struct wsl_u64_map ids;     /* id -> offset + 1 into arena */
    char *arena;
    size_t used, cap;
    uint64_t dropped;           /* entries past NAME_BYTES_MAX */
};

static void names_put(struct name_table *t, uint64_t id, const char *bytes, size_t n)
{
    if (!id || wsl_u64_map_find(&t->ids, id))
        return;
    if (t->used + n + 1 > NAME_BYTES_MAX) {
        t->dropped++;
        return;
    }
    if (t->used + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 4096;
        while (cap < t->used + n + 1)
            cap *= 2;
        t->arena = xrealloc(t->arena, cap);
        t->cap = cap;
    }
    memcpy(t->arena + t->used, bytes, n);
    t->arena[t->used + n] = 0;
    wsl_u64_map_insert(&t->ids, id, t->used + 1);
    t->used += n + 1;
}

static const char *names_get(const struct name_table *t, uint64_t id)
{
    struct wsl_u64_slot *s = id ? wsl_u64_map_find(&t->ids, id) : NULL;
    return s ? t->arena + s->value - 1 : NULL;
}

static void names_free(struct name_table *t)
{
    wsl_u64_map_free(&t->ids);
    free(t->arena);
    memset(t, 0, sizeof *t);
}

/* ---- one trace ------------------------------------------------------------------------------- */

struct trace_api {
    bool defined;
    uint16_t category;
    uint8_t mem;                /* enum wsl_mem_op */
    bool sampled;               /* a file call whose timing was sampled (WSL_API_IO_SAMPLED) */
    char *name;                 /* base name */
};

struct chrome_trace {
    const char *path;
    bool have_process, truncated;
    int32_t pid, ppid;
    int32_t rank;               /* from the RANK chunk (RANK, else OMPI/PMI/SLURM); -1: none */
    uint64_t start_ns, end_ns;  /* CLOCK_MONOTONIC */
    char *label;                /* the command line, shortened */
    struct wsl_clock_map clock; /* the final fit */
    struct trace_api api[WSL_MAX_API_IDS];
    uint32_t close_id;          /* the sampled close's id (a fold event's close), 0: none */
    uint64_t events;            /* calls and GPU kernels */
    struct wsl_u64_map func_name;   /* handle -> name id (FUNC_NAME with a name) */
    struct wsl_u64_map func_kernel; /* function -> kernel handle (cuKernelGetFunction) */
    struct name_table strings;      /* name id -> kernel name (PATHS entries that are not paths) */
    struct name_table kernels;      /* handle -> demangled name, built after the scan */
    struct name_table nvtx_names;   /* NVTX name and domain ids -> text (without the mark) */
    /* Timed GPU work, for placing the launches that were not timed (estimates): */
    struct wsl_u64_map timed;       /* launch t_start tick -> launching tid + 1 */
    uint64_t timed_full_tick;       /* the map was full from this launch on: later launches not estimated */
    bool timed_full;
    struct wsl_u64_map kstat;       /* function (or graph exec) -> index + 1 into k_sum, k_n */
    uint64_t *k_sum, *k_n;
    size_t k_count;
    uint64_t gpu_sum, gpu_n;        /* every timed kernel: the process mean */
    bool have_phases;
    struct wsl_phases phases;       /* from the run model (the report's phases) */
};

static void trace_free(struct chrome_trace *t)
{
    free(t->label);
    for (unsigned i = 0; i < WSL_MAX_API_IDS; i++)
        free(t->api[i].name);
    wsl_u64_map_free(&t->func_name);
    wsl_u64_map_free(&t->func_kernel);
    names_free(&t->strings);
    names_free(&t->kernels);
    names_free(&t->nvtx_names);
    wsl_u64_map_free(&t->timed);
    wsl_u64_map_free(&t->kstat);
    free(t->k_sum);
    free(t->k_n);
}

static char *make_label(const struct wsl_item *it)
{
    char buf[LABEL_MAX + 4];
    size_t n = 0;
    for (uint32_t i = 0; i < it->process.argc && n < LABEL_MAX; i++) {
        const char *a = it->process.argv[i];
        if (i == 0) { /* the program's base name */
            const char *slash = strrchr(a, '/');
            a = slash && slash[1] ? slash + 1 : a;
        }
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", i ? " " : "", a);
        if (n >= sizeof buf)
            n = sizeof buf - 1;
    }
    if (n == 0) {
        const char *slash = strrchr(it->process.exe, '/');
        n = (size_t)snprintf(buf, sizeof buf, "%s", slash ? slash + 1 : it->process.exe);
        if (n >= sizeof buf)
            n = sizeof buf - 1;
    }
    if (n >= LABEL_MAX)
        strcpy(buf + LABEL_MAX - 3, "...");
    return xstrdup(buf);
}

static void take_api_table(struct chrome_trace *t, const struct wsl_item *it)
{
    for (uint32_t i = 0; i < it->api_table.count; i++) {
        const struct wsl_api_entry *e = &it->api_table.entries[i];
        struct trace_api *a = &t->api[e->id];
        free(a->name);
        a->defined = true;
        a->category = e->category;
        a->mem = (uint8_t)wsl_mem_op_of(e->category, e->base);
        a->sampled = wsl_is_io_category(e->category) && (e->flags & WSL_API_IO_SAMPLED);
        a->name = xstrdup(e->base);
        if (a->sampled && e->category == WSL_CAT_IO_CLOSE && !strcmp(e->symbol, "close"))
            t->close_id = e->id;
    }
}

static const char *kernel_name(const struct chrome_trace *t, uint64_t handle)
{
    const char *n = names_get(&t->kernels, handle);
    if (!n) {
        struct wsl_u64_slot *k = handle ? wsl_u64_map_find(&t->func_kernel, handle) : NULL;
        if (k)
            n = names_get(&t->kernels, k->value);
    }
    return n;
}

static void add_result_warning(struct wsl_chrome_result *res, char *w)
{
    res->warnings = xrealloc(res->warnings, (res->warning_count + 1) * sizeof *res->warnings);
    res->warnings[res->warning_count++] = w;
}

/* A timed kernel: its launch is not estimated, its time feeds the estimates of the others. */
static void note_timed(struct chrome_trace *t, const struct wsl_event *ev)
{
    uint32_t launch_tid = (uint32_t)(ev->a[2] >> 32);
    if (ev->a[1] && !t->timed_full) {
        if (t->timed.count >= TIMED_LAUNCHES_MAX) {
            t->timed_full = true;
            t->timed_full_tick = ev->a[1];
        } else if (!wsl_u64_map_find(&t->timed, ev->a[1])) {
            wsl_u64_map_insert(&t->timed, ev->a[1], (uint64_t)launch_tid + 1);
        }
    }
    uint64_t ticks = ev->t_end > ev->t_start ? ev->t_end - ev->t_start : 0;
    t->gpu_sum += ticks;
    t->gpu_n++;
    if (!ev->a[0])
        return;
    struct wsl_u64_slot *s = wsl_u64_map_find(&t->kstat, ev->a[0]);
    if (!s) {
        if (t->k_count >= KERNEL_STATS_MAX)
            return;
        t->k_sum = xrealloc(t->k_sum, (t->k_count + 1) * sizeof *t->k_sum);
        t->k_n = xrealloc(t->k_n, (t->k_count + 1) * sizeof *t->k_n);
        t->k_sum[t->k_count] = t->k_n[t->k_count] = 0;
        wsl_u64_map_insert(&t->kstat, ev->a[0], ++t->k_count);
        s = wsl_u64_map_find(&t->kstat, ev->a[0]);
    }
    t->k_sum[s->value - 1] += ticks;
    t->k_n[s->value - 1]++;
}

/* Pass 1. Returns 0, or -1 with err set (the trace is invalid). */
static int scan_trace(struct chrome_trace *t, struct wsl_progress *progress, struct wsl_chrome_result *res,
                      char *err, size_t errlen)
{
    struct wsl_reader *r = wsl_reader_open(t->path, err, errlen);
    if (!r)
        return -1;
    uint64_t max_end = 0;
    bool have_events = false;
    struct wsl_item it;
    enum wsl_read_result rr;
    while ((rr = wsl_reader_next(r, &it)) == WSL_READ_ITEM) {
        wsl_progress_update(progress, wsl_reader_bytes_in(r));
        switch (it.type) {
        case WSL_CHUNK_PROCESS:
            t->have_process = true;
            t->pid = it.process.info.pid;
            t->ppid = it.process.info.ppid;
            t->start_ns = it.process.info.start_mono_ns;
            t->label = make_label(&it);
            break;
        case WSL_CHUNK_RANK: { /* the last one stands; the first variable found, in this order */
            static const char *const keys[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"};
            size_t pos = 0, klen;
            const char *key, *value;
            int best = 4;
            t->rank = -1;
            while (wsl_rank_next(&it, &pos, &key, &klen, &value))
                for (int k = 0; k < best; k++)
                    if (strlen(keys[k]) == klen && !strncmp(key, keys[k], klen) && *value &&
                        strspn(value, "0123456789") == strlen(value) && strlen(value) < 10) {
                        t->rank = atoi(value);
                        best = k;
                    }
            break;
        }
        case WSL_CHUNK_API_TABLE:
            take_api_table(t, &it);
            break;
        case WSL_CHUNK_PATHS: {
            size_t pos = 0;
            struct wsl_path_ref ref;
            while (wsl_paths_next(&it, &pos, &ref))
                if (ref.length && ref.bytes[0] == WSL_NVTX_NAME_MARK)
                    names_put(&t->nvtx_names, ref.id, ref.bytes + 1, ref.length - 1);
                else if (ref.length && ref.bytes[0] != '/' && ref.bytes[0] != '<') /* kernel names; paths are absolute or <fd N> */
                    names_put(&t->strings, ref.id, ref.bytes, ref.length);
            break;
        }
        case WSL_CHUNK_EVENTS:
            for (uint32_t i = 0; i < it.events.count; i++) {
                const struct wsl_event *ev = &it.events.events[i];
                const struct trace_api *a = &t->api[ev->api];
                t->events++;
                if (ev->t_end > max_end)
                    max_end = ev->t_end;
                have_events = true;
                if (a->category == WSL_CAT_GPU_KERNEL)
                    note_timed(t, ev);
                if (a->category == WSL_CAT_FUNC_NAME && ev->a[0] && ev->result == 0) {
                    struct wsl_u64_map *m = ev->a[1] ? &t->func_name : &t->func_kernel;
                    uint64_t v = ev->a[1] ? ev->a[1] : ev->a[2];
                    struct wsl_u64_slot *s = wsl_u64_map_find(m, ev->a[0]);
                    if (s)
                        s->value = v; /* a handle named twice keeps the last name */
                    else if (v)
                        wsl_u64_map_insert(m, ev->a[0], v);
                }
            }
            break;
        default:
            break;
        }
    }
    if (rr == WSL_READ_ERROR) {
        snprintf(err, errlen, "%s", wsl_reader_message(r));
        wsl_reader_close(r);
        return -1;
    }
    t->truncated = rr == WSL_READ_TRUNCATED;
    if (!t->have_process) { /* the reader says ERROR for these: a clean END without PROCESS cannot be */
        snprintf(err, errlen, "not a usable trace: it has no process info");
        wsl_reader_close(r);
        return -1;
    }
    if (t->truncated)
        add_result_warning(res, xasprintf("%s: %s", t->path, wsl_reader_message(r)));
    for (size_t i = 0; wsl_reader_warning(r, i); i++)
        add_result_warning(res, xasprintf("%s: %s", t->path, wsl_reader_warning(r, i)));
    t->clock = *wsl_reader_clock(r);
    t->end_ns = t->start_ns;
    if (have_events && wsl_clock_to_ns(&t->clock, max_end) > t->end_ns)
        t->end_ns = wsl_clock_to_ns(&t->clock, max_end);
    wsl_reader_close(r);

    /* Kernel names, demangled once per handle. */
    for (size_t i = 0; i < t->func_name.size; i++) {
        const struct wsl_u64_slot *s = &t->func_name.slots[i];
        const char *mangled = s->key ? names_get(&t->strings, s->value) : NULL;
        if (mangled) {
            char *d = wsl_kern_demangle(mangled);
            names_put(&t->kernels, s->key, d, strlen(d));
            free(d);
        }
    }
    names_free(&t->strings);
    return 0;
}

/* ---- output ---------------------------------------------------------------------------------- */

struct exporter {
    FILE *out;
    const struct wsl_chrome_options *opt;
    struct wsl_chrome_result *res;
    uint64_t run_start_ns;
    uint64_t from_ns, to_ns;    /* the window; to_ns UINT64_MAX when open */
    bool first;                 /* no event written yet (no comma) */
    uint64_t next_flow_id;
};

static void begin_event(struct exporter *x)
{
    if (!x->first)
        fputs(",\n", x->out);
    x->first = false;
}

/* ns from the run's start as microseconds with three decimals */
static void put_us(FILE *out, uint64_t ns)
{
    fprintf(out, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

static void put_string(FILE *out, const char *s) { json_write_escaped(out, s, strlen(s)); }

static bool in_window(const struct exporter *x, uint64_t rel_ns) { return rel_ns >= x->from_ns && rel_ns < x->to_ns; }

static uint64_t rel_ns(const struct exporter *x, const struct chrome_trace *t, uint64_t ticks)
{
    uint64_t ns = wsl_clock_to_ns(&t->clock, ticks);
    return ns > x->run_start_ns ? ns - x->run_start_ns : 0;
}

static void metadata(struct exporter *x, int32_t pid, int64_t tid, const char *what, const char *key,
                     const char *str, int64_t num)
{
    begin_event(x);
    fprintf(x->out, "{\"ph\":\"M\",\"pid\":%d,", (int)pid);
    if (tid >= 0)
        fprintf(x->out, "\"tid\":%" PRId64 ",", tid);
    fprintf(x->out, "\"name\":\"%s\",\"args\":{\"%s\":", what, key);
    if (str)
        put_string(x->out, str);
    else
        fprintf(x->out, "%" PRId64, num);
    fputs("}}", x->out);
}

/* ---- the per-trace write state ---- */

struct mem_ev {
    uint64_t t, seq, ptr, bytes;
    int32_t result;
    uint8_t op;
};

struct write_state {
    struct chrome_trace *t;
    struct wsl_u64_map threads;     /* tid + 1 -> 1: metadata written */
    struct wsl_u64_map streams;     /* stream ^ STREAM_KEY -> track index + 1 */
    uint32_t stream_count;
    uint32_t cur_tid;               /* the thread whose events are being written */
    struct name_table paths;
    /* memory counter */
    struct mem_ev *heap;
    size_t heap_n, heap_cap;
    uint64_t seq;
    struct wsl_u64_map live;        /* device pointer -> bytes */
    uint64_t live_bytes;
    bool mem_before_window;         /* a value exists from before the window */
    bool mem_window_started;
    /* I/O counter */
    uint64_t *io_bins;
    size_t io_bin_count;
    /* NVTX push ranges open per thread (B written, E due) and start/end ranges open */
    struct wsl_u64_map nvtx_threads;    /* tid + 1 -> index + 1 into nvtx */
    struct nvtx_stack *nvtx;
    size_t nvtx_count;
    struct wsl_u64_map nvtx_starts;     /* range id -> name id + 1 (b written) */
    /* estimated kernels: tracks and where each stream's estimated work ends */
    struct wsl_u64_map est_streams;     /* stream ^ STREAM_KEY -> track index + 1 */
    uint32_t est_stream_count;
    struct wsl_u64_map est_end;         /* stream ^ STREAM_KEY -> end of its last estimate (ns, rel) + 1 */
};

struct nvtx_stack {
    uint32_t tid;
    uint32_t depth;                     /* frames held (at most NVTX_DEPTH_MAX) */
    uint64_t over;                      /* pushes past NVTX_DEPTH_MAX still open (not shown) */
    uint32_t domain[NVTX_DEPTH_MAX];
    bool shown[NVTX_DEPTH_MAX];         /* its B was written (it started in the window) */
};

#define STREAM_KEY 0x8000000000000000ull /* a stream handle as a non-zero map key (stream 0 included) */

static void thread_track(struct exporter *x, struct write_state *w, uint32_t tid)
{
    if (wsl_u64_map_find(&w->threads, (uint64_t)tid + 1))
        return;
    wsl_u64_map_insert(&w->threads, (uint64_t)tid + 1, 1);
    bool main_thread = (int64_t)tid == (int64_t)w->t->pid;
    char name[64];
    snprintf(name, sizeof name, main_thread ? "main thread %u" : "thread %u", tid);
    metadata(x, w->t->pid, tid, "thread_name", "name", name, 0);
    metadata(x, w->t->pid, tid, "thread_sort_index", "sort_index", NULL, main_thread ? 0 : (int64_t)tid);
}

static int64_t stream_track_of(struct exporter *x, struct write_state *w, uint64_t stream, bool estimated)
{
    struct wsl_u64_map *m = estimated ? &w->est_streams : &w->streams;
    uint32_t *count = estimated ? &w->est_stream_count : &w->stream_count;
    uint64_t key = stream ^ STREAM_KEY;
    if (!key)
        key = 1; /* the stream STREAM_KEY itself: shares with stream 0x8000000000000001 (never both) */
    struct wsl_u64_slot *s = wsl_u64_map_find(m, key);
    int64_t base = estimated ? EST_TID_BASE : GPU_TID_BASE;
    if (s)
        return base + (int64_t)s->value - 1;
    uint32_t index = (*count)++;
    wsl_u64_map_insert(m, key, index + 1);
    int64_t tid = base + (int64_t)index;
    char name[96];
    snprintf(name, sizeof name, estimated ? "GPU stream 0x%" PRIx64 " (estimated, not timed)" : "GPU stream 0x%" PRIx64,
             stream);
    metadata(x, w->t->pid, tid, "thread_name", "name", name, 0);
    metadata(x, w->t->pid, tid, "thread_sort_index", "sort_index", NULL,
             (estimated ? EST_SORT_BASE : GPU_SORT_BASE) + (int64_t)index);
    return tid;
}

static int64_t stream_track(struct exporter *x, struct write_state *w, uint64_t stream)
{
    return stream_track_of(x, w, stream, false);
}

static void counter(struct exporter *x, int32_t pid, const char *name, uint64_t rel, const char *key, uint64_t v)
{
    begin_event(x);
    fprintf(x->out, "{\"ph\":\"C\",\"pid\":%d,\"name\":\"%s\",\"ts\":", (int)pid, name);
    put_us(x->out, rel);
    fprintf(x->out, ",\"args\":{\"%s\":%" PRIu64 "}}", key, v);
    x->res->counters++;
}

/* ---- memory counter: the heap ---- */

static bool mem_before(const struct mem_ev *a, const struct mem_ev *b)
{
    return a->t != b->t ? a->t < b->t : a->seq < b->seq;
}

static void mem_apply(struct exporter *x, struct write_state *w, const struct mem_ev *e)
{
    bool changed = false;
    uint64_t before = w->live_bytes;
    if (e->result != 0)
        return;
    if ((e->op == WSL_MEM_ALLOC || e->op == WSL_MEM_ALLOC_ASYNC) && e->ptr) {
        struct wsl_u64_slot *s = wsl_u64_map_find(&w->live, e->ptr);
        if (s) { /* a pointer handed out again: the old allocation is gone */
            w->live_bytes -= s->value;
            wsl_u64_map_remove(&w->live, s);
        }
        if (w->live.count < WSL_MEM_MAX_LIVE) {
            wsl_u64_map_insert(&w->live, e->ptr, e->bytes);
            w->live_bytes += e->bytes;
        }
        changed = true;
    } else if (e->op == WSL_MEM_FREE || e->op == WSL_MEM_FREE_ASYNC) {
        struct wsl_u64_slot *s = e->ptr ? wsl_u64_map_find(&w->live, e->ptr) : NULL;
        if (s) {
            w->live_bytes -= s->value;
            wsl_u64_map_remove(&w->live, s);
            changed = true;
        }
    }
    if (!changed)
        return;
    uint64_t rel = rel_ns(x, w->t, e->t);
    if (rel < x->from_ns) {
        w->mem_before_window = true;
        return;
    }
    if (rel >= x->to_ns)
        return;
    if (!w->mem_window_started && w->mem_before_window && x->from_ns > 0) {
        /* the value the window starts with (what was live before it) */
        counter(x, w->t->pid, "GPU memory in use", x->from_ns, "bytes", before);
    }
    w->mem_window_started = true;
    counter(x, w->t->pid, "GPU memory in use", rel, "bytes", w->live_bytes);
}

static void mem_pop(struct exporter *x, struct write_state *w)
{
    struct mem_ev top = w->heap[0];
    struct mem_ev last = w->heap[--w->heap_n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= w->heap_n)
            break;
        if (c + 1 < w->heap_n && mem_before(&w->heap[c + 1], &w->heap[c]))
            c++;
        if (!mem_before(&w->heap[c], &last))
            break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (w->heap_n)
        w->heap[i] = last;
    mem_apply(x, w, &top);
}

static void mem_push(struct exporter *x, struct write_state *w, const struct mem_ev *e)
{
    if (w->heap_n == MEM_WINDOW)
        mem_pop(x, w);
    if (w->heap_n == w->heap_cap) {
        w->heap_cap = w->heap_cap ? 2 * w->heap_cap : 256;
        w->heap = xrealloc(w->heap, w->heap_cap * sizeof *w->heap);
    }
    size_t i = w->heap_n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!mem_before(e, &w->heap[p]))
            break;
        w->heap[i] = w->heap[p];
        i = p;
    }
    w->heap[i] = *e;
}

/* ---- events ---- */

static void put_result(FILE *out, uint16_t category, int32_t result)
{
    if (!result)
        return;
    if (wsl_is_io_category(category))
        fprintf(out, ",\"errno\":%d", -result);
    else
        fprintf(out, ",\"result\":%d", result);
}

/* The file's name; for a descriptor the shim never saw opened (id 0: a pipe, a socket, or one
 * inherited or opened before the shim loaded) what is known: its number. */
static void put_path(FILE *out, const struct write_state *w, uint64_t id, uint64_t fd)
{
    const char *p = names_get(&w->paths, id);
    fputs(",\"path\":", out);
    if (p)
        put_string(out, p);
    else if (id == 0 && fd != UINT64_MAX)
        fprintf(out, "\"fd %" PRId64 " (not seen opened: pipe, socket or inherited)\"", (int64_t)fd);
    else if (id == 0)
        fputs("\"(not seen opened)\"", out);
    else
        fprintf(out, "\"(path id %" PRIu64 ", name not recorded)\"", id);
}

static void write_args(struct exporter *x, struct write_state *w, const struct trace_api *a, const struct wsl_event *ev)
{
    FILE *out = x->out;
    /* every key is written with a leading comma; "thread" opens the object so they can */
    fprintf(out, ",\"args\":{\"thread\":%u", w->cur_tid);
    const uint64_t *v = ev->a;
    switch (a->category) {
    case WSL_CAT_LAUNCH: {
        const char *k = kernel_name(w->t, v[0]);
        fprintf(out, ",\"stream\":\"0x%" PRIx64 "\",\"kernel\":", ev->stream);
        if (k)
            put_string(out, k);
        else
            fprintf(out, "\"function 0x%" PRIx64 "\"", v[0]);
        fprintf(out, ",\"grid\":\"%u,%u,%u\",\"block\":\"%u,%u,%u\",\"shared_bytes\":%" PRIu64,
                (unsigned)(uint32_t)v[1], (unsigned)(v[1] >> 32), (unsigned)(v[2] & 0xffff),
                (unsigned)(v[2] >> 16 & 0xffff), (unsigned)(v[2] >> 32 & 0xffff), (unsigned)(v[2] >> 48 & 0xffff),
                v[3]);
        break;
    }
    case WSL_CAT_GRAPH:
        fprintf(out, ",\"stream\":\"0x%" PRIx64 "\",\"graph_exec\":\"0x%" PRIx64 "\"", ev->stream, v[0]);
        break;
    case WSL_CAT_HOSTFN:
    case WSL_CAT_SYNC_STREAM:
    case WSL_CAT_QUERY:
        fprintf(out, ",\"stream\":\"0x%" PRIx64 "\"", ev->stream);
        break;
    case WSL_CAT_SYNC_EVENT:
    case WSL_CAT_STREAM_WAIT:
    case WSL_CAT_EVENT_RECORD:
        fprintf(out, ",\"stream\":\"0x%" PRIx64 "\",\"event\":\"0x%" PRIx64 "\"", ev->stream, v[0]);
        break;
    case WSL_CAT_ALLOC:
    case WSL_CAT_ALLOC_MANAGED:
        fprintf(out, ",\"bytes\":%" PRIu64 ",\"ptr\":\"0x%" PRIx64 "\",\"stream\":\"0x%" PRIx64 "\"", v[1], v[0],
                ev->stream);
        break;
    case WSL_CAT_FREE:
    case WSL_CAT_HOST_FREE:
    case WSL_CAT_HOST_UNREGISTER:
        fprintf(out, ",\"ptr\":\"0x%" PRIx64 "\"", v[0]);
        break;
    case WSL_CAT_HOST_ALLOC:
    case WSL_CAT_HOST_REGISTER:
        fprintf(out, ",\"bytes\":%" PRIu64 ",\"ptr\":\"0x%" PRIx64 "\"", v[1], v[0]);
        break;
    case WSL_CAT_COPY_ANY ... WSL_CAT_COPY_DTOD_ASYNC:
    case WSL_CAT_MEMSET:
    case WSL_CAT_MEMSET_ASYNC:
        fprintf(out, ",\"bytes\":%" PRIu64 ",\"stream\":\"0x%" PRIx64 "\"", v[2], ev->stream);
        break;
    case WSL_CAT_FUNC_NAME: {
        const char *k = kernel_name(w->t, v[0]);
        if (k) {
            fputs(",\"kernel\":", out);
            put_string(out, k);
        }
        break;
    }
    case WSL_CAT_IO_OPEN:
        put_path(out, w, v[0], ev->stream);
        fprintf(out, ",\"fd\":%" PRId64 ",\"flags\":\"0%" PRIo64 "\"", (int64_t)ev->stream, v[2]);
        if (v[3] != UINT64_MAX)
            fprintf(out, ",\"file_size\":%" PRIu64, v[3]);
        break;
    case WSL_CAT_IO_READ:
        put_path(out, w, v[0], ev->stream);
        fprintf(out, ",\"fd\":%" PRId64 ",\"bytes_asked\":%" PRIu64 ",\"bytes\":%" PRIu64, (int64_t)ev->stream, v[1],
                ev->result ? 0 : v[2]);
        if (a->sampled && ev->t_start == ev->t_end)
            fprintf(out, ",\"calls\":%" PRIu64, wsl_event_calls(WSL_CAT_IO_READ, true, ev));
        else if (v[3] != UINT64_MAX)
            fprintf(out, ",\"offset\":%" PRIu64, v[3]);
        break;
    case WSL_CAT_IO_MMAP:
        put_path(out, w, v[0], ev->stream);
        fprintf(out, ",\"fd\":%" PRId64 ",\"bytes\":%" PRIu64 ",\"offset\":%" PRIu64, (int64_t)ev->stream, v[1], v[2]);
        break;
    case WSL_CAT_IO_STAT:
    case WSL_CAT_IO_SEEK:
    case WSL_CAT_IO_CLOSE:
        put_path(out, w, v[0], ev->stream);
        if (ev->stream != UINT64_MAX)
            fprintf(out, ",\"fd\":%" PRId64, (int64_t)ev->stream);
        break;
    default:
        break;
    }
    if (a->sampled)  /* 1 in N of these calls was timed (docs/io.md) */
        fputs(ev->t_start == ev->t_end ? ",\"timed\":false" : ",\"timed\":\"sampled\"", out);
    put_result(out, a->category, ev->result);
    fputc('}', out);
}

static void write_gpu_kernel(struct exporter *x, struct write_state *w, const struct wsl_event *ev)
{
    struct chrome_trace *t = w->t;
    uint64_t start = rel_ns(x, t, ev->t_start), end = rel_ns(x, t, ev->t_end);
    if (!in_window(x, start))
        return;
    uint32_t flags = (uint32_t)ev->a[2], launch_tid = (uint32_t)(ev->a[2] >> 32);
    int64_t tid = stream_track(x, w, ev->stream);
    const char *k = (flags & WSL_GPU_GRAPH) ? NULL : kernel_name(t, ev->a[0]);
    begin_event(x);
    fprintf(x->out, "{\"ph\":\"X\",\"cat\":\"kernel\",\"pid\":%d,\"tid\":%" PRId64 ",\"ts\":", (int)t->pid, tid);
    put_us(x->out, start);
    fputs(",\"dur\":", x->out);
    put_us(x->out, end > start ? end - start : 0);
    fputs(",\"name\":", x->out);
    if (k)
        put_string(x->out, k);
    else
        fprintf(x->out, "\"%s 0x%" PRIx64 "\"", (flags & WSL_GPU_GRAPH) ? "graph" : "function", ev->a[0]);
    fprintf(x->out, ",\"args\":{\"stream\":\"0x%" PRIx64 "\",\"launch_tid\":%u,\"idle_at_submit\":%s,"
                    "\"mapped\":%s,\"event_elapsed_ns\":%" PRIu64 "}}",
            ev->stream, launch_tid, (flags & WSL_GPU_IDLE_AT_SUBMIT) ? "true" : "false",
            (flags & WSL_GPU_MAPPED) ? "true" : "false", ev->a[3]);
    x->res->slices++;
    x->res->kernels++;
    /* the flow from the launch (bound to the launch's slice) to the kernel */
    uint64_t launch = rel_ns(x, t, ev->a[1]);
    if (!ev->a[1] || !in_window(x, launch) || !launch_tid)
        return;
    uint64_t id = ++x->next_flow_id;
    thread_track(x, w, launch_tid);
    begin_event(x);
    fprintf(x->out, "{\"ph\":\"s\",\"cat\":\"ac2g\",\"name\":\"launch\",\"id\":%" PRIu64 ",\"pid\":%d,\"tid\":%u,\"ts\":",
            id, (int)t->pid, launch_tid);
    put_us(x->out, launch);
    fputs("}", x->out);
    begin_event(x);
    fprintf(x->out, "{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"ac2g\",\"name\":\"launch\",\"id\":%" PRIu64
                    ",\"pid\":%d,\"tid\":%" PRId64 ",\"ts\":", id, (int)t->pid, tid);
    put_us(x->out, start);
    fputs("}", x->out);
    x->res->flows++;
}

/* ---- NVTX: push/pop ranges as B/E slices on their thread, start/end ranges as async slices ---- */

static struct nvtx_stack *nvtx_stack(struct write_state *w, uint32_t tid)
{
    struct wsl_u64_slot *s = wsl_u64_map_find(&w->nvtx_threads, (uint64_t)tid + 1);
    if (s)
        return &w->nvtx[s->value - 1];
    w->nvtx = xrealloc(w->nvtx, (w->nvtx_count + 1) * sizeof *w->nvtx);
    struct nvtx_stack *st = &w->nvtx[w->nvtx_count];
    memset(st, 0, sizeof *st);
    st->tid = tid;
    wsl_u64_map_insert(&w->nvtx_threads, (uint64_t)tid + 1, ++w->nvtx_count);
    return st;
}

static void put_nvtx_name(struct exporter *x, const struct chrome_trace *t, uint64_t name_id)
{
    const char *n = names_get(&t->nvtx_names, name_id);
    put_string(x->out, n ? n : "(unnamed)");
}

static void put_nvtx_domain(struct exporter *x, const struct chrome_trace *t, uint64_t domain_id)
{
    const char *d = domain_id ? names_get(&t->nvtx_names, domain_id) : NULL;
    fputs(",\"domain\":", x->out);
    if (d)
        put_string(x->out, d);
    else if (domain_id)
        fprintf(x->out, "\"domain %" PRIu64 "\"", domain_id);
    else
        fputs("\"(default)\"", x->out);
}

/* Closes the innermost frame of st at rel (an E when its B was written). */
static void nvtx_close_top(struct exporter *x, struct write_state *w, struct nvtx_stack *st, uint64_t rel)
{
    if (st->over) {
        st->over--;
        return;
    }
    if (!st->depth)
        return;
    st->depth--;
    if (!st->shown[st->depth])
        return;
    begin_event(x);
    fprintf(x->out, "{\"ph\":\"E\",\"cat\":\"nvtx\",\"pid\":%d,\"tid\":%u,\"ts\":", (int)w->t->pid, st->tid);
    put_us(x->out, rel);
    fputc('}', x->out);
}

static void write_nvtx(struct exporter *x, struct write_state *w, uint32_t tid, const struct wsl_event *ev,
                       unsigned category, bool *track)
{
    struct chrome_trace *t = w->t;
    uint64_t rel = rel_ns(x, t, ev->t_start);
    bool shown = in_window(x, rel);
    if (shown && !*track) {
        thread_track(x, w, tid);
        *track = true;
    }
    switch (category) {
    case WSL_CAT_NVTX_PUSH: {
        struct nvtx_stack *st = nvtx_stack(w, tid);
        /* events were lost (the shim's level is below what is open here): those ranges lost their pop */
        while (st->depth + st->over > ev->a[1])
            nvtx_close_top(x, w, st, rel);
        if (st->depth >= NVTX_DEPTH_MAX) {
            st->over++;
            return;
        }
        st->domain[st->depth] = (uint32_t)ev->stream;
        st->shown[st->depth] = shown;
        st->depth++;
        if (!shown)
            return;
        begin_event(x);
        fprintf(x->out, "{\"ph\":\"B\",\"cat\":\"nvtx\",\"pid\":%d,\"tid\":%u,\"ts\":", (int)t->pid, tid);
        put_us(x->out, rel);
        fputs(",\"name\":", x->out);
        put_nvtx_name(x, t, ev->a[0]);
        fputs(",\"args\":{\"level\":", x->out);
        fprintf(x->out, "%" PRIu64, ev->a[1]);
        put_nvtx_domain(x, t, ev->stream);
        if (ev->a[2])
            fprintf(x->out, ",\"category\":%" PRIu64, ev->a[2]);
        fputs("}}", x->out);
        x->res->nvtx_ranges++;
        break;
    }
    case WSL_CAT_NVTX_POP: {
        struct nvtx_stack *st = nvtx_stack(w, tid);
        if (st->over) {
            st->over--;
            return;
        }
        uint32_t k = st->depth;
        while (k > 0 && st->domain[k - 1] != (uint32_t)ev->stream)
            k--;
        if (k == 0)
            return; /* no range of its domain open: an unmatched pop */
        while (st->depth >= k) /* ranges of other domains opened inside it end with it */
            nvtx_close_top(x, w, st, rel);
        break;
    }
    case WSL_CAT_NVTX_START:
        if (!shown || !ev->a[1] || wsl_u64_map_find(&w->nvtx_starts, ev->a[1]) ||
            w->nvtx_starts.count >= NVTX_STARTS_MAX)
            return;
        wsl_u64_map_insert(&w->nvtx_starts, ev->a[1], ev->a[0] + 1);
        begin_event(x);
        fprintf(x->out, "{\"ph\":\"b\",\"cat\":\"nvtx\",\"id\":\"0x%" PRIx64 "\",\"pid\":%d,\"tid\":%u,\"ts\":", ev->a[1],
                (int)t->pid, tid);
        put_us(x->out, rel);
        fputs(",\"name\":", x->out);
        put_nvtx_name(x, t, ev->a[0]);
        fputs(",\"args\":{\"start_thread\":", x->out);
        fprintf(x->out, "%u", tid);
        put_nvtx_domain(x, t, ev->stream);
        fputs("}}", x->out);
        x->res->nvtx_ranges++;
        break;
    case WSL_CAT_NVTX_END: {
        struct wsl_u64_slot *s = ev->a[1] ? wsl_u64_map_find(&w->nvtx_starts, ev->a[1]) : NULL;
        if (!s)
            return;
        uint64_t name_id = s->value - 1;
        wsl_u64_map_remove(&w->nvtx_starts, s);
        begin_event(x);
        fprintf(x->out, "{\"ph\":\"e\",\"cat\":\"nvtx\",\"id\":\"0x%" PRIx64 "\",\"pid\":%d,\"tid\":%u,\"ts\":", ev->a[1],
                (int)t->pid, tid);
        put_us(x->out, rel);
        fputs(",\"name\":", x->out);
        put_nvtx_name(x, t, name_id);
        fputc('}', x->out);
        break;
    }
    case WSL_CAT_NVTX_MARK:
        if (!shown)
            return;
        begin_event(x);
        fprintf(x->out, "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"nvtx\",\"pid\":%d,\"tid\":%u,\"ts\":", (int)t->pid, tid);
        put_us(x->out, rel);
        fputs(",\"name\":", x->out);
        put_nvtx_name(x, t, ev->a[0]);
        fputs(",\"args\":{\"mark\":true", x->out);
        put_nvtx_domain(x, t, ev->stream);
        fputs("}}", x->out);
        break;
    default: /* NAME_THREAD */
        break;
    }
}

/* What is still open at the end of the trace ends there (E for push ranges, e for start ranges). */
static void nvtx_close_all(struct exporter *x, struct write_state *w)
{
    uint64_t end = w->t->end_ns > x->run_start_ns ? w->t->end_ns - x->run_start_ns : 0;
    for (size_t i = 0; i < w->nvtx_count; i++) {
        struct nvtx_stack *st = &w->nvtx[i];
        st->over = 0;
        while (st->depth)
            nvtx_close_top(x, w, st, end);
    }
    for (size_t i = 0; i < w->nvtx_starts.size; i++) {
        const struct wsl_u64_slot *s = &w->nvtx_starts.slots[i];
        if (!s->key)
            continue;
        begin_event(x);
        fprintf(x->out, "{\"ph\":\"e\",\"cat\":\"nvtx\",\"id\":\"0x%" PRIx64 "\",\"pid\":%d,\"tid\":%u,\"ts\":", s->key,
                (int)w->t->pid, (unsigned)w->t->pid);
        put_us(x->out, end);
        fputs(",\"name\":", x->out);
        put_nvtx_name(x, w->t, s->value - 1);
        fputs(",\"args\":{\"unclosed\":true}}", x->out);
    }
}

/* ---- kernels that were not timed: placed by the model ---- */

/* A launch that no GPU_KERNEL timed: a slice on its stream's estimated track, after the previous
 * estimate on that stream and not before the launch returned, lasting the mean timed duration of
 * the same function (else of every timed kernel of the process); tied to its launch by a flow. */
static void write_estimated_kernel(struct exporter *x, struct write_state *w, uint32_t tid, const struct wsl_event *ev,
                                   bool graph)
{
    struct chrome_trace *t = w->t;
    if (ev->result != 0 || !t->gpu_n)
        return; /* a failed launch ran nothing; nothing timed: no basis for an estimate */
    struct wsl_u64_slot *timed = wsl_u64_map_find(&t->timed, ev->t_start);
    if (timed && timed->value == (uint64_t)tid + 1)
        return; /* its GPU_KERNEL shows it as measured */
    if (t->timed_full && ev->t_start >= t->timed_full_tick) {
        x->res->kernels_unplaced++;
        return;
    }
    uint64_t launch = rel_ns(x, t, ev->t_start), launch_end = rel_ns(x, t, ev->t_end);
    struct wsl_u64_slot *k = ev->a[0] ? wsl_u64_map_find(&t->kstat, ev->a[0]) : NULL;
    double ticks = k ? (double)t->k_sum[k->value - 1] / (double)t->k_n[k->value - 1]
                     : (double)t->gpu_sum / (double)t->gpu_n;
    double npt = t->clock.ns_per_tick > 0 ? t->clock.ns_per_tick : 1.0;
    uint64_t dur = (uint64_t)(ticks * npt + 0.5);
    uint64_t key = ev->stream ^ STREAM_KEY;
    if (!key)
        key = 1;
    struct wsl_u64_slot *e = wsl_u64_map_find(&w->est_end, key);
    uint64_t start = launch_end;
    if (e && e->value - 1 > start)
        start = e->value - 1;
    if (e)
        e->value = start + dur + 1;
    else
        wsl_u64_map_insert(&w->est_end, key, start + dur + 1);
    if (!in_window(x, launch)) /* placed all the same: a window shows what the whole run shows */
        return;
    int64_t track = stream_track_of(x, w, ev->stream, true);
    const char *name = graph ? NULL : kernel_name(t, ev->a[0]);
    begin_event(x);
    fprintf(x->out, "{\"ph\":\"X\",\"cat\":\"kernel_estimated\",\"cname\":\"grey\",\"pid\":%d,\"tid\":%" PRId64 ",\"ts\":",
            (int)t->pid, track);
    put_us(x->out, start);
    fputs(",\"dur\":", x->out);
    put_us(x->out, dur);
    fputs(",\"name\":", x->out);
    if (name)
        put_string(x->out, name);
    else
        fprintf(x->out, "\"%s 0x%" PRIx64 "\"", graph ? "graph" : "function", ev->a[0]);
    fprintf(x->out, ",\"args\":{\"estimated\":true,\"basis\":\"%s\",\"based_on_timed\":%" PRIu64
                    ",\"stream\":\"0x%" PRIx64 "\",\"launch_tid\":%u}}",
            k ? "mean of this kernel's timed launches" : "mean of the process's timed kernels",
            k ? t->k_n[k->value - 1] : t->gpu_n, ev->stream, tid);
    x->res->slices++;
    x->res->kernels_estimated++;
    uint64_t id = ++x->next_flow_id;
    begin_event(x);
    fprintf(x->out, "{\"ph\":\"s\",\"cat\":\"ac2g\",\"name\":\"launch\",\"id\":%" PRIu64 ",\"pid\":%d,\"tid\":%u,\"ts\":",
            id, (int)t->pid, tid);
    put_us(x->out, launch);
    fputs("}", x->out);
    begin_event(x);
    fprintf(x->out, "{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"ac2g\",\"name\":\"launch\",\"id\":%" PRIu64
                    ",\"pid\":%d,\"tid\":%" PRId64 ",\"ts\":", id, (int)t->pid, track);
    put_us(x->out, start);
    fputs("}", x->out);
    x->res->flows++;
}

/* ---- the phases track ---- */

static void write_phases(struct exporter *x, const struct chrome_trace *t)
{
    const struct wsl_phases *ph = &t->phases;
    if (!t->have_phases || ph->method == WSL_STEADY_NONE)
        return;
    metadata(x, t->pid, PHASE_TID, "thread_name", "name", "phases", 0);
    metadata(x, t->pid, PHASE_TID, "thread_sort_index", "sort_index", NULL, -1);
    const struct {
        const char *name, *color;
        uint64_t a, b;
    } p[4] = {{"start-up", "grey", ph->start_ns, ph->first_submit_ns},
              {"warm-up", "yellow", ph->first_submit_ns, ph->steady_start_ns},
              {"steady state", "good", ph->steady_start_ns, ph->steady_end_ns},
              {"teardown", "grey", ph->steady_end_ns, ph->end_ns}};
    for (int i = 0; i < 4; i++) {
        uint64_t a = p[i].a > x->run_start_ns ? p[i].a - x->run_start_ns : 0;
        uint64_t b = p[i].b > x->run_start_ns ? p[i].b - x->run_start_ns : 0;
        if (a < x->from_ns)
            a = x->from_ns;
        if (b > x->to_ns)
            b = x->to_ns;
        if (b <= a)
            continue;
        begin_event(x);
        fprintf(x->out, "{\"ph\":\"X\",\"cat\":\"phase\",\"cname\":\"%s\",\"pid\":%d,\"tid\":%u,\"ts\":", p[i].color,
                (int)t->pid, PHASE_TID);
        put_us(x->out, a);
        fputs(",\"dur\":", x->out);
        put_us(x->out, b - a);
        fprintf(x->out, ",\"name\":\"%s\",\"args\":{\"phase\":\"%s\"", p[i].name, p[i].name);
        if (i == 2)
            fprintf(x->out, ",\"method\":\"%s\",\"steps\":%" PRIu64 ",\"step_ns\":%" PRIu64,
                    wsl_steady_method_name(ph->method), ph->steps, ph->step_ns);
        if (i == 1)
            fprintf(x->out, ",\"warmup_steps\":%" PRIu64 ",\"module_loads\":%" PRIu64, ph->warmup_steps,
                    ph->warmup_module_loads);
        fputs("}}", x->out);
        x->res->slices++;
        x->res->phases++;
    }
}

/* One event (or one call of a fold) as a slice, after the I/O counter and memory bookkeeping. */
static void write_event(struct exporter *x, struct write_state *w, uint32_t tid, const struct wsl_event *ev,
                        bool *track)
{
    struct chrome_trace *t = w->t;
    const struct trace_api *a = &t->api[ev->api];
    if (a->category == WSL_CAT_GPU_KERNEL) {
        write_gpu_kernel(x, w, ev);
        return;
    }
    if (a->mem == WSL_MEM_ALLOC || a->mem == WSL_MEM_ALLOC_ASYNC || a->mem == WSL_MEM_FREE ||
        a->mem == WSL_MEM_FREE_ASYNC) {
        struct mem_ev m = {ev->t_start, w->seq++, ev->a[0], ev->a[1], ev->result, a->mem};
        mem_push(x, w, &m);
    }
    uint64_t start = rel_ns(x, t, ev->t_start);
    if (a->category == WSL_CAT_IO_READ && ev->result == 0 && ev->a[2]) {
        size_t bin = (size_t)(start / WSL_CHROME_IO_BIN_NS);
        if (bin < IO_BINS_MAX) {
            w->io_bins = xgrow_zeroed(w->io_bins, &w->io_bin_count, bin, sizeof *w->io_bins, 64);
            w->io_bins[bin] += ev->a[2];
        }
    }
    if (wsl_is_nvtx_category(a->category)) { /* before the window's test: a range's end matters after it */
        write_nvtx(x, w, tid, ev, a->category, track);
        return;
    }
    if (!in_window(x, start))
        return;
    if (!*track) {
        thread_track(x, w, tid);
        *track = true;
    }
    uint64_t end = rel_ns(x, t, ev->t_end);
    begin_event(x);
    fprintf(x->out, "{\"ph\":\"X\",\"cat\":\"%s\",\"pid\":%d,\"tid\":%u,\"ts\":",
            wsl_is_io_category(a->category) ? "io" : "cuda", (int)t->pid, tid);
    put_us(x->out, start);
    fputs(",\"dur\":", x->out);
    put_us(x->out, end > start ? end - start : 0);
    fputs(",\"name\":", x->out);
    put_string(x->out, a->name ? a->name : "?");
    write_args(x, w, a, ev);
    fputc('}', x->out);
    x->res->slices++;
    if (a->category == WSL_CAT_LAUNCH || a->category == WSL_CAT_GRAPH)
        write_estimated_kernel(x, w, tid, ev, a->category == WSL_CAT_GRAPH);
}

static unsigned fold_category(void *ctx, unsigned api)
{
    const struct trace_api *a = api < WSL_MAX_API_IDS ? &((const struct chrome_trace *)ctx)->api[api] : NULL;
    return a && a->defined && a->sampled ? a->category : WSL_CAT_COUNT;
}

static void write_events(struct exporter *x, struct write_state *w, uint32_t tid, const struct wsl_event *evs,
                         uint32_t n)
{
    struct chrome_trace *t = w->t;
    bool track = false;
    w->cur_tid = tid;
    for (uint32_t i = 0; i < n; i++) {
        if (t->api[evs[i].api].category == WSL_CAT_IO_FOLD) { /* the calls it holds, each as an event */
            struct wsl_fold_call c[WSL_FOLD_SLOTS_PER_EVENT + 1];
            unsigned k = wsl_fold_calls(&evs[i], t->close_id, fold_category, t, c);
            for (unsigned j = 0; j < k; j++)
                write_event(x, w, tid, &c[j].ev, &track);
        } else {
            write_event(x, w, tid, &evs[i], &track);
        }
    }
}

static void write_io_counter(struct exporter *x, struct write_state *w)
{
    size_t last = 0;
    bool any = false;
    for (size_t b = 0; b < w->io_bin_count; b++)
        if (w->io_bins[b]) {
            last = b;
            any = true;
        }
    if (!any)
        return;
    bool started = false;
    for (size_t b = 0; b <= last + 1; b++) {
        uint64_t at = (uint64_t)b * WSL_CHROME_IO_BIN_NS, v = b <= last ? w->io_bins[b] : 0;
        if (!started && !v)
            continue; /* nothing before the first read */
        started = true;
        if (at + WSL_CHROME_IO_BIN_NS <= x->from_ns || at >= x->to_ns)
            continue;
        counter(x, w->t->pid, "file bytes read per 100 ms", at < x->from_ns ? x->from_ns : at, "bytes", v);
    }
}

/* Pass 2 for one trace. Returns 0, or -1 with err set. */
static int write_trace(struct exporter *x, struct chrome_trace *t, int sort_index, char *err, size_t errlen)
{
    struct wsl_reader *r = wsl_reader_open(t->path, err, errlen);
    if (!r)
        return -1;
    struct write_state w;
    memset(&w, 0, sizeof w);
    w.t = t;
    char pname[LABEL_MAX + 32];
    if (t->rank >= 0) /* a rank of a distributed run: one process group per rank */
        snprintf(pname, sizeof pname, "rank %d (pid %d)", (int)t->rank, (int)t->pid);
    else
        snprintf(pname, sizeof pname, "%s", t->label ? t->label : "?");
    metadata(x, t->pid, -1, "process_name", "name", pname, 0);
    metadata(x, t->pid, -1, "process_sort_index", "sort_index", NULL, sort_index);
    char labels[64];
    snprintf(labels, sizeof labels, "ppid %d", (int)t->ppid);
    metadata(x, t->pid, -1, "process_labels", "labels", labels, 0);
    x->res->processes++;
    write_phases(x, t);

    struct wsl_item it;
    enum wsl_read_result rr;
    while ((rr = wsl_reader_next(r, &it)) == WSL_READ_ITEM) {
        wsl_progress_update(x->opt->progress, wsl_reader_bytes_in(r));
        if (it.type == WSL_CHUNK_PATHS) {
            size_t pos = 0;
            struct wsl_path_ref ref;
            while (wsl_paths_next(&it, &pos, &ref))
                names_put(&w.paths, ref.id, ref.bytes, ref.length);
        } else if (it.type == WSL_CHUNK_EVENTS) {
            write_events(x, &w, it.events.tid, it.events.events, it.events.count);
        }
    }
    int rc = 0;
    if (rr == WSL_READ_ERROR) { /* the scan read it: only a file changed since can get here */
        snprintf(err, errlen, "%s", wsl_reader_message(r));
        rc = -1;
    }
    while (w.heap_n)
        mem_pop(x, &w);
    nvtx_close_all(x, &w);
    write_io_counter(x, &w);
    wsl_reader_close(r);
    wsl_u64_map_free(&w.threads);
    wsl_u64_map_free(&w.streams);
    wsl_u64_map_free(&w.live);
    names_free(&w.paths);
    wsl_u64_map_free(&w.nvtx_threads);
    free(w.nvtx);
    wsl_u64_map_free(&w.nvtx_starts);
    wsl_u64_map_free(&w.est_streams);
    wsl_u64_map_free(&w.est_end);
    free(w.heap);
    free(w.io_bins);
    return rc;
}

/* Pass 3 (only over the limit with a window): events whose start is in the window. */
static int count_in_window(const struct exporter *x, struct chrome_trace *t, uint64_t *count, char *err,
                           size_t errlen)
{
    struct wsl_reader *r = wsl_reader_open(t->path, err, errlen);
    if (!r)
        return -1;
    struct wsl_item it;
    enum wsl_read_result rr;
    while ((rr = wsl_reader_next(r, &it)) == WSL_READ_ITEM) {
        wsl_progress_update(x->opt->progress, wsl_reader_bytes_in(r));
        if (it.type == WSL_CHUNK_EVENTS)
            for (uint32_t i = 0; i < it.events.count; i++)
                *count += in_window(x, rel_ns(x, t, it.events.events[i].t_start));
    }
    int rc = rr == WSL_READ_ERROR ? -1 : 0;
    if (rc)
        snprintf(err, errlen, "%s", wsl_reader_message(r));
    wsl_reader_close(r);
    return rc;
}

/* ---- gzip: a FILE whose writes go through zlib's deflate into the output file ---- */

struct gz_cookie {
    FILE *dest;
    z_stream z;
    bool failed;
    unsigned char buf[1 << 16];
};

static bool gz_pump(struct gz_cookie *c, int flush)
{
    int zr;
    do {
        c->z.next_out = c->buf;
        c->z.avail_out = sizeof c->buf;
        zr = deflate(&c->z, flush);
        if (zr == Z_STREAM_ERROR)
            return false;
        size_t have = sizeof c->buf - c->z.avail_out;
        if (have && fwrite(c->buf, 1, have, c->dest) != have)
            return false;
    } while (c->z.avail_out == 0 || (flush == Z_FINISH && zr != Z_STREAM_END));
    return true;
}

static ssize_t gz_write(void *cookie, const char *data, size_t n)
{
    struct gz_cookie *c = cookie;
    if (c->failed)
        return -1;
    c->z.next_in = (unsigned char *)(uintptr_t)data;
    c->z.avail_in = (uInt)n; /* stdio hands over at most its buffer */
    if (!gz_pump(c, Z_NO_FLUSH)) {
        c->failed = true;
        return -1;
    }
    return (ssize_t)n;
}

static int gz_close(void *cookie)
{
    struct gz_cookie *c = cookie;
    bool ok = !c->failed && gz_pump(c, Z_FINISH);
    deflateEnd(&c->z);
    free(c);
    return ok ? 0 : -1;
}

/* A FILE writing gzip into dest (not closed with it), or NULL. */
static FILE *gz_open(FILE *dest)
{
    struct gz_cookie *c = xcalloc(1, sizeof *c);
    c->dest = dest;
    if (deflateInit2(&c->z, 6, Z_DEFLATED, 15 + 16 /* gzip header */, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        free(c);
        return NULL;
    }
    cookie_io_functions_t io = {.write = gz_write, .close = gz_close};
    FILE *f = fopencookie(c, "w", io);
    if (!f) {
        deflateEnd(&c->z);
        free(c);
    }
    return f;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* The phases of each trace's process, as the report finds them (the run model). */
static void find_phases(struct chrome_trace **traces, size_t n, struct wsl_chrome_result *res)
{
    struct wsl_run run;
    wsl_run_init(&run);
    run.solo = true;
    char err[WSL_READER_ERRLEN];
    for (size_t i = 0; i < n; i++)
        if (wsl_run_add_trace(&run, traces[i]->path, err, sizeof err) != 0) {
            add_result_warning(res, xasprintf("%s: phases not shown: %s", traces[i]->path, err));
            wsl_run_free(&run);
            return;
        }
    wsl_run_finish(&run);
    for (size_t i = 0; i < n; i++)
        for (size_t p = 0; p < run.proc_count; p++)
            if (run.procs[p].trace_path && !strcmp(run.procs[p].trace_path, traces[i]->path)) {
                traces[i]->phases = run.procs[p].phases;
                traces[i]->have_phases = true;
            }
    wsl_run_free(&run);
}

/* ---- the run ----------------------------------------------------------------------------------- */

static int by_start(const void *a, const void *b)
{
    const struct chrome_trace *x = *(const struct chrome_trace *const *)a, *y = *(const struct chrome_trace *const *)b;
    if ((x->rank >= 0) != (y->rank >= 0)) /* ranks first, by rank */
        return x->rank >= 0 ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static uint64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

__attribute__((format(printf, 3, 4))) static int set_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static void format_count(char *buf, size_t size, uint64_t n)
{
    if (n >= 1000000)
        snprintf(buf, size, "%.2f M", (double)n / 1e6);
    else
        snprintf(buf, size, "%" PRIu64, n);
}

int wsl_chrome_export(char *const *paths, size_t count, const struct wsl_chrome_options *opt,
                      struct wsl_chrome_result *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    /* gzip output is written as a stream: a long run needs no cap unless one is asked for */
    res->gzip = strcmp(opt->output, "-") != 0 && ends_with(opt->output, ".gz");
    uint64_t max_events = opt->max_events ? opt->max_events : res->gzip ? UINT64_MAX : WSL_CHROME_MAX_EVENTS_DEFAULT;
    struct chrome_trace **traces = xcalloc(count ? count : 1, sizeof *traces);
    int rc = 0;
    FILE *out = NULL;

    /* pass 1 */
    for (size_t i = 0; i < count && rc == 0; i++) {
        traces[i] = xcalloc(1, sizeof *traces[i]);
        traces[i]->path = paths[i];
        traces[i]->rank = -1;
        char why[WSL_READER_ERRLEN];
        if (scan_trace(traces[i], opt->progress, res, why, sizeof why) != 0)
            rc = set_err(err, errlen, "%s: %s", paths[i], why);
        wsl_progress_next_file(opt->progress, file_size(paths[i]));
    }
    size_t n = 0; /* the traces with a process, by start */
    for (size_t i = 0; rc == 0 && i < count; i++)
        if (traces[i]->have_process)
            traces[n++] = traces[i];
        else {
            trace_free(traces[i]);
            free(traces[i]);
        }
    if (rc != 0)
        n = count; /* free them all below (NULL past the one that failed) */
    if (rc == 0 && n)
        qsort(traces, n, sizeof *traces, by_start);
    if (rc == 0 && n)
        find_phases(traces, n, res);

    struct exporter x = {.opt = opt, .res = res, .first = true, .to_ns = UINT64_MAX};
    uint64_t run_end = 0, total = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (i == 0 || traces[i]->start_ns < x.run_start_ns)
            x.run_start_ns = traces[i]->start_ns;
        if (traces[i]->end_ns > run_end)
            run_end = traces[i]->end_ns;
        total += traces[i]->events;
    }
    uint64_t span = run_end > x.run_start_ns ? run_end - x.run_start_ns : 0;
    if (opt->have_from)
        x.from_ns = opt->from_ns;
    if (opt->have_to)
        x.to_ns = opt->to_ns;
    if (rc == 0 && x.from_ns >= x.to_ns)
        rc = set_err(err, errlen, "--from %.6g s is not before --to %.6g s", (double)x.from_ns / 1e9,
                     (double)x.to_ns / 1e9);
    if (rc == 0 && opt->have_from && x.from_ns > span)
        rc = set_err(err, errlen, "--from %.6g s is past the end of the run (it spans %.3f s)",
                     (double)x.from_ns / 1e9, (double)span / 1e9);

    /* the limit */
    uint64_t events = total;
    bool windowed = opt->have_from || opt->have_to;
    if (rc == 0 && total > max_events && windowed) {
        events = 0;
        for (size_t i = 0; rc == 0 && i < n; i++) {
            char why[WSL_READER_ERRLEN];
            if (count_in_window(&x, traces[i], &events, why, sizeof why) != 0)
                rc = set_err(err, errlen, "%s: %s", traces[i]->path, why);
        }
    }
    if (rc == 0 && events > max_events) {
        char have[32], lim[32];
        format_count(have, sizeof have, events);
        format_count(lim, sizeof lim, max_events);
        double span_s = (double)span / 1e9, part = span_s * (double)max_events / (double)events;
        if (windowed)
            rc = set_err(err, errlen,
                         "the window holds %s events (calls and kernels), more than a browser can load (limit %s, "
                         "--max-events N); choose a shorter one: it covers %.3f s, about %.3g s would fit",
                         have, lim, (double)((x.to_ns < span ? x.to_ns : span) - x.from_ns) / 1e9,
                         (double)((x.to_ns < span ? x.to_ns : span) - x.from_ns) / 1e9 * (double)max_events /
                             (double)events);
        else
            rc = set_err(err, errlen,
                         "the run holds %s events (calls and kernels), more than a browser can load (limit %s); "
                         "export a window with --from S --to S (seconds from the start; the run spans %.3f s, "
                         "e.g. --from 0 --to %.3g), or raise --max-events N",
                         have, lim, span_s, part);
    }

    /* pass 2, into a temporary file renamed at the end (a regular file; anything else in place) */
    struct wsl_output o = {0};
    if (rc == 0 && wsl_output_open(&o, opt->output, err, errlen) != 0)
        rc = -1;
    out = o.f;
    if (rc == 0 && res->gzip) {
        out = gz_open(o.f);
        if (!out) {
            rc = set_err(err, errlen, "%s: cannot start gzip output", opt->output);
            char werr[512];
            wsl_output_close(&o, false, werr, sizeof werr);
        }
    }
    if (rc == 0) {
        static char buf[1 << 16];
        setvbuf(out, buf, _IOFBF, sizeof buf);
        x.out = out;
        fprintf(out, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"wslshim-report\","
                     "\"run_start_monotonic_ns\":%" PRIu64 ",\"window_from_ns\":%" PRIu64 ",\"window_to_ns\":",
                x.run_start_ns, x.from_ns);
        if (x.to_ns == UINT64_MAX)
            fputs("null", out);
        else
            fprintf(out, "%" PRIu64, x.to_ns);
        fputs("},\n\"traceEvents\":[\n", out);
        for (size_t i = 0; rc == 0 && i < n; i++) {
            char why[WSL_READER_ERRLEN];
            if (write_trace(&x, traces[i], (int)i, why, sizeof why) != 0)
                rc = set_err(err, errlen, "%s: %s", traces[i]->path, why);
            wsl_progress_next_file(opt->progress, file_size(traces[i]->path));
        }
        fputs("\n]}\n", out);
        if (res->gzip) { /* the gzip stream ends here; write errors surface at the output's close too */
            bool bad = ferror(out) != 0;
            if (fclose(out) != 0 || bad) {
                if (rc == 0)
                    rc = set_err(err, errlen, "%s: write error: %s", opt->output, errno ? strerror(errno) : "gzip");
            }
        }
        char werr[512];
        if (wsl_output_close(&o, rc == 0, werr, sizeof werr) != 0 && rc == 0)
            rc = set_err(err, errlen, "%s", werr);
    }
    for (size_t i = 0; i < n; i++)
        if (traces[i]) {
            trace_free(traces[i]);
            free(traces[i]);
        }
    free(traces);
    return rc;
}

void wsl_chrome_result_free(struct wsl_chrome_result *r)
{
    for (size_t i = 0; i < r->warning_count; i++)
        free(r->warnings[i]);
    free(r->warnings);
    memset(r, 0, sizeof *r);
}
