/*
 * Private interfaces of libwslshim.so. Nothing here is exported: the library
 * is built with -fvisibility=hidden and only the interposed entry points are
 * marked WSL_EXPORT.
 */
#ifndef WSLSHIM_SHIM_INTERNAL_H
#define WSLSHIM_SHIM_INTERNAL_H

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "wslshim/emulation.h"
#include "wslshim/trace_format.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

/* ThreadSanitizer builds (-DWSLSHIM_SANITIZE=thread; docs/reliability.md). TSan's
 * runtime, preloaded first, calls some of the functions the shim interposes
 * (dlsym above all) while it starts, before its own state exists, and any
 * instrumented code run then crashes. So the exported entry points are built
 * without TSan's instrumentation and pass straight through until the runtime
 * is up (wsl_tsan_up); everything they call out of line (thread setup, rings'
 * slow paths, the writer, GPU timing, NVTX) stays instrumented. */
#if defined(__SANITIZE_THREAD__)
#define WSL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WSL_TSAN 1
#endif
#endif
#ifndef WSL_TSAN
#define WSL_TSAN 0
#endif
#if WSL_TSAN
#define WSL_NO_TSAN __attribute__((no_sanitize("thread")))
#else
#define WSL_NO_TSAN
#endif

#define WSL_EXPORT __attribute__((visibility("default"))) WSL_NO_TSAN

/* What this header declares is the library's own (hidden): its globals are
 * then read directly, not through the GOT. System headers come above. */
#pragma GCC visibility push(hidden)
#define WSL_LIKELY(x) __builtin_expect(!!(x), 1)
#define WSL_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define WSL_TLS __thread __attribute__((tls_model("initial-exec")))

/* ---- configuration, read once at load time (options.c) ---------------------- */
enum wsl_log_level {
    WSL_LOG_ERROR = 0, WSL_LOG_WARN, WSL_LOG_INFO, WSL_LOG_DEBUG,
    WSL_LOG_NOTE = 16, /* shown at every level, as errors are, but not one: "note" */
};

/* Every Nth launch of a thread is timed on the GPU unless WSLSHIM_GPU_TIMING says
 * otherwise (docs/gpu-timing.md: what it costs). */
#define WSL_GPU_TIMING_DEFAULT 100
/* One file call in N on a local filesystem is timed unless WSLSHIM_IO_TIMING
 * says otherwise; calls elsewhere are all timed (docs/io.md: sampled timing). */
#define WSL_IO_TIMING_DEFAULT 32

struct wsl_config {
    char output_pattern[1024]; /* WSLSHIM_OUTPUT */
    int gpu_timing;            /* WSLSHIM_GPU_TIMING: 0 off, N every Nth launch */
    int io;                    /* WSLSHIM_IO */
    int io_timing;             /* WSLSHIM_IO_TIMING: 1 in N calls on local files timed; 1: all */
    int io_paths_hash;         /* WSLSHIM_IO_PATHS=hash */
    int log_level;             /* WSLSHIM_LOG */
    int use_tsc;               /* event clock is the cycle counter */
    int emulate;               /* WSLSHIM_EMULATE parsed and in force */
    struct wsl_emu_spec emu;   /* its SPEC and costs (wslshim/emulation.h) */
};
extern struct wsl_config wsl_cfg;

void wsl_config_load(void);

/* ---- latency emulation (emulation.c; docs/emulation.md) ----------------------------
 * Ticks of the event clock each hooked call of a category gets added after the
 * real call returned; all 0 unless WSLSHIM_EMULATE is set (read once at load). */
extern uint64_t wsl_emu_cat_ticks[WSL_CAT_COUNT];
void wsl_emulation_load(const char *spec); /* from wsl_config_load */
/* Spins on the event clock from `from` until `ticks` more have passed; returns the end. */
uint64_t wsl_emu_spin(uint64_t from, uint64_t ticks);
/* File-system emulation (fs:PATH=9p): set at load when the SPEC has paths. */
extern int wsl_emu_fs_on;
void wsl_emu_fs_meta(void);                        /* a call naming an emulated path: fsmeta */
void wsl_emu_fs_bytes(int write, uint64_t bytes);  /* a read or write of an emulated file */
void wsl_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The lines a writer thread with a table of its own logged, to stderr: by the
 * thread that joined it or saw it end the trace (async-signal-safe). */
void wsl_log_flush_pending(void);

/* ---- the event clock ----------------------------------------------------------
 * A cycle counter read costs a few instructions against ~50 for the vDSO's
 * clock_gettime; the trace maps ticks to CLOCK_MONOTONIC with CLOCK samples. */
static inline uint64_t wsl_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t wsl_real_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline __attribute__((always_inline)) uint64_t wsl_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    if (WSL_LIKELY(wsl_cfg.use_tsc))
        return __rdtsc();
#elif defined(__aarch64__)
    if (WSL_LIKELY(wsl_cfg.use_tsc)) {
        uint64_t v;
        __asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
        return v;
    }
#endif
    return wsl_mono_ns();
}

/* ---- per-thread event buffers (runtime.c) -----------------------------------------
 * Single-producer/single-consumer rings per thread: the thread that owns them
 * writes events, the writer thread drains them. No lock, no allocation and no
 * system call on the producer side; a full ring drops the event and counts it.
 *
 * Each thread has two rings of events (and two of paths): a small one it
 * writes while the writer keeps up, whose lines then stay in its core's
 * caches, and a large one it goes on in when the small one fills (a burst, a
 * slow writer), which holds as much as one ring of the large size did. A
 * thread leaves a ring with a marker there (WSL_RING_SWITCH events,
 * WSL_PATH_SWITCH path entries) and goes on in the other: what follows a
 * marker in a ring came after the thread's turn in the other. The writer reads
 * a ring to its first marker, then the other. The thread goes back to the
 * small ring once the writer has read all of it. Each ring stays a plain ring
 * (its room, its tail), and their entries one sequence (docs/overhead.md,
 * "Two rings"). */
#ifndef WSL_RING_EVENTS
#define WSL_RING_EVENTS 16384u /* power of two */
#endif
#ifndef WSL_RING_SMALL
#define WSL_RING_SMALL 1024u /* events of the small ring, power of two */
#endif
#ifndef WSL_PATH_RING
#define WSL_PATH_RING 262144u /* bytes of path entries per thread, power of two */
#endif
#ifndef WSL_PATH_SMALL
#define WSL_PATH_SMALL 65536u /* bytes of the small path ring, power of two */
#endif
#define WSL_RING_SWITCH 0xffffu     /* an event's api: the thread went on in its other ring */
#define WSL_PATH_SWITCH 0xffffffffu /* a path entry's length, with id 0: the same */
_Static_assert(WSL_RING_SMALL >= 8 && WSL_RING_SMALL <= WSL_RING_EVENTS / 2 && !(WSL_RING_SMALL & (WSL_RING_SMALL - 1)),
               "the small ring is smaller, a power of two");
_Static_assert(WSL_PATH_SMALL >= 2 * 4096 + 64 && WSL_PATH_SMALL <= WSL_PATH_RING && !(WSL_PATH_SMALL & (WSL_PATH_SMALL - 1)),
               "a path entry fits the small ring, a power of two");
#define WSL_FUNC_SEEN 4096u     /* launched functions a thread keeps apart (power of two) */
#define WSL_FUNC_SEEN_MAX 3072u /* at most this many in use: a probe then ends soon */
#define WSL_FUNC_COVER 3u       /* launches of each function timed before sampling takes over */
#define WSL_FOLD_SLOTS 6u      /* alike-call slots of a thread's folded file (two events' worth) */
#define WSL_FOLD_FILE(fd, path) ((uint64_t)(path) << 32 | (uint32_t)(fd))

/* A thread's fold has no slot: its last slot is fold_none, ~0, alike no call
 * (no call's id is 1023), and no call counted apart. Called wherever fold_used
 * becomes 0 (the calls counted apart need a slot: fold_meta_add). */
#define WSL_FOLD_NONE(t)                                                                   \
    do {                                                                                   \
        atomic_store_explicit(&(t)->fold_none, ~0ull, memory_order_relaxed);              \
        (t)->fold_last = &(t)->fold_none;                                                  \
        (t)->fold_meta = 0;                                                                \
    } while (0)

enum wsl_thread_state {
    WSL_THREAD_FREE = 0,     /* reusable */
    WSL_THREAD_ACTIVE = 1,   /* owned by a live thread */
    WSL_THREAD_RETIRED = 2,  /* its thread exited; drain, then free */
};

struct wsl_thread {
    /* producer side (owning thread): the ring it writes now (cur_*) */
    uint64_t head_local;     /* the next event's index in that ring */
    uint64_t limit;          /* head_local may grow to this before a look at the writer's tail */
    uint64_t gen;            /* process generation it was set up in */
    struct wsl_event *cur_ev;     /* ev or small_ev */
    _Atomic uint64_t *cur_head;   /* &head or &s_head */
    uint64_t cur_mask;            /* that ring's size - 1 */
    uint32_t tid;
    uint32_t io_countdown;   /* file calls on local files until the next timed one */
    uint32_t io_rng;         /* xorshift state for the gaps between timed file calls */
    _Atomic uint32_t io_untimed; /* set once this ring carries an untimed file call */
    _Atomic uint64_t head;   /* the large ring: published by the producer */
    char pad1[56];
    _Atomic uint64_t tail;   /* published by the writer */
    char pad2[56];
    _Atomic uint64_t s_head; /* the small ring, the same */
    char pad3[56];
    _Atomic uint64_t s_tail;
    char pad4[56];
    _Atomic uint64_t dropped;
    uint32_t in_big;         /* producer: it writes the large ring now */
    uint32_t no_small;       /* producer: never the small ring (the writer's own ring) */
    uint32_t dropping;       /* producer: its large ring filled and one wait did not make room: it
                                drops (and counts) without waiting until the writer has read half of it */
    /* writer side */
    _Atomic uint32_t w_big;  /* it reads the large ring now (reset with the ring, runtime.c) */
    uint64_t dropped_reported;
    uint64_t w_last_ticks;   /* the latest end time of this thread's events seen */
    uint64_t w_drain_ticks;  /* when its ring was last drained: a lower bound for what follows */
    uint64_t w_cap_head, w_cap_s_head; /* the rings' heads when this drain began (writer/drain.c) */
    uint64_t w_cap_pass;     /* the drain they were read in */
    uint32_t writer_seen_tid;
    _Atomic int state;
    struct wsl_thread *next; /* registry list; entries are never unlinked */
    /* Paths of files this thread opened or looked up: entries of
     * wsl_path_entry_header + bytes, 8-byte aligned; id 0 pads to the end; two
     * rings, as the events' (paths: the large one, small_paths the small one). */
    _Atomic uint64_t paths_head; /* producer */
    _Atomic uint64_t paths_tail; /* writer */
    _Atomic uint64_t sp_head;    /* the small ring, the same */
    _Atomic uint64_t sp_tail;
    uint8_t *p_cur;              /* producer: the path ring it writes now, */
    _Atomic uint64_t *p_head_at; /* its head */
    _Atomic uint64_t *p_tail_at; /* and tail, */
    uint32_t p_mask;             /* its size - 1, */
    uint32_t p_in_big;           /* and whether it is the large one */
    _Atomic uint32_t w_paths_big; /* writer: it reads the large path ring now */
    _Atomic uint64_t paths_dropped; /* producer: paths that found no room */
    uint32_t p_waited_ms;        /* producer: ms its burst waited for room in its full large path ring since the
                                    writer last had read half of it (common/strings.c) */
    uint64_t paths_woken_at;     /* producer: the writer's tail when it was last woken for paths */
    uint32_t path_id_next;       /* producer: its block of string ids (common/strings.c), */
    uint32_t path_id_end;        /* up to this one */
    /* producer: the file whose untimed calls it folds (hooks/io/fold.c), a seqlock
     * the writer reads between drains: fold_seq is odd while a fold ends or
     * begins, and fold_seq / 2 names the fold (it goes on counting across the
     * ring's owners). Slots are only ever appended, and only the last one
     * grows. */
    _Atomic uint32_t fold_seq;
    _Atomic uint32_t fold_used;  /* slots filled */
    _Atomic uint64_t fold_file;  /* path id << 32 | (uint32_t)fd; path 0: none */
    _Atomic uint64_t fold_slot[WSL_FOLD_SLOTS];
    _Atomic uint64_t *fold_last; /* producer: &fold_slot[fold_used - 1], or &fold_none while no slot is used */
    _Atomic uint64_t fold_none;  /* ~0: alike no call (wsl_fold_none) */
    /* producer: tells and fstats counted apart from the slots while the fold has
     * one (1.11: trace_format.h, WSL_FOLD_META), written with its last event;
     * fold_size is what the fstats returned as st_size. fold_meta is the three
     * as one word (little-endian: tells in bits 0-15, fstats 16-31, the size 32-63) */
    union {
        uint64_t fold_meta;
        struct {
            uint16_t fold_tells, fold_stats;
            uint32_t fold_size;
        };
    };
    /* writer: how much of a fold it wrote before the fold's own events came
     * (the fold followed now, and one that ended since the last drain): all
     * calls of slots below `slots` - 1, and `calls` of that one */
    struct wsl_fold_track {
        uint32_t id, slots, calls, live;
    } w_fold[2];
    uint64_t io_memo_dev;        /* producer: the last device asked about, */
    uint32_t io_memo_gen;        /* under this mount table, */
    uint32_t io_memo_local;      /* and whether it is a local filesystem; */
    uint64_t io_memo_open;       /* its open's fold value (hooks/io/opens.c), or 0 (not local, or past a slot) */
    uint64_t cwd_gen;            /* producer: the working directory cached below */
    uint64_t cwd_hash;           /* and its hash (hooks/io/paths.c: directory hashes of relative paths) */
    uint32_t cwd_len;
    char cwd[4096];
    uint32_t dirfd_id;           /* producer: the path id of the directory fd last named (hooks/io/paths.c), */
    uint32_t dirfd_len;          /* its path's length (0: none that can be told), */
    char dirfd_name[4096];       /* and its path */
    /* NVTX names this thread already wrote (nvtx_hooks.c): content hash -> string id,
     * valid while nvtx_gen == gen (a forked child's trace starts without them). */
    uint64_t nvtx_gen;
    uint32_t nvtx_depth;         /* pushes less pops, all domains: lets the report resync after drops */
    uint32_t nvtx_reserved;
    struct wsl_nvtx_name_slot {
        uint64_t hash;
        uint32_t id;
        uint32_t len;
    } nvtx_names[256];
    /* Functions (and graphs) this thread launched (gpu_timing.c): open
     * addressing on the handle, key 0 free. A function's first WSL_FUNC_COVER
     * launches are timed on the GPU whatever the sampling gap, so that every
     * kernel of a periodic step has GPU times; its first launch also names it
     * when no hook saw where it came from. Cleared when the thread is set up. */
    uint32_t func_count;         /* keys in use */
    uint32_t func_reserved;
    uint64_t func_key[WSL_FUNC_SEEN];
    uint8_t func_timed[WSL_FUNC_SEEN]; /* its launches timed (or begun to be), up to WSL_FUNC_COVER */
    /* The handle in its own slot (WSL_FUNC_SLOT) once its first launches are
     * covered: a launch's fast path tests this one word; 0 otherwise. */
    uint64_t func_hot[WSL_FUNC_SEEN];
    struct wsl_event small_ev[WSL_RING_SMALL];
    uint8_t small_paths[WSL_PATH_SMALL];
    uint8_t paths[WSL_PATH_RING];
    struct wsl_event ev[WSL_RING_EVENTS];
};

/* The shim's per-thread state, in one TLS block: a hook finds all of it from
 * one address (one lookup of the block's offset, where separate variables
 * take one each). */
struct wsl_tls {
    struct wsl_thread *thread; /* the ring this thread records into (runtime.c) */
    union {
        struct {
            /* launches until this thread's next GPU-timing sample (gpu_timing.c); 0: not drawn yet */
            uint32_t launches;
            /* >0 while this thread is inside a hooked call or the shim's own code (and
             * always in the writer thread): hooks reached from there pass straight
             * through, so the shim never records itself or a nested call. */
            uint32_t depth;
        };
        /* both as one word, for a launch's fast path (cuda_hooks.c): launches
         * in the low half, depth in the high half (little-endian) */
        uint64_t launches_depth;
    };
    uint32_t sample_rng; /* xorshift state for the gaps between samples */
    /* The writer thread while it has a descriptor table of its own (writer.c):
     * its descriptors' numbers are not the program's, and its calls on them
     * leave the hooks' record of the program's alone. */
    uint32_t own_fds;
};
extern WSL_TLS struct wsl_tls wsl_tls;
_Static_assert(offsetof(struct wsl_tls, launches) == offsetof(struct wsl_tls, launches_depth) &&
                   offsetof(struct wsl_tls, depth) == offsetof(struct wsl_tls, launches) + 4,
               "launches and depth are one 8-byte word");
#define wsl_tls_thread (wsl_tls.thread)
#define wsl_tls_depth (wsl_tls.depth)
extern _Atomic uint64_t wsl_gen;                 /* bumped in a forked child */
/* What a thread's wsl_tls_thread holds while it has no ring (before its set-up,
 * after its exit): never NULL, so that a hook's one test of the thread's gen
 * (against wsl_io_gen, wsl_gen, wsl_launch_gen) covers both. Its gen,
 * WSL_GEN_NONE, equals none of theirs (wsl_gen counts from 1 by forks; 0;
 * WSL_GEN_NEVER; a busy gen, WSL_GEN_BUSY | wsl_gen): only the gen is read
 * through it, nothing is written. */
#define WSL_GEN_NONE (~0ull - 1)
/* Tells the compiler that p is not NULL (the shim is built with
 * -fno-delete-null-pointer-checks: a pointer read through is not known so). */
#define WSL_NONNULL(p)                                                                     \
    do {                                                                                   \
        if (!(p))                                                                          \
            __builtin_unreachable();                                                       \
    } while (0)
extern const uint64_t wsl_thread_none[3];
#define WSL_THREAD_NONE ((struct wsl_thread *)(uintptr_t)wsl_thread_none)
_Static_assert(offsetof(struct wsl_thread, gen) == 2 * sizeof(uint64_t), "wsl_thread_none's gen is its third word");
_Static_assert(_Alignof(struct wsl_thread) <= _Alignof(uint64_t), "wsl_thread_none is aligned as a struct wsl_thread");
/* Set in a thread's gen while a fast twin (hooks/io/reads.c) updates its fold with
 * the thread's depth left at 0: to a signal handler's calls, which pass through
 * then, the thread looks not set up for this process, and wsl_thread_setup
 * refuses it (see there). */
#define WSL_GEN_BUSY (1ull << 63)
extern _Atomic uint64_t wsl_io_gen;              /* wsl_gen while file calls are recorded, else 0 */
/* wsl_gen while launches may take their fast path (cuda_hooks.c: the event
 * clock is the cycle counter and no launch or graph category is emulated),
 * else WSL_GEN_NEVER, which no thread's gen equals. */
extern _Atomic uint64_t wsl_launch_gen;
#define WSL_GEN_NEVER (~0ull)
void wsl_launch_gen_update(void); /* after the settings are read and after a fork (runtime.c) */
extern _Atomic int wsl_io_off;                   /* WSLSHIM_IO=0, once the settings are read */
extern _Atomic(struct wsl_thread *) wsl_threads; /* registry head */
/* Set when the trace cannot be opened: no thread records from then on (its
 * rings would fill with nobody to drain them). */
extern _Atomic int wsl_recording_off;
/* Bursts that filled a ring and waited for room (wsl_ring_reserve_slow: one
 * wait per burst, then drops); logged at WSLSHIM_LOG=debug when the process ends. */
extern _Atomic uint64_t wsl_ring_waits;
/* The same for the path rings (common/strings.c), and the strings (paths, kernel
 * and NVTX names) dropped for want of room, all threads: the END chunk's paths_dropped. */
extern _Atomic uint64_t wsl_path_waits, wsl_paths_dropped;

/* Slow path: sets up this thread (and, the first time, the writer); returns
 * NULL when this thread must not record (exiting, shut down, disabled). */
struct wsl_thread *wsl_thread_setup(void);

#if WSL_TSAN
/* Set when TSan's runtime has finished starting (its __tsan_on_initialize
 * callback, runtime.c) and by the shim's constructor. */
extern _Atomic int wsl_tsan_ready;
__attribute__((visibility("default"))) void __tsan_init(void); /* TSan's runtime's, not the shim's */
/* Whether instrumented code may run in this thread now. Before the runtime has
 * started, __tsan_init starts it; inside its start-up (a call from TSan itself)
 * __tsan_init returns at once and the call passes straight through. */
static inline __attribute__((always_inline)) int wsl_tsan_up(void)
{
    if (WSL_LIKELY(atomic_load_explicit(&wsl_tsan_ready, memory_order_acquire)))
        return 1;
    __tsan_init();
    return atomic_load_explicit(&wsl_tsan_ready, memory_order_acquire);
}
#else
#define wsl_tsan_up() 1
#endif

/* The thread to record into, or NULL. Hot: a TLS load and a compare. */
static inline __attribute__((always_inline)) struct wsl_thread *wsl_thread_get(void)
{
    if (!wsl_tsan_up())
        return NULL;
    struct wsl_thread *t = wsl_tls_thread; /* never NULL (WSL_THREAD_NONE) */
    if (WSL_LIKELY(t->gen == atomic_load_explicit(&wsl_gen, memory_order_relaxed)))
        return t;
    return wsl_thread_setup();
}

/* Past the limit: the ring is half full (wake the writer) or full (wake it and
 * give it a bounded moment); NULL if it stays full and the event is dropped. */
struct wsl_event *wsl_ring_reserve_slow(struct wsl_thread *t);
/* Both rings empty and the producer in the small one (only_big: the large one,
 * for good); where the writer does not read the ring (runtime.c). */
void wsl_ring_reset(struct wsl_thread *t, int only_big);
void wsl_paths_use(struct wsl_thread *t, int big); /* the path ring the producer writes */

#if WSL_TSAN
/* Out of line, and so instrumented, in TSan builds: the hooks that would inline
 * them are not instrumented (above), and TSan must see each slot written and
 * published by the thread that owns the ring (runtime.c). */
struct wsl_event *wsl_ring_reserve_tsan(struct wsl_thread *t);
void wsl_ring_commit_tsan(struct wsl_thread *t);
#endif

static inline __attribute__((always_inline)) struct wsl_event *wsl_ring_reserve(struct wsl_thread *t)
{
#if WSL_TSAN
    return wsl_ring_reserve_tsan(t);
#endif
    uint64_t h = t->head_local;
    if (WSL_UNLIKELY(h >= t->limit))
        return wsl_ring_reserve_slow(t);
    return &t->cur_ev[h & t->cur_mask];
}

static inline __attribute__((always_inline)) void wsl_ring_commit(struct wsl_thread *t)
{
#if WSL_TSAN
    wsl_ring_commit_tsan(t);
    return;
#endif
    t->head_local++;
    atomic_store_explicit(t->cur_head, t->head_local, memory_order_release);
}

/* ---- the writer thread (writer/; its README.md says which file holds what) ------ */
int wsl_writer_start(void);     /* idempotent; 0 on success */
void wsl_writer_note_start(void); /* the process's start time, once (at load) */
void wsl_writer_reserve_fd(void); /* at load: the descriptor table grown for the trace's fd */
void wsl_writer_wake(void);     /* a ring is full: drain now */
void wsl_writer_shutdown(void); /* drain, END chunk, close; at exit and before exec */
void wsl_writer_after_fork_child(void);
void wsl_writer_pause(void);            /* before a fork: the writer thread leaves, the trace stays open */
void wsl_writer_share_table(void);      /* the writer shares the program's descriptor table from now on */
void wsl_writer_after_fork_parent(void);
void wsl_writer_resume(int pressure);   /* a paused writer comes back (when due, or at once) */
extern _Atomic int wsl_writer_paused;
void wsl_writer_note_driver(void *real_cuInit, int init_result);
void wsl_writer_restart(void);  /* after an exec that failed */
/* Short helper processes under wslshim run (writer/helpers.c): the trace ends for an
 * exec (1) or not (0); keep this trace whatever it holds (a signal ends the process). */
void wsl_writer_note_exec(int execing);
void wsl_writer_keep_trace(void);
/* Ends the trace without a lock (signal handlers, _exit); bounded wait. */
int wsl_writer_final_flush(unsigned timeout_ms);
void wsl_thread_forbid_recording(void); /* the writer's own thread */

/* ---- CUDA hooks (cuda_hooks.c) ----------------------------------------------- */
struct wsl_api_entry {
    const char *sym;
    const char *base;
    uint16_t category;
    uint8_t per_thread;
    int version;
    uint8_t flags;           /* WSL_API_* of the trace's API table */
};
extern const struct wsl_api_entry wsl_api_table[];
extern const unsigned wsl_api_count;

/* ---- what every layer shares (common/) -----------------------------------------
 * The real functions (real.c): libc's dlsym, and through it the next definition
 * of each function the shim interposes. Uninstrumented under TSan: its runtime
 * looks functions up through the shim's dlsym while it starts. */
typedef void *(*wsl_dlsym_fn)(void *, const char *);
extern _Atomic wsl_dlsym_fn wsl_real_dlsym_ptr; /* libc's dlsym, once found */
WSL_NO_TSAN wsl_dlsym_fn wsl_real_dlsym_find(void); /* finds it, keeps it; NULL: none */
WSL_NO_TSAN void *wsl_real_dlsym(void *handle, const char *name); /* a lookup through it */
/* libc's dlsym itself, for a caller that must make the call (the dlsym hook's tail call). */
static inline WSL_NO_TSAN wsl_dlsym_fn wsl_real_dlsym_fn(void)
{
    wsl_dlsym_fn f = atomic_load_explicit(&wsl_real_dlsym_ptr, memory_order_relaxed);
    if (WSL_UNLIKELY(!f))
        f = wsl_real_dlsym_find();
    return f;
}
/* The next definition of `name` after the shim (dlsym(RTLD_NEXT)), kept in *slot. */
static inline void *wsl_real_resolve(const char *name, void **slot)
{
    void *p = wsl_real_dlsym(RTLD_NEXT, name);
    /* atomic: a hook may resolve a slot on one thread while the constructor fills the table on
     * another (a library's constructor that reads a file before the shim's has started the
     * writer); both store the same value */
    __atomic_store_n(slot, p, __ATOMIC_RELAXED);
    return p;
}

/* The environment (real.c): libc's getenv, which the shim's own settings are
 * read through, past the getenv the shim exports (the NVTX injection hook,
 * hooks/nvtx_hooks.c). */
typedef char *(*wsl_getenv_fn)(const char *);
extern _Atomic wsl_getenv_fn wsl_real_getenv_ptr; /* libc's getenv, once found */
char *wsl_getenv_first(const char *name);         /* finds it, then asks it */
static inline char *wsl_getenv(const char *name)
{
    wsl_getenv_fn f = atomic_load_explicit(&wsl_real_getenv_ptr, memory_order_relaxed);
    if (WSL_UNLIKELY(!f))
        return wsl_getenv_first(name);
    return f(name);
}

/* String records (strings.c): entries of a thread's PATHS ring, each a string
 * (a file's path, a kernel's name) under an id unique in the process. */
extern _Atomic uint32_t wsl_next_path_id; /* the next free block of ids */
/* A new id: from the thread's own block of them, taken 64 at a time (no
 * shared counter touched per open). Ids are unique in the process, and in a
 * forked child, whose threads go on from the blocks their rings held. */
#define WSL_PATH_ID_BLOCK 64u
static inline uint32_t wsl_path_id_new(struct wsl_thread *t)
{
    if (WSL_UNLIKELY(t->path_id_next == t->path_id_end)) {
        t->path_id_next = atomic_fetch_add_explicit(&wsl_next_path_id, WSL_PATH_ID_BLOCK, memory_order_relaxed);
        t->path_id_end = t->path_id_next + WSL_PATH_ID_BLOCK;
    }
    return t->path_id_next++;
}
/* Room for an entry of `need` bytes (a multiple of 8) in the ring the thread
 * writes now: its head, to publish at head + need once written; ~0 when there
 * is none (the entry is dropped, and counted). errno is kept. */
uint64_t wsl_paths_reserve(struct wsl_thread *t, uint32_t need);
uint32_t wsl_string_record(struct wsl_thread *t, const char *s); /* a string as given (a kernel name): its id */

/* ---- does the program have threads of its own? (program_threads.c) ------------- */
enum { WSL_PROGRAM_THREADS_UNKNOWN = 0, WSL_PROGRAM_THREADS_ONE = 1, WSL_PROGRAM_THREADS_MANY = 2 };
extern _Atomic int wsl_program_threads;
void wsl_note_program_threads(void);       /* once, before the writer thread first starts */
int wsl_io_libc_is_next(const char **who); /* hooks/io/libc.c: glibc's read, open, close... come next */
void wsl_writer_thread_creating(int on);  /* around the writer's pthread_create */

/* A system call made as glibc makes it in a single-threaded process: the call
 * alone, and -1 with errno from its result on failure (x86-64 and arm64; elsewhere
 * wsl_program_threads never says ONE). Inline: a hook's single-threaded twin
 * then makes no call of its own on its way (no registers to save for one). */
long wsl_syscall_failed(long r); /* errno = -r; returns -1 */
#if defined(__x86_64__) || defined(__aarch64__)
/* The system call, and the kernel's answer as it is (-errno on failure). */
static inline __attribute__((always_inline)) long wsl_syscall4_kernel(long nr, long a, long b, long c, long d)
{
#if defined(__x86_64__)
    long r;
    register long r10 __asm__("r10") = d;
    __asm__ volatile("syscall" : "=a"(r) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
    return r;
#else
    register long x8 __asm__("x8") = nr;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    register long x3 __asm__("x3") = d;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory", "cc");
    return x0;
#endif
}
static inline __attribute__((always_inline)) long wsl_raw_syscall4(long nr, long a, long b, long c, long d)
{
    long r = wsl_syscall4_kernel(nr, a, b, c, d);
    if (WSL_UNLIKELY((unsigned long)r > -4096ul))
        return wsl_syscall_failed(r);
    return r;
}
#else
long wsl_raw_syscall4(long nr, long a, long b, long c, long d);
#endif

/* ---- sampled GPU timing (gpu_timing.c) ------------------------------------------ */
#define wsl_tls_launches (wsl_tls.launches)
/* A thread's countdown never exceeds this (a gap is at most 1.5 times
 * WSLSHIM_GPU_TIMING, at most a million; with timing off it is set to this):
 * a launch's fast path tests it together with the depth as one word below
 * 2^31, a compare with an immediate (cuda_hooks.c). */
#define WSL_LAUNCHES_MAX 0x7fffffffu

struct wsl_gpu_sample {
    int active, pool, graph, idle;
    uint32_t epoch;         /* the contexts' epoch its pool was taken in (gpu_timing.c) */
    uint32_t config;        /* wsl_launch_config of the launch's grid and block; 0 for a graph */
    void *e0, *e1, *s;      /* CUevent, CUevent, CUstream the events go to */
    uint64_t stream, handle, t_e0, t_e0_rec;
};

/* Whether this launch of `handle` is timed on the GPU. The first
 * WSL_FUNC_COVER launches of each function a thread launches are; after those,
 * one launch in WSLSHIM_GPU_TIMING on average, at gaps drawn uniformly around
 * that mean so that a sample does not fall on the same kernels of a periodic
 * step each time (docs/gpu-timing.md). A function's first launch also names it
 * when no hook did (wsl_func_first_launches). Hot: a hash, a compare and a
 * countdown. */
int wsl_func_first_launches(struct wsl_thread *t, uint64_t handle, uint32_t slot, void *real, int graph);
int wsl_gpu_sample_next(void); /* the countdown ran out: draw the next gap */
#define WSL_FUNC_SLOT(h) ((uint32_t)(((h) * 0x9e3779b97f4a7c15ull) >> 52) & (WSL_FUNC_SEEN - 1))
_Static_assert(WSL_FUNC_SEEN == 4096u, "WSL_FUNC_SLOT takes 12 bits");
static inline __attribute__((always_inline)) int wsl_gpu_sample_due(struct wsl_thread *t, uint64_t handle, void *real,
                                                                    int graph)
{
    uint32_t slot = WSL_FUNC_SLOT(handle);
    if (WSL_UNLIKELY(t->func_hot[slot] != handle)) /* handle 0 too goes on to the countdown */
        return wsl_func_first_launches(t, handle, slot, real, graph);
    if (WSL_LIKELY(wsl_tls_launches > 1)) {
        wsl_tls_launches--;
        return 0;
    }
    return wsl_gpu_sample_next();
}
/* A function handle a hook named (cuModuleGetFunction, cuLibraryGetKernel...):
 * its launches need no name of their own. */
void wsl_func_named(uint64_t handle);
int wsl_func_is_named(uint64_t handle);
int wsl_gpu_sample_begin(struct wsl_gpu_sample *gs, void *real, uint64_t stream, uint64_t handle, int per_thread,
                         int graph, uint32_t config);
void wsl_gpu_sample_end(struct wsl_gpu_sample *gs, int result, uint64_t t0, uint64_t t1, uint32_t tid);
void wsl_gpu_timing_poll(int final, void (*emit)(uint32_t type, const void *data, size_t size));
void wsl_gpu_timing_forget_contexts(void); /* before a context is destroyed or reset */
void wsl_gpu_timing_after_fork_child(void);
struct wsl_thread *wsl_thread_claim_aux(void); /* a ring the writer itself fills (runtime.c) */

/* ---- file I/O (hooks/io/) -------------------------------------------------- */
void wsl_io_init(void);                       /* resolve the real libc functions (libc.c) */
void wsl_io_thread_init(struct wsl_thread *t); /* a thread's first gap between timed file calls (fold.c) */
void wsl_io_thread_exit(struct wsl_thread *t); /* its folded file calls into its ring */
void wsl_io_fold_cut(struct wsl_thread *t);    /* the same, before an NVTX event */
void wsl_io_note_mounts(const char *text, size_t n); /* writer: which devices are local filesystems (mounts.c) */
size_t wsl_io_read_mounts(char **buf, size_t *cap); /* the mount table text, for the writer */
void wsl_io_name_inherited_fds(struct wsl_thread *t); /* forked child: names of the parent's open files (paths.c) */
/* The shim's own descriptors, which the program's close calls leave alone:
 * slot 0 the trace, slot 1 the mount table while it is read; -1 for none. */
void wsl_fd_protect(int slot, int fd); /* fds.c */

/* ---- hashed paths (path_hash.c), writer thread only ------------------------------- */
void wsl_path_hash_set_key(const char *key);                /* WSLSHIM_IO_PATHS_KEY */
void wsl_path_hash_note_mounts(const char *text, size_t n); /* the latest mount table */
size_t wsl_path_hash(const char *path, size_t len, char *out, size_t cap);

/* ---- exec (exec_hooks.c) ---------------------------------------------------- */
void wsl_exec_note_fork_child(void);
int wsl_exec_in_vfork_child(void); /* this memory is another (vforking) process's */

/* ---- signals (signals.c) ------------------------------------------------------ */
void wsl_signals_init(void);

/* ---- lifecycle (runtime.c) ---------------------------------------------------- */
extern _Atomic int wsl_shutting_down;
uint64_t wsl_process_flags(void);

#pragma GCC visibility pop

#endif /* WSLSHIM_SHIM_INTERNAL_H */
