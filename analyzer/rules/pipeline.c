/*
 * The analysis pipeline (rules.h, wsl_run_finish): the run model finished (model/analysis.c),
 * the ranks of a distributed run (model/distributed.c, each rank's run through this same
 * pipeline), the rules, and the steady state's second reading for the findings' time lost there.
 */
#include "rules.h"

#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "util.h"

/* ns on a trace's clock -> its ticks (the inverse of wsl_clock_to_ns). */
static uint64_t ticks_of(const struct wsl_clock_map *m, uint64_t ns)
{
    double d = ns >= m->ns0 ? (double)(ns - m->ns0) : -(double)(m->ns0 - ns);
    double t = (double)m->ticks0 + d / (m->ns_per_tick > 0 ? m->ns_per_tick : 1.0);
    return t <= 0 ? 0 : t >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)t;
}

/* Set by tests: false reads each rank's steady state on its own, as a run of its own would. */
bool wsl_steady_riders = true;

/* Whether the steady state is the run (no second reading: each finding's time lost there is its
 * whole time lost), or there is none to read. */
static bool steady_without_reading(struct wsl_run *run)
{
    struct wsl_run_phases *rp = &run->phases;
    if (run->windowed || !rp->known || rp->steady_end_ns <= rp->steady_start_ns)
        return true;
    uint64_t span = rp->steady_end_ns - rp->steady_start_ns;
    if ((double)span >= 0.98 * (double)run->wall_ns) { /* the steady state is the run: no second reading */
        rp->steady_known = true;
        rp->steady_wall_ns = run->wall_ns;
        for (size_t i = 0; i < run->finding_count; i++) {
            run->findings[i].steady_known = run->findings[i].steady_fired = true;
            run->findings[i].steady_lost_ns = run->findings[i].time_lost_ns;
        }
        return true;
    }
    return false;
}

/* A run made to read run's steady state (its window), with the parent's store. */
static void steady_run_init(struct wsl_run *st, const struct wsl_run *run)
{
    wsl_run_init(st);
    st->windowed = true;
    st->solo = true;
    st->nested = true;
    st->store = run->store;
    st->window_start_ns = run->phases.steady_start_ns;
    st->window_end_ns = run->phases.steady_end_ns;
}

/* Run's findings given their time lost within the steady state, as st (a finished reading of it)
 * found them: each finding gets its time lost there, severity follows it, and one that fires only
 * there is added. */
static void steady_take(struct wsl_run *run, struct wsl_run *st)
{
    struct wsl_run_phases *rp = &run->phases;
    rp->steady_known = true;
    rp->steady_wall_ns = st->wall_ns;
    for (size_t i = 0; i < run->finding_count; i++) {
        struct wsl_finding *f = &run->findings[i];
        if (!strcmp(f->id, "straggler"))
            continue; /* the ranks are compared on the whole run only (the window's reading is solo) */
        f->steady_known = true;
        for (size_t k = 0; k < st->finding_count; k++)
            if (!strcmp(st->findings[k].id, f->id)) {
                f->steady_fired = true;
                f->steady_lost_ns = st->findings[k].time_lost_ns;
            }
        if (!f->severity_fixed)
            f->severity = wsl_severity_of(f->steady_lost_ns, st->wall_ns);
    }
    for (size_t k = 0; k < st->finding_count; k++) {
        struct wsl_finding *g = &st->findings[k];
        bool have = false;
        for (size_t i = 0; i < run->finding_count && !have; i++)
            have = !strcmp(run->findings[i].id, g->id);
        if (have || wsl_severity_of(g->time_lost_ns, st->wall_ns) == WSL_SEVERITY_LOW)
            continue;
        /* fires only in the steady state, and matters there (5% of it or more); launch_bound and
         * dispatch_bound are one starvation seen two ways: the steady state's reading stands */
        const char *other = !strcmp(g->id, "launch_bound") ? "dispatch_bound"
                          : !strcmp(g->id, "dispatch_bound") ? "launch_bound" : NULL;
        for (size_t i = 0; other && i < run->finding_count; i++)
            if (!strcmp(run->findings[i].id, other)) {
                wsl_findings_free_one(&run->findings[i]);
                run->findings[i] = run->findings[--run->finding_count];
                break;
            }
        g->steady_known = g->steady_fired = true;
        g->steady_lost_ns = g->time_lost_ns;
        run->findings = xrealloc(run->findings, (run->finding_count + 1) * sizeof *run->findings);
        run->findings[run->finding_count++] = *g;
        memset(g, 0, sizeof *g);
        g->id = "";
    }
    for (size_t i = 0; i < run->finding_count; i++)
        if (!strcmp(run->findings[i].id, "gpu_idle"))
            wsl_rule_gpu_idle_by_phase(run, &run->findings[i]);
    wsl_rules_sort(run);
}

/* Whether rank run own's steady state is the run's, within 2% of the run's (the span the ranks'
 * steady states cover: a rank's lies within it): its findings' steady-state figures are then taken
 * on the run's reading, over the run's window. */
static bool steady_rides(const struct wsl_run *run, struct wsl_run *own)
{
    const struct wsl_run_phases *rp = &run->phases, *op = &own->phases;
    if (!wsl_steady_riders || steady_without_reading(own))
        return false;
    uint64_t span = rp->steady_end_ns - rp->steady_start_ns;
    uint64_t d0 = op->steady_start_ns > rp->steady_start_ns ? op->steady_start_ns - rp->steady_start_ns
                                                             : rp->steady_start_ns - op->steady_start_ns;
    uint64_t d1 = op->steady_end_ns > rp->steady_end_ns ? op->steady_end_ns - rp->steady_end_ns
                                                         : rp->steady_end_ns - op->steady_end_ns;
    return (double)d0 + (double)d1 <= 0.02 * (double)span;
}

/* The ranks whose own steady state is the run's read along with the run's reading st: a run of
 * their own (riders[k].run) fed each of their traces, one rider per trace. */
struct riding {
    struct wsl_rider *riders;
    size_t count;
    struct wsl_run **runs;      /* per rank of run->dist, NULL where it reads on its own */
    unsigned *seen, *fed;
};

static void riding_begin(struct riding *rd, struct wsl_run *run, struct wsl_run *st)
{
    memset(rd, 0, sizeof *rd);
    struct wsl_dist *d = &run->dist;
    if (!d->count)
        return;
    rd->runs = xcalloc(d->count, sizeof *rd->runs);
    rd->seen = xcalloc(d->count, sizeof *rd->seen);
    rd->fed = xcalloc(d->count, sizeof *rd->fed);
    for (size_t k = 0; k < d->count; k++) {
        struct wsl_run *own = d->ranks[k].own;
        if (!own || !steady_rides(run, own))
            continue;
        struct wsl_run *rr = rd->runs[k] = xmalloc(sizeof *rr);
        steady_run_init(rr, run);
        for (size_t i = 0; i < own->proc_count; i++) {
            if (!own->procs[i].trace_path)
                continue;
            rd->riders = xrealloc(rd->riders, (rd->count + 1) * sizeof *rd->riders);
            rd->riders[rd->count++] = (struct wsl_rider){own->procs[i].trace_path, rr, &rd->seen[k], &rd->fed[k]};
        }
    }
    st->riders = rd->riders;
    st->rider_count = rd->count;
}

/* The riders' runs finished and taken into their ranks' own runs (ok: the run's reading was whole);
 * one that missed a trace is left to read on its own. */
static void riding_end(struct riding *rd, struct wsl_run *run, bool ok)
{
    struct wsl_dist *d = &run->dist;
    for (size_t k = 0; rd->runs && k < d->count; k++) {
        struct wsl_run *rr = rd->runs[k];
        if (!rr)
            continue;
        if (ok && rd->fed[k] && rd->fed[k] == rd->seen[k]) {
            wsl_run_finish(rr);
            steady_take(d->ranks[k].own, rr);
            d->ranks[k].own_steady_done = true;
        }
        wsl_run_free(rr);
        free(rr);
    }
    free(rd->runs);
    free(rd->riders);
    free(rd->seen);
    free(rd->fed);
}

/* The findings within the steady state: the traces read again, restricted to it (and, in a
 * distributed run, the ranks whose steady state is the run's read along). */
static void steady_findings(struct wsl_run *run)
{
    if (steady_without_reading(run))
        return;
    struct wsl_run st;
    steady_run_init(&st, run);
    st.count_windows_of = &run->nvtx; /* the NVTX step windows' count, on the same reading */
    struct riding rd;
    riding_begin(&rd, run, &st);
    for (size_t i = 0; i < run->proc_count; i++) {
        const struct wsl_process *p = &run->procs[i];
        if (!p->trace_path || p->end_ns < st.window_start_ns || p->start_ns > st.window_end_ns)
            continue;
        st.window_t0 = ticks_of(&p->clock, st.window_start_ns);
        st.window_t1 = ticks_of(&p->clock, st.window_end_ns);
        char err[512];
        if (wsl_run_add_trace(&st, p->trace_path, err, sizeof err) != 0) {
            riding_end(&rd, run, false);
            wsl_run_free(&st);
            return;     /* read once already: a second reading that fails leaves the wall-time figures */
        }
    }
    riding_end(&rd, run, true);
    wsl_run_finish(&st);
    steady_take(run, &st);
    wsl_run_free(&st);
}

/* A rank's own run, finished but for its steady state's findings (ranks_steady). */
static void finish_rank(struct wsl_run *own)
{
    own->nvtx.step_count_later = true;
    wsl_run_model_finish(own);
    wsl_rules_run(own);
}

/* Each rank's steady-state findings (read on its own where the run's reading did not make them),
 * then taken into the rank. */
static void ranks_steady(struct wsl_run *run)
{
    struct wsl_dist *d = &run->dist;
    for (size_t k = 0; k < d->count; k++) {
        struct wsl_rank *rk = &d->ranks[k];
        if (!rk->own)
            continue;
        if (!rk->own_steady_done)
            steady_findings(rk->own);
        wsl_nvtx_step_figures(&rk->own->nvtx, rk->own->store);
        wsl_rank_take_findings(rk);
    }
}

void wsl_run_finish(struct wsl_run *run)
{
    run->nvtx.step_count_later = true; /* counted by the steady state's reading, where it reads the trace */
    wsl_run_model_finish(run);
    if (!run->solo)
        wsl_dist_analyze(run, finish_rank);
    wsl_rules_run(run);
    steady_findings(run);
    ranks_steady(run);
    wsl_nvtx_step_figures(&run->nvtx, run->store); /* the traces it did not read */
}
