/*
 * compilation: the run's warm-up compiles: JIT compilation of kernels
 * (torch.compile's Inductor and Triton, XLA, NVRTC, PTX JIT in the driver),
 * module loads, compiler processes. Its time is paid again on every run whose
 * caches are cold.
 *
 * Needs the run's phases: the warm-up's time beyond what its work takes at the
 * steady state's pace, its module loads, and the compiler processes.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "rules.h"
#include "util.h"

#define MIN_LOADS 5             /* module loads (cuModuleLoad*: code built at run time) in warm-up */
#define MIN_SHARE 0.05          /* of the wall time */

static bool evaluate(const struct wsl_run *run, struct wsl_finding *f)
{
    /* needs: the main GPU process's phases, the compilers the run started */
    const struct wsl_run_phases *rp = &run->phases;
    if (!rp->known || !run->wall_ns)
        return false;
    const struct wsl_phases *ph = &rp->main;
    /* library loads (the runtime loading cuBLAS's or PyTorch's kernels lazily) are not compilation */
    bool compiled = ph->warmup_jit_loads >= MIN_LOADS || rp->compile_in_warmup > 0;
    uint64_t lost = ph->warmup_excess_ns > ph->warmup_module_load_ns ? ph->warmup_excess_ns : ph->warmup_module_load_ns;
    /* fires: signs of compilation in warm-up, and warm-up beyond the steady pace of at least 5% of wall time */
    if (!compiled || (double)lost < MIN_SHARE * (double)run->wall_ns)
        return false;
    f->time_lost_ns = lost;
    f->severity = wsl_severity_of(lost, run->wall_ns); /* warm-up: of the wall time */
    f->severity_fixed = true;
    uint64_t warmup = ph->steady_start_ns - ph->first_submit_ns;
    wsl_evidence_u64(f, "warmup_ns", warmup);
    wsl_evidence_u64(f, "warmup_excess_ns", ph->warmup_excess_ns);
    wsl_evidence_u64(f, "warmup_steps", ph->warmup_steps);
    wsl_evidence_u64(f, "steady_step_ns", ph->step_ns);
    wsl_evidence_u64(f, "module_loads_in_warmup", ph->warmup_module_loads);
    wsl_evidence_u64(f, "module_load_ns_in_warmup", ph->warmup_module_load_ns);
    wsl_evidence_u64(f, "jit_module_loads_in_warmup", ph->warmup_jit_loads);
    wsl_evidence_u64(f, "module_loads_in_steady_state", ph->steady_module_loads);
    wsl_evidence_u64(f, "compiler_processes", rp->compile_processes);
    wsl_evidence_u64(f, "compiler_process_ns", rp->compile_process_ns);
    const char *fw = wsl_kern_framework(&run->kernels);
    wsl_evidence_string(f, "framework", fw ? fw : "unknown");

    char a[32], b[32], c[32], d[32];
    f->summary = xasprintf("Warm-up took %s, %s more than its work takes at the steady state's pace: %" PRIu64
                           " module loads (%s in the driver) and %" PRIu64 " compiler processes (%s) before the "
                           "steady state%s",
                           wsl_format_ns(a, sizeof a, warmup), wsl_format_ns(b, sizeof b, lost),
                           ph->warmup_module_loads, wsl_format_ns(c, sizeof c, ph->warmup_module_load_ns),
                           rp->compile_in_warmup, wsl_format_ns(d, sizeof d, rp->compile_process_ns),
                           ph->steady_module_loads ? "; modules were still loaded in the steady state "
                                                     "(recompilation?)" : "");
    if (fw && !strcmp(fw, "jax"))
        f->advice = xstrdup(
            "Keep XLA's compilations across runs: jax.config.update(\"jax_compilation_cache_dir\", DIR) (with "
            "jax_persistent_cache_min_compile_time_secs lowered to cache small programs too). Avoid recompiling: "
            "keep shapes and dtypes fixed (pad batches), mark static arguments (static_argnums) and jit once.");
    else
        f->advice = xstrdup(
            "Keep compiled kernels across runs: torch.compile caches in TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR "
            "(point both at a disk that persists, and keep TORCHINDUCTOR_FX_GRAPH_CACHE=1), XLA in "
            "jax_compilation_cache_dir, CuPy in CUPY_CACHE_DIR, the driver's PTX JIT in CUDA_CACHE_PATH (raise "
            "CUDA_CACHE_MAXSIZE). Compile less: mode=\"max-autotune\" compiles far longer than the default; keep "
            "shapes fixed or mark them dynamic once (torch._dynamo.mark_dynamic) to avoid recompiles; ship kernels "
            "built for the GPU's architecture so the driver need not JIT PTX.");
    return true;
}

const struct wsl_rule wsl_rule_compilation = {
    .id = "compilation",
    .order = 130,
    .needs = "the run's phases: warm-up, its module loads and slow first steps; the compiler processes",
    .how_computed = "Warm-up is the main GPU process's time from its first GPU submission to its steady state. "
                    "Fires when warm-up shows compilation (at least 5 cuModuleLoad* calls: code built at run time, "
                    "not the runtime's library loads; or a compiler process: ptxas, a C compiler, a compile worker, started before the steady state) and "
                    "its time beyond the steady pace is at least 5% of the wall time. Time lost: that excess (NVTX "
                    "steps: the first steps' time beyond the median step; otherwise the warm-up less its launches "
                    "at the steady state's time per launch), at least the module loads' own time; severity is its "
                    "share of the wall time.",
    .fix = "persist compile caches (TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR, jax_compilation_cache_dir), compile less",
    .evaluate = evaluate,
};
