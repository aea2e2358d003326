/*
 * The drain: every thread's rings read by the writer thread, their paths
 * first, their events encoded into EVENTS_BITS chunks (the columns of
 * docs/trace-format.md, packed by trace_format.h's codec). The untimed file
 * calls among them get their times in untimed.c.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "writer_internal.h"

#define EVENTS_PER_CHUNK 4096u

/*
 * An EVENTS chunk stays open across drains: a thread's events of the next
 * drain are appended to it, until it holds EVENTS_PER_CHUNK events, the
 * thread lost events (their count goes in the header of the chunk that comes
 * after the loss), another chunk must go out first, or the frame is written
 * (wsl_frame_write flushes it first: frames stay at most a second apart). The
 * writer is woken every 512 events (half the small ring), and each chunk
 * starts its per-api fields anew (its table of argument sets too, unless it carries its thread's:
 * below): open across
 * drains, a launch loop's kernels go out as literals once per 4,096 events
 * rather than once per drain (docs/overhead.md, "The writer, second pass").
 *
 * Two chunks may be open: one of a program thread and one of the writer's own
 * ring (GPU_KERNEL events). The order of a program's threads' events in the
 * file stays that of the drains: an open chunk of one program thread goes out
 * before any other program thread's events or any other chunk (PATHS, CLOCK,
 * MOUNTS...), so the analyzer, which reads chunks in file order, sees what it
 * saw. The writer's ring's chunk goes out right after the program thread's
 * whenever that one closes (and when it is full, the program thread's first):
 * its GPU_KERNEL events come after the launches they time, at most a chunk
 * later. (Drained per pass, the writer's ring came first in each pass, before
 * the launches drained in the same pass; the analyzer attributes GPU time to
 * NVTX ranges in file order, a little more of it now: docs/overhead.md.)
 *
 * A program thread's table of argument sets is carried from one of its chunks to the next in the
 * same zstd frame (format 1.13, WSL_TBITS_CONTINUES): a program's threads take turns in the file
 * (the main thread, autograd's, NCCL's), and each turn of a few dozen events wrote the kernels it
 * launched as literals again. The reader holds a table per slot (tid % WSL_TBITS_SLOTS), the one
 * the last chunk of the frame in that slot ended with; `slots` mirrors it in file order. The
 * writer's ring's chunk keeps a table of its own and never carries one: it closes after the
 * program thread's chunk, so what its slot holds when it opens is not what the reader sees before
 * it. A carrying chunk goes into the frame that holds its slot's last chunk where it fits; where it
 * does not, it is encoded again with a table of its own (chunk_uncarry) and goes into the next.
 */
struct pack_slot {
    struct wsl_pack_state pack; /* the table the reader holds in this slot, once written */
    uint32_t tid;
    uint32_t gen;               /* the frame that holds the chunk it came from (wsl_frame_gen) */
    int held;                   /* tid's next chunk in frame gen may carry it */
};
static struct pack_slot slots[WSL_TBITS_SLOTS];
/* Carried while the table has room for a turn's new sets; fuller, the next chunk starts anew. */
#define CARRY_ENTRIES_MAX 191u
/* Carried while the frame has room for this much more: a chunk that turns out not to fit is coded
 * twice (chunk_uncarry); with 32 KiB, a launch loop's 4,096-event chunks of about 15 KiB fit. */
#ifndef WSL_CARRY_FRAME_ROOM
#define WSL_CARRY_FRAME_ROOM (32u << 10) /* (0 in the tests' tiny-rings build: chunk_uncarry at every frame's end) */
#endif

struct open_chunk {
    struct wsl_events_header eh; /* tid, count, base_ticks, dropped so far; seq when it goes out */
    struct wsl_tbits_out o;      /* where the next op, literal and times go */
    uint8_t op[EVENTS_PER_CHUNK * WSL_COL_OP_MAX];
    uint8_t lit[EVENTS_PER_CHUNK * WSL_COL_LIT_MAX];
    uint64_t times[2 * EVENTS_PER_CHUNK]; /* gap, duration, ...: coded as bits when the chunk goes out */
    uint8_t bits[EVENTS_PER_CHUNK * WSL_COL_TBITS_MAX + 8];
    struct wsl_codec_state codec;
    struct wsl_pack_state *pack; /* a slot's (a program thread's chunk) or own_pack (the writer's ring's) */
    struct wsl_pack_state own_pack;
    uint32_t from;               /* the table's entries when the chunk opened */
    int carries;                 /* it continues its slot's table (WSL_TBITS_CONTINUES) */
    int open;
};
static struct open_chunk chunks[2]; /* [0] a program thread's, [1] the writer's own ring's */
static int chunks_flushing; /* chunks are going out: a frame written meanwhile leaves the open ones open */
static struct wsl_tbits_coder coder; /* the events' loop and the chunks' close for this CPU (trace_codec.h) */

uint64_t wsl_events_written, wsl_events_dropped;
uint32_t wsl_events_chunk_seq;
uint32_t wsl_threads_seen;
uint64_t wsl_paths_dropped_at_open, wsl_paths_dropped_written;

/* A carrying chunk that does not fit the frame its slot's table is in: its ops and literals made
 * again with a table of its own, so that it can go into the next frame (format 1.13: no table
 * crosses a frame); its times stay. At most once a frame, where the frame fills up. Every set of the
 * chunk is in the table where no literal found it full: the ops are then mapped, a set at a time
 * through the encoder's lookup; else its events are decoded and encoded again. */
/* The events of c as a reader decodes them into ev: its ops and literals with a table that begins
 * with the `from` entries of `prefix` (its literals XORed from zero), its times from c->times. */
static void chunk_decode(const struct open_chunk *c, const struct wsl_event *prefix, uint32_t from,
                         struct wsl_event *ev)
{
    static struct wsl_pack_state dps;
    static struct wsl_codec_state dst;
    memset(&dst, 0, sizeof dst);
    dps.entries = from;
    dps.literals = 0;
    memcpy(dps.table, prefix, from * sizeof *prefix);
    struct wsl_packed_in in;
    memset(&in, 0, sizeof in);
    in.lit = c->lit;
    in.lit_end = c->o.lit;
    in.literals = c->pack->literals;
    uint64_t end = c->eh.base_ticks;
    for (uint32_t i = 0; i < c->eh.count; i++) { /* the writer's own bytes: they decode */
        wsl_unpack_arguments(&dps, &dst, &in, c->op[i], WSL_MAX_API_IDS, &ev[i]);
        ev[i].flags = 0;
        ev[i].t_start = end + c->times[2 * i];
        ev[i].t_end = end = ev[i].t_start + c->times[2 * i + 1];
    }
}

static void chunk_uncarry_once(struct open_chunk *c)
{
    struct wsl_pack_state *ps = c->pack;
    const uint32_t n = c->eh.count;
    if (ps->literals == ps->entries - c->from) {
        static struct wsl_event sets[WSL_PACK_TABLE_MAX];
        memcpy(sets, ps->table, ps->entries * sizeof *sets);
        uint32_t next_literal = c->from; /* the chunk's literals are the entries from c->from on */
        wsl_codec_forget(&c->codec, ps, c->from);
        wsl_pack_reset(ps, 1);
        uint8_t *op = c->op, *lit = c->lit;
        for (uint32_t i = 0; i < n; i++) { /* op i read before the encoder writes it */
            const unsigned k = c->op[i] ? c->op[i] - 1u : next_literal++;
            wsl_pack_arguments(ps, &c->codec, &sets[k], &op, &lit);
        }
        c->o.op = op;
        c->o.lit = lit;
    } else {
        static struct wsl_event ev[EVENTS_PER_CHUNK];
        chunk_decode(c, ps->table, c->from, ev);
        wsl_codec_forget(&c->codec, ps, c->from);
        wsl_pack_reset(ps, 1);
        c->codec.prev_t = c->eh.base_ticks;
        c->o = (struct wsl_tbits_out){c->op, c->lit, c->times};
        coder.run(ps, &c->codec, ev, ev + n, &c->o);
    }
    c->from = 0;
    c->carries = 0;
}

static void chunk_uncarry(struct open_chunk *c)
{
#ifdef WSL_TEST_UNCARRY_CHECK /* the tests' tiny-rings build: the chunk's events the same after it */
    static struct wsl_event before[EVENTS_PER_CHUNK], after[EVENTS_PER_CHUNK];
    chunk_decode(c, c->pack->table, c->from, before);
    chunk_uncarry_once(c);
    chunk_decode(c, c->pack->table, 0, after); /* (no entry of it: a table of its own) */
    for (uint32_t i = 0; i < c->eh.count; i++)
        if (memcmp(&before[i].t_start, &after[i].t_start, 16) || !wsl_pack_same(&before[i], &after[i])) {
            static const char msg[] = "wslshim: chunk_uncarry changed an event\n";
            if (write(2, msg, sizeof msg - 1)) {
            }
            abort();
        }
#else
    chunk_uncarry_once(c);
#endif
}

/* Writes c out as one EVENTS_BITS chunk and closes it: its times coded as bits now, with the
 * parameters that fit all of them (trace_format.h). */
static void chunk_close(struct open_chunk *c)
{
    if (!c->open)
        return;
    c->open = 0;
    struct wsl_events_header eh = c->eh;
    eh.seq = ++wsl_events_chunk_seq;
    struct wsl_tbits_dir dir;
    size_t lit, head, whole;
    uint8_t *at;
    for (;;) {
        dir.literals = c->pack->literals;
        lit = (size_t)(c->o.lit - c->lit);
        /* The bit column coded where it goes in the frame, after the chunk's header, directory and ops
         * (not copied there: docs/overhead.md, "The writer, seventh pass"); in c->bits where there is
         * no room, or where the frame must be written before this chunk goes in. */
        head = sizeof(struct wsl_chunk_header) + sizeof eh + sizeof dir + eh.count;
        at = wsl_frame_room(head + (size_t)eh.count * WSL_COL_TBITS_MAX + 8 + lit);
        coder.close(&dir, at ? at + head : c->bits, c->times, eh.count);
        dir.reserved = c->carries ? WSL_TBITS_CONTINUES : 0;
        eh.encoded_size = (uint32_t)(sizeof dir + eh.count + dir.bit_bytes + lit);
        whole = sizeof(struct wsl_chunk_header) + sizeof eh + eh.encoded_size;
        if (!c->carries || (at && wsl_frame_fits(whole)))
            break;
        chunk_uncarry(c); /* it goes into the next frame: a table of its own */
    }
    /* A frame written on the way (compress.c) must not take the other open chunk ahead of this one. */
    const int was = chunks_flushing;
    chunks_flushing = 1;
    if (at && wsl_frame_fits(whole)) {
        const struct wsl_chunk_header h = {WSL_CHUNK_EVENTS_BITS, (uint32_t)(sizeof eh + eh.encoded_size)};
        memcpy(at, &h, sizeof h);
        memcpy(at + sizeof h, &eh, sizeof eh);
        memcpy(at + sizeof h + sizeof eh, &dir, sizeof dir);
        memcpy(at + sizeof h + sizeof eh + sizeof dir, c->op, eh.count);
        memcpy(at + head + dir.bit_bytes, c->lit, lit);
        wsl_frame_take(whole);
    } else {
        if (at) /* the frame goes out first (wsl_emit_chunk_parts): the bits kept apart meanwhile */
            memcpy(c->bits, at + head, dir.bit_bytes);
        const struct wsl_chunk_part parts[] = {
            {&eh, sizeof eh},
            {&dir, sizeof dir},
            {c->op, eh.count},
            {c->bits, dir.bit_bytes},
            {c->lit, lit},
        };
        wsl_emit_chunk_parts(WSL_CHUNK_EVENTS_BITS, parts, sizeof parts / sizeof parts[0]);
    }
    /* in the frame now: its bytes that zstd's Huffman stage cannot shrink (compress.c) */
    wsl_frame_coded_bytes += sizeof(struct wsl_chunk_header) + sizeof eh + sizeof dir + eh.count + dir.bit_bytes;
    /* The reader's slot now holds this chunk's table, in the frame it went into. */
    struct pack_slot *s = &slots[eh.tid % WSL_TBITS_SLOTS];
    if (c->pack == &s->pack) {
        s->tid = eh.tid;
        s->gen = wsl_frame_gen;
        s->held = 1;
        wsl_codec_forget(&c->codec, c->pack, c->from);
    } else {
        s->held = 0; /* the writer's ring's table, which no chunk carries */
    }
    chunks_flushing = was;
    wsl_events_written += eh.count;
}

/* Opens c for thread tid, its first event's start `base` (wsl_chunk_codec_open). */
static void chunk_open(struct open_chunk *c, uint32_t tid, uint64_t base, uint64_t dropped)
{
    if (!coder.run) { /* once, in the writer thread */
        coder = wsl_tbits_coder_pick(1);
        wsl_log(WSL_LOG_DEBUG, "writer: the events' times coded by the %s loops", coder.name);
    }
    if (c == &chunks[1]) { /* the writer's ring's: a table of its own, anew in each chunk */
        c->pack = &c->own_pack;
        c->carries = 0;
        wsl_chunk_codec_open(c->pack, &c->codec, &c->eh, tid, base, dropped);
    } else { /* the codec's slots were reset when the last chunk closed (wsl_codec_forget) */
        struct pack_slot *s = &slots[tid % WSL_TBITS_SLOTS];
        c->pack = &s->pack;
        c->carries = s->held && s->tid == tid && s->gen == wsl_frame_gen && s->pack.entries <= CARRY_ENTRIES_MAX &&
                     wsl_frame_fits(WSL_CARRY_FRAME_ROOM);
        s->held = 0;
        if (c->carries)
            s->pack.literals = 0;
        else
            wsl_pack_reset(&s->pack, 1);
        c->from = s->pack.entries;
        c->codec.prev_t = base;
        memset(&c->eh, 0, sizeof c->eh);
        c->eh.tid = tid;
        c->eh.base_ticks = base;
        c->eh.dropped = dropped;
    }
    c->o = (struct wsl_tbits_out){c->op, c->lit, c->times};
    c->open = 1;
}

/* Every open chunk out, a program thread's first (the writer's ring's events
 * refer to launches). Before any other chunk and before a frame is written. */
void wsl_events_flush(void)
{
    if (chunks_flushing) /* writing a chunk out wrote a frame (compress.c) */
        return;
    chunks_flushing = 1;
    chunk_close(&chunks[0]);
    chunk_close(&chunks[1]);
    chunks_flushing = 0;
}

/* In a forked child: the open chunks hold the parent's events. */
void wsl_events_after_fork_child(void)
{
    chunks[0].open = chunks[1].open = 0;
    chunks_flushing = 0;
    for (unsigned i = 0; i < WSL_TBITS_SLOTS; i++)
        slots[i].held = 0;
    memset(&chunks[0].codec.prev, 0, sizeof chunks[0].codec.prev); /* the parent's open chunk's literals */
}

/* n events from ev (contiguous) onto c's columns, which have room for them. Two
 * loops: the common one (trace_format.h's wsl_encode_tbits_run, through the coder picked for this
 * CPU) checks nothing but the api, and keeps the chunk's state in registers. */
static inline __attribute__((always_inline)) void encode_run(struct open_chunk *c, const struct wsl_event *ev,
                                                             size_t n)
{
    struct wsl_tbits_out o = c->o;
    const struct wsl_event *const end = ev + n;
    const uint32_t api_count = wsl_api_count;
    if (WSL_LIKELY(!wsl_helper_possible)) {
        /* ev->api < api_count always (ids come from the table; cuda_hooks.c asserts the table within
           WSL_MAX_API_IDS, the bound the run checks); the run's state in registers */
        coder.run(c->pack, &c->codec, ev, end, &o);
    } else {
        for (; ev < end; ev++)
            if (WSL_LIKELY(ev->api < api_count)) {
                if (wsl_helper_possible)
                    wsl_helper_note(ev);
                coder.run(c->pack, &c->codec, ev, ev + 1, &o);
            }
    }
    c->o = o;
    c->eh.count = (uint32_t)(o.op - c->op); /* a byte per event */
}

/* Events base[from & mask] .. base[(to - 1) & mask] of thread tid (mask ~0: an
 * array), appended to its open chunk (`dropped`: events it lost before them). */
static void append_events(uint32_t tid, const struct wsl_event *base, uint64_t mask, uint64_t from, uint64_t to,
                          uint64_t dropped)
{
    const int own = tid == (uint32_t)wsl_writer_own_tid();
    struct open_chunk *c = &chunks[own];
    if (c->open && (c->eh.tid != tid || dropped))
        wsl_events_flush();
    if (!c->open)
        chunk_open(c, tid, from < to ? base[from & mask].t_start : 0, dropped);
    while (from < to) {
        if (c->eh.count == EVENTS_PER_CHUNK) {
            wsl_events_flush(); /* both: the writer's ring's events after the launches they time */
            chunk_open(c, tid, base[from & mask].t_start, 0);
        }
        uint64_t n = to - from, room = EVENTS_PER_CHUNK - c->eh.count;
        uint64_t in_a_row = mask == ~0ull ? n : mask + 1 - (from & mask); /* to the ring's end */
        n = n < room ? n : room;
        n = n < in_a_row ? n : in_a_row;
        encode_run(c, &base[from & mask], (size_t)n);
        from += n;
    }
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
                append_events(t->tid, ring, mask, pos, to, pos == tail ? *new_drops : 0);
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

/* The strings dropped so far (file paths, kernel and NVTX names: shim/common/strings.c), in a
 * PATHS_DROPPED chunk when the count grew since the last one written (format 1.12). Read after
 * the event heads this drain writes up to (a string is dropped, and counted, before the event
 * that names it is published): the count covers every event that follows it in the file, so a
 * trace cut by SIGKILL, which has no END, still says names were lost and how many at least. */
static void paths_dropped_note(void)
{
    const uint64_t n = atomic_load_explicit(&wsl_paths_dropped, memory_order_relaxed) - wsl_paths_dropped_at_open;
    if (WSL_LIKELY(n == wsl_paths_dropped_written))
        return;
    const struct wsl_paths_dropped_info info = {n};
    wsl_emit_chunk(WSL_CHUNK_PATHS_DROPPED, &info, sizeof info, NULL, 0);
    wsl_paths_dropped_written = n;
}

/* Every thread's paths, to their heads; then the count of strings dropped, if it grew. */
static void drain_paths_all(void)
{
    for (struct wsl_thread *t = atomic_load_explicit(&wsl_threads, memory_order_acquire); t; t = t->next)
        if (atomic_load_explicit(&t->state, memory_order_acquire) != WSL_THREAD_FREE)
            drain_paths(t);
    paths_dropped_note();
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
            append_events(t->tid, folded, ~0ull, 0, k, 0);
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

