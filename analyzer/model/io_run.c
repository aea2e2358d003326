/*
 * The run's file I/O once every trace is in (wsl_io_finish): mounts in the order of their data
 * I/O time, the filesystems they group into, folders ranked by time; and the tables freed.
 * One trace's calls are counted in io_analysis.c.
 */
#include "io_analysis.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

/* ---- the run ---------------------------------------------------------------------------- */

static int mount_by_time(const void *a, const void *b)
{
    const struct wsl_io_mount *x = a, *y = b;
    uint64_t tx = wsl_io_time(&x->data), ty = wsl_io_time(&y->data);
    if (tx != ty)
        return tx > ty ? -1 : 1;
    tx = wsl_io_time(&x->all);
    ty = wsl_io_time(&y->all);
    if (tx != ty)
        return tx > ty ? -1 : 1;
    int c = strcmp(x->mount_point, y->mount_point);
    return c ? c : strcmp(x->fstype, y->fstype);
}

static int fs_by_time(const void *a, const void *b)
{
    const struct wsl_io_fs *x = a, *y = b;
    uint64_t tx = wsl_io_time(&x->all), ty = wsl_io_time(&y->all);
    if (tx != ty)
        return tx > ty ? -1 : 1;
    if (x->all.reads != y->all.reads)
        return x->all.reads > y->all.reads ? -1 : 1;
    return strcmp(x->fstype, y->fstype);
}

static int dir_by_time(const void *a, const void *b)
{
    const struct wsl_io_dir *x = a, *y = b;
    if (x->time != y->time)
        return x->time > y->time ? -1 : 1;
    if (x->reads != y->reads)
        return x->reads > y->reads ? -1 : 1;
    return strcmp(x->path, y->path);
}

static void sort_mounts(struct wsl_io *io)
{
    if (io->mount_count < 2)
        return;
    /* Folders refer to mounts by index: sort a copy, then renumber. */
    struct wsl_io_mount *sorted = xmalloc(io->mount_count * sizeof *sorted);
    memcpy(sorted, io->mounts, io->mount_count * sizeof *sorted);
    qsort(sorted, io->mount_count, sizeof *sorted, mount_by_time);
    uint32_t *new_index = xmalloc(io->mount_count * sizeof *new_index);
    for (size_t i = 0; i < io->mount_count; i++)
        for (size_t j = 0; j < io->mount_count; j++)
            if (io->mounts[j].mount_point == sorted[i].mount_point) { /* the same strings moved */
                new_index[j] = (uint32_t)i;
                break;
            }
    for (size_t d = 0; d < io->dir_count; d++)
        if (io->dirs[d].mount != WSL_IO_NONE)
            io->dirs[d].mount = new_index[io->dirs[d].mount];
    free(io->mounts);
    io->mounts = sorted;
    free(new_index);
}

static void group_filesystems(struct wsl_io *io)
{
    io->fs = xcalloc(io->mount_count ? io->mount_count : 1, sizeof *io->fs);
    for (size_t i = 0; i < io->mount_count; i++) {
        const struct wsl_io_mount *m = &io->mounts[i];
        struct wsl_io_fs *fs = NULL;
        for (size_t k = 0; k < io->fs_count && !fs; k++)
            if (strcmp(io->fs[k].fstype, m->fstype) == 0)
                fs = &io->fs[k];
        if (!fs) {
            fs = &io->fs[io->fs_count++];
            fs->fstype = m->fstype;
            fs->system = true;
        }
        struct wsl_clock_map identity = {.ns_per_tick = 1.0, .rate_known = true};
        wsl_io_counts_add(&fs->all, &m->all, &identity);
        fs->crosses_windows |= wsl_fs_kind_crosses_windows(m->kind);
        fs->system &= wsl_fs_kind_is_system(m->kind);
        fs->mounts = xrealloc(fs->mounts, (fs->mount_count + 1) * sizeof *fs->mounts);
        fs->mounts[fs->mount_count++] = (uint32_t)i;
    }
    if (io->fs_count > 1)
        qsort(io->fs, io->fs_count, sizeof *io->fs, fs_by_time);
}

void wsl_io_finish(struct wsl_io *io)
{
    if (io->finished)
        return;
    io->finished = true;
    sort_mounts(io);
    group_filesystems(io);
    if (io->dir_count > 1)
        qsort(io->dirs, io->dir_count, sizeof *io->dirs, dir_by_time);
    wsl_u64_map_free(&io->dir_index);    /* it indexes the unsorted order */
}

double wsl_io_files_per_s(const struct wsl_io *io)
{
    const struct wsl_io_summary *s = &io->total;
    if (!s->have_span || s->last <= s->first)
        return 0;
    return (double)s->data.files_opened / ((double)(s->last - s->first) / 1e9);
}

void wsl_io_free(struct wsl_io *io)
{
    for (size_t i = 0; i < io->mount_count; i++) {
        free(io->mounts[i].mount_point);
        free(io->mounts[i].fstype);
        free(io->mounts[i].source);
        free(io->mounts[i].data_root);
    }
    free(io->mounts);
    for (size_t i = 0; i < io->fs_count; i++)
        free(io->fs[i].mounts);
    free(io->fs);
    for (size_t i = 0; i < io->dir_count; i++)
        free(io->dirs[i].path);
    free(io->dirs);
    wsl_u64_map_free(&io->dir_index);
    wsl_hist_free(&io->file_sizes);
    free(io->lazy_left);
    memset(io, 0, sizeof *io);
}
