/* The distributed part of the reports: ranks side by side, the straggler. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "json_writer.h"
#include "report_output.h"
#include "util.h"

static void write_rank(struct json_writer *w, const struct wsl_rank *r)
{
    json_begin_object(w);
    json_key_i64_or_null(w, "rank", r->rank >= 0, r->rank);
    json_key_string(w, "rank_source", r->rank_from_env ? "environment" : "process_order");
    json_key_i64_or_null(w, "local_rank", r->local_rank >= 0, r->local_rank);
    json_key_i64(w, "pid", r->pid);
    json_key_u64(w, "processes", r->processes);
    json_key_string(w, "host", r->host);
    json_key_i64_or_null(w, "gpu", r->gpu >= 0, r->gpu);
    json_key_string(w, "gpu_name", r->gpu_name);
    json_key_string(w, "gpu_pci_bus_id", r->gpu_pci_bus_id);
    json_key_string(w, "cuda_visible_devices", r->cuda_visible_devices);
    json_key_u64(w, "wall_ns", r->wall_ns);
    json_key_u64(w, "gpu_ns", r->gpu_ns);
    json_key_double_or_null(w, "gpu_busy", r->kernels_timed && r->wall_ns,
                            r->wall_ns ? (double)r->gpu_ns / (double)r->wall_ns : 0);
    json_key_u64(w, "compute_ns", r->compute_ns);
    json_key_u64(w, "collective_ns", r->collective_ns);
    json_key_u64(w, "collective_launches", r->collective_launches);
    json_key_u64(w, "collectives_timed", r->collectives_timed);
    json_key(w, "collectives");
    json_begin_object(w);
    for (int k = 0; k < WSL_COLL_KINDS; k++) {
        if (!r->coll_launches[k])
            continue;
        json_key(w, wsl_coll_kind_name(k));
        json_begin_object(w);
        json_key_u64(w, "launches", r->coll_launches[k]);
        json_key_u64(w, "gpu_ns", r->coll_ns[k]);
        json_end_object(w);
    }
    json_end_object(w);
    json_key_u64(w, "wait_ns", r->wait_ns);
    json_key_u64(w, "launches", r->launches);
    json_key_u64(w, "kernels_timed", r->kernels_timed);
    json_key_u64(w, "syncs", r->syncs);
    json_key_u64(w, "sync_ns", r->sync_ns);
    json_key(w, "io");
    json_begin_object(w);
    json_key_u64(w, "reads", r->io_reads);
    json_key_u64(w, "bytes_read", r->io_bytes);
    json_key_u64(w, "read_ns", r->io_read_ns);
    json_key_u64(w, "total_ns", r->io_ns);
    json_end_object(w);
    json_key(w, "step");
    if (r->have_step) {
        json_begin_object(w);
        json_key_string(w, "name", r->step_name);
        json_key_u64(w, "count", r->steps);
        json_key_u64(w, "mean_ns", r->step_mean_ns);
        json_end_object(w);
    } else {
        json_null(w);
    }
    json_key(w, "bottlenecks");
    json_begin_array(w);
    for (size_t i = 0; i < r->finding_count; i++) {
        json_begin_object(w);
        json_key_string(w, "id", r->findings[i].id);
        json_key_string(w, "severity", wsl_severity_name(r->findings[i].severity));
        json_key_u64(w, "time_lost_ns", r->findings[i].time_lost_ns);
        json_end_object(w);
    }
    json_end_array(w);
    json_end_object(w);
}

void report_json_distributed(struct json_writer *w, const struct wsl_run *run)
{
    const struct wsl_dist *d = &run->dist;
    json_key(w, "ranks");
    json_begin_array(w);
    for (size_t i = 0; i < d->count; i++)
        write_rank(w, &d->ranks[i]);
    json_end_array(w);
    json_key(w, "distributed");
    if (!d->active) {
        json_null(w);
        return;
    }
    json_begin_object(w);
    json_key_u64(w, "world_size", d->world_size);
    json_key_u64(w, "ranks_found", d->count);
    json_key_string(w, "rank_source", d->ranks_from_env ? "environment" : "process_order");
    json_key_bool(w, "collectives_seen", d->collectives_seen);
    json_key_double(w, "imbalance", d->imbalance >= 0 ? d->imbalance : NAN);
    json_key(w, "straggler");
    if (d->have_straggler) {
        const struct wsl_straggler *s = &d->straggler;
        json_begin_object(w);
        json_key_i64_or_null(w, "rank", s->rank >= 0, s->rank);
        json_key_i64(w, "pid", d->ranks[s->index].pid);
        json_key_u64(w, "wait_mean_ns", s->wait_mean_ns);
        json_key_u64(w, "wait_median_ns", s->wait_median_ns);
        json_key_u64(w, "wait_total_ns", s->wait_total_ns);
        json_key_string(w, "cause", s->cause);
        json_key_i64(w, "io_excess_ns", s->io_excess_ns);
        json_key_i64(w, "compute_excess_ns", s->compute_excess_ns);
        json_key_i64_or_null(w, "step_excess_ns", s->have_step_excess, s->step_excess_ns);
        json_end_object(w);
    } else {
        json_null(w);
    }
    json_end_object(w);
}

#define TEXT_MAX_RANKS 64

void report_text_distributed(FILE *out, const struct wsl_run *run)
{
    const struct wsl_dist *d = &run->dist;
    if (!d->active)
        return;
    char a[32], b[32], c[32], e[32], f[32], g[32], h[32];
    fprintf(out, "\nDistributed run: %zu ranks found (world size %u, ranks from %s)\n", d->count, d->world_size,
            d->ranks_from_env ? "the environment" : "process order");
    fprintf(out, "  %5s %8s %4s %10s %10s %10s %10s %10s %9s %7s %10s %10s  %s\n", "rank", "pid", "gpu", "wall",
            "compute", "collect.", "wait", "step", "launches", "syncs", "reads", "read time", "bottlenecks");
    for (size_t i = 0; i < d->count && i < TEXT_MAX_RANKS; i++) {
        const struct wsl_rank *r = &d->ranks[i];
        char gpu[12] = "-";
        if (r->gpu >= 0)
            snprintf(gpu, sizeof gpu, "%d", (int)r->gpu);
        fprintf(out, "  %5d %8d %4s %10s %10s %10s %10s %10s %9" PRIu64 " %7" PRIu64 " %10" PRIu64 " %10s  ",
                (int)r->rank, (int)r->pid, gpu, wsl_format_ns(a, sizeof a, r->wall_ns),
                wsl_format_ns(b, sizeof b, r->compute_ns), wsl_format_ns(c, sizeof c, r->collective_ns),
                wsl_format_ns(e, sizeof e, r->wait_ns),
                r->have_step ? wsl_format_ns(f, sizeof f, r->step_mean_ns) : "-", r->launches, r->syncs,
                r->io_reads, wsl_format_ns(g, sizeof g, r->io_read_ns));
        if (!r->finding_count)
            fputs("-", out);
        for (size_t k = 0; k < r->finding_count && k < 4; k++)
            fprintf(out, "%s%s", k ? ", " : "", r->findings[k].id);
        fputc('\n', out);
    }
    if (d->count > TEXT_MAX_RANKS)
        fprintf(out, "  ... %zu more ranks (--json lists them all)\n", d->count - TEXT_MAX_RANKS);
    for (size_t i = 0; i < d->count && i < TEXT_MAX_RANKS; i++) {
        const struct wsl_rank *r = &d->ranks[i];
        if (!r->collective_launches)
            continue;
        fprintf(out, "  rank %d collectives:", (int)r->rank);
        for (int k = 0; k < WSL_COLL_KINDS; k++)
            if (r->coll_launches[k])
                fprintf(out, " %s %" PRIu64 " x, %s;", wsl_coll_kind_name(k), r->coll_launches[k],
                        wsl_format_ns(h, sizeof h, r->coll_ns[k]));
        fprintf(out, " %" PRIu64 " of them timed\n", r->collectives_timed);
        if (i >= 7 && d->count > 8) {
            fputs("  ...\n", out);
            break;
        }
    }
    if (d->imbalance >= 0)
        fprintf(out, "  compute imbalance (max/min GPU compute per rank): %.2f\n", d->imbalance);
    if (d->have_straggler) {
        const struct wsl_straggler *s = &d->straggler;
        fprintf(out, "  straggler: rank %d; the other ranks wait for it in collectives %s each on average (%s in all); "
                "cause: %s\n", (int)s->rank, wsl_format_ns(a, sizeof a, s->wait_mean_ns),
                wsl_format_ns(b, sizeof b, s->wait_total_ns), s->cause);
    } else if (!d->collectives_seen) {
        fputs("  straggler: unknown (no NCCL kernel was timed on the GPU)\n", out);
    } else {
        fputs("  straggler: none (the ranks wait about as long in collectives)\n", out);
    }
}
