/*
 * The per-file fold, out of line (docs/io.md, "Folded calls"; its inline half
 * is fold.h): a thread's fold begun and ended with the thread, cut before an
 * NVTX event, and its events written when it ends for another file.
 */
#define _GNU_SOURCE
#include <stdint.h>

#include "fold.h"

void wsl_io_thread_init(struct wsl_thread *t)
{
    /* no fold; fold ids go on counting, as the writer follows them across the ring's owners */
    uint32_t seq = FOLD_LD(t->fold_seq);
    FOLD_ST(t->fold_used, 0);
    WSL_FOLD_NONE(t);
    FOLD_ST(t->fold_file, WSL_FOLD_FILE(-1, 0));
    atomic_store_explicit(&t->fold_seq, (seq | 1) + 1, memory_order_release);
    uint32_t seed = (uint32_t)(t->tid * 2654435761u) ^ (uint32_t)wsl_ticks();
    t->io_rng = seed ? seed : 1;
    if (wsl_cfg.io_timing > 1) {
        uint32_t a = io_gap(t), b = io_gap(t);
        t->io_countdown = a < b ? a : b;
    } else {
        t->io_countdown = 1;
    }
}

/* The thread ends: its folded calls go into its ring. */
void wsl_io_thread_exit(struct wsl_thread *t)
{
    if (FOLD_LD(t->fold_used))
        fold_next(t, -1, 0);
}

/* Ends the thread's fold (its events into the ring) and begins one for fd and
 * path. (A fold that ends with its file's close: fold_end_closed, fold.h.) */
void fold_next(struct wsl_thread *t, int fd, uint32_t path)
{
    uint32_t used = FOLD_LD(t->fold_used), seq = fold_enter(t);
    if (used) {
        uint32_t id = seq >> 1;
        uint64_t file = FOLD_LD(t->fold_file);
        int64_t ffd = (int32_t)(uint32_t)file;
        uint64_t fpath = file >> 32;
        uint32_t i = 0;
        do {
            struct wsl_event *e = wsl_ring_reserve(t);
            if (WSL_UNLIKELY(e == NULL))
                break; /* counted as dropped */
            uint32_t last = i + WSL_FOLD_SLOTS_PER_EVENT >= used;
            io_fill(e, 0, 0, WSL_ID_IO_FOLD, WSL_FOLD_RESULT(id, i, last ? WSL_FOLD_LAST : 0),
                    last ? (int64_t)fold_last_stream(t, ffd) : ffd, last ? fold_last_a0(t, file) : fpath,
                    i < used ? FOLD_LD(t->fold_slot[i]) : 0, i + 1 < used ? FOLD_LD(t->fold_slot[i + 1]) : 0,
                    i + 2 < used ? FOLD_LD(t->fold_slot[i + 2]) : 0);
            wsl_ring_commit(t);
            i += WSL_FOLD_SLOTS_PER_EVENT;
        } while (i < used);
        atomic_store_explicit(&t->io_untimed, 1, memory_order_relaxed);
    }
    fold_leave(t, seq, WSL_FOLD_FILE(fd, path));
}

/* NVTX: the folded calls so far go before a range's start or end (they
 * belong where they happened). */
void wsl_io_fold_cut(struct wsl_thread *t)
{
    if (FOLD_LD(t->fold_used))
        fold_next(t, (int32_t)(uint32_t)FOLD_LD(t->fold_file), (uint32_t)(FOLD_LD(t->fold_file) >> 32));
}

/* Out of the hooks' way: the fold ends here when it is fd's (path's). */
__attribute__((noinline, cold)) void io_fold_cut_file(struct wsl_thread *t, int fd, uint32_t path)
{
    if (FOLD_LD(t->fold_used) && FOLD_LD(t->fold_file) == WSL_FOLD_FILE(fd, path))
        wsl_io_fold_cut(t);
}
