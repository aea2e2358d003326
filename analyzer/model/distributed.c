/*
 * Distributed runs: ranks, their collectives, the straggler (distributed.h).
 */
#include "distributed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "util.h"

/* ---- NCCL kernel names ------------------------------------------------------------------ */

int wsl_coll_kind_of(const char *name)
{
    if (!name)
        return -1;
    /* a mangled name that failed to demangle: "_Z<len>ncclDevKernel_..." */
    if (name[0] == '_' && name[1] == 'Z') {
        name += 2;
        while (*name >= '0' && *name <= '9')
            name++;
    }
    const char *rest;
    if (!strncmp(name, "ncclDevKernel_", 14))
        rest = name + 14;
    else if (!strncmp(name, "ncclKernel_", 11))
        rest = name + 11;
    else
        return -1;
    static const struct {
        const char *prefix;
        int kind;
    } kinds[] = {
        {"AllReduce", WSL_COLL_ALL_REDUCE},   {"AllGather", WSL_COLL_ALL_GATHER},
        {"ReduceScatter", WSL_COLL_REDUCE_SCATTER}, {"Broadcast", WSL_COLL_BROADCAST},
        {"Reduce", WSL_COLL_REDUCE},          {"SendRecv", WSL_COLL_SEND_RECV},
        {"Send", WSL_COLL_SEND_RECV},         {"Recv", WSL_COLL_SEND_RECV},
        {"AllToAll", WSL_COLL_ALL_TO_ALL},
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (!strncmp(rest, kinds[i].prefix, strlen(kinds[i].prefix)))
            return kinds[i].kind;
    return WSL_COLL_OTHER; /* ncclDevKernel_Generic and kinds not listed */
}

const char *wsl_coll_kind_name(int kind)
{
    static const char *const names[WSL_COLL_KINDS] = {
        [WSL_COLL_ALL_REDUCE] = "all_reduce", [WSL_COLL_ALL_GATHER] = "all_gather",
        [WSL_COLL_REDUCE_SCATTER] = "reduce_scatter", [WSL_COLL_BROADCAST] = "broadcast",
        [WSL_COLL_REDUCE] = "reduce", [WSL_COLL_SEND_RECV] = "send_recv",
        [WSL_COLL_ALL_TO_ALL] = "all_to_all", [WSL_COLL_OTHER] = "other",
    };
    return kind >= 0 && kind < WSL_COLL_KINDS ? names[kind] : "other";
}

/* ---- rank identity ------------------------------------------------------------------------- */

/* A non-negative decimal, or -1. */
static int32_t parse_int(const char *s)
{
    if (!s || !*s)
        return -1;
    long v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > 1000000000L)
            return -1;
        v = v * 10 + (*s - '0');
    }
    return (int32_t)v;
}

static int32_t first_int(const struct wsl_process *p, const char *const *keys)
{
    for (; *keys; keys++) {
        int32_t v = parse_int(wsl_process_rank_var(p, *keys));
        if (v >= 0)
            return v;
    }
    return -1;
}

static const char *const rank_keys[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", NULL};
static const char *const local_keys[] = {"LOCAL_RANK", "SLURM_LOCALID", NULL};
static const char *const world_keys[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", NULL};

/* ---- one rank's own run --------------------------------------------------------------------- */

static uint64_t median_u64(uint64_t *v, size_t n);

static void take_solo(struct wsl_rank *rk, const struct wsl_run *solo)
{
    rk->wall_ns = solo->wall_ns;
    rk->gpu_ns = solo->kernels.est_gpu_ns;
    rk->kernels_timed = solo->kernels.kernels_timed + solo->kernels.graphs_timed;
    rk->launches = solo->kernels.launches + solo->kernels.graph_launches;
    uint64_t coll_est = 0;
    for (size_t i = 0; i < solo->kernels.count; i++) {
        const struct wsl_kernel *k = &solo->kernels.items[i];
        int kind = wsl_coll_kind_of(k->mangled ? k->name : NULL);
        if (kind < 0)
            continue;
        coll_est += k->est_gpu_ns;
        rk->collective_launches += k->launches;
        rk->coll_launches[kind] += k->launches;
        if (!k->gpu_ns.count)
            continue; /* never timed: its estimate is other kernels' mean, no measure of waiting */
        rk->collective_ns += k->est_gpu_ns;
        rk->collectives_timed += k->gpu_ns.count;
        rk->coll_ns[kind] += k->est_gpu_ns;
    }
    rk->compute_ns = rk->gpu_ns > coll_est ? rk->gpu_ns - coll_est : 0;
    for (size_t i = 0; i < solo->api_count; i++) {
        const struct wsl_api_stats *a = &solo->apis[i];
        if (a->category == WSL_CAT_SYNC_STREAM || a->category == WSL_CAT_SYNC_CTX ||
            a->category == WSL_CAT_SYNC_EVENT) {
            rk->syncs += a->ns.count;
            rk->sync_ns += a->ns.sum;
        }
    }
    const struct wsl_io_counts *d = &solo->io.total.data;
    rk->io_reads = d->reads;
    rk->io_bytes = d->bytes_read;
    rk->io_read_ns = d->read_time;
    rk->io_ns = wsl_io_time(d);
    if (solo->nvtx.step >= 0) {
        const struct wsl_nvtx_range *r = &solo->nvtx.ranges[solo->nvtx.step];
        rk->have_step = true;
        rk->step_name = xstrdup(r->name);
        rk->steps = r->count;
        rk->step_mean_ns = wsl_nvtx_mean_ns(r);
    }
}

void wsl_rank_take_findings(struct wsl_rank *rk)
{
    struct wsl_run *own = rk->own;
    if (!own)
        return;
    free(rk->findings);
    rk->finding_count = own->finding_count;
    rk->findings = xcalloc(own->finding_count ? own->finding_count : 1, sizeof *rk->findings);
    for (size_t i = 0; i < own->finding_count; i++) {
        rk->findings[i].id = own->findings[i].id;
        rk->findings[i].severity = own->findings[i].severity;
        rk->findings[i].time_lost_ns = own->findings[i].time_lost_ns;
    }
    wsl_run_free(own);
    free(own);
    rk->own = NULL;
}

/* The traces of processes idx[0..n) (in start order) in a run of their own. The first one's was
 * read into one in the run's own pass when it looked like a rank's (analysis_read.c, rank_solo); the
 * others (its forked workers) are read again into it, in the same order a reading of them all
 * would take. */
static void read_rank(struct wsl_rank *rk, struct wsl_run *run, const size_t *idx, size_t n,
                      void (*finish_rank)(struct wsl_run *))
{
    struct wsl_run *solo = n ? run->procs[idx[0]].rank_solo : NULL;
    size_t from = 1;
    if (solo) {
        run->procs[idx[0]].rank_solo = NULL;
    } else {
        solo = xmalloc(sizeof *solo);
        wsl_run_init(solo);
        solo->solo = true;
        solo->nested = true;
        solo->store = run->store;
        from = 0;
    }
    for (size_t i = from; i < n; i++) {
        char err[256];
        wsl_run_add_trace(solo, run->procs[idx[i]].trace_path, err, sizeof err); /* read once already */
    }
    finish_rank(solo);
    take_solo(rk, solo);
    rk->own = solo; /* its findings wait for its steady state's (wsl_rank_take_findings) */
}

static void set_identity(struct wsl_rank *rk, const struct wsl_process *p)
{
    rk->pid = p->pid;
    rk->host = xstrdup(p->host ? p->host : "");
    rk->local_rank = first_int(p, local_keys);
    rk->gpu = p->gpu_device;
    if (rk->gpu < 0 && p->gpu_count == 1)
        rk->gpu = 0; /* one visible device: the only one it can drive */
    if (rk->gpu >= 0 && (uint32_t)rk->gpu < p->gpu_count)
        rk->gpu_name = xstrdup(p->gpus[rk->gpu].name);
    if (rk->gpu >= 0) {
        char key[48];
        snprintf(key, sizeof key, "gpu.%d.pci_bus_id", (int)rk->gpu);
        const char *bus = wsl_process_rank_var(p, key);
        if (bus)
            rk->gpu_pci_bus_id = xstrdup(bus);
    }
    const char *cvd = wsl_process_rank_var(p, "CUDA_VISIBLE_DEVICES");
    if (cvd)
        rk->cuda_visible_devices = xstrdup(cvd);
}

/* ---- the straggler ------------------------------------------------------------------------------ */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t median_u64(uint64_t *v, size_t n)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof *v, cmp_u64);
    return n % 2 ? v[n / 2] : v[n / 2 - 1] / 2 + v[n / 2] / 2 + (v[n / 2 - 1] % 2 + v[n / 2] % 2) / 2;
}

/* The other ranks' median of a field. */
static uint64_t others_median(const struct wsl_dist *d, size_t skip, size_t offset)
{
    uint64_t *v = xcalloc(d->count, sizeof *v);
    size_t n = 0;
    for (size_t i = 0; i < d->count; i++)
        if (i != skip)
            memcpy(&v[n++], (const char *)&d->ranks[i] + offset, sizeof *v);
    uint64_t m = median_u64(v, n);
    free(v);
    return m;
}

static void find_straggler(struct wsl_dist *d)
{
    d->imbalance = -1;
    uint64_t cmin = UINT64_MAX, cmax = 0;
    for (size_t i = 0; i < d->count; i++) {
        if (d->ranks[i].compute_ns < cmin)
            cmin = d->ranks[i].compute_ns;
        if (d->ranks[i].compute_ns > cmax)
            cmax = d->ranks[i].compute_ns;
    }
    if (d->count >= 2 && cmin > 0)
        d->imbalance = (double)cmax / (double)cmin;
    if (d->count < 2 || !d->collectives_seen)
        return;
    size_t s = 0;
    for (size_t i = 1; i < d->count; i++)
        if (d->ranks[i].collective_ns < d->ranks[s].collective_ns)
            s = i;
    uint64_t *waits = xcalloc(d->count, sizeof *waits), *walls = xcalloc(d->count, sizeof *walls), total = 0;
    size_t n = 0;
    for (size_t i = 0; i < d->count; i++) {
        walls[i] = d->ranks[i].wall_ns;
        d->ranks[i].wait_ns = d->ranks[i].collective_ns - d->ranks[s].collective_ns;
        if (i != s) {
            waits[n++] = d->ranks[i].wait_ns;
            total += d->ranks[i].wait_ns;
        }
    }
    uint64_t wait_median = median_u64(waits, n), wall_median = median_u64(walls, d->count);
    free(waits);
    free(walls);
    if (!wait_median || (double)wait_median < WSL_STRAGGLER_MIN_SHARE * (double)wall_median)
        return;
    struct wsl_straggler *st = &d->straggler;
    d->have_straggler = true;
    st->index = s;
    st->rank = d->ranks[s].rank;
    st->wait_median_ns = wait_median;
    st->wait_total_ns = total;
    st->wait_mean_ns = total / n;
    const struct wsl_rank *r = &d->ranks[s];
    st->io_excess_ns = (int64_t)r->io_ns - (int64_t)others_median(d, s, offsetof(struct wsl_rank, io_ns));
    st->compute_excess_ns =
        (int64_t)r->compute_ns - (int64_t)others_median(d, s, offsetof(struct wsl_rank, compute_ns));
    bool steps = true;
    for (size_t i = 0; i < d->count; i++)
        steps &= d->ranks[i].have_step;
    if (steps) {
        st->have_step_excess = true;
        st->step_excess_ns =
            (int64_t)r->step_mean_ns - (int64_t)others_median(d, s, offsetof(struct wsl_rank, step_mean_ns));
    }
    /* What the straggler did instead of waiting: the larger excess explains at least half of the wait */
    double half = 0.5 * (double)st->wait_mean_ns;
    if (st->io_excess_ns > 0 && (double)st->io_excess_ns >= half && st->io_excess_ns >= st->compute_excess_ns)
        st->cause = "file_io";
    else if (st->compute_excess_ns > 0 && (double)st->compute_excess_ns >= half)
        st->cause = "gpu_compute";
    else
        st->cause = "host";
}

/* ---- the run ------------------------------------------------------------------------------------ */

struct group {
    int32_t rank;
    size_t *procs;              /* indices into run->procs, in start order */
    size_t count;
    size_t main;                /* the first process not forked from another of the group */
};

static int by_rank(const void *a, const void *b)
{
    const struct group *x = a, *y = b;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static bool forked_from(const struct wsl_run *run, const size_t *idx, size_t n, const struct wsl_process *p)
{
    for (size_t i = 0; i < n; i++)
        if (run->procs[idx[i]].pid == p->ppid && run->procs[idx[i]].start_ns <= p->start_ns &&
            run->procs[idx[i]].pid != p->pid)
            return true;
    return false;
}

void wsl_dist_analyze(struct wsl_run *run, void (*finish_rank)(struct wsl_run *))
{
    struct wsl_dist *d = &run->dist;
    wsl_dist_free(d);
    d->imbalance = -1;
    struct group *g = NULL;
    size_t ng = 0;
    uint32_t world = 0;
    /* Ranks from the environment, by the first variable of rank_keys any process has (under
     * SLURM, torchrun's agent has SLURM_PROCID and its workers RANK); processes are in start order. */
    const char *key = NULL;
    for (size_t k = 0; !key && rank_keys[k]; k++)
        for (size_t i = 0; !key && i < run->proc_count; i++)
            if (parse_int(wsl_process_rank_var(&run->procs[i], rank_keys[k])) >= 0)
                key = rank_keys[k];
    for (size_t i = 0; key && i < run->proc_count; i++) {
        const struct wsl_process *p = &run->procs[i];
        int32_t rank = parse_int(wsl_process_rank_var(p, key));
        if (rank < 0)
            continue;
        int32_t w = first_int(p, world_keys);
        if (w > 0 && (uint32_t)w > world)
            world = (uint32_t)w;
        size_t k;
        for (k = 0; k < ng && g[k].rank != rank; k++)
            ;
        if (k == ng) {
            g = xrealloc(g, (ng + 1) * sizeof *g);
            memset(&g[ng], 0, sizeof *g);
            g[ng++].rank = rank;
        }
        g[k].procs = xrealloc(g[k].procs, (g[k].count + 1) * sizeof *g[k].procs);
        g[k].procs[g[k].count++] = i;
    }
    d->ranks_from_env = ng > 0;
    if (!ng) {
        /* Process order: the processes that brought the driver up, not forked from one that did. */
        size_t *cand = xcalloc(run->proc_count ? run->proc_count : 1, sizeof *cand), nc = 0;
        for (size_t i = 0; i < run->proc_count; i++) {
            const struct wsl_process *p = &run->procs[i];
            if (p->have_driver && p->init_result == 0 && !forked_from(run, cand, nc, p))
                cand[nc++] = i;
        }
        for (size_t i = 0; nc >= 2 && i < nc; i++) {
            g = xrealloc(g, (ng + 1) * sizeof *g);
            memset(&g[ng], 0, sizeof *g);
            g[ng].rank = (int32_t)ng;
            g[ng].procs = xmalloc(sizeof *g[ng].procs);
            g[ng].procs[0] = cand[i];
            g[ng++].count = 1;
        }
        free(cand);
    }
    if (ng && (ng >= 2 || world >= 2)) {
        qsort(g, ng, sizeof *g, by_rank);
        d->ranks = xcalloc(ng, sizeof *d->ranks);
        d->count = ng;
        for (size_t k = 0; k < ng; k++) {
            struct wsl_rank *rk = &d->ranks[k];
            g[k].main = g[k].procs[0];
            for (size_t j = 0; j < g[k].count; j++)
                if (!forked_from(run, g[k].procs, g[k].count, &run->procs[g[k].procs[j]])) {
                    g[k].main = g[k].procs[j];
                    break;
                }
            rk->rank = g[k].rank;
            rk->rank_from_env = d->ranks_from_env;
            rk->processes = (uint32_t)g[k].count;
            rk->gpu = -1;
            set_identity(rk, &run->procs[g[k].main]);
            read_rank(rk, run, g[k].procs, g[k].count, finish_rank);
            d->collectives_seen |= rk->collectives_timed > 0;
        }
        d->world_size = world ? world : (uint32_t)ng;
        /* Without rank variables, GPU processes are ranks only when they ran collectives. */
        d->active = d->ranks_from_env || d->collectives_seen;
        if (d->active)
            find_straggler(d);
    }
    for (size_t k = 0; k < ng; k++)
        free(g[k].procs);
    free(g);
    for (size_t i = 0; i < run->proc_count; i++) /* the rank readings not taken: not ranks after all */
        if (run->procs[i].rank_solo) {
            wsl_run_free(run->procs[i].rank_solo);
            free(run->procs[i].rank_solo);
            run->procs[i].rank_solo = NULL;
        }
    if (!d->active) {
        wsl_dist_free(d);
        d->imbalance = -1;
    }
}

void wsl_dist_free(struct wsl_dist *d)
{
    for (size_t i = 0; i < d->count; i++) {
        struct wsl_rank *rk = &d->ranks[i];
        free(rk->host);
        free(rk->gpu_name);
        free(rk->gpu_pci_bus_id);
        free(rk->cuda_visible_devices);
        free(rk->step_name);
        free(rk->findings);
        if (rk->own) {
            wsl_run_free(rk->own);
            free(rk->own);
        }
    }
    free(d->ranks);
    memset(d, 0, sizeof *d);
}
