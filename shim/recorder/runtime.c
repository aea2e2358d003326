/*
 * Lifecycle of the shim in a process: configuration at load, per-thread
 * buffers, fork, thread exit and process exit.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim_internal.h"

struct wsl_config wsl_cfg = {
    .output_pattern = "wslshim-%h-%p.trace.zst",
    .gpu_timing = WSL_GPU_TIMING_DEFAULT,
    .io = 1,
    .io_timing = WSL_IO_TIMING_DEFAULT,
    .log_level = WSL_LOG_ERROR,
    .use_tsc = 0,
};

WSL_TLS struct wsl_tls wsl_tls = {.thread = WSL_THREAD_NONE};
const uint64_t wsl_thread_none[3] = {0, 0, WSL_GEN_NONE}; /* shim_internal.h: WSL_THREAD_NONE */
static WSL_TLS int tls_thread_exited; /* set once the key destructor ran */
_Atomic uint64_t wsl_gen = 1;
_Atomic uint64_t wsl_io_gen; /* wsl_gen while file calls are recorded, else 0 */
_Atomic uint64_t wsl_launch_gen = WSL_GEN_NEVER; /* shim_internal.h */
_Atomic int wsl_io_off;      /* WSLSHIM_IO=0, once the settings are read */
_Atomic(struct wsl_thread *) wsl_threads;
_Atomic int wsl_shutting_down;
_Atomic int wsl_recording_off;
_Atomic uint64_t wsl_ring_waits;

static pthread_key_t thread_key;
static int thread_key_ok;
static uint64_t process_flags;
static _Atomic int inherited_fds_unnamed; /* set in a forked child until its first recording thread names them */

uint64_t wsl_process_flags(void) { return process_flags; }

#if WSL_TSAN
#include <dlfcn.h>
_Atomic int wsl_tsan_ready;

/* TSan's runtime calls this (found with dlsym(RTLD_DEFAULT)) once it has
 * started; a definition later in the search order is called in turn. */
WSL_EXPORT void __tsan_on_initialize(void)
{
    atomic_store_explicit(&wsl_tsan_ready, 1, memory_order_release);
    void (*next)(void) = (void (*)(void))wsl_real_dlsym(RTLD_NEXT, "__tsan_on_initialize");
    if (next && next != __tsan_on_initialize)
        next();
}
#endif

/* What the writer thread logs while it has a descriptor table of its own
 * (writer.c, writer_table_own), where the program's stderr is not: written
 * by the thread that joins it or waits for its end (wsl_log_flush_pending). */
static char log_pending[2048];
static size_t log_pending_len;

static void log_pending_add(const char *m, size_t n)
{
    if (n <= sizeof log_pending - log_pending_len) {
        memcpy(log_pending + log_pending_len, m, n);
        log_pending_len += n;
    }
}

void wsl_log(int level, const char *fmt, ...)
{
    int note = level == WSL_LOG_NOTE;
    if (note)
        level = WSL_LOG_ERROR;
    if (level > wsl_cfg.log_level)
        return;
    int saved = errno;
    char buf[512];
    static const char *names[] = {"error", "warn", "info", "debug"};
    int n = snprintf(buf, sizeof buf, "wslshim[%d] %s: ", (int)getpid(), note ? "note" : names[level]);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof buf)
        n += vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof buf - 2)
        n = (int)sizeof buf - 2;
    if (n > 0) {
        buf[n++] = '\n';
        if (wsl_tls.own_fds) {
            log_pending_add(buf, (size_t)n);
        } else {
            wsl_tls_depth++; /* the shim's own line: not a write of the program's */
            ssize_t w = write(2, buf, (size_t)n);
            wsl_tls_depth--;
            (void)w;
        }
    }
    errno = saved;
}

void wsl_log_flush_pending(void)
{
    size_t n = log_pending_len;
    if (!n)
        return;
    int saved = errno;
    wsl_tls_depth++;
    ssize_t w = write(2, log_pending, n);
    wsl_tls_depth--;
    (void)w;
    log_pending_len = 0;
    errno = saved;
}

/* The kernel reports whether the cycle counter is a trustworthy clock: only
 * use it when the kernel itself keeps time with it and it is invariant. */
static int tsc_is_reliable(void)
{
#if defined(__x86_64__) || defined(__i386__)
    char src[64] = "";
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
    if (!f)
        return 0;
    if (!fgets(src, sizeof src, f))
        src[0] = 0;
    fclose(f);
    if (strncmp(src, "tsc", 3) != 0)
        return 0;
    int constant = 0, nonstop = 0;
    char line[4096];
    f = fopen("/proc/cpuinfo", "re");
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) != 0)
            continue;
        constant = strstr(line, " constant_tsc") != NULL;
        nonstop = strstr(line, " nonstop_tsc") != NULL;
        break;
    }
    fclose(f);
    return constant && nonstop;
#elif defined(__aarch64__)
    return 1; /* the generic timer is architecturally constant-rate */
#else
    return 0;
#endif
}

/* Loaded by the first of: this library's constructor, or the first thread
 * that records, which may come earlier (the constructor of a library the
 * program links runs before ours and may already open files). */
static _Atomic int config_state; /* 0 not yet, 1 loading, 2 loaded */

static void config_ensure(void)
{
    if (atomic_load_explicit(&config_state, memory_order_acquire) == 2)
        return;
    int expect = 0;
    if (atomic_compare_exchange_strong(&config_state, &expect, 1)) {
        wsl_config_load();
        wsl_writer_note_start(); /* after the settings: they choose the event clock */
        atomic_store(&wsl_io_gen, wsl_cfg.io ? atomic_load(&wsl_gen) : 0);
        atomic_store(&wsl_io_off, !wsl_cfg.io);
        wsl_launch_gen_update();
        atomic_store_explicit(&config_state, 2, memory_order_release);
        return;
    }
    while (atomic_load_explicit(&config_state, memory_order_acquire) != 2)
        sched_yield(); /* another thread is reading the environment: a moment */
}

/* The settings are read once and never change: only the generation moves. */
void wsl_launch_gen_update(void)
{
    int fast = wsl_cfg.use_tsc && !wsl_emu_cat_ticks[WSL_CAT_LAUNCH] && !wsl_emu_cat_ticks[WSL_CAT_GRAPH];
    atomic_store(&wsl_launch_gen, fast ? atomic_load(&wsl_gen) : WSL_GEN_NEVER);
}

void wsl_config_load(void)
{
    const char *v;
    if ((v = wsl_getenv("WSLSHIM_LOG"))) {
        if (!strcmp(v, "warn"))
            wsl_cfg.log_level = WSL_LOG_WARN;
        else if (!strcmp(v, "info"))
            wsl_cfg.log_level = WSL_LOG_INFO;
        else if (!strcmp(v, "debug"))
            wsl_cfg.log_level = WSL_LOG_DEBUG;
        else
            wsl_cfg.log_level = WSL_LOG_ERROR;
    }
    if ((v = wsl_getenv("WSLSHIM_OUTPUT")) && *v) {
        if (strlen(v) < sizeof wsl_cfg.output_pattern)
            strcpy(wsl_cfg.output_pattern, v);
        else
            wsl_log(WSL_LOG_ERROR, "WSLSHIM_OUTPUT is too long; using %s", wsl_cfg.output_pattern);
    }
    if ((v = wsl_getenv("WSLSHIM_GPU_TIMING")) && *v) {
        if (!strcmp(v, "off"))
            wsl_cfg.gpu_timing = 0;
        else {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || n < 0 || n > 1000000)
                wsl_log(WSL_LOG_ERROR, "WSLSHIM_GPU_TIMING=%s is not 'off' or a count; ignored", v);
            else
                wsl_cfg.gpu_timing = (int)n;
        }
    }
    if ((v = wsl_getenv("WSLSHIM_IO")) && !strcmp(v, "0"))
        wsl_cfg.io = 0;
    if ((v = wsl_getenv("WSLSHIM_IO_TIMING")) && *v) {
        char *end;
        long n = strtol(v, &end, 10);
        if (*end || n < 1 || n > 1000000)
            wsl_log(WSL_LOG_ERROR, "WSLSHIM_IO_TIMING=%s is not a count from 1; every %d. call is timed", v,
                    wsl_cfg.io_timing);
        else
            wsl_cfg.io_timing = (int)n;
    }
    if ((v = wsl_getenv("WSLSHIM_IO_PATHS")) && *v) {
        if (!strcmp(v, "hash"))
            wsl_cfg.io_paths_hash = 1;
        else if (strcmp(v, "plain") != 0)
            wsl_log(WSL_LOG_ERROR, "WSLSHIM_IO_PATHS=%s is not 'hash' or 'plain'; paths are hashed", v),
                wsl_cfg.io_paths_hash = 1; /* asked for something: err on the side of privacy */
    }
    wsl_path_hash_set_key(wsl_getenv("WSLSHIM_IO_PATHS_KEY"));
    v = wsl_getenv("WSLSHIM_CLOCK");
    if (v && !strcmp(v, "mono"))
        wsl_cfg.use_tsc = 0;
    else
        wsl_cfg.use_tsc = tsc_is_reliable();
    if ((v = wsl_getenv("WSLSHIM_EMULATE")) && *v)
        wsl_emulation_load(v); /* after the clock: its costs are kept in ticks */
}

/* ---- per-thread buffers -------------------------------------------------------- */

static void thread_key_destructor(void *arg)
{
    struct wsl_thread *t = arg;
    if (t && wsl_tls_thread == t) {
        if (t->gen == atomic_load_explicit(&wsl_gen, memory_order_relaxed) && !wsl_tls_depth)
            wsl_io_thread_exit(t);
        wsl_tls_thread = WSL_THREAD_NONE;
        tls_thread_exited = 1;
        atomic_store_explicit(&t->state, WSL_THREAD_RETIRED, memory_order_release);
    }
}

void wsl_thread_forbid_recording(void)
{
    tls_thread_exited = 1;
    wsl_tls_depth = 1;
}

static struct wsl_thread *thread_claim(void)
{
    /* Reuse a buffer whose thread exited and that the writer drained. */
    for (struct wsl_thread *t = atomic_load_explicit(&wsl_threads, memory_order_acquire); t; t = t->next) {
        int expect = WSL_THREAD_FREE;
        if (atomic_load_explicit(&t->state, memory_order_relaxed) == WSL_THREAD_FREE &&
            atomic_compare_exchange_strong(&t->state, &expect, WSL_THREAD_ACTIVE))
            return t;
    }
    void *mem = mmap(NULL, sizeof(struct wsl_thread), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return NULL;
    struct wsl_thread *t = mem;
    atomic_store(&t->state, WSL_THREAD_ACTIVE);
    struct wsl_thread *head = atomic_load(&wsl_threads);
    do
        t->next = head;
    while (!atomic_compare_exchange_weak(&wsl_threads, &head, t));
    return t;
}

static struct wsl_thread *thread_setup(void);

/* A ring that the writer thread itself fills (GPU timing results) and drains
 * like any other; it carries the writer's tid. */
struct wsl_thread *wsl_thread_claim_aux(void)
{
    struct wsl_thread *t = thread_claim();
    if (!t)
        return NULL;
    wsl_ring_reset(t, 1);
    t->limit = t->head_local + WSL_RING_EVENTS; /* never waits: the writer checks for room first */
    t->tid = (uint32_t)syscall(SYS_gettid);
    t->gen = atomic_load(&wsl_gen);
    return t;
}

/* ---- the two rings (shim_internal.h) ------------------------------------------------ */

/* The producer writes ring `big` (1: the large one) from its head on. */
static void ring_use(struct wsl_thread *t, int big)
{
    t->in_big = (uint32_t)big;
    t->cur_ev = big ? t->ev : t->small_ev;
    t->cur_head = big ? &t->head : &t->s_head;
    t->cur_mask = big ? WSL_RING_EVENTS - 1 : WSL_RING_SMALL - 1;
    t->head_local = atomic_load_explicit(t->cur_head, memory_order_relaxed);
}

/* Both rings empty, as the writer sees them too (what they held is another
 * owner's or another process's), and the producer in the small one, or, for
 * the writer's own ring (only_big), in the large one for good. Called where
 * the writer does not read this ring: before it is claimed, or in a forked
 * child before its writer starts. */
void wsl_ring_reset(struct wsl_thread *t, int only_big)
{
    atomic_store(&t->head, atomic_load(&t->tail));
    atomic_store(&t->s_head, atomic_load(&t->s_tail));
    atomic_store(&t->w_big, (uint32_t)only_big);
    t->no_small = (uint32_t)only_big;
    t->dropping = 0;
    ring_use(t, only_big);
    atomic_store(&t->paths_head, atomic_load(&t->paths_tail));
    atomic_store(&t->sp_head, atomic_load(&t->sp_tail));
    atomic_store(&t->w_paths_big, (uint32_t)only_big);
    wsl_paths_use(t, only_big);
}

/* The producer writes path ring `big` (1: the large one) from its head on. */
void wsl_paths_use(struct wsl_thread *t, int big)
{
    t->p_in_big = (uint32_t)big;
    t->p_cur = big ? t->paths : t->small_paths;
    t->p_head_at = big ? &t->paths_head : &t->sp_head;
    t->p_tail_at = big ? &t->paths_tail : &t->sp_tail;
    t->p_mask = big ? WSL_PATH_RING - 1 : WSL_PATH_SMALL - 1;
}

struct wsl_thread *wsl_thread_setup(void)
{
    if (tls_thread_exited || wsl_tls_depth || atomic_load_explicit(&wsl_shutting_down, memory_order_relaxed) ||
        atomic_load_explicit(&wsl_recording_off, memory_order_relaxed))
        return NULL;
    /* A signal handler's call while a fast twin updates this thread's fold: it
     * passes through (as it would under the depth). In a child forked there,
     * gen is old and the thread is set up anew. */
    struct wsl_thread *busy = wsl_tls_thread;
    if (busy->gen == (atomic_load_explicit(&wsl_gen, memory_order_relaxed) | WSL_GEN_BUSY))
        return NULL;
    wsl_tls_depth++; /* the shim's own file and thread calls below are not the program's */
    config_ensure();
    struct wsl_thread *t = thread_setup();
    wsl_tls_depth--;
    return t;
}

static struct wsl_thread *thread_setup(void)
{
    int saved = errno;
    uint64_t gen = atomic_load(&wsl_gen);
    struct wsl_thread *t = wsl_tls_thread;
    if (t == WSL_THREAD_NONE) {
        t = thread_claim();
        if (!t) {
            errno = saved;
            return NULL;
        }
        wsl_tls_thread = t;
        if (thread_key_ok)
            pthread_setspecific(thread_key, t);
    }
    /* A fresh buffer, or one inherited across fork: the events in it belong to
     * whoever owned it before, so start empty. */
    wsl_ring_reset(t, 0);
    t->limit = t->head_local + WSL_RING_SMALL / 2;
    t->tid = (uint32_t)syscall(SYS_gettid);
    t->gen = gen;
    /* Functions launched are the thread's own, as its events (gpu_timing.c). */
    memset(t->func_key, 0, sizeof t->func_key);
    memset(t->func_timed, 0, sizeof t->func_timed);
    memset(t->func_hot, 0, sizeof t->func_hot);
    t->func_count = 0;
    wsl_tls.launches = 0;
    wsl_io_thread_init(t);
    if (wsl_writer_start() != 0) {
        /* No writer (the trace cannot be written): this thread records
         * nothing, and its next call asks again (wsl_thread_setup says no at
         * once while recording is off) instead of filling a ring nobody
         * drains, where every call would wait for room. */
        t->gen = 0;
        errno = saved;
        return NULL;
    }
    if (atomic_exchange(&inherited_fds_unnamed, 0))
        wsl_io_name_inherited_fds(t);
    errno = saved;
    return t;
}

/* The writer drains every few milliseconds; a burst that fills half a ring
 * wakes it at once, and a full ring waits at most WAIT_FULL_NS for room, once
 * per burst: if the writer has not made room by then, the thread drops and
 * counts its events without waiting (t->dropping) until the writer has read
 * half the ring, so that a stalled writer costs the program one wait, not one
 * per event (each drop waited 10 ms before: 32 drops, 0.32 s). The drops go
 * into the trace with the thread's next EVENTS chunk (wsl_events_header). */
#define WAIT_FULL_NS 10000000ull

static int ring_has_room(struct wsl_thread *t, uint64_t h)
{
    uint64_t tail = atomic_load_explicit(&t->tail, memory_order_acquire);
    uint64_t used = h - tail;
    if (used >= WSL_RING_EVENTS)
        return 0;
    t->limit = used >= WSL_RING_EVENTS / 2 ? tail + WSL_RING_EVENTS : tail + WSL_RING_EVENTS / 2;
    /* in the large ring for a burst: a look every half small ring at whether to go back */
    if (!t->no_small && t->limit > h + WSL_RING_SMALL / 2)
        t->limit = h + WSL_RING_SMALL / 2;
    return 1;
}

/* Writes the marker that ends the ring the producer is in (at head_local,
 * where the caller made room for it) and publishes it. */
static void ring_leave(struct wsl_thread *t)
{
    struct wsl_event *m = &t->cur_ev[t->head_local & t->cur_mask];
    memset(m, 0, sizeof *m);
    m->api = WSL_RING_SWITCH;
#if WSL_TSAN
    __tsan_write_range(m, (long)sizeof *m);
#endif
    t->head_local++;
    atomic_store_explicit(t->cur_head, t->head_local, memory_order_release);
}

/* The small ring: an event there when it has room (one slot always kept for
 * its marker), else NULL: the producer has gone on in the large ring. */
static struct wsl_event *small_reserve(struct wsl_thread *t)
{
    uint64_t h = t->head_local, tail = atomic_load_explicit(&t->s_tail, memory_order_acquire);
    uint64_t used = h - tail;
    if (used < WSL_RING_SMALL - 1) {
        if (used >= WSL_RING_SMALL / 2) {
            t->limit = tail + WSL_RING_SMALL - 1;
            wsl_writer_wake(); /* more than half full */
        } else {
            t->limit = tail + WSL_RING_SMALL / 2;
        }
        return &t->small_ev[h & (WSL_RING_SMALL - 1)];
    }
    ring_leave(t);
    ring_use(t, 1);
    wsl_writer_wake();
    return NULL;
}

/* In the large ring: back to the small one once the writer has read it to its
 * marker (it reads the large ring now), with a marker here where there is room. */
static void large_leave_if_due(struct wsl_thread *t)
{
    if (t->no_small ||
        atomic_load_explicit(&t->s_tail, memory_order_acquire) != atomic_load_explicit(&t->s_head, memory_order_relaxed) ||
        t->head_local - atomic_load_explicit(&t->tail, memory_order_acquire) >= WSL_RING_EVENTS)
        return;
    ring_leave(t);
    ring_use(t, 0);
}

struct wsl_event *wsl_ring_reserve_slow(struct wsl_thread *t)
{
    int saved = errno;
    if (WSL_UNLIKELY(atomic_load_explicit(&wsl_writer_paused, memory_order_relaxed))) {
        /* after a fork: the writer comes back when due, at once if this ring is half full */
        uint64_t tail = atomic_load_explicit(t->in_big ? &t->tail : &t->s_tail, memory_order_acquire);
        wsl_writer_resume(t->head_local - tail >= (t->cur_mask + 1) / 2);
    }
    if (t->in_big)
        large_leave_if_due(t);
    if (!t->in_big) {
        struct wsl_event *e = small_reserve(t);
        if (e) {
            t->dropping = 0;
            if (WSL_UNLIKELY(atomic_load_explicit(&wsl_writer_paused, memory_order_relaxed)) && t->limit > t->head_local + 1)
                t->limit = t->head_local + 1; /* still paused: ask again at the next event */
            errno = saved;
            return e;
        }
    }
    uint64_t h = t->head_local;
    if (WSL_UNLIKELY(t->dropping)) {
        /* limit stays at or below h: the next event looks again */
        if (h - atomic_load_explicit(&t->tail, memory_order_acquire) > WSL_RING_EVENTS / 2)
            goto drop;
        t->dropping = 0;
    }
    if (ring_has_room(t, h)) {
        if (t->limit - h <= WSL_RING_EVENTS / 2 && h - atomic_load_explicit(&t->tail, memory_order_relaxed) >= WSL_RING_EVENTS / 2)
            wsl_writer_wake(); /* more than half full */
        if (WSL_UNLIKELY(atomic_load_explicit(&wsl_writer_paused, memory_order_relaxed)) && t->limit > h + 1)
            t->limit = h + 1; /* still paused: ask again at the next event */
        errno = saved;
        return &t->ev[h & (WSL_RING_EVENTS - 1)];
    }
    wsl_writer_wake();
    atomic_fetch_add_explicit(&wsl_ring_waits, 1, memory_order_relaxed);
    uint64_t deadline = wsl_mono_ns() + WAIT_FULL_NS;
    do {
        sched_yield();
        if (ring_has_room(t, h)) {
            errno = saved;
            return &t->ev[h & (WSL_RING_EVENTS - 1)];
        }
    } while (wsl_mono_ns() < deadline);
    t->dropping = 1;
drop:
    errno = saved;
    atomic_store_explicit(&t->dropped, atomic_load_explicit(&t->dropped, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    return NULL;
}

#if WSL_TSAN
void __tsan_write_range(void *addr, long size); /* declared as gcc has it built in */
void __tsan_acquire(void *addr);                 /* TSan's interface (tsan_interface.h) */
void __tsan_release(void *addr);

/* A hook may run inside one of TSan's blocking interceptors: with libtsan preloaded ahead of the
 * shim (an uninstrumented program), a program's poll() reaches TSan's poll, which calls the shim's
 * with TSan ignoring the synchronization of atomics until it returns. The ring's hand-over to the
 * writer is declared to TSan here as well, which it does not ignore there: the writer's tails
 * acquired before a slot is taken, the head released after it is filled. */
struct wsl_event *wsl_ring_reserve_tsan(struct wsl_thread *t)
{
    __tsan_acquire(&t->tail);
    __tsan_acquire(&t->s_tail);
    uint64_t h = t->head_local;
    if (h >= t->limit)
        return wsl_ring_reserve_slow(t);
    return &t->cur_ev[h & t->cur_mask];
}

void wsl_ring_commit_tsan(struct wsl_thread *t)
{
    /* The hook filled the slot without instrumentation: it is written here, as
     * far as TSan knows, before it is published. */
    __tsan_write_range(&t->cur_ev[t->head_local & t->cur_mask], (long)sizeof(struct wsl_event));
    t->head_local++;
    __tsan_release((void *)t->cur_head);
    atomic_store_explicit(t->cur_head, t->head_local, memory_order_release);
}
#endif

/* ---- fork ------------------------------------------------------------------------
 * The child has only the forking thread. Everything the parent had in flight
 * stays with the parent; the child starts its own trace at its first event.
 * The writer thread leaves before the fork and, in the parent, comes back
 * after it (writer/fork.c). */
/* Whether the program counts its threads right after fork() returns in the
 * parent: CPython 3.12 and later do (/proc/self/stat, to warn about forking a
 * multi-threaded process), so there the writer stays away a moment after the
 * fork. Everywhere else it comes back before fork() returns: a program that
 * forks and then idles, _exits or is killed has its calls after the fork on
 * disk within a second, as before it (docs/reliability.md). Looked up before
 * each fork until found (an embedding program may load Python late). */
static _Atomic int fork_counted; /* 0 not known, 1 counts its threads, 2 Python before 3.12 */

static void fork_note_python(void)
{
    if (atomic_load_explicit(&fork_counted, memory_order_relaxed))
        return;
    const char *(*version)(void) = (const char *(*)(void))wsl_real_dlsym(RTLD_DEFAULT, "Py_GetVersion");
    if (!version)
        return;
    const char *v = version(); /* "3.12.3 (main, ...)": a static string, no interpreter state */
    int major = 0, minor = 0;
    if (v) {
        while (*v >= '0' && *v <= '9')
            major = major * 10 + (*v++ - '0');
        if (*v == '.')
            for (v++; *v >= '0' && *v <= '9'; v++)
                minor = minor * 10 + (*v - '0');
    }
    atomic_store_explicit(&fork_counted, major > 3 || (major == 3 && minor >= 12) || !v ? 1 : 2,
                          memory_order_relaxed);
}

static void at_fork_prepare(void)
{
    wsl_tls_depth++;
    fork_note_python();
    wsl_writer_pause();
    wsl_tls_depth--;
}

static void at_fork_parent(void)
{
    if (!atomic_load_explicit(&wsl_writer_paused, memory_order_relaxed))
        return;
    struct wsl_thread *self = wsl_tls_thread;
    /* The writer comes back at once unless the program counts its threads now
     * (fork_note_python), or when other threads record (two or more: one may be
     * the writer's own ring of GPU results): the program is multi-threaded
     * without the shim then. */
    unsigned others = 0;
    for (struct wsl_thread *t = atomic_load(&wsl_threads); t && others < 2; t = t->next)
        others += t != self && atomic_load_explicit(&t->state, memory_order_relaxed) == WSL_THREAD_ACTIVE;
    wsl_tls_depth++;
    if (others >= 2 || atomic_load_explicit(&fork_counted, memory_order_relaxed) != 1)
        wsl_writer_resume(1);
    else
        wsl_writer_after_fork_parent();
    wsl_tls_depth--;
    if (self != WSL_THREAD_NONE && atomic_load_explicit(&wsl_writer_paused, memory_order_relaxed))
        self->limit = self->head_local; /* this thread's next event asks whether the writer is due */
}

static void at_fork_child(void)
{
    wsl_tls_depth++; /* the shim's own calls below (closing the parent's trace) are not the program's */
    struct wsl_thread *self = wsl_tls_thread;
    for (struct wsl_thread *t = atomic_load(&wsl_threads); t; t = t->next) {
        atomic_store(&t->tail, atomic_load(&t->head));
        atomic_store(&t->s_tail, atomic_load(&t->s_head));
        atomic_store(&t->w_big, t->in_big); /* the writer to come reads on where each thread writes */
        atomic_store(&t->paths_tail, atomic_load(&t->paths_head));
        atomic_store(&t->sp_tail, atomic_load(&t->sp_head));
        atomic_store(&t->w_paths_big, t->p_in_big);
        t->dropped_reported = atomic_load(&t->dropped);
        if (t != self)
            atomic_store(&t->state, WSL_THREAD_FREE);
    }
    process_flags |= WSL_PROC_FORKED;
    atomic_store(&inherited_fds_unnamed, 1);
    wsl_exec_note_fork_child();
    wsl_gpu_timing_after_fork_child();
    wsl_writer_after_fork_child();
    uint64_t gen = atomic_fetch_add(&wsl_gen, 1) + 1;
    atomic_store(&wsl_io_gen, wsl_cfg.io ? gen : 0);
    if (atomic_load_explicit(&config_state, memory_order_acquire) == 2)
        wsl_launch_gen_update();
    wsl_tls_depth--;
}

/* quick_exit runs the at_quick_exit handlers (this one, registered first,
 * last) and then leaves without destructors. */
static void quick_exit_flush(void)
{
    if (!wsl_exec_in_vfork_child())
        wsl_writer_final_flush(2000);
}

/* ---- load and exit -------------------------------------------------------------- */
__attribute__((constructor)) static void wsl_init(void)
{
    int saved = errno;
#if WSL_TSAN
    /* TSan's runtime has started by now (this library's own instrumented
     * constructors start it), even where the program's own
     * __tsan_on_initialize hid the shim's. */
    atomic_store_explicit(&wsl_tsan_ready, 1, memory_order_release);
#endif
    wsl_tls_depth++;
    config_ensure();
    wsl_note_program_threads();
    thread_key_ok = pthread_key_create(&thread_key, thread_key_destructor) == 0;
    pthread_atfork(at_fork_prepare, at_fork_parent, at_fork_child);
    wsl_writer_reserve_fd();
    wsl_io_init();
    wsl_signals_init();
    at_quick_exit(quick_exit_flush);
    wsl_tls_depth--;
    errno = saved;
}

__attribute__((destructor)) static void wsl_fini(void)
{
    int saved = errno;
    wsl_tls_depth++;
    wsl_writer_shutdown();
    wsl_log(WSL_LOG_DEBUG, "recording %s; bursts that waited for room in a full ring: %llu; in a full path ring: %llu",
            atomic_load(&wsl_recording_off) ? "off" : "on", (unsigned long long)atomic_load(&wsl_ring_waits),
            (unsigned long long)atomic_load(&wsl_path_waits));
    wsl_tls_depth--;
    errno = saved;
}
