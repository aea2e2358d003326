/*
 * The writer thread and its life: started by the first thread that records
 * (the trace opened then), it drains every thread's ring (drain.c), encodes
 * and compresses the events (compress.c) and streams them into this process's
 * trace file (trace_file.c). All formatting, compression and system calls of
 * the shim happen there, off the program's threads. A zstd frame ends at least
 * every second, so a killed process loses at most about a second of events.
 * It ends the trace at exit, at exec, for a signal (without a lock), and it
 * leaves for a fork (fork.c); while the program has one thread it may keep a
 * descriptor table of its own.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/close_range.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "writer_internal.h"

#define FLUSH_INTERVAL_NS 1000000000ull   /* a decodable block boundary at least this often */
#define THREADS_LOOK_NS 50000000ull       /* how often the writer looks whether the program's threads all ended */
#define CALIBRATION_NS 20000000ull        /* second clock sample soon after the first */

pthread_mutex_t wsl_writer_lock = PTHREAD_MUTEX_INITIALIZER;
_Atomic int wsl_writer_state;
static _Atomic int writer_stop;
static _Atomic int writer_pause;            /* ask the thread to leave without ending the trace */
_Atomic int wsl_writer_paused;               /* read by the rings' slow path */
pthread_t wsl_writer_thread;
static _Atomic uint32_t writer_wake_word; /* futex: bumped to cut the writer's sleep short */
/* The lock-free end of a trace (signal handlers, _exit): a request the writer
 * answers by writing everything out, ending the trace and setting final_done
 * (a futex the requester waits on, bounded). */
static _Atomic int final_req;
static _Atomic uint32_t final_done;
static _Atomic long writer_tid;
/* The writer thread's descriptor table (writer_table_own): its own while set
 * (by the thread itself, cleared as it leaves); never again once
 * writer_keep_shared is set. */
static _Atomic int writer_unshared, writer_keep_shared;
/* Set by a new writer thread once its table is what it keeps (writer_spawn waits for it). */
static _Atomic uint32_t writer_table_set;

/* State letter of a task of this process ('R', 'S', 'Z'...), from its stat file; 0 if unknown. */
static char task_state(const char *stat_path)
{
    char buf[512];
    int fd = open(stat_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
    return p && p[1] == ' ' ? p[2] : 0;
}

/* Has every thread of the program ended, the writer alone left? glibc ends a
 * process with exit(0) when its last thread ends (the main thread by
 * pthread_exit, say), counting threads itself: the writer is one, so without
 * this the process would outlive its program. Cheap while the main thread runs
 * (one read of /proc/self/stat); only once it has ended, the other tasks. */
/* The signal mask of the thread that started the writer: the writer takes it
 * back before it ends the process for the program's last thread. */
static sigset_t writer_spawner_mask;

static int program_threads_ended(void)
{
    char st = task_state("/proc/self/stat");
    if (st != 'Z' && st != 'X')
        return 0;
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return 0;
    long self = atomic_load(&writer_tid);
    int alive = 0;
    struct dirent *e;
    char path[64];
    while (!alive && (e = readdir(d)) != NULL) {
        long tid = atol(e->d_name);
        if (tid <= 0 || tid == self)
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%ld/stat", tid);
        char s = task_state(path);
        alive = s != 'Z' && s != 'X' && s != 0;
    }
    closedir(d);
    return !alive;
}

/* A descriptor table of the writer's own, while the program has one thread and
 * has not loaded the driver: with a second task sharing its table, Linux takes a
 * reference on the file (and, for read and write, the file position's lock) in
 * every descriptor call of the program's, +17% on a page-cached read() of 4 KiB
 * on the H200 host (docs/overhead.md, tests/io/bench_fdshare). What the writer
 * touches then is its own: the trace (opened before it starts, so in both
 * tables) and the files it reads (/proc). It gives the table back, by leaving
 * for a writer that shares the program's, before anything that needs the
 * program's descriptors on the writer thread: the program's second thread
 * (the writer would stand for it no longer), the driver (the writer's GPU
 * timing and device queries use the descriptors the driver opens in program
 * threads) and the end of its one thread (the writer then calls exit(0) in its
 * place, and atexit handlers flush the program's files): wsl_writer_share_table. */
static void writer_table_own(void)
{
#if !WSL_TSAN
    if (atomic_load(&writer_keep_shared) || wsl_trace_fd < 0 ||
        atomic_load_explicit(&wsl_program_threads, memory_order_relaxed) != WSL_PROGRAM_THREADS_ONE)
        return;
    /* The new table must hold none of the program's descriptors: a copy of a
     * pipe's write end would keep its reader from ever seeing end of file (a
     * parent waiting for its child to close a pipe before exec, as perf does,
     * would wait for ever), a socket would stay connected, a file's flock
     * held. The kernel copies only the descriptors below wsl_trace_fd + 1 here
     * (CLOSE_RANGE_UNSHARE), and those below the trace's are closed at once,
     * while the program's one thread waits for this in the call that started
     * the writer (writer_spawn). Without close_range (Linux before 5.9) the
     * table stays shared. */
    if (syscall(SYS_close_range, (unsigned)wsl_trace_fd + 1u, ~0u, CLOSE_RANGE_UNSHARE) != 0)
        return;
    wsl_tls.own_fds = 1; /* from here its log waits for the program's table (wsl_log) */
    if (wsl_trace_fd > 0)
        syscall(SYS_close_range, 0u, (unsigned)wsl_trace_fd - 1u, 0u);
    atomic_store(&writer_unshared, 1);
    wsl_log(WSL_LOG_DEBUG, "writer thread: a descriptor table of its own while the program has one thread");
#endif
}

/* A writer with a table of its own closes its descriptors before it leaves:
 * the kernel would otherwise close them after pthread_join has returned, with
 * the thread still counted (/proc/self/stat: the program would see two threads
 * right after a fork, CPython 3.12 would warn). The program's are not these. */
static void writer_table_drop(void)
{
    if (!wsl_tls.own_fds)
        return;
    if (syscall(SYS_close_range, 0u, ~0u, 0u) != 0)
        for (int fd = 0; fd < 1024; fd++) /* no close_range (Linux before 5.9) */
            syscall(SYS_close, fd);
}

static void *writer_main(void *arg)
{
    (void)arg;
    wsl_thread_forbid_recording();
    atomic_store(&writer_tid, syscall(SYS_gettid));
    writer_table_own();
    atomic_store(&writer_table_set, 1);
    syscall(SYS_futex, &writer_table_set, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
    uint64_t last_flush = wsl_mono_ns(), started = last_flush, last_look = last_flush;
    int calibrated = 0;
    unsigned sleep_us = 10000;
    while (!atomic_load(&writer_stop) && !atomic_load(&final_req)) {
        if (atomic_load(&writer_pause)) {
            /* A fork: what the rings hold goes out now, and the thread leaves
             * with the trace open (wsl_writer_pause). */
            wsl_drain_all();
            wsl_frame_write();
            writer_table_drop();
            atomic_store(&writer_unshared, 0);
            return NULL;
        }
        struct timespec ts = {0, (long)sleep_us * 1000};
        uint32_t seen = atomic_load(&writer_wake_word);
        syscall(SYS_futex, &writer_wake_word, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
        if (!atomic_load_explicit(&writer_unshared, memory_order_relaxed)) /* never the case (above): no driver */
            wsl_gpu_timing_poll(0, wsl_emit_one);
        uint64_t n = wsl_drain_all();
        /* Busy rings: come back sooner; idle: back off to 50 ms. */
        sleep_us = n > WSL_RING_EVENTS / 8 ? 2000 : n ? 10000 : (sleep_us < 50000 ? sleep_us + 5000 : 50000);
        if (!atomic_load_explicit(&writer_unshared, memory_order_relaxed))
            wsl_emit_driver_if_pending();
        uint64_t now = wsl_mono_ns();
        if (!calibrated && now - started >= CALIBRATION_NS) {
            wsl_emit_clock();
            calibrated = 1;
        }
        if (now - last_look >= THREADS_LOOK_NS) {
            last_look = now;
            if (program_threads_ended()) {
                /* What the program's last thread would have done, with a program
                 * thread's signal mask (atexit handlers run here); wsl_writer_shutdown
                 * ends the trace. */
                pthread_sigmask(SIG_SETMASK, &writer_spawner_mask, NULL);
                exit(0);
            }
        }
        if (now - last_flush >= FLUSH_INTERVAL_NS) {
            wsl_emit_mounts_if_changed(0); /* mounts made after start */
            wsl_emit_clock();
            wsl_frame_write();
            last_flush = now;
        }
    }
    /* The trace ends here, in the writer thread, whoever asked for it. */
    wsl_writer_finish();
    writer_table_drop();
    atomic_store(&writer_unshared, 0);
    atomic_store(&final_done, 1);
    syscall(SYS_futex, &final_done, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
    return NULL;
}

void wsl_writer_finish(void)
{
    int own_table = atomic_load_explicit(&writer_unshared, memory_order_relaxed) &&
                    pthread_equal(pthread_self(), wsl_writer_thread);
    if (!own_table)
        wsl_gpu_timing_poll(1, wsl_emit_one);
    wsl_drain_all();
    wsl_drain_all(); /* what was published while the first drained (its heads were read first) */
    if (!own_table)
        wsl_emit_driver_if_pending();
    wsl_emit_clock();
    wsl_events_flush(); /* (the CLOCK chunk did): every event is counted below */
    struct wsl_end_info end;
    memset(&end, 0, sizeof end);
    end.end_ticks = wsl_ticks();
    end.events_written = wsl_events_written;
    end.events_dropped = wsl_events_dropped;
    end.threads = wsl_threads_seen;
    uint64_t paths_dropped = atomic_load_explicit(&wsl_paths_dropped, memory_order_relaxed) - wsl_paths_dropped_at_open;
    end.paths_dropped = paths_dropped > UINT32_MAX ? UINT32_MAX : (uint32_t)paths_dropped;
    wsl_emit_chunk(WSL_CHUNK_END, &end, sizeof end, NULL, 0);
    wsl_frame_write();
    if (wsl_events_dropped)
        wsl_log(WSL_LOG_WARN, "%llu events dropped (buffers full); the trace counts them",
                (unsigned long long)wsl_events_dropped);
    if (paths_dropped)
        wsl_log(WSL_LOG_WARN, "%llu paths and names dropped (buffers full); the trace counts them",
                (unsigned long long)paths_dropped);
    wsl_log(WSL_LOG_INFO, "trace written to %s (%llu events)", wsl_trace_path, (unsigned long long)wsl_events_written);
    wsl_trace_close();
    wsl_compress_close();
    wsl_helper_drop_if_one();
}

static int writer_open(void)
{
    wsl_trace_write_failed = 0;
    wsl_events_written = wsl_events_dropped = 0;
    wsl_paths_dropped_at_open = atomic_load_explicit(&wsl_paths_dropped, memory_order_relaxed);
    wsl_paths_dropped_written = 0;
    wsl_events_chunk_seq = 0;
    wsl_threads_seen = 0;
    wsl_helper_config();
    wsl_trace_fd = wsl_trace_open();
    if (wsl_trace_fd < 0)
        return -1;
    wsl_fd_protect(0, wsl_trace_fd);
    if (wsl_compress_open() != 0) {
        wsl_compress_close();
        wsl_trace_close();
        return -1;
    }
    struct wsl_file_header fh;
    memset(&fh, 0, sizeof fh);
    memcpy(fh.magic, WSL_TRACE_MAGIC, sizeof WSL_TRACE_MAGIC);
    fh.byte_order = WSL_TRACE_BYTE_ORDER;
    fh.version_major = WSL_TRACE_VERSION_MAJOR;
    fh.version_minor = WSL_TRACE_VERSION_MINOR;
    fh.header_size = sizeof fh;
    fh.record_size = sizeof(struct wsl_event);
    wsl_frame_append(&fh, sizeof fh);
    if (wsl_cfg.io_paths_hash) /* the mount points, before the first path is hashed */
        wsl_mounts_note_for_hashing();
    wsl_emit_process();
    wsl_emit_api_table();
    wsl_emit_emulation();
    wsl_emit_rank_at_start();
    wsl_emit_mounts_if_changed(1);
    wsl_emit_clock();
    wsl_frame_write();
    wsl_log(WSL_LOG_INFO, "recording to %s", wsl_trace_path);
    return 0;
}

void wsl_writer_wake(void)
{
    atomic_fetch_add(&writer_wake_word, 1);
    syscall(SYS_futex, &writer_wake_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

#if WSL_TSAN
/* gcc's TSan runtime keeps, in a forked child, its record of the parent's
 * threads, and glibc gives the child's first new thread the stack, and so the
 * thread id, of one of them: TSan then aborts ("dup thread with used id"). A
 * stack of the writer's own, never unmapped (a child would find the parent's
 * in place), gives each writer an id no thread had. TSan builds only. */
static pthread_attr_t writer_attr;
static pthread_attr_t *writer_thread_attr(void)
{
    size_t size = 8u << 20;
    void *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK,
                       -1, 0);
    if (stack == MAP_FAILED || pthread_attr_init(&writer_attr) != 0)
        return NULL;
    if (pthread_attr_setstack(&writer_attr, stack, size) != 0) {
        pthread_attr_destroy(&writer_attr);
        return NULL;
    }
    return &writer_attr;
}
#else
static pthread_attr_t *writer_thread_attr(void) { return NULL; }
#endif

/* Starts the writer thread (wsl_writer_lock held); 0 or an errno. */
static int writer_spawn(void)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the writer takes no signals */
    writer_spawner_mask = old;                /* published to it by pthread_create */
    pthread_attr_t *attr = writer_thread_attr();
    wsl_note_program_threads(); /* before the writer's thread is the process's second */
    wsl_writer_thread_creating(1);
    atomic_store(&writer_table_set, 0);
    int err = pthread_create(&wsl_writer_thread, attr, writer_main, NULL);
    wsl_writer_thread_creating(0);
    if (attr)
        pthread_attr_destroy(attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    /* A writer that may take a table of its own copies part of the program's
     * for a moment (writer_table_own): the program's one thread does nothing
     * with its descriptors meanwhile (50 ms at most). */
    if (!err && !atomic_load(&writer_keep_shared) &&
        atomic_load_explicit(&wsl_program_threads, memory_order_relaxed) == WSL_PROGRAM_THREADS_ONE) {
        uint64_t deadline = wsl_mono_ns() + 50000000ull;
        while (!atomic_load(&writer_table_set)) {
            uint64_t now = wsl_mono_ns();
            if (now >= deadline)
                break;
            struct timespec ts = {0, (long)(deadline - now)};
            syscall(SYS_futex, &writer_table_set, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
        }
    }
    return err;
}

/* The running writer thread leaves, with the trace open (wsl_writer_lock held).
 * pthread_join returns when the thread's id is cleared, a little before the
 * kernel stops counting the task: a fork right after would show the program a
 * thread it does not have (CPython 3.12 warns), so wait, at most 10 ms, until
 * the task is gone. */
void wsl_writer_leave(void)
{
    long tid = atomic_load(&writer_tid);
    atomic_store(&writer_pause, 1);
    wsl_writer_wake();
    pthread_join(wsl_writer_thread, NULL);
    wsl_log_flush_pending();
    atomic_store(&writer_pause, 0);
    uint64_t deadline = wsl_mono_ns() + 10000000ull;
    while (tid > 0 && syscall(SYS_tgkill, (long)getpid(), tid, 0) == 0 && wsl_mono_ns() < deadline)
        sched_yield();
}

/* A writer thread started (wsl_writer_lock held): RUNNING, or, when it cannot be,
 * the trace ended here and STOPPED. Returns 0 or the errno. */
int wsl_writer_start_or_end(const char *when)
{
    int err = writer_spawn();
    if (err) {
        wsl_log(WSL_LOG_ERROR, "cannot start the writer thread%s: %s", when, strerror(err));
        wsl_writer_finish();
        atomic_store(&wsl_recording_off, 1); /* nobody would drain the rings */
    }
    atomic_store(&wsl_writer_state, err ? WRITER_STOPPED : WRITER_RUNNING);
    return err;
}

/* Before the program's second thread, its first driver pointer or the end of
 * its one thread (writer_table_own): a writer with a table of its own leaves,
 * its rings drained, for one that shares the program's (started here, from the
 * program's thread). For good: a writer never takes a table of its own again. */
void wsl_writer_share_table(void)
{
    atomic_store(&writer_keep_shared, 1);
    if (!atomic_load(&writer_unshared))
        return;
    int saved = errno;
    wsl_tls_depth++; /* the shim's own thread calls */
    pthread_mutex_lock(&wsl_writer_lock);
    if (atomic_load(&writer_unshared) && atomic_load(&wsl_writer_state) == WRITER_RUNNING &&
        !pthread_equal(pthread_self(), wsl_writer_thread)) {
        wsl_writer_leave();
        wsl_writer_start_or_end(" sharing the program's descriptors");
    }
    pthread_mutex_unlock(&wsl_writer_lock);
    wsl_tls_depth--;
    errno = saved;
}

int wsl_writer_start(void)
{
    int st = atomic_load_explicit(&wsl_writer_state, memory_order_acquire);
    if (st == WRITER_RUNNING)
        return 0;
    if (st == WRITER_STOPPED)
        return -1;
    if (st == WRITER_PAUSED) {
        /* a new thread records: the fork is behind us. Its events wait in its
         * ring if another thread is bringing the writer back just now. */
        wsl_writer_resume(1);
        return 0;
    }
    int rc = 0;
    pthread_mutex_lock(&wsl_writer_lock);
    if (atomic_load(&wsl_writer_state) == WRITER_NONE) {
        wsl_writer_note_start();
        /* The file is opened here, in the first recording thread, so that an
         * unwritable path turns recording off at once instead of filling rings. */
        if (writer_open() != 0) {
            atomic_store(&wsl_writer_state, WRITER_STOPPED);
            atomic_store(&wsl_recording_off, 1); /* at once: no thread fills a ring from here on */
            rc = -1;
        } else {
            atomic_store(&writer_stop, 0);
            if (wsl_writer_start_or_end("") != 0)
                rc = -1;
        }
    } else if (atomic_load(&wsl_writer_state) == WRITER_STOPPED) {
        rc = -1;
    }
    pthread_mutex_unlock(&wsl_writer_lock);
    return rc;
}

void wsl_writer_shutdown(void)
{
    wsl_tls_depth++; /* closing the trace is not the program's I/O */
    atomic_store(&wsl_shutting_down, 1);
    pthread_mutex_lock(&wsl_writer_lock);
    if (atomic_load(&wsl_writer_state) == WRITER_RUNNING) {
        int fd = wsl_trace_fd, own_table = atomic_load(&writer_unshared);
        atomic_store(&writer_stop, 1);
        wsl_writer_wake();
        if (!pthread_equal(pthread_self(), wsl_writer_thread)) {
            pthread_join(wsl_writer_thread, NULL); /* it ends the trace */
            wsl_log_flush_pending();
            if (own_table && fd >= 0)
                close(fd); /* the trace's descriptor in the program's table: the writer closed its own */
        } else {
            wsl_writer_finish();
        }
    } else if (atomic_load(&wsl_writer_state) == WRITER_PAUSED) {
        wsl_writer_finish(); /* no writer thread: this one ends the trace */
        atomic_store(&wsl_writer_paused, 0);
    }
    atomic_store(&wsl_writer_state, WRITER_STOPPED);
    pthread_mutex_unlock(&wsl_writer_lock);
    wsl_tls_depth--;
}

/* Async-signal-safe: no lock, no allocation, only atomics and futexes. The
 * calling thread must not be the writer (a crash in the writer itself cannot
 * be flushed by it). Returns 0 when the trace was ended within the time. */
int wsl_writer_final_flush(unsigned timeout_ms)
{
    if (atomic_load(&wsl_writer_state) != WRITER_RUNNING)
        return -1;
    if (syscall(SYS_gettid) == atomic_load(&writer_tid))
        return -1;
    atomic_store(&wsl_shutting_down, 1);
    atomic_store(&final_req, 1);
    wsl_writer_wake();
    uint64_t deadline = wsl_mono_ns() + (uint64_t)timeout_ms * 1000000ull;
    while (!atomic_load(&final_done)) {
        uint64_t now = wsl_mono_ns();
        if (now >= deadline)
            return -1;
        uint64_t left = deadline - now;
        struct timespec ts = {(time_t)(left / 1000000000ull), (long)(left % 1000000000ull)};
        syscall(SYS_futex, &final_done, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
    }
    wsl_log_flush_pending();
    return 0;
}


long wsl_writer_own_tid(void) { return atomic_load_explicit(&writer_tid, memory_order_relaxed); }

/* In a forked child: no writer thread, and the parent's lock may have been
 * held at fork. */
void wsl_writer_forget_thread(void)
{
    pthread_mutex_init(&wsl_writer_lock, NULL);
    atomic_store(&wsl_writer_state, WRITER_NONE);
    atomic_store(&writer_stop, 0);
    atomic_store(&writer_pause, 0);
    atomic_store(&final_req, 0);
    atomic_store(&final_done, 0);
    atomic_store(&writer_tid, 0);
}
