/*
 * Phases of a run, per process (docs/report.md, "Phases"):
 *
 *   start-up      process start -> its first GPU submission (imports, set-up, data)
 *   warm-up       first submission -> the steady state (module loads, JIT and
 *                 compilation, the first steps' outliers)
 *   steady state  the repeating part: NVTX step instances when the program marks
 *                 its steps, else the launch stream's repetition
 *   teardown      steady state's end -> process end
 *
 * Finding the steady state without NVTX: the launch sequence (function handles,
 * in order) of the thread that launched most is searched for a period P: a run
 * of 8 launches is looked up earlier in the sequence, and a candidate distance
 * holds when at least 90% of the launches over max(3P, 64) launches equal the
 * launch P before them. The periodic region then grows from its anchor, one
 * period at a time, in both directions, while at least 80% of a period's
 * launches match; anchors at 1/4, 1/2, 3/4 and the end of the sequence are
 * tried and the longest region wins. Its leading periods (or NVTX steps) more
 * than 1.5x the median's duration are warm-up outliers.
 *
 * Memory is bounded: at most WSL_PHASE_MAX_SEQ launches kept per thread
 * (WSL_PHASE_MAX_THREADS threads), WSL_PHASE_MAX_LOADS module loads per trace.
 *
 * Use, per trace: wsl_phase_trace_begin; wsl_phase_trace_thread for each EVENTS
 * chunk and wsl_phase_trace_event for the events whose op is not NONE; then
 * wsl_phase_trace_end. Once the run's NVTX step is known, wsl_phase_from_steps
 * replaces the repetition's steady state with the steps'.
 */
#ifndef WSLSHIM_PHASE_ANALYSIS_H
#define WSLSHIM_PHASE_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace_reader.h"

#define WSL_PHASE_MAX_SEQ (1u << 18)     /* launches kept per thread for the period (the gaps: all) */
#define WSL_PHASE_MAX_THREADS 64u        /* threads whose launches are kept, per trace */
#define WSL_PHASE_MAX_LOADS 65536u       /* module loads kept per trace */
#define WSL_PHASE_OUTLIER 1.5            /* a leading step this much slower than the median is warm-up */
#define WSL_PHASE_DISPATCH_GAP 2000000u  /* ns: a longer gap between launches is not dispatch */

enum wsl_phase_op {
    WSL_PHASE_NONE = 0,
    WSL_PHASE_LAUNCH,       /* a kernel launch: a0 the function */
    WSL_PHASE_GRAPH,        /* a graph launch: a0 the graph exec */
    WSL_PHASE_SUBMIT,       /* other GPU work submitted: copies, memsets */
    WSL_PHASE_MODULE_LOAD,  /* cuModuleLoad*: code built or JIT-compiled at run time (Triton, XLA, NVRTC) */
    WSL_PHASE_LIBRARY_LOAD, /* cuLibraryLoad*: the runtime loading a library's kernels (lazily) */
    WSL_PHASE_BREAK,        /* a wait or other work of the thread's own: file I/O, a synchronization, an
                               allocation; the gap to its next launch is not dispatch */
    WSL_PHASE_SUBMIT_BREAK, /* a copy or memset that waits (synchronous): both */
    WSL_PHASE_READ,         /* a file read: a break; on an fd not seen opened (a pipe, a socket) a wait
                               counted for the thread (data from another process) */
    WSL_PHASE_THREAD_WAIT,  /* a wait on a semaphore (WSL_CAT_IO_WAIT, sem_*): a break; a wait for another
                               thread, counted as a wait for data where another thread of the process waits
                               on pipes (a DataLoader's pin-memory thread: wsl_phase_trace_end) */
    WSL_PHASE_POLL,         /* a poll (WSL_CAT_IO_WAIT): as READ */
};

enum wsl_phase_op wsl_phase_op_of(unsigned category, const char *base);

enum wsl_steady_method {
    WSL_STEADY_NONE = 0,     /* no GPU work */
    WSL_STEADY_NVTX,         /* NVTX step instances */
    WSL_STEADY_REPETITION,   /* the launch stream's period */
    WSL_STEADY_AFTER_LOADS,  /* no repetition: from the last module load of the first half on */
    WSL_STEADY_WHOLE,        /* no repetition and no loads: the whole GPU phase */
};

const char *wsl_steady_method_name(enum wsl_steady_method m);

/* One process's phases, ns on the run's clock (CLOCK_MONOTONIC). With method
 * NONE only start_ns and end_ns hold. */
struct wsl_phases {
    enum wsl_steady_method method;
    uint64_t start_ns, first_submit_ns, steady_start_ns, steady_end_ns, end_ns;
    uint64_t last_submit_ns;        /* end of its last GPU submission call */
    uint64_t steps;                 /* in the steady state: NVTX steps, or periods of the launch stream */
    uint64_t warmup_steps;          /* steps (periods) before it, slower than WSL_PHASE_OUTLIER x the median */
    uint64_t warmup_excess_ns;      /* NVTX: those steps' time beyond the median's; repetition: the warm-up's
                                       time beyond what its launches take at the steady state's pace */
    uint64_t step_ns;               /* median step (period) in the steady state */
    uint32_t period_launches;       /* repetition: launches of one period on the busiest thread */
    uint64_t launches;              /* kernel and graph launches, all threads */
    /* Gaps from one launch to the next on the busiest launching thread: those under
     * WSL_PHASE_DISPATCH_GAP with no file I/O, synchronization or allocation of the thread's own in
     * them are the host dispatching (framework and driver work per operation); the others are the
     * host doing something else (waiting for data or the GPU, evaluation...). */
    uint64_t dispatch_gaps, dispatch_gap_ns, long_gaps, long_gap_ns;
    /* reads and polls on fds not seen opened (pipes, sockets) by the threads that launched GPU work:
     * waits for data from other processes (DataLoader workers' queues) */
    uint64_t pipe_reads, pipe_read_ns;
    /* waits on semaphores by the threads that launched GPU work, where another thread of the process read
     * or polled pipes or sockets (a DataLoader with pin_memory=True: its pin-memory thread takes the
     * workers' batches and hands them to the training loop through a Python queue) */
    uint64_t thread_waits, thread_wait_ns;
    uint64_t module_loads, module_load_ns;              /* every module and library load */
    uint64_t warmup_module_loads, warmup_module_load_ns; /* of them, before the steady state */
    uint64_t warmup_jit_loads;      /* of those, cuModuleLoad* (not cuLibraryLoad*): compiled code */
    uint64_t steady_module_loads;
};

struct wsl_phase_trace;

/* One thread's launches, in its order (the inline path below writes it). */
struct wsl_phase_seq {
    uint32_t tid;
    uint64_t *ids;              /* function handles (a graph's with the top bit flipped) */
    uint64_t *ticks;            /* their start */
    bool pending_break;         /* the thread waited or did other work of its own since its last launch */
    bool have_last;
    size_t room;                /* 0 unless have_last && !pending_break; then cap, or SIZE_MAX once cap is
                                   WSL_PHASE_MAX_SEQ: n < room where the inline path may count a launch (kept,
                                   or at the cap counted only): its one test of the three */
    uint64_t last_ticks;        /* its last launch's start */
    size_t n, cap;
    bool huge;                  /* ids and ticks are wsl_huge_alloc's (at cap WSL_PHASE_MAX_SEQ) */
    uint64_t total;             /* launches, kept or not */
    uint64_t broken_gaps, broken_ticks; /* the gaps with a break in them */
    uint64_t pipe_reads, pipe_ticks; /* reads and polls on fds not seen opened (path id 0) */
    uint64_t thread_waits, thread_wait_ticks; /* waits on semaphores */
    uint64_t pipe_polls;        /* of pipe_reads, the polls */
    /* gaps from one launch to the next with no break between (ticks): count and sum per quarter of a
     * power of two (cheap per launch; the 2 ms line is drawn by bucket) */
    uint64_t gap_n[256], gap_sum[256]; /* (wsl_phase_gap_bucket: 252 used) */
};

/* What the inline path reads and writes: the first member of struct wsl_phase_trace. */
struct wsl_phase_trace_fast {
    struct wsl_phase_seq *cur;  /* the chunk's thread, or past the cap on threads one whose room is 0
                                   (the slow path's; never NULL: the inline path does not test it) */
    bool any_submit;
    uint64_t first_submit, last_submit_end;  /* ticks */
    uint64_t launches;
};

struct wsl_phase_trace *wsl_phase_trace_begin(void);
void wsl_phase_trace_thread(struct wsl_phase_trace *t, uint32_t tid);
void wsl_phase_trace_event_slow(struct wsl_phase_trace *t, enum wsl_phase_op op, const struct wsl_event *ev);

/* The gap bucket of g ticks: g itself below 4, else 4 per power of two (quarters): with
 * s = msb(g | 2) - 1 (0 below 4), 4 s + (g >> s), as g >> s is g below 4 and g's top two bits (2 or
 * 3) above: buckets 0-3, then 6 and 7 for 4-7, 10 and 11 for 8-15... (none at 4, 5, 8, 9). */
static inline unsigned wsl_phase_gap_bucket(uint64_t g)
{
    unsigned s = ((unsigned)__builtin_clzll(g | 2) ^ 63u) - 1; /* (^ 63: bsr alone) */
    return 4 * s + (unsigned)(g >> s);
}

/* The gap split_gaps compares with WSL_PHASE_DISPATCH_GAP for bucket k: k below 4, else
 * (4 | k % 4) << (k / 4 - 1), as it was before the buckets were renumbered (k + 4 then). Not the
 * bucket's lowest gap, (k % 4) << (k / 4): 1.5 times it where the top two bits are 10 (the bucket's
 * end), 7/6 where they are 11. */
static inline uint64_t wsl_phase_gap_split_value(unsigned k)
{
    return k < 4 ? k : (uint64_t)(4 | (k & 3)) << (k / 4 - 1);
}

/* A successful launch (result 0: the caller tested it). The common case, one that follows the
 * thread's last launch with no break between and finds room in its sequence (or finds it full, at
 * WSL_PHASE_MAX_SEQ: then it is counted, not kept), is counted here (as
 * wsl_phase_trace_event_slow would count it, without its tests and call). */
static inline void wsl_phase_trace_launch_ok(struct wsl_phase_trace *t, const struct wsl_event *ev)
{
    struct wsl_phase_trace_fast *f = (struct wsl_phase_trace_fast *)(void *)t;
    struct wsl_phase_seq *q = f->cur;
    /* (a thread with a launch before, have_last, had a submission: any_submit holds) */
    if (q->n < q->room && ev->t_start >= q->last_ticks) {
        uint64_t ts = ev->t_start, g = ts - q->last_ticks;
        /* (first_submit: at most the thread's last launch's start, which set it or came after it) */
        if (ev->t_end > f->last_submit_end)
            f->last_submit_end = ev->t_end;
        f->launches++;
        q->total++;
        unsigned k = wsl_phase_gap_bucket(g);
        q->gap_n[k]++;
        q->gap_sum[k] += g;
        q->last_ticks = ts;
        if (q->n < q->cap) {
            q->ids[q->n] = ev->a[0];
            q->ticks[q->n++] = ts;
        }
        return;
    }
    wsl_phase_trace_event_slow(t, WSL_PHASE_LAUNCH, ev);
}

/* A successful launch the caller expects to be its thread's first after a break (a read, a wait:
 * the fused launch run stops at it): counted here as wsl_phase_trace_event_slow counts it where
 * the thread has a launch before (no earlier start), the break pending and room to keep it, or
 * none at WSL_PHASE_MAX_SEQ (its gap a broken one; the sequence's room back); else as
 * wsl_phase_trace_launch_ok counts it. */
static inline void wsl_phase_trace_launch_after_break(struct wsl_phase_trace *t, const struct wsl_event *ev)
{
    struct wsl_phase_trace_fast *f = (struct wsl_phase_trace_fast *)(void *)t;
    struct wsl_phase_seq *q = f->cur;
    const uint64_t ts = ev->t_start;
    /* (have_last: the thread had a launch, which set any_submit; never the shared sequence past the
     * cap on threads, whose have_last stays false) */
    if (q->pending_break && q->have_last && (q->n < q->cap || q->n >= WSL_PHASE_MAX_SEQ) && ts >= q->last_ticks) {
        if (ts < f->first_submit)
            f->first_submit = ts;
        if (ev->t_end > f->last_submit_end)
            f->last_submit_end = ev->t_end;
        f->launches++;
        q->total++;
        q->broken_gaps++;
        q->broken_ticks += ts - q->last_ticks;
        q->last_ticks = ts;
        q->pending_break = false;
        q->room = q->cap == WSL_PHASE_MAX_SEQ ? SIZE_MAX : q->cap;
        if (q->n < q->cap) { /* (at WSL_PHASE_MAX_SEQ: counted, not kept) */
            q->ids[q->n] = ev->a[0];
            q->ticks[q->n++] = ts;
        }
        return;
    }
    wsl_phase_trace_launch_ok(t, ev);
}

/* n successful launches in a row (the event loop's runs of launches), end_max the latest t_end
 * among them: each as wsl_phase_trace_launch_ok counts it, the thread's sequence in registers
 * while its test holds. */
void wsl_phase_trace_launch_run_ok(struct wsl_phase_trace *t, const struct wsl_event *ev, uint32_t n,
                                   uint64_t end_max);

/* One event whose op is not NONE: a successful launch as wsl_phase_trace_launch_ok counts it. */
static inline void wsl_phase_trace_event(struct wsl_phase_trace *t, enum wsl_phase_op op, const struct wsl_event *ev)
{
    if (op == WSL_PHASE_LAUNCH && ev->result == 0)
        wsl_phase_trace_launch_ok(t, ev);
    else
        wsl_phase_trace_event_slow(t, op, ev);
}
/* Finds the phases of the trace's process (start and end in ns) and frees t. */
void wsl_phase_trace_end(struct wsl_phase_trace *t, const struct wsl_clock_map *clock, uint64_t start_ns,
                         uint64_t end_ns, struct wsl_phases *out);
void wsl_phase_trace_discard(struct wsl_phase_trace *t);

/* The process's steady state from its NVTX step instances (ns, in time order):
 * leading outliers are warm-up, the rest the steady state. Needs at least 3. */
/* Dispatch gaps summed over processes (wsl_run_dispatch_gaps, analysis.h). */
struct wsl_dispatch_gaps {
    uint64_t gaps, gap_ns, long_gap_ns;
};

void wsl_phase_from_steps(struct wsl_phases *ph, const uint64_t *t0, const uint64_t *t1, size_t n);

/* The period of ids[0..n) around `anchor` and the periodic region [*s, *e);
 * 0 when none (exposed for the unit test). */
uint32_t wsl_phase_find_period(const uint64_t *ids, size_t n, size_t anchor, size_t *s, size_t *e);

/* The longest region wsl_phase_find_period finds around any of anchors[0..count) (the first of equal
 * ones) and its period, 0 when none (*s, *e then 0). The same answer as calling it at each anchor in
 * turn; an anchor a whole number of periods inside a region grown from an earlier one takes that
 * region without growing it again (the launch streams of a run: each anchor lands in the one region).
 * The first WSL_PHASE_MAX_ANCHORS regions grown are remembered. */
#define WSL_PHASE_MAX_ANCHORS 8
uint32_t wsl_phase_best_period(const uint64_t *ids, size_t n, const size_t *anchors, size_t count, size_t *s,
                               size_t *e);

/* The value sorting v[0..n) would put at v[n / 2], 0 when empty; v is reordered (exposed for the
 * unit test). */
uint64_t wsl_phase_median(uint64_t *v, size_t n);

#endif /* WSLSHIM_PHASE_ANALYSIS_H */
