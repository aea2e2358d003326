/*
 * projection.c: the what-if replay (projection.h; docs/projection.md): what each API does in
 * the replay, pass 1 (GPU durations, clock, process span), the run of the passes over the
 * traces, emulation SPECs, the exposure runs and the targets. Pass 2, the replay itself, is
 * projection_replay.c (projection_internal.h between them).
 */
#define _GNU_SOURCE
#include "projection.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "io_analysis.h"
#include "kernel_analysis.h"
#include "mounts.h"
#include "trace_reader.h"
#include "u64_map.h"
#include "util.h"
#include "projection_internal.h"

const char *wsl_proj_cause_name(unsigned cause)
{
    static const char *const names[WSL_PROJ_CAUSES] = {"launch", "sync", "alloc", "copy",
                                                       "event", "file_io", "other_cuda", "cpu"};
    return cause < WSL_PROJ_CAUSES ? names[cause] : "other_cuda";
}

/* ---- what each API does in the replay -------------------------------------------------- */

uint8_t proj_kind_of(unsigned cat, const char *base)
{
    enum wsl_kern_op op = wsl_kern_op_of(cat, base);
    if (op == WSL_KERN_CAPTURE_BEGIN)
        return K_CAPTURE_BEGIN;
    if (op == WSL_KERN_CAPTURE_END)
        return K_CAPTURE_END;
    switch (cat) {
    case WSL_CAT_GPU_KERNEL: return K_SKIP;
    case WSL_CAT_LAUNCH: return K_LAUNCH;
    case WSL_CAT_GRAPH: return K_GRAPH;
    case WSL_CAT_HOSTFN: return K_HOSTFN;
    case WSL_CAT_ALLOC:
        return strstr(base, "Async") ? K_POOL_ALLOC : K_ALLOC;
    case WSL_CAT_FREE:
        return strstr(base, "Async") ? K_POOL_FREE : K_FREE;
    case WSL_CAT_ALLOC_MANAGED: return K_MANAGED;
    case WSL_CAT_HOST_ALLOC: return K_PINNED_ALLOC;
    case WSL_CAT_HOST_FREE: return K_HOST_FREE;
    case WSL_CAT_HOST_REGISTER: case WSL_CAT_HOST_UNREGISTER: return K_HOST_OTHER;
    case WSL_CAT_SYNC_STREAM: return K_SYNC_STREAM;
    case WSL_CAT_SYNC_CTX: return K_SYNC_CTX;
    case WSL_CAT_SYNC_EVENT: return K_SYNC_EVENT;
    case WSL_CAT_STREAM_WAIT: return K_STREAM_WAIT;
    case WSL_CAT_EVENT_RECORD: return K_EVENT_RECORD;
    case WSL_CAT_QUERY: return strstr(base, "Event") ? K_EVENT_QUERY : K_QUERY;
    case WSL_CAT_COPY_ANY_ASYNC: case WSL_CAT_COPY_HTOD_ASYNC: case WSL_CAT_COPY_DTOH_ASYNC:
    case WSL_CAT_COPY_DTOD_ASYNC: return K_COPY_ASYNC;
    case WSL_CAT_COPY_ANY: case WSL_CAT_COPY_HTOD: case WSL_CAT_COPY_DTOH: return K_COPY_BLOCKING;
    case WSL_CAT_COPY_DTOD: return K_COPY_DTOD;
    case WSL_CAT_MEMSET: case WSL_CAT_MEMSET_ASYNC: return K_MEMSET;
    case WSL_CAT_IO_OPEN: return K_IO_OPEN;
    case WSL_CAT_IO_READ: return K_IO_READ;
    case WSL_CAT_IO_STAT: return K_IO_STAT;
    case WSL_CAT_IO_MMAP: case WSL_CAT_IO_SEEK: case WSL_CAT_IO_CLOSE: return K_IO_OTHER;
    case WSL_CAT_IO_WRITE: return K_IO_WRITE;
    case WSL_CAT_IO_DIR: return K_IO_DIR;
    default: return K_OTHER;
    }
}

enum wsl_proj_cause proj_cause_of(uint8_t k)
{
    switch (k) {
    case K_LAUNCH: case K_GRAPH: return WSL_PROJ_LAUNCH;
    case K_ALLOC: case K_FREE: case K_POOL_ALLOC: case K_POOL_FREE: case K_MANAGED: case K_PINNED_ALLOC:
    case K_HOST_FREE: case K_HOST_OTHER: return WSL_PROJ_ALLOC;
    case K_SYNC_STREAM: case K_SYNC_CTX: case K_SYNC_EVENT: return WSL_PROJ_SYNC;
    case K_STREAM_WAIT: case K_EVENT_RECORD: case K_EVENT_QUERY: case K_QUERY: return WSL_PROJ_EVENT;
    case K_COPY_ASYNC: case K_COPY_BLOCKING: case K_COPY_DTOD: case K_MEMSET: return WSL_PROJ_COPY;
    case K_IO_OPEN: case K_IO_READ: case K_IO_STAT: case K_IO_OTHER: case K_IO_WRITE: case K_IO_DIR:
        return WSL_PROJ_FILE;
    default: return WSL_PROJ_OTHER;
    }
}

/* ---- pass 1: GPU durations, clock, process span ----------------------------------------- */

static void gpu_mean_add(struct gpu_mean *m, double ticks, bool idle)
{
    m->sum_ns += ticks;
    m->count++;
    if (idle) {
        m->idle_sum_ns += ticks;
        m->idle_count++;
    }
}

static int read_facts(const struct wsl_trace_store *store, const char *path, struct trace_facts *f,
                      struct wsl_projection *pr, char *err, size_t errlen)
{
    struct wsl_reader *r = wsl_store_open(store, path, err, errlen);
    if (!r)
        return -1;
    bool gpu_api[WSL_MAX_API_IDS] = {false};
    bool have_process = false, have_events = false;
    uint64_t max_end = 0, end_ticks = 0, max_clock_ns = 0;
    bool have_end = false;
    struct wsl_kern_trace *kern = wsl_kern_trace_begin();
    struct wsl_item it;
    enum wsl_read_result res;
    /* Durations are kept in ticks until the clock fit is final. */
    while ((res = wsl_reader_next(r, &it)) == WSL_READ_ITEM) {
        switch (it.type) {
        case WSL_CHUNK_PROCESS:
            have_process = true;
            f->pid = it.process.info.pid;
            f->flags = it.process.info.flags;
            f->start_ns = it.process.info.start_mono_ns;
            break;
        case WSL_CHUNK_API_TABLE:
            for (uint32_t i = 0; i < it.api_table.count; i++)
                gpu_api[it.api_table.entries[i].id] = it.api_table.entries[i].category == WSL_CAT_GPU_KERNEL;
            break;
        case WSL_CHUNK_CLOCK:
            if (it.clock.mono_ns > max_clock_ns)
                max_clock_ns = it.clock.mono_ns;
            break;
        case WSL_CHUNK_END:
            have_end = true;
            end_ticks = it.end.end_ticks;
            break;
        case WSL_CHUNK_EVENTS:
            for (uint32_t i = 0; i < it.events.count; i++) {
                const struct wsl_event *ev = &it.events.events[i];
                if (ev->t_end > max_end)
                    max_end = ev->t_end;
                have_events = true;
                if (!gpu_api[ev->api])
                    continue;
                wsl_kern_trace_event(kern, WSL_KERN_GPU_TIME, 0, ev);
                if (!ev->a[0])
                    continue;
                double ticks = (double)(ev->t_end >= ev->t_start ? ev->t_end - ev->t_start : 0);
                bool graph = (ev->a[2] & WSL_GPU_GRAPH) != 0;
                struct gpu_mean *all = graph ? &f->graph_all : &f->kernel_all;
                bool idle = (ev->a[2] & WSL_GPU_IDLE_AT_SUBMIT) != 0;
                gpu_mean_add(all, ticks, idle);
                (graph ? &pr->graph_samples : &pr->kernel_samples)[0]++;
                struct wsl_u64_slot *s = wsl_u64_map_find(&f->handle_index, ev->a[0]);
                if (!s) {
                    if (f->mean_count >= WSL_KERN_MAX_TIMED)
                        continue; /* past the cap: the process mean stands in */
                    f->means = xrealloc(f->means, (f->mean_count + 1) * sizeof *f->means);
                    f->means[f->mean_count] = (struct gpu_mean){0, 0, 0, 0};
                    wsl_u64_map_insert(&f->handle_index, ev->a[0], f->mean_count++);
                    s = wsl_u64_map_find(&f->handle_index, ev->a[0]);
                }
                gpu_mean_add(&f->means[s->value], ticks, idle);
            }
            break;
        default:
            break;
        }
    }
    if (res == WSL_READ_ERROR || !have_process) {
        snprintf(err, errlen, "%s", res == WSL_READ_ERROR ? wsl_reader_message(r) : "no process info");
        wsl_reader_close(r);
        wsl_kern_trace_discard(kern);
        return -1;
    }
    f->clock = *wsl_reader_clock(r);
    wsl_reader_close(r);
    wsl_kern_estimate_build(kern, f->clock.ns_per_tick, &f->est);
    wsl_kern_trace_discard(kern);
    /* ticks -> ns */
    double k = f->clock.ns_per_tick;
    for (size_t i = 0; i < f->mean_count; i++) {
        f->means[i].sum_ns *= k;
        f->means[i].idle_sum_ns *= k;
    }
    f->kernel_all.sum_ns *= k;
    f->kernel_all.idle_sum_ns *= k;
    f->graph_all.sum_ns *= k;
    f->graph_all.idle_sum_ns *= k;
    uint64_t end = f->start_ns;
    if (have_events && wsl_clock_to_ns(&f->clock, max_end) > end)
        end = wsl_clock_to_ns(&f->clock, max_end);
    if (have_end && wsl_clock_to_ns(&f->clock, end_ticks) > end)
        end = wsl_clock_to_ns(&f->clock, end_ticks);
    if (max_clock_ns > end)
        end = max_clock_ns;
    f->end_ns = end;
    return 0;
}

static void facts_free(struct trace_facts *f)
{
    wsl_u64_map_free(&f->handle_index);
    free(f->means);
    wsl_kern_estimate_free(&f->est);
}

static int shift_point_cmp(const void *a, const void *b)
{
    const struct shift_point *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return x->re < y->re ? -1 : x->re > y->re;
}

/* Process pid's shift at recorded time t in a sorted timeline (0 before its first point). */
static int64_t shift_at(const struct shift_point *sp, size_t n, int32_t pid, uint64_t t)
{
    size_t lo = 0, hi = n; /* first point after (pid, t) */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (sp[mid].pid < pid || (sp[mid].pid == pid && sp[mid].re <= t))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && sp[lo - 1].pid == pid ? sp[lo - 1].shift : 0;
}

/* A trace's pid and parent pid, from its PROCESS chunk (0 when unreadable). */
static void trace_ids(const struct wsl_trace_store *store, const char *path, int32_t *pid, int32_t *ppid)
{
    char err[WSL_READER_ERRLEN];
    struct wsl_reader *r = wsl_store_open(store, path, err, sizeof err);
    if (!r)
        return;
    struct wsl_item it;
    while (wsl_reader_next(r, &it) == WSL_READ_ITEM)
        if (it.type == WSL_CHUNK_PROCESS) {
            *pid = it.process.info.pid;
            *ppid = it.process.info.ppid;
            break;
        }
    wsl_reader_close(r);
}

/* One replay of the run into *out (its target already filled): with the
 * profiles' differences, or with emu's added costs when emu is not NULL. */
static int project_pass(const char *const *paths, size_t count, const struct wsl_projection_options *opt,
                        const struct wsl_proj_emu *emu, struct wsl_projection *out, char *err, size_t errlen,
                        const struct shift_point *tl_in, size_t tl_in_count, struct shift_point **tl_out,
                        size_t *tl_out_count, bool *has_children)
{
    char perr[512];
    static struct wsl_profile builtin_native, builtin_wsl2, given_source;
    if (opt->source) {
        if (wsl_profile_load(opt->source, &given_source, perr, sizeof perr) != 0) {
            snprintf(err, errlen, "--project-from: %s", perr);
            return -1;
        }
    } else if (wsl_profile_load("native", &builtin_native, perr, sizeof perr) != 0 ||
               wsl_profile_load("wsl2", &builtin_wsl2, perr, sizeof perr) != 0) {
        snprintf(err, errlen, "%s", perr);
        return -1;
    }
    if (opt->fs) {
        if (!*opt->fs || strlen(opt->fs) >= sizeof out->fs) {
            snprintf(err, errlen, "--project-fs '%s': expected a filesystem type such as ext4 or 9p", opt->fs);
            return -1;
        }
        snprintf(out->fs, sizeof out->fs, "%s", opt->fs);
    }
    struct replay R;
    memset(&R, 0, sizeof R);
    R.pr = out;
    R.opt = opt;
    R.tgt = &out->target;
    R.emu = emu;
    R.window = opt->window ? opt->window : WSL_PROJ_WINDOW;
    R.heap = xmalloc(R.window * sizeof *R.heap);
    uint64_t run_start = UINT64_MAX, end_rec = 0, end_proj = 0;
    bool used_native = false, used_wsl2 = false;
    int rc = 0;
    /* Children before their parents (a parent's pipe reads wait for its
     * children's projected writes): deepest first, else in the given order. */
    int32_t (*ids)[2] = xmalloc((count ? count : 1) * sizeof *ids);
    size_t *order = xmalloc((count ? count : 1) * sizeof *order);
    int *depth = xmalloc((count ? count : 1) * sizeof *depth);
    for (size_t i = 0; i < count; i++) {
        ids[i][0] = ids[i][1] = 0;
        trace_ids(opt->store, paths[i], &ids[i][0], &ids[i][1]);
    }
    R.ppids = (const int32_t (*)[2])ids;
    R.ppid_count = count;
    R.record_shifts = tl_out != NULL;
    for (size_t i = 0; i < count; i++) {
        depth[i] = 0;
        for (int32_t p = ids[i][0]; depth[i] < 32 && (p = proj_parent_of(&R, p)) > 0;)
            depth[i]++;
        order[i] = i;
    }
    if (has_children) {
        *has_children = false;
        for (size_t i = 0; i < count; i++)
            *has_children |= depth[i] > 0;
    }
    for (size_t i = 1; i < count; i++) /* insertion sort: stable, deepest first */
        for (size_t j = i; j > 0 && depth[order[j - 1]] < depth[order[j]]; j--) {
            size_t t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (size_t oi = 0; oi < count && rc == 0; oi++) {
        size_t i = order[oi];
        struct trace_facts f;
        memset(&f, 0, sizeof f);
        char terr[WSL_READER_ERRLEN];
        if (read_facts(opt->store, paths[i], &f, out, terr, sizeof terr) != 0) {
            snprintf(err, errlen, "%s: %s", paths[i], terr);
            facts_free(&f);
            rc = -1;
            break;
        }
        out->gpu_estimate |= f.est.configs;
        R.facts = &f;
        R.wsl = (f.flags & (WSL_PROC_WSL1 | WSL_PROC_WSL2)) != 0;
        if (opt->source) {
            R.src = &given_source;
            R.src_name = given_source.name;
        } else if (f.flags & WSL_PROC_WSL2) {
            R.src = &builtin_wsl2;
            R.src_name = "wsl2";
            used_wsl2 = true;
        } else {
            R.src = &builtin_native;
            R.src_name = "native";
            used_native = true;
        }
        proj_replay_reset(&R);
        R.pid = f.pid;
        R.pid_has_parent = R.pid_has_children = false; /* only then are pipe writes kept, reads matched */
        for (size_t j = 0; j < count; j++) {
            R.pid_has_parent |= j != i && ids[j][0] == ids[i][1] && ids[i][1] > 0;
            R.pid_has_children |= j != i && ids[j][1] == f.pid && f.pid > 0;
        }
        R.start_shift = tl_in ? shift_at(tl_in, tl_in_count, ids[i][1], f.start_ns) : 0;
        R.clamp_up = !emu && !strcmp(R.tgt->platform, "wsl2") && !strcmp(R.tgt->origin, "built-in") &&
                     !strcmp(R.src->platform, "native");
        R.steady_proc = opt->steady_steps && f.pid == opt->steady_pid;
        R.steady_seen = false;
        R.steady_shift0 = R.steady_shift1 = 0;
        uint64_t pend = 0;
        if (proj_replay_trace(&R, paths[i], terr, sizeof terr, &pend) != 0) {
            snprintf(err, errlen, "%s: %s", paths[i], terr);
            rc = -1;
        } else {
            out->procs = xrealloc(out->procs, (out->proc_count + 1) * sizeof *out->procs);
            struct wsl_proj_process *pp = &out->procs[out->proc_count++];
            pp->pid = f.pid;
            snprintf(pp->source, sizeof pp->source, "%s", R.src_name);
            pp->wall_ns_recorded = f.end_ns - f.start_ns;
            pp->wall_ns = pend > f.start_ns ? pend - f.start_ns : 0;
            if (f.start_ns < run_start)
                run_start = f.start_ns;
            if (f.end_ns > end_rec)
                end_rec = f.end_ns;
            if (pend > end_proj)
                end_proj = pend;
            if (R.steady_proc && R.steady_seen) {
                out->steady_step_known = true;
                out->steady_step_change_ns = (double)(R.steady_shift1 - R.steady_shift0) / (double)opt->steady_steps;
            }
        }
        facts_free(&f);
    }
    proj_replay_reset(&R);
    free(R.heap);
    free(R.pw);
    if (tl_out && rc == 0) {
        qsort(R.sp, R.sp_count, sizeof *R.sp, shift_point_cmp);
        *tl_out = R.sp;
        *tl_out_count = R.sp_count;
    } else {
        free(R.sp);
    }
    free(ids);
    free(order);
    free(depth);
    if (rc != 0) {
        wsl_projection_free(out);
        return -1;
    }
    if (opt->source)
        snprintf(out->source, sizeof out->source, "%s", given_source.name);
    else if (used_native && used_wsl2)
        snprintf(out->source, sizeof out->source, "mixed: native, wsl2");
    else
        snprintf(out->source, sizeof out->source, "%s", used_wsl2 ? "wsl2" : "native");
    if (run_start != UINT64_MAX) {
        out->wall_ns_recorded = end_rec - run_start;
        out->wall_ns = end_proj > run_start ? end_proj - run_start : 0;
    }
    return 0;
}

/* One replay of the run into *out. A run whose processes have traced parents
 * (DataLoader workers, compiler helpers) is replayed twice: the first pass
 * gives each parent's shift over time, the second starts each child at its
 * parent's shift when it was forked (so that a worker forked after its parent
 * fell behind is behind too, and its writes come as late to the parent). */
static int project_once(const char *const *paths, size_t count, const struct wsl_projection_options *opt,
                        const struct wsl_proj_emu *emu, struct wsl_projection *out, char *err, size_t errlen)
{
    bool children = false;
    int32_t(*ids)[2] = xmalloc((count ? count : 1) * sizeof *ids);
    for (size_t i = 0; i < count; i++) {
        ids[i][0] = ids[i][1] = 0;
        trace_ids(opt->store, paths[i], &ids[i][0], &ids[i][1]);
    }
    for (size_t i = 0; i < count && !children; i++)
        for (size_t j = 0; j < count && !children; j++)
            children = i != j && ids[i][1] > 0 && ids[i][1] == ids[j][0];
    free(ids);
    if (!children)
        return project_pass(paths, count, opt, emu, out, err, errlen, NULL, 0, NULL, NULL, NULL);
    struct wsl_projection *first = xmalloc(sizeof *first);
    *first = *out; /* the caller's starting state: target and settings, nothing replayed */
    first->procs = NULL;
    first->proc_count = 0;
    struct shift_point *tl = NULL;
    size_t tl_count = 0;
    int rc = project_pass(paths, count, opt, emu, first, err, errlen, NULL, 0, &tl, &tl_count, NULL);
    if (rc == 0)
        wsl_projection_free(first);
    free(first);
    if (rc == 0)
        rc = project_pass(paths, count, opt, emu, out, err, errlen, tl, tl_count, NULL, NULL, NULL);
    free(tl);
    return rc;
}

/* Reads an emulation file (calibration JSON with "platform": "emulation");
 * 1: it is one (*e filled), 0: another calibration file, -1: error. */
static int emulation_file(const char *path, struct wsl_emu_spec *e, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0; /* the profile loader says why */
    static char text[4 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    const char *p = strstr(text, "\"platform\"");
    if (!p)
        return 0;
    p += 10;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == ':')
        p++;
    if (strncmp(p, "\"emulation\"", 11) != 0)
        return 0;
    memset(e, 0, sizeof *e);
    snprintf(e->text, sizeof e->text, "%s", path);
    return wsl_emu_parse_json(text, path, e, err, errlen) == 0 ? 1 : -1;
}

/* Published ranges over which a built-in wsl2 target is uncertain
 * (docs/platform-costs.md, docs/projection.md "Exposure"): launch host cost
 * 2.9-8.25 us on WSL2 (kokkos/kokkos#7562; a user report) against the native
 * source's own figure range (4.19-4.25 us on the H200). */
#define WSL2_LAUNCH_LOW_NS 2900.0
#define WSL2_LAUNCH_HIGH_NS 8250.0

int wsl_project_check_target(const char *target, char *err, size_t errlen)
{
    struct wsl_emu_spec spec;
    if (wsl_emu_spec_is_inline(target))
        return wsl_emu_parse(target, &spec, err, errlen);
    if (wsl_emu_spec_is_file(target)) {
        int e = emulation_file(target, &spec, err, errlen);
        if (e)
            return e > 0 ? 0 : -1;
    }
    static struct wsl_profile check;
    return wsl_profile_load(target, &check, err, errlen);
}

int wsl_project(const char *const *paths, size_t count, const struct wsl_projection_options *opt,
                struct wsl_projection *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    char perr[512];
    struct wsl_emu_spec spec;
    int is_emu = 0;
    if (wsl_emu_spec_is_inline(opt->target)) {
        if (wsl_emu_parse(opt->target, &spec, perr, sizeof perr) != 0) {
            snprintf(err, errlen, "--project: %s", perr);
            return -1;
        }
        is_emu = 1;
    } else if (wsl_emu_spec_is_file(opt->target)) {
        is_emu = emulation_file(opt->target, &spec, perr, sizeof perr);
        if (is_emu < 0) {
            snprintf(err, errlen, "--project: %s", perr);
            return -1;
        }
    }
    if (is_emu) {
        out->emulation = true;
        snprintf(out->emu_spec, sizeof out->emu_spec, "%s", spec.text);
        for (unsigned f = 0; f < WSL_EMU_FAMILIES; f++)
            out->emu.ns[f] = (double)spec.ns[f];
        out->emu.fs = spec.fs;
        if (wsl_profile_load("native", &out->target, perr, sizeof perr) != 0) { /* for its shape; no figure is read */
            snprintf(err, errlen, "%s", perr);
            return -1;
        }
        snprintf(out->target.name, sizeof out->target.name, "emulation %.50s", spec.text);
        snprintf(out->target.platform, sizeof out->target.platform, "emulation");
        snprintf(out->target.origin, sizeof out->target.origin, "emulation SPEC");
    } else if (wsl_profile_load(opt->target, &out->target, perr, sizeof perr) != 0) {
        snprintf(err, errlen, "--project: %s", perr);
        return -1;
    }
    if (project_once(paths, count, opt, is_emu ? &out->emu : NULL, out, err, errlen) != 0)
        return -1;

    /* Exposure: replays with one family's cost raised by a unit, against one
     * with nothing added (the replay's own model of the run, so that what is
     * reported is the difference the added cost makes). */
    static const double unit[WSL_EXPO_COUNT] = {1000, 1000, 10000, 100000};
    struct wsl_projection *tmp = xmalloc(sizeof *tmp);
    int64_t base_wall = 0;
    double base_step = 0;
    bool ok = true;
    for (int k = -1; k < WSL_EXPO_COUNT && ok; k++) {
        struct wsl_proj_emu e;
        memset(&e, 0, sizeof e);
        if (k == WSL_EXPO_LAUNCH)
            e.ns[WSL_EMU_LAUNCH] = unit[k];
        else if (k == WSL_EXPO_SYNC)
            e.ns[WSL_EMU_SYNC] = unit[k];
        else if (k == WSL_EXPO_ALLOC)
            e.ns[WSL_EMU_ALLOC] = e.ns[WSL_EMU_FREE] = unit[k];
        else if (k == WSL_EXPO_FILE_META)
            e.file_meta_ns = unit[k];
        memset(tmp, 0, sizeof *tmp);
        tmp->target = out->target;
        char xerr[512];
        if (project_once(paths, count, opt, &e, tmp, xerr, sizeof xerr) != 0) {
            ok = false;
            break;
        }
        if (k < 0) {
            base_wall = (int64_t)tmp->wall_ns;
            base_step = tmp->steady_step_change_ns;
        } else {
            struct wsl_proj_exposure *x = &out->exposure[k];
            x->per_ns = unit[k];
            x->wall_ns = (int64_t)tmp->wall_ns - base_wall;
            x->step_known = tmp->steady_step_known;
            x->step_ns = tmp->steady_step_change_ns - base_step;
            x->calls = tmp->emu_calls;
        }
        wsl_projection_free(tmp);
    }
    free(tmp);
    out->exposure_known = ok;

    /* The built-in wsl2 target from a native source: a range over the published
     * launch figures instead of trusting a point from another GPU; the families
     * without a published WSL2 figure are left out of the high end (said so). */
    if (ok && !is_emu && !strcmp(out->target.platform, "wsl2") && !strcmp(out->target.origin, "built-in") &&
        !strcmp(out->source, "native")) {
        struct wsl_profile nat;
        if (wsl_profile_load("native", &nat, perr, sizeof perr) == 0 && wsl_figure_known(nat.launch_ns)) {
            double per_us = (double)out->exposure[WSL_EXPO_LAUNCH].wall_ns;
            double lo = fmax(0, WSL2_LAUNCH_LOW_NS - nat.launch_ns.value) / 1000.0;
            double hi = fmax(0, WSL2_LAUNCH_HIGH_NS - nat.launch_ns.value) / 1000.0;
            double base = (double)base_wall;
            out->range.known = true;
            out->range.low_ns = (uint64_t)fmax(0, base + lo * per_us);
            out->range.high_ns = (uint64_t)fmax(0, base + hi * per_us);
            out->range.high_open = true;
            snprintf(out->range.basis, sizeof out->range.basis,
                     "launch +%.2f..+%.2f us a call (WSL2 2.9-8.25 us published, other GPUs; native %.2f us); "
                     "synchronization, allocation and copy costs on WSL2 are not published: at least the "
                     "recorded cost, the high end leaves them out", lo, hi, nat.launch_ns.value / 1000.0);
        }
    }
    return 0;
}

void wsl_projection_free(struct wsl_projection *p)
{
    free(p->procs);
    p->procs = NULL;
    p->proc_count = 0;
}
