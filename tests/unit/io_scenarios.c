#include "io_scenarios.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef WSLSHIM_FIXTURE_DIR
#error "WSLSHIM_FIXTURE_DIR must name tests/unit/fixtures"
#endif

#define IO_TID 200

struct io_builder {
    struct synth *s;
    bool tsc;
    uint64_t cursor;            /* ns: where the next call starts */
    uint64_t first_ns, last_ns;
    bool any;
    struct wsl_event *ev;
    size_t n, cap;
    uint32_t *path_ids;
    char **paths;
    size_t path_count, path_cap;
    uint64_t written;
};

char *io_fixture(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", WSLSHIM_FIXTURE_DIR, name);
    size_t size;
    uint8_t *data = synth_read_file(path, &size);
    char *text = realloc(data, size + 1);
    if (!text)
        abort();
    text[size] = 0;
    return text;
}

static uint64_t ticks(const struct io_builder *b, uint64_t ns)
{
    return b->tsc ? IO_TSC_OFFSET + ns * IO_TSC_TICKS_PER_NS : ns;
}

struct io_builder *iob_open(const char *path, const struct io_builder_options *o)
{
    struct io_builder *b = calloc(1, sizeof *b);
    if (!b)
        abort();
    b->tsc = o->tsc;
    b->cursor = IO_START_NS + 5000;
    b->s = synth_open(path, NULL);
    synth_file_header(b->s, NULL);
    struct wsl_process_info pi;
    memset(&pi, 0, sizeof pi);
    pi.pid = 777;
    pi.ppid = 1;
    pi.flags = o->flags;
    pi.clock_kind = o->tsc ? WSL_CLOCK_TSC : WSL_CLOCK_MONOTONIC_NS;
    pi.start_ticks = ticks(b, IO_START_NS);
    pi.start_mono_ns = IO_START_NS;
    pi.start_real_ns = 1700000000000000000u;
    const char *argv[] = {"python3", "train.py"};
    synth_process(b->s, &pi, "iohost", "/usr/bin/python3",
                  o->flags & WSL_PROC_WSL2 ? "6.6.87.2-microsoft-standard-WSL2" : "6.8.0-45-generic", 2, argv);
    if (o->rank_vars)
        synth_chunk(b->s, WSL_CHUNK_RANK, o->rank_vars, (uint32_t)o->rank_vars_len);
    synth_api_table(b->s);
    synth_clock(b->s, ticks(b, IO_START_NS), IO_START_NS, pi.start_real_ns);
    if (o->mountinfo)
        synth_mounts(b->s, o->mountinfo);
    return b;
}

struct io_builder *iob_open_wsl2(const char *path, bool tsc)
{
    char *mounts = io_fixture("wsl2.mountinfo");
    struct io_builder_options o = {.flags = WSL_PROC_WSL2, .tsc = tsc, .mountinfo = mounts};
    struct io_builder *b = iob_open(path, &o);
    free(mounts); /* (written by iob_open) */
    return b;
}

void iob_flush(struct io_builder *b)
{
    if (b->path_count) {
        synth_paths(b->s, b->path_ids, (const char *const *)b->paths, (uint32_t)b->path_count);
        for (size_t i = 0; i < b->path_count; i++)
            free(b->paths[i]);
        b->path_count = 0;
    }
    if (b->n) {
        synth_events(b->s, IO_TID, 0, b->ev, (uint32_t)b->n);
        b->written += b->n;
        b->n = 0;
    }
}

void iob_chunk(struct io_builder *b, uint32_t type, const void *payload, size_t size)
{
    iob_flush(b);
    synth_chunk(b->s, type, payload, size);
}

static void iob_free(struct io_builder *b)
{
    free(b->ev);
    free(b->path_ids);
    free(b->paths);
    free(b);
}

void iob_cut(struct io_builder *b)
{
    iob_flush(b);
    synth_flush(b->s);
    synth_abandon(b->s);
    iob_free(b);
}

void iob_close(struct io_builder *b)
{
    iob_flush(b);
    uint64_t end = b->cursor;
    synth_clock(b->s, ticks(b, end), end, 0);
    synth_end(b->s, ticks(b, end), b->written, 0, 1);
    synth_close(b->s);
    iob_free(b);
}

void iob_path(struct io_builder *b, uint32_t id, const char *path)
{
    if (b->path_count == b->path_cap) {
        b->path_cap = b->path_cap ? 2 * b->path_cap : 64;
        b->path_ids = realloc(b->path_ids, b->path_cap * sizeof *b->path_ids);
        b->paths = realloc(b->paths, b->path_cap * sizeof *b->paths);
        if (!b->path_ids || !b->paths)
            abort();
    }
    b->path_ids[b->path_count] = id;
    b->paths[b->path_count++] = strdup(path);
    if (b->path_count >= 4096)
        iob_flush(b);
}

void iob_mounts(struct io_builder *b, const char *mountinfo)
{
    iob_flush(b);
    synth_mounts(b->s, mountinfo);
}

void iob_call(struct io_builder *b, const char *symbol, int64_t fd, int32_t result, uint64_t dur_ns, uint64_t a0,
              uint64_t a1, uint64_t a2, uint64_t a3)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 1024;
        b->ev = realloc(b->ev, b->cap * sizeof *b->ev);
        if (!b->ev)
            abort();
    }
    struct wsl_event *ev = &b->ev[b->n++];
    memset(ev, 0, sizeof *ev);
    ev->api = synth_api_id(symbol);
    ev->t_start = ticks(b, b->cursor);
    ev->t_end = ticks(b, b->cursor + dur_ns);
    ev->result = result;
    ev->stream = (uint64_t)fd;
    ev->a[0] = a0;
    ev->a[1] = a1;
    ev->a[2] = a2;
    ev->a[3] = a3;
    if (!b->any)
        b->first_ns = b->cursor;
    b->any = true;
    b->last_ns = b->cursor + dur_ns;
    b->cursor += dur_ns + IO_GAP_NS;
    if (b->n >= 2000)
        iob_flush(b);
}

void iob_openat(struct io_builder *b, int fd, uint32_t path, uint64_t dev, uint64_t size, uint64_t dur_ns)
{
    iob_call(b, "openat", fd, 0, dur_ns, path, dev, O_RDONLY, size);
}

void iob_open_fails(struct io_builder *b, uint32_t path, int err, uint64_t dur_ns)
{
    iob_call(b, "openat", -1, -err, dur_ns, path, 0, O_RDONLY, 0);
}

void iob_read(struct io_builder *b, int fd, uint32_t path, uint64_t asked, uint64_t got, uint64_t dur_ns)
{
    iob_call(b, "read", fd, 0, dur_ns, path, asked, got, UINT64_MAX);
}

void iob_close_fd(struct io_builder *b, int fd, uint32_t path, uint64_t dur_ns)
{
    iob_call(b, "close", fd, 0, dur_ns, path, 0, 0, 0);
}

uint64_t iob_first_ns(const struct io_builder *b) { return b->first_ns; }
uint64_t iob_last_ns(const struct io_builder *b) { return b->last_ns; }

/* ---- scenarios ---------------------------------------------------------------------- */

/* A few interpreter files on ext4, as every Python run has. */
static void python_startup(struct io_builder *b, uint32_t first_id)
{
    for (uint32_t i = 0; i < 20; i++) {
        char p[128];
        snprintf(p, sizeof p, "/usr/lib/python3.12/module%u.py", i);
        iob_path(b, first_id + i, p);
        iob_openat(b, 3, first_id + i, DEV_WSL2_ROOT, 8000, 6000);
        iob_read(b, 3, first_id + i, 8001, 8000, 4000);
        iob_close_fd(b, 3, first_id + i, 1500);
    }
}

/* 200 images of 100 KB in one folder, read whole: on /mnt/c (9p drvfs) with
 * the costs measured there, or on ext4 with ext4's. */
static void image_folder(const char *path, bool on_windows)
{
    char *mounts = io_fixture("wsl2.mountinfo");
    struct io_builder_options o = {.flags = WSL_PROC_WSL2, .mountinfo = mounts};
    struct io_builder *b = iob_open(path, &o);
    python_startup(b, 1000);
    const char *dir = on_windows ? "/mnt/c/Users/me/datasets/cats" : "/home/me/datasets/cats";
    for (uint32_t i = 0; i < 200; i++) {
        char p[128];
        snprintf(p, sizeof p, "%s/cat%03u.jpg", dir, i);
        iob_path(b, 1 + i, p);
        iob_openat(b, 5, 1 + i, on_windows ? DEV_WSL2_C : DEV_WSL2_ROOT, 100000, on_windows ? 1500000 : 10000);
        iob_read(b, 5, 1 + i, 100001, 100000, on_windows ? 300000 : 30000);
        iob_read(b, 5, 1 + i, 1, 0, on_windows ? 50000 : 1000);
        iob_close_fd(b, 5, 1 + i, on_windows ? 400000 : 3000);
    }
    iob_close(b);
    free(mounts);
}

/* 1,000,000 files of 4 KiB under 1000 folders of /mnt/c, each looked up, opened, read and closed
 * (two path ids), and the file opened five before read once more after its close (as another
 * thread's chunk brings it): the I/O analysis's path table at its busiest (docs/overhead.md). */
static void many_files(const char *path)
{
    char *mounts = io_fixture("wsl2.mountinfo");
    struct io_builder_options o = {.flags = WSL_PROC_WSL2, .mountinfo = mounts};
    struct io_builder *b = iob_open(path, &o);
    for (uint32_t i = 0; i < 1000000; i++) {
        char p[64];
        snprintf(p, sizeof p, "/mnt/c/data/d%u/f%u.jpg", i % 1000, i);
        uint32_t id = 1 + 2 * i;
        iob_path(b, id, p);
        iob_path(b, id + 1, p);
        iob_call(b, "stat", -1, 0, 1000, id + 1, DEV_WSL2_C, 10, 0);
        iob_openat(b, 3, id, DEV_WSL2_C, 4096, 1000);
        iob_read(b, 3, id, 4096, 4096, 1000);
        iob_close_fd(b, 3, id, 1000);
        if (i >= 5)
            iob_read(b, 4, id - 10, 10, 10, 1000);
    }
    iob_close(b);
    free(mounts);
}

/* 5000 files of 40 KB in 50 folders on ext4, each opened, fstat'ed, read, closed. */
static void small_files(const char *path)
{
    char *mounts = io_fixture("wsl2.mountinfo");
    struct io_builder_options o = {.flags = WSL_PROC_WSL2, .mountinfo = mounts};
    struct io_builder *b = iob_open(path, &o);
    for (uint32_t i = 0; i < 5000; i++) {
        char p[128];
        snprintf(p, sizeof p, "/home/me/data/train/class_%02u/img_%04u.png", i / 100, i);
        uint32_t id = 1 + i;
        iob_path(b, id, p);
        iob_openat(b, 7, id, DEV_WSL2_ROOT, 40000, 15000);
        iob_call(b, "fstat", 7, 0, 2000, id, DEV_WSL2_ROOT, 40000, 0);
        iob_read(b, 7, id, 40001, 40000, 8000);
        iob_read(b, 7, id, 1, 0, 1000);
        iob_close_fd(b, 7, id, 3000);
    }
    iob_close(b);
    free(mounts);
}

/* 4 files of 256 MiB on ext4, read in 4 MiB requests. */
static void large_files(const char *path)
{
    char *mounts = io_fixture("wsl2.mountinfo");
    struct io_builder_options o = {.flags = WSL_PROC_WSL2, .mountinfo = mounts};
    struct io_builder *b = iob_open(path, &o);
    for (uint32_t f = 0; f < 4; f++) {
        char p[128];
        snprintf(p, sizeof p, "/home/me/shards/shard-%05u.tar", f);
        iob_path(b, 1 + f, p);
        iob_openat(b, 9, 1 + f, DEV_WSL2_ROOT, 256u << 20, 10000);
        for (unsigned k = 0; k < 64; k++)
            iob_read(b, 9, 1 + f, 4u << 20, 4u << 20, 2000000);
        iob_read(b, 9, 1 + f, 4u << 20, 0, 1000);
        iob_close_fd(b, 9, 1 + f, 5000);
    }
    iob_close(b);
    free(mounts);
}

/* A trace whose third chunk after the API table is a broken PATHS or MOUNTS chunk. */
static void malformed(const char *path, const char *which)
{
    struct io_builder_options o = {.flags = WSL_PROC_WSL2, .mountinfo = NULL};
    struct io_builder *b = iob_open(path, &o);
    uint8_t buf[64];
    memset(buf, 'a', sizeof buf);
    struct wsl_path_entry_header h = {1, 10};
    if (strcmp(which, "bad_paths_length") == 0) {
        h.length = WSL_PATH_MAX_LENGTH + 1;
        memcpy(buf, &h, sizeof h);
        synth_chunk(b->s, WSL_CHUNK_PATHS, buf, sizeof buf);
    } else if (strcmp(which, "bad_paths_past_end") == 0) {
        h.length = 100;
        memcpy(buf, &h, sizeof h);
        synth_chunk(b->s, WSL_CHUNK_PATHS, buf, 8 + 10);
    } else if (strcmp(which, "bad_paths_zero_id") == 0) {
        h.id = 0;
        memcpy(buf, &h, sizeof h);
        synth_chunk(b->s, WSL_CHUNK_PATHS, buf, 8 + 10);
    } else if (strcmp(which, "bad_paths_cut") == 0) {
        memcpy(buf, &h, sizeof h);
        synth_chunk(b->s, WSL_CHUNK_PATHS, buf, 8 + 10 + 5); /* a whole entry, then 5 bytes */
    } else if (strcmp(which, "bad_paths_nul") == 0) {
        memcpy(buf, &h, sizeof h);
        buf[8 + 4] = 0;
        synth_chunk(b->s, WSL_CHUNK_PATHS, buf, 8 + 10);
    } else if (strcmp(which, "bad_mounts_text") == 0) {
        synth_mounts(b->s, "this is not a mount table\n");
    } else if (strcmp(which, "bad_mounts_nul") == 0) {
        static const char text[] = "61 45 8:48 / / rw - ext4 /dev/sdd rw\n\0";
        synth_chunk(b->s, WSL_CHUNK_MOUNTS, text, sizeof text - 1); /* the NUL inside, not the terminator */
    }
    iob_read(b, 0, 0, 100, 100, 1000);
    iob_close(b);
}

bool io_scenario_write(const char *path, const char *name)
{
    if (strcmp(name, "drvfs") == 0)
        image_folder(path, true);
    else if (strcmp(name, "ext4") == 0)
        image_folder(path, false);
    else if (strcmp(name, "small_files") == 0)
        small_files(path);
    else if (strcmp(name, "large_files") == 0)
        large_files(path);
    else if (strcmp(name, "many_files") == 0)
        many_files(path);
    else if (strncmp(name, "bad_paths_", 10) == 0 || strncmp(name, "bad_mounts_", 11) == 0) {
        static const char *const known[] = {"bad_paths_length", "bad_paths_past_end", "bad_paths_zero_id",
                                            "bad_paths_cut", "bad_paths_nul", "bad_mounts_text", "bad_mounts_nul"};
        bool found = false;
        for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
            found |= strcmp(name, known[i]) == 0;
        if (!found)
            return false;
        malformed(path, name);
    } else {
        return false;
    }
    return true;
}
