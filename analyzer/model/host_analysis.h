/*
 * Host-side CUDA costs of a run: where the program's threads waited for the
 * GPU (synchronizations, blocking copies, polling), what its copies were
 * (size, direction, pageable or page-locked host memory) and how much of
 * each wait and copy a better-written program would not have paid. The
 * rules sync_heavy, small_transfers and pageable_transfers read the result;
 * docs/report.md explains every figure.
 *
 * Each event's host time is charged to at most one rule, so the rules'
 * time lost never counts one nanosecond twice:
 *
 *   blocking points (cuStreamSynchronize, cuCtxSynchronize,
 *   cuEventSynchronize, a run of cuStreamQuery polls, every synchronous copy
 *   and every copy to host memory; a cuMemcpyAsync counts as one until its
 *   pointers, classified at the end, show it went to the GPU, and then its
 *   charge is taken back): after one returns, the GPU has nothing
 *   queued (by the calling thread) until that thread submits again. The
 *   sync charge of a group of consecutive blocking points is
 *   min(their host time, refill gap), the gap running from the end of the
 *   first one to the end of the thread's next GPU submission; removing the
 *   wait saves at most the wait, and at most the GPU idle time it caused.
 *   A group with no later submission on its thread is charged 0.
 *   pageable copies to the GPU (host side outside every cuMemHostAlloc/
 *   cuMemAllocHost/cuMemHostRegister range live at that time): the host time
 *   left after the sync charge, minus one submission (the median host time
 *   of the process's kernel launches), which is what pinned memory with
 *   non_blocking=True leaves on the host thread. Copies from the GPU to
 *   pageable memory are counted but not charged here: their host time is a
 *   wait for the GPU's earlier work (the sync charge's), which pinning alone
 *   does not remove.
 *   small copies (< WSL_HOST_SMALL_COPY bytes): what is left of their host
 *   time after both charges; the rule keeps the share that coalescing into
 *   WSL_HOST_SMALL_COPY-byte copies would save.
 *
 * Use, per trace: wsl_host_trace_begin, then per batch of one thread's events
 * _thread and _event for each (in the thread's order; threads' batches may
 * interleave), _name_ranges, _end with the trace's clock fit.
 *
 * NVTX ranges: each wait is credited to the innermost NVTX range its thread
 * had open (by_range), read where the NVTX analysis keeps it
 * (wsl_nvtx_innermost); the figures are kept per range index of the trace,
 * and the names looked up once, at the end (_name_ranges), where the names
 * of all the trace's PATHS chunks are known. Memory is bounded: at most WSL_HOST_MAX_COPIES copies and
 * WSL_HOST_MAX_RANGE_EVENTS allocation calls are kept for the end-of-trace
 * classification; copies past that are counted but not classified.
 */
#ifndef WSLSHIM_HOST_ANALYSIS_H
#define WSLSHIM_HOST_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace_reader.h"

#define WSL_HOST_SMALL_COPY (64u << 10)          /* a copy below this many bytes is small */
#define WSL_HOST_MAX_COPIES (1u << 21)           /* copies kept per process for classification */
#define WSL_HOST_MAX_RANGE_EVENTS (1u << 21)     /* allocation calls kept per process */
#define WSL_HOST_MAX_THREADS 4096                /* threads with sync state per process */
#define WSL_HOST_MAX_RANGES 256                  /* NVTX ranges with waits per trace; later ones: in none */
#define WSL_CUDA_ERROR_NOT_READY 600             /* CUresult of a query whose work is still running */

/* Kinds of blocking point, for counts. */
enum wsl_block_kind {
    WSL_BLOCK_STREAM_SYNC,      /* cuStreamSynchronize */
    WSL_BLOCK_CTX_SYNC,         /* cuCtxSynchronize */
    WSL_BLOCK_EVENT_SYNC,       /* cuEventSynchronize */
    WSL_BLOCK_POLL,             /* a run of cuStreamQuery calls on one thread */
    WSL_BLOCK_COPY,             /* a synchronous copy, or a copy to host memory */
    WSL_BLOCK_KINDS
};

/* Waits credited to one NVTX range name (the innermost range open on the waiting thread). */
struct wsl_host_range {
    char *name;
    uint64_t blocks, blocked_ns, lost_ns;
};

struct wsl_host_summary {
    /* blocking points */
    uint64_t blocks[WSL_BLOCK_KINDS];       /* counts */
    uint64_t blocked_ns[WSL_BLOCK_KINDS];   /* host time in them */
    uint64_t block_lost_ns[WSL_BLOCK_KINDS];/* sync charge (see above) */
    uint64_t polls, polls_not_ready;        /* cuStreamQuery calls, of them CUDA_ERROR_NOT_READY */
    uint64_t unresolved_blocks;             /* no later submission on their thread: charged 0 */
    uint64_t submissions;                   /* launches, graph launches, async copies and memsets */
    /* copies (all of them) */
    uint64_t copies, copy_bytes, copy_ns;
    uint64_t small_copies, small_bytes, small_ns;   /* < WSL_HOST_SMALL_COPY */
    uint64_t small_left_ns;                 /* their host time left after the sync and pageable charges */
    uint64_t small_gaps, small_gap_ns;      /* small copies that followed another on their thread within a
                                               few ms, and the time from that one's start: each copy's whole
                                               cost to the program (call and framework work around it) */
    uint64_t htod, dtoh, dtod, unknown_direction;   /* by direction (cuMemcpy/cuMemcpyAsync classified) */
    uint64_t pageable_copies, pageable_bytes, pageable_ns, pageable_lost_ns;
    uint64_t pageable_htod, pageable_dtoh;
    uint64_t locked_copies, locked_bytes, locked_ns;    /* host side page-locked */
    uint64_t large_copies, large_bytes, large_ns;       /* >= 1 MiB, for bandwidth figures */
    uint64_t unclassified_copies;           /* past WSL_HOST_MAX_COPIES, or range tables full */
    uint64_t submit_ns;                     /* the submission cost used (median launch), 0 if none */
    /* waits per NVTX range name, in the order of their first wait; NULL/0 when none was in a range */
    struct wsl_host_range *ranges;
    size_t range_count;
};

struct wsl_host_trace;

struct wsl_host_trace *wsl_host_trace_begin(void);
#define WSL_HOST_NO_RANGE UINT32_MAX
/* The thread whose events follow (an EVENTS batch is one thread's); call before _event.
 * innermost: where that thread's innermost NVTX range is kept while its events are read
 * (wsl_nvtx_innermost: a range index of the trace, WSL_HOST_NO_RANGE when none open), read at
 * each wait; NULL: no ranges. */
void wsl_host_trace_thread(struct wsl_host_trace *t, uint32_t tid, const uint32_t *innermost);
/* What the inline fast path reads: the first member of struct wsl_host_trace. */
struct wsl_host_trace_fast {
    const uint32_t *current_pending;    /* waits of the current thread not yet charged */
    uint64_t submissions;               /* launches counted on the fast path */
};

void wsl_host_trace_event_slow(struct wsl_host_trace *t, unsigned category, const struct wsl_event *ev);

/* One event of the current thread with its API's category (others than the CUDA ones are
 * ignored). A launch with no wait to charge, the common case, only counts. */
static inline void wsl_host_trace_event(struct wsl_host_trace *t, unsigned category, const struct wsl_event *ev)
{
    struct wsl_host_trace_fast *fast = (struct wsl_host_trace_fast *)(void *)t;
    if (category == WSL_CAT_LAUNCH && *fast->current_pending == 0 && ev->result == 0) {
        fast->submissions++;
        return;
    }
    wsl_host_trace_event_slow(t, category, ev);
}
/* A successful launch (result 0: the caller tested it), as wsl_host_trace_event takes it. */
static inline void wsl_host_trace_launch_ok(struct wsl_host_trace *t, const struct wsl_event *ev)
{
    struct wsl_host_trace_fast *fast = (struct wsl_host_trace_fast *)(void *)t;
    if (*fast->current_pending == 0) {
        fast->submissions++;
        return;
    }
    wsl_host_trace_event_slow(t, WSL_CAT_LAUNCH, ev);
}
/* n successful launches in a row, each as wsl_host_trace_launch_ok takes it: the waits to charge
 * go to the first (the slow path), the rest only count. */
static inline void wsl_host_trace_launch_run_ok(struct wsl_host_trace *t, const struct wsl_event *ev, uint32_t n)
{
    struct wsl_host_trace_fast *fast = (struct wsl_host_trace_fast *)(void *)t;
    uint32_t i = 0;
    for (; i < n && *fast->current_pending != 0; i++)
        wsl_host_trace_event_slow(t, WSL_CAT_LAUNCH, &ev[i]);
    fast->submissions += n - i;
}
/* Names the range indices waits were credited to: name(ctx, range) for each (copied; the same
 * name from two indices, two domains, is one range). Call it once, before _end. */
void wsl_host_trace_name_ranges(struct wsl_host_trace *t, const char *(*name)(const void *ctx, uint32_t range),
                                const void *ctx);
/* Classifies the copies, converts times with clock, writes *out and frees t. submit_ticks: the
 * cost of one submission (the median host time of the trace's kernel launches), 0 if unknown. */
void wsl_host_trace_end(struct wsl_host_trace *t, const struct wsl_clock_map *clock, uint64_t submit_ticks,
                        struct wsl_host_summary *out);
void wsl_host_trace_discard(struct wsl_host_trace *t);

/* The per-process limits on kept copies and allocation calls used by new traces (tests make
 * them small); 0 restores WSL_HOST_MAX_COPIES / WSL_HOST_MAX_RANGE_EVENTS. */
void wsl_host_set_limits(size_t copies, size_t range_events);

/* Adds one process's figures to run totals (submit_ns: the largest). */
void wsl_host_add(struct wsl_host_summary *total, const struct wsl_host_summary *p);
void wsl_host_free(struct wsl_host_summary *s);

/* Totals over the blocking-point kinds. */
uint64_t wsl_host_blocks(const struct wsl_host_summary *s);
uint64_t wsl_host_blocked_ns(const struct wsl_host_summary *s);
uint64_t wsl_host_block_lost_ns(const struct wsl_host_summary *s);
const char *wsl_block_kind_name(enum wsl_block_kind k);

#endif /* WSLSHIM_HOST_ANALYSIS_H */
