/*
 * projection_report.c: the projection as JSON ("projection") and as a text section.
 */
#include <inttypes.h>
#include <string.h>

#include "projection.h"
#include "util.h"

static const char *const cause_how[WSL_PROJ_CAUSES] = {
    [WSL_PROJ_LAUNCH] = "each kernel launch's recorded host time + (target launch_ns - source launch_ns); "
                        "cuGraphLaunch kept as recorded (no profile has its host cost)",
    [WSL_PROJ_SYNC] = "replayed: waits for the simulated GPU work submitted before it (kernels in order per stream, "
                      "their sampled GPU durations), plus the recorded overhead (recorded time minus the recorded "
                      "wait) + (target sync_ns - source sync_ns)",
    [WSL_PROJ_ALLOC] = "recorded host time + (target - source) cost of cuMemAlloc/cuMemFree at the call's size "
                       "(interpolated in log(size); the alloc+free pair's difference at the allocation when a "
                       "profile only has pairs), pool_alloc_ns/pool_free_ns, pinned_alloc_ns",
    [WSL_PROJ_COPY] = "recorded host time + (target memcpy_ns - source memcpy_ns); blocking copies first wait for "
                      "the simulated GPU; memsets kept",
    [WSL_PROJ_EVENT] = "cuEventRecord and cuEventQuery: + (target - source) event_record_ns / event_query_ns; "
                       "others kept; events carry the simulated GPU time to syncs and stream waits",
    [WSL_PROJ_FILE] = "recorded host time + (target - source) per call (stat_ns, open_read_close_ns at open) and "
                      "per byte read (1/read_bytes_per_s), on the file's filesystem type (or --project-fs)",
    [WSL_PROJ_OTHER] = "kept as recorded (no profile figure)",
    [WSL_PROJ_CPU] = "the program's own time between its calls: unchanged",
};

/* The bottleneck id a cause stands for, when it is significant. */
static const char *const cause_bottleneck[WSL_PROJ_CAUSES] = {
    [WSL_PROJ_LAUNCH] = "launch_bound", [WSL_PROJ_SYNC] = "sync_heavy", [WSL_PROJ_ALLOC] = "alloc_churn",
    [WSL_PROJ_COPY] = "small_transfers", [WSL_PROJ_FILE] = "file_io",
};

static const char *change_word(double share_rec, double share_proj)
{
    bool was = share_rec >= WSL_PROJ_SIGNIFICANT, is = share_proj >= WSL_PROJ_SIGNIFICANT;
    if (!was && is)
        return "appears";
    if (was && !is)
        return "vanishes";
    if (!was)
        return "absent";
    if (share_proj > share_rec * 1.25)
        return "grows";
    if (share_proj < share_rec * 0.8)
        return "shrinks";
    return "stays";
}

static double share(uint64_t part, uint64_t wall)
{
    return wall ? (double)part / (double)wall : 0;
}

static const char *how_overall =
    "a replay of every recorded call per thread in time order: each call's host cost changes by the target's "
    "figure minus the source platform's for its kind, every later call of the thread moves by that much, the "
    "program's own time between calls is unchanged, and a simulated GPU runs the kernels in order per stream "
    "with their sampled durations so that syncs wait only for real GPU work. Figures unknown on either side "
    "keep the recorded cost (unknown_figures). Threads are independent; processes are not moved against "
    "each other (docs/projection.md)";

static const char *const expo_name[WSL_EXPO_COUNT] = {"launch", "sync", "alloc", "file_metadata"};
static const char *const expo_unit[WSL_EXPO_COUNT] = {"+1 us a launch", "+1 us a synchronization",
                                                      "+10 us an allocation or free", "+100 us a file open/stat/folder op"};

static void write_exposure_json(struct json_writer *w, const struct wsl_projection *p)
{
    json_begin_object(w);
    for (unsigned k = 0; k < WSL_EXPO_COUNT; k++) {
        const struct wsl_proj_exposure *x = &p->exposure[k];
        json_key(w, expo_name[k]);
        json_begin_object(w);
        json_key_u64(w, "per_ns", (uint64_t)x->per_ns);
        json_key_u64(w, "calls", x->calls);
        json_key_i64(w, "wall_ns", x->wall_ns);
        json_key_double_or_null(w, "step_ns", x->step_known, x->step_ns);
        json_end_object(w);
    }
    json_key_string(w, "how_computed",
                    "the replay run again with only this cost added to every call of the family (launches: "
                    "kernel and graph launches; syncs: stream, context and event syncs and blocking copies; "
                    "allocations: device, pool, managed and pinned allocations and their frees; file metadata: "
                    "opens, stats and folder calls (rename, unlink, mkdir, listing) on data filesystems), against "
                    "the replay with nothing added; step_ns: the change of the main process's steady state "
                    "divided by its steps (null: no steady state)");
    json_end_object(w);
}

static void write_cause_json(struct json_writer *w, const struct wsl_projection *p, unsigned c)
{
    const struct wsl_proj_cause_figs *f = &p->cause[c];
    json_key(w, wsl_proj_cause_name(c));
    json_begin_object(w);
    json_key_u64(w, "calls", f->calls);
    json_key_u64(w, "recorded_ns", f->recorded_ns);
    json_key_u64(w, "projected_ns", f->projected_ns);
    json_key_i64(w, "delta_ns", (int64_t)f->projected_ns - (int64_t)f->recorded_ns);
    if (c == WSL_PROJ_SYNC || c == WSL_PROJ_COPY) {
        json_key_u64(w, "gpu_wait_recorded_ns", f->wait_recorded_ns);
        json_key_u64(w, "gpu_wait_projected_ns", f->wait_projected_ns);
    }
    if (c != WSL_PROJ_CPU) {
        json_key_u64(w, "changed_calls", f->changed_calls);
        json_key_u64(w, "kept_calls", f->kept_calls);
    }
    json_key_string(w, "how_computed", cause_how[c]);
    json_end_object(w);
}

/* A cause that stands for a bottleneck: its share of the wall time, recorded and projected. */
static void write_bottleneck_json(struct json_writer *w, const struct wsl_projection *p, unsigned c)
{
    const struct wsl_proj_cause_figs *f = &p->cause[c];
    double sr = share(f->recorded_ns, p->wall_ns_recorded), sp = share(f->projected_ns, p->wall_ns);
    json_begin_object(w);
    json_key_string(w, "id", cause_bottleneck[c]);
    json_key_string(w, "cause", wsl_proj_cause_name(c));
    json_key_u64(w, "time_ns_recorded", f->recorded_ns);
    json_key_u64(w, "time_ns", f->projected_ns);
    json_key_double(w, "share_recorded", sr);
    json_key_double(w, "share", sp);
    json_key_string(w, "change", change_word(sr, sp));
    json_end_object(w);
}

/* The simulated GPU's durations. */
#define GPU(key, member) JSON_U64_FIELD(struct wsl_projection, key, member)
static const struct json_u64_field gpu_fields[] = {
    GPU("kernel_samples", kernel_samples),
    GPU("graph_samples", graph_samples),
    GPU("launches", launches),
    GPU("launches_kernel_mean", launches_kernel_mean),
    GPU("launches_process_mean", launches_process_mean),
    GPU("launches_no_gpu_time", launches_no_gpu_time),
    GPU("graph_launches", graph_launches),
    GPU("captured_launches", captured_launches),
    GPU("gpu_ns", gpu_ns),
};
#undef GPU

void wsl_emulation_write_json(struct json_writer *w, const char *spec, const uint64_t added_ns[WSL_EMU_FAMILIES])
{
    json_key_string(w, "spec", spec);
    json_key(w, "added_ns");
    json_begin_object(w);
    for (unsigned f = 0; f < WSL_EMU_FAMILIES; f++)
        json_key_u64(w, wsl_emu_family_name(f), added_ns[f]);
    json_end_object(w);
}

void wsl_projection_write_json(struct json_writer *w, const struct wsl_projection *p)
{
    json_begin_object(w);
    json_key_string(w, "target", p->target.name);
    json_key_string(w, "target_origin", p->target.origin);
    json_key_string(w, "source", p->source);
    json_key_string(w, "target_fs", *p->fs ? p->fs : NULL);
    json_key_u64(w, "wall_ns", p->wall_ns);
    json_key_u64(w, "wall_ns_recorded", p->wall_ns_recorded);
    json_key_double(w, "ratio", share(p->wall_ns, p->wall_ns_recorded));
    json_key(w, "breakdown");
    json_begin_object(w);
    for (unsigned c = 0; c < WSL_PROJ_CAUSES; c++)
        write_cause_json(w, p, c);
    json_end_object(w);
    json_key(w, "bottlenecks");
    json_begin_array(w);
    for (unsigned c = 0; c < WSL_PROJ_CAUSES; c++)
        if (cause_bottleneck[c])
            write_bottleneck_json(w, p, c);
    json_end_array(w);
    json_key_string(w, "bottlenecks_how_computed",
                    "the host time of each cause's calls against the wall time, recorded and projected; a cause "
                    "taking at least 10% of the wall time counts as a bottleneck (appears, vanishes, grows, "
                    "shrinks by more than 25%, stays, absent). The report's rules are not re-run on projected "
                    "figures");
    json_key(w, "unknown_figures");
    json_begin_array(w);
    for (size_t i = 0; i < p->unknown_count; i++) {
        json_begin_object(w);
        json_key_string(w, "figure", p->unknown[i].what);
        json_key_u64(w, "calls", p->unknown[i].calls);
        json_end_object(w);
    }
    json_end_array(w);
    if (p->unknown_more)
        json_key_u64(w, "unknown_figures_more_calls", p->unknown_more);
    json_key(w, "gpu");
    json_begin_object(w);
    JSON_U64_FIELDS(w, p, gpu_fields);
    json_key_string(w, "how_computed",
                    p->gpu_estimate
                        ? "a launch runs for the report's estimate (gpu_time_est_ns): the mean GPU duration of its "
                          "kernel's timed launches of the same grid and block (GPU_KERNEL samples, less the event "
                          "pairs' overhead on those queued), else of its kernel's timed launches, else the "
                          "process's mean timed kernel; a graph launch the mean timed graph launch; without any GPU "
                          "timing it takes no GPU time and syncs keep their recorded cost (traces of older shims, "
                          "without launch configurations: as below)"
                        : "a launch runs for the mean GPU duration of its kernel's timed launches (GPU_KERNEL "
                          "samples; those that found the GPU idle at submit when there are any, their pairs being "
                          "corrected), else the process's mean timed kernel; without any GPU timing it takes no GPU "
                          "time and syncs keep their recorded cost");
    json_end_object(w);
    json_key(w, "processes");
    json_begin_array(w);
    for (size_t i = 0; i < p->proc_count; i++) {
        json_begin_object(w);
        json_key_i64(w, "pid", p->procs[i].pid);
        json_key_string(w, "source", p->procs[i].source);
        json_key_u64(w, "wall_ns_recorded", p->procs[i].wall_ns_recorded);
        json_key_u64(w, "wall_ns", p->procs[i].wall_ns);
        json_end_object(w);
    }
    json_end_array(w);
    if (p->emulation) {
        uint64_t added_ns[WSL_EMU_FAMILIES];
        for (unsigned f = 0; f < WSL_EMU_FAMILIES; f++)
            added_ns[f] = (uint64_t)p->emu.ns[f];
        json_key(w, "emulation");
        json_begin_object(w);
        wsl_emulation_write_json(w, p->emu_spec, added_ns);
        json_end_object(w);
    }
    if (p->exposure_known) {
        json_key(w, "exposure");
        write_exposure_json(w, p);
    }
    if (p->range.known) {
        json_key(w, "wall_ns_range");
        json_begin_object(w);
        json_key_u64(w, "low", p->range.low_ns);
        json_key_u64(w, "high", p->range.high_ns);
        json_key_bool(w, "high_open", p->range.high_open);
        json_key_string(w, "basis", p->range.basis);
        json_end_object(w);
    }
    json_key_u64(w, "calls_replayed", p->events);
    json_key_u64(w, "late_calls", p->late_events);
    json_key_string(w, "how_computed", how_overall);
    json_end_object(w);
}

void wsl_projection_write_text(FILE *out, const struct wsl_projection *p)
{
    char a[32], b[32], d[32];
    fprintf(out, "\nProjection onto %s (%s), recorded costs read as %s", p->target.name, p->target.origin, p->source);
    if (*p->fs)
        fprintf(out, ", files moved to %s", p->fs);
    fputs("\n", out);
    double ratio = p->wall_ns_recorded ? (double)p->wall_ns / (double)p->wall_ns_recorded : 0;
    fprintf(out, "  wall time: recorded %s, projected %s (%+.1f%%)\n",
            wsl_format_ns(a, sizeof a, p->wall_ns_recorded), wsl_format_ns(b, sizeof b, p->wall_ns),
            (ratio - 1) * 100);
    if (p->range.known)
        fprintf(out, "  wall time range over published figures: %s to %s%s\n    (%s)\n",
                wsl_format_ns(a, sizeof a, p->range.low_ns), wsl_format_ns(b, sizeof b, p->range.high_ns),
                p->range.high_open ? " or more" : "", p->range.basis);
    if (p->exposure_known) {
        fputs("  exposure (the replay with one cost raised):\n", out);
        for (unsigned k = 0; k < WSL_EXPO_COUNT; k++) {
            const struct wsl_proj_exposure *x = &p->exposure[k];
            int64_t wv = x->wall_ns;
            snprintf(d, sizeof d, "%s", wv < 0 ? "-" : "+");
            wsl_format_ns(d + 1, sizeof d - 1, (uint64_t)(wv < 0 ? -wv : wv));
            fprintf(out, "    %-30s wall %11s over %" PRIu64 " calls", expo_unit[k], d, x->calls);
            if (x->step_known)
                fprintf(out, "; step time %+.2f us", x->step_ns / 1000.0);
            fputs("\n", out);
        }
    }
    fprintf(out, "  %-12s %10s %11s %11s %12s  %s\n", "cause", "calls", "recorded", "projected", "change", "kept");
    for (unsigned c = 0; c < WSL_PROJ_CAUSES; c++) {
        const struct wsl_proj_cause_figs *f = &p->cause[c];
        if (!f->calls && c != WSL_PROJ_CPU)
            continue;
        int64_t delta = (int64_t)f->projected_ns - (int64_t)f->recorded_ns;
        snprintf(d, sizeof d, "%s", delta < 0 ? "-" : "+");
        wsl_format_ns(d + 1, sizeof d - 1, (uint64_t)(delta < 0 ? -delta : delta));
        fprintf(out, "  %-12s %10" PRIu64 " %11s %11s %12s", wsl_proj_cause_name(c), f->calls,
                wsl_format_ns(a, sizeof a, f->recorded_ns), wsl_format_ns(b, sizeof b, f->projected_ns), d);
        if (c != WSL_PROJ_CPU)
            fprintf(out, "  %" PRIu64, f->kept_calls);
        fputs("\n", out);
        if (c == WSL_PROJ_SYNC && f->calls)
            fprintf(out, "  %-12s %10s %11s %11s   (waiting for the GPU)\n", "", "",
                    wsl_format_ns(a, sizeof a, f->wait_recorded_ns), wsl_format_ns(b, sizeof b, f->wait_projected_ns));
    }
    for (unsigned c = 0; c < WSL_PROJ_CAUSES; c++) {
        if (!cause_bottleneck[c])
            continue;
        const struct wsl_proj_cause_figs *f = &p->cause[c];
        double sr = share(f->recorded_ns, p->wall_ns_recorded), sp = share(f->projected_ns, p->wall_ns);
        const char *word = change_word(sr, sp);
        if (strcmp(word, "absent") != 0)
            fprintf(out, "  %s %s: %.0f%% of the wall time recorded, %.0f%% projected\n", cause_bottleneck[c], word,
                    sr * 100, sp * 100);
    }
    fprintf(out, "  GPU durations: %" PRIu64 " launches from their kernel's timed mean, %" PRIu64
                 " from the process mean, %" PRIu64 " without GPU timing\n",
            p->launches_kernel_mean, p->launches_process_mean, p->launches_no_gpu_time);
    if (p->unknown_count) {
        fputs("  Unknown figures (those calls keep their recorded cost; a probe file fills them in):\n", out);
        for (size_t i = 0; i < p->unknown_count; i++)
            fprintf(out, "    %s (%" PRIu64 " calls)\n", p->unknown[i].what, p->unknown[i].calls);
    }
    if (p->late_events)
        fprintf(out, "  %" PRIu64 " calls came out of time order past the replay window\n", p->late_events);
}
