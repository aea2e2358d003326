/*
 * straggler: one rank of a distributed run is slower, and every other rank
 * waits for it inside its collectives.
 *   needs: run->dist (distributed.c: per-rank NCCL kernel time, I/O, compute, steps)
 *   fires: the other ranks' median collective time exceeds the fastest-collective
 *          rank's by at least WSL_STRAGGLER_MIN_SHARE of the ranks' median wall time
 *   time lost: the mean wait of the other ranks (the run goes at the straggler's pace)
 */
#include <stdio.h>

#include "analysis.h"
#include "rules.h"
#include "util.h"

static const char *cause_text(const char *cause)
{
    if (cause[0] == 'f')
        return "it spends longer in file I/O than the others";
    if (cause[0] == 'g')
        return "its GPU compute takes longer than the others'";
    return "its time goes outside CUDA and file I/O (data loading, Python, CPU work, sleeping)";
}

static bool evaluate(const struct wsl_run *run, struct wsl_finding *f)
{
    const struct wsl_dist *d = &run->dist;
    if (!d->active || !d->have_straggler)
        return false;
    const struct wsl_straggler *st = &d->straggler;
    const struct wsl_rank *r = &d->ranks[st->index];
    f->time_lost_ns = st->wait_mean_ns;
    f->summary = xasprintf("rank %d (pid %d) is the straggler: the other %zu ranks wait for it in NCCL collectives, "
                           "%.3f s each on average (%.3f s in all); %s",
                           (int)st->rank, (int)r->pid, d->count - 1, (double)st->wait_mean_ns / 1e9,
                           (double)st->wait_total_ns / 1e9, cause_text(st->cause));
    if (st->cause[0] == 'f')
        f->advice = xasprintf("Make rank %d's input as fast as the others': more DataLoader workers "
                              "(num_workers), pinned memory and prefetching, data on a local Linux filesystem; "
                              "check that its shard of the data is not larger.", (int)st->rank);
    else if (st->cause[0] == 'g')
        f->advice = xasprintf("Balance the work: rank %d computes more (larger batch or sequence shard, uneven "
                              "sharding) or drives a slower or shared GPU; check its GPU (nvidia-smi) and the "
                              "split of the data.", (int)st->rank);
    else
        f->advice = xasprintf("Find what rank %d does on the CPU between steps: its data loading (more "
                              "DataLoader workers), per-rank logging or checkpointing, CPU preprocessing; "
                              "profile it alone (py-spy) or time its loop with NVTX ranges.", (int)st->rank);
    wsl_evidence_u64(f, "straggler_rank", (uint64_t)(st->rank < 0 ? 0 : st->rank));
    wsl_evidence_u64(f, "straggler_pid", (uint64_t)r->pid);
    wsl_evidence_u64(f, "wait_mean_ns", st->wait_mean_ns);
    wsl_evidence_u64(f, "wait_median_ns", st->wait_median_ns);
    wsl_evidence_u64(f, "wait_total_ns", st->wait_total_ns);
    wsl_evidence_u64(f, "straggler_collective_ns", r->collective_ns);
    wsl_evidence_string(f, "cause", st->cause);
    wsl_evidence_number(f, "io_excess_ns", (double)st->io_excess_ns);
    wsl_evidence_number(f, "compute_excess_ns", (double)st->compute_excess_ns);
    if (st->have_step_excess)
        wsl_evidence_number(f, "step_excess_ns", (double)st->step_excess_ns);
    for (size_t i = 0; i < d->count; i++) {
        if (i == st->index)
            continue;
        char line[160];
        snprintf(line, sizeof line, "rank %d waits %.3f s in collectives (%.3f s in all)", (int)d->ranks[i].rank,
                 (double)d->ranks[i].wait_ns / 1e9, (double)d->ranks[i].collective_ns / 1e9);
        if (i < 16)
            wsl_evidence_list_add(f, "waiting_ranks", line);
    }
    return true;
}

const struct wsl_rule wsl_rule_straggler = {
    .id = "straggler",
    .order = 100,
    .needs = "per-rank GPU time of NCCL kernels (sampled, extrapolated), I/O, compute and NVTX steps",
    .how_computed = "A NCCL kernel lasts until every rank has joined it, so its GPU time includes the wait for "
                    "the slowest rank. The rank with the least time in NCCL kernels is the one the others wait "
                    "for; each other rank's wait is its collective time less that rank's. It is reported when "
                    "the other ranks' median wait is at least 5% of the ranks' median wall time. The cause "
                    "compares the straggler's data-file I/O time and GPU compute time with the other ranks' "
                    "median: the one that explains at least half of the wait, else host work.",
    .fix = "even out the slow rank's work: its data loading (more workers, local copies), its batch or its GPU",
    .evaluate = evaluate,
};
