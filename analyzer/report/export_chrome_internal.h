/* export_chrome_internal.h: shared by the files of export_chrome.c's split (private to them). */
#ifndef EXPORT_CHROME_INTERNAL_H
#define EXPORT_CHROME_INTERNAL_H

#include "export_chrome.h"
#include "output_file.h"
#include "analysis.h"
#include "rules.h"
#include "io_analysis.h"
#include "json_writer.h"
#include "kernel_analysis.h"
#include "memory_analysis.h"
#include "trace_reader.h"
#include "u64_map.h"
#include "util.h"

#define NAME_BYTES_MAX (256u << 20)     /* kernel names, and paths, kept per trace */
#define MEM_WINDOW 65536u               /* memory events held to restore time order */
#define GPU_TID_BASE 1000000000u        /* stream tracks: tids no Linux thread has */
#define GPU_SORT_BASE 1000000           /* stream tracks after the threads */
#define IO_BINS_MAX (10u << 20)         /* 100 ms bins: about 12 days */
#define LABEL_MAX 120                   /* bytes of command line in a process name */
#define EST_TID_BASE 1500000000u        /* estimated-kernel tracks, one per stream */
#define EST_SORT_BASE 2000000           /* after the measured stream tracks */
#define PHASE_TID 999999999u            /* the phases track of a process */
#define TIMED_LAUNCHES_MAX (1u << 21)   /* timed launches remembered per trace (a map of 64 MiB at most) */
#define KERNEL_STATS_MAX 65536u         /* functions with their own mean GPU time, per trace */
#define NVTX_DEPTH_MAX 128u             /* open push ranges shown per thread */
#define NVTX_STARTS_MAX (1u << 20)      /* start/end ranges open at once, per trace */

/* ---- id -> string tables (kernel names, paths) --------------------------------------------- */

struct name_table {
    struct wsl_u64_map ids;     /* id -> offset + 1 into arena */
    char *arena;
    size_t used, cap;
    uint64_t dropped;           /* entries past NAME_BYTES_MAX */
};

/* ---- one trace ------------------------------------------------------------------------------- */

struct trace_api {
    bool defined;
    uint16_t category;
    uint8_t mem;                /* enum wsl_mem_op */
    bool sampled;               /* a file call whose timing was sampled (WSL_API_IO_SAMPLED) */
    char *name;                 /* base name */
};

struct chrome_trace {
    const char *path;
    bool have_process, truncated;
    int32_t pid, ppid;
    int32_t rank;               /* from the RANK chunk (RANK, else OMPI/PMI/SLURM); -1: none */
    uint64_t start_ns, end_ns;  /* CLOCK_MONOTONIC */
    char *label;                /* the command line, shortened */
    struct wsl_clock_map clock; /* the final fit */
    struct trace_api api[WSL_MAX_API_IDS];
    uint32_t close_id;          /* the sampled close's id (a fold event's close), 0: none */
    uint64_t events;            /* calls and GPU kernels */
    struct wsl_u64_map func_name;   /* handle -> name id (FUNC_NAME with a name) */
    struct wsl_u64_map func_kernel; /* function -> kernel handle (cuKernelGetFunction) */
    struct name_table strings;      /* name id -> kernel name (PATHS entries that are not paths) */
    struct name_table kernels;      /* handle -> demangled name, built after the scan */
    struct name_table nvtx_names;   /* NVTX name and domain ids -> text (without the mark) */
    /* Timed GPU work, for placing the launches that were not timed (estimates): */
    struct wsl_u64_map timed;       /* launch t_start tick -> launching tid + 1 */
    uint64_t timed_full_tick;       /* the map was full from this launch on: later launches not estimated */
    bool timed_full;
    struct wsl_u64_map kstat;       /* function (or graph exec) -> index + 1 into k_sum, k_n */
    uint64_t *k_sum, *k_n;
    size_t k_count;
    uint64_t gpu_sum, gpu_n;        /* every timed kernel: the process mean */
    /* The report's estimate per launch (kernel_analysis.h), from the GPU_KERNEL events: with
     * configurations (est.configs), estimated slices last their configuration's corrected mean and
     * timed queued ones are drawn less the pair overhead; without, k_sum/k_n as before. */
    struct wsl_kern_trace *kern;
    struct wsl_kern_estimate est;
    bool have_phases;
    struct wsl_phases phases;       /* from the run model (the report's phases) */
};

/* ---- output ---------------------------------------------------------------------------------- */

struct exporter {
    FILE *out;
    const struct wsl_chrome_options *opt;
    struct wsl_chrome_result *res;
    uint64_t run_start_ns;
    uint64_t from_ns, to_ns;    /* the window; to_ns UINT64_MAX when open */
    bool first;                 /* no event written yet (no comma) */
    uint64_t next_flow_id;
};

/* ---- the per-trace write state ---- */

struct mem_ev {
    uint64_t t, seq, ptr, bytes;
    int32_t result;
    uint8_t op;
};

struct write_state {
    struct chrome_trace *t;
    struct wsl_u64_map threads;     /* tid + 1 -> 1: metadata written */
    struct wsl_u64_map streams;     /* stream ^ STREAM_KEY -> track index + 1 */
    uint32_t stream_count;
    uint64_t *stream_end;           /* per stream track: where its last timed kernel was drawn to end (ticks) */
    size_t stream_end_cap;
    uint32_t cur_tid;               /* the thread whose events are being written */
    struct name_table paths;
    /* memory counter */
    struct mem_ev *heap;
    size_t heap_n, heap_cap;
    uint64_t seq;
    struct wsl_u64_map live;        /* device pointer -> bytes */
    uint64_t live_bytes;
    bool mem_before_window;         /* a value exists from before the window */
    bool mem_window_started;
    /* I/O counter */
    uint64_t *io_bins;
    size_t io_bin_count;
    /* NVTX push ranges open per thread (B written, E due) and start/end ranges open */
    struct wsl_u64_map nvtx_threads;    /* tid + 1 -> index + 1 into nvtx */
    struct nvtx_stack *nvtx;
    size_t nvtx_count;
    struct wsl_u64_map nvtx_starts;     /* range id -> name id + 1 (b written) */
    /* estimated kernels: tracks and where each stream's estimated work ends */
    struct wsl_u64_map est_streams;     /* stream ^ STREAM_KEY -> track index + 1 */
    uint32_t est_stream_count;
    struct wsl_u64_map est_end;         /* stream ^ STREAM_KEY -> end of its last estimate (ns, rel) + 1 */
};

struct nvtx_stack {
    uint32_t tid;
    uint32_t depth;                     /* frames held (at most NVTX_DEPTH_MAX) */
    uint64_t over;                      /* pushes past NVTX_DEPTH_MAX still open (not shown) */
    uint32_t domain[NVTX_DEPTH_MAX];
    bool shown[NVTX_DEPTH_MAX];         /* its B was written (it started in the window) */
};

#define STREAM_KEY 0x8000000000000000ull /* a stream handle as a non-zero map key (stream 0 included) */

void chrome_names_put(struct name_table *t, uint64_t id, const char *bytes, size_t n);
const char *chrome_names_get(const struct name_table *t, uint64_t id);
void chrome_names_free(struct name_table *t);
void chrome_trace_free(struct chrome_trace *t);
const char *chrome_kernel_name(const struct chrome_trace *t, uint64_t handle);
void chrome_add_result_warning(struct wsl_chrome_result *res, char *w);
int chrome_scan_trace(struct chrome_trace *t, const struct wsl_chrome_options *opt, struct wsl_chrome_result *res,
                      char *err, size_t errlen);
int chrome_write_trace(struct exporter *x, struct chrome_trace *t, int sort_index, char *err, size_t errlen);
int chrome_count_in_window(const struct exporter *x, struct chrome_trace *t, uint64_t *count, char *err,
                           size_t errlen);

#endif
