/*
 * Synthetic traces of a data-parallel training run: one trace per rank, with
 * NCCL all-reduce and compute kernels timed on the GPU (GPU_KERNEL events),
 * data reads, synchronizations, optional NVTX steps and RANK chunks.
 *
 * The ranks are simulated together, step by step: each rank loads its data
 * (load_ns, plus jitter, plus delay_ns on the straggler, spent in file reads
 * when delay_in_io), launches kernels_per_step compute kernels (compute_ns in
 * all on its GPU), then an all-reduce. The all-reduce ends comm_ns after the
 * last rank's compute ended, so each rank's NCCL kernel lasts comm_ns plus its
 * wait for the slowest rank. Over a run each rank waits exactly
 * steps x delay_ns more than the straggler (without jitter).
 */
#ifndef WSLSHIM_DDP_SCENARIOS_H
#define WSLSHIM_DDP_SCENARIOS_H

#include <stdbool.h>
#include <stdint.h>

struct ddp_plan {
    unsigned ranks, steps;
    unsigned kernels_per_step;  /* compute kernels per step */
    uint64_t compute_ns;        /* GPU compute per step and rank */
    uint64_t comm_ns;           /* all-reduce once every rank joined */
    uint64_t load_ns;           /* data loading per step (two file reads) */
    int straggler;              /* -1: none */
    uint64_t delay_ns;          /* the straggler's extra per step */
    bool delay_in_io;           /* the extra is spent in file reads (else off the record: host work) */
    uint64_t jitter_ns;         /* each rank's load time varies by up to this, per step */
    bool nvtx;                  /* a "train_step" range around each step */
    bool rank_env;              /* RANK chunks (else the ranks are known by process order only) */
    unsigned timing_every;      /* time every Nth launch on the GPU (1: all) */
    uint64_t seed;
    uint64_t startup_ns;        /* before the first step (a start-up the steady state leaves out) */
    int warmup_rank;            /* -1: none; this rank's first warmup_steps steps launch another */
    unsigned warmup_steps;      /* kernel ("warmup_kernel"): its steady state starts after them */
};

/* Default figures: 4 ranks, 50 steps, 20 ms compute, 5 ms all-reduce, 2 ms loading, every launch timed. */
struct ddp_plan ddp_plan_default(void);

/* Writes rank r's trace (pid 5000 + r, started in rank order). */
void ddp_write_rank(const char *path, const struct ddp_plan *p, unsigned r);

#endif /* WSLSHIM_DDP_SCENARIOS_H */
