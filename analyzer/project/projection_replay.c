/*
 * projection_replay.c: pass 2 of the what-if replay (projection.h; docs/projection.md): every
 * recorded call per thread in time order, its host cost changed by the target's figure minus
 * the source's, the simulated GPU, file I/O, forked children and pipes; the time-order window.
 * projection.c runs the passes (projection_internal.h between them).
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

/* ---- pass 2: the replay ----------------------------------------------------------------- */

static void note_unknown(struct wsl_projection *pr, const char *side, const char *profile, const char *figure)
{
    char what[160];
    snprintf(what, sizeof what, "%s %s: %s", side, profile, figure);
    for (size_t i = 0; i < pr->unknown_count; i++)
        if (!strcmp(pr->unknown[i].what, what)) {
            pr->unknown[i].calls++;
            return;
        }
    if (pr->unknown_count == WSL_PROJ_MAX_UNKNOWN) {
        pr->unknown_more++;
        return;
    }
    snprintf(pr->unknown[pr->unknown_count].what, sizeof pr->unknown[0].what, "%s", what);
    pr->unknown[pr->unknown_count++].calls = 1;
}

/* The cost difference target - source of one figure; false (and the figure
 * named as unknown) when either side does not know it. */
static bool figure_delta(struct replay *R, double tgt, double src, const char *figure, double *delta)
{
    if (tgt >= 0 && src >= 0) {
        *delta = tgt - src;
        /* Figures of other hardware (the built-in wsl2's launch, 3.25 us on an RTX 3060,
         * against the H200's 4.22 us) must not make WSL2 cheaper than native. */
        if (R->clamp_up && *delta < 0)
            *delta = 0;
        return true;
    }
    if (tgt < 0)
        note_unknown(R->pr, "target", R->tgt->name, figure);
    if (src < 0)
        note_unknown(R->pr, "source", R->src_name, figure);
    return false;
}

/* A per-size allocation figure (alloc: which 0, free: 1) interpolated in
 * log(size) between the sizes that know it; the 1 MiB figure when none does. */
static double size_figure(const struct wsl_profile *p, uint64_t bytes, int which)
{
    uint64_t sz[WSL_PROFILE_MAX_ALLOC];
    double ns[WSL_PROFILE_MAX_ALLOC];
    size_t n = 0;
    for (size_t i = 0; i < p->alloc_count; i++) {
        struct wsl_figure f = which ? p->alloc[i].free_ns : p->alloc[i].alloc_ns;
        if (wsl_figure_known(f)) {
            sz[n] = p->alloc[i].bytes;
            ns[n++] = f.value;
        }
    }
    if (!n) {
        struct wsl_figure f = which ? p->free_ns : p->alloc_ns;
        return wsl_figure_known(f) ? f.value : -1;
    }
    if (bytes <= sz[0])
        return ns[0];
    if (bytes >= sz[n - 1])
        return ns[n - 1];
    size_t k = 1;
    while (sz[k] < bytes)
        k++;
    double t = (log((double)bytes) - log((double)sz[k - 1])) / (log((double)sz[k]) - log((double)sz[k - 1]));
    return ns[k - 1] + t * (ns[k] - ns[k - 1]);
}

static struct gpu_queue *queue_of(struct replay *R, uint64_t stream)
{
    struct wsl_u64_slot *s = wsl_u64_map_find(&R->streams, stream + 1);
    if (s)
        return &R->queues[s->value];
    if (R->queue_count >= WSL_PROJ_MAX_STREAMS)
        return &R->queues[0]; /* past the cap: the first stream's queue */
    R->queues = xrealloc(R->queues, (R->queue_count + 1) * sizeof *R->queues);
    R->queues[R->queue_count] = (struct gpu_queue){0, 0};
    wsl_u64_map_insert(&R->streams, stream + 1, R->queue_count);
    return &R->queues[R->queue_count++];
}

/* When everything submitted to any stream is done. */
static struct gpu_queue all_queues(const struct replay *R)
{
    struct gpu_queue q = {0, 0};
    for (size_t i = 0; i < R->queue_count; i++) {
        q.rec = fmax(q.rec, R->queues[i].rec);
        q.proj = fmax(q.proj, R->queues[i].proj);
    }
    return q;
}

/* What a stream sync waits for: the legacy default stream (0) waits for every stream. */
static struct gpu_queue ready_of(struct replay *R, uint64_t stream)
{
    return stream == 0 ? all_queues(R) : *queue_of(R, stream);
}

/* A launch's GPU time: the report's estimate where the trace has configurations (a graph: the
 * process's mean timed graph launch, none when never timed, as the report counts it). */
static double kernel_ns(struct replay *R, uint64_t handle, bool graph, uint32_t config)
{
    const struct trace_facts *f = R->facts;
    if (f->est.configs) {
        uint64_t ns = 0, based_on;
        enum wsl_kern_basis b = graph ? (f->est.graphs_timed ? WSL_KERN_BASIS_PROCESS : WSL_KERN_BASIS_NONE)
                                      : wsl_kern_estimate_launch(&f->est, handle, config, &ns, &based_on);
        if (graph)
            ns = f->est.graph_mean_ns;
        R->pr->launches_kernel_mean += !graph && (b == WSL_KERN_BASIS_CONFIG || b == WSL_KERN_BASIS_HANDLE);
        R->pr->launches_process_mean += !graph && b == WSL_KERN_BASIS_PROCESS;
        R->pr->launches_no_gpu_time += !graph && b == WSL_KERN_BASIS_NONE;
        return b == WSL_KERN_BASIS_NONE ? 0 : (double)ns;
    }
    struct wsl_u64_slot *s = handle ? wsl_u64_map_find(&f->handle_index, handle) : NULL;
    if (s && f->means[s->value].count) {
        R->pr->launches_kernel_mean += !graph;
        return gpu_mean_ns(&f->means[s->value]);
    }
    const struct gpu_mean *all = graph ? &f->graph_all : &f->kernel_all;
    if (all->count) {
        R->pr->launches_process_mean += !graph;
        return gpu_mean_ns(all);
    }
    R->pr->launches_no_gpu_time += !graph;
    return 0;
}

static const struct wsl_profile_fs *fs_of(const struct wsl_profile *p, const char *fstype)
{
    return wsl_profile_fs_find(p, fstype);
}

/* A file call's cost difference (false: kept as recorded). */
static bool file_delta(struct replay *R, const struct pending *e, double *delta)
{
    if (e->fs == FS_NONE || e->fs_system)
        return false;
    const char *src_type = R->fstypes[e->fs];
    const char *tgt_type = R->opt->fs ? R->opt->fs : src_type;
    const struct wsl_profile_fs *s = fs_of(R->src, src_type), *t = fs_of(R->tgt, tgt_type);
    char fig[80];
    double sv = -1, tv = -1;
    if (e->kind == K_IO_STAT) {
        sv = s && wsl_figure_known(s->stat_ns) ? s->stat_ns.value : -1;
        tv = t && wsl_figure_known(t->stat_ns) ? t->stat_ns.value : -1;
    } else if (e->kind == K_IO_OPEN) {
        sv = s && wsl_figure_known(s->open_read_close_ns) ? s->open_read_close_ns.value : -1;
        tv = t && wsl_figure_known(t->open_read_close_ns) ? t->open_read_close_ns.value : -1;
    } else if (e->kind == K_IO_READ) {
        if (e->result != 0)
            return false;
        double sb = s && wsl_figure_known(s->read_bytes_per_s) && s->read_bytes_per_s.value > 0
                        ? s->read_bytes_per_s.value : -1;
        double tb = t && wsl_figure_known(t->read_bytes_per_s) && t->read_bytes_per_s.value > 0
                        ? t->read_bytes_per_s.value : -1;
        double bytes = (double)e->a[2];
        sv = sb > 0 ? bytes * 1e9 / sb : -1;
        tv = tb > 0 ? bytes * 1e9 / tb : -1;
    } else {
        return false;
    }
    if (tv >= 0 && sv >= 0) {
        *delta = tv - sv;
        return true;
    }
    /* Name each side's own filesystem type. */
    const char *what = e->kind == K_IO_STAT ? "stat_ns" : e->kind == K_IO_OPEN ? "open_read_close_ns"
                                                                             : "read_bytes_per_s";
    if (tv < 0) {
        snprintf(fig, sizeof fig, "file %s %s", tgt_type, what);
        note_unknown(R->pr, "target", R->tgt->name, fig);
    }
    if (sv < 0) {
        snprintf(fig, sizeof fig, "file %s %s", src_type, what);
        note_unknown(R->pr, "source", R->src_name, fig);
    }
    return false;
}

int32_t proj_parent_of(const struct replay *R, int32_t pid)
{
    for (size_t i = 0; i < R->ppid_count; i++)
        if (R->ppids[i][0] == pid)
            return R->ppids[i][1];
    return 0;
}

/* Whether process `pid` descends from `anc` among the run's processes. */
static bool descends_from(const struct replay *R, int32_t pid, int32_t anc)
{
    for (int depth = 0; depth < 32 && pid > 0; depth++) {
        pid = proj_parent_of(R, pid);
        if (pid == anc)
            return true;
    }
    return false;
}

static int pipe_write_cmp(const void *a, const void *b)
{
    const struct pipe_write *x = a, *y = b;
    return x->re < y->re ? -1 : x->re > y->re;
}

/* The projected time of the last write of a descendant of the process being
 * replayed at or before recorded time `re`; -1 when there is none. */
static double child_write_before(struct replay *R, uint64_t re)
{
    if (R->pw_sorted != R->pw_count) {
        qsort(R->pw, R->pw_count, sizeof *R->pw, pipe_write_cmp);
        R->pw_sorted = R->pw_count;
    }
    size_t lo = 0, hi = R->pw_count; /* first write after re */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (R->pw[mid].re <= re)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo, seen = 0; i-- > 0 && seen < 4096; seen++)
        if (descends_from(R, R->pw[i].pid, R->pid))
            return R->pw[i].pe;
    return -1;
}

/* Replays one call. */
static void replay_one(struct replay *R, const struct pending *e)
{
    struct wsl_projection *pr = R->pr;
    const struct wsl_clock_map *clk = &R->facts->clock;
    uint64_t rs = wsl_clock_to_ns(clk, e->t_start), re = wsl_clock_to_ns(clk, e->t_end);
    if (re < rs)
        re = rs;
    double rd = (double)(re - rs);
    struct wsl_u64_slot *ts = wsl_u64_map_find(&R->threads, (uint64_t)e->tid + 1);
    if (!ts) {
        R->thr = xrealloc(R->thr, (R->thr_count + 1) * sizeof *R->thr);
        memset(&R->thr[R->thr_count], 0, sizeof *R->thr);
        R->thr[R->thr_count].shift = R->start_shift; /* forked when its parent had this shift */
        wsl_u64_map_insert(&R->threads, (uint64_t)e->tid + 1, R->thr_count++);
        ts = wsl_u64_map_find(&R->threads, (uint64_t)e->tid + 1);
    }
    struct thread_state *th = &R->thr[ts->value];
    if (!th->any) {
        th->any = true;
        th->first_rs = rs;
    } else if (rs > th->last_re) {
        uint64_t gap = rs - th->last_re;
        pr->cause[WSL_PROJ_CPU].recorded_ns += gap;
        pr->cause[WSL_PROJ_CPU].projected_ns += gap;
    }
    double ps = (double)rs + (double)th->shift;
    double pd = rd, delta = 0;
    bool changed = false, kept = true;
    double wait_rec = 0, wait_proj = 0;
    const struct wsl_profile *S = R->src, *T = R->tgt;
    enum wsl_proj_cause cause = proj_cause_of(e->kind);
    /* An emulation SPEC or an exposure replay: its added cost, no profile figure. */
    const struct wsl_proj_emu *E = R->emu;
    double emu_d = 0, emu_bytes = 0;
    if (E) {
        switch (e->kind) {
        case K_LAUNCH: case K_GRAPH: emu_d = E->ns[WSL_EMU_LAUNCH]; break;
        case K_SYNC_STREAM: case K_SYNC_CTX: case K_SYNC_EVENT: emu_d = E->ns[WSL_EMU_SYNC]; break;
        case K_COPY_BLOCKING: emu_d = E->ns[WSL_EMU_SYNC] + E->ns[WSL_EMU_COPY]; break;
        case K_COPY_ASYNC: case K_COPY_DTOD: case K_MEMSET: emu_d = E->ns[WSL_EMU_COPY]; break;
        case K_ALLOC: case K_POOL_ALLOC: case K_MANAGED: case K_PINNED_ALLOC: emu_d = E->ns[WSL_EMU_ALLOC]; break;
        case K_FREE: case K_POOL_FREE: emu_d = E->ns[WSL_EMU_FREE]; break;
        case K_HOST_FREE: emu_d = E->ns[WSL_EMU_FREE]; break;
        case K_IO_OPEN: case K_IO_STAT: case K_IO_DIR:
            emu_d = !e->fs_system ? E->file_meta_ns : 0; /* an unknown filesystem counts as data */
            /* fs:PATH=9p: a call naming an emulated path (an fstat names none) */
            if (e->emu_fs && !(e->kind == K_IO_STAT && (int64_t)e->stream >= 0))
                emu_d += (double)E->fs.meta_ns;
            break;
        case K_IO_READ: case K_IO_WRITE: /* fs:PATH=9p: its bytes at the emulated rate */
            if (e->emu_fs) /* a[2]: the bytes of all the calls it stands for */
                emu_bytes = (double)wsl_emu_fs_bytes_ns(e->kind == K_IO_READ ? E->fs.read_bps : E->fs.write_bps,
                                                        e->a[2]);
            break;
        default: break;
        }
    }
    if (E && (emu_d > 0 || emu_bytes > 0)) {
        emu_d = emu_d * e->calls + emu_bytes; /* a fold's alike calls, each with the added cost */
        R->pr->emu_calls += e->calls;
    }
#define DELTA(call) (E ? (delta = emu_d, true) : (call))
    if (R->steady_proc && !R->steady_seen && rs >= R->opt->steady_start_ns) {
        R->steady_seen = true;
        R->steady_shift0 = th->shift;
    }

    switch (e->kind) {
    case K_LAUNCH: {
        changed = DELTA(figure_delta(R, T->launch_ns.value, S->launch_ns.value, "launch_ns", &delta));
        pd = fmax(0, rd + delta);
        if (e->result != 0)
            break;
        pr->launches++;
        if (wsl_u64_map_find(&R->capturing, e->stream + 1)) {
            pr->captured_launches++;
            break;
        }
        double g = kernel_ns(R, e->a[0], false, wsl_launch_config(e->a[1], e->a[2]));
        struct gpu_queue *q = queue_of(R, e->stream);
        q->rec = fmax(q->rec, (double)re) + g;
        q->proj = fmax(q->proj, ps + pd) + g;
        pr->gpu_ns += (uint64_t)g;
        break;
    }
    case K_GRAPH: {
        /* No profile holds the host cost of cuGraphLaunch: kept (an emulation adds its launch cost). */
        if (E) {
            changed = DELTA(false);
            pd = fmax(0, rd + delta);
        }
        if (e->result != 0)
            break;
        pr->graph_launches++;
        double g = kernel_ns(R, e->a[0], true, 0);
        struct gpu_queue *q = queue_of(R, e->stream);
        q->rec = fmax(q->rec, (double)re) + g;
        q->proj = fmax(q->proj, ps + pd) + g;
        pr->gpu_ns += (uint64_t)g;
        break;
    }
    case K_CAPTURE_BEGIN:
        if (e->result == 0 && !wsl_u64_map_find(&R->capturing, e->stream + 1))
            wsl_u64_map_insert(&R->capturing, e->stream + 1, 1);
        break;
    case K_CAPTURE_END: {
        struct wsl_u64_slot *c = wsl_u64_map_find(&R->capturing, e->stream + 1);
        if (c)
            wsl_u64_map_remove(&R->capturing, c);
        break;
    }
    case K_SYNC_STREAM:
    case K_SYNC_CTX:
    case K_SYNC_EVENT:
    case K_COPY_BLOCKING: {
        struct gpu_queue ready = {0, 0};
        if (e->kind == K_SYNC_CTX || e->kind == K_COPY_BLOCKING) {
            ready = all_queues(R);
        } else if (e->kind == K_SYNC_STREAM) {
            ready = ready_of(R, e->stream);
        } else {
            struct wsl_u64_slot *ev = e->a[0] ? wsl_u64_map_find(&R->events, e->a[0]) : NULL;
            if (ev)
                ready = R->event_times[ev->value];
        }
        wait_rec = fmax(0, fmin(ready.rec - (double)rs, rd));
        double overhead = rd - wait_rec;
        if (e->kind == K_COPY_BLOCKING)
            changed = DELTA(figure_delta(R, T->memcpy_ns.value, S->memcpy_ns.value, "memcpy_ns", &delta));
        else
            changed = DELTA(figure_delta(R, T->sync_ns.value, S->sync_ns.value, "sync_ns", &delta));
        double start = fmax(ps, ready.proj);
        wait_proj = start - ps;
        pd = wait_proj + fmax(0, overhead + delta);
        break;
    }
    case K_STREAM_WAIT: {
        struct wsl_u64_slot *ev = e->a[0] ? wsl_u64_map_find(&R->events, e->a[0]) : NULL;
        if (ev && e->result == 0) {
            struct gpu_queue *q = queue_of(R, e->stream);
            q->rec = fmax(q->rec, R->event_times[ev->value].rec);
            q->proj = fmax(q->proj, R->event_times[ev->value].proj);
        }
        break;
    }
    case K_EVENT_RECORD: {
        changed = DELTA(figure_delta(R, T->event_record_ns.value, S->event_record_ns.value, "event_record_ns", &delta));
        pd = fmax(0, rd + delta);
        if (e->result != 0 || !e->a[0] || wsl_u64_map_find(&R->capturing, e->stream + 1))
            break;
        struct gpu_queue q = ready_of(R, e->stream);
        q.rec = fmax(q.rec, (double)re);
        q.proj = fmax(q.proj, ps + pd);
        struct wsl_u64_slot *ev = wsl_u64_map_find(&R->events, e->a[0]);
        if (ev) {
            R->event_times[ev->value] = q;
        } else if (R->event_count < WSL_PROJ_MAX_EVENTS) {
            R->event_times = xrealloc(R->event_times, (R->event_count + 1) * sizeof *R->event_times);
            R->event_times[R->event_count] = q;
            wsl_u64_map_insert(&R->events, e->a[0], R->event_count++);
        }
        break;
    }
    case K_EVENT_QUERY:
        changed = DELTA(figure_delta(R, T->event_query_ns.value, S->event_query_ns.value, "event_query_ns", &delta));
        pd = fmax(0, rd + delta);
        break;
    case K_COPY_ASYNC:
    case K_COPY_DTOD:
        changed = DELTA(figure_delta(R, T->memcpy_ns.value, S->memcpy_ns.value, "memcpy_ns", &delta));
        pd = fmax(0, rd + delta);
        break;
    case K_ALLOC: {
        uint64_t bytes = e->a[1];
        double ta = size_figure(T, bytes, 0), sa = size_figure(S, bytes, 0);
        double tf = size_figure(T, bytes, 1), sf = size_figure(S, bytes, 1);
        bool paired = false;
        if (E || (ta >= 0 && sa >= 0 && tf >= 0 && sf >= 0)) {
            changed = DELTA(figure_delta(R, ta, sa, "alloc_ns", &delta));
        } else {
            /* Only the alloc + free pair is known on a side: the pair's difference goes to the allocation. */
            paired = true;
            changed = DELTA(figure_delta(R, wsl_profile_alloc_free_ns(T, bytes), wsl_profile_alloc_free_ns(S, bytes),
                                   "alloc_ns + free_ns", &delta));
        }
        pd = fmax(0, rd + delta);
        if (e->result == 0 && e->a[0] && R->allocs.count < WSL_PROJ_MAX_ALLOCS &&
            !wsl_u64_map_find(&R->allocs, e->a[0]))
            wsl_u64_map_insert(&R->allocs, e->a[0], bytes << 1 | (paired && changed));
        break;
    }
    case K_FREE: {
        struct wsl_u64_slot *a = e->a[0] ? wsl_u64_map_find(&R->allocs, e->a[0]) : NULL;
        uint64_t bytes = a ? a->value >> 1 : 1u << 20;
        bool paired = a && (a->value & 1);
        if (a)
            wsl_u64_map_remove(&R->allocs, a);
        if (paired) {
            changed = true; /* its difference went with the allocation */
            break;
        }
        changed = DELTA(figure_delta(R, size_figure(T, bytes, 1), size_figure(S, bytes, 1), "free_ns", &delta));
        pd = fmax(0, rd + delta);
        break;
    }
    case K_MEMSET:
    case K_HOST_FREE:
        if (E) {
            changed = DELTA(false);
            pd = fmax(0, rd + delta);
        }
        break;
    case K_POOL_ALLOC:
        changed = DELTA(figure_delta(R, T->pool_alloc_ns.value, S->pool_alloc_ns.value, "pool_alloc_ns", &delta));
        pd = fmax(0, rd + delta);
        break;
    case K_POOL_FREE:
        changed = DELTA(figure_delta(R, T->pool_free_ns.value, S->pool_free_ns.value, "pool_free_ns", &delta));
        pd = fmax(0, rd + delta);
        break;
    case K_PINNED_ALLOC:
        changed = DELTA(figure_delta(R, T->pinned_alloc_ns.value, S->pinned_alloc_ns.value, "pinned_alloc_ns", &delta));
        pd = fmax(0, rd + delta);
        break;
    case K_IO_OPEN:
    case K_IO_READ:
    case K_IO_STAT:
        changed = DELTA(file_delta(R, e, &delta));
        pd = fmax(0, rd + delta);
        break;
    case K_IO_WRITE: /* likewise for writes (an emulated path's bytes) */
    case K_IO_DIR: /* no profile has a figure for folder calls: only an added cost moves them */
        if (E) {
            changed = DELTA(false);
            pd = fmax(0, rd + delta);
        }
        break;
    default:
        break; /* no figure for it in any profile: kept as recorded */
    }
    /* A read of a pipe or socket (no file): data a child wrote; when the child
     * is projected to write it later than this read would end, the read waits. */
    if (e->kind == K_IO_READ && e->fs == FS_NONE && !e->a[0] && e->result == 0 && e->a[2] > 0 &&
        R->pw_count && R->pid_has_children) {
        double w = child_write_before(R, re);
        if (w > ps + pd) {
            wait_rec += rd;
            pd = w - ps;
            wait_proj += pd;
            changed = true;
        }
    }
    kept = !changed;
    double pe = ps + pd;
    struct wsl_proj_cause_figs *c = &pr->cause[cause];
    c->calls += e->calls;
    c->recorded_ns += (uint64_t)rd;
    c->projected_ns += (uint64_t)llround(pd);
    c->wait_recorded_ns += (uint64_t)wait_rec;
    c->wait_projected_ns += (uint64_t)llround(wait_proj);
    c->changed_calls += changed;
    c->kept_calls += kept;
    pr->events++;
    int64_t old_shift = th->shift;
    th->shift = (int64_t)llround(pe - (double)re);
    th->last_re = re;
    if (R->record_shifts && (th->shift - old_shift > 1000 || old_shift - th->shift > 1000 || !R->sp_count ||
                             R->sp[R->sp_count - 1].pid != R->pid)) {
        if (R->sp_count == R->sp_cap) {
            R->sp_cap = R->sp_cap ? 2 * R->sp_cap : 4096;
            R->sp = xrealloc(R->sp, R->sp_cap * sizeof *R->sp);
        }
        R->sp[R->sp_count++] = (struct shift_point){R->pid, re, th->shift};
    }
    th->last_pe = (uint64_t)llround(fmax(0, pe));
    if (R->steady_proc && re <= R->opt->steady_end_ns)
        R->steady_shift1 = th->shift;
    if (re >= R->latest_re) {
        R->latest_re = re;
        R->latest_shift = th->shift;
    }
    if (th->last_pe > R->max_pe)
        R->max_pe = th->last_pe;
    /* a write on a pipe or socket (not stdout or stderr): a parent may read it */
    if (e->kind == K_IO_WRITE && e->fs == FS_NONE && !e->a[0] && e->result == 0 && e->a[2] > 0 &&
        (int64_t)e->stream > 2 && R->pid_has_parent) {
        if (R->pw_count == R->pw_cap) {
            R->pw_cap = R->pw_cap ? 2 * R->pw_cap : 1024;
            R->pw = xrealloc(R->pw, R->pw_cap * sizeof *R->pw);
        }
        R->pw[R->pw_count++] = (struct pipe_write){re, pe, R->pid};
    }
#undef DELTA
}

/* ---- the window: a min-heap on (t_start, seq) ---- */

static bool before(const struct pending *a, const struct pending *b)
{
    return a->t_start != b->t_start ? a->t_start < b->t_start : a->seq < b->seq;
}

static void heap_pop_replay(struct replay *R)
{
    struct pending top = R->heap[0];
    R->heap[0] = R->heap[--R->heap_count];
    for (size_t i = 0;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < R->heap_count && before(&R->heap[l], &R->heap[m]))
            m = l;
        if (r < R->heap_count && before(&R->heap[r], &R->heap[m]))
            m = r;
        if (m == i)
            break;
        struct pending t = R->heap[i];
        R->heap[i] = R->heap[m];
        R->heap[m] = t;
        i = m;
    }
    if (R->popped_any && top.t_start < R->last_popped)
        R->pr->late_events++;
    else
        R->last_popped = top.t_start;
    R->popped_any = true;
    replay_one(R, &top);
}

static void heap_push(struct replay *R, const struct pending *p)
{
    if (R->heap_count == R->window)
        heap_pop_replay(R);
    size_t i = R->heap_count++;
    R->heap[i] = *p;
    while (i) {
        size_t up = (i - 1) / 2;
        if (!before(&R->heap[i], &R->heap[up]))
            break;
        struct pending t = R->heap[i];
        R->heap[i] = R->heap[up];
        R->heap[up] = t;
        i = up;
    }
}

static uint8_t fstype_index(struct replay *R, const char *fstype)
{
    for (size_t i = 0; i < R->fstype_count; i++)
        if (!strcmp(R->fstypes[i], fstype))
            return (uint8_t)i;
    if (R->fstype_count == MAX_FSTYPES)
        return FS_NONE;
    snprintf(R->fstypes[R->fstype_count], sizeof R->fstypes[0], "%s", fstype);
    return (uint8_t)R->fstype_count++;
}

/* The filesystem of a file call, from the device it names (open, stat) or its fd. */
static void classify_file(struct replay *R, const struct wsl_reader *r, struct pending *p)
{
    p->fs = FS_NONE;
    p->fs_system = 0;
    p->emu_fs = R->emu_paths.count && p->a[0] && wsl_u64_map_find(&R->emu_paths, p->a[0]) != NULL;
    const struct wsl_mount_table *mt = wsl_reader_mounts(r);
    uint64_t dev = 0;
    if (p->kind == K_IO_OPEN || p->kind == K_IO_STAT || p->kind == K_IO_DIR) {
        dev = p->a[1];
    } else if (p->kind == K_IO_READ || p->kind == K_IO_WRITE) {
        if (!p->a[0])
            return; /* no path: a pipe, socket or terminal (its fd number may be a closed file's) */
        struct wsl_u64_slot *s = wsl_u64_map_find(&R->fds, p->stream + 1);
        if (s) {
            p->fs = (uint8_t)(s->value & 0xff);
            p->fs_system = (s->value >> 8) & 1;
        }
        return;
    }
    if (!mt || !dev)
        return;
    const struct wsl_mount *m = wsl_mounts_find(mt, dev, NULL, 0);
    if (!m)
        return;
    p->fs = fstype_index(R, m->fstype);
    p->fs_system = wsl_fs_kind_is_system(wsl_mount_classify(m, R->wsl));
    if (p->kind == K_IO_OPEN && p->result == 0 && (int64_t)p->stream >= 0) {
        struct wsl_u64_slot *s = wsl_u64_map_find(&R->fds, p->stream + 1);
        uint64_t v = p->fs | (uint64_t)p->fs_system << 8;
        if (s)
            s->value = v;
        else
            wsl_u64_map_insert(&R->fds, p->stream + 1, v);
    }
}

void proj_replay_reset(struct replay *R)
{
    wsl_u64_map_free(&R->threads);
    wsl_u64_map_free(&R->streams);
    wsl_u64_map_free(&R->capturing);
    wsl_u64_map_free(&R->events);
    wsl_u64_map_free(&R->allocs);
    wsl_u64_map_free(&R->fds);
    wsl_u64_map_free(&R->emu_paths);
    free(R->thr);
    free(R->queues);
    free(R->event_times);
    R->thr = NULL;
    R->queues = NULL;
    R->event_times = NULL;
    R->thr_count = R->queue_count = R->event_count = 0;
    R->heap_count = 0;
    R->popped_any = false;
    R->latest_re = 0;
    R->latest_shift = 0;
    R->max_pe = 0;
}

static unsigned category_of_id(void *ctx, unsigned id)
{
    const uint16_t *cats = ctx;
    return id < WSL_MAX_API_IDS ? cats[id] : WSL_CAT_COUNT;
}

int proj_replay_trace(struct replay *R, const char *path, char *err, size_t errlen, uint64_t *proj_end)
{
    struct wsl_reader *r = wsl_store_open(R->opt->store, path, err, errlen);
    if (!r)
        return -1;
    uint8_t kinds[WSL_MAX_API_IDS];
    memset(kinds, K_OTHER, sizeof kinds);
    /* Folded file calls (untimed, on local files) take an added cost too when
     * replayed with one: their categories, and the sampled close's id. */
    static uint16_t cats[WSL_MAX_API_IDS];
    for (unsigned i = 0; i < WSL_MAX_API_IDS; i++)
        cats[i] = WSL_CAT_COUNT;
    unsigned close_id = 0;
    struct wsl_item it;
    enum wsl_read_result res;
    while ((res = wsl_reader_next(r, &it)) == WSL_READ_ITEM) {
        if (it.type == WSL_CHUNK_API_TABLE) {
            for (uint32_t i = 0; i < it.api_table.count; i++) {
                const struct wsl_api_entry *a = &it.api_table.entries[i];
                kinds[a->id] = proj_kind_of(a->category, a->base);
                cats[a->id] = a->category;
                if (a->category == WSL_CAT_IO_CLOSE && (a->flags & WSL_API_IO_SAMPLED) && !strcmp(a->symbol, "close"))
                    close_id = a->id;
            }
        } else if (it.type == WSL_CHUNK_PATHS && R->emu && R->emu->fs.count) {
            size_t pos = 0;
            struct wsl_path_ref ref;
            char path[WSL_PATH_MAX_LENGTH + 1], full[WSL_PATH_MAX_LENGTH + 2];
            while (wsl_paths_next(&it, &pos, &ref)) {
                memcpy(path, ref.bytes, ref.length);
                path[ref.length] = 0;
                size_t n = path[0] == '/' ? wsl_emu_path_join(full, sizeof full, "", 0, path) : 0;
                if (n && wsl_emu_fs_match(&R->emu->fs, full, n) && !wsl_u64_map_find(&R->emu_paths, ref.id))
                    wsl_u64_map_insert(&R->emu_paths, ref.id, 1);
            }
        } else if (it.type == WSL_CHUNK_EVENTS) {
            for (uint32_t i = 0; i < it.events.count; i++) {
                const struct wsl_event *ev = &it.events.events[i];
                uint8_t k = kinds[ev->api];
                if (k == K_SKIP)
                    continue;
                if (R->emu && cats[ev->api] == WSL_CAT_IO_FOLD) {
                    struct wsl_fold_call fc[WSL_FOLD_EVENT_CALLS];
                    unsigned nf = wsl_fold_calls(ev, close_id, category_of_id, cats, fc);
                    for (unsigned j = 0; j < nf; j++) {
                        uint8_t fk = kinds[fc[j].ev.api];
                        if (fk != K_IO_OPEN && fk != K_IO_STAT && fk != K_IO_READ)
                            continue; /* seeks and closes: no added cost, kept in the fold's time */
                        struct pending q = {ev->t_start, ev->t_start, R->seq++, fc[j].ev.stream,
                                            {fc[j].ev.a[0], fc[j].ev.a[1], fc[j].ev.a[2], fc[j].ev.a[3]}, 0,
                                            it.events.tid, fk, FS_NONE, 0,
                                            (uint32_t)(fc[j].calls > UINT32_MAX ? UINT32_MAX : fc[j].calls), 0};
                        classify_file(R, r, &q);
                        heap_push(R, &q);
                    }
                }
                struct pending p = {ev->t_start, ev->t_end, R->seq++, ev->stream,
                                    {ev->a[0], ev->a[1], ev->a[2], ev->a[3]}, ev->result, it.events.tid, k,
                                    FS_NONE, 0, 1, 0};
                if (k == K_IO_OPEN || k == K_IO_READ || k == K_IO_STAT || k == K_IO_WRITE || k == K_IO_DIR)
                    classify_file(R, r, &p);
                heap_push(R, &p);
            }
        }
    }
    if (res == WSL_READ_ERROR) {
        snprintf(err, errlen, "%s", wsl_reader_message(r));
        wsl_reader_close(r);
        return -1;
    }
    wsl_reader_close(r);
    while (R->heap_count)
        heap_pop_replay(R);
    /* The process's own time before its first call and after its last one: unchanged. */
    const struct trace_facts *f = R->facts;
    uint64_t first = UINT64_MAX;
    for (size_t i = 0; i < R->thr_count; i++)
        if (R->thr[i].any && R->thr[i].first_rs < first)
            first = R->thr[i].first_rs;
    if (first != UINT64_MAX) {
        uint64_t lead = first > f->start_ns ? first - f->start_ns : 0;
        uint64_t tail = f->end_ns > R->latest_re ? f->end_ns - R->latest_re : 0;
        R->pr->cause[WSL_PROJ_CPU].recorded_ns += lead + tail;
        R->pr->cause[WSL_PROJ_CPU].projected_ns += lead + tail;
    }
    double end = (double)f->end_ns + (double)R->latest_shift;
    if ((double)R->max_pe > end)
        end = (double)R->max_pe;
    if (end < (double)f->start_ns)
        end = (double)f->start_ns;
    *proj_end = (uint64_t)llround(end);
    return 0;
}

