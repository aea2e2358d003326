/*
 * startup: the program takes long before its first GPU work: imports, CUDA's
 * initialisation, loading or preparing data, building the model. Time spent
 * there is paid on every run, and on a short run it is most of the run.
 *
 * Needs the run's phases (phase_analysis.h) and where the main process's
 * start-up went: CUDA calls before the first submission (cuInit and the
 * context), Python modules and libraries read, data file I/O.
 */
#include <inttypes.h>
#include <stdio.h>

#include "analysis.h"
#include "rules.h"
#include "util.h"

#define MIN_SHARE 0.20          /* of the wall time */
#define MIN_NS 2000000000ull    /* 2 s */

static bool evaluate(const struct wsl_run *run, struct wsl_finding *f)
{
    /* needs: the main GPU process's phases; its code and data I/O; cuInit's host time */
    const struct wsl_run_phases *rp = &run->phases;
    if (!rp->known || !run->wall_ns)
        return false;
    const struct wsl_phases *ph = &rp->main;
    uint64_t startup = ph->first_submit_ns - ph->start_ns;
    /* fires: start-up is at least 20% of the wall time and at least 2 s */
    if (startup < MIN_NS || (double)startup < MIN_SHARE * (double)run->wall_ns)
        return false;
    f->time_lost_ns = startup;
    f->severity = wsl_severity_of(startup, run->wall_ns); /* a phase of its own: of the wall time */
    f->severity_fixed = true;
    uint64_t init_ns = 0;
    for (size_t i = 0; i < run->api_count; i++)
        if (run->apis[i].category == WSL_CAT_INIT)
            init_ns += run->apis[i].ns.sum;
    const struct wsl_process *m = NULL;
    for (size_t i = 0; i < run->proc_count; i++)
        if (run->procs[i].pid == rp->main_pid)
            m = &run->procs[i];
    uint64_t code_ns = m ? m->io.code.read_time + m->io.code.meta_time + m->io.code.mmap_time : 0;
    uint64_t data_ns = m ? m->io.data.read_time + m->io.data.meta_time : 0;
    wsl_evidence_u64(f, "startup_ns", startup);
    wsl_evidence_number(f, "wall_share", (double)startup / (double)run->wall_ns);
    wsl_evidence_u64(f, "cuda_init_ns", init_ns);
    wsl_evidence_u64(f, "code_file_io_ns", code_ns);
    wsl_evidence_u64(f, "code_files", m ? m->io.code.files_opened : 0);
    wsl_evidence_u64(f, "data_file_io_ns", data_ns);

    char a[32], b[32], c[32], d[32];
    f->summary = xasprintf("The main process (pid %" PRId32 ") ran %s before its first GPU work (%.0f%% of the "
                           "wall time): CUDA initialisation %s, reading %" PRIu64 " Python modules and libraries "
                           "%s, data file I/O %s; the rest is the program's own start-up (imports, set-up, data "
                           "preparation)",
                           rp->main_pid, wsl_format_ns(a, sizeof a, startup),
                           100.0 * (double)startup / (double)run->wall_ns, wsl_format_ns(b, sizeof b, init_ns),
                           m ? m->io.code.files_opened : 0, wsl_format_ns(c, sizeof c, code_ns),
                           wsl_format_ns(d, sizeof d, data_ns));
    f->advice = xstrdup(
        "See where start-up goes: python -X importtime for imports (import heavy modules lazily, where they are "
        "used), and py-spy over the first seconds. Prepare data once and save it (shards, a cached array) rather "
        "than on every run; open datasets lazily; keep CUDA_MODULE_LOADING=LAZY (the default) so the driver loads "
        "only the kernels used. On a short run start-up dominates: measure the training loop apart from it (the "
        "steady state) before tuning.");
    return true;
}

const struct wsl_rule wsl_rule_startup = {
    .id = "startup",
    .order = 120,
    .needs = "the run's phases: the main GPU process's start to its first GPU submission",
    .how_computed = "Start-up is the main GPU process's time from its start to its first GPU submission (a kernel "
                    "or graph launch, a copy or a memset). Fires when it is at least 2 s and at least 20% of the "
                    "wall time. Time lost: the start-up time (not all of it avoidable); severity is its share of "
                    "the wall time, not of the steady state.",
    .fix = "find slow imports (python -X importtime), prepare data once, import and open lazily",
    .evaluate = evaluate,
};
