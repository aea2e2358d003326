/*
 * Chrome trace event export, the scan pass (export_chrome.c has the overview): per trace,
 * the process, the API table, the clock fit, kernel names (FUNC_NAME events and their PATHS
 * strings), event counts and the last time; and the id -> string tables that hold the names.
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

void chrome_names_put(struct name_table *t, uint64_t id, const char *bytes, size_t n)
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

const char *chrome_names_get(const struct name_table *t, uint64_t id)
{
    struct wsl_u64_slot *s = id ? wsl_u64_map_find(&t->ids, id) : NULL;
    return s ? t->arena + s->value - 1 : NULL;
}

void chrome_names_free(struct name_table *t)
{
    wsl_u64_map_free(&t->ids);
    free(t->arena);
    memset(t, 0, sizeof *t);
}

void chrome_trace_free(struct chrome_trace *t)
{
    free(t->label);
    for (unsigned i = 0; i < WSL_MAX_API_IDS; i++)
        free(t->api[i].name);
    wsl_u64_map_free(&t->func_name);
    wsl_u64_map_free(&t->func_kernel);
    chrome_names_free(&t->strings);
    chrome_names_free(&t->kernels);
    chrome_names_free(&t->nvtx_names);
    wsl_u64_map_free(&t->timed);
    wsl_u64_map_free(&t->kstat);
    free(t->k_sum);
    free(t->k_n);
    wsl_kern_trace_discard(t->kern);
    t->kern = NULL;
    wsl_kern_estimate_free(&t->est);
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

const char *chrome_kernel_name(const struct chrome_trace *t, uint64_t handle)
{
    const char *n = chrome_names_get(&t->kernels, handle);
    if (!n) {
        struct wsl_u64_slot *k = handle ? wsl_u64_map_find(&t->func_kernel, handle) : NULL;
        if (k)
            n = chrome_names_get(&t->kernels, k->value);
    }
    return n;
}

void chrome_add_result_warning(struct wsl_chrome_result *res, char *w)
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
int chrome_scan_trace(struct chrome_trace *t, const struct wsl_chrome_options *opt, struct wsl_chrome_result *res,
                      char *err, size_t errlen)
{
    struct wsl_progress *progress = opt->progress;
    struct wsl_reader *r = wsl_store_open(opt->store, t->path, err, errlen);
    if (!r)
        return -1;
    uint64_t max_end = 0;
    t->kern = wsl_kern_trace_begin();
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
                    chrome_names_put(&t->nvtx_names, ref.id, ref.bytes + 1, ref.length - 1);
                else if (ref.length && ref.bytes[0] != '/' && ref.bytes[0] != '<') /* kernel names; paths are absolute or <fd N> */
                    chrome_names_put(&t->strings, ref.id, ref.bytes, ref.length);
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
                if (a->category == WSL_CAT_GPU_KERNEL) {
                    note_timed(t, ev);
                    wsl_kern_trace_event(t->kern, WSL_KERN_GPU_TIME, 0, ev);
                }
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
        chrome_add_result_warning(res, xasprintf("%s: %s", t->path, wsl_reader_message(r)));
    for (size_t i = 0; wsl_reader_warning(r, i); i++)
        chrome_add_result_warning(res, xasprintf("%s: %s", t->path, wsl_reader_warning(r, i)));
    t->clock = *wsl_reader_clock(r);
    wsl_kern_estimate_build(t->kern, t->clock.ns_per_tick, &t->est); /* as the report's */
    wsl_kern_trace_discard(t->kern);
    t->kern = NULL;
    t->end_ns = t->start_ns;
    if (have_events && wsl_clock_to_ns(&t->clock, max_end) > t->end_ns)
        t->end_ns = wsl_clock_to_ns(&t->clock, max_end);
    wsl_reader_close(r);

    /* Kernel names, demangled once per handle, in handle order (past the cap, the same ones are left out
     * whatever the map's order). */
    struct wsl_u64_slot *named = wsl_u64_map_sorted(&t->func_name);
    for (size_t i = 0; i < t->func_name.count; i++) {
        const char *mangled = chrome_names_get(&t->strings, named[i].value);
        if (mangled) {
            char *d = wsl_kern_demangle(mangled);
            chrome_names_put(&t->kernels, named[i].key, d, strlen(d));
            free(d);
        }
    }
    free(named);
    chrome_names_free(&t->strings);
    return 0;
}

