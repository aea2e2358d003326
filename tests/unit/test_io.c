/* File I/O: MOUNTS and PATHS in the reader, the aggregation (exact, on
 * synthetic traces) and the two I/O bottleneck rules. */
#define _GNU_SOURCE /* memrchr */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "analysis.h"
#include "rules.h"
#include "io_analysis.h"
#include "io_scenarios.h"
#include "test_findings.h"
#include "unit_test.h"

static int analyze(struct wsl_run *run, const char *const *paths, size_t n)
{
    wsl_run_init(run);
    for (size_t i = 0; i < n; i++) {
        char err[WSL_READER_ERRLEN];
        CHECKF(wsl_run_add_trace(run, paths[i], err, sizeof err) == 0, "%s: %s", paths[i], err);
    }
    wsl_run_finish(run);
    return 0;
}

static const struct wsl_io_fs *fs_named(const struct wsl_run *run, const char *fstype)
{
    for (size_t i = 0; i < run->io.fs_count; i++)
        if (strcmp(run->io.fs[i].fstype, fstype) == 0)
            return &run->io.fs[i];
    return NULL;
}

static const struct wsl_io_mount *mount_named(const struct wsl_run *run, const char *mount_point)
{
    for (size_t i = 0; i < run->io.mount_count; i++)
        if (strcmp(run->io.mounts[i].mount_point, mount_point) == 0)
            return &run->io.mounts[i];
    return NULL;
}

struct expect_counts {
    uint64_t reads, bytes_read, opens, files_opened, stats, seeks, closes, mmaps, bytes_mapped, errors;
    uint64_t read_time, meta_time, mmap_time;
};

static int check_counts(const struct wsl_io_counts *c, struct expect_counts e, const char *what)
{
    const uint64_t got[] = {c->reads, c->bytes_read, c->opens, c->files_opened, c->stats, c->seeks, c->closes,
                            c->mmaps, c->bytes_mapped, c->errors, c->read_time, c->meta_time, c->mmap_time};
    const uint64_t want[] = {e.reads, e.bytes_read, e.opens, e.files_opened, e.stats, e.seeks, e.closes,
                             e.mmaps, e.bytes_mapped, e.errors, e.read_time, e.meta_time, e.mmap_time};
    static const char *const names[] = {"reads", "bytes_read", "opens", "files_opened", "stats", "seeks", "closes",
                                        "mmaps", "bytes_mapped", "errors", "read_time", "meta_time", "mmap_time"};
    for (size_t i = 0; i < sizeof got / sizeof got[0]; i++)
        CHECKF(got[i] == want[i], "%s.%s: %llu, expected %llu", what, names[i], (unsigned long long)got[i],
               (unsigned long long)want[i]);
    return 0;
}

/* The calls counted per name (the API table's open, read, fstat, lseek, close). */
static int check_file_calls(const struct wsl_run *run, const uint64_t want[5])
{
    static const char *const names[5] = {"open", "read", "fstat", "lseek", "close"};
    uint64_t calls[5] = {0};
    for (size_t i = 0; i < run->api_count; i++)
        for (int k = 0; k < 5; k++)
            if (!strcmp(run->apis[i].name, names[k]))
                calls[k] = run->apis[i].ns.count;
    for (int k = 0; k < 5; k++)
        CHECKF(calls[k] == want[k], "%s: %llu calls, %llu expected", names[k], (unsigned long long)calls[k],
               (unsigned long long)want[k]);
    return 0;
}

/* ---- the mixed trace: every kind of call, each file's fate known ---------------------------- */

struct mixed_span {
    uint64_t first_ns, last_ns;
};

static void write_mixed(const char *path, bool tsc, struct mixed_span *span)
{
    struct io_builder *b = iob_open_wsl2(path, tsc);
    iob_path(b, 1, "/home/u/data/a.bin");
    iob_path(b, 2, "/home/u/data/b.txt");
    iob_path(b, 3, "/mnt/c/Users/u/ds/img1.jpg");
    iob_path(b, 4, "/mnt/c/Users/u/ds/img2.jpg");
    iob_path(b, 5, "/proc/self/status");
    iob_path(b, 6, "/home/u/missing.cfg");
    iob_path(b, 7, "/dev/shm/torch_123");
    iob_path(b, 8, "/home/u//data/./sub/../c.bin");
    /* ext4: a 5 MiB file read in 1 MiB requests, then EOF, a seek */
    iob_openat(b, 3, 1, DEV_WSL2_ROOT, 5242880, 4000);
    for (int i = 0; i < 5; i++)
        iob_read(b, 3, 1, 1048576, 1048576, 100000);
    iob_read(b, 3, 1, 1048576, 0, 2000);
    iob_call(b, "lseek64", 3, 0, 500, 1, 0, SEEK_SET, 0);
    iob_close_fd(b, 3, 1, 1500);
    iob_openat(b, 4, 2, DEV_WSL2_ROOT, 300, 3000);
    iob_read(b, 4, 2, 4096, 300, 2000);
    iob_read(b, 4, 2, 4096, 0, 1000);
    iob_close_fd(b, 4, 2, 1000);
    /* the Windows drive */
    iob_openat(b, 5, 3, DEV_WSL2_C, 150000, 1500000);
    iob_read(b, 5, 3, 65536, 65536, 300000);
    iob_read(b, 5, 3, 65536, 65536, 300000);
    iob_read(b, 5, 3, 65536, 18928, 100000);
    iob_close_fd(b, 5, 3, 500000);
    iob_openat(b, 5, 4, DEV_WSL2_C, 20000, 1400000);
    iob_call(b, "fstat", 5, 0, 900000, 4, DEV_WSL2_C, 20000, 0);
    iob_read(b, 5, 4, 20000, 20000, 120000);
    iob_close_fd(b, 5, 4, 400000);
    /* system files */
    iob_openat(b, 6, 5, DEV_WSL2_PROC, 0, 8000);
    iob_read(b, 6, 5, 4096, 1200, 5000);
    iob_close_fd(b, 6, 5, 1000);
    /* stdin: an fd the shim did not see opened */
    iob_read(b, 0, 0, 4096, 100, 50000);
    /* a missing file: lookups fail */
    iob_open_fails(b, 6, 2, 30000);
    iob_call(b, "stat", -1, -2, 20000, 6, 0, 0, 0);
    /* shared memory (a /dev path), anonymous memory (not a file) */
    iob_openat(b, 7, 7, DEV_WSL2_SHM, 1048576, 6000);
    iob_call(b, "mmap64", 7, 0, 7000, 7, 1048576, 0, 1);
    iob_call(b, "mmap", -1, 0, 3000, 0, 4096, 0, 3);
    /* a path to normalize, mapped */
    iob_openat(b, 8, 8, DEV_WSL2_ROOT, 2097152, 5000);
    iob_call(b, "mmap", 8, 0, 9000, 8, 2097152, 0, 1);
    iob_close_fd(b, 8, 8, 1000);
    span->first_ns = iob_first_ns(b);
    span->last_ns = iob_last_ns(b);
    iob_close(b);
}

static int check_mixed(const struct wsl_run *run, const struct mixed_span *span)
{
    const struct wsl_io *io = &run->io;
    const struct wsl_io_summary *s = &io->total;
    CHECK(io->wsl);
    if (check_counts(&s->data, (struct expect_counts){.reads = 12, .bytes_read = 5413180, .opens = 6,
                                                       .files_opened = 5, .stats = 2, .seeks = 1, .closes = 5,
                                                       .mmaps = 1, .bytes_mapped = 2097152, .errors = 2,
                                                       .read_time = 1325000, .meta_time = 4766000,
                                                       .mmap_time = 9000}, "data"))
        return 1;
    if (check_counts(&s->unknown_fd, (struct expect_counts){.reads = 1, .bytes_read = 100, .read_time = 50000},
                     "unknown fd"))
        return 1;
    if (check_counts(&s->system, (struct expect_counts){.reads = 1, .bytes_read = 1200, .opens = 2,
                                                         .files_opened = 2, .closes = 1, .mmaps = 1,
                                                         .bytes_mapped = 1048576, .read_time = 5000,
                                                         .meta_time = 15000, .mmap_time = 7000}, "system"))
        return 1;
    if (check_counts(&run->procs[0].io.data, (struct expect_counts){.reads = 12, .bytes_read = 5413180, .opens = 6,
                                                       .files_opened = 5, .stats = 2, .seeks = 1, .closes = 5,
                                                       .mmaps = 1, .bytes_mapped = 2097152, .errors = 2,
                                                       .read_time = 1325000, .meta_time = 4766000,
                                                       .mmap_time = 9000}, "process data"))
        return 1;

    /* Darshan buckets: the EOFs; 300 B; 64 KiB x2, 18928, 20000; 1 MiB x5 (stdin is not a data file) */
    const uint64_t hist[WSL_IO_SIZE_BUCKETS] = {2, 1, 0, 4, 5, 0, 0, 0, 0, 0};
    for (unsigned k = 0; k < WSL_IO_SIZE_BUCKETS; k++)
        CHECKF(s->size_hist[k] == hist[k], "bucket %s: %llu, expected %llu", wsl_io_size_bucket_name(k),
               (unsigned long long)s->size_hist[k], (unsigned long long)hist[k]);

    /* by filesystem: system files stay listed under their type */
    const struct wsl_io_fs *ext4 = fs_named(run, "ext4"), *p9 = fs_named(run, "9p"), *proc = fs_named(run, "proc");
    const struct wsl_io_fs *tmpfs = fs_named(run, "tmpfs"), *unknown = fs_named(run, "unknown");
    CHECK(ext4 && p9 && proc && tmpfs && unknown && run->io.fs_count == 5);
    if (check_counts(&ext4->all, (struct expect_counts){.reads = 8, .bytes_read = 5243180, .opens = 4,
                                                         .files_opened = 3, .stats = 1, .seeks = 1, .closes = 3,
                                                         .mmaps = 1, .bytes_mapped = 2097152, .errors = 2,
                                                         .read_time = 505000, .meta_time = 66000,
                                                         .mmap_time = 9000}, "ext4"))
        return 1;
    if (check_counts(&p9->all, (struct expect_counts){.reads = 4, .bytes_read = 170000, .opens = 2,
                                                       .files_opened = 2, .stats = 1, .closes = 2,
                                                       .read_time = 820000, .meta_time = 4700000}, "9p"))
        return 1;
    CHECK(p9->crosses_windows && !ext4->crosses_windows && !p9->system && proc->system);
    CHECK(p9->mount_count == 1 && strcmp(io->mounts[p9->mounts[0]].mount_point, "/mnt/c") == 0);
    CHECK(ext4->mount_count == 1 && strcmp(io->mounts[ext4->mounts[0]].mount_point, "/") == 0);
    CHECK(proc->all.reads == 1 && proc->all.bytes_read == 1200);
    CHECK(tmpfs->all.mmaps == 1 && tmpfs->all.files_opened == 1 && tmpfs->all.reads == 0);
    CHECK(unknown->all.reads == 1 && unknown->all.bytes_read == 100);
    CHECK(io->fs[0].all.read_time + io->fs[0].all.meta_time == 5520000 && io->fs[0].fstype == p9->fstype);

    const struct wsl_io_mount *c = mount_named(run, "/mnt/c"), *root = mount_named(run, "/");
    CHECK(c && root && c->kind == WSL_FS_WINDOWS_DRIVE && root->kind == WSL_FS_LOCAL);
    CHECK(strcmp(c->data_root, "/mnt/c/Users/u/ds") == 0 && strcmp(root->data_root, "/home/u/data") == 0);
    CHECK(c->data.reads == 4 && root->data.reads == 8 && io->mounts[0].data.reads == 4); /* sorted by time */

    /* small files: 300 B, 150000 B and 20000 B of the five sizes at open */
    CHECK(io->file_sizes.count == 5 && s->small_files == 3 && s->read_opens == 5);
    CHECK(s->small_file_bytes_read == 170300 && s->named_bytes_read == 5413180 && s->named_reads == 12);
    uint64_t median = wsl_hist_quantile(&io->file_sizes, 0.5);
    CHECKF(median >= 149000 && median <= 151000, "median %llu", (unsigned long long)median);
    CHECK(s->small_reads == 12 && s->large_reads == 0 && s->small_read_bytes == 5413180);

    /* folders, by I/O time */
    CHECK(io->dir_count == 5);  /* with the system ones, which get no calls */
    const struct wsl_io_dir *d0 = &io->dirs[0], *d1 = &io->dirs[1], *d2 = &io->dirs[2];
    CHECKF(strcmp(d0->path, "/mnt/c/Users/u/ds") == 0, "top dir %s", d0->path);
    CHECK(d0->files == 2 && d0->reads == 4 && d0->bytes_read == 170000 && d0->time == 5520000);
    CHECK(strcmp(io->mounts[d0->mount].mount_point, "/mnt/c") == 0);
    CHECKF(strcmp(d1->path, "/home/u/data") == 0, "second dir %s", d1->path);
    CHECK(d1->files == 3 && d1->reads == 8 && d1->bytes_read == 5243180 && d1->time == 530000);
    CHECK(strcmp(d2->path, "/home/u") == 0 && d2->files == 0 && d2->time == 50000);
    CHECK(io->dirs[3].time == 0 && io->dirs[4].time == 0);

    CHECK(s->have_span && s->first == span->first_ns && s->last == span->last_ns);
    double fps = 5.0 / ((double)(span->last_ns - span->first_ns) / 1e9);
    CHECKF(wsl_io_files_per_s(io) > fps * 0.999999 && wsl_io_files_per_s(io) < fps * 1.000001, "files/s %f, %f",
           wsl_io_files_per_s(io), fps);
    CHECK(io->unnamed_path_events == 0 && run->warning_count == 0);

    /* the file calls are API entries too (printed apart from the driver API) */
    bool saw_read = false;
    for (size_t i = 0; i < run->api_count; i++)
        if (strcmp(run->apis[i].name, "read") == 0) {
            saw_read = true;
            CHECK(run->apis[i].ns.count == 14 && wsl_is_io_category(run->apis[i].category));
        }
    CHECK(saw_read);
    CHECK(finding(run, "cross_os_reads") && !finding(run, "small_file_reads"));
    return 0;
}

int test_io_aggregation(void)
{
    char path[512];
    test_path(path, sizeof path, "io_mixed.trace.zst");
    struct mixed_span span;
    write_mixed(path, false, &span);
    struct wsl_run run;
    const char *paths[] = {path};
    if (analyze(&run, paths, 1) || check_mixed(&run, &span))
        return 1;
    wsl_run_free(&run);
    return 0;
}

/* Folders of paths in every shape normalize_path meets: plain ones (taken whole), and repeated
 * slashes, ".", "..", components that start with a dot, a trailing slash (taken a component at a
 * time). Each file opened once: its folder's files count 1 per path there. */
int test_io_path_folders(void)
{
    char path[512];
    test_path(path, sizeof path, "io_path_folders.trace.zst");
    struct io_builder *b = iob_open_wsl2(path, false);
    static const char *const names[] = {
        "/data/train/a.jpg",    "/data//train/./b.jpg", "/data/x/../val/c.jpg", "/data/.hidden/d.jpg",
        "/e.jpg",               "/data/train/",         "/data/.../f.jpg",      "/data/train/g.jpg.",
        "/data/val/../../h.jpg", "/data/val/i.jpg/..",  "/data/val/.j.jpg",     "/data/train/k..jpg",
    };
    /* the folder of each, by lexical normalization ("/data/train/" is "/data/train": a file of "/data") */
    static const char *const want[] = {
        "/data/train", "/data/train", "/data/val", "/data/.hidden", "/",         "/data",
        "/data/...",   "/data/train", "/",         "/data",         "/data/val", "/data/train",
    };
    const size_t n = sizeof names / sizeof names[0];
    for (size_t i = 0; i < n; i++)
        iob_path(b, (uint32_t)(i + 1), names[i]);
    for (size_t i = 0; i < n; i++) {
        iob_openat(b, 3, (uint32_t)(i + 1), DEV_WSL2_ROOT, 100, 1000);
        iob_close_fd(b, 3, (uint32_t)(i + 1), 1000);
    }
    iob_close(b);
    struct wsl_run run;
    const char *paths[] = {path};
    if (analyze(&run, paths, 1))
        return 1;
    /* each wanted folder holds as many files as the list gives it; no other folder holds one */
    uint64_t files = 0;
    for (size_t d = 0; d < run.io.dir_count; d++) {
        const struct wsl_io_dir *dir = &run.io.dirs[d];
        uint64_t expect = 0;
        for (size_t i = 0; i < n; i++)
            expect += dir->path && !strcmp(dir->path, want[i]);
        CHECKF(dir->files == expect, "folder %s: %llu files, %llu expected", dir->path ? dir->path : "(untracked)",
               (unsigned long long)dir->files, (unsigned long long)expect);
        files += dir->files;
    }
    CHECKF(files == n, "%llu files in folders, %zu expected", (unsigned long long)files, n);
    wsl_run_free(&run);
    return 0;
}

/* The same calls timed by a cycle counter: the same ns once converted. */
int test_io_aggregation_tsc(void)
{
    char path[512];
    test_path(path, sizeof path, "io_mixed_tsc.trace.zst");
    struct mixed_span span;
    write_mixed(path, true, &span);
    struct wsl_run run;
    const char *paths[] = {path};
    if (analyze(&run, paths, 1) || check_mixed(&run, &span))
        return 1;
    wsl_run_free(&run);
    return 0;
}

/* Two processes of one run: folders and mounts are merged by name. */
int test_io_two_processes(void)
{
    char a[512], b[512];
    test_path(a, sizeof a, "io_two_a.trace.zst");
    test_path(b, sizeof b, "io_two_b.trace.zst");
    struct mixed_span span;
    write_mixed(a, false, &span);
    write_mixed(b, true, &span);
    struct wsl_run run;
    const char *paths[] = {a, b};
    if (analyze(&run, paths, 2))
        return 1;
    const struct wsl_io *io = &run.io;
    CHECK(io->total.data.reads == 24 && io->total.data.bytes_read == 2 * 5413180u);
    CHECK(io->total.data.meta_time == 2 * 4766000u && io->total.system.reads == 2);
    CHECK(io->dir_count == 5 && io->dirs[0].files == 4 && io->dirs[0].time == 2 * 5520000u);
    CHECK(io->fs_count == 5 && fs_named(&run, "9p")->all.reads == 8);
    CHECK(io->file_sizes.count == 10 && io->total.size_hist[4] == 10);
    CHECK(run.procs[0].io.data.reads == 12 && run.procs[1].io.data.reads == 12);
    wsl_run_free(&run);
    return 0;
}

/* Path id 0 and ids no PATHS entry named: counted, under "unknown" unless a device says better. */
int test_io_unknown_paths(void)
{
    char path[512];
    test_path(path, sizeof path, "io_unknown.trace.zst");
    struct io_builder *b = iob_open_wsl2(path, false);
    iob_read(b, 0, 0, 10, 10, 1000);                     /* stdin */
    iob_openat(b, 3, 99, DEV_WSL2_C, 10, 1000);          /* id 99: never named, but its device is known */
    iob_read(b, 3, 99, 10, 10, 1000);
    iob_call(b, "stat", -1, -2, 1000, 100, 0, 0, 0);     /* id 100: never named, no device */
    iob_close_fd(b, 3, 99, 1000);
    iob_flush(b);
    iob_path(b, 101, "/home/u/late.txt");
    iob_openat(b, 4, 101, DEV_WSL2_ROOT, 10, 1000);
    iob_close(b);

    struct wsl_run run;
    const char *paths[] = {path};
    if (analyze(&run, paths, 1))
        return 1;
    const struct wsl_io_fs *unknown = fs_named(&run, "unknown"), *p9 = fs_named(&run, "9p");
    CHECK(unknown && p9);
    CHECK(unknown->all.reads == 1 && unknown->all.bytes_read == 10 && unknown->all.stats == 1);
    CHECK(p9->all.reads == 1 && p9->all.files_opened == 1 && p9->all.closes == 1);
    CHECK(fs_named(&run, "ext4")->all.files_opened == 1);
    CHECK(run.io.unnamed_path_events == 4);  /* 99 x3, 100 x1 */
    CHECK(run.io.total.data.reads == 1 && run.io.total.data.files_opened == 2 && run.io.total.unknown_fd.reads == 1);
    CHECK(run.io.file_sizes.count == 1);     /* only the named file's size */
    CHECK(run.warning_count == 1 && strstr(run.warnings[0], "4 file I/O calls name path ids") != NULL);
    wsl_run_free(&run);
    return 0;
}

/* One process's file calls on path 1 (named) and on ids 7 and 8 (never named); `dropped`: the
 * PATHS_DROPPED chunks' counts written before the unnamed calls (0: none), `more`: extra payload
 * bytes in each; ended by END, or cut (no END). */
static void write_dropped(const char *path, const uint64_t *dropped, size_t n, size_t more, bool end)
{
    struct io_builder_options o = {.flags = WSL_PROC_WSL2};
    struct io_builder *b = iob_open(path, &o);
    iob_path(b, 1, "/home/u/a.txt");
    iob_openat(b, 3, 1, DEV_WSL2_ROOT, 10, 1000);
    iob_read(b, 3, 1, 10, 10, 1000);
    iob_flush(b);
    for (size_t i = 0; i < n; i++) {
        uint8_t payload[24] = {0};
        memcpy(payload, &dropped[i], 8);
        iob_chunk(b, WSL_CHUNK_PATHS_DROPPED, payload, 8 + more);
    }
    iob_openat(b, 4, 7, DEV_WSL2_ROOT, 10, 1000);
    iob_read(b, 4, 7, 10, 10, 1000);
    iob_open_fails(b, 8, 2, 1000);
    if (end)
        iob_close(b);
    else
        iob_cut(b);
}

/* PATHS_DROPPED (trace 1.12): a trace cut short (no END) says how many strings the shim dropped,
 * the largest count seen (END's too); without it, as before, 0 (and the warning says no why). */
int test_io_paths_dropped_cut(void)
{
    char path[512];
    test_path(path, sizeof path, "io_dropped_cut.trace.zst");
    const struct {
        uint64_t counts[3];
        size_t n, more;
        bool end;
        uint64_t expect;
    } cases[] = {
        {{0}, 0, 0, false, 0},          /* a cut trace of an older shim: no count */
        {{2}, 1, 0, false, 2},          /* a cut trace that counts them */
        {{1, 3, 2}, 3, 0, false, 3},    /* the largest (a writer never writes less; a reader keeps the most) */
        {{2}, 1, 8, false, 2},          /* a longer payload (a later minor version): the rest skipped */
        {{3}, 1, 0, true, 3},           /* with an END whose count (0 here) is below the chunk's */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        write_dropped(path, cases[c].counts, cases[c].n, cases[c].more, cases[c].end);
        struct wsl_run run;
        const char *paths[] = {path};
        if (analyze(&run, paths, 1))
            return 1;
        CHECK(run.proc_count == 1);
        CHECKF(run.procs[0].paths_dropped == cases[c].expect, "case %zu: %llu dropped, expected %llu", c,
               (unsigned long long)run.procs[0].paths_dropped, (unsigned long long)cases[c].expect);
        CHECKF(run.procs[0].truncated == !cases[c].end, "case %zu", c);
        CHECK(run.io.unnamed_path_events == 3);
        bool said = false, why = false;
        for (size_t i = 0; i < run.warning_count; i++) {
            said |= strstr(run.warnings[i], "3 file I/O calls name path ids") != NULL;
            char dropped[64];
            snprintf(dropped, sizeof dropped, "(the shim dropped %llu paths or names",
                     (unsigned long long)cases[c].expect);
            why |= strstr(run.warnings[i], dropped) != NULL;
        }
        CHECKF(said && why == (cases[c].expect > 0), "case %zu: said %d, why %d", c, said, why);
        wsl_run_free(&run);
    }
    /* A payload shorter than its count: the trace is damaged, one line says where. */
    struct io_builder_options o = {.flags = WSL_PROC_WSL2};
    struct io_builder *b = iob_open(path, &o);
    iob_chunk(b, WSL_CHUNK_PATHS_DROPPED, "\1\0\0\0", 4);
    iob_close(b);
    struct wsl_run run;
    wsl_run_init(&run);
    char err[WSL_READER_ERRLEN] = "";
    CHECK(wsl_run_add_trace(&run, path, err, sizeof err) != 0);
    CHECKF(strstr(err, "PATHS_DROPPED payload too small (4 bytes)") && !strchr(err, '\n'), "%s", err);
    wsl_run_free(&run);
    return 0;
}

/* A file is classified by the mount table in force at its open, even after the table changes. */
int test_io_mount_change(void)
{
    char path[512];
    test_path(path, sizeof path, "io_remount.trace.zst");
    struct io_builder *b = iob_open_wsl2(path, false);
    iob_path(b, 1, "/mnt/c/old.bin");
    iob_openat(b, 3, 1, DEV_WSL2_C, 10, 1000);
    /* a folder opened from before and after the change, with the same device: the new table
     * decides the second (the last classification is not reused across tables) */
    iob_path(b, 5, "/mnt/c/x/a.bin");
    iob_openat(b, 5, 5, DEV_WSL2_C, 10, 1000);
    iob_mounts(b, "61 45 8:48 / / rw - ext4 /dev/sdd rw\n90 61 0:62 / /data rw - ext4 /dev/sde rw\n");
    iob_path(b, 6, "/mnt/c/x/b.bin");
    iob_openat(b, 6, 6, DEV_WSL2_C, 10, 1000);
    iob_path(b, 2, "/data/new.bin");
    iob_openat(b, 4, 2, DEV_WSL2_C, 10, 1000);
    iob_read(b, 3, 1, 10, 10, 1000);
    iob_read(b, 4, 2, 10, 10, 1000);
    iob_read(b, 5, 5, 10, 10, 1000);
    iob_read(b, 6, 6, 10, 10, 1000);
    iob_close(b);

    struct wsl_run run;
    const char *paths[] = {path};
    if (analyze(&run, paths, 1))
        return 1;
    CHECK(fs_named(&run, "9p")->all.reads == 2 && fs_named(&run, "9p")->all.files_opened == 2);
    CHECK(fs_named(&run, "ext4")->all.reads == 2 && mount_named(&run, "/data") != NULL);
    CHECK(mount_named(&run, "/data")->data.bytes_read == 20); /* b.bin too: its device is /data's now */
    wsl_run_free(&run);
    return 0;
}

/* ---- the reader: MOUNTS and PATHS --------------------------------------------------------- */

int test_reader_io_chunks(void)
{
    char path[512];
    test_path(path, sizeof path, "io_chunks.trace.zst");
    char *mounts = io_fixture("wsl2.mountinfo");
    struct io_builder_options o = {.flags = WSL_PROC_WSL2, .mountinfo = mounts};
    struct io_builder *b = iob_open(path, &o);
    char long_path[WSL_PATH_MAX_LENGTH + 1];
    memset(long_path, 'x', WSL_PATH_MAX_LENGTH);
    long_path[0] = '/';
    long_path[WSL_PATH_MAX_LENGTH] = 0;
    iob_path(b, 1, "/a");
    iob_path(b, 4000000000u, long_path);
    iob_path(b, 3, "relative/name with spaces");
    iob_read(b, 0, 0, 1, 1, 10);
    iob_close(b);
    free(mounts);

    struct wsl_reader *r = wsl_reader_open(path, (char[WSL_READER_ERRLEN]){0}, WSL_READER_ERRLEN);
    CHECK(r);
    struct wsl_item it;
    enum wsl_read_result res;
    size_t tables = 0, entries = 0;
    while ((res = wsl_reader_next(r, &it)) == WSL_READ_ITEM) {
        if (it.type == WSL_CHUNK_MOUNTS) {
            tables++;
            CHECK(it.mounts.table->count == 16 && it.mounts.table == wsl_reader_mounts(r));
        } else if (it.type == WSL_CHUNK_PATHS) {
            CHECK(it.paths.count == 3);
            size_t pos = 0;
            struct wsl_path_ref ref;
            while (wsl_paths_next(&it, &pos, &ref)) {
                entries++;
                if (ref.id == 1)
                    CHECK(ref.length == 2 && memcmp(ref.bytes, "/a", 2) == 0);
                else if (ref.id == 4000000000u)
                    CHECK(ref.length == WSL_PATH_MAX_LENGTH && ref.bytes[1] == 'x');
                else
                    CHECK(ref.id == 3 && ref.length == 25);
            }
        }
    }
    CHECKF(res == WSL_READ_END, "%s", wsl_reader_message(r));
    CHECK(tables == 1 && entries == 3);
    wsl_reader_close(r);
    return 0;
}

int test_reader_io_malformed(void)
{
    static const struct {
        const char *scenario, *why;
    } cases[] = {
        {"bad_paths_length", "PATHS entry 0 (id 1) has length 4097"},
        {"bad_paths_past_end", "PATHS entry 0 (id 1) runs past the chunk"},
        {"bad_paths_zero_id", "PATHS entry 0 has path id 0"},
        {"bad_paths_cut", "PATHS entry 1 is cut short"},
        {"bad_paths_nul", "PATHS entry 0 (id 1) holds a NUL byte"},
        {"bad_mounts_text", "MOUNTS is not a mount table (line 1: no ' - ' separator"},
        {"bad_mounts_nul", "MOUNTS is not a mount table (a NUL byte"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512];
        test_path(path, sizeof path, "io_bad.trace.zst");
        CHECK(io_scenario_write(path, cases[i].scenario));
        struct read_all ra;
        read_all_file(path, &ra);
        CHECKF(ra.result == WSL_READ_ERROR, "%s: result %d", cases[i].scenario, ra.result);
        CHECKF(strncmp(ra.message, "corrupt chunk at byte ", 22) == 0 && strstr(ra.message, cases[i].why),
               "%s: '%s'", cases[i].scenario, ra.message);
        read_all_free(&ra);
        struct wsl_run run;
        wsl_run_init(&run);
        char err[WSL_READER_ERRLEN];
        CHECK(wsl_run_add_trace(&run, path, err, sizeof err) == -1 && strstr(err, cases[i].why));
        wsl_run_free(&run);
    }
    /* cut inside a PATHS chunk: truncated, not corrupt */
    char path[512];
    test_path(path, sizeof path, "io_cut.trace.zst");
    struct synth_options so = {.raw = true};
    struct synth *s = synth_open(path, &so);
    synth_file_header(s, NULL);
    struct wsl_process_info pi = {.pid = 1};
    synth_process(s, &pi, "h", "e", "r", 0, NULL);
    synth_api_table(s);
    const uint32_t ids[] = {1};
    const char *names[] = {"/some/where/file"};
    synth_paths(s, ids, names, 1);
    synth_close(s);
    synth_truncate_file(path, synth_file_size(path) - 3);
    size_t size;
    uint8_t *raw = synth_read_file(path, &size);
    char zpath[512];
    test_path(zpath, sizeof zpath, "io_cut_z.trace.zst");
    s = synth_open(zpath, NULL);
    synth_bytes(s, raw, size);
    synth_close(s);
    free(raw);
    struct read_all ra;
    read_all_file(zpath, &ra);
    CHECKF(ra.result == WSL_READ_TRUNCATED, "result %d: %s", ra.result, ra.message);
    read_all_free(&ra);
    return 0;
}

/* ---- rules ------------------------------------------------------------------------------------- */

static int analyze_scenario(struct wsl_run *run, const char *scenario)
{
    char path[512];
    test_path(path, sizeof path, scenario);
    CHECK(io_scenario_write(path, scenario));
    const char *paths[] = {path};
    return analyze(run, paths, 1);
}

int test_rule_cross_os_fires(void)
{
    struct wsl_run run;
    if (analyze_scenario(&run, "drvfs"))
        return 1;
    const struct wsl_finding *f = finding(&run, "cross_os_reads");
    CHECK(f && run.finding_count == 1);
    /* 200 x (1.5 ms + 300 us + 50 us + 400 us) measured; ext4: 200 x 53 us + 400 x 1.5 us + 20 MB at 1.5 GB/s */
    uint64_t want = 450000000u - 24533333u;
    CHECKF(f->time_lost_ns == want, "time lost %llu, expected %llu", (unsigned long long)f->time_lost_ns,
           (unsigned long long)want);
    CHECK(f->time_lost_ns <= run.wall_ns && f->severity == WSL_SEVERITY_HIGH);
    const struct wsl_evidence *mounts = evidence(f, "mounts"), *roots = evidence(f, "data_roots");
    CHECK(mounts && mounts->string_count == 1 && strcmp(mounts->strings[0], "/mnt/c (9p)") == 0);
    CHECK(roots && strcmp(roots->strings[0], "/mnt/c/Users/me/datasets/cats") == 0);
    CHECK(evidence(f, "files_opened")->u64 == 200 && evidence(f, "bytes_read")->u64 == 20000000);
    double share = evidence(f, "share_of_read_time")->number;
    CHECKF(share > 0.9999, "share %f", share); /* the start-up modules are code: all data reads are on 9p */
    CHECKF(strstr(f->summary, "/mnt/c (9p)") && strstr(f->summary, "200 files"), "%s", f->summary);
    CHECKF(strstr(f->advice, "rsync -a /mnt/c/Users/me/datasets/cats/ ~/data/cats/"), "%s", f->advice);
    CHECK(strstr(f->advice, "\\\\wsl$") != NULL && f->how_computed && *f->how_computed);
    wsl_run_free(&run);
    return 0;
}

int test_rule_cross_os_silent(void)
{
    struct wsl_run run;
    if (analyze_scenario(&run, "ext4"))
        return 1;
    CHECKF(run.finding_count == 0, "%zu findings, first %s", run.finding_count,
           run.finding_count ? run.findings[0].id : "");
    CHECK(fs_named(&run, "ext4")->all.files_opened == 220);
    wsl_run_free(&run);
    return 0;
}

int test_rule_small_files_fires(void)
{
    struct wsl_run run;
    if (analyze_scenario(&run, "small_files"))
        return 1;
    const struct wsl_finding *f = finding(&run, "small_file_reads");
    CHECK(f && run.finding_count == 1);
    /* metadata 5000 x 20 us; one 256 MiB shard holds the 200 MB: 20 us of it would remain */
    CHECKF(f->time_lost_ns == 100000000u - 20000u, "time lost %llu", (unsigned long long)f->time_lost_ns);
    CHECK(f->severity == WSL_SEVERITY_HIGH);
    CHECK(evidence(f, "files_opened")->u64 == 5000 && evidence(f, "small_files")->u64 == 5000);
    uint64_t median = evidence(f, "median_file_size")->u64;
    CHECK(median >= 39800 && median <= 40200);
    CHECK(evidence(f, "shards_estimate")->u64 == 1 && evidence(f, "request_excess_ns")->u64 == 0);
    CHECKF(strstr(f->summary, "5000 data files opened"), "%s", f->summary);
    CHECK(strstr(f->advice, "WebDataset") && strstr(f->advice, "num_workers"));
    CHECK(run.io.dir_count == 50 && run.io.dirs[0].files == 100);
    wsl_run_free(&run);
    return 0;
}

int test_rule_small_files_silent(void)
{
    struct wsl_run run;
    if (analyze_scenario(&run, "large_files"))
        return 1;
    CHECKF(run.finding_count == 0, "%zu findings, first %s", run.finding_count,
           run.finding_count ? run.findings[0].id : "");
    CHECK(run.io.total.data.bytes_read == 4ull << 28 && run.io.total.size_hist[5] == 256);
    wsl_run_free(&run);
    return 0;
}

/* Findings of several rules come sorted by time lost; severity follows the share of wall time. */
int test_rules_framework(void)
{
    char a[512], b[512];
    test_path(a, sizeof a, "drvfs");
    test_path(b, sizeof b, "small_files");
    CHECK(io_scenario_write(a, "drvfs") && io_scenario_write(b, "small_files"));
    struct wsl_run run;
    const char *paths[] = {b, a};
    if (analyze(&run, paths, 2))
        return 1;
    CHECK(run.finding_count == 2 && finding(&run, "cross_os_reads") && finding(&run, "small_file_reads"));
    CHECK(run.findings[0].time_lost_ns >= run.findings[1].time_lost_ns);
    for (size_t i = 0; i < run.finding_count; i++)
        CHECK(run.findings[i].time_lost_ns <= run.wall_ns);
    wsl_run_free(&run);

    CHECK(wsl_severity_of(20, 100) == WSL_SEVERITY_HIGH && wsl_severity_of(19, 100) == WSL_SEVERITY_MEDIUM);
    CHECK(wsl_severity_of(5, 100) == WSL_SEVERITY_MEDIUM && wsl_severity_of(4, 100) == WSL_SEVERITY_LOW);
    CHECK(wsl_severity_of(5, 0) == WSL_SEVERITY_LOW);
    CHECK(strcmp(wsl_severity_name(WSL_SEVERITY_HIGH), "high") == 0);
    /* the registry: every rules/rule_<id>.c, each complete, ids unique, in evaluation order with
     * the orders that matter (dispatch_bound after launch_bound, gpu_idle last) */
    CHECK(wsl_rule_count >= 17);
    size_t launch = 0, dispatch = 0;
    for (size_t i = 0; i < wsl_rule_count; i++) {
        CHECK(wsl_rules[i]->id && wsl_rules[i]->needs && wsl_rules[i]->how_computed && wsl_rules[i]->fix &&
              wsl_rules[i]->evaluate);
        for (size_t j = 0; j < i; j++)
            CHECK(strcmp(wsl_rules[i]->id, wsl_rules[j]->id) != 0);
        if (!strcmp(wsl_rules[i]->id, "launch_bound"))
            launch = i + 1;
        if (!strcmp(wsl_rules[i]->id, "dispatch_bound"))
            dispatch = i + 1;
    }
    CHECK(launch && dispatch && launch < dispatch);
    CHECK(!strcmp(wsl_rules[wsl_rule_count - 1]->id, "gpu_idle"));
    CHECK(!strcmp(wsl_rules[0]->id, "cross_os_reads")); /* the ordered ones first, as before the registry */
    return 0;
}

/* Darshan's bucket edges are inclusive. */
int test_io_size_buckets(void)
{
    const struct {
        uint64_t bytes;
        unsigned bucket;
    } cases[] = {{0, 0},         {100, 0},       {101, 1},        {1024, 1},       {1025, 2},
                 {10240, 2},     {10241, 3},     {102400, 3},     {102401, 4},     {1048576, 4},
                 {1048577, 5},   {4194304, 5},   {4194305, 6},    {10485760, 6},   {10485761, 7},
                 {104857600, 7}, {104857601, 8}, {1073741824, 8}, {1073741825, 9}, {UINT64_MAX, 9}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECKF(wsl_io_size_bucket(cases[i].bytes) == cases[i].bucket, "%llu bytes: bucket %u",
               (unsigned long long)cases[i].bytes, wsl_io_size_bucket(cases[i].bytes));
    CHECK(strcmp(wsl_io_size_bucket_name(0), "0-100") == 0 && strcmp(wsl_io_size_bucket_name(9), "1G+") == 0);
    /* The bucket is found by the number's bit length: every power of two and its neighbours, and
     * every bound and its neighbours, against the bounds scanned in turn. */
    static const uint64_t bounds[] = {100,      1024,      10240,      102400,    1048576,
                                      4194304,  10485760,  104857600,  1073741824};
    uint64_t probes[64 * 3 + 9 * 3], np = 0;
    for (unsigned b = 0; b < 64; b++) {
        probes[np++] = (1ull << b) - 1;
        probes[np++] = 1ull << b;
        probes[np++] = (1ull << b) + 1;
    }
    for (size_t i = 0; i < sizeof bounds / sizeof bounds[0]; i++) {
        probes[np++] = bounds[i] - 1;
        probes[np++] = bounds[i];
        probes[np++] = bounds[i] + 1;
    }
    for (size_t i = 0; i < np; i++) {
        unsigned want = 0;
        while (want < 9 && probes[i] > bounds[want])
            want++;
        CHECKF(wsl_io_size_bucket(probes[i]) == want, "%llu bytes: bucket %u, not %u",
               (unsigned long long)probes[i], wsl_io_size_bucket(probes[i]), want);
    }
    CHECK(wsl_io_size_bucket(UINT64_MAX) == 9 && wsl_io_size_bucket(UINT64_MAX - 1) == 9);
    return 0;
}

/* Random damage to a trace with MOUNTS, PATHS and file calls, compressed again
 * so zstd passes it on: the whole analysis reads it or refuses it with one
 * line, and never crashes (run it under ASan). */
int test_io_mutations(void)
{
    char raw_path[512], path[512];
    test_path(raw_path, sizeof raw_path, "io_mutate.raw");
    test_path(path, sizeof path, "io_mutate.trace.zst");
    char *mounts = io_fixture("wsl2.mountinfo");
    struct synth_options so = {.raw = true};
    struct synth *s = synth_open(raw_path, &so);
    synth_file_header(s, NULL);
    struct wsl_process_info pi = {.pid = 5, .flags = WSL_PROC_WSL2, .start_mono_ns = 50};
    synth_process(s, &pi, "host", "/bin/prog", "6.6", 0, NULL);
    synth_api_table(s);
    synth_mounts(s, mounts);
    const uint32_t ids[] = {1, 2, 3, 4};
    const char *names[] = {"/mnt/c/a/b.jpg", "/home/u/x", "/proc/self/maps", "rel/../../x"};
    synth_paths(s, ids, names, 4);
    static const char *const calls[] = {"openat", "read", "pread64", "fstat", "stat", "lseek", "close", "mmap",
                                        "fread", "access"};
    static const uint64_t devs[] = {0, DEV_WSL2_C, DEV_WSL2_ROOT, DEV_WSL2_PROC, WSL_DEV(1, 2)};
    rng_seed(4321);
    struct wsl_event ev[60];
    for (int c = 0; c < 4; c++) {
        for (int i = 0; i < 60; i++) {
            uint64_t t = 100 + 1000u * (uint64_t)(c * 60 + i);
            ev[i] = (struct wsl_event){.t_start = t, .t_end = t + 1 + rng_below(900),
                                       .api = synth_api_id(calls[rng_below(sizeof calls / sizeof calls[0])]),
                                       .result = rng_below(4) ? 0 : -2, .stream = rng_below(3) ? 3 : UINT64_MAX,
                                       .a = {rng_below(6), devs[rng_below(5)], rng_below(1u << 22), rng_next()}};
        }
        synth_events(s, 1, 0, ev, 60);
        if (c == 1)
            synth_mounts(s, "1 0 0:62 / /mnt/c rw - 9p drvfs aname=drvfs\n");
    }
    synth_end(s, 300000, 240, 0, 1);
    synth_close(s);
    free(mounts);
    size_t size;
    uint8_t *raw = synth_read_file(raw_path, &size);
    uint8_t *work = malloc(size), *z = malloc(ZSTD_compressBound(size));
    CHECK(work && z);
    size_t ok = 0, refused = 0;
    for (int iter = 0; iter < 1500; iter++) {
        memcpy(work, raw, size);
        size_t n = size;
        for (int m = 0, count = 1 + (int)rng_below(4); m < count && n > 40; m++) {
            size_t at = 32 + rng_below(n - 36);
            if (rng_below(5) == 0)
                n = at;
            else
                work[at] ^= (uint8_t)(1 + rng_below(255));
        }
        size_t zn = ZSTD_compress(z, ZSTD_compressBound(size), work, n, 1);
        CHECK(!ZSTD_isError(zn));
        synth_write_file(path, z, zn);
        struct wsl_run run;
        wsl_run_init(&run);
        char err[WSL_READER_ERRLEN] = "";
        if (wsl_run_add_trace(&run, path, err, sizeof err) == 0) {
            ok++;
        } else {
            CHECK(err[0] && !strchr(err, '\n'));
            refused++;
        }
        wsl_run_finish(&run);
        wsl_run_free(&run);
    }
    CHECKF(ok > 200 && refused > 200, "read %zu, refused %zu", ok, refused);
    free(raw);
    free(work);
    free(z);
    return 0;
}

/* A trace of one process "loader" whose file-call timing was sampled 1 in 4. */
static struct synth *sampled_trace(const char *path, int32_t pid)
{
    struct synth *s = synth_open(path, NULL);
    synth_file_header(s, NULL);
    struct wsl_process_info pi;
    memset(&pi, 0, sizeof pi);
    pi.pid = pid;
    pi.ppid = 1;
    pi.clock_kind = WSL_CLOCK_MONOTONIC_NS;
    pi.start_ticks = pi.start_mono_ns = 1000;
    pi.io_timing = 4;
    const char *argv[] = {"loader"};
    synth_process(s, &pi, "h", "/bin/loader", "6.8.0", 1, argv);
    return s;
}

/* Thread 7's events, the end, and the trace analysed into *run; nonzero on failure. */
static int sampled_trace_end(struct synth *s, const char *path, const struct wsl_event *ev, size_t n,
                             struct wsl_run *run)
{
    synth_events(s, 7, 0, ev, (uint32_t)n);
    synth_end(s, 5000, n, 0, 1);
    synth_close(s);
    const char *paths[] = {path};
    return analyze(run, paths, 1);
}

/* Sampled timing (trace_format.h, WSL_API_IO_SAMPLED): untimed events count
 * as calls (a run as its a3 calls) with no time, timed ones of a flagged id
 * stand for io_timing calls' time, and every figure else stays exact. */
int test_io_sampled_timing(void)
{
    char path[512];
    test_path(path, sizeof path, "io_sampled.trace.zst");
    struct synth *s = sampled_trace(path, 42);
    enum { OPEN, READ, READ_S, CLOSE_S };
    const struct synth_row rows[] = {
        {"open", "open", WSL_CAT_IO_OPEN, 0},
        {"read", "read", WSL_CAT_IO_READ, 0},
        {"read", "read", WSL_CAT_IO_READ, WSL_API_IO_SAMPLED},
        {"close", "close", WSL_CAT_IO_CLOSE, WSL_API_IO_SAMPLED},
    };
    synth_api_rows(s, rows, 4);
    synth_clock(s, 1000, 1000, 0);
    const uint32_t ids[] = {1};
    const char *const names[] = {"/data/train/x.bin"};
    synth_paths(s, ids, names, 1);
    const struct wsl_event ev[] = {
        {1000, 1500, OPEN, 0, 0, 3, {1, 0, O_RDONLY, 100000}},
        {2000, 2100, READ_S, 0, 0, 3, {1, 4096, 4096, 0}},        /* timed: 100 ns for 4 calls */
        {2200, 2200, READ_S, 0, 0, 3, {1, 4096, 10 * 4096, 10}},  /* a run of 10, untimed */
        {3000, 3300, READ_S, 0, 0, 3, {1, 4096, 4096, 4096}},     /* timed: 300 ns for 4 */
        {3400, 3400, READ_S, 0, 0, 3, {1, 4096, 1000, 1}},        /* untimed, short */
        {3500, 3500, READ_S, 0, 0, 3, {1, 4096, 0, 1}},           /* untimed, the end */
        {3600, 3600, READ_S, 0, -9, 3, {1, 4096, 0, 1}},          /* untimed, failed */
        {3700, 3700, CLOSE_S, 0, 0, 3, {1, 0, 0, 0}},             /* untimed close */
        {4000, 4100, READ, 0, 0, 0, {0, 64, 64, 0}},              /* a pipe: every call timed */
    };
    struct wsl_run run;
    if (sampled_trace_end(s, path, ev, sizeof ev / sizeof ev[0], &run))
        return 1;
    const struct wsl_io_summary *t = &run.io.total;
    if (check_counts(&t->data, (struct expect_counts){.reads = 15, .bytes_read = 12 * 4096 + 1000, .opens = 1,
                                                      .files_opened = 1, .closes = 1, .errors = 1,
                                                      .read_time = 4 * (100 + 300), .meta_time = 500},
                     "data"))
        return 1;
    CHECK(t->unknown_fd.reads == 1 && t->unknown_fd.read_time == 100);
    /* read sizes: 12 of 4 KiB, one of 1000 bytes, one of 0 (the failed read is not a size) */
    CHECK(t->size_hist[wsl_io_size_bucket(4096)] == 12 && t->size_hist[wsl_io_size_bucket(1000)] == 1 &&
          t->size_hist[wsl_io_size_bucket(0)] == 1);
    CHECK(t->small_reads == 14 && t->named_reads == 14);
    const struct wsl_api_stats *rd = NULL, *cl = NULL;
    for (size_t i = 0; i < run.api_count; i++) {
        if (!strcmp(run.apis[i].name, "read"))
            rd = &run.apis[i];
        if (!strcmp(run.apis[i].name, "close"))
            cl = &run.apis[i];
    }
    /* 16 calls: the 2 timed sampled ones stand for the 14 of their id, plus the pipe's */
    CHECKF(rd && rd->ns.count == 16 && rd->ns.sum == 4 * 400 + 100 && rd->errors == 1,
           "read: %llu calls, %llu ns", rd ? (unsigned long long)rd->ns.count : 0,
           rd ? (unsigned long long)rd->ns.sum : 0);
    uint64_t p50 = wsl_hist_quantile(&rd->ns, 0.5);
    CHECKF(p50 >= 100 && p50 <= 300, "p50 %llu", (unsigned long long)p50);
    CHECK(rd->variant_count == 1 && rd->variants[0].calls == 16);
    CHECK(cl && cl->ns.count == 1 && cl->ns.sum == 0); /* no timed close: its time is unknown, 0 */
    CHECK(run.procs[0].events == sizeof ev / sizeof ev[0]);
    wsl_run_free(&run);
    return 0;
}

/* A sampled trace (sampled_trace) whose API table holds the sampled file calls
 * and the fold's id, at these indexes, and a clock: the folded-calls tests'. */
enum { OPEN_S, READ_S, FSTAT_S, LSEEK_S, CLOSE_S, FOLD };
static struct synth *fold_trace(const char *path, int32_t pid)
{
    struct synth *s = sampled_trace(path, pid);
    const struct synth_row rows[] = {
        {"open", "open", WSL_CAT_IO_OPEN, WSL_API_IO_SAMPLED},
        {"read", "read", WSL_CAT_IO_READ, WSL_API_IO_SAMPLED},
        {"fstat", "fstat", WSL_CAT_IO_STAT, WSL_API_IO_SAMPLED},
        {"lseek", "lseek", WSL_CAT_IO_SEEK, WSL_API_IO_SAMPLED},
        {"close", "close", WSL_CAT_IO_CLOSE, WSL_API_IO_SAMPLED},
        {"wslshim_io_fold", "wslshim_io_fold", WSL_CAT_IO_FOLD, WSL_API_IO_SAMPLED},
    };
    synth_api_rows(s, rows, 6);
    synth_clock(s, 1000, 1000, 0);
    return s;
}

/* Folded calls (trace 1.5, WSL_CAT_IO_FOLD): each slot counts as that many
 * untimed calls of its id, the close when the fold says so, and calls a drain
 * wrote ahead of a fold's last event count once. */
int test_io_folded_calls(void)
{
    char path[512];
    test_path(path, sizeof path, "io_folded.trace.zst");
    struct synth *s = fold_trace(path, 43);
    const uint32_t ids[] = {1, 2};
    const char *const names[] = {"/data/train/a.jpg", "/data/train/big.bin"};
    synth_paths(s, ids, names, 2);
    const uint64_t unknown = UINT64_MAX;
    const struct wsl_event ev[] = {
        /* Python's open(p, 'rb').read() of a 5000-byte file: open, then one fold in two events */
        {1000, 1000, OPEN_S, 0, 0, 3, {1, 0, O_RDONLY, unknown}},
        {1100, 1100, FOLD, 0, WSL_FOLD_RESULT(7, 0, 0), 3,
         {1, WSL_FOLD_SLOT(FSTAT_S, 1, 5000), WSL_FOLD_SLOT(LSEEK_S, 2, 0), WSL_FOLD_SLOT(FSTAT_S, 1, 5000)}},
        {1100, 1100, FOLD, 0, WSL_FOLD_RESULT(7, 3, WSL_FOLD_LAST | WSL_FOLD_CLOSED), 3,
         {1, WSL_FOLD_SLOT(READ_S, 1, 5000), WSL_FOLD_SLOT(READ_S, 1, 0), 0}},
        /* a long read: 10 reads written ahead at a drain, the last event holds 5 more and the close */
        {2000, 2000, OPEN_S, 0, 0, 4, {2, 0, O_RDONLY, 1u << 20}},
        {2100, 2100, FOLD, 0, WSL_FOLD_RESULT(8, 0, 0), 4, {2, WSL_FOLD_SLOT(READ_S, 10, 4096), 0, 0}},
        {2200, 2200, FOLD, 0, WSL_FOLD_RESULT(8, 0, WSL_FOLD_LAST | WSL_FOLD_CLOSED), 4,
         {2, WSL_FOLD_SLOT(READ_S, 5, 4096), WSL_FOLD_SLOT(LSEEK_S, 1, 8192 << 1 | 1), 0}}, /* and a SEEK_SET */
    };
    struct wsl_run run;
    if (sampled_trace_end(s, path, ev, sizeof ev / sizeof ev[0], &run))
        return 1;
    const struct wsl_io_summary *t = &run.io.total;
    if (check_counts(&t->data, (struct expect_counts){.reads = 17, .bytes_read = 5000 + 15 * 4096, .opens = 2,
                                                      .files_opened = 2, .stats = 2, .seeks = 3, .closes = 2},
                     "data"))
        return 1;
    CHECK(t->size_hist[wsl_io_size_bucket(4096)] == 16 && t->size_hist[wsl_io_size_bucket(0)] == 1);
    CHECKF(run.io.file_sizes.count == 2, "%llu files sized", (unsigned long long)run.io.file_sizes.count);
    if (check_file_calls(&run, (const uint64_t[5]){2, 17, 2, 3, 2}))
        return 1;
    CHECK(t->unknown_fd.reads == 0 && t->data.errors == 0);
    wsl_run_free(&run);
    return 0;
}

/* Calls counted apart (trace 1.11, WSL_FOLD_META): a fold's last event holds
 * tells and fstats of the fold in a[0]'s upper half and the fstats' st_size in
 * stream's: each counts as that many untimed calls of its id, on the fd and
 * path of the event's low halves, the size sizes the file; a fold event
 * without them reads as before. */
int test_io_folded_meta(void)
{
    char path[512];
    test_path(path, sizeof path, "io_folded_meta.trace.zst");
    struct synth *s = fold_trace(path, 45);
    const uint32_t ids[] = {1, 2, 3};
    const char *const names[] = {"/data/train/a.jpg", "/data/train/b.jpg", "/data/train/c.jpg"};
    synth_paths(s, ids, names, 3);
    const uint64_t unknown = UINT64_MAX;
    const uint64_t meta = (uint64_t)WSL_FOLD_META(LSEEK_S, 2) << 32 | (uint64_t)WSL_FOLD_META(FSTAT_S, 2) << 48;
    const struct wsl_event ev[] = {
        /* Python's open(p, 'rb').read() of a 5000-byte file: two fstats and two tells apart, one event */
        {1000, 1000, OPEN_S, 0, 0, 3, {1, 0, O_RDONLY, unknown}},
        {1100, 1100, FOLD, 0, WSL_FOLD_RESULT(7, 0, WSL_FOLD_LAST | WSL_FOLD_CLOSED), 3 | 5000ull << 32,
         {1 | meta, WSL_FOLD_SLOT(READ_S, 1, 5000), WSL_FOLD_SLOT(READ_S, 1, 0), 0}},
        /* 100 bytes read of a 9000-byte file: its size is the fstats' */
        {2000, 2000, OPEN_S, 0, 0, 4, {2, 0, O_RDONLY, unknown}},
        {2100, 2100, FOLD, 0, WSL_FOLD_RESULT(8, 0, 0), 4, {2, WSL_FOLD_SLOT(READ_S, 1, 100), 0, 0}},
        {2200, 2200, FOLD, 0, WSL_FOLD_RESULT(8, 1, WSL_FOLD_LAST | WSL_FOLD_CLOSED), 4 | 9000ull << 32,
         {2 | meta, 0, 0, 0}},
        /* no calls apart: stream is the fd, as before 1.11 */
        {3000, 3000, OPEN_S, 0, 0, 5, {3, 0, O_RDONLY, unknown}},
        {3100, 3100, FOLD, 0, WSL_FOLD_RESULT(9, 0, WSL_FOLD_LAST | WSL_FOLD_CLOSED), 5,
         {3, WSL_FOLD_SLOT(FSTAT_S, 1, 7000), WSL_FOLD_SLOT(READ_S, 1, 7000), WSL_FOLD_SLOT(READ_S, 1, 0)}},
    };
    struct wsl_run run;
    if (sampled_trace_end(s, path, ev, sizeof ev / sizeof ev[0], &run))
        return 1;
    const struct wsl_io_summary *t = &run.io.total;
    if (check_counts(&t->data, (struct expect_counts){.reads = 5, .bytes_read = 5000 + 100 + 7000, .opens = 3,
                                                      .files_opened = 3, .stats = 5, .seeks = 4, .closes = 3},
                     "data"))
        return 1;
    CHECKF(run.io.file_sizes.count == 3 && run.io.file_sizes.min == 5000 && run.io.file_sizes.max == 9000,
           "%llu files sized, %llu-%llu", (unsigned long long)run.io.file_sizes.count,
           (unsigned long long)run.io.file_sizes.min, (unsigned long long)run.io.file_sizes.max);
    if (check_file_calls(&run, (const uint64_t[5]){3, 5, 5, 4, 3}))
        return 1;
    CHECK(t->unknown_fd.reads == 0 && t->data.errors == 0);
    wsl_run_free(&run);
    return 0;
}

/* Folded opens (trace 1.6): an open slot is an untimed successful open of the
 * fold's fd and path, on the device and with the flags its value holds: it
 * counts as a file opened on that device's filesystem (a 9p Windows drive and
 * ext4 here), reading or not as its access mode says. */
int test_io_folded_opens(void)
{
    char path[512];
    test_path(path, sizeof path, "io_folded_opens.trace.zst");
    struct synth *s = sampled_trace(path, 44);
    enum { OPENAT_S, READ_S, CLOSE_S, FOLD };
    const struct synth_row rows[] = {
        {"openat", "openat", WSL_CAT_IO_OPEN, WSL_API_IO_SAMPLED},
        {"read", "read", WSL_CAT_IO_READ, WSL_API_IO_SAMPLED},
        {"close", "close", WSL_CAT_IO_CLOSE, WSL_API_IO_SAMPLED},
        {"wslshim_io_fold", "wslshim_io_fold", WSL_CAT_IO_FOLD, WSL_API_IO_SAMPLED},
    };
    synth_api_rows(s, rows, 4);
    synth_clock(s, 1000, 1000, 0);
    char *mounts = io_fixture("wsl2.mountinfo");
    synth_mounts(s, mounts);
    free(mounts);
    const uint32_t ids[] = {1, 2, 3};
    const char *const names[] = {"/mnt/c/data/a.jpg", "/home/u/b.bin", "/home/u/out.log"};
    synth_paths(s, ids, names, 3);
    const uint64_t c_drive = WSL_FOLD_OPEN_VALUE(0, 62, O_RDONLY | WSL_FOLD_OPEN_CLOEXEC);
    const uint64_t root = WSL_FOLD_OPEN_VALUE(8, 48, O_RDONLY);
    const uint64_t root_wr = WSL_FOLD_OPEN_VALUE(8, 48, O_WRONLY | WSL_FOLD_OPEN_NOFOLLOW);
    const struct wsl_event ev[] = {
        /* open, read 3000, read at the end, close: one event */
        {1100, 1100, FOLD, 0, WSL_FOLD_RESULT(9, 0, WSL_FOLD_LAST | WSL_FOLD_CLOSED), 3,
         {1, WSL_FOLD_SLOT(OPENAT_S, 1, c_drive), WSL_FOLD_SLOT(READ_S, 1, 3000), WSL_FOLD_SLOT(READ_S, 1, 0)}},
        /* the open and a read written ahead at a drain, the rest later */
        {1200, 1200, FOLD, 0, WSL_FOLD_RESULT(10, 0, 0), 4,
         {2, WSL_FOLD_SLOT(OPENAT_S, 1, root), WSL_FOLD_SLOT(READ_S, 2, 4096), 0}},
        {1300, 1300, FOLD, 0, WSL_FOLD_RESULT(10, 1, WSL_FOLD_LAST | WSL_FOLD_CLOSED), 4,
         {2, WSL_FOLD_SLOT(READ_S, 1, 4096), WSL_FOLD_SLOT(READ_S, 1, 0), 0}},
        /* opened for writing: a file opened, not a data file read */
        {1400, 1400, FOLD, 0, WSL_FOLD_RESULT(11, 0, WSL_FOLD_LAST | WSL_FOLD_CLOSED), 5,
         {3, WSL_FOLD_SLOT(OPENAT_S, 1, root_wr), 0, 0}},
    };
    struct wsl_run run;
    if (sampled_trace_end(s, path, ev, sizeof ev / sizeof ev[0], &run))
        return 1;
    const struct wsl_io_summary *t = &run.io.total;
    if (check_counts(&t->data, (struct expect_counts){.reads = 6, .bytes_read = 3000 + 3 * 4096, .opens = 3,
                                                      .files_opened = 3, .closes = 3},
                     "data"))
        return 1;
    CHECKF(t->read_opens == 2, "%llu read opens", (unsigned long long)t->read_opens);
    CHECKF(run.io.file_sizes.count == 2 && run.io.file_sizes.min == 3000 && run.io.file_sizes.max == 3 * 4096,
           "%llu files sized", (unsigned long long)run.io.file_sizes.count);
    const struct wsl_io_fs *ninep = fs_named(&run, "9p"), *ext4 = fs_named(&run, "ext4");
    CHECK(ninep && ninep->all.files_opened == 1 && ninep->all.bytes_read == 3000);
    CHECK(ext4 && ext4->all.files_opened == 2 && ext4->all.bytes_read == 3 * 4096);
    uint64_t opens = 0;
    for (size_t i = 0; i < run.api_count; i++)
        if (!strcmp(run.apis[i].name, "openat"))
            opens = run.apis[i].ns.count;
    CHECKF(opens == 3, "%llu openat calls", (unsigned long long)opens);
    wsl_run_free(&run);
    return 0;
}

/* Sizes: at open when the shim stat'ed the file, else the first fstat, else the
 * bytes read to the end; write-only opens do not count. */
int test_io_file_sizes(void)
{
    char path[512];
    test_path(path, sizeof path, "io_sizes.trace.zst");
    struct io_builder *b = iob_open_wsl2(path, false);
    const uint64_t unknown = UINT64_MAX;
    for (uint32_t i = 1; i <= 5; i++) {
        char p[64];
        snprintf(p, sizeof p, "/home/u/f%u", i);
        iob_path(b, i, p);
    }
    iob_openat(b, 3, 1, DEV_WSL2_ROOT, 2u << 20, 1000);             /* 2 MiB, known at open */
    iob_close_fd(b, 3, 1, 1000);
    iob_openat(b, 3, 2, DEV_WSL2_ROOT, unknown, 1000);              /* the fstat tells: 5000 */
    iob_call(b, "fstat", 3, 0, 1000, 2, DEV_WSL2_ROOT, 5000, 0);
    iob_read(b, 3, 2, 5001, 5000, 1000);
    iob_close_fd(b, 3, 2, 1000);
    iob_openat(b, 3, 3, DEV_WSL2_ROOT, unknown, 1000);              /* read to the end: 300 + 200 */
    iob_read(b, 3, 3, 300, 300, 1000);
    iob_read(b, 3, 3, 300, 200, 1000);
    iob_read(b, 3, 3, 300, 0, 1000);
    iob_close_fd(b, 3, 3, 1000);
    iob_openat(b, 3, 4, DEV_WSL2_ROOT, unknown, 1000);              /* never known */
    iob_read(b, 3, 4, 100, 100, 1000);
    iob_close_fd(b, 3, 4, 1000);
    iob_call(b, "openat", 3, 0, 1000, 5, DEV_WSL2_ROOT, O_WRONLY | O_CREAT | O_TRUNC, 0); /* output */
    iob_close_fd(b, 3, 5, 1000);
    iob_close(b);

    struct wsl_run run;
    const char *paths[] = {path};
    if (analyze(&run, paths, 1))
        return 1;
    const struct wsl_io_summary *s = &run.io.total;
    CHECK(s->data.files_opened == 5 && s->read_opens == 4 && run.io.file_sizes.count == 3);
    CHECK(run.io.file_sizes.min == 500 && run.io.file_sizes.max == 2u << 20);
    CHECK(s->small_files == 2 && s->small_file_bytes_read == 5500 && s->named_bytes_read == 5600);
    wsl_run_free(&run);
    return 0;
}

/* Records of ids that are done are dropped, oldest first: memory stays flat
 * over many opens, and a read arriving a little after its file's close still
 * finds its file. */
int test_io_path_records_bounded(void)
{
    char path[512];
    test_path(path, sizeof path, "io_many.trace.zst");
    struct io_builder *b = iob_open_wsl2(path, false);
    for (uint32_t i = 0; i < 20000; i++) {
        char p[64];
        snprintf(p, sizeof p, "/mnt/c/d%u/f%u", i % 7, i);
        uint32_t id = 1 + 2 * i;
        iob_path(b, id, p);
        iob_path(b, id + 1, p);
        iob_call(b, "stat", -1, 0, 1000, id + 1, DEV_WSL2_C, 10, 0);   /* a lookup, then the open */
        iob_openat(b, 3, id, DEV_WSL2_C, 10, 1000);
        iob_close_fd(b, 3, id, 1000);
        if (i >= 5)  /* a read another thread's chunk brings after the close */
            iob_read(b, 4, id - 10, 10, 10, 1000);
    }
    iob_close(b);

    struct wsl_run run;
    wsl_run_init(&run);
    run.io.dead_paths_kept = 64;
    char err[WSL_READER_ERRLEN];
    CHECKF(wsl_run_add_trace(&run, path, err, sizeof err) == 0, "%s", err);
    wsl_run_finish(&run);
    /* 40000 ids; at most the ~1000 named by one PATHS chunk ahead of their calls, plus the 64 kept */
    CHECKF(run.io.peak_path_records < 1200, "peak %llu records", (unsigned long long)run.io.peak_path_records);
    CHECK(run.io.unnamed_path_events == 0 && run.warning_count == 0);
    const struct wsl_io_fs *p9 = fs_named(&run, "9p");
    CHECK(p9 && run.io.fs_count == 1);
    CHECK(p9->all.files_opened == 20000 && p9->all.stats == 20000 && p9->all.reads == 19995);
    uint64_t files = 0;
    for (size_t i = 0; i < run.io.dir_count; i++)
        files += run.io.dirs[i].files;
    CHECK(run.io.dir_count == 7 && files == 20000);
    wsl_run_free(&run);
    return 0;
}

/* ---- a rank's own run, its file I/O counted by the run's trace state (wsl_io_trace_also) ---- */

static int same_hist(const struct wsl_hist *a, const struct wsl_hist *b)
{
    CHECK(a->count == b->count && a->sum == b->sum && a->min == b->min && a->max == b->max);
    for (unsigned g = 0; g < WSL_HIST_GROUPS; g++) {
        CHECK(!a->groups[g] == !b->groups[g]);
        CHECK(!a->groups[g] || !memcmp(a->groups[g], b->groups[g], WSL_HIST_SUB * sizeof *a->groups[g]));
    }
    return 0;
}

static bool same_str(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

/* Two finished runs' file I/O: the totals, the file sizes, the mounts and the filesystems. */
static int same_io_mounts(const struct wsl_io *a, const struct wsl_io *b)
{
    CHECK(a->wsl == b->wsl && a->timing_sample == b->timing_sample);
    CHECK(!memcmp(&a->total, &b->total, sizeof a->total));
    if (same_hist(&a->file_sizes, &b->file_sizes))
        return 1;
    CHECKF(a->mount_count == b->mount_count, "%zu mounts, %zu", a->mount_count, b->mount_count);
    for (size_t i = 0; i < a->mount_count; i++) {
        const struct wsl_io_mount *x = &a->mounts[i], *y = &b->mounts[i];
        CHECKF(!strcmp(x->mount_point, y->mount_point) && !strcmp(x->fstype, y->fstype) &&
                   !strcmp(x->source, y->source) && x->kind == y->kind,
               "mount %zu: %s %s, %s %s", i, x->mount_point, x->fstype, y->mount_point, y->fstype);
        CHECK(!memcmp(&x->all, &y->all, sizeof x->all) && !memcmp(&x->data, &y->data, sizeof x->data));
        CHECKF(same_str(x->data_root, y->data_root), "mount %s: data root %s, %s", x->mount_point,
               x->data_root ? x->data_root : "(none)", y->data_root ? y->data_root : "(none)");
    }
    CHECK(a->fs_count == b->fs_count);
    for (size_t i = 0; i < a->fs_count; i++) {
        const struct wsl_io_fs *x = &a->fs[i], *y = &b->fs[i];
        CHECK(!strcmp(x->fstype, y->fstype) && !memcmp(&x->all, &y->all, sizeof x->all) &&
              x->crosses_windows == y->crosses_windows && x->system == y->system && x->mount_count == y->mount_count);
        CHECK(!memcmp(x->mounts, y->mounts, x->mount_count * sizeof *x->mounts));
    }
    return 0;
}

/* Every figure of two runs' file I/O (finished: sorted, grouped). */
static int same_io(const struct wsl_io *a, const struct wsl_io *b)
{
    if (same_io_mounts(a, b))
        return 1;
    CHECKF(a->dir_count == b->dir_count, "%zu folders, %zu", a->dir_count, b->dir_count);
    for (size_t i = 0; i < a->dir_count; i++) {
        const struct wsl_io_dir *x = &a->dirs[i], *y = &b->dirs[i];
        CHECKF(!strcmp(x->path, y->path) && x->mount == y->mount && x->reads == y->reads &&
                   x->bytes_read == y->bytes_read && x->files == y->files && x->time == y->time &&
                   x->rooted == y->rooted,
               "folder %zu: %s, %s", i, x->path, y->path);
    }
    CHECK(a->untracked_dirs.reads == b->untracked_dirs.reads && a->untracked_dirs.time == b->untracked_dirs.time);
    CHECK(a->unnamed_path_events == b->unnamed_path_events && a->untracked_path_events == b->untracked_path_events);
    CHECK(a->peak_path_records == b->peak_path_records && a->dir_bytes == b->dir_bytes);
    return 0;
}

/* A trace of rank `rank` (or of no rank: -1): files in folders of its own and shared ones, on ext4,
 * the Windows drive and /dev/shm, a file named twice, stdin, a path never named, system files. */
static void write_rank_io(const char *path, int rank, uint32_t flags, unsigned variant)
{
    char *fixture = io_fixture("wsl2.mountinfo"); /* and a share of no known kind */
    static const char share[] = "90 61 0:70 / /mnt/share rw,noatime - 9p share rw,aname=share,trans=fd\n";
    size_t flen = strlen(fixture);
    char *mounts = malloc(flen + sizeof share);
    if (!mounts)
        abort();
    memcpy(mounts, fixture, flen);
    memcpy(mounts + flen, share, sizeof share);
    free(fixture);
    char vars[64];
    int len = snprintf(vars, sizeof vars, "RANK=%d%cWORLD_SIZE=4%c", rank, 0, 0);
    struct io_builder_options o = {.flags = flags, .mountinfo = mounts, .rank_vars = rank >= 0 ? vars : NULL,
                                   .rank_vars_len = (size_t)len};
    struct io_builder *b = iob_open(path, &o);
    char name[128];
    uint32_t id = 1;
    for (unsigned k = 0; k < 6 + variant; k++, id++) {
        const char *root = k % 3 == 0 ? "/mnt/c/Users/u/ds" : k % 3 == 1 ? "/home/u/data" : "/home/u/data/shard";
        snprintf(name, sizeof name, "%s/%s%u/f%u.bin", root, k % 2 ? "r" : "common", k % 2 ? (unsigned)rank + 9 : k, k);
        iob_path(b, id, name);
        iob_openat(b, 3, id, k % 3 == 0 ? DEV_WSL2_C : DEV_WSL2_ROOT, 1000u * (k + 1) + variant, 2000 + 10 * k);
        for (unsigned i = 0; i < 2 + k % 3; i++)
            iob_read(b, 3, id, 4096, 1000, 3000 + i);
        iob_read(b, 3, id, 4096, 0, 500);
        iob_close_fd(b, 3, id, 700);
    }
    iob_path(b, id, "/proc/self/status");
    iob_openat(b, 6, id, DEV_WSL2_PROC, 0, 8000);
    iob_read(b, 6, id, 4096, 1200, 5000);
    iob_close_fd(b, 6, id, 1000);
    id++;
    iob_path(b, id, "/dev/shm/torch_1");
    iob_openat(b, 7, id, DEV_WSL2_SHM, 1048576, 6000);
    iob_call(b, "mmap64", 7, 0, 7000, id, 1048576, 0, 1);
    id++;
    iob_path(b, id, "/mnt/share/set/x.bin");   /* Windows under WSL, the host's share otherwise */
    iob_openat(b, 9, id, WSL_DEV(0, 70), 4096, 3000);
    iob_read(b, 9, id, 4096, 4096, 4000);
    iob_close_fd(b, 9, id, 500);
    iob_read(b, 0, 0, 4096, 100, 50000);        /* stdin */
    iob_openat(b, 8, 900, DEV_WSL2_C, 10, 1000); /* never named */
    iob_read(b, 8, 900, 10, 10, 1000);
    iob_close(b);
    free(mounts);
}

static int rank_run_like_alone(struct wsl_run *run, size_t proc, const char *path, bool expect_own)
{
    struct wsl_run *own = run->procs[proc].rank_solo, alone;
    CHECKF(!own == !expect_own, "%s: %s own run", path, own ? "an" : "no");
    if (!own)
        return 0;
    run->procs[proc].rank_solo = NULL;
    wsl_run_init(&alone);
    alone.solo = true;
    alone.nested = true;
    char err[WSL_READER_ERRLEN];
    CHECKF(wsl_run_add_trace(&alone, path, err, sizeof err) == 0, "%s", err);
    wsl_run_finish(own);
    wsl_run_finish(&alone);
    CHECK(own->io.total.data.reads > 0 && own->io.dir_count > 3 && own->io.mount_count > 2);
    CHECK(!memcmp(&own->procs[0].io, &alone.procs[0].io, sizeof own->procs[0].io));
    int rc = same_io(&own->io, &alone.io);
    CHECK(own->finding_count == alone.finding_count && own->warning_count == alone.warning_count);
    for (size_t i = 0; i < own->warning_count; i++)
        CHECK(!strcmp(own->warnings[i], alone.warnings[i]));
    wsl_run_free(own);
    free(own);
    wsl_run_free(&alone);
    return rc;
}

/* A rank's own run takes its file I/O from the run's trace state: the same as a reading of the
 * trace alone (folders and mounts other traces of the run named first, and ones of its own; data
 * roots, file sizes, path records). Where the run holds one of the rank's mounts with another
 * kind (an earlier trace not under WSL), the rank's run is not made in the pass: the distributed
 * analysis reads the trace again. */
int test_io_rank_run_shared(void)
{
    char other[512], native[512], rank[3][512];
    test_path(other, sizeof other, "io_rank_other.trace.zst");
    test_path(native, sizeof native, "io_rank_native.trace.zst");
    write_rank_io(other, -1, WSL_PROC_WSL2, 3);
    write_rank_io(native, -1, 0, 1);
    for (int r = 0; r < 3; r++) {
        char name[64];
        snprintf(name, sizeof name, "io_rank%d.trace.zst", r);
        test_path(rank[r], sizeof rank[r], name);
        write_rank_io(rank[r], r, WSL_PROC_WSL2, (unsigned)r);
    }
    for (int with_native = 0; with_native < 2; with_native++) {
        struct wsl_run run;
        wsl_run_init(&run);
        const char *paths[] = {with_native ? native : other, rank[0], rank[1], rank[2]};
        char err[WSL_READER_ERRLEN];
        for (size_t i = 0; i < 4; i++)
            CHECKF(wsl_run_add_trace(&run, paths[i], err, sizeof err) == 0, "%s: %s", paths[i], err);
        CHECK(run.proc_count == 4 && !run.procs[0].rank_solo);
        for (size_t i = 1; i < 4; i++)
            if (rank_run_like_alone(&run, i, paths[i], !with_native))
                return 1;
        wsl_run_finish(&run); /* (without their own runs: the ranks are read again) */
        CHECK(run.dist.active && run.dist.count == 3);
        wsl_run_free(&run);
    }
    return 0;
}

/* ---- lazy naming: a windowed reading names a path at its first call in the window ---------- */

/* The figures of two finished runs' file I/O, folders no call used aside (a windowed reading's
 * lazy naming does not add them: io_analysis.h, lazy_names). */
static int same_io_figures(const struct wsl_io *a, const struct wsl_io *b)
{
    if (same_io_mounts(a, b))
        return 1;
    /* ranked by time, reads, then name: the folders with figures come first */
    size_t i = 0;
    for (; i < a->dir_count || i < b->dir_count; i++) {
        const struct wsl_io_dir *x = i < a->dir_count ? &a->dirs[i] : NULL, *y = i < b->dir_count ? &b->dirs[i] : NULL;
        bool xs = x && (x->time || x->reads || x->files || x->bytes_read || x->mount != WSL_IO_NONE);
        bool ys = y && (y->time || y->reads || y->files || y->bytes_read || y->mount != WSL_IO_NONE);
        if (!xs && !ys)
            break;
        CHECKF(xs && ys, "folder %zu: %s, %s", i, x ? x->path : "-", y ? y->path : "-");
        CHECKF(!strcmp(x->path, y->path) && x->mount == y->mount && x->reads == y->reads &&
                   x->bytes_read == y->bytes_read && x->files == y->files && x->time == y->time &&
                   x->rooted == y->rooted,
               "folder %zu: %s, %s", i, x->path, y->path);
    }
    CHECK(!memcmp(&a->untracked_dirs, &b->untracked_dirs, sizeof a->untracked_dirs));
    CHECK(a->unnamed_path_events == b->unnamed_path_events && a->untracked_path_events == b->untracked_path_events);
    CHECK(a->peak_path_records == b->peak_path_records);
    return 0;
}

/* A windowed reading of traces, [t0, t1] in ticks (= ns: no TSC), as the steady state's reading
 * makes it; eager: every path named at once (the test hook). */
static int read_windowed(struct wsl_run *st, const char *const *paths, size_t n, uint64_t t0, uint64_t t1,
                         bool eager, size_t dead_kept)
{
    wsl_io_lazy_names_off = eager;
    wsl_run_init(st);
    st->windowed = st->solo = st->nested = true;
    st->window_start_ns = st->window_t0 = t0;
    st->window_end_ns = st->window_t1 = t1;
    if (dead_kept)
        st->io.dead_paths_kept = dead_kept;
    char err[WSL_READER_ERRLEN];
    for (size_t i = 0; i < n; i++)
        CHECKF(wsl_run_add_trace(st, paths[i], err, sizeof err) == 0, "%s: %s", paths[i], err);
    wsl_io_lazy_names_off = false;
    wsl_run_finish(st);
    return 0;
}

/* Both readings: the same figures, findings and warnings; lazy_folders: the lazy one's folders
 * are fewer (it was lazy), else the same number (the caps made it name them all). */
static int lazy_like_eager(const char *const *paths, size_t n, uint64_t t0, uint64_t t1, size_t dead_kept,
                           bool lazy_folders)
{
    struct wsl_run lazy, eager;
    if (read_windowed(&lazy, paths, n, t0, t1, false, dead_kept) ||
        read_windowed(&eager, paths, n, t0, t1, true, dead_kept))
        return 1;
    CHECK(eager.io.total.data.reads > 0);
    if (same_io_figures(&lazy.io, &eager.io))
        return 1;
    CHECKF(lazy_folders ? lazy.io.dir_count < eager.io.dir_count : lazy.io.dir_count == eager.io.dir_count,
           "%zu folders lazily, %zu", lazy.io.dir_count, eager.io.dir_count);
    CHECK(lazy.proc_count == eager.proc_count);
    for (size_t i = 0; i < lazy.proc_count; i++)
        CHECK(!memcmp(&lazy.procs[i].io, &eager.procs[i].io, sizeof lazy.procs[i].io));
    CHECK(lazy.finding_count == eager.finding_count && lazy.warning_count == eager.warning_count);
    for (size_t i = 0; i < lazy.finding_count; i++)
        CHECK(!strcmp(lazy.findings[i].id, eager.findings[i].id) &&
              lazy.findings[i].time_lost_ns == eager.findings[i].time_lost_ns);
    for (size_t i = 0; i < lazy.warning_count; i++)
        CHECKF(!strcmp(lazy.warnings[i], eager.warnings[i]), "%s | %s", lazy.warnings[i], eager.warnings[i]);
    wsl_run_free(&lazy);
    wsl_run_free(&eager);
    return 0;
}

/* A start-up naming many modules before the window (most used there, some not at all), then the
 * window: files defined before it and inside it, an id redefined once its record was dropped and
 * one redefined while alive (the first stands), a call on an id before its definition (unnamed),
 * system files, a path that needs normalizing, relative names; then files used after it only. */
static void write_lazy_trace(const char *path, unsigned variant, uint64_t *t0, uint64_t *t1)
{
    struct io_builder *b = iob_open_wsl2(path, false);
    char name[160];
    for (uint32_t i = 0; i < 600; i++) { /* the start-up: modules and libraries */
        snprintf(name, sizeof name, "/usr/lib/python3/site-packages/pkg%u/m%u.%s", i % 40, i, i % 5 ? "py" : "so");
        iob_path(b, 1 + i, name);
        if (i % 3 == 0) { /* a third looked up and opened now */
            iob_call(b, "stat", -1, 0, 500, 1 + i, DEV_WSL2_ROOT, 100, 0);
        }
    }
    for (uint32_t i = 0; i < 50; i++) /* data files named now, the first 20 read now */
    {
        snprintf(name, sizeof name, "/home/u/data%u/before%u/f%u.bin", variant, i % 7, i);
        iob_path(b, 1000 + i, name);
    }
    for (uint32_t i = 0; i < 20; i++) {
        iob_openat(b, 3, 1000 + i, DEV_WSL2_ROOT, 5000 + i, 2000);
        iob_read(b, 3, 1000 + i, 8192, 5000 + i, 3000);
        iob_close_fd(b, 3, 1000 + i, 500);
    }
    iob_path(b, 2000, "/home/u/./data//redef/../redef/x.bin");
    iob_path(b, 2001, "/mnt/c/Users/u/alive/z.bin");
    iob_path(b, 2002, "<fd 7>/rel/y.bin");
    iob_path(b, 2003, "/proc/self/status");
    iob_path(b, 5000, "/opt/unused/never.bin"); /* used by no call */
    iob_openat(b, 4, 2001, DEV_WSL2_C, 300, 4000); /* opened before the window, read inside it */
    iob_path(b, 2001, "/mnt/c/Users/u/ignored/z.bin");
    iob_flush(b);
    *t0 = iob_last_ns(b) + IO_GAP_NS / 2;

    /* the window */
    for (uint32_t i = 20; i < 45; i++) { /* named before it */
        iob_openat(b, 3, 1000 + i, i % 2 ? DEV_WSL2_ROOT : 0, i % 4 ? 70000 + i : UINT64_MAX, 2000);
        iob_read(b, 3, 1000 + i, 8192, 8192, 3000);
        iob_read(b, 3, 1000 + i, 8192, 0, 100);
        iob_close_fd(b, 3, 1000 + i, 500);
    }
    for (uint32_t i = 0; i < 600; i += 7) /* some modules */
        iob_call(b, "stat", -1, 0, 300, 1 + i, DEV_WSL2_ROOT, 100, 0);
    iob_read(b, 4, 2001, 300, 300, 9000);
    iob_close_fd(b, 4, 2001, 700);
    iob_openat(b, 5, 2000, DEV_WSL2_ROOT, 40, 1500);
    iob_read(b, 5, 2000, 40, 40, 800);
    iob_close_fd(b, 5, 2000, 600);
    iob_read(b, 7, 2002, 10, 10, 100);
    iob_openat(b, 6, 2003, DEV_WSL2_PROC, 0, 800);
    iob_read(b, 6, 2003, 4096, 900, 1200);
    iob_close_fd(b, 6, 2003, 300);
    iob_openat(b, 8, 2500, DEV_WSL2_ROOT, 77, 1100); /* named only later */
    iob_path(b, 2500, "/home/u/late/w.bin");
    iob_read(b, 8, 2500, 77, 77, 1300);
    iob_close_fd(b, 8, 2500, 200);
    /* a failed open of an id not defined yet (unnamed; it dies), then its definition: a dead record
     * kept raw, dropped at the 4th death after (4 kept); its place goes to id 2700, opened now and
     * read once so many entries were named that the raw names are compacted */
    iob_open_fails(b, 2600, 2, 900);
    iob_flush(b);
    iob_path(b, 2600, "/home/u/failed/q.bin");
    for (uint32_t i = 0; i < 4; i++)
        iob_call(b, "stat", -1, 0, 300, 100 + i, DEV_WSL2_ROOT, 100, 0);
    iob_flush(b);
    iob_path(b, 2700, "/home/u/kept/k.bin");
    iob_openat(b, 9, 2700, DEV_WSL2_ROOT, 5000, 800);
    iob_flush(b);
    for (uint32_t i = 0; i < 1500; i++) {
        snprintf(name, sizeof name, "/home/u/data%u/many%u/h%u.bin", variant, i % 13, i);
        iob_path(b, 6000 + i, name);
        iob_openat(b, 3, 6000 + i, DEV_WSL2_ROOT, 100, 300);
        iob_close_fd(b, 3, 6000 + i, 100);
        if (i % 300 == 299)
            iob_flush(b); /* (each group's names in a PATHS chunk of their own) */
    }
    iob_read(b, 9, 2700, 5000, 5000, 2000);
    iob_close_fd(b, 9, 2700, 300);
    for (uint32_t i = 0; i < 12; i++) { /* enough deaths that id 2000's record is dropped */
        snprintf(name, sizeof name, "/home/u/data%u/inside/g%u.bin", variant, i);
        iob_path(b, 3000 + i, name);
        iob_openat(b, 3, 3000 + i, DEV_WSL2_ROOT, 100 + i, 700);
        iob_read(b, 3, 3000 + i, 4096, 100 + i, 900);
        iob_close_fd(b, 3, 3000 + i, 300);
    }
    iob_path(b, 2000, "/mnt/c/Users/u/redef2/x2.bin"); /* id 2000 again, a new file */
    iob_openat(b, 5, 2000, DEV_WSL2_C, 2000000, 50000);
    iob_read(b, 5, 2000, 65536, 65536, 90000);
    iob_close_fd(b, 5, 2000, 4000);
    iob_flush(b);
    *t1 = iob_last_ns(b);

    /* after it */
    iob_path(b, 4000, "/home/u/after/a.bin");
    iob_openat(b, 3, 4000, DEV_WSL2_ROOT, 10, 1000);
    iob_read(b, 3, 4000, 10, 10, 1000);
    iob_close_fd(b, 3, 4000, 1000);
    for (uint32_t i = 45; i < 50; i++)
        iob_openat(b, 3, 1000 + i, DEV_WSL2_ROOT, 10, 1000);
    iob_close(b);
}

/* Many paths named before the window (count, `per` a folder: first + k / per), the window using
 * some of the first and of the last ones: the folder caps (WSL_IO_MAX_DIRS) in reach. */
static void write_many_folders(const char *path, uint32_t first, uint32_t count, uint32_t per, uint64_t *t0,
                               uint64_t *t1)
{
    struct io_builder *b = iob_open_wsl2(path, false);
    char name[64];
    for (uint32_t k = 0; k < count; k++) {
        snprintf(name, sizeof name, "/d/%u/f%u", first + k / per, k % per);
        iob_path(b, 1 + k, name);
    }
    iob_call(b, "stat", -1, 0, 100, 1, DEV_WSL2_ROOT, 1, 0);
    iob_flush(b);
    *t0 = iob_last_ns(b) + IO_GAP_NS / 2;
    for (uint32_t j = 0; j < 40; j++) {
        uint32_t id = j < 20 ? 1 + j * 7 : count - 39 + j; /* (the last 20) */
        iob_openat(b, 3, id, DEV_WSL2_ROOT, 4096, 1000 + j);
        iob_read(b, 3, id, 4096, 4096, 2000 + j);
        iob_close_fd(b, 3, id, 300);
    }
    iob_flush(b);
    *t1 = iob_last_ns(b);
    iob_close(b);
}

/* Lazy naming leaves a windowed reading's figures as naming every path at once gives them: on
 * one trace and two (same window), with few dead ids kept (id 2000's record dropped before it is
 * named again); and where the folders named reach WSL_IO_MAX_DIRS, in one trace and over two (the
 * first's unnamed entries settled in the second), where the reading names them all. */
int test_io_lazy_names_windowed(void)
{
    char one[512], two[512];
    test_path(one, sizeof one, "io_lazy1.trace.zst");
    test_path(two, sizeof two, "io_lazy2.trace.zst");
    uint64_t t0, t1, u0, u1;
    write_lazy_trace(one, 1, &t0, &t1);
    write_lazy_trace(two, 2, &u0, &u1);
    CHECK(t0 == u0 && t1 == u1);
    const char *both[] = {one, two};
    if (lazy_like_eager(both, 1, t0, t1, 4, true) || lazy_like_eager(both, 2, t0, t1, 4, true) ||
        lazy_like_eager(both, 2, t0, t1, 0, true) || lazy_like_eager(both, 2, t0 - 1, t1 + 10000000, 4, true))
        return 1;

    char big[512], half1[512], half2[512];
    test_path(big, sizeof big, "io_lazy_big.trace.zst");
    test_path(half1, sizeof half1, "io_lazy_half1.trace.zst");
    test_path(half2, sizeof half2, "io_lazy_half2.trace.zst");
    write_many_folders(big, 0, WSL_IO_MAX_DIRS + 30, 1, &t0, &t1);
    write_many_folders(half1, 0, WSL_IO_MAX_DIRS / 2 + 100, 1, &u0, &u1);
    write_many_folders(half2, WSL_IO_MAX_DIRS, WSL_IO_MAX_DIRS / 2 + 100, 1, &u0, &u1);
    struct wsl_run eager;
    if (read_windowed(&eager, (const char *[]){big}, 1, t0, t1, true, 0))
        return 1;
    CHECK(eager.io.untracked_dirs.files == 20); /* the last folders: refused */
    wsl_run_free(&eager);
    const char *halves[] = {half1, half2};
    if (lazy_like_eager((const char *[]){big}, 1, t0, t1, 0, false) || lazy_like_eager(halves, 2, u0, u1, 0, false))
        return 1;
    /* three paths a folder in the first (30,000 folders: its leftovers kept one a folder), then
     * 75,000 folders: the second settles them */
    write_many_folders(half1, 0, 90000, 3, &u0, &u1);
    write_many_folders(half2, WSL_IO_MAX_DIRS, 75000, 1, &t0, &t1);
    if (read_windowed(&eager, halves, 2, u0, u1, true, 0))
        return 1;
    CHECK(eager.io.untracked_dirs.files == 20 && eager.io.dir_count == WSL_IO_MAX_DIRS);
    wsl_run_free(&eager);
    if (lazy_like_eager(halves, 2, u0, u1, 0, false))
        return 1;
    remove(one);
    remove(two);
    remove(big);
    remove(half1);
    remove(half2);
    return 0;
}

/* The plain-path test the folder naming runs on every path (wsl_io_path_scan, 16 bytes at a time)
 * against the rule written out component by component: absolute, no empty, "." or ".." component,
 * no slash at the end but the root's; and the last slash's place. Every string of up to 6 bytes of
 * "/", ".", "a", and random ones of up to 200 bytes (the 16-byte steps and their joins), each at
 * every offset in a buffer of other bytes past its end. */
static bool plain_by_components(const char *p, size_t len)
{
    if (!len || p[0] != '/')
        return false;
    if (len == 1)
        return true;
    for (size_t i = 1, start = 1; i <= len; i++) {
        if (i < len && p[i] != '/')
            continue;
        const size_t c = i - start;
        if (c == 0 || (c == 1 && p[start] == '.') || (c == 2 && p[start] == '.' && p[start + 1] == '.'))
            return false;
        start = i + 1;
    }
    return true;
}

static int scan_agrees(const char *p, size_t len)
{
    static char buf[512 + 80];
    for (size_t off = 0; off < 16; off += 5) {
        memset(buf, off & 1 ? '/' : '.', sizeof buf); /* past the path: bytes that would change the answer */
        memcpy(buf + off, p, len);
        size_t last = 12345;
        const bool got = wsl_io_path_scan(buf + off, len, &last);
        const char *slash = len ? memrchr(p, '/', len) : NULL;
        const size_t want_last = slash ? (size_t)(slash - p) : len;
        CHECKF(got == plain_by_components(p, len), "'%.*s' (%zu bytes, offset %zu): plain %d", (int)len, p, len, off,
               got);
        CHECKF(!got || last == want_last, "'%.*s': last slash %zu, want %zu", (int)len, p, last, want_last);
    }
    return 0;
}

int test_io_path_scan(void)
{
    static const char alphabet[] = "/.a";
    char p[256];
    unsigned plain = 0, total = 0;
    for (size_t len = 0; len <= 6; len++) {
        size_t combos = 1;
        for (size_t i = 0; i < len; i++)
            combos *= 3;
        for (size_t k = 0; k < combos; k++) {
            size_t x = k;
            for (size_t i = 0; i < len; i++, x /= 3)
                p[i] = alphabet[x % 3];
            if (scan_agrees(p, len))
                return 1;
            plain += plain_by_components(p, len);
            total++;
        }
    }
    uint64_t r = 0x2545f4914f6cdd1du;
    for (int n = 0; n < 20000; n++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        size_t len = (size_t)(r % 200);
        p[0] = '/';
        for (size_t i = 1; i < len; i++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            unsigned c = (unsigned)(r % 16);
            p[i] = c == 0 ? '/' : c == 1 ? '.' : (char)('a' + c); /* components of several bytes, some dots */
        }
        if (len > 3 && n % 3 == 0) /* a "." or ".." component or a doubled slash, anywhere */
            memcpy(p + 1 + (size_t)(r >> 8) % (len - 3), n % 2 ? "/./" : "/..", 3);
        if (scan_agrees(p, len))
            return 1;
        plain += plain_by_components(p, len);
        total++;
    }
    CHECKF(plain > total / 5 && plain < total - total / 5, "%u plain of %u: the cases test little", plain, total);
    return 0;
}
