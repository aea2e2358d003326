/*
 * slow_writes: the program waits on writing files: checkpoints, logs or
 * outputs written in the training loop's thread, synced, on a slow
 * filesystem. Checkpoints written to a Windows drive under WSL2 (/mnt/c over
 * 9p, ~293 MB/s sequential against ~1.9 GB/s on ext4, microsoft/WSL#5262) are
 * the common case; a network filesystem or many small synced writes are the
 * others.
 *
 * Needs the run's data-file writes per mount (io_analysis.h: writes, bytes
 * written, syncs and the host time in them, timed on every call).
 */
#include <inttypes.h>
#include <stdio.h>

#include "analysis.h"
#include "rules.h"
#include "util.h"

#define MIN_SHARE 0.05          /* of the wall time */
#define MIN_NS 100000000ull     /* 100 ms */

static bool evaluate(const struct wsl_run *run, struct wsl_finding *f)
{
    /* needs: host time in data-file writes and syncs, per mount */
    const struct wsl_io_counts *d = &run->io.total.data;
    if (!run->wall_ns || !d->write_time)
        return false;
    /* fires: the program spent at least 5% of the wall time and 100 ms writing and syncing files */
    if (d->write_time < MIN_NS || (double)d->write_time < MIN_SHARE * (double)run->wall_ns)
        return false;
    const struct wsl_io_mount *worst = NULL;
    for (size_t i = 0; i < run->io.mount_count; i++)
        if (!worst || run->io.mounts[i].data.write_time > worst->data.write_time)
            worst = &run->io.mounts[i];
    f->time_lost_ns = d->write_time;
    double rate = d->write_time ? (double)d->bytes_written * 1e9 / (double)d->write_time : 0;
    wsl_evidence_u64(f, "write_ns", d->write_time);
    wsl_evidence_u64(f, "writes", d->writes);
    wsl_evidence_u64(f, "bytes_written", d->bytes_written);
    wsl_evidence_u64(f, "syncs", d->syncs);
    wsl_evidence_number(f, "bytes_per_s", rate);
    bool windows = worst && (worst->kind == WSL_FS_WINDOWS_DRIVE || worst->kind == WSL_FS_WINDOWS_SHARE);
    if (worst) {
        wsl_evidence_string(f, "mount_point", *worst->mount_point ? worst->mount_point : "(unknown)");
        wsl_evidence_string(f, "fstype", worst->fstype);
        wsl_evidence_u64(f, "mount_write_ns", worst->data.write_time);
    }

    char a[32], b[32];
    f->summary = xasprintf("Writing files took %s (%.0f%% of the wall time): %" PRIu64 " writes of %s in all, %" PRIu64
                           " fsync/fdatasync, %.0f MB/s; most of it on %s (%s)",
                           wsl_format_ns(a, sizeof a, d->write_time),
                           100.0 * (double)d->write_time / (double)run->wall_ns, d->writes,
                           wsl_format_bytes(b, sizeof b, d->bytes_written), d->syncs, rate / 1e6,
                           worst && *worst->mount_point ? worst->mount_point : "an unknown mount",
                           worst ? worst->fstype : "?");
    f->advice = xstrdup(windows
                            ? "Write checkpoints and outputs to the Linux filesystem (your home folder in WSL2, "
                              "ext4) and copy them to the Windows drive after the run or in the background: "
                              "/mnt/c is served over 9p, several times slower for writes. Checkpoint less often, "
                              "and save from a background thread (or torch.distributed.checkpoint's async_save) "
                              "so the loop does not wait."
                            : "Save from a background thread (or torch.distributed.checkpoint's async_save) so the "
                              "loop does not wait; checkpoint less often; write few large buffers rather than "
                              "many small ones, and fsync once per file, not per write; on a network filesystem, "
                              "write locally and copy.");
    return true;
}

const struct wsl_rule wsl_rule_slow_writes = {
    .id = "slow_writes",
    .needs = "data-file writes and syncs: calls, bytes and host time, per mount",
    .how_computed = "Host time in write, pwrite, writev, fwrite, fsync and fdatasync on the program's data files "
                    "(not pipes, the terminal or system files), every call timed. Fires when it is at least 5% "
                    "of the wall time and at least 100 ms. Time lost: that time (a write moved off the loop's "
                    "thread or to a fast filesystem saves most of it).",
    .fix = "write checkpoints to a fast local filesystem and from a background thread",
    .evaluate = evaluate,
};
