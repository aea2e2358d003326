/*
 * The fold's half that the hooks inline (hooks/io/ only): an untimed call on a
 * local file, counted into a slot of the thread's fold (fold_begin, io_fold,
 * io_fold_fast_file), and the fold's end with the file's close
 * (fold_end_closed). The rest, out of line, is fold.c.
 */
#ifndef WSLSHIM_HOOKS_IO_FOLD_H
#define WSLSHIM_HOOKS_IO_FOLD_H

#include "io_hooks.h"

#pragma GCC visibility push(hidden)

/* ---- folded calls -------------------------------------------------------------------------
 * An untimed call on a local file (its timing sampled out) that succeeded is
 * folded: the thread counts it in a slot of the file it folds (fd and path id),
 * alike calls (same id, same value returned) in the same slot, and writes
 * nothing. The fold's events (WSL_CAT_IO_FOLD, trace_format.h) go into the ring
 * when the file is closed, when a call on another file comes, or when a slot
 * is full; the writer takes the calls counted so far at each drain (writer/untimed.c). */

/* the thread's fold: its own fields, read by the writer */
#define FOLD_ONE (1ull << 10)
_Static_assert(WSL_API_COUNT < 0x3ff, "no call's id is 1023, fold_none's (WSL_FOLD_NONE)");
#define FOLD_LD(x) atomic_load_explicit(&(x), memory_order_relaxed)
#define FOLD_ST(x, v) atomic_store_explicit(&(x), (v), memory_order_relaxed)

/* The seqlock around a fold's end: fold_enter makes fold_seq odd (the writer
 * keeps out) and returns it as it was; fold_leave leaves the thread with no
 * slot, folding `file`, and the next fold id. */
static inline __attribute__((always_inline)) uint32_t fold_enter(struct wsl_thread *t)
{
    uint32_t seq = FOLD_LD(t->fold_seq);
    FOLD_ST(t->fold_seq, seq + 1);
    atomic_thread_fence(memory_order_release);
    return seq;
}

static inline __attribute__((always_inline)) void fold_leave(struct wsl_thread *t, uint32_t seq, uint64_t file)
{
    FOLD_ST(t->fold_used, 0);
    WSL_FOLD_NONE(t);
    FOLD_ST(t->fold_file, file);
    atomic_store_explicit(&t->fold_seq, seq + 2, memory_order_release);
}

/* A fold's last event's a[0] and stream: the path id and fd, and the calls
 * counted apart with the fstats' size (1.11, WSL_FOLD_META; 0 when none). */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
static inline __attribute__((always_inline)) uint64_t fold_last_a0(struct wsl_thread *t, uint64_t file)
{
    return file >> 32 | t->fold_meta << 32; /* the counts; the size shifts out */
}
static inline __attribute__((always_inline)) uint64_t fold_last_stream(struct wsl_thread *t, int64_t fd)
{
    return (uint64_t)fd | (t->fold_meta & ~0xffffffffull); /* fd >= 0: a fold with calls */
}
#else
static inline __attribute__((always_inline)) uint64_t fold_last_a0(struct wsl_thread *t, uint64_t file)
{
    return file >> 32 | (uint64_t)t->fold_tells << 32 | (uint64_t)t->fold_stats << 48;
}
static inline __attribute__((always_inline)) uint64_t fold_last_stream(struct wsl_thread *t, int64_t fd)
{
    return (uint64_t)fd | (uint64_t)t->fold_size << 32;
}
#endif

/* Ends the thread's fold (its events into the ring) and begins one for fd and
 * path (fold.c). */
void fold_next(struct wsl_thread *t, int fd, uint32_t path);

/* The thread's fold ends with its file's close in it (its last event says so)
 * and no other begins: fold_next written straight for that case, as it is once
 * per file: one event when the slots fit one (an open and its reads), else two
 * (Python's open().read() fills six). */
_Static_assert(WSL_FOLD_SLOTS == 2 * WSL_FOLD_SLOTS_PER_EVENT, "a fold's slots fill two events at most");
static inline __attribute__((always_inline)) void fold_end_closed(struct wsl_thread *t)
{
    uint32_t used = FOLD_LD(t->fold_used), seq = fold_enter(t);
    uint64_t file = FOLD_LD(t->fold_file);
    int64_t fd = (int32_t)(uint32_t)file;
    /* slots past the used ones hold what earlier folds left: not this one's */
    uint64_t s0 = FOLD_LD(t->fold_slot[0]), s1 = FOLD_LD(t->fold_slot[1]), s2 = FOLD_LD(t->fold_slot[2]);
    struct wsl_event *e = wsl_ring_reserve(t);
    if (WSL_UNLIKELY(used > WSL_FOLD_SLOTS_PER_EVENT) && WSL_LIKELY(e != NULL)) {
        io_fill(e, 0, 0, WSL_ID_IO_FOLD, WSL_FOLD_RESULT(seq >> 1, 0, 0), fd, file >> 32, s0, s1, s2);
        wsl_ring_commit(t);
        used -= WSL_FOLD_SLOTS_PER_EVENT;
        s0 = FOLD_LD(t->fold_slot[3]);
        s1 = FOLD_LD(t->fold_slot[4]);
        s2 = FOLD_LD(t->fold_slot[5]);
        e = wsl_ring_reserve(t);
        if (WSL_LIKELY(e != NULL)) {
            io_fill(e, 0, 0, WSL_ID_IO_FOLD,
                    WSL_FOLD_RESULT(seq >> 1, WSL_FOLD_SLOTS_PER_EVENT, WSL_FOLD_LAST | WSL_FOLD_CLOSED),
                    (int64_t)fold_last_stream(t, fd), fold_last_a0(t, file), s0, used > 1 ? s1 : 0,
                    used > 2 ? s2 : 0);
            wsl_ring_commit(t);
        }
    } else if (WSL_LIKELY(e != NULL)) {
        io_fill(e, 0, 0, WSL_ID_IO_FOLD, WSL_FOLD_RESULT(seq >> 1, 0, WSL_FOLD_LAST | WSL_FOLD_CLOSED),
                (int64_t)fold_last_stream(t, fd), fold_last_a0(t, file), used > 0 ? s0 : 0, used > 1 ? s1 : 0,
                used > 2 ? s2 : 0);
        wsl_ring_commit(t);
    }
    atomic_store_explicit(&t->io_untimed, 1, memory_order_relaxed);
    fold_leave(t, seq, WSL_FOLD_FILE(-1, 0));
}

/* fold_end_closed where the fold's slots fit its one event (an open and its
 * reads: three slots at most, Python's open().read() with its tells and fstats
 * counted apart) and the ring has room for it without its slow path: written
 * and published; a leaf, for the close's fast twin, with few registers (a fold
 * of more slots, two events, is fold_end_closed's). Returns 0, having done
 * nothing, otherwise (then fold_end_closed). */
static inline __attribute__((always_inline)) int fold_end_closed_fast(struct wsl_thread *t)
{
#if WSL_TSAN
    (void)t;
    return 0; /* the ring's slots are TSan's to see written (wsl_ring_reserve_tsan) */
#else
    uint32_t used = FOLD_LD(t->fold_used);
    uint64_t h = t->head_local;
    if (WSL_UNLIKELY(used > WSL_FOLD_SLOTS_PER_EVENT || h + 1 > t->limit))
        return 0; /* two events, or wsl_ring_reserve would take its slow path */
    uint32_t seq = fold_enter(t);
    uint64_t file = FOLD_LD(t->fold_file);
    int64_t fd = (int32_t)(uint32_t)file;
    struct wsl_event *e = &t->cur_ev[h & t->cur_mask];
    /* io_fill's fields, each group stored before the next is loaded (the compiler
     * barriers): so few values live at once that the close's twin, a leaf, saves
     * no register for them */
    e->t_start = 0;
    e->t_end = 0;
    e->api = (uint16_t)WSL_ID_IO_FOLD;
    e->flags = 0;
    e->result = WSL_FOLD_RESULT(seq >> 1, 0, WSL_FOLD_LAST | WSL_FOLD_CLOSED);
    e->stream = fold_last_stream(t, fd);
    e->a[0] = fold_last_a0(t, file);
    __asm__ volatile("" ::: "memory");
    e->a[1] = used > 0 ? FOLD_LD(t->fold_slot[0]) : 0;
    __asm__ volatile("" ::: "memory");
    e->a[2] = used > 1 ? FOLD_LD(t->fold_slot[1]) : 0;
    __asm__ volatile("" ::: "memory");
    e->a[3] = used > 2 ? FOLD_LD(t->fold_slot[2]) : 0;
    t->head_local = ++h; /* wsl_ring_commit */
    atomic_store_explicit(t->cur_head, h, memory_order_release);
    atomic_store_explicit(&t->io_untimed, 1, memory_order_relaxed);
    fold_leave(t, seq, WSL_FOLD_FILE(-1, 0));
    return 1;
#endif
}

/* Begins a fold for fd and path: ends the thread's fold when it has calls;
 * one without calls has a fold id no call was counted under yet (fold_next
 * leaves a new one, and a fold's first slot comes with fold_used, after the
 * file), so the new file takes it over as it is. */
static inline __attribute__((always_inline)) void fold_begin(struct wsl_thread *t, int fd, uint32_t path)
{
    if (FOLD_LD(t->fold_used))
        fold_next(t, fd, path);
    else
        FOLD_ST(t->fold_file, WSL_FOLD_FILE(fd, path));
}

/* The largest value a folded call keeps: half the format's (WSL_FOLD_VALUE_MAX),
 * so that a slot's top value bit is 0 and io_fold's one test below holds. */
#define FOLD_VALUE_LIMIT (WSL_FOLD_VALUE_MAX >> 1)

/* Folds an untimed successful call (id api, on fd whose path id is path) that
 * returned value (at most FOLD_VALUE_LIMIT: a read's bytes always are, as
 * Linux moves at most 2 GiB per call; callers check sizes and offsets): into
 * the last slot when it is alike, else into a new one. Returns 1. */
static inline __attribute__((always_inline)) int io_fold(struct wsl_thread *t, unsigned api, int fd,
                                                         uint32_t path, uint64_t value)
{
    uint64_t key = WSL_FOLD_SLOT(api, 0, value);
    uint32_t used = FOLD_LD(t->fold_used);
    if (WSL_LIKELY(FOLD_LD(t->fold_file) == WSL_FOLD_FILE(fd, path))) {
        if (WSL_LIKELY(used)) {
            /* x: the slot's calls when it is alike (same id and value). One more fits when
             * x + 1 call is still only calls: a different id leaves bits 0-9 set, a
             * different value bits from 24 up (no carry clears them: bit 63 of x is 0),
             * and a full slot carries into bit 24. */
            uint64_t s = FOLD_LD(t->fold_slot[used - 1]), x = s ^ key;
            if (WSL_LIKELY(!((x + FOLD_ONE) & ~((uint64_t)WSL_FOLD_CALLS_MAX << 10)))) {
                FOLD_ST(t->fold_slot[used - 1], s + FOLD_ONE);
                wsl_tls_depth = 0;
                return 1;
            }
            if (WSL_UNLIKELY(used == WSL_FOLD_SLOTS)) {
                fold_next(t, fd, path);
                used = 0;
            }
        }
    } else {
        fold_begin(t, fd, path);
        used = 0;
    }
    FOLD_ST(t->fold_slot[used], key | FOLD_ONE);
    t->fold_last = &t->fold_slot[used];
    atomic_store_explicit(&t->fold_used, used + 1, memory_order_release); /* after the slot: the writer's view */
    wsl_tls_depth = 0;
    return 1;
}

/* Out of the hooks' way: the fold ends here when it is fd's (path's) (fold.c). */
void io_fold_cut_file(struct wsl_thread *t, int fd, uint32_t path) __attribute__((noinline, cold));

/* A read-like call: a timed one is an event of its own, an untimed one folds. */
static inline __attribute__((always_inline)) void io_record_read(struct wsl_thread *t, unsigned api, uint64_t t0,
                                                                 uint64_t t1, int failed, int err, int64_t fd,
                                                                 uint64_t path, uint64_t ask, uint64_t got,
                                                                 uint64_t off)
{
    if (t0) {
        /* A timed read that hit the end of the file: the reads folded before it go
         * first, as the report takes the file's size from the bytes read up to it. */
        if (WSL_UNLIKELY(!got && ask && !failed))
            io_fold_cut_file(t, (int)fd, (uint32_t)path);
        io_record(t, api, t0, t1, failed, err, fd, path, ask, got, off);
        return;
    }
    if (!failed && ask && io_fold(t, api, (int)fd, (uint32_t)path, got))
        return;
    io_record(t, api, 0, 0, failed, err, fd, path, ask, got, 1); /* untimed: a3 is its calls */
}

/* The common case of a read on a local file, untimed and successful, when the
 * thread's fold is this file's (an open of a local file begins its fold): one
 * more call in the last slot when it is alike (same id, same bytes returned)
 * and not full, else a new slot while there is one. Returns 0 otherwise. */
static inline __attribute__((always_inline)) int io_fold_fast_file(struct wsl_thread *t, unsigned api,
                                                                   uint64_t file, uint64_t value)
{
    if (FOLD_LD(t->fold_file) != file)
        return 0;
    uint64_t key = WSL_FOLD_SLOT(api, 0, value);
    /* see io_fold: one test for "alike and not full"; no slot: fold_none, alike nothing */
    _Atomic uint64_t *last = t->fold_last;
    uint64_t s = FOLD_LD(*last), x = s ^ key;
    if (WSL_LIKELY(!((x + FOLD_ONE) & ~((uint64_t)WSL_FOLD_CALLS_MAX << 10)))) {
        FOLD_ST(*last, s + FOLD_ONE);
        return 1;
    }
    uint32_t used = FOLD_LD(t->fold_used);
    if (used == WSL_FOLD_SLOTS)
        return 0;
    FOLD_ST(t->fold_slot[used], key | FOLD_ONE);
    t->fold_last = &t->fold_slot[used];
    atomic_store_explicit(&t->fold_used, used + 1, memory_order_release); /* after the slot: the writer's view */
    return 1;
}

/* Whether a count apart, c (WSL_FOLD_META: the id in bits 0-9, 1 to 63
 * calls in bits 10-15; 0: none yet), is api's and takes one more: then c - api
 * is the calls << 10, which rotated right by 10 is the calls; another id
 * leaves bits 0-9 set, rotated to the top, and no count (c = 0) leaves -api. */
static inline __attribute__((always_inline)) int fold_meta_alike(uint32_t c, unsigned api)
{
    uint32_t d = c - api;
    return ((d >> 10) | (d << 22)) < WSL_FOLD_META_CALLS_MAX;
}

/* A tell or an fstat counted apart (1.11, WSL_FOLD_META) into the thread's
 * fold of `file` while it has a slot: into *m, the count of its kind, when that
 * is this id's and not full (fold_meta_alike), or as the first one.
 * Returns 0 otherwise (the call then takes a slot as any other). Python's
 * open().read() makes two fstats and two tells per file: counted so, its
 * fold's slots are the open and the two reads, one event at the close. */
static inline __attribute__((always_inline)) int fold_meta_add(struct wsl_thread *t, uint64_t file, uint16_t *m,
                                                               unsigned api)
{
    if (FOLD_LD(t->fold_file) != file)
        return 0;
    /* a count (c nonzero) is there only while the fold has a slot (WSL_FOLD_NONE
     * clears it): the first call alone asks for the slot */
    uint32_t c = *m;
    if (WSL_LIKELY(fold_meta_alike(c, api))) {
        *m = (uint16_t)(c + (1u << 10));
        return 1;
    }
    if (c || WSL_UNLIKELY(!FOLD_LD(t->fold_used)))
        return 0; /* another id's, or full; or no slot */
    *m = (uint16_t)WSL_FOLD_META(api, 1);
    return 1;
}

/* lseek(fd, 0, SEEK_CUR) that returned 0 (r), counted apart (file: fd and path, WSL_FOLD_FILE) */
static inline __attribute__((always_inline)) int fold_meta_tell(struct wsl_thread *t, unsigned api, uint64_t file,
                                                                int64_t off, int whence, int64_t r)
{
    return !((uint64_t)(whence ^ SEEK_CUR) | (uint64_t)off | (uint64_t)r) &&
           fold_meta_add(t, file, &t->fold_tells, api);
}

/* an fstat that returned st_size `size`, counted apart when the fold's fstats
 * counted so far returned the same */
static inline __attribute__((always_inline)) int fold_meta_stat(struct wsl_thread *t, unsigned api, uint64_t file,
                                                                uint64_t size)
{
    if (FOLD_LD(t->fold_file) != file)
        return 0;
    uint32_t c = t->fold_stats; /* nonzero only while the fold has a slot (fold_meta_add) */
    if (WSL_LIKELY(c)) {
        /* the same size (a size past 2^32 never equals fold_size), the same id, not full */
        if (t->fold_size != size || !fold_meta_alike(c, api))
            return 0;
        t->fold_stats = (uint16_t)(c + (1u << 10));
        return 1;
    }
    if (size > UINT32_MAX || WSL_UNLIKELY(!FOLD_LD(t->fold_used)))
        return 0;
    /* the first: its size, kept with the count (WSL_FOLD_NONE clears both) */
    t->fold_size = (uint32_t)size;
    t->fold_stats = (uint16_t)WSL_FOLD_META(api, 1);
    return 1;
}

static inline __attribute__((always_inline)) int io_fold_fast(struct wsl_thread *t, unsigned api, int fd,
                                                              uint32_t path, uint64_t value)
{
    return io_fold_fast_file(t, api, WSL_FOLD_FILE(fd, path), value);
}

/* wsl_tls_depth = V (a constant), where the TLS block's offset is found again
 * (x86-64: one load from the GOT) rather than kept from before the system call
 * in a register the hook would have to save: for the leaf fast paths below. */
#if defined(__x86_64__) && !WSL_TSAN && !defined(__SANITIZE_ADDRESS__)
#define IO_DEPTH_SET_RELOADED(v)                                                                            \
    do {                                                                                                    \
        uint64_t off_;                                                                                      \
        __asm__ volatile("movq wsl_tls@gottpoff(%%rip), %0\n\tmovl %2, %%fs:%c1(%0)"                         \
                         : "=&r"(off_)                                                                      \
                         : "i"(offsetof(struct wsl_tls, depth)), "i"(v)                                     \
                         : "memory");                                                                       \
    } while (0)
#else
#define IO_DEPTH_SET_RELOADED(v) (wsl_tls_depth = (v))
#endif

static inline __attribute__((always_inline)) void io_depth_clear_reloaded(void)
{
    IO_DEPTH_SET_RELOADED(0);
}

/* A fast twin's busy window (WSL_GEN_BUSY in the thread's gen, which a signal
 * handler's calls then find not this process's, and pass through): begun after
 * its system call, ended once the fold is updated; each one instruction in
 * memory (x86-64), and a compiler barrier, as the handler is this thread. */
static inline __attribute__((always_inline)) void io_busy_begin(struct wsl_thread *t)
{
#if defined(__x86_64__) && !WSL_TSAN
    __asm__ volatile("btsq $63, %0" : "+m"(t->gen) : : "memory");
#else
    t->gen |= WSL_GEN_BUSY;
    atomic_signal_fence(memory_order_seq_cst);
#endif
}
static inline __attribute__((always_inline)) void io_busy_end(struct wsl_thread *t)
{
#if defined(__x86_64__) && !WSL_TSAN
    __asm__ volatile("btrq $63, %0" : "+m"(t->gen) : : "memory");
#else
    atomic_signal_fence(memory_order_seq_cst);
    t->gen &= ~WSL_GEN_BUSY;
#endif
}
_Static_assert(WSL_GEN_BUSY == 1ull << 63, "io_busy_begin's bit");

/* From the busy window to the depth a full hook's recording path runs under
 * (the depth first: never neither), for the ways out of the fast paths; the
 * TLS block's offset found again, as io_depth_clear_reloaded's. */
static inline __attribute__((always_inline)) void io_busy_to_depth(struct wsl_thread *t)
{
    IO_DEPTH_SET_RELOADED(1);
    io_busy_end(t);
}

/* The common case of a call on a local file's fd whose untimed success folds a
 * value (fstat: the size, stat.c; lseek: the offset, fds.c), where the hook makes glibc's
 * system call itself (`direct`: seek_direct, fstat_direct; `dbit`, the fd table's bit that says
 * both, FD_SEEK_DIRECT, FD_FSTAT_DIRECT): nr with fd, b, c, d; `meta`
 * counts the call apart when it can (fold_meta_tell, fold_meta_stat, given file_: fd and
 * its path id, WSL_FOLD_FILE). Everything else,
 * timed calls and those that fail or do not fold, goes to the full hook
 * (`full`, a tail call) or, once made, to `rest` (a tail call too, given the
 * kernel's answer k_ and file_, entered as a full hook's recording path is: the
 * depth 1; it sets errno as glibc's wrapper does). With no call
 * that returns here, the hook is a leaf: what it keeps past the system call
 * stays in registers the call leaves alone, and it saves none (Python's
 * open().read() makes four of these per file). As the read twins' (reads.c,
 * READ_ST_HOOK), the depth stays 0 through the system call, and the thread is
 * busy (WSL_GEN_BUSY) from its return while the fold is updated: a signal
 * handler's calls during the system call are recorded before the fold is read,
 * those after it pass through. */
#define FD_FOLD_FAST(type, api, fd, direct, dbit, cond, nr, b, c, d, value, meta, rest, full) \
    struct wsl_thread *t = io_enter_ready();                                               \
    if (WSL_UNLIKELY(!t))                                                                  \
        return IO_OFF() && (direct) && !wsl_tls_depth /* WSLSHIM_IO=0: glibc's system call */ \
                   ? (type)st_kernel_result(st_syscall4_kernel(nr, fd, (long)(b), (long)(c), (long)(d))) \
                   : full;                                                                 \
    uint64_t info_ = info_of_fd(fd);                                                       \
    /* dbit: FD_LOCAL, and `direct` (fd_local_bits) */                                     \
    if (WSL_UNLIKELY(!(info_ & (dbit)) || !(cond) || !io_countdown_untimed(t)))            \
        return full;                                                                       \
    uint64_t tv_ = (uintptr_t)t, file_ = WSL_FOLD_FILE(fd, (uint32_t)info_);               \
    long k_ = st_syscall4_keeping(nr, fd, (long)(b), (long)(c), (long)(d), &tv_, &file_);  \
    t = (struct wsl_thread *)(uintptr_t)tv_;                                               \
    io_busy_begin(t);                                                                      \
    type r = (type)k_;                                                                     \
    if (WSL_LIKELY(k_ >= 0) &&                                                             \
        (WSL_LIKELY(meta) ||                                                               \
         (WSL_LIKELY((uint64_t)(value) <= FOLD_VALUE_LIMIT) &&                             \
          WSL_LIKELY(io_fold_fast_file(t, (api) + WSL_IO_SAMPLED, file_, (uint64_t)(value)))))) { \
        io_busy_end(t);                                                                    \
        return r;                                                                          \
    }                                                                                      \
    io_busy_to_depth(t);                                                                   \
    return rest;

#pragma GCC visibility pop

#endif /* WSLSHIM_HOOKS_IO_FOLD_H */
