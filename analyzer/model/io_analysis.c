/*
 * File I/O aggregation. Per trace, each path id gets a small record: its
 * folder (an index into the run's folder table), the mount it lives on
 * (decided at its open, by the device the open reported, against the mount
 * table in force then), the bytes read from it and a few flags. The shim
 * gives every open and every lookup by name a new id, so records of ids that
 * are done (closed, failed, looked up) are dropped, oldest first, once
 * io->dead_paths_kept of them are kept (a little late, for a read another
 * thread's chunk brings after the close). Times are added up in the trace's
 * ticks and converted once, at the end of the trace, with its final clock
 * fit (as analysis_read.c does for the API statistics).
 */
#define _GNU_SOURCE /* memrchr */
#include "io_analysis.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

#define SCRATCH_PAD 72                  /* past a path in t->scratch: room for wsl_io_path_scan's reads */
#define DIR_NONE UINT32_MAX             /* path record without a PATHS entry (yet) */
#define DIR_UNTRACKED (UINT32_MAX - 1)  /* beyond WSL_IO_MAX_DIRS */
#define MOUNT_UNSET UINT32_MAX          /* path record not classified yet */

#define SIZE_UNKNOWN UINT64_MAX         /* an open's a3 when the shim did not stat the file */

enum path_flags {
    PATH_NAMED = 1,         /* a PATHS entry defined it */
    PATH_SYSTEM = 2,        /* under /proc, /sys or /dev */
    PATH_SMALL = 4,         /* sized, and smaller than WSL_IO_SMALL_FILE_BYTES */
    PATH_BY_DEVICE = 8,     /* classified by the device an open or stat reported */
    PATH_READ_OPEN = 16,    /* a named data file opened for reading: its size counts once known */
    PATH_SIZED = 32,        /* its size was counted */
    PATH_DEAD = 64,         /* closed, failed or looked up: queued to be dropped */
    PATH_CODE = 128,        /* the program's code: Python modules, shared libraries */
    PATH_RAW = 256,         /* defined, not named yet (lazy naming): dir indexes the trace's raw names */
};

struct path_record {
    uint32_t id;            /* 0: a dropped record, free for another id */
    uint32_t dir;           /* index into io->dirs, DIR_NONE or DIR_UNTRACKED; a dropped
                               record's: the next free one (free_path) */
    uint32_t mount;         /* index into io->mounts, or MOUNT_UNSET */
    uint32_t flags;
    uint64_t bytes_read;    /* from this open of the file */
};

struct dir_acc {        /* a folder's figures from one trace, time in ticks */
    uint64_t reads, bytes_read, files, time;
    /* with a second run (wsl_io_trace_also): the mount (index + 1, 0: none) of this trace's first
     * data call on the folder, and of its first that counts in a data root */
    uint32_t first_mount, root_mount;
};

/* A second run fed the same trace (a rank's own run): what it needs that the run's tables do not
 * keep per trace. Its folders and mounts are the ones this trace named, in the order it named
 * them (a run of this trace alone adds them in that order). */
struct io_also {
    struct wsl_io *io;              /* the second run's */
    struct wsl_io_trace *shadow;    /* the handle it was given */
    uint32_t *dirs;                 /* io->dirs indices of the run this trace named, first first */
    size_t dir_count, dir_cap;
    uint8_t *dir_named;             /* by io->dirs index of the run: in dirs */
    size_t dir_named_cap;
    uint32_t *mounts;               /* io->mounts indices of the run this trace used, first first */
    enum wsl_fs_kind *kinds;        /* ... and the kind this trace gave each */
    size_t mount_count, mount_cap;
    size_t dir_bytes;               /* the bytes of dirs' names (their NULs too): the lazy bound */
    bool inexact;                   /* the run refused a folder or a mount, or holds a mount of
                                       another kind: the second run cannot be derived */
};

/* A PATHS entry kept as it came (lazy naming), in the order the trace defined them. */
struct raw_name {
    uint32_t rec;                   /* index into paths; UINT32_MAX: named since */
    uint32_t len;
    size_t off;                     /* into raw_bytes */
};

struct wsl_io_trace {
    struct wsl_io *io;
    bool wsl;
    bool lazy;                      /* entries are named at their first call (io->lazy_names) */
    const struct wsl_mount_table *table;
    uint32_t *table_mounts;         /* per mount of the table: index into io->mounts, or WSL_IO_NONE */
    struct wsl_u64_map path_index;  /* path id -> index into paths */
    struct path_record *paths;      /* the records, live and dropped */
    size_t path_cap, path_used;
    uint32_t free_path;             /* a dropped record's index + 1 (they link through dir), 0: none */
    struct path_record path_zero;   /* what id 0 (a damaged trace) gets: a record of its own per call */
    uint32_t *dead;                 /* ids of dead records, oldest first (a ring) */
    size_t dead_first, dead_count;
    struct wsl_io_summary sum;      /* ticks */
    struct wsl_io_counts *mount_all, *mount_data;   /* by index into io->mounts, ticks */
    size_t mount_cap;
    struct dir_acc *dirs;           /* by index into io->dirs */
    size_t dir_cap;
    struct dir_acc untracked_dirs;
    uint32_t unknown_mount;
    uint64_t unnamed_events, untracked_events;
    char *scratch;                  /* a normalized path */
    /* the last classification (classify): the mount a path of folder class_dir with device
     * class_dev got from the table in force (class_valid: since wsl_io_trace_mounts) */
    bool class_valid;
    uint32_t class_dir, class_mount;
    uint64_t class_dev;
    struct raw_name *raw;           /* lazy: the entries defined, first first */
    size_t raw_count, raw_cap, raw_named;
    char *raw_bytes;
    size_t raw_used, raw_bytes_cap;
    size_t pending, pending_bytes;  /* entries in raw not named (each len + 1 bytes) */
    struct io_also *also;           /* a second run fed this trace, or NULL */
    struct wsl_io_trace *of;        /* a shadow: the trace state it takes its figures from */
    unsigned refs;                  /* handles not ended or discarded yet (the state and its shadow) */
};

/* ---- Darshan's access-size buckets ----------------------------------------------- */

static const struct {
    uint64_t max;   /* inclusive, as Darshan's DARSHAN_BUCKET_INC */
    const char *name;
} size_buckets[WSL_IO_SIZE_BUCKETS] = {
    {100, "0-100"},
    {1024, "100-1K"},
    {10240, "1K-10K"},
    {102400, "10K-100K"},
    {1048576, "100K-1M"},
    {4194304, "1M-4M"},
    {10485760, "4M-10M"},
    {104857600, "10M-100M"},
    {1073741824, "100M-1G"},
    {UINT64_MAX, "1G+"},
};

/* The bucket of 2^(L-1), the least number of bit length L (0 for L = 0). The buckets' bounds are
 * more than twice apart, so [2^(L-1), 2^L) holds at most one: a number is in that bucket or the
 * next (tests/unit/test_io.c checks it against the buckets scanned in turn). */
static const uint8_t bucket_of_length[65] = {
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 4, 5, 5, 6, 7, 7, 7, 8, 8, 8, 8, 9,
    9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9,
};

static inline unsigned size_bucket(uint64_t bytes)
{
    unsigned b = bucket_of_length[bytes ? 64 - __builtin_clzll(bytes) : 0];
    return b + (bytes > size_buckets[b].max);
}

unsigned wsl_io_size_bucket(uint64_t bytes)
{
    return size_bucket(bytes);
}

const char *wsl_io_size_bucket_name(unsigned bucket)
{
    return bucket < WSL_IO_SIZE_BUCKETS ? size_buckets[bucket].name : "?";
}

/* ---- run-wide tables: folders and mounts ------------------------------------------ */

void wsl_io_init(struct wsl_io *io)
{
    memset(io, 0, sizeof *io);
    io->untracked_dirs.mount = WSL_IO_NONE;
    io->dead_paths_kept = WSL_IO_DEAD_PATHS_KEPT;
}

/* The key of a folder's name in dir_index: 8 bytes a step (FNV-1a's byte a step, a multiply's
 * latency each, took about 250 instructions of a 60-byte folder, a quarter of naming a path).
 * Only dir_index uses it, and nothing is listed in its order; a collision costs a compare. */
static inline uint64_t dir_key(const char *s, size_t n)
{
    const size_t len = n;
    uint64_t h = 0x9e3779b97f4a7c15u ^ n;
    for (; n >= 8; s += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdu;
        h ^= h >> 32;
    }
    uint64_t w = 0;
    if (n && len >= 8) /* the last 8 bytes, overlapping the ones hashed */
        memcpy(&w, s + n - 8, 8);
    else
        for (size_t i = 0; i < n; i++)
            w |= (uint64_t)(unsigned char)s[i] << (8 * i);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53u;
    h ^= h >> 29;
    h *= 0xff51afd7ed558ccdu;
    h ^= h >> 32;
    return h ? h : 1;
}

/* The index of folder `dir`, added when new; DIR_UNTRACKED beyond the caps. */
static inline __attribute__((always_inline)) uint32_t dir_find_or_add(struct wsl_io *io, const char *dir, size_t len)
{
    uint64_t key = dir_key(dir, len);
    for (const struct wsl_u64_slot *s = wsl_u64_map_find(&io->dir_index, key); s;
         s = wsl_u64_map_find_next(&io->dir_index, s)) {
        const char *p = io->dirs[s->value].path;
        if (strncmp(p, dir, len) == 0 && p[len] == 0)
            return (uint32_t)s->value;
    }
    if (io->dir_count >= WSL_IO_MAX_DIRS || io->dir_bytes + len + 1 > WSL_IO_MAX_DIR_BYTES)
        return DIR_UNTRACKED;
    if (io->dir_count == io->dir_cap) { /* doubled: one realloc a folder copied the table each time
                                          where realloc moves it (100 K folders: minutes under ASan) */
        io->dir_cap = io->dir_cap ? 2 * io->dir_cap : 64;
        io->dirs = xrealloc(io->dirs, io->dir_cap * sizeof *io->dirs);
    }
    struct wsl_io_dir *d = &io->dirs[io->dir_count];
    memset(d, 0, sizeof *d);
    d->path = xstrndup(dir, len);
    d->mount = WSL_IO_NONE;
    io->dir_bytes += len + 1;
    wsl_u64_map_insert(&io->dir_index, key, io->dir_count);
    return (uint32_t)io->dir_count++;
}

static uint32_t mount_find_or_add(struct wsl_io *io, const char *mount_point, const char *fstype, const char *source,
                                  enum wsl_fs_kind kind)
{
    for (size_t i = 0; i < io->mount_count; i++) {
        const struct wsl_io_mount *m = &io->mounts[i];
        if (strcmp(m->mount_point, mount_point) == 0 && strcmp(m->fstype, fstype) == 0 &&
            strcmp(m->source, source) == 0)
            return (uint32_t)i;
    }
    if (io->mount_count >= WSL_IO_MAX_MOUNTS && strcmp(fstype, "other") != 0)
        return mount_find_or_add(io, "", "other", "", WSL_FS_OTHER);
    io->mounts = xrealloc(io->mounts, (io->mount_count + 1) * sizeof *io->mounts);
    struct wsl_io_mount *m = &io->mounts[io->mount_count];
    memset(m, 0, sizeof *m);
    m->mount_point = xstrdup(mount_point);
    m->fstype = xstrdup(fstype);
    m->source = xstrdup(source);
    m->kind = kind;
    return (uint32_t)io->mount_count++;
}

/* Shortens a mount's data_root to the deepest folder holding both it and dir. */
static void data_root_add(struct wsl_io_mount *m, const char *dir)
{
    if (!m->data_root) {
        m->data_root = xstrdup(dir);
        return;
    }
    char *root = m->data_root;
    size_t i = 0;
    while (root[i] && root[i] == dir[i])
        i++;
    bool root_ends = root[i] == 0 || root[i] == '/', dir_ends = dir[i] == 0 || dir[i] == '/';
    if (root_ends && dir_ends && i > 0) {
        root[i] = 0;    /* one holds the other */
        return;
    }
    while (i > 0 && root[i - 1] != '/')
        i--;
    if (i <= 1)         /* only "/" in common (or nothing, for relative names) */
        root[i] = 0;
    else
        root[i - 1] = 0;
}

/* ---- one trace ----------------------------------------------------------------------- */

struct wsl_io_trace *wsl_io_trace_begin(struct wsl_io *io, bool wsl)
{
    struct wsl_io_trace *t = xcalloc(1, sizeof *t);
    t->io = io;
    t->wsl = wsl;
    t->refs = 1;
    io->wsl |= wsl;
    t->unknown_mount = WSL_IO_NONE;
    t->path_index.dense = true; /* a run can hold millions of ids: 3/4 full saves memory */
    t->scratch = xmalloc(WSL_PATH_MAX_LENGTH + SCRATCH_PAD);
    t->lazy = io->lazy_names && !wsl_io_lazy_names_off;
    return t;
}

void wsl_io_trace_mounts(struct wsl_io_trace *t, const struct wsl_mount_table *table)
{
    if (t->of)
        return;
    t->table = table;
    t->class_valid = false;
    free(t->table_mounts);
    t->table_mounts = xmalloc((table->count ? table->count : 1) * sizeof *t->table_mounts);
    memset(t->table_mounts, 0xff, (table->count ? table->count : 1) * sizeof *t->table_mounts);
}

static unsigned name_raw(struct wsl_io_trace *t, struct path_record *r);

/* Drops the record of a path_index slot; its place in paths goes to the next new id. */
static void path_drop(struct wsl_io_trace *t, struct wsl_u64_slot *s)
{
    uint32_t i = (uint32_t)s->value;
    if (__builtin_expect(t->paths[i].flags & PATH_RAW, 0)) /* dead, then defined: an eager reading */
        name_raw(t, &t->paths[i]);                         /* named it (its folder is in the table) */
    wsl_u64_map_remove(&t->path_index, s);
    t->paths[i].id = 0;
    t->paths[i].dir = t->free_path;
    t->free_path = i + 1;
}

/* A record that no later call should name: dropped once enough younger ones are. */
static void path_dies(struct wsl_io_trace *t, struct path_record *r)
{
    if (r->flags & PATH_DEAD)
        return;
    r->flags |= PATH_DEAD;
    size_t kept = t->io->dead_paths_kept ? t->io->dead_paths_kept : 1;
    if (!t->dead)
        t->dead = xmalloc(kept * sizeof *t->dead);
    if (t->dead_count == kept) {
        uint32_t oldest = t->dead[t->dead_first];
        t->dead_first = (t->dead_first + 1) % kept;
        t->dead_count--;
        struct wsl_u64_slot *o = wsl_u64_map_find(&t->path_index, oldest);
        if (o && (t->paths[o->value].flags & PATH_DEAD))
            path_drop(t, o);
    }
    t->dead[(t->dead_first + t->dead_count++) % kept] = r->id;
}

static struct path_record *path_get_slow(struct wsl_io_trace *t, uint32_t id);

/* The record of path id `id`, new (unnamed, unclassified) when unseen; NULL
 * once the trace has WSL_IO_MAX_PATHS_PER_TRACE of them. An id in its home slot (most: the
 * map is at most 3/4 full) is found inline, as wsl_u64_map_find_or_add would find it. */
static inline struct path_record *path_get(struct wsl_io_trace *t, uint32_t id)
{
    const struct wsl_u64_map *m = &t->path_index;
    if (id && m->size) {
        const struct wsl_u64_slot *s = &m->slots[wsl_u64_map_home(m, id)];
        if (s->key == id)
            return &t->paths[s->value];
    }
    return path_get_slow(t, id);
}

static struct path_record *path_get_slow(struct wsl_io_trace *t, uint32_t id)
{
    if (!id) {
        t->path_zero = (struct path_record){.dir = DIR_NONE, .mount = MOUNT_UNSET};
        return &t->path_zero;
    }
    bool added;
    struct wsl_u64_slot *s = wsl_u64_map_find_or_add(&t->path_index, id, 0, &added);
    if (!added)
        return &t->paths[s->value];
    if (t->path_index.count > WSL_IO_MAX_PATHS_PER_TRACE) {
        wsl_u64_map_remove(&t->path_index, s);
        return NULL;
    }
    uint32_t i;
    if (t->free_path) {
        i = t->free_path - 1;
        t->free_path = t->paths[i].dir;
    } else {
        if (t->path_used == t->path_cap) {
            t->path_cap = t->path_cap ? 2 * t->path_cap : 1024;
            t->paths = xrealloc(t->paths, t->path_cap * sizeof *t->paths);
        }
        i = (uint32_t)t->path_used++;
    }
    s->value = i;
    t->paths[i] = (struct path_record){.id = id, .dir = DIR_NONE, .mount = MOUNT_UNSET};
    if (t->path_index.count > t->io->peak_path_records)
        t->io->peak_path_records = t->path_index.count;
    if (t->also && t->path_index.count > t->also->io->peak_path_records)
        t->also->io->peak_path_records = t->path_index.count;
    return &t->paths[i];
}

/* An absolute path that normalize_path gives back as it is: no empty, "." or ".." component (a
 * slash followed by a slash, by "." or ".." and then a slash or the end) and no slash at the end but
 * the root's: one pass of a test a byte, then one copy (the long way took about 480 instructions of
 * an 80-byte path and a copy a component). */
static bool path_is_plain(const char *in, size_t len)
{
    if (!len || in[0] != '/' || (len > 1 && in[len - 1] == '/'))
        return false;
    const char *const end = in + len;
    for (const char *p = in; p < end; p++) {
        if (*p != '/')
            continue;
        const size_t left = (size_t)(end - p) - 1; /* the bytes after this slash */
        if (left == 0)
            return true; /* the root alone (a slash at the end of more was refused above) */
        if (p[1] == '/')
            return false;
        if (p[1] == '.' && (left == 1 || p[2] == '/' || (p[2] == '.' && (left == 2 || p[3] == '/'))))
            return false; /* "." or ".." */
    }
    return true;
}

#ifdef __SSE2__
#include <emmintrin.h>
/* The bits of the 64 bytes at p equal to '/' (*s) and to '.' (*d). */
static inline void slash_dot_masks(const char *p, uint64_t *s, uint64_t *d)
{
    const __m128i sl = _mm_set1_epi8('/'), dot = _mm_set1_epi8('.');
    uint64_t sm = 0, dm = 0;
    for (unsigned k = 0; k < 4; k++) {
        const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * k));
        sm |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, sl)) << (16 * k);
        dm |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, dot)) << (16 * k);
    }
    *s = sm;
    *d = dm;
}
#endif

/* path_is_plain of the len bytes at p, 48 at a time, and where its last slash is (*last; len when
 * none). p may be read up to 64 bytes past len (the callers' scratch has that room; those bytes are
 * masked). A slash at i is followed by a slash, or by "." or ".." and then a slash or the end, the
 * bytes from len on counting as slashes: each step takes 64 bytes' bits, 48 of them its own and 16
 * the next step's, for the three bytes a slash's test looks ahead. */
bool wsl_io_path_scan(const char *p, size_t len, size_t *last)
{
    *last = len;
#ifdef __SSE2__
    if (!len || p[0] != '/')
        return false;
    if (len == 1) {
        *last = 0;
        return true;
    }
    bool plain = true;
    for (size_t at = 0; at < len; at += 48) {
        uint64_t s, d;
        slash_dot_masks(p + at, &s, &d);
        if (len - at < 64) { /* bytes at len and on: slashes that end the path, no dots */
            const uint64_t past = ~0ull << (len - at);
            s |= past;
            d &= ~past;
        }
        const uint64_t bad = s & ((s >> 1) | (d >> 1 & s >> 2) | (d >> 1 & d >> 2 & s >> 3));
        const uint64_t here = len - at < 48 ? (1ull << (len - at)) - 1 : (1ull << 48) - 1;
        plain &= !(bad & here);
        if (s & here)
            *last = at + 63 - (size_t)__builtin_clzll(s & here);
    }
    return plain;
#else
    bool plain = path_is_plain(p, len);
    const char *slash = memrchr(p, '/', len);
    if (slash)
        *last = (size_t)(slash - p);
    return plain;
#endif
}

/* Removes ".", ".." and repeated slashes, lexically (paths are grouped by
 * folder, not resolved); returns the length written to out. */
static size_t normalize_path(const char *in, size_t len, char *out)
{
    if (path_is_plain(in, len)) {
        memcpy(out, in, len);
        out[len] = 0;
        return len;
    }
    size_t n = 0;
    bool absolute = len > 0 && in[0] == '/';
    if (absolute)
        out[n++] = '/';
    size_t floor = n;   /* ".." never goes above the start */
    for (size_t i = 0; i < len;) {
        while (i < len && in[i] == '/')
            i++;
        size_t start = i;
        while (i < len && in[i] != '/')
            i++;
        size_t clen = i - start;
        if (clen == 0 || (clen == 1 && in[start] == '.'))
            continue;
        if (clen == 2 && in[start] == '.' && in[start + 1] == '.' && n > floor) {
            while (n > floor && out[n - 1] != '/')
                n--;
            if (n > floor)
                n--;    /* the slash before the dropped component */
            continue;
        }
        if (n > floor)
            out[n++] = '/';
        memcpy(out + n, in + start, clen);
        n += clen;
    }
    out[n] = 0;
    return n;
}

/* The path normalized into out (scratch: WSL_PATH_MAX_LENGTH + SCRATCH_PAD bytes), as
 * normalize_path writes it; returns its length, and in out[n + 1 ..] nothing the caller reads.
 * Most paths are plain: copied, then checked in place (wsl_io_path_scan). */
static size_t path_folder(const char *in, size_t len, char *out, size_t *last)
{
    memcpy(out, in, len);
    out[len] = 0;
    if (wsl_io_path_scan(out, len, last))
        return len;
    const size_t n = normalize_path(in, len, out);
    const char *slash = n ? memrchr(out, '/', n) : NULL;
    *last = slash ? (size_t)(slash - out) : n;
    return n;
}

/* The folder of the normalized path p of n bytes whose last slash is at `last` (n: none): all
 * before it ("/" for the root's files, "." without a slash), added to the run's table when new. */
static inline uint32_t path_dir(struct wsl_io *io, const char *p, size_t n, size_t last)
{
    if (last >= n)
        return dir_find_or_add(io, ".", 1);
    return dir_find_or_add(io, p, last ? last : 1);
}

static bool is_system_path(const char *p)
{
    if (p[0] != '/' || (p[1] != 'p' && p[1] != 's' && p[1] != 'd'))
        return false; /* (most data paths: no compare) */
    static const char *const roots[] = {"/proc", "/sys", "/dev"};
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++) {
        size_t n = strlen(roots[i]);
        if (strncmp(p, roots[i], n) == 0 && (p[n] == 0 || p[n] == '/'))
            return true;
    }
    return false;
}

static inline __attribute__((always_inline)) bool ends_with(const char *p, size_t n, const char *suffix, size_t k)
{
    return n >= k && memcmp(p + n - k, suffix, k) == 0;
}

/* Code, not data: what an interpreter or the loader reads to run the program
 * (a PyTorch import opens and stats thousands of small files). Kept out of the
 * dataset figures and rules, like /proc. */
static bool is_code_path(const char *p, size_t n)
{
    /* the endings first: most code paths end so, and they take no scan of the path */
#define ENDS_WITH(s) ends_with(p, n, s, sizeof s - 1) /* a constant length: memcmp inline */
    if (ENDS_WITH(".py") || ENDS_WITH(".pyc") || ENDS_WITH(".so") || ENDS_WITH(".pth") ||
        ENDS_WITH("/site-packages") || ENDS_WITH("/dist-packages"))
        return true;
#undef ENDS_WITH
    static const char *const dirs[] = {"/site-packages/", "/dist-packages/", "/__pycache__/", "/lib/python"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
        if (strstr(p, dirs[i]))
            return true;
    return strstr(p, ".so.") != NULL;
}

/* A folder this trace named (its index in the run's table). */
static void also_dir(struct io_also *a, const struct wsl_io *io, uint32_t dir)
{
    if (dir == DIR_UNTRACKED) {
        a->inexact = true;
        return;
    }
    if (dir < a->dir_named_cap && a->dir_named[dir])
        return;
    a->dir_named = xgrow_zeroed(a->dir_named, &a->dir_named_cap, dir, 1, 64);
    a->dir_named[dir] = 1;
    if (a->dir_count == a->dir_cap) {
        a->dir_cap = a->dir_cap ? 2 * a->dir_cap : 64;
        a->dirs = xrealloc(a->dirs, a->dir_cap * sizeof *a->dirs);
    }
    a->dirs[a->dir_count++] = dir;
    a->dir_bytes += strlen(io->dirs[dir].path) + 1;
}

/* A mount this trace used (its index in the run's table), of the kind it gave it. */
static void also_mount(struct wsl_io_trace *t, uint32_t mount, enum wsl_fs_kind kind)
{
    struct io_also *a = t->also;
    for (size_t i = 0; i < a->mount_count; i++)
        if (a->mounts[i] == mount)
            return;
    if (t->io->mount_count > WSL_IO_MAX_MOUNTS || t->io->mounts[mount].kind != kind)
        a->inexact = true; /* ("other": the run's cap; a mount an earlier trace classified otherwise) */
    if (a->mount_count == a->mount_cap) {
        a->mount_cap = a->mount_cap ? 2 * a->mount_cap : 16;
        a->mounts = xrealloc(a->mounts, a->mount_cap * sizeof *a->mounts);
        a->kinds = xrealloc(a->kinds, a->mount_cap * sizeof *a->kinds);
    }
    a->mounts[a->mount_count] = mount;
    a->kinds[a->mount_count++] = kind;
}

bool wsl_io_lazy_names_off;

/* Names a path record from its PATHS entry: its folder (added to the run's table when new), and
 * whether it is a system file or the program's code. */
static void name_path(struct wsl_io_trace *t, struct path_record *r, const char *bytes, size_t length)
{
    char *p = t->scratch;
    size_t last, n = path_folder(bytes, length, p, &last);
    r->dir = path_dir(t->io, p, n, last);
    if (t->also)
        also_dir(t->also, t->io, r->dir);
    r->flags |= PATH_NAMED | (n && is_system_path(p) ? PATH_SYSTEM : 0) | (n && is_code_path(p, n) ? PATH_CODE : 0);
}

/* ---- lazy naming ------------------------------------------------------------------------------
 * A windowed reading (io->lazy_names) reads the whole trace's PATHS chunks, but only calls in the
 * window: most entries of a long start-up (a PyTorch rank names ~31 K modules and libraries) are
 * used by no call it counts. The record of an entry is made at once, as an eager reading makes it
 * (the path cap, peak, dead ids and redefinitions behave the same); its bytes are kept and it is
 * named at its first call (before anything reads its folder or flags).
 *
 * What differs is the run's folder table: it gets the folders calls used, in the order of their
 * first calls, not every folder named, in the order named. Folders are ranked by their figures and
 * then by name (io_run.c), so the order does not show, and folders no call used have no figures;
 * but the caps (WSL_IO_MAX_DIRS, WSL_IO_MAX_DIR_BYTES) would refuse different folders. So an entry
 * is kept raw only while the folders an eager reading could hold stay within both caps: at most
 * the table's plus one per entry not named (this trace's, and the ones earlier traces left, whose
 * bytes the run keeps: io->lazy_left), each at most its length + 1 bytes (normalizing never makes
 * a path longer). When one more would not fit, the entries ended traces left are settled (their
 * folders added, in order), this trace's are named in the order they came, and the trace goes on
 * eager: the table holds then what an eager reading's holds, and later refusals are the same. */

static void raw_forget(struct wsl_io_trace *t, struct raw_name *e)
{
    e->rec = UINT32_MAX;
    t->raw_named++;
    t->pending--;
    t->pending_bytes -= (size_t)e->len + 1;
    t->io->lazy_pending--;
    t->io->lazy_pending_bytes -= (size_t)e->len + 1;
}

/* Names a record kept raw (its first call, or the end of laziness); 1, naming nothing, where no
 * PATHS entry defined it (yet). */
static __attribute__((noinline)) unsigned name_raw(struct wsl_io_trace *t, struct path_record *r)
{
    if (!(r->flags & PATH_RAW))
        return 1;
    struct raw_name *e = &t->raw[r->dir];
    r->flags &= ~(uint32_t)PATH_RAW;
    r->dir = DIR_NONE;
    name_path(t, r, t->raw_bytes + e->off, e->len);
    raw_forget(t, e);
    return 0;
}

/* Drops the named entries from raw (they are most once a window's calls began). */
static void raw_compact(struct wsl_io_trace *t)
{
    size_t k = 0, used = 0;
    for (size_t i = 0; i < t->raw_count; i++) {
        struct raw_name e = t->raw[i];
        if (e.rec == UINT32_MAX)
            continue;
        memmove(t->raw_bytes + used, t->raw_bytes + e.off, e.len);
        e.off = used;
        used += e.len;
        t->paths[e.rec].dir = (uint32_t)k;
        t->raw[k++] = e;
    }
    t->raw_count = k;
    t->raw_named = 0;
    t->raw_used = used;
}

/* Whether one more entry of `length` bytes may wait: an eager reading's folders stay within the
 * caps. A second run gets the folders t named at its end; where its own could reach its caps
 * (counting every folder t named or may name), it is not derived (wsl_io_trace_also_exact). */
static bool raw_fits(struct wsl_io_trace *t, size_t length)
{
    const struct wsl_io *io = t->io;
    if (io->dir_count + io->lazy_pending + 1 > WSL_IO_MAX_DIRS ||
        io->dir_bytes + io->lazy_pending_bytes + length + 1 > WSL_IO_MAX_DIR_BYTES)
        return false;
    struct io_also *a = t->also;
    if (__builtin_expect(a != NULL, 0) && !a->inexact) {
        const struct wsl_io *o = a->io;
        if (o->dir_count + o->lazy_pending + a->dir_count + t->pending + 1 > WSL_IO_MAX_DIRS ||
            o->dir_bytes + o->lazy_pending_bytes + a->dir_bytes + t->pending_bytes + length + 1 >
                WSL_IO_MAX_DIR_BYTES)
            a->inexact = true;
    }
    return true;
}

static void raw_keep(struct wsl_io_trace *t, struct path_record *r, const char *bytes, size_t length)
{
    if (t->raw_named > 1024 && t->raw_named > t->raw_count / 2)
        raw_compact(t);
    if (t->raw_count == t->raw_cap) {
        t->raw_cap = t->raw_cap ? 2 * t->raw_cap : 1024;
        t->raw = xrealloc(t->raw, t->raw_cap * sizeof *t->raw);
    }
    if (t->raw_used + length > t->raw_bytes_cap) {
        t->raw_bytes_cap = t->raw_bytes_cap ? 2 * t->raw_bytes_cap : 64 * 1024;
        if (t->raw_bytes_cap < t->raw_used + length)
            t->raw_bytes_cap = t->raw_used + length;
        t->raw_bytes = xrealloc(t->raw_bytes, t->raw_bytes_cap);
    }
    memcpy(t->raw_bytes + t->raw_used, bytes, length);
    t->raw[t->raw_count] = (struct raw_name){.rec = (uint32_t)(r - t->paths), .len = (uint32_t)length,
                                             .off = t->raw_used};
    t->raw_used += length;
    r->dir = (uint32_t)t->raw_count++;
    r->flags |= PATH_RAW;
    t->pending++;
    t->pending_bytes += length + 1;
    t->io->lazy_pending++;
    t->io->lazy_pending_bytes += length + 1;
}

/* The length of a raw path's part before its last slash where its folder is a function of that
 * part alone (its last component is a name: not empty, "." or ".."), else SIZE_MAX. */
static size_t raw_prefix(const char *p, size_t len)
{
    const char *slash = memrchr(p, '/', len);
    if (!slash)
        return SIZE_MAX;
    size_t k = (size_t)(slash - p), last = len - k - 1;
    if (!last || (p[k + 1] == '.' && (last == 1 || (last == 2 && p[k + 2] == '.'))))
        return SIZE_MAX;
    return k;
}

/* The entries t did not name, kept by run io until a trace settles them (only their folders
 * matter then: of a row of entries with the same part before the last slash, the first is kept).
 * Returns how many are kept, and *bytes their bytes (each len + 1). */
static size_t raw_leave(struct wsl_io_trace *t, struct wsl_io *io, size_t *bytes)
{
    size_t kept = 0;
    *bytes = 0;
    const char *prev = NULL;
    size_t prev_k = SIZE_MAX;
    for (size_t i = 0; i < t->raw_count; i++) {
        const struct raw_name *e = &t->raw[i];
        if (e->rec == UINT32_MAX)
            continue;
        const char *p = t->raw_bytes + e->off;
        size_t k = raw_prefix(p, e->len);
        if (k != SIZE_MAX && k == prev_k && memcmp(p, prev, k) == 0)
            continue; /* the folder of the one before */
        prev = p;
        prev_k = k;
        size_t need = io->lazy_left_used + sizeof(uint32_t) + e->len;
        if (need > io->lazy_left_cap) {
            io->lazy_left_cap = io->lazy_left_cap ? 2 * io->lazy_left_cap : 64 * 1024;
            if (io->lazy_left_cap < need)
                io->lazy_left_cap = need;
            io->lazy_left = xrealloc(io->lazy_left, io->lazy_left_cap);
        }
        uint32_t len = e->len;
        memcpy(io->lazy_left + io->lazy_left_used, &len, sizeof len);
        memcpy(io->lazy_left + io->lazy_left_used + sizeof len, p, len);
        io->lazy_left_used = need;
        io->lazy_left_count++;
        kept++;
        *bytes += (size_t)len + 1;
    }
    return kept;
}

/* t's end in its own run: what it did not name waits there (the rest of a row had one folder). */
static void raw_leave_own(struct wsl_io_trace *t)
{
    size_t bytes, kept = raw_leave(t, t->io, &bytes);
    t->io->lazy_pending -= t->pending - kept;
    t->io->lazy_pending_bytes -= t->pending_bytes - bytes;
}

/* The folders of the entries ended traces left, added to run io in the order they came. */
static void settle_left(struct wsl_io *io, char *scratch)
{
    for (size_t pos = 0; pos < io->lazy_left_used;) {
        uint32_t len;
        memcpy(&len, io->lazy_left + pos, sizeof len);
        const char *bytes = io->lazy_left + pos + sizeof len;
        pos += sizeof len + len;
        size_t last, n = path_folder(bytes, len, scratch, &last);
        path_dir(io, scratch, n, last);
        io->lazy_pending--;
        io->lazy_pending_bytes -= (size_t)len + 1;
    }
    io->lazy_left_used = io->lazy_left_count = 0;
}

/* The end of t's laziness: the table as an eager reading's (see above). */
static void raw_stop(struct wsl_io_trace *t)
{
    settle_left(t->io, t->scratch);
    if (t->also) /* its second run would get this trace's folders in another order */
        t->also->inexact = true;
    for (size_t i = 0; i < t->raw_count; i++)
        if (t->raw[i].rec != UINT32_MAX)
            name_raw(t, &t->paths[t->raw[i].rec]);
    t->lazy = false;
}

void wsl_io_trace_paths(struct wsl_io_trace *t, const struct wsl_item *item)
{
    if (t->of)
        return; /* a shadow: its state reads the trace */
    size_t pos = 0;
    struct wsl_path_ref ref;
    while (wsl_paths_next(item, &pos, &ref)) {
        /* File paths are absolute or "<fd N>/..."; anything else is a kernel name. */
        if (!ref.length || (ref.bytes[0] != '/' && ref.bytes[0] != '<'))
            continue;
        struct path_record *r = path_get(t, ref.id);
        if (!r || (r->flags & (PATH_NAMED | PATH_RAW)))
            continue;   /* past the cap, or defined twice: the first definition stands */
        if (t->lazy) {
            if (!raw_fits(t, ref.length))
                raw_stop(t);
            else if (r != &t->path_zero) { /* (id 0's record is one of its own per call) */
                raw_keep(t, r, ref.bytes, ref.length);
                continue;
            }
        }
        name_path(t, r, ref.bytes, ref.length);
    }
}

static uint32_t unknown_mount(struct wsl_io_trace *t)
{
    if (t->unknown_mount == WSL_IO_NONE) {
        if (t->also && t->io->mount_count >= WSL_IO_MAX_MOUNTS)
            t->also->inexact = true;
        t->unknown_mount = mount_find_or_add(t->io, "", "unknown", "", WSL_FS_UNKNOWN);
        if (t->also)
            also_mount(t, t->unknown_mount, WSL_FS_UNKNOWN);
    }
    return t->unknown_mount;
}

/* Decides the mount of a path record from the device a call reported (0: none). */
static void classify(struct wsl_io_trace *t, struct path_record *r, uint64_t dev)
{
    /* A program opens file after file of one folder: the same table, device and folder give the
     * same mount (the table's mounts and the unknown one are entered at their first use). */
    if (t->class_valid && dev == t->class_dev && r->dir == t->class_dir) {
        r->mount = t->class_mount;
        goto flags;
    }
    const struct wsl_io_dir *d = r->dir < t->io->dir_count ? &t->io->dirs[r->dir] : NULL;
    const struct wsl_mount *m = wsl_mounts_find(t->table, dev, d ? d->path : NULL, d ? strlen(d->path) : 0);
    if (!m) {
        r->mount = unknown_mount(t);
    } else {
        size_t k = (size_t)(m - t->table->mounts);
        if (t->table_mounts[k] == WSL_IO_NONE) {
            enum wsl_fs_kind kind = wsl_mount_classify(m, t->wsl);
            if (t->also && t->io->mount_count >= WSL_IO_MAX_MOUNTS)
                t->also->inexact = true;
            t->table_mounts[k] = mount_find_or_add(t->io, m->mount_point, m->fstype, m->source, kind);
            if (t->also)
                also_mount(t, t->table_mounts[k], kind);
        }
        r->mount = t->table_mounts[k];
    }
    t->class_valid = true;
    t->class_dev = dev;
    t->class_dir = r->dir;
    t->class_mount = r->mount;
flags:
    if (dev)
        r->flags |= PATH_BY_DEVICE;
    else
        r->flags &= ~(uint32_t)PATH_BY_DEVICE;
}

/* A call counted in k tables at once (k a constant where it is inlined: 2 or 3): the category
 * decided once for all of them. */
static inline __attribute__((always_inline)) void count_calls(struct wsl_io_counts *const *c, unsigned k,
                                                                 unsigned category, const struct wsl_event *ev,
                                                                 uint64_t n, uint64_t ticks)
{
    bool ok = ev->result == 0;
    switch (category) {
    case WSL_CAT_IO_READ: {
        uint64_t bytes = ok ? ev->a[2] : 0;
        for (unsigned i = 0; i < k; i++) {
            c[i]->reads += n;
            c[i]->bytes_read += bytes;
            c[i]->read_time += ticks;
        }
        break;
    }
    case WSL_CAT_IO_OPEN:
        for (unsigned i = 0; i < k; i++) {
            c[i]->opens += n;
            c[i]->files_opened += ok ? n : 0;
            c[i]->meta_time += ticks;
        }
        break;
    case WSL_CAT_IO_STAT:
        for (unsigned i = 0; i < k; i++) {
            c[i]->stats += n;
            c[i]->meta_time += ticks;
        }
        break;
    case WSL_CAT_IO_SEEK:
        for (unsigned i = 0; i < k; i++) {
            c[i]->seeks += n;
            c[i]->meta_time += ticks;
        }
        break;
    case WSL_CAT_IO_CLOSE:
        for (unsigned i = 0; i < k; i++) {
            c[i]->closes += n;
            c[i]->meta_time += ticks;
        }
        break;
    case WSL_CAT_IO_MMAP:
        for (unsigned i = 0; i < k; i++) {
            c[i]->mmaps += n;
            c[i]->bytes_mapped += ok ? ev->a[1] : 0;
            c[i]->mmap_time += ticks;
        }
        break;
    case WSL_CAT_IO_WRITE: { /* a sync asks for no bytes and has no offset */
        bool sync = ev->a[1] == 0 && ev->a[2] == 0 && ev->a[3] == WSL_IO_WRITE_SYNC;
        for (unsigned i = 0; i < k; i++) {
            if (sync)
                c[i]->syncs += n;
            else
                c[i]->writes += n;
            c[i]->bytes_written += ok ? ev->a[2] : 0;
            c[i]->write_time += ticks;
        }
        break;
    }
    case WSL_CAT_IO_DIR:
        for (unsigned i = 0; i < k; i++) {
            c[i]->dir_ops += n;
            c[i]->meta_time += ticks;
        }
        break;
    }
    if (!ok)
        for (unsigned i = 0; i < k; i++)
            c[i]->errors += n;
}

static void ensure_mount_slots(struct wsl_io_trace *t, uint32_t m)
{
    size_t cap = t->mount_cap;
    t->mount_all = xgrow_zeroed(t->mount_all, &cap, m, sizeof *t->mount_all, 8);
    cap = t->mount_cap;
    t->mount_data = xgrow_zeroed(t->mount_data, &cap, m, sizeof *t->mount_data, 8);
    t->mount_cap = cap;
}

static struct dir_acc *dir_slot(struct wsl_io_trace *t, uint32_t dir)
{
    if (dir == DIR_UNTRACKED)
        return &t->untracked_dirs;
    t->dirs = xgrow_zeroed(t->dirs, &t->dir_cap, dir, sizeof *t->dirs, 64);
    return &t->dirs[dir];
}

/* A file opened for reading has a size now: it counts once in the file sizes. */
static void file_counted(struct wsl_io_trace *t, struct path_record *r, uint64_t size);

static inline void file_sized(struct wsl_io_trace *t, struct path_record *r, uint64_t size)
{
    if ((r->flags & (PATH_READ_OPEN | PATH_SIZED)) == PATH_READ_OPEN && size != SIZE_UNKNOWN)
        file_counted(t, r, size);
}

static void file_counted(struct wsl_io_trace *t, struct path_record *r, uint64_t size)
{
    r->flags |= PATH_SIZED;
    wsl_hist_add(&t->io->file_sizes, size);
    if (t->also)
        wsl_hist_add(&t->also->io->file_sizes, size);
    if (size < WSL_IO_SMALL_FILE_BYTES) {
        r->flags |= PATH_SMALL;
        t->sum.small_files++;
        t->sum.small_file_bytes_read += r->bytes_read; /* read before the size was known */
    }
}

/* The figures only data files get: folders, read sizes, small files, the span. */
static void count_data_call(struct wsl_io_trace *t, struct path_record *r, uint32_t mount, unsigned category,
                            const struct wsl_event *ev, uint64_t n, uint64_t ticks)
{
    struct wsl_io_summary *s = &t->sum;
    bool ok = ev->result == 0, named = r && (r->flags & PATH_NAMED);
    if (!s->have_span || ev->t_start < s->first)
        s->first = ev->t_start;
    if (!s->have_span || ev->t_end > s->last)
        s->last = ev->t_end;
    s->have_span = true;

    if (category == WSL_CAT_IO_READ && ok) {
        /* n alike reads (sampled timing) returned bytes / n each */
        uint64_t bytes = ev->a[2], each = bytes / n;
        s->size_hist[size_bucket(each)] += n;
        if (named) {
            s->named_reads += n;
            s->named_bytes_read += bytes;
            r->bytes_read += bytes;
            if (r->flags & PATH_SMALL)
                s->small_file_bytes_read += bytes;
            if (each <= WSL_IO_SMALL_READ_BYTES) {
                s->small_reads += n;
                s->small_read_bytes += bytes;
                s->small_read_time += ticks;
            } else {
                s->large_reads += n;
                s->large_read_bytes += bytes;
                s->large_read_time += ticks;
            }
        }
    }
    /* The size at open when the shim stat'ed the file, else that of the first
     * fstat (Python's open does one), else the bytes read when a read hit the end. */
    if (category == WSL_CAT_IO_OPEN && ok && named && (ev->a[2] & O_ACCMODE) != O_WRONLY &&
        !(ev->a[2] & O_DIRECTORY)) {
        r->flags |= PATH_READ_OPEN;
        s->read_opens++;
        file_sized(t, r, ev->a[3]);
    } else if (category == WSL_CAT_IO_STAT && ok && r && (int32_t)(uint32_t)ev->stream >= 0 && ev->a[3] != 1) {
        file_sized(t, r, ev->a[2]);
    } else if (category == WSL_CAT_IO_READ && ok && r && ev->a[2] == 0 && ev->a[1] > 0) {
        file_sized(t, r, r->bytes_read);
    }

    if (!r || r->dir == DIR_NONE)
        return;
    struct dir_acc *d = dir_slot(t, r->dir);
    d->reads += category == WSL_CAT_IO_READ ? n : 0;
    d->bytes_read += category == WSL_CAT_IO_READ && ok ? ev->a[2] : 0;
    d->files += category == WSL_CAT_IO_OPEN && ok ? n : 0;
    d->time += ticks;
    if (r->dir == DIR_UNTRACKED)
        return;
    struct wsl_io_dir *dir = &t->io->dirs[r->dir];
    if (dir->mount == WSL_IO_NONE)
        dir->mount = mount;
    bool touches_data = (category == WSL_CAT_IO_OPEN && ok) || category == WSL_CAT_IO_READ ||
                        category == WSL_CAT_IO_MMAP;
    if (__builtin_expect(t->also != NULL, 0)) { /* what a run of this trace alone sets first */
        if (!d->first_mount)
            d->first_mount = mount + 1;
        if (touches_data && !d->root_mount && t->io->mounts[mount].kind != WSL_FS_UNKNOWN)
            d->root_mount = mount + 1;
    }
    if (touches_data && !dir->rooted && t->io->mounts[mount].kind != WSL_FS_UNKNOWN) {
        data_root_add(&t->io->mounts[mount], dir->path);
        dir->rooted = true;
    }
}

static __attribute__((noinline)) void trace_event(struct wsl_io_trace *t, unsigned category,
                                                  const struct wsl_event *ev, uint64_t n, uint64_t ticks)
{
    bool ok = ev->result == 0;
    bool has_fd = (int32_t)(uint32_t)ev->stream >= 0; /* a failed open or a lookup by name has -1 */
    if (category == WSL_CAT_IO_MMAP && ev->a[0] == 0 && !has_fd)
        return; /* anonymous memory, not a file */

    struct path_record *r = NULL;
    if (ev->a[0] != 0) {
        r = ev->a[0] <= UINT32_MAX ? path_get(t, (uint32_t)ev->a[0]) : NULL;
        if (!r)
            t->untracked_events++;
        else if (!(r->flags & PATH_NAMED))
            t->unnamed_events += name_raw(t, r); /* its first call, where lazy naming kept it raw */
    }
    if (r) {
        /* The device of a successful open or stat says where the file lives. */
        uint64_t dev = ok && (category == WSL_CAT_IO_OPEN || category == WSL_CAT_IO_STAT ||
                              category == WSL_CAT_IO_DIR) ? ev->a[1] : 0;
        if ((category == WSL_CAT_IO_OPEN && ok) || r->mount == MOUNT_UNSET ||
            (dev && !(r->flags & PATH_BY_DEVICE)))
            classify(t, r, dev);
    }
    uint32_t mount = r ? r->mount : unknown_mount(t);
    bool system = (r && (r->flags & PATH_SYSTEM)) || wsl_fs_kind_is_system(t->io->mounts[mount].kind);

    ensure_mount_slots(t, mount);
    struct wsl_io_counts *c[3] = {&t->mount_all[mount]};
    bool data = false;
    if (ev->a[0] == 0) {
        c[1] = &t->sum.unknown_fd;   /* stdin, pipes, sockets... */
    } else if (system) {
        c[1] = &t->sum.system;
    } else if (r && (r->flags & PATH_CODE)) {
        c[1] = &t->sum.code;
    } else {
        c[1] = &t->mount_data[mount];
        c[2] = &t->sum.data;
        data = true;
    }
    if (data) {
        count_calls(c, 3, category, ev, n, ticks);
        count_data_call(t, r, mount, category, ev, n, ticks);
    } else {
        count_calls(c, 2, category, ev, n, ticks);
    }
    /* The shim names every open and every lookup anew: these ids are done. */
    if (r && (category == WSL_CAT_IO_CLOSE || (category == WSL_CAT_IO_OPEN && !ok) || category == WSL_CAT_IO_DIR ||
              (category == WSL_CAT_IO_STAT && !has_fd)))
        path_dies(t, r);
}

void wsl_io_trace_event(struct wsl_io_trace *t, unsigned category, const struct wsl_event *ev, uint64_t n,
                        uint64_t ticks)
{
    /* (the tests before trace_event's registers are saved: a rank's run calls here for its shadow too) */
    if (__builtin_expect(t->of != NULL, 0))
        return; /* a shadow: its state counts the event */
    if (category == WSL_CAT_IO_WAIT)
        return; /* a poll moves no file's data (its time: the API's and the phases' waits) */
    trace_event(t, category, ev, n, ticks);
}

/* ---- merging into the run ------------------------------------------------------------ */

static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
}

void wsl_io_counts_add(struct wsl_io_counts *dst, const struct wsl_io_counts *src, const struct wsl_clock_map *clock)
{
    dst->reads += src->reads;
    dst->bytes_read += src->bytes_read;
    dst->opens += src->opens;
    dst->files_opened += src->files_opened;
    dst->stats += src->stats;
    dst->seeks += src->seeks;
    dst->closes += src->closes;
    dst->mmaps += src->mmaps;
    dst->bytes_mapped += src->bytes_mapped;
    dst->errors += src->errors;
    dst->read_time = add_sat(dst->read_time, wsl_clock_duration_ns(clock, src->read_time));
    dst->meta_time = add_sat(dst->meta_time, wsl_clock_duration_ns(clock, src->meta_time));
    dst->mmap_time = add_sat(dst->mmap_time, wsl_clock_duration_ns(clock, src->mmap_time));
    dst->writes += src->writes;
    dst->bytes_written += src->bytes_written;
    dst->syncs += src->syncs;
    dst->dir_ops += src->dir_ops;
    dst->write_time = add_sat(dst->write_time, wsl_clock_duration_ns(clock, src->write_time));
}

static void summary_add(struct wsl_io_summary *dst, const struct wsl_io_summary *src,
                        const struct wsl_clock_map *clock)
{
    wsl_io_counts_add(&dst->data, &src->data, clock);
    wsl_io_counts_add(&dst->system, &src->system, clock);
    wsl_io_counts_add(&dst->code, &src->code, clock);
    wsl_io_counts_add(&dst->unknown_fd, &src->unknown_fd, clock);
    dst->read_opens += src->read_opens;
    for (unsigned b = 0; b < WSL_IO_SIZE_BUCKETS; b++)
        dst->size_hist[b] += src->size_hist[b];
    dst->named_reads += src->named_reads;
    dst->named_bytes_read += src->named_bytes_read;
    dst->small_files += src->small_files;
    dst->small_file_bytes_read += src->small_file_bytes_read;
    dst->small_reads += src->small_reads;
    dst->small_read_bytes += src->small_read_bytes;
    dst->small_read_time = add_sat(dst->small_read_time, wsl_clock_duration_ns(clock, src->small_read_time));
    dst->large_reads += src->large_reads;
    dst->large_read_bytes += src->large_read_bytes;
    dst->large_read_time = add_sat(dst->large_read_time, wsl_clock_duration_ns(clock, src->large_read_time));
    if (src->have_span) {
        uint64_t first = wsl_clock_to_ns(clock, src->first), last = wsl_clock_to_ns(clock, src->last);
        if (!dst->have_span || first < dst->first)
            dst->first = first;
        if (!dst->have_span || last > dst->last)
            dst->last = last;
        dst->have_span = true;
    }
}

static void dir_add(struct wsl_io_dir *dst, const struct dir_acc *src, const struct wsl_clock_map *clock)
{
    dst->reads += src->reads;
    dst->bytes_read += src->bytes_read;
    dst->files += src->files;
    dst->time = add_sat(dst->time, wsl_clock_duration_ns(clock, src->time));
}

static void also_free(struct io_also *a)
{
    if (!a)
        return;
    free(a->dirs);
    free(a->dir_named);
    free(a->mounts);
    free(a->kinds);
    free(a);
}

/* One handle of the state (itself or its shadow) is done with it. */
static void release(struct wsl_io_trace *t)
{
    if (--t->refs)
        return;
    also_free(t->also);
    free(t->table_mounts);
    wsl_u64_map_free(&t->path_index);
    free(t->paths);
    free(t->dead);
    free(t->mount_all);
    free(t->mount_data);
    free(t->dirs);
    free(t->scratch);
    free(t->raw);
    free(t->raw_bytes);
    free(t);
}

void wsl_io_trace_discard(struct wsl_io_trace *t)
{
    if (!t)
        return;
    if (t->of) { /* a shadow: its state goes on without a second run */
        struct wsl_io_trace *of = t->of;
        also_free(of->also);
        of->also = NULL;
        free(t);
        release(of);
        return;
    }
    raw_leave_own(t);
    release(t);
}

/* The shadow's second run gets what a reading of the trace into it alone would have added. */
static void also_end(struct wsl_io_trace *sh, const struct wsl_clock_map *clock, struct wsl_io_summary *process)
{
    struct wsl_io_trace *t = sh->of;
    struct io_also *a = t->also;
    struct wsl_io *io = a->io;
    summary_add(&io->total, &t->sum, clock);
    if (process) {
        memset(process, 0, sizeof *process);
        summary_add(process, &t->sum, clock);
    }
    /* its mounts and folders, in the order the trace named them */
    uint32_t *mount_of = xmalloc((t->io->mount_count ? t->io->mount_count : 1) * sizeof *mount_of);
    for (size_t i = 0; i < a->mount_count; i++) {
        const struct wsl_io_mount *m = &t->io->mounts[a->mounts[i]];
        mount_of[a->mounts[i]] = mount_find_or_add(io, m->mount_point, m->fstype, m->source, a->kinds[i]);
    }
    for (size_t i = 0; i < a->mount_count; i++) {
        uint32_t m = a->mounts[i];
        if (m < t->mount_cap) {
            wsl_io_counts_add(&io->mounts[mount_of[m]].all, &t->mount_all[m], clock);
            wsl_io_counts_add(&io->mounts[mount_of[m]].data, &t->mount_data[m], clock);
        }
    }
    for (size_t i = 0; i < a->dir_count; i++) {
        uint32_t d = a->dirs[i];
        const char *path = t->io->dirs[d].path;
        uint32_t k = dir_find_or_add(io, path, strlen(path));
        if (d >= t->dir_cap)
            continue;
        const struct dir_acc *acc = &t->dirs[d];
        struct wsl_io_dir *dir = &io->dirs[k];
        dir_add(dir, acc, clock);
        if (acc->first_mount)
            dir->mount = mount_of[acc->first_mount - 1];
        if (acc->root_mount) {
            data_root_add(&io->mounts[mount_of[acc->root_mount - 1]], dir->path);
            dir->rooted = true;
        }
    }
    dir_add(&io->untracked_dirs, &t->untracked_dirs, clock);
    io->unnamed_path_events += t->unnamed_events;
    io->untracked_path_events += t->untracked_events;
    if (!a->inexact) { /* what the trace did not name, as its own reading would leave it (raw_fits) */
        size_t bytes;
        io->lazy_pending += raw_leave(t, io, &bytes);
        io->lazy_pending_bytes += bytes;
    }
    free(mount_of);
}

void wsl_io_trace_end(struct wsl_io_trace *t, const struct wsl_clock_map *clock, struct wsl_io_summary *process)
{
    if (t->of) {
        struct wsl_io_trace *of = t->of;
        also_end(t, clock, process);
        free(t);
        release(of);
        return;
    }
    struct wsl_io *io = t->io;
    summary_add(&io->total, &t->sum, clock);
    if (process) {
        memset(process, 0, sizeof *process);
        summary_add(process, &t->sum, clock);
    }
    for (size_t m = 0; m < t->mount_cap && m < io->mount_count; m++) {
        wsl_io_counts_add(&io->mounts[m].all, &t->mount_all[m], clock);
        wsl_io_counts_add(&io->mounts[m].data, &t->mount_data[m], clock);
    }
    for (size_t d = 0; d < t->dir_cap && d < io->dir_count; d++)
        dir_add(&io->dirs[d], &t->dirs[d], clock);
    dir_add(&io->untracked_dirs, &t->untracked_dirs, clock);
    io->unnamed_path_events += t->unnamed_events;
    io->untracked_path_events += t->untracked_events;
    raw_leave_own(t);
    release(t);
}

struct wsl_io_trace *wsl_io_trace_also(struct wsl_io_trace *t, struct wsl_io *io, bool wsl)
{
    if (t->also || t->of || t->path_index.count || t->table || t->unknown_mount != WSL_IO_NONE ||
        io->dead_paths_kept != t->io->dead_paths_kept)
        return wsl_io_trace_begin(io, wsl); /* read apart, as any run */
    io->wsl |= wsl;
    if (!io->lazy_names) /* (t has read nothing yet) */
        t->lazy = false;
    t->also = xcalloc(1, sizeof *t->also);
    t->also->io = io;
    struct wsl_io_trace *sh = xcalloc(1, sizeof *sh);
    sh->io = io;
    sh->of = t;
    sh->refs = 1;
    t->also->shadow = sh;
    t->refs++;
    return sh;
}

bool wsl_io_trace_also_exact(const struct wsl_io_trace *t)
{
    return !t || !t->of || !t->of->also || !t->of->also->inexact;
}

unsigned wsl_fold_calls(const struct wsl_event *fold, unsigned close_id, unsigned (*category_of)(void *, unsigned),
                        void *ctx, struct wsl_fold_call out[WSL_FOLD_EVENT_CALLS])
{
    unsigned n = 0;
    /* 1.11: calls counted apart in a[0]'s upper half, the fstats' size in stream's */
    uint32_t tells = WSL_FOLD_META_TELLS(fold->a[0]), stats = WSL_FOLD_META_STATS(fold->a[0]);
    uint64_t stream = fold->stream, path = fold->a[0], size = 0;
    if (tells | stats) {
        stream = (uint64_t)(int64_t)(int32_t)(uint32_t)stream;
        path = (uint32_t)path;
        size = fold->stream >> 32;
    }
    /* slot k, with the calls counted apart after the first slot (k == 4, 5: tells, fstats) */
    static const unsigned order[] = {1, 4, 5, 2, 3};
    for (unsigned o = 0; o < sizeof order / sizeof order[0]; o++) {
        unsigned k = order[o];
        uint64_t s, calls, value;
        if (k <= WSL_FOLD_SLOTS_PER_EVENT) {
            s = fold->a[k];
            calls = WSL_FOLD_CALLS(s);
            value = WSL_FOLD_VALUE(s);
        } else { /* as a slot: the id, the calls, the value (a tell's offset 0 << 1 | 0; the size) */
            uint32_t m = k == 4 ? tells : stats;
            s = WSL_FOLD_META_API(m);
            calls = WSL_FOLD_META_CALLS(m);
            value = k == 4 ? 0 : size;
        }
        unsigned cat = calls ? category_of(ctx, WSL_FOLD_API(s)) : WSL_CAT_COUNT;
        if (cat == WSL_CAT_COUNT)
            continue;
        struct wsl_fold_call *c = &out[n++];
        memset(&c->ev, 0, sizeof c->ev);
        c->ev.t_start = fold->t_start;
        c->ev.t_end = fold->t_end;
        c->ev.api = (uint16_t)WSL_FOLD_API(s);
        c->ev.stream = stream;
        c->ev.a[0] = path;
        c->calls = calls;
        c->category = cat;
        switch (cat) {
        case WSL_CAT_IO_READ:
            c->ev.a[1] = value ? value : 1;
            c->ev.a[2] = value * calls;
            c->ev.a[3] = calls;
            break;
        case WSL_CAT_IO_STAT:
            c->ev.a[2] = value;
            c->ev.a[3] = WSL_STAT_KIND_STAT;
            break;
        case WSL_CAT_IO_OPEN: { /* 1.6: the device and the flags (trace_format.h) */
            unsigned bits = WSL_FOLD_OPEN_BITS(value);
            c->ev.a[1] = WSL_FOLD_OPEN_DEV(value);
            c->ev.a[2] = (bits & O_ACCMODE) | (bits & WSL_FOLD_OPEN_CLOEXEC ? O_CLOEXEC : 0) |
                         (bits & WSL_FOLD_OPEN_DIRECTORY ? O_DIRECTORY : 0) |
                         (bits & WSL_FOLD_OPEN_NOFOLLOW ? O_NOFOLLOW : 0) |
                         (bits & WSL_FOLD_OPEN_NONBLOCK ? O_NONBLOCK : 0) |
                         (bits & WSL_FOLD_OPEN_NOCTTY ? O_NOCTTY : 0);
            c->ev.a[3] = UINT64_MAX; /* no size: the shim folds no open whose size it saw */
            break;
        }
        case WSL_CAT_IO_SEEK: /* the offset, and bit 0: SEEK_SET to it, else a tell */
            c->ev.a[1] = (value & 1) ? value >> 1 : 0;
            c->ev.a[2] = (value & 1) ? SEEK_SET : SEEK_CUR;
            c->ev.a[3] = value >> 1;
            break;
        default:
            break;
        }
    }
    if ((fold->result & WSL_FOLD_CLOSED) && close_id) {
        struct wsl_fold_call *c = &out[n++];
        memset(&c->ev, 0, sizeof c->ev);
        c->ev.t_start = fold->t_start;
        c->ev.t_end = fold->t_end;
        c->ev.api = (uint16_t)close_id;
        c->ev.stream = stream;
        c->ev.a[0] = path;
        c->calls = 1;
        c->category = WSL_CAT_IO_CLOSE;
    }
    return n;
}
