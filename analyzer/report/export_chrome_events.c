/*
 * Chrome trace event export, the write pass (export_chrome.c has the overview): metadata and
 * the tracks (threads, streams, estimated kernels, phases, NVTX ranges), then every event as it
 * is decoded; memory events go through a bounded min-heap that restores time order across
 * threads for the memory counter. Also the counting pass over a window.
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
#include "export_chrome_internal.h"

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
    const char *p = chrome_names_get(&w->paths, id);
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
        const char *k = chrome_kernel_name(w->t, v[0]);
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
        const char *k = chrome_kernel_name(w->t, v[0]);
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

/* The flow from a launch (on thread launch_tid at rel_ns launch) to its kernel's
 * slice (on track, starting at rel_ns start): a Chrome flow's start and end. */
static void put_launch_flow(struct exporter *x, int32_t pid, uint32_t launch_tid, uint64_t launch, int64_t track,
                            uint64_t start)
{
    uint64_t id = ++x->next_flow_id;
    begin_event(x);
    fprintf(x->out, "{\"ph\":\"s\",\"cat\":\"ac2g\",\"name\":\"launch\",\"id\":%" PRIu64 ",\"pid\":%d,\"tid\":%u,\"ts\":",
            id, (int)pid, launch_tid);
    put_us(x->out, launch);
    fputs("}", x->out);
    begin_event(x);
    fprintf(x->out, "{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"ac2g\",\"name\":\"launch\",\"id\":%" PRIu64
                    ",\"pid\":%d,\"tid\":%" PRId64 ",\"ts\":", id, (int)pid, track);
    put_us(x->out, start);
    fputs("}", x->out);
    x->res->flows++;
}

static void write_gpu_kernel(struct exporter *x, struct write_state *w, const struct wsl_event *ev)
{
    struct chrome_trace *t = w->t;
    /* Drawn as the report's estimate counts it (kernel_analysis.h, wsl_kern_pairs): a queued
     * launch's pair measured its own time too, so it ends that much earlier; an idle one was
     * measured from its launch call's return, after the kernel began, so it starts that much
     * earlier. */
    uint64_t dur_ticks = ev->t_end > ev->t_start ? ev->t_end - ev->t_start : 0;
    int64_t adjust = t->est.configs ? wsl_kern_estimate_event_adjust(&t->est, ev) : 0;
    uint64_t t0 = ev->t_start, t1 = ev->t_end;
    int64_t tid = stream_track(x, w, ev->stream);
    size_t track = (size_t)(tid - GPU_TID_BASE);
    if (track >= w->stream_end_cap) {
        size_t cap = w->stream_end_cap, want = 2 * (track + 1);
        w->stream_end = xrealloc(w->stream_end, want * sizeof *w->stream_end);
        memset(w->stream_end + cap, 0, (want - cap) * sizeof *w->stream_end);
        w->stream_end_cap = want;
    }
    if (adjust < 0)
        t1 -= (uint64_t)-adjust < dur_ticks ? (uint64_t)-adjust : dur_ticks;
    else if (adjust > 0) { /* drawn earlier, but not over the stream's previous kernel (it ran before) */
        t0 = t0 > (uint64_t)adjust ? t0 - (uint64_t)adjust : 0;
        uint64_t prev = w->stream_end[track] < ev->t_start ? w->stream_end[track] : ev->t_start;
        if (t0 < prev)
            t0 = prev;
    }
    /* A stream runs one kernel at a time, but a pair measures whatever the stream ran between its
     * two events: where threads share a stream (the legacy default stream), another thread's
     * launch between them makes the slice reach into the next kernel's. The kernels come in the
     * order they ended, so such a slice starts before the previous one's end and ends after it:
     * it is drawn from that end, and the stream's slices follow each other (or nest). */
    bool clipped = false;
    if (t0 < w->stream_end[track] && t1 > w->stream_end[track]) {
        t0 = w->stream_end[track];
        clipped = true;
    }
    if (t1 > w->stream_end[track])
        w->stream_end[track] = t1;
    uint64_t start = rel_ns(x, t, t0), end = rel_ns(x, t, t1);
    if (!in_window(x, start))
        return;
    uint32_t flags = (uint32_t)ev->a[2], launch_tid = (uint32_t)(ev->a[2] >> 32);
    const char *k = (flags & WSL_GPU_GRAPH) ? NULL : chrome_kernel_name(t, ev->a[0]);
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
                    "\"mapped\":%s,\"event_elapsed_ns\":%" PRIu64,
            ev->stream, launch_tid, (flags & WSL_GPU_IDLE_AT_SUBMIT) ? "true" : "false",
            (flags & WSL_GPU_MAPPED) ? "true" : "false", ev->a[3]);
    if (adjust || clipped) { /* the slice is the measure adjusted for the pairs, or drawn from the previous end */
        uint64_t r0 = rel_ns(x, t, ev->t_start), r1 = rel_ns(x, t, ev->t_end);
        uint64_t raw = r1 > r0 ? r1 - r0 : 0, drawn = end > start ? end - start : 0;
        fprintf(x->out, ",\"measured_ns\":%" PRIu64 ",\"pair_adjust_ns\":%" PRId64, raw,
                (int64_t)drawn - (int64_t)raw);
    }
    fputs("}}", x->out);
    x->res->slices++;
    x->res->kernels++;
    /* the flow from the launch (bound to the launch's slice) to the kernel */
    uint64_t launch = rel_ns(x, t, ev->a[1]);
    if (!ev->a[1] || !in_window(x, launch) || !launch_tid)
        return;
    thread_track(x, w, launch_tid);
    put_launch_flow(x, t->pid, launch_tid, launch, tid, start);
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
    const char *n = chrome_names_get(&t->nvtx_names, name_id);
    put_string(x->out, n ? n : "(unnamed)");
}

static void put_nvtx_domain(struct exporter *x, const struct chrome_trace *t, uint64_t domain_id)
{
    const char *d = domain_id ? chrome_names_get(&t->nvtx_names, domain_id) : NULL;
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
    /* by range id: in the order they began */
    struct wsl_u64_slot *open = wsl_u64_map_sorted(&w->nvtx_starts);
    for (size_t i = 0; i < w->nvtx_starts.count; i++) {
        const struct wsl_u64_slot *s = &open[i];
        begin_event(x);
        fprintf(x->out, "{\"ph\":\"e\",\"cat\":\"nvtx\",\"id\":\"0x%" PRIx64 "\",\"pid\":%d,\"tid\":%u,\"ts\":", s->key,
                (int)w->t->pid, (unsigned)w->t->pid);
        put_us(x->out, end);
        fputs(",\"name\":", x->out);
        put_nvtx_name(x, w->t, s->value - 1);
        fputs(",\"args\":{\"unclosed\":true}}", x->out);
    }
    free(open);
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
    struct wsl_u64_slot *k = NULL;
    uint64_t dur, based_on;
    const char *basis;
    if (t->est.configs) { /* the report's estimate: the configuration's mean, adjusted for the pairs */
        if (graph) {
            if (!t->est.graphs_timed)
                return; /* the report counts no GPU time for graphs never timed */
            dur = t->est.graph_mean_ns, based_on = t->est.graphs_timed;
            basis = "mean of the process's timed graph launches";
        } else {
            enum wsl_kern_basis b =
                wsl_kern_estimate_launch(&t->est, ev->a[0], wsl_launch_config(ev->a[1], ev->a[2]), &dur, &based_on);
            if (b == WSL_KERN_BASIS_NONE)
                return;
            basis = b == WSL_KERN_BASIS_CONFIG   ? "mean of this kernel's timed launches of this grid and block, "
                                                   "adjusted for the event pairs"
                    : b == WSL_KERN_BASIS_HANDLE ? "mean of this kernel's timed launches, adjusted for the event pairs"
                                                 : "mean of the process's timed kernels, adjusted for the event pairs";
        }
    } else {
        k = ev->a[0] ? wsl_u64_map_find(&t->kstat, ev->a[0]) : NULL;
        double ticks = k ? (double)t->k_sum[k->value - 1] / (double)t->k_n[k->value - 1]
                         : (double)t->gpu_sum / (double)t->gpu_n;
        double npt = t->clock.ns_per_tick > 0 ? t->clock.ns_per_tick : 1.0;
        dur = (uint64_t)(ticks * npt + 0.5);
        basis = k ? "mean of this kernel's timed launches" : "mean of the process's timed kernels";
        based_on = k ? t->k_n[k->value - 1] : t->gpu_n;
    }
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
    const char *name = graph ? NULL : chrome_kernel_name(t, ev->a[0]);
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
            basis, based_on, ev->stream, tid);
    x->res->slices++;
    x->res->kernels_estimated++;
    put_launch_flow(x, t->pid, tid, launch, track, start);
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
            struct wsl_fold_call c[WSL_FOLD_EVENT_CALLS];
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
int chrome_write_trace(struct exporter *x, struct chrome_trace *t, int sort_index, char *err, size_t errlen)
{
    struct wsl_reader *r = wsl_store_open(x->opt->store, t->path, err, errlen);
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
                chrome_names_put(&w.paths, ref.id, ref.bytes, ref.length);
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
    free(w.stream_end);
    wsl_u64_map_free(&w.live);
    chrome_names_free(&w.paths);
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
int chrome_count_in_window(const struct exporter *x, struct chrome_trace *t, uint64_t *count, char *err,
                           size_t errlen)
{
    struct wsl_reader *r = wsl_store_open(x->opt->store, t->path, err, errlen);
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
