/*
 * The drain: every thread's rings read by the writer thread, their paths
 * first, their events encoded into EVENTS_GAPS chunks (the columns of
 * docs/trace-format.md, packed by trace_format.h's codec). The untimed file
 * calls among them get their times in untimed.c.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "writer_internal.h"

#define EVENTS_PER_CHUNK 4096u

/* An EVENTS chunk's columns, each sized for the worst case of a full chunk. */
static uint8_t col_op[EVENTS_PER_CHUNK * WSL_COL_OP_MAX];
static uint8_t col_gap[EVENTS_PER_CHUNK * WSL_COL_DT_MAX];
static uint8_t col_dur_lo[EVENTS_PER_CHUNK * WSL_COL_DUR_LO_MAX];
static uint8_t col_dur_hi[EVENTS_PER_CHUNK * WSL_COL_DUR_MAX];
static uint8_t col_lit[EVENTS_PER_CHUNK * WSL_COL_LIT_MAX];
static struct wsl_codec_state codec;
static struct wsl_pack_state pack;
static uint16_t codec_touched[WSL_MAX_API_IDS]; /* api slots used since the last reset */
static uint8_t codec_is_touched[WSL_MAX_API_IDS];
static unsigned codec_touched_count;
uint64_t wsl_events_written, wsl_events_dropped;
uint32_t wsl_events_chunk_seq;
uint32_t wsl_threads_seen;

/* Events base[from & mask] .. base[(to - 1) & mask] of thread tid, as one chunk. */
static void emit_event_chunk(uint32_t tid, const struct wsl_event *base, uint64_t mask, uint64_t from, uint64_t to,
                             uint64_t dropped)
{
    struct wsl_events_header eh;
    memset(&eh, 0, sizeof eh);
    eh.tid = tid;
    eh.dropped = dropped;
    eh.base_ticks = from < to ? base[from & mask].t_start : 0;
    eh.seq = ++wsl_events_chunk_seq;
    /* Each chunk decodes on its own: reset the codec, but only the slots the
     * previous chunk used (a full reset is 64 KiB, chunks are often small). */
    for (unsigned i = 0; i < codec_touched_count; i++) {
        memset(&codec.prev[codec_touched[i]], 0, sizeof codec.prev[0]);
        codec_is_touched[codec_touched[i]] = 0;
    }
    codec_touched_count = 0;
    codec.prev_t = eh.base_ticks;
    wsl_pack_reset(&pack, 1);
    struct wsl_gaps_out o = {col_op, col_gap, col_dur_lo, col_dur_hi, col_lit};
    uint32_t count = 0;
    for (uint64_t i = from; i < to; i++) {
        const struct wsl_event *ev = &base[i & mask];
        if (WSL_UNLIKELY(ev->api >= wsl_api_count))
            continue; /* cannot happen: ids come from the table */
        if (WSL_UNLIKELY(!codec_is_touched[ev->api])) {
            codec_is_touched[ev->api] = 1;
            codec_touched[codec_touched_count++] = ev->api;
        }
        if (WSL_UNLIKELY(wsl_helper_possible))
            wsl_helper_note(ev);
        wsl_event_encode_gaps(&pack, &codec, ev, &o);
        count++;
    }
    eh.count = count;
    /* The column directory: gap and dur_hi bytes, literals; the op and dur_lo columns have eh.count. */
    uint32_t dir[3] = {(uint32_t)(o.gap - col_gap), (uint32_t)(o.dur_hi - col_dur_hi), pack.literals};
    _Static_assert(sizeof dir == WSL_EVENTS_DIRECTORY_SIZE, "column directory");
    eh.encoded_size = (uint32_t)(sizeof dir + 2u * eh.count + dir[0] + dir[1] + (size_t)(o.lit - col_lit));
    const struct wsl_chunk_part parts[] = {
        {&eh, sizeof eh},
        {dir, sizeof dir},
        {col_op, (size_t)(o.op - col_op)},
        {col_gap, dir[0]},
        {col_dur_lo, (size_t)(o.dur_lo - col_dur_lo)},
        {col_dur_hi, dir[1]},
        {col_lit, (size_t)(o.lit - col_lit)},
    };
    wsl_emit_chunk_parts(WSL_CHUNK_EVENTS_GAPS, parts, sizeof parts / sizeof parts[0]);
    wsl_events_written += eh.count;
}

/* Path entries are published before the events that name them: drained after
 * the event head was read, they cover every event about to be written. Each
 * path ring is read to its head or to its first marker (then the thread's next
 * entries are in the other ring: shim_internal.h, two rings). */
static void drain_paths(struct wsl_thread *t)
{
    static uint8_t buf[WSL_PATH_RING];
    static char hashed[WSL_PATH_MAX_LENGTH];
    size_t n = 0;
    for (int turn = 0; turn < 8; turn++) {
        int big = (int)atomic_load_explicit(&t->w_paths_big, memory_order_relaxed);
        const uint8_t *ring = big ? t->paths : t->small_paths;
        uint32_t size = big ? WSL_PATH_RING : WSL_PATH_SMALL;
        _Atomic uint64_t *head_at = big ? &t->paths_head : &t->sp_head, *tail_at = big ? &t->paths_tail : &t->sp_tail;
        uint64_t head = atomic_load_explicit(head_at, memory_order_acquire);
        uint64_t tail = atomic_load_explicit(tail_at, memory_order_relaxed);
        if (head == tail)
            break;
        int switched = 0;
        while (tail < head && head - tail <= size) {
            uint32_t off = (uint32_t)(tail & (size - 1));
            struct wsl_path_entry_header h;
            memcpy(&h, ring + off, sizeof h);
            if (h.id == 0 && h.length == WSL_PATH_SWITCH) {
                tail += sizeof h;
                switched = 1;
                break;
            }
            uint32_t step = (uint32_t)((sizeof h + h.length + 7) & ~7u);
            if (h.length > size - off - sizeof h)
                break; /* cannot happen; never read past the ring */
            const char *name = (const char *)ring + off + sizeof h;
            /* Paths (absolute, or under a directory fd) are hashed; kernel names are not paths. */
            if (h.id != 0 && wsl_cfg.io_paths_hash && h.length &&
                (name[0] == '/' || (h.length >= 4 && !memcmp(name, "<fd ", 4)))) {
                h.length = (uint32_t)wsl_path_hash(name, h.length, hashed, sizeof hashed);
                name = hashed;
            }
            if (h.id != 0 && n + sizeof h + h.length > sizeof buf) {
                wsl_emit_chunk(WSL_CHUNK_PATHS, buf, n, NULL, 0);
                n = 0;
            }
            if (h.id != 0) {
                memcpy(buf + n, &h, sizeof h);
                memcpy(buf + n + sizeof h, name, h.length);
                n += sizeof h + h.length;
            }
            tail += step;
        }
        atomic_store_explicit(tail_at, switched ? tail : head, memory_order_release);
        if (!switched)
            break;
        atomic_store_explicit(&t->w_paths_big, (uint32_t)!big, memory_order_relaxed);
    }
    if (n)
        wsl_emit_chunk(WSL_CHUNK_PATHS, buf, n, NULL, 0);
}

/* Drains the ring the writer reads now (w_big), to its head or to its first
 * marker (then the events that come next are in the other ring: the next
 * call reads them). `now`: the ticks before the drain began. Returns the
 * events read, the marker counted; *switched: a marker was read. */
static uint64_t drain_ring(struct wsl_thread *t, uint64_t now, uint64_t *new_drops, int *switched)
{
    int big = (int)atomic_load_explicit(&t->w_big, memory_order_relaxed);
    struct wsl_event *ring = big ? t->ev : t->small_ev;
    uint64_t size = big ? WSL_RING_EVENTS : WSL_RING_SMALL, mask = size - 1;
    _Atomic uint64_t *tail_at = big ? &t->tail : &t->s_tail;
    /* Up to the head read when this drain began: every path the events name,
     * in any thread's ring, was published before them and is out (wsl_drain_all) */
    uint64_t head = big ? t->w_cap_head : t->w_cap_s_head;
    drain_paths(t);
    uint64_t tail = atomic_load_explicit(tail_at, memory_order_relaxed);
    uint64_t n = head - tail;
    if (n > size) /* cannot happen; never read garbage */
        tail = head - size, n = size;
    /* Up to the first marker: what follows it in this ring the thread wrote
     * after its turn in the other ring. */
    uint64_t end = tail;
    while (end < head && ring[end & mask].api != WSL_RING_SWITCH)
        end++;
    *switched = end < head;
    int untimed = atomic_load_explicit(&t->io_untimed, memory_order_relaxed);
    if (end > tail || *new_drops) {
        if (end > tail && t->tid != t->writer_seen_tid) {
            t->writer_seen_tid = t->tid;
            wsl_threads_seen++;
        }
        uint64_t stop = end, floor = t->w_drain_ticks ? t->w_drain_ticks : wsl_start_ticks;
        if (untimed)
            stop = wsl_settle_untimed(t, ring, mask, tail, end, floor);
        else if (end > tail)
            t->w_last_ticks = ring[(end - 1) & mask].t_end;
        t->w_drain_ticks = now;
        uint64_t pos = tail;
        if (stop > tail || *new_drops)
            do {
                uint64_t to = pos + (stop - pos > EVENTS_PER_CHUNK ? EVENTS_PER_CHUNK : stop - pos);
                emit_event_chunk(t->tid, ring, mask, pos, to, pos == tail ? *new_drops : 0);
                pos = to;
            } while (pos < stop);
        *new_drops = 0;
    }
    atomic_store_explicit(tail_at, end + (uint64_t)*switched, memory_order_release);
    if (*switched)
        atomic_store_explicit(&t->w_big, (uint32_t)!big, memory_order_relaxed);
    return end - tail + (uint64_t)*switched;
}

static uint64_t drain_pass; /* drains so far (wsl_drain_all) */

/* Every thread's paths, to their heads. */
static void drain_paths_all(void)
{
    for (struct wsl_thread *t = atomic_load_explicit(&wsl_threads, memory_order_acquire); t; t = t->next)
        if (atomic_load_explicit(&t->state, memory_order_acquire) != WSL_THREAD_FREE)
            drain_paths(t);
}

/* Returns how many events were drained. */
static uint64_t drain_thread(struct wsl_thread *t)
{
    int state = atomic_load_explicit(&t->state, memory_order_acquire);
    if (state == WSL_THREAD_FREE || t->w_cap_pass != drain_pass)
        return 0; /* free, or taken since this drain began: its events wait for the next one */
    uint64_t now = wsl_ticks(); /* events past the heads read below were recorded after this */
    uint64_t dropped = atomic_load_explicit(&t->dropped, memory_order_relaxed);
    uint64_t new_drops = dropped - t->dropped_reported, n = 0;
    wsl_events_dropped += new_drops;
    t->dropped_reported = dropped;
    /* The ring read now, and the other one after its marker, in turn; a few
     * turns, and what the thread wrote meanwhile waits for the next pass. */
    for (int turn = 0, switched = 1; switched && turn < 8; turn++)
        n += drain_ring(t, now, &new_drops, &switched);
    /* After the ring's events: the open fold's calls so far. A fold that never
     * ended (one file read over and over, left open) has put no event in the
     * ring yet, so its slots are looked at whatever io_untimed says; once the
     * writer has taken calls ahead of the fold's own events, it must settle
     * those events when they come (drain_ring reads io_untimed for that). */
    if (atomic_load_explicit(&t->io_untimed, memory_order_relaxed) ||
        atomic_load_explicit(&t->fold_used, memory_order_relaxed)) {
        struct wsl_event folded[2];
        uint64_t at = now > t->w_last_ticks ? now : t->w_last_ticks;
        unsigned k = wsl_fold_take(t, folded, at);
        if (k) {
            atomic_store_explicit(&t->io_untimed, 1, memory_order_relaxed);
            if (t->tid != t->writer_seen_tid) {
                t->writer_seen_tid = t->tid;
                wsl_threads_seen++;
            }
            drain_paths_all(); /* the fold's file may have been opened since the drain began, by any thread */
            emit_event_chunk(t->tid, folded, ~0ull, 0, k, 0);
            t->w_last_ticks = at;
        }
    }
    if (state == WSL_THREAD_RETIRED && wsl_rings_drained(t)) {
        int expect = WSL_THREAD_RETIRED;
        atomic_compare_exchange_strong(&t->state, &expect, WSL_THREAD_FREE);
    }
    return n;
}

uint64_t wsl_drain_all(void)
{
    uint64_t n = 0;
#ifdef WSL_TEST_SLOW_WRITER
    /* The tiny-rings test build (shim/CMakeLists.txt): a writer that comes late
     * to every drain, so that threads go on in their large rings and back. */
    struct timespec late = {0, WSL_TEST_SLOW_WRITER * 1000L};
    nanosleep(&late, NULL);
    /* WSLSHIM_TEST_STALL_MS: the writer stalls that long once, at its first
     * drain, so that a burst fills the ring (preload.ring_full_drops_once). */
    static int stalled;
    const char *stall = stalled ? NULL : wsl_getenv("WSLSHIM_TEST_STALL_MS");
    stalled = 1;
    if (stall && atoi(stall) > 0) {
        struct timespec st = {atoi(stall) / 1000, (long)(atoi(stall) % 1000) * 1000000L};
        nanosleep(&st, NULL);
    }
#endif
    /* An event may name a path another thread published (a descriptor one
     * thread opened, read by another): every thread's event heads first, then
     * every thread's paths, then the events up to those heads. A path is
     * published before any event that names it, so each is out before them,
     * and a trace cut at any frame (SIGKILL) holds the path of every call in
     * it. */
    drain_pass++;
    for (struct wsl_thread *t = atomic_load_explicit(&wsl_threads, memory_order_acquire); t; t = t->next) {
        if (atomic_load_explicit(&t->state, memory_order_acquire) == WSL_THREAD_FREE)
            continue;
        t->w_cap_head = atomic_load_explicit(&t->head, memory_order_acquire);
        t->w_cap_s_head = atomic_load_explicit(&t->s_head, memory_order_acquire);
        t->w_cap_pass = drain_pass;
    }
    drain_paths_all();
    for (struct wsl_thread *t = atomic_load_explicit(&wsl_threads, memory_order_acquire); t; t = t->next)
        n += drain_thread(t);
    return n;
}

