/*
 * String records: the producer's side of a thread's PATHS ring (shim_internal.h,
 * struct wsl_thread), into which the hooks write the strings the trace names
 * by id: files' paths (hooks/io/paths.c, which makes them absolute and writes
 * an open's common case into the small ring itself), and kernel names
 * (wsl_string_record: hooks/cuda_hooks.c, writer/gpu_timing.c). The writer
 * drains the ring into PATHS chunks.
 */
#define _GNU_SOURCE
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "shim_internal.h"

_Atomic uint32_t wsl_next_path_id = 1; /* the next free block of string ids (wsl_path_id_new) */
_Atomic uint64_t wsl_path_waits, wsl_paths_dropped;

/* Room in the large path ring up to `end`: past half full the writer is
 * woken; full, the call waits for it. A path lost is a file the report cannot
 * name (and a trace cut by SIGKILL has no END chunk to count it), so a full
 * path ring waits more readily than the event ring (one wait per burst): a
 * burst may wait WSL_PATH_WAIT_MS_PER_BURST in all until the writer has read
 * half the ring, spent by whichever path needs it; past that the thread drops
 * (and counts) whatever finds no room, without waiting. The wait sleeps rather
 * than yields: on a loaded machine the writer may need this core to run.
 * (Before 2026-11-28 each path waited at most 10 ms, 10 waits a burst: a
 * writer starved of CPU for 10-20 ms cost a name while 90 ms of the burst's
 * wait were left: docs/reliability.md, "A path dropped after 10 ms".) */
#define WSL_PATH_WAIT_MS_PER_BURST 100u
static int paths_room(struct wsl_thread *t, uint64_t end)
{
    uint64_t tail = atomic_load_explicit(&t->paths_tail, memory_order_acquire);
    if (end - tail <= WSL_PATH_RING / 2) {
        t->p_waited_ms = 0;
        return 1;
    }
    int saved = errno;
    if (t->paths_woken_at != tail) { /* once per drain, not once per path */
        t->paths_woken_at = tail;
        wsl_writer_wake();
    }
    if (end - tail <= WSL_PATH_RING) {
        errno = saved;
        return 1;
    }
    if (WSL_UNLIKELY(t->p_waited_ms >= WSL_PATH_WAIT_MS_PER_BURST)) {
        errno = saved;
        goto drop;
    }
    wsl_writer_wake();
    atomic_fetch_add_explicit(&wsl_path_waits, 1, memory_order_relaxed);
    const uint64_t start = wsl_mono_ns();
    const uint64_t deadline = start + (uint64_t)(WSL_PATH_WAIT_MS_PER_BURST - t->p_waited_ms) * 1000000ull;
    uint64_t now = start;
    do {
        struct timespec nap = {0, 200000}; /* 0.2 ms */
        syscall(SYS_nanosleep, &nap, NULL);
        tail = atomic_load_explicit(&t->paths_tail, memory_order_acquire);
        now = wsl_mono_ns();
    } while (end - tail > WSL_PATH_RING && now < deadline);
    errno = saved;
    uint64_t ms = (now - start + 999999ull) / 1000000ull; /* at least 1 a wait: the budget always runs out */
    t->p_waited_ms = ms >= WSL_PATH_WAIT_MS_PER_BURST - t->p_waited_ms ? WSL_PATH_WAIT_MS_PER_BURST
                                                                       : t->p_waited_ms + (uint32_t)(ms ? ms : 1);
    if (end - tail <= WSL_PATH_RING)
        return 1;
drop:
    atomic_fetch_add_explicit(&t->paths_dropped, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&wsl_paths_dropped, 1, memory_order_relaxed);
    return 0;
}

/* Writes the marker that ends the path ring the thread writes now (at its
 * head, where room was kept for it) and publishes it. */
static void paths_leave(struct wsl_thread *t)
{
    uint64_t head = atomic_load_explicit(t->p_head_at, memory_order_relaxed);
    struct wsl_path_entry_header m = {0, WSL_PATH_SWITCH};
    memcpy(t->p_cur + (head & t->p_mask), &m, sizeof m);
    atomic_store_explicit(t->p_head_at, head + sizeof m, memory_order_release);
}

/* Where an entry of `need` bytes goes: its index in the path ring the thread
 * writes now, after a filler where it would cross that ring's end; the small
 * ring while it has room (8 bytes always kept there for its marker), else the
 * large one (shim_internal.h: two rings); ~0 when that has no room either (the
 * entry is dropped). errno is kept. */
#define PATHS_MARKER ((uint64_t)sizeof(struct wsl_path_entry_header))
uint64_t wsl_paths_reserve(struct wsl_thread *t, uint32_t need)
{
    int saved = errno;
    if (t->p_in_big && !t->no_small &&
        atomic_load_explicit(&t->sp_tail, memory_order_acquire) == atomic_load_explicit(&t->sp_head, memory_order_relaxed) &&
        atomic_load_explicit(&t->paths_head, memory_order_relaxed) + PATHS_MARKER -
                atomic_load_explicit(&t->paths_tail, memory_order_acquire) <= WSL_PATH_RING) {
        paths_leave(t); /* the writer has read all of the small ring: back to it */
        wsl_paths_use(t, 0);
    }
    uint8_t *ring = t->p_cur;
    uint32_t size = t->p_mask + 1;
    uint64_t head = atomic_load_explicit(t->p_head_at, memory_order_relaxed);
    uint32_t off = (uint32_t)(head & t->p_mask);
    uint32_t pad = size - off < need ? size - off : 0;
    if (!t->p_in_big) {
        uint64_t tail = atomic_load_explicit(&t->sp_tail, memory_order_acquire);
        if (head + pad + need + PATHS_MARKER - tail <= WSL_PATH_SMALL) {
            if (head + pad + need - tail > WSL_PATH_SMALL / 2 && t->paths_woken_at != tail) {
                t->paths_woken_at = tail; /* more than half full: once per drain */
                wsl_writer_wake();
            }
            goto room;
        }
        paths_leave(t); /* full: the large ring from here */
        wsl_paths_use(t, 1);
        wsl_writer_wake();
        ring = t->p_cur;
        size = WSL_PATH_RING;
        head = atomic_load_explicit(&t->paths_head, memory_order_relaxed);
        off = (uint32_t)(head & (WSL_PATH_RING - 1));
        pad = size - off < need ? size - off : 0;
    }
    if (!paths_room(t, head + pad + need + PATHS_MARKER)) {
        errno = saved;
        return ~0ull;
    }
room:
    if (pad) {
        struct wsl_path_entry_header filler = {0, pad - (uint32_t)sizeof filler};
        memcpy(ring + off, &filler, sizeof filler);
    }
    errno = saved;
    return head + pad;
}

/* A string written as given (a kernel name: not a path), under a new id; the
 * id (0: none). An empty string is written as ".". */
uint32_t wsl_string_record(struct wsl_thread *t, const char *s)
{
    if (!s || !t)
        return 0;
    uint32_t len = (uint32_t)strnlen(s, WSL_PATH_MAX_LENGTH);
    if (!len)
        s = ".", len = 1;
    uint32_t need = (uint32_t)((sizeof(struct wsl_path_entry_header) + len + 7) & ~7u);
    uint32_t id = wsl_path_id_new(t);
    uint64_t head = wsl_paths_reserve(t, need);
    if (head == ~0ull)
        return id; /* no room: the id stays, its string is unknown to the report */
    struct wsl_path_entry_header h = {id, len};
    uint8_t *dst = t->p_cur + (head & t->p_mask);
    memcpy(dst, &h, sizeof h);
    memcpy(dst + sizeof h, s, len);
    atomic_store_explicit(t->p_head_at, head + need, memory_order_release);
    return id;
}
