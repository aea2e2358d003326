/*
 * Kernels of a run: launches counted per kernel name.
 *
 * The shim records where a program gets its functions (category
 * WSL_CAT_FUNC_NAME: cuModuleGetFunction and cuLibraryGetKernel name a
 * handle, their name a string of the PATHS chunks; cuKernelGetFunction gives a
 * function the name of its kernel) and every launch with its function handle
 * (WSL_CAT_LAUNCH; a CUkernel passed as the function works too). Handles are
 * per process. While a trace is read, launches are counted per handle and
 * launch API; at its end each handle is given its name, whatever the order in
 * which the threads' chunks came (a handle named after it was launched is
 * named all the same). A handle named twice keeps the last name read.
 * Graph launches (WSL_CAT_GRAPH) are counted, without names.
 *
 * GPU time (WSL_CAT_GPU_KERNEL, the shim's sampled event pairs): per handle a
 * histogram of the corrected durations and how many of the timed launches
 * found the GPU idle at submit; at the end of the trace they go to the named
 * kernel. A launch's configuration is wsl_launch_config of its grid and block
 * (trace_format.h), which a GPU_KERNEL event carries in its result (0:
 * unknown, as in older traces). A process's estimated GPU time is, per handle
 * and configuration, its launches times that configuration's mean timed
 * duration; launches of a configuration never timed take the handle's mean
 * over all its timed launches, and those of a handle never timed the
 * process's mean timed kernel duration; plus graphs alike. (One function
 * launched at two grid sizes runs for two durations: a mean over both,
 * weighted by which were sampled, misestimated PyTorch's Adam kernels.)
 *
 * Memory is bounded whatever the trace holds: per process at most
 * WSL_KERN_MAX_HANDLES named handles, as many launched handles and
 * WSL_KERN_MAX_NAME_BYTES bytes of names (PATHS entries that are not file
 * paths, i.e. do not start with '/' or '<'), WSL_KERN_MAX_CONFIGS (handle,
 * configuration) pairs (past it, a pair's launches and timed launches count
 * for its handle alone); per run at most WSL_KERN_MAX_KERNELS kernels. What is
 * past a cap is counted.
 *
 * Use, per trace: wsl_kern_trace_begin, then _paths and _event in stream
 * order, then _end (which merges into the run's wsl_kernels); once every
 * trace was read, wsl_kern_finish.
 */
#ifndef WSLSHIM_KERNEL_ANALYSIS_H
#define WSLSHIM_KERNEL_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stats.h"
#include "trace_reader.h"
#include "u64_map.h"

#define WSL_KERN_MAX_HANDLES (1u << 20)       /* named handles, and launched handles, per process */
#define WSL_KERN_MAX_NAME_BYTES (64u << 20)   /* bytes of names kept per process */
#define WSL_KERN_MAX_KERNELS (1u << 20)       /* distinct kernels per run */
#define WSL_KERN_MAX_TIMED (1u << 16)         /* timed handles per process (a histogram each) */
#define WSL_KERN_MAX_CONFIGS (1u << 18)       /* (handle, launch configuration) pairs per process, 72 bytes each */
#define WSL_KERN_LAUNCH_APIS 4                /* launch API base names counted apart (the 4th may be "other") */
#define WSL_KERN_TOP_JSON 50
#define WSL_KERN_TOP_TEXT 10
#define WSL_KERN_COVERED 3                    /* timed launches that make a kernel's GPU time measured */
#define WSL_KERN_PAIR_MIN 2                   /* timed launches of a configuration, queued and idle each, that
                                                 make it a measure of the event pairs' overhead */
#define WSL_KERN_PAIR_MIN_WEIGHT 6            /* such measures (summed weights) the overhead needs */
#define WSL_KERN_PAIR_OWN 3                   /* a configuration timed so often both ways takes its own */

/* What the estimates do with D, the measured difference between a configuration's queued and
 * idle timed launches (wslshim-report --gpu-pair-correction=MODE; docs/gpu-timing.md). D holds
 * both what a queued pair measures beyond the kernel (its start event runs before the GPU
 * fetches the kernel) and what an idle measure misses (it starts at the launch call's return,
 * after the kernel began); the trace cannot tell the two apart. */
enum wsl_kern_pairs {
    WSL_KERN_PAIRS_SPLIT = 0,   /* D/2 off each queued timed launch, D/2 onto each idle one */
    WSL_KERN_PAIRS_QUEUED,      /* D off each queued one; the idle ones as measured */
    WSL_KERN_PAIRS_NONE,        /* every measure as it is (D still measured and reported) */
    WSL_KERN_PAIRS_FIXED,       /* default: wsl_kern_fixed_queued_ns off each queued one, wsl_kern_fixed_idle_ns
                                   onto each idle one, whatever D is */
};
extern enum wsl_kern_pairs wsl_kern_pairs;
/* WSL_KERN_PAIRS_FIXED's two parts. Measured launch by launch against CUPTI on the H100 host
 * (tests/gpu/idle_start.py, every launch timed, six PyTorch programs, eight runs; docs/gpu-timing.md):
 * an idle launch's measure starts 0.32-1.04 us (medians) after its kernel did (the host's tail of the
 * launch call: it moves between runs), a queued launch's pair starts 2.50-2.90 us before its kernel.
 * Not measured on other GPUs, nor under WSL2. */
#define WSL_KERN_FIXED_IDLE_NS 800.0
#define WSL_KERN_FIXED_QUEUED_NS 2600.0
extern double wsl_kern_fixed_idle_ns, wsl_kern_fixed_queued_ns;

/* What an API does for the kernel analysis; decided once per API table entry. */
enum wsl_kern_op {
    WSL_KERN_NONE = 0,
    WSL_KERN_FUNC_NAME,         /* a0 handle, a1 name id (0: the kernel a2's name), a2 parent */
    WSL_KERN_LAUNCH,            /* a0 the function */
    WSL_KERN_GRAPH,             /* a graph launch */
    WSL_KERN_GPU_TIME,          /* a launch timed on the GPU: a0 handle, a2 flags, result its configuration */
    WSL_KERN_CAPTURE_BEGIN,     /* stream capture begins on stream */
    WSL_KERN_CAPTURE_END,
};

enum wsl_kern_op wsl_kern_op_of(unsigned category, const char *base);

struct wsl_kernel {
    char *mangled;              /* the name as the program asked for it; NULL for an unnamed handle */
    char *name;                 /* demangled for display (the raw name when that fails), or "function 0x..." */
    int32_t pid;                /* unnamed handles only: the process the handle belongs to */
    uint64_t handle;            /* unnamed handles only */
    uint64_t launches;          /* successful launches */
    uint64_t by_api[WSL_KERN_LAUNCH_APIS]; /* of them, per launch API (see wsl_kernels.launch_apis) */
    uint64_t idle_at_submit;    /* timed launches that found the GPU idle */
    struct wsl_hist gpu_ns;     /* GPU time of the timed launches (count = launches timed) */
    uint64_t est_gpu_ns;        /* launches x their configuration's mean timed GPU time (else the handle's
                                   mean, else the process's), summed over its handles */
    double est_var_ns2;         /* its sampling variance (wsl_kern_gpu_use's, of its sizes alone) */
    uint64_t captured;          /* of the launches, into a stream being captured (graph nodes) */
};

/* GPU figures of one process (from wsl_kern_trace_end). */
struct wsl_kern_gpu_use {
    uint64_t kernels_timed, graphs_timed, idle_at_submit, mapped;
    /* How much longer queued timed launches measure than idle ones of the same configuration
     * (docs/gpu-timing.md), in ns: the weighted median over configurations timed both ways of
     * (queued mean - idle mean), D; the estimates adjust the timed launches' durations by it as
     * wsl_kern_pairs says. pair_groups 0: not measured (no configuration had both). */
    uint64_t pair_overhead_ns, pair_groups, pair_weight;
    uint64_t est_gpu_ns;        /* estimated GPU time of all its kernel and graph launches */
    /* The sampling's variance of est_gpu_ns, in ns^2: per (function, configuration) timed at least
     * twice, (launches not timed)^2 x the variance of its timed measures (as adjusted) / the timed
     * ones x (1 - timed / launches); its configurations timed fewer times, the functions of older
     * traces and graph launches add none (so it is a lower bound). est_var_known: some
     * configuration was timed (the trace names configurations). */
    double est_var_ns2;
    bool est_var_known;
    uint64_t gpu_phase_ns;      /* from its first launch to the end of its last launch or timed GPU work */
};

struct wsl_kernels {
    struct wsl_kernel *items;   /* sorted by launches, most first, after wsl_kern_finish */
    size_t count, cap;          /* items used, allocated */
    char *launch_apis[WSL_KERN_LAUNCH_APIS]; /* base names ("cuLaunchKernel"...); the last may be "other" */
    unsigned launch_api_count;
    uint64_t launches;          /* successful kernel launches (not graph launches) */
    uint64_t unnamed_launches;  /* of them, of a handle no FUNC_NAME event named */
    uint64_t untracked_launches;/* of them, of handles past a cap: in no item */
    uint64_t failed_launches;   /* kernel launch calls with result != 0 (not counted above) */
    uint64_t graph_launches;    /* successful cuGraphLaunch calls */
    uint64_t captured_launches; /* kernel launches into a stream being captured: graph nodes, not GPU work */
    uint64_t named_handles;     /* handles FUNC_NAME events named, all processes */
    uint64_t dropped_names;     /* names or named handles past a per-process cap */
    uint64_t config_untracked;  /* launches and timed launches of (handle, configuration) pairs past
                                   WSL_KERN_MAX_CONFIGS: estimated per handle */
    uint64_t kernels_timed, graphs_timed, idle_at_submit, mapped;
    /* The pair overhead of the process whose measure had the most weight (wsl_kern_gpu_use), and
     * the timed kernel launches whose durations were adjusted by it (wsl_kern_pairs), all
     * processes. pair_groups 0: measured in no process. */
    uint64_t pair_overhead_ns, pair_groups, pair_weight, pair_corrected;
    struct wsl_hist kernel_ns;  /* GPU time of every timed kernel launch (raw: the pairs' measures) */
    struct wsl_hist graph_ns;   /* GPU time of every timed graph launch */
    struct wsl_hist idle_start_ns; /* launches that found the GPU idle: from the launch call to the
                                      kernel's start on the GPU (the submission latency) */
    struct wsl_hist idle_start_before_ns; /* of them, placed before their call began (the clock
                                             mapping's error; counted 0 above): by how much */
    uint64_t est_gpu_ns;        /* all processes' estimated GPU time */
    double est_var_ns2;         /* the sum of their sampling variances (wsl_kern_gpu_use) */
    bool est_var_known;
    uint64_t busy_wall_ns;      /* GPU phase (first launch to last GPU work) of the processes with timed
                                   launches, summed (wsl_run_finish) */
    double busy_estimate;       /* est_gpu_ns / busy_wall_ns, at most 1; -1: nothing timed */
    /* Coverage of the sampled timing (wsl_kern_finish): launches of kernels timed at least
     * WSL_KERN_COVERED times, and launches of kernels never timed, whose GPU time is the
     * process's mean timed kernel time (an estimate), with that estimated time. */
    uint64_t covered_launches, estimated_launches, estimated_gpu_ns;
    /* mangled name (its wsl_u64_map_string_key) -> index into items; emptied by wsl_kern_finish */
    struct wsl_u64_map index;
};

/* The slot of a launch API base name in k->launch_apis (added when new). */
unsigned wsl_kern_launch_slot(struct wsl_kernels *k, const char *base);

struct wsl_kern_trace;

struct wsl_kern_trace *wsl_kern_trace_begin(void);
/* A PATHS chunk: keeps the entries that may be kernel names. */
void wsl_kern_trace_paths(struct wsl_kern_trace *t, const struct wsl_item *item);
/* One event of an API whose op is not WSL_KERN_NONE; slot: its launch slot (launches only), as
 * wsl_kern_launch_slot gives it (below WSL_KERN_LAUNCH_APIS; the launch path does not clamp it). */
void wsl_kern_trace_event(struct wsl_kern_trace *t, enum wsl_kern_op op, unsigned slot, const struct wsl_event *ev);
/* An event of op WSL_KERN_LAUNCH: what wsl_kern_trace_event does for it (the event loop's launch
 * path). */
void wsl_kern_trace_launch(struct wsl_kern_trace *t, unsigned slot, const struct wsl_event *ev);
/* The same for a launch whose result the caller found 0. */
void wsl_kern_trace_launch_ok(struct wsl_kern_trace *t, unsigned slot, const struct wsl_event *ev);
/* n launches in a row, each result 0, slot[i] the launch slot of ev[i]'s API, end_max the latest
 * t_end among them: what wsl_kern_trace_launch_ok does for each in turn, the cache's common case in
 * one loop (the event loop's runs of launches). */
void wsl_kern_trace_launch_run_ok(struct wsl_kern_trace *t, const uint8_t *slot, const struct wsl_event *ev,
                                  uint32_t n, uint64_t end_max);
/* What a caller's own loop over launches by op reads (the event loop's fused launch run): the
 * counters by op (wsl_kern_trace_op_counters: the byte offset from rows of the counter op's launches
 * add to, 0 where none is known; op 0, a literal, never has one), valid for a launch whose t_start is
 * past fast_after. The view is taken again after any call below (a launch there may grow the rows
 * or move fast_after); the counters' address does not change. */
struct wsl_kern_op_view {
    uintptr_t rows;
    uint64_t fast_after;
};
struct wsl_kern_op_view wsl_kern_trace_op_view(const struct wsl_kern_trace *t);
const uint64_t *wsl_kern_trace_op_counters(const struct wsl_kern_trace *t);
/* One launch (result 0) whose op's counter the caller could not use, its count included: the
 * cache, else what wsl_kern_trace_launch_ok does; then an op whose launch is in the cache is given
 * its counter (none for a handle past the caps). op: the launch's in its EVENTS chunk's table (the
 * reader's item.events.ops: 0 a literal, k the chunk's entry k - 1, whose handle, grid, block and
 * API are the same at each of its launches; the row of a handle, grid and block never changes).
 * Call wsl_kern_trace_chunk at each chunk's first batch. */
void wsl_kern_trace_launch_op(struct wsl_kern_trace *t, unsigned slot, unsigned op, const struct wsl_event *ev);
/* n launches the caller added to counters of the view, end_max the latest t_end among them. */
void wsl_kern_trace_launches_counted(struct wsl_kern_trace *t, uint64_t n, uint64_t end_max);
/* A new EVENTS chunk: its ops name other entries (forgets the ops' rows). */
void wsl_kern_trace_chunk(struct wsl_kern_trace *t);
/* An event of op WSL_KERN_GPU_TIME: what wsl_kern_trace_event does for it, without the op's tests
 * (the event loop's straight path for GPU kernels). */
void wsl_kern_trace_gpu(struct wsl_kern_trace *t, const struct wsl_event *ev);
/* n such events in a row, end_max the latest t_end among them: each as wsl_kern_trace_gpu takes it
 * (the event loop's runs of GPU kernels). */
void wsl_kern_trace_gpu_run(struct wsl_kern_trace *t, const struct wsl_event *ev, uint32_t n, uint64_t end_max);
/* Names the launched handles and adds them to k; t is left as it was (a rank's trace is added to
 * the run and to the rank's own run). */
void wsl_kern_trace_merge(const struct wsl_kern_trace *t, struct wsl_kernels *k, int32_t pid, double ns_per_tick,
                          struct wsl_kern_gpu_use *use);
/* wsl_kern_trace_merge, then frees t. */
void wsl_kern_trace_end(struct wsl_kern_trace *t, struct wsl_kernels *k, int32_t pid, double ns_per_tick,
                        struct wsl_kern_gpu_use *use);
/* Frees t (NULL is fine). */
void wsl_kern_trace_discard(struct wsl_kern_trace *t);

/* The report's GPU time per launch, for the outputs that show GPU time launch by launch (the
 * timeline, the projection, NVTX ranges), so that they agree with gpu_time_est_ns. Built from a
 * trace's GPU_KERNEL events alone (a wsl_kern_trace fed only those does): per (handle,
 * configuration) timed, its mean with its measures adjusted by wsl_kern_pairs (the same figures
 * as wsl_kern_trace_merge's), per handle and per process the same. `configs` false (every timed
 * launch of an older shim, without its configuration, and so no overhead measured): the outputs
 * keep their own older per-function figures, byte for byte. */
enum wsl_kern_basis {
    WSL_KERN_BASIS_NONE = 0,    /* nothing timed: no estimate */
    WSL_KERN_BASIS_CONFIG,      /* the mean of the launch's configuration */
    WSL_KERN_BASIS_HANDLE,      /* the mean of its function's timed launches */
    WSL_KERN_BASIS_PROCESS,     /* the mean of the process's timed kernels */
};

struct wsl_kern_estimate_row {
    uint64_t handle;
    uint32_t config;            /* 0: the handle's row (all its timed launches) */
    uint64_t timed;             /* timed launches */
    uint64_t mean_ns;           /* their mean GPU time, the measures adjusted by wsl_kern_pairs */
    uint64_t overhead_ticks;    /* the D it was adjusted by (ticks of the trace; 0: none) */
    uint64_t overhead_ns;
};

struct wsl_kern_estimate {
    bool configs;               /* a timed launch named its configuration: the estimate holds */
    double ns_per_tick;
    uint64_t pair_overhead_ns, pair_overhead_ticks; /* the process's (0: not measured) */
    uint64_t kernels_timed, kernel_mean_ns;         /* the process's timed kernels and their mean */
    uint64_t graphs_timed, graph_mean_ns;           /* its timed graph launches (not adjusted) */
    struct wsl_u64_map index;   /* config_key(handle, configuration) -> rows (a hash: compare) */
    struct wsl_kern_estimate_row *rows;
    size_t row_count, row_cap;
};

/* Fills e from t (timed launches only; launches need not have been fed). Free with
 * wsl_kern_estimate_free. */
void wsl_kern_estimate_build(const struct wsl_kern_trace *t, double ns_per_tick, struct wsl_kern_estimate *e);
void wsl_kern_estimate_free(struct wsl_kern_estimate *e);
/* The estimated GPU time of a kernel launch of handle with configuration (wsl_launch_config of its
 * grid and block; 0: unknown): in *ns, and in *based_on the timed launches it rests on. */
enum wsl_kern_basis wsl_kern_estimate_launch(const struct wsl_kern_estimate *e, uint64_t handle, uint32_t config,
                                             uint64_t *ns, uint64_t *based_on);
/* What the estimate adds to the measure of one timed kernel launch of handle and configuration,
 * queued or idle at submit, in ticks of the trace (negative: takes off), as wsl_kern_pairs says. */
int64_t wsl_kern_estimate_adjust_ticks(const struct wsl_kern_estimate *e, uint64_t handle, uint32_t config, bool idle);
/* The same, for a GPU_KERNEL event (its handle, configuration and flags; graphs: 0). */
int64_t wsl_kern_estimate_event_adjust(const struct wsl_kern_estimate *e, const struct wsl_event *ev);
/* A duration in ticks with an adjustment applied, never below 0. */
static inline uint64_t wsl_kern_adjusted(uint64_t ticks, int64_t adjust)
{
    if (adjust >= 0)
        return ticks + (uint64_t)adjust;
    return ticks > (uint64_t)-adjust ? ticks - (uint64_t)-adjust : 0;
}

void wsl_kern_finish(struct wsl_kernels *k);
void wsl_kern_free(struct wsl_kernels *k);

/* The framework whose kernels most launches ran, from kernel names: "pytorch"
 * (at::native, ATen, cuBLAS/cuDNN under it), "jax" (XLA fusions), "cupy",
 * "triton" (alone), or NULL when none can be told. */
const char *wsl_kern_framework(const struct wsl_kernels *k);

/* What to do about a GPU starved between launches, for that framework (NULL: any): one
 * sentence or three, shared by launch_bound and dispatch_bound. */
const char *wsl_kern_fewer_launches_advice(const char *framework);

/* The display form of a kernel name: C++ names ("_Z...") demangled, others
 * (and names that fail to demangle) as they are. A new string. */
char *wsl_kern_demangle(const char *mangled);

#endif /* WSLSHIM_KERNEL_ANALYSIS_H */
