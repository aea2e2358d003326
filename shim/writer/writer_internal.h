/*
 * What the writer's files share, and nothing outside shim/writer/ includes:
 * the trace file and its chunks, the state of the writer thread that fork.c
 * pauses and resets, and the counts the drain keeps for the trace's END. Each
 * file's own state stays static in it. Hidden, as shim_internal.h's: read
 * directly, not through the GOT.
 */
#ifndef WSLSHIM_WRITER_INTERNAL_H
#define WSLSHIM_WRITER_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "shim_internal.h"

#pragma GCC visibility push(hidden)

/* ---- the trace file (trace_file.c) ----------------------------------------------- */
extern int wsl_trace_fd;                 /* -1: none open */
extern char wsl_trace_path[PATH_MAX];
extern int wsl_trace_write_failed;       /* nothing more is written to this trace */
int wsl_trace_open(void);                /* a new trace file (WSLSHIM_OUTPUT), its fd moved high; -1 */
void wsl_trace_write(const uint8_t *p, size_t n);
void wsl_trace_close(void);              /* closes it and stops protecting its descriptor */
int wsl_trace_pid(const char *path, int *ppid); /* the pid (and ppid) a trace at `path` names, or -1 */
size_t wsl_read_small_file(const char *path, char *buf, size_t size);

/* ---- chunks, frames, compression (compress.c) -------------------------------------- */
struct wsl_chunk_part {
    const void *data;
    size_t size;
};
void wsl_emit_chunk_parts(uint32_t type, const struct wsl_chunk_part *parts, unsigned count);
extern size_t wsl_frame_coded_bytes; /* of the frame so far: EVENTS_BITS chunks but their literal columns */
extern uint32_t wsl_frame_gen;       /* frames begun so far: a chunk's table is carried within one (drain.c) */
void wsl_emit_chunk(uint32_t type, const void *a, size_t na, const void *b, size_t nb);
void wsl_emit_one(uint32_t type, const void *data, size_t size);
void wsl_frame_append(const void *data, size_t size); /* raw bytes (the file header) */
/* A chunk written in place at the frame's end (drain.c's EVENTS_BITS: its bit column coded there, not
 * copied): room for `size` bytes there (NULL: none, recording stopped or out of memory); whether a
 * chunk of `size` bytes, its header included, goes in the frame as it is (else the frame is written
 * first: wsl_emit_chunk_parts); the bytes written there taken into the frame. */
uint8_t *wsl_frame_room(size_t size);
int wsl_frame_fits(size_t size);
void wsl_frame_take(size_t size);
void wsl_frame_write(void);   /* the chunks gathered so far, as one zstd frame, to the file */
int wsl_compress_open(void);  /* 0, or -1: out of memory */
void wsl_compress_close(void);
void wsl_compress_after_fork_child(void);

/* ---- what the trace says of the process (process_info.c) ---------------------------- */
extern uint64_t wsl_start_ticks, wsl_start_mono, wsl_start_real; /* the process's start, in every clock */
void wsl_emit_process(void);
void wsl_emit_api_table(void);
void wsl_emit_emulation(void);           /* the SPEC in force, if any */
void wsl_emit_clock(void);
void wsl_mounts_note_for_hashing(void);  /* WSLSHIM_IO_PATHS=hash: the mount points, before any path */
void wsl_emit_mounts_if_changed(int anew); /* anew: whatever was written before */

/* ---- the driver and the ranks (driver_rank.c) --------------------------------------- */
void wsl_emit_rank_at_start(void);
void wsl_emit_driver_if_pending(void);   /* DRIVER and RANK chunks once the driver came up */
int wsl_driver_loaded(void);
void wsl_driver_after_fork_child(void);

/* ---- draining the rings (drain.c) ----------------------------------------------------- */
extern uint64_t wsl_events_written, wsl_events_dropped;
extern uint32_t wsl_events_chunk_seq; /* the last EVENTS chunk's seq (trace format 1.7) */
extern uint32_t wsl_threads_seen;
/* wsl_paths_dropped when this trace began (a forked child counts its own), and the count since
 * then that the last PATHS_DROPPED chunk wrote (0: none yet) */
extern uint64_t wsl_paths_dropped_at_open, wsl_paths_dropped_written;
uint64_t wsl_drain_all(void); /* every thread's paths and events; returns the events read */
void wsl_events_flush(void);  /* the EVENTS chunks still open, out (before any other chunk, and each frame) */
void wsl_events_after_fork_child(void);
long wsl_writer_own_tid(void); /* the writer thread's id, 0 when there is none (writer.c) */

/* ---- untimed file calls (untimed.c) --------------------------------------------------- */
unsigned wsl_fold_take(struct wsl_thread *t, struct wsl_event out[2], uint64_t at);
uint64_t wsl_settle_untimed(struct wsl_thread *t, struct wsl_event *ring, uint64_t mask, uint64_t from, uint64_t to,
                            uint64_t floor);

/* Whether the writer has read every event the thread published, in both rings
 * (it sets a ring's tail to the head it read). */
static inline int wsl_rings_drained(struct wsl_thread *t)
{
    return atomic_load_explicit(&t->head, memory_order_acquire) == atomic_load_explicit(&t->tail, memory_order_relaxed) &&
           atomic_load_explicit(&t->s_head, memory_order_acquire) == atomic_load_explicit(&t->s_tail, memory_order_relaxed);
}

/* ---- short helper processes (helpers.c) ----------------------------------------------- */
#define HELPER_MAX_BYTES (8u << 10) /* pyenv 2.x helpers: 4817 bytes at most (pyenv-which) */
#define HELPER_MAX_DIR_OPS 8u
extern int wsl_helper_possible; /* the trace may still be a helper's: the drain notes each event */
extern uint64_t wsl_helper_bytes;
extern unsigned wsl_helper_dir_ops;
void wsl_helper_config(void);
void wsl_helper_drop_if_one(void);

/* One event written (writer thread, drain.c's loop), while the trace may be a helper's. */
static inline void wsl_helper_note(const struct wsl_event *ev)
{
    unsigned cat = wsl_api_table[ev->api].category;
    uint64_t n = 0;
    switch (cat) {
    case WSL_CAT_IO_READ:
    case WSL_CAT_IO_WRITE: /* a2: bytes read or written (an untimed read: all its calls') */
        n = ev->a[0] && (int64_t)ev->a[2] > 0 ? ev->a[2] : 0;
        break;
    case WSL_CAT_IO_MMAP:
        n = ev->a[0] && (int64_t)ev->a[1] > 0 ? ev->a[1] : 0;
        break;
    case WSL_CAT_IO_FOLD:
        for (int i = 1; i < 4; i++) {
            uint64_t slot = ev->a[i];
            if (slot && WSL_FOLD_API(slot) < wsl_api_count &&
                wsl_api_table[WSL_FOLD_API(slot)].category == WSL_CAT_IO_READ)
                n += (uint64_t)WSL_FOLD_CALLS(slot) * WSL_FOLD_VALUE(slot);
        }
        break;
    case WSL_CAT_IO_DIR:
        if (ev->a[2] != WSL_DIR_OP_LIST)
            wsl_helper_dir_ops++;
        break;
    case WSL_CAT_IO_OPEN:
    case WSL_CAT_IO_STAT:
    case WSL_CAT_IO_SEEK:
    case WSL_CAT_IO_CLOSE:
    case WSL_CAT_IO_WAIT:
        break;
    default: /* CUDA, NVTX, GPU kernels */
        wsl_helper_possible = 0;
        return;
    }
    wsl_helper_bytes += n < HELPER_MAX_BYTES ? n : HELPER_MAX_BYTES + 1ull;
    if (wsl_helper_bytes > HELPER_MAX_BYTES || wsl_helper_dir_ops > HELPER_MAX_DIR_OPS)
        wsl_helper_possible = 0;
}

/* ---- the writer thread (writer.c), for fork.c ----------------------------------------- */
enum wsl_writer_state { WRITER_NONE = 0, WRITER_RUNNING, WRITER_STOPPED, WRITER_PAUSED };
extern pthread_mutex_t wsl_writer_lock;
extern _Atomic int wsl_writer_state;
extern pthread_t wsl_writer_thread;
void wsl_writer_leave(void);                        /* the thread leaves, the trace open (lock held) */
int wsl_writer_start_or_end(const char *when);      /* a new thread, or the trace ended (lock held) */
void wsl_writer_finish(void);                       /* drains, writes the END, closes the trace */
void wsl_writer_forget_thread(void);                /* forked child: no writer thread, no lock held */

#pragma GCC visibility pop

#endif /* WSLSHIM_WRITER_INTERNAL_H */
