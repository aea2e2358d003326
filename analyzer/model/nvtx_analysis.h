/*
 * NVTX ranges of a run (docs/nvtx.md): time per range name, and what the
 * program did inside each range.
 *
 * Per trace, each thread's push/pop events (categories WSL_CAT_NVTX_*) keep a
 * stack of open ranges; every other event of that thread (CUDA API call,
 * kernel launch, synchronization, file I/O) is attributed to the innermost
 * open range ("self" figures), and a range's "inclusive" figures add those
 * of the ranges nested in it. A timed GPU kernel (WSL_CAT_GPU_KERNEL) is
 * attributed to the innermost range its launching thread had open at launch
 * time. Start/end ranges are matched by id across threads and timed only.
 * Ranges still open at the end of a trace are closed there and flagged.
 * Where the shim dropped events (full buffers), the level each push carries
 * puts the thread's stack right again: ranges whose pop was lost are
 * discarded (wsl_nvtx.lost).
 *
 * Memory is bounded whatever the trace holds: WSL_NVTX_MAX_DEPTH frames per
 * thread, WSL_NVTX_MAX_RANGES range names, WSL_NVTX_MAX_NAME_BYTES of names
 * and WSL_NVTX_MAX_OPEN_STARTS open start/end ranges per trace, a
 * WSL_NVTX_HISTORY-entry history per thread for GPU attribution. What is past
 * a cap is counted (wsl_nvtx.dropped).
 *
 * The step (a range named like one, else the most frequent top-level range)
 * also gets process-wide figures: everything any thread of its process did
 * while a step instance was open, found by reading its traces a second time.
 *
 * Use, per trace: wsl_nvtx_trace_begin; then, in stream order,
 * wsl_nvtx_trace_paths for PATHS chunks, wsl_nvtx_thread for each EVENTS
 * chunk and wsl_nvtx_trace_event for its events (all of them while
 * wsl_nvtx_wants says so); then wsl_nvtx_trace_end. Once every trace was
 * read, wsl_nvtx_finish.
 */
#ifndef WSLSHIM_NVTX_ANALYSIS_H
#define WSLSHIM_NVTX_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stats.h"
#include "trace_reader.h"
#include "u64_map.h"

#define WSL_NVTX_MAX_DEPTH 128u
#define WSL_NVTX_MAX_RANGES 65536u            /* distinct (kind, domain, name) per trace and per run */
#define WSL_NVTX_MAX_NAME_BYTES (64u << 20)   /* bytes of NVTX names kept per trace */
#define WSL_NVTX_MAX_OPEN_STARTS (1u << 20)   /* start/end ranges open at once per trace */
#define WSL_NVTX_HISTORY 4096u                /* innermost-range changes kept per thread (GPU attribution) */
#define WSL_NVTX_MAX_WINDOWS (1u << 20)       /* top-level range instances kept per trace */
#define WSL_NVTX_MAX_RUN_WINDOWS (1u << 21)   /* and per run, until wsl_nvtx_finish */
#define WSL_NVTX_TOP_TEXT 15
#define WSL_NVTX_MAX_TIMED (1u << 20)        /* (range, kernel, configuration, queued or idle) of timed kernels per trace */

enum wsl_nvtx_kind {
    WSL_NVTX_PUSH = 0,          /* push/pop: a thread's nested range */
    WSL_NVTX_START = 1,         /* start/end: may end on another thread */
};

/* What a range held; times in ns once merged into the run (ticks inside a trace). */
struct wsl_nvtx_counts {
    uint64_t api_calls, api_ns;     /* CUDA driver calls */
    uint64_t launches;              /* successful kernel and graph launches */
    uint64_t syncs, sync_ns;        /* stream, context and event synchronizations */
    uint64_t io_calls, io_ns;       /* file I/O calls of every kind */
    uint64_t io_reads, io_bytes;    /* successful reads and the bytes they returned */
    uint64_t gpu_kernels, gpu_ns;   /* GPU_KERNEL events (self only) */
};

struct wsl_nvtx_range {
    uint32_t id;                /* order of creation (windows refer to it) */
    char *name;                 /* "(unnamed)" for a range without a message */
    char *domain;               /* NULL: the default domain */
    enum wsl_nvtx_kind kind;
    uint64_t count;             /* instances, including those closed at the end of their trace */
    uint64_t unclosed;          /* of them, still open at the end of their trace */
    uint64_t top_level;         /* push ranges opened with no other range open on their thread */
    uint32_t max_depth;         /* deepest nesting level seen (0: top level) */
    struct wsl_hist ns;         /* duration per instance */
    struct wsl_nvtx_counts self;/* attributed while this was the innermost open range */
    struct wsl_nvtx_counts incl;/* self plus the ranges nested in it */
};

/* Top-level range instances of one trace, in its ticks: for the step's
 * process-wide figures (a second read of the trace, in wsl_nvtx_finish). */
struct wsl_nvtx_window {
    uint64_t t0, t1;
    uint32_t range;             /* wsl_nvtx_range.id */
};

/* What the trace's threads did inside the instances of one of its ranges, counted on the first
 * reading (wsl_nvtx_trace_track): the step's process-wide figures for this trace, were that range
 * the step, with no reading of their own. */
struct wsl_nvtx_step_guess {
    uint32_t range;             /* wsl_nvtx_range.id */
    struct wsl_nvtx_counts c;   /* in ticks */
};

struct wsl_nvtx_trace_windows {
    char *path;
    double ns_per_tick;
    struct wsl_nvtx_window *w;
    size_t count;
    struct wsl_nvtx_step_guess *guess;
    size_t guess_count;
};

/* The step's windows of one trace, merged, waiting for their count (wsl_nvtx_finish keeps them when
 * step_count_later is set): a reading of the trace made anyway (the steady state's) feeds its items
 * to wsl_nvtx_window_item on its way; wsl_nvtx_step_figures reads the traces no reading counted. */
struct wsl_kern_estimate;

struct wsl_nvtx_window_count {
    char *path;
    double ns_per_tick;
    struct wsl_nvtx_window *w;
    size_t n;
    uint64_t steps;             /* the step's instances in the windows */
    bool counting, counted;     /* an item fed since wsl_nvtx_window_begin; counted: c is the whole trace's */
    size_t at_gpu, at_call;     /* in_windows' last answers */
    uint32_t weight;            /* calls a timed sampled file call stands for (its PROCESS chunk) */
    uint16_t *cat;              /* by api id, while counting (0xffff: not in the table) */
    bool *sampled;
    const struct wsl_kern_estimate *est; /* the trace's estimate: what comes off its queued timed kernels */
    struct wsl_nvtx_counts c;
};

struct wsl_nvtx_mark {
    char *name;
    char *domain;
    uint64_t count;
};

struct wsl_nvtx {
    struct wsl_nvtx_range *ranges;  /* by total time, largest first, after wsl_nvtx_finish */
    size_t range_count;
    struct wsl_nvtx_mark *marks;    /* by count, after wsl_nvtx_finish */
    size_t mark_count;
    uint64_t pushes, pops, starts, ends, marks_total;
    uint64_t unmatched_pops;        /* pops with no open range of their domain on their thread */
    uint64_t unmatched_ends;        /* ends of an id no start opened */
    uint64_t unclosed;              /* ranges closed at the end of their trace */
    uint64_t unnamed_ids;           /* events naming a string id no PATHS entry defined */
    uint64_t gpu_unattributed;      /* timed kernels launched outside any range or past the history */
    uint64_t dropped;               /* ranges or names past a cap */
    uint64_t lost;                  /* open ranges discarded when dropped events hid their pop */
    long step;                      /* index into ranges of the training step, or -1 */
    /* The step's instances as windows of time, and what every thread of their
     * process did inside them (CUDA calls, launches, syncs, I/O, timed kernels). */
    bool step_process_known;        /* the traces were read again and the figures below hold */
    uint64_t step_process_steps;    /* step instances the figures cover */
    struct wsl_nvtx_counts step_process;
    struct wsl_nvtx_trace_windows *traces;
    size_t trace_count, window_total;
    bool windows_capped;            /* more top-level ranges than the caps: no process-wide figures */
    /* Set before wsl_nvtx_finish (wsl_run_finish does): the process-wide figures are counted by
     * wsl_nvtx_step_figures, after a later reading of the traces has counted what it could. */
    bool step_count_later;
    struct wsl_nvtx_window_count *pending;
    size_t pending_count;
    /* The step tracking's arrays (wsl_nvtx_trace_track), lent to the trace being read and given
     * back at its close: kept from trace to trace (a new one each time faults its pages in). */
    struct wsl_nvtx_track_pool {
        void *segs, *gpus;
        size_t seg_cap, gpu_cap;
    } track_pool;
    size_t step_count_readings;     /* traces read for the figures alone (no other reading counted them) */
    size_t step_count_first;        /* traces whose figures were counted on the first reading */
    /* The step's instances per trace, in that trace's ticks (wsl_nvtx_finish): the run's phases
     * take their steady state from them. */
    struct wsl_nvtx_step_trace {
        char *path;
        uint64_t *t0, *t1;
        size_t count;
    } *step_traces;
    size_t step_trace_count;
    /* (kind, domain, name), by range_key -> index into ranges; emptied by wsl_nvtx_finish */
    struct wsl_u64_map index;
    /* Optional, set before wsl_nvtx_finish: a trace's estimate per launch (kernel_analysis.h), whose
     * pair overhead the step's process-wide GPU time takes off its queued timed kernels. */
    const struct wsl_kern_estimate *(*estimate_of)(void *ctx, const char *path);
    void *estimate_ctx;
};

struct wsl_nvtx_trace;
struct wsl_nvtx_thread;

struct wsl_nvtx_trace *wsl_nvtx_trace_begin(void);
/* A PATHS chunk: keeps the entries that are NVTX names. */
void wsl_nvtx_trace_paths(struct wsl_nvtx_trace *t, const struct wsl_item *item);
/* The state of thread tid (made on first use), for an EVENTS chunk that
 * reported `dropped` lost events before it. */
struct wsl_nvtx_thread *wsl_nvtx_thread(struct wsl_nvtx_trace *t, uint32_t tid, uint64_t dropped);
/* The first member of a thread's state: ranges it has open (any domain), and the innermost
 * timed push range among them (the trace's own index, WSL_NVTX_NO_RANGE when none), which the
 * thread's other events are attributed to. */
struct wsl_nvtx_thread_head {
    uint32_t open;
    uint32_t innermost;
    struct wsl_nvtx_counts *self; /* the innermost timed push range's own counts (its frame's), NULL: none */
};
#define WSL_NVTX_NO_RANGE UINT32_MAX
/* Where the thread's innermost range is kept, for as long as the trace is read: the host
 * analysis reads it at each wait (wsl_host_trace_thread), so it follows every push and pop in
 * the thread's event order at no cost to the other events. */
static inline const uint32_t *wsl_nvtx_innermost(const struct wsl_nvtx_thread *th)
{
    return &((const struct wsl_nvtx_thread_head *)(const void *)th)->innermost;
}
/* The name of the trace's range `range` (an index wsl_nvtx_innermost gave; ctx: the
 * wsl_nvtx_trace), with the names of the PATHS chunks read so far: call it at the end of the
 * trace, before wsl_nvtx_trace_end. "(unnamed)" for a range without a message. */
const char *wsl_nvtx_trace_range_name(const void *ctx, uint32_t range);
/* True for the categories whose events always matter: NVTX and GPU_KERNEL. */
static inline bool wsl_nvtx_wants_always(unsigned category)
{
    return wsl_is_nvtx_category(category) || category == WSL_CAT_GPU_KERNEL;
}
/* True while the thread has a range open: then its other events matter too. */
static inline bool wsl_nvtx_thread_open(const struct wsl_nvtx_thread *th)
{
    return ((const struct wsl_nvtx_thread_head *)(const void *)th)->open != 0;
}
/* True when an event of this category on this thread matters (the two above). */
static inline bool wsl_nvtx_wants(const struct wsl_nvtx_thread *th, unsigned category)
{
    return wsl_nvtx_thread_open(th) || wsl_nvtx_wants_always(category);
}
/* Counts an event of category cat into c: ev stands for `calls` calls taking `dur` ticks (sampled
 * file timing: io_analysis.h). */
static inline void wsl_nvtx_attribute(struct wsl_nvtx_counts *c, unsigned cat, const struct wsl_event *ev,
                                      uint64_t calls, uint64_t dur)
{
    if (cat >= WSL_CAT_IO_OPEN && cat <= WSL_CAT_IO_CLOSE) {
        c->io_calls += calls;
        c->io_ns += dur;
        if (cat == WSL_CAT_IO_READ && ev->result >= 0) {
            c->io_reads += calls;
            c->io_bytes += ev->a[2];
        }
        return;
    }
    c->api_calls++;
    c->api_ns += dur;
    if (cat == WSL_CAT_LAUNCH || cat == WSL_CAT_GRAPH) {
        c->launches += ev->result == 0;
    } else if (cat == WSL_CAT_SYNC_STREAM || cat == WSL_CAT_SYNC_CTX || cat == WSL_CAT_SYNC_EVENT) {
        c->syncs++;
        c->sync_ns += dur;
    }
}
/* An event of a category wsl_nvtx_wants_always does not name, inline: counted into the thread's
 * innermost timed push range when one is open (as wsl_nvtx_trace_event counts it). */
static inline void wsl_nvtx_trace_other(struct wsl_nvtx_thread *th, unsigned category, const struct wsl_event *ev,
                                        uint64_t calls, uint64_t ticks)
{
    struct wsl_nvtx_counts *c = ((struct wsl_nvtx_thread_head *)(void *)th)->self;
    if (c)
        wsl_nvtx_attribute(c, category, ev, calls, ticks);
}
/* n successful launches in a row (WSL_CAT_LAUNCH, result 0) taking `ticks` in all: what
 * wsl_nvtx_trace_other counts for each, at once (no range opens or closes between them). */
static inline void wsl_nvtx_trace_launch_run_ok(struct wsl_nvtx_thread *th, uint64_t n, uint64_t ticks)
{
    struct wsl_nvtx_counts *c = ((struct wsl_nvtx_thread_head *)(void *)th)->self;
    if (c) {
        c->api_calls += n;
        c->api_ns += ticks;
        c->launches += n;
    }
}
/* The step's process-wide figures counted on this reading, by segments (wsl_nvtx_trace_close checks
 * each against its candidate ranges' instances; where one straddles an instance's edge, the trace
 * is read again at the end as before). Set once, before the first events; a run that reports them,
 * its pool (the run's NVTX analysis's, which outlives the trace). */
void wsl_nvtx_trace_track(struct wsl_nvtx_trace *t, struct wsl_nvtx_track_pool *pool);
/* A batch of the thread's events, every one (before a fold is opened up), after the batch was taken
 * (wsl_nvtx_trace_event): cat and sampled by api id (as the API table says), weight the PROCESS
 * chunk's (wsl_io_weight). */
struct wsl_nvtx_track_before {  /* the trace's events before the batch: latest start time, latest GPU
                                   kernel's launch time (a[1]); whether there were any, of each */
    bool events, gpu;
    uint64_t start_max, gpu_launch_max;
};
void wsl_nvtx_track_batch(struct wsl_nvtx_trace *t, struct wsl_nvtx_thread *th, const struct wsl_event *ev,
                          uint32_t n, const uint16_t *cat, const bool *sampled, uint32_t weight,
                          const struct wsl_nvtx_track_before *before);
/* ev stands for `calls` calls taking `ticks` (1 and its duration but for
 * sampled file calls: wsl_event_calls, wsl_event_ticks in io_analysis.h). */
void wsl_nvtx_trace_event(struct wsl_nvtx_trace *t, struct wsl_nvtx_thread *th, unsigned category,
                          const struct wsl_event *ev, uint64_t calls, uint64_t ticks);
/* A GPU kernel's event (WSL_CAT_GPU_KERNEL): what wsl_nvtx_trace_event does for it (the event
 * loop's straight path). */
void wsl_nvtx_trace_gpu(struct wsl_nvtx_trace *t, const struct wsl_event *ev);
/* n GPU kernels' events in a row, each as wsl_nvtx_trace_gpu takes it (the event loop's runs). */
void wsl_nvtx_trace_gpu_run(struct wsl_nvtx_trace *t, const struct wsl_event *ev, uint32_t n);
/* Closes what is still open at end_ticks; returns how many were. Once per trace, before
 * wsl_nvtx_trace_merge. */
uint64_t wsl_nvtx_trace_close(struct wsl_nvtx_trace *t, uint64_t end_ticks);
/* Converts the closed trace's ticks with ns_per_tick and merges it into n (unclosed: what
 * wsl_nvtx_trace_close returned); t is left as it was (a rank's trace goes to two runs). path: the
 * trace's file, read again by wsl_nvtx_finish. */
void wsl_nvtx_trace_merge(const struct wsl_nvtx_trace *t, struct wsl_nvtx *n, uint64_t unclosed, double ns_per_tick,
                          const char *path);
/* wsl_nvtx_trace_close, wsl_nvtx_trace_merge, then frees t. */
void wsl_nvtx_trace_end(struct wsl_nvtx_trace *t, struct wsl_nvtx *n, uint64_t end_ticks, double ns_per_tick,
                        const char *path);
void wsl_nvtx_trace_discard(struct wsl_nvtx_trace *t);

/* The GPU time of ranges as the report estimates it (kernel_analysis.h): each range keeps its
 * timed kernels per (handle, configuration), queued and idle apart; once the trace was read and
 * its pair overhead is known, wsl_nvtx_trace_adjust_pairs adjusts its gpu_ns by each one's
 * (wsl_kern_estimate_adjust_ticks; before wsl_nvtx_trace_merge; e->configs false: nothing is
 * adjusted). Past WSL_NVTX_MAX_TIMED such (range, handle, configuration, idle) entries a range's
 * further ones take the process's adjustment. wsl_nvtx_trace_timed: whether there is anything
 * to adjust. */
bool wsl_nvtx_trace_timed(const struct wsl_nvtx_trace *t);
void wsl_nvtx_trace_adjust_pairs(struct wsl_nvtx_trace *t, const struct wsl_kern_estimate *e);

/* Sorts, picks the step range, and (process_figures) reads the traces holding its
 * instances again for its process-wide figures (their recordings in store, when it holds them). */
void wsl_nvtx_finish(struct wsl_nvtx *n, const struct wsl_trace_store *store, bool process_figures);
/* The trace's windows still to count (NULL: none): a reading of the whole trace may count them,
 * wsl_nvtx_window_begin, each item it reads to wsl_nvtx_window_item, wsl_nvtx_window_end (ok: it
 * read to the end, END or TRUNCATED, as wsl_nvtx_step_figures's own reading would). */
struct wsl_nvtx_window_count *wsl_nvtx_window_pending(struct wsl_nvtx *n, const char *path);
void wsl_nvtx_window_begin(struct wsl_nvtx_window_count *wc);
void wsl_nvtx_window_item(struct wsl_nvtx_window_count *wc, const struct wsl_item *it);
void wsl_nvtx_window_end(struct wsl_nvtx_window_count *wc, bool ok);
/* The step's process-wide figures from the pending windows: each trace no reading counted is read
 * (from store, when it holds it); then the windows are freed. Nothing pending: nothing done. */
void wsl_nvtx_step_figures(struct wsl_nvtx *n, const struct wsl_trace_store *store);
void wsl_nvtx_free(struct wsl_nvtx *n);

/* Mean duration of a range, ns (rounded). */
uint64_t wsl_nvtx_mean_ns(const struct wsl_nvtx_range *r);

#endif /* WSLSHIM_NVTX_ANALYSIS_H */
