/*
 * Host-side CUDA costs (host_analysis.h). While a trace is read, each
 * thread's blocking points wait in a small group until the thread's next GPU
 * submission, which fixes their sync charge; copies and allocation calls are
 * kept in two arrays. At the end of the trace both arrays are sorted by time
 * and swept together: the allocation calls keep a treap of the address
 * ranges live at that moment (device, managed, page-locked), and each copy
 * is classified by where its pointers fall.
 */
#include "host_analysis.h"
#include "host_ranges.h"

#include <stdlib.h>
#include <string.h>

#include "u64_map.h"
#include "util.h"
#include "wslshim/trace_format.h"

#define MAX_PENDING 64
#define COPY_WINDOW (1u << 16)  /* copies waiting for classification, at most */
#define RANGE_WINDOW (1u << 16) /* allocation calls waiting, at most */
#define NONE UINT32_MAX

/* ---- per-trace state ------------------------------------------------------------------------- */

static size_t max_copies = WSL_HOST_MAX_COPIES, max_range_events = WSL_HOST_MAX_RANGE_EVENTS;

void wsl_host_set_limits(size_t copies, size_t range_events)
{
    max_copies = copies ? copies : WSL_HOST_MAX_COPIES;
    max_range_events = range_events ? range_events : WSL_HOST_MAX_RANGE_EVENTS;
}

struct pend_entry {
    uint64_t dur;               /* ticks */
    uint32_t copy;              /* index into copies, or NONE */
    uint32_t range;             /* index into range_acc, or NONE */
    uint8_t kind;               /* enum wsl_block_kind */
};

struct thread_state {
    bool poll_waiting;          /* a query returned NOT_READY: the wait runs from poll_start */
    uint64_t poll_start;
    uint64_t first_end;         /* end of the group's first blocking point */
    uint32_t npend;
    struct pend_entry pend[MAX_PENDING];
    bool have_small;            /* a small copy came before: */
    uint64_t small_start;       /* when it began (ticks) */
    uint16_t slot;              /* its index in threads; the overflow's: WSL_HOST_MAX_THREADS */
};

/* Small copies one after another on a thread closer than this (ticks: 1-4 ms at 1-4 GHz) are one
 * copy's work after another: the gap is what each costs the program (its call, the framework's work
 * around it), and what coalescing saves. */
#define SMALL_RUN_GAP_TICKS 4000000ull

/* Copies are kept in the order read, after those kept by the last flush (in time order): two
 * copies of one time are in the order read, so (t, index) orders them as they came. */
struct copy_rec {
    uint64_t t, dur, dst, src, bytes;
    uint64_t sync_charge;       /* ticks */
    uint32_t range;             /* index into range_acc when it was counted as a wait, or NONE */
    uint8_t category;
    uint8_t wait;               /* counted as a wait: 1 pending, 2 charged */
    uint16_t thread;            /* its thread's slot */
};
_Static_assert(WSL_HOST_MAX_THREADS <= UINT16_MAX, "a thread's slot fits a copy's 16 bits");

enum range_op { OP_DEVICE_ALLOC = 1, OP_MANAGED_ALLOC, OP_LOCKED_ALLOC, OP_FREE, OP_LOCKED_FREE };

struct range_ev {
    uint64_t t, seq, ptr, bytes;
    uint8_t op;
};

struct range_acc {              /* ticks until the end */
    uint64_t blocks, blocked, lost;
    uint32_t range;             /* the trace's range index */
};

struct wsl_host_trace {
    struct wsl_host_trace_fast fast;    /* first: the header's inline path reads it */
    struct wsl_u64_map thread_index;    /* tid + 1 -> index into threads */
    struct thread_state **threads;      /* each allocated apart: pointers stay valid */
    size_t thread_count;
    struct thread_state *current;       /* the thread of the EVENTS batch being read */
    struct thread_state overflow;       /* threads past WSL_HOST_MAX_THREADS share this */
    /* Copies and allocation calls wait here, at most COPY_WINDOW and RANGE_WINDOW of each, until
     * they are classified in time order (classify_flush); their totals are capped by the limits. */
    struct copy_rec *copies, *copies_spare; /* the spare: where a flush writes the copies it keeps */
    size_t copy_count, copy_cap, copy_total, spare_cap;
    struct range_ev *ranges;
    size_t range_count, range_cap, range_total;
    size_t max_copies, max_range_events;    /* the limits when the trace began */
    struct range_tree tree;             /* the memory ranges live at the classification's time */
    /* classified so far (ticks); pageable copies to the GPU wait for the submission cost, known at
     * the end: their time left after the sync charge, the top bit set for a small one */
    uint64_t small_left, pageable_ticks, locked_ticks, large_ticks;
    uint64_t *htod_left;
    size_t htod_left_count, htod_left_cap;
    bool ranges_overflowed;
    uint64_t ranges_overflow_t;         /* copies from then on are not classified */
    uint64_t seq;
    /* NVTX ranges: the current thread's innermost (WSL_HOST_NO_RANGE when none), and the waits
     * per range index of the trace (acc_of: index -> index into range_acc, NONE until a wait) */
    const uint32_t *current_range;
    uint32_t *acc_of;
    size_t acc_of_size;
    struct range_acc *range_acc;
    char **range_names;         /* per range_acc, set by wsl_host_trace_name_ranges */
    size_t range_acc_count;
    /* figures in ticks, converted at the end */
    uint64_t blocked[WSL_BLOCK_KINDS], lost[WSL_BLOCK_KINDS];
    uint64_t copy_ticks, small_ticks, unrecorded_small_ticks, small_gap_ticks;
    struct wsl_host_summary s;          /* counts */
};

static void classify_flush(struct wsl_host_trace *t, bool final);
static void add_range(struct wsl_host_summary *a, const struct wsl_host_range *r);

static const uint32_t no_range = WSL_HOST_NO_RANGE;

struct wsl_host_trace *wsl_host_trace_begin(void)
{
    struct wsl_host_trace *t = xcalloc(1, sizeof *t);
    t->current_range = &no_range;
    t->max_copies = max_copies;
    t->max_range_events = max_range_events;
    t->current = &t->overflow;          /* until the first batch names its thread */
    t->overflow.slot = WSL_HOST_MAX_THREADS;
    wsl_range_tree_init(&t->tree);
    t->fast.current_pending = &t->overflow.npend;
    return t;
}

static struct thread_state *thread_of(struct wsl_host_trace *t, uint32_t tid)
{
    struct wsl_u64_slot *slot = wsl_u64_map_find(&t->thread_index, (uint64_t)tid + 1);
    if (slot)
        return t->threads[slot->value];
    if (t->thread_count >= WSL_HOST_MAX_THREADS)
        return &t->overflow;
    t->threads = xrealloc(t->threads, (t->thread_count + 1) * sizeof *t->threads);
    struct thread_state *th = xcalloc(1, sizeof *th);
    th->slot = (uint16_t)t->thread_count;
    t->threads[t->thread_count] = th;
    wsl_u64_map_insert(&t->thread_index, (uint64_t)tid + 1, t->thread_count++);
    return th;
}

void wsl_host_trace_thread(struct wsl_host_trace *t, uint32_t tid, const uint32_t *innermost)
{
    t->current = thread_of(t, tid);
    t->fast.current_pending = &t->current->npend;
    t->current_range = innermost ? innermost : &no_range;
}

/* Charges the thread's waiting group with the gap up to `until` (ticks); resolve is the test
 * for a group, inline at each submission. */
static __attribute__((noinline)) void resolve_group(struct wsl_host_trace *t, struct thread_state *th,
                                                    uint64_t until)
{
    uint64_t total = 0;
    for (uint32_t i = 0; i < th->npend; i++)
        total += th->pend[i].dur;
    uint64_t gap = until > th->first_end ? until - th->first_end : 0;
    uint64_t charge = gap < total ? gap : total;
    for (uint32_t i = 0; i < th->npend; i++) {
        const struct pend_entry *e = &th->pend[i];
        uint64_t c = total ? (uint64_t)((double)charge * ((double)e->dur / (double)total)) : 0;
        t->lost[e->kind] += c;
        if (e->copy != NONE) {
            t->copies[e->copy].sync_charge = c;
            t->copies[e->copy].wait = 2;
        }
        if (e->range != NONE)
            t->range_acc[e->range].lost += c;
    }
    th->npend = 0;
}

static inline void resolve(struct wsl_host_trace *t, struct thread_state *th, uint64_t until)
{
    if (th->npend)
        resolve_group(t, th, until);
}

/* Credits a wait of dur ticks (its copy record, NONE if none, and pending entry, NULL if none) to
 * the trace's range index r. Apart from add_block, which only tail-calls it: a trace without
 * NVTX ranges pays one load and one test per wait. */
static __attribute__((noinline)) void credit_range(struct wsl_host_trace *t, uint32_t r, uint64_t dur,
                                                   uint32_t copy, struct pend_entry *e)
{
    if (r >= t->acc_of_size) {
        size_t size = t->acc_of_size ? 2 * t->acc_of_size : 64;
        while (size <= r)
            size *= 2;
        t->acc_of = xrealloc(t->acc_of, size * sizeof *t->acc_of);
        memset(t->acc_of + t->acc_of_size, 0xff, (size - t->acc_of_size) * sizeof *t->acc_of);
        t->acc_of_size = size;
    }
    uint32_t a = t->acc_of[r];
    if (a == NONE) {            /* the range's first wait */
        if (t->range_acc_count >= WSL_HOST_MAX_RANGES)
            return;             /* past the cap: in no range */
        t->range_acc = xrealloc(t->range_acc, (t->range_acc_count + 1) * sizeof *t->range_acc);
        t->range_acc[t->range_acc_count] = (struct range_acc){.range = r};
        a = t->acc_of[r] = (uint32_t)t->range_acc_count++;
    }
    t->range_acc[a].blocks++;
    t->range_acc[a].blocked += dur;
    if (copy != NONE)
        t->copies[copy].range = a;
    if (e)
        e->range = a;
}

static void add_block(struct wsl_host_trace *t, struct thread_state *th, enum wsl_block_kind kind, uint64_t start,
                      uint64_t end, uint32_t copy)
{
    uint64_t dur = end > start ? end - start : 0;
    t->s.blocks[kind]++;
    t->blocked[kind] += dur;
    if (copy != NONE)
        t->copies[copy].wait = 1;
    struct pend_entry *e = NULL;
    if (th->npend == MAX_PENDING) {
        t->s.unresolved_blocks++;       /* a thread that waits and waits without submitting: nothing to charge */
    } else {
        if (th->npend == 0)
            th->first_end = end;
        e = &th->pend[th->npend++];
        *e = (struct pend_entry){.dur = dur, .copy = copy, .range = NONE, .kind = (uint8_t)kind};
    }
    uint32_t r = *t->current_range;     /* the thread's innermost NVTX range */
    if (r != WSL_HOST_NO_RANGE)
        credit_range(t, r, dur, copy, e);
}

static bool is_copy(unsigned c) { return c >= WSL_CAT_COPY_ANY && c <= WSL_CAT_COPY_DTOD_ASYNC; }

/* Copies that return only when the host may go on using the data: the
 * synchronous ones (but device to device) and every copy to host memory
 * (CUDA driver API documentation, "API synchronization behavior"). A
 * cuMemcpyAsync may be either; one that was not blocking is short, and the
 * charge min(host time, gap) stays small. */
static bool copy_blocks(unsigned c)
{
    return c == WSL_CAT_COPY_ANY || c == WSL_CAT_COPY_ANY_ASYNC || c == WSL_CAT_COPY_HTOD || c == WSL_CAT_COPY_DTOH ||
           c == WSL_CAT_COPY_DTOH_ASYNC;
}

static void range_event(struct wsl_host_trace *t, const struct wsl_event *ev, uint8_t op, uint64_t bytes)
{
    if (ev->result != 0)
        return;
    if (t->range_total >= t->max_range_events) {
        if (!t->ranges_overflowed) {
            t->ranges_overflowed = true;
            t->ranges_overflow_t = ev->t_start;
        }
        return;
    }
    if (t->range_count >= RANGE_WINDOW)
        classify_flush(t, 0);
    t->range_total++;
    if (t->range_count == t->range_cap) {
        t->range_cap = t->range_cap ? 2 * t->range_cap : 1024;
        t->ranges = xrealloc(t->ranges, t->range_cap * sizeof *t->ranges);
    }
    t->ranges[t->range_count++] = (struct range_ev){.t = ev->t_start, .seq = t->seq++, .ptr = ev->a[0],
                                                    .bytes = bytes, .op = op};
}

/* A copy (result 0): counted, kept for classification, and a wait or a submission. Apart from
 * wsl_host_trace_event_slow: a launch with a wait to charge, its most frequent call, saves the
 * registers this path needs. */
static __attribute__((noinline)) void copy_event(struct wsl_host_trace *t, struct thread_state *th, unsigned category,
                                                 const struct wsl_event *ev)
{
    uint64_t dur = ev->t_end > ev->t_start ? ev->t_end - ev->t_start : 0;
    uint64_t bytes = ev->a[2];
    t->s.copies++;
    t->s.copy_bytes += bytes;
    t->copy_ticks += dur;
    if (bytes < WSL_HOST_SMALL_COPY) {
        t->s.small_copies++;
        t->s.small_bytes += bytes;
        t->small_ticks += dur;
        if (th->have_small && ev->t_start > th->small_start && ev->t_start - th->small_start < SMALL_RUN_GAP_TICKS) {
            t->small_gap_ticks += ev->t_start - th->small_start;
            t->s.small_gaps++;
        }
        th->have_small = true;
        th->small_start = ev->t_start;
    }
    uint32_t index = NONE;
    if (t->copy_total < t->max_copies) {
        if (t->copy_count >= COPY_WINDOW)
            classify_flush(t, 0);      /* before the index is taken: a flush moves the copies */
        t->copy_total++;
        if (t->copy_count == t->copy_cap) { /* by 4: each growth copies them all (1,024 to a window in 3) */
            t->copy_cap = t->copy_cap ? 4 * t->copy_cap : 1024;
            t->copies = xrealloc(t->copies, t->copy_cap * sizeof *t->copies);
        }
        index = (uint32_t)t->copy_count++;
        t->copies[index] = (struct copy_rec){.t = ev->t_start, .dur = dur, .dst = ev->a[0], .src = ev->a[1],
                                             .bytes = bytes, .range = NONE,
                                             .category = (uint8_t)category, .thread = th->slot};
    } else {
        t->s.unclassified_copies++;
        if (bytes < WSL_HOST_SMALL_COPY)
            t->unrecorded_small_ticks += dur;
    }
    if (copy_blocks(category)) {
        resolve(t, th, ev->t_start);    /* the GPU had this copy to do from its start */
        add_block(t, th, WSL_BLOCK_COPY, ev->t_start, ev->t_end, index);
    } else {
        t->s.submissions++;
        resolve(t, th, ev->t_end);
    }
}

void wsl_host_trace_event_slow(struct wsl_host_trace *t, unsigned category, const struct wsl_event *ev)
{
    struct thread_state *th = t->current;
    switch (category) {
    case WSL_CAT_SYNC_STREAM:
    case WSL_CAT_SYNC_CTX:
    case WSL_CAT_SYNC_EVENT:
        add_block(t, th,
                  category == WSL_CAT_SYNC_STREAM ? WSL_BLOCK_STREAM_SYNC
                  : category == WSL_CAT_SYNC_CTX  ? WSL_BLOCK_CTX_SYNC
                                                  : WSL_BLOCK_EVENT_SYNC,
                  ev->t_start, ev->t_end, NONE);
        return;
    case WSL_CAT_QUERY:
        t->s.polls++;
        if (ev->result == WSL_CUDA_ERROR_NOT_READY) {
            t->s.polls_not_ready++;
            if (!th->poll_waiting) {
                th->poll_waiting = true;
                th->poll_start = ev->t_start;
            }
        } else if (th->poll_waiting) {      /* the wait ends with the query that saw the work done */
            th->poll_waiting = false;
            add_block(t, th, WSL_BLOCK_POLL, th->poll_start, ev->t_end, NONE);
        } else {
            add_block(t, th, WSL_BLOCK_POLL, ev->t_start, ev->t_end, NONE);
        }
        return;
    case WSL_CAT_LAUNCH:
    case WSL_CAT_GRAPH:
    case WSL_CAT_HOSTFN:
    case WSL_CAT_MEMSET:
    case WSL_CAT_MEMSET_ASYNC:
        if (ev->result != 0)
            return;
        t->s.submissions++;
        resolve(t, th, ev->t_end);
        return;
    case WSL_CAT_ALLOC:
        range_event(t, ev, OP_DEVICE_ALLOC, ev->a[1]);
        return;
    case WSL_CAT_ALLOC_MANAGED:
        range_event(t, ev, OP_MANAGED_ALLOC, ev->a[1]);
        return;
    case WSL_CAT_FREE:
        range_event(t, ev, OP_FREE, 0);
        return;
    case WSL_CAT_HOST_ALLOC:
    case WSL_CAT_HOST_REGISTER:
        range_event(t, ev, OP_LOCKED_ALLOC, ev->a[1]);
        return;
    case WSL_CAT_HOST_FREE:
    case WSL_CAT_HOST_UNREGISTER:
        range_event(t, ev, OP_LOCKED_FREE, 0);
        return;
    default:
        break;
    }
    if (is_copy(category) && ev->result == 0)
        copy_event(t, th, category, ev);
}

void wsl_host_trace_name_ranges(struct wsl_host_trace *t, const char *(*name)(const void *ctx, uint32_t range),
                                const void *ctx)
{
    if (!t->range_acc_count || t->range_names)
        return;
    t->range_names = xcalloc(t->range_acc_count, sizeof *t->range_names);
    for (size_t i = 0; i < t->range_acc_count; i++)
        t->range_names[i] = xstrdup(name(ctx, t->range_acc[i].range));
}

/* ---- end of trace: classify the copies ----------------------------------------------------- */

struct copy_key {
    uint64_t t;
    uint32_t index;
};

static int copy_key_by_time(const void *a, const void *b)
{
    const struct copy_key *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

#define RADIX_BITS 11
#define RADIX_INDEX_BITS 16     /* a window's index: COPY_WINDOW copies at most */
_Static_assert(COPY_WINDOW <= 1u << RADIX_INDEX_BITS, "a copy's index fits under its time in a radix key");

#define MERGE_THREADS 8     /* copies of at most this many threads are merged, of more sorted */

/* Merges the copies of each thread, when each thread's are in time order (the reader gives a
 * thread's events in order, each batch one thread's) and they come from few threads: their
 * indices, grouped by thread in the order read, then taken by the smallest (time, index) of the
 * threads' next ones. false (and order untouched) otherwise. */
static bool merge_threads(const struct copy_rec *c, size_t n, size_t threads, uint32_t *order)
{
    size_t slots = threads + 1;         /* the last one: the overflow's copies */
    uint64_t *last = xmalloc(slots * sizeof *last);
    uint32_t *count = xcalloc(slots, sizeof *count);
    bool ok = true;
    unsigned used = 0;
    for (size_t i = 0; i < n && ok; i++) {
        size_t h = c[i].thread < threads ? c[i].thread : threads;
        if (!count[h]++)
            ok = ++used <= MERGE_THREADS;
        else
            ok = c[i].t >= last[h];
        last[h] = c[i].t;
    }
    free(last);
    if (!ok) {
        free(count);
        return false;
    }
    uint32_t head[MERGE_THREADS], stop[MERGE_THREADS], *at = xmalloc(n * sizeof *at);
    size_t k = 0;
    uint32_t sum = 0;
    for (size_t h = 0; h < slots; h++)
        if (count[h]) {
            uint32_t x = count[h];
            head[k] = count[h] = sum;   /* count: where the thread's next index goes */
            stop[k++] = sum += x;
        }
    for (size_t i = 0; i < n; i++)
        at[count[c[i].thread < threads ? c[i].thread : threads]++] = (uint32_t)i;
    free(count);
    size_t o = 0;
    if (k == 2) {               /* the common case (a training loop's thread and autograd's) */
        const uint32_t *x = at, *xe = at + stop[0], *y = xe, *ye = at + n;
        while (x < xe && y < ye) {
            uint64_t tx = c[*x].t, ty = c[*y].t;
            if (ty < tx || (ty == tx && *y < *x))
                order[o++] = *y++;
            else
                order[o++] = *x++;
        }
        while (x < xe)
            order[o++] = *x++;
        while (y < ye)
            order[o++] = *y++;
    }
    for (; o < n; o++) {
        size_t best = k;
        uint32_t bi = 0;
        for (size_t j = 0; j < k; j++) {
            if (head[j] == stop[j])
                continue;
            uint32_t x = at[head[j]];
            if (best == k || c[x].t < c[bi].t || (c[x].t == c[bi].t && x < bi)) {
                best = j;
                bi = x;
            }
        }
        order[o] = bi;
        head[best]++;
    }
    free(at);
    return true;
}

/* The copies' order by (time, index): order[k] is the index of the k-th, or NULL when they are in
 * that order already (one copy thread, or batches that do not overlap). A real run's copies come
 * from a few threads in batches that overlap (the DDP run: 2 threads, 4,300 switches in 36,000
 * copies), where a comparison sort of the 64-byte records took 300 instructions a copy: there, the
 * threads' copies are merged (merge_threads). Else the keys (time - first) << 16 | index are sorted
 * by the time's bits alone, least significant digit first: each pass is stable, so the indices of
 * one time stay in order. A span of 2^48 ticks or more (days), or more copies than a window's, are
 * sorted by comparison. */
static uint32_t *copy_order(const struct copy_rec *c, size_t n, size_t threads)
{
    uint64_t lo = n ? c[0].t : 0, hi = lo;
    bool sorted = true;
    for (size_t i = 1; i < n; i++) {
        uint64_t x = c[i].t;
        sorted &= x >= c[i - 1].t;
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
    }
    if (sorted)
        return NULL;
    uint32_t *order = xmalloc(n * sizeof *order);
    if (merge_threads(c, n, threads, order))
        return order;
    uint64_t span = hi - lo;
    if (span >> (64 - RADIX_INDEX_BITS) || n > 1u << RADIX_INDEX_BITS) { /* (copies kept past a window) */
        struct copy_key *keys = xmalloc(n * sizeof *keys);
        for (size_t i = 0; i < n; i++)
            keys[i] = (struct copy_key){c[i].t, (uint32_t)i};
        qsort(keys, n, sizeof *keys, copy_key_by_time);
        for (size_t i = 0; i < n; i++)
            order[i] = keys[i].index;
        free(keys);
        return order;
    }
    unsigned bits = 64 - (unsigned)__builtin_clzll(span);  /* span > 0: not sorted */
    unsigned passes = (bits + RADIX_BITS - 1) / RADIX_BITS;
    uint64_t *a = xmalloc(2 * n * sizeof *a), *b = a + n;
    uint32_t(*count)[1u << RADIX_BITS] = xcalloc(passes, sizeof *count);
    for (size_t i = 0; i < n; i++) {
        uint64_t k = (c[i].t - lo) << RADIX_INDEX_BITS | i;
        a[i] = k;
        for (unsigned p = 0; p < passes; p++)
            count[p][(k >> (RADIX_INDEX_BITS + p * RADIX_BITS)) & ((1u << RADIX_BITS) - 1)]++;
    }
    for (unsigned p = 0; p < passes; p++) {
        uint32_t sum = 0, *cp = count[p];
        if (cp[(a[0] >> (RADIX_INDEX_BITS + p * RADIX_BITS)) & ((1u << RADIX_BITS) - 1)] == n)
            continue;           /* one digit for all: the pass would change nothing */
        for (unsigned d = 0; d < 1u << RADIX_BITS; d++) {
            uint32_t x = cp[d];
            cp[d] = sum;
            sum += x;
        }
        for (size_t i = 0; i < n; i++)
            b[cp[(a[i] >> (RADIX_INDEX_BITS + p * RADIX_BITS)) & ((1u << RADIX_BITS) - 1)]++] = a[i];
        uint64_t *swap = a;
        a = b;
        b = swap;
    }
    for (size_t i = 0; i < n; i++)
        order[i] = (uint32_t)(a[i] & ((1u << RADIX_INDEX_BITS) - 1));
    free(a < b ? a : b);
    free(count);
    return order;
}

static int range_by_time(const void *a, const void *b)
{
    const struct range_ev *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void apply_range(struct range_tree *tree, const struct range_ev *e)
{
    switch (e->op) {
    case OP_DEVICE_ALLOC: wsl_range_tree_insert(tree, e->ptr, e->ptr + e->bytes, RANGE_DEVICE); break;
    case OP_MANAGED_ALLOC: wsl_range_tree_insert(tree, e->ptr, e->ptr + e->bytes, RANGE_MANAGED); break;
    case OP_LOCKED_ALLOC: wsl_range_tree_insert(tree, e->ptr, e->ptr + e->bytes, RANGE_LOCKED); break;
    case OP_FREE:
    case OP_LOCKED_FREE: wsl_range_tree_remove(tree, e->ptr); break;
    }
}

enum direction { DIR_UNKNOWN, DIR_HTOD, DIR_DTOH, DIR_DTOD };

static bool on_device(uint8_t kind) { return kind == RANGE_DEVICE || kind == RANGE_MANAGED; }

/* Direction and the host side's kind (0: not in any range, i.e. pageable). */
static enum direction classify(struct range_tree *tree, const struct copy_rec *c, uint8_t *host_kind)
{
    switch (c->category) {     /* only the pointers the answer needs: most of a DDP run's are DtoD */
    case WSL_CAT_COPY_HTOD:
    case WSL_CAT_COPY_HTOD_ASYNC:
        *host_kind = wsl_range_tree_find(tree, c->src);
        return DIR_HTOD;
    case WSL_CAT_COPY_DTOH:
    case WSL_CAT_COPY_DTOH_ASYNC:
        *host_kind = wsl_range_tree_find(tree, c->dst);
        return DIR_DTOH;
    case WSL_CAT_COPY_DTOD:
    case WSL_CAT_COPY_DTOD_ASYNC:
        return DIR_DTOD;
    default:                    /* cuMemcpy, cuMemcpyAsync: unified addresses, direction from the pointers */
        break;
    }
    uint8_t dst = wsl_range_tree_find(tree, c->dst), src = wsl_range_tree_find(tree, c->src);
    if (on_device(dst) && !on_device(src)) {
        *host_kind = src;
        return DIR_HTOD;
    }
    if (on_device(src) && !on_device(dst)) {
        *host_kind = dst;
        return DIR_DTOH;
    }
    return on_device(src) && on_device(dst) ? DIR_DTOD : DIR_UNKNOWN;
}

/* Takes back what was counted for c as a wait (it was a cuMemcpyAsync to the GPU). The group it
 * was in keeps the rest of its charge; its own share goes to the pageable and small charges. */
static void not_a_wait(struct wsl_host_trace *t, struct copy_rec *c)
{
    t->s.blocks[WSL_BLOCK_COPY]--;
    t->blocked[WSL_BLOCK_COPY] -= c->dur;
    if (c->wait == 2)
        t->lost[WSL_BLOCK_COPY] -= c->sync_charge;
    else
        t->s.unresolved_blocks--;
    if (c->range != NONE) {
        struct range_acc *r = &t->range_acc[c->range];
        r->blocks--;
        r->blocked -= c->dur;
        r->lost -= c->wait == 2 ? c->sync_charge : 0;
    }
    c->sync_charge = 0;
    c->wait = 0;
}

/* Classifies one copy with the ranges live at its time. */
static void classify_one(struct wsl_host_trace *t, struct copy_rec *c)
{
    struct wsl_host_summary *s = &t->s;
    uint64_t left = c->dur > c->sync_charge ? c->dur - c->sync_charge : 0;
    if (c->bytes >= (1u << 20)) {
        s->large_copies++;
        s->large_bytes += c->bytes;
        t->large_ticks += c->dur;
    }
    if (t->ranges_overflowed && c->t >= t->ranges_overflow_t) {
        s->unclassified_copies++;
    } else {
        uint8_t host = 0;
        enum direction d = classify(&t->tree, c, &host);
        if (c->wait && c->category == WSL_CAT_COPY_ANY_ASYNC && (d == DIR_HTOD || d == DIR_DTOD)) {
            not_a_wait(t, c);   /* a cuMemcpyAsync that turned out to go to the GPU: a submission */
            left = c->dur;
        }
        s->htod += d == DIR_HTOD;
        s->dtoh += d == DIR_DTOH;
        s->dtod += d == DIR_DTOD;
        s->unknown_direction += d == DIR_UNKNOWN;
        if (d == DIR_HTOD || d == DIR_DTOH) {
            if (host == 0) {
                /* only copies to the GPU are charged: a copy to pageable memory is a wait for the
                 * GPU's earlier work (sync_heavy's), which pinning alone does not remove */
                s->pageable_copies++;
                s->pageable_bytes += c->bytes;
                s->pageable_htod += d == DIR_HTOD;
                s->pageable_dtoh += d == DIR_DTOH;
                t->pageable_ticks += c->dur;
                if (d == DIR_HTOD) { /* its charge needs the submission cost: at the end */
                    if (t->htod_left_count == t->htod_left_cap) {
                        t->htod_left_cap = t->htod_left_cap ? 2 * t->htod_left_cap : 1024;
                        t->htod_left = xrealloc(t->htod_left, t->htod_left_cap * sizeof *t->htod_left);
                    }
                    t->htod_left[t->htod_left_count++] =
                        (left & ~(1ull << 63)) | (uint64_t)(c->bytes < WSL_HOST_SMALL_COPY) << 63;
                    return;
                }
            } else if (host == RANGE_LOCKED) {
                s->locked_copies++;
                s->locked_bytes += c->bytes;
                t->locked_ticks += c->dur;
            }
        }
    }
    if (c->bytes < WSL_HOST_SMALL_COPY)
        t->small_left += left;
}

/* Classifies the waiting copies in time order, with the allocation calls before each applied to
 * the range tree. At the end (final) all of them; else those before a cut time, about half,
 * so that the memory kept stays bounded: a copy still counted as a wait that is not charged yet
 * (its thread has not submitted again) stays, and the cut stops at the first such one unless that
 * keeps back more than three quarters. A copy or allocation call read later than the cut with an
 * earlier time (another thread's batch far behind) is classified against the ranges of the cut's
 * time. */
static void classify_flush(struct wsl_host_trace *t, bool final)
{
    size_t n = t->copy_count;
    struct pend_entry **owners = NULL;
    size_t owner_count = 0;
    if (!final) { /* the copies pending entries point at: tagged in sync_charge (0 until charged) */
        for (size_t i = 0; i <= t->thread_count; i++) {
            struct thread_state *th = i < t->thread_count ? t->threads[i] : &t->overflow;
            for (uint32_t j = 0; j < th->npend; j++)
                if (th->pend[j].copy != NONE) {
                    owners = xrealloc(owners, (owner_count + 1) * sizeof *owners);
                    owners[owner_count++] = &th->pend[j];
                    t->copies[th->pend[j].copy].sync_charge = owner_count;
                }
        }
    }
    uint32_t *order = copy_order(t->copies, n, t->thread_count);
    bool ranges_sorted = true;  /* often: allocation calls are few, and most from one thread */
    for (size_t k = 1; k < t->range_count && ranges_sorted; k++)
        ranges_sorted = t->ranges[k].t >= t->ranges[k - 1].t;
    if (!ranges_sorted)
        qsort(t->ranges, t->range_count, sizeof *t->ranges, range_by_time);
    /* the k-th copy in time order; those kept go to the spare when the order is not the array's */
#define COPY_AT(k) (&t->copies[order ? order[k] : (k)])
    struct copy_rec *out = t->copies;
    if (order && !final) {
        if (t->spare_cap < t->copy_cap) {
            free(t->copies_spare);
            t->copies_spare = xmalloc(t->copy_cap * sizeof *t->copies_spare);
            t->spare_cap = t->copy_cap;
        }
        out = t->copies_spare;
    }
    uint64_t cut = UINT64_MAX;
    if (!final) {
        cut = n >= COPY_WINDOW || !t->range_count ? (n ? COPY_AT(n / 2)->t : 0) : t->ranges[t->range_count / 2].t;
        if (n && cut <= COPY_AT(0)->t && n >= COPY_WINDOW)
            cut = COPY_AT(0)->t + 1;    /* a window of one time: it goes whole */
        if (t->range_count && cut <= t->ranges[0].t && t->range_count >= RANGE_WINDOW)
            cut = t->ranges[0].t + 1;
        for (size_t i = 0; i < n && COPY_AT(i)->t < cut; i++)
            if (COPY_AT(i)->wait == 1 && COPY_AT(i)->sync_charge) {
                if (i >= n / 4)
                    cut = COPY_AT(i)->t;
                break;
            }
    }
    size_t r = 0, w = 0, i = 0;
    for (; i < n && COPY_AT(i)->t < cut; i++) {
        struct copy_rec *c = COPY_AT(i);
        while (r < t->range_count && t->ranges[r].t <= c->t)
            apply_range(&t->tree, &t->ranges[r++]);
        if (!final && c->wait == 1 && c->sync_charge)
            out[w++] = *c;              /* still pending: kept */
        else
            classify_one(t, c);
    }
    for (; i < n; i++)
        out[w++] = *COPY_AT(i);
#undef COPY_AT
    if (out != t->copies) {     /* the spare's capacity is the copies' or more */
        t->copies_spare = t->copies;
        t->copies = out;
        size_t cap = t->spare_cap;
        t->spare_cap = t->copy_cap;
        t->copy_cap = cap;
    }
    free(order);
    while (r < t->range_count && t->ranges[r].t < cut)
        apply_range(&t->tree, &t->ranges[r++]);
    if (r) /* t->ranges may be NULL when none was kept */
        memmove(t->ranges, t->ranges + r, (t->range_count - r) * sizeof *t->ranges);
    t->range_count -= r;
    t->copy_count = w;
    for (size_t k = 0; k < w; k++)
        if (t->copies[k].wait == 1 && t->copies[k].sync_charge) {
            owners[t->copies[k].sync_charge - 1]->copy = (uint32_t)k;
            t->copies[k].sync_charge = 0;
        }
    free(owners);
}

/* The end of the trace: the copies left, then the pageable copies' charges with the submission
 * cost (ticks), in ticks until wsl_host_trace_end converts them. */
static void classify_copies(struct wsl_host_trace *t, uint64_t submit)
{
    struct wsl_host_summary *s = &t->s;
    classify_flush(t, 1);
    uint64_t small_left = t->unrecorded_small_ticks + t->small_left, pageable_lost = 0;
    for (size_t i = 0; i < t->htod_left_count; i++) {
        uint64_t left = t->htod_left[i] & ~(1ull << 63);
        uint64_t p = left > submit ? left - submit : 0;
        pageable_lost += p;
        if (t->htod_left[i] >> 63)
            small_left += left - p;
    }
    free(t->tree.nodes);
    t->tree.nodes = NULL;
    s->small_left_ns = small_left;
    s->pageable_lost_ns = pageable_lost;
    s->pageable_ns = t->pageable_ticks;
    s->locked_ns = t->locked_ticks;
    s->large_ns = t->large_ticks;
}

static void discard(struct wsl_host_trace *t)
{
    wsl_u64_map_free(&t->thread_index);
    for (size_t i = 0; i < t->thread_count; i++)
        free(t->threads[i]);
    free(t->threads);
    free(t->copies);
    free(t->copies_spare);
    free(t->ranges);
    free(t->tree.nodes);
    free(t->htod_left);
    for (size_t i = 0; t->range_names && i < t->range_acc_count; i++)
        free(t->range_names[i]);
    free(t->range_names);
    free(t->range_acc);
    free(t->acc_of);
    free(t);
}

void wsl_host_trace_discard(struct wsl_host_trace *t)
{
    if (t)
        discard(t);
}

void wsl_host_trace_end(struct wsl_host_trace *t, const struct wsl_clock_map *clock, uint64_t submit,
                        struct wsl_host_summary *out)
{
    struct wsl_host_summary *s = &t->s;
    s->submissions += t->fast.submissions;
    for (size_t i = 0; i <= t->thread_count; i++) {   /* waits with no submission after them: charged 0 */
        const struct thread_state *th = i < t->thread_count ? t->threads[i] : &t->overflow;
        s->unresolved_blocks += th->npend;
    }
    classify_copies(t, submit);
#define NS(ticks) wsl_clock_duration_ns(clock, ticks)
    s->submit_ns = NS(submit);
    for (unsigned k = 0; k < WSL_BLOCK_KINDS; k++) {
        s->blocked_ns[k] = NS(t->blocked[k]);
        s->block_lost_ns[k] = NS(t->lost[k]);
    }
    s->copy_ns = NS(t->copy_ticks);
    s->small_ns = NS(t->small_ticks);
    s->small_gap_ns = NS(t->small_gap_ticks);
    s->small_left_ns = NS(s->small_left_ns);
    s->pageable_ns = NS(s->pageable_ns);
    s->pageable_lost_ns = NS(s->pageable_lost_ns);
    s->locked_ns = NS(s->locked_ns);
    s->large_ns = NS(s->large_ns);
    s->ranges = NULL;
    s->range_count = 0;
    for (size_t i = 0; i < t->range_acc_count; i++) { /* by name, in the order of their first wait */
        const struct range_acc *a = &t->range_acc[i];
        if (!a->blocks)
            continue;   /* its only waits were copies to the GPU, taken back */
        struct wsl_host_range r = {NULL, a->blocks, NS(a->blocked), NS(a->lost)};
        if (t->range_names) {
            r.name = t->range_names[i];
            t->range_names[i] = NULL;
        } else {
            r.name = xasprintf("range %u", a->range);
        }
        add_range(s, &r);
        free(r.name);
    }
#undef NS
    *out = *s;
    discard(t);
}

/* ---- run totals ---------------------------------------------------------------------------- */

static void add_range(struct wsl_host_summary *a, const struct wsl_host_range *r)
{
    for (size_t i = 0; i < a->range_count; i++)
        if (strcmp(a->ranges[i].name, r->name) == 0) {
            a->ranges[i].blocks += r->blocks;
            a->ranges[i].blocked_ns += r->blocked_ns;
            a->ranges[i].lost_ns += r->lost_ns;
            return;
        }
    a->ranges = xrealloc(a->ranges, (a->range_count + 1) * sizeof *a->ranges);
    a->ranges[a->range_count] = *r;
    a->ranges[a->range_count++].name = xstrdup(r->name);
}

void wsl_host_add(struct wsl_host_summary *a, const struct wsl_host_summary *b)
{
    for (unsigned k = 0; k < WSL_BLOCK_KINDS; k++) {
        a->blocks[k] += b->blocks[k];
        a->blocked_ns[k] += b->blocked_ns[k];
        a->block_lost_ns[k] += b->block_lost_ns[k];
    }
#define ADD(f) a->f += b->f
    ADD(polls); ADD(polls_not_ready); ADD(unresolved_blocks); ADD(submissions);
    ADD(copies); ADD(copy_bytes); ADD(copy_ns);
    ADD(small_copies); ADD(small_bytes); ADD(small_ns); ADD(small_left_ns); ADD(small_gaps); ADD(small_gap_ns);
    ADD(htod); ADD(dtoh); ADD(dtod); ADD(unknown_direction);
    ADD(pageable_copies); ADD(pageable_bytes); ADD(pageable_ns); ADD(pageable_lost_ns);
    ADD(pageable_htod); ADD(pageable_dtoh);
    ADD(locked_copies); ADD(locked_bytes); ADD(locked_ns);
    ADD(large_copies); ADD(large_bytes); ADD(large_ns);
    ADD(unclassified_copies);
#undef ADD
    if (b->submit_ns > a->submit_ns)
        a->submit_ns = b->submit_ns;
    for (size_t i = 0; i < b->range_count; i++)
        add_range(a, &b->ranges[i]);
}

void wsl_host_free(struct wsl_host_summary *s)
{
    for (size_t i = 0; i < s->range_count; i++)
        free(s->ranges[i].name);
    free(s->ranges);
    s->ranges = NULL;
    s->range_count = 0;
}

uint64_t wsl_host_blocks(const struct wsl_host_summary *s)
{
    uint64_t n = 0;
    for (unsigned k = 0; k < WSL_BLOCK_KINDS; k++)
        n += s->blocks[k];
    return n;
}

uint64_t wsl_host_blocked_ns(const struct wsl_host_summary *s)
{
    uint64_t n = 0;
    for (unsigned k = 0; k < WSL_BLOCK_KINDS; k++)
        n += s->blocked_ns[k];
    return n;
}

uint64_t wsl_host_block_lost_ns(const struct wsl_host_summary *s)
{
    uint64_t n = 0;
    for (unsigned k = 0; k < WSL_BLOCK_KINDS; k++)
        n += s->block_lost_ns[k];
    return n;
}

const char *wsl_block_kind_name(enum wsl_block_kind k)
{
    static const char *const names[WSL_BLOCK_KINDS] = {"stream_sync", "ctx_sync", "event_sync", "query_poll",
                                                       "blocking_copy"};
    return k < WSL_BLOCK_KINDS ? names[k] : "?";
}
