/* Phases of a process: start-up, warm-up, steady state, teardown (phase_analysis.h). */
#include "phase_analysis.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"
#include "util.h"

#define GRAM 8u                 /* launches matched to find a period's candidates */
#define MAX_PERIOD 200000u      /* launches: longer periods are not looked for */
#define MAX_CANDIDATES 16u
#define VERIFY_SHARE 0.9
#define GROW_SHARE 0.8
#define MIN_PERIODS 3u
#define MIN_REGION 30u          /* launches */

enum wsl_phase_op wsl_phase_op_of(unsigned category, const char *base)
{
    switch (category) {
    case WSL_CAT_LAUNCH: return WSL_PHASE_LAUNCH;
    case WSL_CAT_GRAPH: return WSL_PHASE_GRAPH;
    case WSL_CAT_COPY_ANY_ASYNC: case WSL_CAT_COPY_HTOD_ASYNC: case WSL_CAT_COPY_DTOH_ASYNC:
    case WSL_CAT_COPY_DTOD_ASYNC: case WSL_CAT_MEMSET_ASYNC:
        return WSL_PHASE_SUBMIT;
    case WSL_CAT_COPY_ANY: case WSL_CAT_COPY_HTOD: case WSL_CAT_COPY_DTOH: case WSL_CAT_COPY_DTOD:
    case WSL_CAT_MEMSET:
        return WSL_PHASE_SUBMIT_BREAK;
    case WSL_CAT_IO_WAIT:
        if (base && !strncmp(base, "sem_", 4))
            return WSL_PHASE_THREAD_WAIT; /* sem_wait, sem_timedwait, sem_clockwait: another thread's */
        return WSL_PHASE_POLL;
    case WSL_CAT_IO_READ:
        return WSL_PHASE_READ; /* on a pipe or socket (path id 0 in a0): a wait for another process */
    /* (not READ: their a0 is no path id, and a synchronization's or an allocation's time is not a wait
     * for a worker's data) */
    case WSL_CAT_SYNC_STREAM: case WSL_CAT_SYNC_CTX: case WSL_CAT_SYNC_EVENT: case WSL_CAT_ALLOC:
    case WSL_CAT_ALLOC_MANAGED: case WSL_CAT_FREE: case WSL_CAT_HOST_ALLOC: case WSL_CAT_HOST_FREE:
    case WSL_CAT_HOST_REGISTER: case WSL_CAT_HOST_UNREGISTER:
    case WSL_CAT_IO_OPEN: case WSL_CAT_IO_MMAP: case WSL_CAT_IO_STAT: case WSL_CAT_IO_SEEK:
    case WSL_CAT_IO_CLOSE:
        return WSL_PHASE_BREAK;
    case WSL_CAT_OTHER:
        if (base && !strncmp(base, "cuModuleLoad", 12))
            return WSL_PHASE_MODULE_LOAD;
        if (base && !strncmp(base, "cuLibraryLoad", 13))
            return WSL_PHASE_LIBRARY_LOAD;
        return WSL_PHASE_NONE;
    default: return WSL_PHASE_NONE;
    }
}

const char *wsl_steady_method_name(enum wsl_steady_method m)
{
    switch (m) {
    case WSL_STEADY_NVTX: return "nvtx_steps";
    case WSL_STEADY_REPETITION: return "repetition";
    case WSL_STEADY_AFTER_LOADS: return "after_module_loads";
    case WSL_STEADY_WHOLE: return "whole_gpu_phase";
    default: return "none";
    }
}

struct wsl_phase_trace {
    struct wsl_phase_trace_fast f;  /* first: the header's inline path reads it */
    struct wsl_phase_seq *seqs;
    size_t seq_count;
    uint32_t cur_tid;
    bool have_cur;
    uint64_t (*loads)[3];           /* module and library loads: start, end (ticks), 1 for a module load */
    size_t load_count;
    uint64_t loads_total, load_ticks_total;
};

/* f.cur past the cap on threads (of any trace): room 0, so the inline path takes the slow one, which
 * never writes it (cur_seq). */
static struct wsl_phase_seq no_seq;

/* A thread that takes data from other processes for the launching threads (a DataLoader's pin-memory
 * thread): it launched nothing (two launching threads that wait for each other, a step's forward and
 * backward, are not one feeding the other data), and it read pipes or sockets, a read at least for each
 * poll (the CUDA driver's own threads poll descriptors of their own the whole run and read a few bytes
 * from them now and then: 118 polls and 11 reads of 8 bytes in a 10 s PyTorch run). */
#define FEEDER_MIN_READS 32u
static bool is_feeder(const struct wsl_phase_seq *q)
{
    uint64_t reads = q->pipe_reads - q->pipe_polls;
    return !q->total && reads >= FEEDER_MIN_READS && reads >= q->pipe_polls;
}

struct wsl_phase_trace *wsl_phase_trace_begin(void)
{
    struct wsl_phase_trace *t = xcalloc(1, sizeof(struct wsl_phase_trace));
    t->f.cur = &no_seq;
    return t;
}

/* The current thread's sequence, NULL past the cap on threads. */
static struct wsl_phase_seq *cur_seq(struct wsl_phase_trace *t)
{
    return t->f.cur == &no_seq ? NULL : t->f.cur;
}

void wsl_phase_trace_thread(struct wsl_phase_trace *t, uint32_t tid)
{
    if (t->have_cur && t->cur_tid == tid)
        return;
    t->have_cur = true;
    t->cur_tid = tid;
    t->f.cur = &no_seq;
    for (size_t i = 0; i < t->seq_count; i++)
        if (t->seqs[i].tid == tid) {
            t->f.cur = &t->seqs[i];
            return;
        }
    if (t->seq_count >= WSL_PHASE_MAX_THREADS)
        return;
    t->seqs = xrealloc(t->seqs, (t->seq_count + 1) * sizeof *t->seqs);
    t->f.cur = &t->seqs[t->seq_count++];
    memset(t->f.cur, 0, sizeof *t->f.cur);
    t->f.cur->tid = tid;
}

/* Launches ev[i..stop) counted as wsl_phase_trace_launch_ok counts them while its test holds (the
 * caller bounds stop by the sequence's room; no start before the last launch's); store: kept in the
 * sequence (else, at WSL_PHASE_MAX_SEQ: counted only). Returns where it stopped. */
static inline __attribute__((always_inline)) uint32_t seq_launches(struct wsl_phase_seq *q, const struct wsl_event *ev,
                                                                   uint32_t i, uint32_t stop, const bool store)
{
    uint64_t last = q->last_ticks;
    size_t qn = q->n;
    uint64_t *const ids = q->ids, *const ticks = q->ticks;
    const uint32_t from = i;
    for (; i < stop; i++) {
        const uint64_t ts = ev[i].t_start;
        if (__builtin_expect(ts < last, 0))
            break;
        const uint64_t g = ts - last;
        const unsigned k = wsl_phase_gap_bucket(g);
        q->gap_n[k]++;
        q->gap_sum[k] += g;
        last = ts;
        if (store) {
            ids[qn] = ev[i].a[0];
            ticks[qn++] = ts;
        }
    }
    q->total += i - from;
    q->last_ticks = last;
    q->n = qn;
    return i;
}

void wsl_phase_trace_launch_run_ok(struct wsl_phase_trace *t, const struct wsl_event *ev, uint32_t n, uint64_t end_max)
{
    struct wsl_phase_trace_fast *f = &t->f;
    uint32_t i = 0;
    while (i < n) {
        struct wsl_phase_seq *q = f->cur;
        const uint32_t from = i;
        if (q->n < q->room) { /* (never the shared sequence past the cap on threads: its room is 0) */
            /* room is the cap (the sequence's room to keep launches) or SIZE_MAX (its cap is
             * WSL_PHASE_MAX_SEQ: kept up to it, then counted only) */
            size_t keep = (q->room < q->cap ? q->room : q->cap) - q->n;
            uint32_t stop = keep < n - i ? i + (uint32_t)keep : n;
            i = seq_launches(q, ev, i, stop, true);
            if (i == stop && i < n && q->room == SIZE_MAX)
                i = seq_launches(q, ev, i, n, false);
            f->launches += i - from;
        }
        if (i < n)
            wsl_phase_trace_event_slow(t, WSL_PHASE_LAUNCH, &ev[i++]);
    }
    /* last_submit_end, read at the end alone: the run's latest end once (any_submit holds after a
     * launch of result 0, on either path) */
    if (end_max > f->last_submit_end)
        f->last_submit_end = end_max;
}

/* The launch arrays of discarded traces, kept for the next trace's sequences: a run of many processes
 * (a rank a trace) reads one trace after another, and each rank's sequence would be grown from 16384
 * again, copied at each step, its fresh pages faulted in, then freed (64 ranks: a third of the run's
 * page faults). At most SEQ_POOL_MAX pairs, each at most WSL_PHASE_MAX_SEQ long (4 MiB the two), the
 * largest kept: bounded whatever the traces. Only the first n of a pair are read (the period, the
 * regions), so what a reused pair held before is never seen. */
#define SEQ_POOL_MAX 2u
struct seq_pair {
    uint64_t *ids, *ticks;
    size_t cap;
    bool huge;
};
static struct seq_pair seq_pool[SEQ_POOL_MAX];
static size_t seq_pool_count;

static void seq_pair_free(const struct seq_pair *p)
{
    if (p->huge) {
        wsl_huge_free(p->ids, p->cap * sizeof *p->ids);
        wsl_huge_free(p->ticks, p->cap * sizeof *p->ticks);
    } else {
        free(p->ids);
        free(p->ticks);
    }
}

/* A discarded sequence's arrays: into the pool, in place of a smaller pair when it is full. */
static void seq_pool_put(struct wsl_phase_seq *q)
{
    if (!q->ids)
        return;
    struct seq_pair p = {q->ids, q->ticks, q->cap, q->huge};
    q->ids = q->ticks = NULL;
    if (seq_pool_count < SEQ_POOL_MAX) {
        seq_pool[seq_pool_count++] = p;
        return;
    }
    size_t small = 0;
    for (size_t i = 1; i < seq_pool_count; i++)
        if (seq_pool[i].cap < seq_pool[small].cap)
            small = i;
    if (seq_pool[small].cap < p.cap) {
        seq_pair_free(&seq_pool[small]);
        seq_pool[small] = p;
    } else {
        seq_pair_free(&p);
    }
}

/* The kept launches' arrays grown (n == cap): a new sequence takes the pool's largest pair, else 4
 * times at each step; the last and largest growth, to WSL_PHASE_MAX_SEQ (4 MiB of the two), in huge
 * pages (written once through), else (or where the mapping fails) by xrealloc. Out of line: the slow
 * path's code stays as it was. */
static __attribute__((noinline)) void seq_grow(struct wsl_phase_seq *q)
{
    if (!q->cap && seq_pool_count) {
        size_t big = 0;
        for (size_t i = 1; i < seq_pool_count; i++)
            if (seq_pool[i].cap > seq_pool[big].cap)
                big = i;
        q->ids = seq_pool[big].ids;
        q->ticks = seq_pool[big].ticks;
        q->cap = seq_pool[big].cap;
        q->huge = seq_pool[big].huge;
        seq_pool[big] = seq_pool[--seq_pool_count];
        q->room = q->cap == WSL_PHASE_MAX_SEQ ? SIZE_MAX : q->cap;
        return;
    }
    q->cap = q->cap ? 4 * q->cap : 16384;
    if (q->cap > WSL_PHASE_MAX_SEQ)
        q->cap = WSL_PHASE_MAX_SEQ;
    q->room = q->cap == WSL_PHASE_MAX_SEQ ? SIZE_MAX : q->cap;
    uint64_t *hi = NULL, *ht = NULL;
    if (q->cap == WSL_PHASE_MAX_SEQ && (hi = wsl_huge_alloc(q->cap * sizeof *q->ids)) &&
        (ht = wsl_huge_alloc(q->cap * sizeof *q->ticks))) {
        memcpy(hi, q->ids, q->n * sizeof *q->ids);
        memcpy(ht, q->ticks, q->n * sizeof *q->ticks);
        free(q->ids);
        free(q->ticks);
        q->ids = hi;
        q->ticks = ht;
        q->huge = true;
    } else {
        wsl_huge_free(hi, q->cap * sizeof *q->ids);
        q->ids = xrealloc(q->ids, q->cap * sizeof *q->ids);
        q->ticks = xrealloc(q->ticks, q->cap * sizeof *q->ticks);
    }
}

void wsl_phase_trace_event_slow(struct wsl_phase_trace *t, enum wsl_phase_op op, const struct wsl_event *ev)
{
    if (op == WSL_PHASE_MODULE_LOAD || op == WSL_PHASE_LIBRARY_LOAD) {
        t->loads_total++;
        t->load_ticks_total += ev->t_end - ev->t_start;
        if (t->load_count < WSL_PHASE_MAX_LOADS) {
            if (!(t->load_count & (t->load_count - 1)) || !t->load_count)
                t->loads = xrealloc(t->loads, (t->load_count ? 2 * t->load_count : 16) * sizeof *t->loads);
            t->loads[t->load_count][0] = ev->t_start;
            t->loads[t->load_count][1] = ev->t_end;
            t->loads[t->load_count][2] = op == WSL_PHASE_MODULE_LOAD;
            t->load_count++;
        }
        return;
    }
    if (op == WSL_PHASE_BREAK || op == WSL_PHASE_SUBMIT_BREAK || op == WSL_PHASE_READ || op == WSL_PHASE_POLL ||
        op == WSL_PHASE_THREAD_WAIT) {
        struct wsl_phase_seq *q = cur_seq(t);
        if (q) {
            q->pending_break = true;
            q->room = 0;
            if ((op == WSL_PHASE_READ || op == WSL_PHASE_POLL) && ev->a[0] == 0) { /* path id 0: a pipe or socket */
                q->pipe_reads++;
                q->pipe_polls += op == WSL_PHASE_POLL;
                q->pipe_ticks += ev->t_end - ev->t_start;
            } else if (op == WSL_PHASE_THREAD_WAIT) {
                q->thread_waits++;
                q->thread_wait_ticks += ev->t_end - ev->t_start;
            }
        }
        if (op != WSL_PHASE_SUBMIT_BREAK)
            return;
    }
    if (ev->result != 0)
        return;
    if (!t->f.any_submit || ev->t_start < t->f.first_submit)
        t->f.first_submit = ev->t_start;
    if (!t->f.any_submit || ev->t_end > t->f.last_submit_end)
        t->f.last_submit_end = ev->t_end;
    t->f.any_submit = true;
    if (op != WSL_PHASE_LAUNCH && op != WSL_PHASE_GRAPH)
        return;
    t->f.launches++;
    struct wsl_phase_seq *q = cur_seq(t);
    if (!q)
        return;
    q->total++;
    if (q->have_last && ev->t_start >= q->last_ticks) {
        if (q->pending_break)
            q->broken_gaps++, q->broken_ticks += ev->t_start - q->last_ticks;
        else
        {
            uint64_t g = ev->t_start - q->last_ticks;
            unsigned k = wsl_phase_gap_bucket(g);
            q->gap_n[k]++;
            q->gap_sum[k] += g;
        }
    }
    q->have_last = true;
    q->last_ticks = ev->t_start;
    q->pending_break = false;
    q->room = q->cap == WSL_PHASE_MAX_SEQ ? SIZE_MAX : q->cap;
    if (q->n >= WSL_PHASE_MAX_SEQ)
        return;
    if (q->n == q->cap)
        seq_grow(q);
    /* a graph's exec and a kernel's function never share a handle value in practice; keep them apart anyway */
    q->ids[q->n] = op == WSL_PHASE_GRAPH ? ev->a[0] ^ 0x8000000000000000ull : ev->a[0];
    q->ticks[q->n] = ev->t_start;
    q->n++;
}

void wsl_phase_trace_discard(struct wsl_phase_trace *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->seq_count; i++)
        seq_pool_put(&t->seqs[i]);
    free(t->seqs);
    free(t->loads);
    free(t);
}

/* ---- the period of a launch sequence ------------------------------------------------- */

static size_t agree(const uint64_t *ids, size_t from, size_t to, uint32_t p)
{
    size_t m = 0;
    for (size_t i = from; i < to; i++)
        m += ids[i] == ids[i - p];
    return m;
}

static bool verify(const uint64_t *ids, size_t anchor, uint32_t p)
{
    if (anchor < 2 * (size_t)p)
        return false;
    size_t w = 3 * (size_t)p > 64 ? 3 * (size_t)p : 64;
    if (w > anchor - p)
        w = anchor - p;
    if (w < p)
        return false;
    return (double)agree(ids, anchor - w, anchor, p) >= VERIFY_SHARE * (double)w;
}

/* The period at `anchor`: the nearest candidate (a repeat of the GRAM launches before it) that
 * verify accepts; 0 when none. */
static uint32_t period_at(const uint64_t *ids, size_t n, size_t anchor)
{
    if (anchor > n || anchor < 2 * GRAM)
        return 0;
    const uint64_t *gram = ids + anchor - GRAM;
    unsigned candidates = 0;
    size_t lowest = anchor > MAX_PERIOD + GRAM ? anchor - MAX_PERIOD : GRAM;
    for (size_t j = anchor - 1; j >= lowest && candidates < MAX_CANDIDATES; j--) {
        if (ids[j - 1] != gram[GRAM - 1] || memcmp(ids + j - GRAM, gram, GRAM * sizeof *ids) != 0)
            continue;
        candidates++;
        if (verify(ids, anchor, (uint32_t)(anchor - j)))
            return (uint32_t)(anchor - j);
    }
    return 0;
}

/* The blocks of period p grown from anchor: [*lo, *hi), before the first block is taken in. */
static void period_grow(const uint64_t *ids, size_t n, size_t anchor, uint32_t p, size_t *lo, size_t *hi)
{
    /* grow: a block of one period belongs when most of it repeats the period before it */
    size_t start = anchor, end = anchor;
    while (start >= 2 * (size_t)p && (double)agree(ids, start - p, start, p) >= GROW_SHARE * p)
        start -= p;
    while (end + p <= n && (double)agree(ids, end, end + p, p) >= GROW_SHARE * p)
        end += p;
    if (end < n && end + p > n && (double)agree(ids, end, n, p) >= GROW_SHARE * (double)(n - end))
        end = n;
    *lo = start;
    *hi = end;
}

/* The region of the grown blocks [lo, hi): 0 when too short. */
static uint32_t period_region(uint32_t p, size_t lo, size_t hi, size_t *s, size_t *e)
{
    size_t start = lo >= p ? lo - p : 0; /* the period the first matching block repeated */
    if (hi - start < (size_t)MIN_PERIODS * p || hi - start < MIN_REGION)
        return 0;
    *s = start;
    *e = hi;
    return p;
}

uint32_t wsl_phase_find_period(const uint64_t *ids, size_t n, size_t anchor, size_t *s, size_t *e)
{
    uint32_t p = period_at(ids, n, anchor);
    if (!p)
        return 0;
    size_t lo, hi;
    period_grow(ids, n, anchor, p, &lo, &hi);
    return period_region(p, lo, hi, s, e);
}

struct grown_blocks { /* period_grow's answer at an anchor */
    size_t at, lo, hi;
    uint32_t p;
};

uint32_t wsl_phase_best_period(const uint64_t *ids, size_t n, const size_t *anchors, size_t count, size_t *s,
                               size_t *e)
{
    struct grown_blocks grown[WSL_PHASE_MAX_ANCHORS]; /* the blocks grown so far */
    size_t grown_count = 0, best_s = 0, best_e = 0;
    uint32_t best_p = 0;
    for (size_t a = 0; a < count; a++) {
        size_t at = anchors[a];
        uint32_t p = period_at(ids, n, at);
        if (!p)
            continue;
        /* An anchor inside the blocks grown from an earlier one, a whole number of periods p away, grows
         * to the same blocks: every block between the two agreed, and the same tests stop both at each
         * end. */
        size_t lo = 0, hi = 0, k;
        for (k = 0; k < grown_count; k++) {
            size_t d = at > grown[k].at ? at - grown[k].at : grown[k].at - at;
            if (grown[k].p == p && d % p == 0 && grown[k].lo <= at && at <= grown[k].hi) {
                lo = grown[k].lo;
                hi = grown[k].hi;
                break;
            }
        }
        if (k == grown_count) {
            period_grow(ids, n, at, p, &lo, &hi);
            if (grown_count < WSL_PHASE_MAX_ANCHORS)
                grown[grown_count++] = (struct grown_blocks){at, lo, hi, p};
        }
        size_t ps, pe;
        if (period_region(p, lo, hi, &ps, &pe) && pe - ps > best_e - best_s) {
            best_p = p;
            best_s = ps;
            best_e = pe;
        }
    }
    *s = best_s;
    *e = best_e;
    return best_p;
}

/* The value sorting v would put at v[n / 2] (0 when empty); v is reordered. A selection (Hoare's
 * partition around the middle element of the part left) takes linear time: sorting the steps took
 * most of the phases' time in a run of thousands of steps. */
uint64_t wsl_phase_median(uint64_t *v, size_t n)
{
    if (!n)
        return 0;
    ptrdiff_t k = (ptrdiff_t)(n / 2), lo = 0, hi = (ptrdiff_t)n - 1;
    while (lo < hi) {
        uint64_t pivot = v[lo + (hi - lo) / 2];
        ptrdiff_t i = lo - 1, j = hi + 1;
        for (;;) { /* then v[lo..j] <= pivot <= v[j+1..hi], lo <= j < hi */
            do
                i++;
            while (v[i] < pivot);
            do
                j--;
            while (v[j] > pivot);
            if (i >= j)
                break;
            uint64_t t = v[i];
            v[i] = v[j];
            v[j] = t;
        }
        if (k <= j)
            hi = j;
        else
            lo = j + 1;
    }
    return v[k];
}

/* Leading steps slower than WSL_PHASE_OUTLIER x the median of the rest: warm-up. */
static size_t leading_outliers(const uint64_t *d, size_t n, uint64_t *med, uint64_t *excess)
{
    uint64_t *v = xmalloc((n ? n : 1) * sizeof *v);
    memcpy(v, d, n * sizeof *v);
    *med = wsl_phase_median(v, n);
    free(v);
    size_t k = 0;
    *excess = 0;
    while (k + 1 < n && (double)d[k] > WSL_PHASE_OUTLIER * (double)*med) {
        *excess += d[k] - *med;
        k++;
    }
    return k;
}

static void count_loads(struct wsl_phases *ph, const uint64_t (*loads_ns)[3], size_t n)
{
    ph->warmup_module_loads = ph->warmup_module_load_ns = ph->steady_module_loads = ph->warmup_jit_loads = 0;
    for (size_t i = 0; i < n; i++) {
        if (loads_ns[i][0] < ph->steady_start_ns) {
            ph->warmup_module_loads++;
            ph->warmup_jit_loads += loads_ns[i][2];
            ph->warmup_module_load_ns += loads_ns[i][1] - loads_ns[i][0];
        } else if (loads_ns[i][0] <= ph->steady_end_ns) {
            ph->steady_module_loads++;
        }
    }
}

/* The busiest thread's gaps between launches: unbroken ones under WSL_PHASE_DISPATCH_GAP are
 * dispatch, the rest long (bucket midpoints of the histogram: within 0.4%). */
static void split_gaps(const struct wsl_phase_seq *q, const struct wsl_clock_map *clock, struct wsl_phases *ph)
{
    ph->long_gaps = q->broken_gaps;
    ph->long_gap_ns = wsl_clock_duration_ns(clock, q->broken_ticks);
    for (unsigned k = 0; k < 256; k++) {
        if (!q->gap_n[k])
            continue;
        uint64_t lo = wsl_phase_gap_split_value(k);
        if (wsl_clock_duration_ns(clock, lo) < WSL_PHASE_DISPATCH_GAP)
            ph->dispatch_gaps += q->gap_n[k], ph->dispatch_gap_ns += wsl_clock_duration_ns(clock, q->gap_sum[k]);
        else
            ph->long_gaps += q->gap_n[k], ph->long_gap_ns += wsl_clock_duration_ns(clock, q->gap_sum[k]);
    }
}

void wsl_phase_trace_end(struct wsl_phase_trace *t, const struct wsl_clock_map *clock, uint64_t start_ns,
                         uint64_t end_ns, struct wsl_phases *ph)
{
    memset(ph, 0, sizeof *ph);
    ph->start_ns = start_ns;
    ph->end_ns = end_ns;
    ph->module_loads = t->loads_total;
    ph->module_load_ns = wsl_clock_duration_ns(clock, t->load_ticks_total);
    ph->launches = t->f.launches;
    uint64_t (*loads_ns)[3] = xmalloc((t->load_count ? t->load_count : 1) * sizeof *loads_ns);
    for (size_t i = 0; i < t->load_count; i++) {
        loads_ns[i][0] = wsl_clock_to_ns(clock, t->loads[i][0]);
        loads_ns[i][1] = wsl_clock_to_ns(clock, t->loads[i][1]);
        loads_ns[i][2] = t->loads[i][2];
    }
    if (!t->f.any_submit) {
        free(loads_ns);
        wsl_phase_trace_discard(t);
        return;
    }
    ph->first_submit_ns = wsl_clock_to_ns(clock, t->f.first_submit);
    ph->last_submit_ns = wsl_clock_to_ns(clock, t->f.last_submit_end);
    if (ph->first_submit_ns < start_ns)
        ph->first_submit_ns = start_ns;
    if (ph->end_ns < ph->last_submit_ns)
        ph->end_ns = ph->last_submit_ns;

    /* the busiest thread's launch stream */
    const struct wsl_phase_seq *q = NULL;
    for (size_t i = 0; i < t->seq_count; i++)
        if (!q || t->seqs[i].n > q->n)
            q = &t->seqs[i];
    /* waits for other processes' data: those of every thread that launched GPU work, not only the
     * busiest one's (PyTorch launches a training step's backward from its autograd thread while the
     * main thread, which launches the forward, waits for the DataLoader's next batch); a thread that
     * launched nothing (a process pool's reader, blocked on its pipes all the time) holds up no launch */
    uint64_t pipe_ticks = 0, wait_ticks = 0;
    for (size_t i = 0; i < t->seq_count; i++)
        if (t->seqs[i].total) {
            ph->pipe_reads += t->seqs[i].pipe_reads;
            pipe_ticks += t->seqs[i].pipe_ticks;
        }
    /* a launching thread's waits on semaphores are waits for data where another thread, one that launched
     * nothing, takes the data from other processes: a DataLoader with pin_memory=True, whose pin-memory thread polls the workers' pipe
     * and hands each batch to the training loop through a Python queue (a blocked get() waits on a
     * semaphore). Without such a thread they are waits for other threads' work of any kind. */
    for (size_t i = 0; i < t->seq_count; i++) {
        if (!t->seqs[i].total || !t->seqs[i].thread_waits)
            continue;
        bool feeder = false;
        for (size_t j = 0; j < t->seq_count && !feeder; j++)
            feeder = j != i && is_feeder(&t->seqs[j]);
        if (feeder) {
            ph->thread_waits += t->seqs[i].thread_waits;
            wait_ticks += t->seqs[i].thread_wait_ticks;
        }
    }
    ph->pipe_read_ns = wsl_clock_duration_ns(clock, pipe_ticks);
    ph->thread_wait_ns = wsl_clock_duration_ns(clock, wait_ticks);
    if (q)
        split_gaps(q, clock, ph);
    uint32_t best_p = 0;
    size_t best_s = 0, best_e = 0;
    if (q && q->n >= MIN_REGION) {
        const size_t anchors[4] = {q->n / 4, q->n / 2, 3 * q->n / 4, q->n};
        best_p = wsl_phase_best_period(q->ids, q->n, anchors, 4, &best_s, &best_e);
    }
    if (best_p) {
        size_t periods = (best_e - best_s) / best_p;
        uint64_t *d = xmalloc(periods * sizeof *d);
        for (size_t k = 0; k < periods; k++) {
            size_t a = best_s + k * best_p, b = a + best_p;
            uint64_t tb = b < q->n ? q->ticks[b] : t->f.last_submit_end;
            d[k] = wsl_clock_duration_ns(clock, tb > q->ticks[a] ? tb - q->ticks[a] : 0);
        }
        uint64_t med, excess;
        size_t out = leading_outliers(d, periods, &med, &excess);
        free(d);
        best_s += out * best_p;
        /* warm-up's time beyond what its launches take at the steady state's pace (busiest thread) */
        uint64_t t_end = best_e < q->n ? q->ticks[best_e] : t->f.last_submit_end;
        double per_launch = (double)wsl_clock_duration_ns(clock, t_end > q->ticks[best_s] ? t_end - q->ticks[best_s] : 0) /
                            (double)(best_e - best_s);
        uint64_t steady_start = wsl_clock_to_ns(clock, q->ticks[best_s]);
        double warm = (double)(steady_start > ph->first_submit_ns ? steady_start - ph->first_submit_ns : 0) -
                      (double)best_s * per_launch;
        excess = warm > (double)excess ? (uint64_t)warm : excess;
        ph->method = WSL_STEADY_REPETITION;
        ph->period_launches = best_p;
        ph->steps = periods - out;
        ph->warmup_steps = out;
        ph->warmup_excess_ns = excess;
        ph->step_ns = med;
        ph->steady_start_ns = wsl_clock_to_ns(clock, q->ticks[best_s]);
        /* the region runs to the end of the kept launches: the steady state lasts to the last submission */
        ph->steady_end_ns = best_e < q->n ? wsl_clock_to_ns(clock, q->ticks[best_e]) : ph->last_submit_ns;
    } else {
        /* no repetition: from the last module load of the GPU phase's first half on */
        uint64_t mid = ph->first_submit_ns + (ph->last_submit_ns - ph->first_submit_ns) / 2, after = 0;
        for (size_t i = 0; i < t->load_count; i++)
            if (loads_ns[i][1] <= mid && loads_ns[i][1] > after)
                after = loads_ns[i][1];
        ph->method = after > ph->first_submit_ns ? WSL_STEADY_AFTER_LOADS : WSL_STEADY_WHOLE;
        ph->steady_start_ns = after > ph->first_submit_ns ? after : ph->first_submit_ns;
        ph->steady_end_ns = ph->last_submit_ns;
    }
    if (ph->steady_start_ns < ph->first_submit_ns)
        ph->steady_start_ns = ph->first_submit_ns;
    if (ph->steady_end_ns < ph->steady_start_ns)
        ph->steady_end_ns = ph->steady_start_ns;
    count_loads(ph, (const uint64_t(*)[3])loads_ns, t->load_count);
    /* kept for wsl_phase_from_steps: the loads, in ns (at most WSL_PHASE_MAX_LOADS) */
    free(loads_ns);
    wsl_phase_trace_discard(t);
}

void wsl_phase_from_steps(struct wsl_phases *ph, const uint64_t *t0, const uint64_t *t1, size_t n)
{
    if (ph->method == WSL_STEADY_NONE || n < MIN_PERIODS)
        return;
    uint64_t *d = xmalloc(n * sizeof *d);
    for (size_t i = 0; i < n; i++)
        d[i] = t1[i] > t0[i] ? t1[i] - t0[i] : 0;
    uint64_t med, excess;
    size_t out = leading_outliers(d, n, &med, &excess);
    free(d);
    /* module loads were counted against the old boundaries: move them with it */
    uint64_t loads_before = ph->warmup_module_loads, load_ns_before = ph->warmup_module_load_ns;
    uint64_t old_start = ph->steady_start_ns;
    ph->method = WSL_STEADY_NVTX;
    ph->period_launches = 0;
    ph->steps = n - out;
    ph->warmup_steps = out;
    ph->warmup_excess_ns = excess;
    ph->step_ns = med;
    ph->steady_start_ns = t0[out] > ph->first_submit_ns ? t0[out] : ph->first_submit_ns;
    ph->steady_end_ns = t1[n - 1] > ph->steady_start_ns ? t1[n - 1] : ph->steady_start_ns;
    if (ph->steady_start_ns != old_start) {
        /* without the loads' times here, those in warm-up stay as counted when the start moved later;
         * an earlier start leaves the count an upper bound */
        ph->warmup_module_loads = loads_before;
        ph->warmup_module_load_ns = load_ns_before;
    }
}

