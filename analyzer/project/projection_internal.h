/* projection_internal.h: shared by the files of projection.c's split (private to them). */
#ifndef PROJECTION_INTERNAL_H
#define PROJECTION_INTERNAL_H

#include "projection.h"
#include "io_analysis.h"
#include "kernel_analysis.h"
#include "mounts.h"
#include "trace_reader.h"
#include "u64_map.h"
#include "util.h"

enum proj_kind {
    K_SKIP = 0,         /* not a call of the program (GPU_KERNEL) */
    K_OTHER,            /* kept as recorded */
    K_LAUNCH, K_GRAPH, K_HOSTFN,
    K_ALLOC, K_FREE, K_POOL_ALLOC, K_POOL_FREE, K_MANAGED, K_PINNED_ALLOC, K_HOST_FREE, K_HOST_OTHER,
    K_SYNC_STREAM, K_SYNC_CTX, K_SYNC_EVENT,
    K_STREAM_WAIT, K_EVENT_RECORD, K_EVENT_QUERY, K_QUERY,
    K_COPY_ASYNC, K_COPY_BLOCKING, K_COPY_DTOD, K_MEMSET,
    K_CAPTURE_BEGIN, K_CAPTURE_END,
    K_IO_OPEN, K_IO_READ, K_IO_STAT, K_IO_OTHER, K_IO_WRITE, K_IO_DIR,
};

/* Timed launches of one kernel: all of them, and those that found the GPU
 * idle at submit (their event pair was corrected to the kernel's own start;
 * a launch submitted just as the queue drained may include the gap between
 * the earlier work's end and its own submission). */
struct gpu_mean {
    double sum_ns, idle_sum_ns;
    uint64_t count, idle_count;
};

struct trace_facts {
    struct wsl_clock_map clock;
    int32_t pid;
    uint32_t flags;
    uint64_t start_ns, end_ns;
    struct wsl_u64_map handle_index;    /* handle -> index into means */
    struct gpu_mean *means;
    size_t mean_count;
    struct gpu_mean kernel_all;         /* every timed kernel launch of the process */
    struct gpu_mean graph_all;
    /* The report's estimate per launch (kernel_analysis.h): with configurations (est.configs) a
     * launch runs for its configuration's corrected mean; without, the means above as before. */
    struct wsl_kern_estimate est;
};

struct pending {                /* one call waiting in the time-order window */
    uint64_t t_start, t_end;    /* ticks */
    uint64_t seq;
    uint64_t stream, a[4];
    int32_t result;
    uint32_t tid;
    uint8_t kind;
    uint8_t fs;                 /* index into the fstype names, or FS_NONE */
    uint8_t fs_system;          /* a system filesystem (/proc...): kept as recorded */
    uint32_t calls;             /* calls it stands for: 1, or a fold slot's alike calls (emulation only) */
    uint8_t emu_fs;             /* a file under an emulated path (emulation fs:PATH=9p) */
};
#define FS_NONE 0xffu
#define MAX_FSTYPES 64

struct thread_state {
    bool any;
    int64_t shift;              /* projected - recorded, after its last call */
    uint64_t first_rs, last_re; /* recorded, ns */
    uint64_t last_pe;
};

struct gpu_queue {
    double rec, proj;           /* when the work submitted so far is done: recorded and projected timelines */
};

struct replay {
    struct wsl_projection *pr;
    const struct wsl_projection_options *opt;
    const struct wsl_profile *src, *tgt;
    const char *src_name;
    const struct trace_facts *facts;
    bool wsl;
    /* window */
    struct pending *heap;
    size_t heap_count, window;
    uint64_t seq, last_popped;
    bool popped_any;
    /* per process */
    struct wsl_u64_map threads;         /* tid+1 -> index */
    struct thread_state *thr;
    size_t thr_count;
    struct wsl_u64_map streams;         /* stream+1 -> index into queues */
    struct gpu_queue *queues;
    size_t queue_count;
    struct wsl_u64_map capturing;       /* stream+1 -> 1 while captured */
    struct wsl_u64_map events;          /* event -> index into event_times */
    struct gpu_queue *event_times;
    size_t event_count;
    struct wsl_u64_map allocs;          /* device pointer -> bytes << 1 | paired */
    struct wsl_u64_map fds;             /* fd+1 -> fs index + 1 (0x100: system) */
    char fstypes[MAX_FSTYPES][32];
    size_t fstype_count;
    const struct wsl_proj_emu *emu;     /* added costs instead of the profiles' differences, or NULL */
    struct wsl_u64_map emu_paths;       /* path id -> 1: under an emulated fs: path (per process) */
    /* Writes on pipes and sockets of the processes replayed so far (children
     * before their parents), in recorded order: a parent's read of a pipe ends
     * no sooner than the projected time of the last write of one of its
     * descendants before the read's recorded end (DataLoader workers, compiler
     * helpers: a late child makes its parent wait). */
    struct pipe_write { uint64_t re; double pe; int32_t pid; } *pw;
    size_t pw_count, pw_cap, pw_sorted;
    int32_t pid;                        /* the process being replayed */
    bool pid_has_parent, pid_has_children; /* among the run's traced processes */
    int64_t start_shift;                /* its threads' shift at their first call: its parent's at its start */
    struct shift_point { int32_t pid; uint64_t re; int64_t shift; } *sp; /* shift timelines (pass 1) */
    size_t sp_count, sp_cap;
    bool record_shifts;
    const int32_t (*ppids)[2];          /* (pid, ppid) of every process of the run */
    size_t ppid_count;
    bool clamp_up;                      /* built-in wsl2 target, native source: never cheaper per call */
    bool steady_proc;                   /* this process holds the steady state of the options */
    bool steady_seen;                   /* a call at or after its start was replayed */
    int64_t steady_shift0, steady_shift1; /* the shift at its start and at its end */
    uint64_t latest_re;                 /* the latest recorded call end of the process */
    int64_t latest_shift;
    uint64_t max_pe;
};

static inline double gpu_mean_ns(const struct gpu_mean *m)
{
    return m->idle_count ? m->idle_sum_ns / (double)m->idle_count : m->sum_ns / (double)m->count;
}

uint8_t proj_kind_of(unsigned cat, const char *base);
enum wsl_proj_cause proj_cause_of(uint8_t k);
int32_t proj_parent_of(const struct replay *R, int32_t pid);
void proj_replay_reset(struct replay *R);
int proj_replay_trace(struct replay *R, const char *path, char *err, size_t errlen, uint64_t *proj_end);

#endif
