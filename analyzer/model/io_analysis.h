/*
 * File I/O of a run: the libc calls the shim recorded (categories
 * WSL_CAT_IO_*), aggregated per filesystem, per mount, per folder and in
 * totals, with the files of the kernel (/proc, /sys, /dev, proc, sysfs...)
 * kept apart from the program's data. docs/io.md explains every number.
 *
 * Memory is bounded whatever the trace holds: per process one small record
 * per live path id (no strings; ids that are done are dropped, and at most
 * WSL_IO_MAX_PATHS_PER_TRACE are kept), per run one entry per folder (at
 * most WSL_IO_MAX_DIRS, the rest counted together) and per mount used.
 *
 * Use, per trace: wsl_io_trace_begin at its PROCESS chunk, then _mounts,
 * _paths and _event in stream order (a mount table applies to the files
 * opened after it), then _end with the trace's final clock fit. Once every
 * trace was read: wsl_io_finish.
 */
#ifndef WSLSHIM_IO_ANALYSIS_H
#define WSLSHIM_IO_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mounts.h"
#include "stats.h"
#include "trace_reader.h"
#include "u64_map.h"

#define WSL_IO_SIZE_BUCKETS 10                 /* Darshan's access-size buckets */
#define WSL_IO_SMALL_FILE_BYTES (1u << 20)     /* a file smaller than this at open is small */
#define WSL_IO_SMALL_READ_BYTES (1u << 20)     /* a read of at most this many bytes is small (Drishti) */
#define WSL_IO_MAX_DIRS 100000u                /* folders tracked by name; the rest are counted together */
#define WSL_IO_MAX_DIR_BYTES (32u << 20)       /* and at most this many bytes of folder names */
#define WSL_IO_MAX_MOUNTS 4096u                /* mounts tracked; the rest are counted as one */
#define WSL_IO_MAX_PATHS_PER_TRACE (8u << 20)  /* live path ids remembered per process */
#define WSL_IO_DEAD_PATHS_KEPT (1u << 20)      /* ids of closed files kept before they are dropped */
#define WSL_IO_TOP_DIRS 10
#define WSL_IO_NONE UINT32_MAX

/* Sampled file timing (trace_format.h, WSL_API_IO_SAMPLED; docs/io.md). An
 * event of an id flagged so with t_start == t_end was not timed: it counts as
 * calls (an untimed read: a3 alike reads in a row, as 1.3 and 1.4 shims wrote
 * them and as wsl_fold_calls gives a fold's reads) with no time; one that was
 * timed stands for `weight` calls' time (the process's io_timing). Every
 * other event is one call of its own duration. */
static inline uint64_t wsl_event_calls(unsigned category, bool sampled, const struct wsl_event *ev)
{
    if (!sampled || ev->t_end != ev->t_start || category != WSL_CAT_IO_READ || !ev->a[3])
        return 1;
    return ev->a[3] > UINT32_MAX ? UINT32_MAX : ev->a[3];
}

static inline uint64_t wsl_event_ticks(bool sampled, uint32_t weight, const struct wsl_event *ev)
{
    uint64_t d = ev->t_end >= ev->t_start ? ev->t_end - ev->t_start : 0;
    if (!sampled || weight <= 1)
        return d;
    return d > UINT64_MAX / weight ? UINT64_MAX : d * weight;
}

/* The weight of a timed sampled event: the PROCESS chunk's io_timing (at least 1). */
static inline uint32_t wsl_io_weight(const struct wsl_process_info *pi)
{
    return pi->io_timing > 1 ? pi->io_timing : 1;
}

/* One slot of a fold event (WSL_CAT_IO_FOLD, trace 1.5) as the untimed event
 * it stands for: `calls` calls of ev.api, whose category is `category`. */
struct wsl_fold_call {
    struct wsl_event ev;
    uint64_t calls;
    unsigned category;
};

/* The most calls one fold event stands for: its slots, the tells and fstats
 * it counts apart (1.11) and the close. */
#define WSL_FOLD_EVENT_CALLS (WSL_FOLD_SLOTS_PER_EVENT + 3)

/* The calls of a fold event: its slots (after the first, the tells and
 * fstats it counted apart: 1.11, WSL_FOLD_META), then the close (close_id: the
 * trace's sampled close id, 0 if none) when it carries one. category_of(ctx, id) is an
 * id's category, WSL_CAT_COUNT when not in the trace's table (that slot is
 * skipped). Reads come as the analyzer reads an untimed run (a1 bytes each, or
 * 1 at the end of the file; a2 their total; a3 the calls). Returns how many. */
unsigned wsl_fold_calls(const struct wsl_event *fold, unsigned close_id, unsigned (*category_of)(void *, unsigned),
                        void *ctx, struct wsl_fold_call out[WSL_FOLD_EVENT_CALLS]);

/* Darshan's bucket of a read of `bytes`: [0, 100], (100, 1 KiB], ... (1 GiB, ...). */
unsigned wsl_io_size_bucket(uint64_t bytes);
/* "0-100", "100-1K", "1K-10K", ... "1G+" */
const char *wsl_io_size_bucket_name(unsigned bucket);

/* Calls of one group (all data files, one mount, the system files...). */
struct wsl_io_counts {
    uint64_t reads;         /* read calls, failed ones too */
    uint64_t bytes_read;    /* bytes that successful reads returned */
    uint64_t opens;         /* open calls, failed ones too */
    uint64_t files_opened;  /* successful opens */
    uint64_t stats;         /* stat, lstat, fstat, statx, access... */
    uint64_t seeks, closes;
    uint64_t mmaps;
    uint64_t bytes_mapped;  /* length of successful file mappings */
    uint64_t errors;        /* calls that failed */
    uint64_t read_time;     /* host time in reads: ns in the run model (ticks while a trace is read) */
    uint64_t meta_time;     /* in open, stat, seek and close */
    uint64_t mmap_time;
    uint64_t writes;        /* write, pwrite, writev, fwrite calls, failed ones too (1.8) */
    uint64_t bytes_written; /* bytes they wrote */
    uint64_t syncs;         /* fsync, fdatasync */
    uint64_t dir_ops;       /* rename, unlink, mkdir, opendir */
    uint64_t write_time;    /* in writes and syncs */
};

/* dst += src, src's times converted with clock (ticks to ns), saturating. */
void wsl_io_counts_add(struct wsl_io_counts *dst, const struct wsl_io_counts *src, const struct wsl_clock_map *clock);

static inline uint64_t wsl_io_time(const struct wsl_io_counts *c)
{
    return c->read_time + c->meta_time + c->mmap_time + c->write_time;
}

static inline uint64_t wsl_io_calls(const struct wsl_io_counts *c)
{
    return c->reads + c->opens + c->stats + c->seeks + c->closes + c->mmaps + c->writes + c->syncs + c->dir_ops;
}

struct wsl_io_mount {       /* one mount that saw I/O, over all traces */
    char *mount_point;      /* "" for the unknown one */
    char *fstype;           /* "unknown": path id 0 (an fd the shim did not see opened), or no mount found */
    char *source;
    enum wsl_fs_kind kind;
    struct wsl_io_counts all;   /* every call on it */
    struct wsl_io_counts data;  /* the data calls: without system files and path id 0 */
    char *data_root;        /* deepest folder holding every data file opened or read here; NULL: none */
};

struct wsl_io_fs {          /* one filesystem type: its mounts added up */
    const char *fstype;     /* points into a mount */
    struct wsl_io_counts all;
    bool crosses_windows;   /* one of its mounts is served by Windows */
    bool system;            /* all its mounts are system filesystems */
    uint32_t *mounts;       /* indices into wsl_io.mounts */
    size_t mount_count;
};

struct wsl_io_dir {         /* one folder holding data files */
    char *path;             /* NULL for the untracked rest */
    uint32_t mount;         /* index into wsl_io.mounts of its first classified call, or WSL_IO_NONE */
    uint64_t reads, bytes_read;
    uint64_t files;         /* successful opens */
    uint64_t time;          /* host time of every I/O call on its files (ns) */
    bool rooted;            /* counted in its mount's data_root */
};

/* Figures over a set of calls; per trace in ticks, in the run model in ns. */
struct wsl_io_summary {
    struct wsl_io_counts data;      /* the program's files: not system, not code, not path id 0 */
    struct wsl_io_counts system;    /* /proc, /sys, /dev paths and system filesystems */
    struct wsl_io_counts code;      /* Python modules, shared libraries: the program, not its data */
    struct wsl_io_counts unknown_fd;/* path id 0: fds the shim did not see opened (stdin, pipes, sockets) */
    uint64_t size_hist[WSL_IO_SIZE_BUCKETS]; /* successful data reads by bytes returned */
    /* Named data files (path known): what the rules read */
    uint64_t named_reads;           /* successful reads */
    uint64_t named_bytes_read;
    uint64_t small_files;           /* files opened for reading, smaller than WSL_IO_SMALL_FILE_BYTES */
    uint64_t small_file_bytes_read; /* bytes read from such files */
    uint64_t read_opens;            /* named data files opened for reading (not write-only, not a folder);
                                       io.file_sizes.count of them got a size */
    uint64_t small_reads, small_read_bytes, small_read_time; /* reads of <= WSL_IO_SMALL_READ_BYTES */
    uint64_t large_reads, large_read_bytes, large_read_time;
    bool have_span;
    uint64_t first, last;           /* start of the first and end of the last data call */
};

struct wsl_io {
    bool wsl;                       /* a traced process ran under WSL */
    uint32_t timing_sample;         /* calls on local files were timed 1 in this many (the largest over
                                       processes; docs/io.md): their times are estimates. 0: all timed */
    struct wsl_io_summary total;    /* times in ns; first/last in CLOCK_MONOTONIC ns */
    struct wsl_hist file_sizes;     /* sizes of named data files opened for reading (at open, else
                                       the first fstat, else the bytes read to the end), once each */
    struct wsl_io_mount *mounts;    /* by data I/O time, largest first, after wsl_io_finish */
    size_t mount_count;
    struct wsl_io_fs *fs;           /* by I/O time after wsl_io_finish */
    size_t fs_count;
    struct wsl_io_dir *dirs;        /* by time, largest first, after wsl_io_finish */
    size_t dir_count;
    size_t dir_cap;                 /* internal: dirs' room */
    struct wsl_io_dir untracked_dirs; /* folders beyond WSL_IO_MAX_DIRS */
    uint64_t unnamed_path_events;   /* calls naming a path id that no PATHS entry had defined */
    uint64_t untracked_path_events; /* calls on path ids beyond WSL_IO_MAX_PATHS_PER_TRACE live ones */
    uint64_t peak_path_records;     /* most path records one trace held at once */
    size_t dead_paths_kept;         /* WSL_IO_DEAD_PATHS_KEPT (tests make it small) */
    /* A windowed reading's run (set before its first trace): a PATHS entry is kept as it came and
     * named (folder, code, system) at the first call in the window on its id, as long as the folder
     * caps stay out of reach (io_analysis.c, "lazy naming"). Only its figures are read: folders no
     * call used are not in dirs (dir_count, dir_bytes differ from an eager reading's). */
    bool lazy_names;
    /* internal (lazy_names): entries not named yet, of live traces and of ended ones (whose raw
     * names are kept in lazy_left: a length, then the bytes) */
    size_t lazy_pending, lazy_pending_bytes;
    char *lazy_left;
    size_t lazy_left_used, lazy_left_cap, lazy_left_count;
    /* internal: folder name (its wsl_u64_map_string_key) -> index into dirs, until wsl_io_finish */
    struct wsl_u64_map dir_index;
    size_t dir_bytes;
    bool finished;
};

struct wsl_io_trace;

void wsl_io_init(struct wsl_io *io);
struct wsl_io_trace *wsl_io_trace_begin(struct wsl_io *io, bool wsl);
/* A MOUNTS chunk: the table in force for the calls that follow (the reader owns it). */
void wsl_io_trace_mounts(struct wsl_io_trace *t, const struct wsl_mount_table *table);
/* A PATHS chunk. */
void wsl_io_trace_paths(struct wsl_io_trace *t, const struct wsl_item *paths);
/* One event of an I/O category, standing for `calls` calls taking `ticks`
 * (wsl_event_calls, wsl_event_ticks). */
void wsl_io_trace_event(struct wsl_io_trace *t, unsigned category, const struct wsl_event *ev, uint64_t calls,
                        uint64_t ticks);
/* Adds the trace to the run (times converted with clock) and frees t; the
 * process's own figures (ns) go to *process when it is not NULL. */
void wsl_io_trace_end(struct wsl_io_trace *t, const struct wsl_clock_map *clock, struct wsl_io_summary *process);
/* Frees t without adding anything (an unreadable trace). */
void wsl_io_trace_discard(struct wsl_io_trace *t);
/* A handle for a second run (io: a rank's own run) fed the same trace, called right after
 * wsl_io_trace_begin. The events, mounts and paths given to t count for both: given to the handle
 * they are ignored; its _end adds to io what a reading of the trace into io alone adds (after t's
 * _end: the trace's folders and mounts, in the order it named them, and its figures). Where t has
 * read anything already, or the runs keep a different number of dead paths, it is a state of its
 * own (wsl_io_trace_begin). Discarding the handle leaves t alone. */
struct wsl_io_trace *wsl_io_trace_also(struct wsl_io_trace *t, struct wsl_io *io, bool wsl);
/* False when the second run cannot be derived from t (t's run refused one of the trace's folders
 * or mounts, at its caps, or holds one of its mounts with another kind from an earlier trace): the
 * second run must read the trace itself. True for any other handle. */
bool wsl_io_trace_also_exact(const struct wsl_io_trace *handle);
/* Sorts, groups mounts into filesystems; once, after the last trace. */
void wsl_io_finish(struct wsl_io *io);
void wsl_io_free(struct wsl_io *io);

/* Test hook: true makes every reading name its paths at once, lazy_names or not (tests/unit/test_io.c
 * compares the two). */
extern bool wsl_io_lazy_names_off;
/* Internal, for tests: whether the len bytes at p are a path the analysis's normalizing leaves as
 * it is (absolute; no empty, "." or ".." component; no slash at its end but the root's), and in
 * *last where its last slash is (len: none). Reads up to 64 bytes past len. */
bool wsl_io_path_scan(const char *p, size_t len, size_t *last);

/* Data files opened per second over the span of data I/O; 0 without a span. */
double wsl_io_files_per_s(const struct wsl_io *io);

static inline bool wsl_is_io_category(unsigned category)
{
    return (category >= WSL_CAT_IO_OPEN && category <= WSL_CAT_IO_CLOSE) || category == WSL_CAT_IO_WRITE ||
           category == WSL_CAT_IO_DIR || category == WSL_CAT_IO_WAIT;
}

#endif /* WSLSHIM_IO_ANALYSIS_H */
