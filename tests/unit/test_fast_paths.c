/* The event loop's fast paths and caches (the reader's sixth pass), against models of what the
 * lookups they skip would find, or against the slow path they stand for:
 * - kern_gpu_row_cache: the kernel table's timed handles with the row of the configuration each
 *   was last timed at (a cache entry per few bits of the handle). 600 handles over the 256
 *   entries, up to 4 configurations each, in random order, through wsl_kern_trace_gpu and
 *   wsl_kern_trace_event alike: every (handle, configuration) row and every handle's row holds the
 *   timed launches the events gave it.
 * - nvtx_gpu_caches: a GPU kernel's range (the innermost at its launch time, from its thread's
 *   history, through the span history_at found last) and its timed entry (a cache by the
 *   entry's hash). Three host threads push and pop ranges (one past the history's ring), kernels
 *   launched in order, a few entries back, long before, before any range and by a thread with
 *   none; 200 handles over the 64 entries: per range its kernels and GPU time, per (range,
 *   handle, configuration, idle) its count, each once; after the pairs' adjustment the cache
 *   holds nothing (the entries it named are gone).
 * - phase_fast_path: the phase tracking's inline launch path (its tests of a thread's state kept
 *   in `room`) against wsl_phase_trace_event_slow fed the same events: launches,
 *   failed ones, graphs, submissions, breaks, reads of pipes, out of order starts, on 3 threads,
 *   one past WSL_PHASE_MAX_SEQ launches: every thread's sequence, gaps and counts the same. */
#include <stdlib.h>
#include <string.h>

#include "kernel_analysis.h"
#include "nvtx_internal.h"
#include "phase_analysis.h"
#include "unit_test.h"

/* ---- kernel table ---------------------------------------------------------------------------- */

#define K_HANDLES 600
#define K_CONFIGS 4

int test_kern_gpu_row_cache(void)
{
    for (unsigned round = 0; round < 4; round++) {
        rng_seed(0x6b65726e + round);
        struct wsl_kern_trace *t = wsl_kern_trace_begin();
        static uint64_t want[K_HANDLES][K_CONFIGS + 1]; /* [0]: the handle's timed launches */
        memset(want, 0, sizeof want);
        uint64_t handle_of[K_HANDLES];
        for (unsigned h = 0; h < K_HANDLES; h++)
            handle_of[h] = 0x7f0000000000ull + 0x1000ull * (h + 1) + (round & 1) * 0x40 * h; /* aligned, like functions */
        unsigned h = 0, c = 1;
        for (unsigned i = 0; i < 200000; i++) {
            /* runs of one handle and configuration, then a switch of either or both */
            uint64_t r = rng_below(100);
            if (r < 20)
                h = (unsigned)rng_below(K_HANDLES);
            else if (r < 25)
                h = (h + 1) % K_HANDLES; /* a neighbour: often the same cache entry's other handle */
            if (r >= 15 && r < 35)
                c = 1 + (unsigned)rng_below(K_CONFIGS);
            struct wsl_event ev;
            memset(&ev, 0, sizeof ev);
            ev.t_start = 1000000 + 100 * (uint64_t)i;
            ev.t_end = ev.t_start + 10 + rng_below(1000);
            ev.a[0] = handle_of[h];
            ev.a[1] = ev.t_start - 5000;
            ev.a[2] = WSL_GPU_MAPPED;
            ev.result = (int32_t)(0x1000 * c); /* a configuration (not 0), the same values for every handle */
            if (i % 3)
                wsl_kern_trace_gpu(t, &ev);
            else
                wsl_kern_trace_event(t, WSL_KERN_GPU_TIME, 0, &ev);
            want[h][0]++;
            want[h][c]++;
        }
        struct wsl_kern_estimate e;
        wsl_kern_estimate_build(t, 1.0, &e);
        uint64_t rows_want = 0, rows_seen = 0;
        for (unsigned i = 0; i < K_HANDLES; i++)
            for (unsigned j = 0; j <= K_CONFIGS; j++)
                rows_want += want[i][j] != 0;
        for (size_t i = 0; i < e.row_count; i++) {
            const struct wsl_kern_estimate_row *row = &e.rows[i];
            unsigned hi = 0;
            while (hi < K_HANDLES && handle_of[hi] != row->handle)
                hi++;
            CHECKF(hi < K_HANDLES, "round %u: a row of an unknown handle %llx", round, (unsigned long long)row->handle);
            unsigned ci = row->config ? row->config / 0x1000 : 0;
            CHECKF(!row->config || (ci >= 1 && ci <= K_CONFIGS && row->config == 0x1000 * ci),
                   "round %u: handle %u has configuration %x", round, hi, row->config);
            CHECKF(row->timed == want[hi][ci], "round %u: handle %u configuration %u: %llu timed, expected %llu", round,
                   hi, ci, (unsigned long long)row->timed, (unsigned long long)want[hi][ci]);
            rows_seen++;
        }
        CHECKF(rows_seen == rows_want, "round %u: %llu rows, expected %llu", round, (unsigned long long)rows_seen,
               (unsigned long long)rows_want);
        wsl_kern_estimate_free(&e);
        wsl_kern_trace_discard(t);
    }
    return 0;
}

/* ---- NVTX attribution ------------------------------------------------------------------------ */

#define N_NAMES 12
#define N_HANDLES 200
#define N_THREADS 3
#define N_DEPTH 4

struct model_thread {
    uint32_t tid;
    uint32_t stack[N_DEPTH];
    unsigned depth;
    uint64_t *t;       /* every history entry: its time and the innermost name then (0: none) */
    uint32_t *name;
    size_t n, cap;
    uint64_t next_gpu; /* launch time of the thread's in-order kernels so far */
};

static void model_note(struct model_thread *m, uint64_t t)
{
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 1024;
        m->t = realloc(m->t, m->cap * sizeof *m->t);
        m->name = realloc(m->name, m->cap * sizeof *m->name);
    }
    m->t[m->n] = t;
    m->name[m->n++] = m->depth ? m->stack[m->depth - 1] : 0;
}

/* The innermost name at time t as the history of WSL_NVTX_HISTORY entries knows it; -1: none known
 * (before the oldest entry kept, or no entry). */
static int64_t model_at(const struct model_thread *m, uint64_t t)
{
    size_t lo = m->n > WSL_NVTX_HISTORY ? m->n - WSL_NVTX_HISTORY : 0, hi = m->n;
    if (m->n == 0 || m->t[lo] > t)
        return -1;
    while (hi - lo > 1) { /* the last entry at or before t (the model's times only grow) */
        size_t mid = lo + (hi - lo) / 2;
        if (m->t[mid] <= t)
            lo = mid;
        else
            hi = mid;
    }
    return m->name[lo] ? (int64_t)m->name[lo] : -1;
}

/* (name, handle, configuration 1-3, idle) -> the model's count of timed kernels */
#define TW_INDEX(name, h, config, idle) ((((size_t)(name) * N_HANDLES + (h)) * 3 + (config) - 1) * 2 + (idle))
#define TW_SIZE TW_INDEX(N_NAMES + 1, 0, 1, 0)

int test_nvtx_gpu_caches(void)
{
    rng_seed(0x6e767478);
    struct wsl_nvtx_trace *t = wsl_nvtx_trace_begin();
    struct model_thread m[N_THREADS];
    memset(m, 0, sizeof m);
    struct wsl_nvtx_thread *th[N_THREADS];
    for (unsigned i = 0; i < N_THREADS; i++) {
        m[i].tid = 7 + 2 * i;
        th[i] = wsl_nvtx_thread(t, m[i].tid, 0);
    }
    uint64_t want_kernels[N_NAMES + 1] = {0}, want_ns[N_NAMES + 1] = {0}, want_unattributed = 0;
    uint64_t *tw = calloc(TW_SIZE, sizeof *tw);
    unsigned char *tw_seen = calloc(TW_SIZE, 1);
    size_t tw_n = 0;
    uint64_t now = 1000000;
    for (unsigned i = 0; i < 400000; i++) {
        now += 2; /* host events at even times, launches at odd ones: no ties */
        unsigned w = (unsigned)rng_below(N_THREADS);
        /* thread 2 changes ranges often (its history wraps the ring); the others between kernels */
        uint64_t r = rng_below(w == 2 ? 4 : 40);
        struct model_thread *mt = &m[w];
        struct wsl_event ev;
        memset(&ev, 0, sizeof ev);
        ev.t_start = now;
        ev.t_end = now + 1;
        if (r == 0 && mt->depth < N_DEPTH) {
            uint32_t name = 1 + (uint32_t)rng_below(N_NAMES);
            ev.a[0] = name;
            ev.a[1] = mt->depth;
            wsl_nvtx_trace_event(t, th[w], WSL_CAT_NVTX_PUSH, &ev, 1, 1);
            mt->stack[mt->depth++] = name;
            model_note(mt, now);
            continue;
        }
        if (r == 1 && mt->depth) {
            wsl_nvtx_trace_event(t, th[w], WSL_CAT_NVTX_POP, &ev, 1, 1);
            mt->depth--;
            model_note(mt, now);
            continue;
        }
        /* a GPU kernel launched by thread w (or by a thread with no ranges, tid 99) */
        uint64_t launched;
        uint64_t how = rng_below(100);
        if (how < 80 && mt->next_gpu < now)
            launched = mt->next_gpu = mt->next_gpu + 1 + 2 * rng_below((now - mt->next_gpu) / 2 + 1); /* in order */
        else if (how < 95 && mt->n)
            launched = mt->t[mt->n - 1 - rng_below(mt->n < 8 ? mt->n : 8)] + 1; /* a few entries back */
        else
            launched = 1 + 2 * rng_below(now / 2); /* anywhere before now: before the ranges too */
        if (launched % 2 == 0)
            launched++;
        if (launched > now)
            launched = now - 1;
        uint32_t tid = how == 99 ? 99 : mt->tid;
        unsigned hidx = (unsigned)rng_below(N_HANDLES);
        uint64_t handle = 0x7f0000001000ull + 0x1000ull * hidx;
        uint32_t config = 1 + (uint32_t)rng_below(3);
        unsigned idle = rng_below(4) == 0;
        ev.t_start = launched + 3;
        ev.t_end = ev.t_start + 1 + rng_below(5000);
        ev.a[0] = handle;
        ev.a[1] = launched;
        ev.a[2] = (uint64_t)tid << 32 | WSL_GPU_MAPPED | (idle ? WSL_GPU_IDLE_AT_SUBMIT : 0);
        ev.result = (int32_t)config;
        wsl_nvtx_trace_gpu(t, &ev);
        int64_t name = tid == 99 ? -1 : model_at(mt, launched);
        if (name < 0) {
            want_unattributed++;
            continue;
        }
        want_kernels[name]++;
        want_ns[name] += ev.t_end - ev.t_start;
        tw_n += tw[TW_INDEX(name, hidx, config, idle)]++ == 0;
    }
    CHECKF(m[2].n > 2 * WSL_NVTX_HISTORY, "thread 2's history: %zu entries", m[2].n);
    CHECKF(t->gpu_unattributed == want_unattributed, "%llu unattributed, expected %llu",
           (unsigned long long)t->gpu_unattributed, (unsigned long long)want_unattributed);
    uint64_t kernels_seen[N_NAMES + 1] = {0}, ns_seen[N_NAMES + 1] = {0};
    for (size_t r = 0; r < t->range_count; r++) {
        uint32_t name = t->ranges[r].name_id;
        CHECK(name >= 1 && name <= N_NAMES);
        kernels_seen[name] += t->ranges[r].self.gpu_kernels;
        ns_seen[name] += t->ranges[r].self.gpu_ns;
    }
    for (unsigned n = 1; n <= N_NAMES; n++) {
        CHECKF(kernels_seen[n] == want_kernels[n], "name %u: %llu kernels, expected %llu", n,
               (unsigned long long)kernels_seen[n], (unsigned long long)want_kernels[n]);
        CHECKF(ns_seen[n] == want_ns[n], "name %u: %llu ticks, expected %llu", n, (unsigned long long)ns_seen[n],
               (unsigned long long)want_ns[n]);
    }
    CHECKF(t->timed_count == tw_n, "%zu timed entries, expected %zu", t->timed_count, tw_n);
    for (size_t i = 0; i < t->timed_count; i++) {
        const struct timed_kernels *q = &t->timed[i];
        uint32_t name = t->ranges[q->range].name_id;
        uint64_t hidx = (q->handle - 0x7f0000001000ull) / 0x1000;
        CHECKF(hidx < N_HANDLES && q->config >= 1 && q->config <= 3, "timed entry %zu: not in the model", i);
        size_t k = TW_INDEX(name, hidx, q->config, q->idle);
        CHECKF(tw_seen[k]++ == 0, "timed entry %zu: twice", i);
        CHECKF(q->count == tw[k], "timed entry %zu: count %llu, expected %llu", i, (unsigned long long)q->count,
               (unsigned long long)tw[k]);
    }
    /* the adjustment empties timed: the cache must not name its entries after it */
    struct wsl_kern_estimate e;
    memset(&e, 0, sizeof e);
    e.configs = true;
    e.ns_per_tick = 1.0;
    wsl_nvtx_trace_adjust_pairs(t, &e);
    CHECK(t->timed_count == 0);
    for (unsigned i = 0; i < NVTX_TIMED_CACHE_SIZE; i++)
        CHECKF(t->timed_cache[i].index1 == 0, "cache entry %u names timed entry %u after the adjustment", i,
               t->timed_cache[i].index1 - 1);
    for (unsigned i = 0; i < N_THREADS; i++) {
        free(m[i].t);
        free(m[i].name);
    }
    free(tw);
    free(tw_seen);
    wsl_nvtx_trace_discard(t);
    return 0;
}

/* ---- phase tracking ---------------------------------------------------------------------------- */

int test_phase_fast_path(void)
{
    rng_seed(0x7068617365);
    struct wsl_phase_trace *fast = wsl_phase_trace_begin(), *slow = wsl_phase_trace_begin();
    const uint32_t tids[3] = {11, 12, 13};
    uint64_t now[3] = {5000, 5000, 5000};
    const enum wsl_phase_op others[] = {WSL_PHASE_BREAK, WSL_PHASE_READ, WSL_PHASE_SUBMIT, WSL_PHASE_SUBMIT_BREAK,
                                        WSL_PHASE_GRAPH, WSL_PHASE_POLL, WSL_PHASE_THREAD_WAIT};
    for (unsigned i = 0; i < 900000; i++) {
        /* thread 0 launches past WSL_PHASE_MAX_SEQ; runs of one thread, as chunks come */
        unsigned w = i < 500000 ? 0 : (unsigned)rng_below(3);
        wsl_phase_trace_thread(fast, tids[w]);
        wsl_phase_trace_thread(slow, tids[w]);
        struct wsl_event ev;
        memset(&ev, 0, sizeof ev);
        uint64_t r = rng_below(100);
        now[w] += 1 + rng_below(r < 3 ? 5000000 : 3000);
        ev.t_start = r == 3 ? now[w] - rng_below(now[w] / 2) : now[w]; /* an earlier start, now and then */
        ev.t_end = ev.t_start + rng_below(4000);
        ev.result = rng_below(50) == 0 ? 1 : 0;
        ev.a[0] = 0x7f0000001000ull + 0x1000ull * rng_below(40);
        enum wsl_phase_op op = r < 85 ? WSL_PHASE_LAUNCH : others[rng_below(7)];
        if ((op == WSL_PHASE_READ || op == WSL_PHASE_POLL) && rng_below(2))
            ev.a[0] = 0; /* a pipe */
        wsl_phase_trace_event(fast, op, &ev);
        wsl_phase_trace_event_slow(slow, op, &ev);
    }
    const struct wsl_phase_trace_fast *ff = (const void *)fast, *sf = (const void *)slow;
    CHECK(ff->any_submit == sf->any_submit && ff->first_submit == sf->first_submit &&
          ff->last_submit_end == sf->last_submit_end && ff->launches == sf->launches);
    for (unsigned w = 0; w < 3; w++) {
        wsl_phase_trace_thread(fast, tids[w]);
        wsl_phase_trace_thread(slow, tids[w]);
        const struct wsl_phase_seq *a = ff->cur, *b = sf->cur;
        CHECK(a && b && a->tid == tids[w] && b->tid == tids[w]);
        CHECKF(a->total == b->total && a->n == b->n && a->cap == b->cap, "thread %u: total %llu/%llu, kept %zu/%zu",
               w, (unsigned long long)a->total, (unsigned long long)b->total, a->n, b->n);
        CHECKF(a->have_last == b->have_last && a->pending_break == b->pending_break && a->last_ticks == b->last_ticks,
               "thread %u: last launch", w);
        CHECKF(a->broken_gaps == b->broken_gaps && a->broken_ticks == b->broken_ticks, "thread %u: broken gaps %llu/%llu",
               w, (unsigned long long)a->broken_gaps, (unsigned long long)b->broken_gaps);
        CHECK(a->pipe_reads == b->pipe_reads && a->pipe_ticks == b->pipe_ticks && a->pipe_polls == b->pipe_polls);
        CHECK(a->thread_waits == b->thread_waits && a->thread_wait_ticks == b->thread_wait_ticks);
        CHECKF(!memcmp(a->gap_n, b->gap_n, sizeof a->gap_n) && !memcmp(a->gap_sum, b->gap_sum, sizeof a->gap_sum),
               "thread %u: gaps", w);
        CHECKF(!memcmp(a->ids, b->ids, a->n * sizeof *a->ids) && !memcmp(a->ticks, b->ticks, a->n * sizeof *a->ticks),
               "thread %u: the kept launches", w);
        /* each kept id one the loop wrote (a graph's with its top bit flipped), through the arrays'
         * growths: thread 0's last one to WSL_PHASE_MAX_SEQ (the arrays moved to huge pages) */
        CHECKF(w != 0 || a->cap == WSL_PHASE_MAX_SEQ, "thread 0: cap %zu", a->cap);
        size_t bad = 0;
        for (size_t k = 0; k < a->n; k++) {
            const uint64_t id = (a->ids[k] & ~0x8000000000000000ull) - 0x7f0000001000ull;
            bad += id % 0x1000 != 0 || id / 0x1000 >= 40 || a->ticks[k] < 5000;
        }
        CHECKF(bad == 0, "thread %u: %zu kept launches not written", w, bad);
    }
    wsl_phase_trace_thread(fast, tids[0]);
    CHECKF(ff->cur->n == WSL_PHASE_MAX_SEQ && ff->cur->total > WSL_PHASE_MAX_SEQ, "thread 0: %zu kept of %llu",
           ff->cur->n, (unsigned long long)ff->cur->total);
    /* threads past WSL_PHASE_MAX_THREADS: their launches counted for the process, kept for none; the
     * sequence the inline path then reads (room 0) is never written */
    uint64_t t0 = now[0];
    for (uint32_t tid = 100; tid < 100 + WSL_PHASE_MAX_THREADS + 3; tid++)
        for (unsigned i = 0; i < 6; i++) {
            wsl_phase_trace_thread(fast, tid);
            wsl_phase_trace_thread(slow, tid);
            struct wsl_event ev;
            memset(&ev, 0, sizeof ev);
            ev.t_start = ++t0;
            ev.t_end = t0 + 10;
            ev.a[0] = 0x7f0000001000ull;
            enum wsl_phase_op op = i == 3 ? WSL_PHASE_READ : WSL_PHASE_LAUNCH;
            wsl_phase_trace_event(fast, op, &ev);
            wsl_phase_trace_event_slow(slow, op, &ev);
        }
    CHECK(ff->launches == sf->launches && ff->last_submit_end == sf->last_submit_end);
    wsl_phase_trace_thread(fast, 100 + WSL_PHASE_MAX_THREADS + 2);
    CHECKF(ff->cur->n == 0 && ff->cur->total == 0 && ff->cur->room == 0 && !ff->cur->have_last,
           "past the thread cap: %llu launches on a sequence", (unsigned long long)ff->cur->total);
    wsl_phase_trace_discard(fast);
    wsl_phase_trace_discard(slow);
    return 0;
}
