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

/* The findings within the steady state: the traces read again, restricted to it. Each finding
 * gets its time lost there, severity follows it, and one that fires only there is added. */
static void steady_findings(struct wsl_run *run)
{
    struct wsl_run_phases *rp = &run->phases;
    if (run->windowed || !rp->known || rp->steady_end_ns <= rp->steady_start_ns)
        return;
    uint64_t span = rp->steady_end_ns - rp->steady_start_ns;
    if ((double)span >= 0.98 * (double)run->wall_ns) { /* the steady state is the run: no second reading */
        rp->steady_known = true;
        rp->steady_wall_ns = run->wall_ns;
        for (size_t i = 0; i < run->finding_count; i++) {
            run->findings[i].steady_known = run->findings[i].steady_fired = true;
            run->findings[i].steady_lost_ns = run->findings[i].time_lost_ns;
        }
        return;
    }
    struct wsl_run st;
    wsl_run_init(&st);
    st.windowed = true;
    st.solo = true;
    st.nested = true;
    st.store = run->store;
    st.window_start_ns = rp->steady_start_ns;
    st.window_end_ns = rp->steady_end_ns;
    st.count_windows_of = &run->nvtx; /* the NVTX step windows' count, on the same reading */
    for (size_t i = 0; i < run->proc_count; i++) {
        const struct wsl_process *p = &run->procs[i];
        if (!p->trace_path || p->end_ns < st.window_start_ns || p->start_ns > st.window_end_ns)
            continue;
        st.window_t0 = ticks_of(&p->clock, st.window_start_ns);
        st.window_t1 = ticks_of(&p->clock, st.window_end_ns);
        char err[512];
        if (wsl_run_add_trace(&st, p->trace_path, err, sizeof err) != 0) {
            wsl_run_free(&st);
            return;     /* read once already: a second reading that fails leaves the wall-time figures */
        }
    }
    wsl_run_finish(&st);
    rp->steady_known = true;
    rp->steady_wall_ns = st.wall_ns;
    for (size_t i = 0; i < run->finding_count; i++) {
        struct wsl_finding *f = &run->findings[i];
        if (!strcmp(f->id, "straggler"))
            continue; /* the ranks are compared on the whole run only (the window's reading is solo) */
        f->steady_known = true;
        for (size_t k = 0; k < st.finding_count; k++)
            if (!strcmp(st.findings[k].id, f->id)) {
                f->steady_fired = true;
                f->steady_lost_ns = st.findings[k].time_lost_ns;
            }
        if (!f->severity_fixed)
            f->severity = wsl_severity_of(f->steady_lost_ns, st.wall_ns);
    }
    for (size_t k = 0; k < st.finding_count; k++) {
        struct wsl_finding *g = &st.findings[k];
        bool have = false;
        for (size_t i = 0; i < run->finding_count && !have; i++)
            have = !strcmp(run->findings[i].id, g->id);
        if (have || wsl_severity_of(g->time_lost_ns, st.wall_ns) == WSL_SEVERITY_LOW)
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
    wsl_run_free(&st);
}

void wsl_run_finish(struct wsl_run *run)
{
    run->nvtx.step_count_later = true; /* counted by the steady state's reading, where it reads the trace */
    wsl_run_model_finish(run);
    if (!run->solo)
        wsl_dist_analyze(run, wsl_run_finish);
    wsl_rules_run(run);
    steady_findings(run);
    wsl_nvtx_step_figures(&run->nvtx, run->store); /* the traces it did not read */
}
