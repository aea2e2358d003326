/*
 * What-if projection (wslshim-report --project TARGET): the recorded run
 * replayed as a simulation with another platform's costs. docs/projection.md
 * explains the model and its limits.
 *
 * Two passes over each trace. The first collects the GPU durations the shim
 * sampled (GPU_KERNEL events: mean per function or graph handle, and the
 * process's mean; where the events name launch configurations, the report's
 * own estimate per launch, kernel_analysis.h's wsl_kern_estimate) and the
 * trace's final clock fit. The second replays the
 * events in time order (a window of at most WSL_PROJ_WINDOW events restores
 * the order across threads; memory stays bounded): per thread, every call is
 * moved by the cost differences of the calls before it, each call's host cost
 * changes by (target figure - source figure) for its kind, and a simulated
 * GPU runs the kernels in order per stream for their measured durations,
 * starting no earlier than their (moved) submission; synchronizations and
 * blocking copies wait for the work submitted before them. The same GPU
 * model runs on the recorded times too, to split each recorded sync into
 * waiting and overhead.
 */
#ifndef WSLSHIM_PROJECTION_H
#define WSLSHIM_PROJECTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "json_writer.h"
#include "profiles.h"
#include "wslshim/emulation.h"

#define WSL_PROJ_WINDOW (1u << 18)      /* events held to restore time order across threads */
#define WSL_PROJ_MAX_STREAMS 4096u      /* streams modelled per process; the rest share one queue */
#define WSL_PROJ_MAX_EVENTS (1u << 20)  /* CUDA events remembered per process */
#define WSL_PROJ_MAX_ALLOCS (1u << 22)  /* live allocations remembered per process (size at free) */
#define WSL_PROJ_MAX_UNKNOWN 32
#define WSL_PROJ_SIGNIFICANT 0.10       /* a cause is a bottleneck when it takes this share of the wall time */

enum wsl_proj_cause {
    WSL_PROJ_LAUNCH,    /* kernel and graph submissions */
    WSL_PROJ_SYNC,      /* stream, context and event synchronizations: overhead and waiting */
    WSL_PROJ_ALLOC,     /* device, pool and pinned allocations and frees */
    WSL_PROJ_COPY,      /* copies and memsets (blocking copies wait for the GPU too) */
    WSL_PROJ_EVENT,     /* event record, query, stream waits */
    WSL_PROJ_FILE,      /* file I/O calls */
    WSL_PROJ_OTHER,     /* every other recorded call: kept as recorded */
    WSL_PROJ_CPU,       /* the program's own time between calls: unchanged */
    WSL_PROJ_CAUSES
};

struct wsl_proj_cause_figs {
    uint64_t calls;
    uint64_t recorded_ns, projected_ns;         /* host time in these calls, summed over threads */
    uint64_t wait_recorded_ns, wait_projected_ns; /* of it, waiting for the GPU */
    uint64_t changed_calls;     /* calls whose cost both profiles know: moved by the difference */
    uint64_t kept_calls;        /* calls kept at their recorded cost (no figure, or one unknown) */
};

struct wsl_proj_unknown {
    char what[160];             /* e.g. "target wsl2: sync_ns" */
    uint64_t calls;             /* calls that kept their recorded cost for it */
};

struct wsl_proj_process {
    int32_t pid;
    char source[64];            /* the profile its recorded costs were read against */
    uint64_t wall_ns_recorded, wall_ns;
};

/* Costs added to each call, instead of a profile's differences: an emulation
 * SPEC given to --project, and the exposure replays. */
struct wsl_proj_emu {
    double ns[WSL_EMU_FAMILIES];    /* by enum wsl_emu_family, as the shim adds them */
    double file_meta_ns;            /* per open and stat on a data filesystem (not /proc, /sys...) */
    struct wsl_emu_fs fs;           /* fs:PATH=9p: calls on files under its paths (fs.count 0: none) */
};

/* How the wall time and the steady state's step time move per unit of added
 * cost on one call family (a replay with only that cost added). */
enum { WSL_EXPO_LAUNCH, WSL_EXPO_SYNC, WSL_EXPO_ALLOC, WSL_EXPO_FILE_META, WSL_EXPO_COUNT };
struct wsl_proj_exposure {
    double per_ns;                  /* the unit: 1000 (launch, sync), 10000 (alloc), 100000 (file metadata) */
    uint64_t calls;                 /* calls the unit was added to */
    int64_t wall_ns;                /* wall time change */
    bool step_known;                /* the main process has a steady state with steps */
    double step_ns;                 /* steady-state step time change */
};

/* A range of the projected wall time over published ranges of figures. */
struct wsl_proj_range {
    bool known;
    uint64_t low_ns, high_ns;
    bool high_open;                 /* families with no published figure: high_ns leaves them out */
    char basis[400];                /* the ranges used, and what is left out */
};

struct wsl_projection {
    struct wsl_profile target;
    bool emulation;             /* the target is an emulation SPEC: emu's costs added */
    char emu_spec[WSL_EMU_SPEC_MAX];
    struct wsl_proj_emu emu;
    struct wsl_proj_exposure exposure[WSL_EXPO_COUNT];
    bool exposure_known;
    struct wsl_proj_range range;
    uint64_t emu_calls;         /* calls an emulation SPEC (or an exposure replay) added a cost to */
    bool steady_step_known;     /* the options' steady state was replayed: */
    double steady_step_change_ns; /* its step time's change (projected - recorded) */
    char source[300];           /* the source profile's name ("native", "wsl2", a file), or "mixed: a, b" */
    char fs[32];                /* --project-fs; "" = the same filesystem type on the target */
    uint64_t wall_ns, wall_ns_recorded;
    struct wsl_proj_cause_figs cause[WSL_PROJ_CAUSES];
    struct wsl_proj_unknown unknown[WSL_PROJ_MAX_UNKNOWN];
    size_t unknown_count;
    uint64_t unknown_more;      /* calls with an unknown figure past WSL_PROJ_MAX_UNKNOWN names */
    struct wsl_proj_process *procs;
    size_t proc_count;
    /* GPU durations used for the simulated GPU */
    uint64_t kernel_samples, graph_samples;     /* GPU_KERNEL events read */
    uint64_t launches, launches_kernel_mean, launches_process_mean, launches_no_gpu_time;
    uint64_t graph_launches, captured_launches;
    uint64_t gpu_ns;            /* GPU work the simulation ran */
    bool gpu_estimate;          /* a process's launches ran for the report's estimate per configuration
                                   (its trace names launch configurations: kernel_analysis.h) */
    uint64_t events, late_events; /* calls replayed; of them, out of time order past the window */
};

struct wsl_projection_options {
    const char *target;         /* "native", "wsl2" or a calibration file */
    const char *source;         /* NULL: per process, "wsl2" when recorded under WSL 2 else "native" */
    const char *fs;             /* NULL: same filesystem type on the target */
    size_t window;              /* 0: WSL_PROJ_WINDOW (tests make it small) */
    /* The run's main process's steady state (recorded ns), for the exposure's
     * step time; steady_steps 0: none known. */
    int32_t steady_pid;
    uint64_t steady_start_ns, steady_end_ns, steady_steps;
    /* The run's recordings of these traces (trace_reader.h; NULL: read the files). */
    const struct wsl_trace_store *store;
};

/* Projects the run made of these traces. Returns 0, or -1 with one line in
 * err (a bad profile, an unreadable trace). */
int wsl_project(const char *const *paths, size_t count, const struct wsl_projection_options *opt,
                struct wsl_projection *out, char *err, size_t errlen);
void wsl_projection_free(struct wsl_projection *p);
/* Whether --project's TARGET can be read: a profile, or an emulation SPEC
 * (inline, or a file with "platform": "emulation"). 0, or -1 with err. */
int wsl_project_check_target(const char *target, char *err, size_t errlen);

/* "launch", "sync", "alloc", "copy", "event", "file_io", "other_cuda", "cpu" */
const char *wsl_proj_cause_name(unsigned cause);

/* The keys every "emulation" object has, the projection's and the report's: "spec" and
 * "added_ns" (ns added per call, by enum wsl_emu_family). */
void wsl_emulation_write_json(struct json_writer *w, const char *spec, const uint64_t added_ns[WSL_EMU_FAMILIES]);
/* The "projection" object (its value; the caller wrote the key). */
void wsl_projection_write_json(struct json_writer *w, const struct wsl_projection *p);
/* The text section. */
void wsl_projection_write_text(FILE *out, const struct wsl_projection *p);

#endif /* WSLSHIM_PROJECTION_H */
