/*
 * GPU and page-locked host memory of a run: the allocation calls the shim
 * recorded (categories WSL_CAT_ALLOC ... WSL_CAT_HOST_UNREGISTER) replayed per
 * process in time order, giving live bytes over time, their peak, what was
 * still live at exit, failures and an allocation size histogram.
 * docs/memory.md explains every number and its limits.
 *
 * Memory is bounded whatever the trace holds:
 *   - a table of the live allocations only (pointer -> bytes; freed ones are
 *     removed), at most WSL_MEM_MAX_LIVE per kind;
 *   - a window of at most WSL_MEM_WINDOW memory events, a min-heap on start
 *     time, that puts the events of the process's threads (one EVENTS chunk
 *     holds one thread's events, chunks of threads interleave) back in time
 *     order. An event that arrives after a later one already left the window
 *     is applied anyway, in arrival order, and counted in late_events.
 *
 * Use, per trace: wsl_mem_trace_begin, wsl_mem_trace_event for every event of
 * a memory op (wsl_mem_op_of says which), then wsl_mem_trace_end with the
 * trace's final clock fit. Run totals: wsl_mem_add into a zeroed summary.
 */
#ifndef WSLSHIM_MEMORY_ANALYSIS_H
#define WSLSHIM_MEMORY_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace_reader.h"

#define WSL_MEM_SIZE_BUCKETS 25             /* < 2 KiB, [2 KiB, 4 KiB), ... [8 GiB, 16 GiB), >= 16 GiB */
#define WSL_MEM_WINDOW (1u << 18)           /* memory events held to restore time order across threads */
#define WSL_MEM_MAX_LIVE (1u << 24)         /* live allocations tracked per process and kind */
#define WSL_CUDA_ERROR_OUT_OF_MEMORY 2      /* CUresult */
#define WSL_MEM_MAX_FREED_SIZES (1u << 16)  /* distinct freed sizes remembered for churn, per process */

/* What an API does to memory; decided once per API table entry. */
enum wsl_mem_op {
    WSL_MEM_NONE = 0,
    WSL_MEM_ALLOC,              /* cuMemAlloc, cuMemAllocPitch */
    WSL_MEM_ALLOC_ASYNC,        /* cuMemAllocAsync, cuMemAllocFromPoolAsync: stream-ordered */
    WSL_MEM_ALLOC_MANAGED,
    WSL_MEM_FREE,               /* cuMemFree: device or managed */
    WSL_MEM_FREE_ASYNC,         /* cuMemFreeAsync */
    WSL_MEM_HOST_ALLOC,         /* cuMemHostAlloc, cuMemAllocHost: pinned */
    WSL_MEM_HOST_FREE,
    WSL_MEM_HOST_REGISTER,
    WSL_MEM_HOST_UNREGISTER,
};

/* The op of an API from its category and base name ("cuMemAllocAsync"...). */
enum wsl_mem_op wsl_mem_op_of(unsigned category, const char *base);

/* Lower bound of a size bucket in bytes (0 for the first); its name: "<2K", "2K-4K", ... "16G+". */
uint64_t wsl_mem_bucket_min(unsigned bucket);
const char *wsl_mem_bucket_name(unsigned bucket);
unsigned wsl_mem_size_bucket(uint64_t bytes);

/* One kind of memory other than device memory (managed, pinned, registered). */
struct wsl_mem_kind {
    uint64_t allocations;       /* successful calls */
    uint64_t bytes;             /* bytes they asked for */
    uint64_t frees;             /* successful free/unregister calls, unknown pointers too */
    uint64_t unknown_frees;     /* of pointers not seen allocated (before tracing, or untracked) */
    uint64_t failed;            /* allocation calls with result != 0 */
    uint64_t live_bytes;        /* at the end of the trace */
    uint64_t peak_bytes;        /* most live bytes at once */
};

struct wsl_mem_summary {
    bool any;                       /* a memory call was seen */
    /* device memory: cuMemAlloc*, cuMemAllocPitch, and the stream-ordered ones */
    uint64_t allocations, allocated_bytes;  /* successful calls, bytes asked */
    uint64_t frees;                 /* successful cuMemFree(Async) calls of device or unknown pointers */
    uint64_t unknown_frees;         /* of pointers not seen allocated (counted, not an error) */
    uint64_t failed_frees;          /* free calls with result != 0 (device and managed) */
    uint64_t peak_bytes;            /* most live device bytes at once */
    uint64_t peak_at_ns;            /* when (end of the call that reached it), CLOCK_MONOTONIC ns */
    uint64_t live_at_exit_bytes, live_at_exit_allocations;
    uint64_t failed_allocations;    /* device and managed allocation calls with result != 0 */
    uint64_t oom_failures;          /* of them, CUDA_ERROR_OUT_OF_MEMORY */
    uint64_t largest_failed_bytes;
    uint64_t failed_ns;             /* host time in the failed calls */
    uint64_t async_allocations, async_bytes, async_frees;
    uint64_t size_hist[WSL_MEM_SIZE_BUCKETS];   /* successful device allocations by bytes */
    struct wsl_mem_kind managed, pinned, registered;
    uint64_t page_locked_peak_bytes;    /* most pinned + registered bytes live at once */
    uint64_t late_events;           /* arrived after the window had moved past them */
    uint64_t untracked_allocations; /* successful, but pointer 0 or the live table full: not in live bytes */
    uint64_t reused_pointers;       /* an allocation returned a pointer still live: the old one was dropped */
    /* churn: allocations (cuMemAlloc*, cuMemAllocPitch, cuMemHostAlloc, cuMemAllocHost; not the
     * stream-ordered ones) of a size that an earlier free of the same kind had given back, i.e.
     * what a caching allocator would have served from its cache without calling the driver */
    uint64_t churn_reallocs;
    uint64_t churn_ns;              /* host time of those allocations and of the frees they reused */
    /* set by the run model from the DRIVER chunk: GPU 0's total memory, 0 when unknown */
    uint64_t device_total_bytes;
};

/* share of the device, 0 when its size is unknown */
static inline double wsl_mem_peak_share(const struct wsl_mem_summary *m)
{
    return m->device_total_bytes ? (double)m->peak_bytes / (double)m->device_total_bytes : 0;
}

struct wsl_mem_trace;

struct wsl_mem_trace *wsl_mem_trace_begin(void);
/* One event whose API has op (not WSL_MEM_NONE), times in the trace's ticks. */
void wsl_mem_trace_event(struct wsl_mem_trace *t, enum wsl_mem_op op, const struct wsl_event *ev);
/* Replays what the window still holds, converts times with clock, writes the
 * process's figures to *out (device_total_bytes left alone) and frees t. */
void wsl_mem_trace_end(struct wsl_mem_trace *t, const struct wsl_clock_map *clock, struct wsl_mem_summary *out);
/* Frees t (NULL is fine). */
void wsl_mem_trace_discard(struct wsl_mem_trace *t);

/* Adds one process's figures to run totals: counts add up, peaks are the
 * largest (with that process's peak time and device size). */
void wsl_mem_add(struct wsl_mem_summary *total, const struct wsl_mem_summary *p);

/* The window size used by new traces (tests make it small); 0 restores WSL_MEM_WINDOW. */
void wsl_mem_set_window(size_t events);

#endif /* WSLSHIM_MEMORY_ANALYSIS_H */
