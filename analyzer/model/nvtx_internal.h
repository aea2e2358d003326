/*
 * nvtx_internal.h: shared by the files of the NVTX analysis (private to them): one trace's reading
 * state (its names, ranges, marks, threads with their open frames and history, open start/end
 * ranges, timed kernels, the step's tracking) and the functions the files call across.
 *   nvtx_analysis.c  one trace's events: the ranges' counts in the trace's ticks, its close
 *   nvtx_run.c       the run: the traces merged into run-wide ranges, the step chosen, freed
 *   nvtx_step.c      the step's process-wide figures: its windows counted on the first reading
 *                    (the tracking) or on a reading of their own
 */
#ifndef WSLSHIM_NVTX_INTERNAL_H
#define WSLSHIM_NVTX_INTERNAL_H

#include "nvtx_analysis.h"
#include "u64_map.h"

#define NONE WSL_NVTX_NO_RANGE

struct local_range {            /* per trace: (kind, domain id, name id) */
    uint32_t kind, domain_id, name_id, max_depth;
    uint64_t count, unclosed, top_level;
    struct wsl_hist ticks;
    struct wsl_nvtx_counts self, incl;
    uint64_t timed_other[2];    /* timed kernels past WSL_NVTX_MAX_TIMED, queued [0] and idle [1]: the
                                   process's adjustment */
};

/* Timed kernels of one (range, handle, configuration), queued or idle at submit
 * (wsl_nvtx_trace_adjust_pairs). */
#define NVTX_TIMED_CACHE_BITS 6
#define NVTX_TIMED_CACHE_SIZE (1u << NVTX_TIMED_CACHE_BITS)

struct timed_kernels {
    uint64_t handle;
    uint32_t range, config;
    uint64_t idle : 1, count : 63;
};

struct local_mark {
    uint32_t domain_id, name_id;
    uint64_t count;
};

struct frame {
    uint32_t range;             /* index into the trace's ranges */
    uint32_t domain_id;
    uint64_t t0;
    struct wsl_nvtx_counts self, incl;
};

struct history_entry {          /* from t on, this range was innermost (NONE: no range) */
    uint64_t t;
    uint32_t range;
};

struct wsl_nvtx_thread {
    struct wsl_nvtx_thread_head head; /* first: read by wsl_nvtx_wants */
    uint32_t frames;            /* frames in use; head.open - frames were pushed past a cap */
    bool resync;                /* events of this thread were dropped: trust the next push's level */
    struct frame *frame;        /* WSL_NVTX_MAX_DEPTH, allocated on the first push */
    struct history_entry *history; /* ring of WSL_NVTX_HISTORY */
    uint64_t history_count;     /* entries ever appended */
    uint64_t history_descent;   /* the last entry appended earlier in time than the one before it (0: none) */
    uint64_t history_hint;      /* the entry history_at found last */
    /* What history_at found last in a history in time order: times [span_lo, span_hi) have
     * span_range innermost while history_count is span_count (an entry appended ends it). */
    uint64_t span_count, span_lo, span_hi;
    uint32_t span_range;
    uint32_t seg;               /* the thread's open segment (wsl_nvtx_track_batch), NONE: none */
};

struct open_start {
    uint64_t t0;
    uint32_t range;
    uint32_t next_free;
};

struct wsl_nvtx_trace {
    struct wsl_u64_map names;   /* string id -> index into strs */
    char **strs;
    size_t str_count, str_bytes;
    struct wsl_u64_map range_index[2]; /* per kind: key -> index into ranges */
    struct local_range *ranges;
    size_t range_count;
    struct wsl_u64_map mark_index;
    struct local_mark *marks;
    size_t mark_count;
    struct wsl_u64_map thread_index; /* tid + 1 -> index into threads */
    struct wsl_nvtx_thread *gpu_thread; /* the thread the last GPU kernel found (tid gpu_tid): a tid's */
    uint32_t gpu_tid;                   /* thread, once made, stays (on_gpu_kernel) */
    struct wsl_nvtx_thread **threads;
    size_t thread_count;
    struct wsl_nvtx_window *tops;   /* closed top-level push instances (range: local index) */
    size_t top_count, top_cap;
    bool tops_capped;
    struct wsl_u64_map start_index; /* range id -> index into starts */
    struct wsl_u64_map early_ends;  /* range id -> end ticks, for ends read before their start
                                       (another thread's chunk may come first) */
    struct open_start *starts;
    size_t start_count, start_used;
    uint32_t start_free;        /* free list head, NONE when empty */
    uint64_t pushes, pops, starts_total, ends, marks_total, unmatched_pops, unmatched_ends, gpu_unattributed,
        dropped, lost;
    struct wsl_u64_map timed_index; /* hash of (range, handle, configuration, idle) -> timed (compare) */
    struct timed_kernels *timed;
    size_t timed_count, timed_cap;
    bool any_timed;
    /* The timed entries GPU kernels found last, by a few bits of their key's hash: most kernels
     * skip timed_index's lookup. index1: the entry's index + 1 (0: empty). Emptied where timed is
     * (wsl_nvtx_trace_adjust_pairs); entries are only appended otherwise. */
    struct timed_cache_entry {
        uint64_t handle;
        uint64_t tag;           /* range << 33 | configuration << 1 | idle */
        uint32_t index1;
    } timed_cache[NVTX_TIMED_CACHE_SIZE];
    /* The step's figures on this reading (wsl_nvtx_trace_track): a thread's calls between two of its
     * NVTX events make a segment (the range of their times and their counts); GPU kernels are kept
     * one by one (their launch time, their duration). Events before the trace's first push are not
     * kept: their latest time is. At the close, each candidate range's instances are merged into
     * windows as wsl_nvtx_finish merges them, and a segment wholly inside one window is counted,
     * one wholly outside all is not; one that straddles an edge leaves that range to a reading. */
    bool track, tracking, track_failed, track_entered;
    struct wsl_nvtx_track_pool *pool;
    bool untracked_calls, untracked_gpu;
    uint64_t untracked_call_max, untracked_gpu_max;
    struct track_seg *segs;
    size_t seg_count, seg_cap;
    struct track_gpu *gpus;
    size_t gpu_count, gpu_cap;
    struct wsl_nvtx_step_guess *guess; /* by local range id, after the close */
    size_t guess_count;
};

struct track_seg {
    uint64_t lo, hi;            /* the calls' start times, least and greatest */
    struct wsl_nvtx_counts c;
};

struct track_gpu {
    uint64_t launch, ns;        /* a[1] (the launch's time), the kernel's duration in ticks */
};

/* nvtx_analysis.c */
/* dst += src. */
void wsl_nvtx_counts_add(struct wsl_nvtx_counts *dst, const struct wsl_nvtx_counts *src);
/* dst += src with src's times converted from ticks. */
void wsl_nvtx_counts_add_scaled(struct wsl_nvtx_counts *dst, const struct wsl_nvtx_counts *src, double ns_per_tick);

/* nvtx_step.c */
/* The tracking's arrays back to the pool (freed where there is none). */
void wsl_nvtx_track_release(struct wsl_nvtx_trace *t);
/* At the trace's close: the step's candidate ranges counted from the tracking, then released. */
void wsl_nvtx_track_close(struct wsl_nvtx_trace *t);
/* Frees the windows still waiting to be counted (n->pending). */
void wsl_nvtx_free_pending(struct wsl_nvtx *n);
/* The step's windows merged per trace and (count) its process-wide figures counted. */
void wsl_nvtx_step_process_figures(struct wsl_nvtx *n, const struct wsl_trace_store *store, bool count);

#endif
