/*
 * Fork: the writer thread does not live across it. Before a fork
 * (pthread_atfork's prepare) the writer drains the rings, writes out what it
 * has and leaves, the trace still open; after it, in the parent, it comes back
 * at the first event recorded PAUSE_NS later, or when a ring is half full, or
 * at exit. So right after fork() returns, a program sees the threads it has
 * itself: CPython 3.12 and later count them in /proc/self/stat then, and warn
 * about forking a multi-threaded process. The child forgets the parent's
 * writer, trace and compressor: it opens a trace of its own. After an exec
 * that failed, recording starts again with a new trace.
 */
#define _GNU_SOURCE
#include <pthread.h>

#include "writer_internal.h"

#define PAUSE_NS 5000000ull

static _Atomic uint64_t writer_resume_after; /* paused at a fork: not before this (mono ns) */

void wsl_writer_pause(void)
{
    if (pthread_mutex_trylock(&wsl_writer_lock) != 0)
        return; /* a fork from inside a writer start or stop: left running */
    if (atomic_load(&wsl_writer_state) == WRITER_RUNNING && !atomic_load(&wsl_shutting_down) &&
        !pthread_equal(pthread_self(), wsl_writer_thread)) {
        wsl_writer_leave();
        atomic_store(&wsl_writer_state, WRITER_PAUSED);
        atomic_store(&wsl_writer_paused, 1);
        atomic_store(&writer_resume_after, ~0ull); /* set when fork returns */
    }
    pthread_mutex_unlock(&wsl_writer_lock);
}

/* In the parent, fork() done: the writer may come back PAUSE_NS from now. */
void wsl_writer_after_fork_parent(void)
{
    if (atomic_load(&wsl_writer_paused))
        atomic_store(&writer_resume_after, wsl_mono_ns() + PAUSE_NS);
}

/* Brings a paused writer back (pressure: a ring is half full, or the program
 * ends: at once); the rings' slow path calls it while one is paused. */
void wsl_writer_resume(int pressure)
{
    if (!atomic_load(&wsl_writer_paused))
        return;
    if (!pressure && wsl_mono_ns() < atomic_load(&writer_resume_after))
        return;
    if (pthread_mutex_trylock(&wsl_writer_lock) != 0)
        return; /* another thread is at it (or this one, from a signal handler): later */
    if (atomic_load(&wsl_writer_state) == WRITER_PAUSED) {
        wsl_writer_start_or_end(" again after a fork");
        atomic_store(&wsl_writer_paused, 0);
    }
    pthread_mutex_unlock(&wsl_writer_lock);
}

/* In a forked child: the writer thread is gone and the parent's lock may have
 * been held at fork; the parent's trace stays the parent's. */
void wsl_writer_after_fork_child(void)
{
    atomic_store(&wsl_writer_paused, 0); /* the parent's pause is the parent's */
    atomic_store(&wsl_recording_off, 0);  /* the child opens a trace of its own, or tries */
    wsl_writer_forget_thread(); /* the lock, maybe held at fork, and the thread's state */
    wsl_trace_close();
    wsl_compress_after_fork_child(); /* the parent's compressor and unwritten chunks */
    wsl_driver_after_fork_child();
    wsl_writer_note_exec(0); /* the child's trace is its own (wsl_helper_config at its start) */
    wsl_start_ticks = wsl_ticks();
    wsl_start_mono = wsl_mono_ns();
    wsl_start_real = wsl_real_ns();
    /* The parent's folded file calls and drain times are the parent's. */
    for (struct wsl_thread *t = atomic_load(&wsl_threads); t; t = t->next) {
        atomic_store_explicit(&t->fold_used, 0, memory_order_relaxed);
        WSL_FOLD_NONE(t);
        atomic_store_explicit(&t->fold_file, WSL_FOLD_FILE(-1, 0), memory_order_relaxed);
        t->w_fold[0].live = t->w_fold[1].live = 0;
        t->w_drain_ticks = 0;
    }
}

/* Restarts recording after a failed exec: a new trace, as if newly started. */
void wsl_writer_restart(void)
{
    pthread_mutex_lock(&wsl_writer_lock);
    if (atomic_load(&wsl_writer_state) == WRITER_STOPPED)
        atomic_store(&wsl_writer_state, WRITER_NONE);
    pthread_mutex_unlock(&wsl_writer_lock);
    wsl_writer_note_exec(0);
    atomic_store(&wsl_recording_off, 0); /* a new trace, maybe writable this time */
    atomic_store(&wsl_shutting_down, 0);
}
