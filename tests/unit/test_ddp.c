/* Distributed runs: ranks from RANK chunks or process order, collectives,
 * the straggler and its wait, balanced runs. Scenarios: ddp_scenarios.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "kernel_analysis.h"
#include "rules.h"
#include "ddp_scenarios.h"
#include "trace_synth.h"
#include "test_findings.h"
#include "unit_test.h"

/* Reads the plan's ranks into run, finished (written first where write; record: as wslshim-report
 * reads several traces, later readings replaying the store); *readings, where not NULL: the traces
 * read, the first pass included. */
static int read_plan_as(struct wsl_run *run, const struct ddp_plan *p, const char *tag, bool write, bool record,
                        unsigned long *readings)
{
    wsl_run_init(run);
    run->record = record;
    unsigned long before = wsl_trace_readings;
    for (unsigned r = 0; r < p->ranks; r++) {
        char name[64], path[512], err[256];
        snprintf(name, sizeof name, "%s-rank%u.trace.zst", tag, r);
        test_path(path, sizeof path, name);
        if (write)
            ddp_write_rank(path, p, r);
        CHECKF(wsl_run_add_trace(run, path, err, sizeof err) == 0, "%s", err);
    }
    wsl_run_finish(run);
    if (readings)
        *readings = wsl_trace_readings - before;
    return 0;
}

/* Writes the plan's ranks and reads them into run (finished). */
static int read_plan(struct wsl_run *run, const struct ddp_plan *p, const char *tag)
{
    return read_plan_as(run, p, tag, true, false, NULL);
}

static double rel_err(uint64_t got, uint64_t want) { return ((double)got - (double)want) / (double)want; }

int test_ddp_straggler_host(void)
{
    wsl_kern_pairs = WSL_KERN_PAIRS_NONE; /* the synthetic measures are the kernels' own times */
    struct ddp_plan p = ddp_plan_default();
    p.ranks = 4;
    p.straggler = 2;
    p.delay_ns = 15000000; /* 15 ms a step off the record */
    p.rank_env = true;
    p.timing_every = 1;
    struct wsl_run run;
    if (read_plan(&run, &p, "host"))
        return 1;
    const struct wsl_dist *d = &run.dist;
    CHECK(d->active && d->ranks_from_env && d->count == 4 && d->world_size == 4);
    for (unsigned r = 0; r < 4; r++) {
        const struct wsl_rank *rk = &d->ranks[r];
        CHECK(rk->rank == (int32_t)r && rk->pid == 5000 + (int32_t)r && rk->local_rank == (int32_t)r);
        CHECK(rk->gpu == (int32_t)r && rk->gpu_pci_bus_id && rk->gpu_name && !strcmp(rk->gpu_name, "NVIDIA H200"));
        CHECK(rk->collective_launches == p.steps && rk->coll_launches[WSL_COLL_ALL_REDUCE] == p.steps);
        CHECK(rk->launches == p.steps * (p.kernels_per_step + 1));
        CHECK(rk->syncs == p.steps);
        CHECK(rk->io_reads == 2 * p.steps);
        CHECKF(llabs((long long)rk->compute_ns - (long long)(p.steps * p.compute_ns)) < 1000, "compute %llu",
               (unsigned long long)rk->compute_ns);
    }
    CHECK(d->have_straggler && d->straggler.rank == 2 && d->straggler.index == 2);
    uint64_t planted = (uint64_t)p.steps * p.delay_ns;
    CHECKF(rel_err(d->straggler.wait_mean_ns, planted) < 0.10 && rel_err(d->straggler.wait_mean_ns, planted) > -0.10,
           "wait %llu planted %llu", (unsigned long long)d->straggler.wait_mean_ns, (unsigned long long)planted);
    CHECK(d->straggler.wait_total_ns >= 3 * planted * 9 / 10);
    CHECK(!strcmp(d->straggler.cause, "host"));
    CHECK(d->ranks[2].wait_ns == 0 && d->ranks[0].wait_ns > planted / 2);
    /* the straggler's collectives are the pure all-reduce time */
    CHECK(rel_err(d->ranks[2].collective_ns, (uint64_t)p.steps * p.comm_ns) < 0.01);
    CHECK(d->imbalance > 0.99 && d->imbalance < 1.01);
    const struct wsl_finding *f = finding(&run, "straggler");
    CHECK(f && f->time_lost_ns == d->straggler.wait_mean_ns && strstr(f->summary, "rank 2"));
    wsl_run_free(&run);
    return 0;
}

int test_ddp_straggler_io_steps(void)
{
    struct ddp_plan p = ddp_plan_default();
    p.ranks = 3;
    p.straggler = 1;
    p.delay_ns = 8000000;
    p.delay_in_io = true;
    p.nvtx = true;
    p.rank_env = true;
    p.timing_every = 4; /* sampled (9 launches a step: every launch position gets timed) */
    p.jitter_ns = 200000;
    struct wsl_run run;
    if (read_plan(&run, &p, "io"))
        return 1;
    const struct wsl_dist *d = &run.dist;
    CHECK(d->active && d->count == 3 && d->have_straggler && d->straggler.rank == 1);
    uint64_t planted = (uint64_t)p.steps * p.delay_ns;
    double e = rel_err(d->straggler.wait_mean_ns, planted);
    CHECKF(e < 0.10 && e > -0.10, "wait %llu planted %llu", (unsigned long long)d->straggler.wait_mean_ns,
           (unsigned long long)planted);
    CHECK(!strcmp(d->straggler.cause, "file_io"));
    CHECK(d->straggler.io_excess_ns > (int64_t)(planted * 9 / 10));
    for (unsigned r = 0; r < 3; r++)
        CHECK(d->ranks[r].have_step && d->ranks[r].steps == p.steps && !strcmp(d->ranks[r].step_name, "train_step"));
    CHECK(d->straggler.have_step_excess);
    wsl_run_free(&run);
    return 0;
}

int test_ddp_balanced(void)
{
    struct ddp_plan p = ddp_plan_default();
    p.ranks = 4;
    p.jitter_ns = 400000; /* 0.4 ms of noise on a ~27 ms step */
    p.rank_env = true;
    struct wsl_run run;
    if (read_plan(&run, &p, "balanced"))
        return 1;
    const struct wsl_dist *d = &run.dist;
    CHECK(d->active && d->count == 4 && d->collectives_seen);
    CHECK(!d->have_straggler);
    CHECK(!finding(&run, "straggler"));
    CHECK(d->imbalance >= 1.0 && d->imbalance < 1.01);
    wsl_run_free(&run);
    return 0;
}

int test_ddp_process_order(void)
{
    struct ddp_plan p = ddp_plan_default();
    p.ranks = 3;
    p.straggler = 0;
    p.delay_ns = 10000000;
    p.rank_env = false;
    struct wsl_run run;
    if (read_plan(&run, &p, "order"))
        return 1;
    const struct wsl_dist *d = &run.dist;
    CHECK(d->active && !d->ranks_from_env && d->count == 3 && d->world_size == 3);
    for (unsigned r = 0; r < 3; r++)
        CHECK(d->ranks[r].rank == (int32_t)r && d->ranks[r].pid == 5000 + (int32_t)r && !d->ranks[r].gpu_pci_bus_id);
    CHECK(d->have_straggler && d->straggler.rank == 0);
    wsl_run_free(&run);
    return 0;
}

/* 0 when the two runs hold the same model (what the reports and the distributed analysis read). */
static int same_run(const struct wsl_run *a, const struct wsl_run *b)
{
    CHECK(a->proc_count == b->proc_count && a->api_count == b->api_count && a->wall_ns == b->wall_ns);
    for (size_t i = 0; i < a->proc_count; i++) {
        const struct wsl_process *x = &a->procs[i], *y = &b->procs[i];
        CHECK(x->pid == y->pid && x->events == y->events && x->dropped == y->dropped && x->start_ns == y->start_ns &&
              x->end_ns == y->end_ns && x->threads == y->threads && x->gpu_device == y->gpu_device);
        CHECK(x->phases.method == y->phases.method && x->phases.steady_start_ns == y->phases.steady_start_ns &&
              x->phases.steady_end_ns == y->phases.steady_end_ns && x->phases.steps == y->phases.steps &&
              x->phases.step_ns == y->phases.step_ns && x->phases.launches == y->phases.launches &&
              x->phases.dispatch_gap_ns == y->phases.dispatch_gap_ns);
        CHECK(!memcmp(&x->io, &y->io, sizeof x->io) && !memcmp(&x->gpu, &y->gpu, sizeof x->gpu));
        CHECK(x->mem.allocations == y->mem.allocations && x->mem.peak_bytes == y->mem.peak_bytes);
        CHECK(!memcmp(x->host_cuda.blocked_ns, y->host_cuda.blocked_ns, sizeof x->host_cuda.blocked_ns) &&
              x->host_cuda.submissions == y->host_cuda.submissions && x->host_cuda.copies == y->host_cuda.copies &&
              x->host_cuda.range_count == y->host_cuda.range_count);
        for (size_t k = 0; k < x->host_cuda.range_count; k++)
            CHECK(!strcmp(x->host_cuda.ranges[k].name, y->host_cuda.ranges[k].name) &&
                  x->host_cuda.ranges[k].blocked_ns == y->host_cuda.ranges[k].blocked_ns);
    }
    for (size_t i = 0; i < a->api_count; i++) {
        const struct wsl_api_stats *x = &a->apis[i], *y = &b->apis[i];
        CHECK(!strcmp(x->name, y->name) && x->ns.count == y->ns.count && x->ns.sum == y->ns.sum &&
              x->errors == y->errors && x->variant_count == y->variant_count);
        for (size_t v = 0; v < x->variant_count; v++)
            CHECK(!strcmp(x->variants[v].symbol, y->variants[v].symbol) && x->variants[v].calls == y->variants[v].calls);
    }
    CHECK(a->kernels.count == b->kernels.count && a->kernels.est_gpu_ns == b->kernels.est_gpu_ns &&
          a->kernels.launches == b->kernels.launches && a->kernels.kernels_timed == b->kernels.kernels_timed);
    for (size_t i = 0; i < a->kernels.count; i++) {
        const struct wsl_kernel *x = &a->kernels.items[i], *y = &b->kernels.items[i];
        CHECK(!strcmp(x->name, y->name) && x->launches == y->launches && x->est_gpu_ns == y->est_gpu_ns &&
              x->gpu_ns.count == y->gpu_ns.count && x->gpu_ns.sum == y->gpu_ns.sum);
    }
    CHECK(a->nvtx.range_count == b->nvtx.range_count && a->nvtx.step == b->nvtx.step &&
          a->nvtx.pushes == b->nvtx.pushes && a->nvtx.unclosed == b->nvtx.unclosed);
    for (size_t i = 0; i < a->nvtx.range_count; i++) {
        const struct wsl_nvtx_range *x = &a->nvtx.ranges[i], *y = &b->nvtx.ranges[i];
        CHECK(!strcmp(x->name, y->name) && x->count == y->count && x->ns.sum == y->ns.sum &&
              !memcmp(&x->self, &y->self, sizeof x->self) && !memcmp(&x->incl, &y->incl, sizeof x->incl));
    }
    CHECK(!memcmp(&a->io.total, &b->io.total, sizeof a->io.total) && a->io.timing_sample == b->io.timing_sample);
    CHECK(a->phases.steady_start_ns == b->phases.steady_start_ns && a->phases.steady_end_ns == b->phases.steady_end_ns &&
          a->phases.steady_known == b->phases.steady_known && a->phases.steady_wall_ns == b->phases.steady_wall_ns);
    CHECK(a->finding_count == b->finding_count && a->warning_count == b->warning_count);
    for (size_t i = 0; i < a->finding_count; i++)
        CHECK(!strcmp(a->findings[i].id, b->findings[i].id) && a->findings[i].time_lost_ns == b->findings[i].time_lost_ns &&
              !strcmp(a->findings[i].summary, b->findings[i].summary));
    for (size_t i = 0; i < a->warning_count; i++)
        CHECK(!strcmp(a->warnings[i], b->warnings[i]));
    return 0;
}

/* A rank's own run, made in the run's one pass over its trace (the events analysed once for both
 * runs), is the run a reading of that trace alone makes: processes, APIs, kernels, NVTX ranges,
 * file I/O, phases, findings and warnings. */
int test_ddp_rank_run_one_pass(void)
{
    struct ddp_plan p = ddp_plan_default();
    p.ranks = 3;
    p.straggler = 1;
    p.delay_ns = 8000000;
    p.delay_in_io = true;
    p.nvtx = true;
    p.rank_env = true;
    p.timing_every = 4;
    p.jitter_ns = 200000;
    struct wsl_run run;
    wsl_run_init(&run);
    char path[3][512], err[256];
    for (unsigned r = 0; r < p.ranks; r++) {
        char name[64];
        snprintf(name, sizeof name, "onepass-rank%u.trace.zst", r);
        test_path(path[r], sizeof path[r], name);
        ddp_write_rank(path[r], &p, r);
        CHECKF(wsl_run_add_trace(&run, path[r], err, sizeof err) == 0, "%s", err);
    }
    CHECK(run.proc_count == p.ranks);
    for (unsigned r = 0; r < p.ranks; r++) {
        struct wsl_run *own = run.procs[r].rank_solo, alone;
        CHECK(own && !strcmp(run.procs[r].trace_path, path[r]));
        run.procs[r].rank_solo = NULL;
        wsl_run_init(&alone);
        alone.solo = true;
        alone.nested = true;
        CHECKF(wsl_run_add_trace(&alone, path[r], err, sizeof err) == 0, "%s", err);
        CHECK(!alone.procs[0].rank_solo);
        wsl_run_finish(own);
        wsl_run_finish(&alone);
        CHECK(own->proc_count == 1 && own->procs[0].events == alone.procs[0].events && own->procs[0].events > 0);
        CHECK(own->nvtx.step >= 0 && own->procs[0].io.data.reads > 0 && own->finding_count == alone.finding_count);
        CHECKF(same_run(own, &alone) == 0, "rank %u: its own run differs from a reading of its trace alone", r);
        wsl_run_free(own);
        free(own);
        wsl_run_free(&alone);
    }
    wsl_run_free(&run);
    return 0;
}

int test_ddp_single_process(void)
{
    /* one GPU process without rank variables: not a distributed run */
    struct ddp_plan p = ddp_plan_default();
    p.ranks = 1;
    struct wsl_run run;
    if (read_plan(&run, &p, "single"))
        return 1;
    CHECK(!run.dist.active && run.dist.count == 0 && !finding(&run, "straggler"));
    wsl_run_free(&run);
    return 0;
}

int test_ddp_coll_names(void)
{
    CHECK(wsl_coll_kind_of("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)") ==
          WSL_COLL_ALL_REDUCE);
    CHECK(wsl_coll_kind_of("_Z29ncclDevKernel_AllGather_RING_LL24ncclDevKernelArgsStorageILm4096EE") ==
          WSL_COLL_ALL_GATHER);
    CHECK(wsl_coll_kind_of("ncclKernel_ReduceScatter_RING_LL_Sum_float(ncclWorkElem)") == WSL_COLL_REDUCE_SCATTER);
    CHECK(wsl_coll_kind_of("ncclDevKernel_Reduce_Sum_f16_RING_LL") == WSL_COLL_REDUCE);
    CHECK(wsl_coll_kind_of("ncclDevKernel_Broadcast_RING_LL") == WSL_COLL_BROADCAST);
    CHECK(wsl_coll_kind_of("ncclDevKernel_SendRecv") == WSL_COLL_SEND_RECV);
    CHECK(wsl_coll_kind_of("ncclDevKernel_Generic_4") == WSL_COLL_OTHER);
    CHECK(wsl_coll_kind_of("sgemm_128x64_nn") == -1 && wsl_coll_kind_of("nccl_helper") == -1);
    CHECK(wsl_coll_kind_of(NULL) == -1);
    CHECK(!strcmp(wsl_coll_kind_name(WSL_COLL_ALL_REDUCE), "all_reduce"));
    return 0;
}

/* RANK chunks: entries handed out; the last chunk stands; malformed ones refused. */
int test_reader_rank_chunk(void)
{
    char path[512];
    test_path(path, sizeof path, "rank-chunk.trace.zst");
    static const char a[] = "RANK=3\0WORLD_SIZE=8\0", b[] = "RANK=5\0gpu.0.pci_bus_id=0000:19:00.0\0";
    for (int bad = 0; bad < 4; bad++) {
        struct synth *s = synth_open(path, NULL);
        synth_file_header(s, NULL);
        struct wsl_process_info pi;
        memset(&pi, 0, sizeof pi);
        pi.pid = 77;
        pi.start_mono_ns = pi.start_ticks = 1000;
        const char *argv[] = {"x"};
        synth_process(s, &pi, "h", "/x", "6.8", 1, argv);
        synth_chunk(s, WSL_CHUNK_RANK, a, sizeof a - 1);
        if (bad == 1)
            synth_chunk(s, WSL_CHUNK_RANK, "RANK=1", 6); /* no NUL */
        else if (bad == 2)
            synth_chunk(s, WSL_CHUNK_RANK, "=1\0", 3); /* empty key */
        else if (bad == 3)
            synth_chunk(s, WSL_CHUNK_RANK, "RANK\0", 5); /* no '=' */
        else
            synth_chunk(s, WSL_CHUNK_RANK, b, sizeof b - 1);
        synth_end(s, 2000, 0, 0, 0);
        synth_close(s);
        struct wsl_run run;
        wsl_run_init(&run);
        char err[256];
        int rc = wsl_run_add_trace(&run, path, err, sizeof err);
        if (bad) {
            CHECKF(rc != 0 && strstr(err, "RANK"), "bad %d: rc %d err %s", bad, rc, err);
        } else {
            CHECK(rc == 0 && run.proc_count == 1);
            const struct wsl_process *pr = &run.procs[0];
            CHECK(!strcmp(wsl_process_rank_var(pr, "RANK"), "5"));
            CHECK(!wsl_process_rank_var(pr, "WORLD_SIZE")); /* replaced by the later chunk */
            CHECK(!strcmp(wsl_process_rank_var(pr, "gpu.0.pci_bus_id"), "0000:19:00.0"));
            CHECK(!wsl_process_rank_var(pr, "RAN"));
        }
        wsl_run_finish(&run);
        wsl_run_free(&run);
    }
    return 0;
}

/* Under Slurm, torchrun's agent has SLURM_PROCID and its workers RANK: the agent is no rank. */
int test_ddp_slurm_agent(void)
{
    struct ddp_plan p = ddp_plan_default();
    p.ranks = 2;
    p.straggler = 1;
    p.delay_ns = 10000000;
    p.rank_env = true;
    struct wsl_run run;
    wsl_run_init(&run);
    char path[512], err[256];
    test_path(path, sizeof path, "slurm-agent.trace.zst");
    struct synth *s = synth_open(path, NULL);
    synth_file_header(s, NULL);
    struct wsl_process_info pi;
    memset(&pi, 0, sizeof pi);
    pi.pid = 4999;
    pi.ppid = 1;
    pi.start_mono_ns = pi.start_ticks = 900000000;
    const char *argv[] = {"torchrun"};
    synth_process(s, &pi, "node0", "/usr/bin/python3", "6.8", 1, argv);
    static const char env[] = "SLURM_PROCID=0\0SLURM_NTASKS=1\0SLURM_LOCALID=0\0";
    synth_chunk(s, WSL_CHUNK_RANK, env, sizeof env - 1);
    synth_end(s, 5000000000ull, 0, 0, 0);
    synth_close(s);
    CHECKF(wsl_run_add_trace(&run, path, err, sizeof err) == 0, "%s", err);
    for (unsigned r = 0; r < p.ranks; r++) {
        char name[64];
        snprintf(name, sizeof name, "slurm-rank%u.trace.zst", r);
        test_path(path, sizeof path, name);
        ddp_write_rank(path, &p, r);
        CHECKF(wsl_run_add_trace(&run, path, err, sizeof err) == 0, "%s", err);
    }
    wsl_run_finish(&run);
    const struct wsl_dist *d = &run.dist;
    CHECK(d->active && d->count == 2 && d->ranks[0].pid == 5000 && d->ranks[1].pid == 5001);
    CHECK(d->have_straggler && d->straggler.rank == 1);
    wsl_run_free(&run);
    return 0;
}

/* Reads the plan's ranks (riders: wsl_steady_riders; written on the reading with riders) into run,
 * finished and recorded; *readings: the traces read, the first pass included. */
static int read_plan_riding(struct wsl_run *run, const struct ddp_plan *p, const char *tag, bool riders,
                            unsigned long *readings)
{
    bool was = wsl_steady_riders;
    wsl_steady_riders = riders;
    int rc = read_plan_as(run, p, tag, riders, true, readings);
    wsl_steady_riders = was;
    return rc;
}

/* 0 when the two runs' ranks hold the same findings (id, severity, time lost, in order). */
static int same_rank_findings(const struct wsl_run *a, const struct wsl_run *b)
{
    CHECK(a->dist.count == b->dist.count);
    for (size_t k = 0; k < a->dist.count; k++) {
        const struct wsl_rank *x = &a->dist.ranks[k], *y = &b->dist.ranks[k];
        CHECKF(x->finding_count == y->finding_count, "rank %zu: %zu findings against %zu", k, x->finding_count,
               y->finding_count);
        for (size_t i = 0; i < x->finding_count; i++)
            CHECKF(!strcmp(x->findings[i].id, y->findings[i].id) && x->findings[i].severity == y->findings[i].severity &&
                       x->findings[i].time_lost_ns == y->findings[i].time_lost_ns,
                   "rank %zu finding %zu: %s %d %llu against %s %d %llu", k, i, x->findings[i].id,
                   (int)x->findings[i].severity, (unsigned long long)x->findings[i].time_lost_ns, y->findings[i].id,
                   (int)y->findings[i].severity, (unsigned long long)y->findings[i].time_lost_ns);
        CHECK(!x->own && !y->own);
    }
    return 0;
}

/* A run whose steady state leaves out a start-up: each trace read twice (the first pass and the
 * steady state's), where each rank's own steady state was a third reading. Every rank's steady state
 * is the run's here (the straggler's starts 6 ms, 0.4% of it, later), and its findings are those of
 * a reading of its own. */
int test_ddp_steady_one_reading(void)
{
    struct ddp_plan p = ddp_plan_default();
    p.ranks = 4;
    p.straggler = 2;
    p.delay_ns = 6000000;
    p.nvtx = true;
    p.rank_env = true;
    p.startup_ns = 600000000; /* 0.6 s before the first of 50 steps of about 33 ms */
    struct wsl_run a, b;
    unsigned long ra, rb;
    if (read_plan_riding(&a, &p, "steady1", true, &ra) || read_plan_riding(&b, &p, "steady1", false, &rb))
        return 1;
    CHECK(a.phases.known && a.phases.steady_known && a.phases.steady_wall_ns < a.wall_ns * 9 / 10);
    uint64_t span = a.phases.steady_end_ns - a.phases.steady_start_ns;
    for (size_t i = 0; i < a.proc_count; i++) { /* the straggler's first launch of a step comes 6 ms later */
        const struct wsl_phases *ph = &a.procs[i].phases;
        uint64_t off = ph->steady_start_ns - a.phases.steady_start_ns;
        CHECKF(ph->steady_end_ns == a.phases.steady_end_ns && (i == 2 ? off == p.delay_ns : off == 0) && off < span / 50,
               "rank %zu's steady state starts %llu ns after the run's", i, (unsigned long long)off);
    }
    CHECKF(ra == 2 * p.ranks && rb == 3 * p.ranks, "readings %lu with riders, %lu without", ra, rb);
    CHECK(a.dist.active && a.dist.count == 4 && a.dist.ranks[0].finding_count > 0);
    CHECKF(same_run(&a, &b) == 0, "the run differs with its ranks riding on its steady state's reading");
    CHECKF(same_rank_findings(&a, &b) == 0, "a rank's findings differ with it riding on the run's reading");
    wsl_run_free(&a);
    wsl_run_free(&b);
    return 0;
}

/* One rank's steady state starts later than the others' (10 steps of another kernel first): it is
 * not the run's, and that rank reads its own; the others ride on the run's reading. */
int test_ddp_steady_rank_apart(void)
{
    struct ddp_plan p = ddp_plan_default();
    p.ranks = 3;
    p.nvtx = false;
    p.rank_env = true;
    p.startup_ns = 600000000;
    p.warmup_rank = 1;
    p.warmup_steps = 10;
    struct wsl_run a, b;
    unsigned long ra, rb;
    if (read_plan_riding(&a, &p, "steady2", true, &ra) || read_plan_riding(&b, &p, "steady2", false, &rb))
        return 1;
    CHECK(a.phases.known && a.phases.steady_known);
    const struct wsl_run_phases *rp = &a.phases;
    const struct wsl_phases *apart = &a.procs[1].phases;
    CHECKF((double)(apart->steady_start_ns - rp->steady_start_ns) > 0.02 * (double)(rp->steady_end_ns - rp->steady_start_ns),
           "rank 1's steady state starts %llu ns after the run's", (unsigned long long)(apart->steady_start_ns - rp->steady_start_ns));
    CHECKF(ra == 2 * p.ranks + 1 && rb == 3 * p.ranks, "readings %lu with riders, %lu without", ra, rb);
    CHECKF(same_run(&a, &b) == 0, "the run differs with its ranks riding on its steady state's reading");
    CHECKF(same_rank_findings(&a, &b) == 0, "a rank's findings differ with it riding on the run's reading");
    wsl_run_free(&a);
    wsl_run_free(&b);
    return 0;
}
