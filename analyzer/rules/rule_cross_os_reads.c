/*
 * cross_os_reads: the program's data files live on a Windows drive (9p drvfs
 * or virtiofs under WSL2, drvfs under WSL1), where every open, stat and read
 * is a round trip to the Windows host. Fires by where the files live, not by
 * how slow they were; the time lost is what the same calls would have saved
 * on the distribution's own ext4 disk.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "rules.h"
#include "io_costs.h"
#include "util.h"

/* Served by Windows and holding the user's files (the WSL driver store is system). */
static bool holds_windows_data(const struct wsl_io_mount *m)
{
    return (m->kind == WSL_FS_WINDOWS_DRIVE || m->kind == WSL_FS_WINDOWS_SHARE) &&
           m->data.files_opened + m->data.reads + m->data.mmaps > 0;
}

/* What the calls in c would have cost on ext4 inside WSL2 (ns). Charges each
 * opened file a whole open+read+close cycle and each read a call on top of
 * its bytes, so it errs toward a smaller time lost. */
static double ext4_estimate_ns(const struct wsl_io_counts *c)
{
    const struct wsl_io_cost *ext4 = &wsl_io_costs[WSL_IO_COST_EXT4_WSL2];
    double failed_opens = (double)(c->opens - c->files_opened);
    return (double)c->files_opened * ext4->open_cycle_ns +
           (failed_opens + (double)(c->stats + c->seeks + c->mmaps + c->reads)) * ext4->call_ns +
           (double)c->bytes_read / ext4->read_bytes_per_s * 1e9;
}

/* The folder to copy: the deepest one holding every data file read on the
 * mount, or, when that is the whole drive, the folder with the most I/O time. */
static const char *folder_to_copy(const struct wsl_io *io, uint32_t mount_index)
{
    const struct wsl_io_mount *m = &io->mounts[mount_index];
    if (m->data_root && *m->data_root && strcmp(m->data_root, m->mount_point) != 0 &&
        strlen(m->data_root) > strlen(m->mount_point))
        return m->data_root;
    for (size_t i = 0; i < io->dir_count; i++) /* sorted by time */
        if (io->dirs[i].mount == mount_index && io->dirs[i].reads + io->dirs[i].files > 0)
            return io->dirs[i].path;
    return m->mount_point;
}

static char *copy_advice(const char *folder)
{
    const char *base = strrchr(folder, '/');
    base = base && base[1] ? base + 1 : "dataset";
    char *src = xasprintf("%s/", folder);
    char *quoted_src = wsl_shell_quote(src);
    char *quoted_base = wsl_shell_quote(base);
    char *advice = xasprintf(
        "Copy the data into the Linux filesystem and read it from there: "
        "`mkdir -p ~/data && rsync -a %s ~/data/%s/` (or `cp -r %s ~/data/%s`), then point the program at "
        "~/data/%s. On ext4 inside WSL2 a stat costs ~1.5 us instead of ~1 ms and reads run ~4x faster. "
        "To keep working on the files from Windows, keep them on the Linux side and open "
        "\\\\wsl$\\<distro>\\home\\<user>\\data in Explorer or your editor.",
        quoted_src, quoted_base, quoted_src, quoted_base, base);
    free(src);
    free(quoted_src);
    free(quoted_base);
    return advice;
}

static bool evaluate(const struct wsl_run *run, struct wsl_finding *f)
{
    const struct wsl_io *io = &run->io;

    /* needs: the mounts with data I/O; fires: data files on a Windows drive */
    struct wsl_io_counts windows;
    memset(&windows, 0, sizeof windows);
    uint32_t main_mount = WSL_IO_NONE;
    for (size_t i = 0; i < io->mount_count; i++) {
        const struct wsl_io_mount *m = &io->mounts[i];
        if (!holds_windows_data(m))
            continue;
        if (main_mount == WSL_IO_NONE)
            main_mount = (uint32_t)i;   /* mounts are sorted by data I/O time */
        const struct wsl_io_counts *c = &m->data;
        windows.reads += c->reads;
        windows.bytes_read += c->bytes_read;
        windows.opens += c->opens;
        windows.files_opened += c->files_opened;
        windows.stats += c->stats;
        windows.seeks += c->seeks;
        windows.closes += c->closes;
        windows.mmaps += c->mmaps;
        windows.read_time += c->read_time;
        windows.meta_time += c->meta_time;
        windows.mmap_time += c->mmap_time;
        char *label = xasprintf("%s (%s)", m->mount_point, m->fstype);
        wsl_evidence_list_add(f, "mounts", label);
        free(label);
        if (m->data_root && *m->data_root)
            wsl_evidence_list_add(f, "data_roots", m->data_root);
    }
    if (main_mount == WSL_IO_NONE)
        return false;

    /* time lost: measured time there minus the same calls on ext4 inside WSL2 */
    uint64_t measured = wsl_io_time(&windows);
    double estimate = ext4_estimate_ns(&windows);
    f->time_lost_ns = (double)measured > estimate ? measured - (uint64_t)estimate : 0;

    /* evidence */
    uint64_t all_read = io->total.data.read_time;
    double read_share = all_read ? (double)windows.read_time / (double)all_read : 0;
    wsl_evidence_u64(f, "files_opened", windows.files_opened);
    wsl_evidence_u64(f, "reads", windows.reads);
    wsl_evidence_u64(f, "bytes_read", windows.bytes_read);
    wsl_evidence_u64(f, "metadata_calls", windows.opens + windows.stats + windows.seeks + windows.closes);
    wsl_evidence_u64(f, "io_ns", measured);
    wsl_evidence_u64(f, "read_ns", windows.read_time);
    wsl_evidence_u64(f, "meta_ns", windows.meta_time);
    wsl_evidence_u64(f, "ext4_estimate_ns", (uint64_t)estimate);
    wsl_evidence_number(f, "share_of_read_time", read_share);
    wsl_evidence_bool(f, "wsl", io->wsl);

    /* summary and advice */
    const struct wsl_io_mount *m = &io->mounts[main_mount];
    char bytes[32], time[32];
    f->summary = xasprintf("Data files are on the Windows drive %s (%s): %" PRIu64 " files opened, %s read in %"
                           PRIu64 " reads, %.0f%% of the data read time; %s spent in file calls there",
                           m->mount_point, m->fstype, windows.files_opened,
                           wsl_format_bytes(bytes, sizeof bytes, windows.bytes_read), windows.reads,
                           read_share * 100, wsl_format_ns(time, sizeof time, measured));
    f->advice = copy_advice(folder_to_copy(io, main_mount));
    return true;
}

const struct wsl_rule wsl_rule_cross_os_reads = {
    .id = "cross_os_reads",
    .order = 10,
    .needs = "io.mounts (data calls per mount, filesystem kind), io.dirs",
    .how_computed =
        "Fires when data files (not /proc, /sys, /dev) were opened or read on a mount served by Windows: "
        "9p with aname=drvfs or source drvfs, drvfs (WSL1), virtiofs or other 9p under WSL. Time lost = host "
        "time of the data calls there minus what the same calls cost on ext4 inside WSL2: 53 us per opened "
        "file (an open+read+close cycle, microsoft/WSL#9430), 1.5 us per other call (stat, microsoft/WSL#7038) "
        "and 1.5 GB/s of bytes read (enso-org/enso#1542); never below 0.",
    .fix = "copy the data from the Windows drive into the Linux filesystem (e.g. ~/data) and read it there",
    .evaluate = evaluate,
};
