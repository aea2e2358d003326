/*
 * The run model: every trace of one run read into per-process facts and
 * per-API statistics merged on one clock (CLOCK_MONOTONIC ns). The report
 * writers (text, JSON) only print what is here.
 *
 * model/ includes read/ and util/ only: the findings kept here are made by
 * rules/, which the run model never calls (rules/pipeline.c calls it).
 */
#ifndef WSLSHIM_ANALYSIS_H
#define WSLSHIM_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host_analysis.h"
#include "distributed.h"
#include "io_analysis.h"
#include "kernel_analysis.h"
#include "memory_analysis.h"
#include "progress.h"
#include "nvtx_analysis.h"
#include "phase_analysis.h"
#include "findings.h"
#include "stats.h"
#include "u64_map.h"

struct wsl_projection; /* project/projection.h */

struct wsl_variant {
    char *symbol;               /* e.g. "cuLaunchKernel_ptsz" */
    uint64_t calls;
};

struct wsl_api_stats {          /* one API base name, all traces */
    char *name;                 /* e.g. "cuLaunchKernel" */
    uint16_t category;          /* enum wsl_category of the first entry seen */
    uint64_t errors;            /* calls with result != 0 */
    struct wsl_hist ns;         /* host time per call, ns: count = calls, sum = total */
    struct wsl_variant *variants;
    size_t variant_count;
};

struct wsl_gpu {
    char *name;
    uint64_t total_mem;
    int32_t cc_major, cc_minor;
};

struct wsl_process {
    char *trace_path;
    int32_t pid, ppid;
    uint32_t flags;             /* WSL_PROC_* */
    uint32_t clock_kind;
    char *host, *exe, *kernel_release;
    char **argv;
    uint32_t argc;
    bool have_driver;
    int32_t driver_version, init_result;
    char *libcuda_path;
    struct wsl_gpu *gpus;
    uint32_t gpu_count;
    uint64_t events, dropped;
    uint64_t paths_dropped;     /* strings the shim had no room for (the largest of END's and PATHS_DROPPED's, 1.12):
                                   calls without their path or name */
    bool paths_dropped_said;    /* the warning of unnamed file calls said so already */
    uint32_t threads;           /* from the END chunk; 0 when absent */
    bool truncated;
    bool clock_rate_known;
    struct wsl_clock_map clock; /* the trace's final tick -> ns fit (for a second pass over it) */
    uint64_t start_ns, end_ns;  /* CLOCK_MONOTONIC */
    struct wsl_io_summary io;   /* this process's file I/O (times in ns) */
    struct wsl_mem_summary mem; /* this process's device, managed and page-locked memory */
    struct wsl_kern_gpu_use gpu;/* timed launches and estimated GPU time */
    struct wsl_kern_estimate gpu_estimate; /* the estimate per launch, for a second pass over the trace */
    bool have_gpu_memory;       /* a GPU_MEMORY chunk: free/total when the shim first saw a context */
    uint64_t gpu_free_at_start, gpu_total;
    struct wsl_host_summary host_cuda; /* this process's waits for the GPU and copies */
    int32_t gpu_device;         /* that context's device ordinal; -1 without a GPU_MEMORY chunk */
    char *rank_env;             /* the last RANK chunk: NUL-terminated KEY=VALUE entries; NULL: none */
    uint32_t rank_env_size;
    struct wsl_phases phases;   /* start-up, warm-up, steady state, teardown (phase_analysis.h) */
    bool compiler;              /* a compiler or compile worker (ptxas, gcc, Inductor's workers...) */
    bool emulated;              /* an EMULATION chunk: it ran under WSLSHIM_EMULATE */
    char *emu_spec;             /* its SPEC (NULL: not emulated) */
    uint64_t emu_ns[WSL_EMU_FAMILIES]; /* added ns per call, by enum wsl_emu_family */
    uint64_t emu_fs_meta_ns, emu_fs_read_bps, emu_fs_write_bps; /* file-system emulation (0: none) */
    /* A rank's trace read into a run of its own in the same pass (the distributed analysis's,
     * taken and freed by it), or NULL */
    struct wsl_run *rank_solo;
};

/* The run's phases: those of its main GPU process (most launches), the steady
 * state as the span of every GPU process's, and the compilers it ran. */
struct wsl_run_phases {
    bool known;                 /* a process submitted GPU work */
    int32_t main_pid;
    struct wsl_phases main;     /* the main GPU process's */
    uint64_t steady_start_ns, steady_end_ns; /* every GPU process's steady state, together */
    uint64_t compile_processes, compile_process_ns; /* compiler processes and their summed lifetimes */
    uint64_t compile_in_warmup;  /* of them, started before the main process's steady state */
    /* The findings' time lost within the steady state, from a second reading of the traces
     * restricted to it (wsl_run_finish); steady_known: it was done. */
    bool steady_known;
    uint64_t steady_wall_ns;
};

/* The first process of the run that ran under WSLSHIM_EMULATE, or NULL;
 * *count: how many did (may be NULL). */
const struct wsl_process *wsl_run_emulated(const struct wsl_run *run, size_t *count);

/* The value of key in p's RANK chunk, or NULL. */
const char *wsl_process_rank_var(const struct wsl_process *p, const char *key);

struct wsl_run {
    struct wsl_process *procs;  /* sorted by start time after wsl_run_finish */
    size_t proc_count;
    struct wsl_api_stats *apis; /* sorted by total time, largest first, after wsl_run_finish;
                                   the CUDA driver API and the libc file calls (see wsl_is_io_category) */
    size_t api_count;
    struct wsl_io io;           /* file I/O of every process */
    struct wsl_mem_summary mem; /* memory: counts summed over processes, peaks the largest one's
                                   (with its time and device size), after wsl_run_finish */
    struct wsl_kernels kernels; /* kernel launches per name, all processes */
    struct wsl_nvtx nvtx;       /* NVTX ranges, all processes, after wsl_run_finish */
    struct wsl_host_summary host_cuda; /* waits for the GPU and copies, summed over processes */
    /* GPU busy time, filled by the GPU timing analysis when the traces hold
     * GPU_KERNEL events; gpu_busy_known false: not measured */
    bool gpu_busy_known;
    uint64_t gpu_busy_ns;
    struct wsl_finding *findings; /* bottlenecks, largest time lost first, after wsl_run_finish */
    size_t finding_count;
    uint64_t start_ns, end_ns, wall_ns;
    char **warnings;            /* "<trace>: <what>", in reading order */
    size_t warning_count;
    const struct wsl_projection *projection; /* set by the caller for --project (not owned), or NULL */
    struct wsl_progress *progress; /* set by the caller: reading progress on stderr (progress.h), or NULL */
    bool solo;                  /* set by the caller: one rank's own run, no distributed analysis */
    struct wsl_dist dist;       /* ranks, collectives, straggler (distributed.h), after wsl_run_finish */
    struct wsl_run_phases phases; /* after wsl_run_finish */
    /* Set on a run that reads only a window of time (the steady state's second reading): events
     * outside [window_t0, window_t1] of the trace being added (its ticks) are left out, and its
     * process is clipped to [window_start_ns, window_end_ns]. */
    bool windowed;
    uint64_t window_t0, window_t1, window_start_ns, window_end_ns;
    /* name (its wsl_u64_map_string_key) -> index into apis; emptied by wsl_run_model_finish */
    struct wsl_u64_map api_index;
    /* The recordings of the run's traces (trace_reader.h, "the store"): the readings after the
     * first (NVTX step windows, the steady state, a rank's own run, the timeline of --html,
     * --sqlite, --project) replay them. Set record before the first trace and the run makes its
     * own (a recording costs about 10% of a reading that no later pass replays: wslshim-report
     * records when it reads several traces or its output reads them again); a run made inside the
     * analysis (a rank's, the steady state's) is given its parent's (store_owned false). */
    bool record;
    struct wsl_trace_store *store;
    bool store_owned;
    /* Set on a run made inside the analysis whose own report is never written (a rank's own run,
     * the steady state's reading, --chrome's phases): the figures only reports show are not
     * computed (the NVTX step's process-wide figures, a pass over the traces). */
    bool nested;
    /* Set on the steady state's reading (rules/pipeline.c): each trace it reads whole is also
     * counted into that NVTX analysis's pending step windows (wsl_nvtx_window_pending), which
     * spares wsl_nvtx_step_figures a reading of its own. Not owned. */
    struct wsl_nvtx *count_windows_of;
    /* Set by a test: the NVTX step's figures are not counted on the first reading (a reading of
     * each trace counts them instead, or the steady state's). */
    bool nvtx_by_reading;
    /* Set on the steady state's reading (rules/pipeline.c): ranks' own runs that read along (a rank
     * whose steady state is the run's). A trace at a rider's path is read into the rider's run too,
     * its events analysed once (the trace's state serves both, as the first pass serves a rank's own
     * run); seen and fed count the rider's traces read, and those read into its run. Not owned. */
    struct wsl_rider *riders;
    size_t rider_count;
};

struct wsl_rider {
    const char *path;
    struct wsl_run *run;        /* windowed as the reading it rides on */
    unsigned *seen, *fed;       /* shared by a run's riders (one per trace) */
};

/* Readings of a trace made so far in this process (wsl_run_read_trace), for tests. */
extern unsigned long wsl_trace_readings;

/* Mean host time per call, rounded to the nearest ns. */
static inline uint64_t wsl_api_mean_ns(const struct wsl_api_stats *a)
{
    if (!a->ns.count)
        return 0;
    uint64_t q = a->ns.sum / a->ns.count, r = a->ns.sum % a->ns.count;
    return q + (r >= a->ns.count - r);
}

void wsl_run_init(struct wsl_run *run);

/* Reads one trace into the run. Returns 0, or -1 with the reason in err
 * (the trace is then left out, but API names it defined may remain). A trace
 * cut short is kept with a warning. */
int wsl_run_add_trace(struct wsl_run *run, const char *path, char *err, size_t errlen);

/* The same; *usable says whether the trace's PROCESS chunk was read (what wsl_reader_probe
 * checks): a trace left out without it is no trace at all, one with it was cut or damaged later. */
int wsl_run_read_trace(struct wsl_run *run, const char *path, bool *usable, char *err, size_t errlen);

/* Sorts and computes the run-wide figures and the phases; call once after the last trace.
 * wsl_run_finish (rules.h) does this, then the ranks, the rules and the steady state's findings:
 * readers of traces call that one. */
void wsl_run_model_finish(struct wsl_run *run);

void wsl_run_free(struct wsl_run *run);

const char *wsl_category_name(unsigned category);

/* The program the user ran: the first process's last exec'd image (what a wrapper script such as
 * a pyenv shim ran), unless that is a shell; then the first process that is not a shell. */
const struct wsl_process *wsl_run_program(const struct wsl_run *run);

/* The gaps between launches of every process's busiest launching thread, summed (phase_analysis.h). */
void wsl_run_dispatch_gaps(const struct wsl_run *run, struct wsl_dispatch_gaps *out);

#endif /* WSLSHIM_ANALYSIS_H */
