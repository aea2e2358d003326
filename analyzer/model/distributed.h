/*
 * Distributed runs (docs/distributed.md): the ranks of a data-parallel job
 * side by side, their time in NCCL collectives, and the straggler.
 *
 * Ranks come from each trace's RANK chunk (RANK, else OMPI_COMM_WORLD_RANK,
 * PMI_RANK, SLURM_PROCID); processes of one rank (a rank and its forked
 * DataLoader workers inherit the same variables) are one rank. Without any
 * rank variable, the processes that brought up the CUDA driver (not forked
 * from another such process) are the ranks in the order they started, and
 * the run is distributed only when some of them ran NCCL kernels.
 *
 * Per rank the figures come from reading its traces once more into a run of
 * their own (one rank at a time: memory stays that of one rank): GPU time of
 * NCCL kernels (kernel names starting "ncclKernel_" or "ncclDevKernel_",
 * sampled GPU times extrapolated like every kernel's), compute (the rest of
 * the GPU time), launches, syncs, data-file I/O, the NVTX step and the
 * bottlenecks found in that rank alone.
 *
 * A NCCL kernel runs until every peer has joined, so its duration includes
 * the wait for the slowest rank: the rank with the least collective time is
 * the one the others wait for. Each other rank's wait is its collective time
 * less the straggler's.
 */
#ifndef WSLSHIM_DISTRIBUTED_H
#define WSLSHIM_DISTRIBUTED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "findings.h"

struct wsl_run;

/* Collective kinds, from the NCCL kernel name. */
enum wsl_coll_kind {
    WSL_COLL_ALL_REDUCE,
    WSL_COLL_ALL_GATHER,
    WSL_COLL_REDUCE_SCATTER,
    WSL_COLL_BROADCAST,
    WSL_COLL_REDUCE,
    WSL_COLL_SEND_RECV,
    WSL_COLL_ALL_TO_ALL,
    WSL_COLL_OTHER,             /* a NCCL kernel of another or a generic kind */
    WSL_COLL_KINDS
};

/* The kind of a NCCL kernel's (demangled or raw) name, or -1 when it is not one. */
int wsl_coll_kind_of(const char *kernel_name);
/* "all_reduce", "all_gather", ... */
const char *wsl_coll_kind_name(int kind);

/* A straggler is reported when the other ranks' median wait in collectives is
 * at least this share of the ranks' median wall time. */
#define WSL_STRAGGLER_MIN_SHARE 0.05

struct wsl_rank_finding {
    const char *id;             /* a rule id (static) */
    enum wsl_severity severity;
    uint64_t time_lost_ns;
};

struct wsl_rank {
    int32_t rank, local_rank;   /* -1: unknown */
    bool rank_from_env;         /* false: process order */
    int32_t pid;                /* the rank's main process */
    uint32_t processes;         /* it and its children (DataLoader workers) */
    char *host;
    int32_t gpu;                /* device ordinal the process drove (GPU_MEMORY), -1 unknown */
    char *gpu_name, *gpu_pci_bus_id, *cuda_visible_devices; /* NULL: unknown */
    uint64_t wall_ns;
    uint64_t gpu_ns;            /* estimated GPU time of all its kernels and graphs */
    uint64_t collective_ns;     /* of it, in NCCL kernels */
    uint64_t compute_ns;        /* the rest */
    uint64_t collective_launches, collectives_timed;
    uint64_t coll_ns[WSL_COLL_KINDS], coll_launches[WSL_COLL_KINDS];
    uint64_t launches;          /* kernel and graph launches */
    uint64_t kernels_timed;
    uint64_t syncs, sync_ns;
    uint64_t io_reads, io_bytes, io_read_ns, io_ns; /* data files */
    bool have_step;
    char *step_name;
    uint64_t steps, step_mean_ns;
    uint64_t wait_ns;           /* collective time above the straggler's (0 for it) */
    struct wsl_rank_finding *findings; /* this rank's bottlenecks, largest first */
    size_t finding_count;
    /* The rank's own run between wsl_dist_analyze and wsl_rank_take_findings: finished but for its
     * steady state's reading, which the run's reading may make for it (own_steady_done). Owned. */
    struct wsl_run *own;
    bool own_steady_done;
};

struct wsl_straggler {
    size_t index;               /* into ranks */
    int32_t rank;
    uint64_t wait_mean_ns;      /* what each other rank waited, on average */
    uint64_t wait_median_ns;
    uint64_t wait_total_ns;     /* summed over the other ranks */
    const char *cause;          /* "file_io", "gpu_compute" or "host" */
    int64_t io_excess_ns, compute_excess_ns, step_excess_ns; /* against the other ranks' median */
    bool have_step_excess;
};

struct wsl_dist {
    bool active;                /* at least two ranks */
    bool ranks_from_env;
    uint32_t world_size;        /* WORLD_SIZE (or the like) when set, else the ranks found */
    struct wsl_rank *ranks;     /* by rank */
    size_t count;
    bool have_straggler;
    struct wsl_straggler straggler;
    double imbalance;           /* max/min compute per rank; < 0 unknown */
    bool collectives_seen;      /* some rank ran NCCL kernels */
};

/* Finds the ranks of a finished run and their figures; run->dist. Each rank's own run (taken
 * from the run's first pass, or read again where it could not be) is given to finish_rank and kept
 * in its wsl_rank's own: the analysis pipeline (rules/pipeline.c) finishes it but for its steady
 * state's findings, made later (on the run's steady-state reading where the two states agree),
 * then calls wsl_rank_take_findings. Called after wsl_run_model_finish and before the rules. */
void wsl_dist_analyze(struct wsl_run *run, void (*finish_rank)(struct wsl_run *));
/* The rank's findings from its own run, which is freed (own NULL). */
void wsl_rank_take_findings(struct wsl_rank *rk);
void wsl_dist_free(struct wsl_dist *d);

#endif /* WSLSHIM_DISTRIBUTED_H */
