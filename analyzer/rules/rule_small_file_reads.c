/*
 * small_file_reads: the data is many small files (opening, stat-ing and
 * closing them costs more than reading them), or it is read in small
 * requests (Drishti's "small requests"). The time lost is what a few large
 * shards, or large requests, would have saved.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "rules.h"
#include "io_costs.h"
#include "util.h"

#define MIN_FILES 1000u                 /* data files opened before "many small files" can fire */
#define MIN_META_SHARE 0.20             /* open+stat+seek+close time as a share of data I/O time */
#define MIN_SMALL_READS 1000u           /* small reads before "small requests" can fire */
#define MIN_SMALL_READ_SHARE 0.10       /* Drishti: small requests above 10% of reads */
#define SHARD_BYTES (256ull << 20)      /* the shard size the estimate assumes */
#define MIN_LARGE_READ_BYTES (64ull << 20) /* large reads needed to trust their measured rate */

static bool evaluate(const struct wsl_run *run, struct wsl_finding *f)
{
    const struct wsl_io *io = &run->io;
    const struct wsl_io_summary *s = &io->total;
    const struct wsl_io_counts *data = &s->data;

    /* needs: data calls, sizes at open, read sizes of named files */
    uint64_t files = data->files_opened;
    uint64_t median_size = wsl_hist_quantile(&io->file_sizes, 0.5);
    uint64_t io_time = wsl_io_time(data);
    double meta_share = io_time ? (double)data->meta_time / (double)io_time : 0;
    double small_read_share = s->named_reads ? (double)s->small_reads / (double)s->named_reads : 0;

    /* fires: (a) many small files whose metadata calls weigh, (b) small requests */
    bool many_small_files = files >= MIN_FILES && io->file_sizes.count > 0 &&
                            median_size < WSL_IO_SMALL_FILE_BYTES && meta_share >= MIN_META_SHARE;
    bool small_requests = s->small_reads >= MIN_SMALL_READS && small_read_share > MIN_SMALL_READ_SHARE;

    /* time lost, (a): metadata time beyond what opening a few shards holding the
     * same bytes would cost, at this run's own metadata cost per file */
    uint64_t shards = 0, meta_excess = 0;
    if (many_small_files) {
        shards = (s->named_bytes_read + SHARD_BYTES - 1) / SHARD_BYTES;
        if (shards == 0)
            shards = 1;
        double per_file = (double)data->meta_time / (double)files;
        double shard_cost = per_file * (double)shards;
        meta_excess = (double)data->meta_time > shard_cost ? data->meta_time - (uint64_t)shard_cost : 0;
    }
    /* (b): small-read time beyond reading the same bytes at the rate this run's
     * large reads reached (ext4's 1.5 GB/s when it had too few) */
    uint64_t request_excess = 0;
    double rate = wsl_io_costs[WSL_IO_COST_EXT4_WSL2].read_bytes_per_s / 1e9; /* bytes per ns */
    if (s->large_read_bytes >= MIN_LARGE_READ_BYTES && s->large_read_time > 0)
        rate = (double)s->large_read_bytes / (double)s->large_read_time;
    if (small_requests) {
        double at_rate = (double)s->small_read_bytes / rate;
        request_excess = (double)s->small_read_time > at_rate ? s->small_read_time - (uint64_t)at_rate : 0;
    }
    if (meta_excess == 0 && request_excess == 0)
        return false;
    f->time_lost_ns = meta_excess + request_excess;

    /* evidence */
    wsl_evidence_u64(f, "files_opened", files);
    wsl_evidence_u64(f, "median_file_size", median_size);
    wsl_evidence_u64(f, "small_files", s->small_files);
    wsl_evidence_number(f, "share_small_files", files ? (double)s->small_files / (double)files : 0);
    wsl_evidence_u64(f, "meta_ns", data->meta_time);
    wsl_evidence_u64(f, "io_ns", io_time);
    wsl_evidence_number(f, "meta_share", meta_share);
    wsl_evidence_u64(f, "reads", s->named_reads);
    wsl_evidence_u64(f, "small_reads", s->small_reads);
    wsl_evidence_number(f, "small_read_share", small_read_share);
    wsl_evidence_u64(f, "shards_estimate", shards);
    wsl_evidence_u64(f, "meta_excess_ns", meta_excess);
    wsl_evidence_u64(f, "request_excess_ns", request_excess);

    /* summary and advice */
    char size[32], meta[32];
    if (meta_excess > 0)
        f->summary = xasprintf("%" PRIu64 " data files opened, median size %s: opening, stat-ing and closing "
                               "them took %s, %.0f%% of file I/O time",
                               files, wsl_format_bytes(size, sizeof size, median_size),
                               wsl_format_ns(meta, sizeof meta, data->meta_time), meta_share * 100);
    else
        f->summary = xasprintf("%.0f%% of %" PRIu64 " reads of data files asked for 1 MiB or less (%s in them)",
                               small_read_share * 100, s->named_reads,
                               wsl_format_ns(meta, sizeof meta, s->small_read_time));
    f->advice = xasprintf(
        "%s With PyTorch, raise DataLoader(num_workers=...) so that opens and reads overlap. Keep the files on "
        "a local Linux disk (ext4, not /mnt/c or a network share), where the page cache keeps them after the "
        "first epoch.",
        meta_excess > 0
            ? "Pack the small files into a few large shards (tar files read with WebDataset, or one "
              "LMDB/HDF5/array file) so that one open serves thousands of samples."
            : "Read in larger requests (1 MiB or more), e.g. with a bigger buffer (open(..., buffering=1<<20)).");
    return true;
}

const struct wsl_rule wsl_rule_small_file_reads = {
    .id = "small_file_reads",
    .order = 20,
    .needs = "io.total (data calls, read sizes of named files), io.file_sizes (size at open)",
    .how_computed =
        "Fires when (a) at least 1000 data files were opened, their median size at open is below 1 MiB and "
        "open+stat+seek+close take at least 20% of data I/O time, or (b) at least 1000 reads of named data "
        "files returned 1 MiB or less and they are more than 10% of those reads (Drishti); and the time lost "
        "is above 0. Time lost (a): metadata time minus ceil(bytes read / 256 MiB) shards times this run's "
        "metadata time per file; (b): small-read time minus their bytes at the rate of this run's reads above "
        "1 MiB (1.5 GB/s, ext4 inside WSL2, when they moved less than 64 MiB).",
    .fix = "pack the small files into shards (tar/WebDataset, one array file) or raise DataLoader num_workers",
    .evaluate = evaluate,
};
